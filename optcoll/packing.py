"""Integral arborescence packing: allgather schedules that achieve the optimal cut ratio.

With ``caps, unit = topology.integer_capacities()`` and the optimal cut ratio
``r* * unit = U / k`` (lowest terms), ForestColl (Zhao et al., arXiv 2402.06787)
shows that ``k`` arborescences per compute root, each carrying one of the root's
``k`` chunks, fit into the link capacities ``U * caps``. The construction here:

1. :func:`optcoll.splitting.split_switches` removes the switches (edge splitting)
   keeping ``maxflow(s, v) >= N * k`` for every compute node ``v``, where ``s``
   feeds every compute node with capacity ``k``;
2. :func:`pack_rooted` packs the arborescences in the switch-free graph
   (Edmonds' branching theorem made constructive with multiplicities, below);
3. every logical arc of a tree is mapped back to physical paths, splitting a tree
   where an arc's capacity is spread over several paths.

The load of every physical link is then at most ``U * caps``, so the time factor
``max load / (k * bandwidth)`` is at most ``U / (k * unit) = r*``, i.e. exactly ``r*``.

**Packing with multiplicities.** A *bundle* is a partial arborescence ``T_j``
with a multiplicity ``mu_j``; initially one bundle ``{r}`` with ``mu = k_r`` per
root. Edmonds' condition for completing all bundles within the remaining
capacities ``c'`` is ``c'(in(X)) >= sum of mu_j over bundles not meeting X`` for
every set ``X`` of compute nodes; equivalently, in the network with a source
``s``, arcs ``s -> b_j`` of capacity ``mu_j`` and ``b_j -> x`` (infinite) for
``x`` in ``T_j``, every node receives flow ``K = sum mu_j``. Adding an arc
``(x, y)`` to ``mu'`` copies of bundle ``j`` lowers the slack of exactly the sets
``X`` with ``y`` in ``X``, ``x`` not in ``X`` and ``T_j`` meeting ``X``; the minimum of
their in-capacity is one max-flow to ``y`` with ``s -> x`` and ``b_j -> y`` made
infinite, so ``mu' = min(mu_j, c'(x, y), flow - K)``. Lovász's proof of
Edmonds' theorem guarantees an arc with ``mu' >= 1`` for every incomplete bundle.
Admissible amounts only shrink as the packing proceeds, which lets failed
attempts be cached.

**Fixed k.** With exactly ``K`` chunks per root and time factor ``T``, link ``e``
carries at most ``floor(x * caps_e)`` chunks for ``x = T * K * unit``; the best ``T``
is the smallest breakpoint ``x = m / caps_e`` at which the rooted connectivity
condition holds with ``K`` per root (exact search over the breakpoints).

Examples
--------
>>> from optcoll.topologies import build
>>> s = pack_arborescences(build("dgx-a100:1"))
>>> s.k, s.time_factor == s.cut_ratio, len(s.trees)
(1, True, 8)
"""

from __future__ import annotations

import math
import time
from bisect import bisect_right
from collections.abc import Mapping
from fractions import Fraction
from itertools import pairwise

from optcoll.bound import optimal_cut_ratio
from optcoll.exceptions import SolveError
from optcoll.maxflow import FlowNetwork
from optcoll.schedule import Schedule, Tree, TreeEdge
from optcoll.splitting import LogicalGraph, min_rooted_connectivity, split_switches
from optcoll.topology import Topology

__all__ = ["pack_arborescences", "pack_rooted", "fixed_k_capacity", "Packing"]

Arc = tuple[str, str]
Packing = list[tuple[str, int, tuple[Arc, ...]]]


