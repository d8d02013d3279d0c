"""The ``optcoll`` command: one module per subcommand, listed in :data:`COMMANDS`.

Every subcommand takes TOPO, a topology file path or a built-in spec such as
``dgx-a100:2``. Bad input prints one line on stderr and exits with status 2;
``--json`` gives machine-readable output on stdout.

A command module defines ``NAME``, ``HELP``, ``EXAMPLES`` (one or two command lines
that end its ``--help``), ``add_arguments(parser)`` and ``run(args) -> int``; it
imports heavy libraries inside ``run`` so that building the parser stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence

from optcoll import __version__
from optcoll.cli._core import Parser, check_output_names
from optcoll.exceptions import OptCollError, OutputExistsError

__all__ = ["main", "build_parser", "COMMANDS"]

#: Command modules of :mod:`optcoll.cli`, in the order ``optcoll --help`` lists them.
COMMANDS = (
    "solve",
    "topologies",
    "show",
    "convert",
    "bound",
    "verify",
    "plot",
    "crosscheck",
    "trees",
    "export",
    "check_xml",
    "check_plan",
    "check_et",
    "compare",
    "simulate",
    "plan",
    "lp",
    "sweep",
    "resilience",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (used by ``main`` and by the docs' generated --help page)."""
    parser = Parser(
        prog="optcoll",
        description="Provably optimal collective-communication schedules for any topology.",
    )
    parser.add_argument("--version", action="version", version=f"optcoll {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module_name in COMMANDS:
        command = importlib.import_module(f"optcoll.cli.{module_name}")
        p = sub.add_parser(
            command.NAME,
            help=command.HELP,
            description=command.HELP,
            epilog=getattr(command, "EXAMPLES", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``optcoll`` console script; returns the exit status.

    SIGTERM ends a run like Ctrl-C (KeyboardInterrupt), so every worker is stopped and
    no output is left half-written either way.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print("optcoll: interrupted", file=sys.stderr)
        return 130
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        check_output_names(args)
        status = int(args.run(args) or 0)
        sys.stdout.flush()
        return status
    except OptCollError as err:
        text = err.advice("--force") if isinstance(err, OutputExistsError) else str(err)
        message = " ".join(text.split("\n"))
        print(f"optcoll: error: {message}", file=sys.stderr)
        return 2
    except OverflowError as err:
        # Exact values are fine; only their float display or an LP coefficient overflowed.
        print(
            f"optcoll: error: a value is beyond floating-point range ({err}); give bandwidths "
            "in another bandwidth_unit so that they lie within about 1e-300 to 1e300",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError:
        # The reader of our output went away (e.g. ``| head``): say so once, quietly end.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        print("optcoll: error: output pipe closed before all output was written", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("optcoll: interrupted", file=sys.stderr)
        return 130
