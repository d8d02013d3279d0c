"""``optcoll plan``: the fastest schedule at every message size, with its gap to the bound."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from optcoll.cli._core import (
    add_collective_option,
    add_reader_options,
    add_sizes_option,
    command_inputs,
    message_size,
    print_json,
    reader_options,
    sim_options,
    size_text,
)
from optcoll.cli.simulate import add_simulator_options

NAME = "plan"
HELP = "the fastest schedule at every message size under the simulator, and its gap to the bound"
#: Shown at the end of ``optcoll plan --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll plan dgx-a100:2
  optcoll plan dgx-a100:2 --sizes 1K 1M 1G --format mscclpp --export bands
"""
#: The formats whose files plan can time and ``--export`` write
#: (:data:`optcoll.export.planned_programs.CARRIED_ORDERS`' keys).
FORMATS = ("msccl", "mscclpp")
#: What each format's files are called in the output.
FORMAT_NAMES = {"msccl": "MSCCL", "mscclpp": "MSCCL++"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from optcoll.export.runtimes import DEFAULT_RUNTIME, RUNTIMES

    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    add_collective_option(
        parser, "allgather (default), reduce-scatter, allreduce, broadcast, reduce or alltoall"
    )
    add_sizes_option(parser)
    parser.add_argument(
        "--runtime",
        default=DEFAULT_RUNTIME,
        choices=tuple(RUNTIMES),
        help=f"MSCCL runtime the --export files are for (default {DEFAULT_RUNTIME})",
    )
    parser.add_argument("--root", metavar="NODE", help="root of a broadcast or reduce")
    add_simulator_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--plot", metavar="PNG", help="draw time and algbw vs message size")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="time every candidate as this format's files run it, only in the link orders "
        "they carry (not plan's depth order), and --export that format (default: every "
        "order plan has, as Chakra traces carry; --export writes msccl)",
    )
    parser.add_argument(
        "--export",
        metavar="DIR",
        help="write the file of each size band into DIR (log-step winners included)",
    )
    parser.add_argument(
        "--max-bytes",
        type=message_size,
        default=None,
        metavar="SIZE",
        help="with --export: largest message the files serve (default: no limit)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing output files")