class _Bundle:
    """A partial arborescence with a multiplicity, in BFS (insertion) order."""

    __slots__ = ("root", "mu", "nodes", "order", "arcs", "bound", "start")

    def __init__(self, root: int, mu: int) -> None:
        self.root = root
        self.mu = mu
        self.nodes = {root}
        self.order = [root]
        self.arcs: list[tuple[int, int]] = []
        self.bound: dict[tuple[int, int], int] = {}  # cached upper bounds on mu'
        self.start = 0  # order[:start] have no usable out-arc left

    def copy(self, mu: int) -> _Bundle:
        other = _Bundle(self.root, mu)
        other.nodes = set(self.nodes)
        other.order = list(self.order)
        other.arcs = list(self.arcs)
        other.bound = dict(self.bound)
        other.start = self.start
        return other


class _Packer:
    def __init__(self, logical: LogicalGraph, root_capacity: Mapping[str, int]) -> None:
        self.names = logical.compute_nodes
        self.index = {name: i for i, name in enumerate(self.names)}
        self.n = len(self.names)
        self.cap: dict[tuple[int, int], int] = {
            (self.index[u], self.index[v]): c for (u, v), c in logical.capacity.items() if c > 0
        }
        self.succ: list[list[int]] = [[] for _ in range(self.n)]
        for u, v in sorted(self.cap):
            self.succ[u].append(v)
        self.pending = [
            _Bundle(self.index[r], m)
            for r, m in sorted(root_capacity.items(), key=lambda item: self.index[item[0]])
            if m > 0
        ]
        self.done: list[_Bundle] = []
        self.infinite = sum(self.cap.values()) + sum(root_capacity.values()) + 1

    def remaining(self) -> int:
        return sum(b.mu for b in self.pending)

    def check(self) -> None:
        roots = {}
        for b in self.pending:
            roots[b.root] = roots.get(b.root, 0) + b.mu
        have = min_rooted_connectivity(self.n, self.cap, roots, range(self.n))
        if have < self.remaining():
            raise SolveError(
                f"the logical graph gives rooted connectivity {have} < {self.remaining()} "
                "arborescences to pack; Edmonds' condition fails"
            )

    def admissible(self, current: _Bundle, x: int, y: int) -> int:
        """The number of copies of ``current`` that can take arc ``(x, y)``."""
        n = self.n
        source = n + len(self.pending)
        tails: list[int] = []
        heads: list[int] = []
        caps: list[int] = []
        for (a, b), c in self.cap.items():
            tails.append(a)
            heads.append(b)
            caps.append(c)
        for j, bundle in enumerate(self.pending):
            if len(bundle.nodes) == 1 and bundle is not current:
                tails.append(source)
                heads.append(bundle.root)
                caps.append(bundle.mu)
                continue
            tails.append(source)
            heads.append(n + j)
            caps.append(bundle.mu)
            for v in bundle.order:
                tails.append(n + j)
                heads.append(v)
                caps.append(self.infinite)
        j = self.pending.index(current)
        tails += [source, n + j]
        heads += [x, y]
        caps += [self.infinite, self.infinite]
        flow = FlowNetwork(source + 1, tails, heads, caps).max_flow(source, y).value
        return max(0, min(current.mu, self.cap.get((x, y), 0), flow - self.remaining()))

    def grow(self, bundle: _Bundle) -> None:
        """Extend ``bundle`` by one arc (splitting off a sibling bundle if needed)."""
        best: tuple[int, int, int] | None = None
        deferred: list[tuple[int, int]] = []
        for position in range(bundle.start, len(bundle.order)):
            x = bundle.order[position]
            usable = False
            for y in self.succ[x]:
                if y in bundle.nodes or (x, y) not in self.cap:
                    continue
                bound = min(bundle.mu, self.cap[(x, y)], bundle.bound.get((x, y), bundle.mu))
                if bound == 0:
                    continue
                usable = True
                if bound < bundle.mu:
                    deferred.append((x, y))
                    continue
                mu = self.admissible(bundle, x, y)
                bundle.bound[(x, y)] = mu
                if mu == bundle.mu:
                    self.attach(bundle, x, y, mu)
                    return
                if mu and (best is None or mu > best[2]):
                    best = (x, y, mu)
                if mu:
                    usable = True
            if not usable and position == bundle.start:
                bundle.start += 1
        for x, y in deferred:
            bound = min(bundle.mu, self.cap[(x, y)], bundle.bound.get((x, y), bundle.mu))
            if best is not None and bound <= best[2]:
                continue
            mu = self.admissible(bundle, x, y)
            bundle.bound[(x, y)] = mu
            if mu and (best is None or mu > best[2]):
                best = (x, y, mu)
        if best is None:
            raise SolveError(
                f"no arc can extend the arborescence of {self.names[bundle.root]!r}; "
                "the packing condition was violated (internal error)"
            )
        self.attach(bundle, *best)

    def attach(self, bundle: _Bundle, x: int, y: int, mu: int) -> None:
        if mu < bundle.mu:
            sibling = bundle.copy(bundle.mu - mu)
            bundle.mu = mu
            self.pending.append(sibling)
        self.cap[(x, y)] -= mu
        if self.cap[(x, y)] == 0:
            del self.cap[(x, y)]
        bundle.nodes.add(y)
        bundle.order.append(y)
        bundle.arcs.append((x, y))

    def run(self, progress: bool) -> Packing:
        total = self.remaining() * (self.n - 1)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=total, desc="packing", leave=False)
        while self.pending:
            bundle = self.pending[0]
            while len(bundle.nodes) < self.n:
                self.grow(bundle)
                if bar is not None:
                    bar.update(bundle.mu)
            self.pending.pop(0)
            self.done.append(bundle)
        if bar is not None:
            bar.close()
        return _merge(
            (self.names[b.root], b.mu, tuple((self.names[x], self.names[y]) for x, y in b.arcs))
            for b in self.done
        )


