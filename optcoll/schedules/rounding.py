"""Rounding a fractional tree packing (from the LP) into an integral schedule.

The tree-packing LP (:mod:`formulations.tree_packing`) returns, for every
compute root ``r``, spanning out-trees ``T`` with rational weights ``w(r, T)``
summing to 1: root ``r``'s shard is split in the proportions ``w`` and tree
``T`` carries its share. A link's load is ``sum of w(r, T) * uses(link, T)``
and the LP's value ``t`` is the largest ``load / capacity``.

:func:`round_packing` turns this into an ordinary :class:`~optcoll.core.schedule.Schedule`
with physical paths:

1. **Physical trees.** On a switch topology the LP runs on the switch-free
   logical graph of :func:`optcoll.graph.splitting.split_switches`, where a logical arc
   ``(u, v)`` of capacity ``c`` is realised by physical paths ``p`` with
   capacities ``c_p`` summing to ``c``. The total weight ``W`` on the arc is
   shared among its paths in proportion ``c_p / c`` by laying the trees' weights
   and the paths' quotas ``W * c_p / c`` on the same interval ``[0, W)``; a tree
   is cut where a path boundary falls inside it. The flow on a path is then at
   most ``t * c_p``, so the physical loads stay within ``t`` times the link
   capacities the splitting accounted for. The number of physical trees is at
   most the number of LP trees plus the number of extra paths. On a
   direct-connect topology every arc is its own one-link path.
2. **Exact mode** (``K=None``): ``k`` is the common denominator of all weights
   and tree ``T`` gets ``w * k`` chunks, so the schedule's time factor is exactly
   the LP's ``t`` (in the topology's bandwidth units).
3. **Bounded mode** (``K`` given): each root's weights times ``K`` are rounded to
   integers summing to ``K`` by largest remainder (ties to the earlier tree),
   then a local search repairs overloaded links: it moves one chunk from a tree
   that uses a bottleneck link to another tree of the same root (from the LP's
   support) whenever that makes the link ratios ``load / capacity``, sorted
   largest first, lexicographically smaller (the maximum drops, or it stays and
   fewer links attain it, and so on down the list). When no tree of the support
   helps, it re-solves locally: a new tree of that root, built breadth first
   (switches relay only) over the links that stay below the current maximum
   after the move, joins the pool. It stops when neither move exists. This is a
   heuristic: it can stay above the best K-chunk schedule
   (:func:`optcoll.schedules.packing.pack_arborescences` with ``k=K``) and can never beat it.

Complexity: step 1 is linear in the packing size; a round of the local search
costs ``O(moves * L log L)`` for ``L`` links (moves: pairs of trees of one root of
which the first uses a bottleneck link) plus one breadth-first search per
source tree when the pool has no improving move; every round strictly improves
the objective.

Examples
--------
>>> from fractions import Fraction
>>> from optcoll.core.topology import TopologyBuilder
>>> b = TopologyBuilder("biring3")
>>> for g in "abc": b.compute(g)
>>> for u, v in ("ab", "bc", "ca"): b.link(u, v, 10, bidirectional=True)
>>> ring = b.build()
>>> half = Fraction(1, 2)
>>> packing = [(r, ((r, x), (x, y)), half) for r, x, y in
...            ("abc", "acb", "bca", "bac", "cab", "cba")]
>>> exact = round_packing(ring, packing)
>>> exact.k, len(exact.trees), exact.time_factor
(2, 6, Fraction(1, 10))
>>> one = round_packing(ring, packing, K=1)  # one chain per root overloads a link;
>>> one.time_factor                             # the repair swaps in a star
Fraction(1, 10)
>>> [[e.src for e in tree.edges] for tree in one.trees]
[['a', 'c'], ['b', 'b'], ['c', 'a']]
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Protocol

from optcoll.bounds.cut_ratio import optimal_cut_ratio_core
from optcoll.core.arguments import count_argument
from optcoll.core.loads import phase_time_factor
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError
from optcoll.schedules.packing import pack_arborescences_core

__all__ = ["round_packing", "PathMap"]

Arc = tuple[str, str]
Path = tuple[str, ...]
#: A physical tree: its root and, per logical arc in packing order, the physical path.
_Shape = tuple[str, tuple[tuple[Arc, Path], ...]]


class PathMap(Protocol):
    """What rounding needs of :class:`optcoll.graph.splitting.LogicalGraph` (read-only)."""

    @property
    def capacity(self) -> Mapping[Arc, int]: ...

    @property
    def paths(self) -> Mapping[Arc, Sequence[tuple[Path, int]]]: ...


def round_packing(
    topology: Topology,
    packing: Sequence[tuple[str, Sequence[Arc], Fraction]],
    K: int | None = None,
    *,
    logical: PathMap | None = None,
) -> Schedule:
    """Integral allgather schedule from a fractional tree packing.

    Parameters
    ----------
    topology : Topology
        The physical topology.
    packing : sequence of (root, arcs, weight)
        The LP's trees (``TreePackingResult.packing``): every compute node is a
        root, each root's weights are positive Fractions summing to 1, and
        ``arcs`` are the tree's arcs on ``logical`` (or on the topology's links
        when it has no switches).
    K : int, optional
        Chunks per root. None: exact mode (``k`` = the weights' common denominator).
    logical : LogicalGraph, optional
        The switch-free graph the LP ran on; required when the topology has switches.

    Returns
    -------
    Schedule
        ``collective="allgather"``, with physical paths, ``cut_ratio`` = r*
        (:func:`optcoll.bounds.cut_ratio.optimal_cut_ratio`) and the exact achieved
        ``time_factor``. ``stats`` records the mode, the tree count and
        ``ratio_to_optimum`` (time factor / r*); in bounded mode also
        ``fixed_k_optimum`` (the time factor of the best K-chunk schedule,
        :func:`optcoll.schedules.packing.pack_arborescences` with ``k=K``) and
        ``ratio_to_fixed_k_optimum``. Ratios are :func:`~optcoll.core.rational.fraction_text`
        strings (``"p/q"``, an integer as ``"p"``).

    Raises
    ------
    ScheduleError
        A root that is not a compute node, a compute node without trees, weights
        that do not sum to 1, an arc that is neither a link nor a logical arc, or
        ``K < 1``.

    Examples
    --------
    >>> from optcoll.core.topology import TopologyBuilder
    >>> b = TopologyBuilder("pair")
    >>> b.compute("a"); b.compute("b"); b.link("a", "b", 5, bidirectional=True)
    >>> s = round_packing(b.build(), [("a", (("a", "b"),), Fraction(1)),
    ...                               ("b", (("b", "a"),), Fraction(1))])
    >>> s.k, s.time_factor, s.trees[0].edges[0].path
    (1, Fraction(1, 5), ('a', 'b'))
    """
    K = None if K is None else count_argument(K, "K (chunks per root)")
    _check_packing(topology, packing, logical)
    physical = _physical_trees(topology, packing, logical)
    shapes = [shape for shape, _ in physical]
    if K is None:
        k = math.lcm(*(w.denominator for _, w in physical))
        chunks = [int(w * k) for _, w in physical]
        mode = "exact"
    else:
        k = K
        shapes, chunks = _local_search(topology, shapes, _largest_remainder(topology, physical, K))
        mode = f"largest remainder + local search, K = {K}"
    order = {c: i for i, c in enumerate(topology.compute_nodes)}
    trees = tuple(
        sorted(
            (
                Tree(root, c, tuple(TreeEdge(a[0], a[1], path) for a, path in edges))
                for (root, edges), c in zip(shapes, chunks, strict=True)
                if c > 0
            ),
            key=lambda tree: order[tree.root],
        )
    )
    time_factor = phase_time_factor(topology, trees, k)
    cut_ratio = optimal_cut_ratio_core(topology).ratio
    stats: dict[str, object] = {
        "rounding": mode,
        "trees": len(trees),
        "ratio_to_optimum": fraction_text(time_factor / cut_ratio),
    }
    if K is not None:
        fixed = pack_arborescences_core(topology, k=K).time_factor
        assert fixed is not None, "a packing always has its time factor"
        stats["fixed_k_optimum"] = fraction_text(fixed)
        stats["ratio_to_fixed_k_optimum"] = fraction_text(time_factor / fixed)
    return Schedule(
        "allgather",
        topology.name,
        topology.compute_nodes,
        k,
        trees,
        cut_ratio=cut_ratio,
        time_factor=time_factor,
        topology_hash=topology.content_hash,
        stats=stats,
    )


# --- input and physical expansion ----------------------------------------------------


def _check_packing(
    topology: Topology,
    packing: Sequence[tuple[str, Sequence[Arc], Fraction]],
    logical: PathMap | None,
) -> None:
    if logical is None and topology.switch_nodes:
        raise ScheduleError(
            f"topology {topology.name!r} has switches: pass the logical graph the LP ran on "
            f"(logical=split_switches(...))"
        )
    arcs = topology.capacity if logical is None else logical.paths
    sums: dict[str, Fraction] = {}
    for index, (root, tree_arcs, weight) in enumerate(packing):
        if root not in topology.node or not topology.is_compute(root):
            raise ScheduleError(f"packing[{index}]: root {root!r} is not a compute node")
        if not isinstance(weight, Fraction | int) or weight <= 0:
            raise ScheduleError(
                f"packing[{index}] (root {root!r}): weight must be a positive Fraction, "
                f"got {weight!r}"
            )
        for arc in tree_arcs:
            if tuple(arc) not in arcs:
                where = "link of the topology" if logical is None else "arc of the logical graph"
                raise ScheduleError(
                    f"packing[{index}] (root {root!r}): arc {arc[0]!r} -> {arc[1]!r} is not a "
                    f"{where}"
                )
        sums[root] = sums.get(root, Fraction(0)) + Fraction(weight)
    for root in topology.compute_nodes:
        total = sums.get(root, Fraction(0))
        if total != 1:
            raise ScheduleError(f"packing: the weights of root {root!r} sum to {total}, expected 1")


def _physical_trees(
    topology: Topology,
    packing: Sequence[tuple[str, Sequence[Arc], Fraction]],
    logical: PathMap | None,
) -> list[tuple[_Shape, Fraction]]:
    """Split the LP trees where their arcs' weight moves from one physical path to the next.

    Returns (shape, weight) pairs, identical shapes merged, in first-appearance order.
    """
    # Lay every arc's trees on [0, W) in packing order and its paths' quotas likewise.
    offset: dict[tuple[int, Arc], Fraction] = {}
    total: dict[Arc, Fraction] = {}
    for index, (_, arcs, weight) in enumerate(packing):
        for tail, head in arcs:
            arc = (tail, head)
            offset[index, arc] = total.get(arc, Fraction(0))
            total[arc] = offset[index, arc] + Fraction(weight)
    # For each arc: path boundaries (cumulative quota ends) and the paths.
    layout: dict[Arc, tuple[list[Fraction], list[Path]]] = {}
    for arc, weight in total.items():
        if logical is None:
            layout[arc] = ([weight], [arc])
            continue
        pool = logical.paths[arc]
        capacity = sum(c for _, c in pool)
        ends, paths, running = [], [], Fraction(0)
        for path, c in pool:
            running += weight * Fraction(c, capacity)
            ends.append(running)
            paths.append(tuple(path))
        layout[arc] = (ends, paths)

    merged: dict[_Shape, Fraction] = {}
    for index, (root, arcs, weight) in enumerate(packing):
        arcs = [(tail, head) for tail, head in arcs]
        weight = Fraction(weight)
        # Cut points of this tree's interval [0, weight), in tree-local coordinates.
        cuts = {Fraction(0), weight}
        for arc in arcs:
            start = offset[index, arc]
            for end in layout[arc][0]:
                if start < end < start + weight:
                    cuts.add(end - start)
        points = sorted(cuts)
        for lo, hi in zip(points, points[1:], strict=False):
            edges = []
            for arc in arcs:
                ends, paths = layout[arc]
                position = offset[index, arc] + lo  # the piece lies in one path's quota
                which = next(i for i, end in enumerate(ends) if position < end)
                edges.append((arc, paths[which]))
            shape = (root, tuple(edges))
            merged[shape] = merged.get(shape, Fraction(0)) + (hi - lo)
    order = {c: i for i, c in enumerate(topology.compute_nodes)}
    return sorted(merged.items(), key=lambda item: order[item[0][0]])


# --- bounded K -----------------------------------------------------------------------


def _largest_remainder(
    topology: Topology, physical: Sequence[tuple[_Shape, Fraction]], K: int
) -> list[int]:
    chunks = [int(w * K) for _, w in physical]  # floor: weights are positive
    for root in topology.compute_nodes:
        members = [i for i, ((r, _), _) in enumerate(physical) if r == root]
        missing = K - sum(chunks[i] for i in members)
        by_remainder = sorted(members, key=lambda i: (-(physical[i][1] * K - chunks[i]), i))
        for i in by_remainder[:missing]:
            chunks[i] += 1
    return chunks


def _uses(shape: _Shape) -> dict[Arc, int]:
    uses: dict[Arc, int] = {}
    for _, path in shape[1]:
        for u, v in zip(path, path[1:], strict=False):
            uses[u, v] = uses.get((u, v), 0) + 1
    return uses


def _objective(topology: Topology, loads: Mapping[Arc, int]) -> list[Fraction]:
    """The link ratios load / bandwidth, largest first; smaller (leximax) is better."""
    return sorted(
        (Fraction(load) / topology.capacity[arc] for arc, load in loads.items() if load),
        reverse=True,
    ) or [Fraction(0)]


def _local_search(
    topology: Topology, shapes: Sequence[_Shape], chunks: Sequence[int]
) -> tuple[list[_Shape], list[int]]:
    """Move single chunks off bottleneck links while the leximax objective improves.

    First among the given trees of the same root; when no such move helps, to a
    new tree of that root built by breadth-first search over the links that
    would stay below the current maximum (the tree pool grows).
    """
    shapes, chunks = list(shapes), list(chunks)
    uses = [_uses(shape) for shape in shapes]
    loads: dict[Arc, int] = {}
    for u, c in zip(uses, chunks, strict=True):
        for arc, n in u.items():
            loads[arc] = loads.get(arc, 0) + c * n
    current = _objective(topology, loads)
    while True:
        worst = current[0]
        capacity = topology.capacity
        bottlenecks = {
            arc for arc, load in loads.items() if load and Fraction(load) / capacity[arc] == worst
        }
        move = None
        sources = [a for a, u in enumerate(uses) if chunks[a] and bottlenecks.intersection(u)]
        for a in sources:
            for b, shape in enumerate(shapes):
                if b != a and shape[0] == shapes[a][0]:
                    candidate = _try_move(topology, loads, uses[a], uses[b], current)
                    if candidate is not None:
                        move = (a, b, candidate)
                        break
            if move is not None:
                break
        else:
            for a in sources:
                fresh = _bottleneck_free_tree(topology, loads, uses[a], shapes[a][0], worst)
                if fresh is None or fresh in shapes:
                    continue
                candidate = _try_move(topology, loads, uses[a], _uses(fresh), current)
                if candidate is not None:
                    shapes.append(fresh)
                    uses.append(_uses(fresh))
                    chunks.append(0)
                    move = (a, len(shapes) - 1, candidate)
                    break
        if move is None:
            return shapes, chunks
        a, b, current = move
        _shift(loads, uses[a], uses[b], 1)
        chunks[a] -= 1
        chunks[b] += 1


def _try_move(
    topology: Topology,
    loads: dict[Arc, int],
    source: Mapping[Arc, int],
    target: Mapping[Arc, int],
    current: list[Fraction],
) -> list[Fraction] | None:
    """The objective after moving one chunk from ``source`` to ``target``, if better."""
    _shift(loads, source, target, 1)
    candidate = _objective(topology, loads)
    _shift(loads, source, target, -1)
    return candidate if candidate < current else None


def _bottleneck_free_tree(
    topology: Topology,
    loads: Mapping[Arc, int],
    removed: Mapping[Arc, int],
    root: str,
    worst: Fraction,
) -> _Shape | None:
    """A spanning tree of ``root`` (breadth first, switches relay only) over the links
    that stay below ``worst`` after taking one chunk off the tree using ``removed``
    and adding one; None when such links do not reach every compute node."""
    capacity = topology.capacity
    allowed: dict[str, list[str]] = {}
    for (u, v), bandwidth in capacity.items():
        if Fraction(loads.get((u, v), 0) - removed.get((u, v), 0) + 1) / bandwidth < worst:
            allowed.setdefault(u, []).append(v)
    compute = set(topology.compute_nodes)
    previous: dict[str, str] = {root: root}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for nxt in allowed.get(node, ()):
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    if not compute.issubset(previous):
        return None
    edges = []
    for v in topology.compute_nodes:
        if v == root:
            continue
        path = [v]
        while path[-1] == v or path[-1] not in compute:
            path.append(previous[path[-1]])
        path.reverse()
        edges.append(((path[0], v), tuple(path)))
    return root, tuple(edges)


def _shift(
    loads: dict[Arc, int], source: Mapping[Arc, int], target: Mapping[Arc, int], n: int
) -> None:
    """Move ``n`` chunks from a tree using ``source`` to one using ``target``."""
    for arc, m in source.items():
        loads[arc] -= n * m
    for arc, m in target.items():
        loads[arc] = loads.get(arc, 0) + n * m
