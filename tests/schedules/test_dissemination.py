"""Dissemination: an allgather that sends what the partner lacks, and its transpose."""

from __future__ import annotations

import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.dissemination import (
    gather_rounds,
    shared_schedule,
    torus_arcs,
    transpose_rounds,
)
from optcoll.schedules.baselines.trivance import trivance_rounds
from optcoll.verify.steps import verify_steps


def _bruck(n: int) -> list[list[tuple[int, int]]]:
    rounds, distance = [], 1
    while distance < n:
        rounds.append([(x, (x - distance) % n) for x in range(n)])
        distance *= 2
    return rounds


@pytest.mark.parametrize("n", [2, 3, 5, 6, 7, 12])
def test_every_rank_receives_every_other_block_once(n):
    gathered = gather_rounds([1 << x for x in range(n)], _bruck(n))
    received = [[] for _ in range(n)]
    for arcs in gathered:
        for _, y, blocks in arcs:
            received[y] += blocks
    for y in range(n):
        assert sorted(received[y]) == [b for b in range(n) if b != y]


@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce"])
@pytest.mark.parametrize("n", [2, 3, 6, 11])
def test_the_transpose_reduces_every_input_once(collective, n):
    schedule = shared_schedule([f"r{i}" for i in range(n)], collective, [_bruck(n)] * 2, "Bruck x2")
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    assert schedule.blocks == 2 * n
    halves = 2 if collective == "allreduce" else 1
    assert schedule.num_steps == halves * len(_bruck(n))
    sent = sum(len(m.blocks) for step in schedule.steps for m in step)
    assert sent == halves * 2 * n * (n - 1)  # every rank (N - 1) blocks per share and half


def test_transpose_reverses_rounds_and_messages():
    gathered = [[(0, 1, (0,))], [(1, 2, (0, 1))]]
    assert transpose_rounds(gathered) == [[(2, 1, (0, 1))], [(1, 0, (0,))]]


def test_rounds_that_do_not_cover_are_refused():
    with pytest.raises(ScheduleError, match=r"leave rank 0 without blocks \(2,\)"):
        gather_rounds([1, 2, 4], [[(0, 1), (1, 0)], [(1, 0)]])


def test_a_block_two_senders_offer_comes_from_the_first():
    gathered = gather_rounds([1, 2, 1], [[(0, 1), (2, 1), (1, 0), (1, 2)]])
    assert gathered == [[(0, 1, (0,)), (1, 0, (1,)), (1, 2, (1,))]]


def test_two_senders_share_an_overlap_evenly():
    # ranks 0 and 2 both hold blocks 0 and 1, rank 1 needs them: one block from each
    gathered = gather_rounds([0b11, 0, 0b11], [[(0, 1), (2, 1)]])
    assert gathered == [[(0, 1, (0,)), (2, 1, (1,))]]


def test_an_overlap_goes_after_each_senders_own_blocks():
    # rank 0 offers blocks 0-3 alone, rank 2 blocks 6-9 alone, both offer 4 and 5: taken
    # in block order the overlap would all go to rank 2 (fewer so far), 4 blocks and 6
    rounds = [[(0, 1), (2, 1)], [(1, 0), (1, 2)]]
    gathered = gather_rounds([0b111111, 0, 0b1111110000], rounds)
    assert [len(blocks) for _, _, blocks in gathered[0]] == [5, 5]


def test_trivance_on_torus_8x8_sends_equal_last_messages():
    # sides of 8 reached by +-3 then +-1: the last step's senders share a row of 8 blocks
    rounds = trivance_rounds((8, 8), 0)
    last = gather_rounds([1 << x for x in range(64)], rounds)[-1]
    assert {len(blocks) for _, _, blocks in last} == {20}


def test_an_arc_listed_twice_is_one_message():
    # a side of 6 at distance 3: x + 3 and x - 3 are the same partner
    assert gather_rounds([1, 2], [[(0, 1), (0, 1), (1, 0)]]) == [[(0, 1, (0,)), (1, 0, (1,))]]


def test_torus_arcs_take_the_sides_in_turn_backwards():
    rounds = torus_arcs((3, 2), 1, [[lambda c: (c + 1,)], [lambda c: (c + 1,)]])
    # reduce-scatter order: side 1 (stride 1) then side 0 (stride 2); the allgather reverses
    assert rounds[0][0] == (0, 2) and rounds[1][0] == (0, 1)
