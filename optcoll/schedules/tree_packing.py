"""Fractional spanning-arborescence packing by column generation.

On a switch-free directed graph (a direct-connect topology, or the logical
graph left after switch removal) with compute nodes ``V`` and capacities ``c``,
the master LP has one variable ``x_T >= 0`` per spanning arborescence ``T``
rooted at some ``r``:

    minimise t  subject to  sum_{T rooted at r} x_T = 1          for every root r
                            sum_{T ∋ a} x_T <= t * c(a)           for every arc a

Its optimum is the optimal allgather cut ratio r* = max_S |S| / B+(S)
(Edmonds' branching theorem; ForestColl, arXiv 2402.06787), and an optimal
``x`` is an allgather schedule: root ``r`` sends the fraction ``x_T`` of its
shard down tree ``T``.

There are exponentially many arborescences, so the LP is solved over a
growing set of columns (the restricted master,
:func:`formulations.tree_packing.build_tree_master`) by the column-generation
layer that the process groups' tree-column form shares
(:func:`optcoll.lp.column_generation.generate_columns`; this module gives it the
pricing and makes the weights exact its own way).
With the master's duals ``mu_r`` (convexity rows) and ``w_a = -pi_a >= 0``
(capacity rows), the reduced cost of ``T`` is ``w(T) - mu_r``; pricing finds,
for every root, a minimum-``w`` spanning arborescence rooted at ``r``
(Chu-Liu/Edmonds, :func:`optcoll.graph.arborescence.min_cost_arborescence`).
Since ``w`` scaled by ``1 / sum_a c(a) w_a``
is dual feasible, ``sum_r min_T w(T) / sum_a c(a) w_a`` is a lower bound; the
loop stops when the master's ``t`` is within a relative ``tolerance`` of it.

Each pricing round costs ``N`` Edmonds runs, ``O(N |A|)`` each; the number
of rounds is small in practice (tens on 16 nodes).

The final master's weights are then made exact: small-denominator rational
approximations when they already give an optimal packing, otherwise the
vertex itself, solved exactly from HiGHS's final simplex basis
(:func:`optcoll.lp.linear_system.solve_linear_system`) and checked exactly
(``t`` equal to the reconstructed optimum, weights nonnegative, each root's
summing to 1, every load at most ``t * c``). If both fail, rounded float
weights are returned with a positive ``max_overload`` and the reason in
``weights_source``.

Examples
--------
>>> ring = {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1}
>>> result = fractional_tree_packing(["a", "b", "c"], ring)
>>> result.t
Fraction(2, 1)
>>> [(root, arcs, str(w)) for root, arcs, w in result.packing if root == "a"]
[('a', (('a', 'b'), ('b', 'c')), '1')]
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import cast

import networkx as nx
import pulp

from formulations.column_generation import Column as GenericColumn
from formulations.network import Arc
from formulations.solve import simplex_basis
from formulations.tree_packing import Column
from optcoll.core.rational import integer_scaling, reconstruct_cut_ratio
from optcoll.exceptions import ReconstructionError, SingularSystemError, TopologyError
from optcoll.graph.arborescence import Cost, min_cost_arborescence
from optcoll.lp.column_generation import generate_columns
from optcoll.lp.exact import basis_duals
from optcoll.lp.linear_system import solve_linear_system

__all__ = ["fractional_tree_packing", "TreePackingResult", "check_switch_free"]

#: Denominator bounds tried, smallest first, to recover the LP vertex's exact weights.
_WEIGHT_DENOMINATORS = (10**3, 10**6)

#: Relative weight of the 1/capacity tie-break added to the prices in pricing.
TIE_BREAK = 1e-12

#: Common denominator of the fallback weights when the vertex is not recovered exactly.
_WEIGHT_GRID = 2**40


@dataclass(frozen=True)
class TreePackingResult:
    """An optimal fractional arborescence packing.

    Attributes
    ----------
    t : Fraction
        The optimum r* (loads ``<= t * capacity``), reconstructed exactly.
    t_float : float
        The master LP's final float optimum, in the same units.
    packing : tuple of (root, arcs, weight)
        Trees with positive weight; ``arcs`` are ``(u, v)`` pairs sorted in node
        order, ``weight`` a Fraction; each root's weights sum to exactly 1.
    max_overload : Fraction
        ``max_a (load(a) - t * capacity(a))`` clipped at 0, computed exactly for
        the fractional weights (0 when the weights reconstruct to an exact optimum).
    iterations : int
        Pricing rounds.
    columns : int
        Arborescences generated (the initial ones included).
    gap : float
        Final ``t_float - lower bound`` (in the units of ``t``).
    seconds : float
        Wall time.
    weights_source : str
        How the exact weights were obtained: a rational approximation of the
        float weights, the exact solution of the final simplex basis, or (when
        both fail to reach load ``<= t * capacity``) rounded float weights, with
        the reason the basis failed; ``max_overload`` is then positive.
    lower_bound : Fraction or None
        The exact dual bound of the final master's exact duals ``w`` (its
        capacity rows): ``sum_r min_T w(T) / sum_a c(a) w(a)``, a lower bound on
        r* for any ``w >= 0`` (``None`` if the duals were not recovered).
        ``t`` is proved optimal (:attr:`proved`) when it equals ``t`` and
        ``max_overload`` is 0.
    """

    t: Fraction
    t_float: float
    packing: tuple[tuple[str, tuple[Arc, ...], Fraction], ...]
    max_overload: Fraction
    iterations: int
    columns: int
    gap: float
    seconds: float
    weights_source: str
    lower_bound: Fraction | None = None

    @property
    def proved(self) -> bool:
        """Whether ``t`` is proved optimal exactly: attained (no overload) and met by the dual bound."""
        return self.max_overload == 0 and self.lower_bound == self.t


def fractional_tree_packing(
    compute_nodes: Sequence[str],
    capacity: Mapping[Arc, int | Fraction],
    *,
    tolerance: float = 1e-9,
    max_iterations: int = 1000,
    time_limit: float | None = None,
) -> TreePackingResult:
    """Optimal fractional packing of spanning arborescences, one unit per root.

    Parameters
    ----------
    compute_nodes : sequence of str
        The nodes (all of them roots); at least two.
    capacity : Mapping
        ``(u, v) -> positive capacity`` (int or Fraction) on a switch-free
        graph, e.g. a direct-connect ``Topology.capacity`` or a logical graph's.
    tolerance : float
        Relative optimality gap at which column generation stops.
    max_iterations : int
        Pricing rounds before giving up.
    time_limit : float, optional
        Seconds before giving up.

    Returns
    -------
    TreePackingResult

    Raises
    ------
    TopologyError
        An arc leaves the node set, a capacity is not positive, or some root
        cannot reach every node (the message names them).
    SolverLimitError
        If the iteration or time limit is reached before the gap closes.
    ReconstructionError
        If the optimum does not reconstruct to an exact cut ratio.

    Examples
    --------
    A bidirectional ring of four nodes with unit links: three consecutive
    nodes have two links leaving them, so r* = 3/2.

    >>> nodes = ["a", "b", "c", "d"]
    >>> ring = {}
    >>> for u, v in zip(nodes, nodes[1:] + nodes[:1]):
    ...     ring[(u, v)] = ring[(v, u)] = 1
    >>> result = fractional_tree_packing(nodes, ring)
    >>> result.t, result.max_overload
    (Fraction(3, 2), Fraction(0, 1))
    >>> sum(w for root, _, w in result.packing if root == "a")
    Fraction(1, 1)
    """
    start = time.perf_counter()
    nodes = check_switch_free(compute_nodes, capacity)
    caps, unit = integer_scaling(capacity)

    def price(prices: Mapping[Arc, float | Fraction]) -> list[GenericColumn]:
        # Among equally priced trees prefer wide arcs (many prices are 0): add
        # scale / c(a) to every (float) price; the loop's bound is then off by at most
        # scale * (N - 1) / min c, far below its tolerance (the exact bound below is not).
        scale = TIE_BREAK * float(max(prices.values()))
        tie_broken = {arc: float(w) + scale / caps[arc] for arc, w in prices.items()}
        trees = [_min_arborescence(nodes, caps, root, tie_broken) for root in nodes]
        return [
            GenericColumn(i, tuple((arc, 1) for arc in tree), (root, tree))
            for i, (root, tree) in enumerate(zip(nodes, trees, strict=True))
        ]

    run = generate_columns(
        len(nodes),
        caps,
        price,
        tolerance=tolerance,
        max_iterations=max_iterations,
        time_limit=time_limit,
        where="tree-packing column generation",
    )
    t_scaled, master, iterations = run.t_float, run.master, run.iterations
    columns: list[Column] = [cast(Column, column.payload) for column in run.columns]
    gap = max(t_scaled - run.lower, 0.0)  # a negative gap is rounding noise
    result = run.result
    t_exact = reconstruct_cut_ratio(t_scaled, len(nodes))
    weights = [result.values[f"x_{j}"] for j in range(len(columns))]
    packing, overload, source = _exact_weights(nodes, caps, columns, weights, t_exact, master)
    lower_bound = _dual_bound(nodes, caps, master)
    return TreePackingResult(
        t=t_exact / unit,
        t_float=t_scaled / float(unit),
        packing=packing,
        max_overload=overload,  # load - t_s * caps == load - t * capacity: unit-free
        weights_source=source,
        lower_bound=None if lower_bound is None else lower_bound / unit,
        iterations=iterations,
        columns=len(columns),
        gap=gap / float(unit),
        seconds=time.perf_counter() - start,
    )


def check_switch_free(
    compute_nodes: Sequence[str], capacity: Mapping[Arc, int | Fraction]
) -> list[str]:
    """The node list, after checking the graph is switch-free and strongly connected.

    Raises :class:`~optcoll.exceptions.TopologyError` naming the offending
    node or arc: fewer than two nodes, a duplicate, an arc leaving the node
    set, a self-loop, or a node that cannot reach another.

    Examples
    --------
    >>> check_switch_free(["a", "b"], {("a", "b"): 1, ("b", "a"): 1})
    ['a', 'b']
    """
    nodes = list(compute_nodes)
    if len(nodes) < 2:
        raise TopologyError(f"tree packing needs at least 2 compute nodes, got {len(nodes)}")
    if len(set(nodes)) != len(nodes):
        duplicate = next(v for v in nodes if nodes.count(v) > 1)
        raise TopologyError(f"compute node {duplicate!r} is listed twice")
    member = set(nodes)
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    for u, v in capacity:
        for end in (u, v):
            if end not in member:
                raise TopologyError(
                    f"arc ({u!r}, {v!r}) has endpoint {end!r}, which is not a compute node; "
                    f"this model needs a switch-free graph (remove switches first: "
                    f"optcoll.graph.splitting.split_switches)"
                )
        if u == v:
            raise TopologyError(f"arc ({u!r}, {v!r}) is a self-loop")
        graph.add_edge(u, v)
    for root in nodes:
        missing = member - nx.descendants(graph, root) - {root}
        if missing:
            other = next(v for v in nodes if v in missing)
            raise TopologyError(f"compute node {root!r} cannot reach compute node {other!r}")
    return nodes


def _min_arborescence(
    nodes: Sequence[str], caps: Mapping[Arc, int], root: str, price: Mapping[Arc, Cost]
) -> tuple[Arc, ...]:
    """A minimum-price spanning arborescence rooted at ``root``, arcs in node order."""
    tree = min_cost_arborescence(nodes, {arc: price[arc] for arc in caps}, root)
    order = {v: i for i, v in enumerate(nodes)}
    return tuple(sorted(tree, key=lambda arc: (order[arc[0]], order[arc[1]])))


def _exact_weights(
    nodes: Sequence[str],
    caps: Mapping[Arc, int],
    columns: Sequence[Column],
    weights: Sequence[float],
    t: Fraction,
    master: pulp.LpProblem,
) -> tuple[tuple[tuple[str, tuple[Arc, ...], Fraction], ...], Fraction, str]:
    """Exact weights for the master's final vertex: ``(packing, overload, source)``.

    Tries, in order: best rational approximations of the float weights with
    small denominators, normalised per root (cheap, exact on small instances);
    the exact solution of the final simplex basis system
    (:func:`_basis_vertex`); and, if neither gives a packing with load at most
    ``t * caps``, weights on the grid ``1 / 2**40`` (the rounding error moved
    onto each root's largest weight). The last keeps whichever candidate
    overloads least and says in ``source`` why the basis failed.
    """
    candidates = []
    for bound in _WEIGHT_DENOMINATORS:
        rational = [Fraction(x).limit_denominator(bound) if x > 0 else Fraction(0) for x in weights]
        packing = _normalised(nodes, columns, rational, divide=True)
        overload = _overload(caps, packing, t)
        if overload == 0:
            return packing, overload, f"rational approximation (denominators <= {bound})"
        candidates.append((packing, overload))
    vertex = _basis_vertex(nodes, caps, columns, t, master)
    if isinstance(vertex, tuple):
        return vertex, Fraction(0), "exact solution of the final simplex basis"
    grid = [
        Fraction(round(x * _WEIGHT_GRID), _WEIGHT_GRID) if x > 0 else Fraction(0) for x in weights
    ]
    packing = _normalised(nodes, columns, grid, divide=False)
    candidates.append((packing, _overload(caps, packing, t)))
    packing, overload = min(candidates, key=lambda candidate: candidate[1])
    return packing, overload, f"rounded float weights ({vertex})"


def _dual_bound(
    nodes: Sequence[str], caps: Mapping[Arc, int], master: pulp.LpProblem
) -> Fraction | None:
    """``sum_r min_T w(T) / sum_a caps[a] w(a)`` for the master's exact capacity duals ``w``.

    For any ``w >= 0`` with ``sum caps * w > 0``, ``w / sum caps * w`` with
    ``mu_r = min_T w(T)`` is feasible for the dual of the full (all-trees) LP,
    so the value is an exact lower bound on its optimum. ``None`` if the exact
    duals are not recovered or all vanish.
    """
    try:
        duals = basis_duals(master)
    except ReconstructionError:
        return None
    prices = {arc: max(-duals[f"cap_{a}"], Fraction(0)) for a, arc in enumerate(caps)}
    priced = sum(c * prices[arc] for arc, c in caps.items())
    if priced <= 0:
        return None
    cheapest = Fraction(0)
    for root in nodes:  # exact prices, so the exact cheapest tree
        for arc in _min_arborescence(nodes, caps, root, prices):
            cheapest += prices[arc]
    return cheapest / priced


def _overload(
    caps: Mapping[Arc, int], packing: Sequence[tuple[str, tuple[Arc, ...], Fraction]], t: Fraction
) -> Fraction:
    """``max_a (load(a) - t * caps[a])`` clipped at 0, exactly."""
    load: dict[Arc, Fraction] = dict.fromkeys(caps, Fraction(0))
    for _, arcs, w in packing:
        for arc in arcs:
            load[arc] += w
    return max(max(load[arc] - t * c for arc, c in caps.items()), Fraction(0))


def _basis_vertex(
    nodes: Sequence[str],
    caps: Mapping[Arc, int],
    columns: Sequence[Column],
    t: Fraction,
    master: pulp.LpProblem,
) -> tuple[tuple[str, tuple[Arc, ...], Fraction], ...] | str:
    """The master's final vertex solved exactly from its simplex basis, or why not.

    Nonbasic variables are 0 and nonbasic rows tight, which leaves a square
    system for the basic variables (:func:`solve_linear_system`). The result is
    accepted only if it is an optimal packing for ``t``, checked exactly: its
    ``t`` equals ``t``, weights are nonnegative, each root's sum to 1 and every
    arc's load is at most ``t * caps``. Otherwise the reason is returned.
    """
    basis = simplex_basis(master)
    if basis is None:
        return "HiGHS kept no simplex basis"
    if basis.at_upper:
        return f"variable {min(basis.at_upper)} is nonbasic at an upper bound"
    root_index = {r: i for i, r in enumerate(nodes)}
    rows: dict[str, dict[str, int]] = {f"block_{i}": {} for i in range(len(nodes))}
    rhs: dict[str, int] = dict.fromkeys(rows, 1)
    arc_row = {arc: f"cap_{a}" for a, arc in enumerate(caps)}
    for arc, c in caps.items():
        rows[arc_row[arc]] = {"t": -c}
        rhs[arc_row[arc]] = 0
    for j, (root, arcs) in enumerate(columns):
        rows[f"block_{root_index[root]}"][f"x_{j}"] = 1
        for arc in arcs:
            rows[arc_row[arc]][f"x_{j}"] = 1
    tight = [name for name in rows if name not in basis.basic_constraints]
    unknowns = sorted(basis.basic_variables, key=lambda v: (v != "t", len(v), v))
    basic = set(unknowns)
    equations = [{v: c for v, c in rows[name].items() if v in basic} for name in tight]
    try:
        solution = solve_linear_system(equations, [rhs[name] for name in tight], unknowns)
    except SingularSystemError as err:
        return f"basis system not solvable exactly: {err}"
    t_vertex = solution.get("t", Fraction(0))
    if t_vertex != t:
        return f"basis vertex has t = {t_vertex}, not the optimum {t}"
    weights = [solution.get(f"x_{j}", Fraction(0)) for j in range(len(columns))]
    negative = next((j for j, w in enumerate(weights) if w < 0), None)
    if negative is not None:
        return f"basis vertex gives column x_{negative} weight {weights[negative]} < 0"
    packing = tuple(  # grouped by root in node order, as _normalised does
        (root, arcs, w)
        for r in nodes
        for (root, arcs), w in zip(columns, weights, strict=True)
        if root == r and w > 0
    )
    totals = dict.fromkeys(nodes, Fraction(0))
    for root, _, w in packing:
        totals[root] += w
    short = next((r for r in nodes if totals[r] != 1), None)
    if short is not None:
        return f"basis vertex gives root {short!r} weights summing to {totals[short]}, not 1"
    overload = _overload(caps, packing, t)
    if overload > 0:
        return f"basis vertex overloads an arc by {overload}"
    return packing


def _normalised(
    nodes: Sequence[str], columns: Sequence[Column], weights: Sequence[Fraction], *, divide: bool
) -> tuple[tuple[str, tuple[Arc, ...], Fraction], ...]:
    """Positive weights per root made to sum to exactly 1: divided by their total, or
    with the difference added to the root's largest weight (keeps a common denominator)."""
    by_root: dict[str, list[list]] = {r: [] for r in nodes}
    for (root, arcs), w in zip(columns, weights, strict=True):
        if w > 0:
            by_root[root].append([arcs, w])
    packing: list[tuple[str, tuple[Arc, ...], Fraction]] = []
    for root in nodes:
        trees = by_root[root]
        assert trees, f"root {root!r} lost all its trees in rounding"
        total = sum(w for _, w in trees)
        if divide:
            for tree in trees:
                tree[1] = tree[1] / total
        else:
            largest = max(range(len(trees)), key=lambda i: trees[i][1])
            trees[largest][1] += 1 - total
        packing.extend((root, arcs, w) for arcs, w in trees if w > 0)
    return tuple(packing)
