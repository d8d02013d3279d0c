"""Benchmark: optcoll's ``plan`` against TACOS's greedy allgather on tori and meshes.

TACOS (astra-sim/tacos, arXiv 2304.05301) synthesizes an allgather on a time-expanded
network: every link sends whole chunks, each transfer taking ``latency + chunk / bandwidth``
(bandwidth in GiB/s), and a link that comes free takes a chunk some neighbour still lacks
(ties at random). It is not a dependency of optcoll and none of its code is here: this
script talks to a TACOS *driver*, an executable you build yourself against a TACOS
checkout, through a plain-text protocol::

    DRIVER LINKS COLLECTIVES BUFFER_BYTES REPEATS

``LINKS`` is a file this script writes: the number of NPUs on its first line, then one
line ``src dst bandwidth_GiB_per_s latency_us`` per directed link (NPU ``i`` is the
``i``-th compute node of the optcoll topology, so the conversion is exact: the very link
list optcoll plans on). The driver runs TACOS's ``AllGather(npus, COLLECTIVES)`` with
chunks of ``BUFFER_BYTES / (npus * COLLECTIVES)`` bytes ``REPEATS`` times and prints a
line ``run I TIME_US CPU_S`` per run, then ``x CHUNK SRC DST ARRIVAL_US`` per chunk
delivered in the fastest run (the first arrival of each chunk at each NPU; chunk ``c``
starts at NPU ``c % npus``). Without ``--driver`` the script prints optcoll's side only.

Per topology, link setting and size it prints: optcoll ``plan``'s time (µs, simulated with
``--overhead 0``), the method it chose and its certified ratio to the lower bound; TACOS's
best time over its runs and chunk counts (its own number) and that timetable replayed in
optcoll's simulator (each link sends the chunks in TACOS's order, a chunk leaving a node
once it has arrived there); TACOS's time over optcoll's; and the synthesis CPU seconds of
both (optcoll: packing all candidates plus planning the three sizes; TACOS: its fastest
run's solve, and the sum over all runs). ``--previous REV`` plans with the code of an
earlier revision of this repository beside ours in one run, with its CPU seconds.

Run from the repository root::

    python -m benchmarks.tacos [--driver PATH] [--repeats 5] [--chunks 1 2 4]
                               [--specs torus:4x4 mesh:8x8 ...] [--previous main]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import PLAN_CHILD, print_table

#: TACOS's families as optcoll specs (its Hypercube3D is a 3D mesh; Mesh2DHetero a 2D
#: mesh with one bandwidth along rows and another along columns).
SPECS = (
    "torus:4x4",
    "torus:8x8",
    "torus:16x16",
    "mesh:4x4",
    "mesh:8x8",
    "torus:4x4x4",
    "mesh:4x4x4",
    "mesh:5x5,bw={bw}/{bw2}",
)
#: Link settings ``(GiB/s, µs)``: the issue's setup first.
LINKS = ((50, Fraction(1, 2)), (25, Fraction(1)), (100, Fraction(1, 10)))
SIZES = (2**20, 64 * 2**20, 2**30)
GIB = 2**30


def spec_for(template: str, gib: Fraction) -> str:
    """An optcoll spec whose every link has ``gib`` GiB/s (optcoll reads GB/s); a hetero
    mesh gets 1.5 times that along its columns, as TACOS's test (50 and 75 GiB/s)."""
    gb = Fraction(gib) * GIB / 10**9
    text = f"{float(gb)!r}" if Fraction(repr(float(gb))) == gb else str(gb)
    if "{bw}" in template:
        gb2 = gb * 3 / 2
        text2 = f"{float(gb2)!r}" if Fraction(repr(float(gb2))) == gb2 else str(gb2)
        return template.format(bw=text, bw2=text2)
    return f"{template},bw={text}"


def link_list(topology: object, latency: Fraction) -> str:
    """The topology's directed links in the driver's format (see the module docstring)."""
    compute = list(topology.compute_nodes)  # type: ignore[attr-defined]
    if len(compute) != len(topology.node):  # type: ignore[attr-defined]
        raise SystemExit(f"{topology.name}: TACOS models NPUs only, no switches")  # type: ignore[attr-defined]
    number = {name: i for i, name in enumerate(compute)}
    lines = [str(len(compute))]
    for (u, v), gb in sorted(topology.capacity.items()):  # type: ignore[attr-defined]
        gib = Fraction(gb) * 10**9 / GIB
        lines.append(f"{number[u]} {number[v]} {float(gib)!r} {float(latency)!r}")
    return "\n".join(lines) + "\n"


