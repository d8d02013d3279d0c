"""Benchmark: the optimal time of concurrent process groups (``bound --groups``), both LP forms.

Run from the repository root::

    python -m benchmarks.groups [--cases dgx-a100:16/blocks:8/members ...]
                                [--forms columns edge] [--largest dgx-h100:16/strided:16/any ...]

Every case (``SPEC/GROUPS/RELAY``) runs :func:`optcoll.groups.bounds.groups_bound`
once per LP form, each in a fresh interpreter (so that peak memory is its own),
side by side:

* **columns**: the tree-column form (:mod:`optcoll.groups.tree_columns`, column
  generation over trees of paths, exact pricing by shortest paths and Edmonds);
* **edge**: the edge form (:mod:`formulations.groups`, one flow per group, root
  and member).

Both use the useful-link pruning, the split into classes of link-sharing groups
(a class of one group needs no LP at all) and symmetry, and both are exact: the
run fails if their t* differ. The table shows t*, the classes and the largest,
wall and CPU seconds, peak resident memory and the CPU ratio edge / columns.
Targets: dgx-a100:16 with ``blocks:8`` and with ``strided:16`` under 30 s each;
dgx-h100:128 with 128 TP groups (``blocks:8``) and 8 DP groups of 128
(``strided:128``) under 10 minutes. ``--largest`` runs bigger cases (columns
only, 600 s limit each) in the order given until one does not finish.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, run_child

CASES = [
    "dgx-a100:16/blocks:8/members",
    "dgx-a100:16/strided:16/members",
    "dgx-a100:16/blocks:8/any",
    "dgx-a100:16/strided:16/any",
    "dgx-a100:4/strided:4/any",
    "dgx-a100:8/strided:8/any",
    "fat-tree:leaves=4,hosts=4,spines=2,oversub=2/strided:4/members",
    "dgx-h100:128/blocks:8/members",
    "dgx-h100:128/strided:128/members",
]
TARGETS = {
    "dgx-a100:16/blocks:8/members": 30.0,
    "dgx-a100:16/strided:16/members": 30.0,
    "dgx-h100:128/blocks:8/members": 600.0,
    "dgx-h100:128/strided:128/members": 600.0,
}
FORMS = ("columns", "edge")
LIMIT = 600.0

_CHILD = """
import json, resource, sys, time
from optcoll.io import load_topology
from optcoll.groups.bounds import groups_bound
from optcoll.io.process_groups import parse_groups
spec, text, relay, form = sys.argv[1:5]
topology = load_topology(spec)
wall, cpu = time.perf_counter(), time.process_time()
groups = parse_groups(topology, text, relay)
bound = groups_bound(groups, form=form)
classes = groups.sharing_components()
out = {"groups": len(groups.groups), "t": str(bound.time_factor), "classes": len(classes),
       "largest": max(len(c) for c in classes), "by": bound.method}
out["wall"], out["cpu"] = time.perf_counter() - wall, time.process_time() - cpu
out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_one(case: str, form: str, limit: float = LIMIT) -> dict | None:
    """One case in a fresh interpreter; None if it does not finish within ``limit`` seconds."""
    return run_child(_CHILD, [*case.rsplit("/", 2), form], limit)


def _cell(result: dict | None) -> str:
    if result is None:
        return f"over {LIMIT:.0f} s"
    return f"{result['wall']:.1f} / {result['cpu']:.2f} / {result['maxrss_mib']:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=CASES)
    parser.add_argument("--forms", nargs="+", choices=FORMS, default=list(FORMS))
    parser.add_argument("--largest", nargs="*", default=[])
    args = parser.parse_args(argv)
    rows, failures = [], []
    for case in args.cases:
        start = time.perf_counter()
        results = {form: run_one(case, form) for form in args.forms}
        done = [r for r in results.values() if r is not None]
        if not done:
            failures.append(case)
            rows.append([case, "-", "-", "-", "-", *map(_cell, results.values()), "-", "-"])
            continue
        first = done[0]
        agree = len({r["t"] for r in done}) == 1
        target = TARGETS.get(case)
        columns = results.get("columns")
        met = target is None or (columns is not None and columns["wall"] < target)
        if not agree or not met:
            failures.append(case)
        edge = results.get("edge")
        ratio = f"{edge['cpu'] / columns['cpu']:.1f}x" if edge and columns else "-"
        rows.append(
            [
                case,
                first["groups"],
                f"{first['classes']} (largest {first['largest']})",
                first["t"] if agree else "DIFFER: " + ", ".join(r["t"] for r in done),
                first["by"],
                *map(_cell, results.values()),
                ratio,
                "-" if target is None else f"< {target:.0f} s: {'ok' if met else 'MISSED'}",
            ]
        )
        print(f"{case}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print_table(
        [
            "case",
            "groups",
            "classes",
            "t*",
            "by",
            *(f"{form}: wall s / CPU s / MiB" for form in args.forms),
            "CPU edge/columns",
            "target (columns wall)",
        ],
        rows,
    )
    for case in args.largest:
        r = run_one(case, "columns")
        if r is None:
            print(f"{case}: did not finish in {LIMIT:.0f} s")
            break
        print(
            f"{case}: {r['groups']} groups in {r['classes']} classes (largest {r['largest']}), "
            f"t* = {r['t']} ({r['by']}), wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, "
            f"peak {r['maxrss_mib']:.0f} MiB"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
