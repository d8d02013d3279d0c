"""Column-generation tree packing: optimum == r*, and every packed tree checked by hand."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulations.tree_packing import build_tree_master
from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import SolverLimitError, TopologyError
from optcoll.schedules import tree_packing
from optcoll.schedules.tree_packing import TreePackingResult, fractional_tree_packing

Arc = tuple[str, str]


def direct_topology(nodes: list[str], capacity: dict[Arc, Fraction | int]) -> Topology:
    return Topology(
        "direct", [Node(v) for v in nodes], [Link(u, v, c) for (u, v), c in capacity.items()]
    )


def assert_spanning_arborescence(root: str, arcs: tuple[Arc, ...], nodes: list[str]) -> None:
    heads = Counter(v for _, v in arcs)
    assert root not in heads
    assert set(heads) == set(nodes) - {root} and all(n == 1 for n in heads.values())
    parent = {v: u for u, v in arcs}
    for v in nodes:  # following parents from any node reaches the root (no cycle)
        seen = set()
        while v != root:
            assert v not in seen
            seen.add(v)
            v = parent[v]


def check_packing(result: TreePackingResult, nodes: list[str], capacity: dict) -> None:
    totals: dict[str, Fraction] = Counter()
    load: dict[Arc, Fraction] = Counter()
    for root, arcs, weight in result.packing:
        assert weight > 0 and isinstance(weight, Fraction)
        assert_spanning_arborescence(root, arcs, nodes)
        totals[root] += weight
        for arc in arcs:
            assert arc in capacity
            load[arc] += weight
    assert totals == dict.fromkeys(nodes, Fraction(1))
    excess = max(max(load[a] - result.t * Fraction(c) for a, c in capacity.items()), Fraction(0))
    assert excess == result.max_overload
    for arc, c in capacity.items():
        assert float(load[arc]) <= float(result.t * Fraction(c)) + 1e-9
    assert result.columns >= len(nodes) and result.iterations >= 1
    assert 0 <= result.gap <= 1e-9 * max(float(result.t), 1) * len(nodes)


def ring(n: int, bandwidths: list[int], bidirectional: bool) -> dict[Arc, int]:
    nodes = [f"v{i}" for i in range(n)]
    cap: dict[Arc, int] = {}
    for i in range(n):
        u, v = nodes[i], nodes[(i + 1) % n]
        cap[(u, v)] = bandwidths[i % len(bandwidths)]
        if bidirectional:
            cap[(v, u)] = bandwidths[(i + 1) % len(bandwidths)]
    return cap


@pytest.mark.slow
def test_mi250_one_box() -> None:
    topo = load_topology("mi250:1")
    nodes = list(topo.compute_nodes)
    result = fractional_tree_packing(nodes, topo.capacity)
    assert result.t == Fraction(7, 150) == optimal_cut_ratio(topo, "lp").ratio
    assert abs(result.t_float - 7 / 150) < 1e-12
    check_packing(result, nodes, dict(topo.capacity))


@pytest.mark.parametrize(
    ("n", "bandwidths", "bidirectional"),
    [(4, [1], False), (5, [1], True), (5, [3, 1, 2], True), (6, [2, 5], False)],
)
def test_rings(n: int, bandwidths: list[int], bidirectional: bool) -> None:
    cap = ring(n, bandwidths, bidirectional)
    nodes = [f"v{i}" for i in range(n)]
    result = fractional_tree_packing(nodes, cap)
    assert result.t == optimal_cut_ratio(direct_topology(nodes, cap), "brute-force").ratio
    check_packing(result, nodes, cap)


def test_unidirectional_ring_value() -> None:
    # Every root's only tree is the path around the ring: each arc carries N-1 trees.
    cap = ring(4, [1], bidirectional=False)
    result = fractional_tree_packing([f"v{i}" for i in range(4)], cap)
    assert result.t == 3 and len(result.packing) == 4


@st.composite
def direct_graphs(draw: st.DrawFn) -> tuple[list[str], dict[Arc, Fraction]]:
    n = draw(st.integers(2, 5))
    nodes = [f"g{i}" for i in range(n)]
    order = draw(st.permutations(nodes))
    values = st.sampled_from([Fraction(1), Fraction(2), Fraction(5, 2), Fraction(7)])
    cap: dict[Arc, Fraction] = {}
    for u, v in zip(order, order[1:] + order[:1], strict=True):
        cap[(u, v)] = draw(values)
    pairs = [(u, v) for u in nodes for v in nodes if u != v]
    for arc in draw(st.lists(st.sampled_from(pairs), max_size=10)):
        cap[arc] = cap.get(arc, Fraction(0)) + draw(values)  # parallel links add
    return nodes, cap


@settings(derandomize=True, max_examples=30, deadline=None)
@given(direct_graphs())
def test_random_direct_connect(graph: tuple[list[str], dict[Arc, Fraction]]) -> None:
    nodes, cap = graph
    result = fractional_tree_packing(nodes, cap)
    assert result.t == optimal_cut_ratio(direct_topology(nodes, cap), "brute-force").ratio
    check_packing(result, nodes, cap)


@pytest.mark.parametrize(
    ("n", "bandwidths", "bidirectional"), [(5, [3, 1, 2], True), (6, [2, 5], False)]
)
def test_weights_from_the_simplex_basis(
    monkeypatch: pytest.MonkeyPatch, n: int, bandwidths: list[int], bidirectional: bool
) -> None:
    # Without the small-denominator shortcut the weights come from solving the
    # final basis system exactly; they must form an exact optimal packing.
    monkeypatch.setattr(tree_packing, "_WEIGHT_DENOMINATORS", ())
    cap = ring(n, bandwidths, bidirectional)
    nodes = [f"v{i}" for i in range(n)]
    result = fractional_tree_packing(nodes, cap)
    assert result.weights_source == "exact solution of the final simplex basis"
    assert result.max_overload == 0
    assert result.t == optimal_cut_ratio(direct_topology(nodes, cap), "brute-force").ratio
    check_packing(result, nodes, cap)


def test_fallback_says_why_the_basis_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_packing, "_WEIGHT_DENOMINATORS", ())
    monkeypatch.setattr(tree_packing, "simplex_basis", lambda master: None)
    cap = ring(5, [3, 1, 2], bidirectional=True)
    nodes = [f"v{i}" for i in range(5)]
    result = fractional_tree_packing(nodes, cap)
    assert result.weights_source == "rounded float weights (HiGHS kept no simplex basis)"
    assert all(w.denominator <= 2**40 for _, _, w in result.packing)
    check_packing(result, nodes, cap)  # max_overload is the exact overload of these weights


def test_master_model_shape() -> None:
    cap = ring(3, [1], bidirectional=True)
    columns = [("v0", (("v0", "v1"), ("v1", "v2"))), ("v1", (("v1", "v2"), ("v2", "v0")))]
    master = build_tree_master(["v0", "v1", "v2"], cap, columns)
    assert len(master.variables()) == 3  # t and two columns
    assert len(master.constraints()) == 3 + len(cap)
    assert all(v.varValue is None for v in master.variables())


def test_rejects_switch_endpoint() -> None:
    with pytest.raises(TopologyError, match="'sw'.*switch-free"):
        fractional_tree_packing(["a", "b"], {("a", "sw"): 1, ("sw", "b"): 1, ("b", "a"): 1})


def test_rejects_unreachable() -> None:
    with pytest.raises(TopologyError, match="'b' cannot reach compute node 'a'"):
        fractional_tree_packing(["a", "b"], {("a", "b"): 1})


def test_rejects_bad_capacity_and_too_few_nodes() -> None:
    with pytest.raises(TopologyError, match=r"\('b', 'a'\)"):
        fractional_tree_packing(["a", "b"], {("a", "b"): 1, ("b", "a"): -2})
    with pytest.raises(TopologyError, match="at least 2"):
        fractional_tree_packing(["a"], {})


def test_iteration_limit_is_reported() -> None:
    topo = load_topology("mi250:1")
    with pytest.raises(SolverLimitError, match="max_iterations"):
        fractional_tree_packing(topo.compute_nodes, topo.capacity, max_iterations=1)


def logical_graph(spec: str):  # noqa: ANN201 - optcoll.graph.splitting.LogicalGraph
    """The switch-free graph left by edge splitting at ForestColl's (U, k)."""
    from optcoll.graph.splitting import split_switches
    from optcoll.schedules.packing import chunk_capacities

    topo = load_topology(spec)
    bound = optimal_cut_ratio(topo)
    set_up = chunk_capacities(topo, bound=bound)
    k, link_capacity = set_up.chunks, set_up.capacity
    assert k == bound.k
    roots = dict.fromkeys(topo.compute_nodes, bound.k)
    return bound, split_switches(topo, link_capacity, roots, bound.k * topo.num_compute)


@pytest.mark.parametrize("spec", ["dgx-a100:1", pytest.param("dgx-a100:2", marks=pytest.mark.slow)])
def test_logical_graph_after_switch_removal(spec: str, shared_tree_packing) -> None:
    # The logical graph holds k trees per root and splitting never widens a cut, so its
    # fractional packing optimum is exactly 1/k (loads in logical-capacity units). The
    # packing is shared with test_crosscheck's rounding of the same graph.
    bound, logical = logical_graph(spec)
    nodes = list(logical.compute_nodes)
    result = shared_tree_packing(nodes, logical.capacity)
    assert result.t == Fraction(1, bound.k)
    assert result.max_overload == 0, result.weights_source  # exact weights, load <= t * c
    check_packing(result, nodes, dict(logical.capacity))


def test_deterministic() -> None:
    cap = ring(5, [3, 1, 2], bidirectional=True)
    nodes = [f"v{i}" for i in range(5)]
    first = fractional_tree_packing(nodes, cap)
    second = fractional_tree_packing(nodes, cap)
    assert first.packing == second.packing
    assert (first.iterations, first.columns) == (second.iterations, second.columns)
