"""LP and MILP models of optimal collective communication (PuLP + HiGHS).

One module per model; each ``build_*`` function returns a :class:`pulp.LpProblem`
without side effects, and :func:`formulations.solve.solve` solves any of them
into a typed result (status enum, objective, primal values, duals, report).
Floating-point optima are brought back to exact fractions (the exact basis
solve of :mod:`optcoll.linear_system`) and re-verified exactly. The models read
plain data (node lists, capacity maps) or a :class:`~formulations.network.Network`
(which :class:`optcoll.topology.Topology` satisfies) and raise the errors of
:mod:`formulations.errors`.

- :mod:`formulations.congestion`: the congestion-bound LP; r* with a certifying
  cut (:func:`~formulations.congestion.lp_cut_ratio`).
- :mod:`formulations.multicast`: per-root capacity vectors (small N); the same r*.
- :mod:`formulations.tree_packing`: fractional arborescence packing by column
  generation (:func:`~formulations.tree_packing.fractional_tree_packing`).
- :mod:`formulations.fixed_k`: the best schedule with exactly K chunks per root (MILP).
- :mod:`formulations.multicommodity`: unicast and multicast commodities sharing
  the links (min t); exact optimum with a length-function or duality certificate.
- :mod:`formulations.alltoall`: the all-to-all optimum t*
  (:func:`~formulations.alltoall.alltoall_optimum`), source-aggregated.
- :mod:`formulations.path_flow`: the same concurrent-flow optimum over paths, by
  column generation with shortest-path pricing (the independent second method).
- :mod:`formulations.solve`: the solver front door and model text (``.mps``/``.lp``).
- :mod:`formulations.network`: what the models read of a network (a Protocol).
- :mod:`formulations.errors`: the errors the models raise, :class:`OptCollError` first.
- :mod:`formulations.exact_lp`: the exact vertex and duals of the final basis, and
  the exact LP-duality check that proves them optimal.

Examples
--------
>>> from optcoll import load_topology
>>> from formulations import lp_cut_ratio
>>> lp_cut_ratio(load_topology("dgx-a100:1"))[0]
Fraction(7, 300)
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
    "congestion_bound": "congestion",
    "lp_cut_ratio": "congestion",
    "build_multicast": "multicast",
    "multicast_bound": "multicast",
    "build_tree_master": "tree_packing",
    "fractional_tree_packing": "tree_packing",
    "build_fixed_k": "fixed_k",
    "fixed_k_optimum": "fixed_k",
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
    "congestion_bound",
    "lp_cut_ratio",
    "build_multicast",
    "multicast_bound",
    "build_tree_master",
    "fractional_tree_packing",
    "build_fixed_k",
    "fixed_k_optimum",
    "model_text",
    "Status",
    "LpResult",
    "SolverReport",
]
