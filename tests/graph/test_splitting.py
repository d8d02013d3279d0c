"""Switch removal by edge splitting: checked with networkx max-flows, independently."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import rooted_connectivity, switched_topologies
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.exceptions import SolveError
from optcoll.graph.splitting import (
    LogicalGraph,
    min_rooted_connectivity,
    realise_paths,
    split_switches,
    two_level_split,
)
from optcoll.schedules.packing import chunk_capacities, pack_arborescences
from optcoll.topologies import build
from optcoll.topologies.generic import leaf_spine
from optcoll.verify.schedule import verify_schedule


def check_logical(topology: Topology, link_capacity, root_capacity, requirement, g: LogicalGraph):
    """Every property split_switches promises, checked from scratch."""
    compute = set(topology.compute_nodes)
    assert set(g.compute_nodes) == compute
    link_use: dict[tuple[str, str], int] = {}
    for arc, c in g.capacity.items():
        assert arc[0] in compute and arc[1] in compute and arc[0] != arc[1]
        assert c > 0
        assert sum(pc for _, pc in g.paths[arc]) == c
        for path, pc in g.paths[arc]:
            assert path[0] == arc[0] and path[-1] == arc[1]
            assert all(not topology.is_compute(x) for x in path[1:-1]), path
            for a, b in zip(path, path[1:], strict=False):
                assert (a, b) in topology.capacity, (a, b)
                link_use[(a, b)] = link_use.get((a, b), 0) + pc
    for link, used in link_use.items():
        assert used <= link_capacity[link], link
    assert rooted_connectivity(g.capacity, root_capacity, compute) >= requirement


def allgather_input(topology: Topology, U: int, k: int):
    caps, _ = topology.integer_capacities()
    return (
        {e: U * c for e, c in caps.items()},
        dict.fromkeys(topology.compute_nodes, k),
        k * topology.num_compute,
    )


@pytest.mark.parametrize(("spec", "U", "k"), [("dgx-a100:2", 15, 13), ("mi250:2", 15, 83)])
def test_builtin_allgather_splitting(spec, U, k):
    topology = build(spec)
    args = allgather_input(topology, U, k)
    g = split_switches(topology, *args)
    check_logical(topology, *args, g)
    # the condition is tight at r*: one unit less of U breaks it, so the test is not vacuous
    with pytest.raises(SolveError, match="rooted connectivity"):
        split_switches(topology, *allgather_input(topology, U - 1, k))


def test_broadcast_form_single_root():
    topology = build("dgx-a100:2")
    caps, _ = topology.integer_capacities()
    root = topology.compute_nodes[3]
    # the other box is reached through its 8 NICs of 1 unit each: 8 is the most a root can send
    g = split_switches(topology, caps, {root: 8}, 8)
    check_logical(topology, caps, {root: 8}, 8, g)
    with pytest.raises(SolveError, match="rooted connectivity 8 < requirement 9"):
        split_switches(topology, caps, {root: 9}, 9)


def test_switch_with_less_in_than_out_capacity_is_named():
    b = TopologyBuilder("lopsided")
    for c in ("a", "b", "c"):
        b.compute(c)
    b.switch("hub")
    b.link("a", "hub", 1)
    for c in ("a", "b", "c"):
        b.link("hub", c, 2)
    b.link("b", "a", 5)
    b.link("c", "a", 5)
    topology = b.build()
    caps, _ = topology.integer_capacities()
    with pytest.raises(SolveError, match="'hub'"):
        split_switches(topology, caps, dict.fromkeys("abc", 1), 1)


def test_bad_capacity_names_the_link():
    topology = build("dgx-a100:1")
    with pytest.raises(SolveError, match="not a link"):
        split_switches(topology, {("b0.gpu0", "b0.gpu1"): 1}, {"b0.gpu0": 1}, 1)


def test_min_rooted_connectivity_against_networkx():
    arcs = {(0, 1): 3, (1, 2): 1, (2, 0): 4, (0, 2): 2}
    roots = {0: 1, 1: 2}
    names = {(u, v): c for (u, v), c in arcs.items()}
    assert min_rooted_connectivity(3, arcs, roots, [0, 1, 2]) == rooted_connectivity(
        names, roots, [0, 1, 2]
    )


@settings(derandomize=True, max_examples=40, deadline=None)
@given(switched_topologies(), st.integers(1, 3))
def test_random_topologies_keep_rooted_connectivity(topology, k):
    caps, _ = topology.integer_capacities()
    compute = topology.compute_nodes
    # the largest requirement the physical network supports with k per root
    physical = rooted_connectivity(caps, dict.fromkeys(compute, k), compute)
    requirement = min(physical, k * len(compute))
    roots = dict.fromkeys(compute, k)
    g = split_switches(topology, caps, roots, requirement)
    check_logical(topology, caps, roots, requirement, g)


def test_realise_paths_refuses_bad_packings_by_name():
    logical = LogicalGraph(
        ("a", "b"), {("a", "b"): 2}, {("a", "b"): ((("a", "s", "b"), 1), (("a", "t", "b"), 1))}
    )
    trees = realise_paths(logical, [("a", 2, [("a", "b")])])
    assert [(t.chunks, t.edges[0].path) for t in trees] == [
        (1, ("a", "s", "b")),
        (1, ("a", "t", "b")),
    ]
    with pytest.raises(SolveError, match=r"arc a -> b 3 times, beyond its capacity 2"):
        realise_paths(logical, [("a", 2, [("a", "b")]), ("b", 1, [("a", "b")])])
    with pytest.raises(SolveError, match=r"uses b -> a, which is not an arc of the logical graph"):
        realise_paths(logical, [("b", 1, [("b", "a")])])
    with pytest.raises(SolveError, match=r"multiplicity 0 is not >= 1"):
        realise_paths(logical, [("a", 0, [("a", "b")])])


def cut_ratio_of(capacity, compute) -> Fraction:
    """r* of a network whose link bandwidths are the given integer capacities."""
    b = TopologyBuilder("capacities")
    nodes = {x for arc in capacity for x in arc}
    for x in compute:
        b.compute(x)
    for x in sorted(nodes - set(compute)):
        b.switch(x)
    for (u, v), c in sorted(capacity.items()):
        if c:
            b.link(u, v, c)
    return optimal_cut_ratio(b.build()).ratio


def optimal_input(topology):
    """The allgather's splitting input at r* (capacities U * caps, k per root)."""
    set_up = chunk_capacities(topology)
    k, capacity = set_up.chunks, set_up.capacity
    return (
        topology,
        capacity,
        dict.fromkeys(topology.compute_nodes, k),
        k * len(topology.compute_nodes),
    )


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 3),
    st.sampled_from([Fraction(1), Fraction(2), Fraction(3, 2), Fraction(1, 2), Fraction(8)]),
    st.sampled_from([100, 25, 7]),
)
def test_two_level_split_keeps_the_cut_ratio_of_random_leaf_spines(
    leaves, hosts, spines, oversub, bw
):
    if leaves * hosts < 2:
        return
    topology = leaf_spine(leaves, hosts, spines, oversub=oversub, bw=bw)
    topology, *args = optimal_input(topology)
    g = two_level_split(topology, *args)
    assert g is not None  # every leaf-spine fabric takes the closed form at r*
    check_logical(topology, *args, g)
    capacity, root_capacity, requirement = args
    k = requirement // len(topology.compute_nodes)
    # the condition holds with equality (the host links are full or a leaf's uplinks are) ...
    assert rooted_connectivity(g.capacity, root_capacity, topology.compute_nodes) == requirement
    # ... so splitting keeps the optimal cut ratio: 1/k in chunk units, on both graphs
    assert cut_ratio_of(g.capacity, topology.compute_nodes) == Fraction(1, k)
    assert cut_ratio_of(capacity, topology.compute_nodes) == Fraction(1, k)
    assert split_switches(topology, *args) == g


