"""Concurrent flow over paths by column generation: the second, independent all-to-all LP.

The path form of the concurrent-flow LP (:mod:`formulations.path_flow`: one
variable per path of each pair, rows ``pair_I`` with duals ``mu_sd`` and
``cap_A`` with duals ``-w_a``).
It is the same optimum as the edge form of :mod:`formulations.multicommodity`
(every flow splits into paths), but shares no model with it. There are
exponentially many paths, so the LP is solved over a growing set
(:func:`formulations.path_flow.build_path_master`): with the
restricted master's duals, a path's reduced cost is ``w(P) - mu_sd``, and
pricing is a shortest-path search under the lengths ``w`` from every source
(networkx's Dijkstra). The loop stops when no path has negative reduced cost in
floating point; then the master's vertex and duals are recovered exactly
(:func:`optcoll.lp.exact.solve_proved`) and pricing is repeated in exact
arithmetic (Fraction lengths) until no path prices out. At that point the exact
``w`` proves the master's ``t`` through
:func:`optcoll.bounds.multicommodity.length_bound` (``t = sum_sd D_sd dist_w(s, d)
/ sum_a c(a) w(a)``), so the value returned is the optimum of the full path LP.

Each round costs one Dijkstra per source, ``O(|A| log |V|)`` each.

Examples
--------
>>> caps = {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1}
>>> pairs = {(s, d): 1 for s in "abc" for d in "abc" if s != d}
>>> result = path_concurrent_flow("abc", caps, pairs)
>>> result.time, result.paths[("a", "c")]
(Fraction(3, 1), ((('a', 'b', 'c'), Fraction(1, 1)),))
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import networkx as nx

from formulations.multicommodity import Commodity
from formulations.network import Arc
from formulations.path_flow import Pair, Path, build_path_master
from formulations.solve import solve
from optcoll.bounds.multicommodity import length_bound
from optcoll.exceptions import InfeasibleModelError, MethodError, ReconstructionError
from optcoll.lp.exact import objective_value, solve_proved

__all__ = ["PathFlowResult", "path_concurrent_flow"]

#: Relative reduced cost below which a float-priced path enters the master.
PRICING_TOLERANCE = 1e-9

#: Most exact pricing rounds after the float loop has converged.
EXACT_ROUNDS = 50


@dataclass(frozen=True)
class PathFlowResult:
    """The exact optimum of the path LP, its paths and the proving lengths.

    ``time`` is t; ``paths[(s, d)]`` the pair's paths with positive exact
    weights (summing to ``D_sd``); ``lengths`` the exact length function that
    proves ``time`` (normalised to ``sum_a c(a) w(a) = 1``); ``columns`` the
    number of paths generated, ``rounds`` the pricing rounds (float, exact).
    """

    time: Fraction
    paths: dict[Pair, tuple[tuple[Path, Fraction], ...]]
    lengths: dict[Arc, Fraction]
    columns: int
    rounds: tuple[int, int]
    seconds: float


def _shortest_paths(
    nodes: Sequence[str],
    capacity: Mapping[Arc, int],
    lengths: Mapping[Arc, float | Fraction],
    source: str,
) -> tuple[dict[str, float | Fraction], dict[str, list[str]]]:
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_weighted_edges_from((u, v, lengths.get((u, v), 0)) for u, v in capacity)
    dist, paths = nx.single_source_dijkstra(graph, source)
    return dist, paths


def path_concurrent_flow(
    nodes: Sequence[str],
    capacity: Mapping[Arc, int],
    pairs: Mapping[Pair, int],
    *,
    max_rounds: int = 500,
) -> PathFlowResult:
    """Solve the path LP by column generation and return its exact, proved optimum.

    Raises
    ------
    InfeasibleModelError
        A pair's destination cannot be reached from its source.
    MethodError
        Bad data (a pair of equal or unknown nodes, a nonpositive demand).
    ReconstructionError
        The exact master is not proved, or exact pricing does not close within
        :data:`EXACT_ROUNDS` rounds.
    """
    start = time.perf_counter()
    known = set(nodes)
    for (s, d), amount in pairs.items():
        if s not in known or d not in known or s == d:
            raise MethodError(f"pair {(s, d)!r} must join two distinct known nodes")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise MethodError(f"pair {(s, d)!r} has demand {amount!r}; use a positive integer")
    sources = sorted({s for s, _ in pairs}, key=list(nodes).index)
    hops = dict.fromkeys(capacity, 1)
    columns: list[tuple[Pair, Path]] = []
    for s in sources:
        _, found = _shortest_paths(nodes, capacity, hops, s)
        for s2, d in pairs:
            if s2 == s:
                if d not in found:
                    raise InfeasibleModelError(f"{d!r} cannot be reached from {s!r}")
                columns.append(((s, d), tuple(found[d])))
    known_columns = set(columns)
    arcs = list(capacity)
    float_rounds = exact_rounds = 0
    while True:
        master = build_path_master(capacity, pairs, columns)
        result = solve(master)
        float_rounds += 1
        price = {arc: max(-result.duals.get(f"cap_{a}", 0.0), 0.0) for a, arc in enumerate(arcs)}
        added = _price(nodes, capacity, pairs, sources, price, result.duals, known_columns, columns)
        if not added or float_rounds >= max_rounds:
            break
    while True:
        master = build_path_master(capacity, pairs, columns)
        proved = solve_proved(master, "path-flow master")
        primal, dual = proved.primal, proved.dual
        exact_price = {arc: -dual.get(f"cap_{a}", Fraction(0)) for a, arc in enumerate(arcs)}
        if not _price(nodes, capacity, pairs, sources, exact_price, dual, known_columns, columns):
            break
        exact_rounds += 1
        if exact_rounds > EXACT_ROUNDS:
            raise ReconstructionError(
                f"exact pricing still finds improving paths after {EXACT_ROUNDS} rounds"
            )
    t = objective_value(master, primal)
    commodities = [Commodity(s, {d: a for (s2, d), a in pairs.items() if s2 == s}) for s in sources]
    norm = sum(capacity[arc] * w for arc, w in exact_price.items())
    lengths = {arc: w / norm for arc, w in exact_price.items() if w}
    bound = length_bound(nodes, capacity, commodities, lengths)
    if bound != t:
        raise ReconstructionError(f"the path LP's lengths prove {bound}, not its value {t}")
    chosen: dict[Pair, list[tuple[Path, Fraction]]] = {pair: [] for pair in pairs}
    for j, (pair, path) in enumerate(columns):
        weight = primal.get(f"x_{j}", Fraction(0))
        if weight:
            chosen[pair].append((path, weight))
    return PathFlowResult(
        t,
        {pair: tuple(p) for pair, p in chosen.items()},
        lengths,
        len(columns),
        (float_rounds, exact_rounds),
        time.perf_counter() - start,
    )


def _price(
    nodes: Sequence[str],
    capacity: Mapping[Arc, int],
    pairs: Mapping[Pair, int],
    sources: Sequence[str],
    price: Mapping[Arc, float | Fraction],
    duals: Mapping[str, float | Fraction],
    known: set[tuple[Pair, Path]],
    columns: list[tuple[Pair, Path]],
) -> int:
    """Add every shortest path whose reduced cost ``w(P) - mu_sd`` is negative; return how many.

    In exact arithmetic (Fraction prices) the test is exact; with floats a path must
    beat ``mu_sd`` by :data:`PRICING_TOLERANCE` relative to the total price scale.
    """
    exact = any(isinstance(w, Fraction) for w in price.values())
    scale = 0 if exact else PRICING_TOLERANCE * max(1.0, *(abs(float(w)) for w in price.values()))
    added = 0
    pair_row = {pair: f"pair_{i}" for i, pair in enumerate(pairs)}
    for s in sources:
        dist, found = _shortest_paths(nodes, capacity, price, s)
        for pair in pairs:
            if pair[0] != s:
                continue
            mu = duals.get(pair_row[pair], 0)
            column = (pair, tuple(found[pair[1]]))
            if dist[pair[1]] < mu - scale and column not in known:
                known.add(column)
                columns.append(column)
                added += 1
    return added
