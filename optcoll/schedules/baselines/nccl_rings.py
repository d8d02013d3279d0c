"""NCCL-like rings: several channels (rings), both directions, each carrying its share.

NCCL does not run one ring: its topology search finds the ring pattern of the highest
bandwidth, repeats it over several *channels* and splits the message evenly over them,
and on full-duplex links the reverse rings use the other direction of every link. This
module builds such a set of channels on any topology and runs it as a tree schedule (each
root's shard passed along every channel, one chunk per channel):

* boxes (``Node.group``, two or more equal ones, e.g. DGX): rail-aligned rings
  (:func:`rail_rings`, one per GPU position: NVLink inside the box, each hop between
  boxes on one rail, as NCCL builds them) or the hierarchical rings of
  :func:`~optcoll.schedules.baselines.ring.hierarchical_ring_schedule`;
* compute nodes linked directly (tori, meshes, rings): edge-disjoint Hamiltonian cycles
  of the links between compute nodes (found greedily, :func:`disjoint_hamiltonian_cycles`),
  each in both directions;
* otherwise: the best single ring (:func:`~optcoll.schedules.baselines.ring.ring_schedule`'s
  order) in both directions.

Of these patterns, each in both directions or in one only, :func:`nccl_rings` keeps the
set of the smallest exact time factor (the most channels on a tie: NCCL runs both
directions), as NCCL keeps its fastest pattern. Every channel carries ``1 / C`` of the data, so on a bidirectional ring of ``N`` nodes an allgather's bandwidth term is
``(N - 1) / N * M / (2 b)``.

Examples
--------
>>> from optcoll.topologies import build
>>> s = nccl_ring_schedule(build("ring:4"))
>>> s.stats["method"], s.k, s.time_factor
('NCCL-like ring (2 channels)', 2, Fraction(3, 200))
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from fractions import Fraction

from optcoll.core.schedule import Schedule
from optcoll.core.topology import Topology
from optcoll.schedules.baselines.ring import best_ring, chain_schedule, hierarchical_rings
from optcoll.schedules.baselines.routing import Router, equal_boxes

__all__ = [
    "nccl_rings",
    "nccl_ring_schedule",
    "nccl_channels",
    "disjoint_hamiltonian_cycles",
    "rail_rings",
    "NCCL_RING",
]

#: The method name of :func:`nccl_ring_schedule` (``{}``: the channels, e.g. ``2 channels``).
NCCL_RING = "NCCL-like ring ({})"

#: Steps one search for a Hamiltonian cycle may take before giving up, and all of
#: :func:`disjoint_hamiltonian_cycles`' searches together.
_SEARCH_STEPS, _TOTAL_STEPS = 2_000, 1_000_000


def _hamiltonian_cycle(
    nodes: Sequence[str], adjacent: dict[str, set[str]], rng: random.Random, budget: list[int]
) -> tuple[str, ...] | None:
    """A Hamiltonian cycle of the graph ``adjacent`` (depth first, the neighbour with the
    fewest free neighbours first: Warnsdorff's rule, ties broken by ``rng``), or None
    within ``_SEARCH_STEPS`` steps (each taken from ``budget[0]``)."""
    start = nodes[0]
    path, on_path = [start], {start}

    def choices(node: str) -> list[str]:  # popped from the end: the fewest onward choices last
        free = sorted(v for v in adjacent[node] if v not in on_path)
        draw = {v: rng.random() for v in free}
        return sorted(free, key=lambda v: (-len(adjacent[v] - on_path), draw[v]))

    stack = [choices(start)]
    for _ in range(_SEARCH_STEPS):
        if not stack or budget[0] <= 0:
            return None
        budget[0] -= 1
        if len(path) == len(nodes):
            if start in adjacent[path[-1]]:
                return tuple(path)
            stack.pop()
            on_path.discard(path.pop())
        elif not stack[-1]:
            stack.pop()
            on_path.discard(path.pop())
        else:
            nxt = stack[-1].pop()
            if nxt not in on_path:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(choices(nxt))
    return None


def disjoint_hamiltonian_cycles(topology: Topology) -> list[tuple[str, ...]]:
    """Edge-disjoint Hamiltonian cycles over the compute nodes on the links between them
    (both directions present); empty when there is none found (e.g. compute nodes linked
    only through switches).

    Greedy and randomised (seeded, so deterministic): a round finds cycles one after
    another on the links still free; rounds repeat, within a step budget, until one finds
    ``min degree // 2`` cycles (no more can exist); the round with the most is kept.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> len(disjoint_hamiltonian_cycles(build("torus:4x4")))
    2
    >>> disjoint_hamiltonian_cycles(build("dgx-a100:1"))
    []
    """
    nodes = topology.compute_nodes
    compute = set(nodes)
    links: dict[str, set[str]] = {v: set() for v in nodes}
    for u, v in topology.capacity:
        if u in compute and v in compute and (v, u) in topology.capacity:
            links[u].add(v)
    most = min((len(n) for n in links.values()), default=0) // 2 if len(nodes) >= 3 else 0
    rng, budget = random.Random(0), [_TOTAL_STEPS]
    best: list[tuple[str, ...]] = []
    while len(best) < most and budget[0] > 0:
        adjacent = {v: set(n) for v, n in links.items()}
        cycles: list[tuple[str, ...]] = []
        while len(cycles) < most:
            cycle = _hamiltonian_cycle(nodes, adjacent, rng, budget)
            if cycle is None:
                break
            cycles.append(cycle)
            for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
                adjacent[a].discard(b)
                adjacent[b].discard(a)
        if len(cycles) > len(best):
            best = cycles
    return best


def rail_rings(boxes: Sequence[Sequence[str]], router: Router) -> list[list[str]] | None:
    """NCCL's rail-aligned rings over equal boxes: ring ``c`` enters box ``b`` at GPU
    ``r_b`` and leaves it from GPU ``r_(b+1)`` to the same GPU of the next box (one rail),
    with ``r = c, c+1, c, c+1, ...`` (an odd number of boxes ends on ``c+2``), visiting the
    box's other GPUs in between in the first box's best ring order; None with fewer than
    two GPUs a box (three for an odd number of boxes).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines.routing import equal_boxes
    >>> topo = build("dgx-h100:2")
    >>> ring = rail_rings(equal_boxes(topo), Router(topo))[0]
    >>> ring[0], ring[7], ring[8], ring[15]
    ('b0.gpu0', 'b0.gpu1', 'b1.gpu1', 'b1.gpu0')
    """
    per_box, count = len(boxes[0]), len(boxes)
    if per_box < 2 or (count % 2 and per_box < 3):
        return None
    order = [list(boxes[0]).index(g) for g in best_ring(router.topology, router, boxes[0])]
    rings = []
    for c in range(per_box):
        rails = [c + b % 2 for b in range(count)]
        if count % 2:
            rails[-1] = c + 2
        ring: list[str] = []
        for b, box in enumerate(boxes):
            entry, leave = rails[b] % per_box, rails[(b + 1) % count] % per_box
            start = order.index(entry)
            middle = [order[(start + i) % per_box] for i in range(1, per_box)]
            ring += [box[entry], *(box[g] for g in middle if g != leave), box[leave]]
        rings.append(ring)
    return rings


def _both_ways(rings: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """Every ring and its reverse (starting at the same node)."""
    return [r for ring in rings for r in (tuple(ring), (ring[0], *ring[1:][::-1]))]


def nccl_rings(topology: Topology) -> list[tuple[str, ...]]:
    """The channels of :func:`nccl_ring_schedule`: the ring orders, each to carry ``1 / C``
    of the data (see the module docstring for how they are chosen).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> len(nccl_rings(build("torus:4x4"))), len(nccl_rings(build("dgx-h100:2")))
    (4, 16)
    """
    return list(_channels(topology)[0])


@functools.lru_cache(maxsize=2)
def _channels(topology: Topology) -> tuple[tuple[tuple[str, ...], ...], Router]:
    """The channels of :func:`nccl_rings` and the routes of their hops (kept for the last
    two topologies: plan asks for each count of channels NCCL runs, and the Hamiltonian
    cycles' search is the slow part)."""
    router = Router(topology)
    patterns: list[tuple[Sequence[Sequence[str]], Router]] = []
    boxes = equal_boxes(topology)
    if boxes is not None:
        rails = rail_rings(boxes, router)
        if rails is not None:
            patterns.append((rails, router))
        patterns.append((hierarchical_rings(boxes, router), router))
    cycles = disjoint_hamiltonian_cycles(topology)
    if cycles:
        hops = [
            h
            for c in cycles
            for a, b in zip(c, [*c[1:], c[0]], strict=True)
            for h in ((a, b), (b, a))
        ]
        patterns.append((cycles, router.direct(hops)))
    if not patterns:
        patterns.append(([best_ring(topology, router)], router))
    options = [
        (ways, route)
        for rings, route in patterns
        for ways in (_both_ways(rings), [tuple(r) for r in rings])
    ]
    rings, route = min(options, key=lambda o: (_factor(topology, *o), -len(o[0])))
    return tuple(tuple(r) for r in rings), route


def _factor(topology: Topology, rings: Sequence[Sequence[str]], router: Router) -> Fraction:
    return chain_schedule(topology, rings, router, "").time_factor or Fraction(0)


#: Per protocol, the threads of one channel (``maxThreads`` of the ring: NVIDIA/nccl
#: ``src/include/device.h``, ``NCCL_LL_MAX_NTHREADS``, ``NCCL_LL128_MAX_NTHREADS``,
#: ``NCCL_SIMPLE_MAX_NTHREADS``; Simple drops to 256 only when the rings' bandwidth is at
#: most PCIe's) and the bytes per thread below which it drops a channel
#: (``threadThresholds``: ``src/include/comm.h`` lines 49-51, times the ranks for ring LL,
#: ``src/graph/tuning.cc`` lines 589-593), at commit
#: ``5067397c2676d5aed50042fc39e5c8ee96eb0027``.
NCCL_THREADS = {"LL": (512, 8), "LL128": (640, 8), "Simple": (512, 64)}


def nccl_channels(channels: int, size: int, ranks: int, protocol: str) -> int:
    """How many of its ``channels`` NCCL's ring runs a ``size``-byte collective on (the
    whole buffer: ``M`` for allgather and reduce-scatter as for allreduce, NCCL's
    ``ncclFuncMaxSendRecvCount``, ``src/include/enqueue.h`` lines 39-41) with
    ``protocol``: fewer while the bytes do not give every thread of every channel its
    threshold. NVIDIA/nccl ``src/enqueue.cc`` (commit ``5067397c``), ``topoGetAlgoInfo``,
    lines 2092-2096: ``while (nBytes < nc * nt * threadThreshold) { if (nc >= 2) nc--;
    else break; }`` (the rule only; the code is this project's).

    Examples
    --------
    >>> nccl_channels(16, 1024, 32, "LL"), nccl_channels(16, 2**20, 32, "LL")  # 131,072 B each
    (1, 8)
    >>> nccl_channels(16, 2**20, 32, "Simple")  # 512 threads x 64 B = 32 KiB per channel
    16
    """
    threads, threshold = NCCL_THREADS[protocol]
    if protocol == "LL":
        threshold *= ranks
    count = channels
    while size < count * threads * threshold and count >= 2:
        count -= 1
    return count


def nccl_ring_schedule(topology: Topology, channels: int | None = None) -> Schedule:
    """NCCL-like rings as an allgather tree schedule (``k = C``, one chunk of every root per
    channel), named ``NCCL-like ring (C channels)``; run it reversed then forward
    (:func:`optcoll.schedules.collectives.allreduce`) for reduce-scatter and allreduce.
    ``channels``: only the first ones (NCCL's count at a size, :func:`nccl_channels`).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> s = nccl_ring_schedule(build("torus:4x4"))
    >>> s.stats["method"], s.time_factor  # every link direction in one channel: 15 / 400
    ('NCCL-like ring (4 channels)', Fraction(3, 80))
    >>> nccl_ring_schedule(build("torus:4x4"), 1).stats["method"]
    'NCCL-like ring (1 channel)'
    """
    rings, router = _channels(topology)
    rings = rings[: channels or len(rings)]
    count = f"{len(rings)} channel{'s' if len(rings) > 1 else ''}"
    return chain_schedule(topology, rings, router, NCCL_RING.format(count))
