"""All-to-all: the exact optimum of the max-concurrent-flow LP, with its certificate.

Every ordered pair ``(s, d)`` of distinct compute nodes exchanges one piece
(``M / N`` bytes of an ``M``-byte all-to-all). Data may follow any paths;
compute nodes and switches forward, nothing copies (every piece is wanted by
one node only). The optimal time is ``(M / N) * t*`` where t* is the optimum of

    minimise t  subject to, for every compute source s, a flow f_s with
        out_s(u) - in_s(u) = N - 1  (u = s),  -1  (u another compute node),  0  (switch)
        sum_s f_s(a) <= t * c(a)    for every link a,   f >= 0.

The pairs are aggregated by source (each source's pieces form one flow with
``N - 1`` unit sinks: any such flow splits into one unit path-flow per sink),
so the model has ``N * |links| + 1`` variables, not ``N^2 * |links|``. It is
the unicast case of :mod:`formulations.multicommodity`, on the integer-scaled
capacities ``c = bandwidth / unit``; t* in 1/bandwidth units is the LP's
optimum divided by ``unit``.

**Exactness.** HiGHS solves the LP in floating point. The vertex and the duals
of its final simplex basis are then solved exactly over the rationals (the
rational reconstruction of t*, and of the whole routing), and re-verified in
exact arithmetic by LP duality (:func:`formulations.exact_lp.check_optimality`).

**Certificate.** The capacity rows' duals give a length function ``l >= 0``
on the links. Any routing sends each piece ``(s, d)`` along a path at least
``dist_l(s, d)`` long, so it loads the links with total length at least
``D(l) = sum over pairs of dist_l(s, d)``; a routing of time ``t`` loads them
with at most ``t * sum_a c(a) l(a)``. Hence no routing is faster than
``D(l) / sum_a c(a) l(a)`` (:func:`formulations.multicommodity.length_bound`),
and the optimal duals make that ratio equal the routing's time: the pair
(routing, ``l``) proves t* without reference to the LP. The bound is optimal
*among* all fractional routings in which nodes forward without copying or
combining data (the bandwidth model: time = max link load / bandwidth).

Cut bounds are weaker in general: every set S of nodes needs
``t * B+(S) >= |S ∩ Vc| * |Vc \\ S|``, so t* >= the best such ratio, with
strict inequality possible (``ring:4,direction=uni``: t* = 6 per unit
bandwidth, best cut 4).

Examples
--------
>>> from optcoll import load_topology
>>> result = alltoall_optimum(load_topology("ring:4,direction=uni,bw=1"))
>>> result.time_factor, result.certificate_bound
(Fraction(6, 1), Fraction(6, 1))
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import pulp

from formulations.multicommodity import Commodity, build_multicommodity, solve_multicommodity
from formulations.network import Network
from formulations.solve import SolverReport

__all__ = ["alltoall_commodities", "build_alltoall", "AlltoallResult", "alltoall_optimum"]

Arc = tuple[str, str]


def alltoall_commodities(compute_nodes: Sequence[str]) -> list[Commodity]:
    """One unicast commodity per compute source, one unit to every other compute node.

    Examples
    --------
    >>> [(k.source, dict(k.demands)) for k in alltoall_commodities(("a", "b"))]
    [('a', {'b': 1}), ('b', {'a': 1})]
    """
    return [Commodity(s, {d: 1 for d in compute_nodes if d != s}) for s in compute_nodes]


def build_alltoall(topology: Network, form: str = "time") -> pulp.LpProblem:
    """The source-aggregated all-to-all LP of ``topology`` (nothing is solved).

    Variables ``t`` (or ``lam`` in the rate form) and ``f_K_A`` (flow of compute
    source number ``K`` on arc number ``A`` of ``topology.integer_capacities()``).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> model = build_alltoall(load_topology("dgx-a100:1"))
    >>> len(model.variables())  # t, and 8 sources x 15 arcs (no flow enters its own source)
    121
    """
    caps, _ = topology.integer_capacities()
    return build_multicommodity(
        topology.node_ids, caps, alltoall_commodities(topology.compute_nodes), form
    )


@dataclass(frozen=True)
class AlltoallResult:
    """The exact all-to-all optimum with its primal routing and dual certificate.

    ``time_factor`` is t* (time per unit piece, in 1/bandwidth units: an
    ``M``-byte all-to-all takes ``(M / N) * time_factor``); ``routing[s]`` source
    ``s``'s exact flow on each arc, in pieces; ``lengths`` the certifying length
    function on the arcs (normalised so that ``sum_a bandwidth(a) * l(a) = 1``)
    and ``certificate_bound`` the lower bound it proves, equal to
    ``time_factor``; ``seconds`` the wall time of build, solve and exact checks.
    """

    time_factor: Fraction
    routing: dict[str, dict[Arc, Fraction]]
    lengths: dict[Arc, Fraction]
    certificate_bound: Fraction
    lp_time_factor: float
    form: str
    report: SolverReport
    seconds: float

    @property
    def algbw(self) -> float:
        """``M / time`` for large ``M``: ``N / t*`` in bandwidth units (N from the routing)."""
        return float(len(self.routing) / self.time_factor)


def alltoall_optimum(
    topology: Network, *, form: str = "time", time_limit: float | None = None
) -> AlltoallResult:
    """Solve the all-to-all LP of ``topology`` and return t* exactly with its certificate.

    Raises
    ------
    ReconstructionError
        If the exact vertex or its duals cannot be recovered from the solve or do
        not prove optimality (the message says which check failed).
    SolveError
        Any other solver failure (see :func:`formulations.solve.solve`).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> result = alltoall_optimum(load_topology("dgx-a100:1"))
    >>> result.time_factor, result.certificate_bound == result.time_factor
    (Fraction(7, 300), True)
    """
    start = time.perf_counter()
    caps, unit = topology.integer_capacities()
    compute = topology.compute_nodes
    solved = solve_multicommodity(
        topology.node_ids, caps, alltoall_commodities(compute), form=form, time_limit=time_limit
    )
    assert solved.lengths_bound is not None, "unicast commodities always have a length bound"
    routing = {s: dict(load) for s, load in zip(compute, solved.loads, strict=True)}
    # In bandwidth units: c(a) = bandwidth(a) / unit, so times divide by unit and
    # lengths normalised against c(a) are normalised against bandwidth after dividing by unit.
    lengths = {arc: length / unit for arc, length in solved.lengths.items()}
    return AlltoallResult(
        solved.time / unit,
        routing,
        lengths,
        solved.lengths_bound / unit,
        solved.lp_time / float(unit),
        form,
        solved.report,
        time.perf_counter() - start,
    )
