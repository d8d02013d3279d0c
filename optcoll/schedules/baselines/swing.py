"""Swing: the butterfly whose partners swing left and right at growing distances.

De Sensi et al., "Swing: Short-cutting Rings for Higher Bandwidth Allreduce", NSDI 2024:
in step ``s`` rank ``x`` pairs with ``x + rho_s`` if ``x`` is even, ``x - rho_s`` if odd
(mod ``p``), with ``rho_s = (1 - (-2)^(s+1)) / 3`` (1, -1, 3, -5, 11, ...): partners at
distance at most ``(2/3) 2^s`` on a ring, where recursive doubling's are ``2^s`` apart,
so on a ring or torus whose ranks follow the ring a step crosses fewer hops. This module
gives Swing's pairings to the generic butterfly of
:mod:`optcoll.schedules.baselines.logstep` (bandwidth-optimal: reduce-scatter then
allgather; latency-optimal: exchanges of the whole vector), with the same folding of
``N`` not a power of two. The one-dimensional Swing takes the ranks as the compute
nodes in declaration order (row-major on the built-in tori).

**Multiport Swing** (the paper's torus version): on a torus of shape ``d_1 x ... x d_D``
(every ``d_i`` a power of two, ranks row-major) a Swing step moves along one dimension,
the dimensions taken in turn (skipping those whose ``log2 d_i`` steps are done), with
Swing's distance ``rho`` of that dimension's own step count, the parity of the rank's
coordinate in that dimension choosing the direction. The multiport collective runs
``2D`` of these at once, each on ``1 / 2D`` of the data: collective ``j`` starts at
dimension ``j mod D`` and the last ``D`` are mirrored (``-rho``), so in every step each
node sends on all ``2D`` ports of its torus, with ``log2 N`` steps in all.

**Sides that are not powers of two** (:func:`torus_rounds`; De Sensi et al. run Swing on
any even ring in ``ceil(log2 p)`` steps, skipping blocks sent before): an even side ``d``
takes Swing's pairings mod ``d`` for ``ceil(log2 d)`` steps, which reach every coordinate
(checked for every even ``d`` up to 128) but some twice; an odd side, where no pairing of
all coordinates exists, takes ``ceil(log2 d)`` *shifts* instead: in step ``t`` every
coordinate ``c`` sends to ``c + sign * delta`` and receives from ``c - sign * delta``,
``delta`` the negabinary powers ``(-2)^t`` reduced to the nearest residue mod ``d``
(their ``2^k`` subset sums are ``2^k`` consecutive integers, so ``k`` shifts reach all
``d``), nearest first in the reduce-scatter (as Bine orders its distances; the
odd-side rule is ours, not the paper's fold). The allgather sends each partner the blocks
it lacks and the reduce-scatter is its transpose
(:mod:`optcoll.schedules.baselines.dissemination`), so every node still sends and receives
``(N - 1) / N`` of each share, in ``sum ceil(log2 d_i)`` steps, no folding step.

Examples
--------
>>> [rho(s) for s in range(5)]
[1, -1, 3, -5, 11]
>>> [f(0) for f in swing_pairings(8)]
[1, 7, 3]
>>> [f(0) for f in torus_pairings((4, 4), 0, 1)]  # (0,0) -> (1,0), (0,1), (3,0), (0,3)
[4, 1, 12, 3]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import StepSchedule
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.dissemination import (
    Arc,
    SideStep,
    shared_schedule,
    torus_arcs,
)
from optcoll.schedules.baselines.logstep import (
    Pairing,
    butterfly_allgather,
    butterfly_allreduce,
    butterfly_reduce_scatter,
    concurrent,
    exchange_allreduce,
)

__all__ = [
    "rho",
    "swing_pairings",
    "swing_allgather",
    "swing_reduce_scatter",
    "swing_allreduce",
    "swing_latency_allreduce",
    "torus_pairings",
    "torus_rounds",
    "multiport_swing_allgather",
    "multiport_swing_reduce_scatter",
    "multiport_swing_allreduce",
    "multiport_swing_latency_allreduce",
]


def rho(s: int) -> int:
    """Swing's signed distance of step ``s``: ``(1 - (-2)^(s+1)) / 3``."""
    return (1 - (-2) ** (s + 1)) // 3


