"""NCCL's PAT (Parallel Aggregated Trees) allgather and reduce-scatter, at small sizes.

Jeaugey, "PAT: a new algorithm for all-gather and reduce-scatter operations at scale"
(arXiv 2506.20252, 2025; NCCL 2.23+, ``PatAGAlgorithm`` / ``PatRSAlgorithm`` in its
``collectives.h``): Bruck's allgather with its dimensions reversed. Every rank's block is
broadcast along a shifted binomial tree; a block held at *offset* ``s`` (held by rank
``x`` and owned by rank ``x + s``) leaves on dimension ``lowbit(s')`` towards the rank
``2^d`` away, so along a block's path the dimensions decrease, the farthest first. NCCL's
``aggFactor`` bounds how many blocks one message aggregates by its staging buffer; when
the whole operation fits (the small sizes PAT is chosen for), every dimension is one
message per rank, which is what is built here:

* allgather, step ``t = 0 .. k-1`` with ``d = k - 1 - t`` (``k = ceil(log2 N)``): rank
  ``x`` sends rank ``x - 2^d`` the blocks ``x + j`` (mod ``N``) for every ``j`` a
  multiple of ``2^(d+1)`` with ``j + 2^d < N`` (offsets past ``N`` are NCCL's skipped
  steps); the first message is one block to the farthest partner, the last about
  ``N / 2`` blocks to the nearest;
* reduce-scatter, the same trees run backwards (``d = 0 .. k-1``): rank ``y`` sends rank
  ``y + 2^d`` its partial sums of the blocks ``y + 2^d + j``, which that rank adds.

Any ``N``, ``ceil(log2 N)`` steps, ``N - 1`` blocks sent per rank. NCCL's larger-size
behaviour (more, smaller aggregated steps through a bounded buffer) is not modelled.

Examples
--------
>>> s = pat_allgather([f"r{i}" for i in range(8)])
>>> [(step[0].dst, step[0].blocks) for step in s.steps]  # r0 sends to 4, 2, 1 away
[('r4', (0,)), ('r6', (0, 4)), ('r7', (0, 2, 4, 6))]
"""

from __future__ import annotations

from collections.abc import Sequence

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.logstep import Fold

__all__ = ["pat_allgather", "pat_reduce_scatter"]


def _offsets(n: int, d: int) -> list[int]:
    """The offsets a rank forwards on dimension ``d``: multiples of ``2^(d+1)`` that stay
    below ``N`` once ``2^d`` is added."""
    return list(range(0, n - (1 << d), 1 << (d + 1)))


def _checked(nodes: Sequence[str]) -> tuple[tuple[str, ...], int]:
    nodes = tuple(nodes)
    Fold(len(nodes))  # two or more nodes
    if len(set(nodes)) != len(nodes):
        raise ScheduleError("a log-step collective needs distinct compute nodes")
    return nodes, (len(nodes) - 1).bit_length()


def pat_allgather(nodes: Sequence[str]) -> StepSchedule:
    """PAT allgather (fully aggregated): ``ceil(log2 N)`` steps, farthest first."""
    nodes, k = _checked(nodes)
    n = len(nodes)
    steps = tuple(
        tuple(
            Send(
                nodes[x],
                nodes[(x - (1 << d)) % n],
                tuple(sorted((x + j) % n for j in _offsets(n, d))),
            )
            for x in range(n)
        )
        for d in reversed(range(k))
    )
    return StepSchedule("allgather", "PAT", nodes, n, steps)


def pat_reduce_scatter(nodes: Sequence[str]) -> StepSchedule:
    """PAT reduce-scatter (fully aggregated): the allgather's trees backwards, nearest first.

    >>> [len(step[0].blocks) for step in pat_reduce_scatter("abcdefgh").steps]
    [4, 2, 1]
    """
    nodes, k = _checked(nodes)
    n = len(nodes)
    steps = tuple(
        tuple(
            Send(
                nodes[y],
                nodes[(y + (1 << d)) % n],
                tuple(sorted((y + (1 << d) + j) % n for j in _offsets(n, d))),
                True,
            )
            for y in range(n)
        )
        for d in range(k)
    )
    return StepSchedule("reduce_scatter", "PAT", nodes, n, steps)
