"""Independent verification of collective schedules.

:func:`verify_schedule` checks a :class:`~optcoll.core.schedule.Schedule` against a
:class:`~optcoll.core.topology.Topology` from first principles. It shares no code
with the builders (splitting, packing, rounding): it reads only the topology's
nodes and aggregated link capacities and the schedule's trees, so a bug in a
builder cannot hide itself here.

What is checked, in this order (the first failure is the reported reason):

1. the collective is known, ``k`` is a positive integer, and ``root`` is given
   exactly for broadcast and reduce;
2. the schedule's ``compute_nodes`` are exactly the topology's compute nodes;
3. every tree root is a compute node (the broadcast/reduce root for those
   collectives) and every tree carries a positive number of chunks;
4. per root, the chunks of its trees sum to ``k`` (for broadcast and reduce: the
   single root's trees sum to ``k``);
5. every tree is an arborescence rooted at its root spanning all compute nodes:
   edges join compute nodes, no edge enters the root, no node has two parents,
   no compute node is missing, no cycle;
6. every edge's path starts at its source, ends at its destination, has only
   switches strictly inside and runs along existing links - for reduce-scatter
   and reduce along the reversed links (data flows from ``dst`` back to ``src``),
   for allreduce in both directions;
7. the exact link loads and time factor; a time factor stated in the schedule
   must equal the computed one (an overloaded link is named), and an allgather
   must not beat the ``cut_ratio`` it states;
8. with ``optimum`` given: the time factor must not be below it (a schedule
   cannot beat a lower bound), and with ``require_optimal=True`` it must equal
   it: no link may carry more than ``optimum * k * bandwidth`` chunks (the
   overloaded link is named; for allreduce the bottleneck of each phase).

An **all-to-all** schedule (``routes`` instead of trees) is checked the same way
from its own structure: steps 1-2, then every ordered pair of distinct compute
nodes has exactly one route, each route's paths carry positive chunks summing to
``k``, and every path starts at the route's source, ends at its destination, runs
along existing links and visits no node twice (any node may forward); then the
loads, the time factor and the claims as in steps 7-8.

Loads and time factor
---------------------
Every compute node's shard is split into ``k`` chunks. A tree with ``chunks = c``
puts ``c`` chunks on a link each time one of its paths uses that link, so
``load(link) = sum over trees of chunks * (uses of the link by the tree's paths)``
(an integer number of chunks). The time factor of one phase is the exact
``max over links of load / (k * bandwidth)``; for allgather and reduce-scatter
the phase takes ``(M / N) * time_factor`` for an ``M``-byte result, for
broadcast and reduce ``M * time_factor`` for an ``M``-byte message.

Allreduce runs reduce-scatter (trees reversed) and then allgather (trees
forward) one after the other, so its time factor is the *sum* of the two phase
time factors; :attr:`Verification.link_loads` then holds the sum of both
phases' loads and :attr:`Verification.bottleneck_links` the links that attain
the maximum in either phase. On a topology whose every link has a reverse link
of the same bandwidth, both phases of an optimal allgather schedule reach r*, so
an optimal allreduce has time factor ``2 * r*``.

Complexity: linear in the total length of all paths plus the number of links.

Compact schedules
-----------------
A schedule whose trees are the images of representatives under a group
(:class:`~optcoll.core.schedule.ImageTrees`: a file with ``"rotations"``, or
:func:`optcoll.schedules.packing.pack_arborescences` on tori, hypercubes, meshes and
clusters of boxes) is checked without expanding it (``method="auto"``): the
generators must be automorphisms of the topology (bijections of the nodes keeping
node types and every link's capacity exactly) that commute and act freely, with the
representatives' roots meeting every orbit once; then the representatives' trees
are checked as above (steps 3-6, their roots' chunks summing to ``k``) and the loads
are the representatives' loads summed over the group. :mod:`optcoll.verify.symmetric`
proves that this gives the full walk's verdict, loads and time factor. When the
generators fail those checks the full walk decides (``method="auto"``), or the
verdict names the failure (``method="compact"``); ``method="full"`` always walks
every tree. :attr:`Verification.method` says which was done.

Examples
--------
>>> from optcoll.core.topology import TopologyBuilder
>>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
>>> b = TopologyBuilder("pair")
>>> b.compute("a"); b.compute("b"); b.switch("sw")
>>> b.link("a", "sw", 100, bidirectional=True); b.link("b", "sw", 100, bidirectional=True)
>>> topo = b.build()
>>> trees = (Tree("a", 1, (TreeEdge("a", "b", ("a", "sw", "b")),)),
...          Tree("b", 1, (TreeEdge("b", "a", ("b", "sw", "a")),)))
>>> result = verify_schedule(topo, Schedule("allgather", "pair", ("a", "b"), 1, trees))
>>> result.valid, result.time_factor, result.link_loads[("a", "sw")]
(True, Fraction(1, 100), 1)
>>> broken = Schedule("allgather", "pair", ("a", "b"), 2, trees)
>>> verify_schedule(topo, broken).reason
"root 'a': the chunks of its trees sum to 1, expected k = 2"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from optcoll.core.arguments import (
    choice_argument,
    number_argument,
    schedule_argument,
    topology_argument,
)
from optcoll.core.groups_schedule import GroupsSchedule
from optcoll.core.process_groups import make_groups
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import (
    COLLECTIVES,
    FILE_STATS,
    ORDER_STATS,
    ImageTrees,
    Route,
    Schedule,
    Tree,
    TreeEdge,
    a_collective,
    order_stats_error,
)
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, GroupError
from optcoll.verify.report import Finding, Verdict
from optcoll.verify.symmetric import GroupRejected, automorphism_action, check_free, orbit_sums

__all__ = ["Verification", "verify_schedule", "verify_groups_schedule"]

Arc = tuple[str, str]

#: Direction(s) in which each collective runs its trees, in execution order.
_PHASES: dict[str, tuple[str, ...]] = {
    "allgather": ("allgather",),
    "broadcast": ("allgather",),
    "reduce_scatter": ("reduce_scatter",),
    "reduce": ("reduce_scatter",),
    "allreduce": ("reduce_scatter", "allgather"),
    "alltoall": ("allgather",),
}
_SINGLE_ROOT = ("broadcast", "reduce")
#: How :func:`verify_schedule` may check the trees.
METHODS = ("auto", "compact", "full")


@dataclass(frozen=True)
class Verification(Verdict):
    """The verdict of :func:`verify_schedule`.

    Attributes
    ----------
    valid : bool
        True when every check passed.
    reason : str or None
        Why the schedule is invalid (naming the tree index, root, node or link at
        fault); None when valid.
    time_factor : Fraction or None
        The exact time factor computed from the link loads (the sum of both
        phases for allreduce); None when the schedule is structurally broken.
    link_loads : dict
        ``(u, v) -> chunks`` carried by every used link (both phases summed for
        allreduce), in the topology's link order; empty when structurally broken.
    bottleneck_links : list of (u, v)
        The links attaining the maximum ``load / (k * bandwidth)`` (in either phase
        for allreduce), in the topology's link order.
    ratio_to_optimum : Fraction or None
        ``time_factor / optimum`` when an optimum was given.
    method : str
        ``"full"`` when every tree was walked, ``"compact"`` when the representatives'
        trees and the group's generators were checked instead (module docstring).
    switch_work : dict
        For aggregation schedules (:mod:`optcoll.verify.aggregation`): per switch that
        carries data, the chunks it ``received``, ``reduced`` (merged away by summing),
        ``copied`` (added by multicast) and ``sent``; empty otherwise.
    unchecked : tuple of str
        The ``stats`` fields the schedule states that no checker can recompute
        from the topology and the trees (a builder's own records, such as
        ``logical_arcs``); they are reported, never trusted.
    findings : tuple of Finding
        The checkers' common form of the verdict (:class:`~optcoll.verify.report.Report`):
        empty when valid, else one ``invalid`` finding carrying ``reason``.
    """

    valid: bool
    reason: str | None
    time_factor: Fraction | None = None
    link_loads: Mapping[Arc, int] = field(default_factory=dict)
    bottleneck_links: list[Arc] = field(default_factory=list)
    ratio_to_optimum: Fraction | None = None
    switch_work: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    unchecked: tuple[str, ...] = ()
    method: str = "full"
    findings: tuple[Finding, ...] = field(init=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (exact ratios as ``"p/q"`` strings).

        Examples
        --------
        >>> Verification(False, "root 'a' is missing").to_dict()["reason"]
        "root 'a' is missing"
        >>> Verification(False, "root 'a' is missing").findings[0].kind
        'invalid'
        """
        data: dict[str, Any] = {
            "valid": self.valid,
            "reason": self.reason,
            "time_factor": None if self.time_factor is None else fraction_text(self.time_factor),
            "ratio_to_optimum": (
                None if self.ratio_to_optimum is None else fraction_text(self.ratio_to_optimum)
            ),
            "bottleneck_links": [list(arc) for arc in self.bottleneck_links],
            "link_loads": [[u, v, load] for (u, v), load in self.link_loads.items()],
            "method": self.method,
            "unchecked": [f"stats.{name}" for name in self.unchecked],
        }
        if self.switch_work:
            data["switch_work"] = {w: dict(work) for w, work in self.switch_work.items()}
        return data


