"""Re-planning an all-to-allv when the demand changes: a fast schedule with a certified gap.

In a mixture-of-experts model the demand changes every step. Solving the exact LP each
time (:func:`optcoll.bounds.demand.demand_optimum`) costs seconds; :func:`replan` reuses a
:class:`ReplanBasis` built once from a previous optimum:

* **Schedule (upper bound).** Each pair's bytes are split over the previous optimum's
  paths for that pair in the same proportions (rounded to whole bytes by largest
  remainders); a pair that had no bytes before takes the hierarchical route. Every
  candidate is scored by its exact link loads, and the best of it, the spray, the
  hierarchical and the direct routes (:mod:`optcoll.schedules.alltoallv`) is returned, checked by the
  independent verifier (:func:`optcoll.verify.demand.verify_demand_routes`).
* **Cold start.** Without a previous optimum (``replan_basis(topology)``), the better
  baseline and the cut bound: no LP at all, at any scale.
* **Lower bound.** Any length function ``l >= 0`` proves ``T >= sum_pairs D[s][d]
  dist_l(s, d) / sum_a bandwidth(a) l(a)`` for *every* demand, so the previous
  optimum's length function bounds the new demand too
  (:func:`optcoll.bounds.multicommodity.length_bound`, exact); beside it, the cut bound
  ``D(S) / B+(S)`` over single compute nodes, boxes and the previous bottleneck cut. The
  larger is the certified lower bound, and ``gap = time / lower_bound >= 1`` is exact.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.core.moe import MoeSpec, moe_demand
>>> from optcoll.bounds.demand import demand_optimum
>>> topo = load_topology("dgx-h100:2")
>>> spec = MoeSpec(tokens=64, hidden=16, experts=16, top_k=2, zipf=1.0)
>>> basis = replan_basis(topo, demand_optimum(topo, moe_demand(spec, topo.compute_nodes)))
>>> new = moe_demand(MoeSpec(tokens=64, hidden=16, experts=16, top_k=2, zipf=1.0, step=1),
...                  topo.compute_nodes)
>>> plan = replan(basis, new)
>>> plan.gap >= 1, plan.schedule.time_factor >= plan.lower_bound
(True, True)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from optcoll.bounds.demand import (
    DemandOptimum,
    check_demand,
    demand_cut_bound_core,
)
from optcoll.core.arguments import instance_argument, topology_argument
from optcoll.core.demand import Demand
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import Route, RoutePath
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError
from optcoll.schedules.alltoall import _chunks
from optcoll.schedules.alltoallv import (
    DemandSchedule,
    _relayed,
    _sprayed,
    demand_path_decomposition,
)
from optcoll.verify.demand import verify_demand_routes

__all__ = ["ReplanBasis", "Replan", "replan_basis", "replan"]

Arc = tuple[str, str]
Path = tuple[str, ...]


@dataclass(frozen=True)
class ReplanBasis:
    """What a re-plan reuses: the previous optimum's paths per pair with their shares
    (summing to 1), its length function and bottleneck cut, and the two baselines'
    paths for every pair."""

    topology: Topology
    shares: Mapping[tuple[str, str], tuple[tuple[Path, Fraction], ...]]
    lengths: Mapping[Arc, Fraction]
    cut: frozenset[str]
    hierarchical: Mapping[tuple[str, str], Path]
    direct: Mapping[tuple[str, str], Path]
    spray: Mapping[tuple[str, str], tuple[Path, ...]]
    seconds: float


def replan_basis(topology: Topology, optimum: DemandOptimum | None = None) -> ReplanBasis:
    """Build the basis of :func:`replan` from an exact optimum on ``topology`` (once).

    Without ``optimum`` (a cold start, no LP at all) the re-plan takes the better
    baseline and the cut bound.
    """
    topology_argument(topology)
    start = time.perf_counter()
    shares: dict[tuple[str, str], tuple[tuple[Path, Fraction], ...]] = {}
    lengths: dict[Arc, Fraction] = {}
    cut: frozenset[str] = frozenset()
    if optimum is not None:
        instance_argument(optimum, DemandOptimum, "optimum", "optcoll.bounds.demand.demand_optimum")
        check_demand(topology, optimum.demand)
        pairs = optimum.demand.pairs()
        paths = demand_path_decomposition(topology, optimum.routing, pairs)
        shares = {
            pair: tuple((path, w / pairs[pair]) for path, w in found)
            for pair, found in paths.items()
        }
        lengths, cut = dict(optimum.lengths), optimum.cut
    everyone = {(s, d): 1 for s in topology.compute_nodes for d in topology.compute_nodes if s != d}
    hierarchical = {p: found[0][0] for p, found in _relayed(topology, everyone, False).items()}
    direct = {p: found[0][0] for p, found in _relayed(topology, everyone, True).items()}
    spray = {
        p: tuple(path for path, _ in found) for p, found in _sprayed(topology, everyone).items()
    }
    return ReplanBasis(
        topology,
        shares,
        lengths,
        cut,
        hierarchical,
        direct,
        spray,
        time.perf_counter() - start,
    )


@dataclass(frozen=True)
class Replan:
    """A re-planned schedule, its certified ``lower_bound`` (``bound`` says which) and
    ``gap = schedule.time_factor / lower_bound``; ``method`` the candidate that won."""

    schedule: DemandSchedule
    lower_bound: Fraction
    bound: str
    gap: Fraction
    seconds: float

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            "method": self.schedule.method,
            "time_factor": fraction_text(self.schedule.time_factor),
            "time_us": round(self.schedule.time_us, 6),
            "lower_bound": fraction_text(self.lower_bound),
            "bound": self.bound,
            "gap": fraction_text(self.gap),
            "seconds": round(self.seconds, 4),
        }


def _warm_routes(basis: ReplanBasis, pairs: Mapping[tuple[str, str], int]) -> list[Route]:
    routes = []
    for pair, amount in pairs.items():
        found = basis.shares.get(pair)
        if not found:
            routes.append(Route(*pair, (RoutePath(amount, basis.hierarchical[pair]),)))
            continue
        counts = _chunks([w for _, w in found], amount)
        steps = tuple(RoutePath(b, path) for (path, _), b in zip(found, counts, strict=True) if b)
        routes.append(Route(*pair, steps))
    return routes


def _spray_routes(basis: ReplanBasis, pairs: Mapping[tuple[str, str], int]) -> list[Route]:
    """Each pair's bytes as evenly as whole bytes allow over its spray paths."""
    routes = []
    for pair, amount in pairs.items():
        found = basis.spray[pair]
        share, extra = divmod(amount, len(found))  # the first ``extra`` paths take one more
        steps = tuple(
            RoutePath(share + (i < extra), path)
            for i, path in enumerate(found)
            if share + (i < extra)
        )
        routes.append(Route(*pair, steps))
    return routes