def run(args: argparse.Namespace) -> int:
    from optcoll.core.output import check_output, require_suffix
    from optcoll.io import load_topology
    from optcoll.plot import PICTURE_SUFFIXES
    from optcoll.sim.cost_model import SIZES
    from optcoll.sim.size_plan import candidates, plan

    inputs = command_inputs(args)
    if args.max_bytes is not None and not args.export:
        from optcoll.exceptions import ArgumentError

        raise ArgumentError("--max-bytes bounds the --export files: give --export DIR")
    if args.plot:
        require_suffix(args.plot, PICTURE_SUFFIXES, "a picture")
        check_output(args.plot, force=args.force, inputs=inputs)
    topology = load_topology(args.topo, **reader_options(args))
    if args.root is not None and args.root not in topology.compute_nodes:
        from optcoll.exceptions import ScheduleError

        raise ScheduleError(f"--root {args.root!r} is not a compute node of {topology.name}")
    sizes = sorted(set(args.sizes or SIZES))
    written = args.format or "msccl"  # the format --export writes
    fmt = written if args.export else args.format
    orders = None
    if fmt is not None:
        from optcoll.export.planned_programs import CARRIED_ORDERS

        orders = CARRIED_ORDERS[fmt]
    options = candidates(topology, args.collective, root=args.root)
    rows = plan(
        topology,
        args.collective,
        sizes,
        root=args.root,
        **sim_options(args).keywords(),
        progress=sys.stderr.isatty(),
        options=options,
        choose_slice=args.slice is None,
        every_candidate=fmt is not None,  # a file is timed for each of the fastest few
        orders=orders,
    )
    chosen: list[Any] = []  # the file of each size (--format, --export)
    planned = rows  # plan's own model's rows (in the link orders the format carries)
    if fmt is not None:
        from optcoll.export.file_rows import file_row
        from optcoll.export.planned import ranked_choices
        from optcoll.export.planned_bands import file_choices

        chosen = file_choices(
            _request(args, fmt), topology, ranked_choices(rows, options, topology),
            progress=sys.stderr.isatty(),
        )  # fmt: skip
        rows = [file_row(row, one) for row, one in zip(rows, chosen, strict=True)]
    from optcoll.core.output import output_transaction

    with output_transaction():  # the band files and the picture appear together or not at all
        files, refused, gaps = (
            _export(args, written, topology, chosen, planned, inputs)
            if args.export
            else ([], [], [])
        )
        if args.plot:
            _plot(args, topology, rows, inputs)
    model = _nccl_model(topology, args.collective, rows)
    if args.json:
        print_json(
            {
                "collective": args.collective,
                "topology": topology.name,
                "format": fmt,  # whose files' link orders the times are in (None: every order)
                "sizes": [
                    {**row.to_dict(), **model.get(row.size, {}), **_model_dict(fmt, own)}
                    for row, own in zip(rows, planned, strict=True)
                ],
                **({"exports": gaps} if args.export else {}),
            }
        )
        return 0
    _table(args, topology, rows, fmt)
    if model:
        print(
            "NCCL's own tuning model (tuning.cc), from the NCCL-like rings' bus bandwidth: "
            + ", ".join(
                f"{size_text(size)} {m['nccl_model_us']:.3f} µs ({m['nccl_model_choice']})"
                for size, m in model.items()
            )
        )
    for path in files:
        print(f"wrote {path}")
    for gap in gaps:
        for line in gap["lines"]:
            print(line)
    for why in refused:
        print(
            f"not exported as {FORMAT_NAMES[written]} (its band holds the fastest "
            f"other schedule): {why}"
        )
    stepped = sorted({r.method for r in rows for o in options if o.method == r.method and o.steps})
    if files and stepped and fmt == "msccl":
        from optcoll.export.msccl_fusion import fuses
        from optcoll.export.planned_programs import MESSAGE_PIECES
        from optcoll.export.runtimes import runtime_profile

        receives = (
            "a receive a step of its own unless fused with the send forwarding it"
            if fuses(runtime_profile(args.runtime))
            else "each receive a step of its own"
        )
        print(
            "the log-step files move every message whole or in "
            f"{' or '.join(map(str, MESSAGE_PIECES))} pieces (the faster file), {receives}: "
            "MSCCL XML cannot carry plan's slices of a message (docs/log_step.md)"
        )
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _nccl_model(topology: Any, collective: str, rows: list[Any]) -> dict[int, dict[str, Any]]:
    """Per size, NCCL's own tuning model's prediction (``nccl_model_us``,
    ``nccl_model_choice``) where an NCCL-like ring is a candidate; empty otherwise."""
    from optcoll.sim.nccl_model import nccl_model

    if not rows or not any(m.startswith("NCCL-like ring") for m, _ in rows[0].candidates):
        return {}
    model = {}
    for row in rows:
        est = nccl_model(topology, collective, row.size)
        model[row.size] = {
            "nccl_model_us": round(est.time_us, 3),
            "nccl_model_choice": f"{est.algorithm}/{est.protocol}",
        }
    return model


def _table(args: argparse.Namespace, topology: Any, rows: list[Any], fmt: str | None) -> None:
    methods = [m for m, _ in rows[0].candidates]
    timed = "" if fmt is None else f": its {FORMAT_NAMES[fmt]} file's, as the file runs"
    print(
        f"{args.collective} on {topology.name} ({topology.num_compute} compute nodes): "
        f"simulated time (µs) of every candidate{timed}, * the fastest"
    )
    from optcoll.bounds.msccl_steps import STEP_BOUND_SUMMARY

    steps = f", {STEP_BOUND_SUMMARY}" if fmt == "msccl" else ""
    print(
        "lower bound = max(bandwidth bound: data / optimal algbw, latency bound: overhead + "
        "slowest shortest path, start-up bound: cuts whose links carry data only after the "
        "overhead and the latency from its source, before the latency to its destination, "
        "depth bound: an overhead and a latency per forwarding step against the link cost of "
        f"shallow schedules{steps}); ratio = fastest / lower bound"
    )
    print(f"holds for: {rows[0].holds_for}")
    width = max(12, *(len(m) + 1 for m in methods))
    print(
        f"{'size':>6}  "
        + "".join(f"{m:>{width}}" for m in methods)
        + f"  {'lower bound (µs)':>16}  {'ratio':>8}  {'algbw':>9}  {'busbw':>9}  {'slice':>6}  order"
    )
    for row in rows:
        cells = "".join(
            f"{'-' if t is None else f'{t:.3f}' + ('*' if m == row.method else ' '):>{width}}"
            for m, t in row.candidates
        )
        piece = "whole" if row.slice_bytes is None else size_text(row.slice_bytes)
        print(
            f"{size_text(row.size):>6}  {cells}  {row.lower_bound_us:>16.3f}  {row.ratio:>8.4f}"
            f"  {row.algbw:>9.3f}  {row.busbw:>9.3f}  {piece:>6}  {row.priority}"
        )
    if fmt is not None:
        from optcoll.export.planned_programs import FILE_CANDIDATES

        print(
            f"- : no file simulated (not among the {FILE_CANDIDATES} fastest the format holds "
            "in plan's own model, in the link orders the files carry; --json: model)"
        )
        return
    print(
        "- : not simulated (too many tasks, or its busiest link alone is slower than the "
        "fastest, or the fastest is already within 0.05 % of the bound)"
    )


