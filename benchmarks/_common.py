"""Shared helpers for the benchmark scripts: reference figures, timing, peak memory.

The reference figures live in ``benchmarks/reference.json`` (its ``source`` field says
where each number comes from). Scripts
print seconds, peak memory and the ratio to ``reference_seconds_2core``.

Example (from the repository root)::

    from benchmarks._common import measure, reference_seconds
    m = measure(lambda: sum(range(10**6)))
    print(m.seconds, m.peak_mib, reference_seconds("bound", "dgx-a100:16"))
"""

from __future__ import annotations

import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

#: Reference optima and timings, kept in the repository (``source`` names their origin).
REFERENCE_PATH = Path(__file__).resolve().parent / "reference.json"


@cache
def load_reference() -> dict[str, Any]:
    """The reference figures (optima, timings) of ``benchmarks/reference.json``."""
    return json.loads(REFERENCE_PATH.read_text())


def reference_seconds(kind: str, spec: str) -> float | None:
    """Reference wall-clock seconds (2 cores) for ``kind`` ("bound", "trees") and a spec."""
    return load_reference()["reference_seconds_2core"].get(kind, {}).get(spec)


def reference_optimum(spec: str) -> dict[str, Any] | None:
    """The reference optimum entry for a spec such as ``"dgx-a100:16"``."""
    family, _, boxes = spec.partition(":")
    for entry in load_reference()["optima"]:
        if entry["topology"] == family and str(entry["boxes"]) == (boxes or "1"):
            return entry
    return None


@dataclass(frozen=True)
class Measurement:
    """Timing and memory of one benchmarked call.

    ``seconds`` is the median wall-clock time of ``repeat`` runs (without
    tracing); ``peak_mib`` the tracemalloc peak of one extra traced run (Python
    allocations, numpy buffers included); ``maxrss_mib`` the process's peak
    resident set size so far.
    """

    seconds: float
    all_seconds: tuple[float, ...]
    peak_mib: float
    maxrss_mib: float
    result: Any


def measure(function: Callable[[], Any], repeat: int = 3, trace_memory: bool = True) -> Measurement:
    """Time ``function()`` ``repeat`` times and measure its peak memory once."""
    times = []
    result = None
    for _ in range(max(repeat, 1)):
        gc.collect()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    peak = math.nan
    if trace_memory:
        gc.collect()
        tracemalloc.start()
        function()
        _, peak_bytes = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peak = peak_bytes / 2**20
    return Measurement(statistics.median(times), tuple(times), peak, maxrss_mib(), result)


def timed(function: Callable[[], Any]) -> tuple[Any, float, float]:
    """``function()``'s result, wall seconds and CPU seconds (``time.process_time``)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def maxrss_mib() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10


def cpu_seconds() -> float:
    """CPU seconds of this process and of its child processes that have ended (a process
    pool's workers, once it is shut down)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


#: What ``--baseline`` times in the other checkout, per benchmark kind: ``call(topology)``,
#: or the function ``prepare(topology, *arguments)`` returns (its own work untimed).
_BASELINE_CALLS = {
    "trees": "from optcoll.schedules.packing import pack_arborescences as call",
    "bound": "from optcoll.bounds.cut_ratio import optimal_cut_ratio as call",
    "simulate": "\n".join(
        [
            "from optcoll.schedules.packing import pack_arborescences",
            "from optcoll.sim.simulator import simulate_schedule",
            "def prepare(topology, size):",
            "    schedule = pack_arborescences(topology)",
            "    return lambda: simulate_schedule(topology, schedule, int(size))",
        ]
    ),
}


def baseline_cpu(
    checkout: str | Path, kind: str, spec: str, timeout: float
) -> tuple[float, float] | None:
    """CPU seconds and peak resident MiB of the same call on the code of another checkout
    (e.g. a git worktree of an older commit: ``git worktree add --detach ../old COMMIT``),
    in a fresh process.

    The topology is built before the clock starts, as in the benchmarks; None when the
    run fails or takes longer than ``timeout`` wall-clock seconds.
    """
    seconds = baseline_seconds(checkout, kind, spec, timeout)
    return None if seconds is None else (seconds[0], seconds[2])


def baseline_seconds(
    checkout: str | Path, kind: str, spec: str, timeout: float, *arguments: str
) -> tuple[float, float, float] | None:
    """CPU and wall seconds and the peak resident MiB of the process of the call
    :func:`baseline_cpu` runs (``arguments`` go to the kind's ``prepare``)."""
    script = "\n".join(
        [
            "import resource, sys, time",
            _BASELINE_CALLS[kind],
            "from optcoll.io import load_topology",
            "topology = load_topology(sys.argv[1])",
            "run = prepare(topology, *sys.argv[2:]) if 'prepare' in globals() else None",
            "started, wall = time.process_time(), time.perf_counter()",
            "run() if run is not None else call(topology)",
            "print(time.process_time() - started, time.perf_counter() - wall)",
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)",
        ]
    )
    env = dict(os.environ, PYTHONPATH=str(Path(checkout).resolve()))
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, spec, *arguments],
            cwd=checkout,  # `python -c` puts the working directory first on sys.path
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    cpu, wall, rss = done.stdout.split()[-3:]
    return float(cpu), float(wall), float(rss)


def extract_revision(revision: str, folder: Path) -> Path:
    """``optcoll`` and ``formulations`` of git ``revision`` of this repository, extracted
    into ``folder / "previous"`` (put it first on ``sys.path`` to run that code)."""
    tree = folder / "previous"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(Path(__file__).resolve().parents[1]), "archive", revision]
        + ["optcoll", "formulations"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def growth_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """Least-squares slope of log(seconds) against log(size): cost ~ size**slope."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(t) for t in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A plain left/right-aligned text table on stdout."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for j, row in enumerate(cells):
        print(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if j == 0:
            print("  ".join("-" * w for w in widths))


def run_child(
    code: str, args: Sequence[str], limit: float, root: Path | None = None
) -> dict[str, Any] | None:
    """Run ``code`` in a fresh interpreter with ``args``; the JSON of its last output line.

    A fresh process makes the peak memory the run's own. None if it does not
    finish within ``limit`` seconds; a failure raises with the child's last
    error line. ``root``: the checkout whose optcoll the child imports (default this one;
    another, e.g. a worktree of an earlier revision, for side-by-side measurements).
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            timeout=limit,
            cwd=root or Path(__file__).resolve().parents[1],
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


#: A child process that runs ``candidates`` + ``plan --overhead 0`` on SPEC at LATENCY (µs)
#: for the SIZES given as arguments, with the optcoll its PYTHONPATH points to, and prints
#: its CPU seconds and the rows as JSON (so an older revision can run beside this one).
PLAN_CHILD = """
import json, sys, time
from fractions import Fraction
from optcoll.topologies import build
from optcoll.sim.size_plan import candidates, plan
spec, latency = sys.argv[1], Fraction(sys.argv[2])
sizes = [int(s) for s in sys.argv[3:]]
start = time.process_time()
topo = build(spec)
options = candidates(topo, "allgather")
rows = plan(topo, "allgather", sizes, overhead=0.0, default_latency=latency, options=options)
cpu = time.process_time() - start
print(json.dumps({"cpu": cpu, "rows": [[r.size, r.method, r.time_us, r.ratio] for r in rows]}))
"""
