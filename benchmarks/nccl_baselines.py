"""Old single ring vs NCCL-like rings vs plan (issue #37, item 4).

For each topology and collective, at 1 KiB, 1 MiB and 1 GiB: the simulated time (µs) of
``compare``'s ring and of the NCCL-like rings (:func:`optcoll.sim.size_plan.method_times`:
compare's model, default overhead and slices), and plan's fastest method with its time
(plan chooses slices and link order for every candidate, NCCL-like rings included).
Prints CPU seconds per topology.

Run from the repository root::

    python benchmarks/nccl_baselines.py [--collective allreduce]
"""

from __future__ import annotations

import argparse
import time

from optcoll.schedules.baselines import nccl_ring_schedule, ring_schedule
from optcoll.schedules.collectives import allreduce
from optcoll.sim.cost_model import schedule_cost
from optcoll.sim.size_plan import method_times, plan
from optcoll.topologies import build

SIZES = (1024, 1024**2, 1024**3)
TOPOLOGIES = ("dgx-h100:4", "torus:8x8", "ring:8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collective", default="allreduce", choices=("allreduce", "allgather"))
    parser.add_argument("--no-plan", action="store_true", help="skip plan (the slow part)")
    args = parser.parse_args()
    for spec in TOPOLOGIES:
        start = time.process_time()
        topo = build(spec)
        costs = []
        for schedule in (ring_schedule(topo), nccl_ring_schedule(topo)):
            if args.collective == "allreduce":
                schedule = allreduce(schedule, topo)
            costs.append(schedule_cost(topo, schedule, str(schedule.stats["method"])))
        times = method_times(topo, costs, SIZES)
        rows = [] if args.no_plan else plan(topo, args.collective, SIZES)
        seconds = time.process_time() - start
        print(f"{args.collective} on {spec} ({seconds:.1f} CPU s)")
        for i, size in enumerate(SIZES):
            ring, nccl = times[0][i], times[1][i]
            line = (
                f"  {size:>10} B  ring {ring:>10.2f} µs   {costs[1].method} {nccl:>10.2f} µs"
                f"  (ring / NCCL-like {ring / nccl:.2f})"
            )
            if rows:
                row = rows[i]
                line += f"   plan {row.time_us:>10.2f} µs [{row.method}] (NCCL-like / plan {nccl / row.time_us:.2f})"
            print(line)


if __name__ == "__main__":
    main()