class _Invalid(Exception):
    """Internal: carries the reason of the first failed check."""


def verify_schedule(
    topology: Topology,
    schedule: Schedule,
    *,
    optimum: Fraction | None = None,
    require_optimal: bool = False,
    cut_ratio: Fraction | None = None,
    method: str = "auto",
) -> Verification:
    """Check ``schedule`` on ``topology`` and compute its exact time factor.

    Parameters
    ----------
    topology : Topology
    schedule : Schedule
    optimum : Fraction, optional
        The optimal time factor of this collective on this topology (r* for
        allgather; for allreduce the sum of the two phases' optima, ``2 * r*`` on
        symmetric topologies), or the fixed-k optimum. Gives
        :attr:`Verification.ratio_to_optimum`; a time factor below it makes the
        verdict invalid (the optimum must then be wrong).
    require_optimal : bool
        With ``optimum``: also require the time factor to reach it, i.e. every
        link's load to be at most ``optimum * k * bandwidth`` (a bottleneck link
        is named otherwise; for allreduce the bottleneck of each phase).
    cut_ratio : Fraction, optional
        The exact value the schedule's ``cut_ratio`` field must state, computed
        by the caller by another method (the topology's r* for allgather,
        reduce-scatter and allreduce; the collective's bound for broadcast and
        reduce). Without it a stated ``cut_ratio`` is only checked not to be
        beaten by an allgather.
    method : {"auto", "compact", "full"}
        How a compact schedule (:class:`~optcoll.core.schedule.ImageTrees`) is checked:
        ``"auto"`` from its representatives and generators when these pass the group
        checks, else by walking every tree; ``"compact"`` always from them (a failed
        group check makes the verdict invalid); ``"full"`` walks every tree. Other
        schedules are always walked in full (``"compact"`` refuses them).

    Returns
    -------
    Verification
        Never raises on a bad schedule: the verdict says what is wrong. Every
        claim the schedule states is judged (``time_factor``, ``cut_ratio``,
        ``algbw``, the ``stats`` it can recompute; a ``rotation`` is checked as the trees
        it expands to, compactly when ``method`` allows); each false one is
        named in :attr:`Verification.reason`, the claims no checker can recompute
        are listed in :attr:`Verification.unchecked`.

    Examples
    --------
    >>> from optcoll.core.topology import TopologyBuilder
    >>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
    >>> b = TopologyBuilder("ring3")
    >>> for g in "abc": b.compute(g)
    >>> for u, v in ("ab", "bc", "ca"): b.link(u, v, 10)
    >>> ring = b.build()
    >>> def chain(r, s, t): return Tree(r, 1, (TreeEdge(r, s, (r, s)), TreeEdge(s, t, (s, t))))
    >>> s = Schedule("allgather", "ring3", ("a", "b", "c"), 1,
    ...              (chain("a", "b", "c"), chain("b", "c", "a"), chain("c", "a", "b")))
    >>> v = verify_schedule(ring, s, optimum=Fraction(1, 5))
    >>> v.valid, v.time_factor, v.ratio_to_optimum
    (True, Fraction(1, 5), Fraction(1, 1))
    >>> verify_schedule(ring, s, optimum=Fraction(1, 10), require_optimal=True).reason
    "link 'a' -> 'b' is overloaded: it carries 2 chunks at bandwidth 10 with k = 1 (time factor 1/5), more than the optimum time factor 1/10 allows (1 chunk)"
    """
    topology_argument(topology)
    schedule_argument(schedule)
    if optimum is not None:
        optimum = number_argument(optimum, "optimum")
    if cut_ratio is not None:
        cut_ratio = number_argument(cut_ratio, "cut_ratio")
    method = choice_argument(method, METHODS, "method")
    if method == "compact" and not isinstance(schedule.trees, ImageTrees):
        raise ArgumentError(
            "method 'compact' needs a compact schedule (trees given as a group's images, "
            "a file with 'rotations'); use method 'auto' or 'full'"
        )
    return verify_schedule_core(
        topology,
        schedule,
        optimum=optimum,
        require_optimal=require_optimal,
        cut_ratio=cut_ratio,
        method=method,
    )


