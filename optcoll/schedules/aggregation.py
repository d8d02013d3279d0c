"""Allreduce schedules through switches that reduce and multicast (NVLS, SHARP).

:func:`aggregation_schedule` turns the exact optimum of
:func:`optcoll.bounds.in_network.aggregation_bound` into an
:class:`~optcoll.core.aggregation.AggregationSchedule`: the LP's tree pairs with
weights ``x_J`` (exact fractions summing to 1) become trees carrying
``chunks = x_J * k`` of ``k`` chunks, ``k`` the least common denominator of the
weights. Reduction runs up each in-tree (through reducing switches, relayed by
the others) and multicast down each out-tree, pipelined; trees whose apex is a
compute node and whose vertices are all compute nodes are the ordinary
reduce-scatter + allgather trees, so where switches only relay the schedule mixes
both kinds. Its time factor is the LP optimum, exactly, which is optimal among
aggregation-tree schedules; it meets the cut bound (optimal among all schedules)
when :attr:`~optcoll.bounds.in_network.AggregationBound.gap` is 1.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.verify.aggregation import verify_aggregation_schedule
>>> topology = build("leaf-spine:leaves=2,hosts=2,spines=1,sharp=1")
>>> schedule = aggregation_schedule(topology)
>>> schedule.k, len(schedule.trees), schedule.time_factor, schedule.lower_bound
(1, 1, Fraction(1, 100), Fraction(1, 100))
>>> verdict = verify_aggregation_schedule(topology, schedule, optimum=schedule.lower_bound,
...                                       require_optimal=True)
>>> verdict.valid, schedule.trees[0].apex
(True, 'l0.h0')
>>> for switch, work in verdict.switch_work.items():
...     print(switch, work)
leaf0 {'received': 3, 'reduced': 1, 'copied': 1, 'sent': 3}
leaf1 {'received': 3, 'reduced': 1, 'copied': 1, 'sent': 3}
spine0 {'received': 2, 'reduced': 0, 'copied': 0, 'sent': 2}
"""

from __future__ import annotations

import math

from optcoll.bounds.in_network import AggregationBound, aggregation_bound
from optcoll.core.aggregation import OPTIMAL_AMONG, AggregationSchedule, AggregationTree
from optcoll.core.arguments import topology_argument
from optcoll.core.schedule import TreeEdge
from optcoll.core.topology import Topology

__all__ = ["aggregation_schedule", "schedule_of_bound"]


def aggregation_schedule(
    topology: Topology, *, time_limit: float | None = None
) -> AggregationSchedule:
    """The optimal aggregation-tree allreduce of ``topology`` (module docstring).

    Raises
    ------
    MethodError, SolverLimitError
        As :func:`~optcoll.bounds.in_network.aggregation_bound`.
    """
    topology_argument(topology)
    return schedule_of_bound(aggregation_bound(topology, time_limit=time_limit))


def schedule_of_bound(bound: AggregationBound) -> AggregationSchedule:
    """The schedule of an :class:`~optcoll.bounds.in_network.AggregationBound`'s optimal trees."""
    topology = bound.topology
    k = math.lcm(*(weight.denominator for *_, weight in bound.pieces))
    trees = tuple(
        AggregationTree(
            apex,
            int(weight * k),
            tuple(TreeEdge(*edge) for edge in up),
            tuple(TreeEdge(*edge) for edge in down),
        )
        for apex, up, down, weight in bound.pieces
    )
    return AggregationSchedule(
        topology.name,
        topology.compute_nodes,
        k,
        trees,
        lower_bound=bound.cut_bound,
        time_factor=bound.optimum,
        topology_hash=topology.content_hash,
        stats={
            "optimal_among": OPTIMAL_AMONG,
            "proved": bound.proved,
            "gap_to_cut_bound": str(bound.gap),
            "columns": bound.columns,
        },
    )