def test_two_level_split_needs_the_capacity_and_the_shape():
    topology, capacity, roots, requirement = optimal_input(leaf_spine(4, 3, 2))
    assert two_level_split(topology, capacity, roots, requirement) is not None
    # one chunk more per root: the host links are too small (and no splitting can help)
    k = requirement // 12
    more = dict.fromkeys(roots, k + 1)
    assert two_level_split(topology, capacity, more, 12 * (k + 1)) is None
    with pytest.raises(SolveError, match="rooted connectivity"):
        split_switches(topology, capacity, more, 12 * (k + 1))
    # a broadcast requirement is of another shape
    root = topology.compute_nodes[0]
    assert two_level_split(topology, capacity, {root: k}, k) is None
    # leaves with different numbers of hosts: switch by switch, still valid
    b = TopologyBuilder("uneven")
    for name, leaf in (("a0", "x"), ("a1", "x"), ("b0", "y")):
        b.compute(name, leaf)
    b.switch("x")
    b.switch("y")
    b.switch("top")
    for name, leaf in (("a0", "x"), ("a1", "x"), ("b0", "y")):
        b.link(name, leaf, 2, bidirectional=True)
    b.link("x", "top", 2, bidirectional=True)
    b.link("y", "top", 2, bidirectional=True)
    uneven = b.build()
    _, *args = optimal_input(uneven)
    assert two_level_split(uneven, *args) is None
    check_logical(uneven, *args, split_switches(uneven, *args))


@pytest.mark.parametrize(
    "spec",
    ["leaf-spine:leaves=4,hosts=4,spines=2", "leaf-spine:leaves=4,hosts=4,spines=1,oversub=2"],
)
def test_leaf_spine_trees_verify_at_height_two(spec):
    topology = build(spec)
    schedule = pack_arborescences(topology)
    verdict = verify_schedule(topology, schedule, optimum=schedule.cut_ratio, require_optimal=True)
    assert verdict.valid and verdict.time_factor == schedule.cut_ratio
    assert schedule.stats["max_height"] == 2
