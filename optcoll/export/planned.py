"""Chakra traces of what ``optcoll plan`` chose at each size, as plan simulated it.

At a message size ``M``, :func:`optcoll.sim.size_plan.plan` simulates every candidate schedule
and keeps the fastest with the slice size and the link order it ran fastest with.
:func:`planned_traces` writes exactly that schedule as Chakra traces
(:func:`optcoll.export.chakra.chakra_traces` with ``slice_bytes``): each slice its own
message (so an ASTRA-sim switch forwards slices, not whole chunks), each transfer with its
place in its link's queue and its simulator task number, so that ``optcoll simulate`` of
the files gives plan's time (exactly where every slice has the same whole number of
bytes; otherwise slices differ by under a byte from the simulator's equal shares, which
can reorder slices that reach a link at the same instant). Where plan simulated the
schedule from its quotient (:mod:`optcoll.sim.quotient`), breaking ties alike on every
translate, the transfers carry those tie keys too (``optcoll_tie``).

A log-step candidate (a step schedule, :mod:`optcoll.sim.steps`) is written message by
message, sliced as plan simulated it (:func:`optcoll.export.chakra_steps.step_traces`). A
reduce + broadcast tree candidate of an allreduce (NCCL's double binary tree, spanning and
shallow trees: :attr:`PlannedChoice.reduce_broadcast`) is written slice by slice up and
down its trees (:func:`optcoll.export.chakra_reduce_broadcast.reduce_broadcast_traces`).
A candidate that is none of these (in-network aggregation trees: a switch reduces) has no
trace form: the fastest candidate that is one is written instead, and
:attr:`PlannedTraces.chosen` says what plan chose.

ASTRA-sim's workload ``comm_size`` (:func:`astra_sim_comm_size`) is the size its native
collectives read: custom traces move the bytes written in them whatever it says, but a
workload that compares them with a native algorithm must give each the same data.

ASTRA-sim times a message on a link in whole nanoseconds: ``Link::serialization_delay``
(astra-network-analytical 599a047, ``congestion_aware/network/Link.cpp`` lines 91-98)
truncates ``bytes / bandwidth_Bpns`` to an integer, and the link becomes free that long
after it starts (lines 131-134). A message shorter than 1 ns on a link frees it at once (the link moves
it in no time), and at time 0 that event is due at the current time, which stops
ASTRA-sim (``common/event-queue/EventQueue.cpp`` line 33, ``get_event_time() >
current_time``). :func:`astra_sim_shortest_message` is the fewest bytes a message needs
to take at least 1 ns on every link of a topology (``ceil`` of its fastest link's bytes
per ns); given it, :func:`planned_traces` writes the fastest of plan's candidates whose
every message has at least that many bytes, with that candidate's time.

Planned for ASTRA-sim (``store_and_forward``: every hop forwards a whole message, first
come first served), the choice
can differ from ``optcoll plan``'s, which plans for cut-through links. With
``versus_plan``, :func:`planned_traces` also runs that plan and says why its choice is not
written (``passed_over``): it has no trace form, a message of it is under 1 ns, or it is
slower with store-and-forward links (its time there).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import partial

from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.cost import DEFAULT_LATENCY
from optcoll.core.schedule import Schedule, Tree
from optcoll.core.step_schedule import StepSchedule
from optcoll.core.topology import Topology
from optcoll.exceptions import ExportError
from optcoll.export.chakra import chakra_traces, smallest_chunk_message
from optcoll.export.chakra_reduce_broadcast import reduce_broadcast_traces, smallest_piece_message
from optcoll.export.chakra_steps import step_traces
from optcoll.export.mscclpp_reduce_broadcast import tree_unit
from optcoll.schedules.spanning_tree_allreduce import aggregation_trees
from optcoll.sim.programs import ChakraTraces, chakra_tasks, chakra_ties, decode_chakra
from optcoll.sim.quotient import schedule_quotient
from optcoll.sim.simulator import DEFAULT_OVERHEAD, DEFAULT_SLICE, MAX_TASKS, Network, simulate
from optcoll.sim.size_plan import Candidate, SizePlan, candidates, plan
from optcoll.sim.steps import route_steps
from optcoll.verify.chakra.wire import decode_trace

__all__ = [
    "Ranked",
    "PlannedChoice",
    "planned_choices",
    "ranked_choices",
    "PlannedTraces",
    "planned_traces",
    "astra_sim_comm_size",
    "ASTRA_SIM_COMM_SIZE",
    "astra_sim_shortest_message",
    "smallest_message",
    "reduces_and_broadcasts",
    "NO_TRACE_FORM",
]

#: What ASTRA-sim's workload ``comm_size`` is for each collective, in terms of optcoll's
#: message size ``M`` over ``N`` NPUs: the data each NPU puts in (astra-sim 518bd51,
#: ``astra-sim/system/astraccl/native_collectives/collective_algorithm/Ring.cc`` lines
#: 70-86 and ``HalvingDoubling.cc``: all-reduce ends with ``data_size``, all-gather with
#: ``data_size * nodes``, reduce-scatter with ``data_size / nodes``, all-to-all with
#: ``data_size``). optcoll's ``M`` is the whole buffer: the all-gather's output, the
#: reduce-scatter's input, the all-to-all's per-NPU buffer.
ASTRA_SIM_COMM_SIZE = {
    "allreduce": "M (each NPU's whole buffer)",
    "allgather": "M / N (each NPU's input; ASTRA-sim gathers N times it)",
    "reduce_scatter": "M (each NPU's whole input; ASTRA-sim leaves M / N)",
    "alltoall": "M (each NPU's whole buffer)",
}


def astra_sim_comm_size(collective: str, size: int, ranks: int) -> int | None:
    """The ``comm_size`` an ASTRA-sim workload node needs for optcoll's ``size``-byte
    ``collective`` over ``ranks`` NPUs (:data:`ASTRA_SIM_COMM_SIZE`), or None when no
    whole number of bytes is it (an all-gather of ``size`` not a multiple of ``ranks``)
    or ASTRA-sim runs no custom traces of the collective.

    Examples
    --------
    >>> astra_sim_comm_size("allgather", 2**20, 8), astra_sim_comm_size("allreduce", 2**20, 8)
    (131072, 1048576)
    >>> astra_sim_comm_size("allgather", 1000, 3) is None, astra_sim_comm_size("broadcast", 8, 2)
    (True, None)
    """
    if collective not in ASTRA_SIM_COMM_SIZE:
        return None
    if collective == "allgather":
        return size // ranks if size % ranks == 0 else None
    return size


def astra_sim_shortest_message(topology: Topology) -> int:
    """The fewest bytes a message needs to take at least 1 ns on every link of
    ``topology`` in ASTRA-sim: ``ceil`` of its fastest link's bandwidth in bytes per ns
    (GB/s; ASTRA-sim's test is ``bytes / bandwidth_Bpns >= 1``, whose quotient is exactly 1
    at equality). A message under it frees a link in 0 ns (see the module docstring).
    Conservative where a message never crosses the fastest link.

    Examples
    --------
    >>> from optcoll.io.astra_sim import from_astra_network
    >>> hgx = {"topology": ["Switch"], "npus_count": [8], "bandwidth": [400], "latency": [936.25]}
    >>> astra_sim_shortest_message(from_astra_network(hgx))  # 400 GiB/s: 429.5 bytes a ns
    430
    """
    return math.ceil(max(topology.capacity.values()))


def smallest_message(traces: Sequence[bytes]) -> int:
    """The fewest bytes (``comm_size``) any send of the Chakra ``traces`` moves.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [one] = planned_traces(build("ring:4"), "allgather", [2**20], overhead=0)
    >>> one.slice_bytes, smallest_message(one.traces)  # k = 4 chunks of 64 KiB, whole
    (524288, 65536)
    """
    sizes = [
        attr.value
        for rank, data in enumerate(traces)
        for node in decode_trace(data, f"rank {rank}")[1]
        if node.type_name == "COMM_SEND_NODE" and (attr := node.get("comm_size")) is not None
    ]
    return min(sizes, default=0)


@dataclass(frozen=True)
class PlannedTraces:
    """The traces of one size: what plan chose (``chosen``), what is written
    (``method``, ``schedule``, with ``slice_bytes`` and ``priority``, the order also in a
    tree schedule's stats), plan's simulated
    time of it (``time_us``) and its lower bound, each rank's file (``traces``), and why
    the written candidate is not plan's choice (``passed_over``: one line per faster
    candidate left out; empty when it is). Planned for store-and-forward links with
    ``versus_plan``: what ``optcoll plan`` itself chose (``plan_method``) and its time
    (``plan_time_us``), with cut-through links; ``passed_over`` then also says why that
    choice is not written."""

    size: int
    chosen: str
    method: str
    priority: str
    slice_bytes: int | None
    time_us: float
    lower_bound_us: float
    schedule: Schedule | StepSchedule | AggregationSchedule
    traces: tuple[bytes, ...]
    passed_over: tuple[str, ...] = ()
    plan_method: str | None = None
    plan_time_us: float | None = None


@dataclass(frozen=True)
class Ranked:
    """One candidate plan simulated at a size, as it ran at its fastest: its time, name,
    link order, slice size and what it runs (a tree schedule, a step schedule, or, in
    :attr:`PlannedChoice.in_network`, aggregation trees)."""

    time_us: float
    method: str
    priority: str
    slice_bytes: int | None
    schedule: Schedule | StepSchedule | AggregationSchedule


@dataclass(frozen=True)
class PlannedChoice:
    """What plan chose at one size (``chosen``), its time and lower bound, and every
    candidate that is a tree or step schedule, fastest first (``ranked``; the first is
    ``chosen`` itself when that is one). A writer takes the first it can write. The
    in-network candidates (aggregation trees) are in ``in_network``, fastest first: only
    formats with switch channels (MSCCL++) hold them."""

    size: int
    chosen: str
    time_us: float
    lower_bound_us: float
    ranked: tuple[Ranked, ...]
    in_network: tuple[Ranked, ...] = ()
    #: The reduce + broadcast tree candidates (double binary, spanning, shallow trees) as
    #: aggregation schedules whose apexes are compute nodes, fastest first: formats with a
    #: reduce + broadcast writer (MSCCL++, :mod:`optcoll.export.mscclpp_reduce_broadcast`;
    #: Chakra, :mod:`optcoll.export.chakra_reduce_broadcast`) hold them.
    reduce_broadcast: tuple[Ranked, ...] = ()


def planned_choices(
    topology: Topology,
    collective: str,
    sizes: Sequence[int],
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
    slice_bytes: int | None = DEFAULT_SLICE,
    choose_slice: bool = True,
    store_and_forward: bool = False,
    file_tasks: bool = False,
    every_candidate: bool = False,
    options: Sequence[Candidate] | None = None,
    refined_methods: Collection[str] = (),
    settle: bool = True,
    orders: Collection[str] | None = None,
) -> list[PlannedChoice]:
    """Plan ``collective`` on ``topology`` at each of ``sizes`` (the simulator's
    ``overhead``, ``default_latency``, ``slice_bytes``, ``choose_slice`` and
    ``store_and_forward``, as :func:`optcoll.sim.size_plan.plan`): each size's choice and
    the candidates a file can hold, fastest first. ``file_tasks``: plan's task budget
    bounds the whole task graph (:func:`optcoll.sim.size_plan.plan`), as a file holds it.
    ``options``: the candidates (default :func:`optcoll.sim.size_plan.candidates`);
    ``refined_methods``, ``settle`` and ``orders`` (the link orders the file carries): as
    :func:`optcoll.sim.size_plan.plan`'s.

    Raises
    ------
    ExportError
        No candidate at some size is a tree or step schedule (all-to-all: plan's routes
        are written by ``export`` without a plan).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [one] = planned_choices(build("ring:4"), "allgather", [2**20], overhead=0)
    >>> one.chosen, [r.method for r in one.ranked][:2]
    ('timetable (k=4)', ['timetable (k=4)', 'multiport Swing'])
    """
    if collective == "alltoall":
        raise ExportError("all-to-all traces follow the optimal routes: export them without a plan")
    if options is None:
        options = candidates(topology, collective, root=root)
    rows = plan(
        topology,
        collective,
        sizes,
        root=root,
        overhead=overhead,
        slice_bytes=slice_bytes,
        default_latency=default_latency,
        choose_slice=choose_slice,
        options=options,
        store_and_forward=store_and_forward,
        file_tasks=file_tasks,
        every_candidate=every_candidate,
        refined_methods=refined_methods,
        settle=settle,
        orders=orders,
    )
    return ranked_choices(rows, options, topology)


def ranked_choices(
    rows: Sequence[SizePlan], options: Sequence[Candidate], topology: Topology | None = None
) -> list[PlannedChoice]:
    """Each planned size's choice (``rows`` of :func:`optcoll.sim.size_plan.plan` over
    ``options``) and its candidates a file can hold, fastest first; given the
    ``topology`` planned, also its reduce + broadcast tree candidates
    (:attr:`PlannedChoice.reduce_broadcast`).

    Raises
    ------
    ExportError
        No candidate at some size is a tree or step schedule.
    """
    found = []
    for row in rows:
        ran = {m: (p, s) for m, p, s in row.orders}
        ranked = []
        # fastest first, plan's own choice first among equals (PlannedChoice.ranked)
        timed = ((t, m != row.method, m) for m, t in row.candidates if t is not None and m in ran)
        for t, _, m in sorted(timed):
            # the winner runs its own schedule (a timetable's, a ring's), the others theirs
            schedule = row.schedule if m == row.method else _schedule_of(options, m)
            form = _steps_of(options, m) or schedule
            if form is not None:
                ranked.append(Ranked(t, m, *ran[m], form))
        if not ranked:
            raise ExportError(
                f"at {row.size} bytes no candidate of plan is a tree or step schedule to write"
            )
        aggregated = {o.method: o.aggregation for o in options if o.aggregation is not None}
        in_network = tuple(
            Ranked(t, m, *ran[m], aggregated[m])
            for t, m in sorted((t, m) for m, t in row.candidates if t is not None)
            if m in aggregated and m in ran
        )
        reduce_broadcast = tuple(
            Ranked(t, m, *ran[m], _reduce_broadcast(topology, m, option.trees, row.size, ran[m][1]))
            for t, m in sorted((t, m) for m, t in row.candidates if t is not None)
            if topology is not None and m in ran
            for option in options
            if option.method == m and reduces_and_broadcasts(option)
        )  # fmt: skip
        found.append(PlannedChoice(row.size, row.method, row.time_us, row.lower_bound_us,
                                   tuple(ranked), in_network, reduce_broadcast))  # fmt: skip
    return found


def reduces_and_broadcasts(option: Candidate) -> bool:
    """Whether plan's candidate ``option`` is an allreduce by reduce + broadcast over trees
    of the compute nodes (phases ``(True, False)`` on the same trees):
    :attr:`PlannedChoice.reduce_broadcast`.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [o.method for o in candidates(build("ring:8"), "allreduce") if reduces_and_broadcasts(o)]
    ['double binary tree']
    """
    return bool(option.trees) and option.phases == (True, False) and not option.down


def _reduce_broadcast(
    topology: Topology, method: str, trees: Sequence[Tree], size: int, slice_bytes: int | None
) -> AggregationSchedule:
    """Plan's candidate ``method`` that reduces up and broadcasts down ``trees`` (phases
    ``(True, False)``) as an aggregation schedule whose apexes are the trees' roots, with
    the ``pipeline`` unit that moves plan's piece at ``size`` (``stats.unit_bytes``,
    :func:`optcoll.export.mscclpp_reduce_broadcast.tree_unit`)."""
    k = sum(t.chunks for t in trees)
    return AggregationSchedule(
        topology.name, topology.compute_nodes, k, aggregation_trees(trees),
        topology_hash=topology.content_hash,
        stats={"method": method, "unit_bytes": tree_unit(size, k, slice_bytes)},
    )  # fmt: skip


def planned_traces(
    topology: Topology,
    collective: str,
    sizes: Sequence[int],
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
    slice_bytes: int | None = DEFAULT_SLICE,
    choose_slice: bool = True,
    store_and_forward: bool = False,
    shortest_message: int = 1,
    versus_plan: bool = False,
) -> list[PlannedTraces]:
    """Plan ``collective`` on ``topology`` at each of ``sizes`` (the simulator's
    ``overhead``, ``default_latency``, ``slice_bytes``, ``choose_slice`` and
    ``store_and_forward``, as :func:`optcoll.sim.size_plan.plan`) and write the traces of
    each size's choice. ASTRA-sim's analytical backend stores and forwards every message
    at a switch: plan for it with ``store_and_forward=True`` (then the reduce + broadcast
    tree candidates also search for their slice, as the fastest candidate does: first
    come first served, a coarse first slice can hide them; mesh:4x4 allreduce at 256 MiB,
    overhead 1: spanning trees 2,637.2 µs in 512 KiB slices, behind the ring's 2,518.1,
    and 2,095.5 in 128 KiB slices); it times a message in whole
    ns: give ``shortest_message=astra_sim_shortest_message(topology)`` to write, where
    plan's choice sends fewer bytes in a message, the fastest candidate that does not.
    Plan's task budget bounds every task the traces hold (``file_tasks``), so that
    ``optcoll simulate`` can run them. Plan's quotient times stand (``settle=False`` of
    :func:`~optcoll.sim.size_plan.plan`): the traces carry the quotient's ties, which an
    MSCCL or MSCCL++ file cannot. ``versus_plan`` (with ``store_and_forward``): also
    plan as ``optcoll plan`` does (cut-through links) and say, where its choice is not the
    one written, why (:func:`_versus_plan`).

    Raises
    ------
    ExportError
        No candidate at some size is a tree or step schedule (all-to-all: plan's routes
        are written by ``export`` without a plan), or none sends ``shortest_message``
        bytes or more in every message.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [one] = planned_traces(build("ring:4"), "allgather", [2**20], overhead=0)
    >>> one.method, one.slice_bytes, len(one.traces)
    ('timetable (k=4)', 524288, 4)
    >>> [one] = planned_traces(build("ring:4"), "allgather", [2**20], overhead=0,
    ...                        shortest_message=2**17)  # k = 4 chunks of 64 KiB: too short
    >>> one.method, smallest_message(one.traces), one.passed_over[0].split(",")[0]
    ('multiport Swing', 131072, 'timetable (k=4): 65536 B < 131072 B')
    """
    options = candidates(topology, collective, root=root) if collective != "alltoall" else None
    choices = planned_choices(
        topology, collective, sizes, root=root, overhead=overhead,
        default_latency=default_latency, slice_bytes=slice_bytes, choose_slice=choose_slice,
        store_and_forward=store_and_forward, file_tasks=True, options=options,
        refined_methods=[o.method for o in options or () if reduces_and_broadcasts(o)]
        if store_and_forward else (),
        settle=False,  # the traces carry the quotient's ties (``optcoll_tie``, order gates)
    )  # fmt: skip
    plain: list[SizePlan | None] = [None] * len(choices)
    if versus_plan and store_and_forward:
        assert options is not None  # planned_choices refused an all-to-all
        plain = list(plan(topology, collective, sizes, root=root, overhead=overhead,
                          slice_bytes=slice_bytes, default_latency=default_latency,
                          choose_slice=choose_slice, options=options))  # fmt: skip
    network = Network.of(topology, default_latency, store_and_forward=store_and_forward)
    found = []
    for choice, row in zip(choices, plain, strict=True):
        passed_over = []
        offered = _offered(choice)
        if all(r.method != choice.chosen for r in offered):
            passed_over.append(f"{choice.chosen}: {NO_TRACE_FORM}")
        for best in offered:
            traces: list[bytes] | None = None
            if isinstance(best.schedule, Schedule):  # known without writing the traces
                smallest = smallest_chunk_message(best.schedule, choice.size,
                                                  slice_bytes=best.slice_bytes)  # fmt: skip
            elif isinstance(best.schedule, AggregationSchedule):
                smallest = smallest_piece_message(best.schedule, choice.size, best.slice_bytes)
            else:
                traces = _written(best, choice.size, topology, network, overhead,
                                  store_and_forward)  # fmt: skip
                smallest = smallest_message(traces)
            if smallest >= shortest_message:
                if traces is None:
                    traces = _written(best, choice.size, topology, network, overhead,
                                      store_and_forward)  # fmt: skip
                break
            passed_over.append(f"{best.method}: {smallest} B < {shortest_message} B, {SHORT}")
        else:
            raise ExportError(
                f"at {choice.size} bytes every candidate of plan sends a message of fewer than "
                f"{shortest_message} bytes (under 1 ns on the fastest link: ASTRA-sim frees the "
                "link in 0 ns); give a larger size"
            )
        if row is not None:
            passed_over += _versus_plan(row, choice, best, passed_over, options or ())
        found.append(
            PlannedTraces(
                choice.size,
                choice.chosen,
                best.method,
                best.priority,
                best.slice_bytes,
                best.time_us,
                choice.lower_bound_us,
                _in_order(best.schedule, best.priority)
                if isinstance(best.schedule, Schedule)
                else best.schedule,
                tuple(traces),
                tuple(passed_over),
                None if row is None else row.method,
                None if row is None else row.time_us,
            )  # fmt: skip
        )
    return found


#: Why a candidate is not written as traces (``passed_over``).
NO_TRACE_FORM = (
    "no trace form (neither a tree schedule, a step schedule nor reduce + broadcast trees of "
    "the compute nodes)"
)


def _offered(choice: PlannedChoice) -> list[Ranked]:
    """The candidates of ``choice`` that traces can hold, fastest first (plan's choice first
    among equals, then tree and step schedules before reduce + broadcast trees)."""
    ranked = [*choice.ranked, *choice.reduce_broadcast]
    return sorted(ranked, key=lambda r: (r.time_us, r.method != choice.chosen))


#: Why a candidate with a message under :func:`astra_sim_shortest_message` is not written.
SHORT = "a message under 1 ns on the fastest link (ASTRA-sim's least)"


def _versus_plan(
    row: SizePlan,
    choice: PlannedChoice,
    written: Ranked,
    named: Sequence[str],
    options: Sequence[Candidate],
) -> list[str]:
    """Why ``optcoll plan``'s choice ``row`` (cut-through links) is not the ``written``
    candidate of ``choice`` (planned for store-and-forward links): no line where it is,
    or where a line of ``named`` already says why."""
    method = row.method
    if method == written.method or any(line.startswith(f"{method}: ") for line in named):
        return []
    offered = _offered(choice)
    held = any(r.method == method for r in choice.reduce_broadcast)
    if _steps_of(options, method) is None and row.schedule is None and not held:
        return [f"{method}: {NO_TRACE_FORM}"]
    stored = next((r.time_us for r in offered if r.method == method), None)
    with_stored = (
        f"{stored:.4f} µs" if stored is not None
        else f"cannot beat {written.method}'s {written.time_us:.4f} µs (its busiest link or "
             "latency floor)"
    )  # fmt: skip
    return [
        f"{method}: {row.time_us:.4f} µs in optcoll plan (cut-through links), {with_stored} "
        "with store-and-forward links (ASTRA-sim moves every message whole across every hop, "
        "first come first served)"
    ]


def _written(
    best: Ranked,
    size: int,
    topology: Topology,
    network: Network,
    overhead: float,
    store_and_forward: bool,
) -> list[bytes]:
    """The traces of plan's candidate ``best`` at ``size``, sliced and ordered as plan ran
    it (``network``: plan's)."""
    schedule, piece = best.schedule, best.slice_bytes
    if isinstance(schedule, StepSchedule):
        paths = route_steps(topology, schedule).paths  # gates only sends into one link
        return step_traces(schedule, size, slice_bytes=piece, paths=paths)
    write: Callable[..., list[bytes]]
    if isinstance(schedule, AggregationSchedule):  # reduce + broadcast trees
        write = partial(reduce_broadcast_traces, schedule, size, slice_bytes=piece,
                        priority=best.priority)  # fmt: skip
        timetable = False
    else:
        schedule = _in_order(schedule, best.priority)
        # plan simulates a schedule with a quotient from it, its ties alike on every translate
        equivariant = schedule_quotient(schedule, topology, network) is not None
        write = partial(chakra_traces, schedule, size, slice_bytes=piece, equivariant=equivariant)
        timetable = schedule.stats.get("priority") == "timetable"
    traces = write()
    if store_and_forward and piece is not None:
        # chaining every send into a link fixes ASTRA-sim's order (a timetable's: its start
        # times; trees': the order plan's simulation served them); kept where it costs
        # nothing (a later-ready send may no longer pass an earlier one)
        served = None
        if not timetable:
            served = _served(traces, topology, network, overhead, piece, size)
            if served is None:
                return traces
        chained = write(link_chains=True, served=served)
        time_us = _traces_time(chained, topology, network, overhead, piece, size)
        if time_us <= best.time_us * (1 + 1e-9):
            return chained
    return traces


def _decoded(traces: Sequence[bytes]) -> ChakraTraces:
    """Chakra ``traces`` (one per rank, written here) decoded without the checker."""
    return decode_chakra(
        [(f"planned.{r}.et", t) for r, t in enumerate(traces)], "planned", checked=False
    )


def _traces_time(
    traces: Sequence[bytes],
    topology: Topology,
    network: Network,
    overhead: float,
    slice_bytes: int | None,
    size: int,
) -> float:
    """``optcoll simulate``'s time (µs) of Chakra ``traces`` (one per rank) at ``size``."""
    decoded = _decoded(traces)
    graph = chakra_tasks(decoded, topology, network, slice_bytes=slice_bytes)
    ties = chakra_ties(decoded, graph)
    return simulate(graph, network, size, overhead=overhead, ties=ties).time_us


def _served(
    traces: Sequence[bytes],
    topology: Topology,
    network: Network,
    overhead: float,
    slice_bytes: int | None,
    size: int,
) -> list[float] | None:
    """When each send of Chakra ``traces`` (by ``optcoll_task``) starts on its first link in
    ``optcoll simulate``'s run of them (None: the run loops over slices of its sends, or
    chaining them would be too large to read back).

    A chain of ``L`` sends makes the reader (:func:`optcoll.sim.programs.chakra_tasks`)
    give the ``j``-th the transfers the ``j - 1`` before it wait for: about ``L**2 / 2``
    dependencies. Where a rank's sends, squared and halved, add up to more than
    :data:`optcoll.sim.simulator.MAX_TASKS`, the sends are not chained (FC4-Ring4
    all-reduce 256 MiB: 245,760 sends, chained, took over 15 GB to read)."""
    decoded = _decoded(traces)
    chained = sum(sum(node.type == 5 for node in nodes) ** 2 // 2 for nodes in decoded.nodes)
    if chained > MAX_TASKS:
        return None
    graph = chakra_tasks(decoded, topology, network, slice_bytes=slice_bytes)
    numbers = sorted(node.get("optcoll_task").value for nodes in decoded.nodes for node in nodes
                     if node.type == 5)  # fmt: skip
    if len(graph) != len(numbers):
        return None
    ties = chakra_ties(decoded, graph)
    run = simulate(graph, network, size, overhead=overhead, ties=ties, record=True)
    begins = [math.inf] * len(graph)
    for task, hop, begin, _ in run.transfers or ():
        if hop == 0:
            begins[task] = min(begins[task], begin)
    # chakra_tasks makes the sends' tasks in optcoll_task order, one loop (sliced traces)
    return _by_task(numbers, begins)


def _by_task(numbers: Sequence[int], begins: Sequence[float]) -> list[float]:
    """``begins`` (per task, in ``numbers`` order) indexed by task number."""
    served = [math.inf] * (max(numbers, default=-1) + 1)
    for number, begin in zip(numbers, begins, strict=True):
        served[number] = begin
    return served


def _in_order(schedule: Schedule, priority: str) -> Schedule:
    """``schedule`` with the link order plan ran it in (``priority``) in its stats, which
    :func:`optcoll.export.chakra.chakra_traces` writes into every transfer; a timetable
    keeps its start times.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> one = pack_arborescences(build("ring:4"))
    >>> _in_order(one, "depth").stats["priority"], _in_order(one, "progress") is one
    ('depth', True)
    """
    if schedule.stats.get("priority", "progress") in (priority, "timetable"):
        return schedule
    return replace(schedule, stats={**schedule.stats, "priority": priority})


def _schedule_of(options: Sequence[Candidate], method: str) -> Schedule | None:
    """The schedule of plan's candidate ``method`` (None: not one tree schedule)."""
    for option in options:
        if option.method == method and option.schedule is not None:
            return option.schedule
    return None


def _steps_of(options: Sequence[Candidate], method: str) -> StepSchedule | None:
    """The step schedule of plan's candidate ``method`` (None: not a log-step one)."""
    for option in options:
        if option.method == method and option.steps is not None:
            return option.steps.schedule
    return None
