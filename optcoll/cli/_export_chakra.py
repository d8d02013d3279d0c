"""``optcoll export --format chakra``: ASTRA-sim traces ``PREFIX.<rank>.et`` (one set per
process group: ``PREFIX.group<i>.<rank>.et``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from optcoll.cli._core import print_json
from optcoll.core.rational import fraction_text
from optcoll.exceptions import ExportError

if TYPE_CHECKING:
    from fractions import Fraction

    from optcoll.core.schedule import Schedule


def write_chakra(
    args: argparse.Namespace,
    groups_schedule: Callable[[argparse.Namespace], Any],
    schedules: Callable[[argparse.Namespace], Any],
) -> int:
    """Build (``groups_schedule``, ``schedules``: the export command's), check, write, report."""
    from optcoll.core.output import check_output, input_files, write_output
    from optcoll.export.chakra import chakra_traces

    if args.bands or args.channels is not None or args.max_bytes is not None:
        raise ExportError(
            "--format chakra writes one trace set for --size: drop --bands, --channels and "
            "--max-bytes"
        )
    prefix = str(args.output)
    # (prefix, schedule, allgather, time factor, optimum, group index)
    sets: list[tuple[str, Schedule, Schedule | None, Fraction | None, Fraction | None, int | None]]
    sets = []
    grouped = groups_schedule(args)
    if grouped is not None:
        _, schedule, optimum = grouped
        factor = None if args.unchecked else schedule.time_factor
        for index, part in enumerate(schedule.groups):
            sets.append((f"{prefix}.group{index}", part, None, factor, optimum, index))
    else:
        _, chosen, _, _ = schedules(args)
        choice = chosen[0]
        sets.append(
            (prefix, choice.schedule, choice.allgather, choice.time_factor, choice.optimum, None)
        )
    files: list[tuple[str, bytes]] = []
    entries = []
    for base, schedule, allgather, factor, optimum, group in sets:
        traces = chakra_traces(schedule, args.size, allgather=allgather)
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
                "bytes": args.size,
                "time_factor": None if factor is None else fraction_text(factor),
                "optimum": None if optimum is None else fraction_text(optimum),
            }
        )
    inputs = input_files(args.source)
    for path, _ in files:
        check_output(path, force=args.force, inputs=inputs)
    for path, data in files:
        write_output(path, data, force=args.force, inputs=inputs)
    _report(args, entries)
    return 0


def _report(args: argparse.Namespace, entries: list[dict[str, Any]]) -> None:
    from optcoll.export.chakra import ASTRA_SIM_COLLECTIVES

    collective = entries[0]["collective"]
    key = ASTRA_SIM_COLLECTIVES.get(collective)
    warnings = []
    if key is None:
        warnings.append(
            f"ASTRA-sim runs custom traces only for all-reduce, all-gather, reduce-scatter and "
            f"all-to-all (astra-sim Workload.cc); these {collective} traces are for optcoll "
            "check-et and simulate"
        )
    if args.unchecked:
        warnings.append("not verified (--unchecked): no time factor is reported")
    if args.json:
        print_json({"format": "chakra", "system_json_key": key, "sets": entries,
                    "warnings": warnings})  # fmt: skip
        return
    for entry in entries:
        factor = entry["time_factor"]
        shown = "unverified" if factor is None else f"time factor {factor}"
        group = "" if "group" not in entry else f" (group {entry['group']})"
        print(
            f"wrote {entry['prefix']}.0.et .. {entry['prefix']}.{len(entry['files']) - 1}.et"
            f"{group}: {entry['collective']}, {len(entry['files'])} ranks, k = {entry['k']}, "
            f"{entry['bytes']} bytes, {shown}"
        )
        if key is not None:
            print(f'  ASTRA-sim system JSON: "{key}": ["{entry["prefix"]}"]')
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
