"""Benchmark: every single-link failure of a cluster, with and without group symmetry.

Run from the repository root::

    python -m benchmarks.resilience [--specs dgx-a100:16 ...] [--kind links]

``optcoll.studies.resilience.failure_study`` solves one failure per class of verified group
swaps (boxes) and derives the rest, re-checking each derived cut exactly. This script
runs it side by side with solving every failure (``symmetry=False``), in this process
(``workers=1``) and on the local process pool (all cores), checks that every run gives
the same exact r* for every failure, and prints wall-clock and CPU seconds (this
process plus its finished worker processes: the machine is shared, so CPU seconds are
the comparable figure).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import cpu_seconds, print_table
from optcoll.io import load_topology
from optcoll.studies.engines import default_workers
from optcoll.studies.resilience import failure_study

SPECS = ["dgx-a100:16"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to run")
    parser.add_argument("--kind", default="links", choices=("links", "nodes", "nics"))
    args = parser.parse_args(argv)
    rows = []
    for spec in args.specs:
        topology = load_topology(spec)
        reference = None
        for symmetry, workers in ((False, 1), (True, 1), (False, None), (True, None)):
            wall, cpu = time.perf_counter(), cpu_seconds()
            study = failure_study(topology, args.kind, symmetry=symmetry, workers=workers)
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            ratios = [(f.failed, f.ratio) for f in study.failures]
            if reference is None:
                reference = ratios
            elif ratios != reference:
                raise SystemExit(f"{spec}: the runs disagree on some failure's r*")
            rows.append(
                [
                    spec,
                    str(len(study.failures)),
                    "yes" if symmetry else "no",
                    str(workers or default_workers()),
                    str(study.solves),
                    f"{wall:.2f}",
                    f"{cpu:.2f}",
                ]
            )
    print_table(
        ["topology", "failures", "symmetry", "processes", "solves", "wall s", "CPU s"], rows
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
