"""Benchmark: the exact aggregation-tree LP, started from every apex's cheapest pair or not.

Run from the repository root::

    python -m benchmarks.in_network [--specs dgx-h100:2,nvls=1 ...]

:func:`optcoll.bounds.in_network.aggregation_bound` starts column generation from the
cheapest tree pair of every apex under the prices ``1 / c`` (one oracle call). This
script runs it side by side with the plain start (the oracle's single cheapest pair, as
:func:`optcoll.lp.column_generation.column_generation` does without starting columns),
checks that both prove the same optimum, and prints CPU seconds, pricing rounds and the
ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table
from optcoll.bounds.in_network import SteinerPricing, aggregation_bound
from optcoll.lp.column_generation import column_generation
from optcoll.topologies import build

SPECS = (
    "dgx-h100:1,nvls=1",
    "dgx-h100:1",
    "dgx-h100:2,nvls=1",
    "dgx-h100:2",
    "leaf-spine:leaves=4,hosts=3,spines=1,oversub=4,sharp=1",
)


def _plain(spec: str) -> tuple[object, int]:
    topology = build(spec)
    caps, unit = topology.integer_capacities()
    packing = column_generation(1, caps, SteinerPricing(topology))
    return packing.t / unit, packing.iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=list(SPECS))
    args = parser.parse_args()
    rows = []
    for spec in args.specs:
        start = time.process_time()
        seeded = aggregation_bound(build(spec))
        seeded_cpu = time.process_time() - start
        start = time.process_time()
        optimum, rounds = _plain(spec)
        plain_cpu = time.process_time() - start
        assert optimum == seeded.optimum and seeded.proved, spec
        rows.append(
            (
                spec,
                str(seeded.optimum),
                f"{plain_cpu:.2f}",
                rounds,
                f"{seeded_cpu:.2f}",
                seeded.iterations,
                f"{plain_cpu / seeded_cpu:.1f}x",
            )
        )
    print_table(
        (
            "topology",
            "optimum (per M)",
            "plain CPU s",
            "rounds",
            "every apex CPU s",
            "rounds",
            "ratio",
        ),
        rows,
    )


if __name__ == "__main__":
    main()
