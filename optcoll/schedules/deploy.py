"""Schedules a runtime can use: a deployable chunk count and size bands.

MSCCL runtimes pick an algorithm file only for messages whose element count is a
multiple of its ``nchunksperloop`` (``N k`` for the all-to-all collectives, ``k``
for broadcast and reduce; see :mod:`optcoll.export.runtimes`). The optimal ``k``
(ForestColl's, e.g. 13 on dgx-a100:2) makes that a number no power-of-two size
is a multiple of. :func:`deployable_schedule` therefore takes the smallest
``k`` in ``{1, 2, 4, 8, ...}`` whose best ``k``-chunk schedule is within a
tolerance of the optimum (:func:`optcoll.sim.size_plan.schedule_bands` splits the size axis
among such schedules and the other candidates by the simulator).

Broadcast and reduce use ``K`` arc-disjoint trees (``K`` the minimum cut from or
to the root, :func:`optcoll.schedules.collectives.broadcast`; identical trees merged, so a
tree may carry several of the ``K`` chunks); with ``k`` chunks each tree gets its
proportional share (:func:`redeal`). That split is exact when ``K`` divides ``k``;
otherwise it is a good split over these trees, not claimed the best ``k``-chunk
schedule.

Examples
--------
>>> from optcoll.topologies import build
>>> choice = deployable_schedule(build("dgx-a100:2"), "allgather")
>>> choice.schedule.k, choice.ratio
(8, Fraction(481, 480))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

from optcoll.core.arguments import count_argument
from optcoll.core.loads import phase_time_factor
from optcoll.core.schedule import Schedule, Tree, a_collective
from optcoll.core.topology import Topology
from optcoll.exceptions import ExportError
from optcoll.schedules.collectives import (
    build_collective_core,
    collective_lower_bound_core,
    is_symmetric,
)

__all__ = [
    "DEFAULT_TOLERANCE",
    "MAX_DEPLOY_K",
    "Deployment",
    "deployable_schedule",
    "redeal",
]

#: Default tolerance on the time factor: 1 % above the optimum.
DEFAULT_TOLERANCE = Fraction(1, 100)
#: Largest k :func:`deployable_schedule` tries (1, 2, 4, ..., this); if none of them is
#: within the tolerance it raises :class:`~optcoll.exceptions.ExportError`. The k is not
#: capped by the runtime's offsets here: :func:`optcoll.export.msccl.msccl_program`
#: refuses buffers of more than 32768 chunks (``N k`` for allgather: k = 512 fits N <= 64).
MAX_DEPLOY_K = 512


@dataclass(frozen=True)
class Deployment:
    """A schedule chosen for deployment and how it compares with the optimum.

    Attributes
    ----------
    schedule : Schedule
    optimum : Fraction
        The collective's exact lower bound (r*, its reversed-topology twin, their sum
        for allreduce, or the broadcast/reduce min-cut bound).
    ratio : Fraction
        ``schedule.time_factor / optimum``.
    tried : tuple of (int, Fraction)
        Every ``k`` tried and its ratio to the optimum, in order.
    allgather : Schedule or None
        For an allreduce on a topology that is not symmetric: the allgather phase,
        ``schedule`` being the reduce-scatter phase (built on the reversed topology);
        the allreduce's time factor is the sum of theirs.
    """

    schedule: Schedule
    optimum: Fraction
    ratio: Fraction
    tried: tuple[tuple[int, Fraction], ...]
    allgather: Schedule | None = None

    @property
    def time_factor(self) -> Fraction:
        """The exact time factor of the deployed collective (both phases if composed)."""
        return self.ratio * self.optimum


def redeal(schedule: Schedule, k: int, topology: Topology) -> Schedule:
    """A broadcast or reduce schedule's trees carrying ``k`` chunks in proportion.

    A tree carrying ``c`` of the ``K`` chunks gets ``floor(k c / K)`` of the ``k``, and
    the chunks left over go one each to the trees with the largest remainders (ties:
    first tree); trees left with none are dropped. The time factor is computed exactly
    from the link loads.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.collectives import broadcast
    >>> topo = build("mi250:1")
    >>> s = broadcast(topo, "b0.gcd0")
    >>> s.k, redeal(s, 4, topo).time_factor / s.time_factor
    (6, Fraction(3, 2))
    """

    if schedule.collective not in ("broadcast", "reduce"):
        raise ExportError(
            f"only broadcast and reduce trees are re-dealt, not {schedule.collective}"
        )
    shares = [Fraction(k * tree.chunks, schedule.k) for tree in schedule.trees]
    counts = [math.floor(share) for share in shares]
    by_remainder = sorted(range(len(shares)), key=lambda i: (counts[i] - shares[i], i))
    for i in by_remainder[: k - sum(counts)]:
        counts[i] += 1
    trees = tuple(
        Tree(tree.root, count, tree.edges)
        for tree, count in zip(schedule.trees, counts, strict=True)
        if count > 0
    )
    factor = phase_time_factor(topology, trees, k, reverse=schedule.collective == "reduce")
    stats = {**schedule.stats, "trees": len(trees)}  # fewer trees when a share rounds to 0
    return replace(schedule, k=k, trees=trees, time_factor=factor, stats=stats)


def deployable_schedule(
    topology: Topology,
    collective: str,
    *,
    tolerance: Fraction = DEFAULT_TOLERANCE,
    k: int | None = None,
    exact: bool = False,
    root: str | None = None,
) -> Deployment:
    """The schedule to deploy: the smallest power-of-two ``k`` within ``tolerance``.

    Parameters
    ----------
    topology : Topology
    collective : str
        ``allgather``, ``reduce_scatter``, ``allreduce``, ``broadcast``, ``reduce`` or
        ``alltoall`` (``k`` chunks per pair).
    tolerance : Fraction
        Accept a time factor up to ``(1 + tolerance) * optimum``.
    k : int, optional
        Force this ``k`` (the best ``k``-chunk schedule, whatever its ratio).
    exact : bool
        Keep the optimal ``k`` (time factor = optimum; possibly not a power of two).
    root : str, optional
        Root of a broadcast or reduce (default: the first compute node).

    Raises
    ------
    ExportError
        No power of two up to :data:`MAX_DEPLOY_K` is within the tolerance (the message
        gives the best ratio found and the options that help).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> d = deployable_schedule(build("mi250:1"), "broadcast", root="b0.gcd0")
    >>> d.schedule.k, d.ratio <= Fraction(101, 100)
    (256, True)
    """

    if tolerance < 0:
        raise ExportError(f"the tolerance must be >= 0, got {tolerance}")
    k = None if k is None else count_argument(k, "k")
    rooted = collective in ("broadcast", "reduce")
    if rooted:
        root = root if root is not None else topology.compute_nodes[0]
    optimum = collective_lower_bound_core(topology, collective, root)
    assert optimum is not None  # every collective has a bound once the root is set
    composed = collective == "allreduce" and not is_symmetric(topology)

    def build(chunks: int | None) -> Deployment:
        down = None
        if rooted:
            base = build_collective_core(topology, collective, root=root)
            schedule = base if chunks is None else redeal(base, chunks, topology)
        elif composed:
            if chunks is None:  # both phases reach their optimum at a common multiple
                rs_k = build_collective_core(topology, "reduce_scatter").k
                chunks = math.lcm(rs_k, build_collective_core(topology, "allgather").k)
            schedule = build_collective_core(topology, "reduce_scatter", k=chunks)
            down = build_collective_core(topology, "allgather", k=chunks)
        else:
            schedule = build_collective_core(topology, collective, k=chunks)
        factors = [s.time_factor for s in (schedule, down) if s is not None]
        assert None not in factors  # built schedules carry their exact factor
        ratio = sum((Fraction(f) for f in factors if f is not None), Fraction(0)) / optimum
        return Deployment(schedule, optimum, ratio, ((schedule.k, ratio),), down)

    if exact or k is not None:
        return build(None if exact else k)
    tried = []
    chunks = 1
    while chunks <= MAX_DEPLOY_K:
        chosen = build(chunks)
        tried.append((chunks, chosen.ratio))
        if chosen.ratio <= 1 + tolerance:
            return replace(chosen, tried=tuple(tried))
        chunks *= 2
    best_k, best = min(tried, key=lambda item: (item[1], item[0]))
    raise ExportError(
        f"no k in 1, 2, 4, ..., {MAX_DEPLOY_K} gives {a_collective(collective)} within "
        f"{float(tolerance):.2%} of the optimum (best: k = {best_k}, "
        f"{float(best - 1):.3%} above); raise --tolerance, force -k, or keep the optimal k "
        "with --exact"
    )
