"""The multi-commodity LP's exact optimum, its routing and its proof.

:func:`solve_multicommodity` solves the LP of :mod:`formulations.multicommodity`
(plain data: nodes, integer capacities, :class:`~formulations.multicommodity.Commodity`
list), recovers HiGHS's vertex and duals as fractions and proves them optimal
(:func:`optcoll.lp.exact.solve_proved`), then checks the routing on its own.

The **certificate** of a unicast optimum is a length function: for lengths
``l >= 0`` on the arcs, every routing loads the arcs with total length at least
``sum_k sum_d demands_k[d] * dist_l^k(source_k, d)`` (each unit travels a path
at least as long as the shortest usable one), and at most ``t * sum_a c(a) l(a)``,
so

    t >= sum_k sum_d demands_k[d] * dist_l^k(source_k, d) / sum_a c(a) l(a)

for every ``l`` (:func:`length_bound`); at the optimum the capacity rows' duals
attain it (LP duality). A multicast optimum is proved by the general exact
duality check :func:`optcoll.lp.exact.check_optimality`.

Examples
--------
Two commodities crossing one arc of capacity 1 each way on a 3-node line:

>>> from formulations.multicommodity import Commodity
>>> caps = {("a", "b"): 1, ("b", "a"): 1, ("b", "c"): 1, ("c", "b"): 1}
>>> ks = [Commodity("a", {"c": 1}), Commodity("c", {"a": 1, "b": 1})]
>>> result = solve_multicommodity(["a", "b", "c"], caps, ks)
>>> result.time, result.lengths_bound
(Fraction(2, 1), Fraction(2, 1))
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import networkx as nx

from formulations.multicommodity import Commodity, build_multicommodity
from formulations.network import Arc
from formulations.solve import SolverReport
from optcoll.exceptions import MethodError, ReconstructionError
from optcoll.lp.exact import solve_proved

__all__ = ["MulticommodityResult", "solve_multicommodity", "length_bound", "routing_time"]


@dataclass(frozen=True)
class MulticommodityResult:
    """A solved multi-commodity LP, exact and proved optimal.

    ``time`` is the exact optimum t (for the rate form, ``1 / lam``);
    ``loads[k]`` commodity ``k``'s exact load on each arc it uses (its flow, or
    its multicast capacity), scaled to the time form (all demands met at once,
    ``sum_k loads[k][a] <= time * c(a)``); ``flows[k][d]`` a multicast
    commodity's exact flow to its sink number ``d`` (empty for unicast);
    ``lengths`` the exact length function from the capacity rows' duals,
    normalised to ``sum_a c(a) l(a) = 1``, and ``lengths_bound`` its
    :func:`length_bound` (equal to ``time`` when every commodity is unicast;
    ``None`` otherwise, where :func:`~optcoll.lp.exact.check_optimality`
    is the proof). ``lp_time`` is HiGHS's float optimum.
    """

    time: Fraction
    loads: tuple[dict[Arc, Fraction], ...]
    flows: tuple[tuple[dict[Arc, Fraction], ...], ...]
    lengths: dict[Arc, Fraction]
    lengths_bound: Fraction | None
    lp_time: float
    form: str
    report: SolverReport


def solve_multicommodity(
    nodes: Sequence[str],
    capacity: Mapping[Arc, int],
    commodities: Sequence[Commodity],
    *,
    form: str = "time",
    time_limit: float | None = None,
) -> MulticommodityResult:
    """Solve the multi-commodity LP and prove its optimum exactly.

    The vertex and the duals of HiGHS's final basis are recovered exactly
    (:mod:`optcoll.lp.exact`), checked by exact LP duality, and the primal
    routing is checked once more on its own (:func:`routing_time`); for unicast
    commodities the duals' length function must give the same value
    (:func:`length_bound`).

    Raises
    ------
    MethodError
        Bad data (see :func:`build_multicommodity`).
    InfeasibleModelError
        Some sink cannot be reached from its source through the allowed relays.
    ReconstructionError
        The exact vertex or duals could not be recovered, or fail a check.

    Examples
    --------
    A multicast: the source sends once and both sinks copy from a relay that forwards:

    >>> caps = {("s", "r"): 1, ("r", "a"): 1, ("r", "b"): 1, ("a", "s"): 1, ("b", "s"): 1}
    >>> k = Commodity("s", {"a": 1, "b": 1}, copies=True)
    >>> solve_multicommodity(["s", "r", "a", "b"], caps, [k]).time
    Fraction(2, 1)
    >>> k = Commodity("s", {"a": 1, "b": 1}, copies=True, relays=frozenset({"a"}))
    >>> caps[("s", "a")] = 1; caps[("a", "b")] = 1
    >>> solve_multicommodity(["s", "r", "a", "b"], caps, [k]).time
    Fraction(1, 1)
    """
    start = time.perf_counter()
    problem = build_multicommodity(nodes, capacity, commodities, form)
    built = time.perf_counter() - start
    where = f"multi-commodity LP ({form} form, {len(commodities)} commodities)"
    proved = solve_proved(problem, where, time_limit=time_limit, build_seconds=built)
    result, primal, dual = proved.result, proved.primal, proved.dual
    timed = form == "time"
    value = primal["t" if timed else "lam"]
    if value <= 0:
        raise ReconstructionError(f"{where}: the exact optimum {value} is not positive")
    t = value if timed else 1 / value
    scale = Fraction(1) if timed else t  # rate-form flows carry lam per unit of demand
    arcs = list(capacity)
    loads = tuple(
        {
            arcs[a]: primal[f"f_{k}_{a}"] * scale
            for a in range(len(arcs))
            if primal.get(f"f_{k}_{a}", Fraction(0)) != 0
        }
        for k in range(len(commodities))
    )
    flows = tuple(
        tuple(
            {
                arcs[a]: primal[f"g_{k}_{d}_{a}"] * scale
                for a in range(len(arcs))
                if primal.get(f"g_{k}_{d}_{a}", Fraction(0)) != 0
            }
            for d in range(len(commodity.demands))
        )
        if commodity.copies
        else ()
        for k, commodity in enumerate(commodities)
    )
    raw = {arcs[a]: abs(dual.get(f"cap_{a}", Fraction(0))) for a in range(len(arcs))}
    norm = sum(capacity[arc] * length for arc, length in raw.items())
    if norm <= 0:
        raise ReconstructionError(f"{where}: the capacity rows' duals are all zero")
    lengths = {arc: length / norm for arc, length in raw.items() if length}
    counted = [_counted(load, k) for load, k in zip(loads, commodities, strict=True)]
    routed = routing_time(capacity, counted)
    if routed > t:
        raise ReconstructionError(f"{where}: the exact routing needs time {routed} > optimum {t}")
    bound = None
    if not any(k.copies for k in commodities):
        bound = length_bound(nodes, capacity, commodities, lengths)
        if bound != t:
            raise ReconstructionError(
                f"{where}: the duals' length function proves {bound}, not the optimum {t}"
            )
    return MulticommodityResult(
        t, loads, flows, lengths, bound, result.objective, form, result.report
    )


def _counted(load: Mapping[Arc, Fraction], commodity: Commodity) -> dict[Arc, Fraction]:
    """The capacity ``load`` takes on each arc, its images counted."""
    total: dict[Arc, Fraction] = {}
    for arc, x in load.items():
        for image in commodity.counted_on(arc):
            total[image] = total.get(image, Fraction(0)) + x
    return total


def routing_time(capacity: Mapping[Arc, int], loads: Sequence[Mapping[Arc, Fraction]]) -> Fraction:
    """``max_a sum_k loads[k][a] / c(a)``: the time a routing with these loads needs, exactly.

    Examples
    --------
    >>> routing_time({("a", "b"): 2}, [{("a", "b"): Fraction(3)}, {("a", "b"): Fraction(1)}])
    Fraction(2, 1)
    """
    total: dict[Arc, Fraction] = {}
    for load in loads:
        for arc, x in load.items():
            total[arc] = total.get(arc, Fraction(0)) + x
    return max((x / capacity[arc] for arc, x in total.items()), default=Fraction(0))


def length_bound(
    nodes: Sequence[str],
    capacity: Mapping[Arc, int],
    commodities: Sequence[Commodity],
    lengths: Mapping[Arc, Fraction],
) -> Fraction:
    """The lower bound on the time of the unicast ``commodities`` that ``lengths`` proves.

    ``sum_k sum_d demands_k[d] * dist(source_k, d) / sum_a c(a) l(a)``, with
    shortest distances under ``lengths`` (missing arcs have length 0) over the
    arcs each commodity may use; exact (networkx's Dijkstra on Fractions).

    Raises
    ------
    MethodError
        If a commodity copies (this bound is for unicast), all lengths are zero,
        a length is negative, or a sink is unreachable.

    Examples
    --------
    >>> caps = {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1}
    >>> ks = [Commodity(u, {v: 1 for v in "abc" if v != u}) for u in "abc"]
    >>> length_bound("abc", caps, ks, {arc: Fraction(1) for arc in caps})
    Fraction(3, 1)
    """
    if any(k.copies for k in commodities):
        raise MethodError("the length bound holds for unicast commodities only")
    if any(length < 0 for length in lengths.values()):
        raise MethodError("lengths must be nonnegative")
    norm = sum(capacity[arc] * lengths.get(arc, Fraction(0)) for arc in capacity)
    if norm <= 0:
        raise MethodError("the lengths are zero on every arc: they prove nothing")
    scale = math.lcm(*(Fraction(x).denominator for x in lengths.values()))
    integral = {arc: int(lengths.get(arc, 0) * scale) for arc in capacity}
    free = [k for k in commodities if k.relays is None and k.arcs is None]
    total = _free_distances(nodes, integral, free)
    for commodity in commodities:
        if commodity.relays is None and commodity.arcs is None:
            continue
        graph = nx.DiGraph()
        graph.add_nodes_from(nodes)
        graph.add_weighted_edges_from(
            (u, v, length) for (u, v), length in integral.items() if commodity.usable((u, v))
        )
        dist = nx.single_source_dijkstra_path_length(graph, commodity.source)
        total += _demanded(commodity, dist)
    return Fraction(total, scale) / norm


def _demanded(commodity: Commodity, dist: Mapping[str, int]) -> int:
    """``sum_d demands[d] * dist[d]``, every sink reachable."""
    total = 0
    for sink, amount in commodity.demands.items():
        if sink not in dist:
            raise MethodError(f"sink {sink!r} cannot be reached from {commodity.source!r}")
        total += amount * dist[sink]
    return total


def _free_distances(
    nodes: Sequence[str], lengths: Mapping[Arc, int], commodities: Sequence[Commodity]
) -> int:
    """:func:`_demanded` summed over commodities that may use every arc, on one graph.

    Arcs into a source never shorten a path from it, so all these commodities share
    one graph. SciPy's Dijkstra runs in floating point; it is exact here because
    every length is made positive and integral, ``n * l(a) + 1`` for ``n`` nodes, and
    every sum stays below ``2**53``: a shortest path under these lengths is simple
    (fewer than ``n`` arcs), so its length is ``n * dist_l + hops`` with
    ``hops < n``, and ``dist_l`` is its floor division by ``n``.
    """
    if not commodities:
        return 0
    n = len(nodes)
    if n * (sum(lengths.values()) + 1) >= 2**53:  # too large for exact floats: networkx
        graph = nx.DiGraph()
        graph.add_nodes_from(nodes)
        graph.add_weighted_edges_from((u, v, x) for (u, v), x in lengths.items())
        return sum(
            _demanded(k, nx.single_source_dijkstra_path_length(graph, k.source))
            for k in commodities
        )
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    index = {v: i for i, v in enumerate(nodes)}
    tails = [index[u] for u, _ in lengths]
    heads = [index[v] for _, v in lengths]
    weights = [n * x + 1 for x in lengths.values()]
    graph = csr_matrix((np.array(weights, dtype=np.float64), (tails, heads)), shape=(n, n))
    sources = [index[k.source] for k in commodities]
    found = dijkstra(graph, directed=True, indices=sources)
    total = 0
    for row, commodity in zip(found, commodities, strict=True):
        sinks = np.array([index[d] for d in commodity.demands], dtype=np.int64)
        reach = row[sinks]
        if not np.isfinite(reach).all():
            sink = list(commodity.demands)[int(np.flatnonzero(~np.isfinite(reach))[0])]
            raise MethodError(f"sink {sink!r} cannot be reached from {commodity.source!r}")
        hops = (reach.astype(np.int64) // n).tolist()
        total += sum(a * x for a, x in zip(commodity.demands.values(), hops, strict=True))
    return total
