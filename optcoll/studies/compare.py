"""The optimal schedule against every applicable baseline, as costs (``optcoll compare``).

:func:`compare_methods` on one topology, :func:`compare_group_methods` for concurrent
process groups; every size-dependent number comes from the event simulator
(:func:`optcoll.sim.size_plan.method_times`).

Examples
--------
>>> from optcoll.topologies import build
>>> [c.method for c in compare_methods(build("dgx-a100:1"), "allreduce")][:5]
['optimal (k=1)', 'fixed k=1', 'ring', 'NCCL-like ring (2 channels)', 'double binary tree']
>>> [c.method for c in compare_methods(build("dgx-a100:1"), "allreduce")][5:]
['one-shot', 'two-shot', 'recursive doubling', 'Rabenseifner', 'Swing', 'Swing (latency)', 'Trivance (latency)']
"""

from __future__ import annotations

from fractions import Fraction

from optcoll.bounds.in_network import has_aggregation_lp
from optcoll.core.arguments import collective_argument, number_argument, topology_argument
from optcoll.core.cost import DEFAULT_LATENCY, Cost
from optcoll.core.groups_schedule import GroupsSchedule
from optcoll.core.process_groups import ProcessGroups
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError, SolveError
from optcoll.groups.schedule import groups_collective
from optcoll.schedules.aggregation import aggregation_schedule
from optcoll.schedules.alltoall import alltoall_schedule_core
from optcoll.schedules.baselines import (
    direct_alltoall,
    double_binary_tree_allreduce,
    hierarchical_alltoall_schedule,
    hierarchical_ring_schedule,
    nccl_ring_schedule,
    nvls_schedule,
    ring_schedule,
)
from optcoll.schedules.collectives import (
    allreduce_core,
    build_collective_core,
    collective_phases,
    core_connected,
    from_allgather_trees,
    is_symmetric,
    packing_topology,
    two_tree_sets,
)
from optcoll.schedules.deploy import Deployment, deployable_schedule
from optcoll.schedules.packing import pack_arborescences_core
from optcoll.sim.cost_model import aggregation_cost, schedule_cost, two_phase_cost
from optcoll.sim.steps import step_costs
from optcoll.verify.schedule import verify_groups_schedule

__all__ = ["compare_methods", "compare_group_methods"]


def compare_methods(
    topology: Topology,
    collective: str = "allgather",
    *,
    root: str | None = None,
    default_latency: Fraction = DEFAULT_LATENCY,
    progress: bool = False,
) -> list[Cost]:
    """The optimal schedule and every applicable baseline, optimal first.

    allgather: optimal (ForestColl's k), fixed k = 1, ring, hierarchical ring
    (multi-box topologies only), NCCL-like rings (:func:`nccl_ring_schedule`: several
    channels, both directions); allreduce: the same two tree schedules run as
    reduce-scatter + allgather, ring allreduce, NCCL-like rings and the double binary tree; both: then the
    log-step schedules (:func:`optcoll.sim.steps.step_costs`: recursive doubling, Bruck,
    Rabenseifner, Swing); allreduce where switches reduce: in-network, then NCCL's NVLS or NVLS-tree
    (:func:`nvls_schedule`) last; alltoall: the optimal routes (:func:`optcoll.schedules.alltoall.alltoall_schedule`),
    direct and hierarchical (rail) all-to-all (the relayed routes of
    :func:`hierarchical_alltoall_schedule`, which the simulator runs; ``optcoll plan``
    has the same candidates); broadcast and reduce from ``root`` (default the first
    compute node): the optimal trees, fixed k = 1, then the step schedules (direct,
    binomial and Bine trees, scatter + allgather:
    :mod:`optcoll.schedules.baselines.rooted_steps`).

    Raises
    ------
    SolveError
        For a collective other than allgather, allreduce, broadcast, reduce and alltoall.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [c.method for c in compare_methods(build("dgx-a100:1"))][4:]
    ['direct', 'recursive doubling', 'Bruck', 'Swing', 'Bine', 'PAT']
    """
    topology_argument(topology)
    collective = collective_argument(collective)
    default_latency = number_argument(default_latency, "default_latency")

    if collective == "alltoall":
        costs = [
            schedule_cost(
                topology, alltoall_schedule_core(topology), default_latency=default_latency
            ),
            direct_alltoall(topology, default_latency=default_latency),
        ]
        rail = hierarchical_alltoall_schedule(topology)
        if rail is None:
            return costs
        method = str(rail.stats["method"])
        return [*costs, schedule_cost(topology, rail, method, default_latency=default_latency)]
    if collective in ("broadcast", "reduce"):
        root = topology.compute_nodes[0] if root is None else root
        optimal = build_collective_core(topology, collective, root=root)
        single = deployable_schedule(topology, collective, k=1, root=root).schedule
        return [
            schedule_cost(topology, optimal, default_latency=default_latency),
            schedule_cost(topology, single, "fixed k=1", default_latency=default_latency),
            *step_costs(topology, collective, root=root, default_latency=default_latency),
        ]
    if collective not in ("allgather", "allreduce"):
        raise SolveError(
            "compare supports allgather, allreduce, broadcast, reduce and alltoall, "
            f"got {collective!r}"
        )
    composed = collective == "allreduce" and not is_symmetric(topology)
    if composed:  # reduce-scatter and allgather trees of their own (plan's candidates)
        costs = [
            _two_phases(topology, deployable_schedule(topology, collective, exact=True), None,
                        default_latency),
            _two_phases(topology, deployable_schedule(topology, collective, k=1), "fixed k=1",
                        default_latency),
        ]  # fmt: skip
    else:
        optimal = from_allgather_trees(
            topology, collective, lambda t: pack_arborescences_core(t, progress=progress)
        )
        single = from_allgather_trees(
            topology, collective, lambda t: pack_arborescences_core(t, 1, progress=progress)
        )
        costs = [
            schedule_cost(topology, optimal, default_latency=default_latency),
            schedule_cost(topology, single, "fixed k=1", default_latency=default_latency),
        ]
    if composed and not core_connected(topology):  # no ring runs both ways
        rings = two_tree_sets(topology, ring_schedule)
        costs.append(two_phase_cost(topology, *rings, "ring", default_latency=default_latency))
        packed = None
    else:
        packed = packing_topology(topology, collective)
    for ring in (ring_schedule(packed), hierarchical_ring_schedule(packed)) if packed else ():
        if ring is None or (collective == "allreduce" and ring.stats["method"] != "ring"):
            continue
        ring = collective_phases(ring, topology, collective)
        method = str(ring.stats["method"])
        costs.append(schedule_cost(topology, ring, method, default_latency=default_latency))
    try:  # reversed rings need the reverse links (an asymmetric topology may lack them)
        nccl = from_allgather_trees(topology, collective, nccl_ring_schedule)
        method = str(nccl.stats["method"])
        costs.append(schedule_cost(topology, nccl, method, default_latency=default_latency))
    except ScheduleError:
        pass
    if collective == "allreduce":
        costs.append(double_binary_tree_allreduce(topology, default_latency=default_latency))
    costs += step_costs(topology, collective, default_latency=default_latency)
    if collective == "allreduce" and has_aggregation_lp(topology):
        schedule = aggregation_schedule(topology)
        costs.append(aggregation_cost(topology, schedule, default_latency=default_latency))
    nvls = nvls_schedule(topology) if collective == "allreduce" else None
    if nvls is not None:
        method = str(nvls.stats["method"])
        costs.append(aggregation_cost(topology, nvls, method, default_latency=default_latency))
    return costs


