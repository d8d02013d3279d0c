"""Benchmark: the in-network (NVLS) allreduce as an MSCCL++ switch-channel plan, simulated,
against plan's time for the in-network schedule it carries.

Run from the repository root::

    python -m benchmarks.mscclpp_nvls [--specs dgx-h100:1,nvls=1 ...] [--sizes 1M 1G]

For each topology with one NVLS domain it writes the plan
(:func:`optcoll.export.mscclpp_nvls.mscclpp_nvls_plan`, out of place), times the writer and
``check-plan`` (CPU seconds), and at each size prints the simulator's time of the plan
file (:func:`optcoll.sim.programs.simulate_mscclpp`, from its quotient where it has one;
default overhead, latency and slice) beside plan's time of its ``NVLS`` candidate at that
slice (on a ``multimem`` domain the switch-channel program itself,
:mod:`optcoll.sim.nvls_program`, so the ratio is 1; on a SHARP switch NCCL's NVLS as an
aggregation tree), their ratio, the CPU seconds of each, and ``(N + 1) / N``: the bytes a
switch channel's ``glres`` puts on each GPU link per byte of a SHARP switch's tree.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table
from optcoll.core.sizes import parse_size, size_text
from optcoll.export.mscclpp_nvls import mscclpp_nvls_plan
from optcoll.sim.nvls_program import program_quotient
from optcoll.sim.programs import simulate_mscclpp
from optcoll.sim.simulator import SimOptions
from optcoll.sim.size_plan import candidates
from optcoll.topologies import build
from optcoll.verify.mscclpp import verify_plan
from optcoll.verify.mscclpp.plan import parse_plan

SPECS = ("dgx-h100:1,nvls=1", "star:8,sharp=1")
SIZES = ("64K", "1M", "16M", "256M", "1G")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=list(SPECS))
    parser.add_argument("--sizes", nargs="+", default=list(SIZES))
    args = parser.parse_args(argv)
    rows = []
    for spec in args.specs:
        topology = build(spec)
        start = time.process_time()
        document = mscclpp_nvls_plan(topology).document
        written = time.process_time() - start
        start = time.process_time()
        report = verify_plan(document)
        checked = time.process_time() - start
        assert report.ok and report.judged, report.findings[:3]
        plan = parse_plan(document)
        (candidate,) = [c for c in candidates(topology, "allreduce") if c.method == "NVLS"]
        sim = SimOptions()
        network = sim.network(topology)
        n = topology.num_compute
        quotient = program_quotient(topology, network)
        for text in args.sizes:
            size = parse_size(text)
            start = time.process_time()
            file_us = simulate_mscclpp(plan, topology, network, size).time_us
            file_cpu = time.process_time() - start
            start = time.process_time()
            if candidate.program is not None:
                graph = candidate.program.tasks(network, size, sim.slice_bytes, quotient)
                ties = None if quotient is None else range(len(graph))
            else:
                graph, ties = candidate.tasks(network, size, sim.slice_bytes), None
            plan_us = sim.run(graph, network, size, ties=ties).time_us
            plan_cpu = time.process_time() - start
            rows.append(
                [
                    spec,
                    size_text(size),
                    f"{plan_us:.3f}",
                    f"{file_us:.3f}",
                    f"{file_us / plan_us:.4f}",
                    f"{plan_cpu:.2f}",
                    f"{file_cpu:.2f}",
                    f"{(n + 1) / n:.4f}",
                    f"{written:.2f}",
                    f"{checked:.2f}",
                ]
            )
    print_table(
        [
            "topology",
            "size",
            "plan NVLS µs",
            "plan file µs",
            "ratio",
            "plan s",
            "file s",
            "(N+1)/N",
            "write s",
            "check s",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
