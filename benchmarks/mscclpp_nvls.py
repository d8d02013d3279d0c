"""Benchmark: the in-network (NVLS) allreduce as an MSCCL++ switch-channel plan, simulated,
against plan's time for the in-network schedule it carries.

Run from the repository root::

    python -m benchmarks.mscclpp_nvls [--specs dgx-h100:1,nvls=1 ...] [--sizes 1M 1G]

For each topology with one NVLS domain it writes the plan
(:func:`optcoll.export.mscclpp_nvls.mscclpp_nvls_plan`, out of place), times the writer and
``check-plan`` (CPU seconds), and at each size prints the simulator's time of the plan
file (:func:`optcoll.sim.programs.mscclpp_tasks`, default overhead, latency and slice)
beside plan's time of its ``NVLS`` candidate (NCCL's NVLS as aggregation trees, with the
switch-channel program's barriers on a ``multimem`` domain: :class:`optcoll.sim.size_plan.
Candidate`, at plan's first slice), their ratio, and ``(N + 1) / N``: the bytes a switch
channel's ``glres`` puts on each GPU link per byte of a SHARP switch's tree (plan's
``multimem`` trees carry them too).
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
from optcoll.sim.programs import mscclpp_tasks
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
        for text in args.sizes:
            size = parse_size(text)
            file_us = sim.run(mscclpp_tasks(plan, topology, network, size), network, size).time_us
            graph = candidate.tasks(network, size, sim.slice_bytes)
            plan_us = sim.run(graph, network, size).time_us
            rows.append(
                [
                    spec,
                    size_text(size),
                    f"{plan_us:.3f}",
                    f"{file_us:.3f}",
                    f"{file_us / plan_us:.4f}",
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
            "(N+1)/N",
            "write s",
            "check s",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
