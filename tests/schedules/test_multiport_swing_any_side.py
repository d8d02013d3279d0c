"""Multiport Swing on tori whose sides are not powers of two: delivered (executed by the
step verifier), its steps counted and its bytes per step exact."""

from __future__ import annotations

import math

import pytest

from optcoll.schedules.baselines.dissemination import gather_rounds
from optcoll.schedules.baselines.routing import torus_shape
from optcoll.schedules.baselines.step_catalogue import step_schedules
from optcoll.schedules.baselines.swing import (
    multiport_swing_allgather,
    multiport_swing_allreduce,
    multiport_swing_reduce_scatter,
    torus_rounds,
)
from optcoll.topologies import build
from optcoll.verify.steps import verify_steps

SHAPES = [(3,), (5,), (6,), (9,), (10,), (12,), (3, 3), (6, 6), (9, 9), (5, 7), (8, 9), (3, 4, 5)]
BUILDERS = [multiport_swing_allgather, multiport_swing_reduce_scatter, multiport_swing_allreduce]


def _nodes(n: int) -> list[str]:
    return [f"n{i}" for i in range(n)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("build", BUILDERS)
def test_delivers_in_sum_of_ceil_log2_steps(shape, build):
    n = math.prod(shape)
    schedule = build(_nodes(n), shape)
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    half = sum((d - 1).bit_length() for d in shape)
    assert schedule.num_steps == (2 * half if schedule.collective == "allreduce" else half)
    assert schedule.blocks == 2 * len(shape) * n
    # every node sends (and receives) exactly (N - 1) blocks of each of the 2D shares a half
    halves = 2 if schedule.collective == "allreduce" else 1
    sent = dict.fromkeys(schedule.compute_nodes, 0)
    received = dict.fromkeys(schedule.compute_nodes, 0)
    for step in schedule.steps:
        for m in step:
            sent[m.src] += len(m.blocks)
            received[m.dst] += len(m.blocks)
    assert set(sent.values()) == set(received.values()) == {halves * 2 * len(shape) * (n - 1)}


def _received_by_rank_0(schedule, share):
    """Blocks of ``share`` rank 0 receives in each step."""
    n = len(schedule.compute_nodes)
    first = schedule.compute_nodes[0]
    return [
        sum(1 for m in step if m.dst == first for b in m.blocks if b // n == share)
        for step in schedule.steps
    ]


def test_bytes_per_step_on_an_odd_ring():
    # ring of 9: shifts 4, -2, 1, 1 (allgather order): reach 2, 4, 8, 9
    schedule = multiport_swing_allgather(_nodes(9), (9,))
    assert _received_by_rank_0(schedule, 0) == [1, 2, 4, 1]
    assert _received_by_rank_0(schedule, 1) == [1, 2, 4, 1]
    assert schedule.block_bytes(18 * 1024) == 1024


def test_bytes_per_step_on_an_even_ring():
    # ring of 6: Swing's rho 3, -1, 1 (allgather order); rank 0's partner of the last step
    # already holds none of rank 0's four blocks but two of the others
    schedule = multiport_swing_allgather(_nodes(6), (6,))
    assert _received_by_rank_0(schedule, 0) == [1, 2, 2]
    rs = multiport_swing_reduce_scatter(_nodes(6), (6,))
    sent_by_0 = [sum(len(m.blocks) for m in step if m.src == "n0") for step in rs.steps]
    assert sent_by_0 == [4, 4, 2]  # per step over both shares: 2, 2 and 1 blocks each


def test_odd_sides_shift_and_even_sides_pair():
    (first,) = torus_rounds((9,), 0, 1)[:1]
    assert sorted(first)[:2] == [(0, 4), (1, 5)]  # every rank sends 4 ahead
    last = torus_rounds((10,), 0, -1)[-1]
    assert {(0, 9), (9, 0)} <= set(last)  # Swing's first step, mirrored: 0 <-> 9


@pytest.mark.parametrize("spec", ["torus:9x9", "torus:6x6", "ring:12"])
def test_plan_catalogue_offers_it_on_tori(spec):
    topology = build(spec)
    shape = torus_shape(topology)
    methods = [s.method for s in step_schedules(topology.compute_nodes, "allreduce", shape=shape)]
    assert "multiport Swing" in methods
    assert "multiport Swing (latency)" not in methods


def test_swing_pairings_reach_every_even_ring_up_to_128():
    """The docs' claim: on every even ring Swing's pairings mod ``d`` reach every rank in
    ``ceil(log2 d)`` steps (gather_rounds raises otherwise), and each step pairs ranks."""
    for d in range(2, 129, 2):
        rounds = torus_rounds((d,), 0, 1)
        assert len(rounds) == (d - 1).bit_length()
        for arcs in rounds:
            partner = dict(arcs)
            assert all(partner[partner[x]] == x for x in range(d))
        gather_rounds([1 << x for x in range(d)], rounds)
