"""Benchmark: how fast the exported MSCCL++ plans run in the simulator (``export --format mscclpp``).

Run from the repository root::

    python -m benchmarks.mscclpp [--specs ring:4 dgx-a100:1] [--collectives allreduce]
                                 [--size 1G] [--against main]

For every topology and collective: the simulated time (:mod:`optcoll.sim.simulator`) of the
deployable tree schedule and of its MSCCL++ plan (out of place), each over the bound
``data(M) * optimum``, the plan's thread blocks per GPU, pieces per tree and the CPU seconds
to write it; with ``--against REV`` also the plan that git revision ``REV``'s writer makes
of the same schedule (its code extracted and run in a fresh process, the plan simulated
by this checkout's simulator). ``trees`` is ``n/a`` for an allreduce of two tree sets
(reduce-scatter and allgather), which the tree simulator does not run as one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import extract_revision, print_table
from optcoll.cli._core import message_size
from optcoll.export.mscclpp import boxes_of, mscclpp_plan, pipeline_unit
from optcoll.io import load_topology, save_schedule
from optcoll.schedules.collectives import collective_lower_bound
from optcoll.schedules.deploy import deployable_schedule
from optcoll.sim.programs import mscclpp_tasks
from optcoll.sim.simulator import Network, data_bytes, simulate, simulate_schedule
from optcoll.verify.mscclpp.plan import parse_plan

SPECS = ["ring:4", "dgx-a100:1", "dgx-a100:2", "dgx-h100:1", "mi250:1"]
COLLECTIVES = ["allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"]

#: Run in a fresh process with another revision's ``optcoll`` first on ``sys.path``: its
#: plan of a schedule file (argv: code folder, schedule, allgather schedule or "", output,
#: the boxes as JSON: the same memory channels for both revisions).
_WRITE_PLAN = """
import json, sys
sys.path.insert(0, sys.argv[1])
from optcoll.export.mscclpp import mscclpp_plan
from optcoll.io import load_schedule
schedule = load_schedule(sys.argv[2])
down = load_schedule(sys.argv[3]) if sys.argv[3] else None
plan = mscclpp_plan(schedule, allgather=down, boxes=json.loads(sys.argv[5]))
open(sys.argv[4], "w").write(plan.text)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to run")
    parser.add_argument("--collectives", nargs="+", default=COLLECTIVES)
    parser.add_argument("--size", type=message_size, default=1024**3, help="message size")
    parser.add_argument("--against", help="git revision whose writer runs beside ours")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        previous = extract_revision(args.against, folder) if args.against else None
        for spec in args.specs:
            topology = load_topology(spec)
            network = Network.of(topology)
            for collective in args.collectives:
                chosen = deployable_schedule(topology, collective)
                schedule = chosen.schedule
                optimum = collective_lower_bound(topology, collective, schedule.root)
                bound = data_bytes(collective, args.size, topology.num_compute)
                bound *= float(optimum) / 1000.0  # GB/s = 1000 bytes per µs
                cpu = time.process_time()
                plan = mscclpp_plan(
                    schedule,
                    allgather=chosen.allgather,
                    boxes=boxes_of(topology),
                    unit_size=pipeline_unit(topology, schedule, chosen.allgather),
                )
                cpu = time.process_time() - cpu
                documents = {"new": plan.document}
                if previous is not None:
                    saved = [folder / "schedule.json", folder / "allgather.json"]
                    save_schedule(schedule, saved[0], force=True)
                    if chosen.allgather is not None:
                        save_schedule(chosen.allgather, saved[1], force=True)
                    out = folder / "old.json"
                    command = [sys.executable, "-c", _WRITE_PLAN, str(previous), str(saved[0])]
                    command += [str(saved[1]) if chosen.allgather else "", str(out)]
                    command.append(json.dumps(boxes_of(topology)))
                    subprocess.run(command, check=True, cwd=folder)
                    documents["old"] = json.loads(out.read_text())
                ratios = {
                    which: simulate(
                        mscclpp_tasks(parse_plan(doc), topology, network, args.size),
                        network,
                        args.size,
                    ).time_us
                    / bound
                    for which, doc in documents.items()
                }
                trees = (
                    f"{simulate_schedule(topology, schedule, args.size).time_us / bound:.4f}"
                    if chosen.allgather is None
                    else "n/a"
                )
                old = f"{ratios['old']:.4f}" if "old" in ratios else "-"
                rows.append(
                    [spec, collective, schedule.k, trees, old, f"{ratios['new']:.4f}"]
                    + [plan.threadblocks, plan.unit_size // 1024, f"{cpu:.2f}"]
                )
                print(*rows[-1], flush=True, file=sys.stderr)
    headers = ["topology", "collective", "k", "trees/bound", "old plan/bound", "plan/bound"]
    print_table(headers + ["tb/GPU", "unit KiB", "write CPU s"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
