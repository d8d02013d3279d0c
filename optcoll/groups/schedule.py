"""Schedules of concurrent process groups: trees per group, sharing the links at the LP's rates.

Every group runs the allgather of :mod:`optcoll.groups.bounds` on its own spanning
arborescences (its members are the tree nodes; paths between them pass only
through non-members the relaying allows), all groups at once. Group g's trees
are built by the single-group construction (edge splitting, then Edmonds'
branchings: :func:`optcoll.schedules.packing.pack_arborescences`) on a topology of its
own:

* a group alone in its class of link-sharing groups
  (:meth:`~optcoll.core.process_groups.ProcessGroups.sharing_components`) whose optimum is
  its cut ratio uses the graph it sees
  (:meth:`~optcoll.core.process_groups.ProcessGroups.group_topology`): its trees take
  r*_g <= t*, and no other group uses its useful links;
* the groups of a larger class (or a group whose optimum needed the LP) use
  their **shares** ``c_g(e) = x_g(e) / t_c`` of the class's LP optimum t_c
  (:func:`optcoll.groups.concurrent.concurrent_optimum`): every relay has in >= out in
  ``c_g`` and every member cut has ``t_c c_g(δ+(S)) >= |S ∩ g|`` (the proof is
  in :mod:`optcoll.groups.concurrent`), so the group's trees on ``c_g`` take at most
  t_c, loading each link with at most ``t_c c_g(e)``, and the class's groups
  together at most ``t_c bw(e)``.

So the union of all groups' trees has time factor t* exactly (no schedule
beats t*). :func:`optcoll.verify.schedule.verify_groups_schedule` checks that on its
own: each group's trees span its members with allowed relays, and the summed
loads of all groups give the stated time factor.

The other collectives (:func:`groups_collective`, :data:`GROUP_COLLECTIVES`):

* **reduce-scatter** runs each group's allgather trees of the *reversed*
  network backwards (the topology's own trees when it is symmetric): its time
  factor is the reversed network's concurrent optimum, optimal among
  reduce-scatters that are allgathers of the reversed network run backwards
  (every tree reduction is one);
* **allreduce** is reduce-scatter then allgather on the same trees of each
  group; on a symmetric topology each phase takes t*, so ``2 t*`` is optimal
  among schedules made of a reduce-scatter followed by an allgather (not
  among all allreduce algorithms). When a link lacks its reverse the trees
  are packed on the links usable both ways
  (:func:`optcoll.schedules.collectives.bidirectional_core`) and the verified time
  factor is reported without an optimality claim;
* **broadcast** from each group's **root, its first member** (the order of
  GROUPS: for ``blocks:T`` and ``strided:T`` the lowest rank), all groups at
  once: the LP of :mod:`optcoll.groups.concurrent` with one commodity per group
  (:func:`rooted_optimum`), attained by Edmonds' branchings on each group's
  share (one root: the same proof as for the allgather);
* **reduce** toward each group's first member: the broadcasts of the
  reversed network run backwards, optimal by the same reversal.

Every schedule is checked by :func:`optcoll.verify.schedule.verify_groups_schedule`
against :func:`groups_lower_bound` before it is returned.

The data and its file form are :mod:`optcoll.core.groups_schedule`.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.core.process_groups import make_groups
>>> topo = load_topology("ring:4,bw=1")
>>> s = groups_schedule(make_groups(topo, [["n0", "n2"], ["n1", "n3"]], relay="any"))
>>> s.time_factor, [len(g.trees) for g in s.groups]
(Fraction(1, 1), [4, 4])
>>> GroupsSchedule.from_dict(s.to_dict()) == s
True
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from optcoll.core.groups_schedule import GROUP_COLLECTIVES, ROOTED_COLLECTIVES, GroupsSchedule
from optcoll.core.process_groups import ProcessGroups, make_groups
from optcoll.core.schedule import Schedule, canonical_collective
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ScheduleError, SolveError
from optcoll.graph.splitting import realise_paths, split_switches
from optcoll.groups.bounds import FORMS, GroupsBound, concurrent_groups_optimum, groups_bound
from optcoll.schedules.collectives import (
    bidirectional_core,
    broadcast_core,
    collective_lower_bound_core,
    is_symmetric,
    reversed_topology,
)
from optcoll.schedules.packing import pack_arborescences_core, pack_rooted
from optcoll.verify.schedule import verify_groups_schedule

__all__ = [
    "groups_schedule",
    "share_topology",
    "group_roots",
    "reversed_groups",
    "rooted_optimum",
    "groups_lower_bound",
    "groups_collective",
]


def share_topology(
    groups: ProcessGroups, index: int, loads: Mapping[tuple[str, str], Fraction], time: Fraction
) -> Topology:
    """Group ``index``'s share of the links: bandwidth ``loads[e] / time`` on every used link.

    Its compute nodes are the group's members; every other node a used link
    touches is a switch (it forwards, it does not copy).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.process_groups import make_groups
    >>> groups = make_groups(load_topology("ring:4,bw=1"), [["n0", "n2"]], relay="any")
    >>> half = {("n0", "n1"): Fraction(1), ("n1", "n2"): Fraction(1),
    ...         ("n2", "n3"): Fraction(1), ("n3", "n0"): Fraction(1)}
    >>> share_topology(groups, 0, half, Fraction(2)).capacity[("n0", "n1")]
    Fraction(1, 2)
    """
    topo, members = groups.topology, set(groups.groups[index])
    used = [(arc, load / time) for arc, load in loads.items() if load]
    touched = {v for arc, _ in used for v in arc}
    nodes = [
        node if node.id in members else Node(node.id, "switch", node.group)
        for node in topo.nodes
        if node.id in touched or node.id in members
    ]
    return Topology(
        f"{topo.name} group {index} share",
        nodes,
        [Link(u, v, c) for (u, v), c in used],
        topo.bandwidth_unit,
        f"group {index}'s share of {topo.name} at the concurrent optimum",
        [v for v in topo.compute_nodes if v in members],
    )


def groups_schedule(
    groups: ProcessGroups, bound: GroupsBound | None = None, *, form: str | None = None
) -> GroupsSchedule:
    """Trees for every group, together attaining the concurrent optimum t*; verified.

    ``bound`` is :func:`optcoll.groups.bounds.groups_bound` of ``groups`` when the
    caller has it (its solved classes are reused); otherwise it is computed with
    the LP ``form`` (:data:`optcoll.groups.bounds.FORMS`, default the first).

    Raises
    ------
    SolveError
        If the schedule fails :func:`optcoll.verify.schedule.verify_groups_schedule`
        against t* (an internal error).
    """

    if bound is None:
        bound = groups_bound(groups, form=form or FORMS[0])
    topo = groups.topology
    views: dict[int, Topology] = {}
    for component in groups.sharing_components():
        if len(component) == 1 and bound.alone[component[0]].exact_by == "cut":
            views[component[0]] = groups.group_topology(component[0])
            continue
        solved = bound.solved.get(component) or concurrent_groups_optimum(
            groups, component, bound.form
        )
        for g in component:
            views[g] = share_topology(groups, g, solved.loads[g], solved.time_factor)
    schedules = []
    for g, members in enumerate(groups.groups):
        packed = pack_arborescences_core(views[g])
        schedules.append(Schedule("allgather", topo.name, members, packed.k, packed.trees))
    schedule = GroupsSchedule(
        "allgather",
        topo.name,
        groups.relay,
        tuple(schedules),
        bound.time_factor,
        topo.content_hash,
        {"trees": sum(len(s.trees) for s in schedules), "k": [s.k for s in schedules]},
    )
    verdict = verify_groups_schedule(
        topo, schedule, optimum=bound.time_factor, require_optimal=True
    )
    if not verdict.valid:
        raise SolveError(f"the concurrent groups' schedule failed verification: {verdict.reason}")
    return schedule


def group_roots(groups: ProcessGroups) -> tuple[str, ...]:
    """The broadcast/reduce root of every group: its first member.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.io.process_groups import parse_groups
    >>> group_roots(parse_groups(load_topology("dgx-a100:2"), "strided:8"))
    ('b0.gpu0', 'b0.gpu1')
    """
    return tuple(members[0] for members in groups.groups)


def reversed_groups(groups: ProcessGroups) -> ProcessGroups:
    """The same groups and relaying on the reversed topology (data toward the roots).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.process_groups import make_groups
    >>> reversed_groups(make_groups(load_topology("ring:4"), [["n0", "n1"]])).topology.name
    'reverse(ring:4)'
    """

    return make_groups(reversed_topology(groups.topology), groups.groups, groups.relay)


def rooted_optimum(groups: ProcessGroups, roots: tuple[str, ...]) -> Fraction:
    """The exact optimal time of every group broadcasting from ``roots[g]`` at once.

    Per class of link-sharing groups
    (:meth:`~optcoll.core.process_groups.ProcessGroups.sharing_components`): a group alone
    whose relays all have at least as much bandwidth in as out takes its
    broadcast optimum on the graph it sees
    (:func:`optcoll.schedules.collectives.collective_lower_bound`: Edmonds' min cut);
    any other class the LP of :mod:`optcoll.groups.concurrent` with one commodity
    per group. The largest is t*.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.process_groups import make_groups
    >>> groups = make_groups(load_topology("ring:4,bw=1"), [["n0", "n2"], ["n1", "n3"]],
    ...                      relay="any")
    >>> rooted_optimum(groups, ("n0", "n1"))  # alone 1/2 each, but they cross on n1 -> n2
    Fraction(1, 1)
    """

    worst = Fraction(0)
    for component in groups.sharing_components():
        if _balanced_alone(groups, component):
            (g,) = component
            t = collective_lower_bound_core(groups.group_topology(g), "broadcast", roots[g])
            assert t is not None, "a broadcast with a root has a bound"
        else:
            from optcoll.groups.concurrent import concurrent_optimum  # heavy: PuLP

            t = concurrent_optimum(groups, component, roots=roots).time_factor
        worst = max(worst, t)
    return worst


def _balanced_alone(groups: ProcessGroups, component: tuple[int, ...]) -> bool:
    """True for a class of one group whose relays all have in >= out on the graph it sees."""
    return len(component) == 1 and not groups.group_topology(component[0]).short_switches()


def _reduction_groups(groups: ProcessGroups) -> ProcessGroups:
    """The groups whose forward trees, run backwards, reduce on ``groups``' topology."""

    return groups if is_symmetric(groups.topology) else reversed_groups(groups)


def groups_lower_bound(
    groups: ProcessGroups,
    collective: str,
    roots: tuple[str, ...] | None = None,
    *,
    form: str | None = None,
) -> Fraction:
    """The exact lower bound on the time factor of ``collective`` run by all groups at once.

    allgather: t* (:func:`optcoll.groups.bounds.groups_bound`); reduce-scatter: t* of
    the reversed network; allreduce (reduce-scatter then allgather): their
    sum; broadcast and reduce from ``roots`` (default :func:`group_roots`):
    :func:`rooted_optimum` of the network, or of its reversal for reduce.
    ``form``: the LP form of :func:`~optcoll.groups.bounds.groups_bound` (default its default).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.io.process_groups import parse_groups
    >>> groups = parse_groups(load_topology("dgx-a100:2"), "strided:2")
    >>> [groups_lower_bound(groups, c) for c in ("allgather", "allreduce", "broadcast")]
    [Fraction(1, 25), Fraction(2, 25), Fraction(1, 25)]
    """

    collective = _group_collective(collective)
    if roots is None:
        roots = group_roots(groups)
    form = form or FORMS[0]
    if collective == "allgather":
        return groups_bound(groups, form=form).time_factor
    if collective == "reduce_scatter":
        return groups_bound(_reduction_groups(groups), form=form).time_factor
    if collective == "allreduce":
        return groups_lower_bound(groups, "allgather", form=form) + groups_lower_bound(
            groups, "reduce_scatter", form=form
        )
    if collective == "broadcast":
        return rooted_optimum(groups, roots)
    return rooted_optimum(_reduction_groups(groups), roots)


def _group_collective(collective: str) -> str:

    name = canonical_collective(collective)
    if name not in GROUP_COLLECTIVES:
        raise ScheduleError(
            f"process groups run {', '.join(GROUP_COLLECTIVES)}; not {collective!r}"
        )
    return name


def _rooted_schedule(groups: ProcessGroups, roots: tuple[str, ...]) -> list[Schedule]:
    """Every group's broadcast trees from ``roots[g]``, together within :func:`rooted_optimum`.

    A group alone in its class with balanced relays takes the optimal
    broadcast on the graph it sees (:func:`optcoll.schedules.collectives.broadcast`).
    The groups of any other class pack on their LP loads ``x_g`` (in messages): with ``D`` the common
    denominator, integer capacities ``D x_g(e)`` give every member cut at least
    ``D`` (a unit of the root's data crosses it), every relay in >= out, so
    edge splitting and Edmonds' branchings give ``D`` trees of one chunk each
    (k = D), loading link e with at most ``x_g(e)`` messages.
    """
    from math import lcm

    topo = groups.topology
    schedules: dict[int, Schedule] = {}
    for component in groups.sharing_components():
        if _balanced_alone(groups, component):
            (g,) = component
            alone = broadcast_core(groups.group_topology(g), roots[g])
            schedules[g] = Schedule(
                "broadcast", topo.name, groups.groups[g], alone.k, alone.trees, root=roots[g]
            )
            continue
        from optcoll.groups.concurrent import concurrent_optimum  # heavy: PuLP

        solved = concurrent_optimum(groups, component, roots=roots)
        for g in component:
            loads = {arc: x for arc, x in solved.loads[g].items() if x}
            chunks = lcm(*(x.denominator for x in loads.values()))
            caps = {arc: int(x * chunks) for arc, x in loads.items()}
            view = groups.group_topology(g)
            logical = split_switches(view, caps, {roots[g]: chunks}, chunks)
            trees = realise_paths(logical, pack_rooted(logical, {roots[g]: chunks}))
            schedules[g] = Schedule(
                "broadcast", topo.name, groups.groups[g], chunks, tuple(trees), root=roots[g]
            )
    return [schedules[g] for g in range(len(groups.groups))]


def groups_collective(
    groups: ProcessGroups,
    collective: str = "allgather",
    bound: GroupsBound | None = None,
    *,
    form: str | None = None,
) -> GroupsSchedule:
    """``collective`` for every group at once, attaining :func:`groups_lower_bound`; verified.

    See the module docstring for each collective; broadcast and reduce use each
    group's first member as root (:func:`group_roots`). ``bound``
    (:func:`optcoll.groups.bounds.groups_bound` of ``groups``) is reused for allgather
    when the caller has it; ``form`` is the LP form of the concurrent optima
    (:data:`optcoll.groups.bounds.FORMS`; default the first).

    Raises
    ------
    ScheduleError
        ``collective`` is not one of :data:`GROUP_COLLECTIVES`.
    SolveError
        If the schedule fails :func:`optcoll.verify.schedule.verify_groups_schedule`
        (an internal error).

    Examples
    --------
    Even GPUs and odd GPUs of dgx-a100:2, each group reducing toward its first member:

    >>> from optcoll import load_topology
    >>> from optcoll.io.process_groups import parse_groups
    >>> reduce = groups_collective(parse_groups(load_topology("dgx-a100:2"), "strided:8"), "reduce")
    >>> reduce.time_factor, [s.root for s in reduce.groups]
    (Fraction(1, 100), ['b0.gpu0', 'b0.gpu1'])
    """
    from dataclasses import replace

    collective = _group_collective(collective)
    if collective == "allgather":
        return groups_schedule(groups, bound, form=form)
    topo = groups.topology
    roots = group_roots(groups)
    optimum: Fraction | None = groups_lower_bound(groups, collective, roots, form=form)
    if collective in ROOTED_COLLECTIVES:
        base = groups if collective == "broadcast" else _reduction_groups(groups)
        parts = _rooted_schedule(base, roots)
    else:
        if collective == "reduce_scatter":
            base = _reduction_groups(groups)
        elif is_symmetric(topo):
            base = groups
        else:
            base = make_groups(bidirectional_core(topo), groups.groups, groups.relay)
            optimum = None  # one set of trees both ways: verified, not claimed optimal
        parts = list(groups_schedule(base, form=form).groups)
    schedule = GroupsSchedule(
        collective,
        topo.name,
        groups.relay,
        tuple(replace(s, collective=collective, topology=topo.name) for s in parts),
        optimum,
        topo.content_hash,
        {"trees": sum(len(s.trees) for s in parts), "k": [s.k for s in parts]},
    )
    verdict = verify_groups_schedule(
        topo, schedule, optimum=optimum, require_optimal=optimum is not None
    )
    if not verdict.valid or verdict.time_factor is None:
        raise SolveError(
            f"the concurrent groups' {collective} failed verification: {verdict.reason}"
        )
    return replace(schedule, time_factor=verdict.time_factor)
