"""The usable capacity of a topology whose switches cannot forward all they could send.

A switch relays but never copies, so whatever leaves it must have entered it:
the capacity a schedule uses is some ``g <= c`` with ``out_g(w) <= in_g(w)`` at
every switch ``w`` (a *forwardable* capacity). Every allgather schedule's load,
divided by its time factor, is such a ``g``, and on such a ``g`` the cut ratio
``max_S |S ∩ Vc| / g(δ+(S))`` is attained (ForestColl's construction applies when
no switch has less in than out). So the optimum is

    r* = min over forwardable g of max_S |S ∩ Vc| / g(δ+(S)),

which equals the plain cut ratio when every switch has ``in >= out``, and in
general is not the cut ratio of any one fixed trimming of ``c`` chosen cut by
cut (several cuts may compete for the same switch's traffic).

:func:`build_forwardable_master` is the *master* problem over a finite
family of cuts: maximise ``lam`` subject to ``g(δ+(S)) >= lam |S ∩ Vc|`` for
every ``S`` in the family, ``0 <= g <= c`` and ``out_g(w) <= in_g(w)``. Its
optimum is an upper bound on ``1 / r*`` (fewer cuts, fewer constraints);
:func:`optcoll.bounds.forwardable.best_forwardable_capacity` proves it exactly and
:func:`optcoll.bounds.forwardable.forwardable_topology` adds violated cuts found by
exact parametric max-flow until ``g`` attains it.

Examples
--------
A switch ``w`` that receives 1 from ``a`` and could send 2 on to ``b``:

>>> caps = {("a", "w"): 1, ("w", "b"): 2, ("b", "a"): 3}
>>> model = build_forwardable_master(["a", "b"], ["w"], caps, [{"a"}, {"a", "w"}])
>>> sorted(c.name for c in model.constraints())
['cut_0', 'cut_1', 'switch_0']
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import pulp

from formulations.errors import MethodError
from formulations.network import Arc

__all__ = ["build_forwardable_master", "add_forwarding_rows"]


def build_forwardable_master(
    compute: Collection[str],
    switches: Collection[str],
    capacity: Mapping[Arc, int],
    cuts: Sequence[Collection[str]],
    weights: Sequence[int] | None = None,
) -> pulp.LpProblem:
    """The master LP over ``cuts`` (no side effects; nothing is solved).

    Variables ``lam`` and ``g_A`` (arc number ``A`` of ``capacity``'s order,
    bounds ``0..capacity``); rows ``cut_J`` (``g(δ+(S_J)) - lam w_J >= 0``, the weight
    ``w_J`` being ``weights[J]``, by default ``|S_J ∩ Vc|`` as for the cut ratio; a
    broadcast's cuts all weigh 1) and ``switch_I`` (switch number ``I``:
    ``out_g - in_g <= 0``).

    Raises
    ------
    MethodError
        If a capacity is not a positive integer of at most 2**53 (an LP float
        must hold it exactly), or a cut holds no compute node.

    Examples
    --------
    >>> caps = {("a", "w"): 1, ("w", "b"): 2, ("b", "a"): 3}
    >>> model = build_forwardable_master(["a", "b"], ["w"], caps, [{"a"}])
    >>> len(model.variables()), len(model.constraints())  # g_2 (b -> a) is in no row
    (3, 2)
    """
    for arc, c in capacity.items():
        if isinstance(c, bool) or not isinstance(c, int) or not 0 < c <= 2**53:
            raise MethodError(f"arc {arc!r} has capacity {c!r}; need an integer in 1..2**53")
    problem = pulp.LpProblem("forwardable_capacity", pulp.LpMaximize)
    lam = problem.add_variable("lam", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(lam, 1.0)]))
    arcs = list(capacity)
    g = [
        problem.add_variable(f"g_{a}", lowBound=0, upBound=float(capacity[arc]))
        for a, arc in enumerate(arcs)
    ]
    compute_set = set(compute)
    for j, cut in enumerate(cuts):
        inside = set(cut)
        count = len(inside & compute_set) if weights is None else weights[j]
        if count <= 0:
            raise MethodError(f"cut {j} holds no compute node (or has no positive weight)")
        row = [(g[a], 1.0) for a, (u, v) in enumerate(arcs) if u in inside and v not in inside]
        problem.addConstraint(
            pulp.LpConstraint(
                pulp.LpAffineExpression([*row, (lam, -float(count))]), pulp.LpConstraintGE, rhs=0.0
            ),
            f"cut_{j}",
        )
    add_forwarding_rows(problem, g, arcs, switches)
    return problem


def add_forwarding_rows(
    problem: pulp.LpProblem,
    g: Sequence[pulp.LpVariable],
    arcs: Sequence[Arc],
    switches: Collection[str],
) -> None:
    """Rows ``switch_I``: switch number ``I`` sends at most what it receives under ``g``."""
    for i, w in enumerate(switches):
        row = [(g[a], 1.0) for a, (u, _) in enumerate(arcs) if u == w]
        row += [(g[a], -1.0) for a, (_, v) in enumerate(arcs) if v == w]
        if row:
            problem.addConstraint(
                pulp.LpConstraint(pulp.LpAffineExpression(row), pulp.LpConstraintLE, rhs=0.0),
                f"switch_{i}",
            )
