"""The exact optimum of an arbitrary demand (optcoll.bounds.demand) against independent methods:
today's uniform all-to-all optimum, the exhaustive cut bound (tight on stars and trees), and a
path-flow LP over every simple path solved by scipy (brute force on small graphs)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import networkx as nx
import pytest
from conftest import random_topologies
from hypothesis import HealthCheck, given, settings

from optcoll import load_topology
from optcoll.bounds.demand import demand_cut_bound, demand_optimum
from optcoll.core.demand import Demand, demand_matrix, uniform_demand
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ArgumentError
from optcoll.schedules.alltoall import alltoall_optimum


@pytest.mark.parametrize(
    "spec", ["ring:4,direction=uni,bw=1", "dgx-a100:2", "torus:3x3", "random:6,seed=2", "line:4"]
)
def test_uniform_demand_is_todays_alltoall_optimum(spec):
    topo = load_topology(spec)
    piece = 7
    found = demand_optimum(topo, uniform_demand(topo.compute_nodes, piece))
    expected = alltoall_optimum(topo, method="full").time_factor * piece
    assert found.time_factor == expected == found.certificate_bound
    assert found.cut_bound <= found.time_factor


def _random_demand(topo, rng, density=0.6, top=50):
    n = topo.num_compute
    rows = [
        [rng.randrange(1, top) if i != j and rng.random() < density else 0 for j in range(n)]
        for i in range(n)
    ]
    rows[0][1] = max(rows[0][1], 1)
    return demand_matrix(rows, topo.compute_nodes)


def _tree(n, rng):
    """A random tree of compute nodes and switches with random bidirectional bandwidths."""
    nodes = [Node(f"c{i}") for i in range(n)] + [Node(f"s{i}", "switch") for i in range(2)]
    ids = [v.id for v in nodes]
    rng.shuffle(ids)
    links = [
        Link(ids[i], ids[rng.randrange(i)], rng.choice([1, 2, 3, 5]), bidirectional=True)
        for i in range(1, len(ids))
    ]
    return Topology("tree", nodes, links)


@pytest.mark.parametrize("seed", range(6))
def test_on_trees_and_stars_the_optimum_is_the_best_cut(seed):
    rng = random.Random(seed)
    for topo in (_tree(5, rng), load_topology(f"star:{4 + seed % 3},bw={1 + seed}")):
        demand = _random_demand(topo, rng)
        found = demand_optimum(topo, demand)
        cut = demand_cut_bound(topo, demand)
        assert cut.exhaustive and found.time_factor == cut.ratio == found.cut_bound
        assert found.certificate_bound == found.time_factor


def _path_lp(topo: Topology, demand: Demand) -> float:
    """min t over flows on every simple path of every pair (scipy, floats)."""
    import numpy as np
    from scipy.optimize import linprog

    graph = nx.DiGraph(list(topo.capacity))
    arcs = list(topo.capacity)
    index = {a: i for i, a in enumerate(arcs)}
    columns, pair_of = [], []
    pairs = list(demand.pairs().items())
    for p, ((s, d), _) in enumerate(pairs):
        for path in nx.all_simple_paths(graph, s, d):
            columns.append([index[a] for a in zip(path, path[1:], strict=False)])
            pair_of.append(p)
    n = len(columns)
    cost = np.zeros(n + 1)
    cost[-1] = 1
    a_eq = np.zeros((len(pairs), n + 1))
    for j, p in enumerate(pair_of):
        a_eq[p, j] = 1
    b_eq = [b for _, b in pairs]
    a_ub = np.zeros((len(arcs), n + 1))
    for j, col in enumerate(columns):
        for i in col:
            a_ub[i, j] += 1
    for a, i in index.items():
        a_ub[i, -1] = -float(topo.capacity[a])
    result = linprog(
        cost, A_ub=a_ub, b_ub=np.zeros(len(arcs)), A_eq=a_eq, b_eq=b_eq, method="highs"
    )
    assert result.status == 0
    return float(result.fun)


@pytest.mark.parametrize("seed", range(8))
def test_three_node_graphs_against_every_path(seed):
    rng = random.Random(100 + seed)
    nodes = [Node("a"), Node("b"), Node("c")]
    links = [Link(u, v, rng.choice([1, 2, 3, 7])) for u, v in itertools.permutations("abc", 2)]
    topo = Topology("triangle", nodes, links)
    demand = _random_demand(topo, rng, density=0.8, top=20)
    found = demand_optimum(topo, demand)
    assert float(found.time_factor) == pytest.approx(_path_lp(topo, demand), rel=1e-9)
    assert found.certificate_bound == found.time_factor
    assert found.cut_bound <= found.time_factor


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(random_topologies(max_compute=4, max_switches=2))
def test_random_topologies_against_every_path_and_every_cut(topo):
    demand = _random_demand(topo, random.Random(len(topo.capacity)))
    found = demand_optimum(topo, demand)
    assert float(found.time_factor) == pytest.approx(_path_lp(topo, demand), rel=1e-9)
    cut = demand_cut_bound(topo, demand)
    assert cut.ratio <= found.time_factor == found.certificate_bound
    # the tight links carry time_factor * bandwidth exactly
    load: dict = {}
    for flow in found.routing.values():
        for arc, x in flow.items():
            load[arc] = load.get(arc, Fraction(0)) + x
    for arc in found.tight_links:
        assert load[arc] == found.time_factor * topo.capacity[arc]


def test_wrong_ranks_are_refused():
    topo = load_topology("ring:3")
    with pytest.raises(ArgumentError, match="rank 1 is 'x'"):
        demand_optimum(topo, Demand(("n0", "x", "n2"), ((0, 1, 0), (0, 0, 0), (0, 0, 0))))
    with pytest.raises(ArgumentError, match="2 ranks"):
        demand_optimum(topo, Demand(("n0", "n1"), ((0, 1), (0, 0))))
