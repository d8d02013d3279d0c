"""Benchmark: simulate the optimal allgather chunk by chunk (``optcoll simulate``).

Run from the repository root::

    python -m benchmarks.simulate [--specs dgx-a100:16 mi250:8] [--size 1G]

Per topology: the seconds (wall and CPU, ``time.process_time``) to build the optimal
allgather (not part of the target), to build its task graph and to simulate it at the
given size (target: under 10 s for dgx-a100:16 and mi250:8 at 1 GiB), the number of
tasks, the simulated time against the bound ``(M/N) r*`` and against the cost model of
``optcoll compare`` (``optcoll.simulate.schedule_cost``, the previous and only other
prediction), and the process's peak resident memory so far. One run each: the
simulator is deterministic.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import maxrss_mib, print_table, timed
from optcoll.cli._core import message_size
from optcoll.packing import pack_arborescences
from optcoll.simulate import schedule_cost
from optcoll.simulator import Network, schedule_tasks, simulate
from optcoll.topologies import build

SPECS = ["dgx-a100:16", "mi250:8"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to run")
    parser.add_argument("--size", type=message_size, default=1024**3, help="message size")
    args = parser.parse_args(argv)
    rows = []
    for spec in args.specs:
        topology = build(spec)
        schedule, build_wall, _ = timed(lambda t=topology: pack_arborescences(t))
        network = Network.of(topology)
        graph, graph_wall, graph_cpu = timed(
            lambda s=schedule, n=network: schedule_tasks(s, n, args.size)
        )
        run, sim_wall, sim_cpu = timed(lambda g=graph, n=network: simulate(g, n, args.size))
        bound = args.size / topology.num_compute * float(schedule.cut_ratio) / 1000
        model = schedule_cost(topology, schedule).seconds(args.size) * 1e6
        rows.append(
            [
                spec,
                schedule.k,
                len(schedule.trees),
                f"{build_wall:.1f}",
                f"{graph_wall:.1f} / {graph_cpu:.1f}",
                f"{sim_wall:.1f} / {sim_cpu:.1f}",
                run.tasks,
                f"{run.time_us:.1f}",
                f"{run.time_us / bound:.4f}",
                f"{model:.1f}",
                f"{maxrss_mib():.0f}",
            ]
        )
    print_table(
        [
            "topology",
            "k",
            "trees",
            "build s",
            "task graph s (wall / CPU)",
            "simulate s (wall / CPU)",
            "tasks",
            "simulated µs",
            "/ bound",
            "model µs",
            "peak MiB",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
