"""Chunk-level discrete-event simulation of a collective: a schedule executed on its topology.

The cost model of :mod:`optcoll.sim.cost_model` predicts; this module executes. It turns a tree
schedule (:class:`~optcoll.core.schedule.Schedule`), a pair of reduce/broadcast trees, or any MSCCL
algorithm XML (read by the independent checker's parser, :mod:`optcoll.verify.msccl`) into
transfers with dependencies and runs them on the links of the topology, in a heap-ordered
event loop (pure Python; the same rules in SimPy give the same times at 8-11 times the CPU
time, ``benchmarks/simpy_engine.py``).

The model
---------
* **Data.** An ``M``-byte collective moves chunks of ``data(M) / k`` bytes (``data(M) = M / N``
  for allgather, reduce-scatter, allreduce and all-to-all, ``M`` for broadcast and reduce;
  an MSCCL program's chunk is its buffer over its chunk count). A chunk larger than the
  *slice* (default 512 KiB, NCCL's Simple-protocol step: a 4 MiB buffer,
  ``DEFAULT_BUFFSIZE`` in NVIDIA/nccl ``src/init.cc``, over ``NCCL_STEPS = 8`` slots,
  ``src/include/device.h``) is sent as ``ceil(chunk / slice)`` equal slices, as the runtimes
  loop over a buffer in protocol steps; a relay forwards a slice once it has all of it.
* **Steps.** Every slice sent is a step of its *connection* (the sender-receiver pair of a
  tree edge; the thread block of an MSCCL program), which spends ``overhead`` µs on it
  (default 1 µs), one step at a time; then the bytes enter the network and the connection
  takes its next step (sends are posted; a step that receives waits for its data). Copies
  and local reductions cost only their step's overhead.
* **Links.** Each directed link (parallel links add up) sends one slice at a time at its
  full bandwidth (read as GB/s), with virtual cut-through: a slice's head enters a link
  when it arrives and the link is free, reaches the next node ``latency`` µs later (the
  topology's link latency; ``default_latency``, 1 µs, for a link that declares none), and
  the link stays busy for ``bytes / bandwidth`` or until the slice's tail has come in from
  the previous link, whichever is later.
* **Order.** A busy link or connection serves its waiting slices earliest-in-the-data
  first: each slice's place is how far through its tree's data it lies (pieces taken slice
  by slice across the tree's chunks; an MSCCL program's loop), ties first come first
  served. This is how the runtimes run a schedule: every thread block walks the buffer
  loop by loop in program order, so no tree runs ahead of the others. (Plain first come
  first served lets the roots flood their links with all their data at once and leaves
  the trees that wait behind it short at the end: 4 to 28 % above the bound at 4 GiB on
  the built-ins, against under 1 % in this order.)

Why a link serves one slice at a time rather than a fair share: NVLink and InfiniBand are
lossless, credit-based links whose switches forward packets in order per port at full
rate; a fair share spreads the same bytes over the same busy time. Serving one slice at a
time keeps every link work-conserving, so its busy time is exactly its load over its
bandwidth and the simulated time can never beat the bandwidth bound
``data(M) * time_factor``; and it costs a few heap events per slice and hop, where max-min
fair sharing re-solves every active flow's rate at each event.

Not modelled: connection buffer depth (back-pressure), memory bandwidth of copies and
reductions, protocol headers. The result is the completion time, algbw (``M / time``, as in
``optcoll compare``) and every link's busy time with its utilisation over time.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.schedules.packing import pack_arborescences
>>> topo = build("dgx-a100:1")
>>> run = simulate_schedule(topo, pack_arborescences(topo), 2**30)
>>> round(run.time_us, 1), round(run.algbw, 2)
(3134.7, 342.53)
"""

from __future__ import annotations

import heapq
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.loads import PHASES
from optcoll.core.msccl_runtimes import DEFAULT_RUNTIME, RUNTIMES
from optcoll.core.schedule import PRIORITIES, Schedule, Tree
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError
from optcoll.sim.cost_model import DEFAULT_LATENCY, link_latencies, widest_paths
from optcoll.verify.chakra import check_traces, read_traces
from optcoll.verify.chakra.wire import decode_trace
from optcoll.verify.msccl.limits import STEP_SEMANTICS, Algo, decode
from optcoll.verify.msccl.program import read_program

__all__ = [
    "DEFAULT_OVERHEAD",
    "DEFAULT_SLICE",
    "MAX_TASKS",
    "Simulation",
    "Network",
    "TaskGraph",
    "simulate",
    "simulate_schedule",
    "simulate_trees",
    "simulate_aggregation",
    "simulate_msccl",
    "ChakraTraces",
    "read_chakra",
    "chakra_tasks",
    "schedule_tasks",
    "tree_tasks",
    "piece_order",
    "aggregation_tasks",
    "msccl_tasks",
    "mscclpp_tasks",
    "data_bytes",
]

Arc = tuple[str, str]

#: Per-step overhead (µs) of a connection.
DEFAULT_OVERHEAD = 1.0
#: Largest slice (bytes) a chunk is sent in: NCCL's Simple-protocol step (4 MiB / 8).
DEFAULT_SLICE = 512 * 1024
#: Most steps and transfers one simulation builds (about 0.6 KiB of memory each).
MAX_TASKS = 2_000_000
#: Time bins of the per-link utilisation timeline.
TIMELINE_BINS = 10

_PER_NODE = ("allgather", "reduce_scatter", "allreduce", "alltoall")
_DONE, _FREE, _ISSUE = -1, -2, -3


def data_bytes(collective: str, size: float, num_compute: int) -> float:
    """The bytes one root's data holds: ``M / N`` for the all-node collectives, else ``M``.

    Examples
    --------
    >>> data_bytes("allgather", 1024, 8), data_bytes("broadcast", 1024, 8)
    (128.0, 1024.0)
    """
    return size / num_compute if collective in _PER_NODE else float(size)


