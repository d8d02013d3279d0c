"""Allreduce as reduce + broadcast over a fractional packing of spanning trees (Blink).

On a topology without switches, split the message among spanning trees of the compute
nodes in proportion to weights ``x_T`` (summing to 1). On each tree the data is reduced
up to a root and broadcast back down, so each tree edge carries the tree's share once in
each direction: the arc ``u -> v`` carries ``M * sum_{T containing uv} x_T``. The
allreduce takes ``M * t`` with

    t = min over distributions x of  max over links uv of  sum_{T containing uv} x_T / c(uv)

where ``c(uv) = min(c(u -> v), c(v -> u))`` (a one-way link is not used). With
symmetric links ``1 / t`` is the strength ``tau`` of the graph (Nash-Williams, Tutte),
which is exactly the partition bound (:mod:`optcoll.bounds.partition`): the schedule is
then **optimal among all allreduce schedules where only compute nodes reduce** (Wang et
al., Blink, MLSys 2020, pack spanning trees the same way).

:func:`spanning_tree_packing` solves the LP exactly by column generation
(:func:`optcoll.lp.column_generation.column_generation`), each column a spanning tree,
the pricing a minimum spanning tree under the exact duals (Kruskal); the optimum is
proved by LP duality there. :func:`reduce_broadcast_trees` turns the weights into
integral trees: ``chunks`` per tree with ``k`` chunks in all: an exact integral packing
peeled tree by tree on topologies of at most 32 nodes, else exactly the weights when
their common denominator is at most ``max_chunks``, else the weights rounded (largest
remainders) to ``max_chunks`` chunks; :func:`tree_time_factor` gives its exact time factor.
The trees are rooted at their centres (least height), edges parents first, for
:func:`optcoll.sim.simulator.tree_tasks` with phases ``(True, False)``.

Examples
--------
>>> from optcoll.topologies import build
>>> packing = spanning_tree_packing(build("mesh:4x4"))
>>> packing.time_factor  # M / 160 GB/s
Fraction(1, 160)
>>> trees = reduce_broadcast_trees(build("mesh:4x4"))
>>> sum(tree.chunks for tree in trees), tree_time_factor(build("mesh:4x4"), trees)
(8, Fraction(1, 160))
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from optcoll.bounds.in_network import reduction_cut
from optcoll.bounds.partition import partition_bound
from optcoll.core.aggregation import OPTIMAL_AMONG, AggregationSchedule, AggregationTree
from optcoll.core.arguments import as_topology
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, ScheduleError
from optcoll.graph.strength import graph_strength
from optcoll.schedules.collectives import collective_lower_bound_core

__all__ = [
    "TreePacking",
    "two_way_links",
    "reduces_over_spanning_trees",
    "spanning_trees_beat_rs_ag",
    "spanning_tree_packing",
    "reduce_broadcast_trees",
    "tree_time_factor",
    "spanning_tree_schedule",
    "aggregation_trees",
    "rooted_schedule",
    "is_spanning_tree_allreduce",
    "rooted_optimum",
    "MAX_CHUNKS",
    "TOLERANCE",
]

#: Default largest number of chunks :func:`reduce_broadcast_trees` cuts the message into.
MAX_CHUNKS = 512

#: Most times :func:`reduce_broadcast_trees` solves the LP again on the capacity left.
RESOLVES = 4

#: Largest topology (nodes) on which :func:`reduce_broadcast_trees` peels an exact packing
#: (each step may cost a strength computation and each re-solve an LP).
PEEL_MAX_NODES = 32

#: Default relative gap to the optimum at which :func:`reduce_broadcast_trees` stops dealing.
TOLERANCE = Fraction(1, 100)

Edge = tuple[str, str]


@dataclass(frozen=True)
class TreePacking:
    """An exact optimal distribution of the allreduce over spanning trees.

    Attributes
    ----------
    time_factor : Fraction
        ``t``: the allreduce of ``M`` bytes per node takes ``M * t`` (1/bandwidth unit).
    trees : tuple of (Fraction, tuple of (str, str))
        Each tree's weight (they sum to 1) and its undirected edges.
    """

    time_factor: Fraction
    trees: tuple[tuple[Fraction, tuple[Edge, ...]], ...]


def two_way_links(topology: Topology) -> dict[Edge, Fraction]:
    """Each pair of compute nodes linked both ways (once, first node first in the
    topology's order), with the smaller direction's capacity; ArgumentError on a
    topology with switches.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> two_way_links(build("ring:3"))
    {('n0', 'n1'): Fraction(100, 1), ('n1', 'n2'): Fraction(100, 1), ('n0', 'n2'): Fraction(100, 1)}
    """
    if topology.switch_nodes:
        raise ArgumentError(
            f"{topology.name} has switches: reduce + broadcast over spanning trees needs a "
            "topology of compute nodes only"
        )
    order = {v: i for i, v in enumerate(topology.node_ids)}
    edges: dict[Edge, Fraction] = {}
    for (u, v), c in topology.capacity.items():
        back = topology.capacity.get((v, u))
        if back and order[u] < order[v]:
            edges[(u, v)] = min(c, back)
    return edges


def reduces_over_spanning_trees(topology: Topology) -> bool:
    """Whether :func:`spanning_tree_packing` applies: no switches, and the links that go
    both ways connect every node.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> reduces_over_spanning_trees(build("ring:4")), reduces_over_spanning_trees(build("dgx-a100:1"))
    (True, False)
    """
    if topology.switch_nodes:
        return False
    edges = two_way_links(topology)
    return (
        len(_kruskal(topology.node_ids, dict.fromkeys(edges, Fraction(0))))
        == len(topology.node_ids) - 1
    )


def spanning_trees_beat_rs_ag(topology: Topology) -> bool:
    """Whether reduce + broadcast over spanning trees is faster for large messages than
    reduce-scatter + allgather: ``1/tau < (r*_RS + r*_AG) / N`` per byte of the message.

    The optimal packing's time factor is ``1/tau`` (Nash-Williams and Tutte: the
    fractional spanning-tree packing number equals the strength), found by max-flows
    alone; the packing's LP is solved only where it can win. Where reduce-scatter +
    allgather already attains ``M/tau`` (tori, hypercubes, rings: every node alike) the
    spanning trees cannot be faster in the bandwidth term, and plan skips them.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> spanning_trees_beat_rs_ag(build("mesh:4x4")), spanning_trees_beat_rs_ag(build("torus:4x4"))
    (True, False)
    """
    tau = graph_strength(topology.node_ids, two_way_links(topology)).value
    rs_ag = collective_lower_bound_core(topology, "allreduce")
    assert rs_ag is not None
    return tau > 0 and 1 / tau < rs_ag / topology.num_compute


def spanning_tree_packing(topology: Topology | object) -> TreePacking:
    """The exact optimal spanning-tree distribution of an allreduce (module docstring).

    Raises
    ------
    ArgumentError
        The topology has switches, or its two-way links do not connect its nodes.
    """
    topology = as_topology(topology)
    edges = two_way_links(topology)
    nodes = topology.node_ids
    if len(_kruskal(nodes, {e: Fraction(0) for e in edges})) < len(nodes) - 1:
        raise ArgumentError(f"the two-way links of {topology.name} do not connect its nodes")
    return _packing(nodes, edges, f"spanning trees of {topology.name}")


def _packing(nodes: Sequence[str], edges: Mapping[Edge, Fraction], where: str) -> TreePacking:
    """The LP of :func:`spanning_tree_packing` on a connected graph (positive capacities)."""
    from formulations.column_generation import Column
    from optcoll.lp.column_generation import column_generation

    scale = math.lcm(*(c.denominator for c in edges.values()))
    capacity = {e: int(c * scale) for e, c in edges.items()}

    def price(prices: Mapping[Edge, float | Fraction]) -> list[Column]:
        tree = _kruskal(nodes, prices)
        return [Column(0, tuple((e, 1) for e in tree), tree)]

    packing = column_generation(1, capacity, price, where=where)
    trees = tuple((x, _payload_edges(column.payload)) for column, x in packing.weights)
    return TreePacking(packing.t * scale, trees)


def _payload_edges(payload: object) -> tuple[Edge, ...]:
    """A column's payload: the tree's edges, as :func:`_kruskal` returned them."""
    assert isinstance(payload, tuple)
    return tuple((str(u), str(v)) for u, v in payload)


def _kruskal(nodes: Sequence[str], prices: Mapping[Edge, float | Fraction]) -> tuple[Edge, ...]:
    """A minimum spanning forest under ``prices`` (ties by edge), edges sorted."""
    parent = {v: v for v in nodes}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    chosen = []
    for e in sorted(prices, key=lambda e: (prices[e], e)):
        a, b = find(e[0]), find(e[1])
        if a != b:
            parent[a] = b
            chosen.append(e)
    return tuple(sorted(chosen))


def reduce_broadcast_trees(
    topology: Topology | object,
    *,
    tolerance: Fraction = TOLERANCE,
    max_chunks: int = MAX_CHUNKS,
    packing: TreePacking | None = None,
) -> tuple[Tree, ...]:
    """Integral rooted trees carrying the optimal packing's shares (module docstring).

    The shares are exact when their common denominator is at most ``max_chunks``;
    otherwise an exact integral packing of ``K`` chunks is peeled when ``K`` (``tau`` in
    the smallest integer scale of the capacities) is at most ``max_chunks`` (see
    :func:`_peeled`; its time factor is checked to equal the optimum); otherwise
    ``k`` = 16, 32, ... up to ``max_chunks`` chunks are dealt: each tree first
    gets ``floor(k x_T)``, then each remaining chunk goes to the tree whose busiest edge
    stays least loaded. The first ``k`` whose exact time factor is within ``tolerance``
    of the optimum is kept (else the best found).

    Raises
    ------
    ArgumentError
        As :func:`spanning_tree_packing`, or ``max_chunks`` below 1.
    """
    if max_chunks < 1:
        raise ArgumentError(f"max_chunks must be at least 1, got {max_chunks}")
    topology = as_topology(topology)
    packing = spanning_tree_packing(topology) if packing is None else packing
    weights = [x for x, _ in packing.trees]
    exact = math.lcm(*(x.denominator for x in weights))
    if exact <= max_chunks:
        return _trees(packing, [int(x * exact) for x in weights])
    peeled = _peeled(topology, packing, max_chunks)
    # a re-solve on a residual graph that fell apart gives forests: no allreduce trees
    spanning = len(topology.node_ids) - 1
    if peeled is not None and all(len(edges) == spanning for edges, _ in peeled):
        trees = tuple(_rooted(edges, count) for edges, count in peeled)
        if tree_time_factor(topology, trees) == packing.time_factor:
            return trees
    capacity = two_way_links(topology)
    best: tuple[Fraction, tuple[Tree, ...]] | None = None
    k = min(16, max_chunks)
    while k <= max_chunks:
        trees = _trees(packing, _dealt(packing, capacity, k))
        factor = tree_time_factor(topology, trees)
        if best is None or factor < best[0]:
            best = (factor, trees)
        if factor <= packing.time_factor * (1 + tolerance):
            break
        k *= 2
    assert best is not None
    return best[1]


def _peeled(
    topology: Topology, packing: TreePacking, max_chunks: int
) -> list[tuple[tuple[Edge, ...], int]] | None:
    """Trees and their chunks of an exact integral packing, or None.

    Scaled so that every capacity ``m_e`` and ``K = tau`` are coprime integers, the
    multigraph with ``m_e`` copies of each edge has strength ``K``, hence ``K``
    edge-disjoint spanning trees (Nash-Williams, Tutte). They are peeled one at a time
    from the LP's trees (largest weight first): a tree whose weight times the chunks left
    at the last solve exceeds what it already gave since is taken as it is (the rest of
    the LP's packing remains), any other when the rest still has strength ``K - 1``
    (:func:`optcoll.graph.strength.graph_strength`, exact); when none is, the LP is solved
    again on what is left, at most :data:`RESOLVES` times. None when ``K`` exceeds
    ``max_chunks`` or the re-solves run out."""
    capacity = two_way_links(topology)
    tau = 1 / packing.time_factor
    scale = math.lcm(*(c.denominator for c in capacity.values()), tau.denominator)
    common = math.gcd(*(int(c * scale) for c in capacity.values()), int(tau * scale))
    left = {e: int(c * scale) // common for e, c in capacity.items()}
    remaining = int(tau * scale) // common
    if remaining > max_chunks or len(topology.node_ids) > PEEL_MAX_NODES:
        return None
    taken: dict[tuple[Edge, ...], int] = {}
    support, at_solve, solves = packing.trees, remaining, 0
    since: dict[tuple[Edge, ...], int] = {}  # chunks each tree gave since the last solve
    while remaining:
        for weight, edges in sorted(support, key=lambda wt: (-wt[0], wt[1])):
            if any(left[e] < 1 for e in edges):
                continue
            rest = {e: m - (e in edges) for e, m in left.items()}
            sure = weight * at_solve >= since.get(edges, 0) + 1
            if (
                sure
                or remaining == 1
                or graph_strength(topology.node_ids, rest).value >= remaining - 1
            ):
                left, remaining = rest, remaining - 1
                taken[edges] = taken.get(edges, 0) + 1
                since[edges] = since.get(edges, 0) + 1
                break
        else:
            if solves == RESOLVES:
                return None
            solves += 1
            residual = {e: Fraction(m) for e, m in left.items() if m > 0}
            support = _packing(topology.node_ids, residual, "residual spanning trees").trees
            at_solve, since = remaining, {}
    return sorted(taken.items())


def _dealt(packing: TreePacking, capacity: Mapping[Edge, Fraction], k: int) -> list[int]:
    """Chunks per tree: ``floor(k x_T)``, then one at a time where the load stays least."""
    weights = [x for x, _ in packing.trees]
    chunks = [math.floor(x * k) for x in weights]
    share = {e: 1 / float(c) for e, c in capacity.items()}
    load = dict.fromkeys(capacity, 0.0)
    for count, (_, edges) in zip(chunks, packing.trees, strict=True):
        for e in edges:
            load[e] += count * share[e]
    for _ in range(k - sum(chunks)):
        best = min(
            range(len(chunks)),
            key=lambda i: (
                max(load[e] + share[e] for e in packing.trees[i][1]),
                -(weights[i] * k - chunks[i]),
                i,
            ),
        )
        chunks[best] += 1
        for e in packing.trees[best][1]:
            load[e] += share[e]
    return chunks


def _trees(packing: TreePacking, chunks: Sequence[int]) -> tuple[Tree, ...]:
    return tuple(
        _rooted(edges, count)
        for (_, edges), count in zip(packing.trees, chunks, strict=True)
        if count
    )


def _rooted(edges: tuple[Edge, ...], chunks: int) -> Tree:
    """The tree of ``edges`` rooted at its centre (least height, then first id)."""
    adjacent: dict[str, list[str]] = {}
    for u, v in edges:
        adjacent.setdefault(u, []).append(v)
        adjacent.setdefault(v, []).append(u)

    def levels(root: str) -> list[tuple[str, str]]:
        seen, order, frontier = {root}, [], [root]
        while frontier:
            following = []
            for p in frontier:
                for c in sorted(adjacent[p]):
                    if c not in seen:
                        seen.add(c)
                        order.append((p, c))
                        following.append(c)
            frontier = following
        return order

    def height(root: str) -> int:
        depth = {root: 0}
        for p, c in levels(root):
            depth[c] = depth[p] + 1
        return max(depth.values())

    root = min(sorted(adjacent), key=height)
    return Tree(root, chunks, tuple(TreeEdge(p, c, (p, c)) for p, c in levels(root)))


def tree_time_factor(topology: Topology | object, trees: Sequence[Tree]) -> Fraction:
    """Exact time factor of reduce + broadcast over ``trees`` (shares ``chunks / k``):
    the busiest arc's load over its capacity, each tree edge used once each way.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> ring = build("ring:4")
    >>> tree = Tree("n0", 1, tuple(TreeEdge(a, b, (a, b)) for a, b in [("n0", "n1"), ("n1", "n2"), ("n2", "n3")]))
    >>> tree_time_factor(ring, [tree]) == 1 / min(ring.capacity.values())
    True
    """
    topology = as_topology(topology)
    k = sum(tree.chunks for tree in trees)
    load: dict[Edge, Fraction] = {}
    for tree in trees:
        for edge in tree.edges:
            for arc in zip(edge.path, edge.path[1:], strict=False):
                for a in (arc, arc[::-1]):
                    load[a] = load.get(a, Fraction(0)) + Fraction(tree.chunks, k)
    return max(value / topology.capacity[arc] for arc, value in load.items())


def spanning_tree_schedule(
    topology: Topology | object, *, tolerance: Fraction = TOLERANCE
) -> AggregationSchedule:
    """Reduce + broadcast over :func:`reduce_broadcast_trees`, as a schedule file holds it.

    Each tree is an :class:`~optcoll.core.aggregation.AggregationTree` whose apex is its
    root, a compute node: the in-tree is the tree's edges reversed, the out-tree its
    edges, so :func:`optcoll.verify.aggregation.verify_aggregation_schedule` checks it,
    ``simulate`` runs it and ``verify`` reads its file as any aggregation allreduce.
    ``lower_bound`` is the cut bound (as every aggregation schedule states it);
    ``stats.proved`` is true when the time factor equals the partition bound ``1/tau``,
    the least time of every allreduce in which only compute nodes reduce (on a
    topology without switches: of every allreduce), hence of every aggregation-tree
    schedule.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> s = spanning_tree_schedule(build("mesh:4x4"))
    >>> s.time_factor, s.k, s.stats["proved"]
    (Fraction(1, 160), 8, True)
    """
    topology = as_topology(topology)
    packing = spanning_tree_packing(topology)
    trees = reduce_broadcast_trees(topology, tolerance=tolerance, packing=packing)
    aggregation = aggregation_trees(trees)
    time_factor = tree_time_factor(topology, trees)
    cut = reduction_cut(topology).time_factor
    bound = partition_bound(topology, "allreduce")
    return AggregationSchedule(
        topology.name,
        topology.compute_nodes,
        sum(tree.chunks for tree in trees),
        aggregation,
        lower_bound=cut,
        time_factor=time_factor,
        topology_hash=topology.content_hash,
        stats={
            "method": "spanning trees (reduce+broadcast)",
            "optimal_among": OPTIMAL_AMONG,
            "proved": bound.exact and time_factor == bound.time_factor,
            "gap_to_cut_bound": str(time_factor / cut),
        },
    )


def aggregation_trees(trees: Sequence[Tree]) -> tuple[AggregationTree, ...]:
    """``trees`` (broadcast direction, as :func:`reduce_broadcast_trees` and plan's other
    reduce + broadcast candidates hold them) as aggregation trees: apex the root, the
    in-tree the edges reversed (paths too), the out-tree the edges.

    Examples
    --------
    >>> chain = Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),))
    >>> aggregation_trees([chain])[0].reduce_edges
    (TreeEdge(src='b', dst='a', path=('b', 'a')),)
    """
    return tuple(
        AggregationTree(
            tree.root,
            tree.chunks,
            tuple(TreeEdge(e.dst, e.src, tuple(reversed(e.path))) for e in tree.edges),
            tree.edges,
        )
        for tree in trees
    )


def rooted_schedule(schedule: AggregationSchedule) -> Schedule:
    """An allreduce by reduce + broadcast over spanning trees of the compute nodes as a
    tree :class:`~optcoll.core.schedule.Schedule` (what the MSCCL, MSCCL++ and Chakra
    writers take): the same trees, each chunk reduced up its tree and broadcast down it.

    A tree's edges carry each of its chunks once toward the apex and once away, whichever
    node is the apex, so the apex of each chunk may be chosen freely without changing any
    link's load. The ``k`` chunks of the message, tree by tree, become ``N k`` chunk
    units (tree ``t`` of ``c_t`` chunks: ``N c_t`` units), dealt in order ``k`` to each
    compute node: node ``r``'s units ``r k .. r k + k - 1`` are its shard, and each tree
    carries the units it was dealt to ``r`` rooted at ``r``. The result is a valid
    allreduce schedule of ``k`` chunks per shard with the aggregation schedule's link loads
    (its time factor, ``(M / N) * time_factor``, is ``N`` times the aggregation one's).

    Raises
    ------
    ScheduleError
        A tree whose apex is not a compute node, whose vertices are not exactly the compute
        nodes (a switch that reduces or multicasts: NVLS, SHARP), or whose reduce edges are
        not its multicast edges reversed.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> aggregated = spanning_tree_schedule(build("mesh:4x4"))
    >>> rooted = rooted_schedule(aggregated)
    >>> rooted.k == aggregated.k, rooted.time_factor == 16 * aggregated.time_factor
    (True, True)
    """
    nodes = schedule.compute_nodes
    n, k = len(nodes), schedule.k
    units: list[tuple[int, int, int]] = []  # (tree, first unit, last unit + 1)
    start = 0
    for index, tree in enumerate(schedule.trees):
        reversed_multicast = {(e.dst, e.src, tuple(reversed(e.path))) for e in tree.multicast_edges}
        vertices = {tree.apex} | {e.dst for e in tree.multicast_edges}
        if (
            tree.apex not in nodes
            or vertices != set(nodes)
            or len(tree.multicast_edges) != n - 1
            or {(e.src, e.dst, tuple(e.path)) for e in tree.reduce_edges} != reversed_multicast
        ):
            raise ScheduleError(
                f"aggregation tree {index} (apex {tree.apex!r}) is not a spanning tree of the "
                "compute nodes reduced up and broadcast down the same edges: only a "
                "spanning-tree allreduce (no switch reduces or multicasts) has a tree schedule"
            )
        units.append((index, start, start + n * tree.chunks))
        start += n * tree.chunks
    trees = []
    for r, root in enumerate(nodes):
        for index, first, last in units:
            count = min(last, (r + 1) * k) - max(first, r * k)
            if count > 0:
                trees.append(_rerooted(schedule.trees[index].multicast_edges, root, count))
    time_factor = None if schedule.time_factor is None else n * schedule.time_factor
    return Schedule(
        "allreduce",
        schedule.topology,
        nodes,
        k,
        tuple(trees),
        time_factor=time_factor,
        topology_hash=schedule.topology_hash,
        stats={"method": "spanning trees (reduce+broadcast)"},
    )


def _rerooted(edges: Sequence[TreeEdge], root: str, chunks: int) -> Tree:
    """The tree of ``edges`` (any orientation) with its edges directed away from ``root``,
    each path reversed where its edge is."""
    around: dict[str, list[TreeEdge]] = defaultdict(list)
    for e in edges:
        around[e.src].append(e)
        around[e.dst].append(TreeEdge(e.dst, e.src, tuple(reversed(e.path))))
    out, seen, stack = [], {root}, [root]
    while stack:
        v = stack.pop()
        for e in around[v]:
            if e.dst not in seen:
                seen.add(e.dst)
                out.append(e)
                stack.append(e.dst)
    return Tree(root, chunks, tuple(out))


def is_spanning_tree_allreduce(schedule: AggregationSchedule) -> bool:
    """Whether every tree of ``schedule`` is a spanning tree of the compute nodes reduced up
    and broadcast down the same edges (:func:`rooted_schedule` takes it); false where a
    switch reduces or multicasts.

    >>> from optcoll.topologies import build
    >>> is_spanning_tree_allreduce(spanning_tree_schedule(build("mesh:3x3")))
    True
    """
    try:
        rooted_schedule(schedule)
    except ScheduleError:
        return False
    return True


def rooted_optimum(topology: Topology | object) -> Fraction | None:
    """The least time factor of every allreduce on ``topology`` in which only compute nodes
    reduce, in a tree schedule's form (time ``(M / N) * factor``): ``N`` times the exact
    partition bound ``1 / tau`` (:func:`optcoll.bounds.partition.partition_bound`); None
    where that bound is not exact (switches).

    >>> from optcoll.topologies import build
    >>> rooted_optimum(build("mesh:4x4"))
    Fraction(1, 10)
    """
    topology = as_topology(topology)
    bound = partition_bound(topology, "allreduce")
    return topology.num_compute * bound.time_factor if bound.exact else None
