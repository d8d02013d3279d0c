"""Step schedules on a topology: routed, priced and turned into simulator tasks.

A :class:`~optcoll.core.step_schedule.StepSchedule` says which blocks go from which
compute node to which in each step; :func:`route_steps` puts every message on a widest
fewest-hop path between its two nodes, each sender's paths least loaded as if it sent to
every node at once: over its own links and over parallel switches
(:func:`optcoll.schedules.baselines.routing.spread_paths`, as MSCCL programs, MSCCL++
plans and Chakra traces are routed: a file names only a send's two peers, so a pair has
one path whatever the step), :func:`step_tasks` makes its transfers for the event
simulator (:mod:`optcoll.sim.simulator`) and :func:`step_cost` its exact terms for
``optcoll compare``.

In the simulator a message is one step of its connection (the sender-receiver pair),
which pays the overhead, cut into slices as every transfer is, the messages of a step posted
to the ranks after their senders first (:meth:`~optcoll.core.step_schedule.StepSchedule.posted`,
as the MSCCL++ plans put them). A message of step ``s`` leaves once its sender has
received every message sent to it in the steps before ``s`` (it holds what it forwards),
whatever its receiver does: every runtime a file is written for sends so. An MSCCL++ put
writes into fresh scratch (:mod:`optcoll.export.mscclpp_steps`), ASTRA-sim puts a Chakra
send on the network at once (``sim_send``, astra-sim
``network_frontend/analytical/congestion_aware/CongestionAwareNetworkApi.cc``), and an
MSCCL/RCCL send runs ahead of its receiver up to its connection's FIFO slots. So on a
star of ``N`` nodes around one switch (links of bandwidth ``B`` and latency ``L``; a
step sends at most one message from and one to each node), a message of step ``s``
arrives, unsliced, ``o + 2 L + bytes / B`` after the latest arrival at its sender in the
steps before ``s``; where every node sends and receives in every step with messages of
one size (``N = 2^k``) that is ``sum over steps of (o + 2 L + bytes / B)``.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.schedules.baselines.logstep import recursive_doubling_allgather
>>> topo = build("star:4,bw=100")
>>> routed = route_steps(topo, recursive_doubling_allgather(topo.compute_nodes))
>>> run = simulate_steps(topo, routed, 4 * 10**5, slice_bytes=None)
>>> run.time_us  # 2 steps of 1 µs overhead + 2 links of 1 µs, 1 then 2 blocks of 1 µs
9.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from optcoll.core.cost import DEFAULT_LATENCY, Cost, link_latencies, path_latency
from optcoll.core.step_schedule import StepSchedule
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.routing import (
    equal_boxes,
    grid_axes,
    grid_lines,
    spread_paths,
    torus_shape,
)
from optcoll.schedules.baselines.step_catalogue import step_schedules
from optcoll.sim.simulator import (
    DEFAULT_OVERHEAD,
    DEFAULT_SLICE,
    MAX_TASKS,
    Network,
    Simulation,
    TaskGraph,
    simulate,
)
from optcoll.verify.steps import verify_steps

__all__ = [
    "RoutedSteps",
    "route_steps",
    "step_tasks",
    "step_task_count",
    "message_slices",
    "step_latency_floor",
    "simulate_steps",
    "step_cost",
    "step_costs",
]

Arc = tuple[str, str]


@dataclass(frozen=True)
class RoutedSteps:
    """A step schedule and the path of every (sender, receiver) pair it uses.

    ``time_factor`` is the busiest link's load over its bandwidth summed over all steps,
    per ``data(M)`` bytes (:func:`optcoll.sim.simulator.data_bytes`: ``M / N``, ``M`` for
    a broadcast or a reduce; no run is faster than ``data(M)`` times it); ``step_factor``
    the sum over steps of each step's busiest link (a run whose steps do not overlap takes
    at least ``data(M)`` times it).
    """

    schedule: StepSchedule
    paths: dict[tuple[str, str], tuple[str, ...]]
    time_factor: Fraction
    step_factor: Fraction

    @property
    def method(self) -> str:
        """The schedule's name."""
        return self.schedule.method


