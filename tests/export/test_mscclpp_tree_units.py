"""export --format mscclpp --size S of tree schedules: the file pipelines in plan's pieces
where the topology's unit is coarser (or slower), a relay puts to its deeper subtrees'
channel type first, and the report gives plan's schedule simulated in full beside plan's
quotient time. Values measured with the simulator (plan / file before / file now, µs)."""

from __future__ import annotations

import json

import pytest

from optcoll.cli import main
from optcoll.verify.mscclpp import verify_plan


def _export(tmp_path, capsys, *args):
    path = tmp_path / "plan.json"
    assert main(["export", *args, "--format", "mscclpp", "-o", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert verify_plan(json.loads(path.read_text())).ok
    compared = {c["method"]: (c["plan_time_us"], c["file_time_us"]) for c in report["compared"]}
    return report["files"][0], compared, path


def test_torus_allreduce_units_are_plans_chunks(tmp_path, capsys):
    """torus 4x4 allreduce at 1 MiB (overhead 0, latency 0.5): the file is written in plan's
    pieces (8 KiB slices of optimal (k=4)'s 16 KiB chunks; 32 KiB chunks for k=2), which the
    topology's 128 and 256 KiB units lumped together (optimal (k=4) in 16 KiB pieces 8.7429
    -> 8.2514 µs; k=2 11.3643 -> 8.7429, which is k=2's schedule simulated in full in the
    data's order). What is left is the link order (plan runs both in `depth`, which no field
    carries). Plan's quotient ties are no longer in its figure (re-measured 2026-12-03):
    optimal (k=4) in 8 KiB slices took 6.2598 from its quotient, 8.1694 in full, its file
    7.9406; plan now times its choice in full, ties first come first served, and keeps
    whole 16 KiB chunks (7.0960, its file 8.2514; k=2 8.2429 -> 8.4152 in full). Since
    2026-12-03 the export plans in the data's order, the one an MSCCL++ link keeps: optimal
    (k=4) in 8 KiB slices, 8.3587 µs, its file in 8 KiB units 7.9406 (faster than before
    and than plan); k=2's file runs in plan's time exactly."""
    entry, compared, path = _export(
        tmp_path, capsys, "torus:4x4", "--collective", "allreduce", "--size", "1M",
        "--overhead", "0", "--latency", "0.5",
    )  # fmt: skip
    assert (entry["method"], entry["priority"], entry["unit_bytes"], entry["slice_bytes"]) == (
        "optimal (k=4)", "progress", 8192, 8192,
    )  # fmt: skip
    assert (entry["plan_time_us"], entry["file_time_us"]) == (8.3587, 7.9406)
    assert compared["k=2"] == (8.7429, 8.7429)
    assert main(["simulate", "torus:4x4", str(path), "--sizes", "1M", "--overhead", "0",
                 "--latency", "0.5", "--slice", "8K", "--json"]) == 0  # fmt: skip
    [row] = json.loads(capsys.readouterr().out)["results"]
    assert row["time_us"] == pytest.approx(7.9406, abs=1e-4)


@pytest.mark.parametrize(
    ("size", "plan_us", "unit"),
    [("1M", 10.0923, 32768), ("16M", 36.4573, 524288), ("256M", 508.3165, 2**21)],
)
def test_dgx_allgather_file_is_plans_time(tmp_path, capsys, size, plan_us, unit):
    """dgx-h100:2 allgather (defaults), optimal (k=2): the root puts to its peer in the
    other box (a port channel, the deeper subtree) before its 7 box peers (one memory
    put), as plan's connections send both at once; before, memory first, each file took
    one overhead more (10.748, 37.457, 509.316 µs), and at 16 and 256 MiB the topology's
    128 KiB units cost more (39.583, 511.443 µs at the session's start). In plan's pieces
    the file now takes plan's time exactly."""
    entry, _, _ = _export(tmp_path, capsys, "dgx-h100:2", "--size", size)
    assert (entry["method"], entry["priority"], entry["unit_bytes"]) == (
        "optimal (k=2)", "progress", unit,
    )  # fmt: skip
    assert entry["plan_time_us"] == entry["file_time_us"] == plan_us
    assert entry["plan_full_time_us"] is None  # only where the file is slower than plan


def test_ring_allreduce_file_in_plans_slices_is_plans_time(tmp_path, capsys):
    """ring:8 allreduce at 16 MiB (defaults): plan's rings (its choice, `ring`, and the
    NCCL-like rings, tied) run 512 KiB slices; in the topology's 128 KiB units their files
    took 157.761 µs (+6.0 %), in plan's 512 KiB pieces 148.8006, plan's time and the
    bound, so that form is kept and no other file is written (a file at the bound ends
    the search; before, the NCCL-like ring's was too, 148.8006 as well)."""
    entry, compared, _ = _export(tmp_path, capsys, "ring:8", "--collective", "allreduce",
                                 "--size", "16M")  # fmt: skip
    assert (entry["planned"], entry["method"], entry["unit_bytes"]) == ("ring", "ring", 524288)
    assert compared == {"ring": (148.8006, 148.8006)}
    assert entry["plan_time_us"] == entry["file_time_us"] == entry["lower_bound_us"] == 148.8006
