"""``optcoll check-xml``: check and execute an MSCCL algorithm XML file (anyone's)."""

from __future__ import annotations

import argparse

from optcoll.cli._core import print_json

NAME = "check-xml"
HELP = "check an MSCCL XML program against a runtime's limits and execute it"
#: Shown at the end of ``optcoll check-xml --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll check-xml allgather.xml
  optcoll check-xml ar.xml --runtime msccl --topology dgx-a100:2
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from optcoll.core.msccl_runtimes import DEFAULT_RUNTIME, RUNTIMES

    parser.add_argument("file", metavar="FILE", help="MSCCL algorithm XML file")
    parser.add_argument(
        "--runtime",
        default=DEFAULT_RUNTIME,
        choices=sorted(RUNTIMES),
        help=f"runtime whose parser limits apply (default {DEFAULT_RUNTIME})",
    )
    parser.add_argument(
        "--topology",
        metavar="TOPO",
        help="topology the program runs on: ngpus must match, sends must follow its links",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.core.rational import fraction_text
    from optcoll.io import load_topology
    from optcoll.verify.msccl import verify_file

    topology = load_topology(args.topology) if args.topology else None
    report = verify_file(args.file, runtime=args.runtime, topology=topology)
    if args.json:
        print_json(report.to_dict())
        return 0 if report.ok and report.judged else 1
    ran = (
        f"ran {', '.join(report.placements)} at depths {', '.join(map(str, report.depths))}"
        if report.executed
        else "not executed"
    )
    print(f"file         {args.file}: coll={report.coll}, ngpus={report.ngpus}, {ran}")
    print(f"runtime      {args.runtime}")
    if report.root is not None:
        print(f"root         rank {report.root} (from the data)")
    if report.pair_load:
        (src, dst), top = max(report.pair_load.items(), key=lambda item: item[1])
        print(
            f"pair load    {len(report.pair_load)} GPU pairs send; the most, GPU {src} -> "
            f"GPU {dst}, carries {fraction_text(top)} bytes per message byte"
        )
    for note in report.notes:
        print(f"note         {note}")
    verdict = "WRONG" if not report.ok else "correct" if report.judged else "NOT JUDGED"
    print(f"verdict      {verdict}")
    for finding in report.findings:
        print(f"  {finding.kind:<14} {finding.message}")
    return 0 if report.ok and report.judged else 1
