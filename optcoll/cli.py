"""The ``optcoll`` command.

Every subcommand takes TOPO, a topology file path or a built-in spec such as
``dgx-a100:2``. Bad input prints one line on stderr and exits with status 2;
``--json`` gives machine-readable output on stdout.

Each subcommand is a pair of functions, ``_add_NAME(parser)`` and
``_run_NAME(args) -> int``, listed in ``_COMMANDS``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from optcoll import __version__
from optcoll.exceptions import FileFormatError, OptCollError
from optcoll.topology import plain_number

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


# --- subcommands: one _add_NAME(parser) / _run_NAME(args) pair each, listed in _COMMANDS ---


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (used by ``main`` and by the README's CLI reference)."""
    parser = _Parser(
        prog="optcoll",
        description="Provably optimal collective-communication schedules for any topology.",
    )
    parser.add_argument("--version", action="version", version=f"optcoll {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, help_text, add, run in _COMMANDS:
        p = sub.add_parser(name, help=help_text, description=help_text)
        add(p)
        p.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``optcoll`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except OptCollError as err:
        print(f"optcoll: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("optcoll: interrupted", file=sys.stderr)
        return 130


# --- foundation: topologies / show / convert -----------------------------------------


def _add_topologies(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _run_topologies(args: argparse.Namespace) -> int:
    from optcoll.topologies import families

    entries = [
        {"name": f.name, "aliases": list(f.aliases), "usage": f.usage, "summary": f.summary}
        for f in families()
    ]
    if args.json:
        _print_json(entries)
        return 0
    width = max(len(e["name"]) for e in entries)
    for e in entries:
        print(f"{e['name']:<{width}}  {e['summary']}")
        print(f"{'':<{width}}  usage: {e['usage']}")
    print("\nTOPO arguments accept any of these specs or a .json/.yaml topology file.")
    return 0


def _number_text(value: Fraction) -> str:
    """An exact number for people: ``300``, ``12.5`` or ``100/3``."""
    return str(plain_number(value))


def _add_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _run_show(args: argparse.Namespace) -> int:
    from optcoll.io import load_topology

    topo = load_topology(args.topo)
    rows = {
        kind: [
            {
                "id": node_id,
                "group": topo.node[node_id].group,
                "ingress": plain_number(topo.in_bandwidth(node_id)),
                "egress": plain_number(topo.out_bandwidth(node_id)),
            }
            for node_id in ids
        ]
        for kind, ids in (("compute_nodes", topo.compute_nodes), ("switches", topo.switch_nodes))
    }
    summary = {
        "name": topo.name,
        "description": topo.description,
        "bandwidth_unit": topo.bandwidth_unit,
        "num_compute": topo.num_compute,
        "num_switches": len(topo.switch_nodes),
        "num_links": len(topo.capacity),
        "num_declared_links": len(topo.links),
        "total_bandwidth": plain_number(sum(topo.capacity.values(), Fraction(0))),
        **rows,
    }
    if args.json:
        _print_json(summary)
        return 0
    print(topo.name + (f": {topo.description}" if topo.description else ""))
    print(
        f"{summary['num_compute']} compute nodes, {summary['num_switches']} switches, "
        f"{summary['num_links']} directed links ({summary['num_declared_links']} declared), "
        f"total bandwidth {summary['total_bandwidth']} {topo.bandwidth_unit}"
    )
    for kind, title in (("compute_nodes", "compute node"), ("switches", "switch")):
        if not rows[kind]:
            continue
        table = [
            (title, "group", f"ingress {topo.bandwidth_unit}", f"egress {topo.bandwidth_unit}")
        ]
        table += [
            (r["id"], r["group"] or "-", str(r["ingress"]), str(r["egress"])) for r in rows[kind]
        ]
        widths = [max(len(row[i]) for row in table) for i in range(4)]
        print()
        for row in table:
            print(
                f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  "
                f"{row[2]:>{widths[2]}}  {row[3]:>{widths[3]}}"
            )
    return 0


def _add_convert(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="IN", help="topology file or built-in spec")
    parser.add_argument("target", metavar="OUT", help="output file: .json, .yaml or .yml")
    parser.add_argument("--force", action="store_true", help="overwrite OUT if it exists")


def _run_convert(args: argparse.Namespace) -> int:
    from pathlib import Path

    from optcoll.io import load_topology, save_topology

    source, target = Path(args.source), Path(args.target)
    if source.exists() and target.exists() and source.samefile(target):
        raise FileFormatError(f"{target}: refusing to overwrite the input file; choose another OUT")
    if target.exists() and not args.force:
        raise FileFormatError(f"{target}: file exists; pass --force to overwrite it")
    topo = load_topology(args.source)
    save_topology(topo, target)
    print(
        f"wrote {target}: {topo.name}, {topo.num_compute} compute nodes, "
        f"{len(topo.switch_nodes)} switches, {len(topo.links)} links"
    )
    return 0


# (name, one-line help, adder, runner), in the order `optcoll --help` lists them.
_COMMANDS: list[
    tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[Any], int]]
] = []

_COMMANDS += [
    (
        "topologies",
        "list the built-in topology families and their spec syntax",
        _add_topologies,
        _run_topologies,
    ),
    (
        "show",
        "summarise a topology: counts, per-node ingress/egress bandwidth, switches",
        _add_show,
        _run_show,
    ),
    (
        "convert",
        "convert a topology between JSON and YAML (IN may be a built-in spec)",
        _add_convert,
        _run_convert,
    ),
]


# --- bound (issue 3): exact optimal cut ratio -----------------------------------------


def _add_bound(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    parser.add_argument(
        "--method",
        default="combinatorial",
        help="combinatorial (parametric max-flow, default), lp, or brute-force (<= 16 nodes)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _run_bound(args: argparse.Namespace) -> int:
    from optcoll.bound import optimal_cut_ratio
    from optcoll.io import load_topology

    topology = load_topology(args.topo)
    result = optimal_cut_ratio(topology, args.method)
    if args.json:
        _print_json(result.to_dict())
        return 0
    unit = topology.bandwidth_unit
    data = result.to_dict()
    work = ", ".join(f"{value} {key.replace('_', ' ')}" for key, value in result.stats.items())
    rows = [
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        ("cut ratio r*", f"{data['cut_ratio']} per {unit} (= {float(result.ratio):.6g})"),
        ("algbw N/r*", f"{result.algbw:.3f} {unit}"),
        ("U, k", f"{data['U']}, {result.k} tree{'s' * (result.k != 1)} per root"),
        ("bottleneck cut", result.describe_cut()),
        ("method", f"{result.method}, {result.seconds:.3f} s" + (f" ({work})" if work else "")),
    ]
    for name, text in rows:
        print(f"{name:<15} {text}")
    return 0


_COMMANDS.append(
    ("bound", "exact optimal allgather cut ratio r* and its bottleneck cut", _add_bound, _run_bound)
)


# --- verify ---------------------------------------------------------------------------


def _add_verify(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    parser.add_argument("schedule", metavar="SCHEDULE", help="schedule file (JSON or YAML)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _run_verify(args: argparse.Namespace) -> int:
    from optcoll.collectives import collective_lower_bound
    from optcoll.io import load_schedule, load_topology
    from optcoll.verify import verify_schedule

    topology = load_topology(args.topo)
    schedule = load_schedule(args.schedule)
    optimum = collective_lower_bound(topology, schedule.collective, schedule.root)
    result = verify_schedule(topology, schedule, optimum=optimum)
    if args.json:
        data = {
            "topology": topology.name,
            "schedule": str(args.schedule),
            "collective": schedule.collective,
            "k": schedule.k,
            "trees": len(schedule.trees),
            "optimum": None if optimum is None else _ratio(optimum),
            **result.to_dict(),
        }
        _print_json(data)
    else:
        print(
            f"schedule     {args.schedule}: {schedule.collective}, k = {schedule.k}, "
            f"{len(schedule.trees)} trees, on {topology.name}"
        )
        print(f"verdict      {'valid' if result.valid else 'INVALID'}")
        if result.reason is not None:
            print(f"reason       {result.reason}")
        if result.time_factor is not None:
            n = topology.num_compute if schedule.collective != "broadcast" else 1
            algbw = f"{float(n / result.time_factor):.3f} {topology.bandwidth_unit}"
            shown = f" (algbw {algbw})" if schedule.collective in ("allgather", "broadcast") else ""
            print(f"time factor  {_ratio(result.time_factor)}{shown}")
        if optimum is not None:
            ratio = result.ratio_to_optimum
            shown = "" if ratio is None else f" (ratio {_ratio(ratio)} = {float(ratio):.6f})"
            print(f"optimum      {_ratio(optimum)}{shown}")
        if result.bottleneck_links:
            links = ", ".join(f"{u} -> {v}" for u, v in result.bottleneck_links[:6])
            more = len(result.bottleneck_links) - 6
            print(f"bottlenecks  {links}" + (f" and {more} more" if more > 0 else ""))
    return 0 if result.valid else 1


def _ratio(value: Any) -> str:
    from fractions import Fraction

    value = Fraction(value)
    return (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )


_COMMANDS.append(
    ("verify", "check a schedule file against a topology (exact)", _add_verify, _run_verify)
)

# --- plot (workflow helper) ---------------------------------------------------------


def _add_plot(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", metavar="TOPO", help="topology file or built-in spec")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="picture file (.png, .pdf, .svg)"
    )
    p.add_argument(
        "--schedule", metavar="FILE", help="schedule file: draw its link loads as a heat map"
    )
    p.add_argument(
        "--tree", metavar="ROOT", help="draw the tree rooted at ROOT (from --schedule, or computed)"
    )
    p.add_argument(
        "--cut", action="store_true", help="draw the bottleneck cut S* that certifies the bound"
    )
    p.add_argument("--dpi", type=int, default=150, help="resolution of a PNG (default 150)")


def _run_plot(args: argparse.Namespace) -> int:
    from optcoll import plot
    from optcoll.exceptions import MethodError, ScheduleError
    from optcoll.io import load_topology, read_document
    from optcoll.schedule import Schedule

    topology = load_topology(args.topology)
    if args.cut and (args.tree or args.schedule):
        raise MethodError("--cut draws the bottleneck cut alone; leave out --tree and --schedule")
    schedule = None
    if args.schedule:
        schedule = Schedule.from_dict(read_document(args.schedule))
    if args.cut:
        try:
            from optcoll.bound import optimal_cut_ratio
        except ModuleNotFoundError as err:
            if err.name != "optcoll.bound":
                raise
            raise MethodError("--cut needs optcoll.bound, which this installation lacks") from None
        ax = plot.plot_cut(topology, optimal_cut_ratio(topology).bottleneck_cut)
    elif args.tree:
        if schedule is None:
            try:
                from optcoll.packing import pack_arborescences
            except ModuleNotFoundError as err:
                if err.name != "optcoll.packing":
                    raise
                raise MethodError("--tree without --schedule needs optcoll.packing") from None
            schedule = pack_arborescences(topology)
        trees = [t for t in schedule.trees if t.root == args.tree]
        if not trees:
            roots = sorted({t.root for t in schedule.trees})
            raise ScheduleError(
                f"the schedule has no tree rooted at {args.tree!r}; roots are {', '.join(roots)}"
            )
        tree = max(trees, key=lambda t: t.chunks)
        ax = plot.plot_tree(topology, tree, k=schedule.k)
    elif schedule is not None:
        ax = plot.plot_link_utilisation(topology, schedule)
    else:
        ax = plot.plot_topology(topology)
    path = plot.save_figure(ax, args.output, dpi=args.dpi)
    print(f"wrote {path}")
    return 0


_COMMANDS.append(
    ("plot", "draw a topology, a tree, the bottleneck cut or link loads", _add_plot, _run_plot)
)


# --- crosscheck -----------------------------------------------------------------------


def _add_crosscheck(parser: argparse.ArgumentParser) -> None:
    from optcoll.crosscheck import METHODS

    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS,
        metavar="METHOD",
        help=f"run only these methods ({', '.join(METHODS)}); default: all that fit the size",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _run_crosscheck(args: argparse.Namespace) -> int:
    from optcoll.crosscheck import crosscheck
    from optcoll.io import load_topology

    check = crosscheck(load_topology(args.topo), methods=args.methods)
    if args.json:
        _print_json(check.to_dict())
    else:
        print(f"cross-check of {check.topology}")
        print(check.table())
        print("all methods agree" if check.agree else f"DISAGREEMENT: {check.disagreement}")
    return 0 if check.agree else 1


_COMMANDS.append(
    (
        "crosscheck",
        "run every method that fits and compare their exact values",
        _add_crosscheck,
        _run_crosscheck,
    )
)


# --- trees ----------------------------------------------------------------------------


def _add_trees(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    parser.add_argument(
        "-k",
        type=int,
        default=None,
        metavar="K",
        help="chunks per root (default: the k that reaches the optimum r*)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the schedule (JSON or YAML)")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def _run_trees(args: argparse.Namespace) -> int:
    import time

    from optcoll.io import load_topology, write_document
    from optcoll.packing import pack_arborescences

    topology = load_topology(args.topo)
    started = time.perf_counter()
    schedule = pack_arborescences(topology, args.k, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - started
    if args.output:
        write_document(schedule.to_dict(), args.output)
    stats = dict(schedule.stats)
    if args.json:
        _print_json(
            {
                "topology": topology.name,
                "collective": schedule.collective,
                "cut_ratio": _ratio(schedule.cut_ratio),
                "k": schedule.k,
                "time_factor": _ratio(schedule.time_factor),
                "algbw": round(schedule.algbw, 3),
                **stats,
                "output": args.output,
                "seconds": round(seconds, 3),
            }
        )
        return 0
    print(f"topology     {topology.name}: {topology.num_compute} compute nodes")
    print(f"r*           {_ratio(schedule.cut_ratio)}")
    print(f"k            {schedule.k}")
    print(
        f"time factor  {_ratio(schedule.time_factor)} (ratio to r* {stats['ratio_to_optimum']}, "
        f"algbw {schedule.algbw:.3f} {topology.bandwidth_unit})"
    )
    print(
        f"trees        {stats['trees']} (height max {stats['max_height']}, "
        f"mean {stats['mean_height']}), {stats['total_sends']} sends"
    )
    if args.output:
        print(f"schedule     {args.output}")
    print(f"seconds      {seconds:.2f}")
    return 0


_COMMANDS.append(
    (
        "trees",
        "allgather spanning-tree schedule reaching the optimum (or the best with k chunks)",
        _add_trees,
        _run_trees,
    )
)


# --- export (collectives branch) ------------------------------------------------------


def _add_export(parser: argparse.ArgumentParser) -> None:
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


def _run_export(args: argparse.Namespace) -> int:
    from optcoll.export import export_schedule
    from optcoll.export.msccl import MscclLimits

    schedule = _export_schedule(args)
    options: dict[str, Any] = {}
    if args.format == "msccl":
        options["channels"] = args.channels
        if args.max_threadblocks is not None:
            options["limits"] = MscclLimits(max_threadblocks=args.max_threadblocks)
    export_schedule(schedule, args.format, args.output, **options)
    factor = "" if schedule.time_factor is None else f", time factor {_ratio(schedule.time_factor)}"
    print(
        f"wrote {args.output}: {schedule.collective} ({args.format}), k = {schedule.k}, "
        f"{len(schedule.trees)} trees{factor}"
    )
    return 0


_COMMANDS.append(
    (
        "export",
        "write a collective schedule as MSCCL XML or schedule JSON",
        _add_export,
        _run_export,
    )
)


# --- compare (collectives branch) -----------------------------------------------------


def _size(text: str) -> int:
    units = {
        "": 1,
        "B": 1,
        "K": 1024,
        "KB": 1024,
        "M": 1024**2,
        "MB": 1024**2,
        "G": 1024**3,
        "GB": 1024**3,
    }
    value = text.strip().upper()
    number = value.rstrip("KMGB")
    unit = value[len(number) :]
    if not number.isdigit() or unit not in units or int(number) <= 0:
        raise argparse.ArgumentTypeError(
            f"size {text!r} must be a positive integer with an optional unit K, M or G (e.g. 64K)"
        )
    return int(number) * units[unit]


def _add_compare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    parser.add_argument(
        "--collective",
        default="allgather",
        choices=("allgather", "allreduce"),
        help="collective to compare (default: allgather)",
    )
    parser.add_argument(
        "--sizes",
        type=_size,
        nargs="+",
        metavar="SIZE",
        help="message sizes for the algbw curve (default 1K 4K ... 4G)",
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=None,
        metavar="US",
        help="latency (µs) of links whose topology entry gives none (default 1)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--plot", metavar="PNG", help="draw algbw vs message size")


def _run_compare(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from optcoll.io import load_topology
    from optcoll.simulate import DEFAULT_LATENCY, SIZES, compare_methods

    topology = load_topology(args.topo)
    latency = DEFAULT_LATENCY if args.latency is None else Fraction(str(args.latency))
    if latency < 0:
        raise OptCollError(f"--latency must be >= 0, got {args.latency}")
    sizes = args.sizes or list(SIZES)
    costs = compare_methods(
        topology, args.collective, default_latency=latency, progress=sys.stderr.isatty()
    )
    best = costs[0]
    rows = []
    for cost in costs:
        rows.append(
            {
                "method": cost.method,
                "algbw": round(cost.asymptotic_algbw, 2),
                "ratio_to_optimal": round(float(best.time_factor / cost.time_factor), 4),
                "time_factor": _ratio(cost.time_factor),
                "latency_us": float(cost.alpha),
                "curve": [{"bytes": m, "algbw": round(bw, 3)} for m, bw in cost.curve(sizes)],
            }
        )
    if args.plot:
        _plot_curves(costs, sizes, topology, args.collective, args.plot)
    if args.json:
        _print_json({"topology": topology.name, "collective": args.collective, "methods": rows})
        return 0
    unit = topology.bandwidth_unit
    print(f"{args.collective} on {topology.name} ({topology.num_compute} compute nodes)")
    width = max(len(r["method"]) for r in rows)
    mid = sizes[len(sizes) // 2]
    print(f"{'method':<{width}}  {'algbw (large M)':>16}  {'ratio':>6}  {f'algbw @ {mid} B':>18}")
    for row, cost in zip(rows, costs, strict=True):
        print(
            f"{row['method']:<{width}}  {row['algbw']:>11.2f} {unit}  "
            f"{row['ratio_to_optimal']:>6.4f}  {cost.algbw(mid):>13.2f} {unit}"
        )
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _plot_curves(costs: Any, sizes: Any, topology: Any, collective: str, path: str) -> None:
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for cost in costs:
        axes.plot(
            sizes, [cost.algbw(m) for m in sizes], marker="o", markersize=3, label=cost.method
        )
    axes.set_xscale("log", base=2)
    axes.set_xlabel("message size M (bytes)")
    axes.set_ylabel(f"algbw ({topology.bandwidth_unit})")
    axes.set_title(f"{collective} on {topology.name}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(figure)


_COMMANDS.append(
    (
        "compare",
        "algbw of the optimal schedule against ring, hierarchical ring and tree baselines",
        _add_compare,
        _run_compare,
    )
)


# --- lp -------------------------------------------------------------------------------

_LP_MODELS = ("congestion", "multicast", "fixed-k", "tree-packing")


def _add_lp(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(
        dest="lp_action", metavar="ACTION", required=True, parser_class=type(parser)
    )
    export = actions.add_parser(
        "export", help="write an LP model as .mps or .lp", description="write an LP model"
    )
    solve = actions.add_parser(
        "solve", help="solve an LP model with HiGHS", description="solve an LP model with HiGHS"
    )
    for sub, models in ((export, _LP_MODELS[:3]), (solve, _LP_MODELS)):
        sub.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
        sub.add_argument(
            "--model",
            choices=models,
            default="congestion",
            help=f"which model: {', '.join(models)} (default congestion"
            + (
                "; fixed-k needs a switch-free topology)"
                if sub is export
                else "; fixed-k and tree-packing need a switch-free topology)"
            ),
        )
        sub.add_argument(
            "--form",
            choices=("time", "rate"),
            default=None,
            help="congestion LP form: min t (time, export default) or max 1/t (rate, solve default)",
        )
        sub.add_argument(
            "-k", type=int, default=None, metavar="K", help="chunks per root (fixed-k)"
        )
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="FILE.mps or FILE.lp")
    solve.add_argument("--time-limit", type=float, default=None, metavar="S", help="seconds")
    solve.add_argument("--json", action="store_true", help="machine-readable output")


def _lp_chunks(args: argparse.Namespace) -> int:
    from optcoll.exceptions import MethodError

    if args.k is None:
        raise MethodError("--model fixed-k needs -k K, the number of chunks per root")
    return args.k


def _run_lp(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from optcoll.io import load_topology

    topology = load_topology(args.topo)
    if args.lp_action == "export":
        from formulations.solve import write_model

        model = _lp_model(topology, args)
        path = write_model(model, args.output)
        rows, cols = len(model.constraints()), len(model.variables())
        print(f"wrote {path}: {args.model} model of {topology.name}, {cols} variables, {rows} rows")
        return 0
    label, value, data, lines = _lp_solve(topology, args)
    unit = topology.bandwidth_unit
    algbw = Fraction(topology.num_compute) / value
    data |= {label.replace(" ", "_"): str(value), "algbw": float(algbw)}
    if args.json:
        _print_json(data)
        return 0
    print(f"topology     {topology.name} ({topology.num_compute} compute nodes)")
    print(f"{label:<12} {value} (1/({unit}))")
    print(f"algbw        {float(algbw):.3f} {unit}")
    for line in lines:
        print(line)
    return 0


def _lp_model(topology: Any, args: argparse.Namespace) -> Any:
    """The PuLP model ``optcoll lp export`` writes."""
    if args.model == "congestion":
        from formulations.congestion import build_congestion

        return build_congestion(topology, args.form or "time")
    if args.model == "multicast":
        from formulations.multicast import build_multicast

        return build_multicast(topology)
    from formulations.fixed_k import build_fixed_k
    from formulations.rational import integer_scaling
    from formulations.tree_packing import check_switch_free

    nodes = check_switch_free(topology.compute_nodes, topology.capacity)
    caps, _ = integer_scaling(topology.capacity)
    return build_fixed_k(nodes, caps, _lp_chunks(args))


def _lp_solve(
    topology: Any, args: argparse.Namespace
) -> tuple[str, Any, dict[str, Any], list[str]]:
    """Solve the chosen model: (label, exact value, JSON fields, text lines)."""
    data: dict[str, Any] = {"topology": topology.name, "model": args.model}
    if args.model == "tree-packing":
        from formulations.tree_packing import fractional_tree_packing

        packing = fractional_tree_packing(
            topology.compute_nodes, topology.capacity, time_limit=args.time_limit
        )
        data |= {
            "trees": len(packing.packing),
            "iterations": packing.iterations,
            "columns": packing.columns,
            "gap": packing.gap,
            "max_overload": str(packing.max_overload),
            "seconds": packing.seconds,
        }
        lines = [
            f"trees        {len(packing.packing)} with positive weight "
            f"({packing.columns} columns generated in {packing.iterations} rounds)",
            f"gap          {packing.gap:.3g}; exact overload {packing.max_overload}",
            f"seconds      {packing.seconds:.2f}",
        ]
        return "cut ratio", packing.t, data, lines
    lines = []
    if args.model == "congestion":
        from formulations.congestion import congestion_bound

        result = congestion_bound(topology, form=args.form or "rate", time_limit=args.time_limit)
        label, value = "cut ratio", result.cut_ratio
        inside = sum(1 for v in result.cut if topology.is_compute(v))
        data |= {"form": result.form, "cut": sorted(result.cut, key=topology.node_ids.index)}
        lines.append(
            f"cut          {inside} compute nodes, "
            f"B+(S) = {topology.cut_bandwidth(result.cut)} {topology.bandwidth_unit}"
        )
    elif args.model == "multicast":
        from formulations.multicast import multicast_bound

        result = multicast_bound(topology, time_limit=args.time_limit)
        label, value = "cut ratio", result.cut_ratio
    else:
        from formulations.fixed_k import fixed_k_optimum

        result = fixed_k_optimum(
            topology.compute_nodes, topology.capacity, _lp_chunks(args), time_limit=args.time_limit
        )
        label, value = "time factor", result.t
        data["k"] = result.K
        lines.append(f"k            {result.K} chunks per root")
    report = result.report
    data["report"] = report.to_dict()
    lines += [
        f"size         {report.num_variables} variables, {report.num_constraints} rows, "
        f"{report.num_nonzeros} nonzeros",
        f"seconds      build {report.build_seconds:.2f}, solve {report.solve_seconds:.2f} "
        f"(HiGHS {report.highs_seconds:.2f}, {report.simplex_iterations} simplex iterations)",
    ]
    return label, value, data, lines


_COMMANDS.append(
    ("lp", "export or solve the LP models (congestion, multicast, ...)", _add_lp, _run_lp)
)


# --- solve: the main job (bound -> trees -> verify -> files) --------------------------


def _add_solve(parser: argparse.ArgumentParser) -> None:
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


def _run_solve(args: argparse.Namespace) -> int:
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
    if not check.valid:
        raise OptCollError(f"internal error: the schedule failed verification: {check.reason}")
    save_schedule(schedule, schedule_path)
    save_figure(plot_cut(topology, bound.bottleneck_cut), picture_path)
    seconds = time.perf_counter() - started
    unit = topology.bandwidth_unit
    summary = {
        "topology": topology.name,
        "num_compute": topology.num_compute,
        "cut_ratio": _ratio(bound.ratio),
        "algbw": round(bound.algbw, 3),
        "bottleneck_cut": bound.describe_cut(),
        "k": schedule.k,
        "time_factor": _ratio(check.time_factor),
        "schedule_algbw": round(float(topology.num_compute / check.time_factor), 3),
        "verified": check.valid,
        "trees": schedule.stats.get("trees", len(schedule.trees)),
        "schedule": str(schedule_path),
        "picture": str(picture_path),
        "seconds": round(seconds, 3),
    }
    if args.json:
        _print_json(summary)
        return 0
    optimal = check.time_factor == bound.ratio
    print(f"topology        {topology.name} ({topology.num_compute} compute nodes)")
    print(f"optimal algbw   {bound.algbw:.3f} {unit}  (r* = {_ratio(bound.ratio)} per {unit})")
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


_COMMANDS.insert(
    0,
    (
        "solve",
        "the main job: optimal bound, trees, verification, schedule file and picture",
        _add_solve,
        _run_solve,
    ),
)


if __name__ == "__main__":
    sys.exit(main())
