"""CPU seconds of ``optcoll export --size S`` (plan at S, then plan's fastest candidates
written, checked and simulated as files), here and in another checkout.

    python -m benchmarks.export_speed [--specs torus:4x4x8 ...] [--format mscclpp]
        [--size 1M] [--against /path/to/other/checkout]

Each export runs in a subprocess of the checkout's own code (``python -m optcoll`` with
that checkout as the working directory); its CPU seconds (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``) are printed side by side with their ratio.
Measured in ``docs/mscclpp.md``.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds(checkout: Path, spec: str, fmt: str, size: str) -> float:
    """CPU seconds of one export in ``checkout`` (a failed export raises)."""
    suffix = {"msccl": ".xml", "mscclpp": ".json", "chakra": ""}[fmt]
    with tempfile.TemporaryDirectory() as folder:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [sys.executable, "-m", "optcoll", "export", spec, "--format", fmt, "--size", size,
             "-o", str(Path(folder) / f"out{suffix}")],
            cwd=checkout, check=True, capture_output=True,
        )  # fmt: skip
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=["torus:4x4x4", "torus:4x4x8"])
    parser.add_argument("--format", default="mscclpp", choices=("msccl", "mscclpp", "chakra"))
    parser.add_argument("--size", default="1M")
    parser.add_argument("--against", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args()
    print(f"{'topology':<14} {'here (CPU s)':>13} {'against':>10} {'ratio':>7}")
    for spec in args.specs:
        here = cpu_seconds(ROOT, spec, args.format, args.size)
        other = None if args.against is None else cpu_seconds(args.against, spec, args.format,
                                                              args.size)  # fmt: skip
        ratio = "" if other is None else f"{other / here:.1f}x"
        shown = "" if other is None else f"{other:.1f}"
        print(f"{spec:<14} {here:>13.1f} {shown:>10} {ratio:>7}", flush=True)


if __name__ == "__main__":
    main()
