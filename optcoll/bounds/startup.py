"""Lower bounds at every message size: cuts whose links carry data only inside a window.

In the simulator's model (:mod:`optcoll.sim.simulator`) a transfer pays its connection's
per-step overhead ``o`` before its head enters its first link, the head then takes each
link's latency to reach the next, a link carries one slice at a time at its bandwidth, and
the run ends once the last byte has arrived. So a byte that depends on the input of node
``x`` crosses a link ``e`` no earlier than ``o + d(x, tail e)`` after the start and must
have crossed it by ``T - lat(e) - d(head e, w)`` to reach node ``w`` by the end ``T``
(``d``: the least latency sum of a path). A set of transfers that must carry ``D`` bytes
over the links ``e`` of a cut, each crossing inside such a window, therefore needs

    D <= sum over e of B_e * (T - c_e)^+          (c_e = o + a_e + lat(e) + b_e)

and :func:`window_time` gives the least ``T`` that allows it, exactly. Every
:class:`WindowCut` is one such inequality, its demand proportional to the message size
``M``; :func:`startup_bound` builds those of a collective on a topology:

* **allgather**: for every node ``v`` and every distance ``L``, the pieces of the nodes
  ``A`` at least ``L`` from ``v`` (``|A| M / N`` bytes) enter ``v`` through its in-links
  ``(u, v)`` no earlier than ``o + min over A of d(x, u)``; and the pieces of the compute
  nodes inside the bottleneck cut ``S`` of r* cross its links with ``a_e`` the least
  distance from them to ``tail e`` and ``b_e`` the least from ``head e`` to a compute
  node outside;
* **reduce-scatter**: the mirror: from every node ``x``, its contributions to the shards
  of the nodes ``W`` at least ``L`` from it (``|W| M / N`` bytes) leave through its
  out-links and must still reach ``W``; and the bottleneck cut of the reversed topology;
* **allreduce**: for every pair ``x != w``, ``w``'s result determines ``x``'s input (the
  others fixed), so ``M`` bytes that depend on ``x`` enter ``w`` (and leave ``x``); and
  the partition bound's ``2 (p - 1) d M`` boundary crossings
  (:mod:`optcoll.bounds.partition`), each inside its link's window, ``a_e`` and ``b_e``
  the least distances from and to a node that sends or receives (compute nodes and
  combining switches);
* **broadcast** and **reduce**: the pairs from (to) the root.

The proofs and the class of schedules each holds for are in ``docs/bounds_every_size.md``.
On a topology with more than :data:`ALL_NODES` compute nodes the per-node families are
built for one node per orbit of its automorphisms (:func:`optcoll.graph.symmetry.automorphisms`,
every map checked exactly; a node's image has the same bounds), and for at most
:data:`MOST_NODES` nodes in all.

Examples
--------
>>> from optcoll.topologies import build
>>> bound = startup_bound(build("torus:8x8"), "allgather", overhead=Fraction(1),
...                       default_latency=Fraction(1, 2))
>>> float(bound.time_us(2**32))  # r*'s 10,569.6 µs + the overhead + one link's latency
10571.14608
>>> bound.tightest(2**32).name
'allgather: pieces of 63 nodes >= 1/2 from n7_7 into it'
>>> float(bound.time_us(2**20)), bound.tightest(2**20).name  # 1 µs + 8 links + 16 KiB
(5.04096, 'allgather: pieces of 1 node >= 4 from n7_7 into it')
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from optcoll.core.cost import DEFAULT_LATENCY, link_latencies
from optcoll.core.schedule import canonical_collective
from optcoll.core.topology import Topology
from optcoll.graph.symmetry import latency_orbit_representatives

__all__ = [
    "ALL_NODES",
    "MOST_NODES",
    "WindowCut",
    "StartupBound",
    "window_time",
    "startup_bound",
]

#: Up to this many compute nodes every one gets its per-node families; above, one per orbit.
ALL_NODES = 64
#: At most this many nodes get per-node families (the rest are not needed for validity).
MOST_NODES = 64

Arc = tuple[str, str]
#: A link's window: (bandwidth in bytes/µs, offset c: it carries the demand only in a span
#: of length ``T - c``).
Window = tuple[Fraction, Fraction]


def window_time(demand: Fraction, windows: Iterable[Window]) -> Fraction:
    """The least ``T`` with ``sum B * max(0, T - c) >= demand`` over the ``(B, c)`` windows
    (0 for no demand).

    Raises
    ------
    ValueError
        A positive demand and no window.

    Examples
    --------
    >>> window_time(Fraction(300), [(Fraction(100), Fraction(1)), (Fraction(100), Fraction(3))])
    Fraction(7, 2)
    >>> window_time(Fraction(100), [(Fraction(100), Fraction(1)), (Fraction(100), Fraction(3))])
    Fraction(2, 1)
    """
    if demand <= 0:
        return Fraction(0)
    ordered = sorted(windows, key=lambda w: w[1])
    if not ordered:
        raise ValueError("a positive demand needs a window")
    rate = weighted = Fraction(0)
    for i, (bandwidth, offset) in enumerate(ordered):
        rate += bandwidth
        weighted += bandwidth * offset
        time = (demand + weighted) / rate
        if i + 1 == len(ordered) or time <= ordered[i + 1][1]:
            return time
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class WindowCut:
    """One inequality of the module docstring: ``share * M`` bytes over ``windows``.

    Attributes
    ----------
    name : str
        What the demand is (for reports).
    share : Fraction
        The demand per byte of the collective's size ``M``.
    windows : tuple of (Fraction, Fraction)
        Per link of the cut, its bandwidth (bytes/µs) and offset ``c_e`` (µs).
    """

    name: str
    share: Fraction
    windows: tuple[Window, ...]

    def time_us(self, size: int | Fraction) -> Fraction:
        """The least completion time (µs) of a ``size``-byte collective it allows."""
        return window_time(self.share * size, self.windows)


@dataclass(frozen=True)
class StartupBound:
    """The window cuts of a collective on a topology (:func:`startup_bound`)."""

    collective: str
    cuts: tuple[WindowCut, ...]

    def time_us(self, size: int | Fraction) -> Fraction:
        """The largest of the cuts' times (µs) for ``size`` bytes (0 without cuts)."""
        return max((c.time_us(size) for c in self.cuts), default=Fraction(0))

    def tightest(self, size: int | Fraction) -> WindowCut | None:
        """The cut that gives :meth:`time_us` (None without cuts)."""
        return max(self.cuts, key=lambda c: c.time_us(size), default=None)


