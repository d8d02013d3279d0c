"""Concurrent process groups, tree-column form: column generation over trees of paths.

The edge form (:mod:`optcoll.groups.concurrent`) gives every group ``g`` and root
``r ∈ g`` a capacity ``x_gr`` on the links with a unit flow to every other
member inside it and forwarding without gain at non-members. The **tree-column
form** packs trees instead: a column of ``(g, r)`` is a **tree of paths** ``T``,
an arborescence on the members of ``g`` rooted at ``r`` whose every arc
``(a, b)`` is a path from member ``a`` to member ``b`` through non-members the
relaying allows (on ``g``'s useful links, :attr:`~optcoll.core.process_groups.ProcessGroups.useful_arcs`);
its load ``m_T(e)`` is the number of its paths through link ``e``. The LP
(:mod:`optcoll.lp.column_generation`) is

    minimise t  subject to  sum_{T of (g, r)} x_T = 1                 for every group g, root r
                            sum_T m_T(e) x_T <= t * bw(e)              for every link e.

**Pricing is exact and polynomial.** A switch or a relaying non-member does not
copy, so two paths of one tree through the same link load it twice: a column's
cost under prices ``w >= 0`` is ``sum_{(a, b) ∈ T} w(path_ab)`` and the paths
are chosen independently. The cheapest column of ``(g, r)`` is therefore a
minimum-cost spanning arborescence rooted at ``r`` (Chu-Liu/Edmonds,
:func:`optcoll.graph.arborescence.min_cost_arborescence`) on the members with arc
costs ``dist_w(a, b)``, the cheapest path from ``a`` to ``b`` through
non-members (Dijkstra from every member, members being ends only). It is not a
Steiner problem: that would need relays that copy. Per round: ``|g|``
Dijkstra runs and ``|g|`` Edmonds runs on ``|g|`` nodes per group solved.

**Same optimum as the edge form.** (≤ is easy, ≥ uses splitting.) A tree of
paths is an ``x_gr``: following the tree from ``r`` to a member ``d`` gives a
unit walk (its cycles cancelled: a flow) inside the tree's load, and each path
enters and leaves a non-member equally often, so non-members forward without
gain; hence the edge form's t* is at most the column form's. Conversely take an
optimal ``x_gr`` of the edge form, scaled to integers by a common denominator
``K``: every non-member has in >= out in ``K x_gr``, and every member ``d`` is
reachable from ``r`` by ``K`` arc-disjoint paths. Splitting off the
non-members one by one (Bang-Jensen, Frank and Jackson 1995: at a vertex with
in >= out the arcs can be paired off keeping every ``λ(r, d)``; the pairs
become paths) leaves a multigraph on the members with ``λ(r, d) >= K``; by
Edmonds' branching theorem it holds ``K`` arc-disjoint spanning
``r``-arborescences, each a tree of paths whose loads sum to at most
``K x_gr``. So ``x_gr`` dominates a convex combination of trees of paths and
the column form's t* is at most the edge form's: the two are equal (tested
exactly on random topologies with switches, ``tests/groups/test_tree_columns.py``).
The optimum is optimal *among* the fractional schedules in which members copy
and every other node forwards without copying.

**Symmetry.** As for the edge form: when automorphisms ``σ_j``
(:func:`optcoll.groups.concurrent.symmetry_images`) map the first group of the class
onto each group ``j``, only the first group's roots are blocks and a column's
load counts on ``σ_j(e)`` for every ``j``; its pricing uses the summed prices
``sum_j w(σ_j(e))``. Averaging an optimum over the automorphisms (proof in
:mod:`optcoll.groups.concurrent`) shows the reduced LP has the same optimum.
**Roots too**: when automorphisms ``τ_r`` keep every group and move the solved
group's first member ``r_0`` to each member ``r``
(:func:`optcoll.groups.symmetry.root_automorphisms`: the box rotations of
data-parallel groups), only ``r_0`` is a block and a column counts on
``σ_j(τ_r(e))`` for every ``j`` and ``r``. The maps ``σ_j τ_r`` take ``(g_0, r_0)``
to every pair ``(g_j, σ_j(r))`` exactly once, and the average of an optimum over
the group all the maps generate is a solution of that form (it satisfies
``x_{τ(g, r)} = τ(x_{g, r})`` for every ``τ`` of the group), so the optimum is again t*.
The blocks drop from ``|g|`` to one, and so do the pricing's Edmonds runs.

**Exact.** The loop steers on floats; the final master's vertex and duals are
recovered exactly and proved for the master, then priced once more with the
exact duals (Fractions: exact Dijkstra and Edmonds): the Lagrangian bound of
those prices equals the master's ``t``, which proves it optimal for the full
LP (:mod:`optcoll.lp.column_generation`). The result has the edge form's
shape (:class:`optcoll.groups.concurrent.ConcurrentGroups`): each group's exact
loads and, as certificate, the capacity duals normalised to
``sum_e bw(e) l(e) = 1`` (integer capacity units), nonzero only on full links.

Examples
--------
Two groups of two on a 4-ring, each wanting the other's pair of links:

>>> from optcoll import load_topology
>>> from optcoll.core.process_groups import make_groups
>>> groups = make_groups(load_topology("ring:4,bw=1"), [["n0", "n2"], ["n1", "n3"]], "any")
>>> tree_column_optimum(groups, [0, 1]).time_factor
Fraction(1, 1)
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import cast

import numpy as np

from formulations.column_generation import Column
from optcoll.core.process_groups import ProcessGroups
from optcoll.exceptions import MethodError
from optcoll.graph.arborescence import Cost, min_cost_arborescence
from optcoll.groups.concurrent import ConcurrentGroups, symmetry_images
from optcoll.groups.symmetry import root_automorphisms
from optcoll.lp.column_generation import column_generation

__all__ = ["tree_column_optimum", "tree_bound", "cheapest_trees", "cheapest_paths"]

Arc = tuple[str, str]
#: A column's payload: (group, root, tree arcs ``(a, b, path)`` with ``path`` the links a -> b).
TreeOfPaths = tuple[int, str, tuple[tuple[str, str, tuple[Arc, ...]], ...]]

#: Relative weight of the 1/capacity tie-break added to float prices in pricing.
TIE_BREAK = 1e-9


def cheapest_paths(
    members: Sequence[str],
    outs: Mapping[str, Sequence[str]],
    price: Mapping[Arc, Cost],
    source: str,
) -> dict[str, tuple[Cost, tuple[Arc, ...]]]:
    """The cheapest path from ``source`` to every other member reachable through non-members.

    ``outs[u]``: the heads of the arcs that may be used out of ``u``. Members
    other than ``source`` end paths and are never passed through. Exact when the
    prices are Fractions (Dijkstra; prices must be nonnegative). Ties go to
    fewer links, then to the order of ``outs``.

    Examples
    --------
    >>> outs = {"a": ["s"], "s": ["b", "c"], "c": ["b"]}
    >>> price = {("a", "s"): 1, ("s", "b"): 5, ("s", "c"): 1, ("c", "b"): 1}
    >>> cheapest_paths(["a", "b", "c"], outs, price, "a")
    {'c': (2, (('a', 's'), ('s', 'c'))), 'b': (6, (('a', 's'), ('s', 'b')))}
    """
    ends = set(members)
    best: dict[str, tuple[Cost, int]] = {source: (0, 0)}
    parent: dict[str, str] = {}
    done: set[str] = set()
    found: dict[str, tuple[Cost, tuple[Arc, ...]]] = {}
    heap: list[tuple[Cost, int, int, str]] = [(0, 0, 0, source)]
    pushes = 0
    while heap:
        cost, hops, _, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        if u != source and u in ends:
            path = []
            v = u
            while v != source:
                path.append((parent[v], v))
                v = parent[v]
            found[u] = (cost, tuple(reversed(path)))
            continue
        for v in outs.get(u, ()):
            if v in done:
                continue
            candidate = (cost + price[(u, v)], hops + 1)
            if v not in best or candidate < best[v]:
                best[v] = candidate
                parent[v] = u
                pushes += 1
                heapq.heappush(heap, (*candidate, pushes, v))
    return found


def tree_column_optimum(
    groups: ProcessGroups,
    indices: Iterable[int],
    *,
    symmetric: bool = True,
    time_limit: float | None = None,
) -> ConcurrentGroups:
    """The concurrent optimum of the groups numbered ``indices`` by the tree-column form.

    Same result, exact and proved, as
    :func:`optcoll.groups.concurrent.concurrent_optimum` (the edge form); see the
    module docstring for the LP, its pricing and why the optima agree.

    Raises
    ------
    SolverLimitError
        If ``time_limit`` seconds pass before the column generation closes.
    ReconstructionError
        If the exact vertex or duals are not recovered or not proved optimal.

    Examples
    --------
    Rails of dgx-a100:2 relayed through any GPU share every NIC: 8 pairs together
    need 8 times what one pair alone needs (1/200):

    >>> from optcoll import load_topology
    >>> from optcoll.io.process_groups import parse_groups
    >>> rails = parse_groups(load_topology("dgx-a100:2"), "strided:2", relay="any")
    >>> tree_column_optimum(rails, range(8)).time_factor
    Fraction(1, 25)
    """
    topo = groups.topology
    indices = list(indices)
    caps, unit = topo.integer_capacities()
    maps = symmetry_images(groups, indices) if symmetric else ()
    solved = indices[:1] if maps or len(indices) == 1 else indices
    arcs = tuple(topo.capacity)
    rooted = root_automorphisms(groups, solved[0]) if symmetric and len(solved) == 1 else None
    # (group, link map) per image of a solved block's column: sigma_j after tau_r
    images: list[tuple[int, dict[Arc, Arc] | None]] = (
        list(zip(indices, maps, strict=True)) if maps else []
    )
    if rooted is not None:
        images = [
            (j, {(u, v): (tau[u], tau[v]) if m is None else m[(tau[u], tau[v])] for u, v in arcs})
            for j, m in images or [(solved[0], None)]
            for tau in rooted.values()
        ]
    roots = {g: groups.groups[g][:1] if rooted else groups.groups[g] for g in solved}
    blocks = {(g, root): b for b, (g, root) in enumerate((g, r) for g in solved for r in roots[g])}
    outs = {g: _out_lists(groups.useful_arcs[g]) for g in solved}
    maps = tuple(m for _, m in images if m is not None)
    position = {arc: i for i, arc in enumerate(arcs)}
    # row i: where each link goes under map i (link numbers), for summing prices and loads
    table = np.array([[position[m[a]] for a in arcs] for m in maps], dtype=np.int64)

    def price(prices: Mapping[Arc, float | Fraction]) -> list[Column]:
        exact = all(isinstance(w, Fraction) for w in prices.values())
        top = float(max(prices.values(), default=0))
        scale = 0.0 if exact else TIE_BREAK * (top if top > 0 else 1.0)
        if maps and not exact:  # summed over the images, vectorised
            summed = np.array([prices[a] for a in arcs], dtype=float)[table].sum(axis=0)
        columns = []
        for g in solved:
            cost: dict[Arc, Cost] = {}
            for arc in groups.useful_arcs[g]:
                if not maps:
                    w: float | Fraction = prices[arc]
                elif exact:
                    w = sum((prices[m[arc]] for m in maps), Fraction(0))
                else:
                    w = float(summed[position[arc]])
                cost[arc] = w if exact else float(w) + scale / caps[arc]
            for root, _, paths in cheapest_trees(groups.groups[g], outs[g], cost, roots[g]):
                used = [position[arc] for _, _, path in paths for arc in path]
                if maps:
                    counts = np.bincount(table[:, used].ravel(), minlength=len(arcs))
                else:
                    counts = np.bincount(np.array(used, dtype=np.int64), minlength=len(arcs))
                load = {arcs[i]: int(counts[i]) for i in np.flatnonzero(counts).tolist()}
                payload: TreeOfPaths = (g, root, paths)
                columns.append(Column(blocks[(g, root)], tuple(sorted(load.items())), payload))
        return columns

    name = f"tree-column form of {len(indices)} groups of {topo.name!r}"
    packing = column_generation(len(blocks), dict(caps), price, time_limit=time_limit, where=name)
    solved_loads: dict[int, dict[Arc, Fraction]] = {g: {} for g in solved}
    for column, x in packing.weights:
        g, _, paths = cast(TreeOfPaths, column.payload)
        for _, _, path in paths:
            for arc in path:
                solved_loads[g][arc] = solved_loads[g].get(arc, Fraction(0)) + x
    if not images:
        loads = solved_loads
    else:  # every image of the one solved group's loads, summed per group
        loads = {j: {} for j in indices}
        for j, image in images:
            assert image is not None, "every image is a link map"
            for arc, x in solved_loads[solved[0]].items():
                target = image[arc]
                loads[j][target] = loads[j].get(target, Fraction(0)) + x
    return ConcurrentGroups(groups, packing.t / unit, loads, packing.prices, bool(images))


def _out_lists(arcs: Iterable[Arc]) -> dict[str, list[str]]:
    """The heads of ``arcs`` by tail, in sorted order (deterministic paths)."""
    out: dict[str, list[str]] = {}
    for u, v in sorted(arcs):
        out.setdefault(u, []).append(v)
    return out


def cheapest_trees(
    members: Sequence[str],
    outs: Mapping[str, Sequence[str]],
    cost: Mapping[Arc, Cost],
    roots: Sequence[str] | None = None,
) -> list[tuple[str, Cost, tuple[tuple[str, str, tuple[Arc, ...]], ...]]]:
    """For every root in ``roots`` (default ``members``), a cheapest tree of paths:
    ``(root, cost, paths)``.

    A minimum-cost spanning arborescence on the members (Chu-Liu/Edmonds) with
    arc costs the cheapest paths through non-members (:func:`cheapest_paths`
    from every member, along ``outs``); ``paths`` holds ``(a, b, links)`` per
    tree arc. Exact when ``cost`` holds Fractions.

    Examples
    --------
    Two members behind one switch: each tree is one path through it.

    >>> outs = {"a": ["s"], "b": ["s"], "s": ["a", "b"]}
    >>> cost = {("a", "s"): 1, ("b", "s"): 2, ("s", "a"): 0, ("s", "b"): 0}
    >>> [(root, c) for root, c, _ in cheapest_trees(["a", "b"], outs, cost)]
    [('a', 1), ('b', 2)]
    """
    closure = {a: cheapest_paths(members, outs, cost, a) for a in members}
    distance = {(a, b): d for a in members for b, (d, _) in closure[a].items()}
    trees = []
    for root in members if roots is None else roots:
        tree = min_cost_arborescence(members, distance, root)
        trees.append(
            (
                root,
                sum(distance[arc] for arc in tree),
                tuple((a, b, closure[a][b][1]) for a, b in tree),
            )
        )
    return trees


def tree_bound(
    groups: ProcessGroups, indices: Iterable[int], lengths: Mapping[Arc, Fraction]
) -> Fraction:
    """The lower bound on the concurrent time that the link lengths ``lengths`` prove.

    ``sum over g, r of (cheapest tree of paths of (g, r) under the lengths) /
    sum_e c(e) l(e)`` in time-factor units (``c`` the integer-scaled capacities),
    for any lengths ``l >= 0``: the Lagrangian bound of the tree-column LP, hence
    (the forms being equal) of every schedule in which members copy and other
    nodes forward. Computed exactly; it checks a certificate (the ``lengths`` of
    :class:`~optcoll.groups.concurrent.ConcurrentGroups`, from either form) on its own.
    Lengths of a solve with symmetry are the reduced LP's duals: they prove the
    reduced LP's optimum (equal to t* by the averaging argument), and this bound
    of theirs may fall short of it.

    Raises
    ------
    MethodError
        If a length is negative or none is positive.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.process_groups import make_groups
    >>> groups = make_groups(load_topology("ring:4,bw=1"), [["n0", "n2"], ["n1", "n3"]], "any")
    >>> tree_bound(groups, [0, 1], {arc: Fraction(1, 8) for arc in groups.topology.capacity})
    Fraction(1, 1)
    """
    caps, unit = groups.topology.integer_capacities()
    if any(length < 0 for length in lengths.values()):
        raise MethodError("link lengths must be nonnegative")
    norm = sum((caps[arc] * length for arc, length in lengths.items()), Fraction(0))
    if norm <= 0:
        raise MethodError("the link lengths are zero on every link: they prove nothing")
    total = Fraction(0)
    for g in indices:
        cost = {arc: Fraction(lengths.get(arc, 0)) for arc in groups.useful_arcs[g]}
        outs = _out_lists(groups.useful_arcs[g])
        for _, c, _ in cheapest_trees(groups.groups[g], outs, cost):
            total += Fraction(c)
    return total / norm / unit
