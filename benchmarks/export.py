"""Benchmark: deployable MSCCL export and its checks at scale (``optcoll export``).

Run from the repository root::

    python -m benchmarks.export [--specs dgx-a100:16 mi250:8] [--collectives allreduce ...]
                                [--runtime rccl]

For every topology and collective it measures, in one process: building the
deployable schedule (:func:`optcoll.schedules.deploy.deployable_schedule`: the
power-of-two k search and the packing), verifying it
(:func:`optcoll.verify.schedule.verify_schedule`), writing the MSCCL programs of every
placement (:func:`optcoll.export.msccl.msccl_program`), and - when the
independent program checker ``optcoll check-xml`` exists - checking each written
file with it (a separate process, so its time includes start-up). It prints wall
and CPU seconds of each phase (CPU seconds stay meaningful when other jobs share
the cores), the chosen k, its ratio to the optimum, and the figures the runtime
bounds (steps per thread block, thread blocks per GPU, channels, peers per GPU).

With ``--simulate`` it measures instead how fast the exported program runs, in the
chunk-level simulator (:mod:`optcoll.sim.simulator`)::

    python -m benchmarks.export --simulate [--against main] [--sizes 1M 64M 1G]

For every topology, collective and size: the simulated time of the deployable tree
schedule and of its MSCCL program (the first placement), each over the bound
``(M/N) * optimum``; with ``--against REV`` also the program that git revision
``REV``'s exporter writes for the same schedule (its code extracted and run in a
fresh process, the program simulated by this checkout's simulator), and whether
``optcoll check-xml`` accepts this checkout's program.
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

from benchmarks._common import extract_revision, print_table
from optcoll.export.msccl import msccl_program, placements
from optcoll.io import load_topology
from optcoll.schedules.collectives import collective_lower_bound
from optcoll.schedules.deploy import deployable_schedule
from optcoll.verify.schedule import verify_schedule

SPECS = ["dgx-a100:16", "mi250:8"]
COLLECTIVES = ["allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"]
SIMULATED_SPECS = ["dgx-a100:2", "mi250:2", "dgx-h100:4", "torus:4x4"]
SIMULATED_COLLECTIVES = ["allgather", "reduce_scatter", "allreduce"]
SIMULATED_SIZES = ["1M", "64M", "1G"]

#: Run in a fresh process with another revision's ``optcoll`` first on ``sys.path``:
#: its MSCCL program of a schedule file (argv: schedule, allgather schedule or "",
#: placement, output file).
_WRITE_PROGRAM = """
import sys
sys.path.insert(0, sys.argv[1])
from optcoll.export.msccl import msccl_program
from optcoll.io import load_schedule
down = load_schedule(sys.argv[3]) if sys.argv[3] else None
program = msccl_program(load_schedule(sys.argv[2]), placement=sys.argv[4], allgather=down)
open(sys.argv[5], "w").write(program.text)
"""


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


def simulated(
    specs: list[str], collectives: list[str], sizes: list[int], against: str | None
) -> list[list[object]]:
    """Rows of ``--simulate``: simulated time over the bound of trees and programs."""
    from optcoll.cli._core import size_text
    from optcoll.io import save_schedule
    from optcoll.sim.programs import simulate_msccl
    from optcoll.sim.simulator import data_bytes, simulate_schedule

    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        previous = extract_revision(against, folder) if against else None
        for spec in specs:
            topology = load_topology(spec)
            for collective in collectives:
                chosen = deployable_schedule(topology, collective)
                schedule = chosen.schedule
                optimum = collective_lower_bound(topology, collective, schedule.root)
                placement = placements(collective)[0]
                program, _, write_cpu = _timed(
                    lambda s=schedule, c=chosen, p=placement: msccl_program(
                        s, placement=p, allgather=c.allgather
                    )
                )
                files = {"new": folder / f"{spec}-{collective}.xml".replace(":", "-")}
                files["new"].write_text(program.text)
                verdict, _ = _check_xml(files["new"], "rccl")
                if previous is not None:
                    files["old"] = files["new"].with_suffix(".old.xml")
                    saved = [folder / "schedule.json", folder / "allgather.json"]
                    save_schedule(schedule, saved[0], force=True)
                    if chosen.allgather is not None:
                        save_schedule(chosen.allgather, saved[1], force=True)
                    command = [sys.executable, "-c", _WRITE_PROGRAM, str(previous), str(saved[0])]
                    command += [str(saved[1]) if chosen.allgather else "", placement]
                    subprocess.run(command + [str(files["old"])], check=True, cwd=folder)
                for size in sizes:
                    bound = data_bytes(collective, size, len(schedule.compute_nodes))
                    bound *= float(optimum) / 1000.0  # GB/s = 1000 bytes per µs
                    trees = (
                        f"{simulate_schedule(topology, schedule, size).time_us / bound:.3f}"
                        if chosen.allgather is None
                        else "n/a"
                    )
                    ratios = {
                        which: simulate_msccl(str(path), topology, size).time_us / bound
                        for which, path in files.items()
                    }
                    old = f"{ratios['old']:.3f}" if "old" in ratios else "-"
                    rows.append(
                        [spec, collective, schedule.k, size_text(size), f"{bound:.1f}", trees]
                        + [old, f"{ratios['new']:.3f}", verdict, f"{write_cpu:.2f}"]
                        + [program.max_threadblocks, program.max_steps, program.nchannels]
                    )
                    print_table(SIMULATED_HEADERS, rows[-1:])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=None, help="topologies to run")
    parser.add_argument("--collectives", nargs="+", default=None, choices=COLLECTIVES)
    parser.add_argument("--runtime", default="rccl", choices=("rccl", "msccl", "msccl-executor"))
    parser.add_argument(
        "--simulate", action="store_true", help="simulated time of trees and programs"
    )
    parser.add_argument("--sizes", nargs="+", default=SIMULATED_SIZES, help="with --simulate")
    parser.add_argument("--against", metavar="REV", help="with --simulate: REV's exporter too")
    args = parser.parse_args(argv)
    if args.simulate:
        from optcoll.cli._core import message_size

        sizes = [message_size(size) for size in args.sizes]
        rows = simulated(
            args.specs or SIMULATED_SPECS,
            args.collectives or SIMULATED_COLLECTIVES,
            sizes,
            args.against,
        )
        print()
        print_table(SIMULATED_HEADERS, rows)
        return 0
    args.specs = args.specs or SPECS
    args.collectives = args.collectives or COLLECTIVES

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


SIMULATED_HEADERS = [
    "topology",
    "collective",
    "k",
    "size",
    "bound us",
    "trees",
    "old xml",
    "xml",
    "check-xml",
    "xml cpu s",
    "tb/gpu",
    "steps/tb",
    "channels",
]

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
