"""Benchmark: a 100-point leaf-spine sweep on the local pool and on a Dask cluster of 1 and 2 workers.

Run from the repository root::

    python -m benchmarks.sweep [--points-per-key 10] [--size 8]

The grid is ``leaf-spine:leaves=S,hosts=S,spines=4,oversub={oversub},bw={bw}`` (``S`` is
``--size``, default 8: 64 hosts) with 10
oversubscriptions times 10 host bandwidths (quantities ``cut_ratio``, ``algbw``, ``k``).
It runs in this process (``workers=1``), on the local process pool with 1 and 2
processes, and on a Dask ``LocalCluster`` (worker processes, one thread each) with 1 and
2 workers, checks that every engine gives the serial rows exactly, and prints per engine
the wall-clock seconds, the CPU seconds (this process, its ended children and, for Dask,
its worker processes), and per point. The Dask cluster's start-up is not in the figures
(it is printed apart): a sweep is sent to a cluster that is already running. The machine
is shared, so the CPU seconds are the comparable figure; the speed-up of 2 workers over 1
is a wall-clock ratio and only means something on an idle machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import cpu_seconds, print_table
from optcoll.studies.sweep import parse_sweep_spec, run_sweep


def _process_cpu() -> float:
    import psutil

    times = psutil.Process().cpu_times()
    return times.user + times.system


def workers_cpu(client: Any) -> float:
    """CPU seconds the Dask worker processes have used so far."""
    return sum(client.run(_process_cpu).values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points-per-key", type=int, default=10, help="values per grid key")
    parser.add_argument("--size", type=int, default=8, help="leaves, and hosts per leaf")
    args = parser.parse_args(argv)
    n = args.points_per_key
    spec = parse_sweep_spec(
        {
            "base": f"leaf-spine:leaves={args.size},hosts={args.size},spines=4,"
            "oversub={oversub},bw={bw}",
            "grid": {
                "oversub": [1 + i / 2 for i in range(n)],
                "bw": [10 * (i + 1) for i in range(n)],
            },
            "quantities": ["cut_ratio", "algbw", "k"],
        }
    )
    points = n * n
    rows = []
    reference = None

    def record(engine: str, run: Any, extra_cpu: Any = None) -> None:
        nonlocal reference
        before_extra = extra_cpu() if extra_cpu else 0.0
        wall, cpu = time.perf_counter(), cpu_seconds()
        result = run()
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        if extra_cpu:
            cpu += extra_cpu() - before_extra
        if reference is None:
            reference = result
        elif result != reference:
            raise SystemExit(f"{engine}: rows differ from the serial run")
        rows.append(
            [
                engine,
                f"{wall:.2f}",
                f"{cpu:.2f}",
                f"{1000 * wall / points:.1f}",
                f"{1000 * cpu / points:.1f}",
            ]
        )

    record("this process", lambda: run_sweep(spec, workers=1))
    for workers in (1, 2):
        record(f"local pool, {workers}", lambda w=workers: run_sweep(spec, workers=w))
    from distributed import Client, LocalCluster

    for workers in (1, 2):
        start = time.perf_counter()
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            started = time.perf_counter() - start
            print(f"Dask LocalCluster with {workers} worker(s) started in {started:.2f} s")
            record(
                f"Dask, {workers} worker{'s' * (workers > 1)}",
                lambda c=client: run_sweep(spec, dask=c),
                lambda c=client: workers_cpu(c),
            )
    print(f"{points} points of {spec.base}")
    print_table(["engine", "wall s", "CPU s", "wall ms/point", "CPU ms/point"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
