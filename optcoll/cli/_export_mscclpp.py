"""``optcoll export --format mscclpp``: MSCCL++ execution plans (one per placement, and
per process group), each checked by the independent checker before anything is written."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from optcoll.cli._core import print_json
from optcoll.exceptions import ExportError

__all__ = ["export_mscclpp", "boxes_of"]


def boxes_of(nodes: tuple[str, ...]) -> dict[str, str]:
    """Box of each compute node: ``bX`` for the built-in boxes' ``bX.gpuY`` / ``bX.gcdY``
    names, else the node itself (a box of its own: port channels).

    Examples
    --------
    >>> boxes_of(("b0.gpu0", "b1.gpu0", "n3"))
    {'b0.gpu0': 'b0', 'b1.gpu0': 'b1', 'n3': 'n3'}
    """
    result = {}
    for v in nodes:
        head, _, tail = v.partition(".")
        boxed = head[:1] == "b" and head[1:].isdigit() and tail[:3] in ("gpu", "gcd")
        result[v] = head if boxed else v
    return result


def export_mscclpp(args: argparse.Namespace) -> int:
    from optcoll.cli.export import _groups_schedule, _schedules
    from optcoll.core.output import check_output, input_files, require_suffix, write_output
    from optcoll.export.mscclpp import mscclpp_placements, mscclpp_plan
    from optcoll.verify.mscclpp import check_plan

    require_suffix(args.output, (".json",), "an MSCCL++ execution plan")
    if args.bands or args.channels is not None or args.max_threadblocks is not None:
        raise ExportError(
            "--bands, --channels and --max-threadblocks apply to MSCCL XML; an "
            "MSCCL++ plan chooses its channels and thread blocks itself"
        )
    base = Path(args.output)
    jobs: list[tuple[Any, Any, str, str]] = []  # schedule, allgather, suffix, name
    grouped = _groups_schedule(args)
    if grouped is not None:
        _, schedule, _ = grouped
        for index, part in enumerate(schedule.groups):
            jobs.append((part, None, f".group{index}", f"{schedule.collective} group {index}"))
    else:
        _, chosen, _, _ = _schedules(args)
        first = chosen[0]
        root = (
            ""
            if first.schedule.root is None
            else (f".root{first.schedule.compute_nodes.index(first.schedule.root)}")
        )
        jobs.append((first.schedule, first.allgather, root, ""))
    files = []
    for schedule, allgather, suffix, label in jobs:
        coll = "allreduce" if allgather is not None else schedule.collective
        for placement in mscclpp_placements(coll):
            plan = mscclpp_plan(
                schedule,
                placement=placement,
                boxes=boxes_of(schedule.compute_nodes),
                max_message_size=args.max_bytes,
                allgather=allgather,
                name=f"optcoll {label or coll} {schedule.topology} {placement}",
            )
            report = check_plan(plan.document)
            if not report.ok:
                kind, message = report.findings[0]
                raise ExportError(
                    f"the {coll} plan fails check-plan ({kind}: {message}); nothing written"
                )
            path = base.with_name(f"{base.stem}{suffix}.{placement}{base.suffix}")
            files.append((path, plan, placement, report))
    inputs = input_files(args.source)
    for path, *_ in files:
        check_output(path, force=args.force, inputs=inputs)
    for path, plan, *_ in files:
        write_output(path, plan.text, force=args.force, inputs=inputs)
    entries = [
        {
            "path": str(path),
            "placement": placement,
            "threadblocks_per_gpu": plan.threadblocks,
            "max_ops_per_threadblock": plan.max_ops,
            "pieces_per_tree": plan.pieces,
            "memory_channel_pairs": plan.memory_pairs,
            "port_channel_pairs": plan.port_pairs,
            "size_granule_bytes": report.granule,
            "checked": True,
        }
        for path, plan, placement, report in files
    ]
    if args.json:
        print_json({"format": "mscclpp", "files": entries})
        return 0
    for e in entries:
        print(
            f"wrote {e['path']}: {e['placement']}, {e['threadblocks_per_gpu']} thread blocks "
            f"per GPU (at most {e['max_ops_per_threadblock']} ops each), "
            f"{e['pieces_per_tree']} piece(s) per tree, {e['memory_channel_pairs']} GPU pairs "
            f"on memory and {e['port_channel_pairs']} on port channels; sizes: multiples of "
            f"{e['size_granule_bytes']} B; check-plan: correct"
        )
    return 0
