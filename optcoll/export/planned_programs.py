"""``optcoll export --format msccl|mscclpp --size S``: the MSCCL XML or MSCCL++ plan of what
``optcoll plan`` chose at ``S``, checked, simulated and compared with plan's time.

At ``S`` :func:`optcoll.export.planned.planned_choices` gives plan's choice and every
candidate a file can hold, fastest first; the first :data:`FILE_CANDIDATES` the format
takes are written and simulated as files, and the fastest file its checker accepts is
kept (plan's choice unless the format loses more of it than of another; the checker
judges them fastest first, and one it refuses gives its place to the next candidate): a
tree schedule (its ``k`` and trees, :func:`optcoll.export.msccl.msccl_program` /
:func:`optcoll.export.mscclpp.mscclpp_plan`) or a log-step schedule
(:func:`optcoll.export.msccl_steps.msccl_step_program` /
:func:`optcoll.export.mscclpp_steps.mscclpp_step_plan`); and plan's reduce + broadcast
tree candidates, on top of those four (MSCCL++:
:func:`optcoll.export.mscclpp_reduce_broadcast.mscclpp_reduce_broadcast_plan`; MSCCL: the
tree allreduce of the same trees, each chunk's apex chosen freely,
:func:`optcoll.schedules.spanning_tree_allreduce.rooted_schedule`). Each file is judged by its
independent checker (MSCCL: with the topology, so every pair it connects must be joined by
a link or switches) and run by the simulator's reader (:mod:`optcoll.sim.programs`) at
``S`` with plan's slice size; the report gives both times, so the difference is stated,
not hidden.

What the formats cannot carry of plan's choice: its link order (an MSCCL program's order is
its thread blocks' step order; an MSCCL++ plan's, its ops'; a link serves what comes first,
where plan's ``depth`` order serves the slice with the deepest subtree ahead first:
dgx-h100:2 allreduce at 64 MiB, optimal (k=2), plan 256.66 µs, 262.81 simulated in full in
that order with ties first come first served, 282.81 in the data's order, the MSCCL++ file
281.65 with a thread block per range, 278.81 with a root's ranges interleaved in one, which
puts them in plan's order each unit, 274.80 so and in plan's 512 KiB pieces; so plan times
a file's candidates only in the orders its format carries, :data:`CARRIED_ORDERS`, and an
MSCCL++ tree candidate with several ranges a root is written both ways and the faster file
kept), the ties of plan's
quotient run (:func:`full_time`: the 256.66 above was 262.81 in full; plan now prints the
full run's time, ties first come first served, for the schedule it chose), a timetable's start
times, and per-message slices of a step schedule (both formats loop over the buffer); and
the readers charge the per-step overhead for every step of a thread block (an MSCCL receive,
an MSCCL++ wait or reduction), where plan charges it once per message. An MSCCL++ tree
candidate is also written in plan's pieces (:func:`file_forms`), which the topology's
pipeline unit may lump together. A step schedule's file with a channel per transfer may run
faster than plan times the schedule (ring:4 allgather at 1 MiB, no overhead: multiport Swing
5.932 µs in plan, its spread file 4.9322, the lower bound, while plan prints 5.2768 for
timetable (k=4)).

Examples
--------
>>> import tempfile, os
>>> from optcoll.export.request import ExportRequest
>>> path = os.path.join(tempfile.mkdtemp(), "ag.xml")
>>> report = export_planned_program(ExportRequest("ring:4", path, size=2**20, overhead=0))
>>> entry = report.data["files"][0]
>>> entry["planned"], entry["method"], entry["spread"]  # a channel per transfer of a pair
('timetable (k=4)', 'multiport Swing', True)
>>> entry["planned_time_us"], entry["file_time_us"]  # the file at the bound, 4.9322
(5.2768, 4.9322)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

from optcoll.bounds.msccl_steps import msccl_step_bound, step_bound_steps
from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.cost import DEFAULT_LATENCY
from optcoll.core.msccl_runtimes import DEFAULT_RUNTIME, RUNTIMES
from optcoll.core.output import check_output, input_files, require_suffix, write_output
from optcoll.core.schedule import PRIORITIES, Schedule
from optcoll.core.sizes import size_text
from optcoll.core.step_schedule import StepSchedule
from optcoll.exceptions import ExportError, ScheduleError
from optcoll.export.msccl import msccl_program, placements
from optcoll.export.msccl_fusion import fuses
from optcoll.export.msccl_steps import msccl_step_program, relay_paths, step_placements
from optcoll.export.mscclpp import (
    boxes_of,
    mscclpp_placements,
    mscclpp_plan,
    piece_unit,
    pipeline_unit,
)
from optcoll.export.mscclpp_nvls import mscclpp_nvls_plan
from optcoll.export.mscclpp_reduce_broadcast import mscclpp_reduce_broadcast_plan
from optcoll.export.mscclpp_steps import mscclpp_step_plan, step_layouts
from optcoll.export.placement import placement_paths
from optcoll.export.planned import PlannedChoice, Ranked, planned_choices
from optcoll.export.report import ExportReport
from optcoll.export.request import ExportRequest, schedule_path
from optcoll.export.runtimes import runtime_profile
from optcoll.io import load_topology
from optcoll.schedules.spanning_tree_allreduce import rooted_schedule
from optcoll.sim.programs import msccl_tasks, simulate_mscclpp
from optcoll.sim.simulator import DEFAULT_OVERHEAD, DEFAULT_SLICE, SimOptions, schedule_tasks
from optcoll.sim.size_plan import SLICE_GAIN
from optcoll.verify.msccl import verify_text
from optcoll.verify.msccl.limits import decode
from optcoll.verify.msccl.program import parse_program
from optcoll.verify.mscclpp import verify_plan
from optcoll.verify.mscclpp.plan import parse_plan

__all__ = [
    "export_planned_program",
    "FileChoice",
    "file_bound",
    "file_choice",
    "file_forms",
    "full_time",
    "Form",
    "program_texts",
    "check_texts",
    "refuse_unplanned",
    "request_sim",
    "NOT_CARRIED",
    "not_carried",
    "SWITCH_COST",
    "FILE_CANDIDATES",
    "CARRIED_ORDERS",
    "MESSAGE_PIECES",
    "split_choice",
    "msccl_loss",
]

#: How many of plan's fastest candidates (that the format holds) are written and simulated
#: as files; the one whose file runs fastest is kept. Reduce + broadcast tree candidates
#: among them (:attr:`~optcoll.export.planned.PlannedChoice.reduce_broadcast`) do
#: not count: offered on top, they displace no file that ran faster (mesh:4x4 allreduce at
#: 16M, overhead 1: the ring's 160.32 µs file, against the spanning trees' 180.53).
FILE_CANDIDATES = 4

#: The link orders (:data:`optcoll.core.schedule.PRIORITIES`, a timetable's) each format's
#: files carry: plan times their candidates only in those (:func:`optcoll.sim.size_plan.plan`,
#: ``orders``), so the time it prints is the time its file gets. An MSCCL or MSCCL++ link
#: serves what reaches it first, so plan's ``depth`` order (the slice with the deepest
#: subtree ahead first) is beyond both (mesh:4x4 reduce-scatter at 1 MiB without overhead:
#: optimal (k=2) 7.2118 µs in ``depth`` order, 9.6045 in the data's, its MSCCL++ file
#: 9.6045). An MSCCL thread block lists its steps in a timetable's start-time order, which
#: its links then keep within a loop (hypercube:4 allgather at 1 MiB, no overhead, 1 µs
#: links: timetable (k=4) 5.4746 µs in plan, its MSCCL file 5.4746; only in part with
#: 0.5 µs links, 3.3107 against 3.4746, so ``plan --format`` prints the files' own times,
#: :mod:`optcoll.export.file_rows`); an MSCCL++ file of a
#: timetable runs its trees in the data's order (0.5 µs links: 3.3107 in the timetable's
#: order, 3.6384 in the data's, the file 3.6384). Chakra traces carry every order (a send
#: waits for the one before it on its link), so plan's own times are theirs.
CARRIED_ORDERS: dict[str, tuple[str, ...]] = {
    "msccl": ("progress", "timetable"),
    "mscclpp": ("progress",),
}

#: What each format cannot carry of plan's choice (printed with every file).
NOT_CARRIED = {
    "msccl": "plan's depth link orders (thread blocks run their steps in program order: plan "
    "timed the data's), a timetable's start times and a log-step message's slices (the "
    "program loops over the buffer)",
    "mscclpp": "plan's depth link orders (thread blocks run concurrently, each in program "
    "order; a link serves what comes first: plan timed the data's), a timetable's start "
    "times and a log-step message's slices (a put is one transfer; only ops that issue one "
    "cost the overhead)",
}


def not_carried(fmt: str, runtime: str) -> str:
    """What a ``fmt`` file for ``runtime`` cannot carry of plan's choice: :data:`NOT_CARRIED`
    and, for MSCCL, which receives are steps of their own (a receive and the send forwarding
    it are one step only where the runtime runs fused steps, :mod:`optcoll.export.msccl_fusion`).

    >>> not_carried("msccl", "rccl").endswith("rccl runs no fused rcs/rrcs steps)")
    True
    """
    if fmt != "msccl":
        return NOT_CARRIED[fmt]
    if fuses(runtime_profile(runtime)):
        return NOT_CARRIED[fmt] + (
            "; a receive is a step of its own unless fused with the send forwarding it (rcs, "
            "rrcs: where that cannot deadlock and shortens the longest chain of steps)"
        )
    return NOT_CARRIED[fmt] + (
        f"; every receive is a step of its own ({runtime} runs no fused rcs/rrcs steps)"
    )


#: What a switch-channel (NVLS) plan costs beyond plan's aggregation trees (printed with it).
SWITCH_COST = (
    "each GPU issues glres (multimem load-reduce, then store) on its 1/N of the data, so its "
    "own share goes up and comes down once more: (N + 1)/N of the bytes on every GPU link, "
    "and barriers before and after (both in plan's time where the switches declare multimem)"
)


#: Why a format cannot hold plan's in-network allreduce where the switches reduce but the
#: compute nodes are not one NVLS domain (several boxes).
NO_IN_NETWORK = {
    "msccl": "MSCCL XML has no switch (NVLS) channels",
    "mscclpp": (
        "MSCCL++'s switch channels serve one NVLS domain, and across domains its executor "
        "(microsoft/mscclpp 1f5f065d, execution_plan.cc) has no group load-reduce without a "
        "multicast store (the DSL's glre is not parsed), so each box's partial sums would be "
        "stored into every GPU before crossing boxes: (2 + 1/N) of the bytes down every GPU link"
    ),
}


@dataclass(frozen=True)
class FileChoice:
    """The file form of plan's choice at one size: what plan chose (``chosen``, its time
    ``plan_us``) and its lower bound, the candidate written (``ranked``: the fastest as a
    file of plan's :data:`FILE_CANDIDATES` fastest the format holds), its checked files
    (``files``: path, text, placement), each one's simulated time at ``size``
    (``times``), every candidate tried as ``(candidate, file time)`` and why the
    others were not written (``refused``); ``interleave``: an MSCCL++ plan whose root's
    ranges share thread blocks (:func:`~optcoll.export.mscclpp.mscclpp_plan`); ``split``:
    an MSCCL step program whose reducing receives are ``r`` and ``re`` where the runtime
    also runs ``rrc`` (:func:`split_choice`); ``unit``: the pipeline unit of an MSCCL++
    tree plan (bytes; None: the topology's, or none); ``spread``: an MSCCL program with a
    channel per transfer of a GPU pair; ``pieces``: an MSCCL step program's messages each
    written as that many (:func:`file_forms`); ``layout``: where an MSCCL++ step plan keeps
    its blocks (``layout`` of :func:`~optcoll.export.mscclpp_steps.mscclpp_step_plan`);
    ``own_bound``, ``own_holds``: the format's own lower bound, exact, and what it holds
    for (:func:`file_bound`), which ``lower_bound_us`` is raised to where larger."""

    size: int
    chosen: str
    plan_us: float
    lower_bound_us: float
    ranked: Ranked
    files: tuple[tuple[Path, str, str], ...]
    times: tuple[float, ...]
    compared: tuple[tuple[Ranked, float], ...]
    refused: tuple[str, ...]
    interleave: bool = False
    split: bool = False
    unit: int | None = None
    spread: bool = False
    pieces: int = 1
    layout: str = "runs"
    own_bound: Fraction | None = None
    own_holds: str = ""

    @property
    def texts(self) -> tuple[str, ...]:
        """The files' texts (what a band of sizes must share)."""
        return tuple(text for _, text, _ in self.files)


class Form(NamedTuple):
    """How a candidate is written (:func:`file_forms`); the defaults are the plain form.

    Attributes
    ----------
    interleave : bool
        An MSCCL++ tree plan's ranges of one root in one thread block (``interleave`` of
        :func:`~optcoll.export.mscclpp.mscclpp_plan`).
    split : bool
        An MSCCL step program's reducing receives as ``r`` and ``re``
        (:func:`split_choice`).
    buffers : bool
        An MSCCL++ step plan's blocks in the collective's buffers (``layout="buffers"`` of
        :func:`~optcoll.export.mscclpp_steps.mscclpp_step_plan`), not in scratch as runs.
    unit : int or None
        An MSCCL++ tree plan's pipeline unit in bytes (None: the topology's).
    spread : bool
        An MSCCL program with a channel per transfer of a GPU pair (``spread`` of
        :func:`~optcoll.export.msccl.msccl_program`).
    pieces : int
        An MSCCL step program's messages each written as that many (``pieces`` of
        :func:`~optcoll.export.msccl_steps.msccl_step_program`).
    """

    interleave: bool = False
    split: bool = False
    buffers: bool = False
    unit: int | None = None
    spread: bool = False
    pieces: int = 1


#: The pieces an MSCCL step program's messages are also written in, spread (:func:`file_forms`).
MESSAGE_PIECES = (2, 4)


def file_forms(request: ExportRequest, ranked: Ranked, topology: Any, size: int) -> list[Form]:
    """The forms :func:`file_choice` writes and simulates ``ranked`` in at ``size``, the
    plain one first: one, but for an MSCCL++ tree schedule both the topology's pipeline
    unit (:func:`~optcoll.export.mscclpp.pipeline_unit`) and plan's piece
    (:func:`~optcoll.export.mscclpp.piece_unit`), the finer first (plan's pieces run as plan
    ran them; the topology's unit lumps small pieces together, which is mostly slower,
    torus 4x4 allreduce at 1 MiB 8.74 against 8.25 µs, not always: its reduce-scatter at
    1 MiB, 6.46 against 6.62), and each of them with a root's ranges interleaved too where
    a root has several (``k > 1``: each unit its puts leave deepest first, a part of plan's
    ``depth`` order no link keeps across blocks; dgx-h100:2 reduce-scatter at 1 MiB without
    overhead, 0.5 µs links: optimal (k=2) 5.1117 µs interleaved, 5.3666 a block per range,
    5.2209 in plan in the data's order); for an MSCCL step program that reduces, its reductions split too
    where the runtime runs ``rrc`` (:func:`split_choice`); every MSCCL form also with a
    channel per transfer of a GPU pair (``spread``: a GPU's receives in thread blocks of
    their own, side by side; torus 4x4 allgather at 1 MiB, overhead 1 µs, latency 0.5 µs:
    Trivance's file 14.311 µs on one channel a pair, 12.294 spread), and a step schedule's
    also spread with every message in :data:`MESSAGE_PIECES` pieces, each tried by
    :func:`file_choice` only where the form before it ran fastest so far (a GPU forwards a
    message's first piece while the rest arrives: torus 4x4 allreduce at 1 MiB, multiport
    Swing (latency), 20.486 µs whole, 16.432 in 4 pieces); for an MSCCL++ step plan, its
    blocks in the collective's buffers too where they are laid out otherwise for fewer runs
    (:func:`~optcoll.export.mscclpp_steps.step_layouts`: the runs layout runs in plan's
    time, the buffers' may run faster on several thread blocks, each going on with its own
    stretch; dgx-h100:2 hierarchical allgather at 16 MiB 40.28 µs against 56.59).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> topo, plans = build("ring:4"), ExportRequest("ring:4", "x.json", format="mscclpp")
    >>> trees = Ranked(1.0, "k=2", "depth", 512 * 1024, pack_arborescences(topo))
    >>> [(f.interleave, f.unit // 1024) for f in file_forms(plans, trees, topo, 2**20)]
    [(False, 128), (False, 256), (True, 128), (True, 256)]
    >>> [(f.interleave, f.unit // 1024) for f in file_forms(plans, trees, topo, 2**30)]
    [(False, 256), (False, 512), (True, 256), (True, 512)]
    >>> file_forms(ExportRequest("ring:4", "x.xml"), trees, topo, 2**20)
    [Form(interleave=False, split=False, buffers=False, unit=None, spread=False, pieces=1), \
Form(interleave=False, split=False, buffers=False, unit=None, spread=True, pieces=1)]
    >>> from optcoll.schedules.baselines.pat import pat_allgather
    >>> pat = Ranked(1.0, "PAT", "progress", None, pat_allgather(topo.compute_nodes))
    >>> [f.buffers for f in file_forms(plans, pat, topo, 2**20)]
    [False, True]
    """
    schedule = ranked.schedule
    if request.format == "msccl":
        splits = [split for split in (False, True) if not split or split_choice(request, ranked)]
        forms = [(False, 1), (True, 1)]
        if isinstance(schedule, StepSchedule):
            forms += [(True, pieces) for pieces in MESSAGE_PIECES]
        return [
            Form(split=split, spread=spread, pieces=pieces)
            for split in splits
            for spread, pieces in forms
        ]
    if request.format == "mscclpp" and isinstance(schedule, StepSchedule):
        layouts = (False, True)[: len(step_layouts(schedule))]
        return [Form(buffers=buffers) for buffers in layouts]
    if request.format != "mscclpp" or not isinstance(schedule, Schedule):
        return [Form()]
    coarse = pipeline_unit(topology, schedule)
    piece = piece_unit(schedule, size, ranked.slice_bytes)
    units = sorted({coarse, piece})
    ways = [False, True] if schedule.k > 1 else [False]  # a root's ranges: one block or k
    return [Form(interleave=interleave, unit=unit) for interleave in ways for unit in units]


def file_bound(
    request: ExportRequest, topology: Any, sim: SimOptions
) -> tuple[Fraction | None, str]:
    """A lower bound (µs) that holds for ``request.format``'s files alone and what it holds
    for, or ``(None, "")``: for MSCCL, :func:`optcoll.bounds.msccl_steps.msccl_step_bound`
    (every hop between GPUs a send step and a receive step; one fused step at a GPU
    between where ``request.runtime`` fuses); none for MSCCL++ (a put may be routed
    through GPUs, so plan's own bound is its files').

    >>> from optcoll.topologies import build
    >>> floor, holds = file_bound(ExportRequest("ring:4", "ag.xml"), build("ring:4"),
    ...                           SimOptions(overhead=1.0))
    >>> floor, holds.split(":")[0]  # two hops of a send, a receive and a 1 µs link
    (Fraction(6, 1), 'MSCCL step bound (rccl)')
    """
    if request.format != "msccl":
        return None, ""
    fused = fuses(runtime_profile(request.runtime))
    floor = msccl_step_bound(
        topology, request.collective, root=request.root, overhead=sim.overhead,
        default_latency=sim.default_latency, fused=fused,
    )  # fmt: skip
    return floor, (
        f"MSCCL step bound ({request.runtime}): holds for every MSCCL program the checker "
        f"accepts, {step_bound_steps(fused)}"
    )


def file_choice(
    request: ExportRequest,
    topology: Any,
    choice: PlannedChoice,
    sim: SimOptions,
    *,
    output: str | Path | None = None,
    written: dict[tuple[Any, ...], list[Any]] | None = None,
    own: tuple[Fraction | None, str] = (None, ""),
) -> FileChoice:
    """Write (in memory) and simulate at ``choice.size`` the first :data:`FILE_CANDIDATES`
    of plan's candidates (``choice.ranked``) that ``request.format`` holds, and keep the
    fastest file its checker accepts: the checker judges them fastest first, and one it
    refuses gives its place to the next candidate (module docstring). An MSCCL++ tree
    schedule that plan ran in a ``depth`` or ``progress-depth`` link order is written
    twice, its ranges in thread blocks of their own and a root's ranges interleaved in one
    (``interleave`` of :func:`~optcoll.export.mscclpp.mscclpp_plan`, which puts a GPU's
    reducing puts of one unit in that order), and the faster file is its file; likewise an
    MSCCL step program that reduces, for a runtime that runs ``rrc``, with its reductions
    ``rrc`` and split (:func:`split_choice`), and an MSCCL++ step plan with its blocks laid
    out for fewest runs and in the collective's buffers (:func:`file_forms`; of equal
    times the runs). A step schedule whose MSCCL program relays
    messages (:func:`~optcoll.export.msccl_steps.relay_paths`) is tried beside the
    :data:`FILE_CANDIDATES`, not in place of one (its relays cost steps plan does not
    run, so it must not push out a candidate whose file would be faster). Once a file is
    within :data:`~optcoll.sim.size_plan.SLICE_GAIN` of plan's lower bound, no further form
    or candidate is written (plan's own rule: the files are run by the simulator's rules,
    which the bound holds for, so none could gain more; torus 4x4 allgather at 1 GiB: one
    file simulated instead of eleven).
    ``output``: the file they are named after (default ``request.output``); ``written``: a
    cache of the files of each candidate schedule (by ``id`` and form, :data:`Form`) and
    whether they were checked, shared between sizes; ``own``: :func:`file_bound`, which
    raises the lower bound reported (the file choice's ``lower_bound_us``) where larger.

    Raises
    ------
    ExportError
        No candidate the format can hold.
    """
    fmt, size = request.format, choice.size
    written = {} if written is None else written
    refused: list[str] = []
    network = sim.network(topology)
    offered = list(choice.ranked)
    # reduce + broadcast trees (MSCCL++: mscclpp_reduce_broadcast_plan; MSCCL: rerooted)
    offered = sorted(offered + list(choice.reduce_broadcast), key=lambda r: r.time_us)
    if fmt == "mscclpp" and topology.nvls_domain():  # switch channels hold in-network plans
        offered = sorted(offered + list(choice.in_network), key=lambda r: r.time_us)
    elif any(r.method == choice.chosen for r in choice.in_network):  # ties: either first
        refused.append(f"{choice.chosen}: {NO_IN_NETWORK[fmt]}")
    pool: list[tuple[float, int, Ranked, list[tuple[Path, str, str]], list[float], Form]] = []
    relayed: set[int] = set()  # candidates whose MSCCL program relays messages
    candidates = iter(enumerate(offered))
    # a file this fast ends the search (plan's bound: a format's own only reports, so the
    # fastest file is the same with it or without)
    near = choice.lower_bound_us * (1 + SLICE_GAIN)
    floor, holds = own
    lower = max(choice.lower_bound_us, 0.0 if floor is None else float(floor))

    def at_bound(times: Any) -> bool:
        return any(t[0] <= near for t in times)

    while True:
        # a relayed MSCCL program, and reduce + broadcast trees, ride beside the candidates:
        # they take no other candidate's place
        while sum(id(t[2]) not in relayed and not _on_gpus(t[2].schedule) for t in pool) < (
            FILE_CANDIDATES
        ) and not at_bound(pool):
            order, ranked = next(candidates, (-1, None))
            if ranked is None:
                break
            tried: list[tuple[float, int, Ranked, Any, list[float], Form, int]] = []
            for number, form in enumerate(file_forms(request, ranked, topology, size)):
                if form.pieces > 1 and tried and tried[-1][0] > min(t[0] for t in tried):
                    continue  # more pieces only where the form before them did not lose
                if at_bound(tried):
                    break
                key = (id(ranked.schedule),) + form
                if key not in written or written[key][0] is not ranked.schedule:
                    try:
                        made: Any = program_texts(request, topology, ranked, output=output,
                                                  high=request.max_bytes,
                                                  interleave=form.interleave, split=form.split,
                                                  unit=form.unit, spread=form.spread,
                                                  pieces=form.pieces,
                                                  layout="buffers" if form.buffers else "runs")  # fmt: skip
                    except ExportError as err:
                        made = err
                    written[key] = [ranked.schedule, made, False]
                files = written[key][1]
                if isinstance(files, ExportError):
                    if number == 0:  # the other forms are only ever alternatives
                        refused.append(f"{ranked.method}: {files}")
                        break
                    continue
                # the first placement's file ranks the forms; the kept one's others are timed below
                times = [_simulated(fmt, files[0][1], topology, network, size, sim.overhead,
                                    ranked.slice_bytes, sim.default_latency)]  # fmt: skip
                tried.append((times[0], order, ranked, files, times, form, number))
            if tried:  # the fastest form; of equal ones (to 1e-9 µs: a step plan's
                # layouts give plan's time up to rounding) the first
                pool.append(min(tried, key=lambda t: (round(t[0], 9), t[6]))[:6])
                if fmt == "msccl" and isinstance(ranked.schedule, StepSchedule):
                    if relay_paths(ranked.schedule, topology):
                        relayed.add(id(ranked))
        if not pool:
            raise ExportError(
                f"no candidate of plan at {size} bytes has a {fmt} form: " + "; ".join(refused)
            )
        # the fastest file; of equal files plan's choice, then plan's order
        best = min(pool, key=lambda t: (t[0], t[2].method != choice.chosen, t[1]))
        entry = written[(id(best[2].schedule),) + best[5]]
        if not entry[2]:
            try:
                check_texts(request, topology, best[3])
            except ExportError as err:
                entry[1] = err
                refused.append(f"{best[2].method}: {err}")
                pool.remove(best)
                continue
            entry[2] = True
        break
    _, _, ranked, files, times, form = best
    times = times[:1] + [
        _simulated(fmt, text, topology, network, size, sim.overhead, ranked.slice_bytes,
                   sim.default_latency)
        for _, text, _ in files[1:]
    ]  # fmt: skip
    return FileChoice(
        size,
        choice.chosen,
        choice.time_us,
        lower,
        ranked,
        tuple(files),
        tuple(times),
        tuple((r, first) for first, _, r, _, _, _ in sorted(pool, key=lambda t: t[1])),
        tuple(refused),
        form.interleave,
        form.split,
        form.unit,
        form.spread,
        form.pieces,
        "buffers" if form.buffers else "runs",
        floor,
        holds,
    )


def request_sim(request: ExportRequest) -> SimOptions:
    """The simulator's options of ``request`` (plan's defaults where not given)."""
    return SimOptions(
        DEFAULT_OVERHEAD if request.overhead is None else request.overhead,
        DEFAULT_SLICE if request.slice is None else request.slice,
        DEFAULT_LATENCY if request.latency is None else request.latency,
    )


def refuse_unplanned(request: ExportRequest, flag: str) -> None:
    """Refuse what a planned program does not take (``flag``: what the option does, for
    the message).

    Raises
    ------
    ExportError
        A schedule file, ``-k``, ``--exact``, ``--groups``, ``--channels`` or an all-to-all.
    """
    given = [name for name, on in (("-k", request.k is not None), ("--exact", request.exact),
             ("--groups", request.groups is not None),
             ("--channels", request.channels is not None)) if on]  # fmt: skip
    if schedule_path(request.source) is not None or given:
        raise ExportError(
            f"{flag} for a topology: drop "
            + (", ".join(given) if given else "the schedule file (give a topology)")
        )
    if request.collective == "alltoall":
        raise ExportError(
            f"{flag.split()[0]} plans allgather, reduce-scatter, allreduce, broadcast or reduce"
        )


def export_planned_program(request: ExportRequest) -> ExportReport:
    """Write, check, simulate and report the program of plan's choice at ``request.size``
    (see the module docstring).

    Raises
    ------
    ExportError
        Options a planned program does not take (a schedule file, ``-k``, ``--exact``,
        ``--bands``, ``--groups``, an all-to-all), or no candidate the format can hold.
    """
    fmt, size = request.format, request.size
    assert size is not None and fmt in ("msccl", "mscclpp")
    require_suffix(request.output, (".xml",) if fmt == "msccl" else (".json",),
                   "an MSCCL program" if fmt == "msccl" else "an MSCCL++ execution plan")  # fmt: skip
    if request.bands:
        raise ExportError("--size writes what plan chose at that size for a topology: drop --bands")
    refuse_unplanned(request, "--size writes what plan chose at that size")
    topology = load_topology(request.source, **request.reader_keywords())
    sim = request_sim(request)
    (choice,) = planned_choices(
        topology, request.collective, [size], root=request.root, overhead=sim.overhead,
        default_latency=sim.default_latency, slice_bytes=sim.slice_bytes,
        choose_slice=request.slice is None, every_candidate=True, orders=CARRIED_ORDERS[fmt],
    )  # fmt: skip
    best = file_choice(request, topology, choice, sim, own=file_bound(request, topology, sim))
    ranked, files, times = best.ranked, best.files, best.times
    full_us = None  # where the file is slower than plan: how much of that no file closes
    if round(max(times), 4) > round(ranked.time_us, 4):
        full_us = full_time(ranked, sim, topology, size)
    inputs = input_files(request.source)
    for path, _, _ in files:
        check_output(path, force=request.force, inputs=inputs)
    for path, text, _ in files:
        write_output(path, text, force=request.force, inputs=inputs)
    stepped = fmt == "mscclpp" and isinstance(ranked.schedule, StepSchedule)
    entries = []
    for (path, _, placement), file_us in zip(files, times, strict=True):
        entries.append(
            {
                "path": str(path),
                "placement": placement,
                "bytes": size,
                "planned": choice.chosen,
                "planned_time_us": round(choice.time_us, 4),
                "method": ranked.method,
                "k": getattr(ranked.schedule, "k", None),
                "steps": getattr(ranked.schedule, "num_steps", None),
                "slice_bytes": ranked.slice_bytes,
                "priority": ranked.priority,
                "plan_time_us": round(ranked.time_us, 4),
                "plan_full_time_us": None if full_us is None else round(full_us, 4),
                "file_time_us": round(file_us, 4),
                "lower_bound_us": round(best.lower_bound_us, 4),
                "interleaved": best.interleave,
                "unit_bytes": best.unit,
                "spread": best.spread,
                "pieces": best.pieces,
                "layout": best.layout if stepped else None,
                "checked": True,
            }
        )
    compared = [
        {"method": r.method, "plan_time_us": round(r.time_us, 4), "file_time_us": round(t, 4)}
        for r, t in best.compared
    ]
    lines = []
    sliced = ranked.slice_bytes
    piece = "whole chunks" if sliced is None else size_text(sliced)
    chose = ""
    if choice.chosen != ranked.method:
        chose = f" (plan chose {choice.chosen}: {choice.time_us:.4f} µs)"
    for (path, _, placement), file_us in zip(files, times, strict=True):
        shared = ", a root's ranges interleaved in one thread block" if best.interleave else ""
        if best.unit is not None:
            shared += f", pipelined in {size_text(best.unit)} units"
        if best.spread:
            shared += ", a channel per transfer of a GPU pair"
        if best.pieces > 1:
            shared += f", each message in {best.pieces} pieces"
        if stepped and best.layout == "buffers":
            shared += ", blocks in the collective's buffers (faster than in scratch as runs)"
        lines.append(
            f"wrote {path}: {placement}, {ranked.method}{chose}, {_what(ranked)}{shared}; checked"
        )
        full = ""
        if full_us is not None and round(full_us, 4) != round(ranked.time_us, 4):
            full = f" ({full_us:.4f} µs in full, ties first come first served as a file's)"
        lines.append(
            f"  at {size_text(size)}: plan {ranked.time_us:.4f} µs{full}, this file simulated "
            f"{file_us:.4f} µs ({file_us / ranked.time_us - 1:+.1%}; "
            f"simulate it with --slice {piece})"
        )
    if len(compared) > 1:
        lines.append(
            "  plan's fastest candidates as files of this format (only the fastest file checked): "
            + ", ".join(
                f"{c['method']} {c['file_time_us']} µs (plan {c['plan_time_us']})" for c in compared
            )  # fmt: skip
        )
    lines.append(f"  not carried by {fmt}: {not_carried(fmt, request.runtime)}")
    switched = isinstance(ranked.schedule, AggregationSchedule) and not _on_gpus(ranked.schedule)
    if switched:
        lines.append(f"  switch channels: {SWITCH_COST}")
    warnings = [f"not written ({why})" for why in best.refused]
    data = {
        "format": fmt,
        "files": entries,
        "compared": compared,
        "not_carried": not_carried(fmt, request.runtime),
        "switch_cost": SWITCH_COST if switched else None,
        "warnings": warnings,
    }
    return ExportReport([path for path, _, _ in files], data, lines, warnings)


def full_time(ranked: Ranked, sim: SimOptions, topology: Any, size: int) -> float | None:
    """A tree schedule's time at ``size`` as plan ran it (its link order and slices),
    simulated task by task with ties first come first served, as a file's run breaks
    them (None: not a tree schedule). Plan searches a schedule compact under the
    topology's translations from its quotient (:mod:`optcoll.sim.quotient`), every
    translate of a task tied alike, an order no MSCCL++ or MSCCL field carries, and then
    times its choice this way (``_Search.settle`` of :mod:`optcoll.sim.size_plan`), so
    this is plan's time but where the whole task graph exceeded plan's budget (below, the
    quotient's figure against the full run's).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> from optcoll.sim.quotient import schedule_quotient, schedule_quotient_tasks
    >>> topo, sim = build("torus:4x4"), SimOptions(overhead=0)
    >>> schedule, network = pack_arborescences(topo), sim.network(topo)  # an allgather, k=4
    >>> quotient = schedule_quotient(schedule, topo, network)
    >>> graph = schedule_quotient_tasks(schedule, quotient, network, 2**20, priority="progress")
    >>> round(sim.run(graph, network, 2**20, ties=range(len(graph))).time_us, 4)  # plan's
    6.1299
    >>> round(full_time(Ranked(6.1299, "k=4", "progress", 512 * 1024, schedule), sim, topo, 2**20), 4)
    6.2938
    """
    schedule = ranked.schedule
    if not isinstance(schedule, Schedule):
        return None
    network = sim.network(topology)
    priority = ranked.priority if ranked.priority in PRIORITIES else None  # None: its stats
    graph = schedule_tasks(schedule, network, size, slice_bytes=ranked.slice_bytes,
                           priority=priority)  # fmt: skip
    return sim.run(graph, network, size).time_us


def _what(ranked: Ranked) -> str:
    """A candidate's shape in words: its steps, switch channels or its k."""
    if isinstance(ranked.schedule, StepSchedule):
        return f"{ranked.schedule.num_steps} steps"
    if _on_gpus(ranked.schedule):
        return (
            f"k = {ranked.schedule.k}, reduce + broadcast over {len(ranked.schedule.trees)} trees"
        )
    if isinstance(ranked.schedule, AggregationSchedule):
        return "switch channels (glres on each GPU's shard)"
    return f"k = {ranked.schedule.k}"


def _on_gpus(schedule: Any) -> TypeGuard[AggregationSchedule]:
    """Whether ``schedule`` is plan's reduce + broadcast over trees of the GPUs
    (:attr:`~optcoll.export.planned.PlannedChoice.reduce_broadcast`), not switch channels."""
    return isinstance(schedule, AggregationSchedule) and "unit_bytes" in schedule.stats


def program_texts(
    request: ExportRequest,
    topology: Any,
    ranked: Ranked,
    *,
    output: str | Path | None = None,
    low: int = 0,
    high: int | None = None,
    interleave: bool = False,
    split: bool = False,
    unit: int | None = None,
    spread: bool = False,
    pieces: int = 1,
    layout: str = "runs",
) -> list[tuple[Path, str, str]]:
    """The files of one candidate for messages of ``low`` to ``high`` bytes (None: no
    limit), named after ``output`` (default ``request.output``), not yet checked: (path,
    text, placement); ExportError if the format cannot hold it. ``interleave``: an MSCCL++
    tree schedule's plan with a root's ranges in one thread block
    (:func:`~optcoll.export.mscclpp.mscclpp_plan`); ``split``: an MSCCL step program's
    reducing receives as ``r`` and ``re`` (:func:`split_choice`); ``unit``: an MSCCL++ tree
    plan's pipeline unit in bytes (None: the topology's,
    :func:`~optcoll.export.mscclpp.pipeline_unit`); ``spread``: an MSCCL program with a
    channel per transfer of a GPU pair (:func:`~optcoll.export.msccl.msccl_program`);
    ``pieces``: an MSCCL step program's messages each written as that many; ``layout``: an
    MSCCL++ step plan's (:func:`~optcoll.export.mscclpp_steps.mscclpp_step_plan`). An MSCCL
    step program relays each
    message between GPUs the topology does not connect
    (:func:`~optcoll.export.msccl_steps.relay_paths`)."""
    schedule = ranked.schedule
    base = request.output if output is None else output
    name = f"optcoll {request.collective} {ranked.method}"
    out: list[tuple[Path, str, str]] = []
    if _on_gpus(schedule) and request.format == "msccl":
        try:  # each chunk's apex chosen freely: a tree allreduce of the same link loads
            schedule = rooted_schedule(schedule)
        except ScheduleError as err:
            raise ExportError(str(err)) from None
    elif _on_gpus(schedule):
        for placement, path in placement_paths(base, mscclpp_placements("allreduce"),
                                               request.placement, what="MSCCL++"):  # fmt: skip
            text = mscclpp_reduce_broadcast_plan(
                schedule, placement=placement, name=name, boxes=boxes_of(topology),
                unit_size=schedule.stats["unit_bytes"], min_message_size=low,
                max_message_size=high,
            ).text  # fmt: skip
            out.append((path, text, placement))
        return out
    if isinstance(schedule, AggregationSchedule):  # only MSCCL++ is offered them
        for placement, path in placement_paths(base, ("outofplace", "inplace"),
                                               request.placement, what="MSCCL++"):  # fmt: skip
            text = mscclpp_nvls_plan(topology, schedule, placement=placement, name=name,
                                     min_message_size=low, max_message_size=high).text  # fmt: skip
            out.append((path, text, placement))
        return out
    if request.format == "msccl":
        profile = runtime_profile(request.runtime)
        kinds = (
            step_placements(schedule.collective)
            if isinstance(schedule, StepSchedule)
            else placements(schedule.collective, profile)
        )
        for placement, path in placement_paths(base, kinds, request.placement,
                                               what=f"{profile.name}"):  # fmt: skip
            if isinstance(schedule, StepSchedule):
                text = msccl_step_program(schedule, runtime=profile, placement=placement,
                                          name=name, min_bytes=low, max_bytes=high,
                                          topology=topology, split_reductions=split,
                                          spread=spread, pieces=pieces).text  # fmt: skip
            else:
                text = msccl_program(schedule, runtime=profile, placement=placement, name=name,
                                     min_bytes=low, max_bytes=high, spread=spread).text  # fmt: skip
            out.append((path, text, placement))
        return out
    boxes = boxes_of(topology)
    if isinstance(schedule, StepSchedule):
        programs: tuple[str, ...] = ("outofplace",)
    else:
        programs = mscclpp_placements(schedule.collective)
    for placement, path in placement_paths(base, programs, request.placement,
                                           what="MSCCL++"):  # fmt: skip
        if isinstance(schedule, StepSchedule):
            plan = mscclpp_step_plan(schedule, boxes=boxes, name=name, min_message_size=low,
                                     max_message_size=high, layout=layout)  # fmt: skip
        else:
            assert isinstance(schedule, Schedule)
            plan = mscclpp_plan(schedule, placement=placement, boxes=boxes, name=name,
                                unit_size=unit or pipeline_unit(topology, schedule),
                                min_message_size=low, max_message_size=high,
                                interleave=interleave)  # fmt: skip
        out.append((path, plan.text, placement))
    return out


def split_choice(request: ExportRequest, ranked: Ranked) -> bool:
    """Whether an MSCCL file of ``ranked`` has a second form to try: a step schedule that
    reduces, for a runtime that runs ``rrc`` (its reducing receives then also written as
    ``r`` and ``re``, :func:`~optcoll.export.msccl_steps.msccl_step_program`; the faster
    file is kept: an ``rrc`` can fuse with the send forwarding the sum, split receives of
    one step run side by side).

    >>> from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
    >>> ranked = Ranked(1.0, "recursive doubling", "progress", None,
    ...                 recursive_doubling_allreduce(("a", "b")))
    >>> [split_choice(ExportRequest("ring:2", "x.xml", runtime=r), ranked)
    ...  for r in ("rccl", "msccl-executor")]
    [False, True]
    """
    schedule = ranked.schedule
    return (
        isinstance(schedule, StepSchedule)
        and "rrc" in runtime_profile(request.runtime).launch_step_types
        and any(send.reduce for messages in schedule.steps for send in messages)
    )


def msccl_loss(ranked: Ranked, topology: Any, runtime: str) -> str:
    """Why an MSCCL file of ``ranked`` for ``runtime`` runs slower than plan's time of it,
    in a few words (the parts of :func:`not_carried` that apply to it): receives as steps
    of their own, a step schedule's relayed messages, a timetable's start times (plan times
    an MSCCL file's trees only in orders it carries, :data:`CARRIED_ORDERS`).

    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
    >>> ring = build("ring:4")
    >>> ranked = Ranked(1.0, "recursive doubling", "progress", None,
    ...                 recursive_doubling_allreduce(ring.compute_nodes))
    >>> msccl_loss(ranked, ring, "rccl")
    'each receive a step of its own (rccl runs no rcs/rrcs); 4 messages relayed by GPUs between'
    """
    schedule = ranked.schedule
    if fuses(runtime_profile(runtime)):
        why = "a receive a step of its own unless fused with its forwarding send"
    else:
        why = f"each receive a step of its own ({runtime} runs no rcs/rrcs)"
    if isinstance(schedule, StepSchedule):
        relayed = len(relay_paths(schedule, topology))
        if relayed:
            why += f"; {relayed} messages relayed by GPUs between"
    elif ranked.priority == "timetable":
        why += "; no start times"
    return why


def check_texts(request: ExportRequest, topology: Any, files: list[tuple[Path, str, str]]) -> None:
    """Judge each file with its format's independent checker (MSCCL: with the topology);
    ExportError with the first finding of one it refuses."""
    for _, text, _ in files:
        if request.format == "msccl":
            checked = verify_text(text, runtime=runtime_profile(request.runtime).name,
                                  topology=topology)  # fmt: skip
            if not checked.ok:
                raise ExportError(f"check-xml: {checked.findings[0].message}")
        else:
            report = verify_plan(json.loads(text))
            if not report.ok:
                raise ExportError(f"check-plan: {report.findings[0][1]}")


def _simulated(fmt: str, text: str, topology: Any, network: Any, size: int, overhead: float,
               slice_bytes: int | None, latency: Any) -> float:  # fmt: skip
    """The simulator's time of a written program at ``size`` (its reader)."""
    sim = SimOptions(overhead, slice_bytes, latency)
    if fmt == "msccl":
        algo = decode(parse_program(text), RUNTIMES[DEFAULT_RUNTIME]).algo
        assert algo is not None  # the checker accepted the file
        graph = msccl_tasks(algo, topology, network, size, slice_bytes=slice_bytes)
    else:
        # from its quotient where every rank runs rank 0's program rotated (NVLS plans)
        return simulate_mscclpp(parse_plan(json.loads(text)), topology, network, size,
                                overhead=overhead, slice_bytes=slice_bytes).time_us  # fmt: skip
    return sim.run(graph, network, size).time_us
