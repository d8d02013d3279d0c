"""Rounding fractional tree packings into integral schedules (checked by the verifier)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.exceptions import ArgumentError, ScheduleError
from optcoll.graph.splitting import split_switches
from optcoll.io import load_topology
from optcoll.schedules.packing import pack_arborescences
from optcoll.schedules.rounding import round_packing
from optcoll.schedules.tree_packing import fractional_tree_packing
from optcoll.verify.schedule import verify_schedule

HALF = Fraction(1, 2)


def bidirectional_ring() -> Topology:
    b = TopologyBuilder("biring3")
    for g in "abc":
        b.compute(g)
    for u, v in ("ab", "bc", "ca"):
        b.link(u, v, 10, bidirectional=True)
    return b.build()


def chains_packing():
    """Every root splits its shard over its two Hamiltonian paths: optimal, t = 1/10."""
    return [(r, ((r, x), (x, y)), HALF) for r, x, y in ("abc", "acb", "bca", "bac", "cab", "cba")]


@dataclass(frozen=True)
class Logical:
    """A hand-made stand-in for splitting.LogicalGraph (capacity + paths per arc)."""

    capacity: dict
    paths: dict


def two_switches(n: int = 3) -> tuple[Topology, Logical]:
    """n GPUs, each on switch s1 (10 GB/s) and s2 (5 GB/s); arc u->v via s1 (cap 2) or s2 (cap 1)."""
    b = TopologyBuilder("two-switches")
    gpus = [f"g{i}" for i in range(n)]
    for g in gpus:
        b.compute(g)
    b.switch("s1")
    b.switch("s2")
    for g in gpus:
        b.link(g, "s1", 10, bidirectional=True)
        b.link(g, "s2", 5, bidirectional=True)
    paths = {(u, v): (((u, "s1", v), 2), ((u, "s2", v), 1)) for u in gpus for v in gpus if u != v}
    return b.build(), Logical({arc: 3 for arc in paths}, paths)


def test_exact_rounding_of_an_optimal_packing():
    schedule = round_packing(bidirectional_ring(), chains_packing())
    result = verify_schedule(
        bidirectional_ring(), schedule, optimum=Fraction(1, 10), require_optimal=True
    )
    assert result.valid, result.reason
    assert schedule.k == 2 and len(schedule.trees) == 6
    assert schedule.time_factor == result.time_factor == Fraction(1, 10)
    assert schedule.cut_ratio == Fraction(1, 10) and schedule.stats["ratio_to_optimum"] == "1"


def test_bounded_rounding_is_valid_and_repaired():
    topo = bidirectional_ring()
    schedule = round_packing(topo, chains_packing(), K=1)
    result = verify_schedule(topo, schedule)
    assert result.valid, result.reason
    assert schedule.k == 1 and len(schedule.trees) == 3
    # One chain per root puts two chunks on some link (time factor 1/5); the repair
    # replaces chains by stars, which are outside the LP's support, and reaches 1/10.
    assert result.time_factor == Fraction(1, 10)
    assert any(len({e.src for e in t.edges}) == 1 for t in schedule.trees)
    four = round_packing(topo, chains_packing(), K=4)
    assert verify_schedule(topo, four).time_factor == Fraction(1, 10)


def test_paths_split_in_proportion_to_their_capacity():
    topo, logical = two_switches(2)
    packing = [("g0", (("g0", "g1"),), Fraction(1)), ("g1", (("g1", "g0"),), Fraction(1))]
    schedule = round_packing(topo, packing, logical=logical)
    result = verify_schedule(topo, schedule)
    assert result.valid, result.reason
    # Two thirds of each shard over s1 (10 GB/s), one third over s2 (5 GB/s): 1/15.
    assert schedule.k == 3 and [t.chunks for t in schedule.trees] == [2, 1, 2, 1]
    assert schedule.trees[0].edges[0].path == ("g0", "s1", "g1")
    assert result.time_factor == Fraction(1, 15)  # = r*: {g0} has 15 GB/s out


def test_bad_packings_are_named():
    topo = bidirectional_ring()
    with pytest.raises(ScheduleError, match="the weights of root 'c' sum to 1/2, expected 1"):
        round_packing(topo, chains_packing()[:5])
    with pytest.raises(ScheduleError, match=r"packing\[0\]: root 'x' is not a compute node"):
        round_packing(topo, [("x", (), Fraction(1))])
    bad_arc = [("a", (("a", "z"),), Fraction(1))]
    with pytest.raises(ScheduleError, match="arc 'a' -> 'z' is not a link of the topology"):
        round_packing(topo, bad_arc)
    with pytest.raises(ArgumentError, match="K .chunks per root. must be a positive integer"):
        round_packing(topo, chains_packing(), K=0)
    switched, _ = two_switches()
    with pytest.raises(ScheduleError, match="has switches: pass the logical graph"):
        round_packing(switched, [])


# --- property: random fractional packings round exactly ------------------------------


def random_tree(nodes: list[str], root: str, rng: random.Random) -> tuple:
    """A random spanning out-tree of the complete digraph on ``nodes``."""
    inside, arcs = [root], []
    for v in rng.sample([n for n in nodes if n != root], len(nodes) - 1):
        u = rng.choice(inside)
        arcs.append((u, v))
        inside.append(v)
    return tuple(arcs)


def random_packing(nodes: list[str], seed: int) -> list:
    rng = random.Random(seed)
    packing = []
    for root in nodes:
        cuts = sorted(Fraction(rng.randint(1, 11), 12) for _ in range(rng.randint(0, 2)))
        points = [Fraction(0), *cuts, Fraction(1)]
        for lo, hi in zip(points, points[1:], strict=False):
            if hi > lo:
                packing.append((root, random_tree(nodes, root, rng), hi - lo))
    return packing


def fractional_time_factor(topology: Topology, packing, logical: Logical) -> Fraction:
    """max over physical links of the proportionally routed weight / bandwidth (independent)."""
    weight_on_arc: dict = {}
    for _, arcs, w in packing:
        for arc in arcs:
            weight_on_arc[arc] = weight_on_arc.get(arc, Fraction(0)) + w
    load: dict = {}
    for arc, w in weight_on_arc.items():
        for path, cap in logical.paths[arc]:
            share = w * Fraction(cap, logical.capacity[arc])
            for link in zip(path, path[1:], strict=False):
                load[link] = load.get(link, Fraction(0)) + share
    return max(value / topology.capacity[link] for link, value in load.items())


@settings(derandomize=True, max_examples=25, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10**6), st.integers(1, 6))
def test_random_packings_on_switches(n, seed, K):
    topo, logical = two_switches(n)
    packing = random_packing(list(topo.compute_nodes), seed)
    exact = round_packing(topo, packing, logical=logical)
    result = verify_schedule(topo, exact)
    assert result.valid, result.reason
    assert exact.time_factor == fractional_time_factor(topo, packing, logical)
    bounded = round_packing(topo, packing, K, logical=logical)
    check = verify_schedule(topo, bounded)
    assert check.valid, check.reason
    assert bounded.k == K
    # Every GPU receives n - 1 shards over 15 GB/s in-bandwidth: r* = (n - 1) / 15.
    assert check.time_factor >= Fraction(n - 1, 15)
    assert exact.time_factor >= Fraction(n - 1, 15)


# --- on the LP's packings ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "optimum"), [("torus:2x3", Fraction(1, 60)), ("hypercube:3", Fraction(7, 300))]
)
def test_lp_packing_rounds_exactly_to_the_optimum(spec, optimum):
    topo = load_topology(spec)
    lp = fractional_tree_packing(topo.compute_nodes, topo.capacity)
    assert lp.t == optimum == optimal_cut_ratio(topo).ratio
    exact = round_packing(topo, lp.packing)
    result = verify_schedule(topo, exact, optimum=optimum, require_optimal=True)
    assert result.valid, result.reason
    assert exact.time_factor == optimum
    for K in (1, 2, 3):
        bounded = round_packing(topo, lp.packing, K)
        check = verify_schedule(topo, bounded, optimum=optimum)
        assert check.valid, check.reason
        assert bounded.k == K and check.time_factor >= optimum


def test_lp_packing_on_a_switch_topology_via_splitting():
    topo = load_topology("dgx-a100:1")
    bound = optimal_cut_ratio(topo)
    caps, unit = topo.integer_capacities()
    scaled = bound.ratio * unit
    U, k = scaled.numerator, scaled.denominator
    logical = split_switches(
        topo, {a: U * c for a, c in caps.items()}, dict.fromkeys(topo.compute_nodes, k), 8 * k
    )
    lp = fractional_tree_packing(topo.compute_nodes, logical.capacity)
    schedule = round_packing(topo, lp.packing, logical=logical)
    result = verify_schedule(topo, schedule, optimum=bound.ratio, require_optimal=True)
    assert result.valid, result.reason
    assert schedule.time_factor == Fraction(7, 300)
    assert all(len(e.path) == 3 for t in schedule.trees for e in t.edges)  # via the NVSwitch


def _logical_graph(topo):
    caps, unit = topo.integer_capacities()
    scaled = optimal_cut_ratio(topo).ratio * unit
    U, k = scaled.numerator, scaled.denominator
    roots = dict.fromkeys(topo.compute_nodes, k)
    return split_switches(topo, {a: U * c for a, c in caps.items()}, roots, topo.num_compute * k)


@pytest.mark.parametrize(
    "spec",
    [
        "fully-connected:4",
        "hypercube:3",
        "torus:2x3",
        "dgx-a100:1",
        "leaf-spine:leaves=2,hosts=2,spines=2",
    ],
)
def test_bounded_rounding_never_beats_the_fixed_k_optimum(spec):
    topo = load_topology(spec)
    logical = _logical_graph(topo) if topo.switch_nodes else None
    capacity = topo.capacity if logical is None else logical.capacity
    lp = fractional_tree_packing(topo.compute_nodes, capacity)
    for K in (1, 2, 3):
        best = pack_arborescences(topo, k=K)
        assert verify_schedule(topo, best).time_factor == best.time_factor
        rounded = round_packing(topo, lp.packing, K, logical=logical)
        result = verify_schedule(topo, rounded)
        assert result.valid, result.reason
        assert result.time_factor >= best.time_factor  # the fixed-K optimum is a lower bound
        assert (
            rounded.stats["fixed_k_optimum"]
            == f"{best.time_factor.numerator}/{best.time_factor.denominator}"
        )
        assert (
            Fraction(rounded.stats["ratio_to_fixed_k_optimum"])
            == result.time_factor / best.time_factor
        )
    # Where the repair search is known to reach the fixed-K optimum, keep it there.
    if spec == "fully-connected:4":
        assert round_packing(topo, lp.packing, 1).time_factor == Fraction(1, 100)
