"""Cost model for collective schedules and the baselines they are compared with.

A :class:`Cost` holds the exact, size-independent terms of a method:

* ``time_factor``, the exact bandwidth term: the max over links of the link's load
  divided by its bandwidth, loads counted in units of the data each piece carries.
  ``data(M) = M / N`` for allgather, reduce-scatter and allreduce (``M`` = the full
  vector) and ``data(M) = M`` for broadcast and reduce. No schedule runs faster than
  ``data(M) * time_factor``, and as ``M`` grows its algbw tends to ``N / time_factor``
  (allgather family) or ``1 / time_factor`` (broadcast, reduce): the asymptotic algbw;
* ``alpha``, the latency term: the per-link latencies (from the topology file;
  ``default_latency`` for links that declare none) summed along the deepest
  root-to-leaf path of any tree, once per phase (a ring pays its slowest hop once per
  each of its ``N - 1`` steps);
* what the simulator runs (``schedule``, or ``trees`` in ``phases``), so that every
  size-dependent number (``optcoll compare``'s curves) comes from one model, the event
  simulator (:func:`optcoll.sim.plan.method_times`).

This module used to predict the time at each size with a closed form, ``alpha + depth * o
+ max(data(M) * time_factor, (c * L + depth - 1) * s / b)``. It is exact on a one-way
ring, a pipelined chain and a star, and disagreed with the simulator by up to 1.97x
elsewhere (mi250:2, k = 2, 32 MiB: 382 µs against 195). The cause: the pipeline term
charges every slice on every edge of the deepest tree at the *smallest bandwidth any
tree uses* (``b``: 16 GB/s on mi250:2), although a deep tree crosses that link once or
not at all, so at middle sizes it overestimates by the ratio of the bandwidths; and it
takes the busiest connection's steps (``steps * L * o``) as a maximum beside the rest,
although those steps start only when their data has arrived, so at small sizes it
underestimates (0.78x at 1 MiB). The closed form was retired for the simulator.

Baselines, all on the same topology and routing model (every logical hop is
routed on a maximum-bandwidth path, fewest hops breaking ties; intermediate
nodes only forward; the loads of all hops on a link add up):

* :func:`ring_allgather` - the best ring order over the compute nodes (exact
  search for ``N <= 8``, otherwise grouped order improved by 2-opt), run in one
  direction or split over both directions, whichever is faster;
* :func:`hierarchical_ring_allgather` - NCCL-like: one ring per GPU index of a
  box, each visiting the boxes (``Node.group``) in turn with a rotated entry GPU,
  the data split evenly over the rings;
* :func:`double_binary_tree_allreduce` - NCCL's double binary tree: two binary
  trees over the ranks (compute nodes in declaration order; the second tree
  mirrored for even ``N``, shifted for odd ``N``, so the leaves of one are inner
  nodes of the other), half of the data each, reduce up and broadcast down;
* the fixed ``k = 1`` optimum from :func:`optcoll.schedules.packing.pack_arborescences`;
* allreduce where up to 8 switches reduce or multicast (NVLS, SHARP): the optimal aggregation
  trees, :func:`aggregation_cost` (``in-network``): reduce up, multicast down, pipelined;
  its latency term is the deepest reduce path plus the deepest multicast path of a tree;
* all-to-all: :func:`direct_alltoall` - every pair's piece on its widest path,
  all at once - and :func:`hierarchical_alltoall` - the rail variant: first
  inside each box, GPU ``i`` hands GPU ``j`` the pieces for every box's GPU
  ``j``, then GPU ``j`` of each box sends each other box's GPU ``j`` (same rail)
  the pieces gathered for it; the two phases run one after the other.
  An all-to-all's pieces all travel at once, so its latency term is the longest
  path latency (once per phase). As schedules the simulator executes and the
  verifier checks: :func:`direct_alltoall_schedule` and
  :func:`hierarchical_alltoall_schedule` (the rail routes, relayed without a
  barrier between the phases).

Examples
--------
>>> from optcoll.topologies import build
>>> cost = ring_allgather(build("dgx-a100:1"))
>>> cost.time_factor, round(cost.asymptotic_algbw, 3)
(Fraction(7, 300), 342.857)
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from optcoll.bounds.in_network import has_aggregation_lp
from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.arguments import (
    collective_argument,
    number_argument,
    schedule_argument,
    topology_argument,
)
from optcoll.core.groups_schedule import GroupsSchedule
from optcoll.core.loads import PHASES, phase_time_factor, routes_time_factor
from optcoll.core.process_groups import ProcessGroups
from optcoll.core.schedule import Route, RoutePath, Schedule, Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import SolveError
from optcoll.groups.schedule import groups_collective
from optcoll.schedules.aggregation import aggregation_schedule
from optcoll.schedules.alltoall import _alltoall_schedule
from optcoll.schedules.collectives import _allreduce
from optcoll.schedules.packing import _pack_arborescences
from optcoll.verify.schedule import verify_groups_schedule

__all__ = [
    "DEFAULT_LATENCY",
    "SIZES",
    "Cost",
    "schedule_cost",
    "widest_paths",
    "link_latencies",
    "ring_schedule",
    "ring_floor",
    "RingFloor",
    "hierarchical_ring_schedule",
    "double_binary_trees",
    "ring_allgather",
    "ring_allreduce",
    "hierarchical_ring_allgather",
    "double_binary_tree_allreduce",
    "direct_alltoall",
    "hierarchical_alltoall",
    "direct_alltoall_schedule",
    "hierarchical_alltoall_schedule",
    "compare_methods",
    "compare_group_methods",
    "aggregation_cost",
]

Arc = tuple[str, str]

#: Latency (µs) of a link whose topology entry declares none.
DEFAULT_LATENCY = Fraction(1)

#: Message sizes of the algbw curve: 1 KB to 4 GB, powers of 4 (bytes).
SIZES = tuple(1024 * 4**i for i in range(12))

_DATA_PER_NODE = ("allgather", "reduce_scatter", "allreduce", "alltoall")
_EXACT_RING_SEARCH = 8


@dataclass(frozen=True)
class Cost:
    """The exact terms of one method (see the module docstring).

    Attributes
    ----------
    method : str
        Display name, e.g. ``"optimal (k=13)"`` or ``"ring"``.
    collective : str
    num_compute : int
    time_factor : Fraction
        Exact bandwidth term in 1/(bandwidth unit), per ``data(M)``.
    alpha : Fraction
        Latency term in µs.
    schedule : Schedule, AggregationSchedule, GroupsSchedule or None
        What the simulator runs for this method (groups: every group's schedule at once).
    trees, phases
        Or trees that split the whole message among them, run in ``phases`` (the double
        binary tree).
    """

    method: str
    collective: str
    num_compute: int
    time_factor: Fraction
    alpha: Fraction
    schedule: Any = field(default=None, compare=False, repr=False)
    trees: tuple[Tree, ...] = field(default=(), compare=False, repr=False)
    phases: tuple[bool, ...] = ()

    @property
    def asymptotic_algbw(self) -> float:
        """``lim algbw(M)`` as ``M`` grows: ``N / time_factor`` or ``1 / time_factor``."""
        scale = self.num_compute if self.collective in _DATA_PER_NODE else 1
        return float(scale / self.time_factor)


def link_latencies(topology: Topology, default: Fraction = DEFAULT_LATENCY) -> dict[Arc, Fraction]:
    """Latency (µs) of every directed link: the largest its parallel links declare, ``default``
    for a link that declares none.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> link_latencies(build("dgx-a100:1"))[("b0.gpu0", "b0.nvswitch")]
    Fraction(1, 1)
    """
    declared: dict[Arc, Fraction] = {}
    for link in topology.links:
        value = default if link.latency is None else Fraction(str(link.latency))
        for arc in link.arcs():
            declared[arc] = max(declared.get(arc, Fraction(0)), value)
    return declared


def _path_latency(path: Sequence[str], latency: dict[Arc, Fraction]) -> Fraction:
    return sum((latency[a] for a in zip(path, path[1:], strict=False)), Fraction(0))


def _deepest(trees: Iterable[Tree], latency: dict[Arc, Fraction], *, reverse: bool) -> Fraction:
    """Largest root-to-node latency over all trees (paths walked backwards if ``reverse``)."""
    worst = Fraction(0)
    for tree in trees:
        reach = {tree.root: Fraction(0)}
        pending = list(tree.edges)
        while pending:
            rest = []
            for edge in pending:
                if edge.src in reach:
                    path = edge.path[::-1] if reverse else edge.path
                    reach[edge.dst] = reach[edge.src] + _path_latency(path, latency)
                else:
                    rest.append(edge)
            if len(rest) == len(pending):
                raise SolveError(f"tree rooted at {tree.root!r} is not connected from its root")
            pending = rest
        worst = max(worst, max(reach.values()))
    return worst


def schedule_cost(
    topology: Topology,
    schedule: Schedule,
    method: str | None = None,
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Cost:
    """The cost of a tree schedule: exact link loads, deepest-path latency per phase.

    Examples
    --------
    >>> from optcoll.core.schedule import TreeEdge
    >>> from optcoll.core.topology import TopologyBuilder
    >>> b = TopologyBuilder("pair"); b.compute("a"); b.compute("b")
    >>> b.link("a", "b", 10, bidirectional=True)
    >>> topo = b.build()
    >>> s = Schedule("allreduce", "pair", ("a", "b"), 1, (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
    ...              Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),))))
    >>> c = schedule_cost(topo, s)
    >>> c.time_factor, c.alpha
    (Fraction(1, 5), Fraction(2, 1))
    """
    topology_argument(topology)
    schedule_argument(schedule)
    default_latency = number_argument(default_latency, "default_latency")
    latency = link_latencies(topology, default_latency)
    name = method or f"optimal (k={schedule.k})"
    n = len(schedule.compute_nodes)
    if schedule.collective == "alltoall":
        factor = routes_time_factor(topology, schedule.routes, schedule.k)
        alpha = max(_path_latency(p.path, latency) for r in schedule.routes for p in r.paths)
        return Cost(name, "alltoall", n, factor, alpha, schedule)
    factor, alpha = Fraction(0), Fraction(0)
    for reverse in PHASES[schedule.collective]:
        factor += phase_time_factor(topology, schedule.trees, schedule.k, reverse=reverse)
        alpha += _deepest(schedule.trees, latency, reverse=reverse)
    return Cost(name, schedule.collective, n, factor, alpha, schedule)


# --- routing ---------------------------------------------------------------------------


def widest_paths(topology: Topology, source: str) -> dict[str, tuple[str, ...]]:
    """Maximum-bandwidth paths from ``source`` to every node (fewest hops, then
    lexicographically smallest, breaking ties). Deterministic.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> widest_paths(build("dgx-a100:2"), "b0.gpu0")["b1.gpu0"]
    ('b0.gpu0', 'b0.nic0', 'ib0', 'b1.nic0', 'b1.gpu0')
    """
    out: dict[str, list[tuple[str, Fraction]]] = {}
    for (u, v), c in topology.capacity.items():
        out.setdefault(u, []).append((v, c))
    best: dict[str, tuple[str, ...]] = {}
    heap: list[tuple[Fraction, int, tuple[str, ...]]] = [(Fraction(0), 0, (source,))]
    while heap:
        neg_width, hops, path = heapq.heappop(heap)
        node = path[-1]
        if node in best:
            continue
        best[node] = path
        width = -neg_width if hops else None
        for nxt, c in out.get(node, ()):
            if nxt not in best:
                w = c if width is None else min(width, c)
                heapq.heappush(heap, (-w, hops + 1, path + (nxt,)))
    return best


class _Router:
    """Widest paths between compute nodes, computed once per source."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.paths = {c: widest_paths(topology, c) for c in topology.compute_nodes}
        self._arcs: dict[tuple[str, str], list[Arc]] = {}

    def arcs(self, a: str, b: str) -> list[Arc]:
        key = (a, b)
        if key not in self._arcs:
            path = self.paths[a][b]
            self._arcs[key] = list(zip(path, path[1:], strict=False))
        return self._arcs[key]

    def latency(self, a: str, b: str, latency: dict[Arc, Fraction]) -> Fraction:
        return _path_latency(self.paths[a][b], latency)


