"""All-to-all: the exact optimum t*, the cut bound beside it, and schedules that attain it.

The optimum t* is the max-concurrent-flow LP of :mod:`formulations.alltoall`,
solved exactly with a length-function certificate (:func:`alltoall_optimum`).
This module adds what a user compares it with and what runs it:

* the **cut bound** ``max over S of d(S) / B+(S)``, with ``d(S) = |S ∩ Vc| *
  |Vc \\ S|`` the pieces that must leave ``S``: a lower bound on t*, often
  equal, but not always (the flow-cut gap: ``ring:4,direction=uni`` has t* = 6
  and cut bound 4 per unit bandwidth; on trees and single switches they
  coincide). The maximum over all sets is NP-hard in general; it is computed
  exactly by enumeration for at most :data:`EXHAUSTIVE_CUT_NODES` nodes and
  otherwise over candidate sets (level sets of the certificate's distances,
  boxes, single nodes), which gives a valid lower bound on both;
* the **schedule** (:func:`alltoall_schedule`): the optimal routing split into
  paths per pair with exact weights (:func:`path_decomposition`), then ``k``
  chunks per pair. With ``k`` the least common denominator of the weights the
  chunks reproduce the routing's loads exactly, so the time factor is t*. With
  a smaller fixed ``k`` each pair's weights are rounded to multiples of ``1/k``
  (largest remainders); a path's weight moves by less than ``1/k``, and only
  rounded-up paths add load, so the time factor is at most
  ``t* + max_a P(a) / (k * bandwidth(a))`` with ``P(a)`` the number of pairs
  with a rounded-up path on ``a`` (``stats["rounding_bound"]``); the exact
  value is computed and stated.

Examples
--------
>>> from optcoll import load_topology
>>> bound = alltoall_bound(load_topology("ring:4,direction=uni,bw=1"))
>>> bound.time_factor, bound.cut_bound, bound.flow_cut_gap
(Fraction(6, 1), Fraction(4, 1), Fraction(3, 2))
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from optcoll.core.arguments import (
    choice_argument,
    count_argument,
    instance_argument,
    topology_argument,
)
from optcoll.core.loads import routes_time_factor
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import Route, RoutePath, Schedule
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError

if TYPE_CHECKING:
    from formulations.solve import SolverReport
    from optcoll.bounds.alltoall_orbits import AlltoallSymmetry

__all__ = [
    "ALLTOALL_LP_METHODS",
    "EXHAUSTIVE_CUT_NODES",
    "AlltoallResult",
    "alltoall_optimum",
    "AlltoallBound",
    "alltoall_bound",
    "AlltoallCut",
    "alltoall_cut_bound",
    "pair_demand",
    "path_decomposition",
    "orbit_path_decomposition",
    "alltoall_schedule",
]

Arc = tuple[str, str]

#: Ways to solve the all-to-all LP (:func:`alltoall_optimum`).
ALLTOALL_LP_METHODS = ("auto", "full", "orbits")

#: Largest number of nodes for which the cut bound enumerates every set.
EXHAUSTIVE_CUT_NODES = 14


def pair_demand(topology: Topology, side: frozenset[str] | set[str]) -> int:
    """``d(S) = |S ∩ Vc| * |Vc \\ S|``: the all-to-all pieces that must leave ``side``.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> pair_demand(load_topology("ring:4"), {"n0", "n1"})
    4
    """
    inside = sum(1 for v in side if topology.is_compute(v))
    return inside * (topology.num_compute - inside)


@dataclass(frozen=True)
class AlltoallCut:
    """What :func:`alltoall_cut_bound` gives: the best cut bound ``ratio`` found, its set
    ``side`` and whether the search was ``exhaustive`` (then ``ratio`` is the best cut)."""

    ratio: Fraction
    side: frozenset[str]
    exhaustive: bool


def alltoall_cut_bound(
    topology: Topology, candidates: list[frozenset[str]] | None = None
) -> AlltoallCut:
    """The best cut bound ``d(S) / B+(S)`` found, its set ``S``, and whether the search was exhaustive.

    Exhaustive over all sets for at most :data:`EXHAUSTIVE_CUT_NODES` nodes;
    otherwise the maximum over ``candidates`` plus every single compute node and
    every box (the nodes sharing a ``group``), each with its complement. Exact
    arithmetic throughout.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> cut = alltoall_cut_bound(load_topology("dgx-a100:1"))
    >>> cut.ratio, cut.exhaustive
    (Fraction(7, 300), True)
    """
    nodes = topology.node_ids
    best: tuple[Fraction, frozenset[str]] | None = None

    def consider(side: frozenset[str]) -> None:
        nonlocal best
        demand = pair_demand(topology, side)
        if demand == 0:
            return
        ratio = demand / topology.cut_bandwidth(side)
        if best is None or ratio > best[0]:
            best = (ratio, side)

    if len(nodes) <= EXHAUSTIVE_CUT_NODES:
        for size in range(1, len(nodes)):
            for chosen in itertools.combinations(nodes, size):
                consider(frozenset(chosen))
        assert best is not None
        return AlltoallCut(best[0], best[1], True)
    groups: dict[str, set[str]] = {}
    for v in topology.node_ids:
        group = topology.node[v].group
        if group is not None:
            groups.setdefault(group, set()).add(v)
    sets = [frozenset({c}) for c in topology.compute_nodes] + [
        frozenset(g) for g in groups.values()
    ]
    sets += list(candidates or [])
    everything = frozenset(nodes)
    for side in sets:
        consider(side)
        consider(everything - side)
    assert best is not None
    return AlltoallCut(best[0], best[1], False)


#: Most arc orbits whose lengths (one each) give the cut bound's candidate sets.
ORBIT_CUT_LENGTHS = 64


def _distance_level_sets(
    topology: Topology, lengths: dict[Arc, Fraction], sources: Iterable[str]
) -> list[frozenset[str]]:
    """For every source, the sets of nodes within each distance under ``lengths``.

    An automorphism that preserves ``lengths`` maps level sets to level sets with
    the same cut ratio, so one source per orbit finds the same best ratio."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(topology.node_ids)
    graph.add_weighted_edges_from(
        (u, v, lengths.get((u, v), Fraction(0))) for u, v in topology.capacity
    )
    sets = []
    for source in sources:
        dist = nx.single_source_dijkstra_path_length(graph, source)
        order = sorted(topology.node_ids, key=lambda v: (dist.get(v, float("inf")), v))
        for size in range(1, len(order)):
            if dist.get(order[size - 1]) != dist.get(order[size]):
                sets.append(frozenset(order[:size]))
    return sets