def verify_schedule_core(
    topology: Topology,
    schedule: Schedule,
    *,
    optimum: Fraction | None = None,
    require_optimal: bool = False,
    cut_ratio: Fraction | None = None,
    method: str = "auto",
) -> Verification:
    """The core of :func:`verify_schedule`: its arguments are already checked."""
    if schedule.collective == "alltoall":
        return _verify_alltoall(topology, schedule, optimum, require_optimal, cut_ratio)
    trees = schedule.trees
    if (
        method != "full"
        and isinstance(trees, ImageTrees)
        and schedule.collective not in _SINGLE_ROOT  # a free group moves the one root
    ):
        compact = _verify_images(
            topology, schedule, trees, optimum, require_optimal, cut_ratio, method
        )
        if compact is not None:
            return compact
    try:
        _check_header(topology, schedule)
        if schedule.routes:
            raise _Invalid(f"{a_collective(schedule.collective)} schedule has trees, not routes")
        _check_roots(topology, schedule)
        phases = _PHASES[schedule.collective]
        compute = frozenset(topology.compute_nodes)
        checked: set[tuple[str, str, tuple[str, ...]]] = set()  # trees share edges: once each
        for index, tree in enumerate(schedule.trees):
            _check_arborescence(topology, compute, index, tree)
            for edge in tree.edges:
                key = (edge.src, edge.dst, edge.path)
                if key not in checked:
                    _check_path(topology, compute, index, tree, edge, phases)
                    checked.add(key)
    except _Invalid as bad:
        return Verification(False, str(bad))
    forward = _loads(schedule.trees)
    return _verdict(topology, schedule, forward, optimum, require_optimal, cut_ratio, "full")


def _verify_images(
    topology: Topology,
    schedule: Schedule,
    trees: ImageTrees,
    optimum: Fraction | None,
    require_optimal: bool,
    cut_ratio: Fraction | None,
    method: str,
) -> Verification | None:
    """The compact check (:mod:`optcoll.verify.symmetric`); None when the generators do not
    qualify and ``method`` is ``"auto"`` (the full walk decides)."""
    representatives = trees.representatives
    try:
        _check_header(topology, schedule)
        if schedule.routes:
            raise _Invalid(f"{a_collective(schedule.collective)} schedule has trees, not routes")
        # each representative's root first; the chunk sums only once the group is known to
        # act freely with one representative root per orbit (else the sums of the
        # representatives say nothing about those of the trees: the full walk decides)
        _check_roots(topology, schedule, representatives, "representative tree", sums=False)
        try:
            action = automorphism_action(topology, trees.group)
            check_free(action, topology, [t.root for t in representatives])
        except GroupRejected as why:
            if method == "auto":
                return None
            raise _Invalid(f"the schedule's rotations do not qualify: {why}") from None
        _check_roots(topology, schedule, representatives, "representative tree")
        phases = _PHASES[schedule.collective]
        compute = frozenset(topology.compute_nodes)
        checked: set[tuple[str, str, tuple[str, ...]]] = set()
        for index, tree in enumerate(representatives):
            _check_arborescence(topology, compute, index, tree, "representative tree")
            for edge in tree.edges:
                key = (edge.src, edge.dst, edge.path)
                if key not in checked:
                    _check_path(topology, compute, index, tree, edge, phases, "representative tree")
                    checked.add(key)
    except _Invalid as bad:
        return Verification(False, str(bad), method="compact")
    loads = _loads(representatives)
    if set(phases) == {"reduce_scatter"}:  # data runs toward the roots: on the reversed links
        summed = orbit_sums(action, {(v, u): load for (u, v), load in loads.items()})
        forward = {(v, u): load for (u, v), load in summed.items()}
    else:
        forward = orbit_sums(action, loads)
    return _verdict(topology, schedule, forward, optimum, require_optimal, cut_ratio, "compact")


