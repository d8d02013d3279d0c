"""Reduce-scatter, allreduce, broadcast and reduce: exact optima, independent checks."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import TopologyBuilder
from optcoll.exceptions import ArgumentError, ScheduleError
from optcoll.schedules.collectives import (
    allreduce,
    broadcast,
    broadcast_capacity,
    build_collective,
    is_symmetric,
    reduce,
    reduce_scatter,
    reversed_topology,
)
from optcoll.schedules.packing import pack_arborescences
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule


def _min_cut(topology, inside_must, outside_must):
    """Brute force: min B+(S) over S holding ``inside_must``, missing one of ``outside_must``."""
    nodes = topology.node_ids
    best = None
    for size in range(1, len(nodes)):
        for side in itertools.combinations(nodes, size):
            s = set(side)
            if not inside_must <= s or all(v in s for v in outside_must):
                continue
            bw = sum(c for (u, v), c in topology.capacity.items() if u in s and v not in s)
            best = bw if best is None else min(best, bw)
    return best


def _random_topology(seed):
    """3-5 compute nodes, 0-2 switches; switch links symmetric, compute links may be one-way."""
    rng = random.Random(seed)
    b = TopologyBuilder(f"random{seed}")
    compute = [f"c{i}" for i in range(rng.randint(3, 5))]
    switches = [f"s{i}" for i in range(rng.randint(0, 2))]
    for c in compute:
        b.compute(c)
    for s in switches:
        b.switch(s)
    ring = compute + switches
    for u, v in zip(ring, ring[1:] + ring[:1], strict=True):
        b.link(u, v, rng.choice([1, 2, 3]), bidirectional=True)
    for _ in range(rng.randint(1, 5)):
        u, v = rng.sample(ring, 2)
        bidirectional = u in switches or v in switches or rng.random() < 0.5
        b.link(u, v, rng.choice([1, 2, 5]), bidirectional=bidirectional)
    return b.build()


def _ring4():
    b = TopologyBuilder("ring4")
    nodes = ["g0", "g1", "g2", "g3"]
    for n in nodes:
        b.compute(n)
    for u, v in zip(nodes, nodes[1:] + nodes[:1], strict=True):
        b.link(u, v, 10, bidirectional=True)
    return b.build(), nodes


def test_hand_built_ring_reduce_scatter_and_allreduce_verify():
    topo, nodes = _ring4()
    trees = []
    for i in range(4):
        cw = [nodes[(i + j) % 4] for j in range(4)]
        ccw = [nodes[(i - j) % 4] for j in range(4)]
        for order in (cw, ccw):
            edges = tuple(TreeEdge(a, b, (a, b)) for a, b in itertools.pairwise(order))
            trees.append(Tree(order[0], 1, edges))
    ag = Schedule("allgather", "ring4", tuple(nodes), 2, tuple(trees))
    # each directed link carries 3 chunks of 2 per shard: time factor 3 / (2 * 10)
    rs, ar = reduce_scatter(ag, topo), allreduce(ag, topo)
    assert rs.time_factor == Fraction(3, 20) and ar.time_factor == Fraction(3, 10)
    for schedule in (rs, ar):
        result = verify_schedule(topo, schedule)
        assert result.valid, result.reason
        assert result.time_factor == schedule.time_factor
    assert optimal_cut_ratio(topo).ratio == Fraction(3, 20)


@pytest.mark.parametrize("spec", ["dgx-a100:1", "mi250:1"])
def test_builtin_reduce_scatter_and_allreduce_are_optimal(spec):
    topo = build(spec)
    r_star = optimal_cut_ratio(topo).ratio
    ag = pack_arborescences(topo)
    rs, ar = reduce_scatter(ag, topo), allreduce(ag, topo)
    assert is_symmetric(topo)
    assert rs.time_factor == r_star and ar.time_factor == 2 * r_star
    for schedule, optimum in ((rs, r_star), (ar, 2 * r_star)):
        result = verify_schedule(topo, schedule, optimum=optimum, require_optimal=True)
        assert result.valid, result.reason


def test_asymmetric_reduce_scatter_uses_the_reversed_topology():
    b = TopologyBuilder("skew")
    for n in ("a", "b", "c"):
        b.compute(n)
    b.link("a", "b", 4)
    b.link("b", "c", 4)
    b.link("c", "a", 4)
    b.link("b", "a", 1)
    topo = b.build()
    assert not is_symmetric(topo)
    forward = pack_arborescences(topo)
    with pytest.raises(ScheduleError, match="reversed_topology"):
        reduce_scatter(forward, topo)
    rs = build_collective(topo, "reduce_scatter")
    r_rev = optimal_cut_ratio(reversed_topology(topo)).ratio
    assert rs.time_factor == r_rev == rs.cut_ratio
    result = verify_schedule(topo, rs, optimum=r_rev, require_optimal=True)
    assert result.valid, result.reason


@pytest.mark.parametrize("seed", range(12))
def test_broadcast_and_reduce_match_brute_force_min_cut(seed):
    topo = _random_topology(seed)
    _, unit = topo.integer_capacities()
    compute = topo.compute_nodes
    root = compute[seed % len(compute)]
    others = [v for v in compute if v != root]
    best_out = _min_cut(topo, {root}, others)
    assert broadcast_capacity(topo, root) * unit == best_out
    bc = broadcast(topo, root)
    assert bc.time_factor == 1 / best_out
    result = verify_schedule(topo, bc, optimum=1 / best_out, require_optimal=True)
    assert result.valid, result.reason
    # reduce: every S holding some non-root compute node but not the root
    best_in = min(_min_cut(topo, {v}, [root]) for v in others)
    rd = reduce(topo, root)
    assert rd.time_factor == 1 / best_in
    result = verify_schedule(topo, rd, optimum=1 / best_in, require_optimal=True)
    assert result.valid, result.reason


def test_broadcast_on_two_dgx_boxes_is_limited_by_the_nics():
    topo = build("dgx-a100:2")
    bc = broadcast(topo, "b1.gpu5")
    # 8 NICs of 25 GB/s leave a box: 200 GB/s, so 8 one-chunk trees of 25 GB/s units
    assert bc.k == 8 and bc.time_factor == Fraction(1, 200)
    assert verify_schedule(topo, bc).valid
    # the root's whole message crosses the 200 GB/s of NICs: algbw is 1 / time factor
    assert bc.algbw == 200.0


def test_bad_roots_and_collectives():
    topo = build("dgx-a100:1")
    with pytest.raises(ArgumentError, match="root 'b0.nvswitch' is a switch"):
        broadcast(topo, "b0.nvswitch")
    with pytest.raises(ArgumentError, match="root 'gpu99' is not a node"):
        broadcast(topo, "gpu99")
    with pytest.raises(ScheduleError, match="-k does not apply"):
        build_collective(topo, "broadcast", k=2)
    with pytest.raises(ArgumentError, match="unknown collective"):
        build_collective(topo, "gather")
    bc = broadcast(topo, "b0.gpu1")
    with pytest.raises(ScheduleError, match="from an allgather schedule"):
        allreduce(bc, topo)


def test_build_collective_is_deterministic():
    topo = build("mi250:1")
    assert (
        build_collective(topo, "allreduce").to_dict()
        == build_collective(topo, "allreduce").to_dict()
    )
