"""The tree-column form of concurrent groups against the edge form (two independent
formulations of one LP), against `bound` for one group of all compute nodes, and its
certificate and loads checked exactly."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import SMALL, concurrent_groups, random_topologies
from hypothesis import HealthCheck, given, settings

from formulations.column_generation import Column
from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.process_groups import ProcessGroups, make_groups
from optcoll.core.topology import Topology
from optcoll.exceptions import GroupError, MethodError
from optcoll.groups.concurrent import ConcurrentGroups, concurrent_optimum
from optcoll.groups.symmetry import root_automorphisms
from optcoll.groups.tree_columns import tree_bound, tree_column_optimum
from optcoll.io.process_groups import parse_groups
from optcoll.lp.column_generation import column_generation


def check_solution(solved: ConcurrentGroups, indices: list[int]) -> None:
    """Loads fit t* bw, every member receives its group's data, the duals certify."""
    groups, t = solved.groups, solved.time_factor
    caps, unit = groups.topology.integer_capacities()
    bandwidth = groups.topology.capacity
    for arc, bw in bandwidth.items():
        total = sum(load.get(arc, 0) for load in solved.loads.values())
        assert total <= t * bw
        if solved.lengths.get(arc):  # complementary slackness: only full links have duals
            assert total == t * bw
    assert sum(caps[arc] * length for arc, length in solved.lengths.items()) == 1
    assert all(length > 0 for length in solved.lengths.values())
    for g in indices:
        members = groups.groups[g]
        into = {v: sum(x for (_, w), x in solved.loads[g].items() if w == v) for v in members}
        assert all(received >= len(members) - 1 for received in into.values())
        # non-members forward without gain: in == out in every group's load
        for v in groups.topology.node_ids:
            if v not in members:
                inflow = sum(x for (_, w), x in solved.loads[g].items() if w == v)
                outflow = sum(x for (u, _), x in solved.loads[g].items() if u == v)
                assert inflow == outflow


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(drawn=concurrent_groups())
def test_tree_columns_equal_the_edge_form(drawn: ProcessGroups) -> None:
    # Each drawn instance is solved under both relay modes (members when it is reachable).
    for relay in ("members", "any"):
        try:
            groups = make_groups(drawn.topology, drawn.groups, relay)
        except GroupError:
            continue
        indices = list(range(len(groups.groups)))
        edge = concurrent_optimum(groups, indices, symmetric=False)
        columns = tree_column_optimum(groups, indices, symmetric=False)
        assert columns.time_factor == edge.time_factor
        check_solution(columns, indices)
        # Each form's duals, priced by trees of paths, prove the optimum on their own.
        assert tree_bound(groups, indices, columns.lengths) == columns.time_factor
        assert tree_bound(groups, indices, edge.lengths) == edge.time_factor


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topo=random_topologies(max_compute=5))
def test_one_group_of_all_compute_nodes_matches_the_edge_form(topo: Topology) -> None:
    groups = make_groups(topo, [list(topo.compute_nodes)])
    columns = tree_column_optimum(groups, [0])
    assert columns.time_factor == concurrent_optimum(groups, [0]).time_factor
    if all(topo.in_bandwidth(v) >= topo.out_bandwidth(v) for v in topo.switch_nodes):
        assert columns.time_factor == optimal_cut_ratio(topo).ratio
    check_solution(columns, [0])


@pytest.mark.parametrize("spec", SMALL)
def test_one_group_of_all_compute_nodes_is_the_bound(spec: str) -> None:
    topo = load_topology(spec)
    groups = make_groups(topo, [list(topo.compute_nodes)])
    assert tree_column_optimum(groups, [0]).time_factor == optimal_cut_ratio(topo).ratio