def _max_ratio(loads: dict[Arc, Fraction], topology: Topology) -> Fraction:
    capacity = topology.capacity
    return max(load / capacity[arc] for arc, load in loads.items())


# --- rings ------------------------------------------------------------------------------


def _ring_factor(order: Sequence[str], router: _Router, topology: Topology) -> Fraction:
    """Per-step bandwidth factor of a ring: best of one direction or both halves.

    Loads are counted in integer half-hops against the integer capacities, so the
    exhaustive search compares integers; the result is the exact Fraction.
    """
    caps, unit = topology.integer_capacities()
    forward: dict[Arc, int] = {}
    both: dict[Arc, int] = {}
    for a, b in zip(order, [*order[1:], order[0]], strict=True):
        for arc in router.arcs(a, b):
            forward[arc] = forward.get(arc, 0) + 2
            both[arc] = both.get(arc, 0) + 1
        for arc in router.arcs(b, a):
            both[arc] = both.get(arc, 0) + 1
    best_num, best_den = None, 1
    for loads in (forward, both):
        num, den = 0, 1
        for arc, half_hops in loads.items():
            if half_hops * den > num * caps[arc]:
                num, den = half_hops, caps[arc]
        if best_num is None or num * best_den < best_num * den:
            best_num, best_den = num, den
    assert best_num is not None
    return Fraction(best_num, 2 * best_den) / unit


