"""All-to-all: the exact optimum t*, the cut bound beside it, and schedules that attain it.

The optimum t* is the max-concurrent-flow LP of
:mod:`formulations.alltoall` (exact, with a length-function certificate). This
module adds what a user compares it with and what runs it:

* the **cut bound** ``max over S of d(S) / B+(S)``, with ``d(S) = |S ∩ Vc| *
  |Vc \\ S|`` the pieces that must leave ``S``: a lower bound on t*, often
  equal, but not always (the flow-cut gap: ``ring:4,direction=uni`` has t* = 6
  and cut bound 4 per unit bandwidth; on trees and single switches they
  coincide). The maximum over all sets is NP-hard in general; it is computed
  exactly by enumeration for at most :data:`EXHAUSTIVE_CUT_NODES` nodes and
  otherwise over candidate sets (level sets of the certificate's distances,
  boxes, single nodes), which gives a valid lower bound on both;
* the **schedule** (:func:`alltoall_schedule`): the optimal routing split into
  paths per pair with exact weights, then ``k`` chunks per pair.

Examples
--------
>>> from optcoll import load_topology
>>> bound = alltoall_bound(load_topology("ring:4,direction=uni,bw=1"))
>>> bound.time_factor, bound.cut_bound, bound.flow_cut_gap
(Fraction(6, 1), Fraction(4, 1), Fraction(3, 2))
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optcoll.rational import fraction_text
from optcoll.topology import Topology

__all__ = [
    "EXHAUSTIVE_CUT_NODES",
    "AlltoallBound",
    "alltoall_bound",
    "alltoall_cut_bound",
    "pair_demand",
]

Arc = tuple[str, str]

#: Largest number of nodes for which the cut bound enumerates every set.
EXHAUSTIVE_CUT_NODES = 14


def pair_demand(topology: Topology, side: frozenset[str] | set[str]) -> int:
    """``d(S) = |S ∩ Vc| * |Vc \\ S|``: the all-to-all pieces that must leave ``side``.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> pair_demand(load_topology("ring:4"), {"n0", "n1"})
    4
    """
    inside = sum(1 for v in side if topology.is_compute(v))
    return inside * (topology.num_compute - inside)


def alltoall_cut_bound(
    topology: Topology, candidates: list[frozenset[str]] | None = None
) -> tuple[Fraction, frozenset[str], bool]:
    """The best cut bound ``d(S) / B+(S)`` found, its set ``S``, and whether the search was exhaustive.

    Exhaustive over all sets for at most :data:`EXHAUSTIVE_CUT_NODES` nodes;
    otherwise the maximum over ``candidates`` plus every single compute node and
    every box (compute nodes sharing a ``group``, with the switches only they
    reach) and its complement. Exact arithmetic throughout.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> ratio, side, exhaustive = alltoall_cut_bound(load_topology("dgx-a100:1"))
    >>> ratio, exhaustive
    (Fraction(7, 300), True)
    """
    nodes = topology.node_ids
    best: tuple[Fraction, frozenset[str]] | None = None

    def consider(side: frozenset[str]) -> None:
        nonlocal best
        demand = pair_demand(topology, side)
        if demand == 0:
            return
        ratio = demand / topology.cut_bandwidth(side)
        if best is None or ratio > best[0]:
            best = (ratio, side)

    if len(nodes) <= EXHAUSTIVE_CUT_NODES:
        for size in range(1, len(nodes)):
            for chosen in itertools.combinations(nodes, size):
                consider(frozenset(chosen))
        assert best is not None
        return best[0], best[1], True
    groups: dict[str, set[str]] = {}
    for c in topology.compute_nodes:
        group = topology.node[c].group
        if group is not None:
            groups.setdefault(group, set()).add(c)
    sets = [frozenset({c}) for c in topology.compute_nodes] + [
        frozenset(g) for g in groups.values()
    ]
    sets += list(candidates or [])
    everything = frozenset(nodes)
    for side in sets:
        consider(side)
        consider(everything - side)
    assert best is not None
    return best[0], best[1], False


def _distance_level_sets(topology: Topology, lengths: dict[Arc, Fraction]) -> list[frozenset[str]]:
    """For every compute source, the sets of nodes within each distance under ``lengths``."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(topology.node_ids)
    graph.add_weighted_edges_from(
        (u, v, lengths.get((u, v), Fraction(0))) for u, v in topology.capacity
    )
    sets = []
    for source in topology.compute_nodes:
        dist = nx.single_source_dijkstra_path_length(graph, source)
        order = sorted(topology.node_ids, key=lambda v: (dist.get(v, float("inf")), v))
        for size in range(1, len(order)):
            if dist.get(order[size - 1]) != dist.get(order[size]):
                sets.append(frozenset(order[:size]))
    return sets


