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

from pathlib import Path
from typing import TYPE_CHECKING, Any

from optcoll.core.output import check_output, input_files, write_output
from optcoll.core.rational import fraction_text
from optcoll.exceptions import ExportError
from optcoll.export.chakra import ASTRA_SIM_COLLECTIVES, chakra_traces
from optcoll.export.report import ExportReport
from optcoll.export.request import ExportRequest, chosen_schedules, groups_schedule

__all__ = ["export_chakra"]

if TYPE_CHECKING:
    from fractions import Fraction

    from optcoll.core.schedule import Schedule


def export_chakra(request: ExportRequest) -> ExportReport:
    """Build the traces of ``request`` (``size`` bytes), check, write and report them."""
    if request.size is None:
        raise ExportError("--format chakra needs --size (the traces are for one message size)")
    size = request.size
    if request.bands or request.channels is not None or request.max_bytes is not None:
        raise ExportError(
            "--format chakra writes one trace set for --size: drop --bands, --channels and "
            "--max-bytes"
        )
    prefix = str(request.output)
    # (prefix, schedule, allgather, time factor, optimum, group index)
    sets: list[tuple[str, Schedule, Schedule | None, Fraction | None, Fraction | None, int | None]]
    sets = []
    grouped = groups_schedule(request)
    if grouped is not None:
        _, schedule, optimum = grouped
        factor = None if request.unchecked else schedule.time_factor
        for index, part in enumerate(schedule.groups):
            sets.append((f"{prefix}.group{index}", part, None, factor, optimum, index))
    else:
        _, chosen, _, _ = chosen_schedules(request)
        choice = chosen[0]
        sets.append(
            (prefix, choice.schedule, choice.allgather, choice.time_factor, choice.optimum, None)
        )
    files: list[tuple[str, bytes]] = []
    entries = []
    for base, schedule, allgather, factor, optimum, group in sets:
        traces = chakra_traces(schedule, size, allgather=allgather)
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
                "k": schedule.k,
                "bytes": request.size,
                "time_factor": None if factor is None else fraction_text(factor),
                "optimum": None if optimum is None else fraction_text(optimum),
            }
        )
    inputs = input_files(request.source)
    for path, _ in files:
        check_output(path, force=request.force, inputs=inputs)
    for path, data in files:
        write_output(path, data, force=request.force, inputs=inputs)
    return _report(request, entries, [Path(path) for path, _ in files])


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
    data = {"format": "chakra", "system_json_key": key, "sets": entries, "warnings": warnings}
    lines = []
    for entry in entries:
        factor = entry["time_factor"]
        shown = "unverified" if factor is None else f"time factor {factor}"
        group = "" if "group" not in entry else f" (group {entry['group']})"
        lines.append(
            f"wrote {entry['prefix']}.0.et .. {entry['prefix']}.{len(entry['files']) - 1}.et"
            f"{group}: {entry['collective']}, {len(entry['files'])} ranks, k = {entry['k']}, "
            f"{entry['bytes']} bytes, {shown}"
        )
        if key is not None:
            lines.append(f'  ASTRA-sim system JSON: "{key}": ["{entry["prefix"]}"]')
    return ExportReport(written, data, lines, warnings)
