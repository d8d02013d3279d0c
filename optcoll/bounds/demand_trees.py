"""The exact optimum of a demand by column generation over each source's trees: the scalable proof.

The source-aggregated LP of :mod:`optcoll.bounds.demand` has ``N * |links|`` flow
variables (1.6 million on 512 GPUs). Its **Dantzig-Wolfe** form has one block per
source: any flow of source ``s`` that delivers its row of the demand is a convex
combination of the vertices of that (uncapacitated) single-source flow polytope, which
are **trees** (one path to every sink, the paths forming an arborescence), plus cycles
that only add load. So the optimum is that of

    minimise t  subject to  sum_{J of s} x_J = 1                 for every source s
                            sum_J m_J(a) x_J <= t * c(a)          for every link a,  x >= 0

over columns ``J``: flows of one source, ``m_J(a)`` the demand units they put on link
``a``. The columns are every source's fewest-hop tree (and any flows the caller starts
from) and then, round by round, every source's **shortest-path tree** under the master's
prices ``w`` (the capacity rows' duals) whenever its cost ``sum_d D[s][d] dist_w(s, d)``
is below the source's dual (pricing: one Dijkstra from every source, SciPy; the trees'
loads summed along the predecessor arrays in NumPy). The restricted master has
``N + |links|`` rows (3,584 on 512 GPUs); it is handed to HiGHS directly as sparse
columns (highspy, columns appended and re-solved from the previous basis by the primal
simplex, which keeps it feasible), without PuLP.

**Exact proof** (the floats only steer). The master's final basis gives an exact vertex
(``x``, ``t``) and exact prices ``w`` by two sparse linear systems over the rationals
(:func:`optcoll.lp.linear_system.solve_linear_system`; rows whose slack is basic drop
out, so the systems are as large as the tight links and the sources). Then

* ``x >= 0``, each source's weights sum to 1 and every link's exact load is at most
  ``t * c(a)``: the routing ``sum_J x_J m_J`` delivers the demand in time ``t``;
* for any ``w >= 0``, ``L(w) = sum_s sum_d D[s][d] dist_w(s, d) / sum_a c(a) w(a)`` is a
  lower bound on every routing's time (each unit crosses at least its shortest path),
  computed exactly (integer lengths, :func:`exact_shortest_paths`).

``L(w) == t`` proves ``t`` optimal among all routings (the same certificate as the edge
LP's, :func:`optcoll.bounds.multicommodity.length_bound`). When ``L(w) < t`` the exact
pricing's trees join the master and the rounds go on.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.core.demand import demand_matrix
>>> topo = load_topology("ring:4,direction=uni,bw=1")
>>> d = demand_matrix([[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]], topo.compute_nodes)
>>> found = tree_optimum(topo, d)
>>> found.time_factor, found.certificate_bound, found.method
(Fraction(6, 1), Fraction(6, 1), 'columns')
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optcoll.bounds.demand import (
    DemandOptimum,
    check_demand,
    demand_cut_bound_core,
)
from optcoll.core.arguments import topology_argument
from optcoll.core.demand import Demand
from optcoll.core.topology import Topology
from optcoll.exceptions import (
    ReconstructionError,
    SingularSystemError,
    SolverLimitError,
)
from optcoll.lp.linear_system import solve_linear_system

__all__ = ["TreeColumnStats", "tree_optimum", "exact_shortest_paths"]

Arc = tuple[str, str]

#: Relative reduced cost below which a float-priced tree does not enter the master.
PRICING_TOLERANCE = 1e-9

#: HiGHS's feasibility tolerances for the second attempt at an exact basis.
TIGHT_TOLERANCE = 1e-10

#: Most pricing rounds before giving up.
MAX_ROUNDS = 500


@dataclass(frozen=True)
class TreeColumnStats:
    """How :func:`tree_optimum` got there: ``rounds`` (float pricing rounds), ``exact_rounds``
    (exact finishes tried), ``columns`` generated, master ``rows``, HiGHS's ``simplex_iterations``,
    and seconds spent in the master (``lp_seconds``), in pricing and in the exact proof."""

    rounds: int
    exact_rounds: int
    columns: int
    rows: int
    simplex_iterations: int
    lp_seconds: float
    pricing_seconds: float
    exact_seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "rounds": self.rounds,
            "exact_rounds": self.exact_rounds,
            "columns": self.columns,
            "lp_rows": self.rows,
            "simplex_iterations": self.simplex_iterations,
            "lp_seconds": round(self.lp_seconds, 3),
            "pricing_seconds": round(self.pricing_seconds, 3),
            "exact_seconds": round(self.exact_seconds, 3),
        }


def exact_shortest_paths(
    num_nodes: int,
    arcs: Sequence[tuple[int, int]],
    lengths: Sequence[int],
    sources: Sequence[int],
) -> tuple[list[list[int | None]], list[list[int]]]:
    """Exact shortest distances and a shortest-path tree from each source, integer lengths.

    ``arcs[a] = (u, v)`` (node numbers, no parallel arcs), ``lengths[a] >= 0`` integers.
    Returns ``(dist, pred)``: ``dist[i][v]`` the length of a shortest path from
    ``sources[i]`` to ``v`` (``None`` if unreachable), ``pred[i][v]`` the node before ``v``
    on one (``-1`` at the source and unreachable nodes); among shortest paths one with
    fewest arcs. SciPy's Dijkstra runs on ``n * l(a) + 1`` (``n`` nodes): positive, and a
    simple path's length ``n * dist + hops`` with ``hops < n`` gives ``dist`` by floor
    division, exactly while the sums stay below ``2**53``; beyond, networkx on integers.

    Examples
    --------
    >>> exact_shortest_paths(3, [(0, 1), (1, 2), (0, 2)], [1, 1, 2], [0])
    ([[0, 1, 2]], [[-1, 0, 0]])
    """
    n = num_nodes
    if n * (sum(lengths) + 1) < 2**53:
        import numpy as np
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra

        weights = np.array([n * x + 1 for x in lengths], dtype=np.float64)
        tails = np.array([u for u, _ in arcs], dtype=np.int64)
        heads = np.array([v for _, v in arcs], dtype=np.int64)
        graph = csr_matrix((weights, (tails, heads)), shape=(n, n))
        found, pred = dijkstra(
            graph, directed=True, indices=list(sources), return_predecessors=True
        )
        dist: list[list[int | None]] = []
        for lengths_from in found:
            finite = np.isfinite(lengths_from)
            whole = np.where(finite, lengths_from, 0).astype(np.int64) // n
            dist.append(
                [
                    int(x) if ok else None
                    for x, ok in zip(whole.tolist(), finite.tolist(), strict=True)
                ]
            )
        pred = np.where(pred < 0, -1, pred)
        return dist, [list(map(int, back)) for back in pred.tolist()]
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from(
        (u, v, n * x + 1) for (u, v), x in zip(arcs, lengths, strict=True)
    )
    dist, preds = [], []
    for s in sources:
        reach, paths = nx.single_source_dijkstra(graph, s)
        row: list[int | None] = [None] * n
        back = [-1] * n
        for v, x in reach.items():
            row[v] = x // n
            if len(paths[v]) > 1:
                back[v] = paths[v][-2]
        dist.append(row)
        preds.append(back)
    return dist, preds


Column = tuple[int, Any, Any]  # (block, arc numbers, loads): numpy arrays, or tuples of Fractions


class _Columns:
    """The columns so far, each ``(block, arcs, loads)`` (numpy ``int32`` arc numbers
    and ``int64`` loads, or object arrays when a load could pass ``2**62``, or tuples
    of Fractions for the caller's flows), with the data that prices and builds trees."""

    def __init__(
        self,
        num_nodes: int,
        arc_nodes: Sequence[tuple[int, int]],
        source_nodes: Sequence[int],
        sinks: Sequence[Sequence[tuple[int, int]]],
    ) -> None:
        import numpy as np

        self.np = np
        self.n = num_nodes
        self.arc_nodes = arc_nodes
        self.num_arcs = len(arc_nodes)
        keys = np.array([u * num_nodes + v for u, v in arc_nodes], dtype=np.int64)
        self.order = np.argsort(keys).astype(np.int32)
        self.keys = keys[self.order]
        self.source_nodes = np.array(source_nodes, dtype=np.int64)
        self.sinks = sinks
        self.sink_nodes = [np.array([d for d, _ in row], dtype=np.int64) for row in sinks]
        totals = [sum(m for _, m in row) for row in sinks]
        self.dtype: Any = np.int64 if max(totals) < 2**62 else object
        self.sink_loads = [np.array([m for _, m in row], dtype=self.dtype) for row in sinks]
        self.columns: list[Column] = []
        self.known: set[bytes] = set()

    def trees(self, pred: Any, chosen: Sequence[int]) -> list[Column]:
        """The trees of ``pred`` (a predecessor row per source) for the ``chosen`` sources,
        every sink's units added on its path back to the source: vectorised over all."""
        np = self.np
        if not chosen:
            return []
        pred = np.asarray(pred, dtype=np.int64)[list(chosen)]
        row = np.concatenate(
            [np.full(len(self.sink_nodes[i]), k, dtype=np.int64) for k, i in enumerate(chosen)]
        )
        current = np.concatenate([self.sink_nodes[i] for i in chosen])
        amount = np.concatenate([self.sink_loads[i] for i in chosen])
        root = self.source_nodes[list(chosen)][row]
        acc = np.zeros(len(chosen) * self.num_arcs, dtype=self.dtype)
        while current.size:
            up = pred[row, current]
            found = self.order[np.searchsorted(self.keys, up * self.n + current)]
            np.add.at(acc, row * self.num_arcs + found, amount)
            going = up != root
            current, row, amount, root = up[going], row[going], amount[going], root[going]
        acc = acc.reshape(len(chosen), self.num_arcs)
        out = []
        for k, i in enumerate(chosen):
            nonzero = np.flatnonzero(acc[k]).astype(np.int32)
            out.append((i, nonzero, acc[k][nonzero]))
        return out

    def add(self, found: Sequence[Column]) -> list[Column]:
        """The columns of ``found`` not yet known, now known."""
        import hashlib

        fresh = []
        for column in found:
            b, arcs, loads = column
            digest = hashlib.blake2b(
                repr((b, bytes(self.np.asarray(arcs, dtype=self.np.int32)), list(loads))).encode()
                if isinstance(loads, tuple) or loads.dtype == object
                else b"%d|" % b + arcs.tobytes() + loads.tobytes(),
                digest_size=16,
            ).digest()
            if digest not in self.known:
                self.known.add(digest)
                fresh.append(column)
        self.columns.extend(fresh)
        return fresh

    def load(self, j: int) -> tuple[int, dict[int, int | Fraction]]:
        """Column ``j``'s block and exact loads ``{arc number: units}``."""
        b, arcs, loads = self.columns[j]
        values = list(loads) if isinstance(loads, tuple) else loads.tolist()
        return b, dict(zip(self.np.asarray(arcs).tolist(), values, strict=True))


class _Master:
    """The restricted master in HiGHS: rows ``0..B-1`` the sources' convexity rows, then one
    capacity row per arc; column 0 is ``t`` (scaled), then one column per tree.

    Loads enter the float model times ``scale`` (a power of two near ``1 / t``), so the
    model's ``t`` and duals are near 1 whatever the units."""

    def __init__(self, blocks: int, capacity: Sequence[int], scale: float) -> None:
        import highspy
        import numpy as np

        from formulations.solve import silence_banner

        silence_banner()
        self.np = np
        self.highspy = highspy
        self.blocks = blocks
        self.scale = scale
        self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.setOptionValue("threads", 1)
        self.highs.setOptionValue("simplex_strategy", 4)
        inf = highspy.kHighsInf
        rows = blocks + len(capacity)
        lower = np.array([1.0] * blocks + [-inf] * len(capacity))
        upper = np.array([1.0] * blocks + [0.0] * len(capacity))
        empty = np.zeros(rows + 1, dtype=np.int32)
        self.highs.addRows(rows, lower, upper, 0, empty, np.array([], np.int32), np.array([]))
        index = np.arange(blocks, rows, dtype=np.int32)
        values = -np.array(capacity, dtype=np.float64)
        self.highs.addCol(1.0, 0.0, inf, len(capacity), index, values)
        self.rows = rows

    def add(self, columns: Sequence[Column]) -> None:
        """Append ``columns`` (each enters with its block's row and its loads)."""
        np = self.np
        if not columns:
            return
        starts, index, values = [], [], []
        at = 0
        for b, arcs, loads in columns:
            starts.append(at)
            index.append(np.array([b], dtype=np.int32))
            index.append(np.asarray(arcs, dtype=np.int32) + self.blocks)
            values.append(np.ones(1))
            values.append(np.array([float(m) for m in loads]) * self.scale)
            at += 1 + len(arcs)
        k = len(columns)
        self.highs.addCols(
            k,
            np.zeros(k),
            np.zeros(k),
            np.full(k, self.highspy.kHighsInf),
            at,
            np.array(starts, dtype=np.int32),
            np.concatenate(index),
            np.concatenate(values),
        )

    def solve(self, tight: bool = False) -> tuple[list[float], int]:
        """The row duals of the float optimum (in the model's scale) and the simplex
        iterations it took."""
        if tight:
            self.highs.setOptionValue("primal_feasibility_tolerance", TIGHT_TOLERANCE)
            self.highs.setOptionValue("dual_feasibility_tolerance", TIGHT_TOLERANCE)
        self.highs.run()
        status = self.highs.getModelStatus()
        if status != self.highspy.HighsModelStatus.kOptimal:
            raise ReconstructionError(
                "tree column generation: HiGHS stopped with "
                f"{self.highs.modelStatusToString(status)}"
            )
        info = self.highs.getInfo()
        return list(self.highs.getSolution().row_dual), max(info.simplex_iteration_count, 0)

    def basis(self) -> tuple[list[int], list[int]]:
        """The basic columns and the nonbasic rows of the last solve."""
        basis = self.highs.getBasis()
        basic = self.highspy.HighsBasisStatus.kBasic
        columns = [j for j, s in enumerate(basis.col_status) if s == basic]
        rows = [i for i, s in enumerate(basis.row_status) if s != basic]
        return columns, rows


def tree_optimum(
    topology: Topology,
    demand: Demand,
    *,
    start: Mapping[str, Sequence[Mapping[Arc, Fraction | int]]] | None = None,
    time_limit: float | None = None,
) -> DemandOptimum:
    """The exact optimum of ``demand`` on ``topology`` by column generation over trees.

    The same optimum as :func:`optcoll.bounds.demand.demand_optimum` (optimal among all
    fractional routings in which nodes forward without copying or combining), with the
    same certificate (a length function proving the routing's time), from an LP of
    ``N + |links|`` rows: see the module docstring. ``start[s]``: flows of source ``s``
    in bytes (each delivering all of its row, e.g. a baseline's routing) to start from.

    Raises
    ------
    ArgumentError
        ``demand`` is not over ``topology``'s compute nodes in rank order.
    SolverLimitError
        ``time_limit`` seconds or :data:`MAX_ROUNDS` rounds passed first.
    ReconstructionError
        The exact vertex or prices could not be recovered and proved.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.demand import uniform_demand
    >>> topo = load_topology("dgx-a100:1")
    >>> tree_optimum(topo, uniform_demand(topo.compute_nodes)).time_factor
    Fraction(7, 300)
    """
    topology_argument(topology)
    check_demand(topology, demand)
    return tree_optimum_core(topology, demand, start or {}, time_limit)


def tree_optimum_core(
    topology: Topology,
    demand: Demand,
    start: Mapping[str, Sequence[Mapping[Arc, Fraction | int]]],
    time_limit: float | None,
) -> DemandOptimum:
    """The core of :func:`tree_optimum` on checked arguments (public for the schedules'
    use, not in ``__all__``)."""
    begin = time.perf_counter()
    pairs = demand.pairs()
    g = math.gcd(*pairs.values())
    caps, unit = topology.integer_capacities()
    nodes = topology.node_ids
    node = {v: i for i, v in enumerate(nodes)}
    arcs = list(caps)
    arc_of = {(node[u], node[v]): a for a, (u, v) in enumerate(arcs)}
    arc_nodes = list(arc_of)
    capacity = [caps[arc] for arc in arcs]
    rows_of: dict[str, dict[int, int]] = {}
    for (s, d), b in pairs.items():
        rows_of.setdefault(s, {})[node[d]] = b // g
    sources = list(rows_of)
    block = {s: i for i, s in enumerate(sources)}
    source_nodes = [node[s] for s in sources]
    sinks = [list(rows_of[s].items()) for s in sources]
    cut = demand_cut_bound_core(topology, pairs, ())
    estimate = cut.ratio * unit / g  # a lower bound on t in the model's units
    scale = 2.0 ** -round(math.log2(float(estimate))) if estimate > 0 else 1.0
    master = _Master(len(sources), capacity, scale)
    pool = _Columns(len(nodes), arc_nodes, source_nodes, sinks)
    timing = {"lp": 0.0, "pricing": 0.0, "exact": 0.0}
    clock = time.perf_counter()
    for s, flows in start.items():
        for flow in flows:
            used = sorted(
                (arc_of[(node[u], node[v])], Fraction(x) / g) for (u, v), x in flow.items() if x
            )
            master.add(pool.add([(block[s], tuple(a for a, _ in used), tuple(x for _, x in used))]))
    hop = [1] * len(arcs)
    dist, pred = exact_shortest_paths(len(nodes), arc_nodes, hop, source_nodes)
    assert all(dist[i][d] is not None for i, row in enumerate(sinks) for d, _ in row), (
        "a topology's compute nodes reach each other"
    )
    master.add(pool.add(pool.trees(pred, range(len(sources)))))
    timing["pricing"] += time.perf_counter() - clock
    rounds = exact_rounds = iterations = 0
    tight = False
    while True:
        while True:
            rounds += 1
            clock = time.perf_counter()
            duals, its = master.solve(tight)
            iterations += its
            timing["lp"] += time.perf_counter() - clock
            clock = time.perf_counter()
            fresh = pool.add(_price_float(master, pool, duals))
            master.add(fresh)
            timing["pricing"] += time.perf_counter() - clock
            elapsed = time.perf_counter() - begin
            if not fresh:
                break
            if rounds >= MAX_ROUNDS or (time_limit is not None and elapsed > time_limit):
                raise SolverLimitError(
                    f"tree column generation on {topology.name!r} stopped after {rounds} rounds "
                    f"and {elapsed:.1f} s; raise the time limit"
                )
        exact_rounds += 1
        clock = time.perf_counter()
        proof = _exact_finish(master, pool, capacity)
        timing["exact"] += time.perf_counter() - clock
        if isinstance(proof, tuple):
            break
        if proof:
            fresh = pool.add(proof)
            if fresh:
                master.add(fresh)
                continue
        if not tight:  # a float basis not optimal in exact arithmetic: HiGHS once more, tighter
            tight = True
            continue
        raise ReconstructionError(
            f"tree column generation on {topology.name!r}: the exact basis is not proved "
            "optimal and no exact tree prices out"
        )
    t, x, w, bound = proof
    time_scale = Fraction(g) / unit
    routing: dict[str, dict[Arc, Fraction]] = {}
    for j, weight in x.items():
        b, load = pool.load(j)
        flow = routing.setdefault(sources[b], {})
        for a, m in load.items():
            flow[arcs[a]] = flow.get(arcs[a], Fraction(0)) + weight * m * g
    lengths = {arcs[a]: length / unit for a, length in w.items() if length}
    tight_links = tuple(sorted(lengths, key=lambda arc: (-lengths[arc], arc)))
    optimum = t * time_scale
    best = demand_cut_bound_core(topology, pairs, _level_sets(topology, pairs, lengths))
    assert best.ratio <= optimum, "a cut bound above a proved optimum"
    stats = TreeColumnStats(
        rounds,
        exact_rounds,
        len(pool.columns),
        master.rows,
        iterations,
        timing["lp"],
        timing["pricing"],
        timing["exact"],
    )
    return DemandOptimum(
        topology.name,
        demand,
        optimum,
        routing,
        lengths,
        bound * time_scale,
        tight_links,
        best.ratio,
        best.side,
        best.exhaustive,
        None,
        None,
        time.perf_counter() - begin,
        "columns",
        stats.to_dict(),
    )


def _price_float(master: _Master, pool: _Columns, duals: Sequence[float]) -> list[Column]:
    """One float pricing round: the shortest-path trees whose reduced cost is negative."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    blocks = master.blocks
    prices = np.maximum(0.0, -np.array(duals[blocks:], dtype=np.float64))
    positive = prices[prices > 0]
    tiny = 1e-7 * float(positive.min()) if positive.size else 1.0
    tails = np.array([u for u, _ in pool.arc_nodes], dtype=np.int64)
    heads = np.array([v for _, v in pool.arc_nodes], dtype=np.int64)
    graph = csr_matrix((prices + tiny, (tails, heads)), shape=(pool.n, pool.n))
    dist, pred = dijkstra(graph, directed=True, indices=pool.source_nodes, return_predecessors=True)
    chosen = []
    for i, where in enumerate(pool.sink_nodes):
        amounts = pool.sink_loads[i].astype(np.float64)
        cost = float(amounts @ dist[i][where]) * master.scale  # the tie-break only adds
        mu = duals[i]
        if cost < mu - PRICING_TOLERANCE * abs(mu):
            chosen.append(i)
    return pool.trees(pred, chosen)


def _exact_finish(
    master: _Master, pool: _Columns, capacity: Sequence[int]
) -> tuple[Fraction, dict[int, Fraction], dict[int, Fraction], Fraction] | list[Column]:
    """``(t, x, w, L(w))`` proved, or the exact trees that price out (empty: retry).

    ``x``: the basic columns' exact weights (positive ones), ``w``: exact prices on the
    arcs (nonnegative, normalised to ``sum c w = 1``), ``L(w) == t``.
    """
    blocks = master.blocks
    basic, nonbasic_rows = master.basis()
    tight_arcs = [i - blocks for i in nonbasic_rows if i >= blocks]
    tight_set = set(tight_arcs)
    loads = {j - 1: pool.load(j - 1) for j in basic if j}
    unknowns = [("x", j - 1) if j else ("t",) for j in basic]
    equations: list[dict[Any, int | Fraction]] = [{} for _ in range(blocks)]
    rhs: list[int | Fraction] = [1] * blocks
    cap_rows: dict[int, dict[Any, int | Fraction]] = {a: {("t",): -capacity[a]} for a in tight_arcs}
    for j, (b, load) in loads.items():
        equations[b][("x", j)] = 1
        for a, m in load.items():
            if a in tight_set:
                cap_rows[a][("x", j)] = m
    equations.extend(cap_rows.values())
    rhs.extend([0] * len(cap_rows))
    try:
        primal = solve_linear_system(equations, rhs, unknowns)
    except SingularSystemError:
        return []
    t = primal.get(("t",), Fraction(0))
    x = {key[1]: v for key, v in primal.items() if key[0] == "x" and v}
    if t <= 0 or any(v < 0 for v in x.values()):
        return []
    # the duals: reduced cost 0 on every basic column; unknowns the nonbasic rows' duals
    dual_unknowns = [("w", i - blocks) if i >= blocks else ("mu", i) for i in nonbasic_rows]
    present = set(dual_unknowns)
    dual_rows: list[dict[Any, int | Fraction]] = []
    dual_rhs: list[int | Fraction] = []
    if 0 in basic:
        dual_rows.append({("w", a): capacity[a] for a in tight_arcs})
        dual_rhs.append(1)
    for b, load in loads.values():
        row: dict[Any, int | Fraction] = {("w", a): m for a, m in load.items() if a in tight_set}
        if ("mu", b) in present:
            row[("mu", b)] = -1
        dual_rows.append(row)
        dual_rhs.append(0)
    try:
        dual = solve_linear_system(dual_rows, dual_rhs, dual_unknowns)
    except SingularSystemError:
        return []
    w = {key[1]: max(v, Fraction(0)) for key, v in dual.items() if key[0] == "w"}
    norm = sum((capacity[a] * v for a, v in w.items()), Fraction(0))
    if norm <= 0:
        return []
    w = {a: v / norm for a, v in w.items() if v}
    # the routing's feasibility, exactly, on every arc
    load_on = [Fraction(0)] * len(capacity)
    total = [Fraction(0)] * blocks
    for j, weight in x.items():
        b, load = loads[j]
        total[b] += weight
        for a, m in load.items():
            load_on[a] += weight * m
    if any(s != 1 for s in total) or any(
        load_on[a] > t * capacity[a] for a in range(len(capacity))
    ):
        return []
    # the Lagrangian bound of w, exactly
    denominator = math.lcm(*(v.denominator for v in w.values()))
    integral = [int(w.get(a, 0) * denominator) for a in range(len(capacity))]
    dist, pred = exact_shortest_paths(pool.n, pool.arc_nodes, integral, pool.source_nodes.tolist())
    costs = []
    for i, wanted in enumerate(pool.sinks):
        reach = dist[i]
        costs.append(sum(amount * _reached(reach[d]) for d, amount in wanted))
    bound = Fraction(sum(costs), denominator)
    if bound == t:
        return t, x, w, bound
    if bound > t:
        raise ReconstructionError(f"a lower bound {bound} above a feasible routing's time {t}")
    # trees cheaper than every column their source uses now
    share: list[Fraction | None] = [None] * blocks
    for j in x:
        b, load = loads[j]
        cost = sum((w.get(a, Fraction(0)) * m for a, m in load.items()), Fraction(0))
        held = share[b]
        share[b] = cost if held is None else min(held, cost)
    chosen = [
        i for i, held in enumerate(share) if held is None or Fraction(costs[i], denominator) < held
    ]
    return pool.trees(pred, chosen)


def _reached(distance: int | None) -> int:
    """A distance known to be finite (every compute node reaches every other)."""
    assert distance is not None, "a topology's compute nodes reach each other"
    return distance


def _level_sets(
    topology: Topology, pairs: Mapping[tuple[str, str], int], lengths: Mapping[Arc, Fraction]
) -> list[frozenset[str]]:
    """Candidate cuts: the sets of nodes within each distance of a source under ``lengths``,
    and toward each sink, screened in floating point (the best 16 by ratio)."""
    import numpy as np

    nodes = topology.node_ids
    if not lengths:
        return []
    index = {v: i for i, v in enumerate(nodes)}
    arcs = [(index[u], index[v]) for u, v in topology.capacity]
    denominator = math.lcm(*(x.denominator for x in lengths.values()))
    integral = [int(lengths.get(arc, 0) * denominator) for arc in topology.capacity]
    compute = [index[v] for v in topology.compute_nodes]
    reverse = [(v, u) for u, v in arcs]
    forward, _ = exact_shortest_paths(len(nodes), arcs, integral, compute)
    backward, _ = exact_shortest_paths(len(nodes), reverse, integral, compute)
    found: set[frozenset[str]] = set()
    for rows, toward in ((forward, False), (backward, True)):
        for row in rows:
            levels = sorted({x for x in row if x is not None})
            for level in levels[:-1]:
                side = frozenset(
                    nodes[v] for v, x in enumerate(row) if x is not None and x <= level
                )
                found.add(frozenset(nodes) - side if toward else side)
    if len(found) <= 16:
        return sorted(found, key=sorted)
    rank = {v: i for i, v in enumerate(topology.compute_nodes)}
    matrix = np.zeros((len(rank), len(rank)))
    for (s, d), b in pairs.items():
        matrix[rank[s], rank[d]] = b
    scored = []
    for side in found:
        inside = np.array([v in side for v in topology.compute_nodes], dtype=np.float64)
        crossing = float(inside @ matrix @ (1 - inside))
        if crossing:
            scored.append((crossing / float(topology.cut_bandwidth(side)), sorted(side)))
    scored.sort(reverse=True)
    return [frozenset(side) for _, side in scored[:16]]