def _time(topology: Topology, routes: list[Route]) -> Fraction:
    load: dict[Arc, int] = {}
    for route in routes:
        for step in route.paths:
            for arc in zip(step.path, step.path[1:], strict=False):
                load[arc] = load.get(arc, 0) + step.chunks
    capacity = topology.capacity
    return max(Fraction(x) / capacity[arc] for arc, x in load.items())


def replan(basis: ReplanBasis, demand: Demand) -> Replan:
    """A verified schedule for ``demand`` from ``basis``, with its certified gap.

    Cost: linear in the paths of the basis plus one Dijkstra per source for the length
    bound; no LP.

    Raises
    ------
    ArgumentError
        ``demand`` is not over the basis's topology.
    """
    from formulations.multicommodity import Commodity
    from optcoll.bounds.multicommodity import length_bound

    instance_argument(basis, ReplanBasis, "basis", "optcoll.schedules.replan.replan_basis")
    topology = basis.topology
    check_demand(topology, demand)
    start = time.perf_counter()
    pairs = demand.pairs()
    candidates = {
        **({"warm": _warm_routes(basis, pairs)} if basis.shares else {}),
        "hierarchical": [
            Route(*p, (RoutePath(b, basis.hierarchical[p]),)) for p, b in pairs.items()
        ],
        "direct": [Route(*p, (RoutePath(b, basis.direct[p]),)) for p, b in pairs.items()],
        "spray": _spray_routes(basis, pairs),
    }
    times = {name: _time(topology, routes) for name, routes in candidates.items()}
    method = min(times, key=lambda name: (times[name], name != "warm"))
    rows: dict[str, dict[str, int]] = {}
    for (s, d), b in pairs.items():
        rows.setdefault(s, {})[d] = b
    commodities = [Commodity(s, sinks) for s, sinks in rows.items()]
    lengths = {arc: x for arc, x in basis.lengths.items() if x}
    # integer capacities c = bandwidth / unit: the bound divides by sum_a c(a) l(a)
    caps, unit = topology.integer_capacities()
    by_length = (
        length_bound(topology.node_ids, caps, commodities, lengths) / unit
        if lengths
        else Fraction(0)
    )
    cut = demand_cut_bound_core(topology, pairs, [basis.cut] if basis.cut else [])
    lower, kind = (by_length, "length function") if by_length >= cut.ratio else (cut.ratio, "cut")
    check = verify_demand_routes(topology, demand, candidates[method], lower)
    if not check.valid or check.time_factor != times[method]:
        raise ScheduleError(f"the re-planned schedule fails verification: {check.reason}")
    schedule = DemandSchedule(
        topology.name,
        demand,
        f"replan ({method})",
        tuple(candidates[method]),
        times[method],
        check.busiest,
        None,
        {"candidates": {name: fraction_text(t) for name, t in times.items()}},
    )
    return Replan(schedule, lower, kind, times[method] / lower, time.perf_counter() - start)
