"""Exact sparse Gaussian elimination: solutions checked by substitution, singular cases caught."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.exceptions import ReconstructionError, SingularSystemError
from optcoll.lp.linear_system import solve_linear_system


def residuals(equations, rhs, solution):
    return [
        sum(c * solution[k] for k, c in eq.items()) - b
        for eq, b in zip(equations, rhs, strict=True)
    ]


def test_small_system_exact_values() -> None:
    # x + 2y = 1, 3x - y = 2  ->  x = 5/7, y = 1/7
    solution = solve_linear_system([{"x": 1, "y": 2}, {"x": 3, "y": -1}], [1, 2])
    assert solution == {"x": Fraction(5, 7), "y": Fraction(1, 7)}
    assert all(isinstance(v, Fraction) for v in solution.values())


def test_fraction_coefficients_and_requested_order() -> None:
    equations = [{"b": Fraction(1, 3)}, {"a": Fraction(2, 5), "b": 1}]
    solution = solve_linear_system(equations, [1, 0], unknowns=["b", "a"])
    assert list(solution) == ["b", "a"]
    assert solution == {"b": Fraction(3), "a": Fraction(-15, 2)}


def test_needs_pivoting_away_from_a_zero_diagonal() -> None:
    equations = [{"x": 0, "y": 1, "z": 1}, {"x": 1, "y": 1}, {"x": 1, "z": 1}]
    solution = solve_linear_system(equations, [2, 3, 4])
    assert residuals(equations, [2, 3, 4], solution) == [0, 0, 0]
    assert solution == {"y": Fraction(1, 2), "z": Fraction(3, 2), "x": Fraction(5, 2)}


def test_redundant_equations_are_accepted() -> None:
    equations = [{"x": 1, "y": 1}, {"x": 2, "y": 2}, {"x": 1, "y": -1}, {}]
    assert solve_linear_system(equations, [2, 4, 0, 0]) == {"x": 1, "y": 1}


def test_inconsistent_system() -> None:
    with pytest.raises(SingularSystemError, match="inconsistent"):
        solve_linear_system([{"x": 1, "y": 1}, {"x": 2, "y": 2}], [1, 3])
    with pytest.raises(SingularSystemError, match="inconsistent"):
        solve_linear_system([{}], [1])


def test_underdetermined_system_names_an_unknown() -> None:
    with pytest.raises(SingularSystemError, match="does not determine unknown 'z'"):
        solve_linear_system([{"x": 1}], [1], unknowns=["x", "z"])
    with pytest.raises(SingularSystemError, match="1 independent equations for 2 unknowns"):
        solve_linear_system([{"x": 1, "y": 1}, {"x": 3, "y": 3}], [1, 3])


def test_singular_is_a_reconstruction_error() -> None:
    assert issubclass(SingularSystemError, ReconstructionError)


def test_caller_mistakes_are_value_errors() -> None:
    with pytest.raises(ValueError, match="2 equations but 1"):
        solve_linear_system([{"x": 1}, {"x": 2}], [1])
    with pytest.raises(ValueError, match="'y'"):
        solve_linear_system([{"x": 1, "y": 1}], [1], unknowns=["x"])


@st.composite
def square_systems(draw: st.DrawFn) -> tuple[list[dict[int, int]], list[int]]:
    n = draw(st.integers(1, 6))
    entries = st.integers(-3, 3)
    equations = [{k: draw(entries) for k in range(n)} for _ in range(n)]
    rhs = [draw(st.integers(-5, 5)) for _ in range(n)]
    return equations, rhs


def determinant(matrix: list[list[Fraction]]) -> Fraction:
    """Laplace expansion (independent of the solver; n <= 6 keeps it cheap)."""
    if not matrix:
        return Fraction(1)
    return sum(
        (-1) ** j * matrix[0][j] * determinant([row[:j] + row[j + 1 :] for row in matrix[1:]])
        for j in range(len(matrix))
        if matrix[0][j]
    )


@settings(derandomize=True, max_examples=150, deadline=None)
@given(square_systems())
def test_square_systems_agree_with_the_determinant(system) -> None:
    # Unique solution iff det != 0; then it satisfies every equation exactly.
    equations, rhs = system
    n = len(equations)
    det = determinant([[Fraction(eq[k]) for k in range(n)] for eq in equations])
    if det != 0:
        solution = solve_linear_system(equations, rhs, unknowns=list(range(n)))
        assert residuals(equations, rhs, solution) == [0] * n
        # Cramer's rule for the first unknown, as a second independent check.
        replaced = [
            [Fraction(b)] + [Fraction(eq[k]) for k in range(1, n)]
            for eq, b in zip(equations, rhs, strict=True)
        ]
        assert solution[0] == determinant(replaced) / det
    else:
        with pytest.raises(SingularSystemError):
            solve_linear_system(equations, rhs, unknowns=list(range(n)))