def route_steps(
    topology: Topology,
    schedule: StepSchedule,
    widest: dict[str, dict[str, tuple[str, ...]]] | None = None,
) -> RoutedSteps:
    """Route every message of ``schedule`` on ``topology`` and check that it delivers its
    collective (:func:`optcoll.verify.steps.verify_steps`). ``widest`` keeps the widest
    paths from each sender found so far (filled in; share it between schedules of one
    topology: finding them is most of the work).

    Raises
    ------
    ScheduleError
        The schedule does not deliver, or names nodes that are not the topology's compute
        nodes.
    """
    if set(schedule.compute_nodes) != set(topology.compute_nodes):
        raise ScheduleError(
            f"the {schedule.method} schedule's nodes are not {topology.name}'s compute nodes"
        )
    verdict = verify_steps(schedule)
    if not verdict.valid:
        raise ScheduleError(f"the {schedule.method} {schedule.collective} fails: {verdict.reason}")
    widest = {} if widest is None else widest
    paths: dict[tuple[str, str], tuple[str, ...]] = {}
    total: dict[Arc, Fraction] = {}
    steps = Fraction(0)
    capacity = topology.capacity
    # loads in units of data(M): a block is N / blocks of them, 1 / blocks if rooted
    unit = Fraction(
        1 if schedule.root is not None else len(schedule.compute_nodes), schedule.blocks
    )
    for step in schedule.steps:
        load: dict[Arc, Fraction] = {}
        for send in step:
            key = (send.src, send.dst)
            if key not in paths:
                if send.src not in widest:
                    widest[send.src] = spread_paths(topology, send.src)
                if send.dst not in widest[send.src]:
                    raise ScheduleError(f"no path from {send.src} to {send.dst} in {topology.name}")
                paths[key] = widest[send.src][send.dst]
            path = paths[key]
            for arc in zip(path, path[1:], strict=False):
                load[arc] = load.get(arc, Fraction(0)) + len(send.blocks) * unit
        for arc, value in load.items():
            total[arc] = total.get(arc, Fraction(0)) + value
        steps += max((value / capacity[a] for a, value in load.items()), default=Fraction(0))
    factor = max((value / capacity[a] for a, value in total.items()), default=Fraction(0))
    return RoutedSteps(schedule, paths, factor, steps)


def message_slices(size: float, slice_bytes: int | None) -> int:
    """Slices of a ``size``-byte message (the simulator's rule for a chunk).

    >>> message_slices(1000, 512), message_slices(1000, None), message_slices(512, 512)
    (2, 1, 1)
    """
    return 1 if slice_bytes is None or size <= slice_bytes else math.ceil(size / slice_bytes)


def step_task_count(routed: RoutedSteps, size: int, slice_bytes: int | None) -> int:
    """How many tasks :func:`step_tasks` builds for an ``size``-byte collective."""
    block = routed.schedule.block_bytes(size)
    count = 0
    for step in routed.schedule.steps:
        count += sum(message_slices(block * len(send.blocks), slice_bytes) for send in step)
        count += len({send.dst for send in step})  # the joins: one a receiving node
    return count


def step_latency_floor(routed: RoutedSteps, network: Network, overhead: float) -> float:
    """A lower bound (µs) on the simulated time of ``routed`` whatever the size: a message
    leaves once every message sent to its sender in earlier steps has arrived and arrives
    no sooner than ``overhead`` plus its path's latency later, so no run ends before the
    longest chain of such messages, each sent by the previous one's receiver in a later
    step.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines.logstep import recursive_doubling_allgather
    >>> topo = build("star:4")
    >>> routed = route_steps(topo, recursive_doubling_allgather(topo.compute_nodes))
    >>> step_latency_floor(routed, Network.of(topo), 1.0)  # 2 steps of 1 µs + 2 links of 1 µs
    6.0
    """
    latency = network.latency
    path_us = {
        key: sum(latency[a] for a in network.path(path)) for key, path in routed.paths.items()
    }
    held: dict[str, float] = {}  # each node's latest arrival bound so far
    for step in routed.schedule.steps:
        arrive: dict[str, float] = {}
        for send in step:
            us = held.get(send.src, 0.0) + overhead + path_us[(send.src, send.dst)]
            arrive[send.dst] = max(arrive.get(send.dst, 0.0), us)
        for v, us in arrive.items():
            held[v] = max(held.get(v, 0.0), us)
    return max(held.values(), default=0.0)


