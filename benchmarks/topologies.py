"""Benchmark: building, validating, saving and loading large built-in topologies.

Prints seconds (best of 3) and tracemalloc peak memory per step. The reference
file (``benchmarks/reference.json``) holds no timings for topology
construction, so the ratio column reads ``n/a``; the target is that every model
the bound benchmarks use (up to ``dgx-a100:128``) builds in well under a second.

Run from the repository root: ``python benchmarks/topologies.py``.
"""

from __future__ import annotations

import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optcoll.io import load_topology, save_topology  # noqa: E402

SPECS = (
    "dgx-a100:128",
    "dgx-h100:128",
    "dgx-2:64",
    "mi250:64",
    "torus:32x32",
    "leaf-spine:leaves=64,hosts=16,spines=16,oversub=2",
    "random:n=300,switches=30,seed=1,p=0.05",
)


def timed(function: Callable[[], Any]) -> tuple[float, float, Any]:
    """(best of 3 seconds, peak MiB of one traced run, result)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak, result


def main() -> int:
    print(f"{'step':<62} {'seconds':>8} {'peak MiB':>9} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as folder:
        for spec in SPECS:
            seconds, peak, topo = timed(lambda spec=spec: load_topology(spec))
            size = f"{spec} ({topo.num_compute} compute, {len(topo.capacity)} arcs)"
            print(f"{'build ' + size:<62} {seconds:>8.3f} {peak:>9.1f} {'n/a':>6}")
            for suffix in (".json", ".yaml"):
                path = Path(folder) / f"t{suffix}"
                seconds, peak, _ = timed(lambda topo=topo, path=path: save_topology(topo, path))
                print(f"{'  save ' + suffix:<62} {seconds:>8.3f} {peak:>9.1f} {'n/a':>6}")
                seconds, peak, _ = timed(lambda path=path: load_topology(path))
                print(f"{'  load ' + suffix:<62} {seconds:>8.3f} {peak:>9.1f} {'n/a':>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
