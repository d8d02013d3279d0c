"""The exact optimum of an arbitrary traffic demand (an all-to-allv), certified, its bottleneck named.

Given a :class:`~optcoll.core.demand.Demand` (bytes ``D[s][d]`` per ordered pair of compute
nodes), the optimum is the least ``T`` such that a multicommodity flow delivers every
pair's bytes with at most ``T * bandwidth(a)`` bytes on every link ``a`` (compute nodes and
switches forward, nothing copies; the bandwidth model, as for the uniform all-to-all of
:mod:`optcoll.schedules.alltoall`).

**One commodity per source.** Pairs with the same source are aggregated into one flow
``f_s`` leaving ``s`` with ``sum_d D[s][d]`` and dropping ``D[s][d]`` at every ``d``. This
is exact for the min-max problem: any per-pair routing sums to such a flow, and any such
flow splits back into per-pair flows (a path decomposition of ``f_s`` ends each path at
a sink, and every sink's paths carry exactly its demand) with the same loads. The model is
:func:`formulations.multicommodity.build_multicommodity` (``N * |links| + 1`` variables),
solved by HiGHS and proved by :func:`optcoll.bounds.multicommodity.solve_multicommodity`:
the vertex and duals recovered as fractions, exact LP duality checked, the routing's
time recomputed, and the duals' length function ``l`` re-proving ``T`` from scratch
(``T >= sum_pairs D[s][d] dist_l(s, d) / sum_a bandwidth(a) l(a)`` for every ``l >= 0``).

**Bottleneck.** The links of positive length are the tight ones (every optimal routing
saturates them, by complementary slackness). Beside the optimum, the best **cut bound**
found, ``max_S D(S) / B+(S)`` with ``D(S)`` the bytes from ``S`` to its complement, over
the level sets of the length function's distances (exhaustive on at most
:data:`EXHAUSTIVE_CUT_NODES` nodes): when it equals ``T`` the cut explains the optimum;
on trees and single switches it always does.

Entries are divided by their gcd before the solve (the LP is linear in the demand).

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.core.demand import demand_matrix
>>> topo = load_topology("star:3,bw=1")
>>> d = demand_matrix([[0, 4, 2], [0, 0, 0], [1, 0, 0]], topo.compute_nodes)
>>> opt = demand_optimum(topo, d)
>>> opt.time_factor, opt.cut_bound, opt.certificate_bound == opt.time_factor
(Fraction(6, 1), Fraction(6, 1), True)
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from optcoll.core.arguments import instance_argument, topology_argument
from optcoll.core.demand import Demand
from optcoll.core.rational import fraction_text
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError

if TYPE_CHECKING:
    from formulations.solve import SolverReport

__all__ = [
    "EXHAUSTIVE_CUT_NODES",
    "DemandOptimum",
    "DemandCut",
    "demand_optimum",
    "demand_cut_bound",
    "check_demand",
    "time_us",
    "cut_lengths",
]

Arc = tuple[str, str]

#: Largest number of nodes for which :func:`demand_cut_bound` tries every set.
EXHAUSTIVE_CUT_NODES = 14


def time_us(time_factor: Fraction) -> float:
    """Microseconds for ``time_factor`` bytes per GB/s (1 GB/s moves 1000 bytes a µs).

    Examples
    --------
    >>> time_us(Fraction(4500))
    4.5
    """
    return float(time_factor / 1000)


def check_demand(topology: Topology, demand: Any) -> Demand:
    """``demand`` if it is a :class:`Demand` over ``topology``'s compute nodes, in rank order.

    Raises
    ------
    ArgumentError
        Another type, or other ranks (naming the first that differs).
    """
    demand = instance_argument(demand, Demand, "demand", "optcoll.core.demand.demand_matrix")
    if demand.ranks != topology.compute_nodes:
        got, want = demand.ranks, topology.compute_nodes
        if len(got) != len(want):
            raise ArgumentError(
                f"{demand.origin}: {len(got)} ranks, but topology {topology.name!r} has "
                f"{len(want)} compute nodes"
            )
        i = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
        raise ArgumentError(
            f"{demand.origin}: rank {i} is {got[i]!r}, but topology {topology.name!r} "
            f"ranks {want[i]!r} there"
        )
    return demand


@dataclass(frozen=True)
class DemandCut:
    """A cut bound: ``ratio = D(side) / B+(side)``; ``exhaustive`` if every set was tried."""

    ratio: Fraction
    side: frozenset[str]
    exhaustive: bool


def _cut_ratio(topology: Topology, pairs: Mapping[Arc, int], side: frozenset[str]) -> Fraction:
    crossing = sum(b for (s, d), b in pairs.items() if s in side and d not in side)
    if not crossing:
        return Fraction(0)
    return crossing / topology.cut_bandwidth(side)


def demand_cut_bound(
    topology: Topology, demand: Demand, candidates: Iterable[frozenset[str]] = ()
) -> DemandCut:
    """The best cut bound ``D(S) / B+(S)`` over every set (at most
    :data:`EXHAUSTIVE_CUT_NODES` nodes) or over ``candidates``, single compute nodes
    and boxes (both sides of each); a lower bound on the optimum either way.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.demand import uniform_demand
    >>> topo = load_topology("ring:4,direction=uni,bw=1")
    >>> demand_cut_bound(topo, uniform_demand(topo.compute_nodes)).ratio
    Fraction(4, 1)
    """
    topology_argument(topology)
    check_demand(topology, demand)
    return demand_cut_bound_core(topology, demand.pairs(), candidates)


def demand_cut_bound_core(
    topology: Topology, pairs: Mapping[Arc, int], candidates: Iterable[frozenset[str]]
) -> DemandCut:
    """The core of :func:`demand_cut_bound` on checked arguments (``pairs`` as
    :meth:`Demand.pairs`); public for the schedules' use, not in ``__all__``."""
    nodes = topology.node_ids
    everything = frozenset(nodes)
    best = (Fraction(0), frozenset[str]())
    exhaustive = len(nodes) <= EXHAUSTIVE_CUT_NODES
    if exhaustive:
        sets: Iterable[frozenset[str]] = (
            frozenset(c)
            for size in range(1, len(nodes))
            for c in itertools.combinations(nodes, size)
        )
        for side in sets:
            ratio = _cut_ratio(topology, pairs, side)
            if ratio > best[0]:
                best = (ratio, side)
        return DemandCut(best[0], best[1], exhaustive)
    # single compute nodes and boxes, both sides, from per-node and per-box totals
    boxes: dict[str, set[str]] = {}
    for v in nodes:
        group = topology.node[v].group
        if group is not None:
            boxes.setdefault(group, set()).add(v)
    sent: dict[str, int] = {}
    received: dict[str, int] = {}
    leaving: dict[str, int] = {}  # bytes leaving each box
    entering: dict[str, int] = {}
    box_of = {v: topology.node[v].group for v in topology.compute_nodes}
    for (a, b), amount in pairs.items():
        sent[a] = sent.get(a, 0) + amount
        received[b] = received.get(b, 0) + amount
        ga, gb = box_of[a], box_of[b]
        if ga != gb:
            if ga is not None:
                leaving[ga] = leaving.get(ga, 0) + amount
            if gb is not None:
                entering[gb] = entering.get(gb, 0) + amount
    out_bw: dict[str, Fraction] = {}
    in_bw: dict[str, Fraction] = {}
    for (u, v), c in topology.capacity.items():
        out_bw[u] = out_bw.get(u, Fraction(0)) + c
        in_bw[v] = in_bw.get(v, Fraction(0)) + c
    found: list[tuple[Fraction, frozenset[str]]] = []
    for v in topology.compute_nodes:
        if sent.get(v):
            found.append((sent[v] / out_bw[v], frozenset({v})))
        if received.get(v):
            found.append((received[v] / in_bw[v], everything - {v}))
    for group, members in boxes.items():
        side = frozenset(members)
        if leaving.get(group):
            found.append((leaving[group] / topology.cut_bandwidth(side), side))
        if entering.get(group):
            found.append(
                (entering[group] / topology.cut_bandwidth(everything - side), everything - side)
            )
    for side in itertools.chain.from_iterable((c, everything - c) for c in candidates):
        found.append((_cut_ratio(topology, pairs, side), side))
    for ratio, side in found:
        if ratio > best[0]:
            best = (ratio, side)
    return DemandCut(best[0], best[1], exhaustive)


