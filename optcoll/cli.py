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


if __name__ == "__main__":
    sys.exit(main())