def _best_ring(
    topology: Topology, router: _Router, nodes: Sequence[str] | None = None
) -> tuple[str, ...]:
    """Best ring order over ``nodes`` (default: all compute nodes)."""
    nodes = tuple(topology.compute_nodes if nodes is None else nodes)
    if len(nodes) <= _EXACT_RING_SEARCH:
        first, rest = nodes[0], nodes[1:]
        best, best_cost = None, None
        for perm in itertools.permutations(rest):
            order = (first, *perm)
            cost = _ring_factor(order, router, topology)
            if best_cost is None or cost < best_cost:
                best, best_cost = order, cost
        assert best is not None
        return best
    groups: dict[str | None, list[str]] = {}
    for c in nodes:
        groups.setdefault(topology.node[c].group, []).append(c)
    ring = [c for members in groups.values() for c in members]
    cost = _ring_factor(ring, router, topology)
    improved = True
    while improved:
        improved = False
        for i in range(1, len(ring) - 1):
            for j in range(i + 1, len(ring)):
                candidate = ring[:i] + ring[i : j + 1][::-1] + ring[j + 1 :]
                candidate_cost = _ring_factor(candidate, router, topology)
                if candidate_cost < cost:
                    ring, cost, improved = candidate, candidate_cost, True
    return tuple(ring)