@dataclass(frozen=True)
class AlltoallResult:
    """The exact all-to-all optimum with its primal routing and dual certificate.

    ``time_factor`` is t* (time per unit piece, in 1/bandwidth units: an
    ``M``-byte all-to-all takes ``(M / N) * time_factor``); ``routing[s]`` source
    ``s``'s exact flow on each arc, in pieces; ``lengths`` the certifying length
    function on the arcs (normalised so that ``sum_a bandwidth(a) * l(a) = 1``)
    and ``certificate_bound`` the lower bound it proves, equal to
    ``time_factor``; ``seconds`` the wall time of build, solve and exact checks.
    ``method`` is ``"full"`` (the LP over every source) or ``"orbits"`` (the LP
    over one source per orbit of ``symmetry``, lifted and proved on the full LP,
    :mod:`optcoll.bounds.alltoall_orbits`; ``routing`` is then lifted on demand
    and ``flows`` holds the representatives' flows).
    """

    time_factor: Fraction
    routing: Mapping[str, dict[Arc, Fraction]]
    lengths: dict[Arc, Fraction]
    certificate_bound: Fraction
    lp_time_factor: float
    form: str
    report: SolverReport
    seconds: float
    method: str = "full"
    symmetry: AlltoallSymmetry | None = None
    flows: dict[str, dict[Arc, Fraction]] | None = None

    @property
    def algbw(self) -> float:
        """``M / time`` for large ``M``: ``N / t*`` in bandwidth units (N from the routing)."""
        return float(len(self.routing) / self.time_factor)


