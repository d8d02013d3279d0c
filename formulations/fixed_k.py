"""The fixed-k integer model: the best allgather with exactly K chunks per root.

On a switch-free graph with capacities ``c``, every root ``r`` cuts its shard
into ``K`` equal chunks and sends each down one spanning arborescence. Let
``z_r(a)`` be the number of root ``r``'s trees that use arc ``a``. By Edmonds'
branching theorem, an integer ``z_r`` is the arc-multiplicity of ``K``
spanning ``r``-arborescences exactly when every non-root node has in-degree
``K``, the root has in-degree 0, and every set missing ``r`` has in-degree at
least ``K`` (equivalently, a flow of value ``K`` from ``r`` to every node fits
under ``z_r``). The time factor of the schedule is
``t = max_a sum_r z_r(a) / (K c(a))`` (time ``(M/N) t`` for ``M`` bytes), so

    minimise t  subject to  z_r(δ-(v)) = K (v != r),  z_r(δ-(r)) = 0,
                            f_rw flow of value K from r to w,  f_rw <= z_r,
                            sum_r z_r(a) <= K c(a) t,  z integer.

The MILP is exact up to HiGHS's integrality tolerance (solved with zero
relative gap); ``t`` is recomputed exactly from the integer ``z``. Its size,
``N^2 |A|`` continuous and ``N |A|`` integer variables, limits it to tiny
instances; it is the cross-check of the combinatorial fixed-k mode
(:func:`optcoll.schedules.packing.fixed_k_capacity`). With ``K`` = ForestColl's ``k``
its optimum is r*; with any ``K`` it is at least r*.

The model reads integer capacities; :func:`optcoll.schedules.fixed_k.fixed_k_optimum`
checks a graph, scales its capacities to integers and calls :func:`solve_fixed_k`.

Examples
--------
>>> ring = {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1, ("b", "a"): 1}
>>> solve_fixed_k(["a", "b", "c"], ring, 1).t
Fraction(2, 1)
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import pulp

from formulations.errors import MethodError, SolveError, SolverLimitError
from formulations.network import Arc, check_capacity
from formulations.solve import SolverReport, solve

__all__ = ["build_fixed_k", "solve_fixed_k", "FixedKResult", "MAX_FLOW_VARIABLES"]

#: Largest number of flow variables (``N (N - 1) |A|``) the fixed-k model accepts.
MAX_FLOW_VARIABLES = 60_000


def build_fixed_k(
    compute_nodes: Sequence[str], capacity: Mapping[Arc, int], K: int
) -> pulp.LpProblem:
    """The fixed-k MILP (no side effects) on integer ``capacity``.

    Variables: ``t``; ``z_R_A`` (integer, ``0..K``; root number ``R``'s trees
    on arc number ``A``; absent for arcs into the root); ``f_R_W_A`` (flow from
    root ``R`` to node ``W``). Rows: ``indeg_R_I``, ``flow_R_W_I``,
    ``share_R_W_A`` and ``cap_A`` (see the module docstring).

    Raises
    ------
    MethodError
        If ``K`` is not a positive integer, an arc joins a node outside
        ``compute_nodes``, a capacity is not a positive integer, or the model
        would be too large.

    Examples
    --------
    >>> model = build_fixed_k(["a", "b"], {("a", "b"): 1, ("b", "a"): 1}, 2)
    >>> len(model.variables()), len(model.constraints())
    (5, 10)
    """
    if isinstance(K, bool) or not isinstance(K, int) or K < 1:
        raise MethodError(f"K (chunks per root) must be a positive integer, got {K!r}")
    nodes = list(compute_nodes)
    arcs = list(capacity)
    check_capacity(nodes, capacity)
    n = len(nodes)
    size = n * (n - 1) * len(arcs)
    if size > MAX_FLOW_VARIABLES:
        raise MethodError(
            f"the fixed-k MILP would have {size} flow variables (N={n}, {len(arcs)} arcs; at "
            f"most {MAX_FLOW_VARIABLES}); use the combinatorial fixed-k mode "
            f"(optcoll.schedules.packing.fixed_k_capacity) for graphs of this size"
        )
    problem = pulp.LpProblem(f"fixed_k_{K}", pulp.LpMinimize)
    t = problem.add_variable("t", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(t, 1.0)]))
    load: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in arcs]
    for r, root in enumerate(nodes):
        z: dict[int, pulp.LpVariable] = {}
        indeg: dict[str, list[tuple[pulp.LpVariable, float]]] = {v: [] for v in nodes}
        for a, (_, v) in enumerate(arcs):
            if v == root:
                continue
            z[a] = problem.add_variable(f"z_{r}_{a}", lowBound=0, upBound=K, cat=pulp.LpInteger)
            load[a].append((z[a], 1.0))
            indeg[v].append((z[a], 1.0))
        for i, v in enumerate(nodes):
            if v != root:
                problem.addConstraint(
                    pulp.LpConstraint(
                        pulp.LpAffineExpression(indeg[v]), pulp.LpConstraintEQ, rhs=float(K)
                    ),
                    f"indeg_{r}_{i}",
                )
        for w, dest in enumerate(nodes):
            if dest == root:
                continue
            flows = {a: problem.add_variable(f"f_{r}_{w}_{a}", lowBound=0) for a in z}
            terms: dict[str, list[tuple[pulp.LpVariable, float]]] = {v: [] for v in nodes}
            for a, f in flows.items():
                u, v = arcs[a]
                terms[u].append((f, 1.0))
                terms[v].append((f, -1.0))
            for i, v in enumerate(nodes):
                if terms[v]:
                    supply = K if v == root else (-K if v == dest else 0)
                    problem.addConstraint(
                        pulp.LpConstraint(
                            pulp.LpAffineExpression(terms[v]), pulp.LpConstraintEQ, rhs=supply
                        ),
                        f"flow_{r}_{w}_{i}",
                    )
            for a, f in flows.items():
                problem.addConstraint(
                    pulp.LpConstraint(
                        pulp.LpAffineExpression([(f, 1.0), (z[a], -1.0)]),
                        pulp.LpConstraintLE,
                        rhs=0.0,
                    ),
                    f"share_{r}_{w}_{a}",
                )
    for a, arc in enumerate(arcs):
        problem.addConstraint(
            pulp.LpConstraint(
                pulp.LpAffineExpression([*load[a], (t, -float(K * capacity[arc]))]),
                pulp.LpConstraintLE,
                rhs=0.0,
            ),
            f"cap_{a}",
        )
    return problem


@dataclass(frozen=True)
class FixedKResult:
    """The best schedule with exactly ``K`` chunks per root, as arc multiplicities.

    ``t`` is the exact time factor ``max_a sum_r z_r(a) / (K * capacity(a))``
    of the integer solution; ``multiplicity[r][(u, v)]`` is ``z_r`` (nonzero
    entries only), which splits into ``K`` spanning ``r``-arborescences.
    """

    t: Fraction
    K: int
    multiplicity: dict[str, dict[Arc, int]]
    report: SolverReport


def solve_fixed_k(
    compute_nodes: Sequence[str],
    capacity: Mapping[Arc, int],
    K: int,
    *,
    time_limit: float | None = None,
) -> FixedKResult:
    """Solve the fixed-k MILP on integer ``capacity`` (tiny instances).

    ``t`` is in the units of ``capacity``, recomputed exactly from the integer
    solution. The graph should be switch-free and strongly connected
    (:func:`optcoll.schedules.tree_packing.check_switch_free`); otherwise the model is
    infeasible.

    Raises
    ------
    MethodError
        If ``K`` or a capacity is invalid or the model too large.
    SolveError
        If HiGHS fails or hits ``time_limit``.

    Examples
    --------
    >>> pair = {("a", "b"): 2, ("b", "a"): 1}
    >>> solve_fixed_k(["a", "b"], pair, 3).t
    Fraction(1, 1)
    """
    nodes = list(compute_nodes)
    start = time.perf_counter()
    problem = build_fixed_k(nodes, capacity, K)
    built = time.perf_counter() - start
    try:
        result = solve(
            problem, time_limit=time_limit, mip_rel_gap=0.0, mip_abs_gap=1e-9, build_seconds=built
        )
    except SolverLimitError as err:
        raise SolverLimitError(
            f"{err}; for K={K} on {len(nodes)} nodes the exact combinatorial search "
            f"optcoll.schedules.packing.fixed_k_capacity is much faster"
        ) from None
    arcs = list(capacity)
    multiplicity: dict[str, dict[Arc, int]] = {}
    load = dict.fromkeys(arcs, 0)
    for r, root in enumerate(nodes):
        counts = {}
        for a, arc in enumerate(arcs):
            value = result.values.get(f"z_{r}_{a}")
            if value is None:
                continue
            count = round(value)
            if abs(value - count) > 1e-6:
                raise SolveError(
                    f"fixed-k MILP returned a fractional z = {value} for root {root!r}"
                )
            if count:
                counts[arc] = count
                load[arc] += count
        multiplicity[root] = counts
    t = max(Fraction(load[arc], K * capacity[arc]) for arc in arcs)
    if not math.isclose(float(t), result.objective, rel_tol=1e-6, abs_tol=1e-9):
        raise SolveError(
            f"fixed-k MILP objective {result.objective} disagrees with the exact time factor "
            f"{t} of its own integer solution"
        )
    return FixedKResult(t, K, multiplicity, result.report)