def _ring_alpha(order: Sequence[str], router: _Router, latency: dict[Arc, Fraction]) -> Fraction:
    hops = zip(order, [*order[1:], order[0]], strict=True)
    return max(max(router.latency(a, b, latency), router.latency(b, a, latency)) for a, b in hops)


def ring_allgather(topology: Topology, *, default_latency: Fraction = DEFAULT_LATENCY) -> Cost:
    """Ring allgather on the best ring order found (exact for ``N <= 8``).

    ``N - 1`` steps each move one shard over every hop, so the time factor is
    ``(N - 1) * max over links of (hops through the link) / bandwidth``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> ring_allgather(build("dgx-a100:1")).alpha
    Fraction(14, 1)
    """
    router = _Router(topology)
    order = _best_ring(topology, router)
    n = topology.num_compute
    factor = (n - 1) * _ring_factor(order, router, topology)
    alpha = (n - 1) * _ring_alpha(order, router, link_latencies(topology, default_latency))
    return Cost("ring", "allgather", n, factor, alpha)


def ring_allreduce(topology: Topology, *, default_latency: Fraction = DEFAULT_LATENCY) -> Cost:
    """Ring allreduce: ring reduce-scatter then ring allgather (twice the ring allgather)."""
    ring = ring_allgather(topology, default_latency=default_latency)
    return Cost("ring", "allreduce", ring.num_compute, 2 * ring.time_factor, 2 * ring.alpha)


def _chain(order: Sequence[str], chunks: int, router: _Router) -> Tree:
    """The tree that passes ``order[0]``'s chunks along ``order`` (each hop on its widest path)."""
    return Tree(
        order[0],
        chunks,
        tuple(TreeEdge(a, b, router.paths[a][b]) for a, b in zip(order, order[1:], strict=False)),
    )


def _chain_schedule(
    topology: Topology, rings: Sequence[Sequence[str]], router: _Router, name: str
) -> Schedule:
    """Every root's chunks passed around each ring in ``rings`` (one chunk per ring)."""
    trees = []
    for root in topology.compute_nodes:
        for ring in rings:
            i = list(ring).index(root)
            trees.append(_chain([*ring[i:], *ring[:i]], 1, router))
    factor = phase_time_factor(topology, trees, len(rings))
    return Schedule(
        "allgather",
        topology.name,
        topology.compute_nodes,
        len(rings),
        tuple(trees),
        time_factor=factor,
        topology_hash=topology.content_hash,
        stats={"method": name},
    )


def ring_schedule(topology: Topology) -> Schedule:
    """The ring allgather of :func:`ring_allgather` as a tree schedule: every root's shard
    is passed along the ring (a chain), in one direction (``k = 1``) or half each way
    (``k = 2``), whichever has the smaller time factor (ties: one direction).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("ring:4")
    >>> s = ring_schedule(topo)
    >>> s.k, s.time_factor == ring_allgather(topo).time_factor
    (2, True)
    """
    router = _Router(topology)
    order = _best_ring(topology, router)
    one_way = _chain_schedule(topology, [order], router, "ring")
    both = _chain_schedule(topology, [order, order[:1] + order[1:][::-1]], router, "ring")
    assert one_way.time_factor is not None and both.time_factor is not None
    return both if both.time_factor < one_way.time_factor else one_way


def ring_floor(topology: Topology) -> RingFloor:
    """Lower bounds on every ring schedule of :func:`ring_schedule` (whatever the ring's
    order), without searching for the ring.

    In a ring each root's chunks go around the ring (one way, or half each way), so
    every node ``v`` receives the ``N - 1`` other shards on the paths from its ring
    neighbours, which end on at most two of its in-links, and sends as many on at most
    two of its out-links: the busier of those carries at least its share, which bounds
    the time factor by ``(N - 1) / (b1 + b2)``, ``b1 + b2`` the two largest in-link (or
    out-link) bandwidths of ``v``, at the worst ``v``. A chunk crosses ``N - 1`` ring
    hops one after another (``hops``), each at least the least link latency. ``O(links)``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("ring:4")
    >>> floor = ring_floor(topo)
    >>> floor.time_factor <= ring_schedule(topo).time_factor, floor.hops
    (True, 3)
    """
    n = topology.num_compute
    into: dict[str, list[Fraction]] = {}
    out: dict[str, list[Fraction]] = {}
    for (u, v), c in topology.capacity.items():
        into.setdefault(v, []).append(Fraction(c))
        out.setdefault(u, []).append(Fraction(c))
    worst = Fraction(0)
    for v in topology.compute_nodes:
        for sides in (into, out):
            two = sorted(sides.get(v, ()), reverse=True)[:2]
            if two:
                worst = max(worst, Fraction(n - 1) / sum(two))
    return RingFloor(worst, n - 1)