def swing_pairings(p: int) -> list[Pairing]:
    """Swing's pairing of ``p = 2^k`` ranks in each of its ``k`` steps (an involution: ``rho``
    is odd, so an even rank's partner is odd and pairs back)."""
    return [_partner(p, rho(s)) for s in range(p.bit_length() - 1)]


def _partner(p: int, distance: int) -> Pairing:
    """Even ranks pair ``distance`` ahead, odd ranks ``distance`` behind (mod ``p``)."""

    def partner(x: int) -> int:
        return (x + distance) % p if x % 2 == 0 else (x - distance) % p

    return partner


def _reversed_pairings(p: int) -> list[Pairing]:
    """Swing's steps last to first: the butterfly runs its allgather backwards, so this
    allgather (and the latency-optimal allreduce) takes Swing's steps in Swing's order."""
    return swing_pairings(p)[::-1]


def swing_allgather(nodes: Sequence[str]) -> StepSchedule:
    """Swing allgather: Swing's steps in order, each sending all the node holds.

    >>> swing_allgather("abcd").num_steps
    2
    """
    return butterfly_allgather(nodes, _reversed_pairings, "Swing")


def swing_reduce_scatter(nodes: Sequence[str]) -> StepSchedule:
    """Swing reduce-scatter (its steps in order, halving the blocks each step)."""
    return butterfly_reduce_scatter(nodes, swing_pairings, "Swing")


def swing_allreduce(nodes: Sequence[str]) -> StepSchedule:
    """Bandwidth-optimal Swing allreduce: reduce-scatter then allgather (``2 log2 p`` steps)."""
    return butterfly_allreduce(nodes, swing_pairings, "Swing")


def swing_latency_allreduce(nodes: Sequence[str]) -> StepSchedule:
    """Latency-optimal Swing allreduce: ``log2 p`` exchanges of the whole vector."""
    return exchange_allreduce(nodes, _reversed_pairings, "Swing (latency)")


def torus_pairings(
    shape: Sequence[int], start: int, sign: int, farthest_first: bool = False
) -> list[Pairing]:
    """Swing's steps on a torus of ``shape`` (row-major ranks): dimensions in turn from
    ``start``, each with its own count of steps, distances ``sign * rho`` (each
    dimension's ``rho_s`` in increasing ``s``, or with ``farthest_first`` decreasing)."""
    done = [0] * len(shape)
    total = sum(d.bit_length() - 1 for d in shape)
    pairings: list[Pairing] = []
    axis = start % len(shape)
    while len(pairings) < total:
        steps = shape[axis].bit_length() - 1
        if done[axis] < steps:
            s = steps - 1 - done[axis] if farthest_first else done[axis]
            pairings.append(_torus_partner(shape, axis, sign * rho(s)))
            done[axis] += 1
        axis = (axis + 1) % len(shape)
    return pairings


def _torus_partner(shape: Sequence[int], axis: int, distance: int) -> Pairing:
    """Swing along ``axis``: an even coordinate moves ``distance`` ahead, an odd one behind."""
    stride = math.prod(shape[axis + 1 :])
    size = shape[axis]

    def partner(x: int) -> int:
        c = x // stride % size
        moved = (c + distance) % size if c % 2 == 0 else (c - distance) % size
        return x + (moved - c) * stride

    return partner


def _ports(
    nodes: Sequence[str],
    shape: Sequence[int],
    build: Callable[[Sequence[str], Callable[[int], Sequence[Pairing]], str], StepSchedule],
    method: str = "multiport Swing",
) -> StepSchedule:
    """The ``2D`` Swing collectives of ``build`` on ``shape`` at once (module docstring)."""
    if math.prod(shape) != len(nodes) or any(d < 2 or d & (d - 1) for d in shape):
        raise ScheduleError(
            f"multiport Swing needs a torus of powers of two >= 2 holding the {len(nodes)} "
            f"nodes, not {'x'.join(map(str, shape))}"
        )

    def port(start: int, sign: int) -> Callable[[int], Sequence[Pairing]]:
        def pairings(p: int) -> Sequence[Pairing]:
            return torus_pairings(shape, start, sign)

        return pairings

    collectives = [
        build(nodes, port(start, sign), "Swing") for sign in (1, -1) for start in range(len(shape))
    ]
    return concurrent(collectives, method)