def _request(args: argparse.Namespace, fmt: str) -> Any:
    """The export request of ``plan --format``/``--export``: its band files are named in
    ``--export``'s folder (the working directory without it, where nothing is written)."""
    from optcoll.export.request import ExportRequest

    suffix = ".xml" if fmt == "msccl" else ".json"
    return ExportRequest(
        args.topo, str(Path(args.export or ".") / f"{args.collective}{suffix}"), format=fmt,
        collective=args.collective, runtime=args.runtime, placement="both", root=args.root,
        overhead=args.overhead, latency=args.latency, slice=args.slice, bands=True,
        max_bytes=args.max_bytes,
    )  # fmt: skip


def _model_dict(fmt: str | None, row: Any) -> dict[str, Any]:
    """With ``--format``, a size's ``model``: plan's own model's fastest candidate there
    (``method``, ``time_us``, in the link orders the format carries), which its file's
    time replaces."""
    if fmt is None:
        return {}
    return {"model": {"method": row.method, "time_us": round(row.time_us, 4)}}


def _export(
    args: argparse.Namespace,
    fmt: str,
    topology: Any,
    chosen: list[Any],
    rows: list[Any],
    inputs: list[Path],
) -> tuple[list[Path], list[str], list[dict[str, Any]]]:
    """The ``fmt`` files (MSCCL or MSCCL++) of every size band
    (:func:`optcoll.export.planned_bands.planned_bands` of the file ``chosen`` at each
    size: the fastest as a file of plan's fastest candidates, trees, timetables and
    log-step schedules, checked and simulated; consecutive sizes with the same file one
    band), with the schedule JSON of each tree band (``.schedule.json`` beside MSCCL++
    plans); and why each of ``rows``' winners that could not be written was not (its band
    then holds the fastest other candidate); and per planned size plan's own model's time
    and the file's, and where the file is slower, why (``lines``: what is printed)."""
    from dataclasses import replace

    from optcoll.core.output import check_output, write_output
    from optcoll.core.schedule import Schedule
    from optcoll.export.planned_bands import band_name, planned_bands
    from optcoll.io.schedule_json import schedule_text

    folder = Path(args.export)
    suffix = ".xml" if fmt == "msccl" else ".json"
    request = _request(args, fmt)

    def stem(method: str) -> str:
        return "".join(c if c.isalnum() or c in "-_" else "_" for c in method.replace("=", ""))

    def named(low: int, high: int | None, method: str) -> Path:
        return folder / f"{args.collective}.{band_name(low, high)}.{stem(method)}{suffix}"

    def ordered(one: Any) -> str | None:
        """A tree choice's schedule file, with plan's order and slices (a band holds one)."""
        ranked = one.ranked
        if not isinstance(ranked.schedule, Schedule):
            return None
        stats = {**ranked.schedule.stats, "priority": ranked.priority,
                 "slice_bytes": ranked.slice_bytes}  # fmt: skip
        return schedule_text(replace(ranked.schedule, stats=stats))

    bands = planned_bands(request, topology, chosen, output=named,
                          same=lambda a, b: ordered(a) == ordered(b))  # fmt: skip
    files: list[tuple[Path, str]] = []
    for band in bands:
        for _, text, placement in band.files:
            where = "" if placement == "both" else f".{placement}"
            files.append(
                (named(band.low, band.high, band.method).with_suffix(f"{where}{suffix}"), text)
            )
        saved = ordered(band.sizes[0])
        if saved is not None:
            schedule = ".json" if fmt == "msccl" else ".schedule.json"  # beside the plan's .json
            files.append((named(band.low, band.high, band.method).with_suffix(schedule), saved))
    for path, _ in files:
        check_output(path, force=args.force, inputs=inputs)
    for path, text in files:
        write_output(path, text, force=args.force, inputs=inputs)
    won = {r.method for r in rows}
    refused = {why for band in bands for one in band.sizes for why in one.refused}
    notes = sorted(why for why in refused if why.split(":", 1)[0] in won)
    from optcoll.export.planned_programs import msccl_loss

    gaps = [
        {
            "band": band_name(band.low, band.high),
            "method": band.method,
            "bytes": one.size,
            "planned": one.chosen,
            "plan_time_us": round(one.plan_us, 4),
            "file_time_us": round(one.times[0], 4),
            "method_plan_time_us": round(one.ranked.time_us, 4),
            "loss": msccl_loss(one.ranked, topology, args.runtime) if fmt == "msccl" else None,
            "files_tried": {r.method: round(t, 4) for r, t in one.compared},
            "lines": [
                f"band {band_name(band.low, band.high)} ({band.method}) at {size_text(one.size)}: "
                f"plan's model {one.plan_us:.3f} µs ({one.chosen}), the {FORMAT_NAMES[fmt]} "
                f"file simulated {one.times[0]:.3f} µs ({one.times[0] / one.plan_us - 1:+.1%})"
            ]
            + (  # the time a file gets, and why
                ["  " + _achievable(one, topology, fmt, args.runtime)]
                if one.times[0] > one.plan_us * (1 + 1e-9)
                else []
            ),
        }
        for band in bands
        for one in band.sizes
    ]
    return [path for path, _ in files], notes, gaps