def _merge(trees) -> Packing:  # noqa: ANN001 - iterable of packing entries
    """Merge arborescences with the same root and arc set (first occurrence's order)."""
    merged: dict[tuple[str, frozenset[Arc]], list] = {}
    for root, mu, arcs in trees:
        key = (root, frozenset(arcs))
        if key in merged:
            merged[key][1] += mu
        else:
            merged[key] = [root, mu, arcs]
    return [(root, mu, arcs) for root, mu, arcs in merged.values()]


def pack_rooted(
    logical: LogicalGraph, root_capacity: Mapping[str, int], *, progress: bool = False
) -> Packing:
    """Pack ``root_capacity[r]`` spanning arborescences rooted at every ``r`` (with multiplicity).

    Parameters
    ----------
    logical : LogicalGraph
        Switch-free graph on the compute nodes with integer capacities.
    root_capacity : Mapping
        ``root -> number of arborescences`` rooted there.
    progress : bool
        Show a tqdm bar.

    Returns
    -------
    list of (root, multiplicity, arcs)
        Arborescences spanning all compute nodes (arcs in the order they were
        added, parents before children); multiplicities sum to ``root_capacity[r]``
        per root; the multiplicities of all arborescences using an arc add up to at
        most its capacity.

    Raises
    ------
    SolveError
        If Edmonds' condition fails: some compute node receives flow less than
        ``sum(root_capacity.values())`` from the roots.

    Notes
    -----
    One max-flow (on the compute nodes plus one node per partial bundle) per
    attempted arc; attempts whose cached upper bound is too small are skipped.

    Examples
    --------
    >>> g = LogicalGraph(("a", "b", "c"), {("a", "b"): 2, ("b", "c"): 2, ("c", "a"): 2}, {})
    >>> pack_rooted(g, {"a": 1, "b": 1, "c": 1})
    [('a', 1, (('a', 'b'), ('b', 'c'))), ('b', 1, (('b', 'c'), ('c', 'a'))), ('c', 1, (('c', 'a'), ('a', 'b')))]
    """
    for r, m in root_capacity.items():
        if r not in logical.compute_nodes:
            raise SolveError(f"root_capacity names {r!r}, which is not a compute node")
        if isinstance(m, bool) or not isinstance(m, int) or m < 0:
            raise SolveError(f"root_capacity of {r!r} must be a non-negative int, got {m!r}")
    packer = _Packer(logical, root_capacity)
    packer.check()
    return packer.run(progress)


