"""``optcoll export``: write a collective schedule as MSCCL XML or schedule JSON."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from optcoll.rational import fraction_text

NAME = "export"
HELP = "write a collective schedule as MSCCL XML or schedule JSON"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source", metavar="TOPO|SCHEDULE", help="topology file or spec, or a schedule file"
    )
    parser.add_argument(
        "--collective",
        default="allgather",
        choices=("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"),
        help="collective to export (default: allgather)",
    )
    parser.add_argument(
        "--format", default="msccl", choices=("msccl", "json"), help="output format"
    )
    parser.add_argument("-o", "--output", metavar="FILE", required=True, help="file to write")
    parser.add_argument("-k", type=int, default=None, metavar="K", help="chunks per root")
    parser.add_argument("--root", metavar="NODE", help="root of a broadcast or reduce")
    parser.add_argument(
        "--topology",
        metavar="TOPO",
        help="topology of a schedule file (default: its 'topology' field as a spec)",
    )
    parser.add_argument("--channels", type=int, default=1, help="MSCCL channels (default 1)")
    parser.add_argument(
        "--max-threadblocks",
        type=int,
        default=None,
        metavar="N",
        help="MSCCL thread blocks per GPU cap (default 108)",
    )


def run(args: argparse.Namespace) -> int:
    from optcoll.export import export_schedule
    from optcoll.export.msccl import MscclLimits

    schedule = _export_schedule(args)
    options: dict[str, Any] = {}
    if args.format == "msccl":
        options["channels"] = args.channels
        if args.max_threadblocks is not None:
            options["limits"] = MscclLimits(max_threadblocks=args.max_threadblocks)
    export_schedule(schedule, args.format, args.output, **options)
    factor = (
        ""
        if schedule.time_factor is None
        else f", time factor {fraction_text(schedule.time_factor)}"
    )
    print(
        f"wrote {args.output}: {schedule.collective} ({args.format}), k = {schedule.k}, "
        f"{len(schedule.trees)} trees{factor}"
    )
    return 0


def _export_schedule(args: argparse.Namespace) -> Any:
    """The schedule to export: read from a schedule file or built for a topology."""
    from pathlib import Path

    from optcoll.collectives import allreduce, build_collective, reduce_scatter
    from optcoll.exceptions import ScheduleError
    from optcoll.io import load_schedule, load_topology, read_document

    path = Path(args.source)
    is_schedule = False
    if path.is_file():
        data = read_document(path)
        is_schedule = isinstance(data, dict) and (
            data.get("format") == "optcoll-schedule"
            or ("format" not in data and "trees" in data and "nodes" not in data)
        )
    if not is_schedule:
        topology = load_topology(args.source)
        return build_collective(
            topology, args.collective, k=args.k, root=args.root, progress=sys.stderr.isatty()
        )
    schedule = load_schedule(path)
    if schedule.collective == args.collective:
        return schedule
    if schedule.collective != "allgather" or args.collective not in ("reduce_scatter", "allreduce"):
        raise ScheduleError(
            f"{path}: a {schedule.collective} schedule cannot be exported as {args.collective}; "
            "only allgather schedules convert (to reduce_scatter or allreduce) - pass a "
            "topology instead to build it"
        )
    topology = load_topology(args.topology or schedule.topology)
    convert = reduce_scatter if args.collective == "reduce_scatter" else allreduce
    return convert(schedule, topology)
