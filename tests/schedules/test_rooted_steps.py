"""Broadcast and reduce as step schedules (direct, binomial and Bine trees, scatter +
allgather, their multiport forms on tori): executed by the independent checker from every
root, their messages and simulated times against hand-computed values, and plan and
compare running them from ``--root``."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.cli import main
from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import OptCollError, ScheduleError
from optcoll.schedules.baselines.rooted_steps import (
    bine_broadcast,
    bine_tree,
    binomial_broadcast,
    binomial_scatter_allgather,
    direct_broadcast,
    hierarchical_broadcast,
    multiport_bine_broadcast,
    multiport_scatter_allgather,
    rooted_schedules,
    transposed,
)
from optcoll.schedules.baselines.routing import equal_boxes, grid_lines
from optcoll.schedules.baselines.step_catalogue import step_schedules
from optcoll.sim.size_plan import plan
from optcoll.sim.steps import route_steps, simulate_steps, step_cost
from optcoll.studies.compare import compare_methods
from optcoll.topologies import build
from optcoll.verify.steps import verify_steps


def _nodes(n: int) -> list[str]:
    return [f"r{i}" for i in range(n)]


def _messages(schedule: StepSchedule) -> list[list[tuple[str, str, tuple[int, ...]]]]:
    return [[(m.src, m.dst, m.blocks) for m in step] for step in schedule.steps]


@pytest.mark.parametrize("n", range(2, 18))
def test_every_rooted_schedule_delivers_from_every_root(n):
    nodes = _nodes(n)
    log = (n - 1).bit_length()
    for root in nodes:
        for collective in ("broadcast", "reduce"):
            found = {s.method: s for s in rooted_schedules(nodes, collective, root)}
            for schedule in found.values():
                verdict = verify_steps(schedule)
                assert verdict.valid, (root, collective, schedule.method, verdict.reason)
                assert schedule.root == root and schedule.collective == collective
            assert found["direct"].num_steps == 1
            assert found["binomial tree"].num_steps == log
            assert found["Bine tree"].num_steps == log
            # a tree of whole vectors: every node but the root receives exactly once
            for method in ("binomial tree", "Bine tree"):
                got = [m.src if collective == "reduce" else m.dst
                       for step in found[method].steps for m in step]  # fmt: skip
                assert sorted(got) == sorted(v for v in nodes if v != root)


@pytest.mark.parametrize("shape", [(2, 2), (4, 4), (2, 4, 2), (8,)])
def test_multiport_forms_deliver_on_tori(shape):
    n = 1
    for d in shape:
        n *= d
    nodes = _nodes(n)
    for root in (nodes[0], nodes[n // 2 + 1], nodes[-1]):
        for build_ in (multiport_bine_broadcast, multiport_scatter_allgather):
            broadcast = build_(nodes, shape, root)
            for schedule in (broadcast, transposed(broadcast)):
                verdict = verify_steps(schedule)
                assert verdict.valid, (shape, root, schedule.method, verdict.reason)
        # the root sends on all 2D ports in the first step, 1 / 2D of the vector each
        first = multiport_bine_broadcast(nodes, shape, root).steps[0]
        assert [m.src for m in first] == [root] * 2 * len(shape)
        assert len({m.dst for m in first}) == min(2 * len(shape), len(set(_torus_ring(shape))))


def _torus_ring(shape):
    """The distinct neighbours of rank 0 on a torus (a side of 2 has one neighbour)."""
    return [(d, s) for d in range(len(shape)) for s in ((1, -1) if shape[d] > 2 else (1,))]


def test_bine_tree_steps_cross_negabinary_distances():
    """On 8 ranks from r0: distances 3, -1, 1 (rho_2, rho_1, rho_0 signed by parity),
    farthest first; from r5 the same tree translated by 5 (relative ranks)."""
    assert _messages(bine_broadcast(_nodes(8), "r0")) == [
        [("r0", "r3", (0,))],
        [("r0", "r7", (0,)), ("r3", "r4", (0,))],
        [("r0", "r1", (0,)), ("r3", "r2", (0,)), ("r4", "r5", (0,)), ("r7", "r6", (0,))],
    ]
    assert bine_tree(8, 5)[1] == [(5, 4), (0, 1)]
    # 6 ranks: the tree on relative ranks 0..3, then relative 0, 1 send to 4, 5
    assert bine_tree(6, 0) == [[(0, 3)], [(0, 1), (3, 2)], [(0, 4), (1, 5)]]


def test_binomial_scatter_allgather_messages_and_reduce_transpose():
    """4 ranks from r0: the scatter sends r2 the shards of r2 and r3, then r1 and r3 their
    own; recursive doubling's allgather is pruned of what a receiver holds (r1 -> r0, r3
    -> r2, r2 -> r0 carry nothing new and are gone). The reduce runs every message back,
    adding, last first."""
    s = binomial_scatter_allgather(_nodes(4), "r0")
    assert _messages(s) == [
        [("r0", "r2", (2, 3))],
        [("r0", "r1", (1,)), ("r2", "r3", (3,))],
        [("r0", "r1", (0,)), ("r2", "r3", (2,))],
        [("r0", "r2", (0, 1)), ("r1", "r3", (0, 1)), ("r3", "r1", (2, 3))],
    ]
    r = transposed(s)
    assert [[(m.src, m.dst, m.blocks, m.reduce) for m in step] for step in r.steps][-1] == [
        ("r2", "r0", (2, 3), True)
    ]
    assert verify_steps(r).valid


def test_checker_findings_of_rooted_schedules():
    nodes = ("a", "b", "c")
    missing = StepSchedule("broadcast", "x", nodes, 1, ((Send("a", "b", (0,)),),), "a")
    assert verify_steps(missing).reason == "node c ends without block 0"
    relay = StepSchedule("broadcast", "x", nodes, 1, ((Send("b", "c", (0,)),),), "a")
    assert verify_steps(relay).reason == "step 0: b -> c: block 0 is not held by b"
    # a broadcast that sends c the vector twice: its transpose adds a's input twice
    twice = StepSchedule(
        "broadcast", "x", nodes, 1,
        ((Send("a", "b", (0,)), Send("a", "c", (0,))), (Send("b", "c", (0,)),)), "a",
    )  # fmt: skip
    assert verify_steps(twice).valid
    assert verify_steps(transposed(twice)).reason == (
        "step 1: c -> a: block 0 would add the input of c twice"
    )
    # a reduce's root must end with every input; the others need nothing
    short = StepSchedule("reduce", "x", nodes, 1, ((Send("b", "a", (0,), True),),), "a")
    assert verify_steps(short).reason == (
        "node a ends with block 0 summed over 2 of 3 inputs (missing c)"
    )


def test_a_root_exactly_for_broadcast_and_reduce():
    with pytest.raises(ScheduleError, match="has a root exactly when"):
        StepSchedule("broadcast", "x", ("a", "b"), 1, ())
    with pytest.raises(ScheduleError, match="has a root exactly when"):
        StepSchedule("allgather", "x", ("a", "b"), 2, (), "a")
    with pytest.raises(ScheduleError, match="'z' is not a compute node"):
        StepSchedule("reduce", "x", ("a", "b"), 1, (), "z")
    with pytest.raises(OptCollError, match="the root 'z' is not one of the 2 nodes"):
        direct_broadcast(("a", "b"), "z")


def test_star_times_are_hand_computed():
    """star:4 of 100 GB/s (1e5 bytes/µs), 1 µs links, 1 µs overhead, M = 4e5 bytes whole:
    direct: the root's link carries 3 M (12 µs) after o + 2 L: 15; binomial and Bine: 2
    steps of o + 2 L + 4 µs: 14; scatter + allgather (blocks of 1 µs), each message leaving
    once its sender holds what earlier steps send it: the root holds everything, so its
    messages queue back to back on its link; h2 holds its 2 blocks at 5 and forwards one to
    h3 after o, arriving at 9, the other behind it at 10; h3 then sends its 2 blocks to h1:
    10 + o + 2 L + 2 = 15. A reduce (the transpose) takes as long. Bandwidth terms per M at 100: the root's
    link carries 3 M, 2 M and 1.5 M."""
    topo = build("star:4,bw=100")
    root = topo.compute_nodes[0]
    expected = {
        direct_broadcast: (15.0, Fraction(3, 100), 2),
        binomial_broadcast: (14.0, Fraction(1, 50), 4),
        bine_broadcast: (14.0, Fraction(1, 50), 4),
        binomial_scatter_allgather: (15.0, Fraction(3, 200), 8),
    }
    for builder, (time_us, factor, alpha) in expected.items():
        broadcast = builder(topo.compute_nodes, root)
        for schedule in (broadcast, transposed(broadcast)):
            routed = route_steps(topo, schedule)
            run = simulate_steps(topo, routed, 4 * 10**5, overhead=1.0, slice_bytes=None)
            cost = step_cost(topo, routed)
            assert (run.time_us, cost.time_factor, cost.alpha) == (time_us, factor, alpha)


@pytest.mark.parametrize(("collective", "direct"), [("broadcast", 3.03072), ("reduce", 3.01024)])
def test_plan_picks_the_step_schedules_where_faster(collective, direct):
    """torus 4x4, 1 µs overhead, 0.5 µs links, root n1_1, bound 3.00256 µs at 1 KiB: the
    direct step (the broadcast's root sends 15 messages, at most 4 on each of its 4 links
    (spread_paths), posted to the ranks after it first: 3.03072; 3.08192 with 8 on one link
    in rank order, 3.04096 with 8 on one link rotated; a reduce's
    root receives them; the best tree, k=1, took 7.5512) and at 1 MiB the multiport Bine tree
    (16.48576 µs; the optimal trees 24.72864, k=1 38.95728)."""
    topo = build("torus:4x4")
    rows = plan(topo, collective, [1024, 2**20], root="n1_1", overhead=1.0,
                default_latency=Fraction(1, 2))  # fmt: skip
    small, mid = rows
    assert small.lower_bound_us == pytest.approx(3.00256, abs=1e-9)
    assert (small.method, small.time_us) == ("direct", pytest.approx(direct, abs=1e-9))
    assert dict(small.candidates)["k=1"] == pytest.approx(7.5512, abs=1e-9)
    assert (mid.method, mid.time_us) == ("multiport Bine tree", pytest.approx(16.48576, abs=1e-9))
    assert dict(mid.candidates)["optimal (k=4)"] == pytest.approx(24.72864, abs=1e-9)


def test_compare_lists_rooted_step_schedules(capsys):
    topo = build("torus:4x4")
    costs = {c.method: c for c in compare_methods(topo, "broadcast", root="n1_1")}
    assert list(costs)[:2] == ["optimal (k=4)", "fixed k=1"]
    # the multiport scatter + allgather: each of 4 shares crosses a port's busiest link
    # 15/16 of its share in each phase (M / 4 per 100 GB/s): (15/16) * 2 / 400 = 15/3200
    assert costs["multiport scatter + allgather"].time_factor == Fraction(15, 3200)
    # direct: the least-loaded paths from n1_1 put at most 4 of its 15 messages on each
    # of its links (the widest paths' lexicographic first put 8 on its link to n0_1)
    assert costs["direct"].time_factor == Fraction(4, 100)
    assert main(["compare", "torus:4x4", "--collective", "reduce", "--root", "n1_1",
                 "--sizes", "1K"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "multiport Bine tree" in out and "reduce on torus:4x4" in out
    assert main(["compare", "torus:4x4", "--collective", "reduce", "--root", "nope"]) == 2


def test_hierarchical_and_dimension_wise_trees():
    """Across equal boxes (or a grid's lines) through the root's position, then one direct
    step inside each box; from every root of dgx-h100:2 and mesh 3x5, both collectives
    deliver; on dgx-h100:2 at 256 KiB plan runs it (14.3207 µs: the root sends its rail
    peer and its 7 box mates at once, then the peer its 7; the binomial tree took 15.9905)."""
    for spec in ("dgx-h100:2", "mesh:3x5"):
        topo = build(spec)
        boxes = equal_boxes(topo) or grid_lines(topo)
        for root in topo.compute_nodes:
            for schedule in step_schedules(topo.compute_nodes, "reduce", boxes=boxes, root=root,
                                           lines=grid_lines(topo)):  # fmt: skip
                verdict = verify_steps(schedule)
                assert verdict.valid, (spec, root, schedule.method, verdict.reason)
    topo = build("dgx-h100:2")
    s = hierarchical_broadcast(topo.compute_nodes, equal_boxes(topo), "b0.gpu3")
    assert [len(step) for step in s.steps] == [8, 7]
    assert s.steps[0][0] == Send("b0.gpu3", "b1.gpu3", (0,))
    row = plan(topo, "broadcast", [2**18], overhead=1.0, default_latency=Fraction(1, 2))[0]
    assert (row.method, row.time_us) == (
        "hierarchical (direct + direct)",
        pytest.approx(14.3207, abs=1e-4),
    )
    assert dict(row.candidates)["binomial tree"] == pytest.approx(15.9905, abs=1e-4)
    with pytest.raises(ScheduleError, match="not 'ring'"):
        hierarchical_broadcast(topo.compute_nodes, equal_boxes(topo), "b0.gpu3", "ring")
