"""The restricted master LP of fractional spanning-arborescence packing.

On a switch-free directed graph with compute nodes ``V`` and capacities ``c``,
the master LP has one variable ``x_T >= 0`` per spanning arborescence ``T``
rooted at some ``r``:

    minimise t  subject to  sum_{T rooted at r} x_T = 1          for every root r
                            sum_{T ∋ a} x_T <= t * c(a)           for every arc a

Its optimum is the optimal allgather cut ratio r* = max_S |S| / B+(S)
(Edmonds' branching theorem; ForestColl, arXiv 2402.06787). There are
exponentially many arborescences, so it is solved over a growing set of
columns (:func:`build_tree_master`); the column generation, its pricing and
the exact weights are :func:`optcoll.tree_packing.fractional_tree_packing`.

Examples
--------
>>> master = build_tree_master(["a", "b"], {("a", "b"): 1, ("b", "a"): 1},
...                            [("a", (("a", "b"),)), ("b", (("b", "a"),))])
>>> sorted(c.name for c in master.constraints())
['cap_0', 'cap_1', 'convex_0', 'convex_1']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulp

from formulations.network import Arc

__all__ = ["build_tree_master", "Column"]

#: A column of the master: a root and its arborescence's arcs.
Column = tuple[str, tuple[Arc, ...]]


def build_tree_master(
    roots: Sequence[str],
    capacity: Mapping[Arc, int],
    columns: Sequence[Column],
) -> pulp.LpProblem:
    """The restricted master LP over ``columns`` (no side effects).

    Variables ``t`` and ``x_J`` (column number ``J``); rows ``convex_R``
    (root number ``R``'s weights sum to 1) and ``cap_A`` (arc number ``A`` of
    ``capacity``'s order: ``sum_{J ∋ A} x_J <= capacity[A] * t``).

    Examples
    --------
    >>> master = build_tree_master(["a", "b"], {("a", "b"): 2, ("b", "a"): 1},
    ...                            [("a", (("a", "b"),)), ("b", (("b", "a"),))])
    >>> len(master.variables()), len(master.constraints())
    (3, 4)
    """
    problem = pulp.LpProblem("tree_master", pulp.LpMinimize)
    t = problem.add_variable("t", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(t, 1.0)]))
    arc_index = {arc: a for a, arc in enumerate(capacity)}
    root_index = {r: i for i, r in enumerate(roots)}
    convex: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in roots]
    load: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in capacity]
    for j, (root, arcs) in enumerate(columns):
        x = problem.add_variable(f"x_{j}", lowBound=0)
        convex[root_index[root]].append((x, 1.0))
        for arc in arcs:
            load[arc_index[arc]].append((x, 1.0))
    for i, row in enumerate(convex):
        problem.addConstraint(
            pulp.LpConstraint(pulp.LpAffineExpression(row), pulp.LpConstraintEQ, rhs=1.0),
            f"convex_{i}",
        )
    for a, c in enumerate(capacity.values()):
        problem.addConstraint(
            pulp.LpConstraint(
                pulp.LpAffineExpression([*load[a], (t, -float(c))]), pulp.LpConstraintLE, rhs=0.0
            ),
            f"cap_{a}",
        )
    return problem
