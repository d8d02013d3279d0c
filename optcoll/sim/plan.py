"""Which schedule to run at which message size: every candidate simulated, a certified gap.

For each message size :func:`plan` simulates every candidate (:mod:`optcoll.sim.simulator`)
and keeps the fastest, with its ratio to a lower bound that no schedule beats in the
simulator's model:

    lower bound (µs) = max(latency bound, data(M) * bound)

* the **bandwidth bound** ``data(M) * bound``: ``(M / N) * r*`` for allgather and for
  allreduce (an allreduce of inputs that are zero outside each node's own shard is an
  allgather, so r* bounds every allreduce algorithm; reduce-scatter followed by allgather
  needs ``2 r*``), the reversed topology's r* for reduce-scatter, the min-cut bound times
  ``M`` for broadcast and reduce, ``(M / N) * t*`` for all-to-all
  (:func:`optcoll.schedules.collectives.collective_lower_bound`). A simulated link is busy exactly
  its load over its bandwidth, so a schedule takes at least ``data(M) * time factor``;
* the **latency bound** ``overhead + max over (source, destination)`` of the smallest sum
  of link latencies on a path between them (sources and destinations: every pair of
  compute nodes; from the root for broadcast, to it for reduce): data that must cross from
  one to the other pays at least one step and those latencies.

Candidates (those that apply to the collective): the optimal ``k`` (ForestColl's), the
power-of-two ``k``'s :func:`optcoll.schedules.deploy.deployable_schedule` tries (1, 2, 4, ...
up to the first within 1 % of the optimum), of which ``k = 1`` has the fewest chunks
(one tree per root, as :func:`optcoll.schedules.packing.pack_arborescences` builds it); the ring and
the hierarchical ring (as tree schedules, :func:`optcoll.sim.cost_model.ring_schedule`); NCCL's
double binary tree (allreduce); where up to 8 switches reduce or multicast (NVLS, SHARP), the
optimal aggregation trees, ``in-network`` (allreduce,
:func:`optcoll.schedules.aggregation.aggregation_schedule`), whose bandwidth bound is the
cut bound ``M / lambda`` (:func:`optcoll.bounds.in_network.reduction_cut`: every allreduce,
whatever the switches do), the larger of the two floors; for all-to-all the optimal routes, ``direct`` (every
pair on its widest path) and ``hierarchical (rail)``
(:func:`optcoll.sim.cost_model.hierarchical_alltoall_schedule`).

Examples
--------
>>> from optcoll.topologies import build
>>> rows = plan(build("dgx-a100:1"), "allgather", [1024, 2**30])
>>> [(r.method, round(r.ratio, 3)) for r in rows]  # one NVSwitch: a star from every GPU
[('optimal (k=1)', 1.001), ('optimal (k=1)', 1.001)]
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from optcoll.bounds.in_network import has_aggregation_lp, reduction_cut
from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.schedule import Schedule, Tree, canonical_collective
from optcoll.core.topology import Topology
from optcoll.exceptions import ExportError, ScheduleError
from optcoll.schedules.aggregation import aggregation_schedule
from optcoll.schedules.collectives import (
    _allreduce,
    _build_collective,
    _collective_lower_bound,
    _reduce_scatter,
)
from optcoll.schedules.deploy import DEFAULT_TOLERANCE, deployable_schedule
from optcoll.sim.cost_model import (
    DEFAULT_LATENCY,
    SIZES,
    direct_alltoall_schedule,
    double_binary_trees,
    hierarchical_alltoall_schedule,
    hierarchical_ring_schedule,
    link_latencies,
    ring_schedule,
)
from optcoll.sim.simulator import (
    DEFAULT_OVERHEAD,
    DEFAULT_SLICE,
    Network,
    TaskGraph,
    aggregation_tasks,
    data_bytes,
    schedule_tasks,
    simulate,
    tree_tasks,
)

__all__ = [
    "Candidate",
    "SizePlan",
    "candidates",
    "latency_bound",
    "plan",
    "size_bands",
    "schedule_bands",
]


@dataclass(frozen=True)
class Candidate:
    """A way to run the collective: a tree (or route) schedule, or trees that split the
    whole message among them (``trees`` run in ``phases``, e.g. the double binary tree)."""

    method: str
    schedule: Schedule | None = None
    trees: tuple[Tree, ...] = ()
    phases: tuple[bool, ...] = ()
    aggregation: AggregationSchedule | None = None

    def tasks(self, network: Network, size: int, slice_bytes: int | None) -> TaskGraph:
        """The candidate's task graph for a ``size``-byte collective."""
        if self.aggregation is not None:
            return aggregation_tasks(self.aggregation, network, size, slice_bytes=slice_bytes)
        if self.schedule is not None:
            return schedule_tasks(self.schedule, network, size, slice_bytes=slice_bytes)
        graph = TaskGraph()
        chunk = size / sum(t.chunks for t in self.trees)
        tree_tasks(graph, network, self.trees, chunk, self.phases, slice_bytes=slice_bytes)
        return graph


