"""Fused MSCCL steps (rcs/rrcs): written only for runtimes whose kernels run them, accepted by
the independent checker, one overhead each in the simulator, and never left deadlocked."""

from __future__ import annotations

import json

import pytest

from optcoll.cli import main
from optcoll.core.msccl_runtimes import RUNTIMES
from optcoll.export.msccl_blocks import _Step
from optcoll.export.msccl_fusion import deadlocked_fusions, fuses, longest_chain
from optcoll.verify.msccl import verify_file

FUSED = ('type="rcs"', 'type="rrcs"', 'type="rrs"')


def _export(tmp_path, capsys, topo, size, runtime):
    out = tmp_path / f"{runtime}.xml"
    args = ["export", topo, "--collective", "allreduce", "--size", size, "--overhead", "1",
            "--latency", "0.5", "--format", "msccl", "-o", str(out), "--runtime", runtime,
            "--json"]  # fmt: skip
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    return out, data


def test_only_rccl_lacks_fused_steps():
    # ROCm/rccl msccl_setup.cc:430-437 refuses rcs/rrs/rrcs/rrc at launch
    assert [name for name, p in RUNTIMES.items() if not fuses(p)] == ["rccl"]
    assert "msccl_setup.cc:430-437" in RUNTIMES["rccl"].sources["launch_step_types"]


def test_ring_trees_fuse_their_relays_and_lose_an_overhead_per_hop(tmp_path, capsys):
    """ring:8 allreduce at 1 MiB (plan: two trees per root, 19.24 µs in full, ties first
    come first served; 18.24 from its quotient until 2026-12-03): unfused (rccl) every
    relay receives and then sends, overheads more than plan; fused, fewer. For rccl the
    file written is the fused Trivance step schedule, each message in 2 pieces, a channel
    per transfer."""
    plain, plain_data = _export(tmp_path, capsys, "ring:8", "1M", "rccl")
    fused, fused_data = _export(tmp_path, capsys, "ring:8", "1M", "msccl-executor")
    plain_text, fused_text = plain.read_text(), fused.read_text()
    assert not any(kind in plain_text for kind in FUSED)
    assert fused_text.count('type="rcs"') > 0 and fused_text.count('type="rrcs"') > 0
    assert verify_file(fused, runtime="msccl-executor").ok
    plan_us = fused_data["files"][0]["plan_time_us"]
    trees = {c["method"]: c for c in plain_data["compared"]}["optimal (k=2)"]
    assert plan_us == trees["plan_time_us"] == 19.2429
    assert trees["file_time_us"] == pytest.approx(
        plan_us + 7.3107, abs=1e-3
    )  # 26.5536, as before the full timing
    (written,) = plain_data["files"]
    assert (written["method"], written["pieces"], written["spread"]) == ("fused Trivance", 2, True)
    assert written["file_time_us"] == 23.6411
    assert fused_data["files"][0]["file_time_us"] == pytest.approx(20.5536, abs=1e-3)
    assert "every receive is a step of its own (rccl runs no fused" in plain_data["not_carried"]
    assert "unless fused with the send forwarding it" in fused_data["not_carried"]


def _step(kind, gpu, link, key, tb):
    return _Step(kind, ("i", 0), ("o", 0), 1, key, gpu, link, tb=tb)


def test_a_ring_of_fused_steps_is_found_deadlocked_and_one_fusion_undone():
    """Three GPUs, each sending its chunk to the next, forwarding the one it receives
    (rcs) and receiving the last: with connections of one chunk every fused step holds a
    chunk it has no room to send. One fusion (GPU 0's) undone, the ring completes."""

    def ring(fused_on):
        tbs = {}
        for g in range(3):
            nxt, prv = (g + 1) % 3, (g - 1) % 3
            block = ("fused", prv, 0)
            first = _step("s", g, (g, nxt), (0,), block)
            middle = _step("r", g, (prv, g), (1,), block)
            forward = _step("s", g, (g, nxt), (2,), block)
            last = _step("r", g, (prv, g), (3,), block)
            if g in fused_on:
                middle.type, middle.fused = "rcs", forward
                steps = [first, middle, last]
            else:
                steps = [first, middle, forward, last]
            tbs[g] = [(block, steps)]
        return tbs

    stuck = deadlocked_fusions(ring({0, 1, 2}))
    assert [(st.gpu, st.type) for st in stuck] == [(0, "rcs")]
    assert deadlocked_fusions(ring({1, 2})) == []
    # GPU 0's four steps one after another are the longest chain, fused elsewhere or not
    assert longest_chain(ring({1, 2})) == longest_chain(ring(set())) == 4
