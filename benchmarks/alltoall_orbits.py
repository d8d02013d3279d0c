"""Benchmark: the all-to-all LP on orbits against the full LP (issue 27, item 7).

Run from the repository root::

    python -m benchmarks.alltoall_orbits [--specs dgx-a100:16 dgx-a100:64 torus:8x8x8]
                                         [--full-limit 900] [--no-full]

For every spec, each in a fresh interpreter (peak memory is the run's own):

* **before**: t* by the full LP (:func:`optcoll.schedules.alltoall.alltoall_optimum`
  with ``method="full"``: LP over every source, HiGHS, exact vertex and duals,
  duality proof, length certificate), stopped after ``--full-limit`` CPU seconds;
* **after**: t* by the orbit LP (:func:`~optcoll.schedules.alltoall.alltoall_bound`,
  which takes it by default: the automorphism search, the orbit LP, its exact
  proof, the lift, the checks on the full LP, and the cut bound beside it), then the
  schedule (:func:`~optcoll.schedules.alltoall.alltoall_schedule`) and its exact
  verification at t* (:func:`optcoll.verify.schedule.verify_schedule`).

CPU seconds and peak resident memory are read from ``/proc`` while the child runs
(Linux), so a run stopped at the limit still reports what it used. Where both
finish, their t* must be equal (the script fails otherwise). Target: the orbit LP
exact in under 5 minutes at 512 GPUs (PCCL, arXiv 2606.07019, reports a
near-optimal 512-NPU all-to-all in 11.68 min).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table

SPECS = ["dgx-a100:16", "dgx-a100:64", "torus:8x8x8", "torus:16x32"]
FULL_LIMIT = 900.0
TARGET = 300.0

_CHILD = """
import json, resource, sys, time
from optcoll.io import load_topology
from optcoll.schedules.alltoall import alltoall_bound, alltoall_optimum, alltoall_schedule
from optcoll.verify.schedule import verify_schedule
spec, method = sys.argv[1], sys.argv[2]
topology = load_topology(spec)
cpu = time.process_time()
if method == "orbits":  # the optimum and the cut bound beside it (more than the full run does)
    result = alltoall_bound(topology)
    assert result.stats["method"] == "orbits", result.stats
    size = f"{result.stats['lp_variables']}x{result.stats['lp_constraints']}"
else:
    result = alltoall_optimum(topology, method="full")
    size = f"{result.report.num_variables}x{result.report.num_constraints}"
out = {"n": topology.num_compute, "t": str(result.time_factor), "lp": size,
       "proved": result.certificate_bound == result.time_factor,
       "optimum_cpu": time.process_time() - cpu}
if method == "orbits":
    out["group"] = result.symmetry.group.order
    out["orbits"] = len(result.symmetry.sources)
    cpu = time.process_time()
    schedule = alltoall_schedule(topology, bound=result)
    check = verify_schedule(topology, schedule, optimum=result.time_factor, require_optimal=True)
    out.update(k=schedule.k, paths=schedule.stats["paths"], verified=check.valid,
               schedule_cpu=time.process_time() - cpu)
out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def _usage(pid: int) -> tuple[float, float]:
    """CPU seconds and peak resident MiB of a running process, from ``/proc``."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    peak = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    return cpu, peak


def run(spec: str, method: str, limit: float) -> dict:
    """One method on one spec in a fresh interpreter, stopped after ``limit`` CPU seconds."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, spec, method],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    cpu = peak = 0.0
    while child.poll() is None:
        try:
            cpu, peak = _usage(child.pid)
        except (FileNotFoundError, ProcessLookupError, IndexError):
            break
        if cpu > limit:
            child.kill()
            child.wait()
            return {"finished": False, "cpu": cpu, "maxrss_mib": peak}
        time.sleep(0.5)
    out, err = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"{spec} {method}: {err.strip().splitlines()[-1]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["finished"] = True
    result["cpu"] = result["optimum_cpu"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS)
    parser.add_argument("--full-limit", type=float, default=FULL_LIMIT)
    parser.add_argument("--no-full", action="store_true", help="skip the full LP")
    args = parser.parse_args(argv)
    rows, failures = [], []
    for spec in args.specs:
        after = run(spec, "orbits", args.full_limit)
        before = None if args.no_full else run(spec, "full", args.full_limit)
        if not after["finished"] or not after["verified"] or not after["proved"]:
            failures.append(spec)
        if before is not None and before["finished"] and before["t"] != after["t"]:
            failures.append(spec)
        if after["n"] >= 512 and after["optimum_cpu"] >= TARGET:
            failures.append(spec)
        full = (
            "-"
            if before is None
            else f"{before['cpu']:.1f}"
            if before["finished"]
            else f"> {args.full_limit:.0f} (stopped)"
        )
        print(spec, "after:", json.dumps(after), "before:", json.dumps(before), flush=True)
        rows.append(
            [
                spec,
                after["n"],
                after["t"],
                "-" if before is None or not before["finished"] else before["lp"],
                after["lp"],
                f"{after['group']} / {after['orbits']}",
                full,
                "-" if before is None else f"{before['maxrss_mib']:.0f}",
                f"{after['optimum_cpu']:.1f}",
                f"{after['schedule_cpu']:.1f}",
                f"{after['maxrss_mib']:.0f}",
                "-"
                if before is None or not before["finished"]
                else f"{before['cpu'] / after['optimum_cpu']:.0f}x",
                f"k={after['k']}, {after['paths']} paths, {'ok' if after['verified'] else 'FAILED'}",
            ]
        )
    print_table(
        [
            "spec",
            "N",
            "t*",
            "full LP size",
            "orbit LP size",
            "|G| / orbits",
            "full CPU s",
            "full MiB",
            "orbits CPU s",
            "schedule+verify CPU s",
            "orbits MiB",
            "speed-up",
            "schedule (verified at t*)",
        ],
        rows,
    )
    if failures:
        print("FAILED:", ", ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
