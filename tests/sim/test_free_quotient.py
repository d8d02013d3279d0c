"""Quotient simulation under a group acting freely, not transitively, on the compute nodes
(:func:`optcoll.sim.quotient.free_quotient`): a dragonfly's group rotations, one root per
orbit, and what ``plan`` does with it and with ring baselines too large to simulate."""

from __future__ import annotations

import pytest

import optcoll.schedules.packing as packing
import optcoll.sim.size_plan as size_plan
from optcoll.core.schedule import ImageTrees
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.quotient import (
    check_expanded,
    schedule_quotient,
    schedule_quotient_tasks,
    simulate_quotient,
    translate_ties,
)
from optcoll.sim.simulator import Network, schedule_tasks, simulate
from optcoll.sim.size_plan import Candidate, candidates, plan
from optcoll.topologies import build

SPEC = "dragonfly:a=4,p=1,h=2,g=9"  # 36 routers, one host each: 9 group rotations, 4 orbits
SIZES = [2**10, 2**20, 2**26]


@pytest.fixture(scope="module")
def declared() -> tuple:
    """The dragonfly and its optimal trees by its declared group (one root per orbit)."""
    saved = packing.DECLARED_FROM
    packing.DECLARED_FROM = 1  # the declared trees from any size
    try:
        topology = build(SPEC)
        return topology, pack_arborescences(topology), pack_arborescences(topology, 1)
    finally:
        packing.DECLARED_FROM = saved


def test_one_root_per_orbit_gives_a_quotient(declared):
    topology, schedule, _ = declared
    assert isinstance(schedule.trees, ImageTrees)
    assert schedule.time_factor == schedule.cut_ratio  # r*, by the declared group
    quotient = schedule_quotient(schedule, topology, Network.of(topology))
    assert quotient is not None
    assert (quotient.order, len(quotient.roots)) == (9, 4)
    assert len(quotient.classes) * quotient.order == len(topology.capacity)


@pytest.mark.parametrize("size", SIZES)
def test_the_quotient_run_is_the_full_run_float_for_float(declared, size):
    topology, schedule, _ = declared
    network = Network.of(topology)
    quotient = schedule_quotient(schedule, topology, network)
    short = simulate_quotient(schedule, quotient, network, size, overhead=1.0)
    graph = schedule_tasks(schedule, network, size)
    full = simulate(graph, network, size, overhead=1.0, ties=translate_ties(schedule, graph))
    assert short.time_us == full.time_us
    assert (
        short.tasks
        == len(graph)
        == 9 * len(schedule_quotient_tasks(schedule, quotient, network, size))
    )
    # the quotient run, mapped onto every link, is a valid timetable of the whole network
    graph = schedule_quotient_tasks(schedule, quotient, network, size)
    recorded = simulate(graph, network, size, overhead=1.0, ties=range(len(graph)), record=True)
    assert check_expanded(schedule, quotient, network, size, recorded) > 0


def test_plan_chooses_as_with_full_simulation(declared, monkeypatch):
    """The same winner at every size with and without the quotient; the quotient's plan
    tries every link order, so it is no slower beyond tie order (1e-3: at 64 MiB k = 1 in
    128 KiB slices, progress-depth, runs 670.389 µs from its quotient and 669.875 in full)."""
    topology, optimal, one = declared
    options = [Candidate("optimal", optimal), Candidate("k=1", one)]
    fast = plan(topology, "allgather", SIZES, options=options)
    monkeypatch.setattr(size_plan, "schedule_quotient", lambda *args: None)
    full = plan(topology, "allgather", SIZES, options=options)
    # the optimal (mixed-radix) trees are of height 2: they win at 1 MiB (18.1 us against
    # 19.2 for k = 1); at 64 MiB k = 1 in 128 KiB slices (the slice search goes below whole
    # chunks) edges them out: 670.39 against 670.93 us
    assert [r.method for r in fast] == [r.method for r in full] == ["k=1", "optimal", "k=1"]
    for ours, theirs in zip(fast, full, strict=True):
        assert ours.time_us <= theirs.time_us * (1 + 1e-3)
        assert ours.bound == theirs.bound and ours.time_us >= ours.lower_bound_us


def test_ring_baselines_beyond_the_task_budget_are_never_built():
    """With a budget below one ring's task graph the ring and the hierarchical ring are
    deferred (listed, never made: no time) and the NCCL-like rings left out; within it
    they are built as before."""
    topology = build("dgx-a100:2")  # 16 GPUs: one ring is 16 * 15 edges
    small = candidates(topology, max_tasks=16 * 15 - 1)
    names = [c.method for c in small]
    assert "ring" in names and "hierarchical ring" in names
    assert not any(name.startswith("NCCL-like") for name in names)
    deferred = {c.method: c.least_tasks for c in small if c.deferred is not None}
    assert deferred == {"ring": 240, "hierarchical ring": 8 * 240}
    rows = plan(topology, "allgather", [2**20], options=small, max_tasks=16 * 15 - 1)
    times = dict(rows[0].candidates)
    assert times["ring"] is None and times["hierarchical ring"] is None
    full = candidates(topology)
    assert any(c.method.startswith("NCCL-like") for c in full)
    built = [c for c in full if c.method == "hierarchical ring"]
    assert built[0].schedule is not None and built[0].deferred is None
