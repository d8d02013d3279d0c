"""Benchmark: uneven all-to-all (issue 39): exact optimum, re-planning, MoE schedules.

Run from the repository root::

    python -m benchmarks.alltoallv [--exact dgx-h100:8 dgx-h100:16] [--cold dgx-h100:64]
                                   [--replan dgx-h100:8] [--moe dgx-h100:8] [--limit 170]

Every measurement runs in a fresh subprocess, so its peak resident memory is its own.
The demand is the MoE dispatch of :class:`optcoll.core.moe.MoeSpec` (4096 tokens per rank,
hidden 7168, bf16, 256 experts, top-8, Zipf exponent 1.2, seed 0; DeepSeek-V3's sizes).

* ``--exact``: the certified optimum (:func:`optcoll.schedules.alltoallv.proved_optimum`,
  ``--methods auto`` (a cut met by the spray, else column generation), ``columns``
  (column generation over trees) and ``lp`` (the edge LP)), for ``--kinds`` of demand
  (``moe``; ``mixed``: random pairs, 20 times more inside a box, where the spray is not
  optimal): CPU and wall seconds, LP size, peak MiB (target: 64 GPUs < 10 s; 512 GPUs
  < 120 s and < 4 GB), each within ``--limit`` seconds; with ``--reference DIR`` the same
  in that checkout (the previous revision) beside it.
* ``--cold``: no LP: the better baseline and the cut bound, the gap certified.
* ``--replan``: the optimum of step 0, then steps 1-3 re-planned from it
  (:func:`optcoll.schedules.replan.replan`): CPU seconds and certified gap, and the
  exact optimum of each step for the true ratio (target: < 0.5 s within 5 %).
* ``--moe``: optimum, our schedule, direct (NCCL), hierarchical (DeepEP) and FLASH's
  Birkhoff phases in the bandwidth model and in the event simulator (phases in sequence).
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, run_child

MOE = "tokens=4096,hidden=7168,dtype_bytes=2,experts=256,top_k=8,zipf=1.2,seed=0"

_EXACT = """
import json, random, resource, sys, time
from optcoll.io import load_topology
from optcoll.core.demand import demand_matrix
from optcoll.core.moe import moe_demand, parse_moe_spec
from optcoll.schedules.alltoallv import proved_optimum
spec, moe, method, kind = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
topology = load_topology(spec)
if kind == "moe":
    demand = moe_demand(parse_moe_spec(moe), topology.compute_nodes)
else:  # mixed: random pairs, 20 times more inside a box (tensor + expert parallel)
    rng, n = random.Random(0), topology.num_compute
    box = [topology.node[v].group for v in topology.compute_nodes]
    demand = demand_matrix([[0 if i == j else rng.randrange(1, 10**6) * (20 if box[i] == box[j] else 1)
                             for j in range(n)] for i in range(n)], topology.compute_nodes)
