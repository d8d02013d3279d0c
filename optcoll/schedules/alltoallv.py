"""All-to-allv schedules: the optimum's paths in bytes, and the baselines users run.

A :class:`DemandSchedule` sends each pair's bytes (a :class:`~optcoll.core.demand.Demand`)
along explicit paths: one :class:`~optcoll.core.schedule.Route` per pair with demand,
its :class:`~optcoll.core.schedule.RoutePath` ``chunks`` counting **bytes**. Its time in
the bandwidth model is ``max_a load(a) / bandwidth(a)`` (bytes per bandwidth unit),
recomputed by the independent :func:`optcoll.verify.demand.verify_demand_routes`.

Methods (:data:`DEMAND_METHODS`):

``"optimal"``
    The exact optimum's routing (:func:`optcoll.bounds.demand.demand_optimum`)
    decomposed into paths per pair (:func:`demand_path_decomposition`, exact weights),
    each pair's weights rounded to whole bytes by largest remainders (a path moves by
    less than one byte, so a link carries at most one extra byte per pair whose path on
    it was rounded up; ``stats["ratio_to_optimum"]`` gives the exact cost, negligible for
    real sizes).
``"spray"``
    Ours, without an LP: every cross-box pair's bytes split evenly over all the rails
    (inside the source's box to its GPU on rail ``j``, across on rail ``j``, inside the
    destination's box), so every box's network links share its traffic evenly.
``"direct"``
    What NCCL's point-to-point all-to-all does: every pair's bytes on one fewest-hop path
    through switches (and NICs) only; where the network offers none (rail-optimised
    boxes without a spine), NCCL's PXN: first inside the box to the GPU at the
    destination's position (its rail), then through the network.
``"birkhoff"``
    FLASH's phases (:mod:`optcoll.schedules.birkhoff`): the demand padded to equal row and
    column sums and decomposed into permutations, one phase each, run one after the other
    (a barrier between phases; no receiver ever has two senders at once), each pair's
    bytes of a phase on its ``"direct"`` path. The time is the **sum** of the phases'
    exact times (each phase verified on its own), never below the concurrent time of the
    same routes.
``"flash"``
    FLASH as published, at the level of boxes (the nodes' ``group``; a node without one
    is its own box): the pairs inside a box first, in a phase of their own (on NVLink),
    then the box-to-box matrix decomposed the same way; a phase's bytes from box ``a`` to
    box ``pi(a)`` are taken from its pairs in order, and each pair's share sprayed over
    every rail (the GPU of each rail in both boxes relays: FLASH's balancing inside the
    box). Time: the sum of the phases' exact times.
``"hierarchical"``
    What DeepEP's dispatch does across boxes: the bytes go first over the network to
    the GPU of the destination's box at the source's own position in its box (same
    rail), then inside the box (NVLink) to the destination; pairs inside a box go
    direct. Needs boxes (the nodes' ``group``); a topology without them is all direct.

A pair that none of these reaches takes a fewest-hop path through any node.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.core.demand import demand_matrix
>>> topo = load_topology("ring:3,direction=uni,bw=1")
>>> d = demand_matrix([[0, 4, 0], [0, 0, 0], [0, 2, 0]], topo.compute_nodes)
>>> s = demand_schedule(topo, d)
>>> s.time_factor, s.optimum, [(r.src, r.dst, [(p.chunks, p.path) for p in r.paths]) for r in s.routes]
(Fraction(6, 1), Fraction(6, 1), [('n0', 'n1', [(4, ('n0', 'n1'))]), ('n2', 'n1', [(2, ('n2', 'n0', 'n1'))])])
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from optcoll.bounds.demand import (
    DemandOptimum,
    check_demand,
    cut_lengths,
    demand_cut_bound_core,
    demand_optimum_core,
    time_us,
)
from optcoll.bounds.demand_trees import tree_optimum_core
from optcoll.core.arguments import choice_argument, topology_argument
from optcoll.core.demand import Demand
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import Route, RoutePath
from optcoll.core.topology import Topology
from optcoll.exceptions import MethodError, ScheduleError
from optcoll.schedules.alltoall import _cancel_cycles, _chunks, _peel_paths
from optcoll.schedules.birkhoff import birkhoff_phases
from optcoll.verify.demand import verify_demand_routes

__all__ = [
    "OPTIMUM_METHODS",
    "proved_optimum",
    "DEMAND_METHODS",
    "ROUTED_METHODS",
    "PHASED_METHODS",
    "DemandSchedule",
    "demand_schedule",
    "demand_path_decomposition",
    "fewest_hop_paths",
]

Arc = tuple[str, str]
Path = tuple[str, ...]

#: The routings that send every pair's bytes at once (``optcoll solve --demand`` prints them).
ROUTED_METHODS = ("optimal", "spray", "direct", "hierarchical")

#: The phased schedules (a barrier between phases): FLASH's Birkhoff decompositions.
PHASED_METHODS = ("birkhoff", "flash")

#: The ways :func:`demand_schedule` routes a demand: the routings, then the phased ones.
DEMAND_METHODS = (*ROUTED_METHODS, *PHASED_METHODS)


@dataclass(frozen=True)
class DemandSchedule:
    """Routes (``chunks`` = bytes) for ``demand`` on ``topology``, verified.

    ``time_factor``: the exact time in bytes per bandwidth unit (for GB/s,
    :attr:`time_us` in µs), recomputed by the independent verifier; ``optimum``: the
    proved optimum when it was computed; ``busiest``: the links that take longest.
    ``phases``: for a phased schedule (``"birkhoff"``), the routes of each phase, run one
    after the other (``routes`` is then their union, and ``time_factor`` the sum of the
    phases' times).
    """

    topology: str
    demand: Demand
    method: str
    routes: tuple[Route, ...]
    time_factor: Fraction
    busiest: tuple[Arc, ...]
    optimum: Fraction | None = None
    stats: Mapping[str, Any] = field(default_factory=dict)
    phases: tuple[tuple[Route, ...], ...] = ()

    @property
    def time_us(self) -> float:
        """The bandwidth-model time in µs (bandwidths read as GB/s)."""
        return time_us(self.time_factor)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (exact values as ``"p/q"`` strings)."""
        data: dict[str, Any] = {
            "method": self.method,
            "time_factor": fraction_text(self.time_factor),
            "time_us": round(self.time_us, 6),
            "routes": len(self.routes),
            "paths": sum(len(r.paths) for r in self.routes),
            "busiest_links": [list(arc) for arc in self.busiest],
        }
        if self.optimum is not None:
            data["ratio_to_optimum"] = fraction_text(self.time_factor / self.optimum)
        return data | dict(self.stats)


def demand_path_decomposition(
    topology: Topology,
    routing: Mapping[str, Mapping[Arc, Fraction]],
    pairs: Mapping[tuple[str, str], int],
) -> dict[tuple[str, str], list[tuple[Path, Fraction]]]:
    """Each pair's paths with exact weights summing to its bytes, from per-source flows.

    ``routing[s]`` is source ``s``'s flow, delivering ``pairs[(s, d)]`` to every ``d``.
    Cycles are cancelled first; then, sink by sink, a fewest-hop path in the remaining
    flow carries as much as its smallest arc and the sink's remaining demand allow. Every
    step empties an arc or a demand: at most ``|links| + N`` paths per source, loads
    never above the flow's.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topo = load_topology("ring:3,direction=uni,bw=1")
    >>> flow = {("n0", "n1"): Fraction(5), ("n1", "n2"): Fraction(2)}
    >>> demand_path_decomposition(topo, {"n0": flow}, {("n0", "n1"): 3, ("n0", "n2"): 2})
    {('n0', 'n1'): [(('n0', 'n1'), Fraction(3, 1))], ('n0', 'n2'): [(('n0', 'n1', 'n2'), Fraction(2, 1))]}
    """
    order = {arc: i for i, arc in enumerate(topology.capacity)}
    sinks: dict[str, list[tuple[str, int]]] = {}
    for (s, d), b in pairs.items():
        sinks.setdefault(s, []).append((d, b))
    result: dict[tuple[str, str], list[tuple[Path, Fraction]]] = {}
    for source, wanted in sinks.items():
        flow = {arc: Fraction(x) for arc, x in routing[source].items() if x > 0}
        _cancel_cycles(flow)
        for sink, amount in wanted:
            result[(source, sink)] = _peel_paths(flow, order, source, sink, Fraction(amount))
    return result


def fewest_hop_paths(topology: Topology) -> dict[str, dict[str, Path]]:
    """From each compute node, one fewest-hop path to every other through switches only
    (only switches and NICs relay), where one exists. Breadth-first in the topology's arc
    order, so ties go to the first-listed link: deterministic.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> fewest_hop_paths(load_topology("star:3"))["h0"]["h2"]
    ('h0', 'hub', 'h2')
    """
    out: dict[str, list[str]] = {}
    for u, v in topology.capacity:
        out.setdefault(u, []).append(v)
    switches = {v for v in topology.node_ids if not topology.is_compute(v)}
    compute = set(topology.compute_nodes)
    result = {}
    for source in topology.compute_nodes:
        paths = _breadth_first(out, source, switches)
        result[source] = {v: p for v, p in paths.items() if v in compute and v != source}
    return result


def _boxes(topology: Topology) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The compute nodes of every box (``group``) in rank order, and each one's position."""
    members: dict[str, list[str]] = {}
    for v in topology.compute_nodes:
        group = topology.node[v].group
        if group is not None:
            members.setdefault(group, []).append(v)
    position = {v: i for group in members.values() for i, v in enumerate(group)}
    return members, position


def _relayed(
    topology: Topology, pairs: Mapping[tuple[str, str], int], first_hop_local: bool
) -> dict[tuple[str, str], list[tuple[Path, Fraction]]]:
    """Each pair on one path: through switches only, or relayed by one GPU of the source's
    box at the destination's position (``first_hop_local``, NCCL's PXN), or of the
    destination's box at the source's position (DeepEP); fewest hops in each leg. A pair
    with no such path takes a fewest-hop path through any node."""
    direct = fewest_hop_paths(topology)
    members, position = _boxes(topology)
    out: dict[str, list[str]] = {}
    for u, v in topology.capacity:
        out.setdefault(u, []).append(v)
    result = {}
    anywhere: dict[str, dict[str, Path]] = {}
    for s, d in pairs:
        gs, gd = topology.node[s].group, topology.node[d].group
        path: Path = direct[s].get(d, ())
        if gs is not None and gd is not None and gs != gd and (not first_hop_local or not path):
            box, at = (members[gs], position[d]) if first_hop_local else (members[gd], position[s])
            relay = box[at] if at < len(box) else None
            if relay is not None and relay not in (s, d):
                first, second = direct[s].get(relay, ()), direct[relay].get(d, ())
                joined = first + second[1:]
                if first and second and len(set(joined)) == len(joined):
                    path = joined
        if not path:
            if s not in anywhere:
                anywhere[s] = _breadth_first(out, s, None)
            path = anywhere[s][d]
        result[(s, d)] = [(path, Fraction(pairs[(s, d)]))]
    return result


def _sprayed(
    topology: Topology, pairs: Mapping[tuple[str, str], int]
) -> dict[tuple[str, str], list[tuple[Path, Fraction]]]:
    """Each cross-box pair's bytes split evenly over every position ``j`` of the boxes:
    inside the source's box to its GPU ``j``, through the network to the destination box's
    GPU ``j`` (the same rail), inside that box to the destination; pairs in one box (or
    without a path of that shape) as ``"hierarchical"``."""
    direct = fewest_hop_paths(topology)
    members, _ = _boxes(topology)
    fallback = _relayed(topology, pairs, False)
    result = {}
    for (s, d), amount in pairs.items():
        gs, gd = topology.node[s].group, topology.node[d].group
        found: list[Path] = []
        if gs is not None and gd is not None and gs != gd:
            for first, second in zip(members[gs], members[gd], strict=False):
                legs = [
                    direct[u].get(v, ())
                    for u, v in ((s, first), (first, second), (second, d))
                    if u != v
                ]
                if all(legs):
                    joined = legs[0] + tuple(x for leg in legs[1:] for x in leg[1:])
                    if len(set(joined)) == len(joined):
                        found.append(joined)
        if found:
            result[(s, d)] = [(path, Fraction(amount, len(found))) for path in found]
        else:
            result[(s, d)] = fallback[(s, d)]
    return result


def _breadth_first(
    out: Mapping[str, list[str]], source: str, relays: set[str] | None
) -> dict[str, Path]:
    """Fewest-hop paths from ``source``; only ``relays`` (None: every node) pass data on."""
    parent: dict[str, str | None] = {source: None}
    frontier = [source]
    while frontier:
        following = []
        for u in frontier:
            for v in out.get(u, ()):
                if v not in parent:
                    parent[v] = u
                    if relays is None or v in relays:
                        following.append(v)
        frontier = following
    paths: dict[str, Path] = {}
    for v in parent:
        walk = [v]
        while (up := parent[walk[-1]]) is not None:
            walk.append(up)
        paths[v] = tuple(reversed(walk))
    return paths


def demand_schedule(
    topology: Topology,
    demand: Demand,
    method: str = "optimal",
    *,
    optimum: DemandOptimum | None = None,
) -> DemandSchedule:
    """A verified schedule for ``demand`` by ``method`` (:data:`DEMAND_METHODS`).

    ``optimum`` reuses a computed :func:`~optcoll.bounds.demand.demand_optimum` (its
    routing for ``"optimal"``, its value as the reference for every method).

    Raises
    ------
    ArgumentError
        An unknown method, or a demand over other ranks.
    ScheduleError
        The independent verifier refuses the built schedule (a bug, never an input).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.demand import uniform_demand
    >>> topo = load_topology("dgx-a100:2")
    >>> s = demand_schedule(topo, uniform_demand(topo.compute_nodes, 25))
    >>> s.time_factor == 25 * Fraction(8, 25), demand_schedule(topo, s.demand, "direct").time_factor
    (True, Fraction(8, 1))
    """
    topology_argument(topology)
    check_demand(topology, demand)
    choice_argument(method, DEMAND_METHODS, "method")
    start = time.perf_counter()
    pairs = demand.pairs()
    if method in PHASED_METHODS:
        return _phased_schedule(topology, demand, method, optimum, start)
    if method == "optimal":
        if optimum is None:
            optimum = demand_optimum_core(topology, demand, None)
        exact = demand_path_decomposition(topology, optimum.routing, pairs)
    elif method == "spray":
        exact = _sprayed(topology, pairs)
    else:
        exact = _relayed(topology, pairs, method == "direct")
    routes = []
    for (s, d), pieces in exact.items():
        whole = _chunks([w / pairs[(s, d)] for _, w in pieces], pairs[(s, d)])
        steps = tuple(RoutePath(b, path) for (path, _), b in zip(pieces, whole, strict=True) if b)
        routes.append(Route(s, d, steps))
    reference = None if optimum is None else optimum.time_factor
    check = verify_demand_routes(topology, demand, routes, reference)
    if not check.valid or check.time_factor is None:
        raise ScheduleError(f"the {method} all-to-allv schedule fails verification: {check.reason}")
    stats = {
        "denominator": math.lcm(*(w.denominator for ps in exact.values() for _, w in ps)),
        "seconds": round(time.perf_counter() - start, 3),
    }
    return DemandSchedule(
        topology.name,
        demand,
        method,
        tuple(routes),
        check.time_factor,
        check.busiest,
        reference,
        stats,
    )


def _phase_pairs(
    topology: Topology, demand: Demand, method: str
) -> tuple[list[dict[tuple[str, str], int]], dict[tuple[str, str], list[tuple[Path, Fraction]]]]:
    """The phases (each pair's bytes in each) and every pair's paths (with their shares)
    of ``"birkhoff"`` (ranks; direct paths) or ``"flash"`` (boxes; intra-box pairs first
    on their own phase, then the box matrix's permutations, pairs' bytes taken in order
    within each pair of boxes, sprayed over the rails)."""
    ranks = demand.ranks
    pairs = demand.pairs()
    if method == "birkhoff":
        phases = [
            {(ranks[i], ranks[j]): b for (i, j), b in phase.pairs.items()}
            for phase in birkhoff_phases(demand.bytes)
        ]
        return phases, _relayed(topology, pairs, True)
    unit = {v: topology.node[v].group or v for v in ranks}
    units = list(dict.fromkeys(unit[v] for v in ranks))
    index = {u: i for i, u in enumerate(units)}
    inside = {(s, d): b for (s, d), b in pairs.items() if unit[s] == unit[d]}
    queues: dict[tuple[int, int], list[list[Any]]] = {}
    matrix = [[0] * len(units) for _ in units]
    for (s, d), b in pairs.items():
        if unit[s] != unit[d]:
            key = (index[unit[s]], index[unit[d]])
            queues.setdefault(key, []).append([s, d, b])
            matrix[key[0]][key[1]] += b
    phases = [inside] if inside else []
    for phase in birkhoff_phases(matrix):
        taken: dict[tuple[str, str], int] = {}
        for key, amount in sorted(phase.pairs.items()):
            queue = queues[key]
            while amount:
                s, d, left = queue[0]
                step = min(amount, left)
                taken[(s, d)] = step
                amount -= step
                if step == left:
                    queue.pop(0)
                else:
                    queue[0][2] = left - step
        phases.append(taken)
    return phases, _sprayed(topology, pairs)


def _phased_schedule(
    topology: Topology, demand: Demand, method: str, optimum: DemandOptimum | None, start: float
) -> DemandSchedule:
    """``"birkhoff"`` or ``"flash"`` (:func:`demand_schedule`): phases one after the other,
    each verified on its own; the union verified against the whole demand."""
    ranks, n = demand.ranks, len(demand.ranks)
    rank = {v: i for i, v in enumerate(ranks)}
    pairs = demand.pairs()
    found, paths = _phase_pairs(topology, demand, method)
    phases: list[tuple[Route, ...]] = []
    total = Fraction(0)
    merged: dict[tuple[str, str], dict[Path, int]] = {}
    for phase in found:
        if not phase:
            continue  # padding only: every rank idle
        rows = [[0] * n for _ in range(n)]
        routes = []
        for (src, dst), b in phase.items():
            rows[rank[src]][rank[dst]] = b
            pieces = paths[(src, dst)]
            whole = _chunks([w / pairs[(src, dst)] for _, w in pieces], b)
            steps = tuple(RoutePath(c, p) for (p, _), c in zip(pieces, whole, strict=True) if c)
            routes.append(Route(src, dst, steps))
            into = merged.setdefault((src, dst), {})
            for step in steps:
                into[step.path] = into.get(step.path, 0) + step.chunks
        part = Demand(ranks, tuple(map(tuple, rows)), f"{demand.origin}, phase")
        check = verify_demand_routes(topology, part, routes)
        if not check.valid or check.time_factor is None:
            raise ScheduleError(f"a {method} phase fails verification: {check.reason}")
        total += check.time_factor
        phases.append(tuple(routes))
    union = tuple(
        Route(s, d, tuple(RoutePath(b, p) for p, b in merged[(s, d)].items())) for s, d in pairs
    )
    reference = None if optimum is None else optimum.time_factor
    check = verify_demand_routes(topology, demand, union, reference)
    if not check.valid or check.time_factor is None:
        raise ScheduleError(f"the {method} all-to-allv schedule fails verification: {check.reason}")
    stats = {
        "phases": len(phases),
        "concurrent_time_factor": fraction_text(check.time_factor),
        "seconds": round(time.perf_counter() - start, 3),
    }
    return DemandSchedule(
        topology.name,
        demand,
        method,
        union,
        total,
        check.busiest,
        reference,
        stats,
        tuple(phases),
    )


#: Ways :func:`proved_optimum` finds the optimum.
OPTIMUM_METHODS = ("auto", "columns", "lp", "cut")


def proved_optimum(
    topology: Topology, demand: Demand, method: str = "auto", *, time_limit: float | None = None
) -> DemandOptimum:
    """The exact optimum of ``demand``, proved by a cut when one is met, else by an LP.

    ``"cut"``: the ``"spray"`` routing's exact time is compared with the cut bound over
    single compute nodes and boxes (:func:`optcoll.bounds.demand.demand_cut_bound`); equal,
    the routing is optimal and the cut proves it (its length function,
    :func:`~optcoll.bounds.demand.cut_lengths`, is the certificate), with no LP, at any
    scale. Not equal, ``"cut"`` raises. ``"columns"``: column generation over each
    source's trees (:func:`optcoll.bounds.demand_trees.tree_optimum`). ``"lp"``: the edge LP of every source
    (:func:`~optcoll.bounds.demand.demand_optimum`, the reference; small topologies).
    ``"auto"`` (default): ``"cut"`` if it succeeds, else ``"columns"``.

    Raises
    ------
    ArgumentError
        An unknown method or a demand over other ranks.
    MethodError
        ``"cut"`` when the spray does not meet the cut bound (the message gives both).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.demand import uniform_demand
    >>> topo = load_topology("dgx-h100:2")
    >>> found = proved_optimum(topo, uniform_demand(topo.compute_nodes, 800))
    >>> found.method, found.time_factor, found.certificate_bound
    ('cut', Fraction(128, 1), Fraction(128, 1))
    """
    topology_argument(topology)
    check_demand(topology, demand)
    choice_argument(method, OPTIMUM_METHODS, "method")
    if method == "lp":
        return demand_optimum_core(topology, demand, time_limit)
    start = time.perf_counter()
    pairs = demand.pairs()
    if method == "columns":
        return tree_optimum_core(topology, demand, {}, time_limit)
    cut = demand_cut_bound_core(topology, pairs, ())
    exact = _sprayed(topology, pairs)
    routes = []
    for (s, d), pieces in exact.items():
        whole = _chunks([w / pairs[(s, d)] for _, w in pieces], pairs[(s, d)])
        steps = tuple(RoutePath(b, p) for (p, _), b in zip(pieces, whole, strict=True) if b)
        routes.append(Route(s, d, steps))
    check = verify_demand_routes(topology, demand, routes, cut.ratio)
    if not check.valid or check.time_factor != cut.ratio:
        if method == "cut":
            raise MethodError(
                f"the spray routing takes {check.time_factor}, above the cut bound "
                f"{cut.ratio}: no cut proves it optimal; use method='columns'"
            )
        return tree_optimum_core(topology, demand, {}, time_limit)
    routing: dict[str, dict[Arc, Fraction]] = {}
    for route in routes:
        flow = routing.setdefault(route.src, {})
        for step in route.paths:
            for arc in zip(step.path, step.path[1:], strict=False):
                flow[arc] = flow.get(arc, Fraction(0)) + step.chunks
    lengths = cut_lengths(topology, cut.side)
    tight = tuple(sorted(lengths))
    return DemandOptimum(
        topology.name,
        demand,
        cut.ratio,
        routing,
        lengths,
        cut.ratio,
        tight,
        cut.ratio,
        cut.side,
        cut.exhaustive,
        None,
        None,
        time.perf_counter() - start,
        "cut",
    )
