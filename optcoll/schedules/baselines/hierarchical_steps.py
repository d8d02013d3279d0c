"""Hierarchical log-step schedules: direct inside each box, log-step across boxes.

With ``B`` equal boxes of ``G`` GPUs (box ``c``'s ``j``-th GPU is ``boxes[c][j]``), the
blocks are split by GPU position: ``S_j`` holds the block of GPU ``j`` of every box. An
allreduce then runs in three phases, each a step schedule's steps:

1. inside each box, one direct step: every GPU sends each other GPU ``j`` of its box its
   values of ``S_j``, added (a reduce-scatter over the box's switch);
2. across boxes, the GPUs ``j`` of all boxes run a log-step allreduce (Rabenseifner or
   recursive doubling, :mod:`optcoll.schedules.baselines.logstep`) of ``S_j``, all
   positions at once, step by step;
3. inside each box, one direct step: GPU ``j`` sends ``S_j`` to every other GPU of its box.

The allgather is phases 2 (an allgather) and 3, the reduce-scatter phases 1 and 2 (a
reduce-scatter). This is the shape of NCCL's NVLS-tree and of the two-level algorithms of
MPI libraries (a fast intra-node step, a log-step inter-node algorithm), run here as one
step schedule that :mod:`optcoll.verify.steps` checks and :mod:`optcoll.sim.steps`
simulates.

Examples
--------
>>> boxes = [["a0", "a1"], ["b0", "b1"], ["c0", "c1"], ["d0", "d1"]]
>>> s = hierarchical_allreduce(boxes, "Rabenseifner")
>>> s.method, s.num_steps  # 1 + 2 log2 4 + 1
('hierarchical (direct + Rabenseifner)', 6)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.logstep import (
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
)

__all__ = [
    "ACROSS",
    "hierarchical_allgather",
    "hierarchical_reduce_scatter",
    "hierarchical_allreduce",
]

#: The log-step allreduce run across boxes, by name.
ACROSS: dict[str, Callable[[Sequence[str]], StepSchedule]] = {
    "Rabenseifner": rabenseifner_allreduce,
    "recursive doubling": recursive_doubling_allreduce,
}

Steps = list[tuple[Send, ...]]


def _checked(boxes: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    checked = tuple(tuple(box) for box in boxes)
    if len(checked) < 2 or len({len(box) for box in checked}) != 1 or not checked[0]:
        raise ScheduleError("a hierarchical schedule needs two or more equal, non-empty boxes")
    return checked


def _across(
    boxes: tuple[tuple[str, ...], ...], build: Callable[[Sequence[str]], StepSchedule]
) -> Steps:
    """``build`` run among the GPUs of each position at once, its blocks mapped: block ``c``
    of position ``j``'s schedule is the block of ``boxes[c][j]``."""
    rank = {v: i for i, v in enumerate(v for box in boxes for v in box)}
    per_position = []
    for j in range(len(boxes[0])):
        column = [box[j] for box in boxes]
        global_block = [rank[v] for v in column]
        schedule = build(column)
        per_position.append(
            [
                tuple(
                    Send(m.src, m.dst, tuple(global_block[b] for b in m.blocks), m.reduce)
                    for m in step
                )
                for step in schedule.steps
            ]
        )
    return [
        tuple(m for steps in per_position for m in steps[t]) for t in range(len(per_position[0]))
    ]


def _position_blocks(boxes: tuple[tuple[str, ...], ...], j: int) -> tuple[int, ...]:
    """``S_j``: the blocks of the ``j``-th GPU of every box."""
    size = len(boxes[0])
    return tuple(c * size + j for c in range(len(boxes)))


def _inside(boxes: tuple[tuple[str, ...], ...], reduce: bool) -> Steps:
    """One direct step inside every box: GPU ``i`` sends GPU ``j`` the blocks ``S_j`` (added,
    for a reduce-scatter) or its own ``S_i`` (stored, for an allgather)."""
    return [
        tuple(
            Send(box[i], box[j], _position_blocks(boxes, j if reduce else i), reduce)
            for box in boxes
            for i in range(len(box))
            for j in range(len(box))
            if i != j
        )
    ]


def _schedule(
    collective: str, method: str, boxes: tuple[tuple[str, ...], ...], steps: Steps
) -> StepSchedule:
    nodes = tuple(v for box in boxes for v in box)
    return StepSchedule(collective, method, nodes, len(nodes), tuple(s for s in steps if s))


def hierarchical_allgather(boxes: Sequence[Sequence[str]]) -> StepSchedule:
    """Recursive doubling across boxes per position, then one direct step inside each box
    (a box of one GPU: no step inside).

    >>> hierarchical_allgather([["a0", "a1"], ["b0", "b1"]]).num_steps
    2
    """
    boxes = _checked(boxes)
    steps = _across(boxes, recursive_doubling_allgather) + _inside(boxes, reduce=False)
    return _schedule("allgather", "hierarchical (recursive doubling + direct)", boxes, steps)


def hierarchical_reduce_scatter(boxes: Sequence[Sequence[str]]) -> StepSchedule:
    """One direct step inside each box, then recursive halving across boxes per position."""
    boxes = _checked(boxes)
    steps = _inside(boxes, reduce=True) + _across(boxes, recursive_halving_reduce_scatter)
    return _schedule("reduce_scatter", "hierarchical (direct + recursive halving)", boxes, steps)


def hierarchical_allreduce(boxes: Sequence[Sequence[str]], across: str) -> StepSchedule:
    """Direct reduce-scatter inside each box, the allreduce ``across`` (a key of
    :data:`ACROSS`) among the GPUs of each position, direct allgather inside each box."""
    boxes = _checked(boxes)
    if across not in ACROSS:
        raise ScheduleError(f"unknown log-step allreduce {across!r}: one of {', '.join(ACROSS)}")
    steps = (
        _inside(boxes, reduce=True) + _across(boxes, ACROSS[across]) + _inside(boxes, reduce=False)
    )
    return _schedule("allreduce", f"hierarchical (direct + {across})", boxes, steps)
