"""The partition bound: allreduce, reduce-scatter and allgather where only compute nodes combine.

Partition the nodes of a topology into parts. Let ``p`` be the number of parts holding
compute nodes, ``d`` the fewest part boundaries a unit of data crosses going from one
such part to another (2 when only switch-only parts join them), and ``C(P)`` the
capacity of the links between parts (directed, both directions counted). Per element,
the ``p`` compute parts run a one-way gossip: an allreduce needs at least ``2 (p - 1)``
messages between them (Harary and Schwenk's bound for one-way gossip), a
reduce-scatter or an allgather ``p - 1``; each message crosses at least ``d``
boundaries and switches in switch-only parts neither copy nor combine, so every
allreduce of ``M`` bytes per node takes

    T >= 2 (p - 1) d M / C(P)          (reduce-scatter, allgather: (p - 1) d M / C(P))

The proof and the class of schedules it bounds are in ``docs/partition_bound.md``.
:func:`evaluate_partition` computes the bound of any partition exactly (the
certificate anyone can re-check); :func:`partition_bound` returns the best one it
finds: on a topology without switches, the best of **all** partitions, from the
strength of the graph with each link's capacity the mean of its two directions
(:func:`optcoll.graph.strength.graph_strength`), ``T >= M / tau``; with switches, the
best of a few structured partitions (single compute nodes, boxes, the strength
partition of the whole graph), with the switch-only parts merged or not.
:func:`brute_force_partition_bound` enumerates every partition of a small topology
(the test oracle).

Examples
--------
>>> from optcoll.topologies import build
>>> bound = partition_bound(build("mesh:4x4"))
>>> bound.time_factor, bound.compute_parts, bound.crossings, bound.exact
(Fraction(1, 160), 16, 1, True)
>>> bound.time_us(2**30)  # 1 GiB at 160 GB/s
6710.8864
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from optcoll.core.arguments import as_topology
from optcoll.core.schedule import canonical_collective
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError
from optcoll.graph.strength import graph_strength, set_partitions

__all__ = [
    "PartitionBound",
    "HOLDS_FOR",
    "COLLECTIVES",
    "evaluate_partition",
    "partition_bound",
    "brute_force_partition_bound",
    "BRUTE_FORCE_MAX_NODES",
]

#: Collectives the partition bound covers, with the messages per element among p parts.
COLLECTIVES = {"allreduce": 2, "reduce_scatter": 1, "allgather": 1}

#: The class of schedules the bound holds for, per collective.
HOLDS_FOR = {
    "allreduce": "every allreduce in which only compute nodes reduce",
    "reduce_scatter": "every reduce-scatter in which only compute nodes reduce",
    "allgather": "every allgather in which only compute nodes copy",
}

#: Largest topology (nodes, switches included) :func:`brute_force_partition_bound` takes.
BRUTE_FORCE_MAX_NODES = 9


@dataclass(frozen=True)
class PartitionBound:
    """A partition of a topology's nodes and the lower bound it certifies.

    Attributes
    ----------
    collective : str
        ``"allreduce"``, ``"reduce_scatter"`` or ``"allgather"``.
    parts : tuple of frozenset of str
        The partition of every node of the topology.
    compute_parts : int
        ``p``, the parts holding compute nodes.
    crossings : int
        ``d``, the fewest part boundaries between two compute parts.
    capacity : Fraction
        ``C(P)``, the capacity of the directed links between parts.
    time_factor : Fraction
        ``messages (p - 1) d / C(P)``: the bound is ``M * time_factor`` for ``M`` bytes
        per node (the collective's size), in seconds per byte over the bandwidth unit
        (``bytes / (GB/s)`` is ns).
    exact : bool
        True when no partition gives a larger bound (proved by the method).
    method : str
        How the partition was found.
    """

    collective: str
    parts: tuple[frozenset[str], ...]
    compute_parts: int
    crossings: int
    capacity: Fraction
    time_factor: Fraction
    exact: bool
    method: str

    @property
    def holds_for(self) -> str:
        """The class of schedules the bound holds for."""
        return HOLDS_FOR[self.collective]

    def time_us(self, size: int | Fraction) -> float:
        """The bound in µs for ``size`` bytes per node, bandwidths in GB/s."""
        return float(Fraction(size) * self.time_factor / 1000)

    def describe(self) -> str:
        """One line: the bound, its partition's shape and what it holds for."""
        return (
            f"partition bound M * 2(p-1)d/C = M * {self.time_factor} with p = "
            f"{self.compute_parts} compute parts, d = {self.crossings}, C = {self.capacity} "
            f"({'best of all partitions' if self.exact else self.method}); holds for "
            f"{self.holds_for}"
        ).replace("2(p-1)", "(p-1)" if COLLECTIVES[self.collective] == 1 else "2(p-1)")


def evaluate_partition(
    topology: Topology | object,
    parts: Iterable[Iterable[str]],
    collective: str = "allreduce",
    *,
    method: str = "given",
    exact: bool = False,
) -> PartitionBound:
    """The partition bound of ``parts``: re-checks a certificate from scratch.

    Raises
    ------
    ArgumentError
        A node in no part or in two, an unknown node, a collective the bound does not
        cover, fewer than two compute parts, or a switch that reduces or multicasts in a
        part without compute nodes (it could combine or copy there).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> torus = build("torus:8x8")
    >>> bound = evaluate_partition(torus, [[v] for v in torus.node_ids])
    >>> bound.time_factor, bound.capacity
    (Fraction(63, 12800), Fraction(25600, 1))
    >>> round(bound.time_us(2**30), 1)
    5284.8
    """
    topology = as_topology(topology)
    collective = canonical_collective(collective)
    if collective not in COLLECTIVES:
        raise ArgumentError(
            f"the partition bound covers {sorted(COLLECTIVES)}, not collective {collective!r}"
        )
    frozen = tuple(frozenset(part) for part in parts)
    where: dict[str, int] = {}
    for index, part in enumerate(frozen):
        for node in part:
            if node not in topology.node:
                raise ArgumentError(f"part {index} names unknown node {node!r}")
            if node in where:
                raise ArgumentError(f"node {node!r} is in parts {where[node]} and {index}")
            where[node] = index
    missing = [node for node in topology.node_ids if node not in where]
    if missing:
        raise ArgumentError(f"node {missing[0]!r} is in no part")
    compute = [any(topology.is_compute(v) for v in part) for part in frozen]
    p = sum(compute)
    if p < 2:
        raise ArgumentError(f"a partition bound needs two parts with compute nodes, got {p}")
    for part, holds in zip(frozen, compute, strict=True):
        combining = sorted(v for v in part if not holds and topology.node[v].in_network)
        if combining:
            raise ArgumentError(
                f"switch {combining[0]!r} reduces or multicasts in a part without compute "
                "nodes: the partition bound needs it inside a compute part"
            )
    capacity = Fraction(0)
    quotient: dict[int, set[int]] = {}
    for (u, v), c in topology.capacity.items():
        if where[u] != where[v] and c > 0:
            capacity += c
            quotient.setdefault(where[u], set()).add(where[v])
    d = min(_hops(quotient, start, compute) for start, holds in enumerate(compute) if holds)
    factor = COLLECTIVES[collective] * (p - 1) * d / capacity
    return PartitionBound(collective, frozen, p, d, capacity, factor, exact, method)


def _hops(quotient: dict[int, set[int]], start: int, compute: list[bool]) -> int:
    """Fewest quotient arcs from part ``start`` to another compute part."""
    seen = {start: 0}
    queue = deque([start])
    while queue:
        a = queue.popleft()
        for b in sorted(quotient.get(a, ())):
            if b not in seen:
                seen[b] = seen[a] + 1
                if compute[b]:
                    return seen[b]
                queue.append(b)
    raise ArgumentError(f"part {start} reaches no other compute part")


def _undirected(topology: Topology, nodes: Sequence[str]) -> dict[tuple[str, str], Fraction]:
    """Each link's capacity as the mean of its two directions, on ``nodes`` only."""
    order = {v: i for i, v in enumerate(nodes)}
    edges: dict[tuple[str, str], Fraction] = {}
    for (u, v), c in topology.capacity.items():
        if u in order and v in order:
            key = (u, v) if order[u] < order[v] else (v, u)
            edges[key] = edges.get(key, Fraction(0)) + c / 2
    return edges


def partition_bound(
    topology: Topology | object, collective: str = "allreduce", *, strength: bool = True
) -> PartitionBound:
    """The largest partition bound found for ``collective`` on ``topology``.

    Without switches it is the best of all partitions (``exact``): ``d = 1`` and, with
    ``C_u`` the undirected capacity (mean of the two directions),
    ``2 (p - 1) / C(P) = (p - 1) / C_u(P)`` is largest at the partition attaining the
    strength ``tau`` of the undirected graph: ``T >= M / tau`` (allreduce). With
    switches, the best of the structured partitions of the module docstring.
    ``strength=False`` skips the strength search (max-flows; 16 s on torus 32x32):
    only the single-node and box partitions, ``O(links)`` each, a bound that may be
    weaker (never ``exact``); ``solve`` uses it to state what reduce-scatter +
    allgather is optimal among.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> dgx = build("dgx-h100:4")
    >>> bound = partition_bound(dgx)
    >>> bound.time_factor, bound.compute_parts, bound.crossings, bound.capacity
    (Fraction(31, 8000), 32, 2, Fraction(32000, 1))

    Single GPUs beat the boxes (four parts behind the rail switches):

    >>> boxes = [[v for v in dgx.node_ids if v.startswith(f"b{i}.")] for i in range(4)]
    >>> rails = [v for v in dgx.node_ids if v.startswith("rail")]
    >>> evaluate_partition(dgx, [*boxes, rails]).time_factor
    Fraction(3, 800)
    """
    topology = as_topology(topology)
    collective = canonical_collective(collective)
    if not topology.switch_nodes and strength:
        tau = graph_strength(topology.node_ids, _undirected(topology, topology.node_ids))
        return evaluate_partition(
            topology, tau.parts, collective, method="graph strength", exact=True
        )
    best: PartitionBound | None = None
    for method, parts in _structured_partitions(topology, strength):
        try:
            found = evaluate_partition(topology, parts, collective, method=method)
        except ArgumentError:
            continue
        if best is None or found.time_factor > best.time_factor:
            best = found
    if best is None:
        raise ArgumentError(
            f"no partition of {topology.name} gives two compute parts without a combining "
            "switch between them"
        )
    return best


#: Above this many nodes the strength partition of a topology with switches is skipped.
STRENGTH_MAX_NODES = 2000


def _structured_partitions(
    topology: Topology, strength: bool = True
) -> list[tuple[str, list[set[str]]]]:
    """Candidate partitions of a topology (see :func:`partition_bound`); the strength
    partition only with ``strength``."""
    cores: list[tuple[str, list[set[str]]]] = [
        ("single compute nodes", [{v} for v in topology.node_ids]),
    ]
    groups: dict[str, set[str]] = {}
    for v in topology.node_ids:
        group = topology.node[v].group
        groups.setdefault(f"group {group}" if group is not None else f"node {v}", set()).add(v)
    cores.append(("boxes", list(groups.values())))
    if strength and len(topology.node_ids) <= STRENGTH_MAX_NODES:
        edges = _undirected(topology, topology.node_ids)
        tau = graph_strength(topology.node_ids, edges)
        cores.append(("strength partition", [set(part) for part in tau.parts]))
    found = []
    for name, parts in cores:
        compute = [part for part in parts if any(topology.is_compute(v) for v in part)]
        pool = set().union(*(part for part in parts if part not in compute))
        compute = _absorb_combining(topology, compute, pool)
        found.append((f"{name}, switch-only parts apart", compute + _split(topology, pool)))
        found.append((f"{name}, switch-only parts merged", compute + ([pool] if pool else [])))
    return found


def _absorb_combining(
    topology: Topology, compute: list[set[str]], pool: set[str]
) -> list[set[str]]:
    """Move each reducing or multicasting switch of ``pool`` into the compute part it has
    the most capacity to (removed from ``pool``)."""
    compute = [set(part) for part in compute]
    for v in sorted(pool):
        if topology.node[v].in_network:
            weight = [
                sum(
                    topology.capacity.get((v, u), 0) + topology.capacity.get((u, v), 0)
                    for u in part
                )
                for part in compute
            ]
            compute[weight.index(max(weight))].add(v)
            pool.discard(v)
    return compute


def _split(topology: Topology, pool: set[str]) -> list[set[str]]:
    """The connected components of the switches in ``pool``."""
    parts: list[set[str]] = []
    seen: set[str] = set()
    adjacent: dict[str, set[str]] = {}
    for u, v in topology.capacity:
        if u in pool and v in pool:
            adjacent.setdefault(u, set()).add(v)
            adjacent.setdefault(v, set()).add(u)
    for v in sorted(pool):
        if v in seen:
            continue
        component, stack = {v}, [v]
        while stack:
            for w in adjacent.get(stack.pop(), ()):
                if w not in component:
                    component.add(w)
                    stack.append(w)
        seen |= component
        parts.append(component)
    return parts


def brute_force_partition_bound(
    topology: Topology | object, collective: str = "allreduce"
) -> PartitionBound:
    """The best partition bound over **every** partition of a small topology (test oracle).

    Raises
    ------
    ArgumentError
        More than :data:`BRUTE_FORCE_MAX_NODES` nodes.
    """
    topology = as_topology(topology)
    nodes = topology.node_ids
    if len(nodes) > BRUTE_FORCE_MAX_NODES:
        raise ArgumentError(
            f"brute force takes at most {BRUTE_FORCE_MAX_NODES} nodes, {topology.name} has "
            f"{len(nodes)}"
        )
    best: PartitionBound | None = None
    for parts in set_partitions(list(nodes)):
        try:
            found = evaluate_partition(
                topology, parts, collective, method="brute force", exact=True
            )
        except ArgumentError:
            continue
        if best is None or found.time_factor > best.time_factor:
            best = found
    if best is None:
        raise ArgumentError(f"no partition of {topology.name} bounds {collective}")
    return best