def multiport_swing_allgather(nodes: Sequence[str], shape: Sequence[int]) -> StepSchedule:
    """Multiport Swing allgather on a torus of ``shape``: ``log2 N`` steps, ``2D`` messages
    per node per step; the allgather half of the allreduce (Swing's steps last to first, so
    the largest messages go to the nearest partners, as Bine's allgather orders them).

    >>> s = multiport_swing_allgather([f"n{i}" for i in range(16)], (4, 4))
    >>> s.num_steps, s.blocks, len(s.steps[0]) // 16
    (4, 64, 4)
    """
    if not _powers_of_two(shape):
        return _any_torus(nodes, shape, "allgather")
    return _ports(nodes, shape, butterfly_allgather)


def multiport_swing_reduce_scatter(nodes: Sequence[str], shape: Sequence[int]) -> StepSchedule:
    """Multiport Swing reduce-scatter on a torus of ``shape`` (``log2 N`` steps)."""
    if not _powers_of_two(shape):
        return _any_torus(nodes, shape, "reduce_scatter")
    return _ports(nodes, shape, butterfly_reduce_scatter)


def multiport_swing_allreduce(nodes: Sequence[str], shape: Sequence[int]) -> StepSchedule:
    """Multiport Swing allreduce on a torus of ``shape``: reduce-scatter then allgather,
    ``2 log2 N`` steps."""
    if not _powers_of_two(shape):
        return _any_torus(nodes, shape, "allreduce")
    return _ports(nodes, shape, butterfly_allreduce)


def multiport_swing_latency_allreduce(nodes: Sequence[str], shape: Sequence[int]) -> StepSchedule:
    """Multiport latency-optimal Swing allreduce on a torus of ``shape``: ``log2 N`` steps,
    each port exchanging (and adding) its whole ``1 / 2D`` share of the vector.

    >>> s = multiport_swing_latency_allreduce([f"n{i}" for i in range(16)], (4, 4))
    >>> s.num_steps, {len(m.blocks) for step in s.steps for m in step}
    (4, {16})
    """
    return _ports(nodes, shape, exchange_allreduce, "multiport Swing (latency)")


def _side_steps(size: int) -> list[tuple[bool, int]]:
    """One side's steps in reduce-scatter order: ``(True, rho_s)`` Swing pairings of an even
    ``size``, ``(False, delta)`` shifts of an odd one (module docstring), nearest first."""
    count = (size - 1).bit_length()
    if size % 2 == 0:
        return [(True, rho(s)) for s in range(count)]
    shifts = [((-2) ** t + size // 2) % size - size // 2 for t in range(count)]
    return [(False, delta) for delta in sorted(shifts, key=abs)]


def torus_rounds(shape: Sequence[int], start: int, sign: int) -> list[list[Arc]]:
    """The arcs of each allgather step of one Swing collective on a torus of any ``shape``
    (row-major ranks): :func:`~optcoll.schedules.baselines.dissemination.torus_arcs` of
    each side's steps (:func:`_side_steps`, distances times ``sign``).

    >>> [sorted(r)[0] for r in torus_rounds((5,), 0, 1)]  # shifts -2, -1, 1: rank 0 sends
    [(0, 3), (0, 4), (0, 1)]
    >>> [sorted(r)[:2] for r in torus_rounds((6,), 0, 1)]  # Swing: rho = 3, -1, 1
    [[(0, 3), (1, 4)], [(0, 5), (1, 2)], [(0, 1), (1, 0)]]
    """
    return torus_arcs(
        shape,
        start,
        [[_side_step(pairing, sign * d) for pairing, d in _side_steps(size)] for size in shape],
    )


def _side_step(pairing: bool, distance: int) -> SideStep:
    def moved(c: int) -> tuple[int]:
        return (c + distance if not pairing or c % 2 == 0 else c - distance,)

    return moved


def _any_torus(nodes: Sequence[str], shape: Sequence[int], collective: str) -> StepSchedule:
    """Multiport Swing of ``collective`` on a torus of any sides (module docstring): the
    ``2D`` collectives of :func:`torus_rounds` at once."""
    if math.prod(shape) != len(nodes) or any(d < 1 for d in shape):
        raise ScheduleError(
            f"multiport Swing needs a torus holding the {len(nodes)} nodes, "
            f"not {'x'.join(map(str, shape))}"
        )
    shares = [torus_rounds(shape, start, sign) for sign in (1, -1) for start in range(len(shape))]
    return shared_schedule(nodes, collective, shares, "multiport Swing")


def _powers_of_two(shape: Sequence[int]) -> bool:
    return all(d >= 2 and d & (d - 1) == 0 for d in shape)
