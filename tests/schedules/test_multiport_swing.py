"""Multiport Swing on tori: every shape of powers of two delivers (executed by the
independent checker) in ``log2 N`` steps (``2 log2 N`` for the allreduce), every node
sending one message on each of its ``2D`` ports per step; the torus is recognised from
the topology's links."""

from __future__ import annotations

import math

import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.routing import torus_shape
from optcoll.schedules.baselines.step_catalogue import TORUS_BUILDERS, step_schedules
from optcoll.schedules.baselines.swing import (
    multiport_swing_latency_allreduce,
    rho,
    torus_pairings,
)
from optcoll.topologies import build
from optcoll.verify.steps import verify_steps

SHAPES = [
    (2,),
    (4,),
    (16,),
    (2, 2),
    (4, 2),
    (2, 8),
    (4, 4),
    (8, 8),
    (2, 2, 2),
    (4, 4, 4),
    (2, 4, 8),
]


def _nodes(n: int) -> list[str]:
    return [f"r{i}" for i in range(n)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("collective", sorted(TORUS_BUILDERS))
def test_multiport_swing_delivers(shape, collective):
    n = math.prod(shape)
    schedule = TORUS_BUILDERS[collective][0](_nodes(n), shape)
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    k = n.bit_length() - 1
    ports = 2 * len(shape)
    assert schedule.num_steps == (2 * k if collective == "allreduce" else k)
    assert schedule.blocks == ports * n
    for step in schedule.steps:
        assert len(step) == ports * n
        for rank in _nodes(n):
            assert sum(m.src == rank for m in step) == ports
    # each port moves (N - 1) / N of its share per direction: (N - 1) blocks of 2D N
    per_rank = sum(len(m.blocks) for step in schedule.steps for m in step if m.src == "r0")
    assert per_rank == ports * (n - 1) * (2 if collective == "allreduce" else 1)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_multiport_latency_allreduce(shape):
    """log2 N steps, each port exchanging its whole share (N blocks of 2D N) and adding it."""
    n = math.prod(shape)
    schedule = multiport_swing_latency_allreduce(_nodes(n), shape)
    verdict = verify_steps(schedule)
    assert verdict.valid, verdict.reason
    assert schedule.num_steps == n.bit_length() - 1
    assert schedule.blocks == 2 * len(shape) * n
    assert {len(m.blocks) for step in schedule.steps for m in step} == {n}
    assert all(m.reduce for step in schedule.steps for m in step)


def test_ports_are_distinct_torus_neighbours_in_the_first_step():
    """On 8x8 step 0 of the 4 collectives reaches the 4 torus neighbours (distance 1)."""
    shape = (8, 8)
    first = sorted(torus_pairings(shape, start, sign)[0](9) for sign in (1, -1) for start in (0, 1))
    assert first == sorted([1, 8, 10, 17])  # rank 9 = (1, 1): (0,1), (1,0), (1,2), (2,1)
    distances = [rho(s) for s in range(3)]
    assert [abs(d) for d in distances] == [1, 1, 3]


def test_torus_shape_from_links_and_catalogue():
    assert torus_shape(build("torus:8x8")) == (8, 8)
    assert torus_shape(build("torus:4x4x4")) == (4, 4, 4)
    assert torus_shape(build("ring:16")) == (16,)
    assert torus_shape(build("mesh:4x4")) is None
    assert torus_shape(build("dgx-h100:2")) is None
    methods = [s.method for s in step_schedules(_nodes(12), "allreduce", shape=(4, 3))]
    assert "multiport Swing" in methods  # any sides since the dissemination form
    assert "multiport Swing (latency)" not in methods  # 3 is not a power of two
    with pytest.raises(ScheduleError, match="powers of two"):
        TORUS_BUILDERS["allreduce"][1](_nodes(12), (4, 3))
