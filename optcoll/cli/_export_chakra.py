"""``optcoll export --format chakra``: ASTRA-sim traces ``PREFIX.<rank>.et`` (one set per
process group: ``PREFIX.group<i>.<rank>.et``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from optcoll.cli._core import print_json, reader_options
from optcoll.core.rational import fraction_text
from optcoll.core.sizes import size_text
from optcoll.exceptions import ExportError
from optcoll.export.planned import ASTRA_SIM_COMM_SIZE, astra_sim_comm_size

if TYPE_CHECKING:
    from fractions import Fraction

    from optcoll.core.schedule import Schedule


def write_chakra(
    args: argparse.Namespace,
    groups_schedule: Callable[[argparse.Namespace], Any],
    schedules: Callable[[argparse.Namespace], Any],
    verified: Callable[[Any, Any, Fraction | None], Fraction],
    *,
    planned: bool,
) -> int:
    """Build (``groups_schedule``, ``schedules``, ``verified``: the export command's), check,
    write, report.

    ``planned`` (a topology without ``-k``/``--exact``; not ``--groups``): what ``optcoll plan`` chose
    at ``--size`` (or at each of ``--bands --sizes``, one set ``PREFIX.<size>`` each),
    sliced and ordered as plan simulated it (:mod:`optcoll.export.planned`)."""
    from optcoll.core.output import check_output, input_files, write_output
    from optcoll.export.chakra import chakra_traces

    if args.size is not None and args.bands:
        raise ExportError("--size writes one trace set: drop --bands, or drop --size and give "
                          "--bands --sizes")  # fmt: skip
    if args.channels is not None or args.max_bytes is not None:
        raise ExportError(
            "--format chakra writes traces for a size: drop --channels and --max-bytes"
        )
    prefix = str(args.output)
    # (prefix, schedule, allgather, time factor, optimum, group index, traces, plan entry)
    sets: list[tuple[str, Schedule, Schedule | None, Fraction | None, Fraction | None,
                     int | None, list[bytes] | None, dict[str, Any]]] = []  # fmt: skip
    grouped = groups_schedule(args)
    if grouped is not None:
        _, schedule, optimum = grouped
        factor = None if args.unchecked else schedule.time_factor
        for index, part in enumerate(schedule.groups):
            sets.append((f"{prefix}.group{index}", part, None, factor, optimum, index, None, {}))
    elif planned:
        from optcoll.schedules.collectives import collective_lower_bound

        topology, planned_sets = _plan(args)
        for one in planned_sets:
            base = prefix if not args.bands else f"{prefix}.{size_text(one.size)}"
            entry = {
                "bytes": one.size,
                "planned": one.chosen,
                "method": one.method,
                "priority": one.priority,
                "slice_bytes": one.slice_bytes,
                "plan_time_us": round(one.time_us, 4),
                "lower_bound_us": round(one.lower_bound_us, 4),
            }
            bound, factor = None, None
            if not args.unchecked:  # the verifier's exact time factor, or ExportError
                bound = collective_lower_bound(topology, one.schedule.collective, args.root)
                factor = verified(topology, one.schedule, bound)
            sets.append((base, one.schedule, None, factor, bound, None, list(one.traces), entry))
    else:
        if args.bands:
            raise ExportError("--bands with --format chakra plans a topology: drop -k, --exact")
        _, chosen, _, _ = schedules(args)
        choice = chosen[0]
        sets.append((prefix, choice.schedule, choice.allgather, choice.time_factor,
                     choice.optimum, None, None, {}))  # fmt: skip
    files: list[tuple[str, bytes]] = []
    entries = []
    for base, schedule, allgather, factor, optimum, group, written, chose in sets:
        size = chose.get("bytes", args.size)
        traces = written if written is not None else chakra_traces(
            schedule, size, allgather=allgather, slice_bytes=args.slice
        )  # fmt: skip
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
                "bytes": size,
                "astra_sim_comm_size": astra_sim_comm_size(collective, size, len(traces)),
                "time_factor": None if factor is None else fraction_text(factor),
                "optimum": None if optimum is None else fraction_text(optimum),
                **{key: value for key, value in chose.items() if key != "bytes"},
            }
        )
    inputs = input_files(args.source)
    for path, _ in files:
        check_output(path, force=args.force, inputs=inputs)
    for path, data in files:
        write_output(path, data, force=args.force, inputs=inputs)
    _report(args, entries)
    return 0


def _plan(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    from optcoll.core.cost import DEFAULT_LATENCY
    from optcoll.export.planned import planned_traces
    from optcoll.io import load_topology
    from optcoll.sim.cost_model import SIZES
    from optcoll.sim.simulator import DEFAULT_OVERHEAD, DEFAULT_SLICE

    if args.bands and not args.sizes:
        raise ExportError(
            "--bands with --format chakra needs --sizes (one trace set per size, e.g. 64K 1M "
            f"1G; plan's default {len(SIZES)} sizes would write {len(SIZES)} sets)"
        )
    topology = load_topology(args.source, **reader_options(args))
    return topology, planned_traces(
        topology,
        args.collective,
        [args.size] if args.size is not None else list(args.sizes),
        root=args.root,
        overhead=DEFAULT_OVERHEAD if args.overhead is None else args.overhead,
        default_latency=DEFAULT_LATENCY if args.latency is None else args.latency,
        slice_bytes=DEFAULT_SLICE if args.slice is None else args.slice,
        choose_slice=args.slice is None,
    )


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
    for entry in entries:
        if key is not None and entry["astra_sim_comm_size"] is None:
            warnings.append(
                f"{entry['prefix']}: {entry['bytes']} bytes over {len(entry['files'])} NPUs "
                "has no whole per-NPU input: an ASTRA-sim all-gather workload cannot ask for "
                "the same data (give a size that is a multiple of the NPUs)"
            )
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
        if "method" in entry:
            piece = entry["slice_bytes"]
            chosen = "" if entry["planned"] == entry["method"] else (
                f" (plan chose {entry['planned']}, which has no trace form)"
            )  # fmt: skip
            print(
                f"  plan: {entry['method']}{chosen}, slices of "
                f"{'whole chunks' if piece is None else size_text(piece)}, order "
                f"{entry['priority']}: simulated {entry['plan_time_us']} µs"
            )
        if key is not None:
            print(f'  ASTRA-sim system JSON: "{key}": ["{entry["prefix"]}"]')
            comm = entry["astra_sim_comm_size"]
            print(
                f"  ASTRA-sim workload comm_size: "
                f"{'none is exact' if comm is None else f'{comm} bytes'} "
                f"({ASTRA_SIM_COMM_SIZE[collective]})"
            )
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
