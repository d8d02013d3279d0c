"""The exact optimal allgather cut ratio of a topology, with its bottleneck cut.

For a topology with compute nodes ``Vc`` (``N = |Vc|``) and bandwidth ``B+(S)``
leaving a node set ``S``, every allgather of ``M`` bytes takes at least
``(M/N) * |S ∩ Vc| / B+(S)`` for every cut ``S`` holding some but not all
compute nodes, and ForestColl (Zhao et al., arXiv 2402.06787) shows the best
such bound is achieved. So the optimum is fixed by the **cut ratio**

    r* = max { |S ∩ Vc| / B+(S) : S ⊂ V, S ∩ Vc ≠ ∅, Vc ⊄ S }

(in 1/bandwidth_unit). :func:`optimal_cut_ratio` computes r* exactly, as a
:class:`~fractions.Fraction`, together with a bottleneck cut ``S*`` attaining it,
which is re-checked against the topology before returning.

A switch relays without copying, so what it cannot receive it cannot send:
when a switch has less bandwidth in than out, ``B+(S)`` counts only the
*forwardable* capacity ``g <= c`` (no switch sending more than it receives)
that serves best, r* = min_g max_S |S ∩ Vc| / g(δ+(S)), and ``S*`` is a
bottleneck cut of that ``g`` (:mod:`optcoll.bounds.forwardable`; the returned
``usable`` topology carries ``g``). Otherwise ``g = c``.

Methods
-------
``"combinatorial"`` (default)
    Parametric max-flow (a Dinkelbach/Newton iteration) on integers; see
    :func:`_combinatorial_cut_ratio`.
``"brute-force"``
    Enumerates every node subset; topologies with at most 16 nodes and no
    switch short of in-capacity. A test oracle.
``"lp"``
    The congestion LP of :mod:`formulations.congestion` (with a forwardable
    capacity when a switch is short of in-capacity), proved exactly there.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.bounds.cut_ratio import optimal_cut_ratio
>>> result = optimal_cut_ratio(load_topology("dgx-a100:2"))
>>> result.ratio, result.k, result.U
(Fraction(3, 65), 13, Fraction(3, 5))
>>> round(result.algbw, 3)
346.667
>>> result.cut_compute, result.cut_bandwidth
(15, Fraction(325, 1))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from optcoll.bounds.forwardable import forwardable_topology
from optcoll.core.arguments import as_topology, text_argument
from optcoll.core.rational import fraction_text, rounded_text
from optcoll.core.topology import Topology
from optcoll.core.units import BYTES_PER_SECOND
from optcoll.exceptions import MethodError, SolveError
from optcoll.graph.family_symmetry import declared_generators
from optcoll.graph.maxflow import FlowNetwork, IntVector, RootedSearch
from optcoll.graph.symmetry import automorphism_group, is_automorphism, preserves_capacity

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["CutRatio", "optimal_cut_ratio", "METHODS", "BRUTE_FORCE_MAX_NODES"]

#: Method names accepted by :func:`optimal_cut_ratio`.
METHODS = ("combinatorial", "lp", "brute-force")

#: Largest topology (in nodes, switches included) the brute-force method accepts.
BRUTE_FORCE_MAX_NODES = 16

#: What a method returns: r* (in 1/bandwidth_unit), a cut attaining it, work counters.
_Solved = tuple[Fraction, frozenset[str], dict[str, int], Topology]


@dataclass(frozen=True)
class CutRatio:
    """The optimal cut ratio r* of a topology and the cut that certifies it.

    Attributes
    ----------
    topology : Topology
        The topology it was computed for.
    ratio : Fraction
        r*, in 1/``topology.bandwidth_unit``.
    k : int
        Chunks per compute root of ForestColl's integral construction (each root's
        shard is cut into k chunks, carried by trees of several chunks each): the
        denominator of r* expressed in the topology's integer capacity units
        (:meth:`Topology.integer_capacities`).
    bottleneck_cut : frozenset of str
        A node set S* with ``|S* ∩ Vc| / B+(S*) == ratio``.
    cut_compute : int
        ``|S* ∩ Vc|``.
    cut_bandwidth : Fraction
        ``B+(S*)``, the bandwidth leaving S* (in ``usable``).
    method : str
        The method that computed it.
    seconds : float
        Wall-clock time of the computation, certificate check included.
    stats : mapping
        Work counters of the method (e.g. ``max_flows`` for the combinatorial one).
    usable : Topology
        The capacity r* is the cut ratio of: ``topology`` itself, or, when a
        switch has less bandwidth in than out, its optimal forwardable part
        (same nodes, bandwidths ``g <= c``, no switch sending more than it
        receives; :mod:`optcoll.bounds.forwardable`). Schedules are built on it.
    """

    topology: Topology = field(repr=False, compare=False)
    ratio: Fraction
    k: int
    bottleneck_cut: frozenset[str]
    cut_compute: int
    cut_bandwidth: Fraction
    method: str
    seconds: float = field(compare=False)
    stats: Mapping[str, int] = field(default_factory=dict, compare=False)
    usable: Topology = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.usable is None:
            object.__setattr__(self, "usable", self.topology)

    @property
    def num_compute(self) -> int:
        """N, the number of compute nodes."""
        return self.topology.num_compute

    @property
    def algbw_exact(self) -> Fraction:
        """Optimal allgather algorithm bandwidth N / r*, exact (in bandwidth_unit)."""
        return self.num_compute / self.ratio

    @property
    def algbw(self) -> float:
        """Optimal allgather algorithm bandwidth N / r* (in bandwidth_unit)."""
        return float(self.algbw_exact)

    @property
    def U(self) -> Fraction:
        """ForestColl's U = k * r*: the time of one of the k trees per unit of data."""
        return self.k * self.ratio

    def allgather_time(self, message_bytes: int | Fraction) -> Fraction:
        """Optimal allgather time in seconds, (M/N) * r*, for M = ``message_bytes``.

        Needs a byte rate (GB/s; a topology declared in another rate unit is
        converted to GB/s when built, :mod:`optcoll.core.units`), not a relative unit.

        Examples
        --------
        >>> from optcoll import load_topology
        >>> optimal_cut_ratio(load_topology("dgx-a100:1")).allgather_time(8 * 10**9)
        Fraction(7, 300)
        """
        unit = self.topology.bandwidth_unit
        if unit not in BYTES_PER_SECOND:
            raise SolveError(
                f"cannot convert bandwidth unit {unit!r} of topology {self.topology.name!r} to "
                "bytes per second: it is a relative unit (no byte rate)"
            )
        return Fraction(message_bytes) / self.num_compute * self.ratio / BYTES_PER_SECOND[unit]

    def describe_cut(self) -> str:
        """The bottleneck cut in words, naming the node groups (boxes) it contains.

        Examples
        --------
        >>> from optcoll import load_topology
        >>> optimal_cut_ratio(load_topology("dgx-a100:2")).describe_cut()
        'every node except b0.gpu0: 15 compute nodes behind 325 GB/s'
        """
        topo, inside = self.topology, self.bottleneck_cut
        outside = [v for v in topo.node_ids if v not in inside]
        plural = "s" * (self.cut_compute != 1)
        behind = (
            f"{self.cut_compute} compute node{plural} behind "
            f"{rounded_text(self.cut_bandwidth)} {topo.bandwidth_unit}"
        )
        if len(outside) <= 2:
            return f"every node except {' and '.join(outside)}: {behind}"
        members: dict[str, list[str]] = {}
        for node in topo.nodes:
            if node.group is not None:
                members.setdefault(node.group, []).append(node.id)
        whole = [g for g, ids in members.items() if all(v in inside for v in ids)]
        covered = {v for g in whole for v in members[g]}
        rest = [v for v in topo.node_ids if v in inside and v not in covered]
        if len(whole) > 4:
            parts = [f"{len(whole)} groups ({whole[0]}, {whole[1]}, ..., {whole[-1]})"]
        else:
            parts = list(whole)
        if len(rest) <= 4:
            rest_text = ", ".join(rest)
        else:
            n_compute = sum(topo.is_compute(v) for v in rest)
            counts = []
            if n_compute:
                counts.append(f"{n_compute} compute node{'s' * (n_compute != 1)}")
            if len(rest) - n_compute:
                n_switch = len(rest) - n_compute
                counts.append(f"{n_switch} switch{'es' * (n_switch != 1)}")
            rest_text = " and ".join(counts)
        what = ", ".join(parts)
        if rest_text:
            what = f"{what} plus {rest_text}" if what else rest_text
        return f"{what}: {behind}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (exact numbers as
        :func:`~optcoll.core.rational.fraction_text` strings: ``"p/q"``, an integer as ``"p"``)."""
        order = {v: i for i, v in enumerate(self.topology.node_ids)}
        return {
            "topology": self.topology.name,
            "num_compute": self.num_compute,
            "bandwidth_unit": self.topology.bandwidth_unit,
            "cut_ratio": fraction_text(self.ratio),
            "algbw": round(self.algbw, 3),
            "U": fraction_text(self.U),
            "k": self.k,
            "bottleneck_cut": sorted(self.bottleneck_cut, key=order.__getitem__),
            "cut_compute": self.cut_compute,
            "cut_bandwidth": fraction_text(self.cut_bandwidth),
            "cut_description": self.describe_cut(),
            "short_switches": self.topology.short_switches(),
            "method": self.method,
            "seconds": self.seconds,
            "stats": dict(self.stats),
        }


def optimal_cut_ratio(topology: Topology | nx.Graph, method: str = "combinatorial") -> CutRatio:
    """The exact optimal allgather cut ratio r* of ``topology`` and a bottleneck cut.

    Parameters
    ----------
    topology : Topology or networkx graph
        A networkx graph carries its bandwidths in the edge attribute ``bandwidth``
        (:meth:`~optcoll.core.topology.Topology.from_networkx`).
    method : {"combinatorial", "lp", "brute-force"}
        See the module docstring. All return the same ``ratio`` and ``k``; the
        bottleneck cut may differ when several cuts attain r*.

    Returns
    -------
    CutRatio
        Certified: ``B+(S*)`` is recomputed with :meth:`Topology.cut_bandwidth`
        and ``|S* ∩ Vc| / B+(S*) == ratio`` is checked before returning.

    Raises
    ------
    MethodError
        Unknown method, brute force on more than 16 nodes, or the LP method
        not installed.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topo = load_topology("mi250:1")
    >>> optimal_cut_ratio(topo).ratio == optimal_cut_ratio(topo, "brute-force").ratio
    True
    """
    topology = as_topology(topology)
    text_argument(method, "method")
    return optimal_cut_ratio_core(topology, method)


def optimal_cut_ratio_core(topology: Topology, method: str = "combinatorial") -> CutRatio:
    """The core of :func:`optimal_cut_ratio`: its arguments are already checked."""
    solvers: dict[str, Callable[[Topology], _Solved]] = {
        "combinatorial": _forwardable(_combinatorial_cut_ratio),
        "lp": _lp_cut_ratio,
        "brute-force": _brute_force_cut_ratio,
    }
    if method not in solvers:
        raise MethodError(
            f"unknown bound method {method!r}; valid methods are {', '.join(METHODS)}"
        )
    start = time.perf_counter()
    ratio, cut, stats, usable = solvers[method](topology)
    if usable is not topology:
        _check_forwardable(topology, usable)
    cut_compute = sum(1 for v in cut if topology.is_compute(v))
    cut_bandwidth = usable.cut_bandwidth(cut)
    if not (0 < cut_compute < topology.num_compute and cut_bandwidth > 0):
        raise SolveError(f"internal error: method {method!r} returned an invalid cut {cut}")
    if Fraction(cut_compute) / cut_bandwidth != ratio:
        raise SolveError(
            f"internal error: method {method!r} claims r* = {ratio} but its cut has ratio "
            f"{Fraction(cut_compute) / cut_bandwidth}"
        )
    _, unit = usable.integer_capacities()
    k = (ratio * unit).denominator
    seconds = time.perf_counter() - start
    return CutRatio(
        topology, ratio, k, cut, cut_compute, cut_bandwidth, method, seconds, stats, usable
    )


def _check_forwardable(topology: Topology, usable: Topology) -> None:
    """``usable`` has ``topology``'s nodes, bandwidths at most its, and no switch sending
    more than it receives."""
    if usable.nodes != topology.nodes or any(
        c > topology.capacity.get(arc, 0) for arc, c in usable.capacity.items()
    ):
        raise SolveError("internal error: the usable capacity exceeds the topology's")
    if usable.short_switches():
        raise SolveError(
            f"internal error: switch {usable.short_switches()[0]!r} sends more than it receives"
        )


def _forwardable(solver: Callable[[Topology], _Solved]) -> Callable[[Topology], _Solved]:
    """``solver`` run on the optimal forwardable part of the topology's capacity."""

    def run(topology: Topology) -> _Solved:
        found = forwardable_topology(topology, lambda t: solver(t)[:2])
        usable, rounds = found.usable, found.rounds
        ratio, cut, stats, _ = solver(usable)
        if rounds:
            stats = {**stats, "cutting_plane_rounds": rounds}
        return ratio, cut, stats, usable

    return run


