"""A campaign round over issue 38's classes: aggregation files, compact files, signals,
the Python API with odd graphs, and full disks (units: ``benchmarks/campaign.py --only units``).

Run from the repository root: ``python -m benchmarks.campaign_trust [CLASS ...]`` (classes
``aggregation``, ``compact``, ``signals``, ``graphs``, ``disk``; default all). Every case is a
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
* **graphs**: ``optcoll.solve`` and ``optcoll.from_networkx`` on odd networkx graphs
  (parallel edges, self-loops, colliding ids, tuple ids, one node, disconnected, not
  strongly connected, unknown node types, bandwidths nan/inf/negative/zero/bool/text/
  complex/1e308/10**400/numpy/Fraction, 60,000 nodes): anything but an ``OptCollError``
  is a ``traceback``; a success where the graph is invalid (bandwidths beyond the float
  range only for ``solve``: ``from_networkx`` holds them exactly), or whose r* differs
  from the same graph written plainly, is a ``wrong-success``;
* **disk**: ``solve -o``, ``export -o``, ``convert -o`` and ``plan --export`` into a
  tmpfs of 16 and 48 KiB (needs ``mount``; skipped where it is refused): a traceback, an
  exit other than 2, a message of more than one line, or any file of the command's left
  behind (``partial-output``) is a finding.
"""

from __future__ import annotations

import json
import os
import shutil
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


GRAPHS = r"""
import json, math, sys
from fractions import Fraction
import networkx as nx
import numpy as np
import optcoll

def triangle(bw=50, kind=nx.DiGraph):
    g = kind()
    for u, v in (("a", "b"), ("b", "c"), ("c", "a")):
        g.add_edge(u, v, bandwidth=bw)
        g.add_edge(v, u, bandwidth=bw)
    return g

plain = optcoll.solve(triangle()).time_factor
cases = []  # (name, graph, refused by: True for both calls or one call's name, r* or None)
multi = nx.MultiDiGraph(triangle())
multi.add_edge("a", "b", bandwidth=0)  # a parallel edge of 0 adds nothing
cases.append(("parallel edges adding up", multi, False, plain))
split = nx.MultiDiGraph()
for u, v in (("a", "b"), ("b", "c"), ("c", "a"), ("b", "a"), ("c", "b"), ("a", "c")):
    split.add_edge(u, v, bandwidth=30)
    split.add_edge(u, v, bandwidth=20)
cases.append(("parallel edges 30 + 20", split, False, plain))
loop = triangle()
loop.add_edge("a", "a", bandwidth=50)
cases.append(("self-loop", loop, False, plain))
ids = nx.Graph()
ids.add_edge(1, "1", bandwidth=10)
ids.add_edge("1", 2, bandwidth=10)
cases.append(("ids 1 and '1'", ids, True, None))
tuples = nx.relabel_nodes(triangle(), {"a": (0, 1), "b": (1, 0), "c": (1, 1)})
cases.append(("tuple ids", tuples, False, plain))
one = nx.Graph()
one.add_node("a")
cases.append(("one node", one, True, None))
apart = nx.Graph()
apart.add_edge("a", "b", bandwidth=1)
apart.add_edge("c", "d", bandwidth=1)
cases.append(("disconnected", apart, True, None))
oneway = nx.DiGraph()
oneway.add_edge("a", "b", bandwidth=1)
oneway.add_edge("b", "c", bandwidth=1)
cases.append(("not strongly connected", oneway, True, None))
banana = triangle()
banana.nodes["a"]["type"] = "banana"
cases.append(("node type banana", banana, True, None))
switches = triangle()
for v in switches:
    switches.nodes[v]["type"] = "switch"
cases.append(("only switches", switches, True, None))
nobw = nx.DiGraph()
nobw.add_edge("a", "b", bw=1)
nobw.add_edge("b", "a", bw=1)
cases.append(("no bandwidth attribute", nobw, True, None))
for label, bw in [("nan", math.nan), ("inf", math.inf), ("-1", -1), ("True", True),
                  ("'fast'", "fast"), ("1j", 1j), ("None", None), ("[50]", [50])]:
    cases.append((f"bandwidth {label}", triangle(bw), True, None))
# exact and representable as a Topology; refused where a float must hold it (solve)
for label, bw in [("1e308", 1e308), ("10**400", 10**400)]:
    cases.append((f"bandwidth {label}", triangle(bw), "solve", None))
cases.append(("bandwidth 0", triangle(0), True, None))
cases.append(("bandwidth numpy 50.0", triangle(np.float64(50)), False, plain))
cases.append(("bandwidth '100/2'", triangle("100/2"), False, plain))
cases.append(("bandwidth Fraction(50)", triangle(Fraction(50)), False, plain))
cases.append(("60,000-node ring", nx.cycle_graph(60000), True, None))
rows = []
for name, graph, refuse, expected in cases:
    if name == "60,000-node ring":
        nx.set_edge_attributes(graph, 1, "bandwidth")
    for call in ("solve", "from_networkx"):
        try:
            result = getattr(optcoll, call)(graph)
        except optcoll.OptCollError as err:
            outcome = "refused" if "\n" not in str(err) and len(str(err)) < 1000 else "unclear"
        except Exception as err:  # noqa: BLE001
            outcome = f"traceback {type(err).__name__}: {str(err)[:200]}"
        else:
            if refuse is True or refuse == call:
                outcome = "accepted"
            elif call == "solve" and expected is not None and result.time_factor != expected:
                outcome = f"wrong r* {result.time_factor} (expected {expected})"
            else:
                outcome = "ok"
        rows.append((f"{call}: {name}", outcome))
print(json.dumps(rows))
"""


