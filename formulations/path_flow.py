"""The restricted master LP of concurrent flow over paths (the path form of all-to-all).

For pairs ``(s, d)`` with demands ``D_sd`` on a network with integer capacities
``c``, the path form has one variable ``x_P >= 0`` per path ``P`` of each pair:

    minimise t  subject to  sum_{P of (s, d)} x_P = D_sd       for every pair   (dual mu_sd)
                            sum_{P ∋ a} x_P <= t * c(a)          for every arc    (dual -w_a)

It is the same optimum as the edge form of :mod:`formulations.multicommodity`
(every flow splits into paths), but shares no model with it. There are
exponentially many paths, so the LP is solved over a growing set of columns
(:func:`build_path_master`); the column generation with its exact pricing is
:func:`optcoll.bounds.path_flow.path_concurrent_flow`.

Examples
--------
>>> model = build_path_master({("a", "b"): 1, ("b", "a"): 1}, {("a", "b"): 2},
...                           [(("a", "b"), ("a", "b"))])
>>> [v.name for v in model.variables()]
['t', 'x_0']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulp

from formulations.network import Arc

__all__ = ["build_path_master", "Pair", "Path"]

#: A pair (source, destination) and a path as its node sequence.
Pair = tuple[str, str]
Path = tuple[str, ...]


def build_path_master(
    capacity: Mapping[Arc, int], pairs: Mapping[Pair, int], columns: Sequence[tuple[Pair, Path]]
) -> pulp.LpProblem:
    """The restricted master LP over ``columns`` (``(pair, path)``; nothing is solved).

    Variables ``t`` and ``x_J`` (column number ``J``); rows ``pair_I`` (pair number
    ``I`` in the order of ``pairs``) and ``cap_A`` (arc number ``A`` of ``capacity``).

    Examples
    --------
    >>> model = build_path_master({("a", "b"): 2}, {("a", "b"): 1}, [(("a", "b"), ("a", "b"))])
    >>> sorted(c.name for c in model.constraints())
    ['cap_0', 'pair_0']
    """
    problem = pulp.LpProblem("path_flow", pulp.LpMinimize)
    t = problem.add_variable("t", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(t, 1.0)]))
    pair_index = {pair: i for i, pair in enumerate(pairs)}
    arc_index = {arc: a for a, arc in enumerate(capacity)}
    convex: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in pairs]
    load: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in capacity]
    for j, (pair, path) in enumerate(columns):
        x = problem.add_variable(f"x_{j}", lowBound=0)
        convex[pair_index[pair]].append((x, 1.0))
        for arc in zip(path, path[1:], strict=False):
            load[arc_index[arc]].append((x, 1.0))
    for i, pair in enumerate(pairs):
        problem.addConstraint(
            pulp.LpConstraint(
                pulp.LpAffineExpression(convex[i]), pulp.LpConstraintEQ, rhs=float(pairs[pair])
            ),
            f"pair_{i}",
        )
    for a, arc in enumerate(capacity):
        if load[a]:
            problem.addConstraint(
                pulp.LpConstraint(
                    pulp.LpAffineExpression([*load[a], (t, -float(capacity[arc]))]),
                    pulp.LpConstraintLE,
                    rhs=0.0,
                ),
                f"cap_{a}",
            )
    return problem
