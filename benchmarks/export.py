"""Benchmark: deployable MSCCL export and its checks at scale (``optcoll export``).

Run from the repository root::

    python -m benchmarks.export [--specs dgx-a100:16 mi250:8] [--collectives allreduce ...]
                                [--runtime rccl]

For every topology and collective it measures, in one process: building the
deployable schedule (:func:`optcoll.export.deploy.deployable_schedule`: the
power-of-two k search and the packing), verifying it
(:func:`optcoll.verify.verify_schedule`), writing the MSCCL programs of every
placement (:func:`optcoll.export.msccl.msccl_program`), and - when the
independent program checker ``optcoll check-xml`` exists - checking each written
file with it (a separate process, so its time includes start-up). It prints wall
and CPU seconds of each phase (CPU seconds stay meaningful when other jobs share
the cores), the chosen k, its ratio to the optimum, and the figures the runtime
bounds (steps per thread block, thread blocks per GPU, channels, peers per GPU).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table
from optcoll.collectives import collective_lower_bound
from optcoll.export.deploy import deployable_schedule
from optcoll.export.msccl import msccl_program, placements
from optcoll.io import load_topology
from optcoll.verify import verify_schedule

SPECS = ["dgx-a100:16", "mi250:8"]
COLLECTIVES = ["allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"]


def _timed(function):  # noqa: ANN001, ANN202 - any zero-argument callable
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _check_xml(path: Path, runtime: str) -> tuple[str, float]:
    """Run ``optcoll check-xml`` on ``path``: its verdict (exit status) and wall seconds."""
    command = [sys.executable, "-m", "optcoll", "check-xml", str(path), "--runtime", runtime]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode == 2 and "invalid choice" in done.stderr:
        return "n/a", seconds
    return ("ok" if done.returncode == 0 else f"exit {done.returncode}"), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to run")
    parser.add_argument("--collectives", nargs="+", default=COLLECTIVES, choices=COLLECTIVES)
    parser.add_argument("--runtime", default="rccl", choices=("rccl", "msccl", "msccl-executor"))
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="optcoll-export-bench-"))
    rows = []
    try:
        for spec in args.specs:
            topology = load_topology(spec)
            for collective in args.collectives:
                chosen, build_wall, build_cpu = _timed(
                    lambda t=topology, c=collective: deployable_schedule(t, c)
                )
                schedule = chosen.schedule
                optimum = collective_lower_bound(topology, collective, schedule.root)
                verdict, verify_wall, verify_cpu = _timed(
                    lambda t=topology, s=schedule, o=optimum: verify_schedule(t, s, optimum=o)
                )
                for placement in placements(collective, args.runtime):
                    program, write_wall, write_cpu = _timed(
                        lambda s=schedule, p=placement: msccl_program(
                            s, runtime=args.runtime, placement=p, max_bytes=1 << 30
                        )
                    )
                    path = folder / f"{spec.replace(':', '-')}-{collective}-{placement}.xml"
                    path.write_text(program.text)
                    check, check_wall = _check_xml(path, args.runtime)
                    rows.append(
                        [
                            spec,
                            collective,
                            placement,
                            schedule.k,
                            f"{float(chosen.ratio):.4f}",
                            "yes" if verdict.valid else "NO",
                            f"{build_wall:.1f}/{build_cpu:.1f}",
                            f"{verify_wall:.1f}/{verify_cpu:.1f}",
                            f"{write_wall:.1f}/{write_cpu:.1f}",
                            f"{check} {check_wall:.1f}",
                            program.max_steps,
                            program.max_threadblocks,
                            program.nchannels,
                            program.max_peers,
                        ]
                    )
                    print_table(HEADERS, rows[-1:])
    finally:
        shutil.rmtree(folder)
    print()
    print_table(HEADERS, rows)
    return 0


HEADERS = [
    "topology",
    "collective",
    "placement",
    "k",
    "ratio",
    "verified",
    "build s wall/cpu",
    "verify s",
    "xml s",
    "check-xml s",
    "steps/tb",
    "tb/gpu",
    "channels",
    "peers",
]

if __name__ == "__main__":
    raise SystemExit(main())
