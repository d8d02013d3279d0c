"""``optcoll bound``: exact optimal allgather cut ratio r* and its bottleneck cut."""

from __future__ import annotations

import argparse

from optcoll.cli._core import print_json

NAME = "bound"
HELP = "exact optimal allgather cut ratio r* and its bottleneck cut"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    parser.add_argument(
        "--method",
        default="combinatorial",
        help="combinatorial (parametric max-flow, default), lp, or brute-force (<= 16 nodes)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.bound import optimal_cut_ratio
    from optcoll.io import load_topology

    topology = load_topology(args.topo)
    result = optimal_cut_ratio(topology, args.method)
    if args.json:
        print_json(result.to_dict())
        return 0
    unit = topology.bandwidth_unit
    data = result.to_dict()
    work = ", ".join(f"{value} {key.replace('_', ' ')}" for key, value in result.stats.items())
    rows = [
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        ("cut ratio r*", f"{data['cut_ratio']} per {unit} (= {float(result.ratio):.6g})"),
        ("algbw N/r*", f"{result.algbw:.3f} {unit}"),
        ("U, k", f"{data['U']}, {result.k} tree{'s' * (result.k != 1)} per root"),
        ("bottleneck cut", result.describe_cut()),
        ("method", f"{result.method}, {result.seconds:.3f} s" + (f" ({work})" if work else "")),
    ]
    for name, text in rows:
        print(f"{name:<15} {text}")
    return 0
