"""A latency bound for MSCCL programs: every hop between GPUs is a send step and a receive.

In the simulator's model of an MSCCL program (:func:`optcoll.sim.programs.msccl_tasks`)
data moves between GPUs only by a send step of one thread block and a receive step of
another, each costing its block the per-step overhead ``o`` (the send's before the data
leaves, the receive's after it has arrived), and the transfer between them takes at
least the least latency sum ``d(u, v)`` of a path from ``u`` to ``v``. A program the
MSCCL checker accepts for a topology (:func:`optcoll.verify.msccl.verify_text` with it)
connects only GPUs joined by a link or a path through switches only: there are no
hops but those. The checker also executes the program, so every byte a GPU must end
with (an allgather's every shard, a reduction's every contribution) reaches it along
a chain ``a = g0, g1, ..., gk = b`` of such hops, and the run takes at least

    sum over hops of (2 o + d(g_i, g_{i+1}))                        (a receive a step)
    o + sum over hops of (o + d(g_i, g_{i+1}))                    (fused receive-sends)

where a runtime runs fused steps (``rcs``, ``rrcs``, :mod:`optcoll.export.msccl_fusion`),
a GPU between receiving and sending one chunk in one step. :func:`msccl_step_bound` is
the largest of the least such sums over the pairs ``(a, b)`` a collective needs: every
ordered pair (allgather, reduce-scatter, allreduce), from the root (broadcast) or to it
(reduce). On a direct-connect topology without switches it counts the GPU hops a file
cannot avoid, where plan's own latency bound lets data cross GPUs for free.

Examples
--------
>>> from fractions import Fraction
>>> from optcoll.topologies import build
>>> msccl_step_bound(build("hypercube:4"), "allgather", overhead=1.0)  # 4 hops of 2 + 1
Fraction(12, 1)
>>> msccl_step_bound(build("hypercube:4"), "allgather", overhead=1.0, fused=True)
Fraction(9, 1)
>>> msccl_step_bound(build("dgx-a100:1"), "allgather", overhead=1.0)  # one hop, 2 links
Fraction(4, 1)
"""

from __future__ import annotations

from fractions import Fraction

from optcoll.bounds.startup import _Distances
from optcoll.core.cost import DEFAULT_LATENCY, link_latencies
from optcoll.core.schedule import canonical_collective
from optcoll.core.topology import Topology

__all__ = ["msccl_step_bound", "STEP_BOUND_NODES", "STEP_BOUND_SUMMARY", "step_bound_steps"]

#: The bound in one line, for a report's "lower bound = max(...)" line.
STEP_BOUND_SUMMARY = "MSCCL step bound: a send and a receive step per hop between GPUs"

#: Above this many compute nodes :func:`msccl_step_bound` is not computed (its hop graph
#: has up to one arc per pair of compute nodes, and one Dijkstra runs from each: 0.6 CPU
#: s for dgx-a100:32's 256 GPUs, growing as the cube of the count).
STEP_BOUND_NODES = 512


def msccl_step_bound(
    topology: Topology,
    collective: str,
    *,
    root: str | None = None,
    overhead: float = 1.0,
    default_latency: Fraction = DEFAULT_LATENCY,
    fused: bool = False,
) -> Fraction | None:
    """The least time (µs) any MSCCL program the checker accepts for ``topology`` takes
    for ``collective`` in the simulator's model, from its steps' overheads and its hops'
    latencies (module docstring; ``fused``: the runtime runs fused receive-sends); None
    above :data:`STEP_BOUND_NODES` compute nodes.

    Raises
    ------
    ScheduleError
        An unknown collective (:func:`~optcoll.core.schedule.canonical_collective`).
    """
    collective = canonical_collective(collective)
    compute = list(topology.compute_nodes)
    if len(compute) > STEP_BOUND_NODES:
        return None
    is_compute = set(compute)
    latency = link_latencies(topology, default_latency)
    distances = _Distances(topology, latency)
    o = Fraction(overhead)
    step = o if fused else 2 * o  # what a hop costs beyond its latency
    scale = distances.scale * step.denominator
    neighbours: dict[str, list[str]] = {}
    for u, v in latency:
        neighbours.setdefault(u, []).append(v)
    hops: dict[str, list[tuple[str, int]]] = {}  # GPU to GPU, weights scaled to integers
    for u in compute:
        least = distances.from_node(u)
        weights = []
        for v in _joined(u, neighbours, is_compute):
            cost = step + Fraction(least[v], distances.scale)
            weights.append((v, int(cost * scale)))
        hops[u] = weights
    if collective in ("broadcast", "reduce"):
        root = compute[0] if root is None else root
        pairs = (
            [(root, b) for b in compute if b != root]
            if collective == "broadcast"
            else [(a, root) for a in compute if a != root]
        )
    else:
        pairs = [(a, b) for a in compute for b in compute if a != b]
    # every path of the (strongly connected) topology between compute nodes is a chain of
    # hops, so each pair has one
    worst = 0
    reached: dict[str, dict[str, int]] = {}
    for a, b in pairs:
        if a not in reached:
            reached[a] = distances._run(hops, [a])
        worst = max(worst, reached[a][b])
    extra = o if fused and pairs else Fraction(0)  # the last receive of a fused chain
    return Fraction(worst, scale) + extra


def step_bound_steps(fused: bool) -> str:
    """What :func:`msccl_step_bound` counts, for a report's ``holds for``.

    >>> step_bound_steps(False)
    "a send step and a receive step every hop between GPUs, an overhead each, and the hops' latencies"
    """
    steps = (
        "a send step, one fused step at each GPU between and a receive step"
        if fused
        else "a send step and a receive step every hop between GPUs"
    )
    return f"{steps}, an overhead each, and the hops' latencies"


def _joined(u: str, neighbours: dict[str, list[str]], is_compute: set[str]) -> set[str]:
    """The compute nodes joined to ``u`` by a link or a path through switches only (the
    pairs an MSCCL program may connect)."""
    found: set[str] = set()
    seen = {u}
    stack = [u]
    while stack:
        for v in neighbours.get(stack.pop(), ()):
            if v in seen:
                continue
            seen.add(v)
            if v in is_compute:
                found.add(v)
            else:
                stack.append(v)
    return found
