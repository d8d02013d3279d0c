"""Benchmark: optcoll's Chakra traces against ASTRA-sim's native collectives, in ASTRA-sim.

ASTRA-sim is not a dependency of optcoll and none of its code is here: give the script an
astra-sim checkout (with its submodules) whose analytical backend you built with
``build/astra_analytical/build.sh -t congestion_aware`` (the binary
``build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Aware``). For every
network, collective and size it writes, in a temporary folder:

* the network YAML (one ASTRA-sim block: ``Ring``, ``FullyConnected`` or ``Switch``;
  ``bandwidth`` in ASTRA-sim's GiB/s, ``latency`` in ns), read back by optcoll's importer
  (:mod:`optcoll.io.astra_sim`: GiB/s exactly), so both simulators see the same links;
* a workload of one ``COMM_COLL_NODE`` per NPU (as ASTRA-sim's
  ``examples/workload/microbenchmarks/generator_scripts``) whose ``comm_size`` is what
  ASTRA-sim's native algorithms need for optcoll's message size ``M``
  (:func:`optcoll.export.planned.astra_sim_comm_size`: all-gather ``M / N``, else ``M``),
  encoded with the ``et_def.proto`` of the checkout's Chakra (compiled here by protoc);
* optcoll's traces: what ``optcoll plan`` chose at ``M`` with no per-step overhead and
  (``--switch-model``, default) switches that store and forward every message, as
  ASTRA-sim's analytical backend moves them
  (:func:`optcoll.export.planned.planned_traces` with ``store_and_forward=True``: sliced
  and ordered as plan simulated it).

ASTRA-sim then runs each native algorithm (``ring``, ``direct``, ``halvingDoubling``, and
``doubleBinaryTree`` for all-reduce) under a grid of its system settings
(``preferred-dataset-splits``, ``active-chunks-per-dimension``, ``collective-optimization``),
and optcoll's traces as its custom collective, every run with ``endpoint-delay`` 0 (no
per-message overhead, as our simulator with ``--overhead 0``). The time is the largest
``sys[i] finished, T cycles`` (a cycle is 1 ns). Printed per case: the best native time
and its setting, ASTRA-sim's time of our traces, our simulator's time of the same traces
(cut-through, and ``store_and_forward`` as ASTRA-sim's backend moves a message) and plan's
figure, ours over the best native, and our simulator over ASTRA-sim. Without
``--astra-sim`` only optcoll's side is printed.

``--grid 2d`` runs :data:`NETWORKS_2D` instead: networks of two dimensions (a 4x4 torus of
rings, fully connected boxes of 4 on rings, 2 and 4 boxes of 8 GPUs on an HGX-H100 switch
with a rail switch per GPU index), where the natives run every choice of one algorithm per
dimension and also ``localBWAware``. ASTRA-sim's congestion-aware backend (astra-network-
analytical 599a047) refuses more than one dimension (``congestion_aware/topology/
Helper.cpp`` lines 25-29); ``astra_sim_multidim.patch`` (optcoll's, next to this script)
gives it one (``patch -p1`` in the astra-sim checkout, then build). ``--backend
congestion-unaware`` runs ASTRA-sim's congestion-unaware binary instead, which takes several
dimensions as shipped but charges every message ``hops * latency + size / bandwidth``
whatever else is on its links: our simulator, which shares links, is not expected to agree
with it.

Run from the repository root::

    python -m benchmarks.astra_sim [--astra-sim PATH] [--networks Ring:8 Switch:16 ...]
        [--collectives allreduce allgather reduce_scatter] [--sizes 64K 1M 16M 256M 1G]
        [--grid 1d|2d] [--backend congestion-aware|congestion-unaware]
        [--bandwidth 50] [--latency 500] [--json FILE] [--natives FILE ...]

``--natives`` takes the best native of each case from earlier runs (their ``--json`` files
or printed rows) instead of running ASTRA-sim's natives again: they do not depend on
optcoll, only on ASTRA-sim, its settings and the network.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table
from optcoll.core.sizes import parse_size, size_text
from optcoll.exceptions import ScheduleError
from optcoll.export.chakra import ASTRA_SIM_COLLECTIVES
from optcoll.export.planned import (
    astra_sim_comm_size,
    astra_sim_shortest_message,
    planned_traces,
)
from optcoll.io.astra_sim import from_astra_network
from optcoll.sim.programs import chakra_tasks, chakra_ties, read_chakra
from optcoll.sim.simulator import Network, simulate

#: ASTRA-sim's analytical binaries (``build.sh -t congestion_aware`` / ``congestion_unaware``).
BINARIES = {
    "congestion-aware": "build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Aware",
    "congestion-unaware": "build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware",
}
BINARY = BINARIES["congestion-aware"]
NETWORKS = ("Ring:8", "Ring:16", "FullyConnected:8", "Switch:16", "HGX-H100")
#: The two-dimensional and multi-box grid (``--grid 2d``).
NETWORKS_2D = ("Torus-4x4", "FC4-Ring4", "DGX-2box", "DGX-4box")
#: Named networks: ASTRA-sim's ``examples/network/analytical/HGX-H100-validated.yml``
#: (one switch of 8 NPUs, 400 GiB/s, 936.25 ns); a 4x4 torus of rings; four fully
#: connected boxes of 4 joined by rings; boxes of 8 GPUs on an HGX-H100 switch whose GPU
#: ``i`` has a NIC of 50 GiB/s (400 Gb/s) on the rail switch ``i`` joining the boxes
#: (2 us per hop), ASTRA-sim's ``Switch`` x ``Switch``.
NAMED = {
    "HGX-H100": "Switch:8@400/936.25",
    "Torus-4x4": "Ring:4xRing:4",
    "FC4-Ring4": "FullyConnected:4xRing:4",
    "DGX-2box": "Switch:8@400/936.25xSwitch:2@50/2000",
    "DGX-4box": "Switch:8@400/936.25xSwitch:4@50/2000",
}
COLLECTIVES = ("allreduce", "allgather", "reduce_scatter")
SIZES = ("64K", "1M", "16M", "256M", "1G")
#: ASTRA-sim's native algorithms per collective (system-JSON spellings).
NATIVE = {
    "allreduce": ("ring", "direct", "halvingDoubling", "doubleBinaryTree"),
    "allgather": ("ring", "direct", "halvingDoubling"),
    "reduce_scatter": ("ring", "direct", "halvingDoubling"),
}
#: System-JSON keys of the native implementations and Chakra's CollectiveCommType values.
KEYS = {
    "allreduce": ("all-reduce-implementation", 0),
    "allgather": ("all-gather-implementation", 2),
    "reduce_scatter": ("reduce-scatter-implementation", 7),
}
#: The grid of ASTRA-sim settings each native algorithm runs under.
SETTINGS = {
    "preferred-dataset-splits": (1, 4, 16),
    "active-chunks-per-dimension": (1, 2),
    # localBWAware never ran faster than baseline on these one-dimensional networks (90 of
    # 90 cases, 2026-12-02): ``--optimizations`` adds it back
    "collective-optimization": ("baseline",),
    "num-queues-per-dim": (1, 2),
}
#: Settings given on ASTRA-sim's command line, not in the system JSON (``CmdLineParser.cc``:
#: ``--num-queues-per-dim``, 2 runs a ring in both directions).
COMMAND_LINE = ("num-queues-per-dim",)
FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")


def compile_proto(astra: Path, folder: Path) -> Any:
    """``et_def_pb2`` of the checkout's Chakra, compiled by protoc into ``folder``."""
    proto = astra / "extern/graph_frontend/chakra/schema/protobuf"
    subprocess.run(
        ["protoc", "et_def.proto", f"--proto_path={proto}", f"--python_out={folder}"], check=True
    )
    sys.path.insert(0, str(folder))
    return importlib.import_module("et_def_pb2")


