"""Benchmark: the tree shape pass where every tree is already at its latency bound.

Run from the repository root::

    python benchmarks/shape_skip.py [--base DIR] [--limit SECONDS] [SPEC ...]

For every topology, in a fresh process per code (this checkout and ``--base DIR``,
e.g. ``git archive`` of an older commit), packs every root without symmetry
(:func:`optcoll.schedules.packing.pack_arborescences` with ``symmetry=False``),
once with ``shape=False`` and once with the shape pass, and prints the CPU seconds
(``time.process_time``) of each, their difference (the pass), the max tree height
and whether both time factors are equal. On leaf-spine fabrics every tree has
height 2, which no tree can beat, so the pass has nothing to lower.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SPECS = ["leaf-spine:leaves=16,hosts=16,spines=8", "leaf-spine:leaves=32,hosts=32,spines=16"]

_CHILD = """
import json, sys, time
from optcoll.topologies import build
from optcoll.schedules.packing import pack_arborescences
topology = build(sys.argv[1])
result = {}
for shape in (False, True):
    started = time.process_time()
    schedule = pack_arborescences(topology, symmetry=False, shape=shape)
    result[str(shape)] = [time.process_time() - started, schedule.stats["max_height"],
                          str(schedule.time_factor)]
print(json.dumps(result))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="another checkout to compare with")
    parser.add_argument("--limit", type=float, default=1200, help="seconds per case")
    parser.add_argument("specs", nargs="*", default=SPECS)
    args = parser.parse_args()
    codes = {"this": Path(__file__).resolve().parent.parent}
    if args.base:
        codes["base"] = args.base.resolve()
    for spec in args.specs:
        for label, code in codes.items():
            env = {**os.environ, "PYTHONPATH": str(code), "PYTHONSAFEPATH": ""}
            try:
                done = subprocess.run(
                    [sys.executable, "-c", _CHILD, spec],
                    env=env,
                    cwd=code,
                    capture_output=True,
                    text=True,
                    timeout=args.limit,
                )
            except subprocess.TimeoutExpired:
                print(f"{spec:42} {label:5} did not finish (limit {args.limit:.0f} s)", flush=True)
                continue
            if done.returncode:
                print(f"{spec:42} {label:5} failed: {done.stderr.strip().splitlines()[-1]}")
                continue
            plain, shaped = (json.loads(done.stdout)[key] for key in ("False", "True"))
            print(
                f"{spec:42} {label:5} pack {plain[0]:7.2f} CPU s  pack+shape {shaped[0]:7.2f} "
                f"CPU s  shape {shaped[0] - plain[0]:6.2f} CPU s  height {plain[1]} -> "
                f"{shaped[1]}  same time factor {plain[2] == shaped[2]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
