"""What every ``optcoll`` command shares: the parser class, JSON output, argument types."""

from __future__ import annotations

import argparse
import json
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.core.output import input_files
from optcoll.core.sizes import size_text
from optcoll.exceptions import OutputError

__all__ = [
    "Parser",
    "print_json",
    "message_size",
    "add_reader_options",
    "reader_options",
    "collective_name",
    "collective_choice",
    "resolution",
    "latency_us",
    "add_latency_option",
    "add_group_options",
    "process_groups",
    "add_collective_option",
    "add_sizes_option",
    "time_limit",
    "exact_amount",
    "size_text",
]


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def print_json(data: Any) -> None:
    """Write ``data`` to standard output as indented JSON."""
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def message_size(text: str) -> int:
    """A ``--sizes`` value in bytes (:func:`optcoll.core.sizes.parse_size`); a usage error if bad.

    Examples
    --------
    >>> message_size("64K"), message_size("1MiB"), message_size("1MB"), message_size("512")
    (65536, 1048576, 1000000, 512)
    """
    from optcoll.core.sizes import parse_size

    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"option {text!r} must be KEY=VALUE (e.g. boxes=4)")
    return key.strip(), value.strip()


def add_reader_options(parser: argparse.ArgumentParser) -> None:
    """The options every command that reads a TOPO file takes (one scheme for every format)."""
    group = parser.add_argument_group("reading a topology file")
    group.add_argument(
        "--option",
        action="append",
        default=[],
        type=_key_value,
        dest="reader_options",
        metavar="KEY=VALUE",
        help="option of the file's reader, repeatable (e.g. chunk_bytes=1048576, boxes=4); "
        "see docs/topology-format.md",
    )
    group.add_argument(
        "--bandwidth-attr", metavar="NAME", help="GraphML/edge list: the bandwidth attribute"
    )
    group.add_argument(
        "--latency-attr", metavar="NAME", help="GraphML/edge list: the latency attribute"
    )


def add_group_options(parser: argparse.ArgumentParser) -> None:
    """``--groups``, ``--relay`` and ``--group-form``: the process groups that run the
    collective at once, and the LP form of their optimum."""
    group = parser.add_argument_group("process groups")
    group.add_argument(
        "--groups",
        metavar="GROUPS",
        help="process groups running the collective at once: blocks:T (consecutive groups of T "
        "compute nodes in rank order = the order of compute nodes in the topology, box by box "
        "for built-ins), strided:T (groups of T taking every (N/T)-th compute node) or a "
        "JSON/YAML file (a list of groups of compute-node ids, or {groups: [...], relay: ...}); "
        "a broadcast or reduce is rooted at each group's first member",
    )
    group.add_argument(
        "--relay",
        choices=("members", "any"),
        help="with --groups: which nodes carry a group's data: members (default: its members "
        "and switches) or any (other compute nodes forward without copying)",
    )
    group.add_argument(
        "--group-form",
        choices=("columns", "edge"),
        help="with --groups: the exact LP for groups that share links: columns (default: "
        "column generation over trees of paths) or edge (one flow per group, root and member)",
    )


def process_groups(topology: Any, args: argparse.Namespace) -> Any:
    """The :class:`~optcoll.core.process_groups.ProcessGroups` of ``--groups``/``--relay``, or None.

    Raises
    ------
    GroupError
        ``--relay`` or ``--group-form`` without ``--groups``, and every error of
        :func:`optcoll.io.process_groups.parse_groups` (one line, exit 2).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> parser = argparse.ArgumentParser()
    >>> add_group_options(parser)
    >>> groups = process_groups(load_topology("ring:4"), parser.parse_args(["--groups", "blocks:2"]))
    >>> groups.groups, groups.relay
    ((('n0', 'n1'), ('n2', 'n3')), 'members')
    >>> process_groups(load_topology("ring:4"), parser.parse_args([])) is None
    True
    """
    from optcoll.exceptions import GroupError

    if args.groups is None:
        for flag, value in (("--relay", args.relay), ("--group-form", args.group_form)):
            if value is not None:
                raise GroupError(f"{flag} applies to process groups: give --groups too")
        return None
    from optcoll.io.process_groups import parse_groups

    return parse_groups(topology, args.groups, args.relay)


def reader_options(args: argparse.Namespace) -> dict[str, str]:
    """The reader options of ``args`` as keyword arguments of ``load_topology``.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_reader_options(parser)
    >>> reader_options(parser.parse_args(["--option", "boxes=2", "--bandwidth-attr", "cap"]))
    {'boxes': '2', 'bandwidth_attr': 'cap'}
    """
    options = dict(args.reader_options)
    for key in ("bandwidth_attr", "latency_attr"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)
    return options


def collective_choice(text: str) -> str:
    """A ``--collective`` value with ``choices``: the canonical spelling of a known
    collective (``all-reduce`` -> ``allreduce``), else the text for ``choices`` to judge.

    Examples
    --------
    >>> collective_choice("All-Reduce"), collective_choice("scatter")
    ('allreduce', 'scatter')
    """
    from optcoll.core.schedule import canonical_collective
    from optcoll.exceptions import ScheduleError

    try:
        return canonical_collective(text)
    except ScheduleError:
        return text


