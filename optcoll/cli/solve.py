"""``optcoll solve``: the main job: optimal bound, schedule, verification, schedule file and picture."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from optcoll.cli._core import (
    add_collective_option,
    add_group_options,
    add_reader_options,
    command_inputs,
    print_json,
    process_groups,
    reader_options,
)
from optcoll.cli._demand import (
    add_demand_options,
    demand_solve,
    has_demand,
    rooted_solve,
)
from optcoll.core.rational import fraction_text
from optcoll.exceptions import OptCollError, OutputError

#: The rooted collectives without copies or sums (solved by :mod:`optcoll.cli._demand`).
ROOTED = ("scatter", "gather")

NAME = "solve"
HELP = "the main job: optimal bound, schedule, verification, schedule file and picture"
#: Shown at the end of ``optcoll solve --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll solve dgx-a100:2
  optcoll solve mine.yaml --collective allreduce -o out
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    add_collective_option(
        parser,
        "allgather (default), reduce-scatter, allreduce, broadcast, reduce, alltoall, scatter "
        "or gather",
        extra=ROOTED,
    )
    parser.add_argument(
        "-o",
        "--out-dir",
        default="optcoll-out",
        metavar="DIR",
        help="folder for the schedule file and the picture (default: optcoll-out)",
    )
    parser.add_argument(
        "-k",
        type=int,
        default=None,
        metavar="K",
        help="fixed chunks per root (alltoall: per pair)",
    )
    parser.add_argument(
        "--root", metavar="NODE", help="root of a broadcast, reduce, scatter or gather"
    )
    add_demand_options(parser)
    add_group_options(parser)
    parser.add_argument(
        "--force", action="store_true", help="overwrite existing output files in DIR"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def file_stem(name: str) -> str:
    """A file-name stem for a topology name: ``dgx-a100:2`` -> ``dgx-a100_2``.

    Examples
    --------
    >>> file_stem("dgx-a100:2"), file_stem("torus:4x4,bw=50"), file_stem("x\\x00y")
    ('dgx-a100_2', 'torus_4x4_bw-50', 'x_y')

    Control characters (a NUL no file name may hold, a newline) become ``_`` too.
    """
    for old, new in ((":", "_"), ("/", "_"), (",", "_"), ("=", "-"), (" ", "_")):
        name = name.replace(old, new)
    return "".join("_" if ch < " " or ch == "\x7f" else ch for ch in name) or "topology"


def run(args: argparse.Namespace) -> int:
    """Run the command; its files appear together or not at all (a failed run leaves none)."""
    from optcoll.core.output import output_transaction

    with output_transaction():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from optcoll.core.output import check_output
    from optcoll.io import load_topology, save_schedule
    from optcoll.plot import plot_cut, save_figure
    from optcoll.schedules.solution import solve

    topology = load_topology(args.topo, **reader_options(args))
    stem = f"{file_stem(topology.name)}.{args.collective}"
    groups = process_groups(topology, args)
    if groups is not None:
        return _groups(groups, Path(args.out_dir) / f"{stem}.groups", args)
    if has_demand(args):
        return demand_solve(topology, args, Path(args.out_dir) / f"{stem}v.routes.json")
    if args.collective in ROOTED:
        return rooted_solve(topology, args, Path(args.out_dir) / f"{stem}.routes.json")
    if args.collective == "alltoall":
        return _alltoall(topology, Path(args.out_dir) / stem, args)
    if args.collective == "allreduce" and args.k is None:
        from optcoll.schedules.spanning_tree_allreduce import (
            reduces_over_spanning_trees,
            spanning_trees_beat_rs_ag,
        )

        path = Path(args.out_dir) / f"{stem}.schedule.json"
        if topology.has_in_network:
            return _aggregation(topology, path, args)
        if reduces_over_spanning_trees(topology) and spanning_trees_beat_rs_ag(topology):
            return _aggregation(topology, path, args, spanning=True)
    out_dir = Path(args.out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"{out_dir} is a file; -o names the folder for the output files")
    schedule_path = out_dir / f"{stem}.schedule.json"
    picture_path = out_dir / f"{stem}.cut.png"
    rooted = args.collective in ("broadcast", "reduce")
    outputs = (schedule_path,) if rooted else (schedule_path, picture_path)
    inputs = command_inputs(args)
    for path in outputs:
        check_output(path, force=args.force, inputs=inputs)
    solution = solve(
        topology, args.collective, k=args.k, root=args.root, progress=sys.stderr.isatty()
    )
    save_schedule(solution.schedule, schedule_path, force=args.force, inputs=inputs)
    if solution.bound is not None:
        save_figure(
            plot_cut(solution.bound.topology, solution.bound.bottleneck_cut),
            picture_path,
            force=args.force,
            inputs=inputs,
        )
    if args.json:
        print_json(solution.to_dict() | {"files": [str(path) for path in outputs]})
        return 0
    rows = solution.report_rows()
    rows.append(("wrote", "\n                ".join(str(path) for path in outputs)))
    rows.append(("seconds", f"{solution.seconds:.2f}"))
    for label, text in rows:
        print(f"{label:<15} {text}")
    return 0


def _aggregation_claim(schedule: Any, attained: bool, spanning: bool = False) -> str:
    """What an aggregation schedule is optimal among, as its file states it."""
    if attained:
        return "optimal: attains the cut bound, which holds for every schedule"
    if spanning and schedule.stats.get("proved") is True:
        return (
            "optimal among all allreduce schedules in which only compute nodes reduce "
            "(partition bound attained)"
        )
    if schedule.stats.get("proved") is True:
        return f"optimal among {schedule.stats['optimal_among']}"
    return "not proved optimal"


def _aggregation(
    topology: Any, path: Any, args: argparse.Namespace, *, spanning: bool = False
) -> int:
    """``solve --collective allreduce`` by aggregation trees: where switches reduce or
    multicast, or (``spanning``) reduce + broadcast over spanning trees where that beats
    reduce-scatter + allgather (a topology without switches)."""
    import time

    from optcoll.bounds.partition import partition_bound
    from optcoll.core.output import check_output, input_files
    from optcoll.core.units import time_factor_meaning
    from optcoll.io import save_schedule
    from optcoll.schedules.aggregation import aggregation_schedule
    from optcoll.schedules.collectives import collective_lower_bound
    from optcoll.schedules.spanning_tree_allreduce import spanning_tree_schedule
    from optcoll.verify.aggregation import verify_aggregation_schedule

    start = time.perf_counter()
    inputs = input_files(args.topo)
    check_output(path, force=args.force, inputs=inputs)
    schedule = spanning_tree_schedule(topology) if spanning else aggregation_schedule(topology)
    cut_bound, time_factor = schedule.lower_bound, schedule.time_factor
    if cut_bound is None or time_factor is None:  # both builders set both
        raise OptCollError("the aggregation schedule carries no cut bound or time factor")
    # without switches the exact partition bound is the least time of every allreduce
    partition = partition_bound(topology, "allreduce") if spanning else None
    optimum = partition.time_factor if partition is not None and partition.exact else None
    verdict = verify_aggregation_schedule(
        topology, schedule, optimum=time_factor if optimum is None else optimum
    )
    if not verdict.valid:
        raise OptCollError(f"the aggregation schedule failed verification: {verdict.reason}")
    best_bound = cut_bound if optimum is None else max(cut_bound, optimum)
    relaying = collective_lower_bound(topology, "allreduce") / topology.num_compute
    save_schedule(schedule, path, force=args.force, inputs=inputs)
    unit = topology.bandwidth_unit
    what = (
        "allreduce by reduce + broadcast over spanning trees (compute nodes reduce)"
        if spanning
        else "allreduce by aggregation trees (switches reduce and multicast)"
    )
    rows = [
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        ("collective", what),
        ("cut bound", f"M * {fraction_text(cut_bound)}"),
        *(
            []
            if partition is None
            else [
                (
                    "partition",
                    f"M * {fraction_text(partition.time_factor)} (algbw "
                    f"{float(1 / partition.time_factor):.3f} {unit}), {partition.holds_for}",
                )
            ]
        ),
        (
            "schedule",
            f"M * {fraction_text(time_factor)} (algbw {schedule.algbw:.3f} {unit}), "
            f"k = {schedule.k}, {len(schedule.trees)} trees, verified",
        ),
        ("optimality", _aggregation_claim(schedule, time_factor == cut_bound, spanning)),
        ("RS + AG", f"M * {fraction_text(relaying)} (algbw {float(1 / relaying):.3f} {unit})"),
        ("wrote", str(path)),
        ("seconds", f"{time.perf_counter() - start:.2f}"),
    ]
    if args.json:  # the keys and per-shard time_factor of every other solve --json
        n = topology.num_compute
        print_json(
            {
                "collective": "allreduce",
                "topology": topology.name,
                "topology_hash": topology.content_hash,
                "num_compute": n,
                "bandwidth_unit": unit,
                "root": None,
                "k": schedule.k,
                "time_factor": fraction_text(n * time_factor),
                "time_factor_meaning": time_factor_meaning("allreduce", unit),
                "algbw": round(float(1 / time_factor), 3),
                "lower_bound": fraction_text(n * best_bound),
                "optimal_algbw": round(float(1 / best_bound), 3),
                "optimal": time_factor == best_bound,
                "claim": _aggregation_claim(schedule, time_factor == cut_bound, spanning),
                "trees": len(schedule.trees),
                "routes": 0,
                "verified": True,
                "in_network": not spanning,
                "method": str(schedule.stats.get("method", "aggregation trees")),
                **(
                    {}
                    if partition is None
                    else {
                        "partition_bound": fraction_text(n * partition.time_factor),
                        "partition_holds_for": partition.holds_for,
                    }
                ),
                "cut_bound": fraction_text(cut_bound),
                "reduce_scatter_allgather": fraction_text(relaying),
                "per_message": "cut_bound and reduce_scatter_allgather are per whole message: "
                "T = M * value (as bound --collective allreduce states them)",
                "files": [str(path)],
            }
        )
        return 0
    for label, text in rows:
        print(f"{label:<15} {text}")
    return 0


def _alltoall(topology: Any, stem: Any, args: argparse.Namespace) -> int:
    """``solve --collective alltoall``: t*, routes attaining it, verification, file and picture."""
    import time

    from optcoll.io import save_schedule
    from optcoll.plot import plot_link_utilisation, save_figure
    from optcoll.schedules.alltoall import alltoall_bound, alltoall_schedule
    from optcoll.verify.schedule import verify_schedule

    inputs = command_inputs(args)
    schedule_path, picture_path = _outputs(stem, "loads", args, inputs)
    started = time.perf_counter()
    bound = alltoall_bound(topology)
    schedule = alltoall_schedule(topology, args.k, bound=bound)
    check = verify_schedule(
        topology, schedule, optimum=bound.time_factor, require_optimal=args.k is None
    )
    if not check.valid or check.time_factor is None:
        raise OptCollError(f"internal error: the schedule failed verification: {check.reason}")
    save_schedule(schedule, schedule_path, force=args.force, inputs=inputs)
    save_figure(
        plot_link_utilisation(topology, schedule), picture_path, force=args.force, inputs=inputs
    )
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


def _groups(groups: Any, stem: Any, args: argparse.Namespace) -> int:
    """``solve --groups``: the groups' bound, schedule, verification, file and link picture."""
    import time

    from optcoll.exceptions import MethodError
    from optcoll.groups.schedule import groups_collective
    from optcoll.io import write_document
    from optcoll.plot import plot_group_links, save_figure
    from optcoll.verify.schedule import verify_groups_schedule

    if args.k is not None or args.root is not None:
        raise MethodError(
            "-k and --root do not apply with --groups: each group takes the k that reaches "
            "the optimum, and a broadcast or reduce is rooted at each group's first member"
        )
    topology = groups.topology
    inputs = command_inputs(args)
    schedule_path, picture_path = _outputs(stem, "links", args, inputs)
    started = time.perf_counter()
    schedule = groups_collective(groups, args.collective, form=args.group_form)
    check = verify_groups_schedule(topology, schedule)  # independent: every load recomputed
    if not check.valid or check.time_factor is None or check.time_factor != schedule.time_factor:
        raise OptCollError(f"internal error: the schedule failed verification: {check.reason}")
    write_document(schedule.to_dict(), schedule_path, force=args.force, inputs=inputs)
    save_figure(plot_group_links(topology, schedule), picture_path, force=args.force, inputs=inputs)
    seconds = time.perf_counter() - started
    summary = {
        "topology": topology.name,
        "collective": schedule.collective,
        "relay": schedule.relay,
        "num_groups": len(schedule.groups),
        "time_factor": fraction_text(check.time_factor),
        "groups": [
            {
                "members": list(s.compute_nodes),
                **({} if s.root is None else {"root": s.root}),
                "k": s.k,
                "trees": len(s.trees),
            }
            for s in schedule.groups
        ],
        "verified": check.valid,
        "files": [str(schedule_path), str(picture_path)],
        "seconds": round(seconds, 3),
    }
    if args.json:
        print_json(summary)
        return 0
    unit = topology.bandwidth_unit
    sizes = sorted({len(s.compute_nodes) for s in schedule.groups})
    print(f"topology        {topology.name} ({topology.num_compute} compute nodes)")
    print(
        f"groups          {len(schedule.groups)} of {', '.join(map(str, sizes))} "
        f"(relay {schedule.relay})"
    )
    print(
        f"{schedule.collective:<15} time factor {summary['time_factor']} per {unit}, all groups "
        f"at once, verified independently"
    )
    print(f"wrote           {schedule_path}")
    print(f"                {picture_path}")
    print(f"seconds         {seconds:.2f}")
    return 0


def _outputs(stem: Any, picture: str, args: argparse.Namespace, inputs: Any) -> tuple[Any, Any]:
    """``STEM.schedule.json`` and ``STEM.PICTURE.png``, each checked writable (``--force``)."""
    from optcoll.core.output import check_output

    return tuple(  # type: ignore[return-value]
        check_output(stem.with_name(f"{stem.name}.{end}"), force=args.force, inputs=inputs)
        for end in ("schedule.json", f"{picture}.png")
    )
