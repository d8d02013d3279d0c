"""Exact solution of a sparse linear system over the rationals.

An LP solver reports a vertex in floating point; the vertex itself is the
unique solution of its basis system ``B x_B = b``, whose entries are small
integers. :func:`solve_linear_system` solves such a system exactly with
:class:`fractions.Fraction` Gaussian elimination, so the vertex can be
recovered without any rounding.

Equations are sparse rows ``{unknown: coefficient}``. Elimination picks, at
each step, a pivot that keeps the rows sparse (the row with fewest unknowns, kept
in a heap,
then its unknown occurring in fewest remaining rows: a Markowitz-style rule),
eliminates it from the remaining rows, and back-substitutes at the end.
Redundant equations (``0 = 0`` after elimination) are allowed; contradictory
ones (``0 = c != 0``) and unknowns left undetermined raise
:class:`~optcoll.exceptions.SingularSystemError`. For a system with ``m``
equations the cost is at most ``O(m^3)`` Fraction operations, far fewer when
the pivots stay sparse.

Examples
--------
>>> solve_linear_system([{"x": 1, "y": 1}, {"x": 1, "y": -1}], [3, 1])
{'x': Fraction(2, 1), 'y': Fraction(1, 1)}
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import TypeVar

from optcoll.exceptions import SingularSystemError

__all__ = ["solve_linear_system"]

K = TypeVar("K", bound=Hashable)


def solve_linear_system(
    equations: Sequence[Mapping[K, int | Fraction]],
    rhs: Sequence[int | Fraction],
    unknowns: Sequence[K] | None = None,
) -> dict[K, Fraction]:
    """The unique exact solution of ``sum_k equations[i][k] * x_k = rhs[i]`` for all ``i``.

    Parameters
    ----------
    equations : sequence of Mapping
        Row ``i`` as ``{unknown: coefficient}`` (int or Fraction; zeros allowed).
    rhs : sequence of int or Fraction
        Right-hand sides, one per equation.
    unknowns : sequence, optional
        The unknowns to solve for, in the order of the returned dict (default:
        every unknown with a nonzero coefficient, in order of first appearance).
        Naming an unknown that no equation determines makes the system singular.

    Returns
    -------
    dict
        ``{unknown: Fraction}`` in the order of ``unknowns``.

    Raises
    ------
    SingularSystemError
        If the equations contradict each other, or do not determine every
        unknown uniquely (the message names one such unknown).
    ValueError
        If ``equations`` and ``rhs`` differ in length, or an equation uses an
        unknown outside ``unknowns`` (a caller's bug, not bad user input).

    Examples
    --------
    Redundant equations are fine:

    >>> solve_linear_system([{"a": 2}, {"a": 4}, {"a": 1, "b": 3}], [1, 2, 1])
    {'a': Fraction(1, 2), 'b': Fraction(1, 6)}

    A contradiction, or too few equations, is not:

    >>> solve_linear_system([{"a": 1}, {"a": 2}], [1, 1])
    Traceback (most recent call last):
    ...
    optcoll.exceptions.SingularSystemError: the linear system is inconsistent: equation 1 reduces to 0 = -1
    >>> solve_linear_system([{"a": 1, "b": 1}], [1])
    Traceback (most recent call last):
    ...
    optcoll.exceptions.SingularSystemError: the linear system does not determine unknown 'b' (1 independent equations for 2 unknowns)
    """
    if len(equations) != len(rhs):
        raise ValueError(f"{len(equations)} equations but {len(rhs)} right-hand sides")
    rows: dict[int, dict[K, Fraction]] = {}
    values: dict[int, Fraction] = {}
    occurs: dict[K, set[int]] = {}
    position: dict[K, int] = {}  # first appearance, for deterministic tie-breaks
    for i, (equation, b) in enumerate(zip(equations, rhs, strict=True)):
        row = {k: Fraction(c) for k, c in equation.items() if c != 0}
        for k in row:
            if k not in occurs:
                occurs[k] = set()
                position[k] = len(position)
            occurs[k].add(i)
        rows[i] = row
        values[i] = Fraction(b)
    if unknowns is None:
        unknowns = list(position)
    else:
        outside = set(occurs) - set(unknowns)
        if outside:
            raise ValueError(f"an equation uses {next(iter(outside))!r}, not among the unknowns")
    pivots: list[tuple[K, dict[K, Fraction], Fraction]] = []  # (unknown, row, rhs)
    queue = [(len(row), i) for i, row in rows.items()]  # (length, row), stale entries skipped
    heapq.heapify(queue)
    while queue:
        length, i = heapq.heappop(queue)
        if i not in rows or len(rows[i]) != length:
            continue
        row = rows.pop(i)
        b = values.pop(i)
        if not row:
            if b != 0:
                raise SingularSystemError(
                    f"the linear system is inconsistent: equation {i} reduces to 0 = {b}"
                )
            continue
        for k in row:
            occurs[k].discard(i)
        pivot = min(row, key=lambda k: (len(occurs[k]), position[k]))
        scale = row[pivot]
        for j in sorted(occurs[pivot]):
            other = rows[j]
            factor = other[pivot] / scale
            for k, c in row.items():
                updated = other.get(k, 0) - factor * c
                if updated:
                    if k not in other:
                        occurs[k].add(j)
                    other[k] = updated
                elif k in other:
                    del other[k]
                    occurs[k].discard(j)
            values[j] -= factor * b
            heapq.heappush(queue, (len(other), j))
        pivots.append((pivot, row, b))
    determined = {pivot for pivot, _, _ in pivots}
    for k in unknowns:
        if k not in determined:
            raise SingularSystemError(
                f"the linear system does not determine unknown {k!r} ({len(pivots)} independent "
                f"equations for {len(unknowns)} unknowns)"
            )
    solution: dict[K, Fraction] = {}
    for pivot, row, b in reversed(pivots):
        total = b - sum(c * solution[k] for k, c in row.items() if k != pivot)
        solution[pivot] = total / row[pivot]
    return {k: solution[k] for k in unknowns}