@dataclass
class Network:
    """The links as the simulator sees them: per directed link its bandwidth (bytes/µs)
    and latency (µs), indexed by arc number."""

    arcs: list[Arc]
    index: dict[Arc, int]
    rate: list[float]
    latency: list[float]

    @classmethod
    def of(cls, topology: Topology, default_latency: Fraction = DEFAULT_LATENCY) -> Network:
        """The network of ``topology`` (bandwidths read as GB/s = 1000 bytes/µs)."""
        latency = link_latencies(topology, default_latency)
        arcs = sorted(topology.capacity)
        return cls(
            arcs,
            {a: i for i, a in enumerate(arcs)},
            [float(topology.capacity[a]) * 1000.0 for a in arcs],
            [float(latency[a]) for a in arcs],
        )

    def path(self, nodes: Sequence[str]) -> tuple[int, ...]:
        """Arc numbers of the path through ``nodes``."""
        try:
            return tuple(self.index[a] for a in zip(nodes, nodes[1:], strict=False))
        except KeyError as err:
            raise ScheduleError(
                f"path {' -> '.join(nodes)} uses {err.args[0]}, not a link"
            ) from None


@dataclass
class TaskGraph:
    """Steps and transfers with their dependencies (built by the ``*_tasks`` functions).

    Task ``i`` runs on ``lane[i]`` (a connection, -1 for none: no overhead), then sends
    ``size[i]`` bytes along the arcs ``path[i]`` (empty: a local step). It may start once
    every task listing it in ``successors`` has completed (a local step completes when its
    overhead is spent, a transfer when its last byte arrives).
    """

    lane: list[int] = field(default_factory=list)
    path: list[tuple[int, ...]] = field(default_factory=list)
    size: list[float] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    order: list[float] = field(default_factory=list)
    successors: list[list[int]] = field(default_factory=list)
    lanes: dict[Any, int] = field(default_factory=dict)

    def add(
        self,
        lane: Any,
        path: tuple[int, ...],
        size: float,
        after: Iterable[int] = (),
        order: float = 0.0,
    ) -> int:
        """A new task on connection ``lane`` (None: no overhead) after the tasks ``after``;
        ``order`` is how far through its tree's data (or program's loops) it lies, 0 to 1."""
        i = len(self.lane)
        self.order.append(order)
        self.lane.append(-1 if lane is None else self.lanes.setdefault(lane, len(self.lanes)))
        self.path.append(path)
        self.size.append(size)
        self.successors.append([])
        count = 0
        for j in after:
            self.successors[j].append(i)
            count += 1
        self.waiting.append(count)
        return i

    def __len__(self) -> int:
        return len(self.lane)


@dataclass
class Simulation:
    """What one simulated run gives.

    Attributes
    ----------
    size : int
        Message size ``M`` in bytes.
    time_us : float
        Completion time (the last task's).
    busy_us : dict
        Per directed link, the µs it spent sending (its load over its bandwidth).
    timeline : dict
        Per link used, its utilisation in each of :data:`TIMELINE_BINS` equal time bins.
    tasks : int
        Steps and transfers executed.
    transfers : tuple, optional
        With ``record``: per slice and hop, ``(task, hop, begin, end)`` (the link is busy
        from ``begin`` to ``end``), in the order they began.
    """

    size: int
    time_us: float
    busy_us: dict[Arc, float]
    timeline: dict[Arc, list[float]]
    tasks: int
    transfers: tuple[tuple[int, int, float, float], ...] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def algbw(self) -> float:
        """``M / time`` in GB/s."""
        return self.size / self.time_us / 1000.0 if self.time_us > 0 else math.inf

    def utilisation(self) -> dict[Arc, float]:
        """Per link, its busy time over the completion time."""
        return {a: b / self.time_us for a, b in self.busy_us.items()} if self.time_us else {}

    def to_dict(self) -> dict[str, Any]:
        """``{"bytes", "time_us", "algbw", "links": [{"link", "busy_us", "utilisation",
        "timeline"}, ...]}`` (links busiest first)."""
        usage = self.utilisation()
        links = sorted(self.busy_us, key=lambda a: (-self.busy_us[a], a))
        return {
            "bytes": self.size,
            "time_us": round(self.time_us, 4),
            "algbw": round(self.algbw, 3),
            "links": [
                {
                    "link": f"{a[0]}->{a[1]}",
                    "busy_us": round(self.busy_us[a], 4),
                    "utilisation": round(usage[a], 4),
                    "timeline": [round(u, 4) for u in self.timeline[a]],
                }
                for a in links
            ],
        }


