"""Plan's time of a tree schedule compact under the topology's symmetry is the full run's,
ties first come first served, as a file's run breaks them (``_Search.settle`` in
:mod:`optcoll.sim.size_plan`), not the quotient run's, whose ties fall alike on every
translate (an order no MSCCL++ field carries). Values measured with the simulator
(links 0.5 µs)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from optcoll.cli import main
from optcoll.sim.quotient import schedule_quotient, schedule_quotient_tasks
from optcoll.sim.simulator import Network, simulate
from optcoll.sim.size_plan import candidates, plan, planned_tasks, schedule_bands
from optcoll.topologies import build

HALF = Fraction(1, 2)


@pytest.mark.parametrize(
    ("spec", "collective", "size", "overhead", "quotient_us", "plan_us"),
    [
        # the quotient's 8 KiB slices in depth order took 6.2598, 8.1694 in full; settled,
        # plan keeps whole 16 KiB chunks in depth order (6.7514 from the quotient)
        ("torus:4x4", "allreduce", 2**20, 0.0, 6.7514, 7.0960),
        # 512 KiB slices took 65.9146 from the quotient, 73.7400 in full; settled: 128 KiB
        # slices (70.0407 from the quotient)
        ("dgx-h100:2", "allreduce", 2**24, 1.0, 70.0407, 72.6233),
    ],
)
def test_plan_time_is_the_full_run(spec, collective, size, overhead, quotient_us, plan_us):
    """The chosen tree schedule, run task by task in plan's order and slices with ties
    first come first served (``planned_tasks``, as ``optcoll simulate`` runs plan's
    exported schedule), takes exactly plan's time; its quotient run, translates tied
    alike, is faster, and that figure is no longer printed."""
    topo = build(spec)
    rows = plan(topo, collective, [size], overhead=overhead, default_latency=HALF)
    (chosen, _, _), = schedule_bands(rows, candidates(topo, collective))  # fmt: skip
    network = Network.of(topo, HALF)
    graph = planned_tasks(topo, chosen.schedule, network, size)
    full = simulate(graph, network, size, overhead=overhead).time_us
    assert full == rows[0].time_us
    assert round(full, 4) == plan_us
    quotient = schedule_quotient(chosen.schedule, topo, network)
    assert quotient is not None  # a compact schedule plan simulated from its quotient first
    folded = schedule_quotient_tasks(
        chosen.schedule, quotient, network, size, slice_bytes=chosen.schedule.stats["slice_bytes"],
        priority=chosen.schedule.stats["priority"],
    )  # fmt: skip
    tied = simulate(folded, network, size, overhead=overhead, ties=range(len(folded))).time_us
    assert round(tied, 4) == quotient_us
    assert tied < full


@pytest.mark.parametrize(
    ("spec", "collective", "size", "overhead", "method", "priority", "plan_us"),
    [
        ("dgx-h100:2", "allgather", "16M", "1", "optimal (k=2)", "progress", 34.4573),
        ("ring:8", "allgather", "1M", "0", "timetable (k=4)", "progress", 5.2598),
    ],
)
def test_mscclpp_file_runs_in_plans_time(
    tmp_path, capsys, spec, collective, size, overhead, method, priority, plan_us
):
    """Where the MSCCL++ file of a tree schedule carries plan's link order (``progress``:
    the data's, the one the export plans in; a timetable's trees too), its simulated time
    is plan's to the nanosecond (ring:8: optimal (k=2), progress, 5.5875 µs until the
    timetable, settled in full, ran faster)."""
    path = tmp_path / "plan.json"
    args = ["export", spec, "--collective", collective, "--size", size, "--overhead", overhead,
            "--latency", "0.5", "--format", "mscclpp", "-o", str(path), "--json"]  # fmt: skip
    assert main(args) == 0
    entry = json.loads(capsys.readouterr().out)["files"][0]
    assert (entry["method"], entry["priority"]) == (method, priority)
    assert entry["plan_time_us"] == entry["file_time_us"] == plan_us