def graphs() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", GRAPHS],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10 * TIMEOUT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        findings.append(("hang", "graphs: the driver"))
        return
    if done.returncode != 0:
        findings.append(("traceback", f"graphs: the driver: {done.stderr[-300:]}"))
        return
    for case, outcome in json.loads(done.stdout):
        counts["cases"] += 1
        if outcome.startswith("traceback"):
            findings.append(("traceback", f"graphs: {case}: {outcome}"))
        elif outcome in ("accepted",) or outcome.startswith("wrong"):
            findings.append(("wrong-success", f"graphs: {case}: {outcome}"))
        elif outcome == "unclear":
            findings.append(("traceback", f"graphs: {case}: a message of several lines"))


def _mount_tiny(folder: Path, size: str) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
    )
    return done.returncode == 0


def disk(work: Path) -> None:
    source = work / "mine.json"
    run("convert", "dgx-a100:1", "-o", str(source))
    commands = [
        ["solve", "dgx-a100:1", "-o", "{d}/solved"],
        ["solve", "torus:4x4", "--collective", "allreduce", "-o", "{d}/solved"],
        ["export", "dgx-a100:2", "--format", "msccl", "-o", "{d}/ag.xml"],
        ["export", "ring:8", "--format", "mscclpp", "-o", "{d}/ag.json"],
        ["convert", "dgx-a100:2", "-o", "{d}/copy.json"],
        ["convert", str(source), "--format", "graphml", "-o", "{d}/copy.graphml"],
        ["plan", "torus:4x4", "--sizes", "1KiB", "1MiB", "--export", "{d}/plan"],
    ]
    for size in ("16k", "48k"):
        tiny = work / f"tiny-{size}"
        if not _mount_tiny(tiny, size):
            print(f"disk: cannot mount a tmpfs of {size} here; class skipped")
            return
        try:
            for command in commands:
                args = [a.replace("{d}", str(tiny)) for a in command]
                case = f"disk {size}: optcoll {' '.join(command)}"
                code, _, err = run(*args)
                judge(case, code, err, lie=False)
                left = [str(p.relative_to(tiny)) for p in tiny.rglob("*")]  # files, folders
                if code != 0:
                    if code != 2 or len(err.strip().splitlines()) != 1:
                        findings.append(("unclear-error", f"{case}: status {code}: {err[-200:]}"))
                    if left:
                        findings.append(("partial-output", f"{case}: left {sorted(left)}"))
                for path in list(tiny.iterdir()):
                    if path.is_dir():
                        shutil.rmtree(path)
                    else:
                        path.unlink()
        finally:
            subprocess.run(["umount", str(tiny)], capture_output=True)


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
        chosen = sys.argv[1:] or ["aggregation", "compact", "signals", "graphs", "disk"]
        if "aggregation" in chosen:
            aggregation(work)
        if "compact" in chosen:
            compact(work)
        if "signals" in chosen:
            signals()
        if "graphs" in chosen:
            graphs()
        if "disk" in chosen:
            disk(work)
    for kind, case in findings:
        print(f"{kind:14} {case}")
    kinds = Counter(kind for kind, _ in findings)
    print(
        f"{counts['cases']} cases: {kinds['wrong-success']} wrong successes, "
        f"{kinds['traceback']} tracebacks, {kinds['hang']} hangs, {kinds['unclear-error']} "
        f"unclear errors, {kinds['partial-output']} partial outputs; slowest signal answer "
        f"{counts['signal seconds max']} s; {time.process_time() - start:.1f} CPU s here"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