def alltoall_optimum(
    topology: Topology,
    *,
    form: str = "time",
    time_limit: float | None = None,
    method: str = "auto",
) -> AlltoallResult:
    """Solve the all-to-all LP of ``topology`` and return t* exactly with its certificate.

    The LP is :func:`formulations.alltoall.build_alltoall`, on the integer-scaled
    capacities ``c = bandwidth / unit``; t* in 1/bandwidth units is its optimum
    divided by ``unit``.

    **Methods.** ``"full"`` solves that LP. ``"orbits"`` finds a group of
    automorphisms of the topology (:func:`optcoll.bounds.alltoall_orbits.alltoall_symmetry`)
    and solves the orbit LP instead: one flow per orbit of sources and one
    capacity row per orbit of arcs, whose optimum is t* (the proof is in
    :mod:`optcoll.bounds.alltoall_orbits`); its solution is lifted to every source
    and proved on the full LP exactly (feasible routing of time t*, and a length
    function proving t* from every source). ``"auto"`` (default) takes
    ``"orbits"`` for the time form whenever an automorphism moves a compute node,
    else ``"full"``.

    **Exactness.** HiGHS solves the LP in floating point. The vertex and the duals
    of its final simplex basis are then solved exactly over the rationals (the
    rational reconstruction of t*, and of the whole routing), and re-verified in
    exact arithmetic by LP duality (:func:`optcoll.lp.exact.check_optimality`).

    **Certificate.** The capacity rows' duals give a length function ``l >= 0``
    on the links. Any routing sends each piece ``(s, d)`` along a path at least
    ``dist_l(s, d)`` long, so it loads the links with total length at least
    ``D(l) = sum over pairs of dist_l(s, d)``; a routing of time ``t`` loads them
    with at most ``t * sum_a c(a) l(a)``. Hence no routing is faster than
    ``D(l) / sum_a c(a) l(a)`` (:func:`optcoll.bounds.multicommodity.length_bound`),
    and the optimal duals make that ratio equal the routing's time: the pair
    (routing, ``l``) proves t* without reference to the LP. The bound is optimal
    *among* all fractional routings in which nodes forward without copying or
    combining data (the bandwidth model: time = max link load / bandwidth).

    Raises
    ------
    ArgumentError
        An unknown ``method``, or ``"orbits"`` with the rate form or on a topology
        where no automorphism moves a compute node.
    ReconstructionError
        If the exact vertex or its duals cannot be recovered from the solve or do
        not prove optimality (the message says which check failed).
    SolveError
        Any other solver failure (see :func:`formulations.solve.solve`).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> result = alltoall_optimum(load_topology("dgx-a100:1"))
    >>> result.time_factor, result.certificate_bound == result.time_factor, result.method
    (Fraction(7, 300), True, 'orbits')
    >>> alltoall_optimum(load_topology("dgx-a100:1"), method="full").time_factor
    Fraction(7, 300)
    """
    from formulations.alltoall import alltoall_commodities
    from optcoll.bounds.alltoall_orbits import alltoall_symmetry, solve_orbit_alltoall
    from optcoll.bounds.multicommodity import solve_multicommodity

    choice_argument(method, ALLTOALL_LP_METHODS, "method")
    if method == "orbits" and form != "time":
        raise ArgumentError("the orbit LP has the time form only; use method='full'")
    start = time.perf_counter()
    caps, unit = topology.integer_capacities()
    symmetry = None if method == "full" or form != "time" else alltoall_symmetry(topology)
    if method == "orbits" and symmetry is None:
        raise ArgumentError(
            f"no automorphism of {topology.name!r} moves a compute node; use method='full'"
        )
    if symmetry is not None:
        lifted = solve_orbit_alltoall(topology, symmetry, time_limit=time_limit)
        return AlltoallResult(
            lifted.time / unit,
            lifted.routing,
            {arc: length / unit for arc, length in lifted.lengths.items()},
            lifted.lengths_bound / unit,
            lifted.lp_time / float(unit),
            form,
            lifted.report,
            time.perf_counter() - start,
            "orbits",
            symmetry,
            lifted.flows,
        )
    compute = topology.compute_nodes
    solved = solve_multicommodity(
        topology.node_ids, caps, alltoall_commodities(compute), form=form, time_limit=time_limit
    )
    assert solved.lengths_bound is not None, "unicast commodities always have a length bound"
    routing = {s: dict(load) for s, load in zip(compute, solved.loads, strict=True)}
    # In bandwidth units: c(a) = bandwidth(a) / unit, so times divide by unit and
    # lengths normalised against c(a) are normalised against bandwidth after dividing by unit.
    lengths = {arc: length / unit for arc, length in solved.lengths.items()}
    return AlltoallResult(
        solved.time / unit,
        routing,
        lengths,
        solved.lengths_bound / unit,
        solved.lp_time / float(unit),
        form,
        solved.report,
        time.perf_counter() - start,
    )


