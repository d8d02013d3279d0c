"""NCCL's channel count per size (enqueue.cc's rule) for the NCCL-like rings."""

from __future__ import annotations

import pytest

from optcoll.schedules.baselines import nccl_channels, nccl_ring_schedule
from optcoll.schedules.collectives import allreduce_core
from optcoll.sim.nccl_model import nccl_ring_channels
from optcoll.sim.simulator import simulate_schedule
from optcoll.sim.size_plan import candidates
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule


@pytest.mark.parametrize(
    ("protocol", "per_channel"),
    [("LL", 8 * 32 * 512), ("LL128", 8 * 640), ("Simple", 64 * 512)],
)
def test_a_channel_less_while_the_bytes_do_not_fill_its_threads(protocol, per_channel):
    """nc = min(C, max(1, floor(bytes / (threads x threshold)))), 32 ranks."""
    for size in (1, per_channel - 1, per_channel, 3 * per_channel + 5, 100 * per_channel):
        expected = min(16, max(1, size // per_channel))
        assert nccl_channels(16, size, 32, protocol) == expected


def test_dgx_h100_4_allreduce_channels_and_times():
    """dgx-h100:4: NCCL's ring runs 1 channel at 1 KiB (LL: 131,072 bytes a channel), 8 at
    1 MiB, all 16 from 4 MiB (Simple); at 1 KiB one channel pays 16 x fewer overheads."""
    topo = build("dgx-h100:4")
    counts = nccl_ring_channels(topo, "allreduce", [2**10, 2**20, 2**22, 2**30])
    assert counts == {2**10: 1, 2**20: 8, 2**22: 16, 2**30: 16}
    one = allreduce_core(nccl_ring_schedule(topo, 1), topo)
    every = allreduce_core(nccl_ring_schedule(topo), topo)
    assert (one.k, one.stats["method"]) == (1, "NCCL-like ring (1 channel)")
    assert verify_schedule(topo, nccl_ring_schedule(topo, 1)).valid
    fast, slow = (simulate_schedule(topo, s, 2**10).time_us for s in (one, every))
    assert fast == pytest.approx(202.00896, rel=1e-6) and slow == pytest.approx(452.0001, rel=1e-6)


def test_plan_offers_every_count_nccl_uses():
    names = [c.method for c in candidates(build("dgx-h100:4"), "allreduce")]
    nccl = [n for n in names if n.startswith("NCCL-like ring")]
    assert nccl == [
        "NCCL-like ring (16 channels)",
        "NCCL-like ring (8 channels)",
        "NCCL-like ring (2 channels)",
        "NCCL-like ring (1 channel)",
    ]