def run_tacos(
    driver: str, links: Path, collectives: int, size: int, repeats: int
) -> dict[str, object]:
    """One driver call: every run's time and CPU, the fastest run's deliveries."""
    out = subprocess.run(
        [driver, str(links), str(collectives), str(size), str(repeats)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    runs, record, chunk = [], [], 0
    for line in out.splitlines():
        word, *rest = line.split()
        if word == "run":
            runs.append((float(rest[1]), float(rest[2])))
        elif word == "chunk":
            chunk = int(rest[0])
        elif word == "x":
            record.append((int(rest[0]), int(rest[1]), int(rest[2]), float(rest[3])))
    best = min(range(len(runs)), key=lambda i: runs[i][0])
    return {
        "collectives": collectives,
        "chunk": chunk,
        "time_us": runs[best][0],
        "cpu_best": runs[best][1],
        "cpu_all": sum(c for _, c in runs),
        "record": record,
    }


def replay(topology: object, latency: Fraction, tacos: dict[str, object], size: int) -> float:
    """TACOS's timetable run in optcoll's simulator with ``--overhead 0`` (µs)."""
    from optcoll.sim.simulator import Network, TaskGraph, simulate

    network = Network.of(topology, latency)  # type: ignore[arg-type]
    compute = list(topology.compute_nodes)  # type: ignore[attr-defined]
    n = len(compute)
    graph = TaskGraph()
    delivered: dict[tuple[int, int], int] = {}
    record = sorted(tacos["record"], key=lambda row: row[3])  # type: ignore[arg-type]
    chunk = float(tacos["chunk"])  # type: ignore[arg-type]
    for c, src, dst, arrival in record:
        after = [] if src == c % n else [delivered[(c, src)]]
        arc = network.index[(compute[src], compute[dst])]
        start = arrival - float(latency) - chunk / (network.rate[arc] * GIB / 10**9 / 1000)
        delivered[(c, dst)] = graph.add(None, (arc,), chunk, after, start)
    return simulate(graph, network, size, overhead=0.0).time_us


def tacos_side(
    driver: str, topology: object, latency: Fraction, chunks: Sequence[int], repeats: int
) -> dict[int, dict[str, object]]:
    """Per size, TACOS's best run over ``chunks`` (chunks per NPU) and its replay."""
    best: dict[int, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as folder:
        links = Path(folder) / "links.txt"
        links.write_text(link_list(topology, latency))
        for size in SIZES:
            runs = [run_tacos(driver, links, c, size, repeats) for c in chunks]
            fastest = min(runs, key=lambda r: r["time_us"])  # type: ignore[arg-type,return-value]
            fastest["cpu_all"] = sum(r["cpu_all"] for r in runs)  # type: ignore[misc]
            fastest["replay_us"] = replay(topology, latency, fastest, size)
            del fastest["record"]
            best[size] = fastest
    return best


def plan_side(spec: str, latency: Fraction, root: Path) -> dict[str, object]:
    """``plan --overhead 0`` with the code under ``root``, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", PLAN_CHILD, spec, str(latency), *map(str, SIZES)],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,  # python -c puts the working folder first on sys.path
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    ).stdout
    return json.loads(out.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", help="TACOS driver executable (see the docstring)")
    parser.add_argument("--specs", nargs="+", default=list(SPECS), help="optcoll specs")
    parser.add_argument("--links", nargs="+", default=["50/0.5"], help="GiB/s/latency µs")
    parser.add_argument("--repeats", type=int, default=5, help="TACOS runs per chunk count")
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--previous", help="git revision whose plan runs beside ours")
    parser.add_argument("--json", help="also write every row to this JSON file")
    args = parser.parse_args(argv)
    from optcoll.topologies import build

    here = Path(__file__).resolve().parents[1]
    previous = None
    if args.previous:
        from benchmarks._common import extract_revision

        previous = extract_revision(args.previous, Path(tempfile.mkdtemp()))
    rows, records = [], []
    for setting in args.links:
        gib_text, _, latency_text = setting.partition("/")
        gib, latency = Fraction(gib_text), Fraction(latency_text)
        for template in args.specs:
            spec = spec_for(template, gib)
            topology = build(spec)
            ours = plan_side(spec, latency, here)
            old = plan_side(spec, latency, previous) if previous else None
            tacos = (
                tacos_side(args.driver, topology, latency, args.chunks, args.repeats)
                if args.driver
                else {}
            )
            for i, size in enumerate(SIZES):
                _, method, time_us, ratio = ours["rows"][i]
                row = {
                    "topology": template.split(",")[0],
                    "link": setting,
                    "size": size,
                    "plan_us": time_us,
                    "method": method,
                    "ratio": ratio,
                    "plan_cpu": ours["cpu"],
                }
                if old is not None:
                    row["previous_us"] = old["rows"][i][2]
                    row["previous_cpu"] = old["cpu"]
                if size in tacos:
                    t = tacos[size]
                    row.update(
                        tacos_us=t["time_us"],
                        tacos_replay_us=t["replay_us"],
                        tacos_c=t["collectives"],
                        tacos_cpu_best=t["cpu_best"],
                        tacos_cpu_all=t["cpu_all"],
                    )
                records.append(row)
                rows.append(_cells(row))
                print(json.dumps(row), file=sys.stderr, flush=True)
    headers = ["topology", "link", "size", "plan µs", "ratio", "method", "plan CPU s"]
    if previous:
        headers += ["previous µs", "prev CPU s"]
    if args.driver:
        headers += ["TACOS µs", "replayed µs", "c", "TACOS/plan", "TACOS CPU s (best/all)"]
    print_table(headers, rows)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1) + "\n")
    return 0


def _cells(row: dict[str, object]) -> list[object]:
    size = int(row["size"])  # type: ignore[call-overload]
    cells: list[object] = [
        row["topology"],
        row["link"],
        f"{size // 2**20} MiB" if size < GIB else "1 GiB",
        f"{row['plan_us']:.2f}",
        f"{row['ratio']:.4f}",
        row["method"],
        f"{row['plan_cpu']:.2f}",
    ]
    if "previous_us" in row:
        cells += [f"{row['previous_us']:.2f}", f"{row['previous_cpu']:.2f}"]
    if "tacos_us" in row:
        cells += [
            f"{row['tacos_us']:.2f}",
            f"{row['tacos_replay_us']:.2f}",
            row["tacos_c"],
            f"{float(row['tacos_us']) / float(row['plan_us']):.3f}",  # type: ignore[arg-type]
            f"{row['tacos_cpu_best']:.3f}/{row['tacos_cpu_all']:.2f}",
        ]
    return cells


if __name__ == "__main__":
    start = time.process_time()
    code = main()
    print(f"benchmark CPU {time.process_time() - start:.1f} s (this process)")
    raise SystemExit(code)