def step_tasks(
    routed: RoutedSteps,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
    graph: TaskGraph | None = None,
) -> TaskGraph:
    """The transfers of ``routed`` for an ``size``-byte collective (see the module
    docstring: a message waits for its sender's and its receiver's previous steps, only
    its sender's on a store-and-forward ``network``), added to ``graph`` (default: a new
    one).

    Raises
    ------
    ScheduleError
        More than :data:`optcoll.sim.simulator.MAX_TASKS` tasks.
    """
    count = step_task_count(routed, size, slice_bytes)
    if count > MAX_TASKS:
        raise ScheduleError(
            f"simulating this needs {count:,} steps, above the limit of {MAX_TASKS:,}: "
            "use a larger --slice or a smaller size"
        )
    graph = TaskGraph() if graph is None else graph
    graph.posted = True  # simultaneous sends go in posting order
    schedule = routed.schedule
    block = schedule.block_bytes(size)
    arcs = {key: network.path(path) for key, path in routed.paths.items()}
    # per node, a task that ends once every message sent to it so far has arrived (a
    # join: no overhead, no data, after the slices it received in its last step that
    # received, and that step's join before them)
    last: dict[str, int] = {}
    for step in schedule.steps:
        took: dict[str, list[int]] = {}
        for send in schedule.posted(step):
            after = [last[send.src]] if send.src in last else []
            message = block * len(send.blocks)
            pieces = message_slices(message, slice_bytes)
            tasks = [
                graph.add(
                    (send.src, send.dst),
                    arcs[(send.src, send.dst)],
                    message / pieces,
                    after,
                    piece / pieces,
                )
                for piece in range(pieces)
            ]
            took.setdefault(send.dst, []).extend(tasks)
        for node, tasks in took.items():
            before = [last[node]] if node in last else []
            last[node] = graph.add(None, (), 0.0, tasks + before)
    return graph


def simulate_steps(
    topology: Topology,
    routed: RoutedSteps,
    size: int,
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> Simulation:
    """Simulate ``routed`` on ``topology`` for an ``size``-byte collective."""
    network = Network.of(topology, default_latency)
    graph = step_tasks(routed, network, size, slice_bytes=slice_bytes)
    return simulate(graph, network, size, overhead=overhead)


def step_cost(
    topology: Topology, routed: RoutedSteps, *, default_latency: Fraction = DEFAULT_LATENCY
) -> Cost:
    """The exact terms of a step schedule run step by step: ``time_factor`` its steps'
    busiest links summed (:attr:`RoutedSteps.step_factor`), ``alpha`` its steps' longest
    path latencies summed; the simulator runs ``routed``. Where every node takes part in
    every step with equal messages (``N = 2^k``, Bruck) no two steps overlap; with folded
    ranks a node may start its next step before others end theirs, so the simulated time
    may lie below ``alpha + data(M) * time_factor`` (never below ``data(M)`` times
    :attr:`RoutedSteps.time_factor`).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines.logstep import rabenseifner_allreduce
    >>> topo = build("star:4,bw=100")
    >>> cost = step_cost(topo, route_steps(topo, rabenseifner_allreduce(topo.compute_nodes)))
    >>> cost.time_factor, cost.alpha  # 2 + 1 + 1 + 2 blocks of M / 4 at 100, 4 steps of 2 links
    (Fraction(3, 50), Fraction(8, 1))
    """
    latency = link_latencies(topology, default_latency)
    alpha = Fraction(0)
    for step in routed.schedule.steps:
        worst = Fraction(0)
        for send in step:
            worst = max(worst, path_latency(routed.paths[(send.src, send.dst)], latency))
        alpha += worst
    schedule = routed.schedule
    return Cost(
        schedule.method,
        schedule.collective,
        len(schedule.compute_nodes),
        routed.step_factor,
        alpha,
        routed,
    )


def step_costs(
    topology: Topology,
    collective: str,
    *,
    root: str | None = None,
    default_latency: Fraction = DEFAULT_LATENCY,
) -> list[Cost]:
    """The cost of every log-step schedule of ``collective`` on ``topology``
    (:func:`optcoll.schedules.baselines.step_catalogue.step_schedules`, ranks in the order of
    the compute nodes; a broadcast or reduce from ``root``, default the first), as
    ``optcoll compare`` lists them.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [c.method for c in step_costs(build("ring:4"), "allgather")]
    ['direct', 'recursive doubling', 'Bruck', 'Swing', 'Bine', 'PAT', 'multiport Swing', 'Trivance']
    """
    widest: dict[str, dict[str, tuple[str, ...]]] = {}
    return [
        step_cost(topology, route_steps(topology, s, widest), default_latency=default_latency)
        for s in step_schedules(
            topology.compute_nodes,
            collective,
            equal_boxes(topology),
            torus_shape(topology),
            grid_lines(topology),
            grid_axes(topology),
            root,
        )
    ]
