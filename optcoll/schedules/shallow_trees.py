"""Allreduce as reduce + broadcast over shallow trees whose edges are routed paths.

The spanning trees of :mod:`optcoll.schedules.spanning_tree_allreduce` reach the
bandwidth optimum, but their edges are single links: a slice reduced from a far leaf
and broadcast back crosses up to twice the tree's height in steps, each paying the
per-step overhead. In the simulator a tree edge may be a *routed* path (intermediate
nodes forward without a step, :func:`optcoll.sim.simulator.tree_tasks`), so a tree of
logical depth ``D`` costs ``2 D`` steps on its longest chain whatever its physical
height, at the price of more link load. At medium sizes, where those steps and the
load weigh alike, such trees win (mesh 4x4, allreduce of 1 MiB with a 1 µs overhead and
0.5 µs links: ``docs/bounds_every_size.md``).

Construction (:func:`shallow_trees`): a group of automorphisms of the topology acting
freely on its nodes (:func:`optcoll.graph.symmetry.automorphism_group`; none: the
identity alone) splits the nodes into orbits; the orbits are taken in order of least
eccentricity (hops to the farthest node), then of their first node, until they hold at
least :data:`ROOTS` roots, and the first node of each is a base root. One tree of depth
at most :data:`DEPTH` per base root, every edge a shortest path, minimises the busiest
link's load of the base trees and all their images (the MILP of
:mod:`formulations.shallow_trees`, solved exactly by HiGHS), with no node farther along
its tree than the topology's radius or its own distance from the root. The images of
the base trees under the group are the trees; each carries :data:`CHUNKS` of the
message's chunks, so a tree's share moves in two slices even where it fits in one.

The routed edges relay through compute nodes without a step, as the step schedules'
messages do (:mod:`optcoll.sim.steps`); the tree verifiers and the MSCCL and Chakra tree
writers accept relays by switches only, so these trees are simulated and planned, not
written as schedule files; MSCCL++ plans hold them as GPU-to-GPU puts
(:mod:`optcoll.export.mscclpp_reduce_broadcast`), which ``simulate`` routes on its own
paths. Their data flow is checked as the four steps
of messages it is (leaves to hubs, hubs to roots and back) by
:func:`optcoll.verify.steps.verify_steps` (``tests/schedules/test_shallow_trees.py``).

Examples
--------
>>> from optcoll.topologies import build
>>> trees = shallow_trees(build("mesh:4x4"))
>>> len(trees), sorted({t.root for t in trees})[:3]
(8, ['n0_1', 'n1_1', 'n1_2'])
>>> max(len(e.path) - 1 for t in trees for e in t.edges)  # an edge crosses up to 5 links
5
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from optcoll.core.arguments import as_topology
from optcoll.core.schedule import Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError
from optcoll.graph.symmetry import automorphism_group
from optcoll.schedules.spanning_tree_allreduce import two_way_links

__all__ = [
    "CHUNKS",
    "ROOTS",
    "PATHS",
    "MAX_NODES",
    "reduces_over_shallow_trees",
    "shallow_trees",
]

#: Chunks each tree carries.
CHUNKS = 2
#: Fewest trees: root orbits are taken until they hold this many roots.
ROOTS = 8
#: Most shortest paths offered for each tree edge.
PATHS = 20
#: Largest topology (nodes) the MILP is built for (about a second of HiGHS at 16).
MAX_NODES = 16


def reduces_over_shallow_trees(topology: Topology) -> bool:
    """Whether :func:`shallow_trees` applies: no switches, at most :data:`MAX_NODES`
    nodes, and the links that go both ways connect them.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [reduces_over_shallow_trees(build(t)) for t in ("mesh:4x4", "mesh:8x8", "dgx-a100:1")]
    [True, False, False]
    """
    if topology.switch_nodes or len(topology.node_ids) > MAX_NODES:
        return False
    import networkx as nx

    return bool(nx.is_connected(_graph(topology.node_ids, two_way_links(topology))))


def _graph(nodes: Sequence[str], links: Mapping[tuple[str, str], Fraction]) -> Any:
    """The undirected networkx graph of ``links`` on ``nodes``."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(links)
    return graph


def _shortest_paths(graph: Any, limit: int) -> dict[tuple[str, str], list[tuple[str, ...]]]:
    """Up to ``limit`` shortest paths between every ordered pair of nodes of ``graph``."""
    import networkx as nx

    return {
        (u, v): [tuple(p) for p in itertools.islice(nx.all_shortest_paths(graph, u, v), limit)]
        for u in graph
        for v in graph
        if u != v
    }


def _images(topology: Topology) -> list[dict[str, str]]:
    """Every element of a free group of automorphisms of ``topology`` as a node map
    (identity first); the identity alone when there is none."""
    nodes = list(topology.node_ids)
    number = {v: i for i, v in enumerate(nodes)}
    arcs = {(number[u], number[v]): c for (u, v), c in topology.capacity.items()}
    group = automorphism_group(len(nodes), arcs)
    if group is None:
        return [{v: v for v in nodes}]
    return [{v: nodes[group.image(i, number[v])] for v in nodes} for i in range(group.order)]


def shallow_trees(topology: Topology | object) -> tuple[Tree, ...]:
    """The trees of the module docstring, edges parents first.

    Raises
    ------
    ArgumentError
        A topology :func:`reduces_over_shallow_trees` refuses.
    """
    from formulations.shallow_trees import solve_shallow_trees

    topology = as_topology(topology)
    if not reduces_over_shallow_trees(topology):
        raise ArgumentError(
            f"{topology.name}: shallow trees need a topology without switches of at most "
            f"{MAX_NODES} nodes whose two-way links connect them"
        )
    nodes = list(topology.node_ids)
    import networkx as nx

    links = two_way_links(topology)
    graph = _graph(nodes, links)
    eccentricity = nx.eccentricity(graph)
    radius = min(eccentricity.values())
    images = _images(topology)
    orbits: dict[str, str] = {}  # node -> first node of its orbit
    for v in nodes:
        orbits.setdefault(v, v)
        for image in images:
            orbits.setdefault(image[v], orbits[v])
    roots: list[str] = []
    for first in sorted(set(orbits.values()), key=lambda v: (eccentricity[v], nodes.index(v))):
        if len(roots) * len(images) >= ROOTS:
            break
        roots.append(first)
    paths = _shortest_paths(graph, PATHS)
    solved = solve_shallow_trees(nodes, links, roots, images, paths, radius)
    return tuple(
        Tree(
            image[root],
            CHUNKS,
            tuple(
                TreeEdge(image[u], image[v], tuple(image[w] for w in path)) for u, v, path in edges
            ),
        )
        for root, edges in zip(roots, solved.trees, strict=True)
        for image in images
    )