wall, cpu = time.perf_counter(), time.process_time()
o = proved_optimum(topology, demand, method)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
lp = o.report is not None
stats = getattr(o, "stats", {}) or {}
print(json.dumps({"n": topology.num_compute, "time_us": o.time_us, "wall": wall, "cpu": cpu,
    "method": o.method, "variables": o.report.num_variables if lp else 0,
    "constraints": o.report.num_constraints if lp else 0, "rows": stats.get("lp_rows", 0),
    "columns": stats.get("columns", 0), "rounds": stats.get("rounds", 0),
    "cut_explains": o.cut_bound == o.time_factor, "certified": o.certificate_bound == o.time_factor,
    "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_COLD = """
import json, resource, sys, time
from optcoll.io import load_topology
from optcoll.core.moe import moe_demand, parse_moe_spec
from optcoll.schedules.replan import replan, replan_basis
spec, moe = sys.argv[1], sys.argv[2]
topology = load_topology(spec)
demand = moe_demand(parse_moe_spec(moe), topology.compute_nodes)
wall, cpu = time.perf_counter(), time.process_time()
basis = replan_basis(topology)
plan = replan(basis, demand)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({"n": topology.num_compute, "wall": wall, "cpu": cpu, **plan.to_dict(),
    "candidates": plan.schedule.stats["candidates"],
    "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_REPLAN = """
import json, sys, time
from optcoll.io import load_topology
from optcoll.core.moe import moe_demand, parse_moe_spec
from optcoll.schedules.alltoallv import proved_optimum
from optcoll.schedules.replan import replan, replan_basis
spec, moe = sys.argv[1], sys.argv[2]
topology = load_topology(spec)
demand = moe_demand(parse_moe_spec(moe), topology.compute_nodes)
cpu = time.process_time()
basis = replan_basis(topology, proved_optimum(topology, demand, sys.argv[3]))
out = {"basis_cpu": time.process_time() - cpu, "steps": []}
for step in (1, 2, 3):
    new = moe_demand(parse_moe_spec(moe + f",step={step}"), topology.compute_nodes)
    wall, cpu = time.perf_counter(), time.process_time()
    plan = replan(basis, new)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    exact = proved_optimum(topology, new).time_factor
    out["steps"].append({"step": step, "cpu": cpu, "wall": wall, **plan.to_dict(),
        "gap_float": float(plan.gap), "true_ratio": float(plan.schedule.time_factor / exact),
        "bound_is_exact": plan.lower_bound == exact})
print(json.dumps(out))
"""

_MOE = """
import json, sys, time
from optcoll.io import load_topology
from optcoll.core.moe import moe_demand, parse_moe_spec
from optcoll.schedules.alltoallv import proved_optimum
from optcoll.schedules.alltoallv import demand_schedule
from optcoll.sim.demand import simulate_demand_phases, simulate_demand_schedule
spec, moe = sys.argv[1], sys.argv[2]
topology = load_topology(spec)
out = {}
for phase in ("dispatch", "combine"):
    demand = moe_demand(parse_moe_spec(moe + f",phase={phase}"), topology.compute_nodes)
    o = proved_optimum(topology, demand, "columns")
    rows = {"optimum": {"bandwidth_us": o.time_us}}
    for method in ("optimal", "spray", "hierarchical", "direct", "birkhoff", "flash"):
        s = demand_schedule(topology, demand, method, optimum=o)
        cpu = time.process_time()
        if s.phases:
            simulated = simulate_demand_phases(topology, s.phases)
        else:
            simulated = simulate_demand_schedule(topology, s.routes).time_us
        rows[method] = {"bandwidth_us": s.time_us, "simulated_us": simulated,
                        "sim_cpu": time.process_time() - cpu, "paths": sum(len(r.paths) for r in s.routes),
                        "phases": len(s.phases)}
    out[phase] = {"total_bytes": demand.total_bytes, "rows": rows}
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exact", nargs="*", default=["dgx-h100:8", "dgx-h100:16", "dgx-h100:64"])
    parser.add_argument(
        "--methods", nargs="+", default=["auto", "columns", "lp"], help="proved_optimum's"
    )
    parser.add_argument(
        "--kinds",
        nargs="+",
        default=["moe"],
        choices=("moe", "mixed"),
        help="--exact's demands: the MoE dispatch, or mixed (random, 20x inside a box)",
    )
    parser.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="--exact also in this checkout (e.g. a worktree of the previous revision)",
    )
    parser.add_argument("--cold", nargs="*", default=["dgx-h100:8", "dgx-h100:64"])
    parser.add_argument("--replan", nargs="*", default=["dgx-h100:8"])
    parser.add_argument("--moe", nargs="*", default=["dgx-h100:8"])
    parser.add_argument("--basis", default="lp", help="the re-plan basis's optimum: lp or auto")
    parser.add_argument("--spec", default=MOE, help="the MoE demand (--moe syntax)")
    parser.add_argument("--limit", type=float, default=170.0, help="seconds per child")
    args = parser.parse_args(argv)
    rows = []
    roots = [("this", None)] + ([("reference", args.reference)] if args.reference else [])
    for spec, kind, method, (label, root) in (
        (s, k, m, r) for s in args.exact for k in args.kinds for m in args.methods for r in roots
    ):
        if root is not None and method == "columns":
            continue  # not in the reference
        r = run_child(_EXACT, [spec, args.spec, method, kind], args.limit, root)
        if r is None:
            rows.append([spec, kind, label, method, "-", f"not in {args.limit:.0f} s"] + [""] * 5)
            continue
        size = (
            f"{r['variables']}x{r['constraints']}"
            if r["variables"]
            else f"{r['rows']} rows, {r['columns']} cols, {r['rounds']} rounds"
            if r["rows"]
            else "no LP"
        )
        rows.append(
            [
                spec,
                kind,
                label,
                f"{method}: {r['method']}",
                r["n"],
                f"{r['time_us']:.2f}",
                size,
                f"{r['cpu']:.2f}",
                f"{r['wall']:.2f}",
                f"{r['maxrss_mib']:.0f}",
                f"{r['certified']}, cut explains: {r['cut_explains']}",
            ]
        )
    if rows:
        print_table(
            [
                "spec",
                "demand",
                "code",
                "method",
                "N",
                "optimum us",
                "LP size",
                "CPU s",
                "wall s",
                "peak MiB",
                "certified",
            ],
            rows,
        )
    rows = []
    for spec in args.cold:
        r = run_child(_COLD, [spec, args.spec], args.limit)
        if r is None:
            rows.append([spec, "-", f"did not finish in {args.limit:.0f} s", "", "", "", ""])
            continue
        rows.append(
            [
                spec,
                r["n"],
                r["method"],
                f"{r['time_us']:.2f}",
                f"{float(Fraction(r['gap'])):.4f}",
                f"{r['cpu']:.2f}",
                f"{r['maxrss_mib']:.0f}",
            ]
        )
    if rows:
        print("\ncold start (no LP): best baseline, certified by the cut bound")
        print_table(["spec", "N", "schedule", "time us", "gap", "CPU s", "peak MiB"], rows)
    for spec in args.replan:
        r = run_child(_REPLAN, [spec, args.spec, args.basis], args.limit * 3)
        if r is None:
            print(f"\nre-plan {spec}: did not finish")
            continue
        print(
            f"\nre-plan on {spec} (basis from the step-0 optimum by {args.basis}: "
            f"{r['basis_cpu']:.2f} CPU s)"
        )
        print_table(
            [
                "step",
                "schedule",
                "time us",
                "certified gap",
                "true ratio",
                "bound exact",
                "CPU s",
                "wall s",
            ],
            [
                [
                    s["step"],
                    s["method"],
                    f"{s['time_us']:.2f}",
                    f"{s['gap_float']:.5f}",
                    f"{s['true_ratio']:.5f}",
                    s["bound_is_exact"],
                    f"{s['cpu']:.3f}",
                    f"{s['wall']:.3f}",
                ]
                for s in r["steps"]
            ],
        )
    for spec in args.moe:
        r = run_child(_MOE, [spec, args.spec], args.limit * 2)
        if r is None:
            print(f"\nMoE {spec}: did not finish")
            continue
        for phase, found in r.items():
            print(
                f"\nMoE {phase} on {spec} ({found['total_bytes'] / 2**30:.2f} GiB over the network)"
            )
            best = found["rows"]["optimum"]["bandwidth_us"]
            print_table(
                ["schedule", "bandwidth-model us", "x optimum", "simulated us", "sim CPU s"],
                [
                    [
                        name,
                        f"{x['bandwidth_us']:.1f}",
                        f"{x['bandwidth_us'] / best:.4f}",
                        f"{x.get('simulated_us', 0):.1f}" if "simulated_us" in x else "-",
                        f"{x['sim_cpu']:.2f}" if "sim_cpu" in x else "-",
                    ]
                    for name, x in found["rows"].items()
                ],
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
