"""Trivance: allreduce, reduce-scatter and allgather in ``log3`` steps on bidirectional rings and tori.

On a ring of ``p = 3^k`` ranks, in step ``s`` every rank ``x`` sends its current partial
sum to both ``x + 3^s`` and ``x - 3^s`` (mod ``p``), and adds what it receives. After step
``s`` rank ``x`` holds the sum over the window of radius ``(3^(s+1) - 1) / 2`` around it:
the windows of ``x - 3^s``, ``x`` and ``x + 3^s`` (radius ``r = (3^s - 1) / 2`` each) are
disjoint and adjacent, since ``3^s - 2 r = 1``; after ``k`` steps the window is the ring.
Each step uses both directions of the ring at once, so the step count is ``log3 p``
where recursive doubling needs ``log2 p`` (Trivance, 2026: "latency-optimal allreduce by
shortcutting multiport networks"; the windows argument is ours).

Any ``N``: with ``p`` the largest power of three not above ``N``, rank ``e >= p`` folds
into rank ``e - p`` (or ``e - 2p``: each of the ``p`` ranks takes at most two) in a first
step (the whole vector, added) and gets the result back in a last step, as recursive
doubling folds to a power of two (:class:`optcoll.schedules.baselines.logstep.Fold`). On
a torus (:func:`trivance_torus_allreduce`) the lines of each dimension run it in turn,
all lines of a dimension at once: after dimension ``j`` a node holds the sum over its
sub-torus of the dimensions done, after the last the whole sum.

**Bandwidth-optimal Trivance** (:func:`trivance_allgather`, :func:`trivance_reduce_scatter`,
:func:`trivance_bandwidth_allreduce`): the same steps, but each message carries only what
the receiver needs. In the reduce-scatter's step ``s`` (distances ``3^s``, nearest first)
a rank keeps the third of its blocks whose window it will cover and sends the other two
thirds, one to each neighbour, which adds them; the allgather runs the steps backwards,
each rank sending both neighbours everything it holds that they lack
(:mod:`optcoll.schedules.baselines.dissemination`, the reduce-scatter its transpose), the
allreduce the two in turn. Every rank sends ``(N - 1) / N`` of the data in each half, in
``ceil(log3 d)`` steps per side ``d`` (on a side that is not a power of three the last
windows overlap and a block reaches a rank once, from one of its two senders). On a
torus of ``D`` dimensions ``D`` such collectives run at once on ``1 / D`` of the data each,
collective ``j`` starting at dimension ``j`` (dimensions in turn), so every step uses all
``2D`` ports; a ring (``D = 1``) is one collective on both directions.

**Fused Trivance allreduce** (:func:`trivance_fused_allreduce`, ours): the middle of the
bandwidth-optimal allreduce, the reduce-scatter's last (farthest, smallest) steps and the
allgather's first, is an allreduce among the ranks that hold a block after the
allgather's first steps; it runs as one exchange per dimension instead. With ``k`` the
allgather's leading steps on distinct dimensions (one per dimension, the farthest), a
block's holders after them are its owner plus a product of one offset set per dimension
(``{0, 3, 5}`` on a side of 8: ``+-3`` mod 8), and after the reduce-scatter's other steps
each holds the sum over its own subtree of the block's allgather tree (the subtrees
partition the ranks). In the exchange along dimension ``j`` every holder sends its
partial to the other holders on its line along ``j``, which add it; after the ``k``
exchanges every holder has the whole sum, and the allgather's other steps spread it.
``2 m - k`` steps for the bandwidth form's ``2 m``: on torus 8x8 6 instead of 8, an
exchange sending a rank's partials to ``+-3`` (6 blocks) and ``+-2`` (3 blocks).

:func:`optcoll.verify.steps.verify_steps` checks each schedule by executing it
(``tests/schedules/test_trivance.py``: ``N = 2 .. 30`` and torus shapes;
``tests/schedules/test_trivance_bandwidth.py``).

Examples
--------
>>> s = trivance_allreduce([f"g{i}" for i in range(9)])
>>> s.num_steps, sorted({m.dst for m in s.steps[0] if m.src == "g0"})
(2, ['g1', 'g8'])
>>> trivance_allreduce([f"g{i}" for i in range(10)]).num_steps  # fold, 2 steps, unfold
4
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.dissemination import (
    Arc,
    Message,
    SideStep,
    gather_rounds,
    shared_schedule,
    torus_arcs,
    transpose_rounds,
)
from optcoll.schedules.baselines.logstep import concurrent

__all__ = [
    "trivance_allreduce",
    "trivance_torus_allreduce",
    "trivance_line_steps",
    "trivance_rounds",
    "trivance_allgather",
    "trivance_reduce_scatter",
    "trivance_bandwidth_allreduce",
    "trivance_fused_allreduce",
]

Steps = list[tuple[Send, ...]]


def trivance_line_steps(line: Sequence[str], blocks: tuple[int, ...]) -> Steps:
    """The steps of a Trivance allreduce of ``blocks`` among the nodes of ``line`` (in
    ring order): fold, ``log3 p`` exchanges with both ``3^s``-neighbours, unfold (no
    steps for one node)."""
    n = len(line)
    if n < 2:
        return []
    p = 1
    while 3 * p <= n:
        p *= 3
    home = {e: e - p if e - p < p else e - 2 * p for e in range(p, n)}
    steps: Steps = []
    if home:
        steps.append(tuple(Send(line[e], line[a], blocks, True) for e, a in home.items()))
    distance = 1
    while distance < p:
        steps.append(
            tuple(
                Send(line[x], line[(x + sign * distance) % p], blocks, True)
                for x in range(p)
                for sign in (1, -1)
            )
        )
        distance *= 3
    if home:
        steps.append(tuple(Send(line[a], line[e], blocks) for e, a in home.items()))
    return steps


def _checked(nodes: Sequence[str]) -> tuple[str, ...]:
    nodes = tuple(nodes)
    if len(nodes) < 2 or len(set(nodes)) != len(nodes):
        raise ScheduleError("a Trivance allreduce needs two or more distinct compute nodes")
    return nodes


def trivance_allreduce(nodes: Sequence[str]) -> StepSchedule:
    """Trivance allreduce over ``nodes`` in ring order (module docstring): ``log3 N``
    steps of the whole vector to both neighbours ``3^s`` away, two more unless ``N`` is
    a power of three.

    >>> [len(step) for step in trivance_allreduce("abc").steps]  # each sends to both others
    [6]
    """
    nodes = _checked(nodes)
    whole = tuple(range(len(nodes)))
    steps = trivance_line_steps(nodes, whole)
    return StepSchedule("allreduce", "Trivance (latency)", nodes, len(nodes), tuple(steps))


def trivance_torus_allreduce(nodes: Sequence[str], shape: Sequence[int]) -> StepSchedule:
    """Trivance along each dimension of a torus of ``shape`` (``nodes`` row-major), the
    last dimension first, every line of a dimension at once.

    >>> s = trivance_torus_allreduce([f"n{i}" for i in range(9)], (3, 3))
    >>> s.num_steps, len(s.steps[0])  # one step per dimension, 9 nodes x 2 neighbours
    (2, 18)
    """
    nodes = _checked(nodes)
    dims = tuple(shape)
    size = 1
    for d in dims:
        size *= d
    if size != len(nodes) or any(d < 1 for d in dims):
        raise ScheduleError(f"a torus of shape {dims} does not have {len(nodes)} nodes")
    whole = tuple(range(len(nodes)))
    steps: Steps = []
    stride = 1
    for d in reversed(dims):
        lines = [
            [nodes[base + i * stride] for i in range(d)]
            for base in range(len(nodes))
            if (base // stride) % d == 0
        ]
        per_line = [trivance_line_steps(line, whole) for line in lines]
        for s in range(len(per_line[0])):
            steps.append(tuple(m for line in per_line for m in line[s]))
        stride *= d
    return StepSchedule("allreduce", "Trivance (latency, torus)", nodes, len(nodes), tuple(steps))


def trivance_rounds(shape: Sequence[int], start: int) -> list[list[Arc]]:
    """The allgather rounds of one bandwidth-optimal Trivance collective on a torus of
    ``shape`` (row-major ranks): on each side ``d`` the distances ``3^s``,
    ``s < ceil(log3 d)``, to both neighbours, the sides in turn from ``start``, farthest
    first (:func:`~optcoll.schedules.baselines.dissemination.torus_arcs`).

    >>> [sorted(r)[:2] for r in trivance_rounds((9,), 0)]  # rank 0: +-3, then +-1
    [[(0, 3), (0, 6)], [(0, 1), (0, 8)]]
    """
    return torus_arcs(shape, start, [[_both(3**s) for s in range(_steps(d))] for d in shape])


def _steps(size: int) -> int:
    count, reach = 0, 1
    while reach < size:
        count, reach = count + 1, 3 * reach
    return count


def _both(distance: int) -> SideStep:
    def moved(c: int) -> tuple[int, int]:
        return (c + distance, c - distance)

    return moved


def _shared(nodes: Sequence[str], shape: Sequence[int] | None, collective: str) -> StepSchedule:
    dims = (len(nodes),) if shape is None else tuple(shape)
    if math.prod(dims) != len(nodes) or any(d < 1 for d in dims):
        raise ScheduleError(f"a torus of shape {dims} does not have {len(nodes)} nodes")
    shares = [trivance_rounds(dims, start) for start in range(len(dims))]
    return shared_schedule(nodes, collective, shares, "Trivance")


def trivance_allgather(nodes: Sequence[str], shape: Sequence[int] | None = None) -> StepSchedule:
    """Bandwidth-optimal Trivance allgather over ``nodes`` (a ring in their order, or the
    torus of ``shape``, row-major): ``sum ceil(log3 d)`` steps (module docstring).

    >>> s = trivance_allgather([f"g{i}" for i in range(9)])
    >>> s.num_steps, [len(step[0].blocks) for step in s.steps]  # 1, then 3 blocks a message
    (2, [1, 3])
    """
    return _shared(nodes, shape, "allgather")


def trivance_reduce_scatter(
    nodes: Sequence[str], shape: Sequence[int] | None = None
) -> StepSchedule:
    """Bandwidth-optimal Trivance reduce-scatter: the allgather transposed.

    >>> s = trivance_reduce_scatter([f"g{i}" for i in range(9)])
    >>> [len(step[0].blocks) for step in s.steps]  # 3 blocks to each neighbour, then 1
    [3, 1]
    """
    return _shared(nodes, shape, "reduce_scatter")


def trivance_bandwidth_allreduce(
    nodes: Sequence[str], shape: Sequence[int] | None = None
) -> StepSchedule:
    """Bandwidth-optimal Trivance allreduce: reduce-scatter then allgather.

    >>> s = trivance_bandwidth_allreduce([f"n{i}" for i in range(81)], (9, 9))
    >>> s.num_steps, s.blocks, len(s.steps[0]) // 81  # 2 collectives x 2 neighbours
    (8, 162, 4)
    """
    return _shared(nodes, shape, "allreduce")


def trivance_fused_allreduce(
    nodes: Sequence[str], shape: Sequence[int] | None = None
) -> StepSchedule:
    """Fused Trivance allreduce over ``nodes`` (a ring in their order, or the torus of
    ``shape``, row-major; module docstring): the bandwidth-optimal allreduce whose middle
    steps are one exchange per dimension among each block's holders.

    >>> s = trivance_fused_allreduce([f"n{i}" for i in range(64)], (8, 8))
    >>> s.num_steps, [max(len(m.blocks) for m in step) for step in s.steps]
    (6, [20, 8, 6, 6, 8, 20])
    >>> [len(step) for step in trivance_fused_allreduce([f"g{i}" for i in range(9)]).steps]
    [18, 18, 18]
    """
    dims = (len(nodes),) if shape is None else tuple(shape)
    if math.prod(dims) != len(nodes) or any(d < 1 for d in dims):
        raise ScheduleError(f"a torus of shape {dims} does not have {len(nodes)} nodes")
    nodes = _checked(nodes)
    rounds = [trivance_rounds(dims, j) for j in range(len(dims))]
    axes = [[_axis(arcs[0], dims) for arcs in share] for share in rounds]
    k = min(_distinct_prefix(a) for a in axes)  # as many steps in every share
    shares = [_fused_share(nodes, dims, r, a[:k]) for r, a in zip(rounds, axes, strict=True)]
    return concurrent(shares, "fused Trivance")


def _axis(arc: Arc, shape: Sequence[int]) -> int:
    """The side along which ``arc`` moves (its ranks differ in that coordinate only)."""
    apart = zip(_coordinates(arc[0], shape), _coordinates(arc[1], shape), strict=True)
    return next(i for i, (a, b) in enumerate(apart) if a != b)


def _distinct_prefix(axes: Sequence[int]) -> int:
    """How many of the first ``axes`` are distinct.

    >>> _distinct_prefix([1, 0, 1, 0]), _distinct_prefix([0, 0, 1])
    (2, 1)
    """
    k = 0
    while k < len(axes) and axes[k] not in axes[:k]:
        k += 1
    return k


def _coordinates(x: int, shape: Sequence[int]) -> tuple[int, ...]:
    """Rank ``x``'s coordinates on a torus of ``shape`` (row-major)."""
    return tuple(x // math.prod(shape[i + 1 :]) % d for i, d in enumerate(shape))


def _fused_share(
    nodes: tuple[str, ...], shape: tuple[int, ...], rounds: list[list[Arc]], fused: list[int]
) -> StepSchedule:
    """One share's fused allreduce over the allgather ``rounds``, the first of them fused
    (``fused``: the distinct sides they move along)."""
    n = len(nodes)
    k = len(fused)
    gathered = gather_rounds([1 << x for x in range(n)], rounds)
    holders = [{x} for x in range(n)]  # per block: its holders after the first k rounds
    for messages in gathered[:k]:
        for _, y, blocks in messages:
            for b in blocks:
                holders[b].add(y)

    def sends(rounds: list[list[Message]], reduce: bool) -> list[tuple[Send, ...]]:
        return [tuple(Send(nodes[x], nodes[y], b, reduce) for x, y, b in arcs) for arcs in rounds]

    steps = sends(transpose_rounds(gathered[k:]), True)
    for axis in fused:  # every holder to the others on its line along the axis
        lines: dict[tuple[int, int], list[int]] = {}
        for block, members in enumerate(holders):
            for x in members:
                for y in members:
                    cx, cy = _coordinates(x, shape), _coordinates(y, shape)
                    if x != y and cx[:axis] + cx[axis + 1 :] == cy[:axis] + cy[axis + 1 :]:
                        lines.setdefault((x, y), []).append(block)
        exchange = [(x, y, tuple(b)) for (x, y), b in sorted(lines.items())]
        steps += sends([exchange], True)
    steps += sends(gathered[k:], False)
    return StepSchedule("allreduce", "fused Trivance", nodes, n, tuple(steps))
