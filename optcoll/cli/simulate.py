"""``optcoll simulate``: execute a schedule file or an MSCCL XML program, chunk by chunk."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.cli._core import (
    add_latency_option,
    add_reader_options,
    add_sizes_option,
    exact_amount,
    message_size,
    print_json,
    reader_options,
    sim_options,
    size_text,
)

NAME = "simulate"
HELP = "simulate a schedule or MSCCL XML on the topology: time, algbw and link use per size"
#: Shown at the end of ``optcoll simulate --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll simulate dgx-a100:2 allgather.xml
  optcoll simulate dgx-a100:2 trees.json --sizes 64K 1G --json
"""


def overhead_us(text: str) -> float:
    """A ``--overhead`` in microseconds: an exact finite number >= 0.

    Examples
    --------
    >>> overhead_us("0.5")
    0.5
    """
    return float(exact_amount(text, "overhead (microseconds)", "1 or 0.5"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument(
        "source",
        metavar="SCHEDULE|XML|PLAN|PREFIX",
        help="schedule file (JSON/YAML), MSCCL XML program, MSCCL++ plan (JSON) or Chakra "
        "traces PREFIX.<rank>.et",
    )
    add_sizes_option(parser)
    add_simulator_options(parser)
    parser.add_argument(
        "--switch-model",
        choices=("cut-through", "store-and-forward"),
        default="cut-through",
        help="how a slice crosses a node: its head goes on at once (default), or all of it "
        "arrives first (ASTRA-sim's analytical backend)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def add_simulator_options(parser: argparse.ArgumentParser) -> None:
    """The simulator's runtime parameters: ``--overhead``, ``--latency`` and ``--slice``."""
    parser.add_argument(
        "--overhead",
        type=overhead_us,
        default=None,
        metavar="US",
        help="per-step overhead of a connection in µs (default 1)",
    )
    add_latency_option(parser)
    parser.add_argument(
        "--slice",
        type=message_size,
        default=None,
        metavar="SIZE",
        help="largest piece a chunk is sent in (default 512K, NCCL's Simple protocol step)",
    )


def run(args: argparse.Namespace) -> int:
    from optcoll.core.busbw import bus_factor
    from optcoll.io import load_schedule, load_topology
    from optcoll.sim.cost_model import SIZES
    from optcoll.sim.programs import (
        chakra_tasks,
        chakra_ties,
        msccl_tasks,
        read_chakra,
        read_msccl,
    )
    from optcoll.sim.simulator import aggregation_tasks

    topology = load_topology(args.topo, **reader_options(args))
    sim = sim_options(args)
    floor, holds = None, ""  # a bound the input's format alone obeys (MSCCL XML)
    progress = sys.stderr.isatty()
    whole: Any = None  # a runner of its own (an MSCCL++ plan), else graph() is run
    sliced_as_written = False  # Chakra traces already cut into plan's slices
    overhead, slice_bytes = sim.overhead, sim.slice_bytes
    sizes = args.sizes or list(SIZES)
    network = replace(
        sim.network(topology), store_and_forward=args.switch_model == "store-and-forward"
    )
    if Path(f"{args.source}.0.et").is_file():
        traces = read_chakra(args.source)
        collective, root = traces.collective, None
        if traces.root is not None:
            root = (traces.members or topology.compute_nodes)[traces.root]
        sizes = _chakra_sizes(traces.size, args.sizes, args.source)
        tasks = chakra_tasks(traces, topology, network, slice_bytes=slice_bytes)
        sliced_as_written = traces.sliced
        if traces.members is not None and set(traces.members) != set(topology.compute_nodes):
            collective = None  # a process group's traces: the whole topology's bound does not apply

        ties = chakra_ties(traces, tasks)  # a compact schedule's: alike on every translate

        def graph(size: int) -> Any:
            return tasks, ties
    elif str(args.source).lower().endswith(".json") and _is_plan(args.source):
        from optcoll.sim.programs import simulate_mscclpp
        from optcoll.verify.mscclpp.plan import read_plan

        plan = read_plan(args.source)
        collective = _PLAN_COLLECTIVES.get(plan.collective, plan.collective)
        root = None

        def whole(size: int) -> Any:  # from its quotient where it has one
            return simulate_mscclpp(plan, topology, network, size, overhead=overhead,
                                    slice_bytes=slice_bytes, progress=progress)  # fmt: skip
    elif _is_xml(args.source):
        algo = read_msccl(args.source)
        collective, root = algo.collective or algo.coll, None
        floor, holds = _msccl_floor(args.source, algo, topology, collective, sim)

        def graph(size: int) -> Any:
            return msccl_tasks(algo, topology, network, size, slice_bytes=slice_bytes), None
    elif _is_aggregation(args.source):
        aggregation = _checked_aggregation(args.source, topology)
        collective, root = "allreduce", None

        def graph(size: int) -> Any:
            return aggregation_tasks(aggregation, network, size, slice_bytes=slice_bytes), None
    else:
        from optcoll.sim.size_plan import planned_slice, planned_tasks

        schedule = _checked_schedule(load_schedule(args.source), topology, args.source)
        collective, root = schedule.collective, schedule.root
        # in the order and slices plan chose for it (its stats), so both give one time
        slice_bytes = planned_slice(schedule) if args.slice is None else args.slice

        def graph(size: int) -> Any:
            return planned_tasks(topology, schedule, network, size, slice_bytes=args.slice), None

    bounds = None
    if _lower_bound(topology, collective, root) is not None:
        from optcoll.sim.size_plan import size_bound

        assert collective is not None  # _lower_bound has one
        bounds = size_bound(
            topology, collective, root=root, overhead=sim.overhead,
            default_latency=sim.default_latency,
        )  # fmt: skip
    rows = []
    for size in sizes:
        if whole is not None:
            run_ = whole(size)
        else:
            tasks, ties = graph(size)
            run_ = sim.run(tasks, network, size, progress=progress, ties=ties)
        row = run_.to_dict()
        row["bandwidth_bound_us"] = row["latency_bound_us"] = row["lower_bound_us"] = None
        row["startup_bound_us"] = row["ratio"] = None
        row["busbw"] = (
            None
            if collective is None
            else round(run_.algbw * float(bus_factor(collective, topology.num_compute)), 3)
        )
        row["bound_holds_for"] = None if bounds is None else bounds.describe() + holds
        if bounds is not None:
            lower = bounds.lower_us(size)  # the bound plan reports as well
            if floor is not None and floor > lower:
                lower = floor  # as plan --format msccl divides by
            row["bandwidth_bound_us"] = round(float(bounds.bandwidth_us(size)), 4)
            row["latency_bound_us"] = round(float(bounds.latency), 4)
            row["startup_bound_us"] = round(float(bounds.startup.time_us(size)), 4)
            row["lower_bound_us"] = round(float(lower), 4)
            row["ratio"] = None if lower == 0 else round(float(Fraction(run_.time_us) / lower), 6)
        rows.append(row)
    if args.json:
        print_json(
            {
                "topology": topology.name,
                "source": str(args.source),
                "collective": collective,
                "overhead_us": overhead,
                "slice_bytes": None if sliced_as_written else slice_bytes,
                "results": rows,
            }
        )
        return 0
    unit = topology.bandwidth_unit
    print(
        f"{collective} on {topology.name} ({topology.num_compute} compute nodes): {args.source}; "
        f"overhead {overhead:g} µs per step, "
        + (
            "each send whole, as the traces are sliced"
            if sliced_as_written
            else "whole chunks"
            if slice_bytes is None
            else f"slices up to {size_text(slice_bytes)}"
        )
    )
    if rows[0]["latency_bound_us"] is not None:
        from optcoll.bounds.msccl_steps import STEP_BOUND_SUMMARY

        print(
            "lower bound = max(bandwidth bound: data / optimal algbw, latency bound: "
            f"{rows[0]['latency_bound_us']:g} µs, start-up bound: cuts whose links carry data "
            "only after the overhead and the latency from the data's source and before the "
            "latency to its destination, depth bound: an overhead and a latency per forwarding "
            "step against the link cost of shallow schedules"
            + (f", {STEP_BOUND_SUMMARY}" if holds else "")
            + "); ratio = time / lower bound"
        )
        print(f"holds for: {rows[0]['bound_holds_for']}")
    print(
        f"{'size':>6}  {'time (µs)':>12}  {'algbw':>14}  {'busbw':>14}  {'bandwidth bound (µs)':>20}  "
        f"{'lower bound (µs)':>16}  {'ratio':>8}"
    )
    for row in rows:
        bandwidth = "-" if row["bandwidth_bound_us"] is None else f"{row['bandwidth_bound_us']:.3f}"
        shown = "-" if row["lower_bound_us"] is None else f"{row['lower_bound_us']:.3f}"
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.4f}"
        busbw = "-" if row["busbw"] is None else f"{row['busbw']:.3f} {unit}"
        print(
            f"{size_text(row['bytes']):>6}  {row['time_us']:>12.3f}  "
            f"{row['algbw']:>9.3f} {unit}  {busbw:>14}  {bandwidth:>20}  {shown:>16}  {ratio:>8}"
        )
    last = rows[-1]
    print(f"busiest links at {size_text(last['bytes'])} (utilisation; over time in 10 bins):")
    for link in last["links"][:5]:
        timeline = " ".join(f"{u:.2f}" for u in link["timeline"])
        print(f"  {link['link']:<32} {link['utilisation']:.3f}  [{timeline}]")
    return 0


_PLAN_COLLECTIVES = {"reducescatter": "reduce_scatter"}


def _is_plan(path: str) -> bool:
    """An MSCCL++ execution plan: a JSON object with ``gpus`` and ``protocol``."""
    import json

    from optcoll.core.limits import read_file
    from optcoll.exceptions import FileFormatError

    try:
        document = json.loads(read_file(path))
    except (FileFormatError, ValueError):
        return False
    return isinstance(document, dict) and "gpus" in document and "protocol" in document


def _chakra_sizes(size: int | None, sizes: list[int] | None, source: str) -> list[int]:
    """The one size Chakra traces are for: their metadata's, else the one ``--sizes`` gives."""
    from optcoll.exceptions import ScheduleError

    if size is not None and sizes and sizes != [size]:
        raise ScheduleError(
            f"{source}: the traces are for {size} bytes (comm_size is fixed in them); drop "
            "--sizes or give that size"
        )
    if size is None and (not sizes or len(sizes) != 1):
        raise ScheduleError(
            f"{source}: the traces name no message size (optcoll_bytes): give it with --sizes"
        )
    return [size] if size is not None else list(sizes or ())


def _is_xml(path: str) -> bool:
    """An MSCCL program (``.xml``, or a file whose first character is ``<``)."""
    if str(path).lower().endswith(".xml"):
        return True
    from optcoll.core.limits import read_file
    from optcoll.exceptions import FileFormatError

    try:
        return read_file(path).lstrip().startswith(b"<")
    except FileFormatError:
        return False


def _is_aggregation(path: str) -> bool:
    """A schedule file with aggregation trees (an in-network allreduce)."""
    from optcoll.core.aggregation import is_aggregation_document
    from optcoll.io.document import read_document

    return not _is_xml(path) and is_aggregation_document(read_document(path))


def _checked_aggregation(source: str, topology: Any) -> Any:
    """The aggregation schedule in ``source`` if the independent checker accepts it."""
    from optcoll.core.aggregation import AggregationSchedule
    from optcoll.core.schedule import check_schedule_topology
    from optcoll.exceptions import ScheduleError
    from optcoll.io.schedule_json import load_any_schedule
    from optcoll.verify.aggregation import verify_aggregation_schedule

    schedule = load_any_schedule(source)
    if not isinstance(schedule, AggregationSchedule):  # the caller checked _is_aggregation
        raise ScheduleError(f"{source}: not an allreduce by aggregation trees")
    check_schedule_topology(schedule, topology, source)
    result = verify_aggregation_schedule(topology, schedule)
    if not result.valid:
        raise ScheduleError(f"{source}: not a valid schedule on {topology.name}: {result.reason}")
    return schedule


def _checked_schedule(schedule: Any, topology: Any, source: str) -> Any:
    """``schedule`` if it is valid on ``topology`` (the independent verifier), else an error."""
    from optcoll.core.schedule import check_schedule_topology
    from optcoll.exceptions import ScheduleError
    from optcoll.schedules.collectives import collective_cut_ratio
    from optcoll.verify.schedule import verify_schedule

    check_schedule_topology(schedule, topology, source)
    cut_ratio = collective_cut_ratio(topology, schedule.collective, schedule.root)
    result = verify_schedule(topology, schedule, cut_ratio=cut_ratio)
    if not result.valid:
        raise ScheduleError(f"{source}: not a valid schedule on {topology.name}: {result.reason}")
    return schedule


def _msccl_floor(
    source: str, algo: Any, topology: Any, collective: str | None, sim: Any
) -> tuple[Fraction | None, str]:
    """The MSCCL step bound (:func:`optcoll.bounds.msccl_steps.msccl_step_bound`) of an MSCCL
    program the checker accepts for ``topology`` and executes to the right output, and
    what it holds for (appended to ``bound_holds_for``); ``(None, "")`` for any other
    program, or a broadcast or reduce (a program names no root). Fused where the program
    has a step that both receives and sends."""
    from optcoll.bounds.msccl_steps import msccl_step_bound, step_bound_steps
    from optcoll.core.schedule import canonical_collective
    from optcoll.verify.msccl import verify_file
    from optcoll.verify.msccl.limits import STEP_SEMANTICS

    if _lower_bound(topology, collective, None) is None:
        return None, ""
    report = verify_file(source, topology=topology)
    if not (report.ok and report.executed) or report.notes:
        return None, ""
    fused = any(
        STEP_SEMANTICS[step.type][0] and STEP_SEMANTICS[step.type][1]
        for blocks in algo.gpus.values()
        for tb in blocks.values()
        for step in tb.steps
    )
    floor = msccl_step_bound(
        topology, canonical_collective(str(collective)), overhead=sim.overhead,
        default_latency=sim.default_latency, fused=fused,
    )  # fmt: skip
    if floor is None:
        return None, ""
    return floor, (
        "; MSCCL step bound: holds for this program (checked for the topology and executed), "
        + step_bound_steps(fused)
    )


def _lower_bound(topology: Any, collective: str | None, root: str | None) -> Any:
    """The one bound of :func:`optcoll.schedules.collective_bound.collective_bound`
    (None for an unknown collective or a broadcast/reduce without root)."""
    from optcoll.core.schedule import COLLECTIVES, canonical_collective
    from optcoll.schedules.collective_bound import collective_bound

    if collective not in COLLECTIVES:
        return None
    if canonical_collective(collective) in ("broadcast", "reduce") and root is None:
        return None
    return collective_bound(topology, collective, root)
