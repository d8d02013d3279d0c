"""Column generation for packing LPs, finished and proved in exact arithmetic.

The LP has blocks ``b = 0 .. B-1`` (each must receive one unit of columns), arcs
``a`` with integer capacities ``c(a)``, and columns ``J``, each belonging to one
block and loading arc ``a`` with a nonnegative integer ``m_J(a)``:

    minimise t  subject to  sum_{J of block b} x_J = 1      for every block b
                            sum_J m_J(a) x_J <= t * c(a)     for every arc a,   x >= 0.

There may be exponentially many columns (spanning trees, trees of paths), so
the LP is solved over a growing set (the restricted master,
:func:`build_master`). With the master's duals ``w_a = -pi_a >= 0`` on the
capacity rows and ``mu_b`` on the block rows, a column's reduced cost is
``sum_a m_J(a) w_a - mu_b``; the **pricing oracle** returns, for given prices
``w``, one cheapest column of every block. For any ``w >= 0`` with
``sum_a c(a) w_a > 0``, ``(w, mu_b = min_J w(J)) / sum_a c(a) w_a`` is feasible
for the dual of the full LP, so

    L(w) = sum_b min_{J of b} w(J) / sum_a c(a) w_a  <=  t*.            (Lagrangian bound)

The loop runs on floats until no column prices out (or ``L`` is within a
relative ``tolerance`` of the master's ``t``). It then finishes exactly: the
final master's vertex and duals are recovered from HiGHS's basis as fractions
and proved optimal for the master by exact LP duality
(:func:`optcoll.lp.exact.proved_solution`), and the oracle is called with
the exact prices ``w``: if the exact ``L(w)`` equals the master's exact ``t``,
then ``t`` is the optimum of the full LP (the master's vertex is feasible for
it and ``L`` bounds it from below). Otherwise the exact oracle's columns with
negative reduced cost join the master and the loop goes on. So the result is
exact and proved whenever the oracle is exact on Fraction prices; the floats
only steer.

Nothing here knows what a column is: :class:`~formulations.column_generation.Column` carries its load and an
opaque ``payload`` (a tree, a tree of paths) for the caller.

Examples
--------
>>> from formulations.column_generation import Column

Two blocks on two parallel arcs of capacity 1 and 2; each block's columns are
single arcs (block 0 may use either, block 1 only ``("a", "b")``):

>>> arcs = {("a", "b"): 1, ("a", "c"): 2}
>>> def cheapest(prices):
...     best = min(arcs, key=lambda arc: prices[arc])
...     return [Column(0, ((best, 1),), best), Column(1, ((("a", "b"), 1),), ("a", "b"))]
>>> result = column_generation(2, arcs, cheapest)
>>> result.t, result.proved
(Fraction(1, 1), True)
>>> [(column.block, column.payload, str(x)) for column, x in result.weights]
[(0, ('a', 'c'), '1'), (1, ('a', 'b'), '1')]
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import pulp

from formulations.column_generation import Column, build_master
from formulations.network import check_capacity
from formulations.solve import LpResult, solve
from optcoll.exceptions import MethodError, ReconstructionError, SolverLimitError
from optcoll.lp.exact import proved_solution, solve_proved

__all__ = [
    "Pricing",
    "ColumnPacking",
    "column_generation",
    "Generation",
    "generate_columns",
    "column_cost",
]

Arc = tuple[str, str]


#: The pricing oracle: prices ``w`` of every arc (floats, or Fractions for the exact check)
#: -> one cheapest column of every block, in block order. With Fractions it must be exact.
Pricing = Callable[[Mapping[Arc, float | Fraction]], Sequence[Column]]


def column_cost(column: Column, prices: Mapping[Arc, float | Fraction]) -> float | Fraction:
    """``sum_a m(a) w(a)`` over the column's load (arcs without a price cost 0).

    Examples
    --------
    >>> column_cost(Column(0, ((("a", "b"), 2),)), {("a", "b"): Fraction(1, 3)})
    Fraction(2, 3)
    """
    return sum((m * prices.get(arc, 0) for arc, m in column.load), Fraction(0))


@dataclass(frozen=True)
class ColumnPacking:
    """The solved LP, exact and proved.

    Attributes
    ----------
    t : Fraction
        The exact optimum (in the units of the integer capacities).
    weights : tuple of (Column, Fraction)
        The columns with positive weight at the proved vertex; each block's sum to 1,
        and ``sum m_J(a) x_J <= t * c(a)`` on every arc.
    prices : dict
        The exact capacity-row duals ``w_a >= 0``, normalised to ``sum_a c(a) w_a = 1``,
        nonzero entries only: by complementary slackness only full arcs carry them.
    lower_bound : Fraction
        ``L(w)`` of the exact prices (module docstring); equal to ``t``: the proof.
    t_float : float
        HiGHS's float optimum of the final master.
    iterations, columns : int
        Pricing rounds and columns generated.
    seconds : float
        Wall time.
    """

    t: Fraction
    weights: tuple[tuple[Column, Fraction], ...]
    prices: dict[Arc, Fraction]
    lower_bound: Fraction
    t_float: float
    iterations: int
    columns: int
    seconds: float

    @property
    def proved(self) -> bool:
        """Whether the Lagrangian bound of the exact prices meets ``t`` (always, once built)."""
        return self.lower_bound == self.t


def column_generation(
    blocks: int,
    capacity: Mapping[Arc, int],
    price: Pricing,
    *,
    columns: Sequence[Column] = (),
    tolerance: float = 1e-9,
    max_iterations: int = 1000,
    time_limit: float | None = None,
    where: str = "column generation",
) -> ColumnPacking:
    """Solve the packing LP by column generation and prove its optimum exactly.

    Parameters
    ----------
    blocks : int
        Number of blocks (each gets one unit of columns).
    capacity : Mapping
        ``arc -> positive integer capacity`` (at most 2**53, so floats hold it exactly).
    price : Pricing
        The oracle: one cheapest column per block under the given prices. Without
        starting ``columns`` the first call gets ``1 / c(a)`` (short, wide columns).
    columns : sequence of Column
        Starting columns (e.g. several per block, to save rounds); default none.
    tolerance : float
        Relative reduced cost (and gap) below which the float rounds stop.
    max_iterations : int
        Pricing rounds before giving up.
    time_limit : float, optional
        Seconds before giving up.
    where : str
        The model's name in error messages.

    Raises
    ------
    MethodError
        A capacity that is not a positive integer within 2**53, a column of an unknown
        block or arc, or an oracle that returns the wrong number of columns.
    SolverLimitError
        If ``max_iterations`` or ``time_limit`` is reached first.
    ReconstructionError
        If the final master's exact vertex or duals are not recovered and proved.
    """
    start = time.perf_counter()
    columns = list(columns)
    while True:
        run = generate_columns(
            blocks,
            capacity,
            price,
            columns,
            tolerance=tolerance,
            max_iterations=max_iterations,
            time_limit=time_limit,
            where=where,
        )
        proof = _exact_finish(blocks, capacity, run.columns, run.master, run.cheapest, where)
        if isinstance(proof, ColumnPacking):
            return ColumnPacking(
                proof.t,
                proof.weights,
                proof.prices,
                proof.lower_bound,
                run.t_float,
                run.iterations,
                len(run.columns),
                time.perf_counter() - start,
            )
        fresh = [column for column in proof if column not in set(run.columns)]
        if not fresh:
            raise ReconstructionError(
                f"{where}: the exact prices show a cheaper column that is already in the master"
            )
        columns = [*run.columns, *fresh]


@dataclass(frozen=True)
class Generation:
    """The float column generation's end: the last master (just solved) and its columns.

    ``result`` is HiGHS's solve of ``master``; ``lower`` the Lagrangian bound of its
    float prices over the oracle's columns, ``t_float - lower`` the final gap;
    ``cheapest`` the checked oracle (one column per block).
    """

    columns: list[Column]
    master: pulp.LpProblem
    result: LpResult
    t_float: float
    lower: float
    iterations: int
    cheapest: Pricing


def generate_columns(
    blocks: int,
    capacity: Mapping[Arc, int],
    price: Pricing,
    columns: Sequence[Column] = (),
    *,
    tolerance: float = 1e-9,
    max_iterations: int = 1000,
    time_limit: float | None = None,
    where: str = "column generation",
) -> Generation:
    """The float rounds of :func:`column_generation`, from ``columns`` (default none).

    Without starting columns the oracle is first called with ``1 / c(a)``. Each
    round solves the master and adds the oracle's columns with reduced cost below
    ``-tolerance * t``; it stops when there is none or the master's ``t`` is
    within that of the Lagrangian bound. The master's objective is scaled by a power
    of two near ``1 / t`` (from the previous round; a round solved far from it is
    solved again), so that its duals are near 1 whatever the capacities' units. Nothing is exact yet: callers finish with
    the exact vertex and duals of :attr:`Generation.master`.

    Raises
    ------
    MethodError, SolverLimitError
        As :func:`column_generation`.

    Examples
    --------
    >>> from formulations.column_generation import Column
    >>> run = generate_columns(1, {("a", "b"): 4}, lambda w: [Column(0, ((("a", "b"), 1),))])
    >>> run.t_float, run.iterations, len(run.columns)
    (0.25, 1, 1)
    """
    start = time.perf_counter()
    try:
        check_capacity({node for arc in capacity for node in arc}, capacity)
    except MethodError as err:
        raise MethodError(f"{where}: {err}") from None
    pool: list[Column] = []
    known: set[Column] = set()

    def cheapest(prices: Mapping[Arc, float | Fraction]) -> Sequence[Column]:
        found = price(prices)
        if len(found) != blocks or any(c.block != b for b, c in enumerate(found)):
            raise MethodError(
                f"{where}: the pricing oracle must return one column per block in block order "
                f"({blocks} blocks), got blocks {[c.block for c in found]}"
            )
        return found

    def add(candidates: Sequence[Column]) -> int:
        added = 0
        for column in candidates:
            if not 0 <= column.block < blocks or any(arc not in capacity for arc, _ in column.load):
                raise MethodError(f"{where}: column {column!r} names an unknown block or arc")
            if column not in known:
                known.add(column)
                pool.append(column)
                added += 1
        return added

    add(columns if columns else cheapest({arc: 1 / c for arc, c in capacity.items()}))
    iterations = 0
    scale = 1.0  # the master's objective is scale * t (build_master): duals near 1
    while True:
        iterations += 1
        master = build_master(blocks, capacity, pool, scale=scale)
        result = solve(master)
        t_float = result.objective / scale
        duals = {name: value / scale for name, value in result.duals.items()}
        prices = {arc: max(0.0, -duals[f"cap_{a}"]) for a, arc in enumerate(capacity)}
        priced = sum(c * prices[arc] for arc, c in capacity.items())
        best = cheapest(prices)
        costs = [float(column_cost(column, prices)) for column in best]
        lower = sum(costs) / priced if priced else 0.0
        slack = tolerance * t_float  # the block duals sum to t: reduced costs scale with it
        negative = [
            column
            for column, cost in zip(best, costs, strict=True)
            if cost - duals[f"block_{column.block}"] < -slack
        ]
        solved_at = scale
        if t_float > 0:
            scale = 2.0 ** -round(math.log2(t_float))
        if abs(math.log2(scale / solved_at)) > 8:  # duals far from 1: solve again, rescaled
            add(negative)
        elif not negative or t_float - lower <= slack or not add(negative):
            return Generation(pool, master, result, t_float, lower, iterations, cheapest)
        elapsed = time.perf_counter() - start
        if iterations >= max_iterations or (time_limit is not None and elapsed > time_limit):
            raise SolverLimitError(
                f"{where}: column generation stopped after {iterations} rounds and {elapsed:.1f} s "
                f"(t = {t_float}, bound {lower}); raise max_iterations or time_limit, "
                f"or loosen tolerance"
            )


def _exact_finish(
    blocks: int,
    capacity: Mapping[Arc, int],
    columns: Sequence[Column],
    master: pulp.LpProblem,
    price: Pricing,
    where: str,
) -> ColumnPacking | list[Column]:
    """The proved result, or the exact oracle's columns that still price out.

    The master (just solved) is proved optimal exactly; then the exact prices
    ``w`` go to the oracle: ``L(w) == t`` proves the full LP's optimum.
    """
    name = f"{where} (restricted master, {len(columns)} columns)"
    try:
        proved = proved_solution(master, name)
    except ReconstructionError:
        proved = solve_proved(master, name)
    primal, dual = proved.primal, proved.dual
    t = primal["t"]
    prices = {arc: -dual.get(f"cap_{a}", Fraction(0)) for a, arc in enumerate(capacity)}
    priced = sum(capacity[arc] * w for arc, w in prices.items())
    if priced <= 0:
        raise ReconstructionError(f"{name}: the capacity rows' duals are all zero")
    cheapest = price(prices)
    costs = [Fraction(column_cost(column, prices)) for column in cheapest]
    lower = sum(costs, Fraction(0)) / priced
    if lower != t:
        return [
            column
            for column, cost in zip(cheapest, costs, strict=True)
            if cost < dual[f"block_{column.block}"]
        ]
    weights = tuple(
        (column, primal[f"x_{j}"])
        for j, column in enumerate(columns)
        if primal.get(f"x_{j}", Fraction(0)) > 0
    )
    _check_packing(blocks, capacity, weights, t, name)
    normalised = {arc: w / priced for arc, w in prices.items() if w}
    return ColumnPacking(t, weights, normalised, lower, 0.0, 0, 0, 0.0)


def _check_packing(
    blocks: int,
    capacity: Mapping[Arc, int],
    weights: Sequence[tuple[Column, Fraction]],
    t: Fraction,
    where: str,
) -> None:
    """Every block's weights sum to 1 and every arc's load is at most ``t * c``, exactly."""
    total = [Fraction(0)] * blocks
    load: dict[Arc, Fraction] = {}
    for column, x in weights:
        total[column.block] += x
        for arc, m in column.load:
            load[arc] = load.get(arc, Fraction(0)) + m * x
    short = next((b for b in range(blocks) if total[b] != 1), None)
    if short is not None:
        raise ReconstructionError(f"{where}: block {short}'s weights sum to {total[short]}, not 1")
    over = next((arc for arc, x in load.items() if x > t * capacity[arc]), None)
    if over is not None:
        raise ReconstructionError(f"{where}: arc {over!r} carries {load[over]} > t * c")
