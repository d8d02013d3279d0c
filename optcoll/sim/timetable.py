"""A greedy timetable: whole chunks sent link by link as soon as a link is free.

On a direct-connect topology (every node a compute node) an allgather can be planned
the way TACOS does (Won et al., "TACOS: Topology-Aware Collective Algorithm Synthesizer
for Distributed Machine Learning", arXiv 2304.05301): over a time-expanded network,
every link that is free takes a chunk its sender holds and its receiver neither holds
nor already awaits. This module does that in the simulator's model
(:mod:`optcoll.sim.simulator` with no per-step overhead): a link sends one chunk at a
time at its bandwidth, the chunk reaching the receiver the link's latency after its
last byte left. Among the chunks a link could send it takes the one the fewest nodes
hold (the rarest), ties broken by a rotation of the chunk numbers by the receiver, so
neighbours pull different chunks; a receiver's links choose one after another, so no
two of them bring it the same chunk. TACOS picks at random and keeps the best of many
runs; this rule is deterministic.

The first arrival of each chunk at each node forms one arborescence per chunk, so the
timetable is a tree schedule (``k`` = chunks per node, one chunk per tree) that
:func:`optcoll.verify.schedule.verify_schedule` checks like any other, together with
the order in which every link sent its chunks (:class:`Timetable`), which the simulator
replays (:func:`optcoll.sim.simulator.tree_tasks`, ``starts``).

Cost: one pass per in-link position at every event, each ``O(L * C)`` vectorised
(``L`` links, ``C`` chunks), with at most ``C * N`` deliveries.

**Under translations** (``quotient``, :func:`optcoll.sim.quotient.topology_quotient`: a
group acting regularly on the nodes, a torus's or a hypercube's translations) the same
greedy runs equivariantly, so one node's view is the whole timetable: the in-links of
node ``r`` take their positions from their senders' order, a chunk's place among equally
rare ones is its number *as the receiver sees it* (the chunk moved by the element that
takes the receiver to ``r``), and then every link ``g(L)`` does at every moment what ``L``
does, with the translated chunks. Node ``r`` holds chunk ``c`` of root ``u`` exactly when
node ``g(r)`` holds ``g(c)``; a chunk's holders are as many as ``r``'s chunks of the same
number; the sender ``w = g(r)`` of an in-link ``(w, r)`` holds ``c`` when ``r`` holds
``g^-1(c)``. So only ``r``'s in-links are simulated, ``O(d * C)`` per event (``d`` its
in-degree), and the trees of ``r``'s chunks, mapped by the group, are the timetable
(a compact schedule, :class:`~optcoll.core.schedule.ImageTrees`).

Examples
--------
>>> from optcoll.topologies import build
>>> table = greedy_timetable(build("ring:4"), 1000.0, 1)  # 2 hops of 1 µs + 0.01 µs
>>> table.schedule.k, len(table.schedule.trees), round(table.time_us, 3)
(1, 4, 2.02)
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optcoll.core.cost import DEFAULT_LATENCY, link_latencies
from optcoll.core.schedule import ImageTrees, Schedule, Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError
from optcoll.sim.quotient import Quotient

__all__ = ["EQUIVARIANT_ORDERS", "Timetable", "greedy_timetable"]

#: How many orders of the roots the equivariant greedy tries (the first is the nodes'
#: own order, the others seeded permutations), keeping the fastest.
EQUIVARIANT_ORDERS = 8


@dataclass(frozen=True)
class Timetable:
    """A greedy allgather: its tree schedule, per tree the start time (µs) of each edge's
    transfer in the timetable (edge order), and the timetable's completion time."""

    schedule: Schedule
    starts: tuple[tuple[float, ...], ...]
    time_us: float


