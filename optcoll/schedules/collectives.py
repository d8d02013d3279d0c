"""Collectives built from spanning trees: reduce-scatter, allreduce, broadcast, reduce.

An allgather schedule (one set of out-trees per compute root, ForestColl,
arXiv 2402.06787) turns into the other all-to-all collectives without new
search:

* **reduce-scatter** runs the same trees in reverse: every tree aggregates its
  root's chunks from the leaves toward the root. The schedule keeps the trees
  in broadcast direction (see :mod:`optcoll.core.schedule`); data flows from each
  edge's ``dst`` back to its ``src`` along the reversed path.
* **allreduce** is reduce-scatter followed by allgather on the same trees.

Broadcast and reduce from one chosen root use a separate construction: by
Edmonds' branching theorem the number of arc-disjoint spanning out-trees from
``root`` equals the minimum root-to-node cut, so the optimal broadcast bandwidth
is ``min over compute v of maxflow(root, v)`` (switches relay without copying;
splitting them off preserves this rooted connectivity, Bang-Jensen, Frank and
Jackson). The trees come from :func:`optcoll.graph.splitting.split_switches` and
:func:`optcoll.schedules.packing.pack_rooted`.

Time factors (bandwidth model, exact)
-------------------------------------
For allgather and reduce-scatter a phase takes ``(M / N) * time_factor`` for an
``M``-byte result; allreduce is the sum of its two phases; broadcast and reduce
take ``M * time_factor`` for an ``M``-byte message.
:func:`optcoll.core.loads.phase_time_factor` computes a phase's factor from the exact
link loads.

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
>>> ag = Schedule("allgather", "pair", ("a", "b"), 1, trees)
>>> allreduce(ag, topo).time_factor
Fraction(1, 50)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction

from optcoll.bounds.cut_ratio import CutRatio, optimal_cut_ratio_core
from optcoll.bounds.forwardable import forwardable_topology
from optcoll.core.arguments import (
    collective_argument,
    count_argument,
    flag_argument,
    node_argument,
    schedule_argument,
    topology_argument,
)
from optcoll.core.loads import phase_time_factor
from optcoll.core.schedule import Schedule, a_collective, canonical_collective
from optcoll.core.topology import Link, Topology
from optcoll.exceptions import NotStronglyConnectedError, ScheduleError
from optcoll.graph.maxflow import FlowNetwork
from optcoll.graph.splitting import realise_paths, split_switches
from optcoll.schedules.alltoall import (
    alltoall_bound_core,
    alltoall_schedule_core,
)
from optcoll.schedules.packing import pack_arborescences_core, pack_rooted

__all__ = [
    "collective_lower_bound",
    "collective_cut_ratio",
    "reversed_topology",
    "bidirectional_core",
    "is_symmetric",
    "reduce_scatter",
    "allreduce",
    "broadcast_capacity",
    "broadcast_usable",
    "broadcast",
    "reduce",
    "build_collective",
    "packing_topology",
    "from_allgather_trees",
    "collective_phases",
    "core_connected",
    "two_tree_sets",
]

Arc = tuple[str, str]


def reversed_topology(topology: Topology) -> Topology:
    """The topology with every link reversed (same nodes, bandwidths, latencies).

    A reduction toward a root on ``topology`` is a broadcast from that root on
    the reversed topology, read backwards.

    Examples
    --------
    >>> from optcoll.core.topology import Node
    >>> t = Topology("t", [Node("a"), Node("b")], [Link("a", "b", 1), Link("b", "a", 2)])
    >>> reversed_topology(t).capacity[("a", "b")]
    Fraction(2, 1)
    """
    links = [Link(x.dst, x.src, x.bandwidth, x.latency, x.bidirectional) for x in topology.links]
    return Topology(
        f"reverse({topology.name})",
        topology.nodes,
        links,
        bandwidth_unit=topology.bandwidth_unit,
        description=topology.description,
        rank_order=topology.rank_order,
    )


def bidirectional_core(topology: Topology) -> Topology:
    """The links usable in both directions: ``u <-> v`` with the smaller of the two bandwidths.

    Allreduce runs one set of trees forward (allgather) and backward
    (reduce-scatter), so every tree edge needs a link each way; trees packed on the
    core fit both phases. A pair joined in one direction only is dropped.

    Examples
    --------
    >>> from optcoll.core.topology import Node
    >>> t = Topology("t", [Node("a"), Node("b"), Node("c")],
    ...              [Link("a", "b", 4), Link("b", "a", 1), Link("b", "c", 2, bidirectional=True),
    ...               Link("c", "a", 2)])
    >>> sorted(bidirectional_core(t).capacity.items())  # doctest: +NORMALIZE_WHITESPACE
    [(('a', 'b'), Fraction(1, 1)), (('b', 'a'), Fraction(1, 1)),
     (('b', 'c'), Fraction(2, 1)), (('c', 'b'), Fraction(2, 1))]

    Raises
    ------
    ScheduleError
        The links usable both ways do not connect the compute nodes.
    """
    cap = topology.capacity
    links = [
        Link(u, v, min(c, cap[(v, u)]), bidirectional=True)
        for (u, v), c in sorted(cap.items())
        if u < v and (v, u) in cap
    ]
    try:
        return Topology(
            f"core({topology.name})",
            topology.nodes,
            links,
            bandwidth_unit=topology.bandwidth_unit,
            description=topology.description,
            rank_order=topology.rank_order,
        )
    except NotStronglyConnectedError as err:
        raise ScheduleError(
            f"an allreduce on {topology.name!r} runs one set of trees both ways, but its links "
            f"usable in both directions do not connect the compute nodes ({err}); run "
            "--collective reduce-scatter and --collective allgather separately, or export "
            "--collective allreduce, which composes the two"
        ) from None


def core_connected(topology: Topology) -> bool:
    """Whether the links usable in both directions connect the compute nodes, so that one
    set of trees can run an allreduce both ways (:func:`bidirectional_core`).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> core_connected(build("ring:4")), core_connected(build("random:n=8,switches=0,seed=1"))
    (True, False)
    """
    try:
        bidirectional_core(topology)
    except ScheduleError:
        return False
    return True


def two_tree_sets(
    topology: Topology, build: Callable[[Topology], Schedule]
) -> tuple[Schedule, Schedule]:
    """An allreduce on trees that differ by phase: the reduce-scatter on the allgather trees
    ``build`` packs on the reversed topology (their reversed paths are ``topology``'s),
    then the allgather on those it packs on ``topology``; both stated on ``topology``.
    Where the links usable both ways do not connect the compute nodes, the only way to
    run an allreduce on such trees.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines import ring_schedule
    >>> reducing, gathering = two_tree_sets(build("random:n=8,switches=0,seed=1"), ring_schedule)
    >>> reducing.collective, gathering.collective
    ('reduce_scatter', 'allgather')
    """
    reducing = collective_phases(build(reversed_topology(topology)), topology, "reduce_scatter")
    return reducing, collective_phases(build(topology), topology, "allgather")


def is_symmetric(topology: Topology) -> bool:
    """True when every link ``u -> v`` has a reverse link ``v -> u`` of equal total bandwidth.

    Examples
    --------
    >>> from optcoll.core.topology import Node
    >>> is_symmetric(Topology("t", [Node("a"), Node("b")], [Link("a", "b", 1, bidirectional=True)]))
    True
    """
    cap = topology.capacity
    return all(cap.get((v, u)) == c for (u, v), c in cap.items())


def _require_allgather(schedule: Schedule, what: str) -> None:
    if schedule.collective != "allgather":
        raise ScheduleError(
            f"{what} is built from an allgather schedule, got a {schedule.collective!r} schedule"
        )


def reduce_scatter(schedule: Schedule, topology: Topology) -> Schedule:
    """Reduce-scatter on the trees of an allgather schedule, run in reverse.

    Every tree aggregates ``chunks`` of its root's shard from the leaves toward
    the root along the reversed paths. The time factor is computed exactly from
    the reversed link loads.

    Optimality: for a cut ``S`` with complement ``T``, the compute nodes of
    ``T`` must receive ``(M / N) * |T ∩ Vc|`` reduced bytes that depend on
    inputs in ``S``, so reduce-scatter on ``G`` is bounded by the allgather cut
    ratio of the *reversed* topology. Reversed optimal allgather trees of
    ``reversed_topology(G)`` therefore give an optimal reduce-scatter on ``G``
    for every topology. When ``G`` is symmetric (:func:`is_symmetric`) the two
    coincide and the allgather trees of ``G`` itself are optimal with time factor
    ``r*``. On an asymmetric topology pass trees built on the reversed topology;
    trees whose reversed paths leave ``G``'s links raise a ScheduleError.

    Parameters
    ----------
    schedule : Schedule
        An allgather schedule (trees in broadcast direction).
    topology : Topology
        The topology the reduce-scatter runs on.

    Examples
    --------
    >>> from optcoll.core.topology import TopologyBuilder
    >>> from optcoll.core.schedule import Tree, TreeEdge
    >>> b = TopologyBuilder("pair")
    >>> b.compute("a"); b.compute("b"); b.link("a", "b", 10); b.link("b", "a", 5)
    >>> topo = b.build()
    >>> ag = Schedule("allgather", "pair", ("a", "b"), 1,
    ...               (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
    ...                Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),))))
    >>> reduce_scatter(ag, topo).time_factor
    Fraction(1, 5)
    """
    schedule_argument(schedule)
    topology_argument(topology)
    return reduce_scatter_core(schedule, topology)


def reduce_scatter_core(schedule: Schedule, topology: Topology) -> Schedule:
    """The core of :func:`reduce_scatter`: its arguments are already checked."""
    _require_allgather(schedule, "reduce-scatter")
    factor = phase_time_factor(topology, schedule.trees, schedule.k, reverse=True)
    return replace(
        schedule,
        collective="reduce_scatter",
        time_factor=factor,
        cut_ratio=schedule.cut_ratio if is_symmetric(topology) else None,
        stats=_phase_stats(schedule, topology),
    )


def allreduce(schedule: Schedule, topology: Topology) -> Schedule:
    """Allreduce as reduce-scatter (trees reversed) then allgather (trees forward).

    The time factor is the exact sum of both phases. On a symmetric topology
    with an optimal allgather schedule it equals ``2 * r*``: each phase is
    optimal, so the schedule is optimal among allreduce schedules made of a
    reduce-scatter followed by an allgather. It is not claimed optimal among all
    allreduce algorithms (in-network reduction, or schemes that interleave the
    phases, are outside this bound). The stored ``cut_ratio`` stays the
    allgather r*.

    Examples
    --------
    >>> from optcoll.core.topology import TopologyBuilder
    >>> from optcoll.core.schedule import Tree, TreeEdge
    >>> b = TopologyBuilder("ring3")
    >>> for n in "abc": b.compute(n)
    >>> for u, v in ("ab", "bc", "ca"): b.link(u, v, 6, bidirectional=True)
    >>> topo = b.build()
    >>> star = lambda r: Tree(r, 1, tuple(TreeEdge(r, v, (r, v)) for v in "abc" if v != r))
    >>> ag = Schedule("allgather", "ring3", tuple("abc"), 1, tuple(star(r) for r in "abc"))
    >>> allreduce(ag, topo).time_factor
    Fraction(1, 3)
    """
    schedule_argument(schedule)
    topology_argument(topology)
    return allreduce_core(schedule, topology)


def allreduce_core(schedule: Schedule, topology: Topology) -> Schedule:
    """The core of :func:`allreduce`: its arguments are already checked."""
    _require_allgather(schedule, "allreduce")
    down = phase_time_factor(topology, schedule.trees, schedule.k)
    up = phase_time_factor(topology, schedule.trees, schedule.k, reverse=True)
    return replace(
        schedule,
        collective="allreduce",
        time_factor=up + down,
        stats=_phase_stats(schedule, topology),
    )


def _phase_stats(schedule: Schedule, topology: Topology) -> dict[str, object]:
    """The allgather's stats that still hold when its trees also run reversed: its
    ``ratio_to_optimum`` only on a symmetric topology (both phases' bounds are then r*)."""
    stats = dict(schedule.stats)
    if not is_symmetric(topology):
        stats.pop("ratio_to_optimum", None)
    return stats


def broadcast_capacity(topology: Topology, root: str) -> int:
    """``K = min over compute v != root of maxflow(root, v)`` in integer capacity units.

    By Edmonds' branching theorem (switches split off as in Bang-Jensen, Frank
    and Jackson) ``K`` spanning out-trees from ``root`` fit into the integer
    capacities, and no broadcast from ``root`` is faster than ``M / (K * unit)``.
    Computed by Hao and Orlin's rooted search
    (:meth:`optcoll.graph.maxflow.FlowNetwork.min_rooted_cut`): measured sinks merge into
    the root and local certificates replace most of the ``N - 1`` max-flows.

    Raises
    ------
    UnknownNodeError, ScheduleError
        ``root`` is not a node, or not a compute node.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> broadcast_capacity(build("dgx-a100:1"), "b0.gpu0")
    1
    """
    _require_compute_root(topology, root)
    return _min_rooted_cut(topology, root)[0]


def _min_rooted_cut(topology: Topology, root: str) -> tuple[int, frozenset[str]]:
    """The minimum root-to-compute-node cut in integer capacity units, and its root side."""
    caps, _ = topology.integer_capacities()
    index = {node: i for i, node in enumerate(topology.node_ids)}
    arcs = list(caps)
    network = FlowNetwork(
        len(index),
        [index[u] for u, _ in arcs],
        [index[v] for _, v in arcs],
        [caps[a] for a in arcs],
    )
    sinks = [index[v] for v in topology.compute_nodes if v != root]
    cut = network.min_rooted_cut(index[root], sinks)
    side = frozenset(topology.node_ids[i] for i in cut.source_side.nonzero()[0].tolist())
    return cut.value, side


def broadcast_usable(topology: Topology, root: str) -> Topology:
    """The capacity a broadcast from ``root`` can use: ``topology`` itself unless a
    switch could send more than it receives (switches never copy), then the best
    forwardable part of it for this root (:func:`optcoll.bounds.forwardable.forwardable_topology`,
    exact and proved by LP duality).

    Examples
    --------
    >>> from optcoll.core.topology import TopologyBuilder
    >>> b = TopologyBuilder("short")
    >>> b.compute("a"); b.compute("b"); b.compute("c"); b.switch("w")
    >>> b.link("a", "w", 100); b.link("w", "b", 100); b.link("w", "c", 100)
    >>> b.link("b", "a", 100); b.link("c", "a", 100); b.link("b", "c", 10, bidirectional=True)
    >>> usable = broadcast_usable(b.build(), "a")
    >>> 1 / collective_lower_bound(usable, "broadcast", "a")  # w splits its 100 in two
    Fraction(60, 1)
    """
    if not topology.short_switches():
        return topology

    def separate(candidate: Topology) -> tuple[Fraction, frozenset[str]]:
        value, side = _min_rooted_cut(candidate, root)
        return 1 / (value * candidate.integer_capacities()[1]), side

    return forwardable_topology(topology, separate, root=root).usable


def _require_compute_root(topology: Topology, root: str) -> None:
    if not topology.is_compute(root):
        raise ScheduleError(
            f"root {root!r} is a switch; a broadcast or reduce root must be a compute node"
        )


def broadcast(topology: Topology, root: str, *, progress: bool = False) -> Schedule:
    """Optimal broadcast from ``root``: ``K`` spanning out-trees, one chunk each.

    ``K = broadcast_capacity(topology, root)``; the switches are split off with
    :func:`optcoll.graph.splitting.split_switches` (link capacities = integer
    capacities, super-source arc of capacity ``K`` into ``root``, requirement
    ``K``) and :func:`optcoll.schedules.packing.pack_rooted` packs the ``K`` trees. The
    message is cut into ``K`` chunks; the time factor is exactly
    ``1 / (K * unit)`` (time ``M * time_factor``), which the min-cut bound
    proves optimal; it is stored as both ``cut_ratio`` (the lower bound) and
    ``time_factor``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> s = broadcast(build("dgx-a100:1"), "b0.gpu3")
    >>> s.k, s.time_factor, s.root
    (1, Fraction(1, 300), 'b0.gpu3')
    """
    topology_argument(topology)
    node_argument(topology, root, "root")
    flag_argument(progress, "progress")
    return broadcast_core(topology, root, progress=progress)


def broadcast_core(topology: Topology, root: str, *, progress: bool = False) -> Schedule:
    """The core of :func:`broadcast`: its arguments are already checked."""
    usable = broadcast_usable(topology, root)
    k = broadcast_capacity(usable, root)
    caps, unit = usable.integer_capacities()
    logical = split_switches(usable, caps, {root: k}, k, progress=progress)
    trees = realise_paths(logical, pack_rooted(logical, {root: k}, progress=progress))
    factor = phase_time_factor(topology, trees, k)
    assert factor == 1 / (k * unit), "packing exceeded the integer capacities"
    return Schedule(
        "broadcast",
        topology.name,
        topology.compute_nodes,
        k,
        tuple(trees),
        cut_ratio=factor,
        time_factor=factor,
        root=root,
        topology_hash=topology.content_hash,
        stats={"trees": len(trees), "min_cut_bandwidth": str(k * unit)},
    )


def reduce(topology: Topology, root: str, *, progress: bool = False) -> Schedule:
    """Optimal reduce toward ``root``: the optimal broadcast of the reversed topology, run backwards.

    The trees are stored in broadcast direction (their paths run along the
    reversed topology's links) and aggregate toward ``root`` along ``topology``'s
    links; the time factor ``1 / (K' * unit)`` with ``K'`` the minimum
    node-to-root cut is optimal by the same cut argument.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> s = reduce(build("dgx-a100:1"), "b0.gpu0")
    >>> s.collective, s.time_factor
    ('reduce', Fraction(1, 300))
    """
    topology_argument(topology)
    node_argument(topology, root, "root")
    flag_argument(progress, "progress")
    return reduce_core(topology, root, progress=progress)


def reduce_core(topology: Topology, root: str, *, progress: bool = False) -> Schedule:
    """The core of :func:`reduce`: its arguments are already checked."""
    forward = broadcast_core(reversed_topology(topology), root, progress=progress)
    factor = phase_time_factor(topology, forward.trees, forward.k, reverse=True)
    return replace(
        forward,
        collective="reduce",
        topology=topology.name,
        topology_hash=topology.content_hash,
        cut_ratio=factor,
        time_factor=factor,
    )


def _checked_collective(topology: Topology, collective: str, root: str | None) -> str:
    """The argument checks the public collective functions share: a topology, a known
    collective (returned in its canonical spelling) and, if given, a root node of it."""
    topology_argument(topology)
    collective = collective_argument(collective)
    if root is not None:
        node_argument(topology, root, "root")
    return collective


def build_collective(
    topology: Topology,
    collective: str,
    *,
    k: int | None = None,
    root: str | None = None,
    progress: bool = False,
    bound: CutRatio | None = None,
) -> Schedule:
    """The optimal schedule of ``collective`` on ``topology`` (or the best with ``k`` chunks).

    allgather: :func:`optcoll.schedules.packing.pack_arborescences`; reduce-scatter: the
    allgather trees of the reversed topology, run in reverse (the allgather
    trees of ``topology`` itself when it is symmetric); allreduce: reduce-scatter
    then allgather on the allgather trees (needs every link's reverse link);
    alltoall: :func:`optcoll.schedules.alltoall.alltoall_schedule` (routes, not trees);
    broadcast and reduce: :func:`broadcast` and :func:`reduce` from ``root``
    (default: the first compute node; ``k`` does not apply). ``collective`` may be
    spelled ``reduce-scatter``. ``bound`` is the allgather cut ratio of the topology
    whose trees are packed (``topology``, or its reversal for an asymmetric
    reduce-scatter) when the caller has it (see :func:`packing_topology`).

    Raises
    ------
    ArgumentError
        An unknown collective, a ``k`` that is not a positive integer, or a root that
        is not a node of ``topology``.
    ScheduleError
        ``k`` given for broadcast/reduce, a root given for another collective, or a
        root that is a switch.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> build_collective(build("dgx-a100:1"), "allreduce", k=1).time_factor
    Fraction(7, 150)
    """
    collective = _checked_collective(topology, collective, root)
    k = None if k is None else count_argument(k, "k")
    flag_argument(progress, "progress")
    return build_collective_core(
        topology, collective, k=k, root=root, progress=progress, bound=bound
    )


def build_collective_core(
    topology: Topology,
    collective: str,
    *,
    k: int | None = None,
    root: str | None = None,
    progress: bool = False,
    bound: CutRatio | None = None,
) -> Schedule:
    """The core of :func:`build_collective`: its arguments are already checked."""
    if collective in ("broadcast", "reduce"):
        if k is not None:
            raise ScheduleError(
                f"{a_collective(collective)} uses the maximum number of trees from its root; -k does not apply"
            )
        chosen = root if root is not None else topology.compute_nodes[0]
        make = broadcast if collective == "broadcast" else reduce
        return make(topology, chosen, progress=progress)
    if root is not None:
        raise ScheduleError(
            f"{a_collective(collective)} has no single root; --root applies to broadcast/reduce"
        )
    if collective == "alltoall":
        return alltoall_schedule_core(topology, k)
    packed = packing_topology(topology, collective)
    schedule = pack_arborescences_core(packed, k, progress=progress, bound=bound)
    if collective == "allgather":
        return schedule
    if collective == "reduce_scatter":
        own = replace(schedule, topology=topology.name, topology_hash=topology.content_hash)
        result = reduce_scatter_core(own, topology)
        return replace(result, cut_ratio=schedule.cut_ratio)  # r* of the packed topology
    result = allreduce_core(schedule, topology)
    if packed is not topology:  # the allgather phase's bound is the whole topology's r*
        result = replace(result, cut_ratio=collective_cut_ratio_core(topology, "allreduce"))
    return result


def packing_topology(topology: Topology, collective: str) -> Topology:
    """The topology whose allgather trees :func:`build_collective` packs for ``collective``.

    ``topology`` itself, except for reduce-scatter on an asymmetric topology: its
    reversal (the reduction runs the trees backwards); and for allreduce on a
    topology with a link whose reverse is missing: its :func:`bidirectional_core`
    (one set of trees runs both ways; such a schedule is verified but in general
    not optimal).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> packing_topology(build("ring:4"), "reduce-scatter").name
    'ring:4'
    """
    collective = canonical_collective(collective)
    if collective == "reduce_scatter" and not is_symmetric(topology):
        return reversed_topology(topology)
    if collective == "allreduce":
        cap = topology.capacity
        if any((v, u) not in cap for u, v in cap):
            return bidirectional_core(topology)
    return topology


def from_allgather_trees(
    topology: Topology, collective: str, build: Callable[[Topology], Schedule]
) -> Schedule:
    """``collective`` run by the allgather trees that ``build`` makes, on any topology.

    ``build`` packs its trees on :func:`packing_topology` (so a reduce-scatter's
    reversed trees and an allreduce's backward phase find their links on an
    asymmetric topology); the result is stated on ``topology``: the trees
    themselves (allgather), reversed (reduce-scatter), or both (allreduce). How
    ``plan``, ``compare`` and the NCCL model turn a ring or a packing into each
    collective.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines import ring_schedule
    >>> topo = build("random:n=6,switches=2,seed=3")  # some links have no reverse
    >>> from_allgather_trees(topo, "allreduce", ring_schedule).collective
    'allreduce'
    """
    return collective_phases(build(packing_topology(topology, collective)), topology, collective)


def collective_phases(allgather: Schedule, topology: Topology, collective: str) -> Schedule:
    """``collective`` run by the trees of ``allgather``, an allgather schedule packed on
    :func:`packing_topology`: the trees themselves (allgather), reversed
    (reduce-scatter), or both (allreduce), stated on ``topology``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines import ring_schedule
    >>> topo = build("ring:4")
    >>> collective_phases(ring_schedule(topo), topo, "allreduce").time_factor
    Fraction(3, 100)
    """
    collective = canonical_collective(collective)
    if allgather.topology_hash != topology.content_hash:
        allgather = replace(allgather, topology=topology.name, topology_hash=topology.content_hash)
    if collective == "reduce_scatter":
        return reduce_scatter_core(allgather, topology)
    if collective == "allreduce":
        return allreduce_core(allgather, topology)
    return allgather


def collective_cut_ratio(
    topology: Topology, collective: str, root: str | None = None
) -> Fraction | None:
    """The exact value a ``collective`` schedule's ``cut_ratio`` field states when true.

    The cut bound of the collective's phase: allgather and allreduce, the
    topology's r* (allreduce states its allgather phase's); reduce-scatter, the
    r* of the reversed topology (data flows toward the roots); broadcast and
    reduce, their own optimum (:func:`collective_lower_bound`); all-to-all: None
    (its schedules state no cut ratio). What
    :func:`optcoll.verify.schedule.verify_schedule` judges the field against.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> collective_cut_ratio(build("ring:4"), "allreduce")
    Fraction(3, 200)
    """
    collective = _checked_collective(topology, collective, root)
    return collective_cut_ratio_core(topology, collective, root)


def collective_cut_ratio_core(
    topology: Topology, collective: str, root: str | None = None
) -> Fraction | None:
    """The core of :func:`collective_cut_ratio`: its arguments are already checked."""
    if collective in ("allgather", "allreduce"):
        return collective_lower_bound_core(topology, "allgather")
    if collective == "alltoall" or root is None and collective in ("broadcast", "reduce"):
        return None
    return collective_lower_bound_core(topology, collective, root)


def collective_lower_bound(
    topology: Topology, collective: str, root: str | None = None
) -> Fraction | None:
    """The exact lower bound on a ``collective`` schedule's time factor.

    allgather: r* of ``topology``; reduce-scatter: r* of the reversed topology
    (data flows toward the roots); allreduce run as reduce-scatter then
    allgather: their sum; broadcast from ``root``: ``1 / (K * unit)`` with K the
    minimum root-to-node cut in integer units (Edmonds); reduce to ``root``: the
    same on the reversed topology; all-to-all: t* of its exact LP
    (:func:`optcoll.schedules.alltoall.alltoall_bound`). Returns None for a broadcast/reduce
    without root.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> collective_lower_bound(build("dgx-a100:2"), "allreduce")
    Fraction(6, 65)
    >>> collective_lower_bound(build("dgx-a100:2"), "broadcast", "b0.gpu0")
    Fraction(1, 200)
    """
    collective = _checked_collective(topology, collective, root)
    return collective_lower_bound_core(topology, collective, root)


def collective_lower_bound_core(
    topology: Topology, collective: str, root: str | None = None
) -> Fraction | None:
    """The core of :func:`collective_lower_bound`: its arguments are already checked."""
    if collective == "allgather":
        return optimal_cut_ratio_core(topology).ratio
    if collective == "reduce_scatter":
        return optimal_cut_ratio_core(reversed_topology(topology)).ratio
    if collective == "allreduce":
        return (
            optimal_cut_ratio_core(topology).ratio
            + optimal_cut_ratio_core(reversed_topology(topology)).ratio
        )
    if collective == "alltoall":
        return alltoall_bound_core(topology, None).time_factor
    if collective in ("broadcast", "reduce") and root is not None:
        graph = topology if collective == "broadcast" else reversed_topology(topology)
        usable = broadcast_usable(graph, root)
        return 1 / (broadcast_capacity(usable, root) * usable.integer_capacities()[1])
    return None
