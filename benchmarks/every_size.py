"""Benchmark: ``plan``'s ratio to its bound at every size from 1 KiB to 4 GiB (issue #37).

Issue #37's target: from 1 KiB to 4 GiB with a 1 µs overhead (``--overhead 1 --latency
0.5``), plan within 2x of its certified bound at every size, for allgather,
reduce-scatter and allreduce on tori, meshes, DGX clusters and leaf-spines. This script
runs ``python -m optcoll plan SPEC --collective C --sizes ... --overhead 1 --latency 0.5
--json`` in a checkout (``--repo``, default this one; e.g. ``--repo /tmp/base`` for a
worktree of the previous code), one process per (topology, collective), and saves per
size the fastest method, its time, the bound and the ratio, with each process's CPU
seconds, as JSON. ``--table BEFORE.json AFTER.json`` prints the Markdown tables of
``docs/log_step.md``: the ratios before -> after, and the fastest method after.

Run from the repository root::

    python -m benchmarks.every_size --out /tmp/after.json [--repo DIR] [--specs torus:8x8 ...]
    python -m benchmarks.every_size --table /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

SPECS = ("torus:8x8", "mesh:4x4", "dgx-h100:4", "leaf-spine:leaves=4,hosts=8,spines=4")
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
SIZES = ("1K", "4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M", "256M", "1G", "4G")
REPO = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(repo: Path, specs: list[str], collectives: list[str], sizes: list[str]) -> list[Any]:
    """Per (topology, collective): plan's rows and the CPU seconds of its process."""
    results = []
    for spec in specs:
        for collective in collectives:
            command = [sys.executable, "-m", "optcoll", "plan", spec, "--collective", collective]
            command += ["--sizes", *sizes, "--overhead", "1", "--latency", "0.5", "--json"]
            start = _children_cpu()
            done = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=True)
            cpu = _children_cpu() - start
            rows = [
                {k: row[k] for k in ("bytes", "method", "time_us", "lower_bound_us", "ratio")}
                for row in json.loads(done.stdout)["sizes"]
            ]
            results.append({"spec": spec, "collective": collective, "cpu_s": cpu, "rows": rows})
            print(f"{spec} {collective}: {cpu:.1f} CPU s", file=sys.stderr)
    return results


def _name(spec: str) -> str:
    return "leaf-spine 4x8" if spec.startswith("leaf-spine") else spec.replace(":", " ")


def _size(size: int) -> str:
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if size >= scale:
            return f"{size // scale}{unit}"
    return str(size)


def table(before: list[Any], after: list[Any]) -> str:
    """The Markdown tables: ratio before -> after per size, then the fastest method after."""
    old = {(r["spec"], r["collective"]): r for r in before}
    sizes = [_size(row["bytes"]) for row in after[0]["rows"]]
    head = "| topology, collective | " + " | ".join(sizes) + " | CPU s |"
    rule = "|---" * (len(sizes) + 2) + "|"
    ratios, methods = [head, rule], [head.replace(" CPU s |", " max |"), rule]
    for result in after:
        key = (result["spec"], result["collective"])
        label = f"{_name(result['spec'])}, {result['collective'].replace('_', '-')}"
        was = old.get(key)
        cells = []
        for i, row in enumerate(result["rows"]):
            new = row["ratio"]
            if was is None:
                cells.append(f"{new:.2f}")
                continue
            prior = was["rows"][i]["ratio"]
            mark = "**" if new < prior * 0.995 else ""
            cells.append(f"{prior:.2f} → {mark}{new:.2f}{mark}")
        cpu = f"{was['cpu_s']:.1f} / {result['cpu_s']:.1f}" if was else f"{result['cpu_s']:.1f}"
        ratios.append(f"| {label} | " + " | ".join(cells) + f" | {cpu} |")
        worst = max(row["ratio"] for row in result["rows"])
        names = [row["method"] for row in result["rows"]]
        methods.append(f"| {label} | " + " | ".join(names) + f" | {worst:.2f} |")
    return "\n".join(ratios) + "\n\n" + "\n".join(methods) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to run")
    parser.add_argument("--specs", nargs="+", default=SPECS)
    parser.add_argument("--collectives", nargs="+", default=COLLECTIVES)
    parser.add_argument("--sizes", nargs="+", default=SIZES)
    parser.add_argument("--out", type=Path, help="where to save the JSON")
    parser.add_argument("--table", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.table:
        before, after = (json.loads(p.read_text()) for p in args.table)
        print(table(before, after), end="")
        return
    results = run(args.repo, args.specs, args.collectives, args.sizes)
    text = json.dumps(results, indent=1)
    if args.out is not None:
        args.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
