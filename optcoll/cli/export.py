"""``optcoll export``: write a collective schedule as MSCCL XML or schedule JSON.

The command parses its arguments into an :class:`~optcoll.export.workflow.ExportRequest`,
runs :func:`~optcoll.export.workflow.export_files` and prints its report.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction

from optcoll.cli._core import (
    add_collective_option,
    add_group_options,
    add_reader_options,
    add_sizes_option,
    command_inputs,
    exact_amount,
    message_size,
    print_json,
    reader_options,
)
from optcoll.cli._demand import add_demand_options, demand_export, has_demand

NAME = "export"
HELP = "write a collective schedule as MSCCL XML or schedule JSON"
#: Shown at the end of ``optcoll export --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll export dgx-a100:2 -o allgather.xml
  optcoll export dgx-a100:2 --collective allreduce --placement both -o ar.xml
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from optcoll.export.runtimes import DEFAULT_RUNTIME, RUNTIMES
    from optcoll.export.workflow import EXPORT_FORMATS

    parser.add_argument(
        "source", metavar="TOPO|SCHEDULE", help="topology file or spec, or a schedule file"
    )
    add_reader_options(parser)
    add_collective_option(
        parser, "allgather (default), reduce-scatter, allreduce, broadcast, reduce or alltoall"
    )
    parser.add_argument(
        "--format",
        default="msccl",
        choices=EXPORT_FORMATS,
        help="output format (mscclpp: MSCCL++ JSON execution plans; chakra: ASTRA-sim traces "
        "PREFIX.<rank>.et, needs --size)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", required=True, help="file to write (chakra: PREFIX)"
    )
    parser.add_argument(
        "--size",
        type=message_size,
        default=None,
        metavar="SIZE",
        help="write what plan chose at this message size (e.g. 1M): Chakra traces, or "
        "with --format msccl or mscclpp the program of plan's choice (a log-step one "
        "included), checked and simulated beside plan's time",
    )
    parser.add_argument(
        "--placement",
        choices=("outofplace", "inplace", "both"),
        default=None,
        help="MSCCL and MSCCL++: the program FILE holds: outofplace (default) or inplace; both "
        "writes FILE out of place and STEM.inplace.SUFFIX beside it (a collective one program "
        "serves either way, such as an RCCL allreduce, is one file)",
    )
    parser.add_argument(
        "--runtime",
        default=DEFAULT_RUNTIME,
        choices=tuple(RUNTIMES),
        help=f"MSCCL runtime whose parser and limits the file meets (default {DEFAULT_RUNTIME})",
    )
    parser.add_argument(
        "-k", type=int, default=None, metavar="K", help="chunks per root (default: deployable k)"
    )
    parser.add_argument(
        "--exact", action="store_true", help="keep the optimal k (may serve few sizes)"
    )
    parser.add_argument(
        "--tolerance",
        type=_tolerance,
        default=None,
        metavar="T",
        help="accept k whose time factor is within T of the optimum (default 1%%)",
    )
    parser.add_argument(
        "--bands",
        action="store_true",
        help="one file per size band: the fastest of plan's candidates under the simulator",
    )
    add_sizes_option(
        parser, "with --bands: the sizes the bands are planned at (default 1K 4K ... 4G)"
    )
    parser.add_argument(
        "--max-bytes",
        type=message_size,
        default=None,
        metavar="SIZE",
        help="largest message the files serve (default: no limit)",
    )
    parser.add_argument("--root", metavar="NODE", help="root of a broadcast or reduce")
    parser.add_argument(
        "--topology",
        metavar="TOPO",
        help="topology of a schedule file (default: its 'topology' field as a spec)",
    )
    parser.add_argument(
        "--channels",
        type=int,
        default=None,
        help="MSCCL channels per GPU pair (default: one per tree level, within 64 thread blocks)",
    )
    parser.add_argument(
        "--max-threadblocks",
        type=int,
        default=None,
        metavar="N",
        help="thread blocks per GPU cap (default: the runtime's)",
    )
    add_group_options(parser)
    add_demand_options(parser)
    from optcoll.cli.simulate import add_simulator_options

    add_simulator_options(parser)  # chakra: the simulator plan chooses each size's schedule in
    parser.add_argument(
        "--switch-model",
        choices=("cut-through", "store-and-forward"),
        default=None,
        help="with --format chakra: how plan's simulator moves a slice through a switch when it "
        "chooses each size's schedule (default store-and-forward, as ASTRA-sim's analytical "
        "backend)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    parser.add_argument(
        "--unchecked", action="store_true", help="skip verifying the schedule before writing"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable report")


def _tolerance(text: str) -> Fraction:
    """``"1%"`` or ``"0.01"`` as an exact fraction >= 0."""
    value = text.strip()
    scale = Fraction(1, 100) if value.endswith("%") else Fraction(1)
    return exact_amount(value.removesuffix("%"), "tolerance", "0.01 or 1%") * scale


def run(args: argparse.Namespace) -> int:
    from optcoll.export.workflow import ExportRequest, export_files

    if has_demand(args):
        from optcoll.io import load_topology

        topology = load_topology(args.source, **reader_options(args))
        return demand_export(topology, args)

    request = ExportRequest(
        **{name: getattr(args, name) for name in ExportRequest.argument_names()},
        inputs=tuple(command_inputs(args)),
        progress=sys.stderr.isatty(),
    )
    report = export_files(request)
    if args.json:
        print_json(report.data)
        return 0
    for line in report.lines:
        print(line)
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0