# --- combinatorial: parametric max-flow --------------------------------------------


def _combinatorial_cut_ratio(topology: Topology) -> _Solved:
    """r* by a Dinkelbach iteration over max-flows from a super source.

    Work in integer capacities ``c`` (:meth:`Topology.integer_capacities`) and a
    candidate ratio ``p/q`` (in those units). Add a super source ``s`` with an
    arc of capacity ``q`` to every compute node and scale link capacities to
    ``p*c``. A cut ``X ∪ {s}`` separating ``s`` from compute node ``v`` then has
    capacity ``p*B+(X) + q*(N - |X ∩ Vc|)``, which is ``>= N*q`` exactly when
    ``|X ∩ Vc| / B+(X) <= p/q``. So ``p/q >= r*`` iff ``maxflow(s, v) >= N*q``
    for every compute ``v`` (rooted connectivity), and a smaller flow's minimum
    cut is a cut with ratio ``> p/q``: the next candidate (Dinkelbach's step;
    the candidates increase to r* in finitely many steps).

    Three facts keep the work near ``N`` small max-flows:

    * The condition is monotone in ``p/q``, so a sink that passed stays passed
      when the candidate grows: one pass over the sinks suffices.
    * As in Hao and Orlin's minimum-cut algorithm, sinks already passed are
      merged into the source (:class:`~optcoll.graph.maxflow.RootedSearch`): a
      violated cut that excludes the i-th sink either contains every earlier
      sink or was already found at the first earlier sink it excludes.
    * A local certificate often replaces the max-flow to sink ``t``: every cut
      ``X`` holding the merged set ``M`` and not ``t`` pays, for each arc
      ``w -> t``, either that arc (``w`` in ``X``) or all arcs into ``w`` from
      ``M`` and ``s`` (``w`` outside ``X``), so ``q + sum_w min(...)`` bounds
      its capacity from below. (In a DGX box, once one GPU is merged, the
      NVSwitch term certifies every other GPU of the box.)

    * On a large topology with automorphisms (:func:`~optcoll.graph.symmetry.automorphism_group`,
      compute nodes and switches kept apart, every map checked exactly), ``maxflow(s, v)``
      is the same for all compute nodes of an orbit (an automorphism that fixes the
      source's arcs maps a flow to ``v`` onto one to its image), so one plain max-flow
      per orbit decides the pass: one on a torus or hypercube, and on a ring of any
      size (its rotation in declaration order is checked first, in ``O(links)``).
      A built-in family's own symmetries (box, GPU and rail rotations of a DGX cluster,
      group rotation of a dragonfly, translations of a torus;
      :func:`~optcoll.graph.family_symmetry.declared_generators`) are tried
      first, at any size, each checked exactly (:func:`~optcoll.graph.symmetry.is_automorphism`)
      and dropped if it fails; the orbits of the group the valid ones generate are
      found by union-find over the generators, without listing the group. The
      argument needs no freeness: an automorphism ``σ`` of the topology keeping compute
      nodes compute, extended by ``σ(s) = s``, maps the arcs ``s -> Vc`` (all of
      capacity ``q``) onto themselves and every link to one of equal capacity ``p*c``,
      so it maps each ``s``-``v`` flow (and cut) onto an ``s``-``σ(v)`` flow (cut) of
      the same value; hence ``maxflow(s, v)`` is constant on each orbit of the
      generated group (a product of generators and their inverses, which are powers).

    Any sink order is correct; the one used takes locally certified sinks
    first, then for a max-flow a sink no merged node has an arc into (on a
    ring: every other node, after which the rest pass locally), else the next
    sink in declaration order. The candidate starts at the best of a few cheap
    cuts (single compute nodes, all nodes but one compute node, each node
    group and its complement).

    Complexity: at most ``N + (number of improvements)`` max-flows on ``V + 1``
    nodes and ``E + N`` arcs, each ``O(V^2 E)`` (Dinic), plus ``O(E)`` for the
    local certificates per merged sink (hubs of out-degree > 64 excepted).
    Measured: 128 max-flows for dgx-a100:128 (1024 GPUs), 40 for mi250:8.
    """
    caps, unit = topology.integer_capacities()
    best, best_cut = _starting_cut(topology, caps)
    search = _ParametricSearch(topology, caps, best)
    rooted = search.rooted
    representatives, symmetry_stats = _sink_representatives(topology, caps)
    if representatives is not None:  # one unmerged max-flow per orbit of sinks
        for representative in representatives:
            while (side := search.violated_cut(representative)) is not None:
                best_cut = search.improve(side)
    while representatives is None and (sink := rooted.next_sink(search.requirement())) is not None:
        while (side := search.violated_cut(sink)) is not None:
            best_cut = search.improve(side)
        rooted.merge(sink)
    stats = {
        "max_flows": rooted.max_flows,
        "sinks_passed_locally": rooted.passed_locally,
        "improvements": search.improvements,
        **symmetry_stats,
    }
    return Fraction(search.p, search.q) / unit, best_cut, stats, topology