@pytest.mark.parametrize(
    ("spec", "text", "optimum"),
    [("ring:4,bw=1", "blocks:2", Fraction(1)), ("dgx-a100:2", "strided:2", Fraction(8, 200))],
)
def test_symmetric_tree_columns(spec: str, text: str, optimum: Fraction) -> None:
    groups = parse_groups(load_topology(spec), text, relay="any")
    indices = list(range(len(groups.groups)))
    reduced = tree_column_optimum(groups, indices)
    assert reduced.symmetric and reduced.time_factor == optimum
    check_solution(reduced, indices)
    # The reduced LP's duals prove the reduced LP (equal to the full one by symmetry), not
    # necessarily the full LP's tree bound: on the ring a pair's long way round is free.
    full = tree_column_optimum(groups, indices, symmetric=False)
    assert full.time_factor == optimum and not full.symmetric
    assert tree_bound(groups, indices, full.lengths) == optimum


def test_column_generation_refuses_bad_oracles() -> None:
    arcs = {("a", "b"): 1}
    with pytest.raises(MethodError, match="one column per block"):
        column_generation(2, arcs, lambda prices: [Column(0, ((("a", "b"), 1),))])
    with pytest.raises(MethodError, match="unknown block or arc"):
        column_generation(1, arcs, lambda prices: [Column(0, ((("b", "a"), 1),))])
    with pytest.raises(MethodError, match="capacity"):
        column_generation(1, {("a", "b"): 0}, lambda prices: [Column(0, ())])


def test_tree_bound_refuses_lengths_that_prove_nothing() -> None:
    groups = make_groups(load_topology("ring:4,bw=1"), [["n0", "n2"]], "any")
    with pytest.raises(MethodError, match="zero on every link"):
        tree_bound(groups, [0], {})
    with pytest.raises(MethodError, match="nonnegative"):
        tree_bound(groups, [0], {("n0", "n1"): Fraction(-1)})
    # any lengths give a lower bound: unit lengths on a 4-ring, one pair n0, n2: each root
    # needs 2 links, 8 links in all, so 4 / 8 = 1/2 <= the optimum 1/2
    assert tree_bound(
        groups, [0], dict.fromkeys(groups.topology.capacity, Fraction(1))
    ) == Fraction(1, 2)
    assert tree_column_optimum(groups, [0]).time_factor == Fraction(1, 2)


def test_cli_group_form(capsys: pytest.CaptureFixture[str]) -> None:
    from optcoll.cli import main

    printed = {}
    for form in ("columns", "edge"):
        args = ["bound", "dgx-a100:2", "--groups", "strided:2", "--relay", "any", "--json"]
        assert main([*args, "--group-form", form]) == 0
        printed[form] = json.loads(capsys.readouterr().out)
    assert printed["columns"]["time_factor"] == printed["edge"]["time_factor"] == "1/25"
    assert [printed[f]["form"] for f in ("columns", "edge")] == ["columns", "edge"]
    for data in printed.values():  # each form's binding links are full at t*
        for link in data["certificate"]["binding_links"]:
            assert sum(Fraction(share) for share in link["shares"]) == 1
    assert main(["bound", "dgx-a100:2", "--groups", "blocks:8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["form"] is None  # classes of one: no LP
    assert main(["bound", "dgx-a100:2", "--group-form", "edge"]) == 2
    assert "--group-form applies to process groups" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "text"), [("dgx-h100:4", "strided:4"), ("ring:6,bw=1", "blocks:6")]
)
def test_root_symmetry_solves_one_root(spec: str, text: str) -> None:
    """Root maps keep every group and every link's bandwidth (checked here on their
    own), and the LP with one root per solved group has the full LP's optimum."""
    groups = parse_groups(load_topology(spec), text, relay="any")
    maps = root_automorphisms(groups, 0)
    assert maps is not None and sorted(maps) == sorted(groups.groups[0])
    capacity = groups.topology.capacity
    for root, image in maps.items():
        assert image[groups.groups[0][0]] == root
        assert all(capacity.get((image[u], image[v])) == c for (u, v), c in capacity.items())
        assert all({image[v] for v in group} == set(group) for group in groups.groups)
    indices = list(range(len(groups.groups)))
    reduced = tree_column_optimum(groups, indices)
    full = tree_column_optimum(groups, indices, symmetric=False)
    assert reduced.symmetric and reduced.time_factor == full.time_factor
    check_solution(reduced, indices)
