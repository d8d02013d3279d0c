"""``optcoll export --format chakra`` as a library: ASTRA-sim traces ``PREFIX.<rank>.et`` (one
set per process group: ``PREFIX.group<i>.<rank>.et``), and their report.

Examples
--------
>>> import tempfile, os
>>> from optcoll.export.request import ExportRequest
>>> prefix = os.path.join(tempfile.mkdtemp(), "ring")
>>> report = export_chakra(ExportRequest("ring:4", prefix, format="chakra", size=2**20))
>>> [p.name for p in report.files], report.data["system_json_key"]
(['ring.0.et', 'ring.1.et', 'ring.2.et', 'ring.3.et'], 'all-gather-implementation-custom')
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.cost import DEFAULT_LATENCY
from optcoll.core.output import check_output, input_files, write_output
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import Schedule
from optcoll.core.sizes import size_text
from optcoll.core.step_schedule import StepSchedule
from optcoll.exceptions import ExportError, ScheduleError
from optcoll.export.chakra import ASTRA_SIM_COLLECTIVES, chakra_traces
from optcoll.export.planned import (
    ASTRA_SIM_COMM_SIZE,
    PlannedTraces,
    astra_sim_comm_size,
    astra_sim_shortest_message,
    planned_traces,
)
from optcoll.export.report import ExportReport
from optcoll.export.request import (
    ExportRequest,
    _verified,
    chosen_schedules,
    groups_schedule,
    schedule_path,
)
from optcoll.io import load_topology
from optcoll.schedules.collectives import collective_lower_bound
from optcoll.sim.cost_model import SIZES
from optcoll.sim.programs import chakra_tasks, chakra_ties, decode_chakra
from optcoll.sim.simulator import DEFAULT_OVERHEAD, DEFAULT_SLICE, SimOptions, simulate
from optcoll.verify.aggregation import verify_aggregation_schedule

__all__ = ["export_chakra"]


def export_chakra(request: ExportRequest) -> ExportReport:
    """Build the traces of ``request``, check, write and report them.

    From a topology without ``k``/``exact``/``groups`` (not an all-to-all): what ``optcoll
    plan`` chose at ``size`` (or at each of ``sizes`` with ``bands``: one set
    ``PREFIX.<size>`` each), sliced and ordered as plan simulated it
    (:mod:`optcoll.export.planned`); else the chosen schedule, in slices of ``slice``
    bytes if given."""
    if request.size is not None and request.bands:
        raise ExportError("--size writes one trace set: drop --bands, or drop --size and give "
                          "--bands --sizes")  # fmt: skip
    if request.channels is not None or request.max_bytes is not None:
        raise ExportError(
            "--format chakra writes traces for a size: drop --channels and --max-bytes"
        )
    prefix = str(request.output)
    # (prefix, schedule, allgather, time factor, optimum, group, traces, plan entry)
    sets: list[tuple[str, Schedule | StepSchedule | AggregationSchedule, Schedule | None, Fraction | None, Fraction | None,
                     int | None, list[bytes] | None, dict[str, Any]]] = []  # fmt: skip
    grouped = groups_schedule(request)
    planned_on = None  # the topology plan ran on
    planned = (
        schedule_path(request.source) is None
        and request.k is None
        and not request.exact
        and request.collective != "alltoall"  # the optimal routes, as without a plan
    )
    if grouped is not None:
        _, schedule, optimum = grouped
        factor = None if request.unchecked else schedule.time_factor
        for index, part in enumerate(schedule.groups):
            sets.append((f"{prefix}.group{index}", part, None, factor, optimum, index, None, {}))
    elif planned:
        topology, found = _plan(request)
        planned_on = topology
        for one in found:
            base = prefix if not request.bands else f"{prefix}.{size_text(one.size)}"
            entry = {
                "bytes": one.size,
                "planned": one.chosen,
                "method": one.method,
                "priority": one.priority,
                "slice_bytes": one.slice_bytes,
                "plan_time_us": round(one.time_us, 4),
                "lower_bound_us": round(one.lower_bound_us, 4),
                "switch_model": request.switch_model or "store-and-forward",
                "passed_over": list(one.passed_over),
            }
            if one.plan_method is not None:  # optcoll plan's own (cut-through links)
                entry["optcoll_plan"] = {"method": one.plan_method,
                                         "time_us": round(one.plan_time_us or 0.0, 4)}  # fmt: skip
            bound, factor = None, None
            if isinstance(one.schedule, StepSchedule):
                # executed by verify_steps when plan routed it; the traces by check-et below
                entry["steps"] = one.schedule.num_steps
            elif isinstance(one.schedule, AggregationSchedule):  # reduce + broadcast trees
                entry["trees"] = len(one.schedule.trees)
                if not request.unchecked:
                    factor = _reduce_broadcast_factor(topology, one.schedule)
            elif not request.unchecked:  # the verifier's exact time factor, or ExportError
                bound = collective_lower_bound(topology, one.schedule.collective, request.root)
                factor = _verified(topology, one.schedule, bound)
            sets.append((base, one.schedule, None, factor, bound, None, list(one.traces), entry))
    else:
        if request.bands:
            raise ExportError("--bands with --format chakra plans a topology: drop -k, --exact")
        _, chosen, _ = chosen_schedules(request)
        choice = chosen[0]
        sets.append((prefix, choice.schedule, choice.allgather, choice.time_factor,
                     choice.optimum, None, None, {}))  # fmt: skip
    files: list[tuple[str, bytes]] = []
    entries = []
    for base, schedule, allgather, factor, optimum, group, written, chose in sets:
        size = chose.get("bytes", request.size)  # a planned set's, else --size
        assert size is not None  # without --size every set is a planned one (--bands --sizes)
        if written is None:
            assert isinstance(schedule, Schedule)  # only planned sets are step schedules
            written = chakra_traces(schedule, size, allgather=allgather, slice_bytes=request.slice)
        traces = written
        if "method" in chose:  # plan's choice: checked by check-et, simulated as files
            chose["file_time_us"] = round(_simulated(request, planned_on, base, traces, chose), 4)
            chose["gap"] = round(chose["file_time_us"] / chose["plan_time_us"] - 1, 6)
        paths = [f"{base}.{rank}.et" for rank in range(len(traces))]
        files += zip(paths, traces, strict=True)
        collective = "allreduce" if allgather is not None else schedule.collective
        entries.append(
            {
                "prefix": base,
                "files": paths,
                "collective": collective,
                **({} if group is None else {"group": group}),
                "ranks": list(schedule.compute_nodes),
                "k": getattr(schedule, "k", None),
                "bytes": size,
                "astra_sim_comm_size": astra_sim_comm_size(collective, size, len(traces)),
                "time_factor": None if factor is None else fraction_text(factor),
                "optimum": None if optimum is None else fraction_text(optimum),
                **{key: value for key, value in chose.items() if key != "bytes"},
            }
        )
    inputs = input_files(request.source)
    for path, _ in files:
        check_output(path, force=request.force, inputs=inputs)
    for path, data in files:
        write_output(path, data, force=request.force, inputs=inputs)
    return _report(request, entries, [Path(path) for path, _ in files])


def _reduce_broadcast_factor(topology: Any, schedule: AggregationSchedule) -> Fraction:
    """The time factor of reduce + broadcast trees as a tree allreduce states it (time
    ``(M / N) * factor``): ``N`` times the aggregation verifier's exact one (time ``M *
    factor``, :func:`optcoll.verify.aggregation.verify_aggregation_schedule`); ExportError
    if the verifier rejects the trees."""
    verdict = verify_aggregation_schedule(topology, schedule)
    if not verdict.valid or verdict.time_factor is None:
        raise ExportError(f"the reduce + broadcast trees fail verification on {topology.name!r}: "
                          f"{verdict.reason}; nothing written (--unchecked writes them anyway)")  # fmt: skip
    return verdict.time_factor * len(schedule.compute_nodes)


def _simulated(
    request: ExportRequest, topology: Any, prefix: str, traces: list[bytes], chose: dict[str, Any]
) -> float:
    """``optcoll simulate``'s time of a planned trace set at its size (plan's slices, link
    order and switch model); ExportError if ``check-et`` refuses the traces."""
    try:
        decoded = decode_chakra([(f"{prefix}.{r}.et", t) for r, t in enumerate(traces)], prefix)
    except ScheduleError as err:
        raise ExportError(f"the {chose['method']} traces fail check-et: {err}; nothing "
                          "written") from None  # fmt: skip
    sim = SimOptions(
        DEFAULT_OVERHEAD if request.overhead is None else request.overhead,
        chose["slice_bytes"],
        DEFAULT_LATENCY if request.latency is None else request.latency,
        request.switch_model != "cut-through",
    )
    network = sim.network(topology)
    graph = chakra_tasks(decoded, topology, network, slice_bytes=chose["slice_bytes"])
    ties = chakra_ties(decoded, graph)
    return simulate(graph, network, chose["bytes"], overhead=sim.overhead, ties=ties).time_us


def _plan(request: ExportRequest) -> tuple[Any, list[PlannedTraces]]:
    """The topology of ``request`` and the planned traces of its size(s)."""
    if request.bands and not request.sizes:
        raise ExportError(
            "--bands with --format chakra needs --sizes (one trace set per size, e.g. 64K 1M "
            f"1G; plan's default {len(SIZES)} sizes would write {len(SIZES)} sets)"
        )
    topology = load_topology(request.source, **request.reader_keywords())
    sizes = [request.size] if request.size is not None else list(request.sizes or ())
    return topology, planned_traces(
        topology,
        request.collective,
        sizes,
        root=request.root,
        overhead=DEFAULT_OVERHEAD if request.overhead is None else request.overhead,
        default_latency=DEFAULT_LATENCY if request.latency is None else request.latency,
        slice_bytes=DEFAULT_SLICE if request.slice is None else request.slice,
        choose_slice=request.slice is None,
        store_and_forward=request.switch_model != "cut-through",
        # ASTRA-sim times a message in whole ns: none shorter than 1 ns on its links
        shortest_message=astra_sim_shortest_message(topology),
        versus_plan=True,  # where optcoll plan's own choice differs, say why
    )


def _report(
    request: ExportRequest, entries: list[dict[str, Any]], written: list[Path]
) -> ExportReport:
    collective = entries[0]["collective"]
    key = ASTRA_SIM_COLLECTIVES.get(collective)
    warnings = []
    if key is None:
        warnings.append(
            f"ASTRA-sim runs custom traces only for all-reduce, all-gather, reduce-scatter and "
            f"all-to-all (astra-sim Workload.cc); these {collective} traces are for optcoll "
            "check-et and simulate"
        )
    if request.unchecked:
        warnings.append("not verified (--unchecked): no time factor is reported")
    for entry in entries:
        if key is not None and entry["astra_sim_comm_size"] is None:
            warnings.append(
                f"{entry['prefix']}: {entry['bytes']} bytes over {len(entry['files'])} NPUs "
                "has no whole per-NPU input: an ASTRA-sim all-gather workload cannot ask for "
                "the same data (give a size that is a multiple of the NPUs)"
            )
    data = {"format": "chakra", "system_json_key": key, "sets": entries, "warnings": warnings}
    lines = []
    for entry in entries:
        factor = entry["time_factor"]
        shown = "unverified" if factor is None else f"time factor {factor}"
        if "steps" in entry:
            shown = "a log-step schedule, executed by verify_steps and check-et"
        elif "trees" in entry:
            shown = f"reduce + broadcast over {entry['trees']} trees, {shown}"
        group = "" if "group" not in entry else f" (group {entry['group']})"
        lines.append(
            f"wrote {entry['prefix']}.0.et .. {entry['prefix']}.{len(entry['files']) - 1}.et"
            f"{group}: {entry['collective']}, {len(entry['files'])} ranks, "
            + (f"{entry['steps']} steps" if "steps" in entry else f"k = {entry['k']}")
            + f", {entry['bytes']} bytes, {shown}"
        )
        if "method" in entry:
            piece = entry["slice_bytes"]
            chosen = "" if entry["planned"] == entry["method"] else (
                f" (plan chose {entry['planned']})")  # fmt: skip
            lines.append(
                f"  plan: {entry['method']}{chosen}, slices of "
                f"{'whole chunks' if piece is None else size_text(piece)}, order "
                f"{entry['priority']}: simulated {entry['plan_time_us']} µs "
                f"({entry['switch_model']} switches); these traces simulated "
                f"{entry['file_time_us']} µs ({entry['gap']:+.2%}), check-et: correct"
            )
            plain = entry.get("optcoll_plan")
            if plain is not None and (plain["method"], plain["time_us"]) != (
                entry["method"], entry["plan_time_us"]):  # fmt: skip
                lines.append(
                    f"  optcoll plan (cut-through links): {plain['method']}, {plain['time_us']} "
                    "µs; planned here as ASTRA-sim runs traces (every hop forwards a whole "
                    "message, first come first served)"
                )
            lines += [f"  passed over: {line}" for line in entry["passed_over"]]
        if key is not None:
            lines.append(f'  ASTRA-sim system JSON: "{key}": ["{entry["prefix"]}"]')
            comm = entry["astra_sim_comm_size"]
            lines.append(
                f"  ASTRA-sim workload comm_size: "
                f"{'none is exact' if comm is None else f'{comm} bytes'} "
                f"({ASTRA_SIM_COMM_SIZE[collective]})"
            )
    return ExportReport(written, data, lines, warnings)
