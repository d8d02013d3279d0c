"""``optcoll convert``: convert a topology between JSON and YAML (IN may be a built-in spec)."""

from __future__ import annotations

import argparse

from optcoll.cli._core import add_reader_options, command_inputs, reader_options
from optcoll.core.rational import count_text

NAME = "convert"
HELP = "convert a topology between JSON and YAML (IN may be a built-in spec)"
#: Shown at the end of ``optcoll convert --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll convert dgx-a100:2 dgx-a100-2.yaml
  optcoll convert mine.json mine.yaml
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="IN", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument("target", metavar="OUT", help="output file: .json, .yaml or .yml")
    parser.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    parser.add_argument(
        "--format",
        choices=("optcoll", "astra-sim"),
        default="optcoll",
        help="optcoll topology file (default), or an ASTRA-sim analytical network config "
        "(YAML, or JSON for OUT.json) where the topology has that shape",
    )


def run(args: argparse.Namespace) -> int:
    from optcoll.core.output import check_output, require_suffix
    from optcoll.io import load_topology, save_topology

    inputs = command_inputs(args)
    target = check_output(args.target, force=args.force, inputs=inputs)
    topo = load_topology(args.source, **reader_options(args))
    if args.format == "astra-sim":
        from optcoll.io.astra_sim import to_astra_network
        from optcoll.io.document import DOCUMENT_SUFFIXES, write_document

        require_suffix(target, sorted(DOCUMENT_SUFFIXES), "an ASTRA-sim network config")
        config = to_astra_network(topo)  # JSON for .json (YAML readers take it), else YAML
        write_document(config, target, force=args.force, inputs=inputs)
        print(f"wrote {target}: ASTRA-sim network {config['topology']} x {config['npus_count']}")
        return 0
    save_topology(topo, target, force=args.force, inputs=inputs)
    print(
        f"wrote {target}: {topo.name}, {count_text(topo.num_compute, 'compute node')}, "
        f"{count_text(len(topo.switch_nodes), 'switch')}, {count_text(len(topo.links), 'link')}"
    )
    return 0