@dataclass(frozen=True)
class RingFloor:
    """What :func:`ring_floor` gives: a lower bound on every ring's time factor and the
    ring hops every chunk crosses one after another."""

    time_factor: Fraction
    hops: int


def hierarchical_ring_schedule(topology: Topology) -> Schedule | None:
    """The rings of :func:`hierarchical_ring_allgather` as a tree schedule (``k = R`` chunks,
    one per ring); None without two or more equal boxes.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("dgx-a100:2")
    >>> hierarchical_ring_schedule(topo).time_factor == hierarchical_ring_allgather(topo).time_factor
    True
    """
    boxes = _boxes(topology)
    if boxes is None:
        return None
    router = _Router(topology)
    return _chain_schedule(
        topology, _hierarchical_rings(boxes, router), router, "hierarchical ring"
    )


def _boxes(topology: Topology) -> list[list[str]] | None:
    groups: dict[str | None, list[str]] = {}
    for c in topology.compute_nodes:
        groups.setdefault(topology.node[c].group, []).append(c)
    boxes = list(groups.values())
    if None in groups or len(boxes) < 2 or len({len(b) for b in boxes}) != 1:
        return None
    return boxes


def _exit_gpu(router: _Router, box: list[str], target: str, c: int) -> int:
    """Index of the GPU of ``box`` (not ``c``) from which a ring entering at ``c`` leaves."""
    size = len(box)

    def preference(e: int) -> tuple[int, Fraction, bool, int]:
        path = router.paths[box[e]][target]
        width = min(router.topology.capacity[a] for a in zip(path, path[1:], strict=False))
        return (len(path), -width, e != (c - 1) % size, (e - c) % size)

    return min((e for e in range(size) if e != c), key=preference)


def _hierarchical_rings(boxes: list[list[str]], router: _Router) -> list[list[str]]:
    """The ``R`` rings of :func:`hierarchical_ring_allgather`, one per GPU position."""
    per_box = len(boxes[0])
    positions = [boxes[0].index(g) for g in _best_ring(router.topology, router, boxes[0])]
    boxes = [[box[p] for p in positions] for box in boxes]
    rings = []
    for c in range(per_box):
        order = []
        for b, box in enumerate(boxes):
            exit_ = _exit_gpu(router, box, boxes[(b + 1) % len(boxes)][c], c)
            middle = [(c + i) % per_box for i in range(1, per_box)]
            order += [box[c]] + [box[e] for e in middle if e != exit_] + [box[exit_]]
        rings.append(order)
    return rings


def hierarchical_ring_allgather(
    topology: Topology, *, default_latency: Fraction = DEFAULT_LATENCY
) -> Cost | None:
    """NCCL-like multi-box rings, or None when the topology has fewer than two
    equal boxes (compute nodes grouped by ``Node.group``).

    The GPUs of every box are put in the best ring order of the first box (by
    index within the box). Ring ``c`` (one per position) enters every box at its
    ``c``-th GPU, visits the box's other GPUs in ring order and leaves from the exit GPU with the fewest-hop (then
    widest) route to GPU ``c`` of the next box, preferring GPU ``c - 1`` (so on a
    rail-optimised network each ring leaves on the rail it enters by). Each ring
    carries ``1 / R`` of the data (``R`` GPUs per box).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> round(hierarchical_ring_allgather(build("dgx-a100:2")).asymptotic_algbw, 3)
    213.333
    """
    boxes = _boxes(topology)
    if boxes is None:
        return None
    router = _Router(topology)
    latency = link_latencies(topology, default_latency)
    per_box = len(boxes[0])
    loads: dict[Arc, Fraction] = {}
    alpha = Fraction(0)
    for order in _hierarchical_rings(boxes, router):
        for u, v in zip(order, [*order[1:], order[0]], strict=True):
            for arc in router.arcs(u, v):
                loads[arc] = loads.get(arc, Fraction(0)) + Fraction(1, per_box)
        alpha = max(alpha, _ring_alpha(order, router, latency))
    n = topology.num_compute
    return Cost(
        "hierarchical ring",
        "allgather",
        n,
        (n - 1) * _max_ratio(loads, topology),
        (n - 1) * alpha,
    )


# --- all-to-all -------------------------------------------------------------------------


