"""The capacity a schedule can use when a switch could send more than it receives.

A switch relays but never copies: what leaves it must have entered it. Where a
switch ``w`` has less bandwidth in than out, the excess out-capacity carries
nothing, and the cut ratio of the raw topology overstates what any schedule
reaches. Which out-links lose the excess is a choice, and several cuts compete
for it, so the right trimming is found by optimisation (see
:mod:`formulations.usable_capacity` for the mathematics and the master LP):

    r* = min over forwardable g <= c of max_S |S ∩ Vc| / g(δ+(S))

(``g`` forwardable: ``out_g(w) <= in_g(w)`` at every switch). When every switch
has in >= out this is the ordinary cut ratio of ``c`` itself.

:func:`forwardable_topology` computes an optimal ``g`` exactly by cutting
planes: the master LP over a family of cuts (exact, proved by LP duality) gives
an upper bound ``lam`` on ``1/r*`` and a candidate ``g``; the exact parametric
max-flow of :mod:`optcoll.bounds.cut_ratio` computes the cut ratio of ``g`` and its
bottleneck cut; if that cut is violated (ratio above ``1/lam``) it joins the
family, else ``g`` is optimal: its cut ratio (attained by a schedule on ``g``)
equals the master's bound. Each round adds a new cut, so the loop ends.

Examples
--------
Two GPUs and a switch that receives 100 from ``a`` but could send 200 to ``b``:

>>> from optcoll.core.topology import TopologyBuilder
>>> b = TopologyBuilder("short-switch")
>>> b.compute("a"); b.compute("b"); b.switch("w")
>>> b.link("a", "w", 100); b.link("w", "b", 200); b.link("b", "a", 100)
>>> from optcoll.bounds.cut_ratio import optimal_cut_ratio
>>> def separate(t):
...     bound = optimal_cut_ratio(t)
...     return bound.ratio, bound.bottleneck_cut
>>> found = forwardable_topology(b.build(), separate)
>>> found.usable.capacity[("w", "b")], found.rounds
(Fraction(100, 1), 1)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from optcoll.core.topology import Topology
from optcoll.exceptions import NotStronglyConnectedError, SolveError

__all__ = [
    "Forwardable",
    "ForwardableCapacity",
    "forwardable_topology",
    "best_forwardable_capacity",
    "MAX_ROUNDS",
]

Arc = tuple[str, str]

#: Cutting-plane rounds before giving up (each adds one cut; tens suffice in practice).
MAX_ROUNDS = 500


@dataclass(frozen=True)
class Forwardable:
    """What :func:`forwardable_topology` gives: the ``usable`` topology (no switch sends
    more than it receives) and the master LP's ``rounds`` (0: no switch was short)."""

    usable: Topology
    rounds: int


@dataclass(frozen=True)
class ForwardableCapacity:
    """What :func:`best_forwardable_capacity` gives: the master LP's optimum ``scale``
    (``lam``) and the forwardable link capacities ``g``."""

    scale: Fraction
    capacity: dict[Arc, Fraction]


