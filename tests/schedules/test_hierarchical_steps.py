"""Hierarchical step schedules (direct inside boxes, log-step across): delivered for 2..6
boxes of 1..4 GPUs, in 1 + log-step + 1 steps, and plan candidates on multi-box clusters."""

from __future__ import annotations

import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.hierarchical_steps import (
    ACROSS,
    hierarchical_allgather,
    hierarchical_allreduce,
    hierarchical_reduce_scatter,
)
from optcoll.schedules.baselines.logstep import (
    rabenseifner_allreduce,
    recursive_doubling_allgather,
)
from optcoll.sim.size_plan import candidates
from optcoll.topologies import build
from optcoll.verify.steps import verify_steps


def _boxes(count: int, size: int) -> list[list[str]]:
    return [[f"b{c}g{j}" for j in range(size)] for c in range(count)]


@pytest.mark.parametrize("count", range(2, 7))
@pytest.mark.parametrize("size", range(1, 5))
def test_hierarchical_schedules_deliver(count, size):
    boxes = _boxes(count, size)
    built = [hierarchical_allgather(boxes), hierarchical_reduce_scatter(boxes)]
    built += [hierarchical_allreduce(boxes, across) for across in ACROSS]
    for schedule in built:
        verdict = verify_steps(schedule)
        assert verdict.valid, (schedule.method, verdict.reason)
    inside = 1 if size > 1 else 0
    across = rabenseifner_allreduce([f"x{c}" for c in range(count)]).num_steps
    assert built[2].num_steps == across + 2 * inside
    gather = recursive_doubling_allgather([f"x{c}" for c in range(count)]).num_steps
    assert built[0].num_steps == gather + inside


def test_inside_step_is_direct():
    """The first allreduce step: every GPU sends each other GPU of its box that GPU's
    blocks, one per box (4 boxes of 2: 1 message of 4 blocks per GPU)."""
    schedule = hierarchical_allreduce(_boxes(4, 2), "Rabenseifner")
    first = schedule.steps[0]
    assert len(first) == 8 and {len(m.blocks) for m in first} == {4}
    assert all(m.reduce and m.src[:2] == m.dst[:2] for m in first)


def test_bad_boxes_are_refused():
    with pytest.raises(ScheduleError, match="equal"):
        hierarchical_allgather([["a", "b"], ["c"]])
    with pytest.raises(ScheduleError, match="unknown allreduce across boxes"):
        hierarchical_allreduce(_boxes(2, 2), "ring")


def test_plan_offers_them_on_clusters_of_boxes():
    names = [c.method for c in candidates(build("dgx-h100:2"), "allreduce")]
    assert "hierarchical (direct + Rabenseifner)" in names
    assert "hierarchical (direct + recursive doubling)" in names
    assert not any(n.startswith("hierarchical (direct") for n in
                   (c.method for c in candidates(build("torus:4x4"), "allreduce")))  # fmt: skip
