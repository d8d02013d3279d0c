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
from typing import Any

from optcoll import __version__
from optcoll.exceptions import OptCollError

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


# (name, one-line help, adder, runner), in the order `optcoll --help` lists them.
_COMMANDS: list[
    tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[Any], int]]
] = []


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


if __name__ == "__main__":
    sys.exit(main())
