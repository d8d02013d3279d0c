"""Benchmark: the all-to-all optimum t* (issue 16) against its targets.

Run from the repository root::

    python -m benchmarks.alltoall [--specs dgx-a100:4 dgx-h100:8 ...] [--repeat 1]
                                  [--largest dgx-a100:16 dgx-h100:16 ...] [--forms]

For every spec, in a fresh subprocess (so that peak memory is the spec's own):
t* by :func:`optcoll.schedules.alltoall.alltoall_bound` (LP build + HiGHS + exact vertex,
duals, duality proof, length certificate, cut bound), the model size, HiGHS's
own seconds, the exact part's seconds, wall and CPU seconds and the peak
resident memory; then the all-to-all schedule (:func:`alltoall_schedule`)
verified against t*. Targets: dgx-a100:4 (32 GPUs) under 10 s, dgx-h100:8 (64
GPUs) under 60 s; ``--largest`` runs bigger specs one after the other (each
with a 600 s limit) to find the largest that finishes in 10 minutes.
``--forms`` also times the rate form of the LP beside the time form (default).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, run_child

SPECS = ["dgx-a100:2", "dgx-a100:4", "dgx-h100:4", "mi250:2", "dgx-h100:8"]
TARGETS = {"dgx-a100:4": 10.0, "dgx-h100:8": 60.0}
LIMIT = 600.0

_CHILD = """
import json, resource, sys, time
from optcoll.io import load_topology
from optcoll.schedules.alltoall import alltoall_bound, alltoall_schedule
from optcoll.verify.schedule import verify_schedule
from optcoll.schedules.alltoall import alltoall_optimum
spec, form, schedule = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
topology = load_topology(spec)
wall, cpu = time.perf_counter(), time.process_time()
if form == "time":
    bound = alltoall_bound(topology)
    t, report, cut = bound.time_factor, None, str(bound.cut_bound)
    stats = bound.stats
else:
    result = alltoall_optimum(topology, form=form)
    t, cut = result.time_factor, None
    stats = {"lp_variables": result.report.num_variables,
             "lp_constraints": result.report.num_constraints,
             "lp_seconds": round(result.report.solve_seconds, 3),
             "exact_seconds": round(result.seconds - result.report.solve_seconds, 3)}
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
out = {"spec": spec, "form": form, "n": topology.num_compute, "t": str(t), "cut": cut,
       "wall": wall, "cpu": cpu, **stats}
if schedule:
    start = time.perf_counter()
    s = alltoall_schedule(topology, bound=bound)
    v = verify_schedule(topology, s, optimum=t, require_optimal=True)
    out.update(k=s.k, paths=s.stats["paths"], verified=v.valid, schedule_wall=time.perf_counter() - start)
out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_one(spec: str, form: str, schedule: bool, limit: float = LIMIT) -> dict | None:
    """One spec in a fresh interpreter; None if it does not finish within ``limit`` seconds."""
    start = time.perf_counter()
    result = run_child(_CHILD, [spec, form, "1" if schedule else "0"], limit)
    if result is None:
        return None
    result["process_wall"] = time.perf_counter() - start
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS)
    parser.add_argument("--largest", nargs="*", default=[])
    parser.add_argument("--forms", action="store_true")
    args = parser.parse_args(argv)
    rows, failures = [], []
    for spec in args.specs:
        for form in ("time", "rate") if args.forms else ("time",):
            r = run_one(spec, form, schedule=form == "time")
            assert r is not None
            target = TARGETS.get(spec) if form == "time" else None
            ok = target is None or r["wall"] < target
            if form == "time":
                ok = ok and r["verified"]
            if not ok:
                failures.append(spec)
            rows.append(
                [
                    spec,
                    form,
                    r["n"],
                    r["t"],
                    r["cut"] or "-",
                    f"{r['lp_variables']}x{r['lp_constraints']}",
                    f"{r['lp_seconds']:.2f}",
                    f"{r['exact_seconds']:.2f}",
                    f"{r['wall']:.2f}",
                    f"{r['cpu']:.2f}",
                    f"{r['maxrss_mib']:.0f}",
                    "-" if form != "time" else f"k={r['k']}, {r['schedule_wall']:.1f} s",
                    "-" if target is None else f"< {target:.0f} s: {'ok' if ok else 'MISSED'}",
                ]
            )
    print_table(
        [
            "spec",
            "form",
            "N",
            "t*",
            "cut bound",
            "LP size",
            "HiGHS s",
            "exact s",
            "wall s",
            "CPU s",
            "peak MiB",
            "schedule (verified)",
            "target",
        ],
        rows,
    )
    for spec in args.largest:
        r = run_one(spec, "time", schedule=False)
        if r is None:
            print(f"{spec}: did not finish in {LIMIT:.0f} s")
            break
        print(
            f"{spec}: N = {r['n']}, t* = {r['t']}, {r['lp_variables']} variables, HiGHS "
            f"{r['lp_seconds']:.1f} s, exact {r['exact_seconds']:.1f} s, wall {r['wall']:.1f} s, "
            f"CPU {r['cpu']:.1f} s, peak {r['maxrss_mib']:.0f} MiB"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
