"""Benchmark: ``plan`` with and without the log-step candidates, at the issue's small sizes.

Issue #37 measured ``plan --overhead 1 --latency 0.5`` far from its bound at 1 KiB-1 MiB
and had no log-step algorithm among the candidates. This script runs :func:`plan` on
each topology and collective twice in this process, once with the candidates of the
previous code (every candidate but the step schedules of
:mod:`optcoll.schedules.baselines.step_catalogue`, which is exactly what ``main`` offered)
and once with all of them, and prints per size the fastest method and time of both,
the best log-step candidate's time, the lower bound, and the CPU seconds of both calls
(``candidates`` + ``plan``; the step schedules routed and verified included).

With ``--new METHOD ...`` "before" is every candidate but those methods (e.g. ``--new
"multiport Swing" Bine`` measures what they add to the other log-step candidates), and a
column gives each named method's own simulated time (``--show`` adds more methods there,
e.g. ``Swing``).

Run from the repository root::

    python -m benchmarks.logstep [--specs torus:8x8 ...] [--collectives allreduce ...]
        [--sizes 1024 65536 ...] [--new "multiport Swing" Bine] [--show Swing]
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table
from optcoll.sim.size_plan import candidates, plan
from optcoll.topologies import build

SPECS = ("torus:8x8", "dgx-h100:4", "leaf-spine:leaves=4,hosts=8,spines=4", "ring:16")
COLLECTIVES = ("allreduce", "allgather", "reduce_scatter")
SIZES = (1024, 64 * 1024, 1024**2, 16 * 1024**2)
OVERHEAD, LATENCY = 1.0, Fraction(1, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS)
    parser.add_argument("--collectives", nargs="+", default=COLLECTIVES)
    parser.add_argument("--sizes", nargs="+", type=int, default=SIZES)
    parser.add_argument("--new", nargs="+", default=None, help="methods left out of before")
    parser.add_argument("--show", nargs="+", default=(), help="methods whose times to print")
    args = parser.parse_args()
    shown = [*(args.new or ()), *args.show]
    rows = []
    for spec in args.specs:
        topology = build(spec)
        for collective in args.collectives:
            times = {}
            for variant in ("before", "after"):
                start = time.process_time()
                options = candidates(topology, collective)
                if variant == "before":
                    options = [
                        o
                        for o in options
                        if (o.steps is None if args.new is None else o.method not in args.new)
                    ]
                planned = plan(
                    topology, collective, args.sizes, overhead=OVERHEAD, default_latency=LATENCY,
                    options=options,
                )  # fmt: skip
                times[variant] = (time.process_time() - start, planned)
            cpu_before, before = times["before"]
            cpu_after, after = times["after"]
            steps = {o.method for o in candidates(topology, collective) if o.steps is not None}
            for old, new in zip(before, after, strict=True):
                simulated = [(t, m) for m, t in new.candidates if m in steps and t is not None]
                best_step = min(simulated) if simulated else None
                own = dict((m, t) for m, t in new.candidates)
                named = "; ".join(f"{m} {own[m]:.2f}" for m in shown if own.get(m) is not None)
                rows.append(
                    (
                        spec.split(",")[0] if "leaf" not in spec else "leaf-spine 4x8",
                        collective,
                        _size(new.size),
                        f"{old.time_us:.2f} {old.method}",
                        f"{new.time_us:.2f} {new.method}",
                        "-" if best_step is None else f"{best_step[0]:.2f} {best_step[1]}",
                        f"{new.lower_bound_us:.2f}",
                        f"{old.ratio:.2f} -> {new.ratio:.2f}",
                        f"{cpu_before:.1f} / {cpu_after:.1f}",
                        named or "-",
                    )
                )
    print_table(
        ("topology", "collective", "size", "before (µs, method)", "after (µs, method)",
         "best log-step", "bound", "ratio", "CPU s before/after", "named methods (µs)"),
        rows,
    )  # fmt: skip


def _size(size: int) -> str:
    return f"{size // 1024**2} MiB" if size >= 1024**2 else f"{size // 1024} KiB"


if __name__ == "__main__":
    main()
