"""Independent check of an all-to-allv schedule: every pair's bytes delivered, loads exact.

A demand schedule is a list of :class:`~optcoll.core.schedule.Route`, one per pair with
bytes to send, whose :class:`~optcoll.core.schedule.RoutePath` ``chunks`` count **bytes**
sent along the path. :func:`verify_demand_routes` shares no code with the builders
(:mod:`optcoll.schedules.alltoallv`): it re-walks every path on the topology's links and
checks that

* each path runs from its route's source to its destination over existing links, visits
  no node twice, and carries a positive integer number of bytes;
* each pair's paths carry exactly its demand, and no route serves a pair without demand
  or a pair twice (the diagonal never travels);

then sums the bytes on every link and returns the exact time ``max_a load(a) /
bandwidth(a)`` (bytes per bandwidth unit), the busiest links, and whether a stated
``optimum`` is respected (a schedule faster than a proved optimum is a wrong claim).

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.core.demand import demand_matrix
>>> from optcoll.core.schedule import Route, RoutePath
>>> topo = build("star:2,bw=2")
>>> d = demand_matrix([[0, 6], [0, 0]], topo.compute_nodes)
>>> routes = [Route("h0", "h1", (RoutePath(6, ("h0", "hub", "h1")),))]
>>> check = verify_demand_routes(topo, d, routes)
>>> check.valid, check.time_factor, check.busiest
(True, Fraction(3, 1), (('h0', 'hub'), ('hub', 'h1')))
>>> verify_demand_routes(topo, d, [Route("h0", "h1", (RoutePath(5, ("h0", "hub", "h1")),))]).reason
'pair h0 -> h1: its paths carry 5 bytes, the demand is 6'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from optcoll.core.demand import Demand
from optcoll.core.schedule import Route
from optcoll.core.topology import Topology
from optcoll.verify.report import Finding, Verdict

__all__ = ["DemandVerification", "verify_demand_routes"]

Arc = tuple[str, str]


@dataclass(frozen=True)
class DemandVerification(Verdict):
    """``valid`` with the ``reason`` when not; the exact ``time_factor`` (bytes per
    bandwidth unit), ``loads`` in bytes per link and the ``busiest`` links."""

    valid: bool
    reason: str | None = None
    time_factor: Fraction | None = None
    loads: dict[Arc, int] = field(default_factory=dict)
    busiest: tuple[Arc, ...] = ()
    findings: tuple[Finding, ...] = field(init=False, repr=False, compare=False)


class _Invalid(Exception):
    pass


def verify_demand_routes(
    topology: Topology,
    demand: Demand,
    routes: Iterable[Route],
    optimum: Fraction | None = None,
) -> DemandVerification:
    """Check ``routes`` against ``demand`` on ``topology`` (see the module docstring).

    ``optimum``: a proved lower bound; a schedule whose exact time is below it is
    invalid (its claim or the bound is wrong).
    """
    try:
        loads = _loads(topology, demand, routes)
    except _Invalid as bad:
        return DemandVerification(False, str(bad))
    capacity = topology.capacity
    times = {arc: load / capacity[arc] for arc, load in loads.items()}
    worst = max(times.values(), default=Fraction(0))
    busiest = tuple(arc for arc in capacity if times.get(arc) == worst)
    if optimum is not None and worst < optimum:
        return DemandVerification(
            False,
            f"the schedule's exact time {worst} is below the stated optimum {optimum}",
            worst,
            loads,
            busiest,
        )
    return DemandVerification(True, None, worst, loads, busiest)


def _loads(topology: Topology, demand: Demand, routes: Iterable[Route]) -> dict[Arc, int]:
    if demand.ranks != topology.compute_nodes:
        raise _Invalid("the demand's ranks are not the topology's compute nodes in rank order")
    wanted = demand.pairs()
    seen: set[tuple[str, str]] = set()
    loads: dict[Arc, int] = {}
    for route in routes:
        pair = (route.src, route.dst)
        where = f"pair {route.src} -> {route.dst}"
        if pair not in wanted:
            raise _Invalid(f"{where}: a route for a pair without demand")
        if pair in seen:
            raise _Invalid(f"{where}: routed twice")
        seen.add(pair)
        total = 0
        for j, step in enumerate(route.paths):
            path, amount = step.path, step.chunks
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
                raise _Invalid(
                    f"{where}, path {j}: bytes must be a positive integer, got {amount!r}"
                )
            if len(path) < 2 or path[0] != route.src or path[-1] != route.dst:
                raise _Invalid(f"{where}, path {j}: it must run from {route.src} to {route.dst}")
            if len(set(path)) != len(path):
                raise _Invalid(f"{where}, path {j}: it visits a node twice")
            for arc in zip(path, path[1:], strict=False):
                if arc not in topology.capacity:
                    raise _Invalid(f"{where}, path {j}: there is no link {arc[0]} -> {arc[1]}")
                loads[arc] = loads.get(arc, 0) + amount
            total += amount
        if total != wanted[pair]:
            raise _Invalid(f"{where}: its paths carry {total} bytes, the demand is {wanted[pair]}")
    missing = [pair for pair in wanted if pair not in seen]
    if missing:
        s, d = missing[0]
        raise _Invalid(f"pair {s} -> {d}: no route delivers its {wanted[(s, d)]} bytes")
    return loads
