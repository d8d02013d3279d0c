"""An LP's optimal vertex and its dual, exactly, and the exact proof that they are optimal.

HiGHS reports a vertex in floating point, but the vertex is the unique solution
of its basis: nonbasic variables at a bound, nonbasic rows at their bound, and
the basic variables from the square system that leaves (``B x_B = b - N x_N``).
The dual is the solution of the transposed system (``B^T y = c_B``, with ``y = 0``
on basic rows). For a model whose coefficients and bounds are integers (or any
floats that are exact binary fractions) both systems are solved exactly by
:func:`formulations.linear_system.solve_linear_system`.

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
from fractions import Fraction

import pulp

from formulations.linear_system import solve_linear_system
from formulations.solve import simplex_basis
from optcoll.exceptions import SingularSystemError

__all__ = ["basis_vertex", "basis_duals", "check_optimality", "objective_value"]


def _bounds(variable: pulp.LpVariable) -> tuple[Fraction | None, Fraction | None]:
    low = None if variable.lowBound is None else Fraction(variable.lowBound)
    high = None if variable.upBound is None else Fraction(variable.upBound)
    return low, high


def _row(constraint: pulp.LpConstraint) -> tuple[dict[str, Fraction], Fraction]:
    """``({variable: coefficient}, rhs)`` of ``sum coefficient * variable (sense) rhs``."""
    return {v.name: Fraction(c) for v, c in constraint.items()}, -Fraction(constraint.constant)


def basis_vertex(problem: pulp.LpProblem) -> dict[str, Fraction] | str:
    """The exact vertex of HiGHS's final basis on ``problem`` (just solved), or why not.

    Returns every variable's exact value by name, or a sentence saying why the
    vertex could not be recovered (no basis kept, a singular system).

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
        return "HiGHS kept no simplex basis"
    values: dict[str, Fraction] = {}
    for variable in problem.variables():
        if variable.name in basis.basic_variables:
            continue
        low, high = _bounds(variable)
        bound = high if variable.name in basis.at_upper else low
        if bound is None:
            return f"nonbasic variable {variable.name} has no finite bound"
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
        return f"basis system not solvable exactly: {err}"
    return {v.name: values[v.name] for v in problem.variables()}


def basis_duals(problem: pulp.LpProblem) -> dict[str, Fraction] | str:
    """The exact row duals of HiGHS's final basis on ``problem`` (just solved), or why not.

    ``y`` solves ``sum_i A[i][j] y_i = c_j`` for every basic column ``j``, with
    ``y_i = 0`` on basic rows, so that the reduced costs ``c - A^T y`` vanish on
    the basis. Returned by constraint name.

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
        return "HiGHS kept no simplex basis"
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
        return f"dual basis system not solvable exactly: {err}"
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