def greedy_timetable(
    topology: Topology,
    chunk_bytes: float,
    chunks_per_node: int = 1,
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
    quotient: Quotient | None = None,
) -> Timetable:
    """The greedy allgather timetable of ``chunks_per_node`` chunks of ``chunk_bytes``
    per node (see the module docstring); equivariant under ``quotient``'s group when
    given (a group of the topology acting regularly on its nodes): then the fastest by
    its own clock of :data:`EQUIVARIANT_ORDERS` runs, which break ties among equally
    rare chunks by different orders of their roots (the nodes' order, then seeded
    permutations), as TACOS keeps the best of several randomised runs.

    Raises
    ------
    ScheduleError
        A topology with nodes that are not compute nodes (the greedy relays at compute
        nodes only), or one where some node cannot reach another.
    """
    import numpy as np

    compute = list(topology.compute_nodes)
    if len(compute) != len(topology.node):
        raise ScheduleError(
            f"{topology.name}: the greedy timetable needs every node to be a compute node "
            "(a direct-connect topology)"
        )
    if quotient is not None:  # the fastest of a few orders of the roots, by its own clock
        tables = (
            _equivariant_timetable(
                topology, quotient, chunk_bytes, chunks_per_node, default_latency, seed
            )
            for seed in range(EQUIVARIANT_ORDERS)
        )
        return min(tables, key=lambda table: table.time_us)
    n, c = len(compute), chunks_per_node
    number = {name: i for i, name in enumerate(compute)}
    latency = link_latencies(topology, default_latency)
    arcs = sorted(topology.capacity)
    src = np.array([number[u] for u, _ in arcs])
    dst = np.array([number[v] for _, v in arcs])
    sending = np.array([chunk_bytes / (float(topology.capacity[a]) * 1000.0) for a in arcs])
    delay = np.array([float(latency[a]) for a in arcs])
    # in-link position of every arc at its receiver: pass j serves the j-th in-links
    position = np.zeros(len(arcs), dtype=int)
    seen: dict[int, int] = {}
    for i, v in enumerate(dst.tolist()):
        position[i] = seen.get(v, 0)
        seen[v] = position[i] + 1
    passes = [np.flatnonzero(position == j) for j in range(max(seen.values(), default=0))]
    chunks = n * c
    root = np.arange(chunks) % n
    have = np.zeros((n, chunks), dtype=bool)
    have[root, np.arange(chunks)] = True
    pending = np.zeros((n, chunks), dtype=bool)
    holders = np.ones(chunks)
    rotation = (np.arange(chunks)[None, :] - np.arange(n)[:, None]) % chunks
    free_at = np.zeros(len(arcs))
    arrivals: list[tuple[float, int, int, int]] = []  # time, chunk, receiver, arc
    parent: dict[tuple[int, int], tuple[int, float]] = {}  # (chunk, node) -> arc, start
    now, missing = 0.0, chunks * (n - 1)
    while missing:
        while arrivals and arrivals[0][0] <= now:
            _, chunk, v, _ = heapq.heappop(arrivals)
            have[v, chunk], pending[v, chunk] = True, False
            holders[chunk] += 1
            missing -= 1
        for links in passes:
            links = links[free_at[links] <= now]
            if not len(links):
                continue
            u, v = src[links], dst[links]
            wanted = have[u] & ~have[v] & ~pending[v]
            score = np.where(wanted, holders[None, :] * chunks + rotation[v], np.inf)
            pick = score.argmin(axis=1)
            chosen = wanted[np.arange(len(links)), pick]
            for arc, chunk, receiver in zip(
                links[chosen].tolist(), pick[chosen].tolist(), v[chosen].tolist(), strict=True
            ):
                pending[receiver, chunk] = True
                free_at[arc] = now + sending[arc]
                heapq.heappush(arrivals, (free_at[arc] + delay[arc], chunk, receiver, arc))
                parent[(chunk, receiver)] = (arc, now)
        if not missing:
            break
        now = _next_instant(topology, now, free_at, arrivals)
    return _timetable(topology, compute, arcs, parent, c, float(now))


def _timetable(
    topology: Topology,
    compute: list[str],
    arcs: list[tuple[str, str]],
    parent: dict[tuple[int, int], tuple[int, float]],
    chunks_per_node: int,
    end: float,
) -> Timetable:
    """The schedule of the deliveries in ``parent``: one tree per chunk, edges in the
    order they were sent."""
    n = len(compute)
    per_chunk: dict[int, list[tuple[float, int]]] = {}
    for (chunk, _), (arc, start) in parent.items():
        per_chunk.setdefault(chunk, []).append((start, arc))
    trees, starts = [], []
    for chunk in range(n * chunks_per_node):
        sent = sorted(per_chunk.get(chunk, []))
        edges = tuple(TreeEdge(arcs[a][0], arcs[a][1], arcs[a]) for _, a in sent)
        trees.append(Tree(compute[chunk % n], 1, edges))
        starts.append(tuple(t for t, _ in sent))
    schedule = Schedule(
        "allgather",
        topology.name,
        topology.compute_nodes,
        chunks_per_node,
        tuple(trees),
        topology_hash=topology.content_hash,
        stats={"method": "timetable"},
    )
    return Timetable(schedule, tuple(starts), end)


