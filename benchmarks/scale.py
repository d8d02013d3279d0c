"""Benchmark: ``optcoll bound`` at the sizes clusters are built (issue #40, item 3).

Run from the repository root::

    python -m benchmarks.scale [--baseline ../old-checkout] [--specs SPEC ...]

Each topology is built and bounded (:func:`optcoll.bounds.cut_ratio.optimal_cut_ratio`,
certificate check included) in a fresh process, so its peak resident set
(``ru_maxrss``) is its own. Printed per topology: GPUs, nodes, directed links, CPU
seconds to build and to bound, peak RSS, r*, max-flows and the declared symmetry
generators used. With ``--baseline DIR`` the same runs on the code of another checkout
(``git worktree add /tmp/scale-base main``) are printed beside, with the CPU ratio; a
topology that code refuses is shown as refused (``--lift`` raises its size limits, to
measure it anyway).

With ``--plan`` it runs ``optcoll plan``'s work instead (candidates and plan at 1 KiB,
1 MiB and 1 GiB, allgather, CLI defaults) on :data:`PLAN_SPECS`, printing CPU seconds,
peak RSS and the winner at each size; a baseline run not done within ``--limit`` wall
seconds is shown with the CPU seconds it had spent. Target: a dragonfly of 1,024 routers
(``dragonfly:a=16,p=1,h=8,g=64``) < 60 CPU s.

Targets: 32,768 GPUs (``dgx-h100:4096``; a rail-optimised fat-tree of 4,096 DGX-like
servers; a dragonfly of 1,024 routers with 32 hosts each) < 30 CPU s; 100,000 GPUs
(``dgx-h100:12500``) < 120 CPU s and < 8 GB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SPECS = (
    "dgx-h100:1024",
    "dgx-h100:2048",
    "dgx-h100:4096",
    "rail-fat-tree:servers=4096,gpus=8,per_leaf=32,spines=32",
    "dragonfly:a=16,p=8,h=8,g=64",
    "dragonfly:a=16,p=32,h=8,g=64",
    "dgx-h100:12500",
)

#: The topologies of ``--plan``.
PLAN_SPECS = ("dragonfly:a=16,p=1,h=8,g=64",)

#: Run in the checkout's root: candidates and plan at three sizes, one JSON line.
_PLAN_PROGRAM = """
import json, resource, sys, time
from optcoll.sim.size_plan import candidates, plan
from optcoll.topologies import build
start = time.process_time()
topology = build(sys.argv[1])
rows = plan(topology, "allgather", [2**10, 2**20, 2**30], options=candidates(topology))
print(json.dumps({
    "gpus": topology.num_compute, "cpu_s": time.process_time() - start,
    "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "winners": [[r.method, round(r.time_us, 3), round(r.ratio, 4)] for r in rows],
}))
"""

#: Run in the checkout's root: build, bound, report as one JSON line.
_PROGRAM = """
import json, resource, sys, time
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.exceptions import OptCollError
from optcoll.topologies import build
if sys.argv[2:] == ["lift"]:  # the previous code's size limits raised, to measure it
    import optcoll.core.limits as limits
    limits.MAX_NODES, limits.MAX_LINKS = 250_000, 1_000_000
start = time.process_time()
try:
    topology = build(sys.argv[1])
except OptCollError as err:
    print(json.dumps({"refused": str(err)}))
    raise SystemExit
