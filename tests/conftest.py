"""Test-suite settings and random-topology strategies shared by every test module.

Test modules import the strategies with ``from conftest import random_topologies``.
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
from fractions import Fraction

import networkx as nx
import pytest
from hypothesis import assume, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

import formulations.solve as _solve
from optcoll.core.process_groups import ProcessGroups, make_groups
from optcoll.core.topology import Link, Node, Topology, TopologyBuilder
from optcoll.exceptions import GroupError

# Hypothesis keeps no example database and caches nothing in the work tree: test state
# stays out of the repository (in a temporary folder removed when the run ends).
_HYPOTHESIS_HOME = tempfile.TemporaryDirectory(prefix="optcoll-hypothesis-")
set_hypothesis_home_dir(_HYPOTHESIS_HOME.name)
# Every property test draws the same examples on every run (derandomize): CI cannot fail on
# a draw that the last run did not make.
settings.register_profile("optcoll", database=None, derandomize=True)
settings.load_profile("optcoll")

# HiGHS runs on one thread in tests: timings stay steady on a loaded machine.
_solve.DEFAULT_THREADS = 1


#: Column-generation packings computed in this session, by (nodes, capacities, options).
_PACKINGS: dict[tuple, object] = {}


@pytest.fixture
def shared_tree_packing(monkeypatch):
    """``fractional_tree_packing`` with each result kept for the session (and put in
    place of the real one for the test): the column generation on dgx-a100:2's logical
    graph (~20 s) runs once for the tests that check it, from either end."""
    import optcoll.schedules.tree_packing as module

    compute = module.fractional_tree_packing

    def packing(compute_nodes, capacity, **options):
        key = (frozenset(compute_nodes), frozenset(capacity.items()), frozenset(options.items()))
        if key not in _PACKINGS:
            _PACKINGS[key] = compute(compute_nodes, capacity, **options)
        return _PACKINGS[key]

    monkeypatch.setattr(module, "fractional_tree_packing", packing)
    return packing


#: Exact, decimal and awkward bandwidths for random topologies.
BANDWIDTHS = (1, 2, 3, 7, 25, 50, 300, 12.5, 0.1, Fraction(1, 3), 2.75)


@st.composite
def random_topologies(draw, max_compute=5, max_switches=3, bandwidths=BANDWIDTHS):
    """Small random topologies: switches or not, asymmetric and parallel links.

    A random cycle through the compute nodes (some hops relayed by a switch)
    makes them mutually reachable; extra random links are added on top.
    ``bandwidths``: the values links draw from, or a strategy that draws them.
    """
    num_compute = draw(st.integers(2, max_compute))
    num_switches = draw(st.integers(0, max_switches))
    compute = [f"c{i}" for i in range(num_compute)]
    switches = [f"s{i}" for i in range(num_switches)]
    groups = draw(
        st.lists(
            st.sampled_from([None, "box0", "box1"]),
            min_size=num_compute + num_switches,
            max_size=num_compute + num_switches,
        )
    )
    nodes = [Node(v, "compute", g) for v, g in zip(compute, groups, strict=False)]
    nodes += [Node(v, "switch", g) for v, g in zip(switches, groups[num_compute:], strict=True)]
    bandwidth = (
        bandwidths if isinstance(bandwidths, st.SearchStrategy) else st.sampled_from(bandwidths)
    )
    links = []
    order = draw(st.permutations(compute))
    for a, b in zip(order, order[1:] + order[:1], strict=True):
        via = draw(st.sampled_from([None, *switches]))
        both = draw(st.booleans())
        if via is None:
            links.append(Link(a, b, draw(bandwidth), bidirectional=both))
        else:
            links.append(Link(a, via, draw(bandwidth), bidirectional=both))
            links.append(Link(via, b, draw(bandwidth), bidirectional=both))
    everything = compute + switches
    pairs = st.tuples(st.sampled_from(everything), st.sampled_from(everything)).filter(
        lambda pair: pair[0] != pair[1]
    )
    for a, b in draw(st.lists(pairs, max_size=8)):
        links.append(Link(a, b, draw(bandwidth), bidirectional=draw(st.booleans())))
    return Topology("random", nodes, links)


@st.composite
def switched_topologies(draw, min_switches=1, max_switches=3, bandwidths=(1, 2, 3)):
    """Small connected topologies with symmetric bidirectional links at the switches
    (what switch removal needs) and a few one-way links between compute nodes."""
    n_compute = draw(st.integers(2, 5))
    n_switch = draw(st.integers(min_switches, max_switches))
    b = TopologyBuilder("random")
    compute = [f"c{i}" for i in range(n_compute)]
    switches = [f"s{i}" for i in range(n_switch)]
    for c in compute:
        b.compute(c)
    for s in switches:
        b.switch(s)
    nodes = compute + switches
    pairs = set()
    for i in range(1, len(nodes)):  # a spanning tree keeps everything connected
        j = draw(st.integers(0, i - 1))
        pairs.add((nodes[j], nodes[i]))
    extra = draw(st.lists(st.tuples(st.sampled_from(nodes), st.sampled_from(nodes)), max_size=5))
    pairs |= {(u, v) for u, v in extra if u != v and (v, u) not in pairs}
    for u, v in sorted(pairs):
        b.link(u, v, draw(st.sampled_from(bandwidths)), bidirectional=True)
    # one-way links between compute nodes do not bother the switches
    for u, v in draw(
        st.lists(st.tuples(st.sampled_from(compute), st.sampled_from(compute)), max_size=2)
    ):
        if u != v:
            b.link(u, v, draw(st.sampled_from(bandwidths)))
    return b.build()


def rooted_connectivity(capacity, root_capacity, sinks):
    """min over sinks of maxflow(s, v), by networkx (independent of optcoll.graph.maxflow)."""
    g = nx.DiGraph()
    for (u, v), c in capacity.items():
        g.add_edge(u, v, capacity=c)
    for r, c in root_capacity.items():
        g.add_edge("__source__", r, capacity=c)
    return min(nx.maximum_flow_value(g, "__source__", v) for v in sinks)


#: Small instances of the built-in families (the all-to-all and process-group suites).
FAMILIES = [
    "mi250:1",
    "dgx-a100:1",
    "dgx-h100:1",
    "dgx-v100:1",
    "dgx-2:1",
    "ring:5",
    "ring:4,direction=uni",
    "line:4",
    "torus:3x3",
    "mesh:2x3",
    "hypercube:3",
    "fully-connected:4",
    "star:5",
    "leaf-spine:leaves=2,hosts=2,spines=2,oversub=2",
    "random:n=6,switches=2,seed=2",
]

#: FAMILIES and a few more, for the process-group suites.
SMALL = [
    *FAMILIES,
    "ndv2:1",
    "hub-and-spoke:3,bw=2.5",
    "fat-tree:leaves=2,hosts=3,spines=2,oversub=3",
]

#: Bandwidths of the random topologies that concurrent groups are drawn on.
GROUP_BANDWIDTHS = (1, 2, 3, Fraction(5, 2), 25, Fraction(1, 3))


def unpruned_optimum(groups: ProcessGroups) -> Fraction:
    """The concurrent LP over every group at once on every link the relaying allows."""
    from optcoll.bounds.multicommodity import solve_multicommodity
    from optcoll.groups.concurrent import group_commodities

    topo = groups.topology
    caps, unit = topo.integer_capacities()
    commodities = [
        dataclasses.replace(k, arcs=None)
        for _, k in group_commodities(groups, range(len(groups.groups)))
    ]
    return solve_multicommodity(topo.node_ids, dict(caps), commodities).time / unit


@st.composite
def concurrent_groups(draw: st.DrawFn) -> ProcessGroups:
    """Two or three disjoint random groups on a small random topology, either relaying."""
    topo = draw(random_topologies(max_compute=6, bandwidths=GROUP_BANDWIDTHS))
    compute = list(draw(st.permutations(topo.compute_nodes)))
    assume(len(compute) >= 4)
    cuts = sorted(draw(st.sets(st.integers(2, len(compute) - 2), min_size=1, max_size=2)))
    bounds = [0, *cuts, len(compute)]
    parts = [compute[a:b] for a, b in itertools.pairwise(bounds)]
    assume(all(len(part) >= 2 for part in parts))
    relay = draw(st.sampled_from(["members", "any"]))
    try:
        return make_groups(topo, parts, relay=relay)
    except GroupError:
        assume(False)
        raise
