"""Benchmark: does every exported file run in the time ``plan`` prints? (issue #36)

Issue #36's criterion: ``simulate`` of an exported file reproduces plan's time. For each
topology, collective, overhead and size this script runs, in a checkout (``--repo``,
default this one; e.g. ``--repo /tmp/base`` for a worktree of the previous code), one
``python -m optcoll plan ... --json`` for the time plan prints (its fastest candidate;
``plan --format F`` for the MSCCL and MSCCL++ files where the checkout's plan has that
option: their times in the link orders those files carry; ``plan_any_us``: plan's own),
then ``python -m optcoll export ... --size S --format F --json`` per format (MSCCL XML
for the default runtime, MSCCL++, Chakra), which writes the file of plan's choice and
simulates it. It saves per case plan's fastest time, the written method, that method's own
plan time and the file's simulated time, with each process's CPU seconds, as JSON.
``--table FILE.json`` prints the Markdown table of ``docs/measured.md``: file / plan per
format and size (``1.000`` = the file runs in plan's time).

Run from the repository root::

    python -m benchmarks.export_fidelity --out /tmp/after.json [--repo DIR] [--specs ring:8 ...]
        [--collectives allreduce] [--sizes 64K 1M] [--formats mscclpp] [--overheads 1 0]
    python -m benchmarks.export_fidelity --table /tmp/after.json [/tmp/before.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SPECS = ("torus:4x4", "mesh:4x4", "ring:8", "hypercube:4", "dgx-h100:2")
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
SIZES = ("64K", "1M", "16M", "256M")
FORMATS = ("msccl", "mscclpp", "chakra")
OVERHEADS = ("1", "0")
SUFFIX = {"msccl": ".xml", "mscclpp": ".json", "chakra": ""}
REPO = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _optcoll(repo: Path, args: list[str]) -> tuple[dict[str, Any] | None, float, str]:
    """Run ``python -m optcoll ARGS --json`` in ``repo``: its JSON (None if it failed),
    its CPU seconds and its last line of error output."""
    start = _children_cpu()
    done = subprocess.run(
        [sys.executable, "-m", "optcoll", *args, "--json"], cwd=repo, capture_output=True, text=True
    )
    cpu = _children_cpu() - start
    if done.returncode != 0:
        return None, cpu, (done.stderr.strip().splitlines() or [""])[-1]
    return json.loads(done.stdout), cpu, ""


def _written(fmt: str, report: dict[str, Any]) -> dict[str, Any]:
    """The written file's method, its plan time and its simulated time."""
    entry = report["sets"][0] if fmt == "chakra" else report["files"][0]
    return {k: entry.get(k) for k in ("method", "plan_time_us", "file_time_us")}


def run(repo: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every case of the grid, as a list of JSON-ready rows."""
    rows = []
    helped = subprocess.run(
        [sys.executable, "-m", "optcoll", "plan", "--help"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    formats = "--format" in helped.stdout  # plan times each format's files
    with tempfile.TemporaryDirectory() as scratch:
        for spec in args.specs:
            for collective in args.collectives:
                for overhead in args.overheads:
                    timing = ["--overhead", overhead, "--latency", args.latency]
                    planning = ["plan", spec, "--collective", collective, "--sizes", *args.sizes]
                    plan, cpu, error = _optcoll(repo, [*planning, *timing])
                    if plan is None:
                        print(f"{spec} {collective}: plan failed: {error}", file=sys.stderr)
                        continue
                    planned = {}
                    for fmt in args.formats:
                        if fmt != "chakra" and formats:
                            planned[fmt], more, error = _optcoll(
                                repo, [*planning, *timing, "--format", fmt]
                            )
                            cpu += more
                    for i, (size, any_row) in enumerate(
                        zip(args.sizes, plan["sizes"], strict=True)
                    ):
                        for fmt in args.formats:
                            row = planned[fmt]["sizes"][i] if planned.get(fmt) else any_row
                            out = str(Path(scratch) / f"f{len(rows)}")
                            command = ["export", spec, "--collective", collective, "--size", size]
                            command += ["--format", fmt, "-o", out + SUFFIX[fmt], *timing]
                            report, export_cpu, error = _optcoll(repo, command)
                            case = {
                                "spec": spec,
                                "collective": collective,
                                "overhead": overhead,
                                "size": size,
                                "format": fmt,
                                "plan_method": row["method"],
                                "plan_us": row["time_us"],
                                "plan_any_us": any_row["time_us"],
                                "lower_bound_us": row["lower_bound_us"],
                                "cpu_s": round(export_cpu, 2),
                            }
                            if report is None:
                                case["error"] = error
                            else:
                                case.update(_written(fmt, report))
                            rows.append(case)
                            ratio = _ratio(case)
                            shown = f"{ratio:.3f}" if ratio is not None else case.get("error", "-")
                            print(
                                f"{spec} {collective} o={overhead} {size} {fmt}: {shown}",
                                file=sys.stderr,
                            )
                    print(
                        f"{spec} {collective} o={overhead}: plan {cpu:.1f} CPU s", file=sys.stderr
                    )
    return rows


def _ratio(case: dict[str, Any]) -> float | None:
    if case.get("file_time_us") is None or not case.get("plan_us"):
        return None
    return case["file_time_us"] / case["plan_us"]


def table(after: list[dict[str, Any]], before: list[dict[str, Any]] | None = None) -> str:
    """Markdown: one row per (topology, collective, overhead, format); file / plan per size."""
    key = ("spec", "collective", "overhead", "format")
    old = {tuple(c[k] for k in (*key, "size")): c for c in before or []}
    sizes = list(dict.fromkeys(c["size"] for c in after))
    lines = ["| topology, collective, overhead, format | " + " | ".join(sizes) + " |"]
    lines.append("|---" * (len(sizes) + 1) + "|")
    groups: dict[tuple, dict[str, dict[str, Any]]] = {}
    for case in after:
        groups.setdefault(tuple(case[k] for k in key), {})[case["size"]] = case
    for group, cases in groups.items():
        cells = []
        for size in sizes:
            case = cases.get(size)
            ratio = _ratio(case) if case else None
            cell = "-" if ratio is None else f"{ratio:.3f}"
            was = old.get((*group, size))
            if was is not None and _ratio(was) is not None and cell != "-":
                cell = f"{_ratio(was):.3f} → {cell}"
            cells.append(cell)
        spec, collective, overhead, fmt = group
        label = f"{spec}, {collective.replace('_', '-')}, {overhead} µs, {fmt}"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--specs", nargs="+", default=list(SPECS))
    parser.add_argument("--collectives", nargs="+", default=list(COLLECTIVES))
    parser.add_argument("--sizes", nargs="+", default=list(SIZES))
    parser.add_argument("--formats", nargs="+", default=list(FORMATS))
    parser.add_argument("--overheads", nargs="+", default=list(OVERHEADS))
    parser.add_argument("--latency", default="0.5")
    parser.add_argument("--table", nargs="+", type=Path, metavar="JSON")
    args = parser.parse_args()
    if args.table:
        after = json.loads(args.table[0].read_text())
        before = json.loads(args.table[1].read_text()) if len(args.table) > 1 else None
        print(table(after, before))
        return
    if args.out is None:
        parser.error("--out is required unless --table is given")
    rows = run(args.repo, args)
    args.out.write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
