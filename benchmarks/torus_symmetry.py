"""Tori at pod scale: ``trees`` and ``bound`` side by side with another checkout, one run.

Each case runs in a fresh process (``python -m optcoll``) under ``PYTHONPATH`` of
each code (this worktree, and ``--base DIR``, e.g. a ``git worktree add /tmp/base
<commit>``), with a CPU-time limit; reported: CPU seconds (user + system of the
child), peak RSS, and for ``trees`` the schedule's max height, eccentricity and
time factor, then ``verify`` of the written schedule (exact, at its stated factor;
how: ``compact`` from the representatives and the group's generators, or ``full``), and
with ``--full`` also ``verify --full`` (every tree walked) in the codes that have it.

Usage: ``python benchmarks/torus_symmetry.py [--base DIR] [--limit SECONDS] [--full] [CASE ...]``
with cases like ``trees:torus:32x32`` or ``bound:torus:128x128``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = [
    "trees:torus:16x16",
    "trees:torus:32x32",
    "trees:torus:64x64",
    "trees:torus:16x16x16",
    "bound:torus:128x128",
]


def run(code: Path, argv: list[str], limit: float) -> tuple[float, int, dict | None]:
    """CPU seconds, peak RSS (MB) and the JSON output of ``optcoll argv`` under ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONSAFEPATH": ""}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "optcoll", *argv],
            env=env,
            cwd=code,  # python -m puts the working directory first on sys.path
            capture_output=True,
            text=True,
            timeout=limit,
        )
        output = json.loads(done.stdout) if done.returncode in (0, 1) else None  # 1: invalid
    except (subprocess.TimeoutExpired, json.JSONDecodeError):
        output = None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_maxrss // 1024, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="another checkout to compare with")
    parser.add_argument("--limit", type=float, default=600, help="seconds per case")
    parser.add_argument("--full", action="store_true", help="also time verify --full")
    parser.add_argument("cases", nargs="*", default=CASES)
    args = parser.parse_args()
    codes = {"this": Path(__file__).resolve().parent.parent}
    if args.base:
        codes["base"] = args.base.resolve()
    for case in args.cases:
        command, spec = case.split(":", 1)
        for label, code in codes.items():
            with tempfile.TemporaryDirectory() as folder:
                out = str(Path(folder) / "s.json")
                argv = [command, spec, "--json"] + (["-o", out] if command == "trees" else [])
                cpu, rss, result = run(code, argv, args.limit)
                line = f"{case:26} {label:5} {cpu:8.2f} CPU s  peak RSS {rss:6d} MB"
                if result is None:
                    print(f"{line}  did not finish (limit {args.limit:.0f} s)", flush=True)
                    continue
                if command == "trees":
                    line += (
                        f"  height {result['max_height']}"
                        f" (eccentricity {result.get('max_eccentricity', '-')})"
                        f"  ratio to r* {result['ratio_to_optimum']}"
                    )
                    vcpu, vrss, verdict = run(code, ["verify", spec, out, "--json"], args.limit)
                    valid = "did not finish" if verdict is None else verdict.get("valid")
                    how = "-" if verdict is None else verdict.get("method", "full")
                    line += f"  verify {vcpu:.2f} CPU s {vrss} MB valid={valid} ({how})"
                    if args.full and label == "this":
                        argv = ["verify", spec, out, "--json", "--full"]
                        vcpu, vrss, verdict = run(code, argv, args.limit)
                        valid = "did not finish" if verdict is None else verdict.get("valid")
                        line += f"  verify --full {vcpu:.2f} CPU s {vrss} MB valid={valid}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
