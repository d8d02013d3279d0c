"""Which schedule to run at which message size: every candidate simulated, a certified gap.

For each message size :func:`plan` simulates every candidate (:mod:`optcoll.sim.simulator`)
and keeps the fastest, with its ratio to a lower bound that no schedule beats in the
simulator's model:

    lower bound (µs) = max(latency bound, data(M) * bound, start-up bound, depth bound,
                           combined bound)

* the **bandwidth bound** ``data(M) * bound``, one per collective
  (:func:`optcoll.schedules.collective_bound.collective_bound`; for an allreduce the largest of
  r*, the partition bound and the reduction cut): ``(M / N) * r*`` for allgather and for
  allreduce (an allreduce of inputs that are zero outside each node's own shard is an
  allgather, so r* bounds every allreduce algorithm; reduce-scatter followed by allgather
  needs ``2 r*``), the reversed topology's r* for reduce-scatter, the min-cut bound times
  ``M`` for broadcast and reduce, ``(M / N) * t*`` for all-to-all
  (:func:`optcoll.schedules.collectives.collective_lower_bound`). A simulated link is busy exactly
  its load over its bandwidth, so a schedule takes at least ``data(M) * time factor``;
* the **latency bound** ``overhead + max over (source, destination)`` of the smallest sum
  of link latencies on a path between them (sources and destinations: every pair of
  compute nodes; from the root for broadcast, to it for reduce): data that must cross from
  one to the other pays at least one step and those latencies;
* the **start-up bound** (:mod:`optcoll.bounds.startup`): cuts whose links carry the data
  that must cross them only after the overhead and the latency from the data's source and
  before the latency to its destination (``docs/bounds_every_size.md``);
* the **depth bound** (:mod:`optcoll.bounds.depth`, topologies whose switches only relay):
  every forwarding step of an element's chain of transfers costs the overhead and a
  latency, and chains that fit in less time cost the links more;
* the **combined bound** (:mod:`optcoll.bounds.combined`, the same topologies): the depth
  bound's LP with the link time counted per layer, so that transfers arriving early cost
  the links only what they can carry by then. :class:`SizeBound` holds the five, exact.

Candidates (those that apply to the collective): the optimal ``k`` (ForestColl's), the
power-of-two ``k``'s :func:`optcoll.schedules.deploy.deployable_schedule` tries (1, 2, 4, ...
up to the first within 1 % of the optimum), of which ``k = 1`` has the fewest chunks
(one tree per root, as :func:`optcoll.schedules.packing.pack_arborescences` builds it), and
every other ``k`` below the largest of those whose packing is closer to the optimum than
every smaller ``k``'s; the ring, the hierarchical ring and NCCL-like rings (several
channels, both directions) as tree schedules (:func:`optcoll.schedules.baselines.ring_schedule`,
:func:`optcoll.schedules.baselines.nccl_ring_schedule`); NCCL's double binary tree (allreduce); on
topologies without switches, reduce + broadcast over spanning trees where they beat
reduce-scatter + allgather and, there on up to 16 nodes, over shallow trees of routed
edges (:mod:`optcoll.schedules.shallow_trees`); where
up to 8 switches reduce or multicast (NVLS, SHARP), the optimal aggregation trees,
``in-network`` (allreduce, :func:`optcoll.schedules.aggregation.aggregation_schedule`) and
NCCL's ``NVLS`` / ``NVLS-tree`` (:func:`optcoll.schedules.baselines.nvls_schedule`), whose
bandwidth bound is the cut bound ``M / lambda`` (:func:`optcoll.bounds.in_network.reduction_cut`:
every allreduce, whatever the switches do), the larger of the two floors; for all-to-all the
optimal routes, ``direct`` (every pair on its widest path) and ``hierarchical (rail)``
(:func:`optcoll.schedules.baselines.hierarchical_alltoall_schedule`); for an allgather on a
direct-connect topology, greedy timetables of 1, 2 and 4 chunks per node
(:mod:`optcoll.sim.timetable`, synthesized for each size); for allgather, reduce-scatter
and allreduce the log-step algorithms (recursive doubling and halving, Rabenseifner,
Bruck, Swing: :mod:`optcoll.schedules.baselines.step_catalogue`), for broadcast and
reduce the direct, binomial and Bine trees and scatter + allgather from the root
(:mod:`optcoll.schedules.baselines.rooted_steps`), step schedules routed
and simulated by :mod:`optcoll.sim.steps`, on up to :data:`STEP_NODES` compute nodes.

:func:`plan` chooses, at each size, the candidate, the order in which each link serves its
waiting slices (:data:`optcoll.sim.simulator.PRIORITIES`, or a timetable's own) and the
slice size (see :func:`plan`).

Examples
--------
>>> from optcoll.topologies import build
>>> rows = plan(build("dgx-a100:1"), "allgather", [1024, 2**30])
>>> [(r.method, round(r.ratio, 3)) for r in rows]  # one NVSwitch: a star from every GPU
[('optimal (k=1)', 1.0), ('optimal (k=1)', 1.0)]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import partial
from typing import Any

from optcoll.bounds.combined import HOLDS_FOR as COMBINED_HOLDS_FOR
from optcoll.bounds.combined import CombinedBound, combined_bound
from optcoll.bounds.depth import HOLDS_FOR as DEPTH_HOLDS_FOR
from optcoll.bounds.depth import DepthBound, depth_bound
from optcoll.bounds.in_network import has_aggregation_lp
from optcoll.bounds.startup import StartupBound
from optcoll.core.aggregation import AggregationSchedule, multimem_arcs
from optcoll.core.arguments import number_argument
from optcoll.core.busbw import bus_factor
from optcoll.core.cost import DEFAULT_LATENCY, Cost, link_latencies
from optcoll.core.loads import PHASES, phase_time_factor, routes_time_factor
from optcoll.core.schedule import (
    ImageTrees,
    Schedule,
    Tree,
    canonical_collective,
    order_stats_error,
)
from optcoll.core.topology import Topology
from optcoll.exceptions import ExportError, ScheduleError
from optcoll.graph.symmetry import latency_orbit_representatives
from optcoll.schedules.aggregation import aggregation_schedule
from optcoll.schedules.baselines import (
    RingFloor,
    direct_alltoall_schedule,
    double_binary_trees,
    hierarchical_alltoall_schedule,
    hierarchical_ring_schedule,
    nccl_ring_schedule,
    nvls_schedule,
    ring_floor,
    ring_schedule,
)
from optcoll.schedules.baselines.routing import (
    equal_boxes,
    grid_axes,
    grid_lines,
    torus_shape,
)
from optcoll.schedules.baselines.step_catalogue import step_schedules
from optcoll.schedules.collective_bound import CollectiveBound, collective_bound
from optcoll.schedules.collectives import (
    build_collective_core,
    collective_phases,
    core_connected,
    from_allgather_trees,
    is_symmetric,
    packing_topology,
    two_tree_sets,
)
from optcoll.schedules.deploy import DEFAULT_TOLERANCE, deployable_schedule
from optcoll.schedules.shallow_trees import reduces_over_shallow_trees, shallow_trees
from optcoll.schedules.spanning_tree_allreduce import (
    reduce_broadcast_trees,
    reduces_over_spanning_trees,
    spanning_trees_beat_rs_ag,
)
from optcoll.sim.cost_model import SIZES
from optcoll.sim.nccl_model import nccl_ring_channels
from optcoll.sim.nvls_program import NvlsProgram, program_quotient, switch_program
from optcoll.sim.quotient import (
    Quotient,
    aggregation_quotient,
    aggregation_quotient_tasks,
    check_expanded,
    schedule_quotient,
    schedule_quotient_tasks,
    topology_quotient,
)
from optcoll.sim.simulator import (
    DEFAULT_OVERHEAD,
    DEFAULT_SLICE,
    MAX_TASKS,
    PRIORITIES,
    Network,
    SimOptions,
    TaskGraph,
    aggregation_tasks,
    data_bytes,
    schedule_tasks,
    tree_tasks,
)
from optcoll.sim.steps import (
    RoutedSteps,
    route_steps,
    step_latency_floor,
    step_task_count,
    step_tasks,
)
from optcoll.sim.timetable import Timetable, greedy_timetable

__all__ = [
    "planned_slice",
    "planned_tasks",
    "PLAN_TASKS",
    "PROGRAM_BUDGET",
    "TIMETABLE_CHUNKS",
    "STEP_NODES",
    "Candidate",
    "SizePlan",
    "candidates",
    "exact_latency_bound",
    "latency_bound",
    "tree_latency_floor",
    "SizeBound",
    "size_bound",
    "method_times",
    "plan",
    "size_bands",
    "schedule_bands",
]

#: Most tasks one simulation of :func:`plan`'s slice search builds (about 12 µs of CPU each).
PLAN_TASKS = 300_000
#: Most compute nodes on which :func:`candidates` offers the log-step schedules: routing
#: every pair and checking the schedules took 1.3 CPU s at 256 nodes (torus 16x16,
#: allreduce, four schedules), 28 at 1,024 (torus 32x32), more than plan's own 20 there;
#: the 18 allreduces offered now take 19 CPU s on torus 16x16 (least-loaded routing).
STEP_NODES = 256
#: A switch-channel (NVLS) program's simulation may build this many times plan's task
#: budget: its tasks cost about 8 µs of CPU each (one GPU's loads, stores and copies on 8
#: lanes), and twice the budget takes nvl72 at 1 GiB to 32 KiB slices, 1,270.0 µs in 4.2
#: CPU s, where 128 KiB gave 1,307.8 (at 64 MiB 4 KiB, 92.1 µs, against 94.5 in 8 KiB).
PROGRAM_BUDGET = 2
#: Chunks per node of the greedy timetables :func:`candidates` offers.
TIMETABLE_CHUNKS = (1, 2, 4)
#: The order a timetable's links serve their chunks in: the timetable's own.
TIMETABLE = "timetable"
#: How many of the fastest candidates (in their first order) try their other orders.
REORDERED = 2
#: How many of the fastest (candidate, order) pairs search for their slice.
REFINED = 1
#: The slice search divides (or multiplies) the slice by this each step...
SLICE_STEP = 4
#: ... while the time falls by more than this share.
SLICE_GAIN = 0.0005
#: With ``every_candidate`` (an export choosing the fastest *file*), a candidate is not
#: timed when its busiest link alone takes this many times the fastest candidate's time.
#: A file moves the candidate's data over the same links, so its simulated time is at least
#: that load too: such a candidate is skipped wrongly only where the fastest candidate's
#: file runs more than this many times plan's time for it (the widest gap measured:
#: torus:4x4 allreduce 64 KiB, overhead 1 µs, 10.66 against 5.31 µs, 2.0x, and there
#: no candidate's busiest link is the deciding term).
FILE_SLACK = 2
#: Smallest and largest slices the search tries (bytes).
MIN_SLICE, MAX_SLICE = 4 * 1024, 64 * 1024 * 1024
#: With store-and-forward switches, the least time (µs) a slice takes on the fastest link:
#: ASTRA-sim truncates every hop to whole ns (``Link::serialization_delay``), so a shorter
#: slice would gain up to 1 % a hop from rounding rather than from the schedule.
SLICE_US = Fraction(1, 10)

_PER_NODE = ("allgather", "reduce_scatter", "allreduce", "alltoall")
#: The key of the topology's own translations among :class:`_Search`'s quotients.
_TRANSLATIONS = ""


@dataclass(frozen=True)
class Candidate:
    """A way to run the collective: a tree (or route) schedule, trees that split the
    whole message among them (``trees`` run in ``phases``, e.g. the double binary tree),
    a greedy timetable of ``chunks_per_node`` chunks per node
    (:func:`optcoll.sim.timetable.greedy_timetable`, synthesized for each size), or a
    log-step schedule routed on the topology (``steps``, :mod:`optcoll.sim.steps`).
    A ``deferred`` schedule (the ring) is built only when :func:`plan` first needs it:
    until then ``floor`` (:func:`optcoll.schedules.baselines.ring_floor`) bounds its time
    and ``least_tasks`` its task graph (one slice per chunk): a deferred schedule whose
    graph exceeds plan's task budget is never built.
    ``down``: an allreduce whose ``trees`` reduce and whose ``down`` trees broadcast
    (phases ``(True, False)``; :func:`optcoll.sim.simulator.tree_tasks`), as on a topology
    whose links lack their reverse. ``program``: ``aggregation`` on one ``multimem``
    NVLS domain, timed as the MSCCL++ switch-channel program the export writes of it
    (:mod:`optcoll.sim.nvls_program`, whichever its trees)."""

    method: str
    schedule: Schedule | None = None
    trees: tuple[Tree, ...] = ()
    phases: tuple[bool, ...] = ()
    chunks_per_node: int = 0
    aggregation: AggregationSchedule | None = None
    deferred: Callable[[], Schedule] | None = field(default=None, compare=False)
    floor: RingFloor | None = None
    steps: RoutedSteps | None = None
    down: tuple[Tree, ...] = ()
    least_tasks: int = 0
    program: NvlsProgram | None = field(default=None, compare=False)

    @property
    def priorities(self) -> tuple[str, ...]:
        """The link orders this candidate can run in, its first first: a timetable its own
        (its start times order whole chunks), then its trees' (which may run sliced;
        hypercube:4 allgather at 1 MiB without overhead: 5.4746 µs in its own order, 4.8192
        in ``depth`` order in 8 KiB slices), routes and aggregation trees earliest in the
        data, trees every one of :data:`PRIORITIES`."""
        if self.chunks_per_node:
            return (TIMETABLE, *PRIORITIES)
        if (
            self.steps is not None
            or self.aggregation is not None
            or (self.schedule is not None and self.schedule.collective == "alltoall")
        ):
            return ("progress",)
        return PRIORITIES

    def timetable(
        self,
        topology: Topology,
        size: int,
        default_latency: Fraction,
        quotient: Quotient | None = None,
    ) -> Timetable:
        """The greedy timetable of a ``size``-byte allgather (a timetable candidate),
        equivariant under ``quotient``'s translations when given."""
        chunk = data_bytes("allgather", size, topology.num_compute) / self.chunks_per_node
        return greedy_timetable(
            topology, chunk, self.chunks_per_node, default_latency=default_latency,
            quotient=quotient,
        )  # fmt: skip

    def tasks(
        self,
        network: Network,
        size: int,
        slice_bytes: int | None,
        priority: str = "progress",
        timetable: Timetable | None = None,
    ) -> TaskGraph:
        """The candidate's task graph for a ``size``-byte collective, its links serving
        their slices in ``priority`` order (a timetable candidate: ``timetable``'s trees,
        in its start times' order where ``priority`` is :data:`TIMETABLE`)."""
        if self.program is not None:
            return self.program.tasks(network, size, slice_bytes)
        if self.aggregation is not None:
            return aggregation_tasks(self.aggregation, network, size, slice_bytes=slice_bytes)
        if self.steps is not None:
            return step_tasks(self.steps, network, size, slice_bytes=slice_bytes)
        if timetable is not None:
            graph = TaskGraph()
            schedule = timetable.schedule
            chunk = data_bytes("allgather", size, len(schedule.compute_nodes)) / schedule.k
            tree_tasks(
                graph, network, schedule.trees, chunk, (False,), slice_bytes=slice_bytes,
                **_tree_order(timetable, priority),
            )  # fmt: skip
            return graph
        if self.schedule is not None:
            return schedule_tasks(
                self.schedule, network, size, slice_bytes=slice_bytes, priority=priority
            )
        graph = TaskGraph()
        chunk = size / sum(t.chunks for t in self.trees)
        tree_tasks(
            graph, network, self.trees, chunk, self.phases, slice_bytes=slice_bytes,
            priority=priority, down_trees=self.down or None,
        )  # fmt: skip
        return graph

    def task_count(
        self,
        size: int,
        slice_bytes: int | None,
        num_compute: int,
        multimem: frozenset[str] = frozenset(),
    ) -> int:
        """How many tasks :meth:`tasks` builds (before building them; ``multimem``: the
        topology's NVLS switches, whose loading and storing GPUs send one more slice)."""
        if self.steps is not None:
            return step_task_count(self.steps, size, slice_bytes)
        if self.program is not None:
            return self.program.task_count(size, slice_bytes)
        if self.aggregation is not None:
            aggregated = sum(
                t.chunks
                * (len(t.reduce_edges) + len(t.multicast_edges) + len(multimem_arcs(t, multimem)))
                for t in self.aggregation.trees
            )
            return _slice_count(size / self.aggregation.k, slice_bytes) * aggregated
        if self.chunks_per_node:
            chunk = data_bytes("allgather", size, num_compute) / self.chunks_per_node
            edges = self.chunks_per_node * num_compute * (num_compute - 1)
            return _slice_count(chunk, slice_bytes) * edges
        if self.schedule is not None and self.schedule.collective == "alltoall":
            chunk = data_bytes("alltoall", size, num_compute) / self.schedule.k
            paths = sum(p.chunks for r in self.schedule.routes for p in r.paths)
            return _slice_count(chunk, slice_bytes) * paths
        if self.schedule is not None:
            data = data_bytes(self.schedule.collective, size, num_compute)
            chunk, trees = data / self.schedule.k, self.schedule.trees
            phases = len(PHASES[self.schedule.collective])
        else:
            chunk, trees = size / sum(t.chunks for t in self.trees), self.trees
            phases = len(self.phases)
            if self.down:  # each phase on its own trees
                trees, phases = (*self.trees, *self.down), 1
        if isinstance(trees, ImageTrees):  # every element maps every representative tree
            reps = trees.representatives
            edges = sum(t.chunks * len(t.edges) for t in reps) * (len(trees) // len(reps))
        else:
            edges = sum(t.chunks * len(t.edges) for t in trees)
        return _slice_count(chunk, slice_bytes) * phases * edges


def _slice_count(chunk: float, slice_bytes: int | None) -> int:
    """Slices of a ``chunk``-byte chunk (the simulator's rule)."""
    return 1 if slice_bytes is None or chunk <= slice_bytes else math.ceil(chunk / slice_bytes)


@dataclass(frozen=True)
class SizePlan:
    """The plan at one size: the fastest method, its time, the lower bound, every
    method's best time; how the fastest runs (``slice_bytes``, ``priority``: the order
    its links serve their slices in) and the schedule it runs (None for trees that are
    not one schedule, e.g. the double binary tree). ``bound`` is the lower bound in µs,
    exact (``lower_bound_us`` is its float); ``orders`` how each simulated method ran
    at its fastest: ``(method, priority, slice_bytes)``."""

    size: int
    method: str
    time_us: float
    lower_bound_us: float
    candidates: tuple[tuple[str, float | None], ...]
    slice_bytes: int | None = DEFAULT_SLICE
    priority: str = "progress"
    schedule: Schedule | None = field(default=None, compare=False, repr=False)
    bound: Fraction | None = None
    orders: tuple[tuple[str, str, int | None], ...] = ()
    bus: Fraction = Fraction(1)
    holds_for: str = ""

    @property
    def ratio(self) -> float:
        """``time_us / lower_bound_us`` (>= 1: the certified gap)."""
        if self.bound is not None:
            return float(Fraction(self.time_us) / self.bound)
        return self.time_us / self.lower_bound_us

    @property
    def algbw(self) -> float:
        """``size / time`` in GB/s, as :attr:`optcoll.sim.simulator.Simulation.algbw`."""
        return self.size / self.time_us / 1000.0

    @property
    def busbw(self) -> float:
        """nccl-tests' bus bandwidth: :attr:`algbw` times ``bus``
        (:func:`optcoll.core.busbw.bus_factor`)."""
        return self.algbw * float(self.bus)

    def to_dict(self) -> dict[str, object]:
        """``{"bytes", "method", "time_us", "algbw", "busbw", "lower_bound_us", "ratio",
        "bound_holds_for", "slice_bytes", "priority", "candidates": [{"method", "time_us"},
        ...]}`` (``time_us`` None: too many steps to simulate; ``slice_bytes`` None: whole
        chunks)."""
        return {
            "bytes": self.size,
            "method": self.method,
            "time_us": round(self.time_us, 4),
            "algbw": round(self.algbw, 3),
            "busbw": round(self.busbw, 3),
            "lower_bound_us": round(self.lower_bound_us, 4),
            "ratio": round(self.ratio, 6),
            "bound_holds_for": self.holds_for,
            "slice_bytes": self.slice_bytes,
            "priority": self.priority,
            "candidates": [
                {"method": m, "time_us": None if t is None else round(t, 4)}
                for m, t in self.candidates
            ],
        }


def candidates(
    topology: Topology,
    collective: str = "allgather",
    *,
    root: str | None = None,
    tolerance: Fraction | None = None,
    max_tasks: int = PLAN_TASKS,
) -> list[Candidate]:
    """Every candidate that applies to ``collective`` on ``topology`` (see the module doc);
    the power-of-two ``k``'s go up to the first within ``tolerance`` of the optimum
    (default :data:`optcoll.schedules.deploy.DEFAULT_TOLERANCE`).

    The ring baselines pass every root's chunks along ``N - 1`` hops, ``N (N - 1)``
    tree edges a ring: the ring, and the hierarchical ring when its rings' task graph
    (one slice per chunk) exceeds ``max_tasks`` (:func:`plan`'s budget), are deferred
    (made only if plan can simulate them: never, then), and the NCCL-like rings are left
    out when one channel's graph exceeds it (their channel counts need the rings). On
    1,024 compute nodes one ring has over a million edges.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> names = [c.method for c in candidates(build("dgx-a100:2"))]
    >>> names[:8]
    ['optimal (k=13)', 'k=1', 'k=2', 'k=4', 'k=7', 'k=8', 'ring', 'hierarchical ring']
    >>> names[8:11]  # the channels NCCL runs at some size: 1 up to 64 KiB, 4 at 256 KiB
    ['NCCL-like ring (16 channels)', 'NCCL-like ring (4 channels)', 'NCCL-like ring (1 channel)']
    >>> names[11:]
    ['direct', 'recursive doubling', 'Bruck', 'Swing', 'Bine', 'PAT', 'hierarchical (recursive doubling + direct)', 'hierarchical (direct + direct)']
    """

    collective = canonical_collective(collective)
    if collective in ("broadcast", "reduce"):
        root = root if root is not None else topology.compute_nodes[0]
    tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
    composed = collective == "allreduce" and not is_symmetric(topology)
    found = _composed(topology, tolerance) if composed else _packings(
        topology, collective, root, tolerance
    )  # fmt: skip
    if collective == "allgather" and topology.num_compute == len(topology.node):
        found += [Candidate(f"timetable (k={c})", chunks_per_node=c) for c in TIMETABLE_CHUNKS]
    if collective == "alltoall":
        found.append(Candidate("direct", direct_alltoall_schedule(topology)))
        rail = hierarchical_alltoall_schedule(topology)
        if rail is not None:
            found.append(Candidate(str(rail.stats["method"]), rail))
        return found
    if collective in ("allgather", "reduce_scatter", "allreduce"):

        def as_collective(build: Callable[[Topology], Schedule]) -> Schedule:
            return from_allgather_trees(topology, collective, build)

        if composed and not core_connected(topology):  # no ring runs both ways
            found += _composed_rings(topology)
            return found + _step_candidates(topology, collective)
        # the ring's search for its order is O(N^3) a pass: made only if plan needs it
        n = topology.num_compute
        chain = n * (n - 1) * len(PHASES[collective])  # tasks of one ring, whole chunks
        found.append(
            Candidate(
                "ring",
                deferred=lambda: as_collective(ring_schedule),
                floor=ring_floor(topology),
                least_tasks=chain,
            )
        )
        packed = packing_topology(topology, collective)
        boxes = equal_boxes(packed)
        if boxes is not None and len(boxes[0]) * chain > max_tasks:  # one ring per position

            def hierarchical_ring() -> Schedule:
                made = hierarchical_ring_schedule(packed)
                assert made is not None  # equal boxes
                return collective_phases(made, topology, collective)

            found.append(
                Candidate(
                    "hierarchical ring",
                    deferred=hierarchical_ring,
                    floor=RingFloor(Fraction(0), n - 1),  # each chain's N - 1 hops in turn
                    least_tasks=len(boxes[0]) * chain,
                )
            )
        elif boxes is not None:
            hierarchical = hierarchical_ring_schedule(packed)
            assert hierarchical is not None
            ring = collective_phases(hierarchical, topology, collective)
            found.append(Candidate(str(ring.stats["method"]), ring))
        try:  # reversed rings need the reverse links (an asymmetric topology may lack them)
            # as many channels as NCCL runs at some size (fewer for small messages)
            counts: set[int] = set()
            if chain <= max_tasks:
                counts = set(nccl_ring_channels(topology, collective, list(SIZES)).values())
            for count in sorted(counts, reverse=True):
                nccl = as_collective(partial(nccl_ring_schedule, channels=count))
                found.append(Candidate(str(nccl.stats["method"]), nccl))
        except ScheduleError:
            pass
    if collective == "allreduce":
        found.append(
            Candidate("double binary tree", None, double_binary_trees(topology), (True, False))
        )
        if reduces_over_spanning_trees(topology) and spanning_trees_beat_rs_ag(topology):
            found.append(
                Candidate(
                    "spanning trees (reduce+broadcast)",
                    None,
                    reduce_broadcast_trees(topology),
                    (True, False),
                )
            )
            if reduces_over_shallow_trees(topology):
                found.append(
                    Candidate(
                        "shallow trees (reduce+broadcast)",
                        None,
                        shallow_trees(topology),
                        (True, False),
                    )  # fmt: skip
                )
        # on one NVLS (multimem) domain the trees run as the switch-channel program
        program = switch_program(topology)
        if has_aggregation_lp(topology):
            lp = aggregation_schedule(topology)
            found.append(Candidate("in-network", aggregation=lp, program=program))
        nvls = nvls_schedule(topology)
        if nvls is not None:
            found.append(Candidate(str(nvls.stats["method"]), aggregation=nvls, program=program))
    return found + _step_candidates(topology, collective, root)


def _packings(
    topology: Topology, collective: str, root: str | None, tolerance: Fraction
) -> list[Candidate]:
    """The optimal packing and the fixed-``k`` ones :func:`candidates` offers."""
    optimal = build_collective_core(topology, collective, root=root)
    found = [Candidate(f"optimal (k={optimal.k})", optimal)]
    try:
        deployable = deployable_schedule(topology, collective, tolerance=tolerance, root=root)
        tried = [k for k, _ in deployable.tried]
    except ExportError:  # no power of two within the tolerance: the first few
        tried = [1, 2, 4, 8]
    # the powers of two tried, and every other k up to the largest of them whose
    # packing is faster than every smaller k's (one no faster only cuts the same data
    # finer, as a smaller slice does)
    best = None
    for k in range(1, max(tried) + 1):
        if k == optimal.k:
            continue
        deployed = deployable_schedule(topology, collective, k=k, root=root)
        if k in tried or best is None or deployed.ratio < best:
            found.append(Candidate(f"k={k}", deployed.schedule))
        best = deployed.ratio if best is None else min(best, deployed.ratio)
    return found


def _composed(topology: Topology, tolerance: Fraction) -> list[Candidate]:
    """An allreduce on a topology whose links are not all matched by a reverse of equal
    bandwidth: optimal reduce-scatter trees (packed on the reversed topology) then optimal
    allgather trees, at the least common ``k`` where both reach their optimum and at the
    powers of two up to the first within ``tolerance``; and one set of trees run both
    ways on the links usable in both directions, where they connect the compute nodes."""
    exact = deployable_schedule(topology, "allreduce", exact=True)
    found = [_two_phases(f"optimal (k={exact.schedule.k})", exact.schedule, exact.allgather)]
    try:
        tried = [
            k for k, _ in deployable_schedule(topology, "allreduce", tolerance=tolerance).tried
        ]
    except ExportError:
        tried = [1, 2, 4, 8]
    for k in tried:
        if k != exact.schedule.k:
            deployed = deployable_schedule(topology, "allreduce", k=k)
            found.append(_two_phases(f"k={k}", deployed.schedule, deployed.allgather))
    if core_connected(topology):
        both = build_collective_core(topology, "allreduce")
        found.append(Candidate(f"one tree set both ways (k={both.k})", both))
    return found


def _two_phases(method: str, reducing: Schedule, allgather: Schedule | None) -> Candidate:
    """The candidate whose ``reducing`` (reduce-scatter) trees reduce and whose
    ``allgather`` trees then broadcast."""
    assert allgather is not None  # a composed deployment carries both phases
    return Candidate(method, trees=tuple(reducing.trees), phases=(True, False),
                     down=tuple(allgather.trees))  # fmt: skip


def _composed_rings(topology: Topology) -> list[Candidate]:
    """Where no ring runs both ways: a ring reduce-scatter on the reversed topology's
    ring, then a ring allgather on the topology's own."""
    return [_two_phases("ring (two rings)", *two_tree_sets(topology, ring_schedule))]


def _step_candidates(
    topology: Topology, collective: str, root: str | None = None
) -> list[Candidate]:
    """The log-step schedules routed on ``topology`` (up to :data:`STEP_NODES` nodes; a
    broadcast's or reduce's from ``root``)."""
    if topology.num_compute > STEP_NODES:
        return []
    widest: dict[str, dict[str, tuple[str, ...]]] = {}
    return [
        Candidate(steps.method, steps=route_steps(topology, steps, widest))
        for steps in step_schedules(
            topology.compute_nodes,
            collective,
            equal_boxes(topology),
            torus_shape(topology),
            grid_lines(topology),
            grid_axes(topology),
            root,
        )
    ]


def latency_bound(
    topology: Topology,
    collective: str = "allgather",
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> float:
    """``overhead`` plus the largest smallest-latency path (µs) data must take.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> latency_bound(build("dgx-a100:2"))  # a 1 µs step + 6 links of 1 µs between boxes
    7.0
    """
    return float(
        exact_latency_bound(
            topology, collective, root=root, overhead=overhead, default_latency=default_latency
        )
    )


def exact_latency_bound(
    topology: Topology,
    collective: str = "allgather",
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Fraction:
    """:func:`latency_bound` in exact arithmetic (the float ``overhead`` read exactly).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> exact_latency_bound(build("torus:4x4"), overhead=0.0, default_latency=Fraction(1, 2))
    Fraction(2, 1)
    """
    latency = link_latencies(topology, default_latency)
    scale = math.lcm(*(value.denominator for value in latency.values()))
    out: dict[str, list[tuple[str, int]]] = {}
    for (u, v), value in latency.items():  # in units of 1 / scale: integers
        out.setdefault(u, []).append((v, int(value * scale)))
    collective = canonical_collective(collective)
    compute = topology.compute_nodes
    if collective in ("broadcast", "reduce"):
        root = root if root is not None else compute[0]
        sources = [root] if collective == "broadcast" else list(compute)
        targets = list(compute) if collective == "broadcast" else [root]
    else:
        sources, targets = _source_orbits(topology, latency), list(compute)
    worst = 0
    for source in sources:
        distance = _distances(out, source)
        worst = max(worst, max(distance[t] for t in targets))
    return Fraction(overhead) + Fraction(worst, scale)


#: Above this many source-link pairs :func:`exact_latency_bound` runs one source per orbit.
LATENCY_ORBITS = 2**18


def _source_orbits(topology: Topology, latency: dict[tuple[str, str], Fraction]) -> list[str]:
    """The compute nodes, or on a large topology one per orbit of a group of automorphisms
    that preserve every link's capacity and latency and keep compute nodes apart
    (:func:`optcoll.graph.symmetry.automorphisms`, every map checked exactly): the
    farthest compute node from ``g(s)`` is as far as the farthest from ``s``."""
    compute = list(topology.compute_nodes)
    if len(compute) * len(latency) <= LATENCY_ORBITS:
        return compute
    return latency_orbit_representatives(topology, latency)


def _distances(out: dict[str, list[tuple[str, int]]], source: str) -> dict[str, int]:
    """Dijkstra: the smallest latency sum from ``source`` to every node."""
    distance = {source: 0}
    heap = [(0, source)]
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        d, u = pop(heap)
        if d > distance[u]:
            continue
        for v, w in out.get(u, ()):
            if d + w < distance.get(v, d + w + 1):
                distance[v] = d + w
                push(heap, (d + w, v))
    return distance


@dataclass(frozen=True)
class SizeBound:
    """The lower bound at every message size that ``plan`` and ``simulate`` divide by:
    the largest of the latency bound (:func:`exact_latency_bound`), the bandwidth bound
    ``data(M) * certified.time_factor``, the window cuts of ``startup``
    (:mod:`optcoll.bounds.startup`), the depth bound (:mod:`optcoll.bounds.depth`; None
    where switches reduce or multicast) and the combined bound
    (:mod:`optcoll.bounds.combined`, likewise), all in exact µs. Each holds, under the simulator's
    model, for the schedules ``certified.holds_for`` names (``docs/bounds_every_size.md``).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> bounds = size_bound(build("torus:8x8"), "allgather", overhead=1.0,
    ...                     default_latency=Fraction(1, 2))
    >>> [float(bounds.lower_us(m)) for m in (2**10, 2**24, 2**32)]
    [5.00004, 42.78768, 10571.14608]
    >>> bounds.bandwidth_us(2**32) + Fraction(3, 2) == bounds.lower_us(2**32)  # o + one link
    True
    """

    collective: str
    num_compute: int
    certified: CollectiveBound
    latency: Fraction
    startup: StartupBound
    depth: DepthBound | None = None
    combined: CombinedBound | None = None

    def bandwidth_us(self, size: int) -> Fraction:
        """``data(M) * time factor`` (µs)."""
        data = Fraction(size, self.num_compute) if self.collective in _PER_NODE else Fraction(size)
        return data * self.certified.time_factor / 1000

    def lower_us(self, size: int) -> Fraction:
        """The largest of the bounds (µs) at ``size`` bytes."""
        other = max(self.latency, self.bandwidth_us(size), self.startup.time_us(size))
        if self.depth is not None:
            other = max(other, self.depth.time_us(size, other))
        if self.combined is not None:
            other = max(other, self.combined.time_us(size, other))
        return other

    def describe(self) -> str:
        """What the bound is and the schedules it holds for."""
        text = (
            f"{self.certified.describe()}, as the simulator runs them; with its start-up and "
            "drain windows at every size"
        )
        if self.depth is not None:
            text += f"; {self.depth.describe()}: holds for {DEPTH_HOLDS_FOR[self.collective]}"
        if self.combined is not None:
            text += f"; {self.combined.describe()}: holds for {COMBINED_HOLDS_FOR[self.collective]}"
        return text


def size_bound(
    topology: Topology,
    collective: str,
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> SizeBound:
    """The :class:`SizeBound` of ``collective`` on ``topology`` with a per-step
    ``overhead`` (µs) and link latencies (``default_latency`` where none is declared)."""
    collective = canonical_collective(collective)
    if collective in ("broadcast", "reduce"):
        root = root if root is not None else topology.compute_nodes[0]
    certified = collective_bound(topology, collective, root)
    latency = exact_latency_bound(
        topology, collective, root=root, overhead=overhead, default_latency=default_latency
    )
    startup = certified.startup(
        topology, overhead=overhead, default_latency=default_latency, root=root
    )
    parts = certified.partition.parts if certified.partition is not None else ()
    depth = depth_bound(
        topology, collective, overhead=overhead, default_latency=default_latency, parts=parts
    )
    combined = combined_bound(
        topology, collective, overhead=overhead, default_latency=default_latency, parts=parts
    )
    return SizeBound(collective, topology.num_compute, certified, latency, startup, depth, combined)


def plan(
    topology: Topology,
    collective: str = "allgather",
    sizes: Sequence[int] = SIZES,
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
    progress: bool = False,
    options: Sequence[Candidate] | None = None,
    choose_slice: bool = True,
    max_tasks: int = PLAN_TASKS,
    store_and_forward: bool = False,
    file_tasks: bool = False,
    every_candidate: bool = False,
    refined_methods: Collection[str] = (),
    settle: bool = True,
    orders: Collection[str] | None = None,
) -> list[SizePlan]:
    """For each size, the fastest way to run one of ``options`` (default
    :func:`candidates`) under the simulator, with the lower bound of the module docstring.

    ``orders``: the link orders the target of the plan carries (default all): a candidate
    runs only in those of its own (:attr:`Candidate.priorities`), or in the data's order
    (``progress``) where it has none of them. MSCCL++ files carry only the data's order,
    MSCCL files also a timetable's (:data:`optcoll.export.planned_programs.CARRIED_ORDERS`;
    mesh:4x4 reduce-scatter at 1 MiB without overhead: optimal (k=2) 7.2118 µs in ``depth``
    order, 9.6045 in the data's, its MSCCL++ file 9.6045).

    Every candidate runs in its first order (:attr:`Candidate.priorities`) with slices
    of ``slice_bytes`` (four times as large, and again, where its task graph would exceed
    ``max_tasks``), and the :data:`REORDERED` fastest of them in their other orders;
    with ``choose_slice``, the :data:`REFINED` fastest (candidate, order) pair (and every
    other as fast: orders tie on whole chunks and part when sliced) then tries
    slices a quarter as large, and again (an in-network candidate's last step down ends
    at :data:`MIN_SLICE`: nvl72 NVLS allreduce at 64 MiB, 98.84 µs in 8 KiB slices, 97.29 in
    4 KiB, its file faster still; a tree's MSCCL file, run in plan's slices, loses more
    there than plan gains: hypercube:4 reduce-scatter at 1 MiB without overhead, optimal
    (k=4) 3.6299 -> 3.5070 µs in plan, its file 4.8842 -> slower than k=2's 5.4322), while
    that is faster by more than
    :data:`SLICE_GAIN` and builds at most ``max_tasks`` tasks (a slice that still leaves
    whole chunks is the same run: skipped, not a reason to stop, but for a timetable with
    cut-through links, which stays in whole chunks: its start times order whole chunks,
    and an MSCCL or MSCCL++ file, whose link serves every waiting put's first slice
    before any second one, cannot keep that order once they are sliced; mesh:4x4
    allgather at 1 MiB, no overhead, 0.5 µs links: plan 5.4152 µs in 8 KiB slices
    against its MSCCL++ file's 5.9406, in whole chunks 5.4237 against 5.4406; with a
    per-step ``overhead``, also slices four times as large, while they are faster), and so
    does the fastest pair of each method in ``refined_methods``. A candidate
    whose task graph exceeds ``max_tasks`` (or :data:`optcoll.sim.simulator.MAX_TASKS`) even
    at one slice per chunk gets no time there, and so does one that provably cannot win: its
    busiest link's load over its bandwidth, a lower bound on its simulated time, is no
    less than the fastest time found before it (candidates run in order of that bound).
    The search stops once the fastest is within :data:`SLICE_GAIN` of the lower bound.
    ``store_and_forward``: switches store and forward every slice
    (:attr:`optcoll.sim.simulator.Network.store_and_forward`, ASTRA-sim's analytical
    backend), so smaller slices can win there (the refinement goes down to one of
    :data:`SLICE_US` on the fastest link, at least :data:`MIN_SLICE`); the lower bound is
    the cut-through one. ``file_tasks``:
    ``max_tasks`` bounds a candidate's whole task graph, not the one orbit of it its
    quotient simulates, as a file written of the plan (an export that ``optcoll
    simulate`` runs task by task) holds every task. ``every_candidate``: also time the
    candidates that cannot win (all within the task budget but rings not yet built), for
    an export whose format may hold only some of them.

    A schedule whose trees are one root's and their images under a group acting
    regularly on the compute nodes (a torus's translations) is simulated from its
    quotient (:mod:`optcoll.sim.quotient`): one task per orbit, its links serving
    translates alike, which gives the full run's time in that order exactly; such
    candidates try every link order. No file carries those ties, so the fastest trial
    (with ``every_candidate``, each candidate's fastest) is then simulated task by task,
    ties first come first served, and that is its time, until the fastest is so timed
    (:meth:`_Search.settle`), unless its whole task graph exceeds ``max_tasks``: then its
    quotient time stands and, if it is the fastest, it is re-run, mapped onto every link
    and checked as the whole topology's timetable
    (:func:`optcoll.sim.quotient.check_expanded`). Without ``settle`` the quotient times
    stand (for Chakra traces, whose order gates and ``optcoll_tie`` keys carry the
    quotient's ties: HGX-H100 all-reduce at 1 MiB under store-and-forward switches, 6.558
    µs in ASTRA-sim from the quotient's order, 7.014 settled). Timetables on such a topology are
    synthesized under its translations too (:func:`optcoll.sim.timetable.greedy_timetable`).
    On one NVLS domain of ``multimem`` switches the in-network candidates run as the
    MSCCL++ switch-channel program the export writes (:mod:`optcoll.sim.nvls_program`),
    always from its quotient under the rotation of the GPUs, as the reader runs the file,
    within :data:`PROGRAM_BUDGET` times ``max_tasks``; their slices are refined down to
    :data:`MIN_SLICE` (nvl72 at 1 GiB: 32 KiB, 1.062 times the optimum; at 64 MiB 4 KiB),
    and plan's time of them is the file's simulated at plan's slice.
    """

    collective = canonical_collective(collective)
    default_latency = number_argument(default_latency, "default_latency")  # 0.5: exactly 1/2
    if collective in ("broadcast", "reduce"):
        root = root if root is not None else topology.compute_nodes[0]
    if options is None:
        options = candidates(topology, collective, root=root, max_tasks=max_tasks)
    options = list(options)
    sim = SimOptions(overhead, slice_bytes, default_latency, store_and_forward)
    network = sim.network(topology)
    bounds = size_bound(
        topology, collective, root=root, overhead=sim.overhead, default_latency=sim.default_latency
    )
    bus = bus_factor(collective, topology.num_compute)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(sizes) * len(options), desc="plan", unit="candidate", leave=False)
    rows = []
    shared = _Shared()
    for size in sizes:
        lower = bounds.lower_us(size)
        search = _Search(topology, network, size, sim, max_tasks, lower, shared, collective,
                         file_tasks, every_candidate, orders)  # fmt: skip
        # likely fastest first: the smallest bandwidth term, timetables before trees
        for option in sorted(options, key=lambda o: (search.floor_us(o), -o.chunks_per_node)):
            search.run(option, search.orders(option)[0], search.fitting(option, sim.slice_bytes))
            if bar is not None:
                bar.update()
        search.reorder()
        if choose_slice:
            search.refine(refined_methods)
        if settle:
            search.settle(options)
        best = search.best()
        search.check(best)
        rows.append(
            SizePlan(
                size,
                best.method,
                best.time_us,
                float(lower),
                search.per_method(options),
                best.slice_bytes,
                best.priority,
                best.schedule,
                lower,
                search.fastest_orders(),
                bus,
                bounds.describe(),
            )
        )
    if bar is not None:
        bar.close()
    return rows


@dataclass
class _Shared:
    """What :func:`plan` finds once for all sizes: per candidate its quotient (None: none),
    its deferred schedule made, its busiest-link time factor, its latency floor (µs)."""

    quotients: dict[str, Quotient | None] = field(default_factory=dict)
    built: dict[str, Candidate] = field(default_factory=dict)
    factors: dict[str, Fraction] = field(default_factory=dict)
    latencies: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _Trial:
    """One simulated way to run a candidate at one size."""

    time_us: float
    method: str
    option: Candidate
    priority: str
    slice_bytes: int | None
    schedule: Schedule | None
    #: Timed from its tree schedule's quotient (every translate of a task tied alike), not
    #: yet in full as a file runs it (:meth:`_Search.settle`).
    folded: bool = False


class _Search:
    """The trials of every candidate at one size (each timetable synthesized once)."""

    def __init__(
        self,
        topology: Topology,
        network: Network,
        size: int,
        sim: SimOptions,
        max_tasks: int,
        lower: Fraction,
        shared: _Shared,
        collective: str,
        file_tasks: bool = False,
        every_candidate: bool = False,
        orders: Collection[str] | None = None,
    ) -> None:
        self.topology, self.network, self.size = topology, network, size
        self.carried = orders
        self.file_tasks, self.every_candidate = file_tasks, every_candidate
        self.lower = float(lower)
        self.sim, self.max_tasks = sim, max_tasks
        self.trials: list[_Trial] = []
        self.tables: dict[str, Timetable] = {}
        self.quotients, self.built, self.factors = shared.quotients, shared.built, shared.factors
        self.latencies = shared.latencies
        self.collective = collective

    def orders(self, option: Candidate) -> tuple[str, ...]:
        """The link orders ``option`` runs in here (:attr:`Candidate.priorities`): those
        the target carries (``orders``; all without), the data's where it carries none."""
        if self.carried is None:
            return option.priorities
        return tuple(p for p in option.priorities if p in self.carried) or ("progress",)

    def run(self, option: Candidate, priority: str, slice_bytes: int | None) -> _Trial | None:
        """Simulate ``option`` in ``priority`` order with ``slice_bytes`` (None: too
        many tasks); from its quotient (:mod:`optcoll.sim.quotient`) where it has one."""
        if option.deferred is not None:
            if option.least_tasks > min(self.max_tasks, MAX_TASKS):
                return None  # too many tasks even in whole chunks: never built
            if self.trials and self.bandwidth_us(option) >= self.best().time_us:
                return None  # no ring can be faster: none is searched for
            option = self.made(option)
            slice_bytes = self.fitting(option, slice_bytes)
        if self.count(option, slice_bytes) > self.budget(option):
            return None
        if self.trials and (
            self.bandwidth_us(option) >= FILE_SLACK * self.best().time_us
            if self.every_candidate
            else (
                self.bandwidth_us(option) >= self.best().time_us
                or self.floor_us(option) >= self.fastest_like(option)
                or self.best().time_us <= self.lower * (1 + SLICE_GAIN)
            )
        ):  # its busiest link alone takes longer than the fastest (as a file: FILE_SLACK
            # times), or its latency floor longer than the fastest of its kind, or that is
            # at the bound
            return None
        table = self._table(option)
        quotient = self.folded(option, slice_bytes)
        try:
            if option.program is not None:
                graph = option.program.tasks(self.network, self.size, slice_bytes, quotient)
            elif quotient is not None and option.aggregation is not None:
                graph = aggregation_quotient_tasks(
                    option.aggregation, quotient, self.network, self.size, slice_bytes=slice_bytes
                )
            elif quotient is not None:
                schedule = option.schedule if table is None else table.schedule
                assert schedule is not None  # only schedules have quotients
                graph = schedule_quotient_tasks(
                    schedule, quotient, self.network, self.size, slice_bytes=slice_bytes,
                    **_tree_order(table, priority),
                )  # fmt: skip
            else:
                graph = option.tasks(self.network, self.size, slice_bytes, priority, table)
        except ScheduleError:  # too many steps to simulate (a huge k): not a candidate here
            return None
        ties = None if quotient is None else range(len(graph))
        run = self.sim.run(graph, self.network, self.size, ties=ties)
        schedule = option.schedule if table is None else _with_order(table, priority)
        folded = quotient is not None and option.aggregation is None
        trial = _Trial(run.time_us, option.method, option, priority, slice_bytes, schedule, folded)
        self.trials.append(trial)
        return trial

    def budget(self, option: Candidate) -> int:
        """The most tasks one simulation of ``option`` may build: ``max_tasks``, or
        :data:`PROGRAM_BUDGET` times it for a switch-channel program (at most
        :data:`~optcoll.sim.simulator.MAX_TASKS`)."""
        scale = PROGRAM_BUDGET if option.program is not None else 1
        return min(self.max_tasks * scale, MAX_TASKS)

    def fastest_like(self, option: Candidate) -> float:
        """The fastest time so far of a candidate that, like ``option``, is a schedule
        or timetable (what ``plan --export`` writes, :func:`schedule_bands`: the fastest
        of them at each size is needed even where a step schedule is faster), or of any
        candidate for the others (infinite: none yet)."""
        exportable = _exportable(option)
        times = [t.time_us for t in self.trials if not exportable or _exportable(t.option)]
        return min(times, default=math.inf)

    def settle(self, options: Sequence[Candidate]) -> None:
        """Time in full, ties first come first served, the fastest trial while it was
        timed from its tree schedule's quotient (with ``every_candidate``, each method's
        fastest: an export ranks them all), until the fastest is a full run; then try
        again, once, the candidates not timed against a fastest time that has since risen.

        The quotient run ties every translate of a task alike (:mod:`optcoll.sim.quotient`),
        an order no MSCCL or MSCCL++ field carries: a file's run (:mod:`optcoll.sim.programs`)
        serves equal times first come first served, and so does the full run here, the time
        a file of the trial gets (dgx-h100:2 allreduce at 16 MiB, overhead 1 µs, links
        0.5 µs: optimal (k=2) in 512 KiB slices 65.91 µs from the quotient, 73.74 in full;
        settled, plan picks 128 KiB slices, 72.62). A trial whose whole task graph exceeds
        the budget keeps its quotient time (a torus of 1,024 nodes; :meth:`check` checks it
        as the whole topology's timetable): no file of it is simulated within the budget
        either (``file_tasks``). The search before (orders, slices) ranks by quotient times,
        so a trial that runs faster in full than the one chosen may go unfound, and the
        columns of candidates not chosen may show quotient times; the time printed for the
        choice is the full run's."""
        retried: bool = False
        kept: set[int] = set()
        while True:
            fastest: dict[str, _Trial] = {}
            for trial in self.trials:
                if trial.method not in fastest or trial.time_us < fastest[trial.method].time_us:
                    fastest[trial.method] = trial
            ranked = list(fastest.values()) if self.every_candidate else self.trials[:0]
            if self.trials:
                ranked.append(self.best())
            folded = {id(t): t for t in ranked if t.folded and id(t) not in kept}
            for trial in folded.values():
                full = self._unfolded(trial)
                if full is None:
                    kept.add(id(trial))
                else:
                    self.trials[self.trials.index(trial)] = full
            if folded:
                continue
            if retried or not self.trials:
                return
            retried = True
            for option in options:
                if option.method not in fastest:
                    self.run(
                        option, self.orders(option)[0], self.fitting(option, self.sim.slice_bytes)
                    )

    def _unfolded(self, trial: _Trial) -> _Trial | None:
        """``trial`` simulated task by task, ties first come first served (None: its whole
        task graph exceeds the budget)."""
        option = trial.option
        budget = min(self.max_tasks, MAX_TASKS)
        count = option.task_count(self.size, trial.slice_bytes, self.topology.num_compute,
                                  frozenset(self.topology.multimem_switches))  # fmt: skip
        if count > budget:
            return None
        table = self._table(option)
        graph = option.tasks(self.network, self.size, trial.slice_bytes, trial.priority, table)
        run = self.sim.run(graph, self.network, self.size)
        return replace(trial, time_us=run.time_us, folded=False)

    def check(self, trial: _Trial) -> None:
        """Re-run a trial timed from its tree schedule's quotient (one :meth:`settle` kept:
        its whole task graph exceeds the budget), recording it, and check it as the
        timetable of the whole topology (:func:`optcoll.sim.quotient.check_expanded`);
        an NVLS candidate's quotient run is not re-run (``tests/sim/test_quotient.py``
        compares it with the full run)."""
        quotient = self.quotient(trial.option)
        if not trial.folded or quotient is None:
            return
        table = self._table(trial.option)
        schedule = trial.option.schedule if table is None else table.schedule
        assert schedule is not None
        order = _tree_order(table, trial.priority)
        graph = schedule_quotient_tasks(
            schedule, quotient, self.network, self.size, slice_bytes=trial.slice_bytes, **order
        )
        run = self.sim.run(graph, self.network, self.size, ties=range(len(graph)), record=True)
        assert run.time_us == trial.time_us  # the same run
        check_expanded(
            schedule, quotient, self.network, self.size, run, slice_bytes=trial.slice_bytes,
            **order,
        )  # fmt: skip

    def made(self, option: Candidate) -> Candidate:
        """A deferred candidate with its schedule (built once per plan)."""
        if option.method not in self.built:
            assert option.deferred is not None
            self.built[option.method] = replace(
                option, schedule=option.deferred(), deferred=None, floor=None
            )
        return self.built[option.method]

    def quotient(self, option: Candidate) -> Quotient | None:
        """The quotient ``option``'s schedule is simulated from (None: in full),
        found once per candidate."""
        if option.method not in self.quotients:
            table = self._table(option)
            schedule = option.schedule if table is None else table.schedule
            found = None
            if schedule is not None and option.aggregation is None:
                found = schedule_quotient(schedule, self.topology, self.network)
            elif option.program is not None:  # as the reader runs the file: always from it
                found = program_quotient(self.topology, self.network)
            elif option.aggregation is not None:
                found = aggregation_quotient(option.aggregation, self.topology, self.network)
            self.quotients[option.method] = found
        return self.quotients[option.method]

    def folded(self, option: Candidate, slice_bytes: int | None) -> Quotient | None:
        """The quotient a trial of ``option`` with ``slice_bytes`` runs on: a schedule's
        always; an NVLS candidate's (:func:`optcoll.sim.quotient.aggregation_quotient`)
        only where its whole task graph exceeds the budget. An equivariant run serves, on
        every GPU's link, one tree's slice of each level last, so no tree's sum is ready
        before the level's end; the full run in the data's order finishes the first
        trees early and overlaps their stores with the other loads, which with whole
        chunks (1 MiB on nvl72) is worth an overhead (6.2 µs, the quotient 7.4 µs)."""
        quotient = self.quotient(option)
        if quotient is None or option.aggregation is None or option.program is not None:
            return quotient
        whole = option.task_count(self.size, slice_bytes, self.topology.num_compute,
                                  self.network.multimem)  # fmt: skip
        return quotient if whole > min(self.max_tasks, MAX_TASKS) else None

    def count(self, option: Candidate, slice_bytes: int | None) -> int:
        """How many tasks simulating ``option`` builds (one per orbit from a quotient,
        unless ``file_tasks``)."""
        count = option.task_count(
            self.size,
            slice_bytes,
            self.topology.num_compute,
            frozenset(self.topology.multimem_switches),
        )
        quotient = None if self.file_tasks else self.folded(option, slice_bytes)
        return count if quotient is None else count // quotient.order

    def _table(self, option: Candidate) -> Timetable | None:
        """The timetable of a timetable candidate at this size (synthesized once)."""
        if not option.chunks_per_node:
            return None
        if option.method not in self.tables:
            if _TRANSLATIONS not in self.quotients:
                self.quotients[_TRANSLATIONS] = topology_quotient(self.topology, self.network)
            self.tables[option.method] = option.timetable(
                self.topology, self.size, self.sim.default_latency, self.quotients[_TRANSLATIONS]
            )
        return self.tables[option.method]

    def bandwidth_us(self, option: Candidate) -> float:
        """A lower bound on ``option``'s simulated time (µs): its busiest link's load over
        its bandwidth in the busiest phase (0 for trees that are not one schedule). A
        simulated link is busy exactly that long, whatever the order and the slices."""
        if option.deferred is not None:
            assert option.floor is not None
            data = data_bytes(self.collective, self.size, self.topology.num_compute)
            least = min(self.network.latency, default=0.0)
            return max(data * float(option.floor.time_factor) / 1000, option.floor.hops * least)
        if option.steps is not None:
            data = data_bytes(self.collective, self.size, self.topology.num_compute)
            return data * float(option.steps.time_factor) / 1000
        if option.trees:  # trees splitting the whole message, in phases
            if option.method not in self.factors:
                try:
                    self.factors[option.method] = max(
                        phase_time_factor(
                            self.topology,
                            option.down if option.down and not reverse else option.trees,
                            sum(t.chunks for t in option.trees),
                            reverse=reverse,
                        )  # fmt: skip
                        for reverse in set(option.phases)
                    )
                except ScheduleError:  # a path the topology lacks: it cannot run (no bound)
                    self.factors[option.method] = Fraction(0)
            return self.size * float(self.factors[option.method]) / 1000
        table = self._table(option)
        schedule = option.schedule if table is None else table.schedule
        if schedule is None:
            return 0.0
        data = data_bytes(schedule.collective, self.size, self.topology.num_compute)
        key = option.method if table is None else f"{option.method} {self.size}"
        if key not in self.factors:
            self.factors[key] = _busiest_factor(self.topology, schedule)
        return data * float(self.factors[key]) / 1000

    def floor_us(self, option: Candidate) -> float:
        """A lower bound on ``option``'s simulated time (µs): the larger of
        :meth:`bandwidth_us` and its latency floor, whatever the size: a step schedule's
        chain of steps (:func:`optcoll.sim.steps.step_latency_floor`), a tree's deepest
        path in each phase (:func:`tree_latency_floor`)."""
        if option.method not in self.latencies:
            try:
                floor = self._latency_floor(option)
            except ScheduleError:  # a path the network lacks: it cannot run (no floor)
                floor = 0.0
            self.latencies[option.method] = floor
        return max(self.bandwidth_us(option), self.latencies[option.method])

    def _latency_floor(self, option: Candidate) -> float:
        """The latency floor of :meth:`floor_us` (0 for a candidate without one)."""
        overhead = self.sim.overhead
        floor = 0.0
        if option.steps is not None:
            floor = step_latency_floor(option.steps, self.network, overhead)
        elif option.down:
            floor = tree_latency_floor(option.trees, (True,), self.network, overhead)
            floor += tree_latency_floor(option.down, (False,), self.network, overhead)
        elif option.trees:
            floor = tree_latency_floor(option.trees, option.phases, self.network, overhead)
        elif (
            option.schedule is not None
            and option.schedule.collective != "alltoall"
            and not option.chunks_per_node
        ):
            schedule = option.schedule
            trees: Sequence[Tree] = schedule.trees
            if isinstance(trees, ImageTrees):  # a subset of the trees bounds as well
                trees = trees.representatives
            phases = PHASES[schedule.collective]
            floor = tree_latency_floor(trees, phases, self.network, overhead)
        return floor

    def fitting(self, option: Candidate, slice_bytes: int | None) -> int | None:
        """``slice_bytes``, or the first slice :data:`SLICE_STEP` times as large, and again,
        whose task graph fits in ``max_tasks`` (at most one slice per chunk)."""
        budget = self.budget(option)
        if option.deferred is not None:  # fitted once it is made
            return slice_bytes
        while slice_bytes is not None and self.count(option, slice_bytes) > budget:
            if self.count(option, None) == self.count(option, slice_bytes):
                break  # one slice per chunk already: no larger slice helps
            slice_bytes *= SLICE_STEP
        return slice_bytes

    def reorder(self) -> None:
        """The other orders of the :data:`REORDERED` fastest candidates that have them,
        and of every one simulated from its quotient (one orbit of tasks: cheap), each at
        the slice it first ran with."""
        tried = sorted(self.trials, key=lambda t: t.time_us)
        reordered = [t for t in tried if len(self.orders(t.option)) > 1]
        reordered = reordered[:REORDERED] + [
            t for t in reordered[REORDERED:] if self.quotient(t.option) is not None
        ]
        for trial in reordered:
            for priority in self.orders(trial.option)[1:]:
                self.run(trial.option, priority, trial.slice_bytes)

    def refine(self, methods: Collection[str] = ()) -> None:
        """Smaller (and, with an overhead, larger) slices for the :data:`REFINED` fastest
        (candidate, order) pairs, the fastest pair of each method in ``methods`` and every
        NVLS candidate simulated from its quotient (cheap: one GPU's; in whole chunks it may
        look slower than it pipelines: nvl72 at 256 MiB as trees 603.7 µs, 342.2 in 8 KiB
        slices), while they are faster (see :func:`plan`); a switch-channel program's down
        to :data:`MIN_SLICE` itself (its slices cost no overhead: nvl72 at 64 MiB 92.1 µs in
        4 KiB, 94.5 in 8)."""
        if not self.trials:
            return
        pairs: list[_Trial] = []
        for trial in sorted(self.trials, key=lambda t: t.time_us):
            if all((t.method, t.priority) != (trial.method, trial.priority) for t in pairs):
                pairs.append(trial)
        factors = (Fraction(1, SLICE_STEP), SLICE_STEP) if self.sim.overhead > 0 else (
            Fraction(1, SLICE_STEP),
        )  # fmt: skip
        least = MIN_SLICE
        if self.network.store_and_forward:  # a switch holds one slice: down to the least
            fastest = max((r for r in self.network.rate if math.isfinite(r)), default=0.0)
            least = max(MIN_SLICE, math.ceil(fastest * SLICE_US))
        # and every pair as fast as the fastest: orders tie where each link carries whole
        # chunks one at a time, and part once the chunks are sliced; and in-network
        # candidates simulated from their quotient
        folds = [t for t in pairs[REFINED:]
                 if t.option.aggregation is not None and self.quotient(t.option) is not None]  # fmt: skip
        folded = {id(t) for t in folds}
        tied = [t for t in pairs[REFINED:] if t.time_us <= pairs[0].time_us and id(t) not in folded]
        named = {t.method for t in pairs[:REFINED] + folds + tied}
        more: list[_Trial] = []
        for trial in pairs:  # fastest first: each method's fastest pair
            if trial.method in methods and trial.method not in named:
                named.add(trial.method)
                more.append(trial)
        for start in pairs[:REFINED] + folds + tied + more:
            if start.slice_bytes is None:
                continue
            for factor in factors:
                current, piece = start, start.slice_bytes
                while True:
                    previous, piece = piece, int(piece * factor)
                    if previous > least > piece and (
                        self.network.store_and_forward
                        or current.option.aggregation
                        or current.option.program is not None
                    ):  # the last step down ends at the least (an in-network file follows
                        piece = least  # plan's slices; a tree's or timetable's does not)
                    if piece < least or piece > MAX_SLICE:
                        break
                    if factor < 1 and self.count(current.option, piece) == self.count(
                        current.option, previous
                    ):  # still whole chunks: the same run; finer slices may still win (a
                        # relay forwards a slice once all of it is in), but a timetable
                        # sends whole chunks with cut-through links (a file cannot keep
                        # its start-time order once they are sliced: see plan)
                        if current.priority == TIMETABLE and not self.network.store_and_forward:
                            break
                        continue
                    smaller = self.run(current.option, current.priority, piece)
                    if smaller is None or smaller.time_us >= current.time_us * (1 - SLICE_GAIN):
                        break
                    current = smaller

    def best(self) -> _Trial:
        """The fastest trial (the first of equals)."""
        if not self.trials:
            raise ScheduleError(
                f"no candidate can be simulated at {self.size} bytes within {self.max_tasks:,} "
                "tasks: use a larger --slice or a smaller size"
            )
        return min(self.trials, key=lambda t: t.time_us)

    def fastest_orders(self) -> tuple[tuple[str, str, int | None], ...]:
        """``(method, priority, slice_bytes)`` of each method's fastest trial."""
        fastest: dict[str, _Trial] = {}
        for trial in self.trials:
            if trial.method not in fastest or trial.time_us < fastest[trial.method].time_us:
                fastest[trial.method] = trial
        return tuple((t.method, t.priority, t.slice_bytes) for t in fastest.values())

    def per_method(self, options: Sequence[Candidate]) -> tuple[tuple[str, float | None], ...]:
        """Every candidate's fastest time (None: never simulated), in ``options`` order."""
        times: dict[str, float] = {}
        for trial in self.trials:
            times[trial.method] = min(times.get(trial.method, trial.time_us), trial.time_us)
        return tuple((o.method, times.get(o.method)) for o in options)


def _busiest_factor(topology: Topology, schedule: Schedule) -> Fraction:
    """The time factor of a schedule's busiest link in its busiest phase (from the
    representatives' loads for a compact schedule)."""
    if schedule.collective == "alltoall":
        return routes_time_factor(topology, schedule.routes, schedule.k)
    trees: Sequence[Tree] = schedule.trees
    group = None
    if isinstance(schedule.trees, ImageTrees):  # the representatives' loads, mapped
        trees, group = schedule.trees.representatives, schedule.trees.group
    return max(
        phase_time_factor(topology, trees, schedule.k, reverse=reverse, rotation=group)
        for reverse in PHASES[schedule.collective]
    )


def _exportable(option: Candidate) -> bool:
    """A schedule or timetable candidate (:func:`schedule_bands` writes only those)."""
    return (
        option.schedule is not None or bool(option.chunks_per_node) or option.deferred is not None
    )


def tree_latency_floor(
    trees: Sequence[Tree], phases: Sequence[bool], network: Network, overhead: float
) -> float:
    """A lower bound (µs) on running ``trees`` in ``phases`` (``True``: a reduce phase, up
    the reversed paths): a slice crosses every tree edge on its way from the root to a
    leaf (or up) as a step of that edge's connection, ``overhead`` plus the path's latency
    after it arrived, and a later phase starts where the earlier ended at the root; so
    every run takes at least the sum over phases of some tree's deepest such path.

    Raises
    ------
    ScheduleError
        A path uses a link the network does not have.

    Examples
    --------
    >>> from optcoll.core.schedule import TreeEdge
    >>> from optcoll.topologies import build
    >>> topo = build("ring:3")
    >>> chain = Tree("n0", 1, (TreeEdge("n0", "n1", ("n0", "n1")), TreeEdge("n1", "n2", ("n1", "n2"))))
    >>> tree_latency_floor([chain], (True, False), Network.of(topo), 1.0)  # 2 x 2 edges of 1 + 1 µs
    8.0
    """
    latency = network.latency
    total = 0.0
    for reverse in phases:
        deepest = 0.0
        for tree in trees:
            depth = {tree.root: 0.0}
            for e in tree.edges:  # parents before children
                path = network.path(e.path[::-1] if reverse else e.path)
                depth[e.dst] = depth[e.src] + overhead + sum(latency[a] for a in path)
            deepest = max(deepest, *depth.values())
        total += deepest
    return total


def _with_order(table: Timetable, priority: str = TIMETABLE) -> Schedule:
    """The timetable's schedule with the order it ran in in its stats, which the schedule
    JSON carries: ``priority`` timetable and ``starts`` (per tree, the start time in µs of
    each edge's transfer), or another ``priority`` (its trees in that order).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> table = greedy_timetable(build("ring:3"), 1024.0, 1)
    >>> _with_order(table).stats["priority"], "starts" in _with_order(table, "progress").stats
    ('timetable', False)
    """
    stats = {**table.schedule.stats, "priority": priority}
    if priority == TIMETABLE:
        stats["starts"] = [list(s) for s in table.starts]
    return replace(table.schedule, stats=stats)


def _tree_order(table: Timetable | None, priority: str) -> dict[str, Any]:
    """The ``priority`` and ``starts`` keywords of :func:`~optcoll.sim.simulator.tree_tasks`
    that run trees (``table``'s, if given) in ``priority`` order: for :data:`TIMETABLE`,
    the timetable's start times (which override the data's order), as
    :func:`~optcoll.sim.simulator.schedule_tasks` reads them from a schedule's stats.

    >>> _tree_order(None, "depth")
    {'priority': 'depth', 'starts': None}
    """
    if priority == TIMETABLE and table is not None:
        return {"priority": "progress", "starts": table.starts}
    return {"priority": priority, "starts": None}


def size_bands(
    rows: Sequence[SizePlan], methods: Sequence[str]
) -> list[tuple[str, int, int | None]]:
    """Split the sizes among ``methods`` by the plan: ``(method, smallest, largest or None)``.

    At each planned size the fastest of ``methods`` wins; its band runs from that size (0
    for the first) to just below the next size where another method wins (no limit for
    the last).

    Examples
    --------
    >>> rows = [SizePlan(1024, "a", 1.0, 1.0, (("a", 1.0), ("b", 2.0))),
    ...         SizePlan(2048, "a", 1.5, 1.0, (("a", 1.5), ("b", 2.0))),
    ...         SizePlan(4096, "b", 2.0, 1.0, (("a", 3.0), ("b", 2.0)))]
    >>> size_bands(rows, ["a", "b"])
    [('a', 0, 4095), ('b', 4096, None)]
    """
    bands: list[tuple[str, int, int | None]] = []
    for row in sorted(rows, key=lambda r: r.size):
        allowed = [(t, m) for m, t in row.candidates if m in methods and t is not None]
        if not allowed:
            continue
        _, winner = min(allowed)
        if bands and bands[-1][0] == winner:
            continue
        if bands:
            method, low, _ = bands[-1]
            bands[-1] = (method, low, row.size - 1)
        bands.append((winner, 0 if not bands else row.size, None))
    return bands


def schedule_bands(
    rows: Sequence[SizePlan], options: Sequence[Candidate], *, steps: bool = False
) -> list[tuple[Candidate, int, int | None]]:
    """The size bands of the ``options`` that are schedules or timetables (with ``steps``,
    also log-step schedules: what ``optcoll plan --export`` writes; without, what
    ``optcoll export --bands`` writes): :func:`size_bands` among them, each band as
    ``(candidate, smallest, largest or None)``. A log-step band's candidate is the
    option itself (its ``steps``). Each other band's candidate holds
    the schedule as the plan runs it at the first planned size where it is the fastest
    (a timetable: synthesized for that size), with the plan's order in its stats
    (``priority``, ``slice_bytes``, and a timetable's ``starts``).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("dgx-a100:2")
    >>> options = candidates(topo)
    >>> rows = plan(topo, "allgather", [1024, 2**20, 2**30], options=options)
    >>> [(c.method, low, high) for c, low, high in schedule_bands(rows, options)]
    [('k=1', 0, 1048575), ('k=2', 1048576, 1073741823), ('optimal (k=13)', 1073741824, None)]
    >>> [c.schedule.stats["priority"] for c, _, _ in schedule_bands(rows, options)]
    ['progress', 'progress', 'depth']
    """
    methods = [
        o.method
        for o in options
        if o.schedule is not None or o.chunks_per_node or o.deferred or (steps and o.steps)
    ]
    bands = []
    for method, low, high in size_bands(rows, methods):
        stepped = [o for o in options if o.method == method and o.steps is not None]
        if stepped:
            bands.append((stepped[0], low, high))
            continue
        won = [r for r in rows if r.method == method and r.size >= low and r.schedule is not None]
        if won:
            row = won[0]
            chosen = row.schedule
            assert chosen is not None  # won filters on it
            stats = {**chosen.stats, "priority": row.priority, "slice_bytes": row.slice_bytes}
            bands.append((Candidate(method, replace(chosen, stats=stats)), low, high))
            continue
        (option,) = (o for o in options if o.method == method)
        if option.schedule is None:  # a timetable that never won outright: none to write
            continue
        # how the plan ran it at its fastest at the band's first size that simulated it
        ran = [
            (priority, slice_bytes)
            for r in rows
            if r.size >= low and (high is None or r.size <= high)
            for m, priority, slice_bytes in r.orders
            if m == method
        ]
        priority, slice_bytes = ran[0] if ran else ("progress", DEFAULT_SLICE)
        stats = {**option.schedule.stats, "priority": priority, "slice_bytes": slice_bytes}
        bands.append((Candidate(method, replace(option.schedule, stats=stats)), low, high))
    return bands


def method_times(
    topology: Topology,
    costs: Sequence[Cost],
    sizes: Sequence[int],
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> list[list[float | None]]:
    """The simulated time (µs) of every method of ``costs`` at every size (``optcoll
    compare``'s curves): its schedule, its trees in their phases, or every group's
    schedule at once (concurrent process groups); None where the task graph is too large
    or the cost carries nothing to simulate.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.studies.compare import compare_methods
    >>> topo = build("ring:4")
    >>> [[round(t, 3) for t in row] for row in method_times(topo, compare_methods(topo), [4096])]
    [[5.01], [4.02], [6.015], [6.015], [3.02], [5.031], [5.031], [4.031], [4.031], [5.031], [4.015], [4.02]]
    """
    sim = SimOptions(overhead, slice_bytes, default_latency)
    network = sim.network(topology)
    times = []
    for cost in costs:
        row: list[float | None] = []
        for size in sizes:
            try:
                graph = _cost_tasks(cost, network, size, sim.slice_bytes)
            except ScheduleError:
                graph = None
            row.append(None if graph is None else sim.run(graph, network, size).time_us)
        times.append(row)
    return times


def _cost_tasks(
    cost: Cost, network: Network, size: int, slice_bytes: int | None
) -> TaskGraph | None:
    """The task graph of a cost's method (None: nothing to simulate)."""
    if isinstance(cost.schedule, AggregationSchedule):
        return aggregation_tasks(cost.schedule, network, size, slice_bytes=slice_bytes)
    if isinstance(cost.schedule, RoutedSteps):
        return step_tasks(cost.schedule, network, size, slice_bytes=slice_bytes)
    if isinstance(cost.schedule, Schedule) or cost.trees:
        option = Candidate(cost.method, cost.schedule, cost.trees, cost.phases, down=cost.down)
        return option.tasks(network, size, slice_bytes)
    if cost.schedule is None:
        return None
    graph = TaskGraph()  # concurrent groups: every group's trees on the one network
    for group in cost.schedule.groups:
        data = data_bytes(group.collective, size, len(group.compute_nodes))
        tree_tasks(
            graph, network, group.trees, data / group.k, PHASES[group.collective],
            slice_bytes=slice_bytes,
        )  # fmt: skip
    return graph


def planned_tasks(
    topology: Topology,
    schedule: Schedule,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = None,
) -> TaskGraph:
    """The task graph of ``schedule`` run the way :func:`plan` ran it, so that the
    simulator, ties first come first served, gives the time ``plan`` printed for it
    (:meth:`_Search.settle`: a schedule compact under the topology's translations too):
    in the order its stats record (``priority``; a timetable's ``starts``, a time per
    tree edge), with the slices it chose (``slice_bytes``) unless others are given. A
    schedule without these stats runs in ``progress`` order.

    Raises
    ------
    ScheduleError
        ``stats.priority`` names no order, or ``stats.starts`` does not give a time
        for every edge of every tree.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("torus:4x4")
    >>> rows = plan(topo, "allgather", [2**26])
    >>> (chosen, _, _), = schedule_bands(rows, candidates(topo))
    >>> network = Network.of(topo)
    >>> graph = planned_tasks(topo, chosen.schedule, network, 2**26)
    >>> from optcoll.sim.simulator import simulate
    >>> simulate(graph, network, 2**26).time_us == rows[0].time_us
    True
    """
    error = order_stats_error(schedule)
    if error is not None:
        raise ScheduleError(error)
    if slice_bytes is None:
        slice_bytes = planned_slice(schedule)
    return schedule_tasks(schedule, network, size, slice_bytes=slice_bytes, priority=None)


def planned_slice(schedule: Schedule) -> int | None:
    """The slice size :func:`plan` chose for ``schedule`` (its ``stats.slice_bytes``;
    None: whole chunks), or :data:`~optcoll.sim.simulator.DEFAULT_SLICE` for a schedule
    that records none.

    Raises
    ------
    ScheduleError
        The schedule's order stats are malformed (:func:`~optcoll.core.schedule.order_stats_error`).
    """
    error = order_stats_error(schedule)
    if error is not None:
        raise ScheduleError(error)
    return schedule.stats.get("slice_bytes", DEFAULT_SLICE)
