"""Ring baselines: the best ring over the compute nodes and NCCL-like hierarchical rings.

* :func:`ring_allgather` - the best ring order over the compute nodes (exact search for
  ``N <= 8``, otherwise grouped order improved by 2-opt), run in one direction or split over
  both directions, whichever is faster; :func:`ring_schedule` is it as a tree schedule and
  :func:`ring_floor` bounds every ring without searching;
* :func:`hierarchical_ring_allgather` - NCCL-like: one ring per GPU index of a box, each
  visiting the boxes (``Node.group``) in turn with a rotated entry GPU, the data split
  evenly over the rings; :func:`hierarchical_ring_schedule` is it as a tree schedule.

Examples
--------
>>> from optcoll.topologies import build
>>> cost = ring_allgather(build("dgx-a100:1"))
>>> cost.time_factor, round(cost.asymptotic_algbw, 3)
(Fraction(7, 300), 342.857)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from optcoll.core.cost import DEFAULT_LATENCY, Cost, link_latencies
from optcoll.core.loads import phase_time_factor
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.schedules.baselines.routing import Router, equal_boxes, max_ratio

__all__ = [
    "ring_allgather",
    "ring_allreduce",
    "ring_schedule",
    "ring_floor",
    "RingFloor",
    "hierarchical_ring_allgather",
    "hierarchical_ring_schedule",
    "best_ring",
    "chain_schedule",
    "hierarchical_rings",
]

Arc = tuple[str, str]

_EXACT_RING_SEARCH = 8


def _ring_factor(order: Sequence[str], router: Router, topology: Topology) -> Fraction:
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


def best_ring(
    topology: Topology, router: Router, nodes: Sequence[str] | None = None
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


def _ring_alpha(order: Sequence[str], router: Router, latency: dict[Arc, Fraction]) -> Fraction:
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
    router = Router(topology)
    order = best_ring(topology, router)
    n = topology.num_compute
    factor = (n - 1) * _ring_factor(order, router, topology)
    alpha = (n - 1) * _ring_alpha(order, router, link_latencies(topology, default_latency))
    return Cost("ring", "allgather", n, factor, alpha)


def ring_allreduce(topology: Topology, *, default_latency: Fraction = DEFAULT_LATENCY) -> Cost:
    """Ring allreduce: ring reduce-scatter then ring allgather (twice the ring allgather)."""
    ring = ring_allgather(topology, default_latency=default_latency)
    return Cost("ring", "allreduce", ring.num_compute, 2 * ring.time_factor, 2 * ring.alpha)


def _chain(order: Sequence[str], chunks: int, router: Router) -> Tree:
    """The tree that passes ``order[0]``'s chunks along ``order`` (each hop on its widest path)."""
    return Tree(
        order[0],
        chunks,
        tuple(TreeEdge(a, b, router.paths[a][b]) for a, b in zip(order, order[1:], strict=False)),
    )


def chain_schedule(
    topology: Topology, rings: Sequence[Sequence[str]], router: Router, name: str
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
    router = Router(topology)
    order = best_ring(topology, router)
    one_way = chain_schedule(topology, [order], router, "ring")
    both = chain_schedule(topology, [order, order[:1] + order[1:][::-1]], router, "ring")
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
    boxes = equal_boxes(topology)
    if boxes is None:
        return None
    router = Router(topology)
    return chain_schedule(topology, hierarchical_rings(boxes, router), router, "hierarchical ring")


def _exit_gpu(router: Router, box: list[str], target: str, c: int) -> int:
    """Index of the GPU of ``box`` (not ``c``) from which a ring entering at ``c`` leaves."""
    size = len(box)

    def preference(e: int) -> tuple[int, Fraction, bool, int]:
        path = router.path(box[e], target)
        width = min(router.topology.capacity[a] for a in zip(path, path[1:], strict=False))
        return (len(path), -width, e != (c - 1) % size, (e - c) % size)

    return min((e for e in range(size) if e != c), key=preference)


def hierarchical_rings(boxes: list[list[str]], router: Router) -> list[list[str]]:
    """The ``R`` rings of :func:`hierarchical_ring_allgather`, one per GPU position."""
    per_box = len(boxes[0])
    positions = [boxes[0].index(g) for g in best_ring(router.topology, router, boxes[0])]
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
    boxes = equal_boxes(topology)
    if boxes is None:
        return None
    router = Router(topology)
    latency = link_latencies(topology, default_latency)
    per_box = len(boxes[0])
    loads: dict[Arc, Fraction] = {}
    alpha = Fraction(0)
    for order in hierarchical_rings(boxes, router):
        for u, v in zip(order, [*order[1:], order[0]], strict=True):
            for arc in router.arcs(u, v):
                loads[arc] = loads.get(arc, Fraction(0)) + Fraction(1, per_box)
        alpha = max(alpha, _ring_alpha(order, router, latency))
    n = topology.num_compute
    return Cost(
        "hierarchical ring",
        "allgather",
        n,
        (n - 1) * max_ratio(loads, topology),
        (n - 1) * alpha,
    )
