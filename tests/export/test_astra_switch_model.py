"""Chakra exports planned for ASTRA-sim's switches, which store and forward every message.

ASTRA-sim's analytical backend delivers a chunk to the next device ``latency + size /
bandwidth`` after a link starts it and only then sends it on
(``Link::schedule_chunk_transmission``, astra-network-analytical 599a047
``congestion_aware/network/Link.cpp`` lines 117-141), and a link serves chunks first come
first served (``Link::send``, lines 55-64). So a switch holds back one whole message: a
chunk sent whole costs a chunk's time per hop, a slice a slice's. The model of those rules
is in ``test_astra_sim_rules.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from test_astra_sim_rules import astra_switch_time

from optcoll.cli import main
from optcoll.core.moe import MoeSpec, moe_demand
from optcoll.export.chakra_alltoallv import chakra_demand_traces
from optcoll.io.astra_sim import from_astra_network
from optcoll.schedules.alltoallv import demand_schedule
from optcoll.verify.chakra import verify_prefix
from optcoll.verify.chakra.wire import decode_trace


def run_cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def test_the_default_chakra_export_slices_below_a_chunk_on_a_switch(tmp_path):
    """On a switch of 8 (50 GB/s), an all-gather of 1 MiB has 128 KiB chunks: planned for
    store and forward the export sends them in smaller slices, and ``simulate
    --switch-model store-and-forward`` of the files gives plan's figure."""
    prefix = str(tmp_path / "ag")
    status, out, err = run_cli(["export", "star:8,bw=50", "--format", "chakra", "--size", "1M",
                                "--overhead", "0", "-o", prefix, "--json"])  # fmt: skip
    assert status == 0, err
    [entry] = json.loads(out)["sets"]
    assert entry["switch_model"] == "store-and-forward"
    assert entry["slice_bytes"] < 2**20 // 8
    assert verify_prefix(prefix).ok
    status, out, err = run_cli(["simulate", "star:8,bw=50", prefix, "--sizes", "1M",
                                "--overhead", "0", "--switch-model", "store-and-forward",
                                "--json"])  # fmt: skip
    assert status == 0, err
    result = json.loads(out)
    found = result["results"][0]["time_us"]
    assert abs(found / entry["plan_time_us"] - 1) < 1e-3, (found, entry)
    assert result["slice_bytes"] is None  # each send whole, as written: not cut again
    status, out, err = run_cli(["simulate", "star:8,bw=50", prefix, "--sizes", "1M",
                                "--overhead", "0", "--switch-model", "store-and-forward"])  # fmt: skip
    assert status == 0, err
    assert "each send whole, as the traces are sliced" in out.splitlines()[0]


def test_cut_through_planning_keeps_whole_chunks(tmp_path):
    prefix = str(tmp_path / "ag")
    status, out, err = run_cli(["export", "star:8,bw=50", "--format", "chakra", "--size", "1M",
                                "--overhead", "0", "--switch-model", "cut-through", "-o",
                                prefix, "--json"])  # fmt: skip
    assert status == 0, err
    [entry] = json.loads(out)["sets"]
    assert entry["switch_model"] == "cut-through" and entry["slice_bytes"] >= 2**20 // 8


def test_switch_model_needs_chakra(tmp_path):
    status, _, err = run_cli(["export", "ring:4", "--format", "msccl", "-o",
                              str(tmp_path / "a.xml"), "--switch-model", "cut-through"])  # fmt: skip
    assert status == 2 and "--switch-model" in err and err.count("\n") == 1


def test_sliced_alltoallv_traces_run_alike_in_any_issue_order(tmp_path):
    """An MoE dispatch on a switch of 8 (400 GiB/s, 936.25 ns, ASTRA-sim's HGX-H100):
    every message is at most the slice, check-et accepts the traces, and ASTRA-sim's rules
    give one time whatever order it issues ready nodes in, within 3 % of the bandwidth
    bound of the schedule (the proved optimum on one switch)."""
    config = {"topology": ["Switch"], "npus_count": [8], "bandwidth": [400], "latency": [936.25]}
    topology = from_astra_network(config, name="hgx")
    spec = MoeSpec(tokens=64, hidden=1024, experts=16, top_k=2, zipf=1.2)
    schedule = demand_schedule(topology, moe_demand(spec, topology.compute_nodes))
    files = chakra_demand_traces(topology.compute_nodes, schedule.routes, slice_bytes=2**14)
    for rank, data in enumerate(files):
        Path(tmp_path / f"v.{rank}.et").write_bytes(data)
    assert verify_prefix(str(tmp_path / "v")).ok
    sizes = [
        n.get("comm_size").value
        for r, data in enumerate(files)
        for n in decode_trace(data, f"v.{r}.et")[1]
        if n.get("comm_size") is not None
    ]
    assert max(sizes) <= 2**14
    times = {astra_switch_time(files, 400, 936.25, seed) for seed in range(4)}
    assert max(times) - min(times) <= 2
    assert max(times) / 1000 < 1.03 * schedule.time_us + 2 * 0.93625
