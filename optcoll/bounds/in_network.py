"""Allreduce bounds when switches reduce and multicast (NVLS, SHARP): the cut and the LP.

Let every compute node hold an ``M``-byte input; the allreduce result is their sum.

**The cut bound** (:func:`reduction_cut`). Let ``lambda`` be the least bandwidth
``B+(S)`` leaving a node set ``S`` that holds some but not all compute nodes.
Every allreduce takes at least ``M / lambda``, whatever the switches can do:

    Proof. Take such an ``S`` and a compute node ``t`` outside it. The result at
    ``t`` determines the sum of the inputs inside ``S`` (subtract the inputs
    outside, which ``t``'s side may know), and that sum takes every one of
    ``256**M`` values as the inputs vary, so at least ``M`` bytes must cross from
    ``S`` to its complement: ``time >= M / B+(S)``. The complement of ``S`` is such
    a set too, so the bytes entering ``S`` are bounded alike (``B-(S) >= lambda``). []

``lambda`` is ``min over t != c0 of min(maxflow(c0, t), maxflow(t, c0))`` for a
fixed compute node ``c0`` (``2 (N - 1)`` max-flows), and its cut is returned. The
bound does not depend on the switches' flags; what does is whether it is attained.

**The aggregation optimum** (:func:`aggregation_bound`). An aggregation schedule
(:mod:`optcoll.core.aggregation`) reduces each piece of the message along an
in-tree into an apex and multicasts it back along an out-tree; tree vertices are
compute nodes and switches that declare ``reduce`` (in-trees) or ``multicast``
(out-trees), tree edges are paths whose inner switches only relay. With a piece
``x_J`` per tree pair ``J`` (loading arc ``a`` ``m_J(a)`` times), the best such
schedule solves the packing LP of :mod:`formulations.column_generation` with one
block: ``min t : sum_J x_J = 1, sum_J m_J(a) x_J <= t c(a)``. Its columns are
pairs of directed Steiner trees; the pricing problem (the cheapest pair under arc
prices ``w``) is solved exactly: for every apex and every set ``Q`` of capable
switches, a minimum spanning arborescence (Edmonds) of ``C + Q`` in the metric
closure of shortest relaying paths (a switch may relay any number of paths, so a
tree edge costs its shortest path) is the cheapest tree on exactly those vertices,
and the least over ``Q`` is the cheapest Steiner tree. :func:`column_generation`
finishes in exact arithmetic and proves the optimum by the Lagrangian bound of
exact prices. Exhaustive over ``Q``, the pricing costs ``2**|R|`` arborescences
per apex, so the exact LP is offered up to :data:`MAX_CAPABLE_SWITCHES` capable
switches (float rounds try only ``Q`` empty and ``Q`` all; the exact check is
exhaustive).

A switch that declares ``multimem`` (NVLS: it sums what a GPU loads and copies what a GPU
stores, :class:`~optcoll.core.topology.Node`) is priced as it runs: it is no apex, its tree
neighbours are GPUs on direct links, and its edge to the loading GPU (in-tree) or from the
storing GPU (out-tree) costs both directions of that link, the GPU's own share going up
and down once more (:func:`optcoll.core.aggregation.multimem_arcs`). On one switch of ``N``
GPUs and links of ``B`` the optimum is then ``min(2N - 2, N + 1) / (N B)``, above the cut
bound ``1 / B`` from ``N = 3`` on (the proof is in ``docs/in_network.md``). With
``multimem`` switches the LP is first solved over the starting columns alone; where that
meets the cut bound, the cut proves it (price ``1 / B+(S)`` on each arc leaving ``S``: every
tree pair crosses it), as the generation would otherwise stall on degenerate duals
(dgx-h100:2,nvls=1: 1,000 rounds, 227 s, not proved).

Every aggregation piece crosses every cut ``S`` at least once each way (its
in-tree if the apex is outside ``S``, its out-tree if inside), so the LP optimum
is at least the cut bound. They are equal when every switch reduces and
multicasts and the network is a tree (the single tree pair loads each arc once,
and each arc is a cut), e.g. one NVLS switch or a SHARP fat-tree of one spine.
Where switches only relay they differ: a relaying star of ``N`` nodes has cut
bound ``M / B`` but aggregation optimum ``2 (N - 1) M / (N B)`` (the
reduce-scatter + allgather time; the LP certifies the gap).

So the aggregation optimum is optimal **among aggregation-tree schedules**
(every schedule in which each byte of the result is summed along one tree and
copied along one tree); the cut bound holds for every schedule.

Examples
--------
>>> from optcoll.topologies import build
>>> bound = aggregation_bound(build("star:4,sharp=1"))
>>> bound.cut_bound, bound.optimum, bound.proved
(Fraction(1, 100), Fraction(1, 100), True)
>>> relay = aggregation_bound(build("star:4"))
>>> relay.cut_bound, relay.optimum
(Fraction(1, 100), Fraction(3, 200))
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from optcoll.core.aggregation import AggregationTree, tree_arc_uses
from optcoll.core.arguments import topology_argument
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import MethodError, NotStronglyConnectedError
from optcoll.graph.arborescence import min_cost_arborescence
from optcoll.graph.maxflow import FlowNetwork

__all__ = [
    "ReductionCut",
    "reduction_cut",
    "AggregationBound",
    "aggregation_bound",
    "MAX_CAPABLE_SWITCHES",
    "has_aggregation_lp",
]

Arc = tuple[str, str]
#: A tree edge: (source, destination, path) with the path in the data's direction.
Edge = tuple[str, str, tuple[str, ...]]

#: Most switches that reduce or multicast for which the exact pricing (2**R subsets) runs.
MAX_CAPABLE_SWITCHES = 8


@dataclass(frozen=True)
class ReductionCut:
    """The cut bound of an allreduce: ``time >= M / bandwidth`` (module docstring).

    Attributes
    ----------
    bandwidth : Fraction
        ``lambda``: the least ``B+(S)`` over node sets with some but not all compute nodes.
    cut : frozenset of str
        A set ``S`` attaining it.
    time_factor : Fraction
        ``1 / lambda``: every allreduce of ``M`` bytes takes at least ``M * time_factor``.
    """

    bandwidth: Fraction
    cut: frozenset[str]

    @property
    def time_factor(self) -> Fraction:
        return 1 / self.bandwidth


def reduction_cut(topology: Topology) -> ReductionCut:
    """The least bandwidth leaving a set with some but not all compute nodes, and the set.

    Complexity: ``2 (N - 1)`` max-flows on the integer capacities.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> cut = reduction_cut(build("dgx-h100:2"))
    >>> cut.bandwidth, sorted(cut.cut)[:2], len(cut.cut)
    (Fraction(400, 1), ['b0.gpu0', 'b0.gpu1'], 9)
    """
    topology_argument(topology)
    caps, unit = topology.integer_capacities()
    index = {v: i for i, v in enumerate(topology.node_ids)}
    arcs = list(caps)
    network = FlowNetwork(
        len(index), [index[u] for u, _ in arcs], [index[v] for _, v in arcs], list(caps.values())
    )
    first, *others = topology.compute_nodes
    best: tuple[int, frozenset[str]] | None = None
    for other in others:
        for s, t in ((first, other), (other, first)):
            flow = network.max_flow(index[s], index[t])
            if best is None or flow.value < best[0]:
                side = flow.source_side
                best = (flow.value, frozenset(v for v in topology.node_ids if side[index[v]]))
    assert best is not None
    value, cut = best
    assert topology.cut_bandwidth(cut) == value * unit, "the min cut's bandwidth is its flow"
    return ReductionCut(value * unit, cut)


def has_aggregation_lp(topology: Topology) -> bool:
    """True when some switch reduces or multicasts and the exact LP takes the topology
    (at most :data:`MAX_CAPABLE_SWITCHES` such switches).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> has_aggregation_lp(build("dgx-h100:2,nvls=1")), has_aggregation_lp(build("dgx-h100:2"))
    (True, False)
    """
    capable = set(topology.reducing_switches) | set(topology.multicast_switches)
    return 0 < len(capable) <= MAX_CAPABLE_SWITCHES


@dataclass(frozen=True)
class AggregationBound:
    """The exact optimum among aggregation-tree allreduce schedules, with its proof.

    Attributes
    ----------
    topology : Topology
    cut : ReductionCut
        The cut bound (valid for every schedule).
    optimum : Fraction
        The least time factor (time ``M * optimum``) of an aggregation schedule.
    pieces : tuple of (apex, reduce edges, multicast edges, weight)
        An optimal schedule: weights (exact, summing to 1) of tree pairs; edges are
        ``(src, dst, path)``.
    prices : dict
        Exact arc prices ``w >= 0`` with ``sum c(a) w(a) = 1`` (bandwidth units) under
        which every tree pair costs at least ``optimum``: the certificate, checkable
        with any exact cheapest-tree computation.
    lower_bound : Fraction
        The cheapest tree pair's cost under ``prices`` (== ``optimum`` when proved).
    iterations, columns : int
        Pricing rounds and tree pairs generated.
    seconds : float
        Wall time.
    """

    topology: Topology
    cut: ReductionCut
    optimum: Fraction
    pieces: tuple[tuple[str, tuple[Edge, ...], tuple[Edge, ...], Fraction], ...]
    prices: dict[Arc, Fraction]
    lower_bound: Fraction
    iterations: int
    columns: int
    seconds: float

    @property
    def cut_bound(self) -> Fraction:
        """``1 / lambda``: no allreduce beats ``M * cut_bound``."""
        return self.cut.time_factor

    @property
    def proved(self) -> bool:
        """True when the exact prices' bound meets the optimum."""
        return self.lower_bound == self.optimum

    @property
    def gap(self) -> Fraction:
        """``optimum / cut_bound``: 1 when the cut bound is attained by aggregation trees."""
        return self.optimum / self.cut_bound

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (exact values as ``"p/q"`` strings)."""
        return {
            "topology": self.topology.name,
            "collective": "allreduce",
            "reducing_switches": list(self.topology.reducing_switches),
            "multicast_switches": list(self.topology.multicast_switches),
            "cut_bandwidth": fraction_text(self.cut.bandwidth),
            "cut": sorted(self.cut.cut),
            "cut_bound": fraction_text(self.cut_bound),
            "optimum": fraction_text(self.optimum),
            "algbw": round(float(1 / self.optimum), 3),
            "gap": fraction_text(self.gap),
            "proved": self.proved,
            "certificate": {
                "prices": [[u, v, fraction_text(w)] for (u, v), w in self.prices.items()],
                "lower_bound": fraction_text(self.lower_bound),
            },
            "trees": len(self.pieces),
            "iterations": self.iterations,
            "columns": self.columns,
            "seconds": round(self.seconds, 3),
        }


def aggregation_bound(topology: Topology, *, time_limit: float | None = None) -> AggregationBound:
    """The exact optimum among aggregation-tree allreduce schedules (module docstring).

    Raises
    ------
    MethodError
        More than :data:`MAX_CAPABLE_SWITCHES` switches reduce or multicast (the exact
        pricing would enumerate too many switch sets).
    SolverLimitError
        ``time_limit`` seconds pass first.
    """
    from optcoll.lp.column_generation import column_generation

    topology_argument(topology)
    capable = sorted(set(topology.reducing_switches) | set(topology.multicast_switches))
    if len(capable) > MAX_CAPABLE_SWITCHES:
        raise MethodError(
            f"{topology.name}: {len(capable)} switches reduce or multicast; the exact "
            f"aggregation LP enumerates their subsets and takes at most "
            f"{MAX_CAPABLE_SWITCHES} (the cut bound, reduction_cut, needs no LP)"
        )
    start = time.perf_counter()
    cut = reduction_cut(topology)
    caps, unit = topology.integer_capacities()
    pricing = SteinerPricing(topology)
    seeds = pricing.every_apex({arc: 1 / c for arc, c in caps.items()})
    where = f"aggregation LP of {topology.name}"
    packing = None
    if topology.multimem_switches:
        # the LP over the first columns alone; where it meets the cut bound, the cut's
        # prices prove it (the generation stalls there: its duals are degenerate)
        seeded = column_generation(1, caps, _Pool(seeds), columns=seeds, where=where)
        if seeded.t / unit == cut.time_factor:
            leaving = {arc for arc in caps if arc[0] in cut.cut and arc[1] not in cut.cut}
            certificate = {arc: unit / cut.bandwidth for arc in caps if arc in leaving}
            packing = replace(seeded, prices=certificate, lower_bound=seeded.t)
    if packing is None:
        packing = column_generation(
            1, caps, pricing, columns=seeds, time_limit=time_limit, where=where
        )
    pieces = tuple(
        (*trees, weight)
        for trees, weight in sorted(
            ((_tree_pair(column.payload), weight) for column, weight in packing.weights),
            key=lambda tw: tw[0][0],
        )
    )
    prices = {arc: w / unit for arc, w in packing.prices.items()}
    return AggregationBound(
        topology,
        cut,
        packing.t / unit,
        pieces,
        prices,
        packing.lower_bound / unit,
        packing.iterations,
        packing.columns,
        time.perf_counter() - start,
    )


class _Pool:
    """A pricing oracle over a fixed pool of columns: the cheapest of them."""

    def __init__(self, columns: Sequence[Any]) -> None:
        self.columns = list(columns)

    def __call__(self, prices: Mapping[Arc, float | Fraction]) -> list[Any]:
        from optcoll.lp.column_generation import column_cost

        return [min(self.columns, key=lambda column: column_cost(column, prices))]


def _tree_pair(payload: object) -> tuple[str, tuple[Edge, ...], tuple[Edge, ...]]:
    """The ``(apex, reduce edges, multicast edges)`` a :class:`SteinerPricing` column carries."""
    if not (isinstance(payload, tuple) and len(payload) == 3):
        raise TypeError(f"not a SteinerPricing column payload: {payload!r}")
    apex, up, down = payload
    return apex, up, down


class SteinerPricing:
    """The cheapest (in-tree, out-tree) pair under arc prices: the LP's pricing oracle.

    ``multimem`` switches are priced as the module docstring says. Called with float prices
    it tries, per apex, the switch sets ``Q`` empty and all
    capable switches (fast, may miss); with Fraction prices it enumerates every ``Q``
    (exact, as the exact finish of :func:`~optcoll.lp.column_generation.column_generation`
    requires).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from optcoll.topologies import build
    >>> t = build("star:3,sharp=1")
    >>> (column,) = SteinerPricing(t)({arc: Fraction(1) for arc in t.capacity})
    >>> sum(m for _, m in column.load)  # 3 arcs up and 3 down, through the hub either way
    6
    """

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        node = topology.node
        self.compute = tuple(topology.compute_nodes)
        self.reducing = tuple(topology.reducing_switches)
        self.multicasting = tuple(topology.multicast_switches)
        self.multimem = frozenset(topology.multimem_switches)
        self.apexes = self.compute + tuple(
            w for w in self.reducing if node[w].multicast and w not in self.multimem
        )
        self.vertices = tuple(dict.fromkeys(self.compute + self.reducing + self.multicasting))
        self.order = {v: i for i, v in enumerate(topology.node_ids)}
        self.successors: dict[str, list[str]] = {v: [] for v in topology.node_ids}
        for u, v in topology.capacity:
            self.successors[u].append(v)

    def __call__(self, prices: Mapping[Arc, float | Fraction]) -> list[Any]:
        from optcoll.lp.column_generation import column_cost

        columns = self.every_apex(prices)
        return [min(columns, key=lambda column: column_cost(column, prices))]

    def every_apex(self, prices: Mapping[Arc, float | Fraction]) -> list[Any]:
        """The cheapest pair of every apex (in :attr:`apexes` order)."""
        from formulations.column_generation import Column

        exact = any(isinstance(w, Fraction) for w in prices.values())
        closure = {v: self._shortest_paths(v, prices) for v in self.vertices}
        columns = []
        for apex in self.apexes:
            _, up = self._cheapest_tree(apex, closure, prices, self.reducing, exact, inward=True)
            _, down = self._cheapest_tree(
                apex, closure, prices, self.multicasting, exact, inward=False
            )
            load = tree_arc_uses(
                AggregationTree(
                    apex, 1, tuple(TreeEdge(*e) for e in up), tuple(TreeEdge(*e) for e in down)
                ),
                self.multimem,
            )
            columns.append(Column(0, tuple(sorted(load.items())), (apex, up, down)))
        return columns

    def _shortest_paths(
        self, source: str, prices: Mapping[Arc, float | Fraction]
    ) -> dict[str, tuple[float | Fraction, tuple[str, ...]]]:
        """Dijkstra from ``source``; compute nodes other than ``source`` end a path."""
        order = self.order
        done: dict[str, tuple[float | Fraction, tuple[str, ...]]] = {}
        heap: list[tuple[Any, int, str, tuple[str, ...]]] = [(0, order[source], source, (source,))]
        while heap:
            dist, _, v, path = heapq.heappop(heap)
            if v in done:
                continue
            done[v] = (dist, path)
            if v != source and self.topology.node[v].is_compute:
                continue
            for w in self.successors[v]:
                if w not in done:
                    item = (dist + prices.get((v, w), 0), order[w], w, (*path, w))
                    heapq.heappush(heap, item)
        return done

    def _cheapest_tree(
        self,
        apex: str,
        closure: Mapping[str, Mapping[str, tuple[Any, tuple[str, ...]]]],
        prices: Mapping[Arc, float | Fraction],
        capable: Sequence[str],
        exact: bool,
        *,
        inward: bool,
    ) -> tuple[Any, tuple[Edge, ...]]:
        """The cheapest in-tree (``inward``) or out-tree of ``apex`` over the compute nodes."""
        others = [w for w in capable if w != apex]
        if exact:
            choices: Any = itertools.chain.from_iterable(
                itertools.combinations(others, r) for r in range(len(others) + 1)
            )
        else:
            choices = dict.fromkeys([(), tuple(others)])
        best: tuple[Any, tuple[Edge, ...]] | None = None
        for chosen in choices:
            vertices = list(dict.fromkeys((apex, *self.compute, *chosen)))
            cost = {}
            for parent in vertices:
                for child in vertices:
                    if child != apex and child != parent:
                        src, dst = (child, parent) if inward else (parent, child)
                        if src in self.multimem or dst in self.multimem:
                            found = self._multimem_edge(src, dst, prices, inward)
                        else:
                            found = closure[src].get(dst)
                        if found is not None:
                            cost[parent, child] = found[0]
            try:
                arcs = min_cost_arborescence(vertices, cost, apex)
            except NotStronglyConnectedError:
                continue  # a chosen switch cannot be reached: another set serves
            edges = _pruned(arcs, apex, set(self.compute))
            total = sum((cost[edge] for edge in edges), 0)
            if best is None or total < best[0]:
                ends = [(c, p) if inward else (p, c) for p, c in edges]
                found_edges = tuple(
                    (a, b, (a, b) if {a, b} & self.multimem else closure[a][b][1]) for a, b in ends
                )
                best = (total, found_edges)
        assert best is not None, "the compute nodes reach each other"
        return best

    def _multimem_edge(
        self, src: str, dst: str, prices: Mapping[Arc, float | Fraction], inward: bool
    ) -> tuple[float | Fraction, tuple[str, ...]] | None:
        """A tree edge ``src -> dst`` (in the data's direction) at a ``multimem`` (NVLS)
        switch: only a direct link between it and a GPU; where the switch is the edge's
        child end (in-tree: it sends the sum to the GPU that loads it; out-tree: it gets
        the GPU's store) the reverse link carries a chunk too
        (:func:`optcoll.core.aggregation.multimem_arcs`). None: no such edge."""
        node = self.topology.node
        capacity = self.topology.capacity
        if not (node[src].is_compute or node[dst].is_compute) or (src, dst) not in capacity:
            return None
        price = prices.get((src, dst), 0)
        child = src if inward else dst
        if child in self.multimem:
            if (dst, src) not in capacity:
                return None
            price = price + prices.get((dst, src), 0)
        return price, (src, dst)


def _pruned(arcs: Sequence[Arc], apex: str, compute: set[str]) -> list[tuple[str, str]]:
    """The (parent, child) arcs of a tree after removing switch leaves repeatedly."""
    children: dict[str, set[str]] = {}
    parent: dict[str, str] = {}
    for p, c in arcs:
        children.setdefault(p, set()).add(c)
        parent[c] = p
    leaves = [v for v in parent if v not in compute and not children.get(v)]
    while leaves:
        v = leaves.pop()
        p = parent.pop(v)
        children[p].discard(v)
        if p != apex and p not in compute and not children[p]:
            leaves.append(p)
    return [(p, c) for c, p in parent.items()]