def collective_name(text: str) -> str:
    """A ``--collective`` value in canonical spelling (``reduce-scatter`` -> ``reduce_scatter``).

    Examples
    --------
    >>> collective_name("reduce-scatter")
    'reduce_scatter'
    """
    from optcoll.core.schedule import canonical_collective
    from optcoll.exceptions import ScheduleError

    try:
        return canonical_collective(text)
    except ScheduleError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def resolution(text: str) -> int:
    """A ``--dpi`` value: a positive integer (:func:`optcoll.plot.save_figure` caps it).

    Examples
    --------
    >>> resolution("300")
    300
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"dpi {text!r} must be a positive integer")
    return value


def exact_amount(text: str, what: str, example: str) -> Fraction:
    """An exact finite number >= 0 from an option's text, or an argparse error naming ``what``.

    Examples
    --------
    >>> exact_amount("0.5", "latency", "1 or 0.5")
    Fraction(1, 2)
    """
    from optcoll.core.rational import parse_fraction

    try:
        value = parse_fraction(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"{what} {text!r} is not a finite number >= 0 ({err}); e.g. {example}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{what} {text!r} must be >= 0")
    return value


def sim_options(args: argparse.Namespace) -> Any:
    """The :class:`~optcoll.sim.simulator.SimOptions` of ``--overhead``, ``--slice`` and
    ``--latency`` (each at its default where the command has no such flag or it is not given).

    Examples
    --------
    >>> sim_options(argparse.Namespace(overhead=None, slice=None, latency=Fraction(2)))
    SimOptions(overhead=1.0, slice_bytes=524288, default_latency=Fraction(2, 1), store_and_forward=False)
    """
    from optcoll.core.cost import DEFAULT_LATENCY
    from optcoll.sim.simulator import DEFAULT_OVERHEAD, DEFAULT_SLICE, SimOptions

    overhead = getattr(args, "overhead", None)
    slice_bytes = getattr(args, "slice", None)
    latency = getattr(args, "latency", None)
    return SimOptions(
        DEFAULT_OVERHEAD if overhead is None else overhead,
        DEFAULT_SLICE if slice_bytes is None else slice_bytes,
        DEFAULT_LATENCY if latency is None else latency,
    )


def latency_us(text: str) -> Fraction:
    """A ``--latency`` in microseconds: an exact finite number >= 0.

    Examples
    --------
    >>> latency_us("0.5")
    Fraction(1, 2)
    """
    return exact_amount(text, "latency (microseconds)", "1 or 0.5")


def add_latency_option(parser: argparse.ArgumentParser) -> None:
    """``--latency US``: the latency of links whose topology entry gives none (default 1 µs)."""
    parser.add_argument(
        "--latency",
        type=latency_us,
        default=None,
        metavar="US",
        help="latency (µs) of links whose topology entry gives none (default 1)",
    )


def add_collective_option(
    parser: argparse.ArgumentParser, help_text: str, extra: tuple[str, ...] = ()
) -> None:
    """``--collective C`` (any spelling :func:`collective_name` accepts, and ``extra``
    names a command handles itself), with its help.

    Every command defaults to the same collective,
    :data:`~optcoll.core.schedule.DEFAULT_COLLECTIVE` (allgather).
    """
    from optcoll.core.schedule import DEFAULT_COLLECTIVE

    def name(text: str) -> str:
        key = text.strip().lower()
        return key if key in extra else collective_name(text)

    parser.add_argument(
        "--collective",
        default=DEFAULT_COLLECTIVE,
        type=name,
        metavar="C",
        help=help_text,
    )


def add_sizes_option(
    parser: argparse.ArgumentParser, help_text: str = "message sizes (default 1K 4K ... 4G)"
) -> None:
    """``--sizes SIZE ...``: message sizes with an optional byte unit
    (:func:`optcoll.core.sizes.parse_size`)."""
    parser.add_argument("--sizes", type=message_size, nargs="+", metavar="SIZE", help=help_text)


def time_limit(text: str) -> float:
    """A ``--time-limit`` in seconds: a finite number > 0.

    Examples
    --------
    >>> time_limit("30")
    30.0
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"time limit {text!r} must be a finite number of seconds > 0"
        )
    return value


#: The arguments that name files a command writes (never among its inputs).
_OUTPUT_ARGUMENTS = frozenset({"output", "plot", "target", "out_dir"})


def command_inputs(args: argparse.Namespace) -> list[Path]:
    """Every file the command reads: each argument but its outputs that names an existing file.

    Writers refuse these (:func:`optcoll.core.output.check_output`), even with ``--force``,
    so no command writes over one of its own inputs (``--groups``, ``--topology``, a spec).
    """
    values: list[str] = []
    for name, value in vars(args).items():
        if name not in _OUTPUT_ARGUMENTS:
            items = value if isinstance(value, list | tuple) else [value]
            values += [str(item) for item in items if isinstance(item, str | Path)]
    return input_files(*values)


def check_output_names(args: argparse.Namespace) -> None:
    """Refuse an empty output name (``-o ''``), which names no file and would write nothing."""
    for name in sorted(_OUTPUT_ARGUMENTS):
        if getattr(args, name, None) == "":
            raise OutputError(f"the {name} file name is empty; give a file name")
