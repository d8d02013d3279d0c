"""Benchmark: load time of every topology format at realistic sizes, optionally beside
another revision's readers.

Run from the repository root::

    python -m benchmarks.readers [--repeat 3] [--against REV]

The files are written into a temporary folder first: native JSON and YAML of
dgx-a100:16 (128 GPUs) and mi250:8; NCCL topology XML (the DGX H100 dump of
``tests/data/nccl`` as one box and as a 16-box rail cluster); the largest TACCL
profile of ``tests/data/taccl`` on 16 boxes; ASTRA-sim configs (the 32-GPU HGX H100
file of ``tests/data/astra`` and a generated 3-D Ring x FullyConnected x Switch of
1024 NPUs); msccl-tools topologies (``DistributedHubAndSpoke`` of HubAndSpoke(8) x 16
copies, 128 ranks, built by msccl-tools' formulas, and ``FullyConnected(n=128)``);
GraphML and an edge list written by networkx from dgx-a100:16. Each is loaded with
``optcoll.io.load_topology`` ``--repeat`` times in a fresh process: the median wall
seconds, the CPU seconds (``time.process_time``) of those runs together (with the garbage
collection run before each), and the nodes
and directed links read. ``--against REV`` extracts ``optcoll`` and ``formulations`` of
git revision REV into a temporary folder and times the same loads with them; the two
trees take turns (``--rounds`` each, default 2) and each keeps its best round, so both
columns come from one run on the same files under the same load ("refused" when a
revision cannot read the file).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from benchmarks._common import extract_revision  # noqa: E402


def _write_files(folder: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, path, options) of every file to load, written into ``folder``."""
    import networkx as nx
    import yaml

    from optcoll import topologies

    cases: list[tuple[str, str, dict[str, Any]]] = []
    for spec in ("dgx-a100:16", "mi250:8"):
        data = topologies.build(spec).to_dict()
        stem = spec.replace(":", "_")
        (folder / f"{stem}.json").write_text(json.dumps(data))
        cases.append((f"optcoll JSON {spec}", str(folder / f"{stem}.json"), {}))
    data = topologies.build("dgx-a100:16").to_dict()
    (folder / "dgx-a100_16.yaml").write_text(yaml.safe_dump(data))
    cases.append(("optcoll YAML dgx-a100:16", str(folder / "dgx-a100_16.yaml"), {}))
    dump = ROOT / "tests" / "data" / "nccl" / "dgx-h100.xml"
    cases.append(("NCCL XML DGX H100", str(dump), {}))
    cases.append(("NCCL XML DGX H100 x16 rails", str(dump), {"boxes": 16}))
    taccl = max((ROOT / "tests" / "data" / "taccl").glob("*.json"), key=lambda p: p.stat().st_size)
    cases.append((f"TACCL {taccl.stem} x16", str(taccl), {"boxes": 16}))
    astra = ROOT / "tests" / "data" / "astra" / "hgx_h100_32gpu.yml"
    cases.append(("ASTRA-sim hgx_h100_32gpu", str(astra), {}))
    cube = {
        "topology": ["Ring", "FullyConnected", "Switch"],
        "npus_count": [8, 8, 16],
        "bandwidth": [200.0, 100.0, 50.0],
        "latency": [500.0, 500.0, 2000.0],
    }
    (folder / "astra_1024.yml").write_text(yaml.safe_dump(cube))
    cases.append(("ASTRA-sim 3-D 1024 NPUs", str(folder / "astra_1024.yml"), {}))
    (folder / "msccl_dhs.json").write_text(json.dumps(_distributed_hub_and_spoke(8, 16, 1)))
    cases.append(("msccl-tools DistributedHubAndSpoke 128", str(folder / "msccl_dhs.json"), {}))
    full = [[0 if i == j else 1 for j in range(128)] for i in range(128)]
    fc = {"msccl_type": "topology", "name": "FullyConnected(n=128)", "links": full, "switches": []}
    (folder / "msccl_fc.json").write_text(json.dumps(fc))
    cases.append(("msccl-tools FullyConnected 128", str(folder / "msccl_fc.json"), {}))
    graph = topologies.build("dgx-a100:16").to_networkx()
    for _, _, attrs in graph.edges(data=True):
        attrs["bandwidth"] = float(attrs["bandwidth"])
    for _, attrs in graph.nodes(data=True):
        attrs.pop("group", None)
    nx.write_graphml(graph, folder / "dgx.graphml")
    cases.append(("GraphML dgx-a100:16", str(folder / "dgx.graphml"), {}))
    nx.write_edgelist(graph, folder / "dgx.edgelist", data=["bandwidth"])
    switches = " ".join(v for v, a in graph.nodes(data=True) if a["type"] == "switch")
    text = (folder / "dgx.edgelist").read_text()
    (folder / "dgx.edgelist").write_text(f"# switches: {switches}\n{text}")
    cases.append(("edge list dgx-a100:16", str(folder / "dgx.edgelist"), {}))
    return cases


