"""Simulating an all-to-allv schedule: its routes' bytes executed on the links.

Each path of a :class:`~optcoll.schedules.alltoallv.DemandSchedule` (or any list of routes
whose ``chunks`` count bytes) sends its bytes in slices of at most ``slice_bytes``
(default 512 KiB, the simulator's NCCL step), one connection per pair, through the event
simulator of :mod:`optcoll.sim.simulator` (the same links, latencies, per-step overhead and
earliest-in-the-data order as every other schedule). A slice's place in the order is how
far through its path's bytes it lies, so every pair progresses evenly.

The completion time is never below the bandwidth bound ``schedule.time_factor`` (links
serve one slice at a time at full bandwidth); the difference is latency, step overhead and
queueing.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.core.demand import uniform_demand
>>> from optcoll.schedules.alltoallv import demand_schedule
>>> topo = load_topology("dgx-a100:1")
>>> s = demand_schedule(topo, uniform_demand(topo.compute_nodes, 2**20))
>>> run = simulate_demand_schedule(topo, s.routes)
>>> s.time_us <= run.time_us < 1.2 * s.time_us + 10
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

from optcoll.core.cost import DEFAULT_LATENCY
from optcoll.core.schedule import Route
from optcoll.core.topology import Topology
from optcoll.sim.simulator import (
    DEFAULT_OVERHEAD,
    DEFAULT_SLICE,
    Network,
    Simulation,
    TaskGraph,
    simulate,
)

__all__ = ["demand_tasks", "simulate_demand_schedule", "simulate_demand_phases"]


def demand_tasks(network: Network, routes: Iterable[Route], slice_bytes: int) -> TaskGraph:
    """The task graph of ``routes`` (``chunks`` = bytes): one connection per pair, every
    path's bytes in ``ceil(bytes / slice_bytes)`` equal slices."""
    graph = TaskGraph()
    for route in routes:
        for step in route.paths:
            arcs = network.path(step.path)
            count = max(1, math.ceil(step.chunks / slice_bytes))
            piece = step.chunks / count
            for number in range(count):
                graph.add((route.src, route.dst), arcs, piece, (), number / count)
    return graph


def simulate_demand_schedule(
    topology: Topology,
    routes: Iterable[Route],
    *,
    slice_bytes: int = DEFAULT_SLICE,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Simulation:
    """Simulate ``routes`` on ``topology``; ``Simulation.size`` is the bytes routed."""
    routes = list(routes)
    network = Network.of(topology, default_latency)
    graph = demand_tasks(network, routes, slice_bytes)
    size = sum(step.chunks for route in routes for step in route.paths)
    return simulate(graph, network, size, overhead=overhead)


def simulate_demand_phases(
    topology: Topology,
    phases: Sequence[Sequence[Route]],
    *,
    slice_bytes: int = DEFAULT_SLICE,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> float:
    """The completion time in µs of ``phases`` run one after the other with a barrier
    between them (a phased schedule such as ``"birkhoff"``): the sum of every phase's
    simulated time.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.schedule import Route, RoutePath
    >>> topo = load_topology("star:2,bw=1")
    >>> hop = [Route("h0", "h1", (RoutePath(1000, ("h0", "hub", "h1")),))]
    >>> one = simulate_demand_schedule(topo, hop).time_us
    >>> simulate_demand_phases(topo, [hop, hop]) == 2 * one
    True
    """
    network = Network.of(topology, default_latency)
    total = 0.0
    for routes in phases:
        graph = demand_tasks(network, routes, slice_bytes)
        size = sum(step.chunks for route in routes for step in route.paths)
        total += simulate(graph, network, size, overhead=overhead).time_us
    return total
