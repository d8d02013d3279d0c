"""compare's "algbw at M" column reads each method's time at that size.

The NCCL-like rings' times (simulated on NCCL's channel count per size) used to come
back one short, keyed by size with the middle size twice, so the column showed the
rings' time at the largest size divided into the middle one (0.01 GB/s for a ring
doing 13 GB/s there)."""

from __future__ import annotations

import json

import pytest

from optcoll.cli import main


@pytest.mark.parametrize("spec", ["ring:8", "random:n=6,switches=2,seed=3"])
def test_nccl_ring_column_is_its_time_at_that_size(capsys, spec):
    argv = ["compare", spec, "--collective", "allreduce", "--sizes", "64K", "1M", "16M"]
    assert main([*argv, "--json"]) == 0
    rows = {r["method"]: r for r in json.loads(capsys.readouterr().out)["methods"]}
    assert main(argv) == 0
    text = capsys.readouterr().out
    nccl = next(m for m in rows if m.startswith("NCCL-like ring"))
    at_1m = next(p["algbw"] for p in rows[nccl]["curve"] if p["bytes"] == 1 << 20)
    line = next(x for x in text.splitlines() if x.startswith(nccl))
    assert float(line.split()[-2]) == pytest.approx(at_1m, abs=0.006)