def forwardable_topology(
    topology: Topology,
    separate: Callable[[Topology], tuple[Fraction, frozenset[str]]],
    *,
    root: str | None = None,
) -> Forwardable:
    """An optimal forwardable part of ``topology``'s capacity, as a topology.

    ``separate(t)`` returns the exact cut ratio of a topology ``t`` without
    short switches and a bottleneck cut (the combinatorial method of
    :mod:`optcoll.bounds.cut_ratio`). With a ``root``, the objective is a broadcast from
    it instead: ``separate(t)`` returns ``1 / B`` for the minimum root-to-node
    cut ``B`` of ``t`` (bandwidth units) and that cut's root side, every cut
    weighs 1 in the master LP, and only the root must reach every compute node.

    Returns :class:`Forwardable`: ``usable`` has the same nodes and a subset of
    the links with bandwidth ``g <= c``, no switch sends more than it receives,
    and its cut ratio is the optimum r* of ``topology`` (proved: the master
    LP's exact dual bound equals it). ``topology`` itself is returned when no
    switch is short of in-capacity.

    Raises
    ------
    SolveError
        If the cutting planes do not close within :data:`MAX_ROUNDS` rounds.
    ReconstructionError
        If a master LP's optimum is not proved exactly.
    """
    if not topology.short_switches():
        return Forwardable(topology, 0)
    caps, unit = topology.integer_capacities()
    compute = topology.compute_nodes
    everything = frozenset(topology.node_ids)
    cuts: list[frozenset[str]] = []
    if root is None:
        for v in compute:
            cuts += [frozenset({v}), everything - {v}]
    else:
        cuts += [frozenset({root})] + [everything - {v} for v in compute if v != root]
    sources = compute if root is None else (root,)
    for rounds in range(1, MAX_ROUNDS + 1):
        weights = None if root is None else [1] * len(cuts)
        best = best_forwardable_capacity(compute, topology.switch_nodes, caps, cuts, weights)
        lam, g = best.scale, best.capacity
        positive = {arc: x * unit for arc, x in g.items() if x > 0}
        cut = _unreachable_cut(sources, compute, positive)
        if cut is None:
            usable = _usable_topology(topology, positive, root)
            ratio, bottleneck = separate(usable)
            if ratio * unit * lam == 1:
                return Forwardable(usable, rounds)
            cut = bottleneck
        if cut in cuts:
            raise SolveError(
                f"internal error: the forwardable-capacity cutting planes on {topology.name!r} "
                f"found no new cut in round {rounds}"
            )
        cuts.append(cut)
    raise SolveError(
        f"the forwardable capacity of {topology.name!r} did not converge in {MAX_ROUNDS} "
        f"cutting-plane rounds"
    )


def _usable_topology(
    topology: Topology, capacity: dict[Arc, Fraction], root: str | None
) -> Topology:
    """``topology`` with ``capacity``; for a broadcast, first :func:`_spare_capacity` is
    added back (a broadcast's best forwardable part may keep no way back to the root,
    which the topology model needs), and a clear error remains where that is not enough
    (for the cut ratio every compute node reaches the others: :func:`_unreachable_cut`)."""
    if root is not None:
        capacity = _spare_capacity(topology, capacity)
    try:
        return topology.with_capacity(capacity)
    except NotStronglyConnectedError as err:
        reason = str(err).split(";")[0]
        raise SolveError(
            f"a broadcast or reduce from {root!r} on {topology.name!r} uses only the capacity "
            f"its switches can forward (none sends more than it receives); on that part {reason}, "
            "and optcoll's topology model needs every compute node to reach every other one, so "
            "this broadcast cannot be planned yet (a known limitation on topologies whose "
            "switches could send more than they receive)"
        ) from None


def _spare_capacity(topology: Topology, usable: dict[Arc, Fraction]) -> dict[Arc, Fraction]:
    """``usable`` with capacity that keeps it forwardable added back: every link out of a
    compute node in full (it only adds to what switches receive), then each switch's
    surplus (received minus sent) on its links that are not full (shared evenly among
    its unused links first: they are what gives new ways back), passed on through the
    switches it reaches, in a bounded number of passes.

    More capacity never lowers a cut, and the result stays below the topology's capacity
    with no switch sending more than it receives, so the broadcast optimum is unchanged.

    Examples
    --------
    >>> from optcoll.core.topology import TopologyBuilder
    >>> b = TopologyBuilder("t")
    >>> b.compute("a"); b.compute("b"); b.switch("w")
    >>> b.link("a", "w", 2); b.link("w", "b", 5); b.link("w", "a", 5); b.link("b", "a", 1)
    >>> spare = _spare_capacity(b.build(), {("a", "w"): 1, ("w", "b"): 1})
    >>> sorted((arc, str(c)) for arc, c in spare.items())
    [(('a', 'w'), '2'), (('b', 'a'), '1'), (('w', 'a'), '1'), (('w', 'b'), '1')]
    """
    full = topology.capacity
    grown = {arc: c for arc, c in usable.items() if c > 0}
    for (u, v), c in full.items():
        if topology.is_compute(u):
            grown[(u, v)] = c
    surplus: dict[str, Fraction] = {w: Fraction(0) for w in topology.switch_nodes}
    out: dict[str, list[Arc]] = {w: [] for w in topology.switch_nodes}
    for (u, v), c in grown.items():
        if v in surplus:
            surplus[v] += c
        if u in surplus:
            surplus[u] -= c
    for arc in full:
        if arc[0] in out:
            out[arc[0]].append(arc)
    waiting = [w for w, s in surplus.items() if s > 0]
    for _ in range(len(full) * max(1, len(waiting))):
        if not waiting:
            break
        w = waiting.pop()
        unused = [arc for arc in out[w] if arc not in grown]
        for i, arc in enumerate(unused + [arc for arc in out[w] if arc in grown]):
            room = full[arc] - grown.get(arc, Fraction(0))
            if surplus[w] <= 0 or room <= 0:
                continue
            share = surplus[w] / (len(unused) - i) if i < len(unused) else surplus[w]
            more = min(room, share)
            grown[arc] = grown.get(arc, Fraction(0)) + more
            surplus[w] -= more
            if arc[1] in surplus:
                surplus[arc[1]] += more
                waiting.append(arc[1])
    return grown