def _two_phases(
    topology: Topology, deployed: Deployment, method: str | None, default_latency: Fraction
) -> Cost:
    """The cost of a deployed allreduce whose reduce-scatter and allgather trees differ."""
    assert deployed.allgather is not None  # deployed so on an asymmetric topology
    return two_phase_cost(
        topology, deployed.schedule, deployed.allgather, method, default_latency=default_latency
    )


def compare_group_methods(
    groups: ProcessGroups,
    collective: str = "allgather",
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
    form: str | None = None,
) -> list[Cost]:
    """Concurrent process groups: the optimal schedule and a ring in every group, optimal first.

    Each method gives every group a schedule on the graph the group sees
    (:meth:`~optcoll.core.process_groups.ProcessGroups.group_topology`): ``optimal`` the
    trees of :func:`optcoll.groups.schedule.groups_collective` (t*), ``ring``
    :func:`ring_schedule` of each group (run as reduce-scatter + allgather for
    allreduce). All groups run at once, so the bandwidth term is the exact time
    factor of their summed loads (:func:`optcoll.verify.schedule.verify_groups_schedule`,
    which also checks every schedule; ``form``: the LP form of the optimum,
    :data:`optcoll.groups.bounds.FORMS`); the latency and chunking terms are one
    group's (:func:`schedule_cost` on its graph): the group whose cost has the
    lowest asymptotic algbw, the first of those on a tie.

    Raises
    ------
    SolveError
        For a collective other than allgather and allreduce.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.io.process_groups import parse_groups
    >>> costs = compare_group_methods(parse_groups(build("dgx-a100:2"), "strided:8"))
    >>> [(c.method, c.time_factor) for c in costs]
    [('optimal (k=1)', Fraction(1, 25)), ('ring', Fraction(7, 50))]
    """
    from dataclasses import replace

    collective = collective_argument(collective)
    default_latency = number_argument(default_latency, "default_latency")
    if collective not in ("allgather", "allreduce"):
        raise SolveError(f"compare --groups supports allgather and allreduce, got {collective!r}")
    topology = groups.topology
    views = [groups.group_topology(g) for g in range(len(groups.groups))]
    optimal = groups_collective(groups, collective, form=form)
    rings = []
    for view in views:
        ring = ring_schedule(view)
        rings.append(allreduce_core(ring, view) if collective == "allreduce" else ring)
    ringed = GroupsSchedule(collective, topology.name, groups.relay, tuple(rings))
    costs = []
    for method, schedule in ((None, optimal), ("ring", ringed)):
        # the cost is one group's; the simulator runs every group's schedule at once
        verdict = verify_groups_schedule(topology, schedule)
        if not verdict.valid or verdict.time_factor is None:
            raise SolveError(f"the groups' {method or 'optimal'} schedule fails: {verdict.reason}")
        each = [
            replace(
                schedule_cost(view, part, method, default_latency=default_latency),
                time_factor=verdict.time_factor,
                schedule=schedule,
            )
            for view, part in zip(views, schedule.groups, strict=True)
        ]
        costs.append(min(each, key=lambda cost: cost.asymptotic_algbw))
    return costs
