"""Benchmark: export an MSCCL program and check it with ``optcoll check-xml``.

Run from the repository root::

    python -m benchmarks.check_xml [--specs dgx-a100:16 mi250:8] [--collectives allgather allreduce]

Per topology and collective: the wall and CPU seconds (``time.process_time``) of
``optcoll export --runtime rccl`` (building and verifying the schedule, writing every
file), then of ``verify_file`` on each written file (parse, runtime rules, execution at
depths 8 with data and races, 2 and 1 with control only, in every placement the file
serves), the program's size (GPUs, thread blocks, steps), the checker's verdict and the
process's peak resident memory so far. One run each: the checker is deterministic.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import maxrss_mib, print_table, timed
from optcoll.cli import main as optcoll
from optcoll.verify.msccl import verify_file

SPECS = ["dgx-a100:16", "mi250:8"]
COLLECTIVES = ["allgather", "allreduce"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to run")
    parser.add_argument("--collectives", nargs="+", default=COLLECTIVES)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for spec in args.specs:
            for collective in args.collectives:
                target = Path(folder) / f"{spec.replace(':', '_')}_{collective}.xml"
                command = ["export", spec, "--collective", collective, "-o", str(target)]
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    status, wall, cpu = timed(lambda c=command: optcoll([*c, "--json"]))
                if status:
                    rows.append([spec, collective, "-", f"{wall:.1f}", f"{cpu:.1f}", "-", "-",
                                 "-", "-", err.getvalue().strip()[:60], ""])  # fmt: skip
                    continue
                for written in json.loads(out.getvalue())["files"]:
                    path = written["path"]
                    text = Path(path).read_text()
                    report, check_wall, check_cpu = timed(lambda p=path: verify_file(p))
                    rows.append(
                        [
                            spec,
                            collective,
                            written["placement"],
                            f"{wall:.1f}",
                            f"{cpu:.1f}",
                            f"{check_wall:.1f}",
                            f"{check_cpu:.1f}",
                            report.ngpus,
                            text.count("<tb "),
                            text.count("<step "),
                            "correct" if report.ok else f"WRONG ({len(report.findings)})",
                            f"{maxrss_mib():.0f}",
                        ]
                    )
                    for finding in report.findings[:3]:
                        print(f"  {spec} {collective}: {finding.kind}: {finding.message}")
    print_table(
        ["topology", "collective", "placement", "export s", "export CPU s", "check s",
         "check CPU s", "GPUs", "thread blocks", "steps", "verdict", "peak RSS MiB"],
        rows,
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
