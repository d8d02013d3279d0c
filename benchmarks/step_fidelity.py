"""Benchmark: does every log-step candidate's MSCCL++ plan run in the time plan gives it?
(issue #36, ``docs/log_step.md``)

For each topology, collective and overhead, ``plan`` (:func:`optcoll.export.planned.planned_choices`
with ``every_candidate``, links of ``--latency`` µs) times every candidate at each size at
its fastest slice; each step candidate is then written as an MSCCL++ plan
(:func:`optcoll.export.mscclpp_steps.mscclpp_step_plan`) and simulated as ``optcoll simulate``
reads it (:func:`optcoll.sim.programs.simulate_mscclpp`, plan's slice), in each of its
layouts (:func:`~optcoll.export.mscclpp_steps.step_layouts`), the faster kept as export keeps
it (of equal ones the runs; ``--layout runs`` or ``buffers``: that one only). Printed: how many
files run in plan's time exactly (to 1e-9), within 1 %, slower and faster than plan by more
than 1 %, the worst ratios file / plan, and the CPU seconds of planning and of simulating
the files.

Run from the repository root (``PYTHONPATH=DIR`` to measure another checkout's code with
this script, one that has :func:`~optcoll.export.mscclpp_steps.step_layouts`; ``--layout
runs`` writes what commit c2cbdec wrote, ``--layout buffers`` the start's layout)::

    python -m benchmarks.step_fidelity [--specs torus:4x4 ...] [--collectives allreduce]
        [--sizes 64K 1M 16M] [--overheads 1 0] [--latency 0.5] [--layout runs]
        [--worst 10] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction
from typing import Any

import optcoll
from optcoll.core.step_schedule import StepSchedule
from optcoll.exceptions import ExportError
from optcoll.export.mscclpp import boxes_of
from optcoll.export.mscclpp_steps import mscclpp_step_plan, step_layouts
from optcoll.export.planned import planned_choices
from optcoll.sim.programs import simulate_mscclpp
from optcoll.sim.simulator import SimOptions
from optcoll.topologies import build
from optcoll.verify.mscclpp.plan import parse_plan

SPECS = ("torus:4x4", "torus:8x8", "mesh:4x4", "hypercube:4", "ring:8", "dgx-h100:2")
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
SIZES = ("64K", "1M", "16M")
OVERHEADS = ("0", "1")
UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def _bytes(text: str) -> int:
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def run(args: argparse.Namespace) -> tuple[list[dict[str, Any]], float, float]:
    """Every step candidate's file and plan time; the CPU seconds of plan and of the files."""
    rows: list[dict[str, Any]] = []
    sizes = [_bytes(s) for s in args.sizes]
    latency = Fraction(args.latency)
    planning = filing = 0.0
    for spec in args.specs:
        topology = build(spec)
        boxes = boxes_of(topology)
        for collective in args.collectives:
            for overhead in (float(o) for o in args.overheads):
                start = time.process_time()
                choices = planned_choices(topology, collective, sizes, overhead=overhead,
                                          default_latency=latency, every_candidate=True)  # fmt: skip
                planning += time.process_time() - start
                start = time.process_time()
                for choice in choices:
                    for ranked in choice.ranked:
                        if not isinstance(ranked.schedule, StepSchedule):
                            continue
                        sim = SimOptions(overhead, ranked.slice_bytes, latency)
                        files = []
                        for layout in step_layouts(ranked.schedule):
                            if args.layout not in (None, layout):
                                continue
                            try:
                                plan = mscclpp_step_plan(ranked.schedule, boxes=boxes,
                                                         layout=layout)  # fmt: skip
                            except ExportError:
                                continue
                            got = simulate_mscclpp(
                                parse_plan(plan.document), topology, sim.network(topology),
                                choice.size, overhead=overhead, slice_bytes=ranked.slice_bytes,
                            ).time_us  # fmt: skip
                            files.append((got, len(files), layout, plan.threadblocks))
                        if not files:
                            continue
                        # as export keeps it: of equal times (to 1e-9 µs) the runs
                        got, _, layout, blocks = min(files, key=lambda f: (round(f[0], 9), f[1]))
                        rows.append({
                            "spec": spec, "collective": collective, "overhead": overhead,
                            "size": choice.size, "method": ranked.method,
                            "slice": ranked.slice_bytes, "blocks": blocks, "layout": layout,
                            "plan_us": ranked.time_us, "file_us": got,
                        })  # fmt: skip
                filing += time.process_time() - start
    return rows, planning, filing


def summary(rows: list[dict[str, Any]], worst: int) -> str:
    """Counts of files by ratio to plan, and the ``worst`` farthest from it."""

    def ratio(row: dict[str, Any]) -> float:
        return row["file_us"] / row["plan_us"] if row["plan_us"] else 1.0

    exact = sum(1 for r in rows if abs(r["file_us"] - r["plan_us"]) <= 1e-9 * r["plan_us"])
    within = sum(1 for r in rows if abs(ratio(r) - 1) <= 0.01)
    slower = sum(1 for r in rows if ratio(r) > 1.01)
    faster = sum(1 for r in rows if ratio(r) < 0.99)
    lines = [
        f"{len(rows)} files: exactly plan's time {exact}, within 1 % {within}, "
        f"more than 1 % apart {len(rows) - within} (slower {slower}, faster {faster})"
    ]
    by = sorted(rows, key=lambda r: -abs(ratio(r) - 1))[:worst]
    for r in by:
        lines.append(
            f"  {ratio(r):.4f}  {r['spec']} {r['collective']} {r['size']} B overhead "
            f"{r['overhead']:g}: {r['method']} on {r['blocks']} blocks "
            f"({r.get('layout', 'runs')}), slice {r['slice']}: "
            f"file {r['file_us']:.3f} plan {r['plan_us']:.3f} µs"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=list(SPECS))
    parser.add_argument("--collectives", nargs="+", default=list(COLLECTIVES))
    parser.add_argument("--sizes", nargs="+", default=list(SIZES))
    parser.add_argument("--overheads", nargs="+", default=list(OVERHEADS))
    parser.add_argument("--latency", default="0.5")
    parser.add_argument("--layout", choices=("runs", "buffers"), help="only this layout")
    parser.add_argument("--worst", type=int, default=10)
    parser.add_argument("--out", help="save every row as JSON")
    args = parser.parse_args()
    rows, planning, filing = run(args)
    print(f"optcoll from {optcoll.__file__}")
    print(summary(rows, args.worst))
    print(f"CPU: plan {planning:.1f} s, files {filing:.1f} s")
    if args.out:
        with open(args.out, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
