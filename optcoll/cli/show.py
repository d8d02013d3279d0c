"""``optcoll show``: summarise a topology: counts, rank order, per-node ingress/egress bandwidth,
switches."""

from __future__ import annotations

import argparse
from fractions import Fraction

from optcoll.cli._core import add_reader_options, print_json, reader_options
from optcoll.core.rational import count_text
from optcoll.core.topology import plain_number

NAME = "show"
HELP = "summarise a topology: counts, per-node ingress/egress bandwidth, switches"
#: Shown at the end of ``optcoll show --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll show dgx-a100:2
  optcoll show mine.yaml --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.io import load_topology

    topo = load_topology(args.topo, **reader_options(args))
    rows = {
        kind: [
            {
                "id": node_id,
                "group": topo.node[node_id].group,
                "ingress": plain_number(topo.in_bandwidth(node_id)),
                "egress": plain_number(topo.out_bandwidth(node_id)),
            }
            for node_id in ids
        ]
        for kind, ids in (("compute_nodes", topo.compute_nodes), ("switches", topo.switch_nodes))
    }
    summary = {
        "name": topo.name,
        "description": topo.description,
        "bandwidth_unit": topo.bandwidth_unit,
        "num_compute": topo.num_compute,
        "num_switches": len(topo.switch_nodes),
        "num_links": len(topo.capacity),
        "num_declared_links": len(topo.links),
        "total_bandwidth": plain_number(sum(topo.capacity.values(), Fraction(0))),
        "rank_order": list(topo.compute_nodes),
        **rows,
    }
    if args.json:
        print_json(summary)
        return 0
    print(topo.name + (f": {topo.description}" if topo.description else ""))
    print(
        f"{count_text(summary['num_compute'], 'compute node')}, "
        f"{count_text(summary['num_switches'], 'switch')}, "
        f"{count_text(summary['num_links'], 'directed link')} "
        f"({summary['num_declared_links']} declared), "
        f"total bandwidth {summary['total_bandwidth']} {topo.bandwidth_unit}"
    )
    for kind, title in (("compute_nodes", "compute node"), ("switches", "switch")):
        if not rows[kind]:
            continue
        ranked = kind == "compute_nodes"  # rows in rank order: MSCCL's GPU id, the comm rank
        head = (title, "group", f"ingress {topo.bandwidth_unit}", f"egress {topo.bandwidth_unit}")
        table = [("rank", *head) if ranked else head]
        table += [
            ((str(i),) if ranked else ())
            + (r["id"], r["group"] or "-", str(r["ingress"]), str(r["egress"]))
            for i, r in enumerate(rows[kind])
        ]
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        print()
        for row in table:
            cells = [
                f"{cell:>{width}}"
                if i >= len(row) - 2 or (ranked and i == 0)
                else f"{cell:<{width}}"
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            print("  ".join(cells).rstrip())
    return 0