#: A plain max-flow per orbit of declared symmetry replaces the merged pass over the
#: sinks when there are at most ``N / ORBITS_PER_MAX_FLOW`` orbits: the merged pass with
#: local certificates needs about one max-flow per box of 8 GPUs (dgx-v100:3, 8 orbits
#: of GPUs: 8 max-flows against 3).
ORBITS_PER_MAX_FLOW = 8

#: Compute nodes from which :func:`_combinatorial_cut_ratio` looks for automorphisms.
SYMMETRY_FROM = 256


def _sink_representatives(
    topology: Topology, caps: Mapping[tuple[str, str], int]
) -> tuple[list[int] | None, dict[str, int]]:
    """One compute node index (declaration order) per orbit of a group of automorphisms,
    or None when none is found or the topology is small; and counters (declared
    generators used and rejected).

    The family's declared generators are checked exactly and the orbits of those that
    pass found by union-find; they are used when there are few
    (:data:`ORBITS_PER_MAX_FLOW`). Otherwise: a switch-free topology that the rotation
    ``c_i -> c_(i+1 mod N)`` of its compute nodes maps onto itself (a ring or any
    circulant graph declared in order, checked link by link in ``O(links)``) has one
    orbit at any size; a large switch-free one tries the generic search."""
    declared = declared_generators(topology)
    if declared:
        kind = {node.id: (node.type, node.reduce, node.multicast) for node in topology.nodes}
        valid = [g for g in declared if is_automorphism(caps, kind, g)]
        stats = {
            "declared_generators": len(valid),
            "rejected_generators": len(declared) - len(valid),
        }
        orbits = _orbit_representatives(topology, valid) if valid else None
        if orbits is not None and len(orbits) * ORBITS_PER_MAX_FLOW <= topology.num_compute:
            return orbits, stats
        representatives = _found_representatives(topology, caps)
        return representatives, stats
    return _found_representatives(topology, caps), {}


