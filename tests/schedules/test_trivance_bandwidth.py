"""Bandwidth-optimal Trivance (reduce-scatter by thirds, allgather, allreduce): delivered
(executed by the step verifier), its steps counted, its bytes per step exact, and timed."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.routing import torus_shape
from optcoll.schedules.baselines.step_catalogue import step_schedules
from optcoll.schedules.baselines.trivance import (
    trivance_allgather,
    trivance_bandwidth_allreduce,
    trivance_reduce_scatter,
)
from optcoll.sim.simulator import SimOptions
from optcoll.sim.steps import route_steps, step_cost, step_tasks
from optcoll.topologies import build
from optcoll.verify.steps import verify_steps

BUILDERS = [trivance_allgather, trivance_reduce_scatter, trivance_bandwidth_allreduce]


def _log3(d: int) -> int:
    return next(k for k in range(d + 1) if 3**k >= d)


def _nodes(n: int) -> list[str]:
    return [f"n{i}" for i in range(n)]


@pytest.mark.parametrize("shape", [(2,), (3,), (4,), (5,), (8,), (9,), (10,), (27,), (28,)])
@pytest.mark.parametrize("build", BUILDERS)
def test_ring_delivers_in_ceil_log3_steps(shape, build):
    (n,) = shape
    schedule = build(_nodes(n))
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    halves = 2 if schedule.collective == "allreduce" else 1
    assert schedule.num_steps == halves * _log3(n)
    # (N - 1) / N of the data a half: sent by every node in the reduce-scatter, received
    # by every node in the allgather
    moved = dict.fromkeys(schedule.compute_nodes, 0)
    for t, step in enumerate(schedule.steps):
        gathering = schedule.collective == "allgather" or (
            schedule.collective == "allreduce" and t >= _log3(n)
        )
        for m in step:
            moved[m.dst if gathering else m.src] += len(m.blocks)
    assert set(moved.values()) == {halves * (n - 1)}


@pytest.mark.parametrize("shape", [(3, 3), (9, 9), (8, 8), (6, 6), (5, 7), (3, 3, 3), (2, 3, 4)])
@pytest.mark.parametrize("build", BUILDERS)
def test_torus_delivers_with_one_collective_per_dimension(shape, build):
    n = math.prod(shape)
    schedule = build(_nodes(n), shape)
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    halves = 2 if schedule.collective == "allreduce" else 1
    assert schedule.num_steps == halves * sum(_log3(d) for d in shape)
    assert schedule.blocks == len(shape) * n


def test_bytes_per_step_on_a_ring_of_nine():
    ag = trivance_allgather(_nodes(9))
    # rank 0 receives 1 block from each of +-3, then 3 blocks from each of +-1
    assert [sorted(len(m.blocks) for m in step if m.dst == "n0") for step in ag.steps] == [
        [1, 1],
        [3, 3],
    ]
    rs = trivance_reduce_scatter(_nodes(9))
    assert [sorted((m.dst, m.blocks) for m in step if m.src == "n0") for step in rs.steps] == [
        # the third each +-1 neighbour reduces on: its block and those 3 and 6 away
        [("n1", (1, 4, 7)), ("n8", (2, 5, 8))],
        [("n3", (3,)), ("n6", (6,))],
    ]


def test_nine_by_nine_allreduce_sends_each_port_its_share():
    schedule = trivance_bandwidth_allreduce(_nodes(81), (9, 9))
    assert schedule.num_steps == 8 and schedule.blocks == 162
    for step in schedule.steps:
        assert len(step) == 4 * 81  # two collectives, two neighbours each
    # per node and share: 2 + 6 + 18 + 54 = 80 blocks received in the allgather
    first = [sum(len(m.blocks) for m in step if m.dst == "n0") for step in schedule.steps[4:]]
    assert first == [4, 12, 36, 108]


def test_exact_cost_on_ring_nine():
    ring = build("ring:9")
    routed = route_steps(ring, trivance_allgather(ring.compute_nodes))
    cost = step_cost(ring, routed)
    # in blocks: step 1, 3 messages of 1 block cross each link; step 2, 1 message of 3
    bandwidth = ring.capacity[("n0", "n1")]
    assert cost.time_factor == Fraction(3 + 3) / bandwidth


def test_beats_the_dimension_wise_direct_on_torus_9x9_at_1_mib():
    torus = build("torus:9x9")
    options = SimOptions(1, 512 * 1024, 0.5)
    network = options.network(torus)
    size = 1 << 20
    routed = route_steps(torus, trivance_bandwidth_allreduce(torus.compute_nodes, (9, 9)))
    time = options.run(step_tasks(routed, network, size), network, size).time_us
    assert time < 33.3  # plan's fastest before (dimension-wise (direct + two-shot)): 33.34


def test_catalogue_and_bad_input():
    torus = build("torus:9x9")
    methods = [
        s.method for s in step_schedules(torus.compute_nodes, "allgather", shape=torus_shape(torus))
    ]
    assert "Trivance" in methods
    with pytest.raises(ScheduleError, match="does not have 5 nodes"):
        trivance_allgather(_nodes(5), (2, 3))
    with pytest.raises(ScheduleError, match="distinct"):
        trivance_allgather(["a", "a"])
