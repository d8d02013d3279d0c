"""Direct collectives as step schedules: one step to every other node, and one-shot / two-shot.

Below a few tens of KiB a collective costs its steps, not its bytes, and the fewest steps
are one: every compute node sends its messages to all the others at once, each on its own
connection (as NCCL's and TensorRT-LLM's small-message kernels write straight into every
peer's buffer). Each builder returns a :class:`~optcoll.core.step_schedule.StepSchedule`
over the compute nodes in the order given (rank ``i`` is ``nodes[i]``), for any ``N >= 2``:

* ``direct`` allgather: one step, rank ``i`` sends its block ``i`` to every other rank;
* ``direct`` reduce-scatter: one step, rank ``i`` sends its value of block ``j`` to rank
  ``j``, which adds it;
* ``one-shot`` allreduce (TensorRT-LLM's ``ONESHOT``): one step, every rank sends its whole
  input to every other rank, which adds it (``N - 1`` messages of ``M`` bytes a rank);
* ``two-shot`` allreduce (TensorRT-LLM's ``TWOSHOT``): the direct reduce-scatter, then the
  direct allgather of the reduced blocks (two steps, ``2 (N - 1)`` messages of ``M / N``
  bytes a rank: the bytes of a ring, in two steps).

Examples
--------
>>> s = one_shot_allreduce(["a", "b", "c"])
>>> s.num_steps, s.messages, s.blocks, s.steps[0][0]
(1, 6, 3, Send(src='a', dst='b', blocks=(0, 1, 2), reduce=True))
>>> t = two_shot_allreduce(["a", "b", "c", "d"])
>>> t.num_steps, t.messages, t.max_blocks
(2, 24, 1)
"""

from __future__ import annotations

from collections.abc import Sequence

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import ScheduleError

__all__ = [
    "direct_allgather",
    "direct_reduce_scatter",
    "one_shot_allreduce",
    "two_shot_allreduce",
]


def _checked(nodes: Sequence[str]) -> tuple[str, ...]:
    nodes = tuple(nodes)
    if len(nodes) < 2:
        raise ScheduleError(f"a direct collective needs 2 or more compute nodes, not {len(nodes)}")
    if len(set(nodes)) != len(nodes):
        raise ScheduleError("a direct collective needs distinct compute nodes")
    return nodes


def _pairs(n: int) -> list[tuple[int, int]]:
    """Every ``(i, j)``, ``i != j``, by shift: ``(i, i + k mod n)`` for ``k = 1 .. n - 1``,
    each shift a permutation (no two messages of one shift share a sender or receiver)."""
    return [(i, (i + k) % n) for k in range(1, n) for i in range(n)]


def _scatter_step(nodes: tuple[str, ...]) -> tuple[Send, ...]:
    """Rank ``i`` sends rank ``j`` its value of block ``j``, added."""
    return tuple(Send(nodes[i], nodes[j], (j,), True) for i, j in _pairs(len(nodes)))


def _gather_step(nodes: tuple[str, ...]) -> tuple[Send, ...]:
    """Rank ``i`` sends its block ``i`` to every other rank, stored."""
    return tuple(Send(nodes[i], nodes[j], (i,)) for i, j in _pairs(len(nodes)))


def direct_allgather(nodes: Sequence[str]) -> StepSchedule:
    """One step: every rank sends its block to every other rank.

    >>> [(m.src, m.dst, m.blocks) for m in direct_allgather("ab").steps[0]]
    [('a', 'b', (0,)), ('b', 'a', (1,))]
    """
    nodes = _checked(nodes)
    return StepSchedule("allgather", "direct", nodes, len(nodes), (_gather_step(nodes),))


def direct_reduce_scatter(nodes: Sequence[str]) -> StepSchedule:
    """One step: every rank sends each other rank ``j`` its value of block ``j``, added.

    >>> [(m.src, m.dst, m.blocks) for m in direct_reduce_scatter("abc").steps[0]][:2]
    [('a', 'b', (1,)), ('b', 'c', (2,))]
    """
    nodes = _checked(nodes)
    return StepSchedule("reduce_scatter", "direct", nodes, len(nodes), (_scatter_step(nodes),))


def one_shot_allreduce(nodes: Sequence[str]) -> StepSchedule:
    """One step: every rank sends its whole input (all ``N`` blocks, as every allreduce
    here is cut) to every other rank, added.

    >>> one_shot_allreduce("abcd").messages  # 4 ranks x 3 peers
    12
    """
    nodes = _checked(nodes)
    whole = tuple(range(len(nodes)))
    step = tuple(Send(nodes[i], nodes[j], whole, True) for i, j in _pairs(len(nodes)))
    return StepSchedule("allreduce", "one-shot", nodes, len(nodes), (step,))


def two_shot_allreduce(nodes: Sequence[str]) -> StepSchedule:
    """The direct reduce-scatter, then the direct allgather of the reduced blocks.

    >>> [m.reduce for m in two_shot_allreduce("ab").steps[1]]
    [False, False]
    """
    nodes = _checked(nodes)
    steps = (_scatter_step(nodes), _gather_step(nodes))
    return StepSchedule("allreduce", "two-shot", nodes, len(nodes), steps)
