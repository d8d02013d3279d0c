"""Benchmark: ``optcoll plan`` synthesis CPU and simulated times, this code beside an older one.

``plan`` simulates every candidate at every size. On a torus or a hypercube the optimal
schedules are one root's trees and their translates, and the simulator runs one orbit of
tasks (:mod:`optcoll.sim.quotient`); the greedy timetables are synthesized under the same
translations. This script runs ``candidates`` + ``plan`` (three sizes, the issue's setup:
every direct-connect link 50 GiB/s, 0.5 µs, no per-step overhead; dgx-a100:2 with its own
links) in a fresh process per topology and revision, and prints per topology and size the
simulated time and method of both, and the CPU seconds of both (the whole call, packing
included) with their ratio. A run that does not finish within ``--limit`` seconds of wall
time is killed and shown with the CPU seconds it had spent (``> CPU``).

Run from the repository root::

    python -m benchmarks.plan_quotient [--previous main] [--specs torus:8x8 ...] [--limit 600]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import extract_revision, print_table
from benchmarks.tacos import GIB, SIZES, spec_for

#: The topologies: TACOS's tori and meshes, a box cluster with switches, the 1,024-NPU torus.
SPECS = (
    "torus:4x4",
    "torus:8x8",
    "torus:16x16",
    "mesh:8x8",
    "mesh:4x4x4",
    "dgx-a100:2",
    "torus:32x32",
)
LATENCY = Fraction(1, 2)
GIB_PER_S = Fraction(50)

CHILD = """
import json, sys, time
from fractions import Fraction
from optcoll.topologies import build
from optcoll.sim.plan import candidates, plan
spec, latency = sys.argv[1], Fraction(sys.argv[2])
sizes = [int(s) for s in sys.argv[3:]]
start = time.process_time()
topo = build(spec)
options = candidates(topo, "allgather")
rows = plan(topo, "allgather", sizes, overhead=0.0, default_latency=latency, options=options)
cpu = time.process_time() - start
print(json.dumps({"cpu": cpu, "rows": [[r.size, r.method, r.time_us, r.ratio] for r in rows]}))
"""


def run_plan(spec: str, root: Path, limit: float) -> dict[str, object]:
    """``candidates`` + ``plan`` with the code under ``root`` in a fresh process; a run not
    finished within ``limit`` wall seconds is killed and gives only the CPU seconds it
    had spent (``{"cpu": ..., "rows": None}``)."""
    before = _children_cpu()
    try:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, spec, str(LATENCY), *map(str, SIZES)],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,  # python -c puts the working folder first on sys.path
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
            timeout=limit,
        ).stdout
    except subprocess.TimeoutExpired:  # killed and waited for: its CPU is counted
        return {"cpu": _children_cpu() - before, "rows": None}
    return json.loads(out.splitlines()[-1])


def _children_cpu() -> float:
    """CPU seconds of the child processes that have ended."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=list(SPECS), help="optcoll specs")
    parser.add_argument("--previous", help="git revision whose plan runs beside ours")
    parser.add_argument("--limit", type=float, default=600.0, help="wall seconds per run")
    parser.add_argument("--json", help="also write every row to this JSON file")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parents[1]
    previous = extract_revision(args.previous, Path(tempfile.mkdtemp())) if args.previous else None
    rows, records = [], []
    for template in args.specs:
        direct = not template.startswith("dgx")
        spec = spec_for(template, GIB_PER_S) if direct else template
        ours = run_plan(spec, here, args.limit)
        old = run_plan(spec, previous, args.limit) if previous else None
        for i, size in enumerate(SIZES):
            record: dict[str, object] = {"topology": template, "size": size}
            cells: list[object] = [template, f"{size // 2**20} MiB" if size < GIB else "1 GiB"]
            for name, result in (("ours", ours), ("previous", old)):
                if name == "previous" and previous is None:
                    continue
                if result is None:
                    continue
                if result["rows"] is None:
                    record[name] = {"unfinished_cpu": result["cpu"]}
                    cells += ["-", f"not in {args.limit:.0f} s wall", f"> {result['cpu']:.1f}"]
                    continue
                _, method, time_us, ratio = result["rows"][i]  # type: ignore[index]
                record[name] = {"time_us": time_us, "method": method, "ratio": ratio,
                                "cpu": result["cpu"]}  # fmt: skip
                cells += [f"{time_us:.3f}", method, f"{result['cpu']:.2f}"]
            if previous is not None:
                cells.append(_ratio(ours, old))
                cells.append(_faster(ours, old, i))
            records.append(record)
            rows.append(cells)
            print(json.dumps(record), file=sys.stderr, flush=True)
    headers = ["topology", "size", "plan µs", "method", "CPU s"]
    if previous is not None:
        headers += ["previous µs", "previous method", "prev CPU s", "CPU prev/ours", "µs ours/prev"]
    print_table(headers, rows)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1) + "\n")
    return 0


def _ratio(ours: dict, old: dict | None) -> str:
    """Previous CPU over ours (a lower bound when the previous run did not finish)."""
    if old is None or ours["rows"] is None:
        return "-"
    ratio = float(old["cpu"]) / float(ours["cpu"])
    return f"> {ratio:.1f}" if old["rows"] is None else f"{ratio:.2f}"


def _faster(ours: dict, old: dict | None, i: int) -> str:
    """Our simulated time over the previous one at size ``i``."""
    if old is None or ours["rows"] is None or old["rows"] is None:
        return "-"
    return f"{float(ours['rows'][i][2]) / float(old['rows'][i][2]):.4f}"


if __name__ == "__main__":
    start = time.process_time()
    code = main()
    print(f"benchmark CPU {time.process_time() - start:.1f} s (this process)")
    raise SystemExit(code)