def _pairs_cost(
    pairs: Iterable[tuple[str, str, int]], router: _Router, latency: dict[Arc, Fraction]
) -> tuple[Fraction, Fraction]:
    """Time factor and latency of sending ``count`` pieces from ``a`` to ``b`` for every
    ``(a, b, count)`` at once, each on its widest path."""
    loads: dict[Arc, Fraction] = {}
    alpha = Fraction(0)
    for a, b, count in pairs:
        for arc in router.arcs(a, b):
            loads[arc] = loads.get(arc, Fraction(0)) + count
        alpha = max(alpha, router.latency(a, b, latency))
    return _max_ratio(loads, router.topology), alpha


def direct_alltoall(topology: Topology, *, default_latency: Fraction = DEFAULT_LATENCY) -> Cost:
    """Every pair's piece on its widest path, all at once.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> direct_alltoall(build("dgx-a100:2")).time_factor  # t* is 8/25
    Fraction(4, 5)
    """
    router = _Router(topology)
    compute = topology.compute_nodes
    factor, alpha = _pairs_cost(
        ((a, b, 1) for a in compute for b in compute if a != b),
        router,
        link_latencies(topology, default_latency),
    )
    return Cost(
        "direct", "alltoall", len(compute), factor, alpha, direct_alltoall_schedule(topology)
    )


def hierarchical_alltoall(
    topology: Topology, *, default_latency: Fraction = DEFAULT_LATENCY
) -> Cost | None:
    """The rail all-to-all: inside each box, then across boxes on the same rail;
    None without two or more equal boxes (compute nodes grouped by ``Node.group``).

    With ``B`` boxes of ``R`` GPUs (GPU ``i`` of a box is its ``i``-th compute node),
    phase 1 sends ``B`` pieces from GPU ``i`` to GPU ``j`` of the same box, phase 2
    ``R`` pieces from GPU ``j`` of a box to GPU ``j`` of every other box.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> hierarchical_alltoall(build("dgx-a100:2")).time_factor  # t* is 8/25
    Fraction(11, 30)
    """
    boxes = _boxes(topology)
    if boxes is None:
        return None
    router = _Router(topology)
    latency = link_latencies(topology, default_latency)
    count, size = len(boxes), len(boxes[0])
    inside = _pairs_cost(
        (
            (box[i], box[j], count)
            for box in boxes
            for i in range(size)
            for j in range(size)
            if i != j
        ),
        router,
        latency,
    )
    across = _pairs_cost(
        (
            (boxes[b][j], boxes[c][j], size)
            for j in range(size)
            for b in range(count)
            for c in range(count)
            if b != c
        ),
        router,
        latency,
    )
    return Cost(
        "hierarchical (rail)",
        "alltoall",
        topology.num_compute,
        inside[0] + across[0],
        inside[1] + across[1],
    )


def direct_alltoall_schedule(topology: Topology) -> Schedule:
    """The all-to-all of :func:`direct_alltoall` as routes: every pair's piece (one chunk)
    on its widest path.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("dgx-a100:2")
    >>> direct_alltoall_schedule(topo).time_factor == direct_alltoall(topo).time_factor
    True
    """
    router = _Router(topology)
    compute = topology.compute_nodes
    pairs = [(a, b, router.paths[a][b]) for a in compute for b in compute if a != b]
    return _routes_schedule(topology, pairs, "direct")


def hierarchical_alltoall_schedule(topology: Topology) -> Schedule | None:
    """The rail all-to-all of :func:`hierarchical_alltoall` as routes, one chunk per pair;
    None without two or more equal boxes.

    The piece from GPU ``i`` of box ``p`` to GPU ``j`` of box ``q != p`` goes on the widest
    path to GPU ``j`` of box ``p`` (phase 1), which relays it on the widest path to its
    destination, on rail ``j`` (phase 2; a loop the two paths make is cut out); a piece
    inside a box goes on its widest path. This is how NCCL 2.12's PXN sends across boxes: a
    GPU writes the data over NVLink into a buffer of an intermediate GPU of its box, whose
    NIC sends it (NVIDIA, "Doubling all2all Performance with NVIDIA Collective Communication
    Library 2.12", 2022). Every link carries what the two phases put on it, so the
    time factor (the largest summed load) is at most :func:`hierarchical_alltoall`'s sum of
    the phases' factors, which runs them one after the other.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("dgx-a100:2")
    >>> hierarchical_alltoall_schedule(topo).time_factor, hierarchical_alltoall(topo).time_factor
    (Fraction(8, 25), Fraction(11, 30))
    """
    boxes = _boxes(topology)
    if boxes is None:
        return None
    router = _Router(topology)
    pairs = []
    for box in boxes:
        for src in box:
            for other in boxes:
                for j, dst in enumerate(other):
                    relay = box[j]
                    if dst == src:
                        continue
                    if other is box or relay == src:
                        pairs.append((src, dst, router.paths[src][dst]))
                    else:
                        both = router.paths[src][relay] + router.paths[relay][dst][1:]
                        pairs.append((src, dst, _without_loops(both)))
    return _routes_schedule(topology, pairs, "hierarchical (rail)")


