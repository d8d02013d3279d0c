"""The multicast LP's exact optimum and each root's fractional tree capacity.

:func:`multicast_bound` solves the LP of :mod:`formulations.multicast` through
:func:`optcoll.bounds.multicommodity.solve_multicommodity`: the vertex and the duals of
HiGHS's final basis are recovered as fractions and proved optimal by exact LP
duality; nothing is rounded.

Examples
--------
>>> from optcoll import load_topology
>>> multicast_bound(load_topology("dgx-a100:1")).cut_ratio
Fraction(7, 300)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from formulations.multicast import root_commodities
from formulations.network import Arc, Network
from formulations.solve import SolverReport
from optcoll.bounds.multicommodity import solve_multicommodity

__all__ = ["multicast_bound", "MulticastResult"]


@dataclass(frozen=True)
class MulticastResult:
    """The solved multicast LP, exact and proved optimal.

    ``cut_ratio`` is the optimum in 1/bandwidth units (r* when no switch has
    less capacity in than out), ``scaled_ratio`` HiGHS's float optimum
    ``≈ cut_ratio * unit``. ``root_capacity[r][(u, v)]`` is root ``r``'s exact
    ``y_r`` on that arc in the model's units
    (``sum_r y_r(a) <= cut_ratio * unit * caps[a]``); only nonzero entries are
    listed.
    """

    cut_ratio: Fraction
    scaled_ratio: float
    unit: Fraction
    root_capacity: dict[str, dict[Arc, Fraction]]
    report: SolverReport


def multicast_bound(topology: Network, *, time_limit: float | None = None) -> MulticastResult:
    """Build and solve the multicast LP; return its exact optimum and each root's capacity.

    The rate form is solved (better scaled when bandwidths carry many
    significant digits); its exact vertex and duals are proved optimal, with a
    second, tighter HiGHS solve if the first basis is not
    (:func:`optcoll.lp.exact.solve_proved`).

    Raises
    ------
    MethodError
        If the topology is too large for this model (see :func:`build_multicast`).
    ReconstructionError
        If the exact vertex or duals are not recovered or not proved optimal.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> result = multicast_bound(load_topology("dgx-a100:1"))
    >>> sum(result.root_capacity["b0.gpu0"].values()) > 0
    True
    """
    roots = root_commodities(topology)
    caps, unit = topology.integer_capacities()
    result = solve_multicommodity(
        topology.node_ids, dict(caps), roots, form="rate", time_limit=time_limit
    )
    root_capacity = {k.source: load for k, load in zip(roots, result.loads, strict=True)}
    return MulticastResult(
        result.time / unit, 1 / result.lp_time, unit, root_capacity, result.report
    )
