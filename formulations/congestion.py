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

From the duals: the potentials of each sink's conservation rows, cut at any
level, give sets ``S``; at an optimal dual every such level set with positive
weight is a bottleneck cut. :func:`lp_cut_ratio` evaluates all of them in exact
arithmetic, keeps the best, and accepts it only if it equals the LP's exact
optimum: the vertex and duals of HiGHS's final basis, recovered as fractions and
proved optimal by LP duality (:func:`formulations.exact_lp.solve_proved`). So
the value is certified from both sides: the flows show it is attained, the cut
that nothing is better.

The ``rate`` form (``lam = 1/t``, link capacities as variable bounds) is the
same LP after a change of variables; it has no capacity rows and is what
:func:`lp_cut_ratio` solves by default. Size: ``N * |A| + 1`` variables, and
``N * (|V| + |A|)`` rows (time form) or ``N * |V|`` rows (rate form).

Examples
--------
>>> from optcoll import load_topology
>>> topo = load_topology("dgx-a100:1")
>>> r, cut = lp_cut_ratio(topo)
>>> r, sum(topo.is_compute(u) for u in cut), topo.cut_bandwidth(cut)
(Fraction(7, 300), 7, Fraction(300, 1))
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import pulp

from formulations.errors import MethodError, ReconstructionError
from formulations.exact_lp import FLOAT_EXACT_LIMIT, solve_proved
from formulations.network import Arc, Network
from formulations.solve import LpResult, SolverReport
from formulations.usable_capacity import add_forwarding_rows

__all__ = ["build_congestion", "congestion_bound", "lp_cut_ratio", "CongestionResult", "FORMS"]


def _flow_row(sink: int, node: int) -> str:
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
    ``switch_I``). The optimum is then r* of :mod:`optcoll.forwardable`.

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
                _flow_row(k, index[u]),
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


@dataclass(frozen=True)
class CongestionResult:
    """The solved congestion LP with its exact, verified optimum.

    ``cut_ratio`` is r* (in 1/bandwidth units), ``cut`` the node set S that
    certifies it (``|S ∩ Vc| / topology.cut_bandwidth(S) == cut_ratio``),
    ``scaled_ratio`` the LP's float value of ``r* * unit`` (the optimum of the
    time form, the inverse optimum of the rate form). ``usable`` is the
    bandwidth (exact, positive arcs only) the cut is measured in: the network's
    own, or the LP's exact forwardable capacity when a switch is short of
    in-capacity (:meth:`optcoll.topology.Topology.with_capacity` makes it a
    topology).
    """

    cut_ratio: Fraction
    cut: frozenset[str]
    scaled_ratio: float
    unit: Fraction
    form: str
    report: SolverReport
    usable: Mapping[Arc, Fraction] = field(repr=False)


def congestion_bound(
    topology: Network, *, form: str = "rate", time_limit: float | None = None
) -> CongestionResult:
    """Build and solve the congestion LP; return r* exactly with its certifying cut.

    Raises
    ------
    ReconstructionError
        If the optimum is not proved exactly, or the best cut recovered from the
        duals does not match it.
    MethodError
        If an integer-scaled capacity exceeds 2**53 (not exact as a float).
    SolveError
        Any other solver failure (see :func:`formulations.solve.solve`).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> result = congestion_bound(load_topology("dgx-a100:1"))
    >>> result.cut_ratio, result.unit
    (Fraction(7, 300), Fraction(300, 1))
    """
    caps, unit = topology.integer_capacities()
    if max(caps.values()) > FLOAT_EXACT_LIMIT:
        raise MethodError(
            f"congestion LP of {topology.name!r}: an integer-scaled capacity exceeds 2**53, so "
            f"the LP's floats would round it and its optimum could not be proved exactly; use "
            f"the combinatorial method"
        )
    start = time.perf_counter()
    problem = build_congestion(topology, form)
    built = time.perf_counter() - start
    where = f"congestion LP ({form} form) on {topology.name!r}"
    result, primal, dual = solve_proved(problem, where, time_limit=time_limit, build_seconds=built)
    value = primal["t"] if form == "time" else 1 / primal["lam"]
    capacity: Mapping[tuple[str, str], int | Fraction] = caps
    if topology.short_switches():  # the cut is a bottleneck of the LP's forwardable capacity
        per = value if form == "time" else Fraction(1)
        capacity = {arc: primal.get(f"g_{a}", Fraction(0)) / per for a, arc in enumerate(caps)}
    usable = {arc: c * unit for arc, c in capacity.items() if c > 0}
    count, bandwidth, cut = _best_dual_cut(topology, capacity, result)
    best = Fraction(count, bandwidth)
    if best != value:
        raise ReconstructionError(
            f"{where}: the exact optimum r* * unit = {value} (unit {unit}, proved by LP "
            f"duality) is not the ratio {best} of the best cut recovered from the duals"
        )
    scaled = result.objective if form == "time" else 1.0 / result.objective
    return CongestionResult(best / unit, cut, scaled, unit, form, result.report, usable)