built = time.process_time()
result = optimal_cut_ratio(topology)
done = time.process_time()
print(json.dumps({
    "gpus": topology.num_compute, "nodes": len(topology.nodes),
    "links": len(topology.capacity), "build_s": built - start, "bound_s": done - built,
    "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "ratio": str(result.ratio), "max_flows": result.stats.get("max_flows"),
    "generators": result.stats.get("declared_generators", 0),
}))
"""


def run(checkout: Path, spec: str, lift: bool = False) -> dict:
    """One build-and-bound of ``spec`` on the code of ``checkout``, in a fresh process
    (with ``lift``, its size limits raised to this code's)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, spec, *(["lift"] if lift else [])],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_plan(checkout: Path, spec: str, limit: float) -> dict:
    """``candidates`` + ``plan`` of ``spec`` on the code of ``checkout`` in a fresh
    process; killed after ``limit`` wall seconds (then only its CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PLAN_PROGRAM, spec],
            cwd=checkout,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"},
            timeout=limit,
        )
    except subprocess.TimeoutExpired:  # killed and waited for: its CPU is counted
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return {"unfinished_cpu_s": spent}
    return json.loads(done.stdout.strip().splitlines()[-1])


def plan_rows(specs: list[str], baseline: Path | None, limit: float) -> None:
    """Print the ``--plan`` rows (ours, and the baseline's beside)."""
    print(f"{'topology':34} {'GPUs':>6} {'CPU s':>7} {'RSS MiB':>8}  winners (1K, 1M, 1G)")
    for spec in specs:
        ours = run_plan(ROOT, spec, limit)
        if "unfinished_cpu_s" in ours:
            line = f"{spec:34} {'-':>6} > {ours['unfinished_cpu_s']:.1f} (not in {limit:.0f} s)"
        else:
            winners = ", ".join(f"{m} {t} µs (x{r})" for m, t, r in ours["winners"])
            line = (
                f"{spec:34} {ours['gpus']:>6} {ours['cpu_s']:>7.1f} {ours['rss_mib']:>8.0f}  "
                f"{winners}"
            )
        if baseline is not None:
            base = run_plan(baseline, spec, limit)
            if "unfinished_cpu_s" in base:
                line += f"   | base: not done in {limit:.0f} s wall, > {base['unfinished_cpu_s']:.1f} CPU s"
            else:
                line += f"   | base: {base['cpu_s']:.1f} CPU s, {base['rss_mib']:.0f} MiB"
        print(line, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    parser.add_argument("--specs", nargs="+", default=list(SPECS))
    parser.add_argument(
        "--lift",
        action="store_true",
        help="raise the baseline's size limits to 250,000 nodes and 1,000,000 links",
    )
    parser.add_argument("--plan", action="store_true", help="time plan on PLAN_SPECS instead")
    parser.add_argument("--limit", type=float, default=600.0, help="wall seconds per plan run")
    args = parser.parse_args(argv)
    if args.plan:
        specs = list(PLAN_SPECS) if args.specs == list(SPECS) else args.specs
        plan_rows(specs, args.baseline, args.limit)
        return
    print(
        f"{'topology':58} {'GPUs':>7} {'nodes':>7} {'links':>8} {'build s':>8} "
        f"{'bound s':>8} {'RSS MiB':>8} {'flows':>6} {'gens':>5}  r*"
        + ("   | base: build+bound s, RSS MiB, flows, CPU ratio" if args.baseline else "")
    )
    for spec in args.specs:
        ours = run(ROOT, spec)
        line = (
            f"{spec:58} {ours['gpus']:>7} {ours['nodes']:>7} {ours['links']:>8} "
            f"{ours['build_s']:>8.2f} {ours['bound_s']:>8.2f} {ours['rss_mib']:>8.0f} "
            f"{ours['max_flows']:>6} {ours['generators']:>5}  {ours['ratio']}"
        )
        if args.baseline:
            base = run(args.baseline, spec, args.lift)
            if "refused" in base:
                line += "   | base: refused (size limit)"
            else:
                assert base["ratio"] == ours["ratio"], (spec, base["ratio"], ours["ratio"])
                theirs = base["build_s"] + base["bound_s"]
                ratio = theirs / (ours["build_s"] + ours["bound_s"])
                line += (
                    f"   | base: {theirs:.2f} s, {base['rss_mib']:.0f} MiB, "
                    f"{base['max_flows']} flows, {ratio:.1f}x"
                )
        print(line, flush=True)


if __name__ == "__main__":
    main()