class _Distances:
    """Least latency sums between nodes (exact), each Dijkstra run once."""

    def __init__(self, topology: Topology, latency: dict[Arc, Fraction]) -> None:
        self.scale = math.lcm(*(v.denominator for v in latency.values())) if latency else 1
        self.out: dict[str, list[tuple[str, int]]] = {}
        self.into: dict[str, list[tuple[str, int]]] = {}
        for (u, v), value in latency.items():
            weight = int(value * self.scale)
            self.out.setdefault(u, []).append((v, weight))
            self.into.setdefault(v, []).append((u, weight))
        self.nodes = list(topology.node)
        self._from: dict[str, dict[str, int]] = {}
        self._to: dict[str, dict[str, int]] = {}

    def _run(
        self, adjacency: dict[str, list[tuple[str, int]]], sources: Iterable[str]
    ) -> dict[str, int]:
        distance = dict.fromkeys(sources, 0)
        heap = [(0, s) for s in distance]
        while heap:
            d, u = heapq.heappop(heap)
            if d > distance[u]:
                continue
            for v, w in adjacency.get(u, ()):
                if d + w < distance.get(v, d + w + 1):
                    distance[v] = d + w
                    heapq.heappush(heap, (d + w, v))
        return distance

    def value(self, scaled: int | None) -> Fraction | None:
        return None if scaled is None else Fraction(scaled, self.scale)

    def from_node(self, source: str) -> dict[str, int]:
        """``d(source, v)`` for every reachable ``v`` (scaled)."""
        if source not in self._from:
            self._from[source] = self._run(self.out, [source])
        return self._from[source]

    def to_node(self, target: str) -> dict[str, int]:
        """``d(v, target)`` for every ``v`` that reaches it (scaled)."""
        if target not in self._to:
            self._to[target] = self._run(self.into, [target])
        return self._to[target]

    def from_set(self, sources: Iterable[str]) -> dict[str, int]:
        """``min over sources s of d(s, v)`` (scaled)."""
        return self._run(self.out, sources)

    def to_set(self, targets: Iterable[str]) -> dict[str, int]:
        """``min over targets t of d(v, t)`` (scaled)."""
        return self._run(self.into, targets)


