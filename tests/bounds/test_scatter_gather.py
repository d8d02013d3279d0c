"""Scatter and gather: Dinkelbach over max-flows against the LP and against every cut."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from conftest import random_topologies
from hypothesis import HealthCheck, given, settings

from optcoll import load_topology
from optcoll.bounds.demand import demand_optimum
from optcoll.bounds.scatter_gather import rooted_cut
from optcoll.core.demand import Demand
from optcoll.exceptions import ArgumentError


def _rooted_demand(topo, root, collective):
    ranks = topo.compute_nodes
    r = ranks.index(root)
    rows = tuple(
        tuple(
            int(i != j and (i == r if collective == "scatter" else j == r))
            for j in range(len(ranks))
        )
        for i in range(len(ranks))
    )
    return Demand(ranks, rows)


def _every_cut(topo, root, collective):
    best = Fraction(0)
    nodes = [v for v in topo.node_ids if v != root]
    for size in range(len(nodes) + 1):
        for chosen in itertools.combinations(nodes, size):
            side = {root, *chosen}
            outside = sum(1 for v in topo.compute_nodes if v not in side)
            if not outside:
                continue
            if collective == "scatter":
                width = topo.cut_bandwidth(side)
            else:
                width = topo.cut_bandwidth(set(topo.node_ids) - side)
            best = max(best, Fraction(outside) / width)
    return best


@pytest.mark.parametrize(
    "spec", ["dgx-a100:2", "torus:3x3", "ring:5,direction=uni", "random:8,seed=3", "line:5"]
)
@pytest.mark.parametrize("collective", ["scatter", "gather"])
def test_max_flow_and_lp_agree(spec, collective):
    topo = load_topology(spec)
    root = topo.compute_nodes[1]
    cut = rooted_cut(topo, root, collective)
    assert demand_optimum(topo, _rooted_demand(topo, root, collective)).time_factor == cut.ratio
    assert cut.time_factor == cut.ratio / topo.num_compute and cut.algbw == 1 / cut.time_factor


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(random_topologies(max_compute=4, max_switches=3))
def test_every_cut_on_random_topologies(topo):
    for collective in ("scatter", "gather"):
        root = topo.compute_nodes[-1]
        cut = rooted_cut(topo, root, collective)
        assert cut.ratio == _every_cut(topo, root, collective)
        assert demand_optimum(topo, _rooted_demand(topo, root, collective)).time_factor == cut.ratio


def test_known_values_and_bad_roots():
    topo = load_topology("dgx-h100:2")
    cut = rooted_cut(topo, "b0.gpu0", "scatter")
    # the root's own links bound it: 15 pieces over 450 + 50 GB/s
    assert cut.ratio == Fraction(15, 500) and cut.side == frozenset({"b0.gpu0"})
    with pytest.raises(ArgumentError, match="is a switch"):
        rooted_cut(topo, "b0.nvswitch", "gather")
    with pytest.raises(ArgumentError):
        rooted_cut(topo, "nope", "scatter")
    with pytest.raises(ArgumentError):
        rooted_cut(topo, "b0.gpu0", "broadcast")