def _distributed_hub_and_spoke(local: int, copies: int, bandwidth: int) -> dict[str, Any]:
    """msccl-tools' ``distributed_hub_and_spoke(hub_and_spoke(local), copies, bandwidth)``
    as its serialised dictionary (``msccl/topologies/generic.py``, ``distributed.py``)."""
    switches: list[Any] = []
    n = local * copies
    for i in range(copies):
        ranks = [i * local + j for j in range(local)]
        for r in ranks:
            others = [o for o in ranks if o != r]
            switches.append([[r], others, 1, f"copy_{i}_node_{r - i * local}_out_local"])
            switches.append([others, [r], 1, f"copy_{i}_node_{r - i * local}_in_local"])
    for i in range(copies):
        ranks = [i * local + j for j in range(local)]
        remote = [k for k in range(n) if k // local != i]
        switches.append([ranks, remote, bandwidth, f"copy_{i}_out_remote"])
        switches.append([remote, ranks, bandwidth, f"copy_{i}_in_remote"])
    links = [[0 if s == d else 1 if s // local == d // local else bandwidth for s in range(n)]
             for d in range(n)]  # fmt: skip
    name = f"DistributedHubAndSpoke(local=HubAndSpoke(n={local}),copies={copies},bw={bandwidth})"
    return {"msccl_type": "topology", "name": name, "links": links, "switches": switches}


def _time_loads(cases: list[Any], repeat: int) -> list[dict[str, Any]]:
    """Load every case ``repeat`` times with the ``optcoll`` on ``sys.path``."""
    from optcoll.exceptions import OptCollError
    from optcoll.io import load_topology

    rows = []
    for label, path, options in cases:
        times = []
        cpu = time.process_time()
        try:
            for _ in range(repeat):
                gc.collect()  # a collection left over from the previous file is not its cost
                start = time.perf_counter()
                topology = load_topology(path, **options)
                times.append(time.perf_counter() - start)
        except OptCollError as err:
            rows.append({"label": label, "refused": str(err)[:120]})
            continue
        rows.append(
            {
                "label": label,
                "seconds": statistics.median(times),
                "cpu_seconds": time.process_time() - cpu,
                "nodes": len(topology.nodes),
                "links": len(topology.capacity),
            }
        )
    return rows


def _in_process(tree: Path, cases: list[Any], repeat: int, folder: Path) -> list[dict[str, Any]]:
    """The loads with the ``optcoll`` found in ``tree``, in a fresh process."""
    (folder / "cases.json").write_text(json.dumps(cases))
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]);"
        "from benchmarks.readers import _time_loads;"
        "print(json.dumps(_time_loads(json.load(open(sys.argv[3])), int(sys.argv[4]))))"
    )
    # the previous tree first, then the repository (only for this module)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tree), str(ROOT), str(folder / "cases.json"), str(repeat)],
        check=True,
        capture_output=True,
        text=True,
        cwd=folder,
    )
    return json.loads(done.stdout)


def _faster(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The row with the smaller median (a refusal stays a refusal)."""
    if "refused" in a or "refused" in b:
        return a
    return a if a["seconds"] <= b["seconds"] else b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="loads per file (default 3)")
    parser.add_argument("--against", metavar="REV", help="also time git revision REV's readers")
    parser.add_argument("--rounds", type=int, default=2, help="turns each tree takes (default 2)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        cases = _write_files(folder)
        trees = [ROOT] + ([extract_revision(args.against, folder)] if args.against else [])
        best: list[list[dict[str, Any]] | None] = [None] * len(trees)
        for _ in range(max(args.rounds, 1)):
            for t, tree in enumerate(trees):
                rows = _in_process(tree, cases, args.repeat, folder)
                kept = best[t]
                best[t] = (
                    rows
                    if kept is None
                    else [_faster(a, b) for a, b in zip(kept, rows, strict=True)]
                )
        now = best[0]
        before = best[1] if args.against else None
    assert now is not None
    print(f"{'file':<40} {'nodes':>6} {'links':>7} {'seconds':>8} {'cpu s':>7}", end="")
    print(f" {args.against + ' s':>12} {'ratio':>6}" if before else "")
    for i, row in enumerate(now):
        if "refused" in row:
            print(f"{row['label']:<40} refused: {row['refused']}")
            continue
        line = (
            f"{row['label']:<40} {row['nodes']:>6} {row['links']:>7} {row['seconds']:>8.4f} "
            f"{row['cpu_seconds']:>7.3f}"
        )
        if before:
            old = before[i]
            if "refused" in old:
                line += f" {'refused':>12} {'-':>6}"
            else:
                line += f" {old['seconds']:>12.4f} {row['seconds'] / old['seconds']:>6.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
