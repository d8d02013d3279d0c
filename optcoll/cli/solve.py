"""``optcoll solve``: the main job: optimal bound, trees, verification, schedule file and picture."""

from __future__ import annotations

import argparse
import sys

from optcoll.cli._core import print_json
from optcoll.exceptions import OptCollError
from optcoll.rational import fraction_text

NAME = "solve"
HELP = "the main job: optimal bound, trees, verification, schedule file and picture"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    parser.add_argument(
        "-o",
        "--out-dir",
        default="optcoll-out",
        metavar="DIR",
        help="folder for the schedule file and the picture (default: optcoll-out)",
    )
    parser.add_argument("-k", type=int, default=None, metavar="K", help="fixed chunks per root")
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

    topology = load_topology(args.topo)
    stem = topology.name.replace(":", "_").replace("/", "_").replace(",", "_").replace("=", "-")
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
