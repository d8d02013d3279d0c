"""``optcoll solve``: the main job: optimal bound, trees, verification, schedule file and picture."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from optcoll.cli._core import add_reader_options, print_json, reader_options
from optcoll.exceptions import OptCollError
from optcoll.rational import fraction_text

NAME = "solve"
HELP = "the main job: optimal bound, trees, verification, schedule file and picture"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument(
        "-o",
        "--out-dir",
        default="optcoll-out",
        metavar="DIR",
        help="folder for the schedule file and the picture (default: optcoll-out)",
    )
    parser.add_argument(
        "--collective",
        default="allgather",
        choices=("allgather", "alltoall"),
        help="allgather (default: trees and the bottleneck cut picture) or alltoall (exact "
        "LP optimum, routes, and a link-load picture)",
    )
    parser.add_argument(
        "-k",
        type=int,
        default=None,
        metavar="K",
        help="fixed chunks per root (alltoall: per pair)",
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite existing output files in DIR"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from optcoll.bound import optimal_cut_ratio
    from optcoll.io import load_topology, save_schedule
    from optcoll.packing import pack_arborescences
    from optcoll.plot import plot_cut, save_figure
    from optcoll.verify import verify_schedule

    topology = load_topology(args.topo, **reader_options(args))
    stem = topology.name.replace(":", "_").replace("/", "_").replace(",", "_").replace("=", "-")
    if args.collective == "alltoall":
        return _alltoall(topology, Path(args.out_dir) / f"{stem}.alltoall", args)
    out_dir = Path(args.out_dir)
    schedule_path = out_dir / f"{stem}.schedule.json"
    picture_path = out_dir / f"{stem}.cut.png"
    for path in (schedule_path, picture_path):
        if path.exists() and not args.force:
            raise OptCollError(f"{path} exists; pass --force to overwrite it or choose -o DIR")
    started = time.perf_counter()
    bound = optimal_cut_ratio(topology)
    schedule = pack_arborescences(topology, args.k, progress=sys.stderr.isatty())
    check = verify_schedule(topology, schedule, optimum=bound.ratio)
    if not check.valid or check.time_factor is None:
        raise OptCollError(f"internal error: the schedule failed verification: {check.reason}")
    save_schedule(schedule, schedule_path)
    save_figure(plot_cut(topology, bound.bottleneck_cut), picture_path)
    seconds = time.perf_counter() - started
    unit = topology.bandwidth_unit
    summary = {
        "topology": topology.name,
        "num_compute": topology.num_compute,
        "cut_ratio": fraction_text(bound.ratio),
        "algbw": round(bound.algbw, 3),
        "bottleneck_cut": bound.describe_cut(),
        "k": schedule.k,
        "time_factor": fraction_text(check.time_factor),
        "schedule_algbw": round(float(topology.num_compute / check.time_factor), 3),
        "verified": check.valid,
        "trees": schedule.stats.get("trees", len(schedule.trees)),
        "schedule": str(schedule_path),
        "picture": str(picture_path),
        "seconds": round(seconds, 3),
    }
    if args.json:
        print_json(summary)
        return 0
    optimal = check.time_factor == bound.ratio
    print(f"topology        {topology.name} ({topology.num_compute} compute nodes)")
    print(
        f"optimal algbw   {bound.algbw:.3f} {unit}  (r* = {fraction_text(bound.ratio)} per {unit})"
    )
    print(f"bottleneck cut  {bound.describe_cut()}")
    print(
        f"schedule        {summary['trees']} trees, k = {schedule.k}, time factor "
        f"{summary['time_factor']} ({'optimal' if optimal else 'best with this k'}), "
        f"verified independently"
    )
    print(f"wrote           {schedule_path}")
    print(f"                {picture_path}")
    print(f"seconds         {seconds:.2f}")
    return 0


def _alltoall(topology: Any, stem: Any, args: argparse.Namespace) -> int:
    """``solve --collective alltoall``: t*, routes attaining it, verification, file and picture."""
    import time

    from optcoll.alltoall import alltoall_bound, alltoall_schedule
    from optcoll.io import save_schedule
    from optcoll.output import check_output
    from optcoll.plot import plot_link_utilisation, save_figure
    from optcoll.verify import verify_schedule

    schedule_path = check_output(stem.with_name(stem.name + ".schedule.json"), force=args.force)
    picture_path = check_output(stem.with_name(stem.name + ".loads.png"), force=args.force)
    started = time.perf_counter()
    bound = alltoall_bound(topology)
    schedule = alltoall_schedule(topology, args.k, bound=bound)
    check = verify_schedule(
        topology, schedule, optimum=bound.time_factor, require_optimal=args.k is None
    )
    if not check.valid or check.time_factor is None:
        raise OptCollError(f"internal error: the schedule failed verification: {check.reason}")
    save_schedule(schedule, schedule_path)
    save_figure(plot_link_utilisation(topology, schedule), picture_path)
    seconds = time.perf_counter() - started
    summary = {
        "topology": topology.name,
        "collective": "alltoall",
        "num_compute": topology.num_compute,
        "optimum": fraction_text(bound.time_factor),
        "cut_bound": fraction_text(bound.cut_bound),
        "algbw": round(bound.algbw, 3),
        "k": schedule.k,
        "time_factor": fraction_text(check.time_factor),
        "schedule_algbw": round(float(topology.num_compute / check.time_factor), 3),
        "verified": check.valid,
        "routes": len(schedule.routes),
        "paths": schedule.stats["paths"],
        "schedule": str(schedule_path),
        "picture": str(picture_path),
        "seconds": round(seconds, 3),
    }
    if args.json:
        print_json(summary)
        return 0
    unit = topology.bandwidth_unit
    optimal = check.time_factor == bound.time_factor
    print(f"topology        {topology.name} ({topology.num_compute} compute nodes)")
    print(
        f"all-to-all      t* = {summary['optimum']} per {unit} (algbw {bound.algbw:.3f} {unit}), "
        f"cut bound {summary['cut_bound']}"
    )
    print(
        f"schedule        {summary['routes']} routes on {summary['paths']} paths, k = "
        f"{schedule.k}, time factor {summary['time_factor']} "
        f"({'optimal' if optimal else 'ratio ' + schedule.stats['ratio_to_optimum'] + ' to t*'}), "
        "verified independently"
    )
    print(f"wrote           {schedule_path}")
    print(f"                {picture_path}")
    print(f"seconds         {seconds:.2f}")
    return 0
