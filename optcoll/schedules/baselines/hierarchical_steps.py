"""Hierarchical step schedules: direct inside each box, log-step or direct across boxes.

With ``B`` equal boxes of ``G`` GPUs (box ``c``'s ``j``-th GPU is ``boxes[c][j]``), the
blocks are split by GPU position: ``S_j`` holds the block of GPU ``j`` of every box. An
allreduce then runs in three phases, each a step schedule's steps:

1. inside each box, one direct step: every GPU sends each other GPU ``j`` of its box its
   values of ``S_j``, added (a reduce-scatter over the box's switch);
2. across boxes, the GPUs ``j`` of all boxes run an allreduce of ``S_j`` (one of
   :data:`ACROSS`: Rabenseifner or recursive doubling,
   :mod:`optcoll.schedules.baselines.logstep`; one-shot or two-shot,
   :mod:`optcoll.schedules.baselines.direct`), all positions at once, step by step;
3. inside each box, one direct step: GPU ``j`` sends ``S_j`` to every other GPU of its box.

The allgather is phases 2 (an allgather, :data:`GATHER_ACROSS`) and 3, the reduce-scatter
phases 1 and 2 (a reduce-scatter, :data:`SCATTER_ACROSS`). This is the shape of NCCL's
NVLS-tree and of the two-level algorithms of MPI libraries (a fast intra-node step, a
log-step inter-node algorithm), run here as one step schedule that
:mod:`optcoll.verify.steps` checks and :mod:`optcoll.sim.steps` simulates.

:func:`hierarchical_one_shot_allreduce` takes two steps instead of three: a one-shot
allreduce inside each box (every GPU sends its whole input to the others of its box, which
add it), then every GPU ``j`` sends its box's sum, the whole vector, to the GPU ``j`` of
every other box, which adds it.

The same compositions run *dimension-wise* on a grid (``name`` ``"dimension-wise"``): the
lines of the grid as boxes (:func:`optcoll.schedules.baselines.routing.grid_lines`), so a
phase inside runs along the last dimension and a phase across along the others.

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
from optcoll.schedules.baselines.direct import (
    direct_allgather,
    direct_reduce_scatter,
    one_shot_allreduce,
    two_shot_allreduce,
)
from optcoll.schedules.baselines.logstep import (
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
)

__all__ = [
    "ACROSS",
    "GATHER_ACROSS",
    "SCATTER_ACROSS",
    "hierarchical_allgather",
    "hierarchical_reduce_scatter",
    "hierarchical_allreduce",
    "hierarchical_one_shot_allreduce",
]

Builder = Callable[[Sequence[str]], StepSchedule]

#: The allreduce run across boxes, by name.
ACROSS: dict[str, Builder] = {
    "Rabenseifner": rabenseifner_allreduce,
    "recursive doubling": recursive_doubling_allreduce,
    "one-shot": one_shot_allreduce,
    "two-shot": two_shot_allreduce,
}
#: The allgather run across boxes, by name.
GATHER_ACROSS: dict[str, Builder] = {
    "recursive doubling": recursive_doubling_allgather,
    "direct": direct_allgather,
}
#: The reduce-scatter run across boxes, by name.
SCATTER_ACROSS: dict[str, Builder] = {
    "recursive halving": recursive_halving_reduce_scatter,
    "direct": direct_reduce_scatter,
}

Steps = list[tuple[Send, ...]]


def _checked(boxes: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    checked = tuple(tuple(box) for box in boxes)
    if len(checked) < 2 or len({len(box) for box in checked}) != 1 or not checked[0]:
        raise ScheduleError("a hierarchical schedule needs two or more equal, non-empty boxes")
    return checked


def _across(boxes: tuple[tuple[str, ...], ...], build: Builder) -> Steps:
    """``build`` run among the GPUs of each position at once, its blocks mapped: block ``b``
    of position ``j``'s schedule (of ``blocks`` blocks, a divisor of the number of boxes)
    is the blocks of the ``boxes[c][j]`` with ``c mod blocks == b``."""
    rank = {v: i for i, v in enumerate(v for box in boxes for v in box)}
    per_position = []
    for j in range(len(boxes[0])):
        column = [box[j] for box in boxes]
        schedule = build(column)
        mapped = [
            tuple(rank[v] for c, v in enumerate(column) if c % schedule.blocks == b)
            for b in range(schedule.blocks)
        ]
        per_position.append(
            [
                tuple(
                    Send(
                        m.src,
                        m.dst,
                        tuple(sorted(g for b in m.blocks for g in mapped[b])),
                        m.reduce,
                    )
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


def _builder(table: dict[str, Builder], across: str, what: str) -> Builder:
    if across not in table:
        raise ScheduleError(f"unknown {what} across boxes {across!r}: one of {', '.join(table)}")
    return table[across]


def hierarchical_allgather(
    boxes: Sequence[Sequence[str]], across: str = "recursive doubling", name: str = "hierarchical"
) -> StepSchedule:
    """The allgather ``across`` (a key of :data:`GATHER_ACROSS`) across boxes per position,
    then one direct step inside each box (a box of one GPU: no step inside).

    >>> hierarchical_allgather([["a0", "a1"], ["b0", "b1"]]).num_steps
    2
    >>> hierarchical_allgather([["a0", "a1"], ["b0", "b1"]], "direct").method
    'hierarchical (direct + direct)'
    """
    boxes = _checked(boxes)
    build = _builder(GATHER_ACROSS, across, "allgather")
    steps = _across(boxes, build) + _inside(boxes, reduce=False)
    return _schedule("allgather", f"{name} ({across} + direct)", boxes, steps)


def hierarchical_reduce_scatter(
    boxes: Sequence[Sequence[str]], across: str = "recursive halving", name: str = "hierarchical"
) -> StepSchedule:
    """One direct step inside each box, then the reduce-scatter ``across`` (a key of
    :data:`SCATTER_ACROSS`) across boxes per position."""
    boxes = _checked(boxes)
    build = _builder(SCATTER_ACROSS, across, "reduce-scatter")
    steps = _inside(boxes, reduce=True) + _across(boxes, build)
    return _schedule("reduce_scatter", f"{name} (direct + {across})", boxes, steps)


def hierarchical_allreduce(
    boxes: Sequence[Sequence[str]], across: str, name: str = "hierarchical"
) -> StepSchedule:
    """Direct reduce-scatter inside each box, the allreduce ``across`` (a key of
    :data:`ACROSS`) among the GPUs of each position, direct allgather inside each box.

    >>> hierarchical_allreduce([["a0", "a1"], ["b0", "b1"], ["c0", "c1"]], "one-shot").num_steps
    3
    """
    boxes = _checked(boxes)
    build = _builder(ACROSS, across, "allreduce")
    steps = _inside(boxes, reduce=True) + _across(boxes, build) + _inside(boxes, reduce=False)
    return _schedule("allreduce", f"{name} (direct + {across})", boxes, steps)


def hierarchical_one_shot_allreduce(
    boxes: Sequence[Sequence[str]], name: str = "hierarchical"
) -> StepSchedule:
    """Two steps: a one-shot allreduce inside each box, then every GPU ``j`` sends its box's
    sum (the whole vector) to the GPU ``j`` of every other box, which adds it.

    >>> s = hierarchical_one_shot_allreduce([["a0", "a1"], ["b0", "b1"], ["c0", "c1"]])
    >>> s.method, s.num_steps, s.messages  # 3 boxes x 2 inside, 6 GPUs x 2 other boxes
    ('hierarchical (one-shot + one-shot)', 2, 18)
    """
    boxes = _checked(boxes)
    whole = tuple(range(sum(len(box) for box in boxes)))
    inside = tuple(Send(u, v, whole, True) for box in boxes for u in box for v in box if u != v)
    across = tuple(
        Send(box[j], other[j], whole, True)
        for c, box in enumerate(boxes)
        for d, other in enumerate(boxes)
        if c != d
        for j in range(len(box))
    )
    return _schedule("allreduce", f"{name} (one-shot + one-shot)", boxes, [inside, across])
