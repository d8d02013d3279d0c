"""An LP's optimal vertex and its dual, exactly, and the exact proof that they are optimal.

The models of :mod:`formulations` are solved in floating point; this module
brings their optimum back to fractions and proves it, so that every LP-based
optimum optcoll reports is exact.

HiGHS reports a vertex in floating point, but the vertex is the unique solution
of its basis: nonbasic variables at a bound, nonbasic rows at their bound, and
the basic variables from the square system that leaves (``B x_B = b - N x_N``).
The dual is the solution of the transposed system (``B^T y = c_B``, with ``y = 0``
on basic rows). For a model whose coefficients and bounds are integers (or any
floats that are exact binary fractions) both systems are solved exactly by
:func:`optcoll.lp.linear_system.solve_linear_system`.

:func:`check_optimality` then proves optimality by LP duality, in exact
arithmetic and without trusting the solver: every row and bound holds for ``x``
(primal feasibility), every reduced cost and row dual has the sign the model's
sense requires (dual feasibility), and the two objectives are equal (no duality
gap). Both vertex and dual come from the same basis, but the check uses neither
the basis nor the solver: any exact pair ``(x, y)`` that passes is optimal.

Examples
--------
>>> import pulp
>>> from formulations.solve import solve
>>> model = pulp.LpProblem("tiny", pulp.LpMinimize)
>>> x = model.add_variable("x", lowBound=0)
>>> y = model.add_variable("y", lowBound=0)
>>> model.setObjective(pulp.LpAffineExpression([(x, 1.0), (y, 2.0)]))
>>> model.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression([(x, 3.0), (y, 1.0)]),
...                                       pulp.LpConstraintGE, rhs=1.0), "demand")
>>> _ = solve(model)
>>> primal, dual = basis_vertex(model), basis_duals(model)
>>> primal, dual
({'x': Fraction(1, 3), 'y': Fraction(0, 1)}, {'demand': Fraction(1, 3)})
>>> check_optimality(model, primal, dual) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import pulp

from formulations.solve import LpResult, simplex_basis, solve
from optcoll.exceptions import ReconstructionError, SingularSystemError
from optcoll.lp.linear_system import solve_linear_system

__all__ = [
    "basis_vertex",
    "basis_duals",
    "check_optimality",
    "objective_value",
    "ProvedSolution",
    "ProvedSolve",
    "proved_solution",
    "solve_proved",
    "TIGHT_TOLERANCE",
]

#: HiGHS's feasibility tolerance for the second attempt of :func:`solve_proved`.
TIGHT_TOLERANCE = 1e-10


def _bounds(variable: pulp.LpVariable) -> tuple[Fraction | None, Fraction | None]:
    low = None if variable.lowBound is None else Fraction(variable.lowBound)
    high = None if variable.upBound is None else Fraction(variable.upBound)
    return low, high


def _row(constraint: pulp.LpConstraint) -> tuple[dict[str, Fraction], Fraction]:
    """``({variable: coefficient}, rhs)`` of ``sum coefficient * variable (sense) rhs``."""
    return {v.name: Fraction(c) for v, c in constraint.items()}, -Fraction(constraint.constant)


def basis_vertex(problem: pulp.LpProblem) -> dict[str, Fraction]:
    """The exact vertex of HiGHS's final basis on ``problem`` (just solved).

    Returns every variable's exact value by name.

    Raises
    ------
    ReconstructionError
        If the vertex is not recovered (no basis kept, a nonbasic variable without
        a finite bound, a singular system); the message says why.

    Examples
    --------
    >>> import pulp
    >>> from formulations.solve import solve
    >>> model = pulp.LpProblem("tiny", pulp.LpMaximize)
    >>> x = model.add_variable("x", lowBound=0, upBound=2)
    >>> model.setObjective(pulp.LpAffineExpression([(x, 1.0)]))
    >>> _ = solve(model)
    >>> basis_vertex(model)
    {'x': Fraction(2, 1)}
    """
    basis = simplex_basis(problem)
    if basis is None:
        raise ReconstructionError("the exact vertex was not recovered: HiGHS kept no simplex basis")
    values: dict[str, Fraction] = {}
    for variable in problem.variables():
        if variable.name in basis.basic_variables:
            continue
        low, high = _bounds(variable)
        bound = high if variable.name in basis.at_upper else low
        if bound is None:
            raise ReconstructionError(
                f"the exact vertex was not recovered: nonbasic variable {variable.name} has no finite bound"
            )
        values[variable.name] = bound
    equations, rhs = [], []
    for constraint in problem.constraints():
        if constraint.name in basis.basic_constraints:
            continue
        row, b = _row(constraint)
        equations.append({v: c for v, c in row.items() if v in basis.basic_variables})
        rhs.append(b - sum(c * values[v] for v, c in row.items() if v in values))
    unknowns = [v.name for v in problem.variables() if v.name in basis.basic_variables]
    try:
        values.update(solve_linear_system(equations, rhs, unknowns))
    except SingularSystemError as err:
        raise ReconstructionError(
            f"the exact vertex was not recovered: basis system not solvable exactly: {err}"
        ) from None
    return {v.name: values[v.name] for v in problem.variables()}


def basis_duals(problem: pulp.LpProblem) -> dict[str, Fraction]:
    """The exact row duals of HiGHS's final basis on ``problem`` (just solved).

    ``y`` solves ``sum_i A[i][j] y_i = c_j`` for every basic column ``j``, with
    ``y_i = 0`` on basic rows, so that the reduced costs ``c - A^T y`` vanish on
    the basis. Returned by constraint name.

    Raises
    ------
    ReconstructionError
        If the duals are not recovered (no basis kept, a singular system).

    Examples
    --------
    >>> import pulp
    >>> from formulations.solve import solve
    >>> model = pulp.LpProblem("tiny", pulp.LpMinimize)
    >>> x = model.add_variable("x", lowBound=0)
    >>> model.setObjective(pulp.LpAffineExpression([(x, 3.0)]))
    >>> model.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression([(x, 2.0)]),
    ...                                       pulp.LpConstraintGE, rhs=1.0), "need")
    >>> _ = solve(model)
    >>> basis_duals(model)
    {'need': Fraction(3, 2)}
    """
    basis = simplex_basis(problem)
    if basis is None:
        raise ReconstructionError("the exact duals were not recovered: HiGHS kept no simplex basis")
    cost = {v.name: Fraction(c) for v, c in problem.objective.items()}
    columns: dict[str, dict[str, Fraction]] = {name: {} for name in basis.basic_variables}
    tight = []
    for constraint in problem.constraints():
        if constraint.name in basis.basic_constraints:
            continue
        tight.append(constraint.name)
        for variable, c in constraint.items():
            if variable.name in columns:
                columns[variable.name][constraint.name] = Fraction(c)
    names = sorted(columns)
    try:
        solution = solve_linear_system(
            [columns[j] for j in names], [cost.get(j, Fraction(0)) for j in names], tight
        )
    except SingularSystemError as err:
        raise ReconstructionError(
            f"the exact duals were not recovered: dual basis system not solvable exactly: {err}"
        ) from None
    return {c.name: solution.get(c.name, Fraction(0)) for c in problem.constraints()}


def objective_value(problem: pulp.LpProblem, values: Mapping[str, Fraction]) -> Fraction:
    """The exact objective of ``problem`` at ``values`` (missing variables count as 0)."""
    total = Fraction(problem.objective.constant or 0)
    for variable, c in problem.objective.items():
        total += Fraction(c) * values.get(variable.name, Fraction(0))
    return total


def check_optimality(
    problem: pulp.LpProblem, primal: Mapping[str, Fraction], dual: Mapping[str, Fraction]
) -> str | None:
    """``None`` if ``primal`` is optimal for ``problem`` as proved by ``dual``, else why not.

    Exact LP duality: ``primal`` satisfies every row and bound, ``dual`` has the
    right sign on every row (for a minimisation ``>=`` for ``>=`` rows and
    ``<=`` for ``<=`` rows; reversed for a maximisation), every reduced cost
    ``d_j = c_j - sum_i A[i][j] y_i`` is bounded by the variable's finite bounds
    (a variable without a lower bound needs ``d_j <= 0`` in a minimisation,
    without an upper bound ``d_j >= 0``), and the dual objective
    ``sum_i b_i y_i + sum_j (bound part of d_j)`` equals the primal objective.

    Examples
    --------
    >>> import pulp
    >>> model = pulp.LpProblem("tiny", pulp.LpMinimize)
    >>> x = model.add_variable("x", lowBound=0)
    >>> model.setObjective(pulp.LpAffineExpression([(x, 1.0)]))
    >>> model.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression([(x, 1.0)]),
    ...                                       pulp.LpConstraintGE, rhs=2.0), "need")
    >>> check_optimality(model, {"x": Fraction(2)}, {"need": Fraction(1)}) is None
    True
    >>> check_optimality(model, {"x": Fraction(3)}, {"need": Fraction(1)})
    'duality gap: primal objective 3, dual objective 2'
    """
    sign = 1 if problem.sense == pulp.LpMinimize else -1
    reduced = {v.name: Fraction(0) for v in problem.variables()}
    for variable, c in problem.objective.items():
        reduced[variable.name] = Fraction(c)
    dual_objective = Fraction(problem.objective.constant or 0)
    for constraint in problem.constraints():
        row, b = _row(constraint)
        activity = sum((c * primal.get(v, Fraction(0)) for v, c in row.items()), Fraction(0))
        sense = constraint.sense
        if (sense == pulp.LpConstraintEQ and activity != b) or (
            (sense == pulp.LpConstraintLE and activity > b)
            or (sense == pulp.LpConstraintGE and activity < b)
        ):
            return f"row {constraint.name} is violated: activity {activity}, bound {b}"
        y = dual.get(constraint.name, Fraction(0))
        if sense != pulp.LpConstraintEQ and sign * y * sense < 0:
            return f"row {constraint.name} has a dual {y} of the wrong sign"
        dual_objective += b * y
        for v, c in row.items():
            reduced[v] -= c * y
    for variable in problem.variables():
        low, high = _bounds(variable)
        x = primal.get(variable.name, Fraction(0))
        if (low is not None and x < low) or (high is not None and x > high):
            return f"variable {variable.name} = {x} is outside its bounds [{low}, {high}]"
        d = sign * reduced[variable.name]  # the reduced cost as in a minimisation
        if d > 0:
            if low is None:
                return f"variable {variable.name} has reduced cost {d} but no lower bound"
            dual_objective += reduced[variable.name] * low
        elif d < 0:
            if high is None:
                return f"variable {variable.name} has reduced cost {d} but no upper bound"
            dual_objective += reduced[variable.name] * high
    primal_objective = objective_value(problem, primal)
    if primal_objective != dual_objective:
        return f"duality gap: primal objective {primal_objective}, dual objective {dual_objective}"
    return None


@dataclass(frozen=True)
class ProvedSolution:
    """An LP's exact optimal vertex and duals, proved optimal by :func:`check_optimality`.

    Attributes
    ----------
    primal : dict
        Every variable's exact value by name.
    dual : dict
        Every row's exact dual by constraint name.
    result : LpResult or None
        HiGHS's report of the solve that gave the basis (``None`` when the caller
        solved the model itself, as for :func:`proved_solution`).
    """

    primal: dict[str, Fraction]
    dual: dict[str, Fraction]
    result: LpResult | None = None


@dataclass(frozen=True)
class ProvedSolve(ProvedSolution):
    """A :class:`ProvedSolution` from :func:`solve_proved`, which always solved the model.

    Attributes
    ----------
    result : LpResult
        HiGHS's report of the solve that gave the proved basis (never ``None``).
    """

    result: LpResult


def proved_solution(problem: pulp.LpProblem, where: str) -> ProvedSolution:
    """The exact vertex and duals of ``problem`` (just solved), proved optimal.

    Recovers both from HiGHS's final basis (:func:`basis_vertex`,
    :func:`basis_duals`) and proves them optimal by :func:`check_optimality`;
    the objective at the vertex (:func:`objective_value`) is then the exact
    optimum of the model. ``where`` names the model in the error message.

    Raises
    ------
    ReconstructionError
        If the vertex or the duals are not recovered, or the pair is not
        proved optimal (the message says which and why).

    Examples
    --------
    >>> import pulp
    >>> from formulations.solve import solve
    >>> model = pulp.LpProblem("tiny", pulp.LpMaximize)
    >>> x = model.add_variable("x", lowBound=0, upBound=3)
    >>> model.setObjective(pulp.LpAffineExpression([(x, 0.5)]))
    >>> _ = solve(model)
    >>> objective_value(model, proved_solution(model, "tiny").primal)
    Fraction(3, 2)
    """
    try:
        primal, dual = basis_vertex(problem), basis_duals(problem)
    except ReconstructionError as err:
        raise ReconstructionError(f"{where}: {err}") from None
    failure = check_optimality(problem, primal, dual)
    if failure is not None:
        raise ReconstructionError(f"{where}: the exact basis solution is not optimal: {failure}")
    return ProvedSolution(primal, dual)


def solve_proved(
    problem: pulp.LpProblem,
    where: str,
    *,
    time_limit: float | None = None,
    build_seconds: float | None = None,
) -> ProvedSolve:
    """Solve ``problem`` with HiGHS and prove its optimum exactly, trying harder once.

    Solves with HiGHS's default tolerances and proves the final basis optimal
    (:func:`proved_solution`); if that fails (HiGHS stopped at a basis whose
    exact reduced costs are slightly negative, as badly scaled data can cause),
    solves again with :data:`TIGHT_TOLERANCE` and proves that basis.

    Returns
    -------
    ProvedSolve
        The exact, proved vertex and duals, with HiGHS's result of the
        successful attempt.

    Raises
    ------
    ReconstructionError
        If neither attempt is proved optimal (the message gives both reasons).
    SolveError
        Anything else :func:`formulations.solve.solve` raises.

    Examples
    --------
    >>> import pulp
    >>> model = pulp.LpProblem("tiny", pulp.LpMinimize)
    >>> x = model.add_variable("x", lowBound=0)
    >>> model.setObjective(pulp.LpAffineExpression([(x, 1.0)]))
    >>> model.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression([(x, 3.0)]),
    ...                                       pulp.LpConstraintGE, rhs=1.0), "need")
    >>> proved = solve_proved(model, "tiny")
    >>> proved.primal, proved.dual
    ({'x': Fraction(1, 3)}, {'need': Fraction(1, 3)})
    """
    result = solve(problem, time_limit=time_limit, build_seconds=build_seconds)
    try:
        proved = proved_solution(problem, where)
    except ReconstructionError as first:
        result = solve(
            problem, time_limit=time_limit, build_seconds=build_seconds, tolerance=TIGHT_TOLERANCE
        )
        try:
            proved = proved_solution(problem, where)
        except ReconstructionError as second:
            raise ReconstructionError(
                f"{first}; with HiGHS's tolerance {TIGHT_TOLERANCE:g}: {second}"
            ) from None
    return ProvedSolve(proved.primal, proved.dual, result)