@dataclass(frozen=True)
class AlltoallBound:
    """The exact all-to-all optimum t* beside the cut bound.

    ``time_factor`` is t*: an ``M``-byte all-to-all (pieces of ``M / N``) takes
    ``(M / N) * time_factor`` at best. ``certificate_bound`` equals it and is
    proved by the length function ``lengths`` (see
    :mod:`formulations.alltoall`). ``cut_bound`` is the best ``d(S) / B+(S)``
    found, ``cut`` its set, ``cut_exhaustive`` whether every set was tried;
    ``flow_cut_gap = time_factor / cut_bound >= 1``.
    """

    topology: str
    num_compute: int
    time_factor: Fraction
    certificate_bound: Fraction
    lengths: dict[Arc, Fraction]
    cut_bound: Fraction
    cut: frozenset[str]
    cut_exhaustive: bool
    routing: dict[str, dict[Arc, Fraction]]
    seconds: float
    stats: dict[str, Any]

    @property
    def flow_cut_gap(self) -> Fraction:
        """``t* / cut_bound``: 1 when a cut explains the optimum."""
        return self.time_factor / self.cut_bound

    @property
    def algbw(self) -> float:
        """``M / time`` for large ``M``: ``N / t*`` in bandwidth units."""
        return float(self.num_compute / self.time_factor)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary; exact values as ``"p/q"`` strings."""
        binding = sorted(self.lengths.items(), key=lambda item: (-item[1], item[0]))
        return {
            "topology": self.topology,
            "collective": "alltoall",
            "num_compute": self.num_compute,
            "time_factor": fraction_text(self.time_factor),
            "algbw": round(self.algbw, 3),
            "certificate_bound": fraction_text(self.certificate_bound),
            "certificate_lengths": [[u, v, fraction_text(x)] for (u, v), x in binding],
            "cut_bound": fraction_text(self.cut_bound),
            "cut": sorted(self.cut),
            "cut_exhaustive": self.cut_exhaustive,
            "flow_cut_gap": fraction_text(self.flow_cut_gap),
            "seconds": round(self.seconds, 3),
            **self.stats,
        }


def alltoall_bound(topology: Topology, *, time_limit: float | None = None) -> AlltoallBound:
    """t* by the all-to-all LP (exact, certified) and the cut bound beside it.

    Raises
    ------
    SolveError
        If the LP cannot be solved or its exact optimum not proved (see
        :func:`formulations.alltoall.alltoall_optimum`).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> bound = alltoall_bound(load_topology("dgx-a100:2"))
    >>> bound.time_factor, bound.cut_bound, bound.to_dict()["time_factor"]
    (Fraction(8, 25), Fraction(8, 25), '8/25')
    """
    import time

    from formulations.alltoall import alltoall_optimum

    start = time.perf_counter()
    optimum = alltoall_optimum(topology, time_limit=time_limit)
    candidates = None
    if len(topology.node_ids) > EXHAUSTIVE_CUT_NODES:
        candidates = _distance_level_sets(topology, optimum.lengths)
    cut_bound, cut, exhaustive = alltoall_cut_bound(topology, candidates)
    assert cut_bound <= optimum.time_factor, "a cut bound above the optimum: the LP is wrong"
    report = optimum.report
    stats = {
        "lp_variables": report.num_variables,
        "lp_constraints": report.num_constraints,
        "lp_seconds": round(report.solve_seconds, 3),
        "exact_seconds": round(optimum.seconds - report.solve_seconds, 3),
    }
    return AlltoallBound(
        topology.name,
        topology.num_compute,
        optimum.time_factor,
        optimum.certificate_bound,
        optimum.lengths,
        cut_bound,
        cut,
        exhaustive,
        optimum.routing,
        time.perf_counter() - start,
        stats,
    )