def _without_loops(path: Sequence[str]) -> tuple[str, ...]:
    """``path`` with every loop cut out (a node visited twice keeps its first visit).

    >>> _without_loops("abcbd")
    ('a', 'b', 'd')
    """
    kept: list[str] = []
    for node in path:
        if node in kept:
            del kept[kept.index(node) + 1 :]
        else:
            kept.append(node)
    return tuple(kept)


def _routes_schedule(
    topology: Topology, pairs: Sequence[tuple[str, str, tuple[str, ...]]], name: str
) -> Schedule:
    """An all-to-all schedule of one chunk per pair ``(src, dst, path)``."""
    routes = tuple(Route(a, b, (RoutePath(1, path),)) for a, b, path in pairs)
    return Schedule(
        "alltoall",
        topology.name,
        topology.compute_nodes,
        1,
        (),
        routes=routes,
        time_factor=routes_time_factor(topology, routes, 1),
        topology_hash=topology.content_hash,
        stats={"method": name},
    )


# --- double binary tree -----------------------------------------------------------------


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
    router = _Router(topology)
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
    router = _Router(topology)
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
    factor = Fraction(n, 2) * _max_ratio(loads, topology)
    return Cost(
        "double binary tree",
        "allreduce",
        n,
        factor,
        alpha,
        trees=double_binary_trees(topology),
        phases=(True, False),
    )


# --- comparison ---------------------------------------------------------------------------


def compare_methods(
    topology: Topology,
    collective: str = "allgather",
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
    progress: bool = False,
) -> list[Cost]:
    """The optimal schedule and every applicable baseline, optimal first.

    allgather: optimal (ForestColl's k), fixed k = 1, ring, hierarchical ring
    (multi-box topologies only); allreduce: the same two tree schedules run as
    reduce-scatter + allgather, ring allreduce and the double binary tree;
    alltoall: the optimal routes (:func:`optcoll.schedules.alltoall.alltoall_schedule`),
    direct and hierarchical (rail) all-to-all (the relayed routes of
    :func:`hierarchical_alltoall_schedule`, which the simulator runs; ``optcoll plan``
    has the same candidates).

    Raises
    ------
    SolveError
        For a collective other than allgather, allreduce and alltoall.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [c.method for c in compare_methods(build("dgx-a100:1"))]
    ['optimal (k=1)', 'fixed k=1', 'ring']
    """
    topology_argument(topology)
    collective = collective_argument(collective)
    default_latency = number_argument(default_latency, "default_latency")

    if collective == "alltoall":
        costs = [
            schedule_cost(topology, _alltoall_schedule(topology), default_latency=default_latency),
            direct_alltoall(topology, default_latency=default_latency),
        ]
        rail = hierarchical_alltoall_schedule(topology)
        if rail is None:
            return costs
        method = str(rail.stats["method"])
        return [*costs, schedule_cost(topology, rail, method, default_latency=default_latency)]
    if collective not in ("allgather", "allreduce"):
        raise SolveError(f"compare supports allgather, allreduce and alltoall, got {collective!r}")
    optimal = _pack_arborescences(topology, progress=progress)
    single = _pack_arborescences(topology, 1, progress=progress)
    if collective == "allreduce":
        optimal, single = _allreduce(optimal, topology), _allreduce(single, topology)
    costs = [
        schedule_cost(topology, optimal, default_latency=default_latency),
        schedule_cost(topology, single, "fixed k=1", default_latency=default_latency),
    ]
    for ring in (ring_schedule(topology), hierarchical_ring_schedule(topology)):
        if ring is None or (collective == "allreduce" and ring.stats["method"] != "ring"):
            continue
        if collective == "allreduce":
            ring = _allreduce(ring, topology)
        method = str(ring.stats["method"])
        costs.append(schedule_cost(topology, ring, method, default_latency=default_latency))
    if collective == "allreduce":
        costs.append(double_binary_tree_allreduce(topology, default_latency=default_latency))
        if has_aggregation_lp(topology):
            schedule = aggregation_schedule(topology)
            costs.append(aggregation_cost(topology, schedule, default_latency=default_latency))
    return costs


