"""Tree shape at a fixed time factor: shallow trees that talk to few peers.

A packing (:func:`optcoll.schedules.packing.pack_rooted`) is a list of arborescences with
multiplicities on a logical graph; every logical arc carries at most its
capacity. Any other packing with the same roots and multiplicities that keeps
every arc within its capacity maps to physical paths with link loads within the
same bounds (:func:`optcoll.graph.splitting.realise_paths`), so its time factor is the
same bound: ``r*`` for the optimal ``k``, the best fixed-``k`` factor otherwise
(no schedule with ``k`` chunks per root does better). Among those packings,
:func:`shorten_trees` looks for low tree height and few distinct peers per node:

* **Breadth-first regrowth.** One tree at a time (tallest first) gives its arcs
  back and is grown again breadth-first over the arcs with at least its
  multiplicity left. Breadth-first search reaches every node at its least
  possible depth over those arcs, and the tree's own old arcs are among them, so
  no node gets deeper and the tree's height never grows. Among the parents at
  the least depth, a node keeps a peer it already talks to (in any tree),
  then its old parent, then the arc with the most capacity left.
* **Parent exchanges.** Two trees that give one node different parents may
  swap those parents when neither parent lies below the node in the other tree.
  With equal multiplicities every arc then carries exactly what it carried
  before; otherwise the arc that gains the difference must have it spare. A swap
  is made when it lowers the taller tree of the pair (or keeps it and lowers the
  other), so the sorted list of heights only decreases.

Both moves keep every arc within capacity, and both are repeated until nothing
changes or the round limit is reached.

**Nothing to lower.** When every tree's height is already its root's breadth-first
eccentricity over the logical arcs (:func:`at_latency_bound`: no tree from that root
can be lower), the pass is skipped and the packing returned as it is: on a leaf-spine
fabric every tree has height 2 (or 1), and the pass would only trade peers.

**Representatives only.** Given a :class:`~optcoll.graph.symmetry.RootSymmetry`, the
packing holds the representative roots' trees of
:func:`optcoll.schedules.packing.pack_symmetric`, which share the capacity ``c(O)`` of each
arc orbit ``O``: loads are then counted per orbit, a regrowth charges every arc
as it takes it (two arcs of one orbit may meet in one tree) and keeps the new tree
only if it spans and is lower, so the images under the group stay a valid packing
(proof in :mod:`optcoll.graph.symmetry`).

Examples
--------
>>> from optcoll.graph.splitting import LogicalGraph
>>> arcs = {(a, b): 1 for a in "abcd" for b in "abcd" if a != b}
>>> g = LogicalGraph(tuple("abcd"), arcs, {})
>>> chains = [(r, 1, tuple(zip(o, o[1:]))) for r, o in
...           (("a", "abcd"), ("b", "bcda"), ("c", "cdab"), ("d", "dabc"))]
>>> tree_heights(chains), tree_heights(shorten_trees(g, chains))
([3, 3, 3, 3], [1, 1, 1, 1])
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from functools import partial

from optcoll.core.topology import Topology
from optcoll.graph.splitting import LogicalGraph
from optcoll.graph.symmetry import RootSymmetry

__all__ = [
    "shorten_trees",
    "tree_heights",
    "peer_counts",
    "latency_lower_bound",
    "at_latency_bound",
    "DEFAULT_ROUNDS",
]

Arc = tuple[str, str]
Packing = list[tuple[str, int, tuple[Arc, ...]]]

#: Passes of regrowth and exchanges at most (each pass visits every tree once).
DEFAULT_ROUNDS = 4


def tree_heights(packing: Iterable[tuple[str, int, Sequence[Arc]]]) -> list[int]:
    """The height of every tree of a packing (arcs listed parents before children).

    Examples
    --------
    >>> tree_heights([("a", 1, (("a", "b"), ("b", "c"))), ("b", 2, (("b", "a"), ("b", "c")))])
    [2, 1]
    """
    heights = []
    for root, _, arcs in packing:
        depth = {root: 0}
        for u, v in arcs:
            depth[v] = depth[u] + 1
        heights.append(max(depth.values()))
    return heights


def at_latency_bound(logical: LogicalGraph, packing: Packing) -> bool:
    """True when every tree is as low as its root allows: its height is the root's
    breadth-first eccentricity over the logical arcs (capacities ignored).

    Cheap where it matters: a tree of height 1 is lowest; one of height 2 is lowest
    unless its root has an arc to every other node (a degree count); only roots with
    a taller tree are searched breadth-first, once each. ``O(arcs)`` plus
    ``O(arcs)`` per such root.

    Examples
    --------
    >>> from optcoll.graph.splitting import LogicalGraph
    >>> ring = LogicalGraph(tuple("abc"), {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1}, {})
    >>> at_latency_bound(ring, [("a", 1, (("a", "b"), ("b", "c")))])
    True
    >>> full = LogicalGraph(tuple("abc"), {(u, v): 1 for u in "abc" for v in "abc" if u != v}, {})
    >>> at_latency_bound(full, [("a", 1, (("a", "b"), ("b", "c")))])
    False
    """
    others = len(logical.compute_nodes) - 1
    degree: dict[str, int] = defaultdict(int)
    succ: dict[str, list[str]] = defaultdict(list)
    for u, v in logical.capacity:
        degree[u] += 1
        succ[u].append(v)
    eccentricity: dict[str, int] = {}
    for root, _, arcs in packing:
        children: dict[str, list[str]] = defaultdict(list)
        for u, v in arcs:
            children[u].append(v)
        height, level = 0, children[root]
        while level:
            height += 1
            level = [c for u in level for c in children[u]]
        if height <= 1 or (height == 2 and degree[root] < others):
            continue
        if root not in eccentricity:
            seen, frontier, depth = {root}, [root], 0
            while True:
                reached = []
                for u in frontier:
                    for v in succ[u]:
                        if v not in seen:
                            seen.add(v)
                            reached.append(v)
                if not reached:
                    break
                frontier, depth = reached, depth + 1
            eccentricity[root] = depth
        if height > eccentricity[root]:
            return False
    return True


def peer_counts(packing: Iterable[tuple[str, int, Sequence[Arc]]]) -> dict[str, int]:
    """How many distinct nodes each node sends to or receives from over all trees.

    Examples
    --------
    >>> peer_counts([("a", 1, (("a", "b"), ("b", "c"))), ("c", 1, (("c", "b"), ("c", "a")))])
    {'a': 2, 'b': 2, 'c': 2}
    """
    peers: dict[str, set[str]] = defaultdict(set)
    for _, _, arcs in packing:
        for u, v in arcs:
            peers[u].add(v)
            peers[v].add(u)
    return {node: len(peers[node]) for node in sorted(peers)}


def latency_lower_bound(topology: Topology, latency: Mapping[Arc, Fraction]) -> Fraction:
    """The largest shortest-path latency from a compute node to another: no tree
    schedule's deepest root-to-node latency is smaller (Dijkstra from every compute node).

    Parameters
    ----------
    topology : Topology
    latency : Mapping
        ``(src, dst) -> latency`` of every link (e.g. microseconds).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("ring:6")
    >>> latency_lower_bound(topo, dict.fromkeys(topo.capacity, Fraction(2)))
    Fraction(6, 1)
    """
    succ: dict[str, list[str]] = defaultdict(list)
    for u, v in topology.capacity:
        succ[u].append(v)
    worst = Fraction(0)
    for root in topology.compute_nodes:
        distance = {root: Fraction(0)}
        heap: list[tuple[Fraction, str]] = [(Fraction(0), root)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > distance[u]:
                continue
            for v in succ[u]:
                if v not in distance or d + latency[(u, v)] < distance[v]:
                    distance[v] = d + latency[(u, v)]
                    heapq.heappush(heap, (distance[v], v))
        worst = max([worst] + [distance[v] for v in topology.compute_nodes])
    return worst


class _Shaper:
    """Mutable packing: parents per tree, arc loads, pair multiplicities."""

    def __init__(
        self, logical: LogicalGraph, packing: Packing, symmetry: RootSymmetry | None = None
    ) -> None:
        self.nodes = logical.compute_nodes
        self.capacity: Mapping = logical.capacity
        self.key: Callable[[Arc], Hashable] = _same  # the arc (or its orbit) that counts
        if symmetry is not None:
            self.key = symmetry.named_arc_orbit(self.nodes)
            index = {v: i for i, v in enumerate(self.nodes)}
            self.capacity = symmetry.orbit_capacity(
                {(index[u], index[v]): c for (u, v), c in logical.capacity.items()}
            )
        self.succ: dict[str, list[str]] = defaultdict(list)
        for u, v in sorted(logical.capacity):
            self.succ[u].append(v)
        self.roots = [root for root, _, _ in packing]
        self.mu = [mu for _, mu, _ in packing]
        self.parent: list[dict[str, str]] = [{v: u for u, v in arcs} for _, _, arcs in packing]
        self.cache: list[tuple[dict[str, int], tuple[int, int], dict[str, int]] | None]
        self.cache = [None] * len(packing)
        self.load: dict[Hashable, int] = defaultdict(int)
        self.pairs: dict[frozenset[str], int] = defaultdict(int)  # tree edges per node pair
        for t in range(len(packing)):
            self.take(t, +1)

    def least_shape(self, root: str) -> tuple[int, int]:
        """The least ``(height, sum of depths)`` a tree rooted at ``root`` can have:
        breadth-first distances over all arcs, capacities ignored."""
        depth = {root: 0}
        level = [root]
        while level:
            reached = []
            for u in level:
                for v in self.succ[u]:
                    if v not in depth:
                        depth[v] = depth[u] + 1
                        reached.append(v)
            level = reached
        return max(depth.values()), sum(depth.values())

    def take(self, t: int, sign: int) -> None:
        """Add (``sign = 1``) or remove (``-1``) tree ``t``'s arcs from the loads."""
        for v, u in self.parent[t].items():
            self.load[self.key((u, v))] += sign * self.mu[t]
            self.pairs[frozenset((u, v))] += sign

    def measure(self, t: int) -> tuple[dict[str, int], tuple[int, int], dict[str, int]]:
        """Tree ``t``'s depths (parents first), ``(height, sum of depths)`` and the
        height of every node's subtree; cached until the tree changes."""
        cached = self.cache[t]
        if cached is None:
            children: dict[str, list[str]] = defaultdict(list)
            for v, u in self.parent[t].items():
                children[u].append(v)
            depth = {self.roots[t]: 0}
            level = [self.roots[t]]
            while level:
                level = [c for u in level for c in sorted(children[u])]
                for c in level:
                    depth[c] = depth[self.parent[t][c]] + 1
            below = dict.fromkeys(depth, 0)
            for v in reversed(depth):
                if v != self.roots[t]:
                    u = self.parent[t][v]
                    below[u] = max(below[u], below[v] + 1)
            cached = depth, (below[self.roots[t]], sum(depth.values())), below
            self.cache[t] = cached
        return cached

    def shape(self, t: int) -> tuple[int, int]:
        return self.measure(t)[1]

    def set_parents(self, t: int, parent: dict[str, str]) -> None:
        self.parent[t] = parent
        self.cache[t] = None

    def regrow(self, t: int) -> bool:
        """Grow tree ``t`` again breadth-first; True if its shape got better."""
        before = self.shape(t)
        old, old_cache = self.parent[t], self.cache[t]
        self.take(t, -1)
        mu = self.mu[t]
        reached = {self.roots[t]}
        parent: dict[str, str] = {}
        level = [self.roots[t]]
        while level:
            frontier: dict[str, list[str]] = defaultdict(list)
            for u in level:
                for v in self.succ[u]:
                    if v not in reached and self.spare((u, v)) >= mu:
                        frontier[v].append(u)
            for v, candidates in frontier.items():
                usable = [u for u in candidates if self.spare((u, v)) >= mu]
                if usable:  # (only arcs of one orbit compete for one capacity)
                    parent[v] = max(usable, key=partial(self.preference, v=v, old=old))
                    self.load[self.key((parent[v], v))] += mu
            reached.update(parent)
            level = sorted(v for v in frontier if v in parent)
        for v, u in parent.items():
            self.load[self.key((u, v))] -= mu
        spans = len(parent) == len(self.nodes) - 1  # always without symmetry: old arcs span
        self.set_parents(t, parent)
        after = self.shape(t) if spans else before
        better = spans and after < before
        if not better and (after != before or not spans or not self.fewer_pairs(parent, old)):
            self.parent[t], self.cache[t] = old, old_cache
        self.take(t, +1)
        return better

    def spare(self, arc: Arc) -> int:
        key = self.key(arc)
        return self.capacity[key] - self.load[key]

    def preference(self, u: str, v: str, old: dict[str, str]) -> tuple[bool, bool, int]:
        """Rank parent ``u`` of ``v``: a pair already talking, the old parent, spare capacity."""
        return self.pairs[frozenset((u, v))] > 0, old.get(v) == u, self.spare((u, v))

    def fewer_pairs(self, new: dict[str, str], old: dict[str, str]) -> bool:
        """Whether ``new`` parents use fewer node pairs that no other tree uses."""
        lonely = sum(self.pairs[frozenset((u, v))] == 0 for v, u in new.items())
        return lonely < sum(self.pairs[frozenset((u, v))] == 0 for v, u in old.items())

    def above(self, t: int, x: str, y: str) -> bool:
        """Whether ``x`` is ``y`` or an ancestor of ``y`` in tree ``t``."""
        parent, root = self.parent[t], self.roots[t]
        while y != x and y != root:
            y = parent[y]
        return y == x

    def exchange(self, a: int, candidates: list[int]) -> bool:
        """Swap parents between tree ``a`` and another of ``candidates`` at one node,
        where that lowers the pair's heights; True if a swap was made."""
        depth_a, shape_a, _ = self.measure(a)
        for v in [v for v, d in depth_a.items() if d == shape_a[0]]:
            x = v
            while x != self.roots[a]:  # v and its ancestors, deepest first
                pa = self.parent[a][x]
                for b in candidates:
                    pb = self.parent[b].get(x)
                    if pb is None or pb == pa or depth_a[pb] >= depth_a[pa]:
                        continue  # x would not get higher in a
                    extra = self.mu[a] - self.mu[b]  # what (pb, x) gains and (pa, x) loses
                    if extra and self.spare((pb, x) if extra > 0 else (pa, x)) < abs(extra):
                        continue
                    depth_b, shape_b, below_b = self.measure(b)
                    if depth_b[pa] + 1 + below_b[x] > shape_a[0]:
                        continue  # b would grow taller than a is
                    if self.above(a, x, pb) or self.above(b, x, pa):
                        continue  # a cycle
                    saved = self.cache[a], self.cache[b]
                    self.parent[a][x], self.parent[b][x] = pb, pa
                    self.cache[a] = self.cache[b] = None
                    new = sorted((self.shape(a), self.shape(b)), reverse=True)
                    if new < sorted((shape_a, shape_b), reverse=True):
                        self.load[self.key((pb, x))] += extra
                        self.load[self.key((pa, x))] -= extra
                        return True
                    self.parent[a][x], self.parent[b][x] = pa, pb
                    self.cache[a], self.cache[b] = saved
                x = pa
        return False

    def packing(self) -> Packing:
        result = []
        for t in range(len(self.roots)):
            depth, _, _ = self.measure(t)
            arcs = tuple((self.parent[t][v], v) for v in depth if v != self.roots[t])
            result.append((self.roots[t], self.mu[t], arcs))
        return result