@dataclass(frozen=True)
class SizePlan:
    """The plan at one size: the fastest method, its time, the lower bound, every time."""

    size: int
    method: str
    time_us: float
    lower_bound_us: float
    candidates: tuple[tuple[str, float | None], ...]

    @property
    def ratio(self) -> float:
        """``time_us / lower_bound_us`` (>= 1: the certified gap)."""
        return self.time_us / self.lower_bound_us

    @property
    def algbw(self) -> float:
        """``size / time`` in GB/s, as :attr:`optcoll.sim.simulator.Simulation.algbw`."""
        return self.size / self.time_us / 1000.0

    def to_dict(self) -> dict[str, object]:
        """``{"bytes", "method", "time_us", "lower_bound_us", "ratio", "candidates":
        [{"method", "time_us"}, ...]}`` (``time_us`` None: too many steps to simulate)."""
        return {
            "bytes": self.size,
            "method": self.method,
            "time_us": round(self.time_us, 4),
            "lower_bound_us": round(self.lower_bound_us, 4),
            "ratio": round(self.ratio, 6),
            "candidates": [
                {"method": m, "time_us": None if t is None else round(t, 4)}
                for m, t in self.candidates
            ],
        }


def candidates(
    topology: Topology,
    collective: str = "allgather",
    *,
    root: str | None = None,
    tolerance: Fraction | None = None,
) -> list[Candidate]:
    """Every candidate that applies to ``collective`` on ``topology`` (see the module doc);
    the power-of-two ``k``'s go up to the first within ``tolerance`` of the optimum
    (default :data:`optcoll.schedules.deploy.DEFAULT_TOLERANCE`).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [c.method for c in candidates(build("dgx-a100:2"))]
    ['optimal (k=13)', 'k=1', 'k=2', 'k=4', 'k=8', 'ring', 'hierarchical ring']
    """

    collective = canonical_collective(collective)
    if collective in ("broadcast", "reduce"):
        root = root if root is not None else topology.compute_nodes[0]
    optimal = _build_collective(topology, collective, root=root)
    found = [Candidate(f"optimal (k={optimal.k})", optimal)]
    try:
        tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
        deployable = deployable_schedule(topology, collective, tolerance=tolerance, root=root)
        tried = [k for k, _ in deployable.tried]
    except ExportError:  # no power of two within the tolerance: the first few
        tried = [1, 2, 4, 8]
    for k in tried:
        if k != optimal.k:
            deployed = deployable_schedule(topology, collective, k=k, root=root)
            if deployed.allgather is None:  # one schedule (not two phases on two topologies)
                found.append(Candidate(f"k={k}", deployed.schedule))
    if collective == "alltoall":
        found.append(Candidate("direct", direct_alltoall_schedule(topology)))
        rail = hierarchical_alltoall_schedule(topology)
        if rail is not None:
            found.append(Candidate(str(rail.stats["method"]), rail))
        return found
    if collective in ("allgather", "reduce_scatter", "allreduce"):
        for ring in (ring_schedule(topology), hierarchical_ring_schedule(topology)):
            if ring is None:
                continue
            if collective == "reduce_scatter":
                ring = _reduce_scatter(ring, topology)
            elif collective == "allreduce":
                ring = _allreduce(ring, topology)
            found.append(Candidate(str(ring.stats["method"]), ring))
    if collective == "allreduce":
        found.append(
            Candidate("double binary tree", None, double_binary_trees(topology), (True, False))
        )
        if has_aggregation_lp(topology):
            found.append(Candidate("in-network", aggregation=aggregation_schedule(topology)))
    return found


