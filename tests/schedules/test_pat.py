"""NCCL's PAT at small sizes (dimension-reversed Bruck, fully aggregated): delivers for
N = 2 .. 17 (executed by the independent checker), any N in ceil(log2 N) steps, N - 1
blocks per rank, the first allgather message one block to the farthest partner and the
reduce-scatter the same trees backwards."""

from __future__ import annotations

import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.pat import pat_allgather, pat_reduce_scatter
from optcoll.verify.steps import verify_steps


def _nodes(n: int) -> list[str]:
    return [f"r{i}" for i in range(n)]


@pytest.mark.parametrize("n", range(2, 18))
@pytest.mark.parametrize("build", [pat_allgather, pat_reduce_scatter])
def test_pat_delivers_in_ceil_log2_steps(n, build):
    schedule = build(_nodes(n))
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    assert schedule.num_steps == (n - 1).bit_length()
    for rank in _nodes(n):
        sent = sum(len(m.blocks) for step in schedule.steps for m in step if m.src == rank)
        assert sent == n - 1
        assert all(sum(m.src == rank for m in step) == 1 for step in schedule.steps)


@pytest.mark.parametrize("n", [5, 8, 12, 16])
def test_distances_farthest_first_and_mirror(n):
    k = (n - 1).bit_length()
    gather = pat_allgather(_nodes(n))
    scatter = pat_reduce_scatter(_nodes(n))
    for t, step in enumerate(gather.steps):
        d = 1 << (k - 1 - t)
        for m in step:
            assert (int(m.src[1:]) - int(m.dst[1:])) % n == d
    assert {len(m.blocks) for m in gather.steps[0]} == {1}
    # the reduce-scatter is the allgather backwards: same blocks, reversed arcs
    for forward, backward in zip(gather.steps, reversed(scatter.steps), strict=True):
        assert sorted((m.dst, m.src, m.blocks) for m in forward) == sorted(
            (m.src, m.dst, m.blocks) for m in backward
        )
        assert all(m.reduce for m in backward)


def test_refuses_repeated_nodes():
    with pytest.raises(ScheduleError, match="distinct"):
        pat_allgather(["a", "a"])