def _verdict(
    topology: Topology,
    schedule: Schedule,
    forward: Mapping[Arc, int],
    optimum: Fraction | None,
    require_optimal: bool,
    cut_ratio: Fraction | None,
    method: str,
) -> Verification:
    """Time factor, loads and claims of structurally valid trees whose forward loads are
    ``forward``."""
    phases = _PHASES[schedule.collective]
    backward = {(v, u): load for (u, v), load in forward.items()}
    phase_loads = [forward if phase == "allgather" else backward for phase in phases]
    phase_factors = [_time_factor(topology, loads, schedule.k) for loads in phase_loads]
    time_factor = sum((tf for tf, _ in phase_factors), Fraction(0))
    bottlenecks = {arc for _, arcs in phase_factors for arc in arcs}
    ordered_bottlenecks = [arc for arc in topology.capacity if arc in bottlenecks]
    total: dict[Arc, int] = {}
    for loads in phase_loads:
        for arc, load in loads.items():
            total[arc] = total.get(arc, 0) + load
    link_loads = {arc: total[arc] for arc in topology.capacity if arc in total}
    ratio = None if optimum is None else Fraction(time_factor) / Fraction(optimum)

    reason = _check_claims(
        topology,
        schedule,
        phases,
        phase_loads,
        phase_factors,
        time_factor,
        None if optimum is None else Fraction(optimum),
        require_optimal,
        cut_ratio,
        compact=method == "compact",
    )
    return Verification(
        reason is None,
        reason,
        time_factor,
        link_loads,
        ordered_bottlenecks,
        ratio,
        unchecked=_unchecked(schedule, optimum, cut_ratio),
        method=method,
    )


def verify_groups_schedule(
    topology: Topology,
    schedule: GroupsSchedule,
    *,
    optimum: Fraction | None = None,
    require_optimal: bool = False,
) -> Verification:
    """Check a concurrent groups' schedule on ``topology`` and compute its exact time factor.

    The groups must be disjoint sets of two or more compute nodes and the relay
    mode known (:func:`optcoll.core.process_groups.make_groups`); each group's trees must
    pass :func:`verify_schedule` on the graph the group sees (its members as
    the compute nodes, the nodes the relaying allows as switches: so every
    tree spans the group's members and its paths relay only where allowed; a
    broadcast or reduce group's trees all start at its ``root``, a member).
    The loads of all groups are then summed in shards (group g's chunks over
    its ``k_g``; for broadcast and reduce in messages) per link and phase; the time factor is the sum over phases of
    the largest load over bandwidth. A stated ``time_factor`` must equal it;
    with ``optimum`` (the groups' concurrent optimum t*) given it may not be
    below it, and with ``require_optimal`` not above it either.

    ``link_loads`` stays empty (the loads are fractions of shards);
    ``bottleneck_links`` are the links that attain the maximum in a phase.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.groups_schedule import GroupsSchedule
    >>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
    >>> ring = load_topology("ring:4,bw=1")
    >>> def pair(a, b, k=1):
    ...     trees = (Tree(a, k, (TreeEdge(a, b, (a, "n1" if a == "n0" else "n3", b)),)),
    ...              Tree(b, k, (TreeEdge(b, a, (b, "n3" if b == "n2" else "n1", a)),)))
    ...     return Schedule("allgather", "ring:4,bw=1", (a, b), k, trees)
    >>> s = GroupsSchedule("allgather", "ring:4,bw=1", "any", (pair("n0", "n2"),))
    >>> v = verify_groups_schedule(ring, s)
    >>> v.valid, v.time_factor
    (True, Fraction(1, 1))
    >>> verify_groups_schedule(ring, s, optimum=Fraction(1, 2), require_optimal=True).reason
    'the time factor 1 is above the optimum 1/2'
    >>> s = GroupsSchedule("allgather", "ring:4,bw=1", "members", (pair("n0", "n2"),))
    >>> verify_groups_schedule(ring, s).reason
    "group 0: 'n0' cannot reach 'n2' through members and switches (try --relay any)"
    """

    try:
        groups = make_groups(topology, [s.compute_nodes for s in schedule.groups], schedule.relay)
    except GroupError as bad:
        return Verification(False, str(bad))
    phases = _PHASES.get(schedule.collective)
    if phases is None or schedule.collective == "alltoall":
        return Verification(
            False,
            f"collective {schedule.collective!r} is not one groups run here; valid: allgather, "
            f"reduce_scatter, allreduce, broadcast, reduce",
        )
    totals: list[dict[Arc, Fraction]] = [{} for _ in phases]
    for index, group in enumerate(schedule.groups):
        if group.collective != schedule.collective:
            return Verification(
                False, f"group {index} runs {group.collective}, not {schedule.collective}"
            )
        view = groups.group_topology(index)
        # rank r of a group is its r-th member (the communicator's order), not the
        # topology's: check the group's schedule against that order
        view = Topology(
            view.name,
            view.nodes,
            view.links,
            view.bandwidth_unit,
            view.description,
            list(groups.groups[index]),
        )
        alone = verify_schedule_core(view, group)
        if not alone.valid:
            return Verification(False, f"group {index}: {alone.reason}")
        forward = _loads(group.trees)
        for phase, total in zip(phases, totals, strict=True):
            for (u, v), load in forward.items():
                arc = (u, v) if phase == "allgather" else (v, u)
                total[arc] = total.get(arc, Fraction(0)) + Fraction(load, group.k)
    time_factor = Fraction(0)
    bottlenecks: set[Arc] = set()
    for total in totals:
        worst = max(load / topology.capacity[arc] for arc, load in total.items())
        time_factor += worst
        bottlenecks |= {
            arc for arc, load in total.items() if load / topology.capacity[arc] == worst
        }
    ordered = [arc for arc in topology.capacity if arc in bottlenecks]
    ratio = None if optimum is None else time_factor / optimum
    false = []
    claimed = schedule.time_factor
    if claimed is not None and claimed != time_factor:
        false.append(
            f"the schedule claims time factor {fraction_text(claimed)}, but the summed loads "
            f"of its groups give {fraction_text(time_factor)}"
        )
    elif optimum is not None and (
        time_factor < optimum or (require_optimal and time_factor > optimum)
    ):
        side = "below" if time_factor < optimum else "above"
        false.append(
            f"the time factor {fraction_text(time_factor)} is {side} the optimum "
            f"{fraction_text(optimum)}"
            + (
                "; no schedule can beat a lower bound, so that optimum is wrong"
                if side == "below"
                else ""
            )
        )
    false.extend(_false_group_stats(schedule))
    reason = "; ".join(false) if false else None
    return Verification(reason is None, reason, time_factor, {}, ordered, ratio)


