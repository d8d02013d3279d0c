"""The log-step schedules that apply to each collective, by name.

One list for ``optcoll plan`` and ``optcoll compare``: every builder of
:mod:`optcoll.schedules.baselines.direct`, :mod:`optcoll.schedules.baselines.logstep`,
:mod:`optcoll.schedules.baselines.swing`, :mod:`optcoll.schedules.baselines.bine`,
:mod:`optcoll.schedules.baselines.pat` and :mod:`optcoll.schedules.baselines.trivance`
that runs the collective, over the compute nodes in declaration order (their ranks), on
two or more equal boxes the hierarchical ones of
:mod:`optcoll.schedules.baselines.hierarchical_steps` (every phase across of each
collective), on a grid (``lines``, :func:`optcoll.schedules.baselines.routing.grid_lines`)
the direct ones of those dimension-wise (labelled ``dimension-wise (...)``), on a torus
(``shape``, :func:`optcoll.schedules.baselines.routing.torus_shape`) multiport Swing (its
latency form where every side is a power of two) and bandwidth-optimal Trivance (an
allreduce also fused Trivance), on a torus of two or more dimensions of any sides Trivance
dimension by dimension, and on a grid of two or more dimensions (``axes``,
:func:`optcoll.schedules.baselines.routing.grid_axes`) the same direct compositions on every
dimension at once, one share of the data each
(:mod:`optcoll.schedules.baselines.multiport_grid`, labelled ``multiport dimension-wise
(...)``); for broadcast and reduce the trees and scatter + allgather of
:mod:`optcoll.schedules.baselines.rooted_steps` from the root (on a torus of powers of two
also their multiport forms).

Examples
--------
>>> [s.method for s in step_schedules("abcdef", "allreduce")]
['one-shot', 'two-shot', 'recursive doubling', 'Rabenseifner', 'Swing', 'Swing (latency)', 'Trivance (latency)']
>>> [s.method for s in step_schedules("abcdef", "broadcast", root="c")]
['direct', 'binomial tree', 'Bine tree', 'scatter + allgather (binomial)', 'scatter + allgather (Bine)']
>>> [s.method for s in step_schedules("abcd", "allgather", [["a", "b"], ["c", "d"]])][-2:]
['hierarchical (recursive doubling + direct)', 'hierarchical (direct + direct)']
>>> [s.method for s in step_schedules("abcd", "reduce_scatter", shape=(2, 2))][-2:]
['multiport Swing', 'Trivance']
>>> [s.method for s in step_schedules("abcdef", "allreduce", shape=(6,))][6:10]
['multiport Swing', 'Trivance', 'fused Trivance', 'Trivance (latency)']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import ROOTED, StepSchedule
from optcoll.schedules.baselines.bine import bine_allgather
from optcoll.schedules.baselines.direct import (
    direct_allgather,
    direct_reduce_scatter,
    one_shot_allreduce,
    two_shot_allreduce,
)
from optcoll.schedules.baselines.hierarchical_steps import (
    ACROSS,
    GATHER_ACROSS,
    SCATTER_ACROSS,
    hierarchical_allgather,
    hierarchical_allreduce,
    hierarchical_one_shot_allreduce,
    hierarchical_reduce_scatter,
)
from optcoll.schedules.baselines.logstep import (
    bruck_allgather,
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
)
from optcoll.schedules.baselines.multiport_grid import ONE_SHOT, multiport_dimension_wise
from optcoll.schedules.baselines.pat import pat_allgather, pat_reduce_scatter
from optcoll.schedules.baselines.rooted_steps import rooted_schedules
from optcoll.schedules.baselines.swing import (
    multiport_swing_allgather,
    multiport_swing_allreduce,
    multiport_swing_latency_allreduce,
    multiport_swing_reduce_scatter,
    swing_allgather,
    swing_allreduce,
    swing_latency_allreduce,
    swing_reduce_scatter,
)
from optcoll.schedules.baselines.trivance import (
    trivance_allgather,
    trivance_allreduce,
    trivance_bandwidth_allreduce,
    trivance_fused_allreduce,
    trivance_reduce_scatter,
    trivance_torus_allreduce,
)

__all__ = ["STEP_BUILDERS", "TORUS_BUILDERS", "DIMENSION_WISE", "step_schedules"]

#: Per collective, the builders of its log-step schedules.
STEP_BUILDERS: dict[str, tuple[Callable[[Sequence[str]], StepSchedule], ...]] = {
    "allgather": (
        direct_allgather,
        recursive_doubling_allgather,
        bruck_allgather,
        swing_allgather,
        bine_allgather,
        pat_allgather,
    ),
    "reduce_scatter": (
        direct_reduce_scatter,
        recursive_halving_reduce_scatter,
        swing_reduce_scatter,
        pat_reduce_scatter,
    ),
    "allreduce": (
        one_shot_allreduce,
        two_shot_allreduce,
        recursive_doubling_allreduce,
        rabenseifner_allreduce,
        swing_allreduce,
        swing_latency_allreduce,
    ),
}

#: Per collective, the builders of its schedules on a torus of a given shape.
TORUS_BUILDERS: dict[str, tuple[Callable[[Sequence[str], Sequence[int]], StepSchedule], ...]] = {
    "allgather": (multiport_swing_allgather, trivance_allgather),
    "reduce_scatter": (multiport_swing_reduce_scatter, trivance_reduce_scatter),
    "allreduce": (
        multiport_swing_allreduce,
        multiport_swing_latency_allreduce,
        trivance_bandwidth_allreduce,
        trivance_fused_allreduce,
    ),
}


#: The direct compositions run dimension-wise on a grid: per collective, the phases across.
DIMENSION_WISE = {
    "allgather": ("direct",),
    "reduce_scatter": ("direct",),
    "allreduce": ("one-shot", "two-shot"),
}


def step_schedules(
    nodes: Sequence[str],
    collective: str,
    boxes: Sequence[Sequence[str]] | None = None,
    shape: Sequence[int] | None = None,
    lines: Sequence[Sequence[str]] | None = None,
    axes: Sequence[Sequence[Sequence[str]]] | None = None,
    root: str | None = None,
) -> list[StepSchedule]:
    """Every step schedule of ``collective`` over ``nodes`` (none for a collective
    without one, or fewer than two nodes), with ``boxes`` (two or more equal boxes of
    the same nodes) the hierarchical ones, with ``shape`` (the torus the nodes form,
    row-major) multiport Swing (its latency form if every side is a power of two) and
    bandwidth-optimal Trivance, and with ``lines``
    (the lines of the grid the nodes form) the dimension-wise direct ones
    (:data:`DIMENSION_WISE`, and for allreduce the two-step one-shot), and with ``axes``
    (per dimension, the lines along it) those on every dimension at once; a broadcast or a
    reduce from ``root`` (default the first node) those of
    :func:`~optcoll.schedules.baselines.rooted_steps.rooted_schedules` (on ``shape``).

    >>> axes = [[["a", "c"], ["b", "d"]], [["a", "b"], ["c", "d"]]]
    >>> [s.method for s in step_schedules("abcd", "allreduce", axes=axes)][-3:]
    ['multiport dimension-wise (direct + one-shot)', 'multiport dimension-wise (direct + two-shot)', 'multiport dimension-wise (one-shot + one-shot)']
    """
    if len(nodes) < 2:
        return []
    if collective in ROOTED:
        root = nodes[0] if root is None else root
        return rooted_schedules(nodes, collective, root, shape, boxes, lines)
    found = [build(nodes) for build in STEP_BUILDERS.get(collective, ())]
    if shape is not None and collective in TORUS_BUILDERS:
        powers = all(d >= 2 and d & (d - 1) == 0 for d in shape)
        found += [
            build(nodes, shape)
            for build in TORUS_BUILDERS[collective]
            if powers or build is not multiport_swing_latency_allreduce
        ]
    if collective == "allreduce":  # two messages per node and step, on any ring or torus
        found.append(trivance_allreduce(nodes))
        if shape is not None and len(shape) > 1:
            found.append(trivance_torus_allreduce(nodes, shape))
    if lines is not None and collective in DIMENSION_WISE:
        found += _composed(collective, lines, DIMENSION_WISE[collective], "dimension-wise")
    if axes is not None and len(axes) > 1 and collective in DIMENSION_WISE:
        extra = (ONE_SHOT,) if collective == "allreduce" else ()
        found += [
            multiport_dimension_wise(axes, collective, across)
            for across in DIMENSION_WISE[collective] + extra
        ]
    if boxes is None or collective not in STEP_BUILDERS:
        return found
    across = {"allgather": GATHER_ACROSS, "reduce_scatter": SCATTER_ACROSS}.get(collective, ACROSS)
    return found + _composed(collective, boxes, tuple(across), "hierarchical")


def _composed(
    collective: str, boxes: Sequence[Sequence[str]], phases: Sequence[str], name: str
) -> list[StepSchedule]:
    """The compositions of :mod:`optcoll.schedules.baselines.hierarchical_steps` over
    ``boxes`` with each of ``phases`` across (an allreduce also the two-step one-shot)."""
    if collective == "allgather":
        return [hierarchical_allgather(boxes, across, name) for across in phases]
    if collective == "reduce_scatter":
        return [hierarchical_reduce_scatter(boxes, across, name) for across in phases]
    found = [hierarchical_allreduce(boxes, across, name) for across in phases]
    found.append(hierarchical_one_shot_allreduce(boxes, name))
    return found