def _delimited(message: Any) -> bytes:
    data = message.SerializeToString()
    size, out = len(data), bytearray()
    while size > 0x7F:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    out.append(size)
    return bytes(out) + data


def workload(pb: Any, prefix: Path, npus: int, comm_type: int, comm_size: int) -> Path:
    """One collective node per NPU (``PREFIX.<npu>.et``), as ASTRA-sim's generator scripts."""
    for npu in range(npus):
        node = pb.Node(id=0, name="collective", type=pb.COMM_COLL_NODE)
        node.attr.append(pb.AttributeProto(name="is_cpu_op", bool_val=False))
        node.attr.append(pb.AttributeProto(name="comm_type", int64_val=comm_type))
        node.attr.append(pb.AttributeProto(name="comm_size", int64_val=comm_size))
        data = _delimited(pb.GlobalMetadata(version="0.0.4")) + _delimited(node)
        Path(f"{prefix}.{npu}.et").write_bytes(data)
    return prefix


def run_astra(astra: Path, folder: Path, network: Path, work: Path, system: dict[str, Any],
              npus: int, limit: float, binary: str = BINARY) -> float | None:  # fmt: skip
    """ASTRA-sim's time in µs (the last NPU to finish), None if it fails or times out."""
    path = folder / "system.json"
    flags = [f"--{key}={system[key]}" for key in COMMAND_LINE if key in system]
    path.write_text(json.dumps({k: v for k, v in system.items() if k not in COMMAND_LINE}))
    memory = astra / "examples/remote_memory/analytical/no_memory_expansion.json"
    printed = folder / "astra.out"  # a file: ASTRA-sim may print gigabytes at 256 MiB
    try:
        with printed.open("w") as out:
            done = subprocess.run(
                [str(astra / binary), f"--workload-configuration={work}",
                 f"--system-configuration={path}", f"--network-configuration={network}",
                 f"--remote-memory-configuration={memory}", *flags],
                stdout=out, stderr=subprocess.DEVNULL, timeout=limit, cwd=folder,
            )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    with printed.open() as lines:
        times = {int(i): int(t) for line in lines if "finished" in line
                 for i, t in FINISHED.findall(line)}  # fmt: skip
    printed.unlink()
    if done.returncode != 0 or len(times) != npus:
        return None
    return max(times.values()) / 1000