def _representatives(topology: Topology, latency: dict[Arc, Fraction]) -> list[str]:
    """The compute nodes, or beyond :data:`ALL_NODES` one per orbit of a group of
    automorphisms that keep every link's capacity and latency and compute nodes apart;
    at most :data:`MOST_NODES`."""
    compute = list(topology.compute_nodes)
    if len(compute) <= ALL_NODES:
        return compute
    return latency_orbit_representatives(topology, latency)[:MOST_NODES]


def _nodes(count: int) -> str:
    """``1 node``, ``2 nodes``."""
    return f"{count} node{'s' * (count != 1)}"


def _levels(
    distance: dict[str, int], members: Sequence[str], ends: Sequence[dict[str, int]]
) -> list[tuple[int, int, list[int]]]:
    """Per distinct ``distance`` level ``L`` of the ``members`` (farthest first): how many
    lie at least ``L`` away, ``L``, and per map of ``ends`` the least value among them
    (members some map misses are left out: a subset of the members is as valid a demand).

    >>> _levels({"a": 3, "b": 3, "c": 1}, ["a", "b", "c"], [{"a": 5, "b": 2, "c": 0}])
    [(2, 3, [2]), (3, 1, [0])]
    """
    reach = sorted(
        (m for m in members if m in distance and all(m in end for end in ends)),
        key=lambda m: -distance[m],
    )
    found: list[tuple[int, int, list[int]]] = []
    least: list[int] = []
    for i, m in enumerate(reach):
        values = [end[m] for end in ends]
        least = values if not i else [min(a, b) for a, b in zip(least, values, strict=True)]
        if i + 1 == len(reach) or distance[reach[i + 1]] != distance[m]:
            found.append((i + 1, distance[m], list(least)))
    return found


