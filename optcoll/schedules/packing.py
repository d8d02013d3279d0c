"""Integral arborescence packing: allgather schedules that achieve the optimal cut ratio.

With ``caps, unit = topology.integer_capacities()`` and the optimal cut ratio
``r* * unit = U / k`` (lowest terms), ForestColl (Zhao et al., arXiv 2402.06787)
shows that ``k`` arborescences per compute root, each carrying one of the root's
``k`` chunks, fit into the link capacities ``U * caps``. The construction here:

1. :func:`optcoll.graph.splitting.split_switches` removes the switches (edge splitting)
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

**Greedy batches first.** Checking every arc costs one max-flow per tree edge.
Instead, whole batches of bundles are first completed greedily (widest arc
first, then the shallowest tail) within the remaining capacities, and the batch
is kept if Edmonds' condition still holds for the bundles left (one rooted
connectivity check; none at all when the batch completes everything, because
capacities are respected by construction). A failed check restores the state,
remembers the violated set so that later greedy trees do not overload it, and
halves the batch; a bundle that fails on its own is completed arc by arc as
above. The output is therefore exactly as valid as the arc-by-arc method's;
only the speed depends on the greedy's luck.

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

import heapq
import math
import time
from bisect import insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from optcoll.bounds.cut_ratio import CutRatio, optimal_cut_ratio_core
from optcoll.core.arguments import (
    as_topology,
    count_argument,
    flag_argument,
    instance_argument,
    topology_argument,
)
from optcoll.core.limits import MAX_LINKS, MAX_NODES
from optcoll.core.loads import phase_time_factor
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import ImageTrees, Rotation, Rotations, Schedule, Tree
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, SolveError
from optcoll.graph.family_symmetry import declared_group
from optcoll.graph.maxflow import FlowNetwork
from optcoll.graph.splitting import LogicalGraph, meets_requirement, realise_paths, split_switches
from optcoll.graph.symmetry import RootSymmetry, path_rotation, root_symmetry
from optcoll.schedules.declared_trees import declared_trees, hop_eccentricity
from optcoll.schedules.radix_trees import radix_trees
from optcoll.schedules.tree_shape import shorten_trees

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "ChunkCapacities",
    "FixedKCapacity",
    "pack_arborescences",
    "pack_rooted",
    "pack_symmetric",
    "pack_layered",
    "expand_packing",
    "chunk_capacities",
    "fixed_k_capacity",
    "forwardable_floor",
    "Packing",
]

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
        self.bar: Any = None  # a tqdm progress bar while run(progress=True) works
        self.index = {name: i for i, name in enumerate(self.names)}
        self.n = len(self.names)
        self.cap: dict[tuple[int, int], int] = {
            (self.index[u], self.index[v]): c for (u, v), c in logical.capacity.items() if c > 0
        }
        self.all_arcs = sorted(self.cap)  # every logical arc, also those used up later
        # out-neighbours over arcs with capacity left (ordered, used-up arcs removed)
        self.succ: list[dict[int, None]] = [{} for _ in range(self.n)]
        # the same arcs by the bit length of their capacity: level -> heads, ascending
        self.levels: list[dict[int, list[int]]] = [{} for _ in range(self.n)]
        for u, v in self.all_arcs:
            self.succ[u][v] = None
            self.levels[u].setdefault(self.cap[(u, v)].bit_length(), []).append(v)
        self.pending = [
            _Bundle(self.index[r], m)
            for r, m in sorted(root_capacity.items(), key=lambda item: self.index[item[0]])
            if m > 0
        ]
        self.done: list[_Bundle] = []
        # sets whose Edmonds condition failed once, with the arcs entering them
        self.learned: list[tuple[frozenset[int], tuple[tuple[int, int], ...]]] = []
        self.exact_for: _Bundle | None = None  # the bundle the admissibility network serves
        self.sinks = list(range(self.n))  # feasibility order: recently violated sinks first
        self.verified = False  # whether the current state is known to satisfy Edmonds
        self.infinite = sum(self.cap.values()) + sum(root_capacity.values()) + 1

    def remaining(self) -> int:
        return sum(b.mu for b in self.pending)

    def network(self) -> tuple[FlowNetwork, int]:
        """The augmented network (source, bundle nodes, remaining arcs) and its source.

        Bundles that are still a single root feed the root directly; every other
        pending bundle ``j`` gets a node ``n + j`` with ``s -> n + j`` of capacity
        ``mu_j`` and infinite arcs to its nodes.
        """
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
            if len(bundle.nodes) == 1:
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
        return FlowNetwork(source + 1, tails, heads, caps), source

    def feasible(self) -> bool:
        """Edmonds' condition: every node receives flow ``remaining()`` in the network.

        A violated set (the sink side of a too-small cut) is remembered in
        ``self.learned`` so that later greedy trees respect it.
        """
        if not self.pending:
            return True
        network, source = self.network()
        violated = network.rooted_violation(source, self.sinks, self.remaining())
        if violated is None:
            return True
        side = violated.source_side
        sink_side = frozenset(u for u in range(self.n) if not side[u])
        entering = tuple((a, b) for a, b in self.all_arcs if b in sink_side and a not in sink_side)
        self.learned.append((sink_side, entering))
        self.sinks.remove(violated.sink)  # look here first next time
        self.sinks.insert(0, violated.sink)
        return False

    def slack(self, sink_side: frozenset[int], entering: tuple[tuple[int, int], ...]) -> int:
        """Edmonds' slack of a set: in-capacity minus the bundles that do not meet it."""
        capacity = sum(self.cap.get(arc, 0) for arc in entering)
        missing = sum(b.mu for b in self.pending if sink_side.isdisjoint(b.nodes))
        return capacity - missing

    def checks_arcs(self) -> bool:
        """Whether a greedy tree must ask :meth:`allowed` before taking an arc."""
        return bool(self.learned)

    def allowed(self, bundle: _Bundle, x: int, y: int, amount: int) -> bool:
        """Whether adding ``(x, y)`` keeps the slack of every learned set non-negative."""
        return all(
            self.slack(side, entering) >= amount
            for side, entering in self.learned
            if y in side and x not in side and not side.isdisjoint(bundle.nodes)
        )

    def exact_network(self, current: _Bundle) -> None:
        """Fix the arc structure of the admissibility flows while ``current`` grows.

        Nodes: compute nodes, ``B = n`` for ``current``, one node per other partial
        bundle, the source last. Arcs: the logical arcs, ``s -> v`` and ``B -> v`` for
        every node ``v``, ``s -> B``, and the other partial bundles' arcs. Only the
        capacities change from one flow to the next (``FlowNetwork.with_capacities``).
        """
        n = self.n
        others = [b for b in self.pending if b is not current and len(b.nodes) > 1]
        source = n + 1 + len(others)
        self.logical_arcs = list(self.cap)
        tails = [a for a, _ in self.logical_arcs] + [source] * n + [source] + [n] * n
        heads = [b for _, b in self.logical_arcs] + list(range(n)) + [n] + list(range(n))
        fixed = []
        for i, bundle in enumerate(others):
            tails += [source] + [n + 1 + i] * len(bundle.order)
            heads += [n + 1 + i] + bundle.order
            fixed += [bundle.mu] + [self.infinite] * len(bundle.order)
        self.exact_fixed = np.array(fixed, dtype=np.int64)
        self.exact_source = source
        self.exact_base = FlowNetwork(source + 1, tails, heads, [0] * len(tails))
        self.exact_for = current
        self.exact_partials = len(others)

    def admissible(self, current: _Bundle, x: int, y: int) -> int:
        """The number of copies of ``current`` that can take arc ``(x, y)``."""
        partials = sum(1 for b in self.pending if b is not current and len(b.nodes) > 1)
        if self.exact_for is not current or self.exact_partials != partials:
            self.exact_network(current)
        n, m = self.n, len(self.logical_arcs)
        roots = [0] * n
        for bundle in self.pending:
            if bundle is not current and len(bundle.nodes) == 1:
                roots[bundle.root] += bundle.mu
        roots[x] = self.infinite
        into = [0] * n
        for v in current.order:
            into[v] = self.infinite
        into[y] = self.infinite
        caps = np.concatenate(
            (
                np.array([self.cap.get(arc, 0) for arc in self.logical_arcs], dtype=np.int64),
                np.array(roots + [current.mu] + into, dtype=np.int64),
                self.exact_fixed,
            )
        )
        assert len(caps) == m + 2 * n + 1 + len(self.exact_fixed)
        network = self.exact_base.with_capacities(caps)
        flow = network.max_flow(self.exact_source, y).value
        return max(0, min(current.mu, self.cap.get((x, y), 0), flow - self.remaining()))

    def greedy(self, bundle: _Bundle) -> bool:
        """Complete ``bundle`` without any check (the caller verifies afterwards).

        Prim-like: the frontier arc with the most spare capacity (in powers of two of
        the multiplicity) wins, then the shallowest tail, then the smallest tail and
        head. A single copy (``mu == 1``, every bundle when ``k = 1``) grows by
        :meth:`greedy_levels`, several by :meth:`greedy_arcs`; both follow this order.
        """
        return self.greedy_levels(bundle) if bundle.mu == 1 else self.greedy_arcs(bundle)

    def greedy_arcs(self, bundle: _Bundle) -> bool:
        """Complete ``bundle`` without any check (the caller verifies afterwards).

        Prim-like: the frontier arc with the most spare capacity (in powers of two of
        the multiplicity) wins, then the shallowest tail. An arc too small for all
        copies splits the bundle (the rest waits in ``pending``). Returns False when
        no arc leaves the bundle.
        """
        depth = dict.fromkeys(bundle.nodes, 0)
        for x, y in bundle.arcs:
            depth[y] = depth[x] + 1
        heap: list[tuple[int, int, int, int]] = []

        def push(x: int) -> None:
            for y in self.succ[x]:
                c = self.cap.get((x, y), 0)
                if c and y not in bundle.nodes:
                    heapq.heappush(heap, (-((c // bundle.mu).bit_length()), depth[x], x, y))

        for x in bundle.order:
            push(x)
        while len(bundle.nodes) < self.n:
            while heap and heap[0][3] in bundle.nodes:
                heapq.heappop(heap)
            if not heap:
                return False
            _, _, x, y = heapq.heappop(heap)
            amount = min(bundle.mu, self.cap.get((x, y), 0))
            if not amount or not self.allowed(bundle, x, y, amount):
                continue
            self.attach(bundle, x, y, amount)
            depth[y] = depth[x] + 1
            push(y)
        return True

    def greedy_levels(self, bundle: _Bundle) -> bool:
        """Complete a single-copy ``bundle`` in the order of :meth:`greedy`.

        Capacity levels are bit lengths; ties go to the shallowest tail, then the
        smallest tail and head. Returns False when no arc leaves the bundle.

        Organised by capacity level rather than by arc: one heap per level holds
        the attached nodes with arcs at that level by ``(depth, node)``, and the
        node on top attaches the heads of its arcs at that level in order until
        they run out or a newly attached node has a higher level. That is the
        same order as a heap of all frontier arcs, at about one heap operation per
        node instead of one per arc leaving the tree.
        """
        nodes, levels = bundle.nodes, self.levels
        depth = dict.fromkeys(nodes, 0)
        for x, y in bundle.arcs:
            depth[y] = depth[x] + 1
        heaps: dict[int, list[tuple[int, int]]] = {}
        order: list[int] = []  # the levels of `heaps`, highest first
        cursors: dict[tuple[int, int], list] = {}
        push = heapq.heappush

        def enter(x: int) -> int:
            """Offer ``x``'s arcs; return its highest level (-1 without arcs)."""
            top = -1
            for level in levels[x]:
                heap = heaps.get(level)
                if heap is None:
                    heap = heaps[level] = []
                    order.append(level)
                    order.sort(reverse=True)
                push(heap, (depth[x], x))
                if level > top:
                    top = level
            return top

        for x in bundle.order:
            enter(x)
        count, n, checked = len(nodes), self.n, self.checks_arcs()
        while count < n:
            for level in order:
                heap = heaps[level]
                if heap:
                    break
            else:
                return False
            d, x = heap[0]
            cursor = cursors.get((x, level))
            if cursor is None:
                cursor = cursors[(x, level)] = [tuple(levels[x].get(level, ())), 0]
            heads, i = cursor
            higher = False
            while i < len(heads):
                y = heads[i]
                i += 1
                if y in nodes or (checked and not self.allowed(bundle, x, y, 1)):
                    continue
                self.attach(bundle, x, y, 1)
                count += 1
                depth[y] = d + 1
                if enter(y) > level:
                    higher = True
                    break
            cursor[1] = i
            if not higher:
                heapq.heappop(heap)
        return True

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
        self.divide(bundle, mu)
        before = self.cap[(x, y)]
        after = before - mu
        self.lower(x, y, before, after)
        if after:
            self.cap[(x, y)] = after
        else:
            del self.cap[(x, y)]
        bundle.nodes.add(y)
        bundle.order.append(y)
        bundle.arcs.append((x, y))

    def divide(self, bundle: _Bundle, mu: int) -> None:
        """Keep ``mu`` copies in ``bundle``; the others wait in a sibling bundle."""
        if mu < bundle.mu:
            sibling = bundle.copy(bundle.mu - mu)
            bundle.mu = mu
            self.pending.append(sibling)

    def lower(self, x: int, y: int, before: int, after: int) -> None:
        """Move arc ``(x, y)`` to the level of capacity ``after`` (gone at 0)."""
        level = before.bit_length()
        if after >> (level - 1) == 0:  # a lower level (or none) now
            levels = self.levels[x]
            heads = levels[level]
            heads.remove(y)
            if not heads:
                del levels[level]
            if after:
                insort(levels.setdefault(after.bit_length(), []), y)
        if not after:
            del self.succ[x][y]

    def exact(self, bundle: _Bundle) -> None:
        """Complete ``bundle`` arc by arc, each arc checked by one max-flow."""
        self.exact_for = None
        while len(bundle.nodes) < self.n:
            self.grow(bundle)

    def save(self) -> tuple:
        return (
            dict(self.cap),
            [dict(d) for d in self.succ],
            [{level: list(heads) for level, heads in d.items()} for d in self.levels],
            [b.copy(b.mu) for b in self.pending],
            len(self.done),
        )

    def restore(self, saved: tuple) -> None:
        self.cap, self.succ, self.levels, self.pending, done = saved
        del self.done[done:]

    def greedy_batch(self, size: int) -> bool:
        """Complete up to ``size`` bundles greedily and verify; restore on failure."""
        saved = self.save()
        for _ in range(size):
            if not self.pending:
                break
            if not self.greedy(self.pending[0]):
                self.restore(saved)
                return False
            self.done.append(self.pending.pop(0))
            self.show_progress()
        if self.feasible():
            self.verified = True
            return True
        self.restore(saved)
        self.show_progress()
        return False

    def show_progress(self) -> None:
        """Move the progress bar (if any) to the number of completed bundles."""
        if self.bar is not None:
            self.bar.total = len(self.done) + len(self.pending)  # bundles may split
            self.bar.update(len(self.done) - self.bar.n)

    def ensure_verified(self) -> None:
        """Check Edmonds' condition on the current state once (the initial state)."""
        if not self.verified:
            if not self.feasible():
                raise SolveError(
                    f"the logical graph cannot carry {self.remaining()} arborescences to "
                    "every node; Edmonds' condition fails"
                )
            self.verified = True

    def run(self, greedy: bool, progress: bool) -> Packing:
        """Optimistic batches of greedy trees, verified by Edmonds' condition.

        A batch of ``size`` bundles is completed greedily (no max-flow) and then the
        condition is checked for the rest (one max-flow per node; none when nothing
        is left, since capacities are respected by construction). The first batch
        is everything. On success the batch size doubles; on failure the state is
        restored, the violated cut is learned and the batch is halved; when even a
        single greedy bundle fails twice, it is completed exactly (one max-flow per
        arc, always possible).
        """
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(total=len(self.pending), desc="packing", leave=False)
        size, retried = len(self.pending), False  # first try everything at once
        while self.pending:
            self.show_progress()
            if greedy and self.greedy_batch(size):
                size, retried = size * 2, False
                continue
            self.ensure_verified()  # a failed batch restored a state that must be feasible
            if greedy and (size > 1 or not retried):
                # the failed check taught a cut: try again with half the batch
                size, retried = max(1, size // 2), size == 1
            else:
                self.exact(self.pending[0])
                self.done.append(self.pending.pop(0))
                size, retried = 1, False
        if self.bar is not None:
            self.bar.close()
        return _merge(
            (self.names[b.root], b.mu, tuple((self.names[x], self.names[y]) for x, y in b.arcs))
            for b in self.done
        )


class _OrbitPacker(_Packer):
    """Greedy trees of the representative roots, each arc orbit within ``c(O)`` in total.

    The orbit capacities and the images of the trees are those of
    :mod:`optcoll.graph.symmetry`: whatever the greedy completes is a valid packing once
    mapped by the group, so no Edmonds check is made; a greedy tree that gets
    stuck makes :meth:`run_orbits` give up (``None``).
    """

    def __init__(
        self, logical: LogicalGraph, root_capacity: Mapping[str, int], symmetry: RootSymmetry
    ) -> None:
        index = {name: i for i, name in enumerate(logical.compute_nodes)}
        arcs = {(index[u], index[v]): c for (u, v), c in logical.capacity.items()}
        self.orbit_cap = symmetry.orbit_capacity(arcs)
        shared = {
            (u, v): left
            for u, v in logical.capacity
            if (left := self.orbit_cap[symmetry.arc_orbit(index[u], index[v])]) > 0
        }
        names = logical.compute_nodes
        chosen = {names[r]: root_capacity.get(names[r], 0) for r in symmetry.representatives}
        super().__init__(LogicalGraph(names, shared, {}), chosen)
        self.symmetry = symmetry
        self.cap = _OrbitView(symmetry, self.orbit_cap)  # type: ignore[assignment]  # read only

    def checks_arcs(self) -> bool:
        return True  # two arcs of one orbit may meet in one tree

    def allowed(self, bundle: _Bundle, x: int, y: int, amount: int) -> bool:
        return amount >= 1 and self.cap[(x, y)] >= amount

    def attach(self, bundle: _Bundle, x: int, y: int, mu: int) -> None:
        self.divide(bundle, mu)
        key = self.symmetry.arc_orbit(x, y)
        before = self.orbit_cap[key]
        after = self.orbit_cap[key] = before - mu
        if after >> (before.bit_length() - 1) == 0:  # every arc of the orbit moves level
            image = self.symmetry.image
            for i in range(self.symmetry.order):
                self.lower(image(i, x), image(i, y), before, after)
        bundle.nodes.add(y)
        bundle.order.append(y)
        bundle.arcs.append((x, y))

    def run_orbits(self) -> Packing | None:
        """The representatives' trees (``None`` when a greedy tree gets stuck)."""
        while self.pending:
            if not self.greedy(self.pending[0]):
                return None
            self.done.append(self.pending.pop(0))
        return _merge(
            (self.names[b.root], b.mu, tuple((self.names[x], self.names[y]) for x, y in b.arcs))
            for b in self.done
        )


class _OrbitView:
    """Read-only ``arc -> capacity left in its orbit`` (the packer's ``cap``)."""

    def __init__(self, symmetry: RootSymmetry, orbit_cap: dict[Any, int]) -> None:
        self.key = symmetry.arc_orbit
        self.orbit_cap = orbit_cap

    def __getitem__(self, arc: tuple[int, int]) -> int:
        return self.orbit_cap[self.key(*arc)]

    def get(self, arc: tuple[int, int], default: int = 0) -> int:
        return self.orbit_cap.get(self.key(*arc), default)


def pack_symmetric(
    logical: LogicalGraph, root_capacity: Mapping[str, int], symmetry: RootSymmetry
) -> Packing | None:
    """Greedy trees of ``symmetry``'s representative roots, sharing each arc orbit's capacity.

    Mapped by the group (:func:`expand_packing`) they form a packing of ``logical``
    with ``root_capacity`` trees per root, provided ``root_capacity`` is constant on
    every orbit (proof: :mod:`optcoll.graph.symmetry`); ``None`` when a greedy tree gets
    stuck (the caller then packs every root, :func:`pack_rooted`).

    Examples
    --------
    >>> from optcoll.graph.symmetry import root_symmetry
    >>> g = LogicalGraph(("a", "b", "c"), {("a", "b"): 2, ("b", "c"): 2, ("c", "a"): 2}, {})
    >>> sym = root_symmetry(g, {})
    >>> reps = pack_symmetric(g, dict.fromkeys("abc", 1), sym)
    >>> reps, expand_packing(g, reps, sym) == pack_rooted(g, dict.fromkeys("abc", 1))
    ([('a', 1, (('a', 'b'), ('b', 'c')))], True)
    """
    return _OrbitPacker(logical, root_capacity, symmetry).run_orbits()


def pack_layered(
    logical: LogicalGraph, root_capacity: Mapping[str, int], symmetry: RootSymmetry
) -> Packing | None:
    """Breadth-first-layered trees of ``symmetry``'s representative roots, sharing each arc
    orbit's capacity, or ``None`` when the layers cannot carry them.

    In a layered tree every node ``v`` hangs from an in-neighbour one hop nearer the
    root (``dist(u) = dist(v) - 1``, breadth-first distance over the logical arcs),
    so every tree is a shortest-path tree: its height is the root's eccentricity,
    the least any spanning tree from that root can have. Which orbit of arcs each
    node's parent arc comes from is a transportation problem: node ``v`` of a tree
    of representative ``r`` needs one unit from one of the orbits of its
    layered in-arcs, orbit ``O`` supplies ``c(O)``. Nodes with the same
    representative and the same set of allowed orbits are one supply of ``k_r``
    times their number, so one small max-flow (types to orbits) decides it; a
    flow of ``sum of k_r (N - 1)`` is split among the nodes in index order. The
    orbit loads are then within ``c(O)``, which is all the proof of
    :mod:`optcoll.graph.symmetry` needs; with ``root_capacity`` constant on orbits
    the images (:func:`expand_packing`) are a packing of ``logical``.

    ``O(reps * arcs)`` for the distances plus one max-flow on ``types + orbits + 2``
    nodes.

    Examples
    --------
    >>> from optcoll.graph.symmetry import automorphism_group
    >>> cycle = {(i, (i + 1) % 4): 3 for i in range(4)} | {((i + 1) % 4, i): 3 for i in range(4)}
    >>> g = LogicalGraph(("a", "b", "c", "d"), {("abcd"[u], "abcd"[v]): c for (u, v), c in cycle.items()}, {})
    >>> pack_layered(g, dict.fromkeys("abcd", 2), automorphism_group(4, cycle))
    [('a', 1, (('a', 'b'), ('a', 'd'), ('d', 'c'))), ('a', 1, (('a', 'b'), ('a', 'd'), ('b', 'c')))]
    """
    names = logical.compute_nodes
    n = len(names)
    index = {name: i for i, name in enumerate(names)}
    arcs = {(index[u], index[v]): c for (u, v), c in logical.capacity.items() if c > 0}
    orbit_cap = symmetry.orbit_capacity(arcs)
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for u, v in sorted(arcs):
        succ[u].append(v)
        pred[v].append(u)
    # per representative: distances, and for every node its parent per allowed orbit
    types: dict[tuple[int, frozenset], list[int]] = {}
    parents: dict[tuple[int, int], dict[Any, int]] = {}
    distances: dict[int, list[int]] = {}
    for r in symmetry.representatives:
        if root_capacity.get(names[r], 0) == 0:
            continue
        dist = [-1] * n
        dist[r] = 0
        queue = [r]
        for u in queue:
            for v in succ[u]:
                if dist[v] < 0:
                    dist[v] = dist[u] + 1
                    queue.append(v)
        if min(dist) < 0:
            return None
        distances[r] = dist
        for v in queue[1:]:
            choice: dict[Any, int] = {}
            for u in pred[v]:
                key = symmetry.arc_orbit(u, v)
                if dist[u] == dist[v] - 1 and orbit_cap.get(key, 0) > 0:
                    choice.setdefault(key, u)
            parents[(r, v)] = choice
            types.setdefault((r, frozenset(choice)), []).append(v)
    supply = {t: len(nodes) * root_capacity[names[t[0]]] for t, nodes in types.items()}
    orbits = sorted({key for t in types for key in t[1]})
    if not orbits:
        return None
    type_list = list(types)
    source, sink = 0, 1 + len(type_list) + len(orbits)
    orbit_node = {key: 1 + len(type_list) + j for j, key in enumerate(orbits)}
    tails, heads, caps = [], [], []
    for i, t in enumerate(type_list):
        tails.append(source)
        heads.append(1 + i)
        caps.append(supply[t])
        for key in sorted(t[1]):
            tails.append(1 + i)
            heads.append(orbit_node[key])
            caps.append(supply[t])
    for key in orbits:
        tails.append(orbit_node[key])
        heads.append(sink)
        caps.append(orbit_cap[key])
    result = FlowNetwork(sink + 1, tails, heads, caps).max_flow(source, sink)
    if result.value < sum(supply.values()):
        return None
    flow = [int(f) for f in result.flow]
    left: dict[tuple[int, frozenset], list[list]] = {}
    arc = 0
    for t in type_list:
        arc += 1  # the source arc
        left[t] = []
        for key in sorted(t[1]):
            if flow[arc]:
                left[t].append([key, flow[arc]])
            arc += 1
    trees: list[tuple[str, int, tuple[Arc, ...]]] = []
    for r, dist in distances.items():
        k = root_capacity[names[r]]
        # tree i of root r takes node v's parent from the allotment's unit i of v: kept
        # as runs of trees (start, parent) per node, so k may be huge (O(nodes * orbits))
        runs: dict[int, list[tuple[int, int]]] = {}
        for t, nodes in types.items():
            if t[0] != r:
                continue
            allotment = left[t]
            for v in nodes:
                runs[v], start = [], 0
                while start < k:
                    while allotment[0][1] == 0:
                        allotment.pop(0)
                    take = min(allotment[0][1], k - start)
                    runs[v].append((start, parents[(r, v)][allotment[0][0]]))
                    allotment[0][1] -= take
                    start += take
        starts = sorted({start for node_runs in runs.values() for start, _ in node_runs} | {k})
        for first, end in zip(starts, starts[1:], strict=False):
            tree = [
                (next(u for start, u in reversed(node_runs) if start <= first), v)
                for v, node_runs in runs.items()
            ]
            tree.sort(key=lambda a: (dist[a[1]], a[1]))
            trees.append((names[r], end - first, tuple((names[u], names[v]) for u, v in tree)))
    return _merge(trees)


def expand_packing(logical: LogicalGraph, packing: Packing, symmetry: RootSymmetry) -> Packing:
    """Every tree of ``packing`` under ``rho^0 .. rho^(m-1)``, grouped by image.

    Examples
    --------
    >>> from optcoll.graph.symmetry import RootSymmetry
    >>> g = LogicalGraph(("a", "b"), {("a", "b"): 1, ("b", "a"): 1}, {})
    >>> expand_packing(g, [("a", 1, (("a", "b"),))], RootSymmetry.generated_by([1, 0]))
    [('a', 1, (('a', 'b'),)), ('b', 1, (('b', 'a'),))]
    """
    names = logical.compute_nodes
    index = {name: i for i, name in enumerate(names)}
    image = symmetry.image
    result: Packing = []
    for i in range(symmetry.order):
        rename = [names[image(i, v)] for v in range(len(names))]
        for root, mu, arcs in packing:
            mapped = tuple((rename[index[u]], rename[index[v]]) for u, v in arcs)
            result.append((rename[index[root]], mu, mapped))
    return result


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
    logical: LogicalGraph,
    root_capacity: Mapping[str, int],
    *,
    greedy: bool = True,
    progress: bool = False,
) -> Packing:
    """Pack ``root_capacity[r]`` spanning arborescences rooted at every ``r`` (with multiplicity).

    Parameters
    ----------
    logical : LogicalGraph
        Switch-free graph on the compute nodes with integer capacities.
    root_capacity : Mapping
        ``root -> number of arborescences`` rooted there.
    greedy : bool
        Try greedy trees verified in batches first (default). ``False`` builds every
        tree arc by arc with one max-flow per arc (slower; same guarantees).
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
    The exact step costs one max-flow (on the compute nodes plus one node per
    partial bundle) per attempted arc; attempts whose cached upper bound is too
    small are skipped. The greedy batches cost one max-flow per node per batch and
    fall back to the exact step for one bundle whenever a batch fails.

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
    return _Packer(logical, root_capacity).run(greedy, progress)


def _heights(trees: list[Tree]) -> list[int]:
    result = []
    for tree in trees:
        depth = {tree.root: 0}
        for edge in tree.edges:  # parents come before children
            depth[edge.dst] = depth[edge.src] + 1
        result.append(max(depth.values()))
    return result


def _height_excess(logical: LogicalGraph, trees: list[Tree]) -> tuple[int, int]:
    """``(max eccentricity, max height excess)``: the largest breadth-first eccentricity
    (logical hops) of a root, the least height a tree from it can have, and the
    most any tree exceeds its root's eccentricity (0: every tree is a shortest-path
    tree). One breadth-first search per distinct root."""
    succ: dict[str, list[str]] = {}
    for (u, v), c in logical.capacity.items():
        if c > 0:
            succ.setdefault(u, []).append(v)
    eccentricity: dict[str, int] = {}
    for root in dict.fromkeys(t.root for t in trees):
        dist = {root: 0}
        queue = [root]
        for u in queue:
            for v in succ.get(u, ()):
                if v not in dist:
                    dist[v] = dist[u] + 1
                    queue.append(v)
        eccentricity[root] = max(dist.values())
    heights = _heights(trees)
    excess = max(h - eccentricity[t.root] for h, t in zip(heights, trees, strict=True))
    return max(eccentricity.values()), excess


@dataclass(frozen=True)
class ChunkCapacities:
    """What :func:`chunk_capacities` gives: ``chunks`` per root and every link's capacity
    in chunks (``capacity[(u, v)]``)."""

    chunks: int
    capacity: dict[Arc, int]


@dataclass(frozen=True)
class FixedKCapacity:
    """What :func:`fixed_k_capacity` gives: ``scale`` (``x``: the best time factor with
    ``k`` chunks per root is ``x / (k * unit)``) and every link's capacity in chunks."""

    scale: Fraction
    capacity: dict[Arc, int]


def chunk_capacities(
    topology: Topology, k: int | None = None, *, bound: CutRatio | None = None
) -> ChunkCapacities:
    """ForestColl's ``(U, k)`` set-up: chunks per root and every link's capacity in chunks.

    With ``caps, unit = bound.usable.integer_capacities()`` (the forwardable capacity
    when a switch is short of input, else the topology's own) and ``k=None``: r* in
    integer units is ``U / k`` in lowest terms, and link ``e`` carries ``U * caps[e]`` chunks;
    ``k`` trees per root then fit exactly (Theorem 3 of ForestColl, arXiv 2402.06787).
    For a given ``k``: the capacities of :func:`fixed_k_capacity`. Either way the
    rooted connectivity to every compute node is at least ``k * N``, which is what
    :func:`optcoll.graph.splitting.split_switches` and :func:`pack_rooted` need.

    Parameters
    ----------
    topology : Topology
    k : int, optional
        Chunks per root; None for the optimal ``k``.
    bound : CutRatio, optional
        ``optimal_cut_ratio(topology)`` when already computed.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> set_up = chunk_capacities(build("dgx-a100:1"))  # r* = 1/(7 * 300 GB/s)
    >>> set_up.chunks, set_up.capacity[("b0.gpu0", "b0.nvswitch")]
    (1, 7)
    """
    if k is not None:
        fixed = fixed_k_capacity_core(topology, k, ratio=None if bound is None else bound.ratio)
        return ChunkCapacities(k, fixed.capacity)
    if bound is None:
        bound = optimal_cut_ratio_core(topology)
    caps, unit = bound.usable.integer_capacities()
    scaled = bound.ratio * unit  # U / k in lowest terms
    return ChunkCapacities(scaled.denominator, {e: scaled.numerator * c for e, c in caps.items()})


def fixed_k_capacity(
    topology: Topology, k: int, *, ratio: Fraction | None = None
) -> FixedKCapacity:
    """The best link capacities (in chunks) for a schedule with exactly ``k`` chunks per root.

    Works on the usable capacity of :func:`~optcoll.bounds.cut_ratio.optimal_cut_ratio`
    (the topology's own, or its forwardable part when a switch is short of
    input), in its integer units ``caps``: the smallest ``y`` such that link
    capacities ``floor(y * caps_e)``, made forwardable again (rounding down an
    in-link can leave a switch able to send more than it receives; its largest
    out-links then give up the difference, :func:`forwardable_floor`), satisfy
    the rooted connectivity condition with ``k`` per compute node.

    Returns the capacities and ``x`` (``scale``) in the units of
    ``topology.integer_capacities()``: the best time factor with ``k`` chunks
    per root is ``x / (k * unit)`` for that ``unit``. ``ratio`` is r* of
    ``topology`` when the caller knows it already.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> x = fixed_k_capacity(build("mi250:2"), 1).scale
    >>> x, 32 / (x / 2)  # x, and the algbw N / time factor in GB/s
    (Fraction(1, 5), Fraction(320, 1))
    """
    topology_argument(topology)
    k = count_argument(k, "k")
    return fixed_k_capacity_core(topology, k, ratio=ratio)


def fixed_k_capacity_core(
    topology: Topology, k: int, *, ratio: Fraction | None = None
) -> FixedKCapacity:
    """The core of :func:`fixed_k_capacity`: its arguments are already checked."""
    usable = topology
    if ratio is None or topology.short_switches():
        bound = optimal_cut_ratio_core(topology)
        ratio, usable = bound.ratio, bound.usable
    caps, unit = usable.integer_capacities()
    _, topology_unit = topology.integer_capacities()
    lowest = ratio * unit * k
    names = topology.node_ids
    index = {name: i for i, name in enumerate(names)}
    compute = [index[c] for c in topology.compute_nodes]
    need = k * len(compute)
    distinct = sorted(set(caps.values()))
    switches = topology.switch_nodes

    def scaled(x: Fraction) -> dict[Arc, int]:
        return forwardable_floor({e: math.floor(x * c) for e, c in caps.items()}, switches)

    def feasible(x: Fraction) -> bool:
        arcs = {(index[a], index[b]): c for (a, b), c in scaled(x).items()}
        return meets_requirement(len(names), arcs, dict.fromkeys(compute, k), compute, need)

    def breakpoint_below(x: Fraction) -> Fraction:
        # the smallest y with floor(y * c) == floor(x * c) for every capacity c
        return max(Fraction(math.floor(x * c), c) for c in distinct)

    # Feasibility is monotone in x and changes only at breakpoints m / c. With
    # 7-decimal bandwidths there are billions of them, so bisect on x first (snapping
    # each feasible x down to its breakpoint) until the interval is shorter than
    # 1 / max(c): then it holds at most one breakpoint per capacity, listed and
    # bisected exactly. Every feasible x is >= lowest.
    if feasible(lowest):
        return FixedKCapacity(breakpoint_below(lowest) * topology_unit / unit, scaled(lowest))
    lo, hi = lowest, breakpoint_below(Fraction(math.ceil(lowest)))  # infeasible, feasible
    while (hi - lo) * distinct[-1] >= 1:
        mid = (lo + hi) / 2
        if feasible(mid):
            hi = breakpoint_below(mid)
        else:
            lo = mid
    candidates = sorted(
        {Fraction(math.floor(lo * c) + 1, c) for c in distinct if math.floor(lo * c) + 1 <= hi * c}
        | {hi}
    )
    first, last = 0, len(candidates) - 1  # candidates[last] = hi is feasible
    while first < last:
        middle = (first + last) // 2
        if feasible(candidates[middle]):
            last = middle
        else:
            first = middle + 1
    return FixedKCapacity(candidates[first] * topology_unit / unit, scaled(candidates[first]))


def forwardable_floor(capacity: Mapping[Arc, int], switches: Sequence[str]) -> dict[Arc, int]:
    """``capacity`` with no switch sending more than it receives: each switch short of
    input lowers its largest out-links one unit at a time (ties: the first in order),
    repeated until no switch is short (lowering a link into a switch can make it short).

    Examples
    --------
    >>> forwardable_floor({("a", "w"): 1, ("w", "b"): 2, ("w", "c"): 2}, ["w"])
    {('a', 'w'): 1, ('w', 'b'): 0, ('w', 'c'): 1}
    """
    result = dict(capacity)
    out_links: dict[str, list[Arc]] = {w: [] for w in switches}
    in_links: dict[str, list[Arc]] = {w: [] for w in switches}
    for u, v in result:
        if u in out_links:
            out_links[u].append((u, v))
        if v in in_links:
            in_links[v].append((u, v))
    short = list(switches)
    while short:
        w = short.pop()
        deficit = sum(result[e] for e in out_links[w]) - sum(result[e] for e in in_links[w])
        while deficit > 0:
            largest = max(out_links[w], key=lambda e: result[e])  # first of the largest
            result[largest] -= 1
            deficit -= 1
            if largest[1] in out_links and largest[1] not in short:
                short.append(largest[1])
    return result


def pack_arborescences(
    topology: Topology | nx.Graph,
    k: int | None = None,
    *,
    progress: bool = False,
    timings: dict[str, float] | None = None,
    bound: CutRatio | None = None,
    shape: bool = True,
    symmetry: bool = True,
) -> Schedule:
    """An allgather schedule of spanning arborescences: optimal, or best with ``k`` chunks.

    Parameters
    ----------
    topology : Topology or networkx graph
        A networkx graph carries its bandwidths in the edge attribute ``bandwidth``
        (:meth:`~optcoll.core.topology.Topology.from_networkx`).
    k : int, optional
        Chunks per root. ``None`` (default) picks ForestColl's ``k`` for which the
        schedule's time factor equals the optimal cut ratio ``r*``; a given ``k``
        gives the best schedule with exactly ``k`` chunks per root.
    progress : bool
        Show tqdm bars.
    timings : dict, optional
        If given, receives the seconds spent in each phase (``bound``, ``splitting``,
        ``packing``, ``shape``, ``paths``); timings stay out of the schedule, which is deterministic.
    bound : CutRatio, optional
        :func:`optcoll.bounds.cut_ratio.optimal_cut_ratio` of ``topology`` when the caller has
        it already (it is not computed again).
    shape : bool
        Lower the trees and their peers at the same time factor
        (:func:`optcoll.schedules.tree_shape.shorten_trees`); ``False`` keeps the packer's trees.
    symmetry : bool
        For the optimal ``k``: when a free group of automorphisms preserves the
        logical graph (:func:`optcoll.graph.symmetry.root_symmetry`: box rotations,
        translations of tori and hypercubes, reflections of meshes), pack only one
        root per orbit and map the trees to the others: breadth-first-layered trees
        when the layers can carry them (:func:`pack_layered`, no shape pass needed),
        else greedy trees shaped per orbit (:func:`pack_symmetric`); used only if the
        result's time factor is exactly ``r*`` (computed from the representatives by
        orbits, :func:`optcoll.core.loads.orbit_link_loads`), else every root is
        packed. ``False`` always packs every root.

    Returns
    -------
    Schedule
        ``collective="allgather"``; ``cut_ratio`` is ``r*`` and ``time_factor`` the
        schedule's exact time factor (``== r*`` for the default ``k``). ``stats`` holds
        ``U``, the tree count, max/mean tree height, ``max_eccentricity`` (the largest
        breadth-first eccentricity of a root over the logical arcs: no tree from that
        root is lower) and ``height_excess`` (the most a tree exceeds its root's
        eccentricity; 0 for layered trees), total sends (tree edges), logical
        arcs, ``ratio_to_optimum`` (time factor / r*, as a ratio string) and
        ``packed_roots``, the roots whose trees were packed (the others' are images).

    Raises
    ------
    ArgumentError
        If ``k`` is not a positive integer.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> s = pack_arborescences(build("dgx-a100:1"), k=2)
    >>> s.k, s.time_factor, s.stats["ratio_to_optimum"]
    (2, Fraction(7, 300), '1')
    """
    topology = as_topology(topology)
    k = None if k is None else count_argument(k, "k")
    flag_argument(progress, "progress")
    if bound is not None:
        instance_argument(bound, CutRatio, "bound", "optcoll.bounds.cut_ratio.optimal_cut_ratio")
    return pack_arborescences_core(
        topology, k, progress=progress, timings=timings, bound=bound, shape=shape, symmetry=symmetry
    )


def pack_arborescences_core(
    topology: Topology,
    k: int | None = None,
    *,
    progress: bool = False,
    timings: dict[str, float] | None = None,
    bound: CutRatio | None = None,
    shape: bool = True,
    symmetry: bool = True,
) -> Schedule:
    """The core of :func:`pack_arborescences`: its arguments are already checked.

    For a fixed ``k`` on a topology with switches, rounding the capacities down for
    ``k`` can lose more than for a divisor ``d`` of ``k`` (whose trees, each carrying
    ``k / d`` times the chunks, are a ``k``-chunk schedule of the same time factor):
    every divisor is packed too and the best is kept (:func:`_best_over_divisors`).
    Without switches the rounded capacities are exact (Edmonds), so no divisor can win.
    """
    if len(topology.node_ids) > MAX_NODES or len(topology.capacity) > MAX_LINKS:
        if k is not None or not symmetry or declared_group(topology) is None:
            raise ArgumentError(
                f"{topology.name}: {len(topology.node_ids)} nodes and {len(topology.capacity)} "
                f"links; beyond {MAX_NODES} nodes or {MAX_LINKS} links trees are packed only "
                "for the optimal k, by the family's declared symmetry (one root per orbit), "
                "which this topology does not have: choose a smaller size"
            )
    if bound is None:
        bound = optimal_cut_ratio_core(topology)
    schedule = _pack_chunks(
        topology, k, progress=progress, timings=timings, bound=bound, shape=shape, symmetry=symmetry
    )
    if k is None or k == 1 or not topology.switch_nodes:
        return schedule
    return _best_over_divisors(topology, schedule, bound, shape=shape, symmetry=symmetry)


def _best_over_divisors(
    topology: Topology, schedule: Schedule, bound: CutRatio, *, shape: bool, symmetry: bool
) -> Schedule:
    """``schedule`` (``k`` chunks per root), or the best packing for a divisor ``d`` of
    ``k`` with every tree carrying ``k / d`` times its chunks when that is faster; the
    search stops at r*, which no schedule beats. ``stats["divisor_k"]`` names ``d``."""
    k = schedule.k
    best = schedule
    for d in range(k // 2, 0, -1):
        if best.time_factor == bound.ratio:
            break
        if k % d == 0:
            candidate = _pack_chunks(topology, d, bound=bound, shape=shape, symmetry=symmetry)
            if (
                candidate.time_factor is not None
                and best.time_factor is not None
                and (candidate.time_factor < best.time_factor)
            ):
                best = candidate
    if best is schedule:
        return schedule
    times = k // best.k
    trees: tuple[Tree, ...] | ImageTrees
    if isinstance(best.trees, ImageTrees):
        scaled = [Tree(t.root, t.chunks * times, t.edges) for t in best.trees.representatives]
        trees = ImageTrees(scaled, best.trees.group, best.trees.compute_nodes)
    else:
        trees = tuple(Tree(t.root, t.chunks * times, t.edges) for t in best.trees)
    return replace(best, k=k, trees=trees, stats={**best.stats, "divisor_k": best.k})


def _pack_chunks(
    topology: Topology,
    k: int | None,
    *,
    bound: CutRatio,
    progress: bool = False,
    timings: dict[str, float] | None = None,
    shape: bool = True,
    symmetry: bool = True,
) -> Schedule:
    """One packing: the optimal ``k`` (None) or the capacities rounded for ``k``."""
    started = time.perf_counter()
    usable = bound.usable  # the forwardable capacity when a switch is short of input
    compute = topology.compute_nodes
    declare = symmetry and len(compute) >= DECLARED_FROM
    optimal = chunk_capacities(topology, None, bound=bound) if k is None or declare else None
    if optimal is not None and (k is None or k % optimal.chunks == 0):
        # k = m * k*: the optimal capacities times m reach r* (the best any k can)
        times = 1 if k is None else k // optimal.chunks
        chunks, target = optimal.chunks * times, bound.ratio
        link_capacity = {e: c * times for e, c in optimal.capacity.items()}
    else:  # the best time factor any k-chunk packing of these capacities can have
        assert k is not None
        fixed = fixed_k_capacity_core(topology, k, ratio=bound.ratio)
        chunks, link_capacity = k, fixed.capacity
        target = fixed.scale / (k * topology.integer_capacities()[1])
    if declare:
        declared = _pack_declared(
            topology, usable, chunks, link_capacity, bound, target, started, timings
        )
        if declared is not None:
            return declared
    if len(topology.node_ids) > MAX_NODES or len(topology.capacity) > MAX_LINKS:
        raise ArgumentError(
            f"{topology.name}: {len(topology.node_ids)} nodes and {len(topology.capacity)} "
            f"links; beyond {MAX_NODES} nodes or {MAX_LINKS} links trees are packed only by "
            "the family's declared symmetry (one root per orbit), whose greedy does not "
            "complete the trees at r* here: choose a smaller size"
        )
    root_capacity = dict.fromkeys(compute, chunks)
    bounded = time.perf_counter()
    logical = split_switches(
        usable,
        link_capacity,
        root_capacity,
        chunks * len(compute),
        progress=progress,
        proved=True,  # chunk_capacities meet the condition (certified r*, or checked k)
    )
    split = time.perf_counter()
    rotation = None
    trees: list[Tree] | ImageTrees
    groups = {v: topology.node[v].group for v in compute}
    orbits = root_symmetry(logical, groups) if symmetry else None
    packing = layered = None
    if orbits is not None:
        packing = layered = pack_layered(logical, root_capacity, orbits)
        if packing is None:
            packing = pack_symmetric(logical, root_capacity, orbits)
    if packing is not None and orbits is not None:
        packed_roots = len(orbits.representatives)
        packed = time.perf_counter()
        if shape and layered is None:  # layered trees are as low as their roots allow
            packing = shorten_trees(logical, packing, symmetry=orbits)
        shaped = time.perf_counter()
        images = path_rotation(logical, orbits)
        if images is None:
            expanded = realise_paths(logical, expand_packing(logical, packing, orbits))
            time_factor = phase_time_factor(topology, expanded, chunks)
            heights = _heights(expanded)
            excess = _height_excess(logical, expanded)
            trees = expanded
        else:
            generators = tuple(Rotation(m, g) for m, g in zip(orbits.orders, images, strict=True))
            rotation = generators[0] if len(generators) == 1 else Rotations(generators)
            shared = realise_paths(
                logical, packing, share=orbits.named_arc_orbit(logical.compute_nodes)
            )
            time_factor = phase_time_factor(topology, shared, chunks, rotation=rotation)
            heights = _heights(shared) * orbits.order  # an image is as tall as its tree
            excess = _height_excess(logical, shared)
            trees = ImageTrees(shared, rotation, compute) if time_factor <= target else []
        if time_factor > target:  # never a worse answer: pack every root instead
            packing, rotation = None, None
    if packing is None:
        packed_roots = len(compute)
        packing = pack_rooted(logical, root_capacity, progress=progress)
        packed = time.perf_counter()
        if shape:
            packing = shorten_trees(logical, packing)
        shaped = time.perf_counter()
        trees = realise_paths(logical, packing)
        time_factor = phase_time_factor(topology, trees, chunks)
        heights = _heights(trees)
        excess = _height_excess(logical, trees)
    if isinstance(trees, ImageTrees):  # made on demand, ordered by root
        sends = sum(len(t.edges) for t in trees.representatives) * trees.group.order
    else:
        position = {v: i for i, v in enumerate(compute)}
        trees.sort(key=lambda t: position[t.root])  # stable: keeps packing order per root
        sends = sum(len(t.edges) for t in trees)
    stats = {
        "trees": len(trees),
        "max_height": max(heights),
        "mean_height": round(sum(heights) / len(heights), 3),
        "max_eccentricity": excess[0],
        "height_excess": excess[1],
        "total_sends": sends,
        "logical_arcs": len(logical.capacity),
        "ratio_to_optimum": fraction_text(time_factor / bound.ratio),
        "packed_roots": packed_roots,
    }
    if timings is not None:
        timings.update(
            bound=bounded - started,
            splitting=split - bounded,
            packing=packed - split,
            shape=shaped - packed,
            paths=time.perf_counter() - shaped,
        )
    # U_scaled / k = r* in the topology's integer capacity units (docs/index.md)
    scaled = bound.ratio * topology.integer_capacities()[1] * chunks
    if k is None and scaled.denominator == 1:
        stats = {"U_scaled": scaled.numerator, **stats}
    return Schedule(
        "allgather",
        topology.name,
        compute,
        chunks,
        trees if isinstance(trees, ImageTrees) else tuple(trees),
        cut_ratio=bound.ratio,
        time_factor=time_factor,
        topology_hash=topology.content_hash,
        stats=stats,
        rotation=rotation,
    )


#: Compute nodes from which the optimal trees are first tried on the physical topology by
#: the family's declared symmetry (:mod:`optcoll.schedules.declared_trees`), before the
#: switch splitting, whose logical graph grows with the square of a rail's size
#: (``dgx-h100:256``: 29 CPU s of splitting and 29 of packing).
DECLARED_FROM = 1024


def _pack_declared(
    topology: Topology,
    usable: Topology,
    chunks: int,
    capacity: Mapping[Arc, int],
    bound: CutRatio,
    target: Fraction,
    started: float,
    timings: dict[str, float] | None,
) -> Schedule | None:
    """The compact schedule of the representatives' trees and the declared group at time
    factor ``target`` (r*, or the best of ``chunks`` per root): the mixed-radix trees of
    :func:`~optcoll.schedules.radix_trees.radix_trees` (built, not searched), else the
    greedy of :func:`~optcoll.schedules.declared_trees.declared_trees`; ``None`` when the
    family declares no free group or neither completes its trees at ``target``."""
    group = declared_group(usable)
    if group is None:
        return None
    bounded = time.perf_counter()
    representatives = radix_trees(usable, capacity, chunks, group)
    if representatives is None:
        representatives = declared_trees(usable, capacity, chunks, group)
    packed = time.perf_counter()
    if representatives is None:
        return None
    rotations = tuple(Rotation(m, g) for m, g in zip(group.orders, group.generators, strict=True))
    rotation = rotations[0] if len(rotations) == 1 else Rotations(rotations)
    time_factor = phase_time_factor(topology, representatives, chunks, rotation=rotation)
    if time_factor != target:
        return None
    compute = topology.compute_nodes
    heights = _heights(representatives)
    eccentricity = max(hop_eccentricity(usable, t.root) for t in representatives)
    stats = {
        "trees": len(representatives) * group.order,
        "max_height": max(heights),
        "mean_height": round(sum(heights) / len(heights), 3),
        "max_eccentricity": eccentricity,
        "height_excess": max(heights) - eccentricity,
        "total_sends": sum(len(t.edges) for t in representatives) * group.order,
        "logical_arcs": None,
        "ratio_to_optimum": fraction_text(time_factor / bound.ratio),
        "packed_roots": len(group.representatives),
    }
    scaled = bound.ratio * topology.integer_capacities()[1] * chunks
    if target == bound.ratio and scaled.denominator == 1:
        stats = {"U_scaled": scaled.numerator, **stats}
    if timings is not None:
        timings.update(
            bound=bounded - started,
            splitting=0.0,
            packing=packed - bounded,
            shape=0.0,
            paths=time.perf_counter() - packed,
        )
    return Schedule(
        "allgather",
        topology.name,
        compute,
        chunks,
        ImageTrees(representatives, rotation, compute),
        cut_ratio=bound.ratio,
        time_factor=time_factor,
        topology_hash=topology.content_hash,
        stats=stats,
        rotation=rotation,
    )
