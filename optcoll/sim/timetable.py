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

from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError
from optcoll.sim.cost_model import DEFAULT_LATENCY, link_latencies

__all__ = ["Timetable", "greedy_timetable"]


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
) -> Timetable:
    """The greedy allgather timetable of ``chunks_per_node`` chunks of ``chunk_bytes``
    per node (see the module docstring).

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
        upcoming = [t for t in free_at.tolist() if t > now]
        if arrivals:
            upcoming.append(arrivals[0][0])
        if not upcoming:
            raise ScheduleError(f"{topology.name}: some node cannot reach another")
        now = min(upcoming)
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
