"""Benchmark: exact optimal cut ratio (``optcoll bound``) against the reference timings.

Run from the repository root::

    python -m benchmarks.bound [--repeat 3] [--specs dgx-a100:2 mi250:8 ...] [--baseline DIR]

Prints, per topology, the median seconds of ``optimal_cut_ratio`` (topology
construction excluded, as in the reference), the tracemalloc peak, the number
of max-flows, the speed-up over ``reference_seconds_2core["bound"]`` and the
targets of issue 3 (>= 100x on dgx-a100:16 and mi250:8; dgx-a100:128 < 3 s and
< 1 GB), then how the cost grows with N.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import (
    baseline_cpu,
    growth_exponent,
    measure,
    print_table,
    reference_optimum,
    reference_seconds,
)
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.io import load_topology

SPECS = [
    "dgx-a100:2",
    "dgx-a100:4",
    "dgx-a100:8",
    "dgx-a100:16",
    "dgx-a100:32",
    "dgx-a100:64",
    "dgx-a100:128",
    "mi250:2",
    "mi250:4",
    "mi250:8",
]

#: spec -> (minimum speed-up over the reference, maximum seconds, maximum peak MiB)
TARGETS = {
    "dgx-a100:16": (100.0, None, None),
    "mi250:8": (100.0, None, None),
    "dgx-a100:128": (None, 3.0, 1024.0),
    "dgx-a100:2048": (None, 30.0, None),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per topology")
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to run")
    parser.add_argument("--baseline", help="another checkout whose code runs beside ours")
    args = parser.parse_args(argv)

    rows, growth, failures = [], {}, []
    for spec in args.specs:
        start = time.perf_counter()
        topology = load_topology(spec)
        build = time.perf_counter() - start
        started = time.process_time()
        optimal_cut_ratio(topology)
        cpu = time.process_time() - started
        m = measure(lambda topology=topology: optimal_cut_ratio(topology), repeat=args.repeat)
        old = "-", "-"
        if args.baseline:
            old_run = baseline_cpu(args.baseline, "bound", spec, 600.0)
            old = (
                ("> 600 wall", "-")
                if old_run is None
                else (f"{old_run[0]:.3f}", f"{old_run[0] / cpu:.1f}x")
            )
        result = m.result
        expected = reference_optimum(spec)
        correct = expected is None or result.to_dict()["cut_ratio"] == expected["cut_ratio"]
        ref = reference_seconds("bound", spec)
        speedup = ref / m.seconds if ref else None
        rows.append(
            [
                spec,
                topology.num_compute,
                f"{result.ratio.numerator}/{result.ratio.denominator}"
                + ("" if correct else " WRONG"),
                f"{m.seconds:.4f}",
                f"{cpu:.4f}",
                *old,
                f"{build:.3f}",
                f"{m.peak_mib:.1f}",
                result.stats.get("max_flows", "-"),
                f"{ref:g}" if ref else "-",
                f"{speedup:.0f}x" if speedup else "-",
            ]
        )
        growth.setdefault(spec.partition(":")[0], []).append((topology.num_compute, m.seconds))
        if not correct:
            failures.append(f"{spec}: cut ratio {result.ratio} differs from the reference")
        min_speedup, max_seconds, max_mib = TARGETS.get(spec, (None, None, None))
        if min_speedup and (speedup is None or speedup < min_speedup):
            failures.append(f"{spec}: speed-up {speedup or 0:.0f}x < {min_speedup:.0f}x")
        if max_seconds and m.seconds > max_seconds:
            failures.append(f"{spec}: {m.seconds:.2f} s > {max_seconds} s")
        if max_mib and m.peak_mib > max_mib:
            failures.append(f"{spec}: peak {m.peak_mib:.0f} MiB > {max_mib:.0f} MiB")

    print_table(
        [
            "topology",
            "N",
            "r*",
            "seconds",
            "cpu s",
            "old cpu s",
            "old/new",
            "build s",
            "peak MiB",
            "max-flows",
            "ref s",
            "speed-up",
        ],
        rows,
    )
    print(f"\nprocess max RSS {m.maxrss_mib:.0f} MiB")
    for family, points in growth.items():
        if len(points) >= 3:
            sizes, seconds = zip(*points, strict=True)
            print(
                f"{family}: seconds grow like N^{growth_exponent(sizes, seconds):.2f} over N = {sizes[0]}..{sizes[-1]}"
            )
    for spec, (min_speedup, max_seconds, max_mib) in TARGETS.items():
        if spec in args.specs:
            wanted = [
                f">= {min_speedup:.0f}x" if min_speedup else "",
                f"< {max_seconds} s" if max_seconds else "",
                f"< {max_mib:.0f} MiB" if max_mib else "",
            ]
            print(f"target {spec}: {' and '.join(w for w in wanted if w)}")
    if failures:
        print("\nMISSED: " + "; ".join(failures))
        return 1
    print("\nall targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
