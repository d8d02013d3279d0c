"""``python -m paper_figures [--small] [--out DIR] [NAME ...]``: regenerate the figures.

From the repository root ``python -m paper_figures``; from any other folder
``python PATH/TO/REPO/paper_figures``. Each run replaces the files an earlier run wrote.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

if not __package__:  # run as ``python PATH/paper_figures``: import from that repository
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paper_figures import FIGURES  # noqa: E402
from paper_figures._common import OUT  # noqa: E402

EXAMPLES = """examples:
  python -m paper_figures --small            all figures, smallest instances
  python ~/optcoll/paper_figures fixed_k     one figure, from any folder"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the named figure scripts (default: all) and list the files they wrote."""
    parser = argparse.ArgumentParser(
        prog="python -m paper_figures",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"figures: {', '.join(FIGURES)}")
    parser.add_argument("--small", action="store_true", help="smallest instances only (fast)")
    parser.add_argument("--out", default=str(OUT), help=f"output folder (default {OUT})")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        parser.error(f"unknown figure {unknown[0]!r}; figures are {', '.join(FIGURES)}")
    for name in args.names or FIGURES:
        started = time.perf_counter()
        module = importlib.import_module(f"paper_figures.{name}")
        written = module.main(out_dir=args.out, small=args.small)
        seconds = time.perf_counter() - started
        print(f"{name}: {', '.join(p.name for p in written)} ({seconds:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
