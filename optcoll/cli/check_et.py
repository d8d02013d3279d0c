"""``optcoll check-et``: decode, match and execute Chakra ET traces ``PREFIX.<rank>.et``."""

from __future__ import annotations

import argparse

from optcoll.cli._core import print_json

NAME = "check-et"
HELP = "check Chakra ET traces PREFIX.<rank>.et (ASTRA-sim custom collective) by running them"
#: Shown at the end of ``optcoll check-et --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll export dgx-a100:1 --format chakra --size 1M -o traces/ag
  optcoll check-et traces/ag
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prefix", metavar="PREFIX", help="traces PREFIX.0.et, PREFIX.1.et, ...")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.verify.chakra import verify_prefix

    report = verify_prefix(args.prefix)
    if args.json:
        print_json(report.to_dict())
        return 0 if report.ok and report.judged else 1
    ran = "ran in 4 orders" if report.executed else "not executed"
    print(
        f"traces       {args.prefix}.<rank>.et: {report.ranks} ranks, "
        f"collective {report.collective or '-'}, {report.nodes} nodes, {ran}"
    )
    print(f"transfers    {report.transfers} sends, {report.bytes_sent} bytes in all")
    for note in report.notes:
        print(f"note         {note}")
    verdict = "WRONG" if not report.ok else "correct" if report.judged else "NOT JUDGED"
    print(f"verdict      {verdict}")
    for finding in report.findings:
        print(f"  {finding.kind:<12} {finding.message}")
    return 0 if report.ok and report.judged else 1
