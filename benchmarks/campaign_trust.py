"""A campaign round over issue 38's classes: aggregation files, compact files, signals.

Run from the repository root: ``python -m benchmarks.campaign_trust [CLASS ...]`` (classes
``aggregation``, ``compact``, ``signals``; default all). Every case is a
subprocess ``python -m optcoll ...`` with a time limit, classified as in
``benchmarks/campaign.py``: ``traceback`` (a Python traceback, or a status other than
0, 1, 2 or 130), ``hang`` (past the limit), ``wrong-success`` (exit 0 for a lying file;
``verify`` and ``verify --full`` disagreeing on a compact file; a signal not answered
within :data:`SIGNAL_LIMIT` seconds). Prints one line per finding and the counts.

* **aggregation files**: the solved ``star:4,sharp=1`` allreduce file with each stated
  figure changed (``lower_bound``, ``time_factor``, ``algbw``, ``stats.proved``,
  ``stats.gap_to_cut_bound``, ``stats.optimal_among``: other values and other types);
* **compact files**: the solved ring:4 and torus:3x3 allgathers with each
  representative tree moved to the image of its root under every power of the
  rotation, and with chunks changed: the verdicts of ``verify`` and ``verify --full``;
* **signals**: SIGINT and SIGTERM 1 s into the HiGHS solve of a fixed-k MILP that runs
  for minutes, and into ``bound torus:5x5x5 --collective alltoall``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60
SIGNAL_LIMIT = 5.0
findings: list[tuple[str, str]] = []
counts: Counter[str] = Counter()


def run(*args: str) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "optcoll", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return -1, "", "hang"
    return done.returncode, done.stdout, done.stderr


def judge(case: str, code: int, err: str, *, lie: bool) -> None:
    counts["cases"] += 1
    if code == -1:
        findings.append(("hang", case))
    elif "Traceback" in err or code not in (0, 1, 2, 130):
        findings.append(("traceback", case))
    elif lie and code == 0:
        findings.append(("wrong-success", case))


def aggregation(work: Path) -> None:
    out = work / "agg"
    run("solve", "star:4,sharp=1", "--collective", "allreduce", "-o", str(out))
    (path,) = out.glob("*.schedule.json")
    good = json.loads(path.read_text())
    code, _, err = run("verify", "star:4,sharp=1", str(path))
    judge("aggregation: the solved file", code, err, lie=False)
    lies = {
        "lower_bound": ["1/50", "1/200", "1", "banana", 7, None],
        "time_factor": ["1/50", "1/200"],
        "algbw": [50.0, 100.5, 1e308, "fast", True],
        "stats.proved": ["banana", 1, "true", None, [True]],
        "stats.gap_to_cut_bound": ["2", "1/2", "banana", 1.5, [1]],
        "stats.optimal_among": ["all schedules", 1, None],
    }
    for field, values in lies.items():
        for value in values:
            document = json.loads(json.dumps(good))
            if field.startswith("stats."):
                document["stats"][field[6:]] = value
            elif value is None:
                document.pop(field)
                if field != "lower_bound":
                    continue
            else:
                document[field] = value
            lie = path.with_name("lie.json")
            lie.write_text(json.dumps(document))
            code, _, err = run("verify", "star:4,sharp=1", str(lie))
            # dropping lower_bound states nothing false: that file is still valid
            judge(f"aggregation: {field} = {value!r}", code, err, lie=value is not None)


def _image(tree: dict, mapping: dict, steps: int) -> dict:
    def image(v: str) -> str:
        for _ in range(steps):
            v = mapping.get(v, v)
        return v

    return {
        "root": image(tree["root"]),
        "chunks": tree["chunks"],
        "edges": [
            {"src": image(e["src"]), "dst": image(e["dst"]), "path": [image(x) for x in e["path"]]}
            for e in tree["edges"]
        ],
    }


def compact(work: Path) -> None:
    for spec in ("ring:4", "torus:3x3"):
        out = work / spec.replace(":", "_")
        run("solve", spec, "-o", str(out))
        (path,) = out.glob("*.schedule.json")
        good = json.loads(path.read_text())
        group = good.get("rotation") or (good.get("rotations") or [None])[0]
        if group is None:
            continue
        for index in range(len(good["trees"])):
            for steps in range(group["order"]):
                for chunks in (1, 2):
                    document = json.loads(json.dumps(good))
                    for key in ("stats", "time_factor", "algbw"):
                        document.pop(key, None)
                    moved = _image(document["trees"][index], group["images"], steps)
                    document["trees"][index] = {**moved, "chunks": chunks}
                    case = work / "compact.json"
                    case.write_text(json.dumps(document))
                    verdicts = []
                    for extra in ((), ("--full",)):
                        code, out_text, err = run("verify", spec, str(case), "--json", *extra)
                        judge(f"compact {spec}: tree {index} x{steps}", code, err, lie=False)
                        report = json.loads(out_text) if code in (0, 1) else {}
                        verdicts.append((code, report.get("time_factor")))
                    if verdicts[0] != verdicts[1]:
                        findings.append(
                            (
                                "wrong-success",
                                f"compact {spec}: tree {index} moved {steps}, "
                                f"chunks {chunks}: verify {verdicts[0]}, --full {verdicts[1]}",
                            )
                        )


DRIVER = """
import sys
import pulp
from optcoll.cli import main
original = pulp.LpProblem.solve
def marked(self, *args, **kwargs):
    print("solving", file=sys.stderr, flush=True)
    return original(self, *args, **kwargs)
pulp.LpProblem.solve = marked
sys.exit(main(sys.argv[1:]))
"""


def signals() -> None:
    commands = [
        ["lp", "solve", "torus:3x4", "--model", "fixed-k", "-k", "2"],
        ["bound", "torus:5x5x5", "--collective", "alltoall"],
    ]
    for command in commands:
        for signum in (signal.SIGINT, signal.SIGTERM):
            case = f"{signal.Signals(signum).name} during `optcoll {' '.join(command)}`"
            process = subprocess.Popen(
                [sys.executable, "-c", DRIVER, *command],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            assert process.stderr is not None
            process.stderr.readline()  # "solving", or the end of a command that never solves
            time.sleep(1.0)
            sent = time.monotonic()
            process.send_signal(signum)
            try:
                _, err = process.communicate(timeout=TIMEOUT)
                waited = time.monotonic() - sent
                code = process.returncode
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                code, err, waited = -1, "", TIMEOUT
            judge(case, code, err, lie=False)
            counts["signal seconds max"] = max(counts["signal seconds max"], round(waited, 2))
            if code not in (-1, 0, 130) or waited > SIGNAL_LIMIT:
                findings.append(("hang", f"{case}: status {code} after {waited:.2f} s"))


def main() -> int:
    start = time.process_time()
    with tempfile.TemporaryDirectory(prefix="optcoll-trust-") as folder:
        work = Path(folder)
        chosen = sys.argv[1:] or ["aggregation", "compact", "signals"]
        if "aggregation" in chosen:
            aggregation(work)
        if "compact" in chosen:
            compact(work)
        if "signals" in chosen:
            signals()
    for kind, case in findings:
        print(f"{kind:14} {case}")
    kinds = Counter(kind for kind, _ in findings)
    print(
        f"{counts['cases']} cases: {kinds['wrong-success']} wrong successes, "
        f"{kinds['traceback']} tracebacks, {kinds['hang']} hangs; slowest signal answer "
        f"{counts['signal seconds max']} s; {time.process_time() - start:.1f} CPU s here"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
