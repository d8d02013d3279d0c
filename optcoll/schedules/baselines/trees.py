"""NCCL's double binary tree: two binary trees over the ranks (compute nodes in
declaration order; the second tree mirrored for even ``N``, shifted for odd ``N``, so the
leaves of one are inner nodes of the other), half of the data each, reduce up and
broadcast down.

Examples
--------
>>> from optcoll.topologies import build
>>> double_binary_tree_allreduce(build("dgx-a100:1")).alpha
Fraction(12, 1)
"""

from __future__ import annotations

from fractions import Fraction

from optcoll.core.cost import DEFAULT_LATENCY, Cost, link_latencies
from optcoll.core.schedule import Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.schedules.baselines.routing import Router, max_ratio

__all__ = ["double_binary_trees", "double_binary_tree_allreduce"]

Arc = tuple[str, str]


def _binary_tree(n: int) -> list[tuple[int, int]]:
    """(parent, child) edges of NCCL's binary tree over ranks ``0 .. n-1``.

    Rank ``r > 0`` with lowest set bit ``b`` hangs below ``(r ^ b) | 2b``, or below
    ``r ^ b`` when that is out of range; rank 0 is the root. Odd ranks are leaves.

    >>> _binary_tree(4)
    [(0, 2), (2, 1), (2, 3)]
    """
    edges = []
    for r in range(1, n):
        bit = r & -r
        parent = (r ^ bit) | (bit << 1)
        edges.append((parent if parent < n else r ^ bit, r))
    return sorted(edges)


def _double_binary_tree_edges(n: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """NCCL's two binary trees over ranks ``0 .. n-1``: the second mirrored (even ``n``) or
    shifted by one (odd ``n``)."""
    tree = _binary_tree(n)
    relabel = (lambda r: n - 1 - r) if n % 2 == 0 else (lambda r: (r + 1) % n)
    return tree, [(relabel(p), relabel(c)) for p, c in tree]


def double_binary_trees(topology: Topology) -> tuple[Tree, Tree]:
    """The two trees of :func:`double_binary_tree_allreduce` over the compute nodes (each
    edge on its widest path), each to carry half of the message.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [t.root for t in double_binary_trees(build("dgx-a100:1"))]
    ['b0.gpu0', 'b0.gpu7']
    """
    nodes = topology.compute_nodes
    router = Router(topology)
    trees = []
    for edges in _double_binary_tree_edges(len(nodes)):
        root = next(r for r in range(len(nodes)) if all(r != c for _, c in edges))
        by_parent = sorted(edges)
        reached, ordered = {root}, list[TreeEdge]()
        while len(ordered) < len(edges):  # parents before children
            for p, c in by_parent:
                if p in reached and c not in reached:
                    reached.add(c)
                    ordered.append(TreeEdge(nodes[p], nodes[c], router.paths[nodes[p]][nodes[c]]))
        trees.append(Tree(nodes[root], 1, tuple(ordered)))
    return trees[0], trees[1]


def double_binary_tree_allreduce(
    topology: Topology, *, default_latency: Fraction = DEFAULT_LATENCY
) -> Cost:
    """NCCL's double binary tree allreduce (reduce up, broadcast down, half the data per tree).

    Each tree edge moves ``M / 2`` toward the root and ``M / 2`` back, so the
    time factor (per ``M / N``) is ``N / 2 * max over links of uses / bandwidth``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> double_binary_tree_allreduce(build("dgx-a100:1")).time_factor
    Fraction(4, 75)
    """
    nodes = topology.compute_nodes
    n = len(nodes)
    router = Router(topology)
    latency = link_latencies(topology, default_latency)
    loads: dict[Arc, Fraction] = {}
    alpha = Fraction(0)
    for edges in _double_binary_tree_edges(n):
        children: dict[int, list[int]] = {}
        for p, c in edges:
            children.setdefault(p, []).append(c)
            for a, b in ((nodes[p], nodes[c]), (nodes[c], nodes[p])):
                for arc in router.arcs(a, b):
                    loads[arc] = loads.get(arc, Fraction(0)) + 1
        root = next(r for r in range(n) if all(r != c for _, c in edges))
        down: dict[int, Fraction] = {root: Fraction(0)}
        up: dict[int, Fraction] = {root: Fraction(0)}
        stack = [root]
        while stack:
            p = stack.pop()
            for c in children.get(p, []):
                down[c] = down[p] + router.latency(nodes[p], nodes[c], latency)
                up[c] = up[p] + router.latency(nodes[c], nodes[p], latency)
                stack.append(c)
        alpha = max(alpha, max(down.values()) + max(up.values()))
    factor = Fraction(n, 2) * max_ratio(loads, topology)
    return Cost(
        "double binary tree",
        "allreduce",
        n,
        factor,
        alpha,
        trees=double_binary_trees(topology),
        phases=(True, False),
    )
