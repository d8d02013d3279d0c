"""Benchmark: broadcast capacity by the rooted (Hao-Orlin) search against one max-flow per node.

Run from the repository root::

    python -m benchmarks.broadcast [--repeat 5] [--specs dgx-a100:16 ...]

``optcoll.schedules.collectives.broadcast_capacity`` computes ``min over compute v != root of
maxflow(root, v)`` with :meth:`optcoll.graph.maxflow.FlowNetwork.min_rooted_cut` (measured
sinks merged into the root, local certificates instead of most max-flows). This script
runs it side by side with the previous computation, ``N - 1`` separate max-flows on the
same network, checks that both give the same ``K``, and prints the median wall-clock
and CPU seconds of each and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table
from optcoll.core.topology import Topology
from optcoll.graph.maxflow import FlowNetwork
from optcoll.io import load_topology
from optcoll.schedules.collectives import broadcast_capacity

SPECS = ["dgx-a100:2", "dgx-a100:16", "mi250:8"]


def separate_max_flows(topology: Topology, root: str) -> int:
    """The previous computation: one max-flow from ``root`` to every other compute node."""
    caps, _ = topology.integer_capacities()
    index = {node: i for i, node in enumerate(topology.node_ids)}
    arcs = list(caps)
    network = FlowNetwork(
        len(index), [index[u] for u, _ in arcs], [index[v] for _, v in arcs], list(caps.values())
    )
    return min(
        network.max_flow(index[root], index[v]).value for v in topology.compute_nodes if v != root
    )


def timed(
    function: Callable[[Topology, str], int], topology: Topology, root: str, repeat: int
) -> tuple[float, float, int]:
    """Median wall-clock and CPU seconds of ``repeat`` runs, and the result."""
    walls, cpus, result = [], [], 0
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = function(topology, root)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per method")
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to run")
    args = parser.parse_args(argv)
    rows = []
    for spec in args.specs:
        topology = load_topology(spec)
        root = topology.compute_nodes[0]
        old_wall, old_cpu, old = timed(separate_max_flows, topology, root, args.repeat)
        new_wall, new_cpu, new = timed(broadcast_capacity, topology, root, args.repeat)
        if new != old:
            raise SystemExit(f"{spec}: rooted search gives K = {new}, separate max-flows {old}")
        rows.append(
            [
                spec,
                str(topology.num_compute),
                str(new),
                f"{old_wall * 1000:.1f}",
                f"{old_cpu * 1000:.1f}",
                f"{new_wall * 1000:.1f}",
                f"{new_cpu * 1000:.1f}",
                f"{old_cpu / new_cpu:.1f}x",
            ]
        )
    print_table(
        ["topology", "N", "K", "N-1 flows ms", "CPU ms", "rooted ms", "CPU ms", "CPU ratio"], rows
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
