"""Bus bandwidth: algbw scaled by nccl-tests' factor, comparable across collectives.

nccl-tests reports ``busbw = algbw * factor`` with, for ``n`` ranks, ``2 (n - 1) / n`` for
allreduce, ``(n - 1) / n`` for allgather, reduce-scatter and all-to-all, and 1 for
broadcast and reduce (``doc/PERFORMANCE.md`` of NVIDIA/nccl-tests): the bandwidth a ring
would need on each link to reach that algbw.

Examples
--------
>>> bus_factor("allreduce", 8)
Fraction(7, 4)
>>> bus_factor("broadcast", 8), bus_factor("reduce-scatter", 4)
(Fraction(1, 1), Fraction(3, 4))
"""

from __future__ import annotations

from fractions import Fraction

from optcoll.core.schedule import canonical_collective
from optcoll.exceptions import ArgumentError

__all__ = ["bus_factor"]


def bus_factor(collective: str, n: int) -> Fraction:
    """nccl-tests' busbw / algbw for ``collective`` on ``n`` ranks (module docstring).

    Raises
    ------
    ArgumentError
        Fewer than one rank.
    """
    if n < 1:
        raise ArgumentError(f"busbw needs at least one rank, got {n}")
    collective = canonical_collective(collective)
    if collective == "allreduce":
        return Fraction(2 * (n - 1), n)
    if collective in ("broadcast", "reduce"):
        return Fraction(1)
    return Fraction(n - 1, n)