def best_forwardable_capacity(
    compute: Collection[str],
    switches: Collection[str],
    capacity: Mapping[Arc, int],
    cuts: Sequence[Collection[str]],
    weights: Sequence[int] | None = None,
) -> ForwardableCapacity:
    """The master's exact optimum ``lam`` and its forwardable capacity ``g``.

    ``lam`` is proved optimal by exact LP duality; an arc in no row keeps its
    whole capacity; every cut in ``cuts`` has
    ``g(δ+(S)) >= lam w_S`` (``w_S = |S ∩ Vc|`` unless ``weights`` are given),
    ``0 <= g <= capacity`` and no switch sends
    more than it receives under ``g``, all exactly.

    Raises
    ------
    MethodError
        Bad data (see :func:`formulations.usable_capacity.build_forwardable_master`).
    ReconstructionError
        If the optimum is not proved exactly.

    Examples
    --------
    A switch ``w`` that receives 1 from ``a`` and could send 2 on to ``b``:

    >>> caps = {("a", "w"): 1, ("w", "b"): 2, ("b", "a"): 3}
    >>> best = best_forwardable_capacity(["a", "b"], ["w"], caps, [{"a"}, {"a", "w"}])
    >>> best.scale, best.capacity[("w", "b")]
    (Fraction(1, 1), Fraction(1, 1))
    >>> caps = {("a", "b"): 2, ("b", "a"): 1}
    >>> best_forwardable_capacity(["a", "b"], [], caps, [{"a"}, {"b"}]).capacity
    {('a', 'b'): Fraction(2, 1), ('b', 'a'): Fraction(1, 1)}
    """
    from formulations.usable_capacity import build_forwardable_master
    from optcoll.lp.exact import solve_proved

    problem = build_forwardable_master(compute, switches, capacity, cuts, weights)
    primal = solve_proved(problem, f"forwardable-capacity LP over {len(cuts)} cuts").primal
    # an arc in no row is free: it keeps its whole capacity
    g = {arc: primal.get(f"g_{a}", Fraction(c)) for a, (arc, c) in enumerate(capacity.items())}
    return ForwardableCapacity(primal["lam"], g)


def _unreachable_cut(
    sources: tuple[str, ...], compute: tuple[str, ...], capacity: dict[tuple[str, str], Fraction]
) -> frozenset[str] | None:
    """The nodes one of ``sources`` reaches over ``capacity``'s arcs, if they miss a compute node."""
    out: dict[str, list[str]] = {}
    for u, v in capacity:
        out.setdefault(u, []).append(v)
    for v in sources:
        seen = {v}
        stack = [v]
        while stack:
            for x in out.get(stack.pop(), []):
                if x not in seen:
                    seen.add(x)
                    stack.append(x)
        if any(c not in seen for c in compute):
            return frozenset(seen)
    return None