def latency_bound(
    topology: Topology,
    collective: str = "allgather",
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> float:
    """``overhead`` plus the largest smallest-latency path (µs) data must take.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> latency_bound(build("dgx-a100:2"))  # a 1 µs step + 6 links of 1 µs between boxes
    7.0
    """
    latency = link_latencies(topology, default_latency)
    out: dict[str, list[tuple[str, float]]] = {}
    for (u, v), value in latency.items():
        out.setdefault(u, []).append((v, float(value)))
    collective = canonical_collective(collective)
    compute = topology.compute_nodes
    if collective in ("broadcast", "reduce"):
        root = root if root is not None else compute[0]
        sources = [root] if collective == "broadcast" else list(compute)
        targets = list(compute) if collective == "broadcast" else [root]
    else:
        sources, targets = list(compute), list(compute)
    worst = 0.0
    for source in sources:
        distance = _distances(out, source)
        worst = max(worst, max(distance[t] for t in targets))
    return overhead + worst


def _distances(out: dict[str, list[tuple[str, float]]], source: str) -> dict[str, float]:
    """Dijkstra: the smallest latency sum from ``source`` to every node."""
    distance = {source: 0.0}
    heap = [(0.0, source)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > distance[u]:
            continue
        for v, w in out.get(u, ()):
            if d + w < distance.get(v, float("inf")):
                distance[v] = d + w
                heapq.heappush(heap, (d + w, v))
    return distance


def plan(
    topology: Topology,
    collective: str = "allgather",
    sizes: Sequence[int] = SIZES,
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
    progress: bool = False,
    options: Sequence[Candidate] | None = None,
) -> list[SizePlan]:
    """For each size, the fastest of ``options`` (default :func:`candidates`) under the
    simulator, with the lower bound of the module docstring. A candidate whose task graph
    exceeds :data:`optcoll.sim.simulator.MAX_TASKS` at a size (a huge ``k``) gets no time there.
    """

    collective = canonical_collective(collective)
    if collective in ("broadcast", "reduce"):
        root = root if root is not None else topology.compute_nodes[0]
    options = list(options) if options is not None else candidates(topology, collective, root=root)
    network = Network.of(topology, default_latency)
    bound_collective = "allgather" if collective == "allreduce" else collective
    bound = _collective_lower_bound(topology, bound_collective, root)
    assert bound is not None  # the root is set for broadcast and reduce
    if collective == "allreduce" and topology.has_in_network:
        # per M / N bytes, as the allgather bound: N / lambda
        bound = max(bound, topology.num_compute * reduction_cut(topology).time_factor)
    floor = latency_bound(
        topology, collective, root=root, overhead=overhead, default_latency=default_latency
    )
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(sizes) * len(options), desc="plan", unit="run", leave=False)
    rows = []
    for size in sizes:
        times: list[tuple[str, float | None]] = []
        for option in options:
            try:
                graph = option.tasks(network, size, slice_bytes)
            except ScheduleError:  # too many steps to simulate (a huge k): not a candidate here
                times.append((option.method, None))
            else:
                run = simulate(graph, network, size, overhead=overhead)
                times.append((option.method, run.time_us))
            if bar is not None:
                bar.update()
        method, best = min(((m, t) for m, t in times if t is not None), key=lambda item: item[1])
        width = data_bytes(collective, size, topology.num_compute) * float(bound) / 1000
        rows.append(SizePlan(size, method, best, max(floor, width), tuple(times)))
    if bar is not None:
        bar.close()
    return rows


def size_bands(
    rows: Sequence[SizePlan], methods: Sequence[str]
) -> list[tuple[str, int, int | None]]:
    """Split the sizes among ``methods`` by the plan: ``(method, smallest, largest or None)``.

    At each planned size the fastest of ``methods`` wins; its band runs from that size (0
    for the first) to just below the next size where another method wins (no limit for
    the last).

    Examples
    --------
    >>> rows = [SizePlan(1024, "a", 1.0, 1.0, (("a", 1.0), ("b", 2.0))),
    ...         SizePlan(2048, "a", 1.5, 1.0, (("a", 1.5), ("b", 2.0))),
    ...         SizePlan(4096, "b", 2.0, 1.0, (("a", 3.0), ("b", 2.0)))]
    >>> size_bands(rows, ["a", "b"])
    [('a', 0, 4095), ('b', 4096, None)]
    """
    bands: list[tuple[str, int, int | None]] = []
    for row in sorted(rows, key=lambda r: r.size):
        allowed = [(t, m) for m, t in row.candidates if m in methods and t is not None]
        if not allowed:
            continue
        _, winner = min(allowed)
        if bands and bands[-1][0] == winner:
            continue
        if bands:
            method, low, _ = bands[-1]
            bands[-1] = (method, low, row.size - 1)
        bands.append((winner, 0 if not bands else row.size, None))
    return bands


def schedule_bands(
    rows: Sequence[SizePlan], options: Sequence[Candidate]
) -> list[tuple[Candidate, int, int | None]]:
    """The size bands of the ``options`` that are schedules (what ``optcoll plan --export``
    and ``optcoll export --bands`` write): :func:`size_bands` among them, each band as
    ``(candidate, smallest, largest or None)``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("dgx-a100:2")
    >>> options = candidates(topo)
    >>> rows = plan(topo, "allgather", [1024, 2**20, 2**30], options=options)
    >>> [(c.method, low, high) for c, low, high in schedule_bands(rows, options)]
    [('k=1', 0, 1048575), ('k=2', 1048576, 1073741823), ('optimal (k=13)', 1073741824, None)]
    """
    schedules = {o.method: o for o in options if o.schedule is not None}
    return [(schedules[m], low, high) for m, low, high in size_bands(rows, list(schedules))]
