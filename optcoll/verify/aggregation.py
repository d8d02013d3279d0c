"""Independent verification of aggregation (in-network allreduce) schedules.

:func:`verify_aggregation_schedule` checks an
:class:`~optcoll.core.aggregation.AggregationSchedule` against a topology from first
principles: it reads the topology's nodes, their ``reduce``/``multicast`` flags and
the aggregated link capacities, and the schedule's trees; it shares no code with
the builder (:mod:`optcoll.schedules.aggregation`) or the bound
(:mod:`optcoll.bounds.in_network`).

What is checked, in this order (the first failure is the reported reason):

1. ``k`` is a positive integer; ``compute_nodes`` are exactly the topology's;
2. every tree carries a positive number of chunks and the chunks sum to ``k``
   (every chunk of the message is reduced and multicast exactly once);
3. every apex is a compute node or a switch that declares both ``reduce`` and
   ``multicast``;
4. the reduce edges form an in-tree into the apex and the multicast edges an
   out-tree from it: every vertex but the apex has exactly one parent, parents
   lead to the apex (no cycle), every compute node is a vertex;
5. every switch vertex has a child and declares ``reduce`` (in-tree) or
   ``multicast`` (out-tree): a switch that only relays appears only inside paths,
   where each byte it sends is one it received; a switch that declares ``multimem``
   (NVLS: it sums what a GPU loads and copies what a GPU stores) is no apex, and its
   parent and children are compute nodes on direct links; the GPU that loads its sum
   also sends its own data up, and the GPU that stores into it also gets the copy back
   (one more chunk on the reverse link of the edge, and one more input summed or copy
   made at the switch);
6. every path starts at its edge's source, ends at its destination, has only
   switches strictly inside and runs along existing links, in the edge's direction;
7. the exact link loads (``chunks`` per use, both trees) and the time factor
   ``max load / (k * bandwidth)``; what every switch receives, merges by summing
   (``reduced``: ``(children - 1) * chunks`` per in-tree vertex), adds by copying
   (``copied``) and sends, which must balance: ``sent = received - reduced + copied``;
8. claims, every one the file states: ``time_factor`` and ``algbw`` must be the
   computed ones; the time factor may not beat the stated ``lower_bound`` or the
   given ``optimum``; with ``require_optimal=True`` it must equal the optimum (an
   overloaded link is named). Given the exact ``cut_bound`` (the caller computes it,
   :func:`optcoll.bounds.in_network.reduction_cut`), ``lower_bound`` must state it and
   ``stats.gap_to_cut_bound`` must be ``time_factor / cut_bound``; ``stats.proved``
   must be a boolean, and ``true`` only when the time factor equals the given
   ``optimum`` (the least among aggregation-tree schedules); ``stats.optimal_among``
   must name those. A claim whose bound was not given is listed in
   :attr:`~optcoll.verify.schedule.Verification.unchecked`, never trusted.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.core.schedule import TreeEdge
>>> from optcoll.core.aggregation import AggregationSchedule, AggregationTree
>>> star = build("star:3,sharp=1")
>>> up = tuple(TreeEdge(h, "hub", (h, "hub")) for h in star.compute_nodes)
>>> down = tuple(TreeEdge("hub", h, ("hub", h)) for h in star.compute_nodes)
>>> s = AggregationSchedule(star.name, star.compute_nodes, 1, (AggregationTree("hub", 1, up, down),))
>>> v = verify_aggregation_schedule(star, s, optimum=Fraction(1, 100), require_optimal=True)
>>> v.valid, v.time_factor, dict(v.switch_work["hub"])
(True, Fraction(1, 100), {'received': 3, 'reduced': 2, 'copied': 2, 'sent': 3})
>>> verify_aggregation_schedule(build("star:3"), s).reason
"tree 0: the apex 'hub' is a switch that does not declare both reduce and multicast"
>>> from dataclasses import replace
>>> claims = replace(s, lower_bound=Fraction(1, 200), stats={"proved": True})
>>> print(verify_aggregation_schedule(star, claims, cut_bound=Fraction(1, 100)).reason)
field 'lower_bound' states 1/200, but the exact cut bound of an allreduce on topology 'star:3,sharp=1' is 1/100
>>> verify_aggregation_schedule(star, claims, cut_bound=Fraction(1, 100)).unchecked
('proved',)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from optcoll.core.aggregation import (
    AGGREGATION_CLAIMS,
    OPTIMAL_AMONG,
    AggregationSchedule,
    AggregationTree,
)
from optcoll.core.arguments import instance_argument, number_argument, topology_argument
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import TreeEdge
from optcoll.core.topology import Topology
from optcoll.verify.schedule import Verification

__all__ = ["verify_aggregation_schedule"]

Arc = tuple[str, str]


class _Invalid(Exception):
    """Internal: carries the reason of the first failed check."""


def verify_aggregation_schedule(
    topology: Topology,
    schedule: AggregationSchedule,
    *,
    optimum: Fraction | None = None,
    require_optimal: bool = False,
    cut_bound: Fraction | None = None,
) -> Verification:
    """Check an aggregation schedule on ``topology`` and compute its exact time factor.

    Parameters
    ----------
    topology : Topology
    schedule : AggregationSchedule
    optimum : Fraction, optional
        The optimal time factor (time ``M * optimum``) among aggregation-tree
        schedules, which ``stats.proved`` claims to reach.
    require_optimal : bool
        With ``optimum``: the time factor must equal it.
    cut_bound : Fraction, optional
        The exact cut bound of an allreduce on ``topology``, which ``lower_bound`` and
        ``stats.gap_to_cut_bound`` are judged by.

    Returns
    -------
    Verification
        With :attr:`~optcoll.verify.schedule.Verification.switch_work` filled in.
        Never raises on a bad schedule: the verdict says what is wrong; the stated
        claims it could not judge (no bound given, a builder's records) are in
        :attr:`~optcoll.verify.schedule.Verification.unchecked`.
    """
    topology_argument(topology)
    instance_argument(
        schedule,
        AggregationSchedule,
        "schedule",
        "optcoll.schedules.aggregation.aggregation_schedule",
    )
    if optimum is not None:
        optimum = Fraction(number_argument(optimum, "optimum"))
    if cut_bound is not None:
        cut_bound = Fraction(number_argument(cut_bound, "cut_bound"))
    try:
        _check_header(topology, schedule)
        for index, tree in enumerate(schedule.trees):
            _check_tree(topology, index, tree)
    except _Invalid as bad:
        return Verification(False, str(bad))
    loads: dict[Arc, int] = {}
    node = topology.node
    for tree in schedule.trees:
        for edge in (*tree.reduce_edges, *tree.multicast_edges):
            for arc in zip(edge.path, edge.path[1:], strict=False):
                loads[arc] = loads.get(arc, 0) + tree.chunks
        # a multimem switch: the loading GPU's own data up, the storing GPU's copy down
        for edge in tree.reduce_edges:
            if node[edge.src].multimem:
                loads[edge.dst, edge.src] = loads.get((edge.dst, edge.src), 0) + tree.chunks
        for edge in tree.multicast_edges:
            if node[edge.dst].multimem:
                loads[edge.dst, edge.src] = loads.get((edge.dst, edge.src), 0) + tree.chunks
    capacity = topology.capacity
    time_factor = max(Fraction(load, schedule.k) / capacity[arc] for arc, load in loads.items())
    bottlenecks = [
        arc
        for arc in capacity
        if arc in loads and Fraction(loads[arc], schedule.k) / capacity[arc] == time_factor
    ]
    link_loads = {arc: loads[arc] for arc in capacity if arc in loads}
    work = _switch_work(topology, schedule.trees, link_loads)
    ratio = None if optimum is None else time_factor / optimum
    reason = _check_balance(work) or _check_claims(
        topology, schedule, link_loads, time_factor, optimum, require_optimal
    )
    false, unchecked = _check_stated(topology, schedule, time_factor, optimum, cut_bound)
    if false:
        reason = "; ".join(([] if reason is None else [reason]) + false)
    return Verification(
        reason is None,
        reason,
        time_factor,
        link_loads,
        bottlenecks,
        ratio,
        work,
        unchecked=tuple(unchecked),
    )


def _check_header(topology: Topology, schedule: AggregationSchedule) -> None:
    k = schedule.k
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise _Invalid(f"k must be a positive integer, got {k!r}")
    listed = list(schedule.compute_nodes)
    if len(set(listed)) != len(listed):
        raise _Invalid("compute_nodes lists a node twice")
    if set(listed) != set(topology.compute_nodes):
        extra = sorted(set(listed) - set(topology.compute_nodes))
        missing = sorted(set(topology.compute_nodes) - set(listed))
        what = f"lists {extra[0]!r}, not a compute node" if extra else f"misses {missing[0]!r}"
        raise _Invalid(f"compute_nodes {what} of topology {topology.name!r}")
    total = 0
    for index, tree in enumerate(schedule.trees):
        chunks = tree.chunks
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
            raise _Invalid(f"tree {index}: chunks must be a positive integer, got {chunks!r}")
        total += chunks
    if total != k:
        raise _Invalid(f"the trees carry {total} chunks in all, expected k = {k}")


def _check_tree(topology: Topology, index: int, tree: AggregationTree) -> None:
    node = topology.node
    apex = tree.apex
    if apex not in node:
        raise _Invalid(f"tree {index}: the apex {apex!r} is not a node of the topology")
    if not node[apex].is_compute and not (node[apex].reduce and node[apex].multicast):
        raise _Invalid(
            f"tree {index}: the apex {apex!r} is a switch that does not declare both reduce "
            f"and multicast"
        )
    if node[apex].multimem:
        raise _Invalid(
            f"tree {index}: the apex {apex!r} is a multimem (NVLS) switch, whose sum goes back "
            "to the GPU that loads it: make that GPU the apex"
        )
    _check_branching(topology, index, tree, "reduce", tree.reduce_edges)
    _check_branching(topology, index, tree, "multicast", tree.multicast_edges)


def _check_branching(
    topology: Topology, index: int, tree: AggregationTree, part: str, edges: Sequence[TreeEdge]
) -> None:
    """An in-tree into (``reduce``) or an out-tree from (``multicast``) the apex."""
    where = f"tree {index} (apex {tree.apex!r}), {part} edge"
    node = topology.node
    parent: dict[str, str] = {}
    children: dict[str, int] = {}
    for edge in edges:
        child, up = (edge.src, edge.dst) if part == "reduce" else (edge.dst, edge.src)
        for end in (edge.src, edge.dst):
            if end not in node:
                raise _Invalid(f"{where} {edge.src!r} -> {edge.dst!r} names unknown node {end!r}")
        if child == tree.apex:
            raise _Invalid(
                f"{where} {edge.src!r} -> {edge.dst!r} "
                + ("leaves" if part == "reduce" else "enters")
                + " the apex"
            )
        if child in parent:
            raise _Invalid(
                f"{where} {edge.src!r} -> {edge.dst!r}: node {child!r} already has the "
                f"{'parent' if part == 'reduce' else 'source'} {parent[child]!r}"
            )
        parent[child] = up
        children[up] = children.get(up, 0) + 1
        _check_path(topology, f"{where} {edge.src!r} -> {edge.dst!r}", edge)
    vertices = {tree.apex, *parent, *children}
    missing = [c for c in topology.compute_nodes if c not in vertices]
    if missing:
        raise _Invalid(
            f"tree {index} (apex {tree.apex!r}): the {part} tree misses compute node "
            f"{missing[0]!r}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        )
    for v in sorted(vertices - set(topology.compute_nodes)):
        if not getattr(node[v], part):
            raise _Invalid(
                f"tree {index} (apex {tree.apex!r}): switch {v!r} is a vertex of the {part} "
                f"tree but does not declare {part}"
            )
        if not children.get(v):
            raise _Invalid(
                f"tree {index} (apex {tree.apex!r}): switch {v!r} is a leaf of the {part} tree"
            )
    for edge in edges:
        if node[edge.src].multimem or node[edge.dst].multimem:
            ends = (edge.src, edge.dst)
            gpu = next((e for e in ends if not node[e].multimem), None)
            if gpu is None or not node[gpu].is_compute or len(edge.path) != 2:
                raise _Invalid(
                    f"tree {index} (apex {tree.apex!r}), {part} edge {edge.src!r} -> "
                    f"{edge.dst!r}: a multimem (NVLS) switch exchanges data only with GPUs "
                    "on direct links (its loads and stores)"
                )
    reaches = {tree.apex}
    for start in parent:
        walk: list[str] = []
        v = start
        while v not in reaches:
            if v in walk:
                raise _Invalid(
                    f"tree {index} (apex {tree.apex!r}): the {part} edges form a cycle "
                    f"through {v!r} cut off from the apex"
                )
            walk.append(v)
            v = parent[v]
        reaches.update(walk)


def _check_path(topology: Topology, where: str, edge: TreeEdge) -> None:
    path = edge.path
    if len(path) < 2 or path[0] != edge.src or path[-1] != edge.dst:
        raise _Invalid(f"{where}: the path {list(path)} does not run from its source to its end")
    for v in path[1:-1]:
        if v not in topology.node:
            raise _Invalid(f"{where}: the path names unknown node {v!r}")
        if topology.node[v].is_compute:
            raise _Invalid(
                f"{where}: the path passes through compute node {v!r}; only switches relay "
                "inside a path"
            )
    for u, v in zip(path, path[1:], strict=False):
        if (u, v) not in topology.capacity:
            raise _Invalid(f"{where}: the path uses the missing link {u!r} -> {v!r}")


def _switch_work(
    topology: Topology, trees: Sequence[AggregationTree], loads: Mapping[Arc, int]
) -> dict[str, dict[str, int]]:
    """Per switch that carries data: chunks received, merged, copied, sent."""
    work = {w: {"received": 0, "reduced": 0, "copied": 0, "sent": 0} for w in topology.switch_nodes}
    for (u, v), load in loads.items():
        if u in work:
            work[u]["sent"] += load
        if v in work:
            work[v]["received"] += load
    for tree in trees:
        for part, edges in (("reduced", tree.reduce_edges), ("copied", tree.multicast_edges)):
            fan: dict[str, int] = {}
            for edge in edges:
                up = edge.dst if part == "reduced" else edge.src
                fan[up] = fan.get(up, 0) + 1
            for v, count in fan.items():
                if v in work:  # a multimem switch also sums (copies to) the GPU it serves
                    extra = topology.node[v].multimem
                    work[v][part] += (count - 1 + extra) * tree.chunks
    return {w: counts for w, counts in work.items() if counts["received"] or counts["sent"]}


def _check_balance(work: Mapping[str, Mapping[str, int]]) -> str | None:
    for w, counts in work.items():
        if counts["sent"] != counts["received"] - counts["reduced"] + counts["copied"]:
            return (
                f"switch {w!r} sends {counts['sent']} chunks but receives {counts['received']}, "
                f"merges {counts['reduced']} and copies {counts['copied']}"
            )
    return None


def _check_claims(
    topology: Topology,
    schedule: AggregationSchedule,
    loads: Mapping[Arc, int],
    time_factor: Fraction,
    optimum: Fraction | None,
    require_optimal: bool,
) -> str | None:
    claimed = schedule.time_factor
    if claimed is not None and claimed != time_factor:
        return (
            f"the schedule claims time factor {fraction_text(claimed)}, but its link loads give "
            f"{fraction_text(time_factor)}"
        )
    for what, bound in (("lower_bound", schedule.lower_bound), ("optimum", optimum)):
        if bound is not None and time_factor < bound:
            return (
                f"the time factor {fraction_text(time_factor)} is below the {what} "
                f"{fraction_text(bound)}; no allreduce can beat a lower bound, so it is wrong"
            )
    if require_optimal and optimum is not None and time_factor > optimum:
        arc = next(
            a
            for a in topology.capacity
            if a in loads and Fraction(loads[a], schedule.k) / topology.capacity[a] == time_factor
        )
        return (
            f"link {arc[0]!r} -> {arc[1]!r} is overloaded: it carries {loads[arc]} chunks at "
            f"bandwidth {fraction_text(topology.capacity[arc])} with k = {schedule.k} (time factor "
            f"{fraction_text(time_factor)}), more than the optimum {fraction_text(optimum)} allows"
        )
    return None


def _check_stated(
    topology: Topology,
    schedule: AggregationSchedule,
    time_factor: Fraction,
    optimum: Fraction | None,
    cut_bound: Fraction | None,
) -> tuple[list[str], list[str]]:
    """The stated figures the schedule contradicts, and the stats no given bound can judge."""
    false: list[str] = []
    unchecked: list[str] = []
    stated = schedule.stated_algbw
    true_algbw = round(float(1 / time_factor), 3)
    if stated is not None and stated != true_algbw:
        false.append(
            f"field 'algbw' states {stated}, but the time factor {fraction_text(time_factor)} "
            f"gives {true_algbw} (bandwidth units)"
        )
    lower = schedule.lower_bound
    if lower is not None and cut_bound is not None and lower != cut_bound:
        false.append(
            f"field 'lower_bound' states {fraction_text(lower)}, but the exact cut bound of an "
            f"allreduce on topology {topology.name!r} is {fraction_text(cut_bound)}"
        )
    stats = schedule.stats
    if "optimal_among" in stats and stats["optimal_among"] != OPTIMAL_AMONG:
        false.append(
            f"field 'stats.optimal_among' states {_shown(stats['optimal_among'])}, but an "
            f"aggregation schedule's optimum is among {OPTIMAL_AMONG!r}"
        )
    if "gap_to_cut_bound" in stats:
        gap = _ratio(stats["gap_to_cut_bound"])
        if gap is None:
            false.append(
                f"field 'stats.gap_to_cut_bound' must be an exact ratio such as '3/2', got "
                f"{_shown(stats['gap_to_cut_bound'])}"
            )
        elif cut_bound is None:
            unchecked.append("gap_to_cut_bound")
        elif gap != time_factor / cut_bound:
            false.append(
                f"field 'stats.gap_to_cut_bound' states {fraction_text(gap)}, but the time factor "
                f"{fraction_text(time_factor)} is {fraction_text(time_factor / cut_bound)} times "
                f"the cut bound {fraction_text(cut_bound)}"
            )
    if "proved" in stats:
        proved = stats["proved"]
        if not isinstance(proved, bool):
            false.append(f"field 'stats.proved' must be true or false, got {_shown(proved)}")
        elif proved and optimum is None:
            unchecked.append("proved")
        elif proved and optimum is not None and time_factor != optimum:
            false.append(
                f"field 'stats.proved' states true, but the time factor "
                f"{fraction_text(time_factor)} is not the optimum {fraction_text(optimum)} "
                f"among {OPTIMAL_AMONG}"
            )
    unchecked.extend(name for name in stats if name not in AGGREGATION_CLAIMS)
    return false, unchecked


def _ratio(value: Any) -> Fraction | None:
    """``value`` as an exact ratio (a ``"p/q"`` string or an integer), else None."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    try:
        return Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        return None


def _shown(value: Any) -> str:
    """``repr(value)``, shortened to one bounded line."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"