def _realise(logical: LogicalGraph, packing: Packing) -> list[Tree]:
    """Map logical arcs to physical paths, splitting trees across an arc's paths.

    Arc ``a``'s capacity is the interval ``[0, capacity[a])`` cut into consecutive
    pieces, one per path; the trees using ``a`` take consecutive sub-intervals of
    their multiplicity's length. A tree is cut at every point where one of its
    arcs changes path.
    """
    boundaries: dict[Arc, tuple[list[int], list[tuple[str, ...]]]] = {}
    for arc, pool in logical.paths.items():
        ends, paths, total = [], [], 0
        for path, c in pool:
            total += c
            ends.append(total)
            paths.append(path)
        boundaries[arc] = (ends, paths)
    offset: dict[Arc, int] = {}
    trees: list[Tree] = []
    for root, mu, arcs in packing:
        starts = []
        cuts = {0, mu}
        for arc in arcs:
            start = offset.get(arc, 0)
            offset[arc] = start + mu
            assert offset[arc] <= logical.capacity[arc], f"arc {arc} over capacity"
            starts.append(start)
            for end in boundaries[arc][0]:
                if start < end < start + mu:
                    cuts.add(end - start)
        points = sorted(cuts)
        for lo, hi in pairwise(points):
            edges = []
            for arc, start in zip(arcs, starts, strict=True):
                ends, paths = boundaries[arc]
                edges.append(TreeEdge(arc[0], arc[1], paths[bisect_right(ends, start + lo)]))
            trees.append(Tree(root, hi - lo, tuple(edges)))
    return trees


def _time_factor(topology: Topology, k: int, trees: list[Tree]) -> Fraction:
    load: dict[Arc, int] = {}
    for tree in trees:
        for edge in tree.edges:
            for a, b in pairwise(edge.path):
                load[(a, b)] = load.get((a, b), 0) + tree.chunks
    return max(Fraction(c) / (k * topology.capacity[e]) for e, c in load.items())


def _heights(trees: list[Tree]) -> list[int]:
    result = []
    for tree in trees:
        depth = {tree.root: 0}
        for edge in tree.edges:  # parents come before children
            depth[edge.dst] = depth[edge.src] + 1
        result.append(max(depth.values()))
    return result


