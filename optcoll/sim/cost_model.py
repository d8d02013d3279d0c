"""The cost of a schedule: exact bandwidth and latency terms (:class:`~optcoll.core.cost.Cost`).

:func:`schedule_cost` gives a tree or route schedule's terms, :func:`aggregation_cost` an
in-network allreduce's (up to 8 switches reduce or multicast: NVLS, SHARP; reduce up,
multicast down, pipelined; its latency term is the deepest reduce path plus the deepest
multicast path of a tree). The baselines' costs come with their builders
(:mod:`optcoll.schedules.baselines`); the comparison of all methods is
:func:`optcoll.studies.compare.compare_methods`.

This module used to predict the time at each size with a closed form, ``alpha + depth * o
+ max(data(M) * time_factor, (c * L + depth - 1) * s / b)``. It is exact on a one-way
ring, a pipelined chain and a star, and disagreed with the simulator by up to 1.97x
elsewhere (mi250:2, k = 2, 32 MiB: 382 µs against 195). The cause: the pipeline term
charges every slice on every edge of the deepest tree at the *smallest bandwidth any
tree uses* (``b``: 16 GB/s on mi250:2), although a deep tree crosses that link once or
not at all, so at middle sizes it overestimates by the ratio of the bandwidths; and it
takes the busiest connection's steps (``steps * L * o``) as a maximum beside the rest,
although those steps start only when their data has arrived, so at small sizes it
underestimates (0.78x at 1 MiB). The closed form was retired for the simulator
(:func:`optcoll.sim.size_plan.method_times`).

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.schedules.baselines import ring_schedule
>>> cost = schedule_cost(build("dgx-a100:1"), ring_schedule(build("dgx-a100:1")), "ring")
>>> cost.time_factor, round(cost.asymptotic_algbw, 3)
(Fraction(7, 300), 342.857)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

from optcoll.core.aggregation import AggregationSchedule, tree_arc_uses
from optcoll.core.arguments import number_argument, schedule_argument, topology_argument
from optcoll.core.cost import DEFAULT_LATENCY, Cost, link_latencies, path_latency
from optcoll.core.loads import PHASES, phase_time_factor, routes_time_factor
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import SolveError

__all__ = ["two_phase_cost", "SIZES", "schedule_cost", "aggregation_cost"]

Arc = tuple[str, str]

#: Message sizes of the algbw curve: 1 KB to 4 GB, powers of 4 (bytes).
SIZES = tuple(1024 * 4**i for i in range(12))


def _deepest(trees: Iterable[Tree], latency: dict[Arc, Fraction], *, reverse: bool) -> Fraction:
    """Largest root-to-node latency over all trees (paths walked backwards if ``reverse``)."""
    worst = Fraction(0)
    for tree in trees:
        reach = {tree.root: Fraction(0)}
        pending = list(tree.edges)
        while pending:
            rest = []
            for edge in pending:
                if edge.src in reach:
                    path = edge.path[::-1] if reverse else edge.path
                    reach[edge.dst] = reach[edge.src] + path_latency(path, latency)
                else:
                    rest.append(edge)
            if len(rest) == len(pending):
                raise SolveError(f"tree rooted at {tree.root!r} is not connected from its root")
            pending = rest
        worst = max(worst, max(reach.values()))
    return worst


def schedule_cost(
    topology: Topology,
    schedule: Schedule,
    method: str | None = None,
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Cost:
    """The cost of a tree schedule: exact link loads, deepest-path latency per phase.

    Examples
    --------
    >>> from optcoll.core.schedule import TreeEdge
    >>> from optcoll.core.topology import TopologyBuilder
    >>> b = TopologyBuilder("pair"); b.compute("a"); b.compute("b")
    >>> b.link("a", "b", 10, bidirectional=True)
    >>> topo = b.build()
    >>> s = Schedule("allreduce", "pair", ("a", "b"), 1, (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
    ...              Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),))))
    >>> c = schedule_cost(topo, s)
    >>> c.time_factor, c.alpha
    (Fraction(1, 5), Fraction(2, 1))
    """
    topology_argument(topology)
    schedule_argument(schedule)
    default_latency = number_argument(default_latency, "default_latency")
    latency = link_latencies(topology, default_latency)
    name = method or f"optimal (k={schedule.k})"
    n = len(schedule.compute_nodes)
    if schedule.collective == "alltoall":
        factor = routes_time_factor(topology, schedule.routes, schedule.k)
        alpha = max(path_latency(p.path, latency) for r in schedule.routes for p in r.paths)
        return Cost(name, "alltoall", n, factor, alpha, schedule)
    factor, alpha = Fraction(0), Fraction(0)
    for reverse in PHASES[schedule.collective]:
        factor += phase_time_factor(topology, schedule.trees, schedule.k, reverse=reverse)
        alpha += _deepest(schedule.trees, latency, reverse=reverse)
    return Cost(name, schedule.collective, n, factor, alpha, schedule)


def two_phase_cost(
    topology: Topology,
    reducing: Schedule,
    allgather: Schedule,
    method: str | None = None,
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Cost:
    """The cost of an allreduce whose reduce-scatter trees (``reducing``) and allgather
    trees differ: the two phases' exact terms added.

    Examples
    --------
    >>> from optcoll.core.topology import TopologyBuilder
    >>> b = TopologyBuilder("pair"); b.compute("a"); b.compute("b")
    >>> b.link("a", "b", 10); b.link("b", "a", 5)
    >>> topo = b.build()
    >>> from optcoll.schedules.collectives import two_tree_sets
    >>> from optcoll.schedules.baselines import ring_schedule
    >>> c = two_phase_cost(topo, *two_tree_sets(topo, ring_schedule), "ring")
    >>> c.time_factor, c.alpha  # a half of M/2 on b -> a in each phase
    (Fraction(2, 5), Fraction(2, 1))
    """
    up = schedule_cost(topology, reducing, default_latency=default_latency)
    down = schedule_cost(topology, allgather, default_latency=default_latency)
    name = method or f"optimal (k={reducing.k})"
    return Cost(
        name, "allreduce", up.num_compute, up.time_factor + down.time_factor,
        up.alpha + down.alpha, trees=tuple(reducing.trees), phases=(True, False),
        down=tuple(allgather.trees),
    )  # fmt: skip


def aggregation_cost(
    topology: Topology,
    schedule: AggregationSchedule,
    method: str = "in-network",
    *,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Cost:
    """The cost of an in-network allreduce (:mod:`optcoll.core.aggregation`).

    Its exact bandwidth term, per ``data(M) = M / N`` as every allreduce here, is
    ``N`` times the schedule's time factor per ``M``; the latency term the deepest
    (reduce path + multicast path) latency of a tree; the simulator runs ``schedule``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.aggregation import aggregation_schedule
    >>> topo = build("dgx-h100:1,nvls=1")
    >>> cost = aggregation_cost(topo, aggregation_schedule(topo))
    >>> cost.time_factor, cost.alpha, round(cost.asymptotic_algbw, 3)  # NVLS: 9/8 M on each link
    (Fraction(1, 50), Fraction(4, 1), 400.0)
    """
    topology_argument(topology)
    default_latency = number_argument(default_latency, "default_latency")
    latency = link_latencies(topology, default_latency)
    k, n = schedule.k, len(schedule.compute_nodes)
    load: dict[Arc, int] = {}
    alpha = Fraction(0)
    multimem = set(topology.multimem_switches)
    for tree in schedule.trees:
        deepest = Fraction(0)
        for edges, downward in ((tree.reduce_edges, False), (tree.multicast_edges, True)):
            deepest += _deepest_branch(tree.apex, edges, latency, downward=downward)
        for arc, uses in tree_arc_uses(tree, multimem).items():
            load[arc] = load.get(arc, 0) + uses * tree.chunks
        alpha = max(alpha, deepest)
    factor = max(Fraction(m, k) / topology.capacity[a] for a, m in load.items())
    return Cost(method, "allreduce", n, n * factor, alpha, schedule)


def _deepest_branch(
    apex: str, edges: Sequence[TreeEdge], latency: dict[Arc, Fraction], *, downward: bool
) -> Fraction:
    """The largest latency sum from a vertex to ``apex`` (in-tree) or back (out-tree)."""
    parent = {(e.dst if downward else e.src): e for e in edges}
    reach: dict[str, Fraction] = {apex: Fraction(0)}
    for start in parent:
        walk = []
        v = start
        while v not in reach:
            walk.append(v)
            edge = parent[v]
            v = edge.src if downward else edge.dst
        for w in reversed(walk):
            edge = parent[w]
            up = edge.src if downward else edge.dst
            reach[w] = reach[up] + path_latency(edge.path, latency)
    return max(reach.values())
