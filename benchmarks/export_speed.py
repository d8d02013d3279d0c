"""CPU seconds of ``optcoll export --size S`` (plan at S, then plan's fastest candidates
written, checked and simulated as files), here and in another checkout.

    python -m benchmarks.export_speed [--specs torus:4x4x8 ...] [--format mscclpp]
        [--size 1M] [--against /path/to/other/checkout]

Each export runs in a subprocess of the checkout's own code (``python -m optcoll`` with
that checkout as the working directory); its CPU seconds (user + system) and peak memory
(maximum resident set), from ``os.wait4`` of that subprocess, are printed side by side
with their ratios. Measured in ``docs/mscclpp.md``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds(checkout: Path, spec: str, fmt: str, size: str) -> tuple[float, float]:
    """CPU seconds and peak memory (GB) of one export in ``checkout`` (a failed export
    raises)."""
    suffix = {"msccl": ".xml", "mscclpp": ".json", "chakra": ""}[fmt]
    with tempfile.TemporaryDirectory() as folder:
        child = subprocess.Popen(
            [sys.executable, "-m", "optcoll", "export", spec, "--format", fmt, "--size", size,
             "-o", str(Path(folder) / f"out{suffix}")],
            cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert child.stderr is not None
        errors = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise subprocess.CalledProcessError(child.returncode, child.args, stderr=errors)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 2**20  # ru_maxrss: KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=["torus:4x4x4", "torus:4x4x8"])
    parser.add_argument("--format", default="mscclpp", choices=("msccl", "mscclpp", "chakra"))
    parser.add_argument("--size", default="1M")
    parser.add_argument("--against", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args()
    print(f"{'topology':<14} {'here (CPU s, GB)':>17} {'against':>14} {'ratios':>12}")
    for spec in args.specs:
        here, memory = cpu_seconds(ROOT, spec, args.format, args.size)
        shown = ratio = ""
        if args.against is not None:
            other, other_memory = cpu_seconds(args.against, spec, args.format, args.size)
            shown = f"{other:.1f}, {other_memory:.2f}"
            ratio = f"{other / here:.1f}x, {other_memory / memory:.1f}x"
        print(f"{spec:<14} {f'{here:.1f}, {memory:.2f}':>17} {shown:>14} {ratio:>12}", flush=True)


if __name__ == "__main__":
    main()
