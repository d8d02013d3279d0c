"""Fixed-k MILP against brute-force enumeration of arborescences on tiny graphs."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations_with_replacement, product

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulations.fixed_k import FixedKResult, build_fixed_k
from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import MethodError, SolverLimitError, TopologyError
from optcoll.schedules.fixed_k import fixed_k_optimum
from optcoll.schedules.packing import fixed_k_capacity

Arc = tuple[str, str]


def arborescences(nodes: list[str], arcs: list[Arc], root: str) -> list[tuple[Arc, ...]]:
    """Every spanning arborescence rooted at ``root``: one parent arc per other node, acyclic."""
    choices = [[a for a in arcs if a[1] == v] for v in nodes if v != root]
    found = []
    for pick in product(*choices):
        parent = {v: u for u, v in pick}
        if all(_reaches_root(v, parent, root) for v in parent):
            found.append(tuple(pick))
    return found


def _reaches_root(v: str, parent: dict[str, str], root: str) -> bool:
    seen = set()
    while v != root:
        if v in seen:
            return False
        seen.add(v)
        v = parent[v]
    return True


def brute_force_fixed_k(nodes: list[str], cap: dict[Arc, Fraction], K: int) -> Fraction:
    """min over K arborescences per root (with repetition) of max_a load(a) / (K cap(a))."""
    options = [
        list(combinations_with_replacement(arborescences(nodes, list(cap), r), K)) for r in nodes
    ]
    best = None
    for choice in product(*options):
        load = dict.fromkeys(cap, 0)
        for trees in choice:
            for tree in trees:
                for arc in tree:
                    load[arc] += 1
        t = max(Fraction(load[a], K) / cap[a] for a in cap)
        best = t if best is None or t < best else best
    assert best is not None
    return best


def check_multiplicities(result: FixedKResult, nodes: list[str], cap: dict) -> None:
    """z_r has in-degree K at non-roots, 0 at r, and K arc-disjoint r-arborescences
    (Edmonds: max-flow >= K from r to every node); the loads give exactly t."""
    load = dict.fromkeys(cap, 0)
    for root in nodes:
        z = result.multiplicity[root]
        graph = nx.DiGraph()
        graph.add_nodes_from(nodes)
        for (u, v), m in z.items():
            assert m >= 1 and (u, v) in cap
            graph.add_edge(u, v, capacity=m)
            load[(u, v)] += m
        for v in nodes:
            indeg = sum(m for (_, head), m in z.items() if head == v)
            assert indeg == (0 if v == root else result.K)
            if v != root:
                assert nx.maximum_flow_value(graph, root, v) >= result.K
    assert result.t == max(Fraction(load[a], result.K) / Fraction(cap[a]) for a in cap)


def combinatorial_fixed_k(topo: Topology, K: int) -> Fraction:
    """The time factor of the trees helper's exact fixed-k search."""
    x = fixed_k_capacity(topo, K).scale
    _, unit = topo.integer_capacities()
    return x / (K * unit)


TRIANGLE = {("a", "b"): Fraction(1), ("b", "c"): Fraction(1), ("c", "a"): Fraction(1)}
TRIANGLE |= {("b", "a"): Fraction(2)}


@pytest.mark.parametrize("K", [1, 2, 3])
def test_triangle_against_brute_force(K: int) -> None:
    nodes = ["a", "b", "c"]
    result = fixed_k_optimum(nodes, TRIANGLE, K)
    assert result.t == brute_force_fixed_k(nodes, TRIANGLE, K)
    check_multiplicities(result, nodes, TRIANGLE)


def test_four_node_bidirectional_ring() -> None:
    nodes = ["a", "b", "c", "d"]
    cap = {}
    for u, v in zip(nodes, nodes[1:] + nodes[:1], strict=True):
        cap[(u, v)] = cap[(v, u)] = Fraction(1)
    # r* = 3/2 needs two trees per root; one tree per root does worse.
    topo = Topology("ring4", [Node(v) for v in nodes], [Link(u, v, c) for (u, v), c in cap.items()])
    bound = optimal_cut_ratio(topo)
    assert (bound.ratio, bound.k) == (Fraction(3, 2), 2)
    for K in (1, 2):
        result = fixed_k_optimum(nodes, cap, K)
        assert result.t == brute_force_fixed_k(nodes, cap, K)
        check_multiplicities(result, nodes, cap)
    assert fixed_k_optimum(nodes, cap, 2).t == bound.ratio == combinatorial_fixed_k(topo, 2)
    assert fixed_k_optimum(nodes, cap, 1).t == 2 == combinatorial_fixed_k(topo, 1)


@st.composite
def tiny_graphs(draw: st.DrawFn) -> tuple[list[str], dict[Arc, Fraction]]:
    n = draw(st.integers(2, 3))
    nodes = [f"g{i}" for i in range(n)]
    values = st.sampled_from([Fraction(1), Fraction(2), Fraction(3, 2)])
    cap = {(u, v): draw(values) for u, v in zip(nodes, nodes[1:] + nodes[:1], strict=True)}
    pairs = [(u, v) for u in nodes for v in nodes if u != v]
    for arc in draw(st.lists(st.sampled_from(pairs), max_size=4)):
        cap[arc] = cap.get(arc, Fraction(0)) + draw(values)
    return nodes, cap


@settings(derandomize=True, max_examples=15, deadline=None)
@given(tiny_graphs(), st.integers(1, 3))
def test_random_tiny_graphs(graph: tuple[list[str], dict[Arc, Fraction]], K: int) -> None:
    nodes, cap = graph
    result = fixed_k_optimum(nodes, cap, K)
    assert result.t == brute_force_fixed_k(nodes, cap, K)
    check_multiplicities(result, nodes, cap)
    topo = Topology("g", [Node(v) for v in nodes], [Link(u, v, c) for (u, v), c in cap.items()])
    bound = optimal_cut_ratio(topo)
    assert result.t >= bound.ratio
    if K % bound.k == 0:
        assert result.t == bound.ratio
    assert result.t == combinatorial_fixed_k(topo, K)


@pytest.mark.slow
def test_mi250_one_box_at_forestcoll_k() -> None:
    topo = load_topology("mi250:1")
    result = fixed_k_optimum(topo.compute_nodes, topo.capacity, 3)
    assert result.t == Fraction(7, 150) == optimal_cut_ratio(topo).ratio
    check_multiplicities(result, list(topo.compute_nodes), dict(topo.capacity))


def test_rejects_bad_k_and_large_models() -> None:
    with pytest.raises(MethodError, match="positive integer, got 0"):
        build_fixed_k(["a", "b"], {("a", "b"): 1, ("b", "a"): 1}, 0)
    topo = load_topology("mi250:2")
    with pytest.raises(TopologyError, match="not a compute node"):
        fixed_k_optimum(topo.compute_nodes, topo.capacity, 1)
    nodes = [f"v{i}" for i in range(40)]
    full = {(u, v): 1 for u in nodes for v in nodes if u != v}
    with pytest.raises(MethodError, match="combinatorial fixed-k"):
        build_fixed_k(nodes, full, 1)


def test_time_limit_points_to_the_combinatorial_search() -> None:
    topo = load_topology("mi250:1")
    with pytest.raises(SolverLimitError, match="fixed_k_capacity is much faster"):
        fixed_k_optimum(topo.compute_nodes, topo.capacity, 1, time_limit=0.5)
