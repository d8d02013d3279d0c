"""All-to-all baselines: direct and hierarchical (rail).

:func:`direct_alltoall` sends every pair's piece on its widest path, all at once;
:func:`hierarchical_alltoall` is the rail variant: first inside each box, GPU ``i`` hands
GPU ``j`` the pieces for every box's GPU ``j``, then GPU ``j`` of each box sends each other
box's GPU ``j`` (same rail) the pieces gathered for it; the two phases run one after the
other. An all-to-all's pieces all travel at once, so its latency term is the longest path
latency (once per phase). As schedules the simulator executes and the verifier checks:
:func:`direct_alltoall_schedule` and :func:`hierarchical_alltoall_schedule` (the rail
routes, relayed without a barrier between the phases).

Examples
--------
>>> from optcoll.topologies import build
>>> direct_alltoall(build("dgx-a100:2")).time_factor  # t* is 8/25
Fraction(4, 5)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

from optcoll.core.cost import DEFAULT_LATENCY, Cost, link_latencies
from optcoll.core.loads import routes_time_factor
from optcoll.core.schedule import Route, RoutePath, Schedule
from optcoll.core.topology import Topology
from optcoll.schedules.baselines.routing import Router, equal_boxes, max_ratio

__all__ = [
    "direct_alltoall",
    "hierarchical_alltoall",
    "direct_alltoall_schedule",
    "hierarchical_alltoall_schedule",
]

Arc = tuple[str, str]


def _pairs_cost(
    pairs: Iterable[tuple[str, str, int]], router: Router, latency: dict[Arc, Fraction]
) -> tuple[Fraction, Fraction]:
    """Time factor and latency of sending ``count`` pieces from ``a`` to ``b`` for every
    ``(a, b, count)`` at once, each on its widest path."""
    loads: dict[Arc, Fraction] = {}
    alpha = Fraction(0)
    for a, b, count in pairs:
        for arc in router.arcs(a, b):
            loads[arc] = loads.get(arc, Fraction(0)) + count
        alpha = max(alpha, router.latency(a, b, latency))
    return max_ratio(loads, router.topology), alpha


def direct_alltoall(topology: Topology, *, default_latency: Fraction = DEFAULT_LATENCY) -> Cost:
    """Every pair's piece on its widest path, all at once.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> direct_alltoall(build("dgx-a100:2")).time_factor  # t* is 8/25
    Fraction(4, 5)
    """
    router = Router(topology)
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
    boxes = equal_boxes(topology)
    if boxes is None:
        return None
    router = Router(topology)
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
    router = Router(topology)
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
    boxes = equal_boxes(topology)
    if boxes is None:
        return None
    router = Router(topology)
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