def simulate(
    graph: TaskGraph,
    network: Network,
    size: int,
    *,
    overhead: float = DEFAULT_OVERHEAD,
    progress: bool = False,
    ties: Sequence[int] | None = None,
    record: bool = False,
) -> Simulation:
    """Run ``graph`` on ``network`` (see the module docstring for the rules).

    Every task costs one heap event per hop plus one at its completion:
    ``O(E log E)`` for ``E`` events.

    ``ties`` decides between things that happen at the same time and between slices of
    equal place in a queue: None, first come first served; else task ``i``'s key
    ``ties[i]`` (then its hop and the kind of event), so that tasks with equal keys are
    served alike wherever they are. Giving the translates of a task under a group of
    automorphisms one key makes the run equivariant, which
    :mod:`optcoll.sim.quotient` relies on to simulate one task per orbit. ``record``
    keeps every transfer (:attr:`Simulation.transfers`).

    Raises
    ------
    ScheduleError
        Tasks that never become ready (a dependency cycle, e.g. a deadlocked program).
    """
    lane_of, paths, sizes, order = graph.lane, graph.path, graph.size, graph.order
    waiting, successors = list(graph.waiting), graph.successors
    rate, latency = network.rate, network.latency
    lane_busy = [False] * len(graph.lanes)
    lane_queue: list[list[tuple[float, Any, int]]] = [[] for _ in graph.lanes]
    link_busy = [False] * len(network.arcs)
    queued: list[list[tuple[float, Any, int, int]]] = [[] for _ in network.arcs]
    tail = [0.0] * len(graph)
    # every link's busy spans, one entry per slice and hop: arc, begin, end, sending time
    span_arc: list[int] = []
    span_begin: list[float] = []
    span_end: list[float] = []
    span_sending: list[float] = []
    span_task: list[int] = []
    span_hop: list[int] = []
    heap: list[tuple[float, Any, int, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    counter = 0
    # with ties: an event or a queued slice is keyed (when it was pushed, base[i] + code),
    # first come first served as without ties but equal among translates (code < stride:
    # a hop's arrival 4 * hop, the link's release after it 4 * hop + 1, completion and
    # issue last)
    hops = max((len(p) for p in paths), default=0)
    stride = 4 * (hops + 1)
    base = None if ties is None else [t * stride for t in ties]
    done_code, issue_code = 4 * hops + 2, 4 * hops + 3

    def start(i: int, now: float) -> None:
        nonlocal counter
        lane = lane_of[i]
        counter += 1
        if lane < 0:
            stamp = counter if base is None else (now, base[i] + (0 if paths[i] else done_code))
            push(heap, (now, stamp, i, 0 if paths[i] else _DONE))
        elif lane_busy[lane]:
            push(lane_queue[lane], (order[i], counter if base is None else (now, base[i]), i))
        else:
            lane_busy[lane] = True
            stamp = counter if base is None else (now, base[i] + issue_code)
            push(heap, (now + overhead, stamp, i, _ISSUE))

    def transmit(i: int, hop: int, begin: float) -> None:
        nonlocal counter
        path = paths[i]
        arc = path[hop]
        sending = sizes[i] / rate[arc]
        finish = begin + sending
        if hop and tail[i] > finish:
            finish = tail[i]
        link_busy[arc] = True
        span_arc.append(arc)
        span_begin.append(begin)
        span_end.append(finish)
        span_sending.append(sending)
        span_task.append(i)
        span_hop.append(hop)
        tail[i] = finish + latency[arc]
        following: int | tuple[float, int]  # the event's tie key: a counter, or equivariant
        if base is None:
            counter += 3
            push(heap, (finish, counter, arc, _FREE))
            following = counter + 1
        else:
            push(heap, (finish, (begin, base[i] + 4 * hop + 1), arc, _FREE))
            following = (begin, base[i] + (4 * hop + 4 if hop + 1 < len(path) else done_code))
        if hop + 1 < len(path):
            push(heap, (begin + latency[arc], following, i, hop + 1))
        else:
            push(heap, (tail[i], following, i, _DONE))

    ready = [i for i in range(len(graph)) if waiting[i] == 0]
    if ties is not None:
        ready.sort(key=lambda i: ties[i])
    for i in ready:
        start(i, 0.0)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(graph), desc="simulating", unit="task", leave=False)
    done = 0
    end = 0.0
    while heap:
        now, _, i, hop = pop(heap)
        if hop >= 0:  # the head of task i reaches the hop-th link of its path
            arc = paths[i][hop]
            if link_busy[arc]:
                counter += 1
                stamp = counter if base is None else (now, base[i] + 4 * hop)
                push(queued[arc], (order[i], stamp, i, hop))
            else:
                transmit(i, hop, now)
        elif hop == _FREE:  # link i is free: the waiting slice of the earliest loop goes
            if queued[i]:
                _, _, j, h = pop(queued[i])
                transmit(j, h, now)
            else:
                link_busy[i] = False
        elif hop == _ISSUE:  # task i's step is done: its connection takes the next step
            lane = lane_of[i]
            counter += 2
            if lane_queue[lane]:
                _, _, j = pop(lane_queue[lane])
                stamp = counter if base is None else (now, base[j] + issue_code)
                push(heap, (now + overhead, stamp, j, _ISSUE))
            else:
                lane_busy[lane] = False
            stamp = counter + 1 if base is None else (now, base[i] + (0 if paths[i] else done_code))
            push(heap, (now, stamp, i, 0 if paths[i] else _DONE))
        else:  # task i is complete
            done += 1
            end = now
            if bar is not None and done % 4096 == 0:
                bar.update(4096)
            for j in successors[i]:
                waiting[j] -= 1
                if waiting[j] == 0:
                    start(j, now)
    if bar is not None:
        bar.close()
    if done < len(graph):
        raise ScheduleError(
            f"{len(graph) - done} of {len(graph)} steps never became ready (a dependency cycle: "
            "the program deadlocks; optcoll check-xml finds where)"
        )
    if not math.isfinite(end):
        raise ScheduleError(
            "the simulated time is beyond floating-point range; give bandwidths in another "
            "bandwidth_unit so that they lie within about 1e-300 to 1e300"
        )
    busy, timeline = _link_usage(network, (span_arc, span_begin, span_end, span_sending), end)
    transfers = (
        tuple(zip(span_task, span_hop, span_begin, span_end, strict=True)) if record else None
    )
    return Simulation(size, end, busy, timeline, len(graph), transfers)


def _link_usage(
    network: Network,
    spans: tuple[list[int], list[float], list[float], list[float]],
    end: float,
) -> tuple[dict[Arc, float], dict[Arc, list[float]]]:
    """Per link used, its busy time and its utilisation per time bin (each span's sending
    time spread evenly over the span), from the spans of every link at once."""
    import numpy as np

    arc = np.array(spans[0], dtype=np.intp)
    begin, finish, sending = (np.array(column, dtype=float) for column in spans[1:])
    links = len(network.arcs)
    busy = np.bincount(arc, weights=sending, minlength=links)
    width = np.maximum(finish - begin, 1e-300)
    edges = np.linspace(0.0, end, TIMELINE_BINS + 1)
    done = np.stack(
        [
            np.bincount(arc, weights=sending * np.clip((e - begin) / width, 0, 1), minlength=links)
            for e in edges
        ]
    )
    per_bin = np.diff(done, axis=0) / (end / TIMELINE_BINS) if end > 0 else done[1:] * 0.0
    used = np.unique(arc)
    return (
        {network.arcs[a]: float(busy[a]) for a in used},
        {network.arcs[a]: [float(u) for u in per_bin[:, a]] for a in used},
    )


def _slices(chunk: float, slice_bytes: int | None) -> tuple[int, float]:
    """How many slices a chunk of ``chunk`` bytes is sent in, and their size."""
    count = 1 if slice_bytes is None or chunk <= slice_bytes else math.ceil(chunk / slice_bytes)
    return count, chunk / count


def _check_size(tasks: int, count: int) -> None:
    """Refuse a task graph beyond :data:`MAX_TASKS` (it would not fit in memory)."""
    if tasks > MAX_TASKS:
        raise ScheduleError(
            f"simulating this needs {tasks:,} steps ({count} slices per chunk), above the "
            f"limit of {MAX_TASKS:,}: use a schedule with fewer chunks (optcoll trees -k), "
            "a larger --slice or a smaller size"
        )


def _progress(number: int, chunks: int, count: int) -> float:
    """Where piece ``number`` (chunk-major: slice ``number % count`` of chunk
    ``number // count``) lies in order of sending, slice by slice across the chunks, as a
    fraction of the ``chunks * count`` pieces.

    >>> [_progress(n, 2, 2) for n in range(4)]
    [0.0, 0.5, 0.25, 0.75]
    """
    return ((number % count) * chunks + number // count) / (chunks * count)


def tree_tasks(
    graph: TaskGraph,
    network: Network,
    trees: Sequence[Tree],
    chunk: float,
    phases: Sequence[bool],
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
    priority: str = "progress",
    starts: Sequence[Sequence[float]] | None = None,
) -> None:
    """Add the transfers of ``trees`` (``chunk`` bytes per chunk) to ``graph``.

    ``priority`` is the order in which a busy link or connection serves its waiting
    slices (:data:`PRIORITIES`): ``"progress"`` earliest in the tree's data first;
    ``"depth"`` the slice with the most tree edges still ahead of it first (below its
    receiver, or up to the root in a reverse phase), then earliest in the data;
    ``"progress-depth"`` earliest in the data, then the most edges ahead. ``starts``
    (per tree, a time per edge, e.g. a :class:`~optcoll.sim.timetable.Timetable`'s)
    overrides ``priority``: a link serves its slices in the order of those times.

    Each phase runs every tree forward (the root's data down to every node) or, when
    ``True``, in reverse (each node sends its partial sum up once its children's have
    arrived); a later phase starts per slice where the earlier one ended at the root.
    """
    if priority not in PRIORITIES:
        raise ScheduleError(f"unknown priority {priority!r}: one of {', '.join(PRIORITIES)}")
    count, piece = _slices(chunk, slice_bytes)
    _check_size(
        len(graph) + count * len(phases) * sum(t.chunks * len(t.edges) for t in trees), count
    )
    up, down = any(phases), not all(phases)
    for number, tree in enumerate(trees):
        place = piece_order(tree, priority, count, None if starts is None else starts[number])
        forward = [(e.src, e.dst, network.path(e.path)) for e in tree.edges] if down else []
        backward = [(e.dst, e.src, network.path(e.path[::-1])) for e in tree.edges] if up else []
        for piece_number in range(tree.chunks * count):
            at_root: list[int] = []
            for reverse in phases:
                if reverse:
                    into: dict[str, list[int]] = {}
                    for src, dst, path in reversed(backward):  # leaves first
                        task = graph.add(
                            (src, dst), path, piece, into.get(src, ()),
                            place(src, dst, piece_number),
                        )  # fmt: skip
                        into.setdefault(dst, []).append(task)
                    at_root = into.get(tree.root, [])
                else:
                    arrived: dict[str, list[int]] = {tree.root: at_root}
                    for src, dst, path in forward:  # parents before children
                        arrived[dst] = [
                            graph.add(
                                (src, dst),
                                path,
                                piece,
                                arrived[src],
                                place(src, dst, piece_number),
                            )  # fmt: skip
                        ]
                    at_root = []


def piece_order(
    tree: Tree, priority: str, count: int, starts: Sequence[float] | None = None
) -> Callable[[str, str, int], float]:
    """The place in its link's queue of piece ``number`` of ``tree`` sent from ``src`` to
    ``dst`` (either way along a tree edge), as :func:`tree_tasks` orders it: pieces are
    numbered chunk-major (slice ``number % count`` of the tree's chunk ``number // count``);
    ``starts`` (a timetable's start time per edge) overrides ``priority``.

    Examples
    --------
    >>> from optcoll.core.schedule import TreeEdge
    >>> tree = Tree("a", 2, (TreeEdge("a", "b", ("a", "b")),))
    >>> place = piece_order(tree, "progress", 2)
    >>> [place("a", "b", n) for n in range(4)]  # slice by slice across the chunks
    [0.0, 0.5, 0.25, 0.75]
    >>> piece_order(tree, "depth", 1)("b", "a", 0), piece_order(tree, "progress", 1, [7.5])("a", "b", 1)
    (-1.0, 7.5)
    """
    ahead, spread = _ranks(tree, priority, tree.chunks * count)
    if starts is not None:  # a timetable: each edge's start time is its place
        ahead = {(e.src, e.dst): t for e, t in zip(tree.edges, starts, strict=True)}
        ahead.update({(e.dst, e.src): t for e, t in zip(tree.edges, starts, strict=True)})
        spread = 0.0

    def place(src: str, dst: str, number: int) -> float:
        # how far through the tree's data this piece is: links serve the earliest first
        return ahead.get((src, dst), 0.0) + spread * _progress(number, tree.chunks, count)

    return place


def _ranks(tree: Tree, priority: str, pieces: int) -> tuple[dict[Arc, float], float]:
    """Each tree edge's rank under ``priority`` (keyed by sender and receiver, both
    directions) and the weight of a piece's place in the data (``pieces`` per tree):
    a slice's place in its link's queue is ``rank + weight * place``."""
    if priority == "progress":
        return {}, 1.0
    height, depth = _reach(tree)
    # "depth": edges ahead first, then the data; "progress-depth": the data first, the
    # edges ahead splitting the gap between one piece's place and the next
    scale = 1.0 if priority == "depth" else 1.0 / (pieces * (max(height.values()) + 2))
    ranks: dict[Arc, float] = {}
    for e in tree.edges:
        ranks[(e.src, e.dst)] = -scale * (height[e.dst] + 1)
        ranks[(e.dst, e.src)] = -scale * depth[e.src] - scale
    return ranks, 1.0


def _reach(tree: Tree) -> tuple[dict[str, int], dict[str, int]]:
    """Per node of ``tree``: the most edges below it (its subtree's height) and the edges
    from the root to it (its depth)."""
    depth = {tree.root: 0}
    for e in tree.edges:  # parents before children
        depth[e.dst] = depth[e.src] + 1
    height = dict.fromkeys(depth, 0)
    for e in reversed(tree.edges):
        height[e.src] = max(height[e.src], height[e.dst] + 1)
    return height, depth


def schedule_tasks(
    schedule: Schedule,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
    priority: str = "progress",
) -> TaskGraph:
    """The task graph of ``schedule`` for an ``size``-byte collective (``priority``: the
    order links serve waiting slices in, :func:`tree_tasks`; all-to-all routes are served
    earliest in the data first).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.sim.cost_model import ring_schedule
    >>> topo = build("ring:4")
    >>> len(schedule_tasks(ring_schedule(topo), Network.of(topo), 4096))  # 4 roots x 2 ways x 3 hops
    24
    """
    graph = TaskGraph()
    data = data_bytes(schedule.collective, size, len(schedule.compute_nodes))
    chunk = data / schedule.k
    if schedule.collective == "alltoall":
        count, piece = _slices(chunk, slice_bytes)
        _check_size(count * sum(p.chunks for r in schedule.routes for p in r.paths), count)
        for route in schedule.routes:
            for p in route.paths:
                arcs = network.path(p.path)
                for piece_number in range(p.chunks * count):
                    progress = _progress(piece_number, p.chunks, count)
                    graph.add((route.src, route.dst), arcs, piece, (), progress)
        return graph
    tree_tasks(
        graph,
        network,
        schedule.trees,
        chunk,
        PHASES[schedule.collective],
        slice_bytes=slice_bytes,
        priority=priority,
    )
    return graph


def simulate_schedule(
    topology: Topology,
    schedule: Schedule,
    size: int,
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
    progress: bool = False,
) -> Simulation:
    """Simulate ``schedule`` on ``topology`` for an ``size``-byte collective."""
    network = Network.of(topology, default_latency)
    graph = schedule_tasks(schedule, network, size, slice_bytes=slice_bytes)
    return simulate(graph, network, size, overhead=overhead, progress=progress)


def aggregation_tasks(
    schedule: AggregationSchedule,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
) -> TaskGraph:
    """The task graph of an in-network allreduce (:mod:`optcoll.core.aggregation`).

    Each tree's ``M / k``-byte chunks go slice by slice: up the reduce edges (a vertex,
    compute node or reducing switch, sends its sum once its children's have arrived), then
    down the multicast edges from the apex (a vertex forwards to each child once its
    parent's copy has arrived). A switch's summing and copying cost its step's overhead.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.aggregation import aggregation_schedule
    >>> topo = build("star:4,sharp=1")
    >>> len(aggregation_tasks(aggregation_schedule(topo), Network.of(topo), 4096))  # 4 up, 4 down
    8
    """
    graph = TaskGraph()
    count, piece = _slices(size / schedule.k, slice_bytes)
    edges = sum(t.chunks * (len(t.reduce_edges) + len(t.multicast_edges)) for t in schedule.trees)
    _check_size(count * edges, count)
    for tree in schedule.trees:
        up = _by_depth(tree.apex, [(e.src, e.dst, network.path(e.path)) for e in tree.reduce_edges])
        down = [(e.src, e.dst, network.path(e.path)) for e in tree.multicast_edges]
        down = _by_depth(tree.apex, down, downward=True)
        for piece_number in range(tree.chunks * count):
            loop = _progress(piece_number, tree.chunks, count)
            into: dict[str, list[int]] = {}
            for src, dst, path in up:  # leaves first
                into.setdefault(dst, []).append(
                    graph.add((src, dst), path, piece, into.get(src, ()), loop)
                )
            arrived: dict[str, list[int]] = {tree.apex: into.get(tree.apex, [])}
            for src, dst, path in down:  # parents before children
                arrived[dst] = [graph.add((src, dst), path, piece, arrived[src], loop)]
    return graph


def _by_depth(
    apex: str, edges: list[tuple[str, str, tuple[int, ...]]], *, downward: bool = False
) -> list[tuple[str, str, tuple[int, ...]]]:
    """Edges of an in-tree deepest first, or of an out-tree (``downward``) shallowest first."""
    parent = {(d if downward else s): (s if downward else d) for s, d, _ in edges}

    def depth(v: str) -> int:
        steps = 0
        while v != apex:
            v, steps = parent[v], steps + 1
        return steps

    key = (lambda e: depth(e[1])) if downward else (lambda e: -depth(e[0]))
    return sorted(edges, key=key)


def simulate_aggregation(
    topology: Topology,
    schedule: AggregationSchedule,
    size: int,
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Simulation:
    """Simulate an in-network allreduce of ``size`` bytes (see :func:`aggregation_tasks`).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.aggregation import aggregation_schedule
    >>> topo = build("dgx-h100:1,nvls=1")
    >>> run = simulate_aggregation(topo, aggregation_schedule(topo), 2**30)
    >>> round(run.algbw, 1)  # the cut bound is 450 GB/s
    447.8
    """
    network = Network.of(topology, default_latency)
    graph = aggregation_tasks(schedule, network, size, slice_bytes=slice_bytes)
    return simulate(graph, network, size, overhead=overhead)


def simulate_trees(
    topology: Topology,
    trees: Sequence[Tree],
    size: int,
    phases: Sequence[bool],
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Simulation:
    """Simulate trees that split the whole ``size``-byte message among them (each tree's
    ``chunks`` out of their total), run in ``phases`` (e.g. ``(True, False)``: reduce to
    the roots, then broadcast, as NCCL's double binary tree allreduce does)."""
    network = Network.of(topology, default_latency)
    graph = TaskGraph()
    chunk = size / sum(t.chunks for t in trees)
    tree_tasks(graph, network, trees, chunk, phases, slice_bytes=slice_bytes)
    return simulate(graph, network, size, overhead=overhead)


# --- MSCCL programs ----------------------------------------------------------------------


def msccl_tasks(
    algo: Algo,
    topology: Topology,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
) -> TaskGraph:
    """The task graph of a decoded MSCCL program for a ``size``-byte collective.

    Rank ``r`` is the ``r``-th compute node; a send travels on the widest path between the
    two (:func:`optcoll.sim.cost_model.widest_paths`). The program runs once per slice (its loop),
    every thread block executing its steps in order; the ``i``-th chunk a connection
    (sender, receiver, channel) carries is the ``i``-th its receiver takes; a step with
    ``depid``/``deps`` also waits for that thread block's first ``hasdep`` step at or after
    ``deps``. The message is the buffer ``M``: the output of an allgather, the input of the
    other collectives; its chunk is ``M`` over that buffer's chunks.
    """

    compute = topology.compute_nodes
    if algo.ngpus != len(compute):
        raise ScheduleError(
            f"the program has ngpus={algo.ngpus} but {topology.name} has {len(compute)} "
            "compute nodes"
        )
    buffer = algo.output_chunks if algo.collective == "allgather" else algo.input_chunks
    count, piece = _slices(size / max(buffer, 1), slice_bytes)
    routes: dict[tuple[int, int], tuple[int, ...]] = {}

    def route(src: int, dst: int) -> tuple[int, ...]:
        if (src, dst) not in routes:
            paths = widest_paths(topology, compute[src])
            routes[(src, dst)] = network.path(paths[compute[dst]])
        return routes[(src, dst)]

    blocks = [(g, tb) for g, tbs in sorted(algo.gpus.items()) for _, tb in sorted(tbs.items())]
    _check_size(2 * count * sum(len(tb.steps) for _, tb in blocks), count)
    graph = TaskGraph()
    last: dict[tuple[int, int], list[int]] = {}  # each thread block's latest step
    for loop in range(count):
        step_task: dict[tuple[int, int, int], int] = {}
        sent: dict[tuple[int, int, int], list[int]] = {}
        for gpu, tb in blocks:
            for step in tb.steps:
                sends = STEP_SEMANTICS[step.type][1]
                task = graph.add(
                    ("tb", gpu, tb.id), (), 0.0, last.get((gpu, tb.id), []), loop / count
                )
                step_task[(gpu, tb.id, step.pos)] = task
                if sends and tb.send >= 0:
                    transfer = graph.add(
                        None, route(gpu, tb.send), piece * step.cnt, [task], loop / count
                    )
                    sent.setdefault((gpu, tb.send, tb.chan), []).append(transfer)
                last[(gpu, tb.id)] = [task]
        # receives and dependency flags: extra predecessors, added now that every task exists
        taken: dict[tuple[int, int, int], int] = {}
        for gpu, tb in blocks:
            for step in tb.steps:
                task = step_task[(gpu, tb.id, step.pos)]
                receives = STEP_SEMANTICS[step.type][0]
                if receives and tb.recv >= 0:
                    key = (tb.recv, gpu, tb.chan)
                    n = taken.get(key, 0)
                    taken[key] = n + 1
                    transfers = sent.get(key, [])
                    if n >= len(transfers):
                        raise ScheduleError(
                            f"{step.where()} receives from GPU {tb.recv} on channel {tb.chan}, "
                            "which sends nothing more (run optcoll check-xml)"
                        )
                    _depend(graph, transfers[n], task)
                if step.depid >= 0:
                    flag = _flag_step(algo, gpu, step.depid, step.deps)
                    if flag is None:
                        raise ScheduleError(
                            f"{step.where()} waits for tb {step.depid} step {step.deps}, which "
                            "never sets its flag (run optcoll check-xml)"
                        )
                    _depend(graph, step_task[(gpu, step.depid, flag)], task)
    return graph


#: Packet (LL) ops of MSCCL++ plans: their reads of scratch wait for the packets' flags.
_PACKET_OPS = frozenset("ppkt rppkt cpkt upkt respkt repkt recpkt recspkt".split())


def _packet_tasks(
    graph: TaskGraph,
    op: Any,
    rank: int,
    task: int,
    chunk: float,
    route: Any,
    packets: dict[tuple[int, int], list[int]],
    reads: list[tuple[int, list[tuple[int, int]]]],
) -> None:
    """The transfers of packet op ``op`` (step ``task`` of ``rank``): packets written
    locally (``cpkt``, ``recpkt``'s second output) or sent to a peer's scratch (twice the
    data's bytes: LL packets carry a flag beside each datum), and the scratch chunks whose
    packets it reads (``execution_kernel.hpp``)."""

    def chunks(ref: Any, owner: int) -> list[tuple[int, int]]:
        return [(owner, j) for j in range(ref.index, ref.index + ref.size)]

    name, src, dst = op.name, op.src, op.dst
    read = {"upkt": src[:1], "rppkt": src[:1]}.get(name, src[1:] if name != "ppkt" else ())
    if name == "ppkt" and op.channel_type == "port":
        read = src
    wanted = [c for ref in read for c in chunks(ref, rank)]
    if name not in ("cpkt", "ppkt"):
        reads.append((task, wanted))
    if name == "cpkt" or name in ("recpkt", "recspkt"):
        local = dst[0] if name == "cpkt" else dst[1]
        for cell in chunks(local, rank):
            packets.setdefault(cell, []).append(task)
    for d in dst:
        if not d.remote:
            continue
        sent = []
        count, piece = _slices(2 * d.size * chunk, None)
        for _ in range(count):
            sent.append(graph.add(None, route(rank, d.rank), piece, [task]))
        for cell in chunks(d, d.rank):
            packets.setdefault(cell, []).extend(sent)


def _plan_program(
    ops: Sequence[Any], chunk: float
) -> Iterator[tuple[Any, float, float, tuple[int, int]]]:
    """The ops a plan's thread block runs, in order, each with the byte offset and most
    bytes it moves and its (iteration, iterations) of its loop: a ``pipeline``'s inner ops once
    per unit of its ``num_chunks`` chunks (``ceil(num_chunks chunk / unit_size)`` units,
    ``execution_plan.cc``), other ops once on their whole ranges."""
    o = 0
    while o < len(ops):
        op = ops[o]
        if op.loop is None:
            yield op, 0.0, math.inf, (0, 1)
            o += 1
            continue
        unit, chunks = op.loop
        iterations = max(1, math.ceil(chunks * chunk / unit))
        for i in range(iterations):
            for inner in ops[o + 1 : o + 1 + op.body]:
                yield inner, i * unit, unit, (i, iterations)
        o += 1 + op.body


def _depend(graph: TaskGraph, before: int, task: int) -> None:
    graph.successors[before].append(task)
    graph.waiting[task] += 1


def _flag_step(algo: Algo, gpu: int, tb: int, deps: int) -> int | None:
    """The first step at or after ``deps`` of thread block ``tb`` that sets its flag."""
    block = algo.gpus.get(gpu, {}).get(tb)
    if block is None:
        return None
    for step in block.steps[max(deps, 0) :]:
        if step.hasdep and step.type != "nop":
            return step.pos
    return None


def simulate_msccl(
    source: str,
    topology: Topology,
    size: int,
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
    progress: bool = False,
) -> Simulation:
    """Simulate the MSCCL XML file ``source`` on ``topology`` (see :func:`msccl_tasks`)."""
    algo = read_msccl(source)
    network = Network.of(topology, default_latency)
    graph = msccl_tasks(algo, topology, network, size, slice_bytes=slice_bytes)
    return simulate(graph, network, size, overhead=overhead, progress=progress)


def read_msccl(source: str) -> Algo:
    """Read and decode an MSCCL XML file with the program checker's parser; a file whose
    attributes cannot be decoded is refused with the checker's first finding."""

    decoded = decode(read_program(source), RUNTIMES[DEFAULT_RUNTIME])
    algo, findings = decoded.algo, decoded.findings
    blocking = [f for f in findings if f.kind in ("bounds", "structure")]
    if algo is None or blocking:
        first = (blocking or findings)[0].message if (blocking or findings) else "unreadable"
        raise ScheduleError(f"{source}: cannot be executed: {first}")
    return algo


# --- MSCCL++ execution plans ---------------------------------------------------------------


def mscclpp_tasks(
    plan: Any,
    topology: Topology,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
) -> TaskGraph:
    """The task graph of an MSCCL++ plan (parsed by :mod:`optcoll.verify.mscclpp.plan`).

    Rank ``r`` is the ``r``-th compute node; a GPU writes to a peer over their direct
    link if they have one (peer-to-peer writes are not relayed by other GPUs), else on
    the widest path between them. Every thread block runs its ops in order (one
    step each; a ``pipeline``'s inner ops once per unit); a put sends its chunks (or its
    unit of them) in slices;
    the ``n``-th wait on a channel waits for the transfer of the put before the ``n``-th
    signal of its partner (a ``pws`` signals after its own put); the ``n``-th
    ``sem_acquire`` of a semaphore waits for its ``(n - initial value)``-th ``sem_release``. The message is the
    output of an allgather, the input of the other collectives.
    """
    compute = topology.compute_nodes
    if plan.ranks != len(compute):
        raise ScheduleError(
            f"the plan has {plan.ranks} ranks but {topology.name} has {len(compute)} compute nodes"
        )
    first = plan.gpus[0].chunks
    buffer = first["o"] if plan.collective == "allgather" else first["i"]
    routes: dict[tuple[int, int], tuple[int, ...]] = {}

    def route(src: int, dst: int) -> tuple[int, ...]:
        if (src, dst) not in routes:
            pair = (compute[src], compute[dst])
            direct = pair if pair in topology.capacity else None
            path = direct or widest_paths(topology, pair[0])[pair[1]]
            routes[(src, dst)] = network.path(path)
        return routes[(src, dst)]

    graph = TaskGraph()
    signals: dict[tuple, list[list[int]]] = {}
    waits: list[tuple[int, tuple, int]] = []
    packets: dict[tuple[int, int], list[int]] = {}  # (rank, scratch chunk) -> its writers
    reads: list[tuple[int, list[tuple[int, int]]]] = []
    chunk = size / max(buffer, 1)
    for gpu in plan.gpus:
        for tb in gpu.threadblocks:
            last: list[int] = []
            sent: list[int] = []
            for op, offset, unit, (i, iterations) in _plan_program(tb.ops, chunk):
                task = graph.add(("tb", gpu.rank, tb.id), (), 0.0, last)
                last = [task]
                if op.name in ("put", "pws", "pwsf"):
                    sent = []
                    for d in op.dst:
                        moved = max(0.0, min(d.size * chunk - offset, unit))
                        count, piece = _slices(moved, slice_bytes)
                        for s in range(count):
                            sent.append(
                                graph.add(
                                    None,
                                    route(gpu.rank, d.rank),
                                    piece,
                                    [task],
                                    (i + s / count) / iterations,
                                )
                            )
                    if op.name != "put" and op.channel_type == "port":
                        for peer, ordinal in op.channel_peers:
                            key = ("port", gpu.rank, peer, ordinal)
                            signals.setdefault(key, []).append(sent or [task])
                elif op.name in ("signal", "rlxsignal"):
                    for peer, ordinal in op.channel_peers:
                        key = (op.channel_type, gpu.rank, peer, ordinal)
                        signals.setdefault(key, []).append(sent or [task])
                elif op.name in ("wait", "rlxwait"):
                    for peer, ordinal in op.channel_peers:
                        waits.append((task, (op.channel_type, peer, gpu.rank, ordinal), 0))
                elif op.name in _PACKET_OPS:
                    _packet_tasks(graph, op, gpu.rank, task, chunk, route, packets, reads)
                    sent = []
                elif op.name == "sem_release":
                    for sem in op.semaphores:
                        signals.setdefault(("sem", gpu.rank, sem), []).append([task])
                elif op.name == "sem_acquire":
                    for sem in op.semaphores:
                        waits.append((task, ("sem", gpu.rank, sem), gpu.semaphores[sem]))
    for task, cells in reads:  # a packet is read once its flag is there: once written
        for cell in cells:
            writers = packets.get(cell)
            if writers is None:
                raise ScheduleError(
                    f"rank {cell[0]} reads packets of scratch chunk {cell[1]} that nothing "
                    "writes (run optcoll check-plan)"
                )
            for before in writers:
                _depend(graph, before, task)
    taken: dict[tuple, int] = {}
    for task, key, initial in waits:
        n = taken.get(key, 0) - initial
        taken[key] = taken.get(key, 0) + 1
        if n < 0:  # a semaphore's initial value lets its first acquires through
            continue
        sources = signals.get(key, [])
        if n >= len(sources):
            what = (
                f"a sem_acquire of semaphore {key[2]} of rank {key[1]} has no sem_release"
                if key[0] == "sem"
                else f"a wait on {key[0]} channel {key[3]} of rank {key[2]} to rank "
                f"{key[1]} has no signal"
            )
            raise ScheduleError(f"{what} (run optcoll check-plan)")
        for before in sources[n]:
            _depend(graph, before, task)
    return graph


# --- Chakra execution traces ---------------------------------------------------------------


@dataclass(frozen=True)
class ChakraTraces:
    """Decoded Chakra traces of one collective (:func:`read_chakra`): each rank's nodes, the
    message size and collective their metadata names (None if absent) and the compute nodes
    of the ranks (``optcoll_members``; None: the topology's compute nodes in order)."""

    nodes: tuple[tuple[Any, ...], ...]
    size: int | None
    collective: str | None
    root: int | None
    members: tuple[str, ...] | None


def read_chakra(prefix: str) -> ChakraTraces:
    """Read ``PREFIX.<rank>.et`` with the trace checker's decoder; traces the checker finds
    wrong are refused with its first finding (run ``optcoll check-et``)."""
    raw = read_traces(prefix)
    report = check_traces(raw)
    if not report.ok:
        raise ScheduleError(f"{prefix}: cannot be simulated: {report.findings[0].message}")
    decoded = [decode_trace(data, name) for name, data in raw]
    meta = decoded[0][0]

    def value(name: str) -> Any:
        attr = meta.get(name)
        return None if attr is None else attr.value

    members = value("optcoll_members")
    return ChakraTraces(
        tuple(tuple(nodes) for _, nodes in decoded),
        value("optcoll_bytes"),
        value("collective"),
        value("optcoll_root"),
        None if members is None else tuple(json.loads(members)),
    )


def chakra_tasks(
    traces: ChakraTraces,
    topology: Topology,
    network: Network,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
) -> TaskGraph:
    """The task graph of Chakra traces, run as ASTRA-sim runs them: a node starts once its
    dependencies have finished; a send is a step of its connection (sender, receiver) and then
    a transfer on the widest path between the two (one task, as :func:`tree_tasks` builds a
    tree edge's); a receive finishes when the ``i``-th send of its (source, destination, tag,
    size) arrives (``i`` its place in the receiver's dependency order) and its dependencies
    have finished; a reduction when its dependencies have (neither is a task: no cost). As with MSCCL programs, the traces run once per
    slice: a transfer of ``b`` bytes moves ``b / count`` per loop, ``count`` the slices of the
    largest transfer. A link serves its waiting slices earliest loop first; traces whose
    nodes carry ``optcoll_order`` (as :func:`optcoll.export.chakra.chakra_traces` writes
    sliced traces) are served in that order, then by loop.
    """
    compute = traces.members or tuple(topology.compute_nodes)
    missing = [v for v in compute if v not in topology.compute_nodes]
    if len(compute) != len(traces.nodes) or missing:
        raise ScheduleError(
            f"the traces have {len(traces.nodes)} ranks"
            + (f" on compute nodes {', '.join(missing)} not" if missing else "")
            + f" in {topology.name} ({len(topology.compute_nodes)} compute nodes)"
        )
    kinds = {5: "send", 6: "recv", 4: "comp"}
    sizes = [
        node.get("comm_size").value
        for nodes in traces.nodes
        for node in nodes
        if kinds.get(node.type) == "send"
    ]
    count, _ = _slices(max(sizes, default=1), slice_bytes)
    _check_size(2 * count * sum(len(nodes) for nodes in traces.nodes), count)
    routes: dict[tuple[int, int], tuple[int, ...]] = {}

    def route(src: int, dst: int) -> tuple[int, ...]:
        if (src, dst) not in routes:
            routes[(src, dst)] = network.path(widest_paths(topology, compute[src])[compute[dst]])
        return routes[(src, dst)]

    orders = [_dependency_order(nodes) for nodes in traces.nodes]
    graph = TaskGraph()

    def place(node: Any, loop: int) -> float:
        given = node.get("optcoll_order")
        return loop / count if given is None else given.value * count + loop

    # sends in the order their tasks are made: by optcoll_task where the traces give it (the
    # number tree_tasks gives them, so ties go as there), else rank by rank
    ranked = [(rank, node) for rank, ordered in enumerate(orders) for node in ordered]
    issued = sorted(
        ((rank, node) for rank, node in ranked if kinds[node.type] == "send"),
        key=lambda pair: _task_number(pair[1]),
    )
    for loop in range(count):
        sends: dict[tuple[int, int], int] = {}  # (rank, send id) -> its transfer
        sent: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for rank, node in issued:
            peer = node.get("comm_dst").value
            size = node.get("comm_size").value
            sends[(rank, node.id)] = graph.add(
                ("send", rank, peer), route(rank, peer), size / count, (), place(node, loop)
            )
            sent[(rank, peer, node.get("comm_tag").value, size)].append(sends[(rank, node.id)])
        received: dict[tuple[int, ...], list[tuple[int, int]]] = defaultdict(list)
        for rank, node in ranked:
            if kinds[node.type] == "recv":
                peer, size = node.get("comm_src").value, node.get("comm_size").value
                received[(peer, rank, node.get("comm_tag").value, size)].append((rank, node.id))
        arrival = {
            receive: transfer
            for matched, receives in received.items()
            for transfer, receive in zip(sent[matched], receives, strict=True)
        }
        # a receive or a reduction costs nothing: it finishes with the transfers it waits for
        done: dict[tuple[int, int], set[int]] = {}  # (rank, node id) -> those transfers
        waits: dict[tuple[int, int], set[int]] = {}
        for rank, node in ranked:
            key = (rank, node.id)
            waits[key] = set().union(*(done[(rank, d)] for d in (*node.data_deps, *node.ctrl_deps)))
            if key in sends:
                done[key] = {sends[key]}
            else:
                done[key] = waits[key] | ({arrival[key]} if key in arrival else set())
        for rank, node in issued:
            for before in sorted(waits[(rank, node.id)]):
                _depend(graph, before, sends[(rank, node.id)])
    return graph


def _task_number(node: Any) -> int:
    """A send's ``optcoll_task`` (0 without one: the sort keeps file order)."""
    given = node.get("optcoll_task")
    return 0 if given is None else given.value


def _dependency_order(nodes: Sequence[Any]) -> list[Any]:
    """``nodes`` in dependency order (ties in file order)."""
    by_id = {node.id: node for node in nodes}
    waiting = {node.id: len({*node.data_deps, *node.ctrl_deps}) for node in nodes}
    children: dict[int, list[int]] = defaultdict(list)
    for node in nodes:
        for dep in {*node.data_deps, *node.ctrl_deps}:
            children[dep].append(node.id)
    position = {node.id: i for i, node in enumerate(nodes)}
    queue = [(position[node.id], node.id) for node in nodes if waiting[node.id] == 0]
    heapq.heapify(queue)
    order = []
    while queue:
        _, ident = heapq.heappop(queue)
        order.append(by_id[ident])
        for child in children[ident]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(queue, (position[child], child))
    return order
