"""``optcoll export --format mscclpp`` as a library: MSCCL++ execution plans (FILE out of
place, or the placement ``placement`` asks for, and one per process group), each checked by
the independent checker before anything is written, and their report.

An allreduce on a topology whose compute nodes share switches that reduce and multicast
(one NVLS domain, :meth:`~optcoll.core.topology.Topology.nvls_domain`) is written as the
in-network allreduce ``solve`` finds (the optimal aggregation trees where the exact LP runs,
else NCCL's NVLS, :func:`optcoll.schedules.baselines.nvls_schedule`; verified), on switch
channels (:func:`optcoll.export.mscclpp_nvls.mscclpp_nvls_plan`), with the tree schedule's
LL plan beside it where that is simulated faster at small sizes.

Examples
--------
>>> import tempfile, os
>>> from optcoll.export.request import ExportRequest
>>> path = os.path.join(tempfile.mkdtemp(), "ring.json")
>>> report = export_mscclpp(ExportRequest("ring:4", path, format="mscclpp"))
>>> [p.name for p in report.files]  # the LL plan: no slower up to 256 KiB
['ring.json', 'ring.ll.json']
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.output import check_output, input_files, require_suffix, write_output
from optcoll.core.schedule import a_collective
from optcoll.core.sizes import size_text
from optcoll.exceptions import ExportError, MethodError
from optcoll.export.mscclpp import (
    DEFAULT_UNIT,
    LL_COLLECTIVES,
    boxes_of,
    mscclpp_placements,
    mscclpp_plan,
    pipeline_unit,
)
from optcoll.export.mscclpp_nvls import mscclpp_nvls_plan
from optcoll.export.placement import placement_paths
from optcoll.export.report import ExportReport
from optcoll.export.request import (
    ExportRequest,
    chosen_schedules,
    groups_schedule,
    schedule_path,
    topology_of,
)
from optcoll.io.schedule_json import load_any_schedule
from optcoll.schedules.aggregation import aggregation_schedule
from optcoll.schedules.baselines import nvls_schedule
from optcoll.schedules.spanning_tree_allreduce import is_spanning_tree_allreduce
from optcoll.sim.programs import mscclpp_tasks
from optcoll.sim.simulator import Network, simulate
from optcoll.verify.aggregation import verify_aggregation_schedule
from optcoll.verify.mscclpp import granule, verify_plan
from optcoll.verify.mscclpp.plan import parse_plan

__all__ = ["export_mscclpp", "box_source", "ll_limit", "in_network_schedule", "LL_SIZES"]

#: Message sizes at which :func:`ll_limit` compares an LL plan with a Simple one.
LL_SIZES = tuple(2**e for e in range(10, 25, 2))


def box_source(boxes: dict[str, str], topology: Any) -> str:
    """Where a plan's boxes (memory channels inside one) come from, in words.

    Examples
    --------
    >>> box_source({"g0": "server0", "g1": "server0"}, object())
    "the topology's groups: 1 box, 2 GPUs in boxes"
    >>> box_source({}, None)
    'no topology (--unchecked): every GPU a box of its own'
    """
    if topology is None:
        return "no topology (--unchecked): every GPU a box of its own"
    if not boxes:
        return "the topology's groups: none, every GPU a box of its own"
    count = len(set(boxes.values()))
    return f"the topology's groups: {count} box{'es' * (count != 1)}, {len(boxes)} GPUs in boxes"


def export_mscclpp(request: ExportRequest) -> ExportReport:
    """Build the plans of ``request``, check them with the independent checker, write and
    report them (an LL plan beside the Simple one where it is simulated faster)."""
    require_suffix(request.output, (".json",), "an MSCCL++ execution plan")
    if request.bands:
        raise ExportError("--bands writes plan's choice per band for a topology: drop -k, "
                          "--exact, --groups or the schedule file")  # fmt: skip
    if request.channels is not None or request.max_threadblocks is not None:
        raise ExportError(
            "--channels and --max-threadblocks apply to MSCCL XML; an "
            "MSCCL++ plan chooses its channels and thread blocks itself"
        )
    base = Path(request.output)
    jobs: list[tuple[Any, Any, str, str]] = []  # schedule, allgather, suffix, name
    files: list[tuple[Path, Any, str, Any]] = []  # path, plan, placement, check-plan's report
    switched: set[int] = set()  # the files on switch channels
    source = schedule_path(request.source)
    loaded = None if source is None else load_any_schedule(source)
    grouped = None
    if (
        source is not None
        and isinstance(loaded, AggregationSchedule)
        and not is_spanning_tree_allreduce(loaded)  # those are tree schedules rerooted
    ):
        topology = _aggregation_file(request, source, loaded, files)
        switched = set(range(len(files)))
    else:
        grouped = groups_schedule(request)
    if grouped is not None:
        topology, schedule, _ = grouped
        for index, part in enumerate(schedule.groups):
            jobs.append((part, None, f".group{index}", f"{schedule.collective} group {index}"))
    elif not files:
        topology, chosen, _ = chosen_schedules(request)
        first = chosen[0]
        jobs.append((first.schedule, first.allgather, "", ""))
    boxes = boxes_of(topology)
    for schedule, allgather, suffix, label in jobs:
        coll = "allreduce" if allgather is not None else schedule.collective
        nvls = None if grouped is not None or coll != "allreduce" else in_network_schedule(topology)
        job_file = base.with_name(f"{base.stem}{suffix}{base.suffix}")
        unit = DEFAULT_UNIT if topology is None else pipeline_unit(topology, schedule, allgather)
        for placement, path in placement_paths(
            job_file,
            mscclpp_placements(coll),
            request.placement,
            what=f"MSCCL++ with {a_collective(coll)}",
        ):
            name = f"optcoll {label or coll} {schedule.topology} {placement}"
            job = (schedule, allgather, placement, unit, name, boxes)
            switched_job = (topology, nvls, placement, f"{name} NVLS")
            plans = [(_simple(job, switched_job, 0, request.max_bytes), "")]
            if coll in LL_COLLECTIVES and topology is not None and grouped is None:
                try:
                    packets = _plan(*job, "LL", 0, None)
                except ExportError:  # no LL plan within the executor's limits: Simple only
                    packets = None
                limit = None if packets is None else ll_limit(topology, plans[0][0], packets)
                if limit is not None and (request.max_bytes is None or limit < request.max_bytes):
                    plans = [
                        (_simple(job, switched_job, limit + 1, request.max_bytes), ""),
                        (_plan(*job, "LL", 0, limit), ".ll"),
                    ]
            for plan, tag in plans:
                report = verify_plan(plan.document)
                if not report.ok:
                    kind, message = report.findings[0]
                    raise ExportError(
                        f"the {coll} plan fails check-plan ({kind}: {message}); nothing written"
                    )
                files.append(
                    (path.with_name(f"{path.stem}{tag}{path.suffix}"), plan, placement, report)
                )
                if tag == "" and nvls is not None:
                    switched.add(len(files) - 1)
    inputs = input_files(request.source)
    for path, *_ in files:
        check_output(path, force=request.force, inputs=inputs)
    for path, plan, *_ in files:
        write_output(path, plan.text, force=request.force, inputs=inputs)
    entries = [
        {
            "path": str(path),
            "placement": placement,
            "protocol": plan.document["protocol"],
            "min_message_size": plan.document["min_message_size"],
            "max_message_size": plan.document["max_message_size"],
            "threadblocks_per_gpu": plan.threadblocks,
            "max_ops_per_threadblock": plan.max_ops,
            "pieces_per_tree": plan.pieces,
            "pipeline_unit_bytes": plan.unit_size,
            "memory_channel_pairs": plan.memory_pairs,
            "port_channel_pairs": plan.port_pairs,
            "boxes_from": box_source(boxes, topology),
            "size_granule_bytes": report.granule,
            "switch_channels": (
                {"switches": list(topology.nvls_domain()), "ranks": len(plan.document["gpus"])}
                if index in switched
                else None
            ),
            "checked": True,
        }
        for index, (path, plan, placement, report) in enumerate(files)
    ]
    lines = []
    for e in entries:
        if e["switch_channels"] is not None:
            lines.append(
                f"wrote {e['path']}: {e['placement']}, {e['protocol']} for {_band(e)}, "
                f"in-network (NVLS) on switch channels over all "
                f"{e['switch_channels']['ranks']} GPUs through "
                f"{', '.join(e['switch_channels']['switches'])}: each GPU's shard by glres "
                f"(multimem load-reduce and store) in {e['threadblocks_per_gpu']} thread "
                f"blocks per GPU (at most {e['max_ops_per_threadblock']} ops each), "
                f"{_pieces(e)}, barriers on memory channels; sizes: multiples of "
                f"{e['size_granule_bytes']} B; check-plan: correct"
            )
            continue
        lines.append(
            f"wrote {e['path']}: {e['placement']}, {e['protocol']} for {_band(e)}, "
            f"{e['threadblocks_per_gpu']} thread blocks "
            f"per GPU (at most {e['max_ops_per_threadblock']} ops each), "
            f"{_pieces(e)}, {e['memory_channel_pairs']} GPU pairs "
            f"on memory and {e['port_channel_pairs']} on port channels (boxes from "
            f"{e['boxes_from']}); sizes: multiples of "
            f"{e['size_granule_bytes']} B; check-plan: correct"
        )
    return ExportReport(
        [path for path, *_ in files], {"format": "mscclpp", "files": entries}, lines, []
    )


def _aggregation_file(
    request: ExportRequest, path: Path, schedule: AggregationSchedule, files: list
) -> Any:
    """The plans of a schedule file of aggregation trees (``solve -o``), on switch channels,
    checked, appended to ``files``; its topology (``--topology`` or its built-in spec)."""
    given = [flag for flag, on in (("-k", request.k is not None), ("--exact", request.exact),
             ("--groups", request.groups is not None), ("--root", request.root is not None))
             if on]  # fmt: skip
    if given:
        raise ExportError(f"{path} holds its own in-network allreduce: drop {', '.join(given)}")
    if request.collective != "allreduce":
        raise ExportError(
            f"{path} holds an allreduce by aggregation trees; give --collective allreduce"
        )
    topology = topology_of(request.topology, schedule, path, request.reader_keywords())
    if not request.unchecked:
        verdict = verify_aggregation_schedule(topology, schedule)
        if not verdict.valid:
            raise ExportError(
                f"{path} fails verification on {topology.name!r}: {verdict.reason}; nothing "
                "written (--unchecked writes it anyway)"
            )
    for placement, out in placement_paths(
        Path(request.output), ("outofplace", "inplace"), request.placement, what="MSCCL++"
    ):
        plan = mscclpp_nvls_plan(
            topology, schedule, placement=placement, max_message_size=request.max_bytes,
            name=f"optcoll allreduce {schedule.topology} {placement} NVLS",
        )  # fmt: skip
        report = verify_plan(plan.document)
        if not report.ok:
            kind, message = report.findings[0]
            raise ExportError(f"the plan fails check-plan ({kind}: {message}); nothing written")
        files.append((out, plan, placement, report))
    return topology


def in_network_schedule(topology: Any) -> Any:
    """The verified in-network allreduce an MSCCL++ plan of ``topology`` runs on switch
    channels: ``solve``'s optimal aggregation trees where the exact LP runs (at most 8
    capable switches), else NCCL's NVLS (:func:`optcoll.schedules.baselines.nvls_schedule`);
    None where the compute nodes share no NVLS domain (or there is no topology).

    Raises
    ------
    ExportError
        The schedule fails :func:`optcoll.verify.aggregation.verify_aggregation_schedule`.
    """
    if topology is None or topology.num_compute < 2 or not topology.nvls_domain():
        return None
    try:
        schedule: Any = aggregation_schedule(topology)
    except MethodError:  # the exact LP takes at most 8 capable switches
        schedule = nvls_schedule(topology)
        if schedule is None:  # no box switch both ways to every GPU: as nvls_domain says
            return None
    verdict = verify_aggregation_schedule(topology, schedule)
    if not verdict.valid:
        raise ExportError(
            f"the in-network allreduce fails verification on {topology.name!r}: "
            f"{verdict.reason}; nothing written"
        )
    return schedule


def _pieces(entry: dict[str, Any]) -> str:
    """How a plan cuts each tree's range: pipeline units, or pieces (at most, since a
    range of fewer chunks has fewer)."""
    if entry["protocol"] == "LL":
        return "whole ranges in packets"
    if entry["pipeline_unit_bytes"]:
        return f"ranges pipelined in {entry['pipeline_unit_bytes'] // 1024} KiB units"
    return f"up to {entry['pieces_per_tree']} piece(s) per tree"


def _simple(
    job: tuple[Any, Any, str, int, str, dict[str, str]],
    switched: tuple[Any, Any, str, str],
    low: int,
    high: int | None,
) -> Any:
    """The Simple plan of a job: on switch channels when ``switched`` holds an in-network
    schedule (``(topology, schedule, placement, name)``), else of the tree schedule."""
    topology, nvls, placement, name = switched
    if nvls is None:
        return _plan(*job, "Simple", low, high)
    return mscclpp_nvls_plan(
        topology, nvls, placement=placement, name=name, min_message_size=low, max_message_size=high
    )


def _plan(
    schedule: Any,
    allgather: Any,
    placement: str,
    unit: int,
    name: str,
    boxes: dict[str, str],
    protocol: str,
    low: int,
    high: int | None,
) -> Any:
    return mscclpp_plan(
        schedule,
        placement=placement,
        boxes=boxes,
        min_message_size=low,
        max_message_size=high,
        unit_size=unit,
        protocol=protocol,
        allgather=allgather,
        name=f"{name} {protocol}",
    )


def _band(entry: dict[str, Any]) -> str:
    low, high = entry["min_message_size"], entry["max_message_size"]
    above = f" above {size_text(low - 1)}" if low else ""
    upto = f" up to {size_text(high)}" if high < 2**40 else ""
    return f"messages{above}{upto}" if above or upto else "every message size"


def ll_limit(topology: Any, simple: Any, packets: Any) -> int | None:
    """The largest of :data:`LL_SIZES` (rounded down to a size both plans take) up to which
    the LL plan ``packets`` is simulated at least as fast as the Simple plan ``simple``
    (both :class:`MscclppPlan`) on
    ``topology``, at every size up to it (None if not at the smallest): the LL band is
    ``[0, limit]``, the Simple band above it. MSCCL++'s own selector
    (``src/ext/nccl/algorithm_selector.cc``) takes packet algorithms up to 1 MiB.

    Both plans are simulated with ``signal_flight`` (:func:`optcoll.sim.programs.mscclpp_tasks`):
    a Simple plan's signal is a write of its own after its data, which the LL plan's
    packets (each datum beside its flag) do without; LL sends twice the bytes instead.
    The times ``export`` prints keep plan's convention (a signal arrives with its data).
    """
    network = Network.of(topology)
    parsed = [parse_plan(simple.document), parse_plan(packets.document)]
    # only sizes both plans take (multiples of their granules: 1536 B on 3 GPUs) are
    # compared, so the LL band [0, limit] holds a size its plan accepts
    step = math.lcm(*(granule(p) for p in parsed))
    limit = None
    for size in sorted({size // step * step for size in LL_SIZES} - {0}):
        slow, fast = (
            simulate(
                mscclpp_tasks(p, topology, network, size, signal_flight=True), network, size
            ).time_us
            for p in parsed
        )
        if fast > slow:
            break
        limit = size
    return limit
