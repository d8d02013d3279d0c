"""The ``optcoll`` command: one module per subcommand, listed in :data:`COMMANDS`.

Every subcommand takes TOPO, a topology file path or a built-in spec such as
``dgx-a100:2``. Bad input prints one line on stderr and exits with status 2;
``--json`` gives machine-readable output on stdout.

A command module defines ``NAME``, ``HELP``, ``EXAMPLES`` (one or two command lines
that end its ``--help``), ``add_arguments(parser)`` and ``run(args) -> int``; it
imports heavy libraries inside ``run`` so that building the parser stays fast.
"""

from __future__ import annotations

import os
import signal
import threading


def _interrupted_at_start(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM while the command's modules load: nothing is written yet, so end
    at once with one line, not with the traceback of whichever import was running."""
    os.write(2, b"optcoll: interrupted\n")
    os._exit(130)


_ON_MAIN_THREAD = threading.current_thread() is threading.main_thread()
if _ON_MAIN_THREAD:  # signal handlers can only be set there
    _STARTUP_HANDLERS = {
        signum: signal.signal(signum, _interrupted_at_start)
        for signum in (signal.SIGINT, signal.SIGTERM)
    }

import argparse  # noqa: E402  (after the handlers, so a Ctrl-C here is quiet too)
import importlib  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from optcoll import __version__  # noqa: E402
from optcoll.cli._core import Parser, check_output_names  # noqa: E402
from optcoll.exceptions import OptCollError, OutputExistsError  # noqa: E402

if _ON_MAIN_THREAD:  # importing this module leaves the caller's handlers as they were
    for _signum, _handler in _STARTUP_HANDLERS.items():
        if _handler is not None:  # None: a handler set outside Python, left alone
            signal.signal(_signum, _handler)

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


class _Interruption:
    """SIGINT/SIGTERM handler of a running command: raise KeyboardInterrupt, and remember
    that it did, so an error that an interrupted import turns the interrupt into (numpy
    raises ImportError) is still reported as the interruption it is. An interrupt that
    lands in a callback, where Python would print it and carry on, is delivered again."""

    def __init__(self) -> None:
        self.happened = False

    def __call__(self, signum: int, frame: object) -> None:
        self.happened = True
        raise KeyboardInterrupt

    def unraisable(self, hook: Any) -> Any:
        """A ``sys.unraisablehook`` that re-sends a swallowed interrupt, else calls ``hook``."""

        def redeliver(unraisable: Any) -> None:
            if issubclass(unraisable.exc_type, KeyboardInterrupt):
                self.happened = True
                # Again in a millisecond (SIGALRM, handled as SIGINT), when this hook
                # and the callback have returned.
                signal.setitimer(signal.ITIMER_REAL, 0.001)
            else:
                hook(unraisable)

        return redeliver


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``optcoll`` console script; returns the exit status.

    Ctrl-C or SIGTERM while the arguments are read ends the process at once (nothing is
    written yet); during the command it raises KeyboardInterrupt, so every worker is
    stopped and no output is left half-written. Either way: one line, status 130.
    """
    interruption = _Interruption()
    on_main_thread = threading.current_thread() is threading.main_thread()
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)  # SIGALRM: see unraisable
    previous = {}
    if on_main_thread:
        previous = {signum: signal.signal(signum, _interrupted_at_start) for signum in signals}
    unraisablehook = sys.unraisablehook
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if on_main_thread:
            for signum in signals:
                signal.signal(signum, interruption)
            sys.unraisablehook = interruption.unraisable(unraisablehook)
        status = _run(parser, args)
    except BaseException as err:
        if not (interruption.happened or isinstance(err, KeyboardInterrupt)):
            raise
        status = 130
    finally:
        sys.unraisablehook = unraisablehook
        if on_main_thread:
            signal.setitimer(signal.ITIMER_REAL, 0)  # a re-sent interrupt not yet delivered
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)
    if interruption.happened:
        print("optcoll: interrupted", file=sys.stderr)
        return 130
    return status


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Run the parsed command; one line on stderr and status 2 for bad input."""
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    from optcoll.core.limits import LARGE_BUILT

    # the commands whose cost follows the orbits (trees: by a family's declared symmetry;
    # verify: a compact schedule by its group)
    large = LARGE_BUILT.set(args.command in ("bound", "trees", "verify"))
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
    finally:
        LARGE_BUILT.reset(large)
