"""The congestion-bound LP's exact optimum r* and the cut that certifies it.

:func:`congestion_bound` solves the LP of :mod:`formulations.congestion`. From
the duals: the potentials of each sink's conservation rows, cut at any level,
give sets ``S``; at an optimal dual every such level set with positive weight is
a bottleneck cut. All of them are evaluated in exact arithmetic, the best is
kept, and it is accepted only if it equals the LP's exact optimum: the vertex
and duals of HiGHS's final basis, recovered as fractions and proved optimal by
LP duality (:func:`optcoll.lp.exact.solve_proved`). So the value is certified
from both sides: the flows show it is attained, the cut that nothing is better.
The ``rate`` form is solved by default (several times faster).

This is a back end, not a second result: r* as a result is a
:class:`~optcoll.bounds.cut_ratio.CutRatio`, whichever method computed it;
``optimal_cut_ratio(topology, method="lp")`` builds it from the
:class:`CongestionSolution` (the solved LP: form, scale, solver report).

Examples
--------
>>> from optcoll import load_topology
>>> topo = load_topology("dgx-a100:1")
>>> found = congestion_bound(topo)
>>> r, cut = found.cut_ratio, found.cut
>>> r, sum(topo.is_compute(u) for u in cut), topo.cut_bandwidth(cut)
(Fraction(7, 300), 7, Fraction(300, 1))
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from formulations.congestion import build_congestion, flow_row
from formulations.network import FLOAT_EXACT_LIMIT, Arc, Network
from formulations.solve import LpResult, SolverReport
from optcoll.exceptions import MethodError, ReconstructionError
from optcoll.lp.exact import solve_proved

__all__ = ["congestion_bound", "CongestionSolution"]


@dataclass(frozen=True)
class CongestionSolution:
    """The solved congestion LP with its exact, verified optimum (the LP back end of
    :func:`~optcoll.bounds.cut_ratio.optimal_cut_ratio`, whose result is a ``CutRatio``).

    ``cut_ratio`` is r* (in 1/bandwidth units), ``cut`` the node set S that
    certifies it (``|S ∩ Vc| / topology.cut_bandwidth(S) == cut_ratio``),
    ``scaled_ratio`` the LP's float value of ``r* * unit`` (the optimum of the
    time form, the inverse optimum of the rate form). ``usable`` is the
    bandwidth (exact, positive arcs only) the cut is measured in: the network's
    own, or the LP's exact forwardable capacity when a switch is short of
    in-capacity (:meth:`optcoll.core.topology.Topology.with_capacity` makes it a
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
) -> CongestionSolution:
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
    proved = solve_proved(problem, where, time_limit=time_limit, build_seconds=built)
    result, primal = proved.result, proved.primal
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
    return CongestionSolution(best / unit, cut, scaled, unit, form, result.report, usable)


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
            u: result.duals.get(flow_row(k, i), 0.0) for i, u in enumerate(topology.node_ids)
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