def lp_cut_ratio(
    topology: Network, *, form: str = "rate", time_limit: float | None = None
) -> tuple[Fraction, frozenset[str]]:
    """r* of ``topology`` by the congestion LP, exact, with a bottleneck cut S.

    ``|S ∩ Vc| / topology.cut_bandwidth(S) == r*`` holds exactly. This is the
    ``method="lp"`` back end of the bound's ``optimal_cut_ratio``.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> lp_cut_ratio(load_topology("dgx-a100:1"))[0]
    Fraction(7, 300)
    """
    result = congestion_bound(topology, form=form, time_limit=time_limit)
    return result.cut_ratio, result.cut


def _best_dual_cut(
    topology: Network, caps: Mapping[tuple[str, str], int | Fraction], result: LpResult
) -> tuple[int, int | Fraction, frozenset[str]]:
    """The level set of the sinks' dual potentials with the largest exact cut ratio.

    Returns ``(|S ∩ Vc|, scaled B+(S), S)``; the first best set in a fixed
    enumeration order wins, so the answer is deterministic.
    """
    out_arcs: dict[str, list[tuple[str, int | Fraction]]] = {u: [] for u in topology.node_ids}
    in_arcs: dict[str, list[tuple[str, int | Fraction]]] = {u: [] for u in topology.node_ids}
    for (u, v), c in caps.items():
        out_arcs[u].append((v, c))
        in_arcs[v].append((u, c))
    compute = set(topology.compute_nodes)
    n = len(compute)
    best: tuple[int, int | Fraction, frozenset[str]] | None = None
    for k in range(n):
        potential = {
            u: result.duals.get(_flow_row(k, i), 0.0) for i, u in enumerate(topology.node_ids)
        }
        for sign in (1.0, -1.0):
            order = sorted(topology.node_ids, key=lambda u: -sign * potential[u])
            for count, bandwidth, size in _prefix_cuts(order, out_arcs, in_arcs, compute):
                if 0 < count < n and bandwidth > 0:
                    if best is None or count * best[1] > best[0] * bandwidth:
                        best = (count, bandwidth, frozenset(order[:size]))
    assert best is not None, "a proper compute subset always has a positive cut"
    return best


def _prefix_cuts(
    order: Sequence[str],
    out_arcs: dict[str, list[tuple[str, int | Fraction]]],
    in_arcs: dict[str, list[tuple[str, int | Fraction]]],
    compute: set[str],
) -> Iterable[tuple[int, int | Fraction, int]]:
    """``(|S ∩ Vc|, B+(S), len(S))`` for every proper prefix S of ``order``, in O(|A|) total."""
    inside: set[str] = set()
    count = 0
    bandwidth: int | Fraction = 0
    for u in order[:-1]:
        inside.add(u)
        count += u in compute
        bandwidth += sum(c for v, c in out_arcs[u] if v not in inside)
        bandwidth -= sum(c for w, c in in_arcs[u] if w in inside)
        yield count, bandwidth, len(inside)
