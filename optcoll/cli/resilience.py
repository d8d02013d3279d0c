"""``optcoll resilience``: exact r* after each single failure (or random ones), ranked."""

from __future__ import annotations

import argparse
import sys

from optcoll.cli._core import add_reader_options, command_inputs, print_json, reader_options

NAME = "resilience"
HELP = "exact r* after each single link/node/NIC failure (or random ones), most critical first"
#: Shown at the end of ``optcoll resilience --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll resilience dgx-a100:2 --fail links --top 5
  optcoll resilience mi250:1 --random 2 --seed 1 --trials 20
"""


def _positive(text: str, limit: int | None = None) -> int:
    from optcoll.core.limits import MAX_NODES, is_decimal

    limit = MAX_NODES if limit is None else limit
    if not is_decimal(text) or not 1 <= int(text) <= limit:
        raise argparse.ArgumentTypeError(f"{text!r} must be an integer from 1 to {limit}")
    return int(text)


def _trials(text: str) -> int:
    from optcoll.core.limits import MAX_TRIALS

    return _positive(text, MAX_TRIALS)


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed {text!r} must be an integer") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument(
        "--fail",
        choices=("links", "nodes", "nics"),
        default="links",
        help="what fails: links (default: every link between two nodes, both directions), "
        "nodes (with their links) or nics (switches whose id contains 'nic')",
    )
    parser.add_argument(
        "--random",
        type=_positive,
        metavar="K",
        help="instead of every single failure: K elements failing at once, drawn at random",
    )
    parser.add_argument("--seed", type=_seed, default=0, help="seed of --random (default 0)")
    parser.add_argument(
        "--trials", type=_trials, default=1, help="with --random: how many draws (default 1)"
    )
    parser.add_argument(
        "--top", type=_positive, default=10, help="failures listed in the report (default 10)"
    )
    parser.add_argument(
        "--plot", metavar="PNG", help="draw the topology coloured by the algbw each failure loses"
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    parser.add_argument(
        "--workers", type=_positive, metavar="N", help="local processes (default: all cores)"
    )
    parser.add_argument(
        "--dask", metavar="ADDRESS", help="solve on the Dask cluster whose scheduler is at ADDRESS"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.core.output import check_output, require_suffix
    from optcoll.io import load_topology
    from optcoll.studies.resilience import failure_study

    if args.random is None and (args.seed != 0 or args.trials != 1):
        from optcoll.exceptions import OptCollError

        raise OptCollError("--seed and --trials choose random failures: give --random K too")
    if args.plot is not None:
        from optcoll.plot import PICTURE_SUFFIXES

        require_suffix(args.plot, PICTURE_SUFFIXES, "a picture")
        check_output(args.plot, force=args.force, inputs=command_inputs(args))
    topology = load_topology(args.topo, **reader_options(args))
    study = failure_study(
        topology,
        args.fail,
        random_failures=args.random,
        seed=args.seed,
        trials=args.trials,
        workers=args.workers,
        dask=args.dask,
        progress=sys.stderr.isatty(),
    )
    if args.plot is not None:
        _plot(study, args)
    if args.json:
        print_json(study.to_dict())
        return 0
    unit = topology.bandwidth_unit
    base = study.base
    ranked = study.ranked()
    cut_off = sum(1 for f in ranked if f.disconnected)
    what = (
        f"{len(ranked)} single {args.fail[:-1]} failures"
        if args.random is None
        else f"{len(ranked)} draws of {args.random} {args.fail} failing at once (seed {args.seed})"
    )
    by_symmetry = ", the rest by symmetry" if study.solves < len(ranked) else ""
    rows = [
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        (
            "base r*",
            f"{study.to_dict()['base_cut_ratio']} per {unit}, algbw {base.algbw:.3f} {unit}",
        ),
        ("failures", f"{what}; {study.solves} solved{by_symmetry}; {cut_off} disconnect"),
    ]
    for name, text in rows:
        print(f"{name:<15} {text}")
    print("most critical")
    for rank, failure in enumerate(ranked[: args.top], 1):
        failed = ", ".join(
            e if isinstance(e, str) else f"{e[0]} <-> {e[1]}" for e in failure.failed
        )
        if failure.disconnected:
            value = "disconnects the compute nodes"
        else:
            data = failure.to_dict()
            drop = 1 - failure.algbw / base.algbw
            value = f"r* {data['cut_ratio']}, algbw {failure.algbw:.3f} ({100 * drop:.1f}% lost)"
        print(f"  {rank:>3}. {failed}: {value}")
    return 0


def _plot(study, args: argparse.Namespace) -> None:  # noqa: ANN001 - FailureStudy
    from optcoll.plot import plot_failure_drops, save_figure

    drops: dict = {}
    for failure in study.failures:
        for element in failure.failed:
            drop = None if failure.disconnected else 1 - failure.algbw / study.base.algbw
            previous = drops.get(element, 0.0)
            drops[element] = None if drop is None or previous is None else max(drop, previous)
    save_figure(plot_failure_drops(study.topology, drops), args.plot, force=args.force)