def _false_group_stats(schedule: GroupsSchedule) -> list[str]:
    """The ``stats`` fields of a groups' schedule that its groups contradict (``trees``:
    the trees of all groups; ``k``: each group's chunks per shard, in group order)."""
    true = {
        "trees": sum(len(group.trees) for group in schedule.groups),
        "k": [group.k for group in schedule.groups],
    }
    false = []
    for name, given in schedule.stats.items():
        if name not in true:
            false.append(f"field 'stats.{name}' is not one a groups' schedule states")
        elif isinstance(given, bool) or given != true[name]:
            false.append(
                f"field 'stats.{name}' states {given!r}, but the schedule has {true[name]!r}"
            )
    return false


def _verify_alltoall(
    topology: Topology,
    schedule: Schedule,
    optimum: Fraction | None,
    require_optimal: bool,
    cut_ratio: Fraction | None,
) -> Verification:
    """The all-to-all branch of :func:`verify_schedule` (routes instead of trees)."""
    try:
        _check_header(topology, schedule)
        if schedule.trees:
            raise _Invalid("an alltoall schedule has routes, not trees")
        loads = _route_loads(topology, schedule)
    except _Invalid as bad:
        return Verification(False, str(bad))
    factor = _time_factor(topology, loads, schedule.k)
    ordered = [arc for arc in topology.capacity if arc in factor[1]]
    link_loads = {arc: loads[arc] for arc in topology.capacity if arc in loads}
    ratio = None if optimum is None else Fraction(factor[0]) / Fraction(optimum)
    reason = _check_claims(
        topology,
        schedule,
        ("allgather",),
        [loads],
        [factor],
        factor[0],
        None if optimum is None else Fraction(optimum),
        require_optimal,
        cut_ratio,
    )
    return Verification(
        reason is None,
        reason,
        factor[0],
        link_loads,
        ordered,
        ratio,
        unchecked=_unchecked(schedule, optimum, cut_ratio),
    )


def _route_loads(topology: Topology, schedule: Schedule) -> dict[Arc, int]:
    """Check every route of an all-to-all and return the chunks on each link."""
    compute = set(topology.compute_nodes)
    seen: dict[tuple[str, str], int] = {}
    loads: dict[Arc, int] = {}
    for index, route in enumerate(schedule.routes):
        where = f"route {index} ({route.src!r} -> {route.dst!r})"
        if route.src not in compute or route.dst not in compute or route.src == route.dst:
            raise _Invalid(f"{where}: source and destination must be two distinct compute nodes")
        if (route.src, route.dst) in seen:
            raise _Invalid(f"{where}: the pair already has route {seen[(route.src, route.dst)]}")
        seen[(route.src, route.dst)] = index
        total = 0
        for j, step in enumerate(route.paths):
            _check_route_path(topology, where, j, route, step.path)
            chunks = step.chunks
            if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
                raise _Invalid(
                    f"{where}, path {j}: chunks must be a positive integer, got {chunks!r}"
                )
            total += chunks
            for arc in zip(step.path, step.path[1:], strict=False):
                loads[arc] = loads.get(arc, 0) + chunks
        if total != schedule.k:
            raise _Invalid(
                f"{where}: the chunks of its paths sum to {total}, expected k = {schedule.k}"
            )
    for s in topology.compute_nodes:
        for d in topology.compute_nodes:
            if s != d and (s, d) not in seen:
                raise _Invalid(f"no route delivers the piece from {s!r} to {d!r}")
    return loads


def _check_route_path(
    topology: Topology, where: str, j: int, route: Route, path: tuple[str, ...]
) -> None:
    if len(path) < 2 or path[0] != route.src or path[-1] != route.dst:
        raise _Invalid(
            f"{where}, path {j}: it must run from {route.src!r} to {route.dst!r}, got {list(path)}"
        )
    if len(set(path)) != len(path):
        raise _Invalid(f"{where}, path {j}: it visits a node twice: {list(path)}")
    for u, v in zip(path, path[1:], strict=False):
        if (u, v) not in topology.capacity:
            raise _Invalid(f"{where}, path {j}: there is no link {u!r} -> {v!r}")


# --- structure ----------------------------------------------------------------------