def _equivariant_timetable(
    topology: Topology,
    quotient: Quotient,
    chunk_bytes: float,
    chunks_per_node: int,
    default_latency: Fraction,
    seed: int = 0,
) -> Timetable:
    """The greedy timetable under the translations of ``quotient`` (module docstring):
    node ``r`` (the quotient's root) and its in-links only."""
    import numpy as np

    compute = list(topology.compute_nodes)
    n, c = len(compute), chunks_per_node
    chunks = n * c
    if quotient.nodes[:n] != tuple(compute):
        raise ScheduleError(f"{topology.name}: the group does not number its nodes in order")
    elements = quotient.elements[:, :n]
    inverse = quotient.inverse()[:, :n]  # row g: g^-1 of every node
    r = quotient.root
    carrier = {int(v): g for g, v in enumerate(elements[:, r].tolist())}
    latency = link_latencies(topology, default_latency)
    senders = sorted(
        number for number, v in enumerate(compute) if (v, compute[r]) in topology.capacity
    )
    sending = np.array(
        [
            chunk_bytes / (float(topology.capacity[(compute[w], compute[r])]) * 1000.0)
            for w in senders
        ]
    )
    delay = np.array([float(latency[(compute[w], compute[r])]) for w in senders])
    index = np.arange(chunks)
    # sender w = g(r) holds chunk (u, j) when r holds g^-1 (u, j) = (g^-1(u), j)
    held_by = [inverse[carrier[w]][index % n] + n * (index // n) for w in senders]
    have = np.zeros(chunks, dtype=bool)
    have[r + n * np.arange(c)] = True
    pending = np.zeros(chunks, dtype=bool)
    holders = np.ones(c)  # per chunk number j: how many of r's chunks j it holds
    place = np.arange(chunks)  # r's view of a chunk is its number: the rotation by r
    if seed:  # another order of the roots among equally rare chunks
        roots = np.random.default_rng(seed).permutation(n)
        place = roots[index % n] + n * (index // n)
    free_at = np.zeros(len(senders))
    arrivals: list[tuple[float, int, int]] = []  # time, chunk, sender position
    parent: dict[int, tuple[int, float]] = {}  # chunk -> sender, start
    now, missing = 0.0, chunks - c
    while missing:
        while arrivals and arrivals[0][0] <= now:
            _, chunk, _ = heapq.heappop(arrivals)
            have[chunk], pending[chunk] = True, False
            holders[chunk // n] += 1
            missing -= 1
        for position in range(len(senders)):
            if free_at[position] > now:
                continue
            wanted = have[held_by[position]] & ~have & ~pending
            if not wanted.any():
                continue
            score = np.where(wanted, holders[index // n] * chunks + place, np.inf)
            chunk = int(score.argmin())
            pending[chunk] = True
            free_at[position] = now + sending[position]
            heapq.heappush(arrivals, (free_at[position] + delay[position], chunk, position))
            parent[chunk] = (senders[position], now)
        if not missing:
            break
        now = _next_instant(topology, now, free_at, arrivals)
    # node v = g(r) receives chunk (r, j) as r receives g^-1 (r, j), from g of its sender
    trees, starts = [], []
    for j in range(c):
        sent = []
        for v in range(n):
            if v == r:
                continue
            g = carrier[v]
            w, start = parent[int(inverse[g][r]) + n * j]
            sent.append((start, int(elements[g][w]), v))
        sent.sort()
        edges = tuple(
            TreeEdge(compute[u], compute[v], (compute[u], compute[v])) for _, u, v in sent
        )
        trees.append(Tree(compute[r], 1, edges))
        starts.append(tuple(t for t, _, _ in sent))
    schedule = Schedule(
        "allgather",
        topology.name,
        topology.compute_nodes,
        c,
        ImageTrees(trees, quotient.group, compute),
        topology_hash=topology.content_hash,
        stats={"method": "timetable"},
        rotation=quotient.group,
    )
    # the images come root by root, each root's trees in the representatives' order
    return Timetable(schedule, tuple(starts) * n, float(now))


def _next_instant(
    topology: Topology, now: float, free_at: Any, arrivals: list[tuple[Any, ...]]
) -> float:
    """The greedy's next event after ``now``: a link coming free (``free_at``, a numpy
    array of times) or the first of the ``arrivals`` (a heap of tuples, time first)."""
    upcoming = [t for t in free_at.tolist() if t > now]
    if arrivals:
        upcoming.append(arrivals[0][0])
    if not upcoming:
        raise ScheduleError(f"{topology.name}: some node cannot reach another")
    return float(min(upcoming))
