"""Benchmark: the optimal time of concurrent process groups (``bound --groups``) against its targets.

Run from the repository root::

    python -m benchmarks.groups [--cases dgx-a100:16/blocks:8/members ...] [--no-previous]
                                [--largest dgx-h100:32/blocks:8/members ...]

Every case (``SPEC/GROUPS/RELAY``) runs in a fresh interpreter (so that peak
memory is its own), twice, side by side:

* **previous**: one LP over every group at once on every link the relaying
  allows (the concurrent-groups LP before useful-link pruning and the split
  into classes of groups sharing links), refused above the LP's 400,000 flow
  variables as before;
* **current**: :func:`optcoll.groups.groups_bound` (useful links only, each
  class of link-sharing groups solved apart, one-group classes by the exact
  combinatorial bound).

Both values are exact; the table shows them, wall and CPU seconds and peak
resident memory, and the ratio previous / current. Targets: dgx-a100:16 with
``blocks:8`` and with ``strided:16`` under 30 s each. ``--largest`` runs
bigger cases (current only, 600 s limit each) to find the largest that
finishes in 10 minutes.
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
    "dgx-a100:4/strided:4/any",
    "fat-tree:leaves=4,hosts=4,spines=2,oversub=2/strided:4/members",
]
TARGETS = {"dgx-a100:16/blocks:8/members": 30.0, "dgx-a100:16/strided:16/members": 30.0}
LIMIT = 600.0

_CHILD = """
import dataclasses, json, resource, sys, time
from optcoll.io import load_topology
from optcoll.groups import groups_bound, parse_groups
from optcoll.exceptions import MethodError
from optcoll.concurrent_groups import group_commodities
from optcoll.multicommodity import solve_multicommodity
spec, text, relay, method = sys.argv[1:5]
topology = load_topology(spec)
wall, cpu = time.perf_counter(), time.process_time()
groups = parse_groups(topology, text, relay)
out = {"groups": len(groups.groups)}
if method == "current":
    bound = groups_bound(groups)
    out.update(t=str(bound.time_factor), classes=len(groups.sharing_components()),
               binding=len(bound.binding_groups), by=bound.method)
else:
    caps, unit = topology.integer_capacities()
    ks = [dataclasses.replace(k, arcs=None) for _, k in group_commodities(groups, range(len(groups.groups)))]
    size = sum(len(k.demands) * sum(1 for a in caps if k.usable(a)) for k in ks)
    out["flow_variables"] = size
    if size > 400_000:
        out["t"] = None
    else:
        out["t"] = str(solve_multicommodity(topology.node_ids, dict(caps), ks).time / unit)
out["wall"], out["cpu"] = time.perf_counter() - wall, time.process_time() - cpu
out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_one(case: str, method: str, limit: float = LIMIT) -> dict | None:
    """One case in a fresh interpreter; None if it does not finish within ``limit`` seconds."""
    return run_child(_CHILD, [*case.rsplit("/", 2), method], limit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=CASES)
    parser.add_argument("--no-previous", action="store_true")
    parser.add_argument("--largest", nargs="*", default=[])
    args = parser.parse_args(argv)
    rows, failures = [], []
    for case in args.cases:
        start = time.perf_counter()
        now = run_one(case, "current")
        assert now is not None
        before = None if args.no_previous else run_one(case, "previous")
        target = TARGETS.get(case)
        ok = target is None or now["wall"] < target
        if before is not None and before["t"] is not None and before["t"] != now["t"]:
            ok = False
        if not ok:
            failures.append(case)
        if before is None:
            previous = "-"
        elif before["t"] is None:
            previous = f"refused ({before['flow_variables']} variables)"
        else:
            previous = (
                f"{before['t']}: {before['wall']:.1f} s, CPU {before['cpu']:.1f} s, "
                f"{before['maxrss_mib']:.0f} MiB"
            )
        ratio = (
            f"{before['cpu'] / now['cpu']:.1f}x"
            if before is not None and before["t"] is not None
            else "-"
        )
        rows.append(
            [
                case,
                now["groups"],
                now["classes"],
                now["t"],
                now["by"],
                f"{now['wall']:.2f}",
                f"{now['cpu']:.2f}",
                f"{now['maxrss_mib']:.0f}",
                previous,
                ratio,
                "-" if target is None else f"< {target:.0f} s: {'ok' if ok else 'MISSED'}",
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
            "wall s",
            "CPU s",
            "peak MiB",
            "previous (one LP, all allowed links)",
            "CPU ratio",
            "target",
        ],
        rows,
    )
    for case in args.largest:
        r = run_one(case, "current")
        if r is None:
            print(f"{case}: did not finish in {LIMIT:.0f} s")
            break
        print(
            f"{case}: {r['groups']} groups in {r['classes']} classes, t* = {r['t']} ({r['by']}), "
            f"wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, peak {r['maxrss_mib']:.0f} MiB"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