def cut_lengths(topology: Topology, side: frozenset[str]) -> dict[Arc, Fraction]:
    """The length function of a cut: ``1 / B+(S)`` on every link leaving ``side``, 0 elsewhere
    (so ``sum_a bandwidth(a) l(a) = 1``); its length bound is at least the cut bound.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> cut_lengths(load_topology("star:2,bw=4"), frozenset({"h0"}))
    {('h0', 'hub'): Fraction(1, 4)}
    """
    width = topology.cut_bandwidth(side)
    return {(u, v): 1 / width for (u, v) in topology.capacity if u in side and v not in side}


@dataclass(frozen=True)
class DemandOptimum:
    """The exact optimum of a demand with its routing and certificate.

    ``time_factor`` is ``T`` in bytes per bandwidth unit (for GB/s, :func:`time_us`
    gives microseconds); ``routing[s]`` source ``s``'s exact flow in bytes on each arc;
    ``lengths`` the certifying length function (normalised to ``sum_a bandwidth(a)
    l(a) = 1``), ``certificate_bound`` the bound it proves (equal to ``time_factor``);
    ``tight_links`` the links of positive length, longest first; ``cut_bound``,
    ``cut``, ``cut_exhaustive`` the best cut bound found; ``seconds`` wall time;
    ``method``: ``"lp"`` (the LP's vertex and duals), ``"columns"`` (column generation
    over trees, :func:`optcoll.bounds.demand_trees.tree_optimum`; its counts in ``stats``)
    or ``"cut"`` (a routing that meets the cut bound,
    :func:`optcoll.schedules.alltoallv.proved_optimum`; no LP, no report).
    """

    topology: str
    demand: Demand
    time_factor: Fraction
    routing: Mapping[str, dict[Arc, Fraction]]
    lengths: dict[Arc, Fraction]
    certificate_bound: Fraction
    tight_links: tuple[Arc, ...]
    cut_bound: Fraction
    cut: frozenset[str]
    cut_exhaustive: bool
    lp_time_factor: float | None
    report: SolverReport | None
    seconds: float
    method: str = "lp"
    stats: Mapping[str, Any] = field(default_factory=dict)

    @property
    def time_us(self) -> float:
        """The optimum in microseconds (bandwidths read as GB/s)."""
        return time_us(self.time_factor)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary; exact values as ``"p/q"`` strings."""
        report = self.report
        solver: dict[str, Any] = {"method": self.method, **self.stats}
        if report is not None:
            solver |= {
                "lp_variables": report.num_variables,
                "lp_constraints": report.num_constraints,
                "lp_seconds": round(report.solve_seconds, 3),
            }
        return {
            "topology": self.topology,
            "collective": "alltoall",
            "demand": self.demand.origin,
            "num_compute": len(self.demand.ranks),
            "total_bytes": self.demand.total_bytes,
            "local_bytes": self.demand.local_bytes,
            "time_factor": fraction_text(self.time_factor),
            "time_us": round(self.time_us, 6),
            "certificate_bound": fraction_text(self.certificate_bound),
            "tight_links": [
                [u, v, fraction_text(self.lengths[(u, v)])] for u, v in self.tight_links
            ],
            "cut_bound": fraction_text(self.cut_bound),
            "cut": sorted(self.cut),
            "cut_exhaustive": self.cut_exhaustive,
            "cut_explains_optimum": self.cut_bound == self.time_factor,
            **solver,
            "seconds": round(self.seconds, 3),
        }


def demand_optimum(
    topology: Topology, demand: Demand, *, time_limit: float | None = None
) -> DemandOptimum:
    """The least time in which ``topology`` delivers ``demand``, exact and certified.

    Optimal among all fractional routings in which nodes forward without copying or
    combining (time = max link load / bandwidth); see the module docstring for the
    model, the proof and the bottleneck.

    Raises
    ------
    ArgumentError
        ``demand`` is not over ``topology``'s compute nodes in rank order.
    InfeasibleModelError
        Some destination cannot be reached from its source.
    ReconstructionError
        The exact vertex or duals could not be recovered or fail a check.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.demand import uniform_demand
    >>> topo = load_topology("dgx-a100:1")
    >>> demand_optimum(topo, uniform_demand(topo.compute_nodes)).time_factor
    Fraction(7, 300)
    """
    topology_argument(topology)
    check_demand(topology, demand)
    return demand_optimum_core(topology, demand, time_limit)


def demand_optimum_core(
    topology: Topology, demand: Demand, time_limit: float | None
) -> DemandOptimum:
    """The core of :func:`demand_optimum`: its arguments are already checked (public for
    the schedules' use, not in ``__all__``)."""
    from formulations.multicommodity import Commodity
    from optcoll.bounds.multicommodity import solve_multicommodity

    start = time.perf_counter()
    pairs = demand.pairs()
    g = math.gcd(*pairs.values())
    rows: dict[str, dict[str, int]] = {}
    for (s, d), b in pairs.items():
        rows.setdefault(s, {})[d] = b // g
    commodities = [Commodity(s, sinks) for s, sinks in rows.items()]
    caps, unit = topology.integer_capacities()
    solved = solve_multicommodity(topology.node_ids, caps, commodities, time_limit=time_limit)
    assert solved.lengths_bound is not None, "unicast commodities always have a length bound"
    scale = g / unit  # LP units (demand / g over capacity / unit) to bytes per bandwidth unit
    routing = {
        k.source: {arc: x * g for arc, x in load.items()}
        for k, load in zip(commodities, solved.loads, strict=True)
    }
    lengths = {arc: length / unit for arc, length in solved.lengths.items()}
    tight = tuple(sorted(lengths, key=lambda arc: (-lengths[arc], arc)))
    optimum = solved.time * scale
    candidates = None
    if len(topology.node_ids) > EXHAUSTIVE_CUT_NODES:
        candidates = _level_sets(topology, lengths, list(rows))
    cut = demand_cut_bound_core(topology, pairs, candidates or ())
    assert cut.ratio <= optimum, "a cut bound above the optimum: the LP is wrong"
    return DemandOptimum(
        topology.name,
        demand,
        optimum,
        routing,
        lengths,
        solved.lengths_bound * scale,
        tight,
        cut.ratio,
        cut.side,
        cut.exhaustive,
        solved.lp_time * float(scale),
        solved.report,
        time.perf_counter() - start,
        "lp",
    )


def _level_sets(
    topology: Topology, lengths: Mapping[Arc, Fraction], sources: list[str]
) -> list[frozenset[str]]:
    """For each source, the sets of nodes within each distance under ``lengths``
    (and toward each source, on the reversed links)."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(topology.node_ids)
    graph.add_weighted_edges_from(
        (u, v, lengths.get((u, v), Fraction(0))) for u, v in topology.capacity
    )
    sets = []
    for view in (graph, graph.reverse(copy=False)):
        for source in sources:
            dist = nx.single_source_dijkstra_path_length(view, source)
            order = sorted(topology.node_ids, key=lambda v: (dist.get(v, math.inf), v))
            for size in range(1, len(order)):
                if dist.get(order[size - 1]) != dist.get(order[size]):
                    side = frozenset(order[:size])
                    sets.append(side if view is graph else frozenset(topology.node_ids) - side)
    return sets