def base_system() -> dict[str, Any]:
    """The system JSON every run shares. ``endpoint-delay`` is 1 ns, the least ASTRA-sim
    runs a native collective with: at 0 its event queue schedules an event at the current
    time and stops (``common/event-queue/EventQueue.cpp`` line 33 of astra-network-analytical
    599a047, ``current_event_list.get_event_time() > current_time``). Custom traces do not
    use it (``CustomAlgorithm::issue`` sends with delay 0)."""
    return {"scheduling-policy": "FIFO", "endpoint-delay": 1, "local-reduction-delay": 0,
            "local-mem-bw": 1_000_000, "boost-mode": 0}  # fmt: skip


def parse_network(
    spec: str, bandwidth: float, latency: float
) -> tuple[str, list[str], list[int], list[float], list[float]]:
    """``(label, blocks, npus per dimension, bandwidths GiB/s, latencies ns)`` of
    ``BLOCK:N[@BW/LAT]`` dimensions joined by ``x`` (dimension 0 first, as ASTRA-sim's
    lists), or a name of :data:`NAMED`.

    Examples
    --------
    >>> parse_network("Ring:8", 50, 500), parse_network("HGX-H100", 50, 500)[1:]
    (('Ring:8', ['Ring'], [8], [50], [500]), (['Switch'], [8], [400.0], [936.25]))
    >>> parse_network("DGX-2box", 50, 500)[1:]
    (['Switch', 'Switch'], [8, 2], [400.0, 50.0], [936.25, 2000.0])
    """
    label, text = spec, NAMED.get(spec, spec)
    blocks, sizes, bandwidths, latencies = [], [], [], []
    for dimension in text.split("x"):
        shape, _, links = dimension.partition("@")
        block, npus = shape.split(":")
        bw, lat = links.split("/") if links else (bandwidth, latency)
        blocks.append(block)
        sizes.append(int(npus))
        bandwidths.append(float(bw) if links else bw)
        latencies.append(float(lat) if links else lat)
    return label, blocks, sizes, bandwidths, latencies


def known_natives(paths: list[str]) -> dict[tuple[str, str, str], tuple[float, str]]:
    """``(network, collective, size) -> (best native µs, its setting)`` from earlier runs
    of this script: ``--json`` files (a list of rows) or its printed output (a row of JSON
    a line); the fastest where several give a case."""
    known = {}
    for path in paths:
        text = Path(path).read_text()
        rows = json.loads(text) if text.lstrip().startswith("[") else [
            json.loads(line) for line in text.splitlines() if line.startswith("{")
        ]  # fmt: skip
        for row in rows:
            key = (row.get("network"), row.get("collective"), row.get("size"))
            if row.get("native_us") is not None and (
                key not in known or row["native_us"] < known[key][0]
            ):  # the fastest of the runs given
                known[key] = (row["native_us"], row["native"])
    return known


