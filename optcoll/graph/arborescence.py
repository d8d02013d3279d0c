"""Minimum-cost spanning arborescence with a given root (Chu-Liu/Edmonds).

Used as the pricing step of the tree-packing column generation
(:mod:`formulations.tree_packing`), where it runs ``N`` times per round; this
plain implementation on integer node indices is many times faster than
:func:`networkx.minimum_spanning_arborescence` on such small graphs.

Algorithm (Chu and Liu 1965; Edmonds 1967): give every non-root node its
cheapest entering arc; if these arcs form no cycle they are optimal; otherwise
contract every cycle into one node, lower the cost of each arc entering a cycle
node ``v`` by the cost of ``v``'s chosen arc, solve the contracted graph
recursively and expand (the arc chosen into a contracted cycle replaces the
cycle arc into the same node). ``O(V E)`` time. Ties are broken by arc order,
so the result is deterministic.

Examples
--------
>>> cost = {("r", "a"): 5.0, ("r", "b"): 1.0, ("b", "a"): 1.0, ("a", "b"): 1.0}
>>> min_cost_arborescence(["r", "a", "b"], cost, "r")
(('b', 'a'), ('r', 'b'))
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import TypeVar

from optcoll.exceptions import NotStronglyConnectedError, UnknownNodeError

__all__ = ["min_cost_arborescence"]

H = TypeVar("H", bound=Hashable)

#: An arc cost: a float, or an exact Fraction (then the whole computation is exact).
Cost = float | Fraction

_Edge = tuple[int, int, Cost, int]  # (tail, head, cost, key)


def min_cost_arborescence(
    nodes: Sequence[H], cost: Mapping[tuple[H, H], Cost], root: H
) -> tuple[tuple[H, H], ...]:
    """The cheapest set of arcs forming a spanning arborescence rooted at ``root``.

    Parameters
    ----------
    nodes : sequence
        All nodes; the result spans them.
    cost : Mapping
        ``(u, v) -> cost`` of every arc (any real numbers; arcs into ``root``
        and self-loops are ignored). Costs that are all :class:`~fractions.Fraction`
        are compared exactly; others as floats.
    root : node

    Returns
    -------
    tuple of (u, v)
        ``len(nodes) - 1`` arcs, in the order of ``nodes`` of their heads.

    Raises
    ------
    UnknownNodeError
        If ``root`` or an arc's end is not in ``nodes``.
    NotStronglyConnectedError
        If some node cannot be reached from ``root``.

    Examples
    --------
    >>> min_cost_arborescence(["a", "b", "c"], {("a", "b"): 1, ("b", "c"): 1, ("a", "c"): 3}, "a")
    (('a', 'b'), ('b', 'c'))
    """
    index = {v: i for i, v in enumerate(nodes)}
    if root not in index:
        raise UnknownNodeError(f"root {root!r} is not one of the nodes")
    arcs = list(cost)
    edges: list[_Edge] = []
    for key, (u, v) in enumerate(arcs):
        for end in (u, v):
            if end not in index:
                raise UnknownNodeError(f"arc ({u!r}, {v!r}) names {end!r}, which is not a node")
        if u != v and v != root:
            c = cost[(u, v)]
            edges.append((index[u], index[v], c if isinstance(c, Fraction) else float(c), key))
    _check_reachable(nodes, edges, index[root])
    chosen = _edmonds(len(nodes), edges, index[root])
    return tuple(
        arcs[key] for key in sorted((e[3] for e in chosen), key=lambda k: index[arcs[k][1]])
    )


def _check_reachable(nodes: Sequence[H], edges: list[_Edge], root: int) -> None:
    out: list[list[int]] = [[] for _ in nodes]
    for u, v, _, _ in edges:
        out[u].append(v)
    seen = [False] * len(nodes)
    seen[root] = True
    stack = [root]
    while stack:
        for v in out[stack.pop()]:
            if not seen[v]:
                seen[v] = True
                stack.append(v)
    for i, reached in enumerate(seen):
        if not reached:
            raise NotStronglyConnectedError(
                f"node {nodes[i]!r} cannot be reached from root {nodes[root]!r}"
            )


def _edmonds(n: int, edges: list[_Edge], root: int) -> list[_Edge]:
    """Chosen edges of a minimum arborescence on nodes ``0..n-1`` (all reachable)."""
    best_cost: list[Cost] = [math.inf] * n
    best: list[_Edge | None] = [None] * n
    for edge in edges:
        _, v, w, _ = edge
        if w < best_cost[v]:
            best_cost[v], best[v] = w, edge
    comp = [-1] * n
    mark = [-1] * n
    cycles = 0
    for start in range(n):
        x = start
        while x != root and comp[x] == -1 and mark[x] != start:
            mark[x] = start
            x = best[x][0]  # type: ignore[index]
        if x != root and comp[x] == -1:  # walked into a cycle through x
            comp[x] = cycles
            y = best[x][0]  # type: ignore[index]
            while y != x:
                comp[y] = cycles
                y = best[y][0]  # type: ignore[index]
            cycles += 1
    if cycles == 0:
        return [best[v] for v in range(n) if v != root]  # type: ignore[misc]
    in_cycle = [c != -1 for c in comp]
    count = cycles
    for v in range(n):
        if comp[v] == -1:
            comp[v] = count
            count += 1
    contracted: list[_Edge] = []
    by_key: dict[int, _Edge] = {}
    for edge in edges:
        u, v, w, key = edge
        if comp[u] != comp[v]:
            contracted.append((comp[u], comp[v], w - best_cost[v], key))
            by_key[key] = edge
    chosen = [by_key[e[3]] for e in _edmonds(count, contracted, comp[root])]
    entered = {edge[1] for edge in chosen}
    cycle_arcs = [best[v] for v in range(n) if in_cycle[v] and v not in entered]
    return chosen + cycle_arcs  # type: ignore[operator]