def fixed_k_capacity(topology: Topology, k: int) -> tuple[Fraction, dict[Arc, int]]:
    """The best link capacities (in chunks) for a schedule with exactly ``k`` chunks per root.

    Returns the smallest ``x`` such that link capacities ``floor(x * caps_e)`` (with
    ``caps, unit = topology.integer_capacities()``) satisfy the rooted connectivity
    condition with ``k`` per compute node, and those capacities. The best time factor
    with ``k`` chunks per root is ``x / (k * unit)``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> x, caps = fixed_k_capacity(build("mi250:2"), 1)
    >>> x, 32 / (x / 2)  # x, and the algbw N / time factor in GB/s
    (Fraction(1, 5), Fraction(320, 1))
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise SolveError(f"k must be a positive integer, got {k!r}")
    caps, unit = topology.integer_capacities()
    ratio = optimal_cut_ratio(topology).ratio
    lowest = ratio * unit * k
    highest = math.ceil(lowest)
    candidates = sorted(
        {
            Fraction(m, c)
            for c in set(caps.values())
            for m in range(math.ceil(lowest * c), highest * c + 1)
        }
    )
    names = topology.node_ids
    index = {name: i for i, name in enumerate(names)}
    compute = [index[c] for c in topology.compute_nodes]
    need = k * len(compute)

    def scaled(x: Fraction) -> dict[Arc, int]:
        return {e: math.floor(x * c) for e, c in caps.items()}

    def feasible(x: Fraction) -> bool:
        arcs = {(index[a], index[b]): c for (a, b), c in scaled(x).items()}
        return min_rooted_connectivity(len(names), arcs, dict.fromkeys(compute, k), compute) >= need

    lo, hi = 0, len(candidates) - 1  # candidates[hi] = highest is feasible
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(candidates[mid]):
            hi = mid
        else:
            lo = mid + 1
    return candidates[lo], scaled(candidates[lo])


def pack_arborescences(
    topology: Topology,
    k: int | None = None,
    *,
    progress: bool = False,
    timings: dict[str, float] | None = None,
) -> Schedule:
    """An allgather schedule of spanning arborescences: optimal, or best with ``k`` chunks.

    Parameters
    ----------
    topology : Topology
    k : int, optional
        Chunks per root. ``None`` (default) picks ForestColl's ``k`` for which the
        schedule's time factor equals the optimal cut ratio ``r*``; a given ``k``
        gives the best schedule with exactly ``k`` chunks per root.
    progress : bool
        Show tqdm bars.
    timings : dict, optional
        If given, receives the seconds spent in each phase (``bound``, ``splitting``,
        ``packing``, ``paths``); timings stay out of the schedule, which is deterministic.

    Returns
    -------
    Schedule
        ``collective="allgather"``; ``cut_ratio`` is ``r*`` and ``time_factor`` the
        schedule's exact time factor (``== r*`` for the default ``k``). ``stats`` holds
        ``U``, the tree count, max/mean tree height, total sends (tree edges), logical
        arcs and ``ratio_to_optimum`` (time factor / r*, as a ratio string).

    Raises
    ------
    SolveError
        If a switch has less in- than out-capacity, or ``k`` is not a positive integer.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> s = pack_arborescences(build("dgx-a100:1"), k=2)
    >>> s.k, s.time_factor, s.stats["ratio_to_optimum"]
    (2, Fraction(7, 300), '1')
    """
    started = time.perf_counter()
    bound = optimal_cut_ratio(topology)
    caps, unit = topology.integer_capacities()
    if k is None:
        chunks = bound.k
        link_capacity = {e: bound.U * c for e, c in caps.items()}
    else:
        chunks = k
        _, link_capacity = fixed_k_capacity(topology, k)
    compute = topology.compute_nodes
    root_capacity = dict.fromkeys(compute, chunks)
    bounded = time.perf_counter()
    logical = split_switches(
        topology, link_capacity, root_capacity, chunks * len(compute), progress=progress
    )
    split = time.perf_counter()
    packing = pack_rooted(logical, root_capacity, progress=progress)
    packed = time.perf_counter()
    trees = _realise(logical, packing)
    trees.sort(key=lambda t: compute.index(t.root))  # stable: keeps packing order per root
    time_factor = _time_factor(topology, chunks, trees)
    heights = _heights(trees)
    stats = {
        "U": bound.U if k is None else None,
        "trees": len(trees),
        "max_height": max(heights),
        "mean_height": round(sum(heights) / len(heights), 3),
        "total_sends": sum(len(t.edges) for t in trees),
        "logical_arcs": len(logical.capacity),
        "ratio_to_optimum": str(time_factor / bound.ratio),
    }
    if timings is not None:
        timings.update(
            bound=bounded - started,
            splitting=split - bounded,
            packing=packed - split,
            paths=time.perf_counter() - packed,
        )
    if k is not None:
        del stats["U"]
    return Schedule(
        "allgather",
        topology.name,
        compute,
        chunks,
        tuple(trees),
        cut_ratio=bound.ratio,
        time_factor=time_factor,
        stats=stats,
    )
