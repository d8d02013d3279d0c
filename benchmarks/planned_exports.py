"""Benchmark: does the MSCCL file run as plan planned? ``simulate`` of exported programs
against plan's time, for ``plan --export``'s band file and ``export --size``'s file.

For each topology, collective and size this script plans the collective
(:func:`optcoll.sim.size_plan.plan`, overhead and link latency as given), writes the MSCCL
program of the band the size falls in as ``plan --export`` does (tree schedules by
:func:`optcoll.export.msccl.msccl_program`, log-step winners by
:func:`optcoll.export.msccl_steps.msccl_step_program`; a log-step winner the MSCCL checker
refuses with the topology gives way to the fastest other candidate), then the program
``export --size`` writes (:func:`optcoll.export.planned_programs.export_planned_program`),
and simulates both at the size with the simulator's MSCCL reader. It prints plan's
choice and time, both files' times and their ratio to plan's, and the CPU seconds of the
``--size`` export.

Run from the repository root::

    python -m benchmarks.planned_exports [--specs mesh:3x9,bw=40 torus:4x4x8,bw=40]
        [--collective allgather] [--sizes 1M 4M] [--overhead 1] [--latency 0.7]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optcoll.core.msccl_runtimes import DEFAULT_RUNTIME, RUNTIMES  # noqa: E402
from optcoll.core.sizes import parse_size  # noqa: E402
from optcoll.export.msccl import msccl_program, placements  # noqa: E402
from optcoll.export.msccl_steps import msccl_step_program  # noqa: E402
from optcoll.export.planned_programs import export_planned_program  # noqa: E402
from optcoll.export.request import ExportRequest  # noqa: E402
from optcoll.sim.programs import msccl_tasks  # noqa: E402
from optcoll.sim.simulator import SimOptions  # noqa: E402
from optcoll.sim.size_plan import candidates, plan, schedule_bands  # noqa: E402
from optcoll.topologies import build  # noqa: E402
from optcoll.verify.msccl import verify_text  # noqa: E402
from optcoll.verify.msccl.limits import decode  # noqa: E402
from optcoll.verify.msccl.program import parse_program  # noqa: E402


def _time(text: str, topology, sim: SimOptions, size: int) -> float:
    algo = decode(parse_program(text), RUNTIMES[DEFAULT_RUNTIME]).algo
    network = sim.network(topology)
    graph = msccl_tasks(algo, topology, network, size, slice_bytes=sim.slice_bytes)
    return sim.run(graph, network, size).time_us


def _band_program(topology, options, rows, size: int) -> tuple[str, str]:
    """The out-of-place program of the band holding ``size``, as plan --export writes it."""
    refused: set[str] = set()
    while True:
        allowed = [o for o in options if o.method not in refused]
        for option, low, high in schedule_bands(rows, allowed, steps=True):
            if low <= size and (high is None or size <= high):
                if option.steps is None:
                    schedule = option.schedule
                    place = placements(schedule.collective)[0]
                    return option.method, msccl_program(schedule, placement=place).text
                text = msccl_step_program(option.steps.schedule).text
                if verify_text(text, topology=topology).ok:
                    return option.method, text
                refused.add(option.method)
                break


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=["mesh:3x9,bw=40", "torus:4x4x8,bw=40"])
    parser.add_argument("--collective", default="allgather")
    parser.add_argument("--sizes", nargs="+", default=["1M", "4M"])
    parser.add_argument("--overhead", type=float, default=1.0)
    parser.add_argument("--latency", type=Fraction, default=Fraction(7, 10))
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes]
    for spec in args.specs:
        topology = build(spec)
        options = candidates(topology, args.collective)
        rows = plan(topology, args.collective, sizes, overhead=args.overhead,
                    default_latency=args.latency, options=options)  # fmt: skip
        for row in rows:
            sim = SimOptions(args.overhead, row.slice_bytes, args.latency)
            method, text = _band_program(topology, options, rows, row.size)
            band = _time(text, topology, sim, row.size)
            with tempfile.TemporaryDirectory() as folder:
                start = time.process_time()
                report = export_planned_program(
                    ExportRequest(spec, str(Path(folder) / "x.xml"), collective=args.collective,
                                  size=row.size, overhead=args.overhead, latency=args.latency)
                )  # fmt: skip
                cpu = time.process_time() - start
            entry = report.data["files"][0]
            print(json.dumps({
                "topology": spec, "bytes": row.size, "plan": row.method,
                "plan_us": round(row.time_us, 3), "band_file": method,
                "band_file_us": round(band, 3), "band_ratio": round(band / row.time_us, 3),
                "size_file": entry["method"], "size_file_us": entry["file_time_us"],
                "size_ratio": round(entry["file_time_us"] / row.time_us, 3),
                "size_export_cpu_s": round(cpu, 1),
            }))  # fmt: skip


if __name__ == "__main__":
    main()
