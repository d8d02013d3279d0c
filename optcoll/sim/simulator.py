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
  and local reductions cost only their step's overhead (a program's, which moves no bytes
  between GPUs, not even that: :mod:`optcoll.sim.programs`).
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
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from optcoll.core.aggregation import AggregationSchedule, multimem_arcs
from optcoll.core.cost import DEFAULT_LATENCY, link_latencies
from optcoll.core.loads import PHASES
from optcoll.core.schedule import PRIORITIES, Schedule, Tree
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError

__all__ = [
    "DEFAULT_OVERHEAD",
    "DEFAULT_SLICE",
    "MAX_TASKS",
    "SimOptions",
    "Simulation",
    "Network",
    "TaskGraph",
    "simulate",
    "simulate_schedule",
    "simulate_trees",
    "simulate_aggregation",
    "schedule_tasks",
    "tree_tasks",
    "piece_order",
    "aggregation_tasks",
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


@dataclass(frozen=True)
class SimOptions:
    """How the simulator runs a collective, one value for every entry point: the per-step
    ``overhead`` (µs) of a connection, the largest ``slice_bytes`` a chunk is sent in (None:
    whole chunks) and the ``default_latency`` (µs) of links whose topology declares none.
    The public functions take these as keywords and build one ``SimOptions`` from them.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> topo = build("ring:4")
    >>> sim = SimOptions(overhead=0.5)
    >>> network = sim.network(topo)
    >>> graph = schedule_tasks(pack_arborescences(topo), network, 2**20, slice_bytes=sim.slice_bytes)
    >>> sim.run(graph, network, 2**20).time_us == simulate_schedule(
    ...     topo, pack_arborescences(topo), 2**20, **sim.keywords()).time_us
    True
    """

    overhead: float = DEFAULT_OVERHEAD
    slice_bytes: int | None = DEFAULT_SLICE
    default_latency: Fraction = DEFAULT_LATENCY
    #: Switches store and forward each slice (:attr:`Network.store_and_forward`).
    store_and_forward: bool = False

    def keywords(self) -> dict[str, Any]:
        """The options as the keyword arguments of the public functions."""
        return {
            "overhead": self.overhead,
            "slice_bytes": self.slice_bytes,
            "default_latency": self.default_latency,
        }

    def network(self, topology: Topology) -> Network:
        """The network of ``topology`` with these link latencies and switch model."""
        return Network.of(topology, self.default_latency, store_and_forward=self.store_and_forward)

    def run(
        self,
        graph: TaskGraph,
        network: Network,
        size: int,
        *,
        progress: bool = False,
        ties: Sequence[int] | None = None,
        record: bool = False,
    ) -> Simulation:
        """:func:`simulate` ``graph`` with this per-step overhead."""
        return simulate(
            graph, network, size, overhead=self.overhead, progress=progress, ties=ties,
            record=record,
        )  # fmt: skip


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
    and latency (µs), indexed by arc number. ``store_and_forward``: a slice enters its
    next link only once all of it has arrived (ASTRA-sim's analytical congestion-aware
    backend: ``Link::schedule_chunk_transmission`` delivers a chunk ``latency + size /
    bandwidth`` after it starts, and only then does the next device send it on), instead
    of virtual cut-through (its head ``latency`` after it starts), and every link serves
    slices first come first served (``Link::send`` appends to ``pending_chunks``): a
    sender's slices that are ready at the same time in the schedule's order (the order
    gates of :mod:`optcoll.export.chakra` make ASTRA-sim issue them so), a forwarded slice
    after a sender's own that reach the link at the same time."""

    arcs: list[Arc]
    index: dict[Arc, int]
    rate: list[float]
    latency: list[float]
    store_and_forward: bool = False
    multimem: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        topology: Topology,
        default_latency: Fraction = DEFAULT_LATENCY,
        *,
        store_and_forward: bool = False,
    ) -> Network:
        """The network of ``topology`` (bandwidths read as GB/s = 1000 bytes/µs).

        Examples
        --------
        >>> from dataclasses import replace
        >>> from optcoll.topologies import build
        >>> net = Network.of(build("star:2,bw=1"), Fraction(0), store_and_forward=True)
        >>> graph = TaskGraph()
        >>> _ = graph.add(None, net.path(("h0", "hub", "h1")), 1000.0)
        >>> simulate(graph, net, 1000).time_us  # two hops, each 1000 bytes at 1000 bytes/µs
        2.0
        >>> simulate(graph, replace(net, store_and_forward=False), 1000).time_us  # cut-through
        1.0
        """
        latency = link_latencies(topology, default_latency)
        arcs = sorted(topology.capacity)
        return cls(
            arcs,
            {a: i for i, a in enumerate(arcs)},
            [float(topology.capacity[a]) * 1000.0 for a in arcs],
            [float(latency[a]) for a in arcs],
            store_and_forward,
            frozenset(topology.multimem_switches),
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
    overhead is spent, a transfer when its last byte arrives). With ``posted``, things
    that happen at the same time go in the order the tasks were added (:func:`simulate`
    with ``ties`` the task numbers), not in the order they became ready: a step schedule's
    messages of one step are posted in the order of
    :meth:`~optcoll.core.step_schedule.StepSchedule.posted` (:mod:`optcoll.sim.steps`).
    """

    lane: list[int] = field(default_factory=list)
    path: list[tuple[int, ...]] = field(default_factory=list)
    size: list[float] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    order: list[float] = field(default_factory=list)
    successors: list[list[int]] = field(default_factory=list)
    lanes: dict[Any, int] = field(default_factory=dict)
    posted: bool = False

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
    served alike wherever they are (a ``posted`` graph: by default the task numbers).
    Giving the translates of a task under a group of
    automorphisms one key makes the run equivariant, which
    :mod:`optcoll.sim.quotient` relies on to simulate one task per orbit. ``record``
    keeps every transfer (:attr:`Simulation.transfers`).

    Raises
    ------
    ScheduleError
        Tasks that never become ready (a dependency cycle, e.g. a deadlocked program).
    """
    if ties is None and graph.posted:
        ties = range(len(graph))
    lane_of, paths, sizes, order = graph.lane, graph.path, graph.size, graph.order
    waiting, successors = list(graph.waiting), graph.successors
    rate, latency = network.rate, network.latency
    whole = network.store_and_forward  # a slice moves on once all of it has arrived
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
            push(heap, ((finish if whole else begin) + latency[arc], following, i, hop + 1))
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
                # store and forward: first come first served (ASTRA-sim's Link::send), a
                # sender's slices that come together in the schedule's order
                key: Any = (now, math.inf if hop else order[i]) if whole else order[i]
                push(queued[arc], (key, stamp, i, hop))
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
    down_trees: Sequence[Tree] | None = None,
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

    ``down_trees`` (phases ``(True, False)``: an allreduce whose reduce-scatter and
    allgather trees differ, as on a topology whose links lack their reverse): ``trees``
    reduce, then ``down_trees`` broadcast; the ``i``-th slice a root's trees reduce is
    the ``i``-th its down trees broadcast (each root's trees carry as many chunks both
    ways).
    """
    if priority not in PRIORITIES:
        raise ScheduleError(f"unknown priority {priority!r}: one of {', '.join(PRIORITIES)}")
    if down_trees is not None:
        _composed_tree_tasks(
            graph, network, trees, down_trees, chunk, slice_bytes=slice_bytes, priority=priority
        )
        return
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


def _composed_tree_tasks(
    graph: TaskGraph,
    network: Network,
    up_trees: Sequence[Tree],
    down_trees: Sequence[Tree],
    chunk: float,
    *,
    slice_bytes: int | None,
    priority: str,
) -> None:
    """:func:`tree_tasks` with ``down_trees``: ``up_trees`` reduce each slice to its
    root, which then broadcasts it on ``down_trees``."""
    count, piece = _slices(chunk, slice_bytes)
    edges = sum(t.chunks * len(t.edges) for t in (*up_trees, *down_trees))
    _check_size(len(graph) + count * edges, count)
    held: dict[str, list[list[int]]] = {}
    for tree in up_trees:
        place = piece_order(tree, priority, count)
        backward = [(e.dst, e.src, network.path(e.path[::-1])) for e in tree.edges]
        for piece_number in range(tree.chunks * count):
            into: dict[str, list[int]] = {}
            for src, dst, path in reversed(backward):  # leaves first
                task = graph.add(
                    (src, dst), path, piece, into.get(src, ()), place(src, dst, piece_number)
                )
                into.setdefault(dst, []).append(task)
            held.setdefault(tree.root, []).append(into.get(tree.root, []))
    taken: dict[str, int] = {}
    for tree in down_trees:
        place = piece_order(tree, priority, count)
        forward = [(e.src, e.dst, network.path(e.path)) for e in tree.edges]
        for piece_number in range(tree.chunks * count):
            number = taken.get(tree.root, 0)
            if number >= len(held.get(tree.root, ())):
                raise ScheduleError(
                    f"root {tree.root!r} broadcasts more chunks than its reduce trees reduce"
                )
            taken[tree.root] = number + 1
            arrived = {tree.root: held[tree.root][number]}
            for src, dst, path in forward:  # parents before children
                arrived[dst] = [
                    graph.add((src, dst), path, piece, arrived[src], place(src, dst, piece_number))
                ]
    short = sorted(r for r, slices in held.items() if taken.get(r, 0) != len(slices))
    if short:
        raise ScheduleError(
            f"root {short[0]!r} reduces more chunks than its broadcast trees broadcast"
        )


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
    priority: str | None = "progress",
) -> TaskGraph:
    """The task graph of ``schedule`` for an ``size``-byte collective (``priority``: the
    order links serve waiting slices in, :func:`tree_tasks`; None: the order its stats
    record, ``priority`` and a timetable's ``starts``, as ``optcoll plan`` ran it, else
    ``progress``; all-to-all routes are served earliest in the data first).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines import ring_schedule
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
    starts = None
    if priority is None:
        priority = schedule.stats.get("priority", "progress")
        if priority == "timetable":
            priority, starts = "progress", schedule.stats["starts"]
    tree_tasks(
        graph,
        network,
        schedule.trees,
        chunk,
        PHASES[schedule.collective],
        slice_bytes=slice_bytes,
        priority=priority,
        starts=starts,
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
    """Simulate ``schedule`` on ``topology`` for an ``size``-byte collective, in the link
    order its stats record (:func:`schedule_tasks` with ``priority=None``)."""
    sim = SimOptions(overhead, slice_bytes, default_latency)
    network = sim.network(topology)
    graph = schedule_tasks(schedule, network, size, slice_bytes=sim.slice_bytes, priority=None)
    return sim.run(graph, network, size, progress=progress)


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

    At a ``multimem`` (NVLS) switch the GPU that loads the sum issues one step per slice
    (``multimem.ld_reduce`` and ``multimem.st``, one ``glres`` of an MSCCL++ switch
    channel) on a lane of the tree's own, and the bytes move without further steps: its
    children's and its own slice up, the sum down to it, its store up once the sum is
    there, the copies down to its children and back to it. (On one ``multimem`` domain
    plan times the MSCCL++ program itself, :mod:`optcoll.sim.nvls_program`.)

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
    multimem = network.multimem
    edges = sum(
        t.chunks * (len(t.reduce_edges) + len(t.multicast_edges) + len(multimem_arcs(t, multimem)))
        for t in schedule.trees
    )
    _check_size(count * edges, count)
    for number, tree in enumerate(schedule.trees):
        up = _by_depth(tree.apex, [(e.src, e.dst, network.path(e.path)) for e in tree.reduce_edges])
        down = [(e.src, e.dst, network.path(e.path)) for e in tree.multicast_edges]
        down = _by_depth(tree.apex, down, downward=True)
        issue = ("multimem", number)
        for piece_number in range(tree.chunks * count):
            loop = _progress(piece_number, tree.chunks, count)
            into: dict[str, list[int]] = {}
            step: list[int] = []
            for src, dst, path in up:  # leaves first
                if dst in multimem or src in multimem:  # the load's bytes: no steps
                    if not step:
                        step = [graph.add(issue, (), 0.0, (), loop)]
                    lane = None
                    after = [*step, *into.get(src, ())]
                else:
                    lane, after = (src, dst), list(into.get(src, ()))
                if src in multimem:  # the GPU that loads the sum sends its own data up too
                    own = graph.add(None, network.path((dst, src)), piece, step, loop)
                    into.setdefault(src, []).append(own)
                    after = into[src]
                into.setdefault(dst, []).append(graph.add(lane, path, piece, after, loop))
            arrived: dict[str, list[int]] = {tree.apex: into.get(tree.apex, [])}
            for src, dst, path in down:  # parents before children
                lane = None if dst in multimem or src in multimem else (src, dst)
                arrived[dst] = [graph.add(lane, path, piece, arrived[src], loop)]
                if dst in multimem:  # the GPU that stores the sum gets its copy back
                    graph.add(None, network.path((dst, src)), piece, arrived[dst], loop)
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
    >>> round(run.algbw, 1)  # NVLS (multimem): 9/8 M on each 450 GB/s link, at most 400 GB/s
    396.5
    """
    sim = SimOptions(overhead, slice_bytes, default_latency)
    network = sim.network(topology)
    graph = aggregation_tasks(schedule, network, size, slice_bytes=sim.slice_bytes)
    return sim.run(graph, network, size)


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
    sim = SimOptions(overhead, slice_bytes, default_latency)
    network = sim.network(topology)
    graph = TaskGraph()
    chunk = size / sum(t.chunks for t in trees)
    tree_tasks(graph, network, trees, chunk, phases, slice_bytes=sim.slice_bytes)
    return sim.run(graph, network, size)
