"""Allgather trees of a declared group by construction: a mixed-radix tree spans every
orbit of compute nodes, and each root reaches the other orbits by one edge each. No
search over trees; the only choices are the physical paths, checked against the orbit
budgets exactly.

Let the group ``G = <s_1> x ... x <s_r>`` (orders ``n_1 ... n_r``) act freely on the
compute nodes (:func:`optcoll.graph.family_symmetry.declared_group`), with
representatives ``rho_1 ... rho_m``, so ``N = m |G|``. Order the generators
``sigma = (s_(1) ... s_(r))``. The **mixed-radix tree** of the orbit of ``rho`` joins
``x = s_(1)^a_1 ... s_(r)^a_r rho`` (``x != rho``, ``l`` the last ``a_l != 0``) to its
parent ``s_(1)^a_1 ... s_(l-1)^a_(l-1) rho`` (for ``r`` generators of order 2: the
binomial tree). Its edges of level ``l`` are ``y -> s_(l)^d y`` for ``d = 1 ... n_(l)-1``,
each realised by ``g`` applied to one path ``P(rho, l, d)`` from ``rho`` to
``s_(l)^d rho`` through switches only (``g`` the element with ``g rho = y``; ``g`` is an
automorphism commuting with ``s_(l)``, so ``g P`` joins ``y`` to ``s_(l)^d y`` and uses
the same link orbits as ``P``). The tree of root ``rho_i`` (``mu`` chunks) is the
mixed-radix tree of its own orbit, an edge ``rho_i -> rho_j`` for every other
representative, and the mixed-radix tree of every other orbit from ``rho_j``: ``N - 1``
edges, height ``r + 1`` at most.

**Why it fits where hosts are the bottleneck.** A compute node with one link (a
dragonfly's host) enters every tree but its own once, so at r* both directions of its
link are full: the representatives' trees must send from the orbit of ``rho_j`` exactly
as often as they enter it, ``k (N - 1)`` chunks, with no slack to share out (the greedy
of :mod:`optcoll.schedules.declared_trees` grows trees whose sends per orbit come out
unbalanced, and fails). Here the edges inside an orbit send from the orbit they enter;
the only others are root ``rho_i``'s ``m - 1`` edges out, and every orbit is entered
once from outside in each of the ``m - 1`` other roots' trees: sends and entries of every
orbit are equal, ``k (N - 1)``. A difference ``s_(l)^d`` is used ``n_(1) ... n_(l-1)``
times per tree, so the generators whose paths are long or scarce (a dragonfly's group
rotation: global links) go first, and the cheap ones (rotating the hosts of a router)
last. The ``k`` chunks of a root may be split over orders (hypercubes: the ``r`` cyclic
orders, each dimension then used ``2^r - 1`` times, as r* needs).

**Paths and the check.** One breadth-first search per representative through switches
gives the shortest paths to the ``sum (n_l - 1)`` translates and the other
representatives. Each path weighs its chunks times the number of its translates; the
paths are chosen heaviest first, each the cheapest of its shortest paths, a link costing
its share of its orbit's budget, more when the orbit is over budget now or was in an
earlier round (negotiated congestion: the rounds repeat until one is within every
budget). Where no order of the generators fits on shortest paths, paths of one link more
are allowed (a dragonfly with few global links per pair of groups can reach a group
sooner over two global links than over its own one, and the shortest paths alone then
overload some global orbits); the links left from ``y`` to a translate ``s^d rho`` are
those from ``s^-d y`` to ``rho``, so one backward search per representative serves all.
The paths are accepted only when every orbit's load is within its budget (as in
:func:`optcoll.schedules.declared_trees.declared_trees`: then the images under ``G`` load
every link at most its capacity, and the time factor is r*, optimal among all
allgathers); else :func:`radix_trees` returns ``None`` (a torus: its translates by two
have no path through switches; a GB200 rack, whose ``k`` chunks per tree do not spread
over the trays; a dragonfly with thin global links, ``bw=100/100/5``: every orbit enters
every group on its own, ``m`` times the global crossings a tree needs).

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.bounds.cut_ratio import optimal_cut_ratio
>>> from optcoll.graph.family_symmetry import declared_group
>>> from optcoll.schedules.packing import chunk_capacities
>>> t = build("hypercube:3")
>>> bound = optimal_cut_ratio(t)
>>> optimal = chunk_capacities(t, None, bound=bound)
>>> trees = radix_trees(t, optimal.capacity, optimal.chunks, declared_group(t))
>>> optimal.chunks, [(tree.chunks, len(tree.edges)) for tree in trees]
(3, [(1, 7), (1, 7), (1, 7)])
>>> [e.src + ">" + e.dst for e in trees[0].edges]  # bit 0, bit 1 from both, bit 2 from all
['n0>n1', 'n0>n2', 'n1>n3', 'n0>n4', 'n2>n6', 'n1>n5', 'n3>n7']
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence

from optcoll.core.schedule import Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.graph.family_symmetry import DeclaredGroup
from optcoll.schedules.declared_trees import orbit_budgets

__all__ = ["radix_trees"]

#: Generators up to which every order of them is tried (``r!`` orders); beyond, only the
#: declared order and the cyclic ones.
ALL_ORDERS_UP_TO = 4

#: Rounds of negotiated congestion (every path chosen again, the orbits over their budget
#: dearer each round) before an order of the generators is given up.
ROUNDS = 24

#: Links beyond the fewest a path may take (a dragonfly whose two global links make a
#: shorter way than the direct one): tried in turn, each only when none fits before.
MAX_DETOUR = 1

#: Most entries (nodes times translates) of the tables the detours read.
DETOUR_TABLES = 4_000_000

#: A target's paths: the source's state, the target's states, each state's last steps
#: ``(state, link)``; a state is ``node + hops * nodes`` (or the node, when every node
#: has one distance).
Dag = tuple[int, tuple[int, ...], Mapping[int, list[tuple[int, int]]]]

#: A part of a root's chunks: the generators' order and its chunks.
Part = tuple[tuple[int, ...], int]


def radix_trees(
    topology: Topology,
    capacity: Mapping[tuple[str, str], int],
    chunks: int,
    group: DeclaredGroup,
) -> list[Tree] | None:
    """``chunks`` chunks of mixed-radix trees (module docstring) for every representative of
    ``group``, within the orbit budgets of ``capacity``, or ``None`` when no order of the
    generators fits (or a translate has no path through switches only).

    Parameters
    ----------
    topology : Topology
        The network (its links; ``capacity`` gives their capacities in chunks).
    capacity : Mapping
        ``link -> chunks`` it may carry (ForestColl's ``U * caps``); constant on orbits.
    chunks : int
        ``k``: chunks per root.
    group : DeclaredGroup
        The group whose images of the returned trees make the whole schedule.

    Returns
    -------
    list of Tree or None
        The representatives' trees (edges parents first), with their images a schedule
        in which every link carries at most ``capacity`` chunks.
    """
    links, orbit, budget = orbit_budgets(topology, capacity, group)
    ids = topology.node_ids
    index = {v: i for i, v in enumerate(ids)}
    compute = [topology.is_compute(v) for v in ids]
    out: list[list[tuple[int, int]]] = [[] for _ in ids]
    for i, (u, v) in enumerate(links):
        out[index[u]].append((index[v], i))
    moves = [[index[g.get(v, v)] for v in ids] for g in group.generators]
    roots = [index[v] for v in group.representatives]
    # the translates s_l^d rho of every representative rho, and the other representatives
    targets: dict[tuple[int, int, int], int] = {}
    for j, rho in enumerate(roots):
        for s, (move, n) in enumerate(zip(moves, group.orders, strict=True)):
            x = rho
            for d in range(1, n):
                x = move[x]
                targets[(j, s, d)] = x
        for i, other in enumerate(roots):
            if i != j:
                targets[(j, -1, i)] = other
    dags: dict[tuple[int, int, int], Dag] = {}
    for j, rho in enumerate(roots):
        mine = [key for key in targets if key[0] == j]
        found = _shortest_ways(rho, {targets[key] for key in mine}, out, compute)
        if found is None:
            return None
        for key in mine:
            dags[key] = (rho, (targets[key],), found)
    for detour in range(MAX_DETOUR + 1):
        if detour:
            if len(ids) * sum(n - 1 for n in group.orders) > DETOUR_TABLES:
                break
            dags = _near_dags(detour, targets, roots, moves, group.orders, out, compute)
        for parts in _plans(group.orders, chunks):
            paths = _choose_paths(
                parts, group.orders, targets, roots, dags, len(ids), orbit, budget
            )
            if paths is not None:
                return _assemble(parts, group.orders, paths, roots, moves, ids)
    return None


def _plans(orders: Sequence[int], chunks: int) -> list[list[Part]]:
    """The splits of a root's ``chunks`` over generator orders to try: every order whole
    (the declared one first; all ``r!`` up to :data:`ALL_ORDERS_UP_TO` generators), then
    the ``r`` cyclic orders sharing the chunks as evenly as possible."""
    r = len(orders)
    cyclic = [tuple((q + i) % r for i in range(r)) for q in range(r)]
    whole = list(itertools.permutations(range(r))) if r <= ALL_ORDERS_UP_TO else cyclic
    plans = [[(sigma, chunks)] for sigma in whole]
    shares = [chunks // r + (q < chunks % r) for q in range(r)]
    if r > 1:
        plans.append([(sigma, mu) for sigma, mu in zip(cyclic, shares, strict=True) if mu])
    return plans


def _shortest_ways(
    source: int, wanted: set[int], out: list[list[tuple[int, int]]], compute: list[bool]
) -> dict[int, list[tuple[int, int]]] | None:
    """The last steps ``(node, link)`` of the shortest paths from compute node ``source``
    through switches only to every node of ``wanted`` (compute nodes), for every node on
    one of them; ``None`` when one is unreachable. Breadth-first, stopping after the level
    of the farthest wanted node."""
    distance = {source: 0}
    before: dict[int, list[tuple[int, int]]] = {}
    level, missing = [source], len(wanted)
    while level and missing:
        ahead = []
        for x in level:
            if compute[x] and x != source:
                continue  # compute nodes end paths; they relay nothing here
            step = distance[x] + 1
            for y, link in out[x]:
                seen = distance.get(y)
                if seen is None:
                    distance[y] = step
                    before[y] = [(x, link)]
                    ahead.append(y)
                    missing -= y in wanted
                elif seen == step:
                    before[y].append((x, link))
        level = ahead
    if missing:
        return None
    kept: dict[int, list[tuple[int, int]]] = {}
    stack = list(wanted)
    while stack:
        y = stack.pop()
        if y in kept or y == source:
            continue
        kept[y] = before[y]
        stack.extend(x for x, _ in before[y])
    return kept


def _near_dags(
    detour: int,
    targets: Mapping[tuple[int, int, int], int],
    roots: list[int],
    moves: list[list[int]],
    orders: Sequence[int],
    out: list[list[tuple[int, int]]],
    compute: list[bool],
) -> dict[tuple[int, int, int], Dag]:
    """Every target's paths through switches of at most ``detour`` links more than the
    fewest, as steps between states ``node + hops * nodes``. The links left to a target
    ``t = s^d rho`` from ``y`` are those from ``s^-d y`` to ``rho`` (``s^d`` is an
    automorphism): one backward breadth-first search per representative and a table of
    ``s^-d`` per translate serve every target."""
    n = len(out)
    into: list[list[int]] = [[] for _ in range(n)]
    for x, adj in enumerate(out):
        for y, _ in adj:
            into[y].append(x)
    far = n + 1
    back = []
    for rho in roots:  # links from every node to rho, through switches only
        distance = [far] * n
        distance[rho], level, hops = 0, [rho], 0
        while level:
            hops += 1
            ahead = []
            for y in level:
                for x in into[y]:
                    if distance[x] == far:
                        distance[x] = hops
                        if not compute[x]:
                            ahead.append(x)
            level = ahead
        back.append(distance)
    inverse: dict[tuple[int, int], list[int]] = {}
    for s, (move, order) in enumerate(zip(moves, orders, strict=True)):
        step = [0] * n
        for x, y in enumerate(move):
            step[y] = x
        inverse[(s, 1)] = step
        for d in range(2, order):
            inverse[(s, d)] = [step[x] for x in inverse[(s, d - 1)]]
    dags: dict[tuple[int, int, int], Dag] = {}
    for key, target in targets.items():
        j, s, d = key
        source = roots[j]
        left = back[d] if s < 0 else back[j]
        undo = None if s < 0 else inverse[(s, d)]
        limit = (left[source] if undo is None else left[undo[source]]) + detour
        ends: list[int] = []
        before: dict[int, list[tuple[int, int]]] = {}
        layer = [source]
        for hops in range(1, limit + 1):
            ahead = []
            for state in layer:
                for y, link in out[state % n]:
                    if y != target:
                        if compute[y]:
                            continue
                        if hops + left[y if undo is None else undo[y]] > limit:
                            continue
                    reached = y + hops * n
                    if reached not in before:
                        before[reached] = []
                        (ends if y == target else ahead).append(reached)
                    before[reached].append((state, link))
            layer = ahead
        dags[key] = (source, tuple(ends), before)
    return dags


def _choose_paths(
    parts: list[Part],
    orders: Sequence[int],
    targets: Mapping[tuple[int, int, int], int],
    roots: list[int],
    dags: Mapping[tuple[int, int, int], Dag],
    nodes: int,
    orbit: list[int],
    budget: list[int],
) -> dict[tuple[int, int, int], list[int]] | None:
    """One path per target within the orbit budgets, or ``None``. Negotiated congestion
    (McMurchie and Ebeling's PathFinder, FPGA'95): every round chooses each target's
    cheapest shortest path, heaviest targets first, and the orbits left over budget cost
    more in the rounds after, until a round ends within every budget."""
    m = len(roots)
    weight: dict[tuple[int, int, int], int] = {}
    for key in targets:
        _, s, _ = key
        if s < 0:  # an edge between representatives: once per chunk of its root
            weight[key] = sum(mu for _, mu in parts)
        else:  # a translate: in every root's tree, once per element of the earlier levels
            weight[key] = m * sum(
                mu * math.prod(orders[g] for g in sigma[: sigma.index(s)]) for sigma, mu in parts
            )
    ordered = sorted(targets, key=lambda k: -weight[k])
    history = [0.0] * len(budget)
    for rounds in range(ROUNDS):
        used = [0] * len(budget)
        paths: dict[tuple[int, int, int], list[int]] = {}
        for key in ordered:
            w = weight[key]
            found = _cheapest_path(dags[key], nodes, w, orbit, budget, used, history, 2.0**rounds)
            if found is None:
                return None  # an orbit with less than w on every way
            path, links = found
            for link in links:
                used[orbit[link]] += w
            paths[key] = path
        over = [o for o, u in enumerate(used) if u > budget[o]]
        if not over:
            return paths
        for o in over:
            history[o] += (used[o] - budget[o]) / budget[o]
    return None


def _cheapest_path(
    dag: Dag,
    nodes: int,
    w: int,
    orbit: list[int],
    budget: list[int],
    used: list[int],
    history: list[float],
    pressure: float,
) -> tuple[list[int], list[int]] | None:
    """The path of ``dag`` of least cost (its nodes and links), a link's cost its share
    ``w / budget`` of its orbit, raised by the orbit's past excess (``history``) and by
    its excess if taken now (times ``pressure``); ``None`` when every path meets an orbit
    of budget below ``w``."""
    source, ends, before = dag
    Step = tuple[float, int, int]  # (cost, previous state, link)
    best: dict[int, Step | None] = {}

    def reach(state: int) -> Step | None:
        if state == source:
            return (0.0, -1, -1)
        if state in best:
            return best[state]
        found = None
        for previous, link in before[state]:
            o = orbit[link]
            if budget[o] < w:
                continue
            prior = reach(previous)
            if prior is None:
                continue
            excess = max(0, used[o] + w - budget[o]) / budget[o]
            cost = prior[0] + w / budget[o] * (1 + history[o]) * (1 + pressure * excess)
            if found is None or cost < found[0]:
                found = (cost, previous, link)
        best[state] = found
        return found

    options = [(step[0], end) for end in ends if (step := reach(end)) is not None]
    if not options:
        return None
    state = min(options)[1]
    path, links = [state % nodes], []
    while state != source:
        step = best[state]
        assert step is not None
        state, link = step[1], step[2]
        path.append(state % nodes)
        links.append(link)
    path.reverse()
    return path, links


def _assemble(
    parts: list[Part],
    orders: Sequence[int],
    paths: Mapping[tuple[int, int, int], list[int]],
    roots: list[int],
    moves: list[list[int]],
    ids: Sequence[str],
) -> list[Tree]:
    """Every representative's trees, one per part, edges parents first."""

    def edge(p: Sequence[int]) -> TreeEdge:
        return TreeEdge(ids[p[0]], ids[p[-1]], tuple(ids[x] for x in p))

    trees: list[Tree] = []
    for sigma, mu in parts:
        spans = [
            _mixed_radix_edges(j, sigma, orders, paths, moves, edge) for j in range(len(roots))
        ]
        for i in range(len(roots)):
            joins = tuple(edge(paths[(i, -1, j)]) for j in range(len(roots)) if j != i)
            others = (e for j, span in enumerate(spans) if j != i for e in span)
            trees.append(Tree(ids[roots[i]], mu, (*spans[i], *joins, *others)))
    return trees


def _mixed_radix_edges(
    j: int,
    sigma: tuple[int, ...],
    orders: Sequence[int],
    paths: Mapping[tuple[int, int, int], list[int]],
    moves: list[list[int]],
    edge: Callable[[Sequence[int]], TreeEdge],
) -> tuple[TreeEdge, ...]:
    """The mixed-radix tree of representative ``j``'s orbit in the order ``sigma``, level by
    level: the level-``l`` paths translated by every element of the earlier levels (each
    translate one generator step from the one before: ``O(|G| * path length)``)."""
    edges: list[TreeEdge] = []
    for position, s in enumerate(sigma):
        translates = [[paths[(j, s, d)] for d in range(1, orders[s])]]
        for g in sigma[:position]:
            move, grown = moves[g], []
            for base in translates:
                current = base
                grown.append(current)
                for _ in range(orders[g] - 1):
                    current = [[move[x] for x in p] for p in current]
                    grown.append(current)
            translates = grown
        edges.extend(edge(p) for ps in translates for p in ps)
    return tuple(edges)