def _same(arc: Arc) -> Arc:
    return arc


def shorten_trees(
    logical: LogicalGraph,
    packing: Packing,
    *,
    rounds: int = DEFAULT_ROUNDS,
    symmetry: RootSymmetry | None = None,
) -> Packing:
    """The packing with lower trees and fewer peers, every arc still within capacity.

    Parameters
    ----------
    logical : LogicalGraph
        The graph the packing lives on (its capacities bound the arc loads).
    packing : list of (root, multiplicity, arcs)
        Arborescences as :func:`optcoll.schedules.packing.pack_rooted` returns them.
    rounds : int
        Passes of breadth-first regrowth and parent exchanges at most.
    symmetry : RootSymmetry, optional
        ``packing`` holds only the representatives' trees of
        :func:`optcoll.schedules.packing.pack_symmetric` (loads count per arc orbit); the
        result's images under the group are a valid packing.

    Returns
    -------
    list of (root, multiplicity, arcs)
        The same roots and multiplicities in the same order, arcs parents first; no
        tree is taller than before and no arc carries more than its capacity. The
        packing itself when every tree is at its latency bound (:func:`at_latency_bound`).

    Notes
    -----
    A regrowth costs ``O(sum of in-degrees)`` per level; an exchange attempt
    ``O(n)``. The exchanges are tried only on the nodes of a tallest tree's
    deepest paths, against every other tree.
    """
    if at_latency_bound(logical, packing):
        return list(packing)
    state = _Shaper(logical, packing, symmetry)
    trees = range(len(packing))
    floor = {root: state.least_shape(root) for root in set(state.roots)}

    def improvable(t: int) -> bool:
        return state.shape(t) > floor[state.roots[t]]

    for _ in range(rounds):
        changed = False
        for t in sorted(filter(improvable, trees), key=state.shape, reverse=True):
            changed |= state.regrow(t)
        tallest = sorted(trees, key=state.shape, reverse=True)
        above = [t for t in tallest if state.shape(t)[0] > floor[state.roots[t]][0]]
        for t in above[: max(1, len(tallest) // 4)]:
            others = [b for b in tallest if b != t]
            while state.exchange(t, others):
                changed = True
        if not changed:
            break
    return state.packing()