def aggregation_cost(
    topology: Topology,
    schedule: AggregationSchedule,
    method: str = "in-network",
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Cost:
    """The cost of an in-network allreduce (:mod:`optcoll.core.aggregation`).

    Its exact bandwidth term, per ``data(M) = M / N`` as every allreduce here, is
    ``N`` times the schedule's time factor per ``M``; the latency term the deepest
    (reduce path + multicast path) latency of a tree; the simulator runs ``schedule``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.aggregation import aggregation_schedule
    >>> topo = build("dgx-h100:1,nvls=1")
    >>> cost = aggregation_cost(topo, aggregation_schedule(topo))
    >>> cost.time_factor, cost.alpha, round(cost.asymptotic_algbw, 3)  # GPU -> NVS -> GPU and back
    (Fraction(4, 225), Fraction(4, 1), 450.0)
    """
    topology_argument(topology)
    default_latency = number_argument(default_latency, "default_latency")
    latency = link_latencies(topology, default_latency)
    k, n = schedule.k, len(schedule.compute_nodes)
    load: dict[Arc, int] = {}
    alpha = Fraction(0)
    for tree in schedule.trees:
        deepest = Fraction(0)
        for edges, downward in ((tree.reduce_edges, False), (tree.multicast_edges, True)):
            deepest += _deepest_branch(tree.apex, edges, latency, downward=downward)
            for edge in edges:
                for arc in zip(edge.path, edge.path[1:], strict=False):
                    load[arc] = load.get(arc, 0) + tree.chunks
        alpha = max(alpha, deepest)
    factor = max(Fraction(m, k) / topology.capacity[a] for a, m in load.items())
    return Cost(method, "allreduce", n, n * factor, alpha, schedule)


def _deepest_branch(
    apex: str, edges: Sequence[TreeEdge], latency: dict[Arc, Fraction], *, downward: bool
) -> Fraction:
    """The largest latency sum from a vertex to ``apex`` (in-tree) or back (out-tree)."""
    parent = {(e.dst if downward else e.src): e for e in edges}
    reach: dict[str, Fraction] = {apex: Fraction(0)}
    for start in parent:
        walk = []
        v = start
        while v not in reach:
            walk.append(v)
            edge = parent[v]
            v = edge.src if downward else edge.dst
        for w in reversed(walk):
            edge = parent[w]
            up = edge.src if downward else edge.dst
            reach[w] = reach[up] + _path_latency(edge.path, latency)
    return max(reach.values())


def compare_group_methods(
    groups: ProcessGroups,
    collective: str = "allgather",
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
    form: str | None = None,
) -> list[Cost]:
    """Concurrent process groups: the optimal schedule and a ring in every group, optimal first.

    Each method gives every group a schedule on the graph the group sees
    (:meth:`~optcoll.core.process_groups.ProcessGroups.group_topology`): ``optimal`` the
    trees of :func:`optcoll.groups.schedule.groups_collective` (t*), ``ring``
    :func:`ring_schedule` of each group (run as reduce-scatter + allgather for
    allreduce). All groups run at once, so the bandwidth term is the exact time
    factor of their summed loads (:func:`optcoll.verify.schedule.verify_groups_schedule`,
    which also checks every schedule; ``form``: the LP form of the optimum,
    :data:`optcoll.groups.bounds.FORMS`); the latency and chunking terms are one
    group's (:func:`schedule_cost` on its graph): the group whose cost has the
    lowest asymptotic algbw, the first of those on a tie.

    Raises
    ------
    SolveError
        For a collective other than allgather and allreduce.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.io.process_groups import parse_groups
    >>> costs = compare_group_methods(parse_groups(build("dgx-a100:2"), "strided:8"))
    >>> [(c.method, c.time_factor) for c in costs]
    [('optimal (k=1)', Fraction(1, 25)), ('ring', Fraction(7, 50))]
    """
    from dataclasses import replace

    collective = collective_argument(collective)
    default_latency = number_argument(default_latency, "default_latency")
    if collective not in ("allgather", "allreduce"):
        raise SolveError(f"compare --groups supports allgather and allreduce, got {collective!r}")
    topology = groups.topology
    views = [groups.group_topology(g) for g in range(len(groups.groups))]
    optimal = groups_collective(groups, collective, form=form)
    rings = []
    for view in views:
        ring = ring_schedule(view)
        rings.append(_allreduce(ring, view) if collective == "allreduce" else ring)
    ringed = GroupsSchedule(collective, topology.name, groups.relay, tuple(rings))
    costs = []
    for method, schedule in ((None, optimal), ("ring", ringed)):
        # the cost is one group's; the simulator runs every group's schedule at once
        verdict = verify_groups_schedule(topology, schedule)
        if not verdict.valid or verdict.time_factor is None:
            raise SolveError(f"the groups' {method or 'optimal'} schedule fails: {verdict.reason}")
        each = [
            replace(
                schedule_cost(view, part, method, default_latency=default_latency),
                time_factor=verdict.time_factor,
                schedule=schedule,
            )
            for view, part in zip(views, schedule.groups, strict=True)
        ]
        costs.append(min(each, key=lambda cost: cost.asymptotic_algbw))
    return costs