def _check_header(topology: Topology, schedule: Schedule) -> None:
    if schedule.collective not in COLLECTIVES:
        raise _Invalid(
            f"collective {schedule.collective!r} is unknown; valid: {', '.join(COLLECTIVES)}"
        )
    k = schedule.k
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise _Invalid(f"k must be a positive integer, got {k!r}")
    if schedule.collective in _SINGLE_ROOT:
        if schedule.root is None:
            raise _Invalid(f"collective {schedule.collective!r} needs a root; none is given")
        if schedule.root not in topology.node or not topology.is_compute(schedule.root):
            raise _Invalid(
                f"the {schedule.collective} root {schedule.root!r} is not a compute node "
                f"of topology {topology.name!r}"
            )
    elif schedule.root is not None:
        raise _Invalid(
            f"collective {schedule.collective!r} has no single root, but root "
            f"{schedule.root!r} is given"
        )
    listed = list(schedule.compute_nodes)
    expected = set(topology.compute_nodes)
    seen: set[str] = set()
    for node in listed:
        if node in seen:
            raise _Invalid(f"compute_nodes lists {node!r} twice")
        seen.add(node)
        if node not in expected:
            raise _Invalid(
                f"compute_nodes lists {node!r}, which is not a compute node of topology "
                f"{topology.name!r}"
            )
    for node in topology.compute_nodes:
        if node not in seen:
            raise _Invalid(
                f"compute_nodes misses compute node {node!r} of topology {topology.name!r}"
            )
    for rank, (node, expected_node) in enumerate(zip(listed, topology.compute_nodes, strict=True)):
        if node != expected_node:
            raise _Invalid(
                f"compute_nodes lists {node!r} as rank {rank}, but topology {topology.name!r} "
                f"has {expected_node!r} there; rank r is the r-th compute node of the "
                "topology (MSCCL's GPU id), so every rank would run the wrong GPU's part"
            )


def _check_roots(
    topology: Topology,
    schedule: Schedule,
    representatives: Sequence[Tree] | None = None,
    what: str = "tree",
    *,
    sums: bool = True,
) -> None:
    """Roots and (with ``sums``) chunk sums of every tree, or (compact) of the
    ``representatives``' roots."""
    totals: dict[str, int] = {}
    trees = schedule.trees if representatives is None else representatives
    for index, tree in enumerate(trees):
        root = tree.root
        if root not in topology.node:
            raise _Invalid(f"{what} {index}: root {root!r} is not a node of the topology")
        if not topology.is_compute(root):
            raise _Invalid(f"{what} {index}: root {root!r} is a switch, not a compute node")
        if schedule.collective in _SINGLE_ROOT and root != schedule.root:
            raise _Invalid(
                f"{what} {index} is rooted at {root!r}, but the {schedule.collective} root is "
                f"{schedule.root!r}"
            )
        chunks = tree.chunks
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
            raise _Invalid(
                f"{what} {index} (root {root!r}): chunks must be a positive integer, got {chunks!r}"
            )
        totals[root] = totals.get(root, 0) + chunks
    if not sums:
        return
    roots: Sequence[str] = topology.compute_nodes if representatives is None else list(totals)
    if schedule.collective in _SINGLE_ROOT and schedule.root is not None:
        roots = (schedule.root,)  # the header check has required the root
    for root in roots:
        total = totals.get(root, 0)
        if total != schedule.k:
            raise _Invalid(
                f"root {root!r}: the chunks of its trees sum to {total}, expected k = {schedule.k}"
            )


def _check_arborescence(
    topology: Topology, compute: frozenset[str], index: int, tree: Tree, what: str = "tree"
) -> None:
    def where() -> str:
        return f"{what} {index} (root {tree.root!r})"

    parent: dict[str, str] = {}
    for edge in tree.edges:
        src, dst = edge.src, edge.dst
        if src not in compute or dst not in compute:
            for end in (src, dst):
                if end not in topology.node:
                    raise _Invalid(f"{where()}: edge {src!r} -> {dst!r} names unknown node {end!r}")
                if end not in compute:
                    raise _Invalid(
                        f"{where()}: edge {src!r} -> {dst!r} has switch {end!r} as an end; "
                        f"tree edges join compute nodes (switches belong inside paths)"
                    )
        if dst == tree.root:
            raise _Invalid(f"{where()}: edge {src!r} -> {dst!r} enters the root")
        if dst in parent:
            if parent[dst] == src:
                raise _Invalid(f"{where()}: edge {src!r} -> {dst!r} appears twice")
            raise _Invalid(f"{where()}: node {dst!r} has two parents, {parent[dst]!r} and {src!r}")
        parent[dst] = src
    if len(parent) != len(compute) - 1:
        missing = [c for c in topology.compute_nodes if c != tree.root and c not in parent]
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise _Invalid(
            f"{where()}: compute node {missing[0]!r}{more} is not spanned (no edge enters it)"
        )
    # Every non-root compute node has exactly one parent: the edges form a tree
    # unless following parents from some node never reaches the root (a cycle).
    reaches_root = {tree.root}
    for start in topology.compute_nodes:
        walk: list[str] = []
        on_walk: set[str] = set()
        node = start
        while node not in reaches_root:
            if node in on_walk:
                cycle = walk[walk.index(node) :]
                cycle.reverse()  # parent pointers run against the edges
                order = {c: i for i, c in enumerate(topology.compute_nodes)}
                first = min(range(len(cycle)), key=lambda i: order[cycle[i]])
                cycle = cycle[first:] + cycle[:first]
                text = " -> ".join(repr(c) for c in [*cycle, cycle[0]])
                raise _Invalid(f"{where()}: the edges form a cycle {text} cut off from the root")
            walk.append(node)
            on_walk.add(node)
            node = parent[node]
        reaches_root.update(walk)


