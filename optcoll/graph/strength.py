"""The strength of an undirected graph: its fractional spanning-tree packing number.

For an undirected graph with edge capacities ``c`` on nodes ``V`` (``n = |V|``), the
fractional spanning-tree packing number is, by Nash-Williams and Tutte (1961),

    tau = min { c(delta(P)) / (|P| - 1) : P a partition of V into at least two parts }

where ``c(delta(P))`` is the capacity of the edges between parts (Cunningham 1985 calls
it the *strength*). :func:`graph_strength` computes ``tau`` exactly, as a
:class:`~fractions.Fraction`, with a partition attaining it, which anyone can re-check
with :func:`partition_ratio`.

Method
------
Dinkelbach's (Newton's) iteration on ``lambda``, started at the partition into single
nodes. For a fixed ``lambda`` the partition minimising ``c(delta(P)) + lambda (n - |P|)``
is found from the polymatroid ``{x >= 0 : x(E(S)) <= lambda (|S| - 1) for all S}``
(the forests scaled by ``lambda``) intersected with the box ``x <= c``: the greedy
algorithm raises each edge's ``x`` in turn to ``min(c_e, slack_e)``, the slack being
``min over S containing both ends of lambda (|S| - 1) - x(E(S))``, one minimum cut
(Picard and Queyranne's construction for dense subgraphs, on exact integers scaled by
the common denominator). Edges left below capacity lie in tight sets; intersecting
tight sets unite into tight sets, so the components of the recorded tight sets are a
partition whose crossing edges are saturated, and it attains
``max x(E) = min_P c(delta(P)) + lambda (n - |P|)`` (Edmonds' polymatroid
intersection theorem). When that maximum is ``lambda (n - 1)``, no partition beats
``lambda``, and the partition that gave ``lambda`` is optimal; otherwise the partition
found has a smaller ratio and the iteration goes on. Each round costs ``|E|`` max-flows
on ``n + 2`` nodes; the ratio strictly decreases, so it ends in at most ``n`` rounds
(usually one or two).

Examples
--------
>>> from fractions import Fraction
>>> ring = {("a", "b"): 1, ("b", "c"): 1, ("c", "d"): 1, ("d", "a"): 1}
>>> result = graph_strength(["a", "b", "c", "d"], ring)
>>> result.value
Fraction(4, 3)
>>> len(result.parts)
4
>>> pendant = {("a", "b"): 1, ("b", "c"): 9, ("c", "d"): 9, ("d", "b"): 9}
>>> result = graph_strength(["a", "b", "c", "d"], pendant)
>>> result.value, sorted(len(part) for part in result.parts)
(Fraction(1, 1), [1, 3])
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from optcoll.exceptions import SolveError
from optcoll.graph.maxflow import FlowNetwork

__all__ = ["Strength", "graph_strength", "partition_ratio", "crossing_capacity", "set_partitions"]


@dataclass(frozen=True)
class Strength:
    """The strength ``tau`` of a graph and a partition attaining it.

    Attributes
    ----------
    value : Fraction
        ``tau = c(delta(P)) / (|P| - 1)`` for ``parts``, the least over partitions
        (0 for a disconnected graph, whose parts are then its components).
    parts : tuple of frozenset of str
        The partition, parts ordered by their first node in the input order.
    """

    value: Fraction
    parts: tuple[frozenset[str], ...]


def crossing_capacity(
    edges: Mapping[tuple[str, str], Fraction | int], parts: Iterable[Iterable[str]]
) -> Fraction:
    """``c(delta(P))``: the capacity of the edges whose ends lie in different parts.

    Examples
    --------
    >>> crossing_capacity({("a", "b"): 2, ("b", "c"): 3}, [{"a", "b"}, {"c"}])
    Fraction(3, 1)
    """
    where = {node: index for index, part in enumerate(parts) for node in part}
    return sum(
        (Fraction(c) for (u, v), c in edges.items() if where[u] != where[v]), start=Fraction(0)
    )


def partition_ratio(
    edges: Mapping[tuple[str, str], Fraction | int], parts: Sequence[Iterable[str]]
) -> Fraction:
    """``c(delta(P)) / (|P| - 1)``, an upper bound on the strength for any partition P.

    Examples
    --------
    >>> partition_ratio({("a", "b"): 2, ("b", "c"): 3}, [{"a"}, {"b"}, {"c"}])
    Fraction(5, 2)
    """
    if len(parts) < 2:
        raise SolveError(
            f"a partition needs at least two parts to bound the strength, got {len(parts)}"
        )
    return crossing_capacity(edges, parts) / (len(parts) - 1)


def graph_strength(
    nodes: Sequence[str], edges: Mapping[tuple[str, str], Fraction | int]
) -> Strength:
    """The exact strength of the undirected graph ``(nodes, edges)`` and its partition.

    Parameters
    ----------
    nodes : sequence of str
        At least two distinct nodes.
    edges : mapping (u, v) -> capacity
        Undirected edges with non-negative capacities; an edge given in both
        orientations counts twice (add them first if they are one link).

    Returns
    -------
    Strength

    Raises
    ------
    SolveError
        Fewer than two nodes, an edge naming an unknown node or a self-loop, or a
        negative capacity.
    """
    index = {node: i for i, node in enumerate(nodes)}
    if len(index) != len(nodes) or len(nodes) < 2:
        raise SolveError(f"the strength needs at least two distinct nodes, got {list(nodes)}")
    pairs: list[tuple[int, int]] = []
    caps: list[Fraction] = []
    for (u, v), c in edges.items():
        if u not in index or v not in index or u == v:
            raise SolveError(f"edge ({u!r}, {v!r}) is a self-loop or names an unknown node")
        if Fraction(c) < 0:
            raise SolveError(f"edge ({u!r}, {v!r}) has negative capacity {c}")
        pairs.append((index[u], index[v]))
        caps.append(Fraction(c))
    n = len(nodes)
    labels = _components(n, [p for p, c in zip(pairs, caps, strict=True) if c > 0])
    if max(labels) > 0:
        return Strength(Fraction(0), _parts(nodes, labels))
    labels = list(range(n))
    value = _ratio(pairs, caps, labels)
    while True:
        total, found = _best_partition(n, pairs, caps, value)
        if total == value * (n - 1):
            return Strength(value, _parts(nodes, labels))
        labels = found
        smaller = _ratio(pairs, caps, labels)
        assert smaller < value, "Dinkelbach's iteration must decrease the ratio"
        value = smaller


def _components(n: int, pairs: Iterable[tuple[int, int]]) -> list[int]:
    """Component label of each node, labels numbered by first node (0 is node 0's)."""
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    label: dict[int, int] = {}
    return [label.setdefault(find(a), len(label)) for a in range(n)]


def _parts(nodes: Sequence[str], labels: list[int]) -> tuple[frozenset[str], ...]:
    groups: dict[int, set[str]] = {}
    for node, label in zip(nodes, labels, strict=True):
        groups.setdefault(label, set()).add(node)
    return tuple(frozenset(group) for group in groups.values())


def _ratio(pairs: list[tuple[int, int]], caps: list[Fraction], labels: list[int]) -> Fraction:
    crossing = sum(
        (c for (a, b), c in zip(pairs, caps, strict=True) if labels[a] != labels[b]),
        start=Fraction(0),
    )
    return crossing / (len(set(labels)) - 1)


def _best_partition(
    n: int, pairs: list[tuple[int, int]], caps: list[Fraction], lam: Fraction
) -> tuple[Fraction, list[int]]:
    """``max x(E)`` over ``lam`` times the forest polytope within ``x <= caps``, and the
    partition (as labels) minimising ``c(delta(P)) + lam (n - |P|)``, which equals it."""
    x = [Fraction(0)] * len(pairs)
    degree = [Fraction(0)] * n
    tight: list[list[int]] = []
    for e, ((u, v), c) in enumerate(zip(pairs, caps, strict=True)):
        slack, side = _slack(n, pairs, x, degree, lam, u, v)
        x[e] = min(c, slack)
        degree[u] += x[e]
        degree[v] += x[e]
        if slack <= c:
            tight.append(side)
    links = [(members[0], other) for members in tight for other in members[1:]]
    labels = _components(n, links)
    total = sum(x, start=Fraction(0))
    assert total == _crossing(pairs, caps, labels) + lam * (n - len(set(labels)))
    return total, labels


def _crossing(pairs: list[tuple[int, int]], caps: list[Fraction], labels: list[int]) -> Fraction:
    return sum(
        (c for (a, b), c in zip(pairs, caps, strict=True) if labels[a] != labels[b]),
        start=Fraction(0),
    )


def _slack(
    n: int,
    pairs: list[tuple[int, int]],
    x: list[Fraction],
    degree: list[Fraction],
    lam: Fraction,
    u: int,
    v: int,
) -> tuple[Fraction, list[int]]:
    """``min over S containing u and v of lam (|S| - 1) - x(E(S))`` and a minimising S.

    ``lam |S| - x(E(S)) = (x(delta(S)) + sum over i in S of (2 lam - degree_i)) / 2``:
    a minimum s-t cut with S the source side, u and v tied to the source."""
    weight = [2 * lam - d for d in degree]
    scale = math.lcm(*(w.denominator for w in weight), *(value.denominator for value in x))
    source, sink = n, n + 1
    tails: list[int] = []
    heads: list[int] = []
    capacities: list[int] = []
    for (a, b), value in zip(pairs, x, strict=True):
        if value:
            scaled = int(value * scale)
            tails += [a, b]
            heads += [b, a]
            capacities += [scaled, scaled]
    constant = Fraction(0)
    for i, w in enumerate(weight):
        if w > 0:
            tails.append(i)
            heads.append(sink)
            capacities.append(int(w * scale))
        elif w < 0:
            constant += w
            tails.append(source)
            heads.append(i)
            capacities.append(int(-w * scale))
    infinite = sum(capacities) + 1
    tails += [source, source]
    heads += [u, v]
    capacities += [infinite, infinite]
    flow = FlowNetwork(n + 2, tails, heads, capacities).max_flow(source, sink)
    side = [int(i) for i in flow.source_side.nonzero()[0] if i < n]
    least = (Fraction(flow.value, scale) + constant) / 2 - lam
    assert least >= 0 and u in side and v in side
    return least, side


def set_partitions(items: list[str]) -> Iterator[list[list[str]]]:
    """Every partition of ``items`` (Bell-number many: for brute force on small sets).

    Examples
    --------
    >>> [len(list(set_partitions(list("abcd"[:n])))) for n in range(1, 5)]
    [1, 2, 5, 15]
    """
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for smaller in set_partitions(rest):
        yield [[first], *smaller]
        for i in range(len(smaller)):
            yield [*smaller[:i], [first, *smaller[i]], *smaller[i + 1 :]]