def case(astra: Path | None, pb: Any, folder: Path, label: str, blocks: list[str],
         sizes: list[int], bandwidths: list[float], latencies: list[float], collective: str,
         size: int, limit: float, store_and_forward: bool = True,
         binary: str = BINARY, known: tuple[float, str] | None = None,
         only: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """One network, collective and size: every native run and ours (ASTRA-sim's runs only
    with ``astra``). On several dimensions the natives run every choice of one algorithm
    per dimension (ASTRA-sim's implementation lists). ``known``: the best native of an
    earlier run of the same ASTRA-sim (the natives do not run again); ``only``: run just
    the native settings of these labels (as printed: ``direct/ring 4 2 localBWAware 1``)."""
    npus = math.prod(sizes)
    config = {"topology": blocks, "npus_count": sizes, "bandwidth": bandwidths,
              "latency": latencies}  # fmt: skip
    network = folder / "network.yml"
    network.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in config.items()))
    topology = from_astra_network(config, name=label)
    key, comm_type = KEYS[collective]
    comm_size = astra_sim_comm_size(collective, size, npus)
    row: dict[str, Any] = {"network": label, "collective": collective,
                           "size": size_text(size)}  # fmt: skip
    if comm_size is None:
        return {**row, "skipped": "no whole comm_size"}
    best: tuple[float, str] | None = known
    work = folder / "work"
    if astra is not None:
        workload(pb, work, npus, comm_type, comm_size)
    choices = itertools.product(NATIVE[collective], repeat=len(blocks))
    for algorithms in choices if astra is not None and known is None else ():
        for values in itertools.product(*SETTINGS.values()):
            setting = dict(zip(SETTINGS, values, strict=True))
            system = {**base_system(), **setting, key: list(algorithms)}
            named = "/".join(algorithms) + " " + " ".join(str(v) for v in values)
            if only and named not in only:
                continue
            took = run_astra(astra, folder, network, work, system, npus, limit, binary)
            if took is not None and (best is None or took < best[0]):
                best = (took, named)
    start = time.process_time()
    latency_us = Fraction(latencies[0]) / 1000
    [one] = planned_traces(topology, collective, [size], overhead=0, default_latency=latency_us,
                           store_and_forward=store_and_forward,
                           shortest_message=astra_sim_shortest_message(topology))  # fmt: skip
    cpu = time.process_time() - start
    prefix = folder / "ours"
    for rank, data in enumerate(one.traces):
        Path(f"{prefix}.{rank}.et").write_bytes(data)
    traces = read_chakra(str(prefix))
    net = Network.of(topology, latency_us)
    whole = replace(net, store_and_forward=True)  # as ASTRA-sim's backend moves a message
    predicted = forwarded = None
    try:  # plan ran a compact schedule from its quotient; the traces hold every task
        graph = chakra_tasks(traces, topology, net, slice_bytes=one.slice_bytes)
        ties = chakra_ties(traces, graph)  # a compact schedule's, as plan ran it
        predicted = simulate(graph, net, size, overhead=0, ties=ties).time_us
        graph = chakra_tasks(traces, topology, whole, slice_bytes=one.slice_bytes)
        forwarded = simulate(graph, whole, size, overhead=0, ties=ties).time_us
    except ScheduleError as error:  # e.g. more steps than the simulator's limit
        print(f"{label} {collective} {size_text(size)}: our simulator: {error}", flush=True)
    system = {**base_system(), "preferred-dataset-splits": 1, "active-chunks-per-dimension": 1,
              # one trace set for every dimension: ASTRA-sim refuses a list of several
              # ("There should be 1 Chakra ET only", CollectiveImplLookup.cc lines 136-164)
              ASTRA_SIM_COLLECTIVES[collective]: [str(prefix)]}  # fmt: skip
    ours = (None if astra is None
            else run_astra(astra, folder, network, work, system, npus, limit, binary))  # fmt: skip
    return {
        **row,
        "native_us": None if best is None else round(best[0], 3),
        "native": None if best is None else best[1],
        "ours_astra_us": None if ours is None else round(ours, 3),
        "ours_sim_us": None if predicted is None else round(predicted, 3),
        "ours_sim_saf_us": None if forwarded is None else round(forwarded, 3),
        "plan_us": round(one.time_us, 3),
        # plan's own choice where it sends messages under 1 ns in ASTRA-sim (not written)
        **({} if one.chosen == one.method else {"planned": one.chosen}),
        "method": f"{one.method}, {'whole' if one.slice_bytes is None else size_text(one.slice_bytes)}",
        "native_over_ours": None if best is None or ours is None else round(best[0] / ours, 3),
        "sim_over_astra": None if ours is None or predicted is None else round(predicted / ours, 4),
        "saf_over_astra": None if ours is None or forwarded is None else round(forwarded / ours, 4),
        "plan_cpu_s": round(cpu, 2),
    }


