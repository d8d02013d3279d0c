"""The multicast LP: each root's fractional tree capacity, for small topologies.

Every compute root ``r`` owns a capacity vector ``y_r`` on the links; it must
carry a flow of value 1 from ``r`` to every other compute node ``w``
(``f_rw(a) <= y_r(a)``: flows to different destinations share ``y_r``, as
copies of one message do), and the roots together fit the links:
``sum_r y_r(a) <= t * c(a)``. Minimise ``t``.

By Edmonds' branching theorem a vector ``y_r`` that supports a unit flow to
every node is a fractional packing of spanning ``r``-arborescences, so ``y_r``
is root ``r``'s fractional tree capacity and the optimum is the same r* as the
congestion LP (:mod:`formulations.congestion`): every set ``S`` holding root
``r`` but missing a compute node needs ``y_r(δ+(S)) >= 1``, so
``t * B+(S) >= |S ∩ Vc|``, and ForestColl (arXiv 2402.06787) attains it. The
model is independent of the congestion LP and serves as its cross-check.

Size: ``N (N - 1) |A| + N |A| + 1`` variables, so it is meant for ``N <= 32``.
Capacities are the integer-scaled ones, so the optimum is ``r* * unit``.

Examples
--------
>>> from optcoll import load_topology
>>> multicast_bound(load_topology("dgx-a100:1")).cut_ratio
Fraction(7, 300)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

import pulp

from formulations.rational import reconstruct_cut_ratio
from formulations.solve import SolverReport, solve
from optcoll.exceptions import MethodError
from optcoll.topology import Topology

__all__ = ["build_multicast", "multicast_bound", "MulticastResult", "MAX_FLOW_VARIABLES"]

#: Largest ``N (N - 1) |A|`` (number of flow variables) the multicast LP accepts.
MAX_FLOW_VARIABLES = 400_000


def build_multicast(topology: Topology) -> pulp.LpProblem:
    """The multicast LP of ``topology`` (no side effects; nothing is solved).

    Variables: ``t``; ``y_R_A`` (root number ``R``'s capacity on arc number
    ``A``, arcs in the order of ``topology.integer_capacities()``); ``f_R_W_A``
    (root ``R``'s unit flow to compute node number ``W``). Rows:
    ``flow_R_W_I`` (conservation at node number ``I``), ``share_R_W_A``
    (``f_R_W_A <= y_R_A``) and ``cap_A`` (``sum_R y_R_A <= caps[A] * t``).

    Raises
    ------
    MethodError
        If the model would have more than :data:`MAX_FLOW_VARIABLES` flow
        variables; use the congestion LP for such topologies.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> model = build_multicast(load_topology("dgx-a100:1"))
    >>> len(model.variables()), len(model.constraints())
    (1025, 1416)
    """
    caps, _ = topology.integer_capacities()
    arcs = list(caps)
    compute = topology.compute_nodes
    n = len(compute)
    size = n * (n - 1) * len(arcs)
    if size > MAX_FLOW_VARIABLES:
        raise MethodError(
            f"the multicast LP of {topology.name!r} would have {size} flow variables "
            f"(N={n}, {len(arcs)} arcs; at most {MAX_FLOW_VARIABLES}); use the congestion LP "
            f"(formulations.congestion) for topologies of this size"
        )
    index = {u: i for i, u in enumerate(topology.node_ids)}
    problem = pulp.LpProblem("multicast", pulp.LpMinimize)
    t = problem.add_variable("t", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(t, 1.0)]))
    load: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in arcs]
    for r, root in enumerate(compute):
        share = [problem.add_variable(f"y_{r}_{a}", lowBound=0) for a in range(len(arcs))]
        for a, y in enumerate(share):
            load[a].append((y, 1.0))
        for w, dest in enumerate(compute):
            if dest == root:
                continue
            flows = [problem.add_variable(f"f_{r}_{w}_{a}", lowBound=0) for a in range(len(arcs))]
            terms: dict[str, list[tuple[pulp.LpVariable, float]]] = {u: [] for u in index}
            for f, (u, v) in zip(flows, arcs, strict=True):
                terms[u].append((f, 1.0))
                terms[v].append((f, -1.0))
            for u, row in terms.items():
                if row:
                    supply = 1.0 if u == root else (-1.0 if u == dest else 0.0)
                    problem.addConstraint(
                        pulp.LpConstraint(
                            pulp.LpAffineExpression(row), pulp.LpConstraintEQ, rhs=supply
                        ),
                        f"flow_{r}_{w}_{index[u]}",
                    )
            for a, (f, y) in enumerate(zip(flows, share, strict=True)):
                problem.addConstraint(
                    pulp.LpConstraint(
                        pulp.LpAffineExpression([(f, 1.0), (y, -1.0)]), pulp.LpConstraintLE, rhs=0.0
                    ),
                    f"share_{r}_{w}_{a}",
                )
    for a, arc in enumerate(arcs):
        problem.addConstraint(
            pulp.LpConstraint(
                pulp.LpAffineExpression([*load[a], (t, -float(caps[arc]))]),
                pulp.LpConstraintLE,
                rhs=0.0,
            ),
            f"cap_{a}",
        )
    return problem


@dataclass(frozen=True)
class MulticastResult:
    """The solved multicast LP.

    ``cut_ratio`` is r* reconstructed exactly from the float optimum
    ``scaled_ratio ≈ r* * unit`` (unique among ratios with numerator < N, see
    :mod:`formulations.rational`). ``root_capacity[r][(u, v)]`` is ``y_r`` on
    that arc in the model's units (``sum_r y_r(a) <= scaled_ratio * caps[a]``);
    only nonzero entries are listed.
    """

    cut_ratio: Fraction
    scaled_ratio: float
    unit: Fraction
    root_capacity: dict[str, dict[tuple[str, str], float]]
    report: SolverReport


def multicast_bound(topology: Topology, *, time_limit: float | None = None) -> MulticastResult:
    """Build and solve the multicast LP; return r* (exact) and each root's capacity.

    Raises
    ------
    MethodError
        If the topology is too large for this model (see :func:`build_multicast`).
    ReconstructionError
        If the float optimum does not identify a unique exact ratio.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> result = multicast_bound(load_topology("dgx-a100:1"))
    >>> sum(result.root_capacity["b0.gpu0"].values()) > 0
    True
    """
    start = time.perf_counter()
    problem = build_multicast(topology)
    built = time.perf_counter() - start
    result = solve(problem, time_limit=time_limit, build_seconds=built)
    caps, unit = topology.integer_capacities()
    ratio = reconstruct_cut_ratio(result.objective, topology.num_compute)
    arcs = list(caps)
    root_capacity = {
        root: {
            arc: result.values[f"y_{r}_{a}"]
            for a, arc in enumerate(arcs)
            if result.values.get(f"y_{r}_{a}", 0.0) > 0.0
        }
        for r, root in enumerate(topology.compute_nodes)
    }
    return MulticastResult(ratio / unit, result.objective, unit, root_capacity, result.report)
