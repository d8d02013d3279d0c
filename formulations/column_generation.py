"""The restricted master LP of column generation for packing problems (the model).

Blocks ``b = 0 .. B-1`` (each must receive one unit of columns), arcs ``a`` with
integer capacities ``c(a)``, and columns ``J``, each of one block and loading
arc ``a`` with a positive integer ``m_J(a)``:

    minimise t  subject to  sum_{J of block b} x_J = 1      for every block b
                            sum_J m_J(a) x_J <= t * c(a)     for every arc a,   x >= 0.

Spanning trees and trees of paths are such columns. The loop that prices new
columns and the exact proof of the optimum are :mod:`optcoll.lp.column_generation`.

Examples
--------
>>> master = build_master(1, {("a", "b"): 2}, [Column(0, ((("a", "b"), 1),))])
>>> from formulations.solve import solve
>>> solve(master).objective
0.5
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import pulp

__all__ = ["Column", "build_master"]

Arc = tuple[str, str]


@dataclass(frozen=True)
class Column:
    """One column: its ``block``, its ``load`` (``(arc, multiplicity)`` pairs, positive
    integer multiplicities, each arc once) and an opaque ``payload`` for the caller.

    Two columns are the same column when block and load agree (the payload is not compared).
    """

    block: int
    load: tuple[tuple[Arc, int], ...]
    payload: Hashable = field(compare=False, default=None)


def build_master(
    blocks: int, capacity: Mapping[Arc, int], columns: Sequence[Column], *, scale: float = 1.0
) -> pulp.LpProblem:
    """The restricted master LP over ``columns`` (no side effects).

    Variables ``t`` and ``x_J`` (column number ``J``); rows ``block_B`` (block
    ``B``'s weights sum to 1) and ``cap_A`` (arc number ``A`` in ``capacity``'s
    order: ``sum_J m_J(A) x_J <= capacity[A] * t``), one per arc. The objective is
    ``scale * t``: the same optimum, with every dual ``scale`` times larger (a
    power of two near ``1 / t`` keeps them near 1, where the solver's absolute
    tolerances are meant to work; with capacities of 10**8 units ``t`` is near
    10**-8 and every reduced cost below HiGHS's tolerance).

    Examples
    --------
    >>> master = build_master(2, {("a", "b"): 2, ("b", "a"): 1},
    ...                       [Column(0, ((("a", "b"), 1),)), Column(1, ((("b", "a"), 3),))])
    >>> len(master.variables()), sorted(c.name for c in master.constraints())
    (3, ['block_0', 'block_1', 'cap_0', 'cap_1'])
    """
    problem = pulp.LpProblem("column_master", pulp.LpMinimize)
    t = problem.add_variable("t", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(t, float(scale))]))
    arc_index = {arc: a for a, arc in enumerate(capacity)}
    convex: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in range(blocks)]
    load: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in capacity]
    for j, column in enumerate(columns):
        x = problem.add_variable(f"x_{j}", lowBound=0)
        convex[column.block].append((x, 1.0))
        for arc, m in column.load:
            load[arc_index[arc]].append((x, float(m)))
    for b, row in enumerate(convex):
        problem.addConstraint(
            pulp.LpConstraint(pulp.LpAffineExpression(row), pulp.LpConstraintEQ, rhs=1.0),
            f"block_{b}",
        )
    for a, c in enumerate(capacity.values()):
        problem.addConstraint(
            pulp.LpConstraint(
                pulp.LpAffineExpression([*load[a], (t, -float(c))]), pulp.LpConstraintLE, rhs=0.0
            ),
            f"cap_{a}",
        )
    return problem
