"""Dimension-wise step schedules on every dimension of a grid at once (multiport).

The dimension-wise compositions of :mod:`optcoll.schedules.baselines.hierarchical_steps`
run a phase inside the lines of one dimension of a grid, then a phase across them: in
each step only the links of one dimension carry data, the others idle. Here the data is
cut into one equal *share* per dimension ``d`` of the grid, and share ``d`` runs the
composition whose lines are those along dimension ``d`` (inside along ``d``, across the
hyperplanes where the coordinate ``d`` is fixed), all shares at once, step by step
(:func:`optcoll.schedules.baselines.logstep.concurrent`). On a 2-D torus or mesh every
step then keeps all four ports of a node busy, each share with half the data of the
one-dimension composition: as multiport Swing (NSDI'24) spreads its shares over the
dimensions, with the two or three steps of the direct compositions instead of
``2 log2 N``.

Examples
--------
>>> rows = [["a", "b"], ["c", "d"]]
>>> columns = [["a", "c"], ["b", "d"]]
>>> s = multiport_dimension_wise([columns, rows], "allreduce", "one-shot")
>>> s.method, s.blocks, s.num_steps, s.compute_nodes
('multiport dimension-wise (direct + one-shot)', 8, 3, ('a', 'b', 'c', 'd'))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.hierarchical_steps import (
    hierarchical_allgather,
    hierarchical_allreduce,
    hierarchical_one_shot_allreduce,
    hierarchical_reduce_scatter,
)
from optcoll.schedules.baselines.logstep import concurrent

__all__ = ["ONE_SHOT", "multiport_dimension_wise", "ranked"]

#: The ``across`` of :func:`multiport_dimension_wise` for the two-step allreduce
#: (:func:`optcoll.schedules.baselines.hierarchical_steps.hierarchical_one_shot_allreduce`).
ONE_SHOT = "one-shot + one-shot"


def ranked(schedule: StepSchedule, nodes: Sequence[str]) -> StepSchedule:
    """``schedule`` with its ranks in the order of ``nodes`` (the same nodes): the same
    messages, the blocks of an allgather or reduce-scatter renumbered so that each node
    keeps its own shard (block ``b`` of node ``schedule.compute_nodes[b mod N]`` becomes
    the block of the same node and share in the new order).

    >>> s = hierarchical_allgather([["a", "b"], ["c", "d"]], "direct")
    >>> t = ranked(s, ("a", "c", "b", "d"))
    >>> [m.blocks for m in t.steps[0] if m.src == "b"]  # b's shard: block 2 in the new order
    [(2,)]
    """
    nodes = tuple(nodes)
    if sorted(nodes) != sorted(schedule.compute_nodes):
        raise ScheduleError(f"{schedule.method}: the new rank order names other nodes")
    if schedule.collective == "allreduce":  # blocks belong to no node
        return replace(schedule, compute_nodes=nodes)
    n = len(nodes)
    rank = {v: i for i, v in enumerate(nodes)}
    new = [(b // n) * n + rank[schedule.compute_nodes[b % n]] for b in range(schedule.blocks)]
    steps = tuple(
        tuple(Send(m.src, m.dst, tuple(new[b] for b in m.blocks), m.reduce) for m in step)
        for step in schedule.steps
    )
    return replace(schedule, compute_nodes=nodes, steps=steps)


def multiport_dimension_wise(
    axes: Sequence[Sequence[Sequence[str]]], collective: str, across: str = "direct"
) -> StepSchedule:
    """The dimension-wise composition with ``across`` run on one share of the data per
    dimension, all at once (see the module docstring).

    Parameters
    ----------
    axes
        Per dimension, the lines along it
        (:func:`optcoll.schedules.baselines.routing.grid_axes`); the ranks are the order of
        the last dimension's lines, one after the other.
    collective
        ``"allgather"``, ``"reduce_scatter"`` or ``"allreduce"``.
    across
        The phase across the lines: for an allgather or a reduce-scatter ``"direct"``
        (:data:`optcoll.schedules.baselines.hierarchical_steps.GATHER_ACROSS`,
        ``SCATTER_ACROSS``); for an allreduce a key of
        :data:`optcoll.schedules.baselines.hierarchical_steps.ACROSS`, or :data:`ONE_SHOT`
        for the two-step one-shot composition.

    Raises
    ------
    ScheduleError
        Fewer than two dimensions, or a collective or ``across`` that has no composition.

    Examples
    --------
    >>> axes = [[["a", "c"], ["b", "d"]], [["a", "b"], ["c", "d"]]]
    >>> s = multiport_dimension_wise(axes, "allgather")
    >>> s.blocks, [len(step) for step in s.steps]  # 2 shares x 4 blocks; 8 messages a step
    (8, [8, 8])
    """
    if len(axes) < 2:
        raise ScheduleError("a multiport dimension-wise schedule needs two or more dimensions")
    nodes = tuple(v for line in axes[-1] for v in line)
    shares = [ranked(_composition(lines, collective, across), nodes) for lines in axes]
    return concurrent(shares, f"multiport {shares[-1].method}")


def _composition(lines: Sequence[Sequence[str]], collective: str, across: str) -> StepSchedule:
    """The dimension-wise composition inside ``lines`` with ``across``."""
    if collective == "allgather":
        return hierarchical_allgather(lines, across, "dimension-wise")
    if collective == "reduce_scatter":
        return hierarchical_reduce_scatter(lines, across, "dimension-wise")
    if collective != "allreduce":
        raise ScheduleError(f"no multiport dimension-wise {collective}")
    if across == ONE_SHOT:
        return hierarchical_one_shot_allreduce(lines, "dimension-wise")
    return hierarchical_allreduce(lines, across, "dimension-wise")
