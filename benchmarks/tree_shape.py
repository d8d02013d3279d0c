"""Benchmark: tree shape at the same time factor, shaped trees against the packer's own.

Run from the repository root::

    python -m benchmarks.tree_shape [--specs dgx-a100:2 mi250:2 ...] [--repeat 3]

For every topology (a spec, optionally ``@K`` for a fixed ``k``), builds the allgather
schedule with :func:`optcoll.schedules.packing.pack_arborescences` twice in one run, with
``shape=False`` (the packer's trees) and ``shape=True`` (the default,
:func:`optcoll.schedules.tree_shape.shorten_trees`), and prints the CPU seconds of each
(``time.process_time``, best of ``--repeat``), the max/mean tree height, the most
distinct peers of one GPU, the deepest root-to-node latency of the schedule
(µs, :func:`optcoll.sim.cost_model.schedule_cost`) and the latency lower bound
(:func:`optcoll.schedules.tree_shape.latency_lower_bound` on the same
:func:`optcoll.core.cost.link_latencies`). It fails unless both time
factors are exactly equal and both schedules pass
:func:`optcoll.verify.schedule.verify_schedule` at that factor.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table
from optcoll.core.cost import link_latencies
from optcoll.io import load_topology
from optcoll.schedules.packing import pack_arborescences
from optcoll.schedules.tree_shape import latency_lower_bound, peer_counts
from optcoll.sim.cost_model import schedule_cost
from optcoll.verify.schedule import verify_schedule

SPECS = ["dgx-a100:2", "dgx-a100:2@8", "mi250:2", "mi250:4", "dgx-a100:16", "dgx-a100:32"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies (spec[@K])")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per variant")
    args = parser.parse_args(argv)
    rows, failures = [], []
    for spec in args.specs:
        name, _, chunks = spec.partition("@")
        topology = load_topology(name)
        k = int(chunks) if chunks else None
        bound = latency_lower_bound(topology, link_latencies(topology))
        results = {}
        for shape in (False, True):
            seconds = []
            for _ in range(max(1, args.repeat)):
                started = time.process_time()
                schedule = pack_arborescences(topology, k, shape=shape)
                seconds.append(time.process_time() - started)
            verdict = verify_schedule(
                topology, schedule, optimum=schedule.time_factor, require_optimal=True
            )
            if not verdict.valid:
                failures.append(f"{spec} shape={shape}: {verdict.problems}")
            packing = [
                (t.root, t.chunks, [(e.src, e.dst) for e in t.edges]) for t in schedule.trees
            ]
            results[shape] = (schedule, min(seconds), max(peer_counts(packing).values()))
        (plain, plain_s, plain_peers), (shaped, shaped_s, shaped_peers) = (
            results[False],
            results[True],
        )
        if plain.time_factor != shaped.time_factor:
            failures.append(f"{spec}: time factor {plain.time_factor} -> {shaped.time_factor}")
        alpha = [schedule_cost(topology, s).alpha for s in (plain, shaped)]
        rows.append(
            (
                spec,
                shaped.k,
                str(shaped.time_factor),
                f"{plain_s:.2f} / {shaped_s:.2f} ({shaped_s / plain_s:.2f}x)",
                f"{plain.stats['max_height']}/{plain.stats['mean_height']}",
                f"{shaped.stats['max_height']}/{shaped.stats['mean_height']}",
                f"{plain_peers} / {shaped_peers}",
                f"{float(alpha[0]):g} / {float(alpha[1]):g}",
                f"{float(bound):g}",
            )
        )
        print(f"done {spec}", file=sys.stderr, flush=True)
    print_table(
        [
            "topology",
            "k",
            "time factor (both)",
            "cpu s plain / shaped",
            "height plain",
            "height shaped",
            "peers plain / shaped",
            "latency us plain / shaped",
            "latency bound us",
        ],
        rows,
    )
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
