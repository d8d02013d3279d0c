"""Direct step schedules (one step to every other node; one-shot and two-shot allreduce) and
their hierarchical compositions: delivered for every N from 2 to 17, with the step and
message counts of their definitions."""

from __future__ import annotations

import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.direct import (
    direct_allgather,
    direct_reduce_scatter,
    one_shot_allreduce,
    two_shot_allreduce,
)
from optcoll.schedules.baselines.hierarchical_steps import (
    ACROSS,
    GATHER_ACROSS,
    SCATTER_ACROSS,
    hierarchical_allgather,
    hierarchical_allreduce,
    hierarchical_one_shot_allreduce,
    hierarchical_reduce_scatter,
)
from optcoll.schedules.baselines.step_catalogue import step_schedules
from optcoll.verify.steps import verify_steps

BUILDERS = (direct_allgather, direct_reduce_scatter, one_shot_allreduce, two_shot_allreduce)


def _nodes(n: int) -> list[str]:
    return [f"r{i}" for i in range(n)]


@pytest.mark.parametrize("n", range(2, 18))
def test_direct_schedules_deliver(n):
    counts = {}
    for build in BUILDERS:
        schedule = build(_nodes(n))
        verdict = verify_steps(schedule)
        assert verdict.valid, (schedule.method, verdict.reason)
        counts[schedule.collective, schedule.method] = (schedule.num_steps, schedule.messages)
    pairs = n * (n - 1)
    assert counts == {
        ("allgather", "direct"): (1, pairs),
        ("reduce_scatter", "direct"): (1, pairs),
        ("allreduce", "one-shot"): (1, pairs),
        ("allreduce", "two-shot"): (2, 2 * pairs),
    }


@pytest.mark.parametrize("n", [2, 5, 8])
def test_bytes_per_rank(n):
    """Per rank: N - 1 blocks of M / N (direct), N - 1 whole vectors (one-shot), 2 (N - 1)
    blocks of M / N (two-shot): the data each message carries, as a share of M."""
    for build, share in (
        (direct_allgather, (n - 1) / n),
        (direct_reduce_scatter, (n - 1) / n),
        (one_shot_allreduce, n - 1),
        (two_shot_allreduce, 2 * (n - 1) / n),
    ):
        schedule = build(_nodes(n))
        sent = sum(len(m.blocks) for step in schedule.steps for m in step if m.src == "r0")
        assert sent / schedule.blocks == pytest.approx(share, rel=1e-12)


@pytest.mark.parametrize("n", [2, 3, 6])
def test_each_shift_is_a_permutation(n):
    """The messages of a step come in N - 1 runs of N, each run a permutation (every rank
    sends one and receives one): the order the simulator posts them in."""
    (step,) = direct_allgather(_nodes(n)).steps
    for k in range(n - 1):
        run = step[k * n : (k + 1) * n]
        assert sorted(m.src for m in run) == sorted(m.dst for m in run) == _nodes(n)
        assert {int(m.dst[1:]) - int(m.src[1:]) for m in run} <= {k + 1, k + 1 - n}


def test_bad_nodes_are_refused():
    with pytest.raises(ScheduleError, match="2 or more"):
        one_shot_allreduce(["a"])
    with pytest.raises(ScheduleError, match="distinct"):
        direct_allgather(["a", "a"])


def _boxes(count: int, size: int) -> list[list[str]]:
    return [[f"b{c}g{j}" for j in range(size)] for c in range(count)]


@pytest.mark.parametrize("count", range(2, 6))
@pytest.mark.parametrize("size", range(1, 5))
def test_hierarchical_direct_compositions_deliver(count, size):
    boxes = _boxes(count, size)
    inside = 1 if size > 1 else 0
    for across in GATHER_ACROSS:
        schedule = hierarchical_allgather(boxes, across)
        assert verify_steps(schedule).valid, schedule.method
    for across in SCATTER_ACROSS:
        schedule = hierarchical_reduce_scatter(boxes, across)
        assert verify_steps(schedule).valid, schedule.method
    for across in ACROSS:
        schedule = hierarchical_allreduce(boxes, across)
        assert verify_steps(schedule).valid, schedule.method
    assert hierarchical_allgather(boxes, "direct").num_steps == 1 + inside
    assert hierarchical_reduce_scatter(boxes, "direct").num_steps == inside + 1
    assert hierarchical_allreduce(boxes, "one-shot").num_steps == 1 + 2 * inside
    assert hierarchical_allreduce(boxes, "two-shot").num_steps == 2 + 2 * inside
    two = hierarchical_one_shot_allreduce(boxes)
    assert verify_steps(two).valid
    assert two.num_steps == 1 + inside


def test_one_shot_across_carries_the_whole_position():
    """Across boxes a one-shot sends position j's blocks of every box (S_j) at once: 3 boxes
    of 2 GPUs, GPU 0 of box 0 sends blocks 0, 2, 4 to GPU 0 of boxes 1 and 2, added."""
    schedule = hierarchical_allreduce(_boxes(3, 2), "one-shot")
    middle = [m for m in schedule.steps[1] if m.src == "b0g0"]
    assert [(m.dst, m.blocks, m.reduce) for m in middle] == [
        ("b1g0", (0, 2, 4), True),
        ("b2g0", (0, 2, 4), True),
    ]


def test_unknown_phase_across_is_refused():
    with pytest.raises(ScheduleError, match="unknown allgather across boxes 'ring'"):
        hierarchical_allgather(_boxes(2, 2), "ring")
    with pytest.raises(ScheduleError, match="unknown reduce-scatter across boxes"):
        hierarchical_reduce_scatter(_boxes(2, 2), "one-shot")


def test_catalogue_lists_them_first():
    assert [s.method for s in step_schedules(_nodes(4), "allreduce")][:2] == [
        "one-shot",
        "two-shot",
    ]
    assert step_schedules(_nodes(4), "reduce_scatter")[0].method == "direct"
    boxes = _boxes(2, 2)
    names = [s.method for s in step_schedules(sum(boxes, []), "allreduce", boxes)]
    assert names[-5:] == [
        "hierarchical (direct + Rabenseifner)",
        "hierarchical (direct + recursive doubling)",
        "hierarchical (direct + one-shot)",
        "hierarchical (direct + two-shot)",
        "hierarchical (one-shot + one-shot)",
    ]


def test_dimension_wise_on_grid_lines():
    """On a grid the direct compositions run along the rows, then across them (the columns):
    torus 4x4, the two-step one-shot is a row one-shot then a column one-shot."""
    from optcoll.schedules.baselines.routing import grid_lines
    from optcoll.topologies import build

    topo = build("torus:4x4")
    lines = grid_lines(topo)
    assert lines == [[f"n{i}_{j}" for j in range(4)] for i in range(4)]
    found = {s.method: s for s in step_schedules(topo.compute_nodes, "allreduce", lines=lines)}
    assert {
        "dimension-wise (direct + one-shot)",
        "dimension-wise (direct + two-shot)",
        "dimension-wise (one-shot + one-shot)",
    } <= set(found)
    two = found["dimension-wise (one-shot + one-shot)"]
    assert verify_steps(two).valid
    rows, columns = two.steps
    assert all(m.src[:2] == m.dst[:2] for m in rows)  # n{i}_: the same row
    assert all(m.src[-1] == m.dst[-1] for m in columns)  # the same column
    gather = step_schedules(topo.compute_nodes, "allgather", lines=lines)[-1]
    assert gather.method == "dimension-wise (direct + direct)" and verify_steps(gather).valid
