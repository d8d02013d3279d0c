"""Trivance allreduce: executed by the step verifier, counted, timed against recursive doubling."""

from __future__ import annotations

import math

import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
from optcoll.schedules.baselines.trivance import trivance_allreduce, trivance_torus_allreduce
from optcoll.sim.simulator import SimOptions
from optcoll.sim.steps import route_steps, step_tasks
from optcoll.topologies import build
from optcoll.verify.steps import verify_steps


def _steps(n: int) -> int:
    p = 3 ** math.floor(math.log(n, 3) + 1e-9)
    return round(math.log(p, 3)) + (2 if p < n else 0)


@pytest.mark.parametrize("n", range(2, 31))
def test_every_node_ends_with_the_whole_sum(n):
    schedule = trivance_allreduce([f"g{i}" for i in range(n)])
    verdict = verify_steps(schedule)
    assert verdict.ok, verdict.reason
    assert schedule.num_steps == _steps(n)


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (4, 4), (3, 9), (8, 8), (2, 3, 4)])
def test_torus_runs_each_dimension_in_turn(shape):
    nodes = [f"n{i}" for i in range(math.prod(shape))]
    schedule = trivance_torus_allreduce(nodes, shape)
    verdict = verify_steps(schedule)
    assert verdict.ok, verdict.reason
    assert schedule.num_steps == sum(_steps(d) for d in shape if d > 1)


def test_powers_of_three_take_log3_steps():
    assert trivance_allreduce([f"g{i}" for i in range(27)]).num_steps == 3
    assert recursive_doubling_allreduce([f"g{i}" for i in range(27)]).num_steps == 6
    torus = trivance_torus_allreduce([f"n{i}" for i in range(81)], (9, 9))
    assert torus.num_steps == 4


def test_bad_input_is_refused():
    with pytest.raises(ScheduleError, match="two or more distinct"):
        trivance_allreduce(["a", "a"])
    with pytest.raises(ScheduleError, match="does not have 5 nodes"):
        trivance_torus_allreduce([f"n{i}" for i in range(5)], (2, 3))


def test_fewer_steps_win_at_small_sizes_on_a_ring_of_27():
    ring = build("ring:27")
    options = SimOptions(1, 512 * 1024, 0.5)
    network = options.network(ring)
    times = {}
    for schedule in (
        trivance_allreduce(ring.compute_nodes),
        recursive_doubling_allreduce(ring.compute_nodes),
    ):
        routed = route_steps(ring, schedule)
        times[schedule.method] = options.run(
            step_tasks(routed, network, 1024), network, 1024
        ).time_us
    assert times["Trivance (latency)"] < times["recursive doubling"]
