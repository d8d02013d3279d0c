"""NCCL's tuning model: the formula by hand, its protocol choice, its place in compare."""

from __future__ import annotations

import json

import pytest

from optcoll.cli import main
from optcoll.sim.nccl_model import nccl_model, nccl_model_time
from optcoll.topologies import build


def test_ring_simple_is_latency_plus_size_over_algbw():
    # one node: baseLat 8.4 + 2 (N - 1) hwLat 3.4 (NVLink); algbw = busBw N / (2 (N - 1))
    time_us = nccl_model_time("allreduce", 2**24, 8, 1, 100.0, 4, "ring", "Simple")
    assert time_us == pytest.approx(8.4 + 14 * 3.4 + 2**24 / (1000 * 100.0 * 8 / 14))


def test_multi_node_ring_pays_the_network_steps_and_the_plateau():
    # 4 nodes of 8: 6 of the 62 steps cross the network (9.6 µs), then the 1.9x plateau
    time_us = nccl_model_time("allreduce", 2**30, 32, 4, 400.0, 16, "ring", "Simple")
    latency = 1.9 * (8.4 + 56 * 3.4 + 6 * 9.6)
    assert time_us == pytest.approx(latency + 2**30 / (1000 * 400.0 * 32 / 62))


def test_tree_only_runs_allreduce_and_is_capped():
    assert nccl_model_time("allgather", 2**20, 8, 1, 100.0, 4, "tree", "Simple") is None
    # busBw 0.9 x 400 capped at 80 GB/s (more than two nodes), half of it per direction
    big = nccl_model_time("allreduce", 2**30, 32, 4, 400.0, 16, "tree", "Simple")
    assert big == pytest.approx(2 * (7 * 28 + 2 * 50) + 2**30 / (1000 * 40.0))


def test_small_messages_choose_ll_and_large_ones_simple():
    topo = build("dgx-h100:4")
    small, large = nccl_model(topo, "allreduce", 1024), nccl_model(topo, "allreduce", 2**30)
    assert small.protocol == "LL" and large == nccl_model(topo, "allreduce", 2**30)
    assert (large.algorithm, large.protocol) == ("ring", "Simple")
    # the rings' bus bandwidth is the 8 rails x 50 GB/s
    expected = 1.9 * (8.4 + 56 * 3.4 + 6 * 9.6) + 2**30 / (1000 * 400.0 * 32 / 62)
    assert large.time_us == pytest.approx(expected)


def test_compare_prints_nccls_model_beside_the_nccl_like_rings(capsys):
    assert main(["compare", "ring:8", "--collective", "allreduce", "--sizes", "1K", "1G",
                 "--json"]) == 0  # fmt: skip
    rows = {r["method"]: r for r in json.loads(capsys.readouterr().out)["methods"]}
    nccl = rows["NCCL-like ring (2 channels)"]
    assert [p["nccl_model_us"] for p in nccl["curve"]] == [
        round(nccl_model(build("ring:8"), "allreduce", m).time_us, 3) for m in (1024, 2**30)
    ]
    assert "nccl_model_us" not in rows["ring"]["curve"][0]
    assert main(["compare", "ring:8", "--sizes", "1M"]) == 0
    assert "NCCL's own tuning model (tuning.cc) at M = 1M" in capsys.readouterr().out


def test_plan_json_carries_nccls_model_per_size(capsys):
    assert (
        main(["plan", "ring:8", "--collective", "reduce-scatter", "--sizes", "1K", "--json"]) == 0
    )
    (row,) = json.loads(capsys.readouterr().out)["sizes"]
    expected = nccl_model(build("ring:8"), "reduce_scatter", 1024)
    assert row["nccl_model_us"] == round(expected.time_us, 3)
    assert row["nccl_model_choice"] == f"{expected.algorithm}/{expected.protocol}"


def test_other_collectives_are_refused():
    from optcoll.exceptions import SolveError

    with pytest.raises(SolveError, match="broadcast"):
        nccl_model(build("ring:4"), "broadcast", 1024)
