"""Column generation over trees (optcoll.bounds.demand_trees) against the edge LP, the uniform
all-to-all and the cut bound: the same exact optimum, proved by its own length function."""

from __future__ import annotations

import random
from fractions import Fraction

import networkx as nx
import pytest

from optcoll import load_topology
from optcoll.bounds.demand import demand_optimum
from optcoll.bounds.demand_trees import exact_shortest_paths, tree_optimum
from optcoll.bounds.multicommodity import routing_time
from optcoll.core.demand import demand_matrix, uniform_demand
from optcoll.schedules.alltoall import alltoall_bound
from optcoll.schedules.alltoallv import proved_optimum


def _random_demand(topo, seed, sparsity=0.3, scale=1000):
    rng = random.Random(seed)
    n = topo.num_compute
    rows = [
        [0 if i == j or rng.random() < sparsity else rng.randrange(1, scale) for j in range(n)]
        for i in range(n)
    ]
    return demand_matrix(rows, topo.compute_nodes, f"random {seed}")


def _loads_time(topo, optimum):
    """The routing's exact time, recomputed from its flows (bytes per bandwidth unit)."""
    return routing_time(topo.capacity, list(optimum.routing.values()))


@pytest.mark.parametrize(
    "spec", ["ring:5,bw=1", "ring:4,direction=uni,bw=1", "torus:3x3", "dgx-h100:2", "mesh:3x3"]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_equals_the_edge_lp_and_proves_itself(spec, seed):
    topo = load_topology(spec)
    demand = _random_demand(topo, seed)
    trees = tree_optimum(topo, demand)
    assert trees.time_factor == demand_optimum(topo, demand).time_factor
    assert trees.certificate_bound == trees.time_factor
    assert _loads_time(topo, trees) == trees.time_factor
    assert trees.cut_bound <= trees.time_factor
    assert trees.method == "columns" and trees.stats["exact_rounds"] >= 1


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("ring:4,direction=uni,bw=1", Fraction(72)),
        ("torus:3x3", Fraction(9, 25)),
        ("dgx-a100:2", Fraction(96, 25)),
        ("hypercube:3", Fraction(12, 25)),
        ("mesh:3x3", Fraction(18, 25)),
    ],
)
def test_uniform_demand_is_exactly_the_uniform_alltoall(spec, expected):
    topo = load_topology(spec)
    found = tree_optimum(topo, uniform_demand(topo.compute_nodes, 12))
    assert found.time_factor == expected == alltoall_bound(topo).time_factor * 12


def test_flow_cut_gap_is_found_and_proved():
    topo = load_topology("ring:4,direction=uni,bw=1")
    found = tree_optimum(topo, uniform_demand(topo.compute_nodes, 1))
    assert (found.time_factor, found.cut_bound) == (Fraction(6), Fraction(4))
    assert found.certificate_bound == 6


def test_spray_not_optimal_columns_prove_the_cut():
    """Heavy traffic inside the boxes: the spray (7/8 of a GPU's cross-box bytes on its
    NVLink) is 14.9 % slow, and column generation finds the optimum, equal to the cut."""
    topo = load_topology("dgx-h100:2")
    rng = random.Random(0)
    n = topo.num_compute
    box = [topo.node[v].group for v in topo.compute_nodes]
    rows = [
        [
            0 if i == j else rng.randrange(1, 10**6) * (20 if box[i] == box[j] else 1)
            for j in range(n)
        ]
        for i in range(n)
    ]
    demand = demand_matrix(rows, topo.compute_nodes)
    found = proved_optimum(topo, demand)
    assert found.method == "columns"
    assert found.time_factor == Fraction(51455153, 250) == found.cut_bound
    assert found.certificate_bound == found.time_factor
    assert proved_optimum(topo, demand, "lp").time_factor == found.time_factor


def test_starting_flows_are_used():
    topo = load_topology("star:3,bw=1")
    demand = demand_matrix([[0, 4, 2], [0, 0, 0], [1, 0, 0]], topo.compute_nodes)
    flow = {("h0", "hub"): 6, ("hub", "h1"): 4, ("hub", "h2"): 2}
    found = tree_optimum(topo, demand, start={"h0": [flow]})
    assert found.time_factor == 6 == found.certificate_bound


def test_exact_shortest_paths_agree_with_networkx():
    rng = random.Random(3)
    n = 30
    arcs = sorted(
        {(rng.randrange(n), rng.randrange(n)) for _ in range(120)} - {(v, v) for v in range(n)}
    )
    lengths = [rng.choice([0, 0, 1, 5, 2**40]) for _ in arcs]
    dist, pred = exact_shortest_paths(n, arcs, lengths, [0, 7])
    graph = nx.DiGraph()
    graph.add_weighted_edges_from((u, v, x) for (u, v), x in zip(arcs, lengths, strict=True))
    graph.add_nodes_from(range(n))
    weight = dict(zip(arcs, lengths, strict=True))
    for row, back, source in zip(dist, pred, [0, 7], strict=True):
        truth = nx.single_source_dijkstra_path_length(graph, source)
        assert row == [truth.get(v) for v in range(n)]
        for v, d in enumerate(row):
            if d is not None and v != source:  # the tree's arc into v is on a shortest path
                assert row[back[v]] + weight[(back[v], v)] == d
