"""Swing: the butterfly whose partners swing left and right at growing distances.

De Sensi et al., "Swing: Short-cutting Rings for Higher Bandwidth Allreduce", NSDI 2024:
in step ``s`` rank ``x`` pairs with ``x + rho_s`` if ``x`` is even, ``x - rho_s`` if odd
(mod ``p``), with ``rho_s = (1 - (-2)^(s+1)) / 3`` (1, -1, 3, -5, 11, ...): partners at
distance at most ``(2/3) 2^s`` on a ring, where recursive doubling's are ``2^s`` apart,
so on a ring or torus whose ranks follow the ring a step crosses fewer hops. This module
gives Swing's pairings to the generic butterfly of
:mod:`optcoll.schedules.baselines.logstep` (bandwidth-optimal: reduce-scatter then
allgather; latency-optimal: exchanges of the whole vector), with the same folding of
``N`` not a power of two. One-dimensional only: the ranks are the compute nodes in
declaration order (row-major on the built-in tori), not the paper's multiport version
that runs one Swing per torus dimension at once.

Examples
--------
>>> [rho(s) for s in range(5)]
[1, -1, 3, -5, 11]
>>> [f(0) for f in swing_pairings(8)]
[1, 7, 3]
"""

from __future__ import annotations

from collections.abc import Sequence

from optcoll.core.step_schedule import StepSchedule
from optcoll.schedules.baselines.logstep import (
    Pairing,
    butterfly_allgather,
    butterfly_allreduce,
    butterfly_reduce_scatter,
    exchange_allreduce,
)

__all__ = [
    "rho",
    "swing_pairings",
    "swing_allgather",
    "swing_reduce_scatter",
    "swing_allreduce",
    "swing_latency_allreduce",
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
