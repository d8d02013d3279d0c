"""``optcoll check-plan``: check and execute an MSCCL++ execution plan (anyone's)."""

from __future__ import annotations

import argparse

from optcoll.cli._core import print_json

NAME = "check-plan"
HELP = "check an MSCCL++ JSON execution plan by the executor's rules and execute it"
#: Shown at the end of ``optcoll check-plan --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll export dgx-a100:1 --format mscclpp -o allgather.json
  optcoll check-plan allgather.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="MSCCL++ execution plan (JSON)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.verify.mscclpp import verify_plan_file

    report = verify_plan_file(args.file)
    if args.json:
        print_json(report.to_dict())
        return 0 if report.ok and report.judged else 1
    print(
        f"file         {args.file}: {report.collective}, {report.ranks} ranks, "
        f"{'in place' if report.inplace else 'out of place'}, protocol {report.protocol}"
    )
    print(f"size         multiples of {report.granule} bytes")
    print(
        f"program      {report.threadblocks} thread blocks per rank (most), "
        f"{report.operations} ops in all"
    )
    if report.strategies:
        print(f"ran          {', '.join(report.strategies)}")
    if report.root is not None:
        print(f"root         rank {report.root} (from the data)")
    for note in report.notes:
        print(f"note         {note}")
    verdict = "WRONG" if not report.ok else "correct" if report.judged else "NOT JUDGED"
    print(f"verdict      {verdict}")
    for kind, message in report.findings[:20]:
        print(f"  {kind:<12} {message}")
    return 0 if report.ok and report.judged else 1