def moe_case(astra: Path | None, pb: Any, folder: Path, label: str, block: str, npus: int,
             spec: str, bandwidth: float, latency: float, limit: float,
             slice_bytes: int) -> dict[str, Any]:  # fmt: skip
    """One MoE dispatch (:func:`optcoll.core.moe.moe_demand` of ``spec``) on one network:
    our all-to-allv traces (the proved optimum's routes, and direct sends; in
    ``slice_bytes`` slices, :func:`optcoll.export.chakra_alltoallv.chakra_demand_traces`)
    in ASTRA-sim and in our store-and-forward simulator, against ASTRA-sim's native
    all-to-all (``ComType::All_to_All`` sends ``comm_size / N`` to every peer, ``Ring.cc``
    lines 83-85): padded to the largest pair (``comm_size = N * max``: what a uniform
    all-to-all must send to carry the demand) and, for reference, the mean pair."""
    from optcoll.core.moe import moe_demand, parse_moe_spec
    from optcoll.export.chakra_alltoallv import chakra_demand_traces
    from optcoll.schedules.alltoallv import demand_schedule
    from optcoll.sim.demand import demand_tasks

    config = {"topology": [block], "npus_count": [npus], "bandwidth": [bandwidth],
              "latency": [latency]}  # fmt: skip
    network = folder / "network.yml"
    network.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in config.items()))
    topology = from_astra_network(config, name=label)
    demand = moe_demand(parse_moe_spec(spec), topology.compute_nodes)
    pairs = [b for s, row in enumerate(demand.bytes) for d, b in enumerate(row) if s != d]
    row: dict[str, Any] = {"network": label, "max_pair": max(pairs),
                           "mean_pair": sum(pairs) // len(pairs)}  # fmt: skip
    whole = Network.of(topology, Fraction(latency) / 1000, store_and_forward=True)
    for method in ("optimal", "direct"):
        schedule = demand_schedule(topology, demand, method)
        prefix = folder / method
        for rank, data in enumerate(
            chakra_demand_traces(topology.compute_nodes, schedule.routes, slice_bytes=slice_bytes)
        ):
            Path(f"{prefix}.{rank}.et").write_bytes(data)
        graph = demand_tasks(whole, schedule.routes, slice_bytes)
        row[f"{method}_bound_us"] = round(schedule.time_us, 3)
        row[f"{method}_sim_saf_us"] = round(simulate(graph, whole, 1, overhead=0).time_us, 3)
        if astra is not None:
            system = {**base_system(), "preferred-dataset-splits": 1,
                      "active-chunks-per-dimension": 1,
                      ASTRA_SIM_COLLECTIVES["alltoall"]: [str(prefix)]}  # fmt: skip
            workload(pb, folder / "work", npus, 6, npus * max(pairs))
            took = run_astra(astra, folder, network, folder / "work", system, npus, limit)
            row[f"{method}_astra_us"] = None if took is None else round(took, 3)
    for name, pair in (("padded", max(pairs)), ("mean", sum(pairs) // len(pairs))):
        best: tuple[float, str] | None = None
        if astra is not None:
            workload(pb, folder / "work", npus, 6, npus * pair)
        for algorithm in ("ring", "direct", "halvingDoubling") if astra is not None else ():
            for values in itertools.product(*SETTINGS.values()):
                setting = dict(zip(SETTINGS, values, strict=True))
                system = {**base_system(), **setting, "all-to-all-implementation": [algorithm]}
                took = run_astra(astra, folder, network, folder / "work", system, npus, limit)
                if took is not None and (best is None or took < best[0]):
                    best = (took, f"{algorithm} " + " ".join(str(v) for v in values))
        row[f"native_{name}_us"] = None if best is None else round(best[0], 3)
        row[f"native_{name}"] = None if best is None else best[1]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--astra-sim", help="built astra-sim checkout (without: ours only)")
    parser.add_argument(
        "--networks",
        nargs="+",
        help="BLOCK:N[@BW/LAT][xBLOCK:N...] or a name (default: the --grid)",
    )
    parser.add_argument(
        "--grid",
        choices=("1d", "2d"),
        default="1d",
        help="default networks: ASTRA-sim's 1-D blocks, or NETWORKS_2D",
    )
    parser.add_argument(
        "--backend",
        choices=tuple(BINARIES),
        default="congestion-aware",
        help="ASTRA-sim's analytical backend (several dimensions on the "
        "congestion-aware one need the patch astra_sim_multidim.patch)",
    )
    parser.add_argument("--collectives", nargs="+", default=list(COLLECTIVES))
    parser.add_argument("--sizes", nargs="+", default=list(SIZES))
    parser.add_argument("--bandwidth", type=float, default=50, help="GiB/s (default 50)")
    parser.add_argument("--latency", type=float, default=500, help="ns (default 500)")
    parser.add_argument("--limit", type=float, default=600, help="seconds per ASTRA-sim run")
    parser.add_argument("--switch-model", choices=("store-and-forward", "cut-through"),
                        default="store-and-forward",
                        help="the switch model plan chooses our traces under (default: "
                             "store-and-forward, as ASTRA-sim's analytical backend)")  # fmt: skip
    parser.add_argument("--json", help="also write the rows as JSON")
    parser.add_argument("--native-settings", nargs="+", default=[],
                        help="run only these native settings (labels as printed, e.g. "
                             "'direct/ring 4 2 localBWAware 1'), not the whole grid")  # fmt: skip
    parser.add_argument("--natives", nargs="+", default=[],
                        help="reuse the best natives of earlier runs of the same ASTRA-sim "
                             "(--json files or this script's printed rows) instead of "
                             "running them again")  # fmt: skip
    parser.add_argument("--optimizations", nargs="+",
                        help="ASTRA-sim collective-optimization values to try (default: "
                             "baseline on 1-D networks, also localBWAware on several "
                             "dimensions)")  # fmt: skip
    parser.add_argument(
        "--moe",
        help="instead: an MoE dispatch (optcoll.core.moe spec, e.g. "
        "tokens=1024,experts=64,top_k=8,zipf=1.2) on each network",
    )
    parser.add_argument("--moe-slice", default="512K", help="slice of the MoE traces")
    args = parser.parse_args(argv)
    networks = args.networks or list(NETWORKS if args.grid == "1d" else NETWORKS_2D)
    binary = BINARIES[args.backend]
    astra = None if args.astra_sim is None else Path(args.astra_sim).resolve()
    if astra is not None and not (astra / binary).exists():
        raise SystemExit(f"{astra}: no {binary}: build it with build/astra_analytical/build.sh")
    rows = []
    natives = known_natives(args.natives)
    with tempfile.TemporaryDirectory(prefix="optcoll-astra-") as tmp:
        pb = None if astra is None else compile_proto(astra, Path(tmp))
        for spec in networks:
            label, blocks, sizes, bandwidths, latencies = parse_network(
                spec, args.bandwidth, args.latency
            )
            SETTINGS["collective-optimization"] = tuple(
                args.optimizations
                or (["baseline"] if len(blocks) == 1 else ["baseline", "localBWAware"])
            )
            if args.moe:
                if len(blocks) != 1:
                    raise SystemExit(f"--moe runs on one-dimensional networks, not {spec}")
                folder = Path(tempfile.mkdtemp(dir=tmp))
                rows.append(moe_case(astra, pb, folder, label, blocks[0], sizes[0], args.moe,
                                     bandwidths[0], latencies[0], args.limit,
                                     parse_size(args.moe_slice)))  # fmt: skip
                print(json.dumps(rows[-1]), flush=True)
                continue
            for collective in args.collectives:
                for size in args.sizes:
                    folder = Path(tempfile.mkdtemp(dir=tmp))
                    rows.append(case(astra, pb, folder, label, blocks, sizes, bandwidths,
                                     latencies, collective, parse_size(size), args.limit,
                                     args.switch_model == "store-and-forward",
                                     binary, natives.get((label, collective,
                                                          size_text(parse_size(size)))),
                                     tuple(args.native_settings)))  # fmt: skip
                    print(json.dumps(rows[-1]), flush=True)
    if args.moe:
        columns = list(rows[0]) if rows else []
        print_table(columns, [[row.get(c, "-") for c in columns] for row in rows])
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
        return 0
    columns = ["network", "collective", "size", "native_us", "native", "ours_astra_us",
               "ours_sim_us", "ours_sim_saf_us", "plan_us", "method", "native_over_ours",
               "sim_over_astra", "saf_over_astra"]  # fmt: skip
    print_table(columns, [[row.get(c, "-") for c in columns] for row in rows])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
