"""The best allgather with exactly K chunks per root, by the fixed-k MILP.

The MILP (:mod:`formulations.fixed_k`) reads integer capacities. Here a
switch-free graph is checked (:func:`~optcoll.schedules.tree_packing.check_switch_free`),
its capacities are scaled to integers (:func:`~optcoll.core.rational.integer_scaling`)
and the exact time factor is given back in the graph's own units. It is the
cross-check of the combinatorial fixed-k mode
(:func:`optcoll.schedules.packing.fixed_k_capacity`).

Examples
--------
Roots ``a`` and ``c`` both need the half-capacity arc ``a -> b``:

>>> from fractions import Fraction
>>> ring = {("a", "b"): Fraction(1, 2), ("b", "c"): 1, ("c", "a"): 1, ("b", "a"): 1}
>>> fixed_k_optimum(["a", "b", "c"], ring, 1).t
Fraction(4, 1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from fractions import Fraction

from formulations.fixed_k import FixedKResult, solve_fixed_k
from formulations.network import Arc
from optcoll.core.rational import integer_scaling
from optcoll.schedules.tree_packing import check_switch_free

__all__ = ["fixed_k_optimum"]


def fixed_k_optimum(
    compute_nodes: Sequence[str],
    capacity: Mapping[Arc, int | Fraction],
    K: int,
    *,
    time_limit: float | None = None,
) -> FixedKResult:
    """Solve the fixed-k MILP on a switch-free graph (tiny instances); ``t`` in its units.

    Raises
    ------
    TopologyError
        If the graph is not switch-free and strongly connected.
    MethodError
        If ``K`` is invalid or the model too large.
    SolveError
        If HiGHS fails or hits ``time_limit``.

    Examples
    --------
    >>> pair = {("a", "b"): 2, ("b", "a"): 1}
    >>> fixed_k_optimum(["a", "b"], pair, 3).t
    Fraction(1, 1)
    """
    nodes = check_switch_free(compute_nodes, capacity)
    caps, unit = integer_scaling(capacity)
    result = solve_fixed_k(nodes, caps, K, time_limit=time_limit)
    return dataclasses.replace(result, t=result.t / unit)
