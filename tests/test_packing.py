"""Arborescence packing: every schedule is checked from scratch and by optcoll.verify."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import given, settings
from test_splitting import switched_topologies

from optcoll.bound import optimal_cut_ratio
from optcoll.exceptions import SolveError
from optcoll.packing import fixed_k_capacity, pack_arborescences, pack_rooted
from optcoll.schedule import Schedule
from optcoll.splitting import LogicalGraph
from optcoll.topologies import build
from optcoll.topology import Topology
from optcoll.verify import verify_schedule


def independent_time_factor(topology: Topology, schedule: Schedule) -> Fraction:
    """Check every schedule property from scratch and return the exact time factor."""
    compute = set(topology.compute_nodes)
    assert set(schedule.compute_nodes) == compute
    per_root: dict[str, int] = {}
    load: dict[tuple[str, str], int] = {}
    for tree in schedule.trees:
        assert tree.chunks >= 1
        per_root[tree.root] = per_root.get(tree.root, 0) + tree.chunks
        parent = {}
        for e in tree.edges:
            assert e.dst not in parent and e.dst != tree.root, "two parents or an arc into the root"
            parent[e.dst] = e.src
            assert e.path[0] == e.src and e.path[-1] == e.dst
            assert all(x not in compute for x in e.path[1:-1]), e.path
            for link in zip(e.path, e.path[1:], strict=False):
                assert link in topology.capacity, link
                load[link] = load.get(link, 0) + tree.chunks
        assert set(parent) == compute - {tree.root}, "not spanning"
        for v in parent:  # every node climbs to the root: no cycles
            seen = set()
            while v != tree.root:
                assert v not in seen
                seen.add(v)
                v = parent[v]
    assert per_root == dict.fromkeys(compute, schedule.k)
    return max(Fraction(c) / (schedule.k * topology.capacity[e]) for e, c in load.items())


def brute_force_cut_ratio(topology: Topology) -> Fraction:
    """max over node sets S (some, not all compute nodes) of |S & compute| / B+(S)."""
    nodes = topology.node_ids
    best = Fraction(0)
    for size in range(1, len(nodes)):
        for side in combinations(nodes, size):
            inside = sum(topology.is_compute(x) for x in side)
            if 0 < inside < topology.num_compute:
                best = max(best, Fraction(inside) / topology.cut_bandwidth(side))
    return best


def check(topology: Topology, schedule: Schedule, expected: Fraction) -> None:
    assert independent_time_factor(topology, schedule) == expected
    assert schedule.time_factor == expected
    verdict = verify_schedule(topology, schedule, optimum=expected, require_optimal=True)
    assert verdict.valid, verdict.reason
    assert verdict.time_factor == expected


# r* and k of the reference (ForestColl's published implementation, confirmed by an LP)
REFERENCE = {
    "dgx-a100:1": (Fraction(7, 300), 1),
    "dgx-a100:2": (Fraction(3, 65), 13),
    "mi250:1": (Fraction(7, 150), 3),
    "mi250:2": (Fraction(15, 166), 83),
}


@pytest.mark.parametrize("spec", ["dgx-a100:1", "dgx-a100:2", "mi250:1"])
def test_builtin_schedules_reach_the_optimum(spec):
    topology = build(spec)
    schedule = pack_arborescences(topology)
    ratio, k = REFERENCE[spec]
    assert (schedule.cut_ratio, schedule.k) == (ratio, k)
    check(topology, schedule, ratio)
    assert schedule.stats["ratio_to_optimum"] == "1"


@pytest.mark.slow
def test_mi250_2_reaches_the_optimum():
    topology = build("mi250:2")
    schedule = pack_arborescences(topology)
    assert (schedule.cut_ratio, schedule.k) == REFERENCE["mi250:2"]
    check(topology, schedule, Fraction(15, 166))


@pytest.mark.parametrize(
    ("spec", "algbw"),
    # the reference's best schedules with one chunk per root
    [("mi250:2", 320), ("dgx-a100:2", Fraction(2400, 7))],
)
def test_fixed_k_one_matches_reference(spec, algbw):
    topology = build(spec)
    expected = topology.num_compute / Fraction(algbw)
    schedule = pack_arborescences(topology, k=1)
    assert schedule.k == 1
    check(topology, schedule, expected)
    assert Fraction(schedule.stats["ratio_to_optimum"]) == expected / schedule.cut_ratio


def test_fixed_k_is_the_smallest_breakpoint():
    topology = build("mi250:1")
    x, caps = fixed_k_capacity(topology, 2)
    scale = topology.integer_capacities()[1]
    schedule = pack_arborescences(topology, k=2)
    check(topology, schedule, x / (2 * scale))
    # r* = 7/150 is not reachable with 2 chunks per root (k = 3 is needed)
    assert x / (2 * scale) > Fraction(7, 150)


def test_schedule_is_deterministic():
    topology = build("dgx-a100:2")
    assert pack_arborescences(topology).to_dict() == pack_arborescences(topology).to_dict()


@settings(derandomize=True, max_examples=25, deadline=None)
@given(switched_topologies())
def test_random_topologies_reach_the_brute_force_optimum(topology):
    schedule = pack_arborescences(topology)
    optimum = brute_force_cut_ratio(topology)
    assert schedule.cut_ratio == optimum == optimal_cut_ratio(topology).ratio
    check(topology, schedule, optimum)


def test_pack_rooted_respects_capacities_and_counts():
    # two nodes joined by 3 units each way; 3 arborescences per root fit exactly
    g = LogicalGraph(("a", "b"), {("a", "b"): 3, ("b", "a"): 3}, {})
    packing = pack_rooted(g, {"a": 3, "b": 3})
    assert packing == [("a", 3, (("a", "b"),)), ("b", 3, (("b", "a"),))]
    with pytest.raises(SolveError, match="Edmonds"):
        pack_rooted(g, {"a": 4, "b": 4})


def test_pack_rooted_splits_bundles_when_needed():
    # a root with 2 trees but the two cheap arcs hold one tree each
    g = LogicalGraph(
        ("r", "x", "y"),
        {("r", "x"): 1, ("r", "y"): 1, ("x", "y"): 1, ("y", "x"): 1},
        {},
    )
    packing = pack_rooted(g, {"r": 2})
    assert sorted(m for _, m, _ in packing) == [1, 1]
    used: dict[tuple[str, str], int] = {}
    for root, m, arcs in packing:
        assert root == "r" and {v for _, v in arcs} == {"x", "y"}
        for arc in arcs:
            used[arc] = used.get(arc, 0) + m
    assert all(used[a] <= g.capacity[a] for a in used)