def _pareto(vectors: dict[str, tuple[int, ...]]) -> list[str]:
    """The keys whose vectors no other vector bounds from above everywhere (one of equals)."""
    kept: list[tuple[str, tuple[int, ...]]] = []
    for key, vec in sorted(vectors.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
        if not any(all(a >= b for a, b in zip(other, vec, strict=True)) for _, other in kept):
            kept.append((key, vec))
    return [k for k, _ in kept]


class _Builder:
    """The window cuts of one topology, overhead and latency (see :func:`startup_bound`)."""

    def __init__(self, topology: Topology, overhead: Fraction, default_latency: Fraction):
        self.topology = topology
        self.overhead = overhead
        self.latency = link_latencies(topology, default_latency)
        self.distances = _Distances(topology, self.latency)
        self.bandwidth = {a: Fraction(c) * 1000 for a, c in topology.capacity.items()}
        self.compute = list(topology.compute_nodes)
        self.n = len(self.compute)
        self.into: dict[str, list[Arc]] = {}
        self.out: dict[str, list[Arc]] = {}
        for arc in sorted(self.bandwidth):
            self.out.setdefault(arc[0], []).append(arc)
            self.into.setdefault(arc[1], []).append(arc)

    def window(self, arc: Arc, before: int, after: int) -> Window:
        """``arc``'s window with ``a_e = before`` and ``b_e = after`` (scaled)."""
        scale = self.distances.scale
        offset = self.overhead + self.latency[arc] + Fraction(before + after, scale)
        return (self.bandwidth[arc], offset)

    def into_node(
        self, v: str, sources: Sequence[str], share_each: Fraction, label: str
    ) -> list[WindowCut]:
        """Per distance level ``L``: the ``sources`` at least ``L`` from ``v`` send
        ``share_each`` per byte of ``M`` each into ``v``."""
        arcs = self.into.get(v, [])
        tails = [self.distances.to_node(u) for u, _ in arcs]
        cuts = []
        for count, level, least in _levels(self.distances.to_node(v), sources, tails):
            cuts.append(
                WindowCut(
                    f"{label}: pieces of {_nodes(count)} >= {Fraction(level, self.distances.scale)}"
                    f" from {v} into it",
                    share_each * count,
                    tuple(self.window(a, least[j], 0) for j, a in enumerate(arcs)),
                )
            )
        return cuts

    def out_of_node(
        self, x: str, targets: Sequence[str], share_each: Fraction, label: str
    ) -> list[WindowCut]:
        """Per distance level ``L``: ``x`` sends ``share_each`` per byte of ``M`` to each
        of the ``targets`` at least ``L`` from it, through its out-links."""
        arcs = self.out.get(x, [])
        heads = [self.distances.from_node(y) for _, y in arcs]
        cuts = []
        for count, level, least in _levels(self.distances.from_node(x), targets, heads):
            cuts.append(
                WindowCut(
                    f"{label}: shards of {_nodes(count)} >= {Fraction(level, self.distances.scale)}"
                    f" from {x} out of it",
                    share_each * count,
                    tuple(self.window(a, 0, least[j]) for j, a in enumerate(arcs)),
                )
            )
        return cuts

    def pairs_into(self, w: str, sources: Sequence[str], label: str) -> list[WindowCut]:
        """``M`` bytes that depend on a source ``x`` enter ``w`` (one cut per source whose
        distances to ``w``'s in-neighbours no other source's exceed everywhere)."""
        arcs = self.into.get(w, [])
        to_tail = [self.distances.to_node(u) for u, _ in arcs]
        vectors = {
            x: tuple(t[x] for t in to_tail)
            for x in sources
            if x != w and all(x in t for t in to_tail)
        }
        return [
            WindowCut(
                f"{label}: {x}'s data into {w}",
                Fraction(1),
                tuple(self.window(a, vectors[x][j], 0) for j, a in enumerate(arcs)),
            )
            for x in _pareto(vectors)
        ]

    def pairs_out(self, x: str, targets: Sequence[str], label: str) -> list[WindowCut]:
        """``M`` bytes that depend on ``x`` leave it and reach a target ``w``."""
        arcs = self.out.get(x, [])
        from_head = [self.distances.from_node(y) for _, y in arcs]
        vectors = {
            w: tuple(f[w] for f in from_head)
            for w in targets
            if w != x and all(w in f for f in from_head)
        }
        return [
            WindowCut(
                f"{label}: {x}'s data out of it to {w}",
                Fraction(1),
                tuple(self.window(a, 0, vectors[w][j]) for j, a in enumerate(arcs)),
            )
            for w in _pareto(vectors)
        ]

    def across(
        self, inside: Iterable[str], sources: Iterable[str], targets: Iterable[str],
        share: Fraction, name: str,
    ) -> list[WindowCut]:  # fmt: skip
        """``share * M`` bytes from ``sources`` (in the node set ``inside``) to ``targets``
        (outside) over the links leaving ``inside``."""
        inside = set(inside)
        sources, targets = list(sources), list(targets)
        if not sources or not targets or share <= 0:
            return []
        start = self.distances.from_set(sources)
        finish = self.distances.to_set(targets)
        arcs = [a for a in self.bandwidth if a[0] in inside and a[1] not in inside]
        arcs = [a for a in arcs if a[0] in start and a[1] in finish]
        if not arcs:
            return []
        windows = tuple(self.window(a, start[a[0]], finish[a[1]]) for a in sorted(arcs))
        return [WindowCut(name, share, windows)]

    def crossings(
        self, parts: Sequence[Iterable[str]], share: Fraction, name: str
    ) -> list[WindowCut]:
        """``share * M`` crossings of the links between ``parts``, each link's window from
        the nodes that send or receive (compute nodes and combining switches)."""
        part = {v: i for i, p in enumerate(parts) for v in p}
        holders = set(self.compute) | set(self.topology.reducing_switches)
        holders |= set(self.topology.multicast_switches)
        start = self.distances.from_set(holders)
        finish = self.distances.to_set(holders)
        arcs = [a for a in sorted(self.bandwidth) if part[a[0]] != part[a[1]]]
        arcs = [a for a in arcs if a[0] in start and a[1] in finish]
        if not arcs:
            return []
        return [
            WindowCut(name, share, tuple(self.window(a, start[a[0]], finish[a[1]]) for a in arcs))
        ]


def startup_bound(
    topology: Topology,
    collective: str,
    *,
    overhead: Fraction | float = Fraction(1),
    default_latency: Fraction = DEFAULT_LATENCY,
    root: str | None = None,
    cut: Iterable[str] | None = None,
    partition: tuple[Sequence[Iterable[str]], Fraction] | None = None,
) -> StartupBound:
    """The window cuts of ``collective`` on ``topology`` (module docstring) under a
    per-step ``overhead`` (µs, read exactly) and link latencies (``default_latency`` for
    links that declare none).

    ``cut``: the bottleneck node set of r* (allgather) or of the reversed topology's r*
    (reduce-scatter), whose compute nodes are the sources (the owners); ``partition``:
    ``(parts, crossings per byte of M)`` of the partition bound (allreduce). Collectives
    without window cuts (all-to-all) get none.
    """
    collective = canonical_collective(collective)
    build = _Builder(topology, Fraction(overhead), default_latency)
    compute = build.compute
    n = build.n
    cuts: list[WindowCut] = []
    nodes = _representatives(topology, build.latency)
    if collective == "allgather":
        for v in nodes:
            cuts += build.into_node(v, [x for x in compute if x != v], Fraction(1, n), collective)
        if cut is not None:
            inside = set(cut)
            sources = [x for x in compute if x in inside]
            targets = [w for w in compute if w not in inside]
            cuts += build.across(
                inside, sources, targets, Fraction(len(sources), n),
                f"allgather: pieces of the {len(sources)} nodes inside the cut of r*",
            )  # fmt: skip
    elif collective == "reduce_scatter":
        for x in nodes:
            cuts += build.out_of_node(
                x, [w for w in compute if w != x], Fraction(1, n), "reduce-scatter"
            )
        if cut is not None:
            owners = set(cut)
            sources = [x for x in compute if x not in owners]
            targets = [w for w in compute if w in owners]
            outside = set(topology.node) - owners
            cuts += build.across(
                outside, sources, targets, Fraction(len(targets), n),
                f"reduce-scatter: shards of the {len(targets)} nodes inside the reversed cut of r*",
            )  # fmt: skip
    elif collective == "allreduce":
        for v in nodes:
            cuts += build.pairs_into(v, compute, collective)
            cuts += build.pairs_out(v, compute, collective)
        if partition is not None:
            parts, share = partition
            cuts += build.crossings(parts, share, "allreduce: the partition bound's crossings")
    elif collective in ("broadcast", "reduce"):
        root = root if root is not None else compute[0]
        if collective == "broadcast":
            cuts += build.pairs_out(root, compute, collective)
            for w in compute:
                if w != root:
                    cuts += build.pairs_into(w, [root], collective)
        else:
            cuts += build.pairs_into(root, compute, collective)
            for x in compute:
                if x != root:
                    cuts += build.pairs_out(x, [root], collective)
    unique = {(c.share, tuple(sorted(c.windows))): c for c in cuts}
    return StartupBound(collective, tuple(unique.values()))
