"""Scatter and gather: the exact optimum by parametric max-flow, a cut that proves it.

A **scatter** from ``root`` sends every other compute node its own piece of ``M / N``
bytes (the root keeps its own); a **gather** collects them at the root. Neither copies
nor combines, so a scatter is a single-source multicommodity flow, and with one source
the commodities merge into *one* flow: the root emits ``(N - 1)`` pieces, every other
compute node absorbs one (a path decomposition splits the flow back into per-destination
pieces with the same loads). By max-flow min-cut with a super sink (every compute node
``v != root`` joined to it by an arc of one piece), that flow fits in time ``t`` per
piece iff ``t * B+(S) >= |Vc \\ S|`` for every node set ``S`` holding the root, so

    t* = max over S containing the root of |Vc \\ S| / B+(S)

(a gather: the same on the reversed links, ``S`` the root's complement side). This module
finds that maximum exactly by Dinkelbach's method (Dinkelbach 1967): for the current
ratio ``t = P / Q`` one integer max-flow (arc capacities ``P * c(a)``, sink arcs ``Q``)
either saturates every sink arc, proving ``t`` (its min cut is the certificate), or its
min cut ``S`` has a larger ratio, the next ``t``; the ratios strictly increase over
finitely many cuts. The LP of :func:`optcoll.bounds.demand.demand_optimum` computes the
same value independently (the tests hold one against the other).

An ``M``-byte scatter takes ``(M / N) * t*`` at best: ``time_factor = t* / N`` (time
``M * time_factor``) and ``algbw = M / T = N / t*``.

Examples
--------
>>> from optcoll import load_topology
>>> topo = load_topology("star:4,bw=2")
>>> cut = rooted_cut(topo, "h0", "scatter")
>>> cut.ratio, sorted(cut.side), cut.time_factor, cut.algbw
(Fraction(3, 2), ['h0'], Fraction(3, 8), Fraction(8, 3))
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from optcoll.core.arguments import choice_argument, node_argument, topology_argument
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError
from optcoll.graph.maxflow import FlowNetwork

__all__ = ["ROOTED_COLLECTIVES", "RootedCut", "rooted_cut"]

#: The rooted collectives without copies or sums.
ROOTED_COLLECTIVES = ("scatter", "gather")


@dataclass(frozen=True)
class RootedCut:
    """``ratio`` = t* per piece (``|Vc \\ S| / B+(S)``, in 1 / bandwidth units) with the
    set ``side`` that attains it (for a gather, the side without the root, whose links
    into the root's side are the bottleneck), and the number of max-flows run."""

    collective: str
    root: str
    num_compute: int
    ratio: Fraction
    side: frozenset[str]
    max_flows: int

    @property
    def time_factor(self) -> Fraction:
        """``T / M``: an ``M``-byte scatter or gather takes ``M * time_factor``."""
        return self.ratio / self.num_compute

    @property
    def algbw(self) -> Fraction:
        """``M / T`` in bandwidth units."""
        return 1 / self.time_factor


def rooted_cut(topology: Topology, root: str, collective: str = "scatter") -> RootedCut:
    """The exact scatter (or gather) optimum from (to) ``root`` and the cut attaining it.

    Cost: a few integer max-flows (Dinkelbach's iterations, each on ``|V| + 1`` nodes).

    Raises
    ------
    ArgumentError
        An unknown collective, or a root that is not a compute node.
    """
    topology_argument(topology)
    choice_argument(collective, ROOTED_COLLECTIVES, "collective")
    root = node_argument(topology, root, "root")
    if not topology.is_compute(root):
        raise ArgumentError(f"root {root!r} is a switch; a {collective} root is a compute node")
    return _rooted_cut(topology, root, collective)


def _rooted_cut(topology: Topology, root: str, collective: str) -> RootedCut:
    nodes = topology.node_ids
    index = {v: i for i, v in enumerate(nodes)}
    caps, unit = topology.integer_capacities()
    arcs = list(caps)
    gather = collective == "gather"
    tails = [index[v if gather else u] for u, v in arcs]
    heads = [index[u if gather else v] for u, v in arcs]
    sink = len(nodes)
    sinks = [index[v] for v in topology.compute_nodes if v != root]
    tails += sinks
    heads += [sink] * len(sinks)
    pieces = len(sinks)
    everything = frozenset(nodes)

    def ratio_of(side: frozenset[str]) -> Fraction:
        outside = sum(1 for v in topology.compute_nodes if v not in side)
        out = sum(
            c
            for (u, v), c in caps.items()
            if (v if gather else u) in side and (u if gather else v) not in side
        )
        return Fraction(outside, out)

    side = frozenset({root})
    ratio = ratio_of(side)
    network = None
    runs = 0
    while True:
        p, q = ratio.numerator, ratio.denominator
        capacities = [p * caps[a] for a in arcs] + [q] * len(sinks)
        network = (
            FlowNetwork(len(nodes) + 1, tails, heads, capacities)
            if network is None
            else network.with_capacities(capacities)
        )
        flow = network.max_flow(index[root], sink)
        runs += 1
        if flow.value == q * pieces:
            break
        found = frozenset(nodes[i] for i in flow.source_side.nonzero()[0] if i < len(nodes))
        better = ratio_of(found)
        assert better > ratio, "Dinkelbach's step must raise the ratio"
        side, ratio = found, better
    shown = everything - side if gather else side
    return RootedCut(collective, root, topology.num_compute, ratio / unit, shown, runs)
