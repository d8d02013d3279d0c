"""Bine butterflies: Swing's partners, the allgather's steps from the farthest to the nearest.

De Sensi et al., "Bine Trees: Enhancing Collective Operations by Optimizing Communication
Locality", SC 2025 (binomial negabinary trees and butterflies; code published as
libbine/PICO): in the butterfly collectives rank ``r`` pairs in step ``s`` with
``r + rho_s`` if ``r`` is even, ``r - rho_s`` if odd (mod ``p``), ``rho_s`` the value of
the negabinary number ``1...1`` of ``s + 1`` digits (1, -1, 3, -5, 11, ...), the pairing
of Swing (:mod:`optcoll.schedules.baselines.swing`). Bine's reduce-scatter takes the steps
``s = 0, 1, ...`` (distance doubling: the half of the vector to the nearest partner
first), its allgather ``s = k-1, ..., 0`` (distance halving: the largest message, the
last, to the nearest partner), its allreduce the two in turn. As block schedules the
reduce-scatter and allreduce are Swing's (``swing_reduce_scatter``,
``swing_allreduce``); what Bine adds there is a negabinary remapping of the blocks that
keeps every message one contiguous buffer, invisible to a block-set schedule. The
allgather differs from ``swing_allgather`` (which runs Swing's steps nearest first, so its
largest message crosses the farthest distance) and is built here; ``N`` not a power of two
is folded as for every butterfly (:mod:`optcoll.schedules.baselines.logstep`).

Examples
--------
>>> s = bine_allgather([f"r{i}" for i in range(8)])
>>> [(step[0].dst, len(step[0].blocks)) for step in s.steps]  # r0's partners: +3, -1, +1
[('r3', 1), ('r7', 2), ('r1', 4)]
"""

from __future__ import annotations

from collections.abc import Sequence

from optcoll.core.step_schedule import StepSchedule
from optcoll.schedules.baselines.logstep import butterfly_allgather
from optcoll.schedules.baselines.swing import swing_pairings

__all__ = ["bine_allgather"]


def bine_allgather(nodes: Sequence[str]) -> StepSchedule:
    """Bine's allgather: Swing's pairings farthest first, ``log2 N`` steps (two more when
    ``N`` is not a power of two), the ``s``-th moving ``2^s`` blocks."""
    return butterfly_allgather(nodes, swing_pairings, "Bine")