def _check_path(
    topology: Topology,
    compute: frozenset[str],
    index: int,
    tree: Tree,
    edge: TreeEdge,
    phases: Sequence[str],
    what: str = "tree",
) -> None:
    def where() -> str:
        return f"{what} {index} (root {tree.root!r}), edge {edge.src!r} -> {edge.dst!r}"

    path = edge.path
    if len(path) < 2:
        raise _Invalid(f"{where()}: the path {list(path)} needs at least its two ends")
    if path[0] != edge.src:
        raise _Invalid(f"{where()}: the path starts at {path[0]!r}, not at the source {edge.src!r}")
    if path[-1] != edge.dst:
        raise _Invalid(
            f"{where()}: the path ends at {path[-1]!r}, not at the destination {edge.dst!r}"
        )
    for node in path[1:-1]:
        if node in compute:
            raise _Invalid(
                f"{where()}: the path passes through compute node {node!r}; only switches may "
                f"relay inside a path"
            )
        if node not in topology.node:
            raise _Invalid(f"{where()}: the path names unknown node {node!r}")
    capacity = topology.capacity
    for u, v in zip(path, path[1:], strict=False):
        if "allgather" in phases and (u, v) not in capacity:
            raise _Invalid(f"{where()}: the path uses the missing link {u!r} -> {v!r}")
        if "reduce_scatter" in phases and (v, u) not in capacity:
            raise _Invalid(
                f"{where()}: the path runs reversed (aggregation toward the root) over the "
                f"missing link {v!r} -> {u!r}"
            )


# --- loads and time factor ----------------------------------------------------------


def _loads(trees: Sequence[Tree]) -> dict[Arc, int]:
    """Chunks per link when the trees run forward (allgather direction)."""
    chunks_on: dict[tuple[str, ...], int] = {}  # per distinct path first: trees share paths
    for tree in trees:
        chunks = tree.chunks
        for edge in tree.edges:
            chunks_on[edge.path] = chunks_on.get(edge.path, 0) + chunks
    loads: dict[Arc, int] = {}
    for path, chunks in chunks_on.items():
        for arc in zip(path, path[1:], strict=False):
            loads[arc] = loads.get(arc, 0) + chunks
    return loads


def _time_factor(topology: Topology, loads: Mapping[Arc, int], k: int) -> tuple[Fraction, set[Arc]]:
    """max over links of load / (k * bandwidth), and the links attaining it."""
    best = Fraction(0)
    arcs: set[Arc] = set()
    for arc, load in loads.items():
        value = Fraction(load) / (k * topology.capacity[arc])
        if value > best:
            best, arcs = value, {arc}
        elif value == best:
            arcs.add(arc)
    return best, arcs


def _first_bottleneck(topology: Topology, arcs: set[Arc]) -> Arc:
    return next(arc for arc in topology.capacity if arc in arcs)


def _check_claims(
    topology: Topology,
    schedule: Schedule,
    phases: Sequence[str],
    phase_loads: Sequence[Mapping[Arc, int]],
    phase_factors: Sequence[tuple[Fraction, set[Arc]]],
    time_factor: Fraction,
    optimum: Fraction | None,
    require_optimal: bool,
    cut_ratio: Fraction | None,
    *,
    compact: bool = False,
) -> str | None:
    """Every false claim of ``schedule`` (joined by "; "), or None when all hold.

    ``compact``: the trees are checked images of the representatives (the tree
    statistics are then the representatives', each counted once per element)."""
    false: list[str] = []
    claimed = schedule.time_factor
    if claimed is not None and claimed != time_factor:
        if time_factor < claimed:
            false.append(
                f"the schedule claims time factor {fraction_text(claimed)}, but its link loads "
                f"give the better {fraction_text(time_factor)}"
            )
        else:
            false.append(
                _excess(
                    topology,
                    schedule.k,
                    phases,
                    phase_loads,
                    phase_factors,
                    time_factor,
                    claimed,
                    "claimed",
                )
            )
    own = schedule.cut_ratio
    if own is not None and schedule.collective == "alltoall":
        false.append(
            f"field 'cut_ratio' states {fraction_text(own)}, but an alltoall has no cut ratio "
            "(its cut bound is stats.cut_bound)"
        )
    elif own is not None and cut_ratio is not None and own != cut_ratio:
        false.append(
            f"field 'cut_ratio' states {fraction_text(own)}, but the exact cut bound of this "
            f"{schedule.collective} on topology {topology.name!r} is {fraction_text(cut_ratio)}"
        )
    elif schedule.collective == "allgather" and own is not None and time_factor < own:
        false.append(
            f"the time factor {fraction_text(time_factor)} is below the schedule's own cut_ratio "
            f"{fraction_text(own)}; no allgather can beat the cut bound, so that cut_ratio is wrong"
        )
    stated = schedule.stated_algbw
    if stated is not None:
        true = replace(schedule, time_factor=time_factor).algbw
        if true is None or round(true, 3) != stated:
            false.append(
                f"field 'algbw' states {stated}, but the time factor {fraction_text(time_factor)} "
                f"gives {round(true or 0, 3)} (bandwidth units)"
            )
    unit = topology.integer_capacities()[1]
    false.extend(_false_stats(schedule, time_factor, optimum, cut_ratio, unit, compact=compact))
    order_error = order_stats_error(schedule)
    if order_error is not None:
        false.append(order_error)
    if optimum is not None and time_factor < optimum:
        false.append(
            f"the time factor {fraction_text(time_factor)} is below the optimum {fraction_text(optimum)}; "
            f"no schedule can beat a lower bound, so that optimum is wrong"
        )
    elif optimum is not None and require_optimal and time_factor > optimum:
        false.append(
            _excess(
                topology,
                schedule.k,
                phases,
                phase_loads,
                phase_factors,
                time_factor,
                optimum,
                "optimum",
            )
        )
    return "; ".join(false) if false else None