@dataclass(frozen=True)
class AlltoallBound:
    """The exact all-to-all optimum t* beside the cut bound.

    ``time_factor`` is t*: an ``M``-byte all-to-all (pieces of ``M / N``) takes
    ``(M / N) * time_factor`` at best. ``certificate_bound`` equals it and is
    proved by the length function ``lengths`` (see
    :mod:`formulations.alltoall`). ``cut_bound`` is the best ``d(S) / B+(S)``
    found, ``cut`` its set, ``cut_exhaustive`` whether every set was tried;
    ``flow_cut_gap = time_factor / cut_bound >= 1``. ``symmetry`` and ``flows``:
    the group and the representatives' flows when the orbit LP was solved
    (:func:`alltoall_optimum`).
    """

    topology: str
    num_compute: int
    time_factor: Fraction
    certificate_bound: Fraction
    lengths: dict[Arc, Fraction]
    cut_bound: Fraction
    cut: frozenset[str]
    cut_exhaustive: bool
    routing: Mapping[str, dict[Arc, Fraction]]
    seconds: float
    stats: dict[str, Any]
    symmetry: AlltoallSymmetry | None = None
    flows: dict[str, dict[Arc, Fraction]] | None = None

    @property
    def flow_cut_gap(self) -> Fraction:
        """``t* / cut_bound``: 1 when a cut explains the optimum."""
        return self.time_factor / self.cut_bound

    @property
    def algbw(self) -> float:
        """``M / time`` for large ``M``: ``N / t*`` in bandwidth units."""
        return float(self.num_compute / self.time_factor)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary; exact values as ``"p/q"`` strings."""
        binding = sorted(self.lengths.items(), key=lambda item: (-item[1], item[0]))
        return {
            "topology": self.topology,
            "collective": "alltoall",
            "num_compute": self.num_compute,
            "time_factor": fraction_text(self.time_factor),
            "algbw": round(self.algbw, 3),
            "certificate_bound": fraction_text(self.certificate_bound),
            "certificate_lengths": [[u, v, fraction_text(x)] for (u, v), x in binding],
            "cut_bound": fraction_text(self.cut_bound),
            "cut": sorted(self.cut),
            "cut_exhaustive": self.cut_exhaustive,
            "flow_cut_gap": fraction_text(self.flow_cut_gap),
            "seconds": round(self.seconds, 3),
            **self.stats,
        }


def alltoall_bound(topology: Topology, *, time_limit: float | None = None) -> AlltoallBound:
    """t* by the all-to-all LP (exact, certified) and the cut bound beside it.

    The last few results are kept (topologies are immutable), so building
    schedules for several ``k`` solves the LP once; treat the result as read-only.

    Raises
    ------
    SolveError
        If the LP cannot be solved or its exact optimum not proved (see
        :func:`alltoall_optimum`).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> bound = alltoall_bound(load_topology("dgx-a100:2"))
    >>> bound.time_factor, bound.cut_bound, bound.to_dict()["time_factor"]
    (Fraction(8, 25), Fraction(8, 25), '8/25')
    """
    topology_argument(topology)
    return alltoall_bound_core(topology, time_limit)


@functools.lru_cache(maxsize=4)
def alltoall_bound_core(topology: Topology, time_limit: float | None) -> AlltoallBound:
    start = time.perf_counter()
    optimum = alltoall_optimum(topology, time_limit=time_limit)
    candidates = None
    if len(topology.node_ids) > EXHAUSTIVE_CUT_NODES:
        sources = topology.compute_nodes if optimum.symmetry is None else optimum.symmetry.sources
        candidates = _distance_level_sets(topology, optimum.lengths, sources)
        if optimum.symmetry is not None and len(optimum.symmetry.arc_orbits) <= ORBIT_CUT_LENGTHS:
            # a symmetric optimum spreads its lengths over every orbit, and its level sets
            # are balls; unit lengths on one arc orbit and its reverse arcs (a length
            # function the group preserves) give the slabs of a torus as well
            for orbit in optimum.symmetry.arc_orbits:
                lengths = dict.fromkeys(orbit, Fraction(1))
                lengths.update(dict.fromkeys(((v, u) for u, v in orbit), Fraction(1)))
                candidates += _distance_level_sets(topology, lengths, sources)
    found = alltoall_cut_bound(topology, candidates)
    cut_bound, cut, exhaustive = found.ratio, found.side, found.exhaustive
    assert cut_bound <= optimum.time_factor, "a cut bound above the optimum: the LP is wrong"
    report = optimum.report
    stats = {
        "method": optimum.method,
        "lp_variables": report.num_variables,
        "lp_constraints": report.num_constraints,
        "lp_seconds": round(report.solve_seconds, 3),
        "exact_seconds": round(optimum.seconds - report.solve_seconds, 3),
    }
    if optimum.symmetry is not None:
        stats["group_order"] = optimum.symmetry.group.order
        stats["source_orbits"] = len(optimum.symmetry.sources)
        stats["arc_orbits"] = len(optimum.symmetry.arc_orbits)
    return AlltoallBound(
        topology.name,
        topology.num_compute,
        optimum.time_factor,
        optimum.certificate_bound,
        optimum.lengths,
        cut_bound,
        cut,
        exhaustive,
        optimum.routing,
        time.perf_counter() - start,
        stats,
        optimum.symmetry,
        optimum.flows,
    )


Path = tuple[str, ...]


def _cancel_cycles(flow: dict[Arc, Fraction]) -> None:
    """Remove every directed cycle from ``flow`` in place (loads only drop)."""
    import networkx as nx

    while True:
        graph = nx.DiGraph(list(flow))
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            return
        arcs = [(u, v) for u, v, *_ in cycle]
        amount = min(flow[arc] for arc in arcs)
        for arc in arcs:
            flow[arc] -= amount
            if flow[arc] == 0:
                del flow[arc]


def _find_path(
    flow: Mapping[Arc, Fraction], order: Mapping[Arc, int], source: str, sink: str
) -> Path:
    """A fewest-hop path from ``source`` to ``sink`` on arcs with positive flow (deterministic)."""
    out: dict[str, list[str]] = {}
    for u, v in sorted(flow, key=order.__getitem__):
        out.setdefault(u, []).append(v)
    parent: dict[str, str | None] = {source: None}
    frontier = [source]
    while frontier and sink not in parent:
        following = []
        for u in frontier:
            for v in out.get(u, ()):
                if v not in parent:
                    parent[v] = u
                    following.append(v)
        frontier = following
    assert sink in parent, f"the flow from {source!r} does not reach {sink!r}"
    path = [sink]
    while path[-1] != source:
        step = parent[path[-1]]
        assert step is not None
        path.append(step)
    return tuple(reversed(path))


def path_decomposition(
    topology: Topology, routing: Mapping[str, Mapping[Arc, Fraction]]
) -> dict[tuple[str, str], list[tuple[Path, Fraction]]]:
    """Each pair's paths with exact weights summing to 1, from per-source flows.

    ``routing[s]`` is source ``s``'s flow (one unit to every other compute
    node). Cycles are cancelled first; then, sink by sink, a fewest-hop path in
    the remaining flow carries as much as its smallest arc and the sink's
    remaining demand allow. Every step empties an arc or a demand, so each
    source yields at most ``|links| + N`` paths. The paths' loads never exceed
    the flow's.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topo = load_topology("ring:3,direction=uni,bw=1")
    >>> paths = path_decomposition(topo, alltoall_optimum(topo).routing)
    >>> paths[("n0", "n2")]
    [(('n0', 'n1', 'n2'), Fraction(1, 1))]
    """
    order = {arc: i for i, arc in enumerate(topology.capacity)}
    result: dict[tuple[str, str], list[tuple[Path, Fraction]]] = {}
    for source, given in routing.items():
        flow = {arc: Fraction(x) for arc, x in given.items() if x > 0}
        _cancel_cycles(flow)
        for sink in topology.compute_nodes:
            if sink == source:
                continue
            result[(source, sink)] = _peel_paths(flow, order, source, sink, Fraction(1))
    return result


def _peel_paths(
    flow: dict[Arc, Fraction],
    order: Mapping[Arc, int],
    source: str,
    sink: str,
    need: Fraction,
) -> list[tuple[Path, Fraction]]:
    """Take ``need`` units from ``source`` to ``sink`` out of the acyclic ``flow`` as
    paths (each carrying the least of what is still needed and its arcs' flow), removing
    them from ``flow``; the paths and their amounts."""
    paths: list[tuple[Path, Fraction]] = []
    while need > 0:
        path = _find_path(flow, order, source, sink)
        arcs = list(zip(path, path[1:], strict=False))
        amount = min(need, *(flow[arc] for arc in arcs))
        for arc in arcs:
            flow[arc] -= amount
            if flow[arc] == 0:
                del flow[arc]
        need -= amount
        paths.append((path, amount))
    return paths


def orbit_path_decomposition(
    topology: Topology, symmetry: AlltoallSymmetry, flows: Mapping[str, Mapping[Arc, Fraction]]
) -> dict[tuple[str, str], list[tuple[Path, Fraction]]]:
    """:func:`path_decomposition` of the lifted routing, from the representatives' flows.

    Each representative ``r``'s flow is decomposed once; every element ``g`` of the
    group maps ``r``'s paths to ``g(r)``'s with weight ``w / |G_r|`` (the lift of
    :mod:`optcoll.bounds.alltoall_orbits`), equal paths merged. The paths of a
    pair weigh 1 in total, and their loads are the lift of the representatives'
    path loads, which never exceed the representatives' flows: at most the lifted
    routing's loads. Pairs in the order of the compute nodes.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topo = load_topology("ring:3,direction=uni,bw=1")
    >>> result = alltoall_optimum(topo)
    >>> orbit_path_decomposition(topo, result.symmetry, result.flows)[("n1", "n0")]
    [(('n1', 'n2', 'n0'), Fraction(1, 1))]
    """
    elements = symmetry.group.elements()
    nodes = symmetry.nodes
    index = {v: i for i, v in enumerate(nodes)}
    found: dict[tuple[str, str], dict[Path, Fraction]] = {}
    for r, pieces in path_decomposition(topology, {r: flows[r] for r in symmetry.sources}).items():
        stabiliser = symmetry.group.order // len(symmetry.group.orbit_of(index[r[0]]))
        for path, weight in pieces:
            share = weight / stabiliser
            moved = elements[:, [index[v] for v in path]].tolist()
            for image in moved:
                mapped = tuple(nodes[v] for v in image)
                pair = found.setdefault((mapped[0], mapped[-1]), {})
                pair[mapped] = pair[mapped] + share if mapped in pair else share
    rank = {v: i for i, v in enumerate(topology.compute_nodes)}
    return {
        pair: list(found[pair].items())
        for pair in sorted(found, key=lambda p: (rank[p[0]], rank[p[1]]))
    }


def _chunks(weights: list[Fraction], k: int) -> list[int]:
    """Integers summing to ``k`` within 1 of ``k * w`` each (largest remainders, first wins ties)."""
    scaled = [w * k for w in weights]
    chunks = [math.floor(x) for x in scaled]
    left = k - sum(chunks)
    ranked = sorted(range(len(weights)), key=lambda i: (-(scaled[i] - chunks[i]), i))
    for i in ranked[:left]:
        chunks[i] += 1
    return chunks


def alltoall_schedule(
    topology: Topology, k: int | None = None, *, bound: AlltoallBound | None = None
) -> Schedule:
    """An all-to-all schedule from the optimal routing: ``k`` chunks per pair on exact paths.

    ``k=None`` picks the least common denominator of the path weights, and the
    schedule's time factor is t* exactly; a given ``k`` rounds the weights (see
    the module docstring for the bound). ``bound`` reuses a computed
    :func:`alltoall_bound`.

    Raises
    ------
    ScheduleError
        If ``k`` is not a positive integer.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> schedule = alltoall_schedule(load_topology("dgx-a100:2"))
    >>> schedule.k, schedule.time_factor, len(schedule.routes)
    (1, Fraction(8, 25), 240)
    """
    topology_argument(topology)
    k = None if k is None else count_argument(k, "k")
    if bound is not None:
        instance_argument(
            bound, AlltoallBound, "bound", "optcoll.schedules.alltoall.alltoall_bound"
        )
    return alltoall_schedule_core(topology, k, bound=bound)


def alltoall_schedule_core(
    topology: Topology, k: int | None = None, *, bound: AlltoallBound | None = None
) -> Schedule:
    """The core of :func:`alltoall_schedule`: its arguments are already checked."""
    if bound is None:
        bound = alltoall_bound_core(topology, None)
    if bound.symmetry is not None and bound.flows is not None:
        paths = orbit_path_decomposition(topology, bound.symmetry, bound.flows)
    else:
        paths = path_decomposition(topology, bound.routing)
    exact_k = math.lcm(*(w.denominator for pieces in paths.values() for _, w in pieces))
    chosen = exact_k if k is None else k
    routes = []
    raised: dict[Arc, int] = {}
    for (source, sink), pieces in paths.items():
        counts = _chunks([w for _, w in pieces], chosen)
        steps = []
        for (path, weight), chunks in zip(pieces, counts, strict=True):
            up = chunks > weight * chosen
            if up:
                for arc in zip(path, path[1:], strict=False):
                    raised[arc] = raised.get(arc, 0) + 1
            if chunks:
                steps.append(RoutePath(chunks, path))
        routes.append(Route(source, sink, tuple(steps)))
    capacity = topology.capacity
    factor = routes_time_factor(topology, routes, chosen)
    slack = max(
        (Fraction(p, chosen) / capacity[arc] for arc, p in raised.items()), default=Fraction(0)
    )
    stats = {
        "routes": len(routes),
        "paths": sum(len(r.paths) for r in routes),
        "exact_k": exact_k,
        "ratio_to_optimum": fraction_text(factor / bound.time_factor),
        "rounding_bound": fraction_text(bound.time_factor + slack),
        "cut_bound": fraction_text(bound.cut_bound),
    }
    return Schedule(
        "alltoall",
        topology.name,
        topology.compute_nodes,
        chosen,
        (),
        cut_ratio=None,
        time_factor=factor,
        topology_hash=topology.content_hash,
        stats=stats,
        routes=tuple(routes),
    )
