"""Bine's allgather (SC'25): Swing's partners farthest first, so the largest message goes
to the nearest partner; delivers for N = 2 .. 17 (executed by the independent checker),
in the step counts of every folded butterfly, and on a ring of 2^k ranks its step ``s``
crosses ``|rho_(k-1-s)|`` hops with ``2^s`` blocks."""

from __future__ import annotations

import pytest

from optcoll.schedules.baselines.bine import bine_allgather
from optcoll.schedules.baselines.swing import rho, swing_allgather
from optcoll.verify.steps import verify_steps


def _nodes(n: int) -> list[str]:
    return [f"r{i}" for i in range(n)]


@pytest.mark.parametrize("n", range(2, 18))
def test_bine_allgather_delivers(n):
    schedule = bine_allgather(_nodes(n))
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    k = n.bit_length() - 1
    assert schedule.num_steps == k + (0 if n == 1 << k else 2)
    if n == 1 << k:  # every rank sends N - 1 blocks in all
        for rank in _nodes(n):
            sent = sum(len(m.blocks) for step in schedule.steps for m in step if m.src == rank)
            assert sent == n - 1


@pytest.mark.parametrize("n", [4, 8, 16, 32])
def test_largest_message_to_the_nearest_partner(n):
    k = n.bit_length() - 1
    bine = bine_allgather(_nodes(n))
    swing = swing_allgather(_nodes(n))
    for s, step in enumerate(bine.steps):
        for m in step:
            src, dst = int(m.src[1:]), int(m.dst[1:])
            hops = min((src - dst) % n, (dst - src) % n)
            assert hops == abs(rho(k - 1 - s)) and len(m.blocks) == 2**s
    # Swing's allgather does the opposite: its last (largest) message goes farthest
    last = swing.steps[-1][0]
    assert len(last.blocks) == n // 2
    assert min((int(last.dst[1:]) - 0) % n, (0 - int(last.dst[1:])) % n) == abs(rho(k - 1))
