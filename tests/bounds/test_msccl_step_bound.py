"""The MSCCL step bound: exact values, and no checked MSCCL file the simulator runs beats it."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from optcoll.bounds.msccl_steps import STEP_BOUND_NODES, msccl_step_bound
from optcoll.cli import main
from optcoll.topologies import build


def test_hops_between_gpus_cost_two_steps_or_one_fused():
    """hypercube 4: diameter 4 GPU hops, each a send and a receive step (1 µs each) and a
    1 µs link; fused, one step at each GPU between; ring 8 with 1/2 µs links: 4 hops."""
    cube = build("hypercube:4")
    assert msccl_step_bound(cube, "allgather", overhead=1.0) == 12
    assert msccl_step_bound(cube, "allgather", overhead=1.0, fused=True) == 4 * 2 + 1
    assert msccl_step_bound(cube, "allreduce", overhead=0.0) == 4  # latencies alone
    ring = build("ring:8")
    half = Fraction(1, 2)
    assert msccl_step_bound(ring, "reduce-scatter", overhead=1.0, default_latency=half) == 10
    # a broadcast from n0 reaches every GPU; the farthest is 4 hops away either way
    assert msccl_step_bound(ring, "broadcast", root=ring.compute_nodes[0], overhead=1.0) == 12


def test_switches_join_gpus_in_one_hop():
    """Through NVSwitch every pair is one hop of two links (dgx-a100:1). Across boxes a GPU
    reaches the other box's GPUs on its rail through NICs and switches (4 links), the
    others only through a GPU between: (2 + 4) + (2 + 2), where plan's own latency bound
    lets the data cross that GPU (1 + 6)."""
    assert msccl_step_bound(build("dgx-a100:1"), "allgather", overhead=1.0) == 2 + 2
    assert msccl_step_bound(build("dgx-a100:2"), "allgather", overhead=1.0) == 6 + 4
    big = build("dgx-a100:65")  # 520 GPUs: beyond STEP_BOUND_NODES, not computed
    assert big.num_compute > STEP_BOUND_NODES and msccl_step_bound(big, "allgather") is None


@pytest.mark.parametrize(
    ("spec", "collective", "overhead"),
    [("hypercube:3", "allgather", "1"), ("ring:6", "reduce-scatter", "1"),
     ("torus:3x3", "allreduce", "0.5"), ("mesh:2x3", "allgather", "0")],
)  # fmt: skip
def test_no_exported_msccl_file_beats_it(spec, collective, overhead, tmp_path, capsys):
    """Every MSCCL file plan --format msccl prints (written, checked by the MSCCL checker
    and simulated by the reader) takes at least the bound, which its rows divide by."""
    argv = ["plan", spec, "--collective", collective, "--sizes", "1K", "64K", "--overhead",
            overhead, "--format", "msccl", "--json"]  # fmt: skip
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["sizes"]
    floor = msccl_step_bound(build(spec), collective, overhead=float(overhead))
    for row in rows:
        assert row["lower_bound_us"] >= float(floor) - 1e-9
        assert row["time_us"] >= row["lower_bound_us"]
        assert all(c["time_us"] is None or c["time_us"] >= float(floor) for c in row["candidates"])
        assert "MSCCL step bound (rccl)" in row["bound_holds_for"]


def test_simulate_divides_a_checked_msccl_file_by_it(tmp_path, capsys):
    """simulate of an MSCCL file the checker accepts for the topology divides by the step
    bound too (hypercube 4 allgather at 1 KiB: recursive doubling's 12.0016 µs against
    12); on a ring of 16 its partners share no link, the checker refuses the pairs, and
    only plan's own bound is used."""
    path = tmp_path / "ag.xml"
    assert main(["export", "hypercube:4", "--size", "1K", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["simulate", "hypercube:4", str(path), "--sizes", "1K", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["results"]
    assert (row["time_us"], row["lower_bound_us"], row["ratio"]) == (12.0016, 12.0, 1.000133)
    assert "MSCCL step bound: holds for this program" in row["bound_holds_for"]
    assert main(["simulate", "ring:16", str(path), "--sizes", "1K", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["results"]
    assert row["lower_bound_us"] < row["time_us"] and "MSCCL" not in row["bound_holds_for"]