def _orbit_representatives(
    topology: Topology, generators: Sequence[Mapping[str, str]]
) -> list[int]:
    """The first compute node index (declaration order) of each orbit of the group
    ``generators`` generate, by union-find over the arcs ``v -> g(v)``."""
    index = {v: i for i, v in enumerate(topology.node_ids)}
    parent = list(range(len(index)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for generator in generators:
        for v, w in generator.items():
            a, b = root(index[v]), root(index[w])
            if a != b:
                parent[max(a, b)] = min(a, b)
    seen: set[int] = set()
    representatives = []
    for v in topology.compute_nodes:
        i = index[v]
        r = root(i)
        if r not in seen:
            seen.add(r)
            representatives.append(i)
    return sorted(representatives)


def _found_representatives(
    topology: Topology, caps: Mapping[tuple[str, str], int]
) -> list[int] | None:
    """:func:`_sink_representatives` without declared generators."""
    ids = topology.node_ids
    compute = topology.compute_nodes
    if not topology.switch_nodes and len(compute) >= 3:
        image = dict(zip(compute, compute[1:] + compute[:1], strict=True))
        if preserves_capacity(topology.capacity, image):
            return [ids.index(compute[0])]
    if topology.num_compute < SYMMETRY_FROM or topology.switch_nodes:
        # With switches the group must fix them (IB switches of a cluster are not
        # permuted freely), the search finds no free group and costs more than the
        # pass it would shorten (dgx-a100:128: 41.6 against 0.46 CPU s).
        return None
    index = {v: i for i, v in enumerate(ids)}
    arcs = {(index[a], index[b]): c for (a, b), c in caps.items()}
    colour = [int(topology.is_compute(v)) for v in ids]
    group = automorphism_group(len(ids), arcs, colour)
    if group is None:
        return None
    return [r for r in group.representatives if colour[r]]


class _ParametricSearch:
    """The candidate ratio of :func:`_combinatorial_cut_ratio` and its rooted search.

    Nodes are numbered in declaration order and the super source is node ``n``;
    the candidate ratio is ``p/q`` in integer-capacity units, link ``e`` has
    capacity ``p*c(e)`` and the source arc to each compute node ``q``. The pass over
    the sinks is :class:`~optcoll.graph.maxflow.RootedSearch`'s (merging, local
    certificates, sink order); an improvement changes the capacities and keeps the
    merged sinks (the condition is monotone in ``p/q``).
    """

    def __init__(
        self, topology: Topology, caps: Mapping[tuple[str, str], int], start: Fraction
    ) -> None:
        self.ids = topology.node_ids
        index = {v: i for i, v in enumerate(self.ids)}
        self.n = n = len(self.ids)
        self.compute = [index[v] for v in topology.compute_nodes]
        self.link_tails = np.array([index[u] for u, _ in caps], dtype=np.int64)
        self.link_heads = np.array([index[v] for _, v in caps], dtype=np.int64)
        self.link_caps = list(caps.values())
        self.p, self.q = start.numerator, start.denominator
        # p <= N and q <= sum(link_caps), so every capacity and sum stays below this bound
        num_compute = len(self.compute)
        fits = num_compute * sum(self.link_caps) * (len(self.link_caps) + num_compute + 1) < 2**62
        self.link_caps_np = np.array(self.link_caps, dtype=np.int64) if fits else None
        network = FlowNetwork(
            n + 1,
            np.concatenate([self.link_tails, np.full(num_compute, n)]),
            np.concatenate([self.link_heads, np.array(self.compute, dtype=np.int64)]),
            self._capacities(),
        )
        self.rooted = RootedSearch(network, n, self.compute, ordered=True)
        self.improvements = 0

    def _capacities(self) -> IntVector:
        """``p*c`` on the links, then ``q`` on every source arc."""
        p, q = self.p, self.q
        if self.link_caps_np is not None:
            return np.concatenate([p * self.link_caps_np, np.full(len(self.compute), q)])
        return [p * c for c in self.link_caps] + [q] * len(self.compute)

    def requirement(self) -> int:
        """``N*q``: the flow every sink needs for the candidate ``p/q`` to be >= r*."""
        return len(self.compute) * self.q

    def violated_cut(self, sink: int) -> np.ndarray | None:
        """The source side of a cut to ``sink`` below ``N*q`` (a cut with ratio
        ``> p/q``), or None when the max-flow certifies the sink."""
        cut = self.rooted.max_flow(sink)
        if cut.value >= self.requirement():
            return None
        return cut.source_side[: self.n]

    def improve(self, side: np.ndarray) -> frozenset[str]:
        """Make the violated cut ``side`` the candidate (Dinkelbach's step); its node set."""
        leaving = side[self.link_tails] & ~side[self.link_heads]
        cut_compute = sum(1 for c in self.compute if side[c])
        if self.link_caps_np is not None:
            cut_bandwidth = int(self.link_caps_np[leaving].sum())
        else:
            cut_bandwidth = sum(
                c for c, x in zip(self.link_caps, leaving.tolist(), strict=True) if x
            )
        improved = Fraction(cut_compute, cut_bandwidth)
        assert improved > Fraction(self.p, self.q), "a violated cut must beat the candidate"
        self.p, self.q = improved.numerator, improved.denominator
        self.improvements += 1
        self.rooted.reweigh(self._capacities())
        return frozenset(self.ids[j] for j in np.flatnonzero(side).tolist())


def _starting_cut(
    topology: Topology, caps: Mapping[tuple[str, str], int]
) -> tuple[Fraction, frozenset[str]]:
    """The best (in integer units) of a few cheap cuts, a lower bound on r*.

    Candidates: each compute node alone, all nodes but one compute node, each
    node group, and all nodes outside one group. ``O(V + E)``.
    """
    compute = topology.compute_nodes
    everything = frozenset(topology.node_ids)
    group_of = {node.id: node.group for node in topology.nodes}
    members: dict[str, set[str]] = {}
    for node in topology.nodes:
        if node.group is not None:
            members.setdefault(node.group, set()).add(node.id)
    out_cap = dict.fromkeys(topology.node_ids, 0)
    in_cap = dict.fromkeys(topology.node_ids, 0)
    group_out = dict.fromkeys(members, 0)
    group_in = dict.fromkeys(members, 0)
    for (u, v), c in caps.items():
        out_cap[u] += c
        in_cap[v] += c
        gu, gv = group_of[u], group_of[v]
        if gu != gv:
            if gu is not None:
                group_out[gu] += c
            if gv is not None:
                group_in[gv] += c
    # (|S ∩ Vc|, B+(S), nodes named, whether S is those nodes or all others)
    candidates: list[tuple[int, int, Iterable[str], bool]] = []
    for v in compute:
        candidates.append((1, out_cap[v], [v], True))
        candidates.append((len(compute) - 1, in_cap[v], [v], False))
    for g, ids in members.items():
        inside = sum(1 for v in ids if topology.is_compute(v))
        candidates.append((inside, group_out[g], ids, True))
        candidates.append((len(compute) - inside, group_in[g], ids, False))
    best: tuple[Fraction, Iterable[str], bool] | None = None
    for inside, bandwidth, named, named_inside in candidates:
        if 0 < inside < len(compute):
            ratio = Fraction(inside, bandwidth)
            if best is None or ratio > best[0]:
                best = (ratio, named, named_inside)
    assert best is not None, "a topology has at least two compute nodes"
    ratio, named, named_inside = best
    return ratio, frozenset(named) if named_inside else everything - frozenset(named)


# --- brute force -------------------------------------------------------------------


def _brute_force_cut_ratio(topology: Topology) -> _Solved:
    """r* by enumerating all ``2^V`` node sets (``V <= 16``), exact integers.

    Among the sets attaining r*, the one with the smallest bit mask (node ``i``
    is bit ``i`` in declaration order) is returned.
    """
    ids = topology.node_ids
    n = len(ids)
    if n > BRUTE_FORCE_MAX_NODES:
        raise MethodError(
            f"method 'brute-force' enumerates 2^V node sets and accepts at most "
            f"{BRUTE_FORCE_MAX_NODES} nodes; topology {topology.name!r} has {n}. "
            "Use method 'combinatorial'."
        )
    if topology.short_switches():
        raise MethodError(
            f"method 'brute-force' enumerates cuts of the full link bandwidths, but switch "
            f"{topology.short_switches()[0]!r} of {topology.name!r} has less bandwidth in than "
            f"out (what it cannot receive it cannot forward); use method 'combinatorial' or 'lp'"
        )
    caps, unit = topology.integer_capacities()
    index = {v: i for i, v in enumerate(ids)}
    masks = np.arange(1 << n, dtype=np.int64)
    compute_mask = sum(1 << index[v] for v in topology.compute_nodes)
    exact = max(caps.values()) * len(caps) < 2**62
    bandwidth: Any = np.zeros(1 << n, dtype=np.int64 if exact else object)
    for (u, v), c in caps.items():
        leaving = ((masks >> index[u]) & 1).astype(bool) & ~((masks >> index[v]) & 1).astype(bool)
        bandwidth[leaving] += c
    inside = np.zeros(1 << n, dtype=np.int64)
    for v in topology.compute_nodes:
        inside += (masks >> index[v]) & 1
    valid = (inside > 0) & (inside < topology.num_compute)
    best_count, best_bandwidth, best_mask = 0, 1, -1
    for mask, count, bw in zip(
        np.flatnonzero(valid).tolist(),
        inside[valid].tolist(),
        bandwidth[valid].tolist(),
        strict=True,
    ):
        if count * best_bandwidth > best_count * bw:
            best_count, best_bandwidth, best_mask = count, bw, mask
    assert best_mask >= 0 and best_mask & compute_mask, "some cut holds a compute node"
    cut = frozenset(ids[i] for i in range(n) if best_mask >> i & 1)
    stats = {"cuts_enumerated": 1 << n}
    return Fraction(best_count, best_bandwidth) / unit, cut, stats, topology


# --- LP ------------------------------------------------------------------------------


def _lp_cut_ratio(topology: Topology) -> _Solved:
    """r* from the congestion LP (:func:`optcoll.bounds.congestion.congestion_bound`)."""
    from optcoll.bounds.congestion import congestion_bound

    result = congestion_bound(topology)
    usable = topology.with_capacity(result.usable) if topology.short_switches() else topology
    return result.cut_ratio, frozenset(result.cut), {}, usable
