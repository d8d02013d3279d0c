"""LP and MILP models of optimal collective communication (PuLP + HiGHS).

The model layer: one module per model; each ``build_*`` function returns a
:class:`pulp.LpProblem` without side effects, and :func:`formulations.solve.solve`
solves any of them into a typed result in floating point (status enum, objective,
primal values, duals, report). The models read plain data (node lists, integer
capacity maps) or a :class:`~formulations.network.Network` (which
:class:`optcoll.core.topology.Topology` satisfies), raise the errors of
:mod:`formulations.errors`, and import nothing of :mod:`optcoll`. optcoll calls
them and brings their optima back to exact fractions, proved by LP duality
(:mod:`optcoll.lp.exact`): :mod:`optcoll.bounds.congestion`, :mod:`optcoll.bounds.multicast`,
:mod:`optcoll.bounds.multicommodity`, :mod:`optcoll.schedules.alltoall`, :mod:`optcoll.bounds.path_flow`,
:mod:`optcoll.schedules.tree_packing`, :mod:`optcoll.schedules.fixed_k`, :mod:`optcoll.bounds.forwardable`
and :mod:`optcoll.groups.concurrent`.

- :mod:`formulations.congestion`: the congestion-bound LP (r*).
- :mod:`formulations.multicast`: per-root capacity vectors (small N); the same r*.
- :mod:`formulations.tree_packing`: the restricted master of fractional
  arborescence packing.
- :mod:`formulations.fixed_k`: the best schedule with exactly K chunks per root (MILP).
- :mod:`formulations.multicommodity`: unicast and multicast commodities sharing
  the links (min t).
- :mod:`formulations.alltoall`: the source-aggregated all-to-all LP.
- :mod:`formulations.path_flow`: the restricted master of the same concurrent
  flow over paths.
- :mod:`formulations.usable_capacity`: the forwardable-capacity master LP.
- :mod:`formulations.solve`: the solver front door and model text (``.mps``/``.lp``).
- :mod:`formulations.network`: what the models read of a network (a Protocol).
- :mod:`formulations.errors`: the errors the models raise, :class:`OptCollError` first.

Examples
--------
>>> from optcoll import load_topology
>>> from formulations import build_congestion
>>> from formulations.solve import solve
>>> result = solve(build_congestion(load_topology("dgx-a100:1")))
>>> round(result.objective, 9)  # r* * unit in floats: r* = 7/300, unit = 300
7.0
"""

from __future__ import annotations

import importlib
from typing import Any

#: Where each name of the package's front door lives. They are imported on first use
#: (PEP 562), so that ``import formulations.errors`` (which :mod:`optcoll.exceptions`
#: does) loads neither PuLP nor HiGHS. ``formulations.solve`` is the module (its
#: function is ``formulations.solve.solve``).
_HOMES = {
    "build_congestion": "congestion",
    "build_multicast": "multicast",
    "build_tree_master": "tree_packing",
    "build_fixed_k": "fixed_k",
    "solve_fixed_k": "fixed_k",
    "model_text": "solve",
    "Status": "solve",
    "LpResult": "solve",
    "SolverReport": "solve",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'formulations' has no attribute {name!r}")
    return getattr(importlib.import_module(f"formulations.{_HOMES[name]}"), name)


__all__ = [
    "build_congestion",
    "build_multicast",
    "build_tree_master",
    "build_fixed_k",
    "solve_fixed_k",
    "model_text",
    "Status",
    "LpResult",
    "SolverReport",
]
