"""``optcoll crosscheck``: run every method that fits and compare their exact values."""

from __future__ import annotations

import argparse

from optcoll.cli._core import (
    add_group_options,
    add_reader_options,
    collective_choice,
    print_json,
    process_groups,
    reader_options,
)
from optcoll.core.schedule import DEFAULT_COLLECTIVE

NAME = "crosscheck"
HELP = "run every method that fits and compare their exact values"
#: Shown at the end of ``optcoll crosscheck --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll crosscheck dgx-a100:1
  optcoll crosscheck ring:6 --collective alltoall
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from optcoll.studies.crosscheck import ALLTOALL_METHODS, GROUP_METHODS, METHODS

    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument(
        "--collective",
        default=DEFAULT_COLLECTIVE,
        type=collective_choice,
        choices=("allgather", "alltoall"),
        help="allgather (r*, default) or alltoall (t* by two LPs and verified routes, with "
        "the cut bound beside it)",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS + ALLTOALL_METHODS + GROUP_METHODS,
        metavar="METHOD",
        help=f"run only these methods (allgather: {', '.join(METHODS)}; alltoall: "
        f"{', '.join(ALLTOALL_METHODS)}; --groups: {', '.join(GROUP_METHODS)}); default: all "
        "that fit the size",
    )
    add_group_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.exceptions import MethodError
    from optcoll.io import load_topology
    from optcoll.studies.crosscheck import crosscheck, crosscheck_groups

    topology = load_topology(args.topo, **reader_options(args))
    groups = process_groups(topology, args)
    if groups is None:
        check = crosscheck(topology, methods=args.methods, collective=args.collective)
    elif args.group_form is not None:
        raise MethodError("crosscheck --groups runs both LP forms; drop --group-form")
    elif args.collective != "allgather":
        raise MethodError("crosscheck --groups compares the groups' allgather optimum t*")
    else:
        check = crosscheck_groups(groups, methods=args.methods)
    if args.json:
        print_json(check.to_dict())
    else:
        print(f"cross-check of {check.topology}")
        print(check.table())
        print("all methods agree" if check.agree else f"DISAGREEMENT: {check.disagreement}")
    return 0 if check.agree else 1
