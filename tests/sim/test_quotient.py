"""Quotient simulation: one orbit of tasks gives the full run's time exactly, the expanded
timetable checks on the whole topology, and non-equivariant inputs are simulated in full."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import pytest

from optcoll.core.schedule import ImageTrees
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ScheduleError
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.quotient import (
    check_expanded,
    regular_quotient,
    schedule_quotient,
    schedule_quotient_tasks,
    simulate_quotient,
    topology_quotient,
    translate_ties,
)
from optcoll.sim.simulator import (
    PRIORITIES,
    Network,
    TaskGraph,
    schedule_tasks,
    simulate,
    tree_tasks,
)
from optcoll.sim.size_plan import candidates, plan
from optcoll.sim.timetable import greedy_timetable
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

MiB = 2**20
HALF = Fraction(1, 2)


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:8x8", "torus:4x4x4", "hypercube:4", "ring:6"])
@pytest.mark.parametrize("priority", PRIORITIES)
def test_quotient_run_equals_the_full_run_in_the_same_order(spec, priority):
    """Float for float: the full run with every translate of a task keyed alike takes
    exactly the quotient's time, with and without a per-step overhead, whole chunks or
    slices."""
    topo = build(spec)
    schedule = pack_arborescences(topo)
    network = Network.of(topo)
    quotient = schedule_quotient(schedule, topo, network)
    assert quotient is not None and quotient.order == topo.num_compute
    for size, overhead, slice_bytes in ((MiB, 1.0, 65536), (64 * MiB, 0.0, 512 * 1024)):
        graph = schedule_tasks(schedule, network, size, slice_bytes=slice_bytes, priority=priority)
        full = simulate(
            graph, network, size, overhead=overhead, ties=translate_ties(schedule, graph)
        )
        run = simulate_quotient(
            schedule, quotient, network, size, overhead=overhead, slice_bytes=slice_bytes,
            priority=priority,
        )  # fmt: skip
        assert run.time_us == full.time_us
        assert run.tasks == full.tasks == len(graph)
        assert run.busy_us == pytest.approx(full.busy_us, rel=1e-12)


def test_quotient_of_an_equivariant_timetable_equals_its_full_replay():
    """torus 4x4 (the issue's links): the equivariant greedy's trees verify at their time
    factor, and its replay in its own order is the same from the quotient and in full."""
    topo = build("torus:4x4,bw=53.6870912")
    network = Network.of(topo, HALF)
    quotient = topology_quotient(topo, network)
    chunk = 64 * MiB / 16 / 4
    table = greedy_timetable(topo, chunk, 4, default_latency=HALF, quotient=quotient)
    assert isinstance(table.schedule.trees, ImageTrees)
    assert verify_schedule(topo, table.schedule).valid
    graph = TaskGraph()
    tree_tasks(graph, network, table.schedule.trees, chunk, (False,), starts=table.starts)
    full = simulate(graph, network, 64 * MiB, overhead=0.0,
                    ties=translate_ties(table.schedule, graph))  # fmt: skip
    own = schedule_quotient(table.schedule, topo, network)
    run = simulate_quotient(table.schedule, own, network, 64 * MiB, overhead=0.0,
                            starts=table.starts)  # fmt: skip
    assert run.time_us == full.time_us
    # the greedy keeps the fastest of its orders: no slower than its first
    first = greedy_timetable(topo, chunk, 4, default_latency=HALF, quotient=quotient)
    assert table.time_us <= first.time_us


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:8x8", "hypercube:3"])
def test_expanded_timetable_passes_the_full_topology_check(spec):
    topo = build(spec)
    schedule = pack_arborescences(topo)
    network = Network.of(topo)
    quotient = schedule_quotient(schedule, topo, network)
    graph = schedule_quotient_tasks(schedule, quotient, network, MiB, priority="depth",
                                    slice_bytes=32768)  # fmt: skip
    run = simulate(graph, network, MiB, ties=range(len(graph)), record=True)
    checked = check_expanded(schedule, quotient, network, MiB, run, priority="depth",
                             slice_bytes=32768)  # fmt: skip
    # every node of every tree of every root gets every slice: N k (N - 1) slices per piece
    n = topo.num_compute
    pieces = math.ceil(MiB / n / schedule.k / 32768)
    assert checked == n * schedule.k * (n - 1) * pieces


def test_full_topology_check_finds_a_link_sending_twice():
    """A run whose recorded spans are tampered with (two slices on one link at once, a
    slice leaving before it arrived) fails the check, naming what is wrong."""
    topo = build("torus:4x4")
    schedule = pack_arborescences(topo)
    network = Network.of(topo)
    quotient = schedule_quotient(schedule, topo, network)
    graph = schedule_quotient_tasks(schedule, quotient, network, MiB)
    run = simulate(graph, network, MiB, ties=range(len(graph)), record=True)
    spans = list(run.transfers)
    # two transfers on one link orbit: the later begins when the earlier does
    on = [graph.path[t][h] for t, h, _, _ in spans]
    later = next(i for i in range(1, len(spans)) if on[i] in on[:i])
    earlier = on.index(on[later])
    t, h, _, e = spans[later]
    spans[later] = (t, h, spans[earlier][2], e)
    early = replace(run, transfers=tuple(spans))
    spans = list(run.transfers)
    with pytest.raises(ScheduleError, match="at once|before"):
        check_expanded(schedule, quotient, network, MiB, early)
    child = next(i for i, after in enumerate(graph.successors) if after)  # has a successor
    waiting = graph.successors[child][0]
    moved = tuple((t, h, 0.0, e - b) if t == waiting else (t, h, b, e) for t, h, b, e in spans)
    with pytest.raises(ScheduleError, match="before|at once"):
        check_expanded(schedule, quotient, network, MiB, replace(run, transfers=moved))


def _torus_with(latency_of_one_link: Fraction | None, bandwidth_of_one_link: int | None):
    """torus 4x4 (as links 'v{x}{y}'), one link's latency or bandwidth changed."""
    nodes = [Node(f"v{x}{y}") for x in range(4) for y in range(4)]
    links = []
    for x in range(4):
        for y in range(4):
            for dx, dy in ((1, 0), (0, 1)):
                u, v = f"v{x}{y}", f"v{(x + dx) % 4}{(y + dy) % 4}"
                odd = (x, y, dx) == (0, 0, 1)
                links.append(
                    Link(
                        u,
                        v,
                        bandwidth_of_one_link if odd and bandwidth_of_one_link else 100,
                        latency=latency_of_one_link if odd else None,
                        bidirectional=True,
                    )  # fmt: skip
                )
    return Topology("odd-torus", nodes, links)


def test_non_equivariant_inputs_fall_back_to_the_full_simulation():
    """No quotient for: a schedule of per-root trees (no group), a topology where one link's
    latency differs (the translations are no automorphisms of the network as simulated),
    a mesh with a fixed centre. plan still plans them, in full. A 4x4 mesh's reflections
    fix no node: free, not transitive, so a quotient with one root per orbit."""
    topo = build("torus:4x4")
    network = Network.of(topo)
    plain = pack_arborescences(topo, symmetry=False)
    assert not isinstance(plain.trees, ImageTrees)
    assert schedule_quotient(plain, topo, network) is None
    group = pack_arborescences(topo).trees.group
    assert regular_quotient(topo, network, group) is not None
    slow = _torus_with(Fraction(3), None)
    assert topology_quotient(slow, Network.of(slow)) is None
    symmetric = pack_arborescences(slow)
    if isinstance(symmetric.trees, ImageTrees):  # packed on capacities alone: refused here
        assert schedule_quotient(symmetric, slow, Network.of(slow)) is None
    mesh = build("mesh:4x4")
    assert topology_quotient(mesh, Network.of(mesh)) is None
    reflected = schedule_quotient(pack_arborescences(mesh), mesh, Network.of(mesh))
    assert reflected is not None and (reflected.order, len(reflected.roots)) == (4, 4)
    centred = build("mesh:3x3")
    assert schedule_quotient(pack_arborescences(centred), centred, Network.of(centred)) is None
    # planned in full: every time at least the lower bound, the fastest (a timetable of
    # packed trees at 4 MiB; the direct step schedule wins at 1 MiB) verifies
    (row,) = plan(slow, "allgather", [4 * MiB])
    assert row.time_us >= row.lower_bound_us and row.schedule is not None
    assert verify_schedule(slow, row.schedule).valid


def test_plan_on_a_torus_simulates_one_orbit_and_is_no_slower_than_in_full():
    """torus 8x8: every candidate simulated from its quotient; plan's fastest time at each
    size is no slower than the same candidates' full first-come-first-served runs."""
    topo = build("torus:8x8")
    options = candidates(topo)
    network = Network.of(topo)
    compact = [o for o in options if o.schedule is not None]
    assert compact and all(schedule_quotient(o.schedule, topo, network) for o in compact[:3])
    rows = plan(topo, "allgather", [MiB, 64 * MiB], options=options)
    for row in rows:
        fifo = min(
            simulate(schedule_tasks(o.schedule, network, row.size, priority=p), network,
                     row.size).time_us
            for o in compact[:1]
            for p in PRIORITIES
        )  # fmt: skip
        assert row.lower_bound_us <= row.time_us <= fifo
