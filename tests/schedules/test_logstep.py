"""Log-step schedules (recursive doubling and halving, Rabenseifner, Bruck, Swing): each
delivers its collective for N = 2 .. 17, executed by the independent checker, in the
number of steps and with the message sizes the algorithms are known for."""

from __future__ import annotations

import math

import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.logstep import (
    Fold,
    bruck_allgather,
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
)
from optcoll.schedules.baselines.step_catalogue import STEP_BUILDERS, step_schedules
from optcoll.schedules.baselines.swing import rho, swing_pairings
from optcoll.verify.steps import verify_steps

SIZES = range(2, 18)
BUILDERS = [(c, b) for c, builders in STEP_BUILDERS.items() for b in builders]


def _nodes(n: int) -> list[str]:
    return [f"r{i}" for i in range(n)]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(("collective", "build"), BUILDERS, ids=lambda x: getattr(x, "__name__", x))
def test_every_schedule_delivers(n, collective, build):
    schedule = build(_nodes(n))
    assert schedule.collective == collective
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    assert verdict.messages == schedule.messages


@pytest.mark.parametrize("n", SIZES)
def test_step_counts(n):
    nodes = _nodes(n)
    k = n.bit_length() - 1
    extra = 0 if n == 1 << k else 2
    assert recursive_doubling_allgather(nodes).num_steps == k + extra
    assert recursive_halving_reduce_scatter(nodes).num_steps == k + extra
    assert recursive_doubling_allreduce(nodes).num_steps == k + extra
    assert rabenseifner_allreduce(nodes).num_steps == 2 * k + extra
    assert bruck_allgather(nodes).num_steps == math.ceil(math.log2(n))
    for schedule in step_schedules(nodes, "allreduce"):
        # direct: 1 and 2 steps; Trivance: log3 N (tests/schedules/test_trivance.py)
        if schedule.method not in ("one-shot", "two-shot", "Trivance (latency)"):
            assert schedule.num_steps in (k + extra, 2 * k + extra)


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_message_sizes_power_of_two(n):
    """Doubling sends 2^s blocks in step s, halving n / 2^(s+1), every rank one message
    per step; recursive doubling allreduce sends the whole vector every step."""
    k = n.bit_length() - 1
    nodes = _nodes(n)
    doubling = recursive_doubling_allgather(nodes)
    assert [{len(m.blocks) for m in step} for step in doubling.steps] == [{2**s} for s in range(k)]
    halving = recursive_halving_reduce_scatter(nodes)
    assert [{len(m.blocks) for m in step} for step in halving.steps] == [
        {n >> (s + 1)} for s in range(k)
    ]
    assert all(m.reduce for step in halving.steps for m in step)
    for schedule in (doubling, halving, recursive_doubling_allreduce(nodes)):
        for step in schedule.steps:
            assert sorted(m.src for m in step) == sorted(nodes)
            assert sorted(m.dst for m in step) == sorted(nodes)
    assert {len(m.blocks) for step in recursive_doubling_allreduce(nodes).steps for m in step} == {
        n
    }
    # Rabenseifner moves 2 (n - 1) / n of the vector per rank, in blocks of M / n
    assert sum(len(s[0].blocks) for s in rabenseifner_allreduce(nodes).steps) == 2 * (n - 1)


@pytest.mark.parametrize("n", SIZES)
def test_bruck_moves_n_minus_one_blocks_per_rank(n):
    schedule = bruck_allgather(_nodes(n))
    for rank in _nodes(n):
        sent = sum(len(m.blocks) for step in schedule.steps for m in step if m.src == rank)
        assert sent == n - 1


def test_fold_pairs_the_first_ranks():
    f = Fold(11)  # p = 8, r = 3
    assert f.extra == {0: 1, 2: 3, 4: 5}
    assert f.active == [1, 3, 5, 6, 7, 8, 9, 10]
    assert sorted(b for g in f.groups for b in g) == list(range(11))


def test_swing_distances_and_pairings():
    """rho_s = (1 - (-2)^(s+1)) / 3 and every step an involution without fixed points;
    on 16 ranks the partners are 1, 1, 3, 5 apart along the ring (recursive doubling:
    1, 2, 4, 8)."""
    assert [rho(s) for s in range(6)] == [1, -1, 3, -5, 11, -21]
    for p in (2, 4, 8, 16, 32):
        for pair in swing_pairings(p):
            for x in range(p):
                assert pair(x) != x and pair(pair(x)) == x
    ring = [min(abs(pair(0) - 0) % 16, (0 - pair(0)) % 16) for pair in swing_pairings(16)]
    assert ring == [1, 1, 3, 5]


def test_too_few_or_repeated_nodes_are_refused():
    with pytest.raises(ScheduleError, match="2 or more"):
        recursive_doubling_allgather(["a"])
    with pytest.raises(ScheduleError, match="distinct"):
        bruck_allgather(["a", "a"])
    assert step_schedules(["a"], "allgather") == []
