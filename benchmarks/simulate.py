"""Benchmark: simulate the optimal allgather chunk by chunk (``optcoll simulate``).

Run from the repository root::

    python -m benchmarks.simulate [--specs dgx-a100:16 mi250:8] [--size 1G]
                                  [--baseline ../main-checkout]

Per topology: the seconds (wall and CPU, ``time.process_time``) to build the optimal
allgather (not part of the target), to build its task graph and to simulate it at the
given size (target: under 10 s for dgx-a100:16 and mi250:8 at 1 GiB), the number of
tasks, the simulated time against the bound ``(M/N) r*`` (the simulator is optcoll's one
timing model: ``optcoll compare``'s curves come from it too), and the process's peak
resident memory so far. One run each: the
simulator is deterministic.

Wall time above CPU time is time the process waited: ``CPU share`` is CPU over wall
seconds of the task graph and the simulation together (the share of a core the process
got; on a machine with more runnable processes than cores it falls well below 1). With
``--baseline DIR`` the same calls (:func:`optcoll.sim.simulator.simulate_schedule`: task
graph and simulation) run on the code of another checkout in a fresh process beside
ours, and the table gives its CPU and wall seconds and the CPU ratio.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import baseline_seconds, maxrss_mib, print_table, timed
from optcoll.cli._core import message_size
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.simulator import Network, schedule_tasks, simulate
from optcoll.topologies import build

SPECS = ["dgx-a100:16", "mi250:8"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to run")
    parser.add_argument("--size", type=message_size, default=1024**3, help="message size")
    parser.add_argument("--baseline", help="another checkout whose code runs beside ours")
    parser.add_argument(
        "--baseline-timeout", type=float, default=600.0, help="wall seconds per baseline run"
    )
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
        ours_cpu, ours_wall = graph_cpu + sim_cpu, graph_wall + sim_wall
        baseline = ["-", "-"]
        if args.baseline:
            old = baseline_seconds(
                args.baseline, "simulate", spec, args.baseline_timeout, str(args.size)
            )
            if old is not None:
                baseline = [f"{old[1]:.1f} / {old[0]:.1f}", f"{old[0] / ours_cpu:.2f}x"]
        rows.append(
            [
                spec,
                schedule.k,
                len(schedule.trees),
                f"{build_wall:.1f}",
                f"{graph_wall:.1f} / {graph_cpu:.1f}",
                f"{sim_wall:.1f} / {sim_cpu:.1f}",
                f"{ours_cpu / ours_wall:.2f}",
                *baseline,
                run.tasks,
                f"{run.time_us:.1f}",
                f"{run.time_us / bound:.4f}",
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
            "CPU share",
            "baseline graph+simulate s (wall / CPU)",
            "baseline CPU / ours",
            "tasks",
            "simulated µs",
            "/ bound",
            "peak MiB",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
