"""``optcoll export``: write a collective schedule as MSCCL XML or schedule JSON."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.cli._core import (
    add_collective_option,
    add_group_options,
    add_reader_options,
    add_sizes_option,
    command_inputs,
    exact_amount,
    message_size,
    print_json,
    process_groups,
    reader_options,
)
from optcoll.core.rational import fraction_text
from optcoll.exceptions import ExportError

NAME = "export"
HELP = "write a collective schedule as MSCCL XML or schedule JSON"
#: Shown at the end of ``optcoll export --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll export dgx-a100:2 -o allgather.xml
  optcoll export dgx-a100:2 --collective allreduce --placement both -o ar.xml
"""

_ELEMENT_BYTES = 4  # sizes served are reported for 4-byte elements (float32)

#: Formats written by their own module: name -> "module:function(args, profile, sources)".
_FORMATS = {"mscclpp": "optcoll.cli._export_mscclpp:export_mscclpp"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from optcoll.export.runtimes import DEFAULT_RUNTIME, RUNTIMES

    parser.add_argument(
        "source", metavar="TOPO|SCHEDULE", help="topology file or spec, or a schedule file"
    )
    add_reader_options(parser)
    add_collective_option(
        parser, "allgather (default), reduce-scatter, allreduce, broadcast, reduce or alltoall"
    )
    parser.add_argument(
        "--format",
        default="msccl",
        choices=("msccl", "json", "chakra", *_FORMATS),
        help="output format (mscclpp: MSCCL++ JSON execution plans; chakra: ASTRA-sim traces "
        "PREFIX.<rank>.et, needs --size)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", required=True, help="file to write (chakra: PREFIX)"
    )
    parser.add_argument(
        "--size",
        type=message_size,
        default=None,
        metavar="SIZE",
        help="with --format chakra: the message size the traces are for (e.g. 1M)",
    )
    parser.add_argument(
        "--placement",
        choices=("outofplace", "inplace", "both"),
        default=None,
        help="MSCCL and MSCCL++: the program FILE holds: outofplace (default) or inplace; both "
        "writes FILE out of place and STEM.inplace.SUFFIX beside it (a collective one program "
        "serves either way, such as an RCCL allreduce, is one file)",
    )
    parser.add_argument(
        "--runtime",
        default=DEFAULT_RUNTIME,
        choices=tuple(RUNTIMES),
        help=f"MSCCL runtime whose parser and limits the file meets (default {DEFAULT_RUNTIME})",
    )
    parser.add_argument(
        "-k", type=int, default=None, metavar="K", help="chunks per root (default: deployable k)"
    )
    parser.add_argument(
        "--exact", action="store_true", help="keep the optimal k (may serve few sizes)"
    )
    parser.add_argument(
        "--tolerance",
        type=_tolerance,
        default=None,
        metavar="T",
        help="accept k whose time factor is within T of the optimum (default 1%%)",
    )
    parser.add_argument(
        "--bands",
        action="store_true",
        help="one file per size band: the fastest of plan's candidates under the simulator",
    )
    add_sizes_option(
        parser, "with --bands: the sizes the bands are planned at (default 1K 4K ... 4G)"
    )
    parser.add_argument(
        "--max-bytes",
        type=message_size,
        default=None,
        metavar="SIZE",
        help="largest message the files serve (default: no limit)",
    )
    parser.add_argument("--root", metavar="NODE", help="root of a broadcast or reduce")
    parser.add_argument(
        "--topology",
        metavar="TOPO",
        help="topology of a schedule file (default: its 'topology' field as a spec)",
    )
    parser.add_argument(
        "--channels",
        type=int,
        default=None,
        help="MSCCL channels per GPU pair (default: one per tree level, within 64 thread blocks)",
    )
    parser.add_argument(
        "--max-threadblocks",
        type=int,
        default=None,
        metavar="N",
        help="thread blocks per GPU cap (default: the runtime's)",
    )
    add_group_options(parser)
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    parser.add_argument(
        "--unchecked", action="store_true", help="skip verifying the schedule before writing"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable report")


def _tolerance(text: str) -> Fraction:
    """``"1%"`` or ``"0.01"`` as an exact fraction >= 0."""
    value = text.strip()
    scale = Fraction(1, 100) if value.endswith("%") else Fraction(1)
    return exact_amount(value.removesuffix("%"), "tolerance", "0.01 or 1%") * scale


@dataclass(frozen=True)
class _Chosen:
    """A schedule to write, with its verified time factor and optimum (``allgather``:
    the second phase of an allreduce composed of two tree sets)."""

    schedule: Any
    time_factor: Fraction | None
    optimum: Fraction | None
    allgather: Any = None


def run(args: argparse.Namespace) -> int:
    from optcoll.core.output import require_suffix
    from optcoll.export.runtimes import runtime_profile
    from optcoll.io import TOPOLOGY_SUFFIXES

    if args.placement is not None and args.format not in ("msccl", "mscclpp"):
        raise ExportError(
            "--placement chooses an MSCCL or MSCCL++ program: it needs --format msccl or mscclpp"
        )
    if (args.format == "chakra") != (args.size is not None):
        raise ExportError("--format chakra needs --size (the traces are for one message size)")
    if args.format == "chakra":
        from optcoll.cli._export_chakra import write_chakra

        return write_chakra(args, _groups_schedule, _schedules)
    if args.format in _FORMATS:
        import importlib

        module, function = _FORMATS[args.format].split(":")
        return int(getattr(importlib.import_module(module), function)(args))
    if args.format == "msccl":
        require_suffix(args.output, (".xml",), "an MSCCL program")
    else:
        require_suffix(args.output, TOPOLOGY_SUFFIXES, "a schedule file")
    if args.root is not None and args.collective not in ("broadcast", "reduce"):
        raise ExportError(
            f"--root applies to broadcast and reduce; --collective {args.collective} has no single root"
        )
    if args.topology is not None and _schedule_file(args.source) is None:
        raise ExportError(
            f"--topology names the topology of a schedule file, but {args.source} is a "
            "topology: drop --topology"
        )
    profile = runtime_profile(args.runtime)
    if args.max_threadblocks is not None:
        if args.max_threadblocks < 1:
            raise ExportError(f"--max-threadblocks must be >= 1, got {args.max_threadblocks}")
        profile = replace(profile, max_threadblocks=args.max_threadblocks)
    if args.exact and args.k is not None:
        raise ExportError("--exact keeps the optimal k; it cannot be combined with -k")
    if args.bands and (args.exact or args.k is not None or args.format != "msccl"):
        raise ExportError("--bands chooses the k of each band itself (MSCCL only): drop -k/--exact")
    if args.sizes and not args.bands:
        raise ExportError("--sizes plans the size bands: it needs --bands")
    from optcoll.core.output import check_output, write_output

    grouped = _groups_schedule(args)
    if grouped is not None:
        files = _plan_groups(args, profile, *grouped)
        inputs = command_inputs(args)
        for path, *_ in files:
            check_output(path, force=args.force, inputs=inputs)
        for path, text, _ in files:
            write_output(path, text, force=args.force, inputs=inputs)
        _report_groups(args, profile, grouped[1], files)
        return 0
    topology, chosen, tried, edges = _schedules(args)
    files = _plan(args, profile, chosen, edges)

    inputs = command_inputs(args)
    for path, *_ in files:
        check_output(path, force=args.force, inputs=inputs)
    for path, text, _ in files:
        write_output(path, text, force=args.force, inputs=inputs)
    _report(args, profile, chosen, files, tried)
    return 0


def _groups_schedule(args: argparse.Namespace) -> tuple[Any, Any, Fraction | None] | None:
    """With ``--groups`` or a groups schedule file: the topology, the verified concurrent
    groups' schedule and its exact bound; else None."""
    from optcoll.core.groups_schedule import GroupsSchedule
    from optcoll.core.process_groups import make_groups
    from optcoll.groups.schedule import groups_collective, groups_lower_bound
    from optcoll.io import load_topology
    from optcoll.io.schedule_json import load_any_schedule
    from optcoll.verify.schedule import verify_groups_schedule

    path = _schedule_file(args.source)
    loaded = None if path is None else load_any_schedule(path)
    if not isinstance(loaded, GroupsSchedule) and args.groups is None:
        if args.relay is not None or args.group_form is not None:
            process_groups(None, args)  # without --groups: its one-line error
        return None
    if args.k is not None or args.exact or args.bands or args.root or args.tolerance:
        raise ExportError(
            "process groups are exported with each group's own k, rooted at its first member: "
            "drop -k, --exact, --bands, --tolerance and --root"
        )
    if path is None or loaded is None:
        topology = load_topology(args.source, **reader_options(args))
        groups = process_groups(topology, args)
        schedule = groups_collective(groups, args.collective, form=args.group_form)
    elif not isinstance(loaded, GroupsSchedule):
        raise ExportError(
            f"{path} plans one collective over every compute node, not process groups; "
            "--groups exports from a topology or from a schedule written by trees --groups"
        )
    else:
        if args.groups is not None or args.relay is not None:
            raise ExportError(f"{path} holds its own groups and relay: drop --groups and --relay")
        if loaded.collective != args.collective:
            raise ExportError(
                f"{path} holds a {loaded.collective} of process groups; give --collective "
                f"{loaded.collective} (a groups file is exported as it is)"
            )
        topology = _topology_of(args.topology, loaded, path, reader_options(args))
        schedule = loaded
        groups = make_groups(topology, [s.compute_nodes for s in schedule.groups], schedule.relay)
    if args.unchecked:
        return topology, schedule, None
    roots = tuple(s.root or s.compute_nodes[0] for s in schedule.groups)
    optimum = groups_lower_bound(groups, schedule.collective, roots, form=args.group_form)
    verdict = verify_groups_schedule(topology, schedule, optimum=optimum)
    if not verdict.valid:
        raise ExportError(
            f"the groups' {schedule.collective} fails verification on {topology.name!r}: "
            f"{verdict.reason}; nothing written (--unchecked writes it anyway)"
        )
    return topology, schedule, optimum


def _plan_groups(
    args: argparse.Namespace, profile: Any, topology: Any, schedule: Any, optimum: Any
) -> list[tuple[Path, str, dict[str, Any]]]:
    """One MSCCL program per group (per communicator) and a manifest, or one JSON file.

    Group i's program is ``STEM.group<i>.xml`` (:func:`~optcoll.export.msccl.placement_files`
    names the in-place one beside it with ``--placement both``); rank r of a program is the
    group's r-th member (its rank-order comment and the manifest ``STEM.groups.json``
    list them).
    """
    from optcoll.export.msccl import msccl_program, placement_files
    from optcoll.io.document import document_text

    base = Path(args.output)
    factor = schedule.time_factor
    summary = {
        "topology": topology.name,
        "collective": schedule.collective,
        "relay": schedule.relay,
        "time_factor": None if factor is None else fraction_text(factor),
        "optimum": None if optimum is None else fraction_text(optimum),
    }
    if args.format == "json":
        return [(base, document_text(schedule.to_dict(), base.suffix), {"path": str(base)})]
    files: list[tuple[Path, str, dict[str, Any]]] = []
    groups = []
    for index, part in enumerate(schedule.groups):
        entries = []
        group_file = base.with_name(f"{base.stem}.group{index}{base.suffix}")
        for placement, path in placement_files(
            group_file, schedule.collective, profile, args.placement
        ):
            program = msccl_program(
                part,
                runtime=profile,
                channels=args.channels,
                placement=placement,
                name=f"{schedule.collective} group {index} of {len(schedule.groups)} on "
                f"{topology.name}",
                max_bytes=args.max_bytes,
            )
            entry = {
                "path": str(path),
                "group": index,
                "placement": placement,
                "nchunksperloop": program.nchunksperloop,
                "nchannels": program.nchannels,
                "threadblocks_per_gpu": program.max_threadblocks,
            }
            entries.append(entry)
            files.append((path, program.text, entry))
        groups.append(
            {
                "members": list(part.compute_nodes),
                **({} if part.root is None else {"root": part.root}),
                "k": part.k,
                "files": [entry["path"] for entry in entries],
            }
        )
    manifest = base.with_name(f"{base.stem}.groups.json")
    text = {
        "format": "optcoll-msccl-groups",
        **summary,
        "runtime": profile.name,
        "ranks": "rank r of a group's programs is its r-th member",
        "channels": (
            f"{args.channels} channel(s) per connection in every program; the groups' capacity "
            "shares are carried by their trees (each link's chunks), not by channels"
        ),
        "groups": groups,
    }
    files.append((manifest, document_text(text), {"path": str(manifest)}))
    return files


def _report_groups(
    args: argparse.Namespace,
    profile: Any,
    schedule: Any,
    files: list[tuple[Path, str, dict[str, Any]]],
) -> None:
    factor = schedule.time_factor
    shown = "unverified" if args.unchecked else f"time factor {fraction_text(factor)}"
    if args.json:
        print_json(
            {
                "collective": schedule.collective,
                "topology": schedule.topology,
                "relay": schedule.relay,
                "num_groups": len(schedule.groups),
                "format": args.format,
                "runtime": profile.name if args.format == "msccl" else None,
                "verified": not args.unchecked,
                "time_factor": None if args.unchecked else fraction_text(factor),
                "files": [entry for _, _, entry in files],
            }
        )
        return
    print(
        f"{schedule.collective} of {len(schedule.groups)} groups on {schedule.topology} "
        f"(relay {schedule.relay}), all at once: {shown}"
    )
    for _, _, entry in files:
        if "group" in entry:
            print(
                f"wrote {entry['path']}: group {entry['group']}, {entry['placement']}, "
                f"nchunksperloop {entry['nchunksperloop']}, {entry['nchannels']} channel(s), "
                f"{entry['threadblocks_per_gpu']} thread blocks per GPU"
            )
        else:
            print(f"wrote {entry['path']}")


def _schedules(
    args: argparse.Namespace,
) -> tuple[Any, list[_Chosen], tuple, list[tuple[int, int | None]] | None]:
    """The topology (None if unknown and unchecked), the verified schedules to write and,
    with ``--bands``, the size band of each (``(smallest, largest or None)``)."""
    from optcoll.io import load_topology
    from optcoll.schedules.collectives import collective_lower_bound
    from optcoll.schedules.deploy import DEFAULT_TOLERANCE, deployable_schedule

    tolerance = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
    schedule_file = _schedule_file(args.source)
    edges = None
    if schedule_file is None:
        topology = load_topology(args.source, **reader_options(args))
        best = deployable_schedule(
            topology,
            args.collective,
            tolerance=tolerance,
            k=args.k,
            exact=args.exact,
            root=args.root,
        )
        phases = [(best.schedule, best.allgather)]
        if args.bands:
            bands = _bands(args, topology, tolerance)
            phases = [(option.schedule, None) for option, _, _ in bands]
            edges = [(low, high) for _, low, high in bands]
        tried = best.tried
    else:
        if args.k is not None or args.exact or args.bands:
            raise ExportError(
                f"{args.source} is a schedule file with its own k; -k, --exact and --bands "
                "apply to a topology"
            )
        topology, schedules = _from_file(args, schedule_file)
        phases = [(schedule, None) for schedule in schedules]
        tried = ()
    chosen = []
    for schedule, allgather in phases:
        if args.unchecked:  # claims nobody checked are not passed on
            plain = replace(schedule, cut_ratio=None, time_factor=None, stats={})
            chosen.append(_Chosen(plain, None, None, allgather))
            continue
        factor, optimum = Fraction(0), Fraction(0)
        for phase in (schedule, allgather):
            if phase is not None:
                bound = collective_lower_bound(topology, phase.collective, phase.root)
                assert bound is not None  # every schedule here names its root if it needs one
                factor += _verified(topology, phase, bound)
                optimum += bound
        chosen.append(_Chosen(schedule, factor, optimum, allgather))
    return topology, chosen, tried, edges


def _bands(args: argparse.Namespace, topology: Any, tolerance: Fraction) -> list[Any]:
    """``optcoll plan``'s size bands (:func:`optcoll.sim.size_plan.schedule_bands`) at ``--sizes``."""
    from optcoll.sim.cost_model import SIZES
    from optcoll.sim.size_plan import candidates, plan, schedule_bands

    options = candidates(topology, args.collective, root=args.root, tolerance=tolerance)
    sizes = sorted(set(args.sizes or SIZES))
    rows = plan(
        topology,
        args.collective,
        sizes,
        root=args.root,
        progress=sys.stderr.isatty(),
        options=options,
    )
    return schedule_bands(rows, options)


def _verified(topology: Any, schedule: Any, optimum: Fraction | None) -> Fraction:
    """The verifier's exact time factor; ExportError if it rejects the schedule (paths,
    trees, chunks, or a time factor it claims that its link loads do not give)."""
    from optcoll.schedules.collectives import collective_cut_ratio
    from optcoll.verify.schedule import verify_schedule

    cut_ratio = collective_cut_ratio(topology, schedule.collective, schedule.root)
    verdict = verify_schedule(topology, schedule, optimum=optimum, cut_ratio=cut_ratio)
    if not verdict.valid:
        raise ExportError(
            f"the {schedule.collective} schedule fails verification on {topology.name!r}: "
            f"{verdict.reason}; nothing written (--unchecked writes it anyway)"
        )
    assert verdict.time_factor is not None  # a valid verdict has its time factor
    return verdict.time_factor


def _schedule_file(source: str) -> Path | None:
    """``source`` as a path if it holds a schedule (not a topology in any format)."""
    from optcoll.io import is_schedule_file

    path = Path(source)
    return path if is_schedule_file(path) else None


def _from_file(args: argparse.Namespace, path: Path) -> tuple[Any, list[Any]]:
    """A schedule file's topology and the schedule of ``--collective`` built from it."""
    from optcoll.core.schedule import FILE_STATS, ORDER_STATS
    from optcoll.exceptions import OptCollError, ScheduleError
    from optcoll.io import load_schedule
    from optcoll.schedules.collectives import allreduce, reduce_scatter

    # a file's stats beyond FILE_STATS (claims, recomputed) and ORDER_STATS (how to run
    # it, checked for form) are records of another builder: none is passed on
    loaded = load_schedule(path)
    kept = FILE_STATS | ORDER_STATS
    schedule = replace(loaded, stats={k: v for k, v in loaded.stats.items() if k in kept})
    try:
        topology = _topology_of(args.topology, schedule, path, reader_options(args))
    except OptCollError:
        if not args.unchecked or schedule.collective != args.collective:
            raise
        topology = None
    if schedule.collective == args.collective:
        return topology, [schedule]
    if schedule.collective != "allgather" or args.collective not in ("reduce_scatter", "allreduce"):
        raise ScheduleError(
            f"{path}: a {schedule.collective} schedule cannot be exported as {args.collective}; "
            "only allgather schedules convert (to reduce_scatter or allreduce) - pass a "
            "topology instead to build it"
        )
    assert topology is not None  # only a schedule of --collective is exported unchecked
    convert = reduce_scatter if args.collective == "reduce_scatter" else allreduce
    return topology, [convert(schedule, topology)]


def _topology_of(source: str | None, schedule: Any, path: Path, options: dict[str, str]) -> Any:
    """The topology of a schedule file: ``--topology``, or its ``topology`` field as a
    built-in spec; either must have the content hash the schedule records."""
    from optcoll import topologies
    from optcoll.core.schedule import check_schedule_topology
    from optcoll.exceptions import ScheduleError, TopologySpecError
    from optcoll.io import load_topology

    if source is not None:
        topology = load_topology(source, **options)
    else:
        try:
            topology = topologies.build(schedule.topology)
        except TopologySpecError:
            raise ScheduleError(
                f"{path} was built for topology {schedule.topology!r}, which is not a "
                "built-in spec; pass its file with --topology FILE"
            ) from None
    check_schedule_topology(schedule, topology, str(path))
    return topology


def _plan(
    args: argparse.Namespace,
    profile: Any,
    chosen: list[_Chosen],
    edges: list[tuple[int, int | None]] | None,
) -> list[tuple[Path, str, dict[str, Any]]]:
    """Every file to write: (path, text, report entry)."""
    from optcoll.export import export_text
    from optcoll.export.msccl import msccl_program, placement_files

    base = Path(args.output)
    first = chosen[0].schedule
    if args.format == "json":
        if chosen[0].allgather is not None:
            raise ExportError(
                "this allreduce runs its reduce-scatter and allgather on different trees (the "
                "topology is not symmetric), which one schedule file cannot hold: export "
                "--collective reduce_scatter and --collective allgather as JSON instead"
            )
        entry = {"path": str(base), "k": first.k, **_factors(chosen[0]), **_rounding(first)}
        return [(base, export_text(first, "json"), entry)]
    bands = [(i, low, high) for i, (low, high) in enumerate(edges or [(0, None)])]
    files = []
    for index, low, high in bands:
        if args.max_bytes is not None:
            if low > args.max_bytes:
                continue
            high = args.max_bytes if high is None else min(high, args.max_bytes)
        choice = chosen[index]
        schedule = choice.schedule
        band = f".{low}-{'max' if high is None else high}B" if len(bands) > 1 else ""
        band_file = base.with_name(f"{base.stem}{band}{base.suffix}")
        for placement, path in placement_files(
            band_file, schedule.collective, profile, args.placement
        ):
            program = msccl_program(
                schedule,
                runtime=profile,
                channels=args.channels,
                placement=placement,
                min_bytes=low,
                max_bytes=high,
                allgather=choice.allgather,
            )
            entry = {
                "path": str(path),
                "k": schedule.k,
                **_factors(choice),
                **_rounding(schedule),
                "placement": placement,
                "min_bytes": low,
                "max_bytes": high,
                "nchunksperloop": program.nchunksperloop,
                "nchannels": program.nchannels,
                "steps_per_threadblock": program.max_steps,
                "threadblocks_per_gpu": program.max_threadblocks,
                "peers_per_gpu": program.max_peers,
                "powers_of_two_from": _powers_of_two_from(program.nchunksperloop, low, high),
            }
            files.append((path, program.text, entry))
    return files


def _factors(choice: _Chosen) -> dict[str, Any]:
    if choice.time_factor is None:
        return {"time_factor": None, "optimum": None, "ratio_to_optimum": None}
    ratio = None if not choice.optimum else choice.time_factor / choice.optimum
    return {
        "time_factor": fraction_text(choice.time_factor),
        "optimum": None if choice.optimum is None else fraction_text(choice.optimum),
        "ratio_to_optimum": None if ratio is None else fraction_text(ratio),
    }


def _rounding(schedule: Any) -> dict[str, Any]:
    """An all-to-all's ``rounding_bound``: the time factor its ``k`` is proved within
    (t* plus the rounding slack, :func:`optcoll.schedules.alltoall.alltoall_schedule`)."""
    bound = schedule.stats.get("rounding_bound") if schedule.collective == "alltoall" else None
    return {} if bound is None else {"rounding_bound": bound}


def _powers_of_two_from(nchunks: int, low: int, high: int | None) -> int | None:
    """The smallest power-of-two byte size (4-byte elements) the file serves, if any:
    every larger one up to ``high`` is served too."""
    if nchunks & (nchunks - 1):
        return None
    size = _ELEMENT_BYTES * nchunks
    while size < low:
        size *= 2
    return size if high is None or size <= high else None


def _sizes_warning(entry: dict[str, Any], collective: str, n: int) -> str:
    """Why a file serves no power-of-two size. For an allgather or reduce-scatter the
    element count is ``count * N``: with ``N`` not a power of two no total is a power of
    two, but per-rank counts (multiples of ``k``) may be."""
    nchunks, k = entry["nchunksperloop"], entry["k"]
    served = f"{entry['path']} serves only element counts that are multiples of {nchunks}"
    if n & (n - 1) == 0 or collective not in ("allgather", "reduce_scatter") or nchunks != n * k:
        return f"{served}: no power-of-two size"
    per_rank = (
        f"per-rank counts that are powers of two from {k} elements are served"
        if k & (k - 1) == 0
        else f"per-rank counts must be multiples of {k}: no power of two"
    )
    return (
        f"{served} (count * N with N = {n}, not a power of two): no power-of-two total "
        f"size; {per_rank}"
    )


def _report(
    args: argparse.Namespace,
    profile: Any,
    chosen: list[_Chosen],
    files: list[tuple[Path, str, dict[str, Any]]],
    tried: tuple,
) -> None:
    first = chosen[-1].schedule
    collective = "allreduce" if chosen[-1].allgather is not None else first.collective
    warnings = []
    if first.root is not None:
        warnings.append(
            f"the file is for root {first.root} (rank {first.compute_nodes.index(first.root)}); "
            f"{profile.name} does not check the root of a {first.collective}: load it only "
            "where every call uses this root"
        )
    for _, _, entry in files:
        if args.format == "msccl" and entry["powers_of_two_from"] is None:
            warnings.append(_sizes_warning(entry, collective, len(first.compute_nodes)))
    if args.format == "msccl" and args.placement == "both" and collective in profile.never_in_place:
        warnings.append(
            f"no in-place program: {profile.name} refuses in-place all-to-all calls "
            f"({profile.sources['never_in_place']})"
        )
    if profile.max_files is not None and len(files) > profile.max_files:
        warnings.append(
            f"{len(files)} files, but {profile.name} loads at most {profile.max_files} "
            f"({profile.sources['max_files']})"
        )
    if args.unchecked:
        warnings.append("not verified (--unchecked): no time factor is reported")
    if args.json:
        print_json(
            {
                "collective": collective,
                "composed": chosen[-1].allgather is not None,
                "topology": first.topology,
                "format": args.format,
                "runtime": profile.name if args.format == "msccl" else None,
                "verified": not args.unchecked,
                "k_tried": [[k, fraction_text(r)] for k, r in tried],
                "rank_order": list(first.compute_nodes),
                "files": [entry for _, _, entry in files],
                "warnings": warnings,
            }
        )
        return
    for _, _, entry in files:
        factor = (
            "unverified"
            if entry["time_factor"] is None
            else f"time factor {entry['time_factor']} (optimum {entry['optimum']}, "
            f"ratio {entry['ratio_to_optimum']} = "
            f"{float(Fraction(entry['ratio_to_optimum'])):.4f})"
        )
        how = " (reduce-scatter trees, then allgather trees)" if chosen[-1].allgather else ""
        bound = entry.get("rounding_bound")
        if bound is not None:
            factor += f", within its rounding bound {bound}"
        print(f"wrote {entry['path']}: {collective}{how}, k = {entry['k']}, {factor}")
        if args.format != "msccl":
            continue
        top = "no limit" if entry["max_bytes"] is None else f"{entry['max_bytes']} B"
        powers = entry["powers_of_two_from"]
        print(
            f"  {profile.name}, {entry['placement']}: nchunksperloop {entry['nchunksperloop']}, "
            f"{entry['nchannels']} channel(s), {entry['steps_per_threadblock']} steps per "
            f"thread block (limit {profile.max_steps}), {entry['threadblocks_per_gpu']} thread "
            f"blocks per GPU (limit {profile.max_threadblocks}), "
            f"{entry['peers_per_gpu']} peers per GPU"
        )
        print(
            f"  sizes {entry['min_bytes']} B .. {top}, multiples of {entry['nchunksperloop']} "
            "elements"
            + ("" if powers is None else f": every power of two from {powers} B (4-byte elements)")
        )
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