def _unchecked(
    schedule: Schedule, optimum: Fraction | None, cut_ratio: Fraction | None
) -> tuple[str, ...]:
    """The ``stats`` fields :func:`_false_stats` cannot recompute (a builder's own records,
    and those relative to a bound the caller did not give)."""
    recomputed = set(FILE_STATS)  # the stats a file states: each is recomputed here
    if _lower_bound(schedule.collective, optimum, cut_ratio) is None:
        recomputed.discard("ratio_to_optimum")
    if cut_ratio is None or schedule.collective not in _SINGLE_ROOT:
        recomputed.discard("min_cut_bandwidth")
    if cut_ratio is None:
        recomputed.discard("U_scaled")
    recomputed |= ORDER_STATS  # instructions, not claims: their form is checked
    return tuple(name for name in schedule.stats if name not in recomputed)


def _lower_bound(
    collective: str, optimum: Fraction | None, cut_ratio: Fraction | None
) -> Fraction | None:
    """The bound a schedule's ``stats.ratio_to_optimum`` is relative to: the cut bound
    (twice it for an allreduce, whose two phases each have it; builders keep the field
    only on symmetric topologies), or for an all-to-all its optimum t*."""
    if collective == "alltoall":
        return optimum
    if cut_ratio is None:
        return None
    return 2 * cut_ratio if collective == "allreduce" else cut_ratio


def _false_stats(
    schedule: Schedule,
    time_factor: Fraction,
    optimum: Fraction | None,
    cut_ratio: Fraction | None,
    unit: Fraction,
    *,
    compact: bool = False,
) -> list[str]:
    """The ``stats`` fields whose stated value the schedule itself contradicts.

    ``unit`` is the bandwidth of one integer capacity unit of the topology
    (:meth:`~optcoll.core.topology.Topology.integer_capacities`): ``U_scaled`` is the
    cut bound times ``unit`` times ``k``.

    With ``compact`` (the trees are a checked group's images of the representatives:
    an image is as tall and has as many edges as its tree, and every representative
    tree has one image per element) the statistics come from the representatives."""
    stats = schedule.stats
    true: dict[str, Any] = {}
    if schedule.collective == "alltoall":
        true["routes"] = len(schedule.routes)
        true["paths"] = sum(len(route.paths) for route in schedule.routes)
    elif schedule.trees:
        trees = schedule.trees
        copies = 1
        if compact and isinstance(trees, ImageTrees):
            copies = len(trees) // len(trees.representatives)
            trees = trees.representatives
        heights = [_height(tree) for tree in trees]
        true["trees"] = len(heights) * copies
        true["max_height"] = max(heights)
        true["mean_height"] = round(sum(heights) / len(heights), 3)
        true["total_sends"] = sum(len(tree.edges) for tree in trees) * copies
    bound = _lower_bound(schedule.collective, optimum, cut_ratio)
    if bound:
        true["ratio_to_optimum"] = fraction_text(time_factor / bound)
    if cut_ratio and schedule.collective in _SINGLE_ROOT:
        true["min_cut_bandwidth"] = fraction_text(1 / cut_ratio)
    if cut_ratio is not None:
        true["U_scaled"] = cut_ratio * unit * schedule.k
    false = []
    for name, value in true.items():
        if name not in stats:
            continue
        given = stats[name]
        if name in ("ratio_to_optimum", "min_cut_bandwidth"):
            try:
                same = Fraction(str(given)) == Fraction(value)
            except (ValueError, ZeroDivisionError):
                same = False
        else:
            same = not isinstance(given, bool) and given == value
        if not same:
            shown = fraction_text(value) if isinstance(value, Fraction) else repr(value)
            false.append(f"field 'stats.{name}' states {given!r}, but the schedule has {shown}")
    return false


def _height(tree: Tree) -> int:
    """The number of edges on the longest root-to-node chain of an (already checked) tree."""
    children: dict[str, list[str]] = {}
    for edge in tree.edges:
        children.setdefault(edge.src, []).append(edge.dst)
    height, level = 0, [tree.root]
    while True:
        level = [child for node in level for child in children.get(node, ())]
        if not level:
            return height
        height += 1


def _excess(
    topology: Topology,
    k: int,
    phases: Sequence[str],
    phase_loads: Sequence[Mapping[Arc, int]],
    phase_factors: Sequence[tuple[Fraction, set[Arc]]],
    time_factor: Fraction,
    limit: Fraction,
    what: str,
) -> str:
    """Name the overloaded link(s) of a schedule whose time factor exceeds ``limit``."""
    if len(phases) == 1:
        arc = _first_bottleneck(topology, phase_factors[0][1])
        load = phase_loads[0][arc]
        bandwidth = topology.capacity[arc]
        return (
            f"link {arc[0]!r} -> {arc[1]!r} is overloaded: it carries {_chunks(load)} at "
            f"bandwidth {fraction_text(bandwidth)} with k = {k} (time factor "
            f"{fraction_text(Fraction(load) / (k * bandwidth))}), more than the {what} time factor "
            f"{fraction_text(limit)} allows ({_chunks(limit * k * bandwidth)})"
        )
    parts = []
    for phase, (tf, arcs) in zip(phases, phase_factors, strict=True):
        u, v = _first_bottleneck(topology, arcs)
        parts.append(f"{phase.replace('_', '-')} {fraction_text(tf)} on link {u!r} -> {v!r}")
    return (
        f"the link loads give time factor {fraction_text(time_factor)} ({' + '.join(parts)}), "
        f"more than the {what} {fraction_text(limit)}"
    )


def _chunks(amount: Fraction | int) -> str:
    value = Fraction(amount)
    return f"{fraction_text(value)} chunk" + ("" if value == 1 else "s")
