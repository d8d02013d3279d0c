"""The congestion-bound LP: the optimal allgather cut ratio r* as a linear program.

For every compute sink ``v`` there is a single-commodity flow ``f_v`` in which
every other compute node supplies one unit and ``v`` absorbs ``N - 1`` (this is
the super-source form with unit source arcs, whose arcs are necessarily
saturated), and every link carries ``f_v(a) <= t * c(a)``. Minimise ``t``. By
max-flow/min-cut, ``t`` is feasible iff ``t * B+(S) >= |S ∩ Vc|`` for every
set ``S`` missing some compute node, so the optimum is

    r* = max_S |S ∩ Vc| / B+(S)

(ForestColl, arXiv 2402.06787). The model uses the integer-scaled
capacities of the network's ``integer_capacities()``
(:class:`~formulations.network.Network`), so its
optimum is ``r* * unit``.

The ``rate`` form (``lam = 1/t``, link capacities as variable bounds) is the
same LP after a change of variables; it has no capacity rows. Size:
``N * |A| + 1`` variables, and ``N * (|V| + |A|)`` rows (time form) or
``N * |V|`` rows (rate form). The exact optimum and its certifying cut, from
the duals, are :func:`optcoll.bounds.congestion.congestion_bound`.

Examples
--------
>>> from optcoll import load_topology
>>> model = build_congestion(load_topology("dgx-a100:1"), form="rate")
>>> model.sense == pulp.LpMaximize, len(model.variables())
(True, 129)
"""

from __future__ import annotations

from collections.abc import Mapping

import pulp

from formulations.errors import MethodError
from formulations.network import Network
from formulations.usable_capacity import add_forwarding_rows

__all__ = ["build_congestion", "flow_row", "FORMS"]


def flow_row(sink: int, node: int) -> str:
    """The name of the conservation row of sink number ``sink`` at node number ``node``."""
    return f"flow_{sink}_{node}"


#: The two equivalent forms of the model (see :func:`build_congestion`).
FORMS = ("time", "rate")


def build_congestion(topology: Network, form: str = "time") -> pulp.LpProblem:
    """The congestion LP of ``topology`` (no side effects; nothing is solved).

    ``form="time"`` (default) is the model as stated: minimise ``t`` with
    ``f_v(a) <= caps[a] * t`` as rows; optimum ``r* * unit``. ``form="rate"``
    is the same LP after the substitution ``lam = 1 / t``, ``f -> f / t``:
    maximise ``lam`` with every compute node supplying ``lam`` to each sink and
    ``0 <= f_v(a) <= caps[a]`` as plain bounds; optimum ``1 / (r* * unit)``. The
    rate form has no capacity rows and solves several times faster.

    Variables are ``t`` (or ``lam``) and ``f_K_A`` (flow of sink number ``K``
    on arc number ``A``, arcs in the order of ``topology.integer_capacities()``);
    rows are ``flow_K_I`` (conservation at node number ``I`` of
    ``topology.node_ids``) and, in the time form, ``cap_K_A``.

    When a switch has less bandwidth in than out (what it cannot receive it
    cannot forward), the flows share a forwardable capacity ``g_A`` instead of
    ``caps``: ``f_K_A <= g_A`` (rows ``cap_K_A``), ``g_A <= caps[A] * t`` (rows
    ``gcap_A``; in the rate form the bound ``g_A <= caps[A]``) and, at switch
    number ``I`` of ``topology.switch_nodes``, ``out_g - in_g <= 0`` (rows
    ``switch_I``). The optimum is then r* of :mod:`optcoll.bounds.forwardable`.

    Raises
    ------
    MethodError
        If ``form`` is not one of :data:`FORMS`.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> model = build_congestion(load_topology("dgx-a100:1"))
    >>> len(model.variables()), len(model.constraints())
    (129, 200)
    >>> len(build_congestion(load_topology("dgx-a100:1"), form="rate").constraints())
    72
    """
    if form not in FORMS:
        raise MethodError(f"unknown congestion LP form {form!r}; valid forms are {list(FORMS)}")
    caps, _ = topology.integer_capacities()
    arcs = list(caps)
    index = {u: i for i, u in enumerate(topology.node_ids)}
    compute = set(topology.compute_nodes)
    n = len(topology.compute_nodes)
    timed = form == "time"
    sense = pulp.LpMinimize if timed else pulp.LpMaximize
    problem = pulp.LpProblem(f"congestion_{form}", sense)
    scale = problem.add_variable("t" if timed else "lam", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(scale, 1.0)]))
    shared = (
        _forwardable_capacity(problem, topology, arcs, caps, scale)
        if topology.short_switches()
        else None
    )
    for k, sink in enumerate(topology.compute_nodes):
        flows = [
            problem.add_variable(
                f"f_{k}_{a}", lowBound=0, upBound=None if timed or shared else caps[arc]
            )
            for a, arc in enumerate(arcs)
        ]
        terms: dict[str, list[tuple[pulp.LpVariable, float]]] = {u: [] for u in index}
        for f, (u, v) in zip(flows, arcs, strict=True):
            terms[u].append((f, 1.0))
            terms[v].append((f, -1.0))
        for u, row in terms.items():
            if not row:
                continue
            supply = -(n - 1) if u == sink else (1 if u in compute else 0)
            if not timed and supply:
                row = [*row, (scale, -float(supply))]
            problem.addConstraint(
                pulp.LpConstraint(
                    pulp.LpAffineExpression(row),
                    pulp.LpConstraintEQ,
                    rhs=float(supply) if timed else 0.0,
                ),
                flow_row(k, index[u]),
            )
        if not timed and shared is None:
            continue
        for a, (f, arc) in enumerate(zip(flows, arcs, strict=True)):
            limit = (shared[a], -1.0) if shared else (scale, -float(caps[arc]))
            problem.addConstraint(
                pulp.LpConstraint(
                    pulp.LpAffineExpression([(f, 1.0), limit]), pulp.LpConstraintLE, rhs=0.0
                ),
                f"cap_{k}_{a}",
            )
    return problem


def _forwardable_capacity(
    problem: pulp.LpProblem,
    topology: Network,
    arcs: list[tuple[str, str]],
    caps: Mapping[tuple[str, str], int],
    scale: pulp.LpVariable,
) -> list[pulp.LpVariable]:
    """Add the forwardable capacity ``g`` (variables ``g_A``, rows ``gcap_A``, ``switch_I``)."""
    timed = problem.sense == pulp.LpMinimize
    g = [
        problem.add_variable(f"g_{a}", lowBound=0, upBound=None if timed else caps[arc])
        for a, arc in enumerate(arcs)
    ]
    if timed:
        for a, arc in enumerate(arcs):
            problem.addConstraint(
                pulp.LpConstraint(
                    pulp.LpAffineExpression([(g[a], 1.0), (scale, -float(caps[arc]))]),
                    pulp.LpConstraintLE,
                    rhs=0.0,
                ),
                f"gcap_{a}",
            )
    add_forwarding_rows(problem, g, arcs, topology.switch_nodes)
    return g