def _achievable(one: Any, topology: Any, fmt: str, runtime: str) -> str:
    """What a ``fmt`` file (MSCCL: for ``runtime``) gets at one size where plan's time is
    not reached: the band file's time, its candidate's time in plan and what the file
    loses of it (MSCCL: :func:`optcoll.export.planned_programs.msccl_loss`; MSCCL++:
    :func:`~optcoll.export.planned_programs.not_carried`), and plan's choice as a file."""
    from optcoll.export.planned_programs import msccl_loss, not_carried

    ranked = one.ranked
    loss = "as in plan"
    if one.times[0] > ranked.time_us * (1 + 1e-9):
        if fmt == "msccl":
            loss = f"as a file {msccl_loss(ranked, topology, runtime)}"
        else:
            loss = f"not carried: {not_carried(fmt, runtime)}"
    target = f"{runtime} MSCCL" if fmt == "msccl" else FORMAT_NAMES[fmt]
    line = (
        f"achievable as {target}: {one.times[0]:.3f} µs, {ranked.method} "
        f"({ranked.time_us:.3f} µs in plan's model; {loss})"
    )
    if one.chosen != ranked.method:
        tried = {r.method: t for r, t in one.compared}
        if one.chosen in tried:
            line += f"; plan's {one.chosen} as a file {tried[one.chosen]:.3f} µs"
        else:
            line += f"; plan's {one.chosen} has no file (below)"
    return line


def _plot(args: argparse.Namespace, topology: Any, rows: list[Any], inputs: list[Path]) -> None:
    from matplotlib.figure import Figure

    from optcoll.plot import plot_algbw_curves, save_figure

    sizes = [row.size for row in rows]
    times = {
        m: [math.nan if row.candidates[i][1] is None else row.candidates[i][1] for row in rows]
        for i, (m, _) in enumerate(rows[0].candidates)
    }
    times["lower bound"] = [row.lower_bound_us for row in rows]
    figure = Figure(figsize=(11, 4.5), layout="constrained")
    left, right = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    plot_algbw_curves(
        {m: (sizes, t) for m, t in times.items()},
        ax=left, ylabel="time (µs)", logy=True, title=f"{args.collective} on {topology.name}",
    )  # fmt: skip
    plot_algbw_curves(
        {m: (sizes, [s / u / 1000 for s, u in zip(sizes, t, strict=True)]) for m, t in times.items()},
        ax=right, ylabel=f"algbw ({topology.bandwidth_unit})", title="simulated, with the lower bound",
    )  # fmt: skip
    for axes in (left, right):
        axes.get_lines()[-1].set_linestyle("--")
        axes.get_lines()[-1].set_color("black")
        axes.legend(fontsize=8)
    save_figure(figure, args.plot, dpi=120, force=args.force, inputs=inputs)
