"""``optcoll sweep``: one exact computation per point of a parameter grid, as a table."""

from __future__ import annotations

import argparse
import sys

from optcoll.cli._core import command_inputs, print_json

NAME = "sweep"
HELP = "compute quantities (r*, algbw, k, ...) over a grid of topologies into a CSV/Parquet table"
#: Shown at the end of ``optcoll sweep --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll sweep nics.yaml -o nics.csv --plot nics.png
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="sweep spec file (YAML or JSON)")
    parser.add_argument(
        "-o", "--output", metavar="OUT", help="write the table to OUT (.csv or .parquet)"
    )
    parser.add_argument(
        "--plot", metavar="PNG", help="draw the spec's plot quantity against the first grid key"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="reuse the finished points of OUT (and of an interrupted run's journal), "
        "compute the rest and rewrite OUT",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite OUT and the plot, discarding earlier points (unless --resume)",
    )
    parser.add_argument(
        "--workers", type=_workers, metavar="N", help="local processes (default: all cores)"
    )
    parser.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the points on the Dask distributed cluster whose scheduler is at ADDRESS",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")


def _workers(text: str) -> int:
    from optcoll.core.limits import is_decimal

    if not is_decimal(text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"workers {text!r} must be a positive integer")
    return int(text)


def run(args: argparse.Namespace) -> int:
    from optcoll.core.output import check_output, require_suffix
    from optcoll.studies.sweep import (
        TABLE_SUFFIXES,
        load_sweep_spec,
        plot_values,
        run_sweep,
        sweep_table,
    )

    if args.output is not None:
        require_suffix(args.output, TABLE_SUFFIXES, "a sweep table")
        check_output(args.output, force=True, inputs=command_inputs(args))
    spec = load_sweep_spec(args.spec)
    if args.plot is not None:
        from optcoll.plot import PICTURE_SUFFIXES

        require_suffix(args.plot, PICTURE_SUFFIXES, "a picture")
        check_output(args.plot, force=args.force, inputs=command_inputs(args))
        plot_values([], spec)  # a spec that cannot be plotted fails before the work
    try:
        rows = run_sweep(
            spec,
            output=args.output,
            resume=args.resume,
            force=args.force,
            workers=args.workers,
            dask=args.dask,
            progress=sys.stderr.isatty(),
            inputs=command_inputs(args),
        )
    except KeyboardInterrupt:
        if args.output is None:
            raise
        from optcoll.studies.sweep import journal_path

        print(
            f"optcoll: interrupted; the finished points are kept in "
            f"{journal_path(args.output)}: rerun with --resume to continue",
            file=sys.stderr,
        )
        return 130
    if args.plot is not None:
        from optcoll.plot import plot_algbw_curves, save_figure

        quantity, curves = plot_values(rows, spec)
        ax = plot_algbw_curves(
            curves,
            xlabel=next(iter(spec.grid)),
            ylabel=quantity,
            bytes_axis=False,
            title=f"{quantity} over {spec.base}",
        )
        save_figure(ax, args.plot, force=args.force)
    failed = sum(1 for row in rows if row["error"])
    if args.json:
        print_json({"rows": rows, "failed": failed, "output": args.output})
        return 0
    frame = sweep_table(rows, spec).drop("key")
    print(frame.write_csv(), end="")
    if args.output is not None:
        print(f"wrote {args.output} ({len(rows)} points, {failed} failed)", file=sys.stderr)
    return 0
