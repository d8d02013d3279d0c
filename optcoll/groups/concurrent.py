"""Concurrent process groups: the exact optimal time of several groups' allgathers at once.

Groups ``g`` (disjoint sets of compute nodes, :mod:`optcoll.groups.bounds`) run an
allgather each, at the same time, on one network; each member's shard is one
unit. The optimal time t* is the optimum of the LP

    minimise t  subject to, for every group g, root r in g, destination d in g - {r}:
        f_grd a unit flow from r to d,      f_grd(e) <= x_gr(e)  (r's data on e, shared by
                                                                   the destinations: copies)
        at every node u outside g:          sum_out x_gr(u) <= sum_in x_gr(u)  (forward only)
        x_gr(e) = 0 on links the relaying forbids (relay ``members``: only members and
                                                   switches carry g's data) and on
                                                   links g cannot use
                                                   (ProcessGroups.useful_arcs)
        sum over g, r of x_gr(e) <= t * bw(e)   for every link e.

It is one multicast commodity per ``(g, r)`` of the multi-commodity LP
(:mod:`formulations.multicommodity`: source r, sinks g - {r}, relays the nodes
the relaying allows), solved on the integer-scaled capacities and proved
exactly (:func:`optcoll.bounds.multicommodity.solve_multicommodity`): the vertex and duals of HiGHS's final basis are recovered as
fractions and checked by exact LP duality, and the routing's time is recomputed.

**Lower bound.** Every schedule in which members copy and other nodes only
forward gives such ``x`` (the data of root r on each link, divided by the
time), so no such schedule beats t*.

**Attained.** Let ``c_g(e) = sum_r x_gr(e) / t*``. Every node outside g has
in >= out in each ``x_gr``, hence in ``c_g``; every set S holding some but not
all members has, for a member d outside S and each root r in S, a unit of
f_grd leaving S, so ``t* c_g(δ+(S)) >= sum_{r in S ∩ g} x_gr(δ+(S)) >= |S ∩ g|``.
So on capacities ``c_g`` the group's cut ratio is at most t* with every relay
balanced, and the single-group construction (edge splitting, then Edmonds'
branchings; :mod:`formulations.multicast`) gives trees for g within time t*;
the union of all groups' trees loads link e with at most
``t* sum_g c_g(e) <= t* bw(e)``. The optimum is optimal *among* fractional
schedules in which members copy and every other node forwards without copying
(time = largest link load over bandwidth).

**Certificate.** The capacity rows' duals, normalised to ``sum_e bw(e) l(e) = 1``
(in integer capacity units), are nonzero only on links that are full at t*
(complementary slackness): those are the binding links, reported with the
groups whose data crosses them.

Dropping the links a group cannot use leaves t* unchanged: the trees above
can be taken with every edge a simple path from a member to another member
through non-members, which :attr:`~optcoll.core.process_groups.ProcessGroups.useful_arcs`
keeps.

**Symmetry.** Let σ_j be automorphisms of the topology (types, links and
bandwidths kept) that map the groups onto the groups, the first group of the
class onto group j. The LP with only the first group's variables ``x`` and
group j's data taken as ``σ_j(x)`` (its flows mapped link by link; the
capacity rows count every image) is the full LP restricted to such solutions,
so its optimum is at least t*. It is at most t*: averaging an optimal solution
over the group G the σ_j generate (``x̄_g = mean over τ in G of
τ(x_{τ⁻¹ g})``) keeps every row (G permutes the links, the groups and their
useful links) and the time, and gives ``x̄_{σ_j g} = σ_j(x̄_g)``. The reduced
LP is proved exactly like the full one, the maps are checked link by link and
group by group (:func:`optcoll.groups.symmetry.group_automorphism`), and the
expanded loads are rechecked against ``t* bw``; a schedule built from them is
verified independently (:func:`optcoll.verify.schedule.verify_groups_schedule`).

Size: ``sum_g |g| (|g| - 1)`` flows, each over the group's useful links (one
group's with symmetry).

Examples
--------
Two groups of two on a 4-ring, each wanting the other's pair of links:

>>> from optcoll import load_topology
>>> from optcoll.core.process_groups import make_groups
>>> topo = load_topology("ring:4,bw=1")
>>> groups = make_groups(topo, [["n0", "n2"], ["n1", "n3"]], relay="any")
>>> concurrent_optimum(groups, [0, 1]).time_factor
Fraction(1, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from formulations.multicast import MAX_FLOW_VARIABLES
from formulations.multicommodity import Commodity
from optcoll.bounds.multicommodity import solve_multicommodity
from optcoll.core.process_groups import ProcessGroups
from optcoll.exceptions import MethodError
from optcoll.groups.symmetry import group_automorphism

__all__ = ["group_commodities", "ConcurrentGroups", "symmetry_images", "concurrent_optimum"]

Arc = tuple[str, str]


def group_commodities(
    groups: ProcessGroups,
    indices: Iterable[int],
    images: tuple[dict[Arc, Arc], ...] = (),
    roots: Sequence[str] | None = None,
) -> list[tuple[int, Commodity]]:
    """One multicast commodity per root of each group in ``indices``, with its group's index.

    ``images``: arc maps under which each commodity stands for copies of itself
    (:class:`~formulations.multicommodity.Commodity`). ``roots`` (one member
    per group, indexed like ``groups.groups``): group g broadcasts from
    ``roots[g]`` only (default: every member is a root, the allgather).

    Raises
    ------
    MethodError
        If the LP would have more than
        :data:`formulations.multicast.MAX_FLOW_VARIABLES` flow variables.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.process_groups import make_groups
    >>> groups = make_groups(load_topology("ring:4"), [["n0", "n1"]])
    >>> [(g, k.source, dict(k.demands), sorted(k.relays)) for g, k in group_commodities(groups, [0])]
    [(0, 'n0', {'n1': 1}, ['n0', 'n1']), (0, 'n1', {'n0': 1}, ['n0', 'n1'])]
    >>> sorted(group_commodities(groups, [0])[0][1].arcs)
    [('n0', 'n1'), ('n1', 'n0')]
    >>> [k.source for _, k in group_commodities(groups, [0], roots=["n1"])]
    ['n1']
    """
    out = []
    arcs = list(groups.topology.capacity)
    size = 0
    for g in indices:
        members = groups.groups[g]
        relays, useful = groups.relays(g), groups.useful_arcs[g]
        for root in members if roots is None else (roots[g],):
            commodity = Commodity(
                root, {d: 1 for d in members if d != root}, True, relays, useful, images
            )
            size += (len(members) - 1) * sum(1 for arc in arcs if commodity.usable(arc))
            out.append((g, commodity))
    if size > MAX_FLOW_VARIABLES:
        raise MethodError(
            f"the concurrent-groups LP of {groups.topology.name!r} would have {size} flow "
            f"variables (at most {MAX_FLOW_VARIABLES})"
        )
    return out


@dataclass(frozen=True)
class ConcurrentGroups:
    """The solved concurrent-groups LP, exact and proved optimal.

    ``time_factor`` is t* in 1/bandwidth units; ``loads[g][e]`` group g's
    exact data on link e, ``sum_r x_gr(e)`` in unit shards
    (``sum_g loads[g][e] <= t* bw(e)``); ``lengths[e]`` the normalised dual of
    link e's capacity row (nonzero only on binding links); ``symmetric``:
    solved for one group and its images under automorphisms.
    """

    groups: ProcessGroups
    time_factor: Fraction
    loads: dict[int, dict[Arc, Fraction]]
    lengths: dict[Arc, Fraction]
    symmetric: bool = False


def symmetry_images(
    groups: ProcessGroups, indices: Sequence[int], roots: Sequence[str] | None = None
) -> tuple[dict[Arc, Arc], ...]:
    """The link maps σ_j taking the first group of ``indices`` onto each of them, in order.

    Empty when there is one group or some σ_j is not found
    (:func:`optcoll.groups.symmetry.group_automorphism`), or, with ``roots``
    (one member per group, indexed like ``groups.groups``), when some σ_j does
    not take the first group's root to group j's; the first map is the
    identity's (or another automorphism fixing the first group).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.process_groups import make_groups
    >>> groups = make_groups(load_topology("ring:4,bw=1"), [["n0", "n1"], ["n2", "n3"]], "any")
    >>> [m[("n0", "n1")] for m in symmetry_images(groups, [0, 1])]
    [('n0', 'n1'), ('n2', 'n3')]
    >>> symmetry_images(groups, [0, 1], roots=("n0", "n3"))
    ()
    """
    if len(indices) < 2:
        return ()
    sigmas = [group_automorphism(groups, indices[0], j) for j in indices]
    found = [s for s in sigmas if s is not None]
    if len(found) < len(sigmas):
        return ()
    if roots is not None and any(
        s[roots[indices[0]]] != roots[j] for s, j in zip(found, indices, strict=True)
    ):
        return ()
    arcs = groups.topology.capacity
    return tuple({(u, v): (s[u], s[v]) for u, v in arcs} for s in found)


def concurrent_optimum(
    groups: ProcessGroups,
    indices: Iterable[int],
    *,
    time_limit: float | None = None,
    symmetric: bool = True,
    roots: Sequence[str] | None = None,
) -> ConcurrentGroups:
    """Solve the LP for the groups numbered ``indices`` running at once; exact and proved.

    With ``symmetric`` (default), when the topology has automorphisms
    (:func:`optcoll.groups.symmetry.group_automorphism`) mapping the first
    group onto each of the others, only the first group's flows are solved,
    each standing for its images (see the module docstring). With ``roots``
    (one member per group, indexed like ``groups.groups``) each group
    broadcasts from its root instead: the same LP with only the commodities
    ``(g, roots[g])``; it is the concurrent broadcasts' optimum by the same
    proof (one root per group), and symmetry applies only when every map
    takes root to root.

    Raises
    ------
    MethodError
        If the model is too large (see :func:`group_commodities`).
    ReconstructionError
        If the exact vertex or duals are not recovered or not proved optimal.
    """
    topo = groups.topology
    indices = list(indices)
    caps, unit = topo.integer_capacities()
    maps = symmetry_images(groups, indices, roots) if symmetric else ()
    pairs = group_commodities(groups, indices[:1] if maps else indices, maps, roots)
    result = solve_multicommodity(
        topo.node_ids, dict(caps), [k for _, k in pairs], time_limit=time_limit
    )
    loads: dict[int, dict[Arc, Fraction]] = {}
    for (g, _), load in zip(pairs, result.loads, strict=True):
        for j, image in zip(indices, maps, strict=True) if maps else [(g, None)]:
            share = loads.setdefault(j, {})
            for arc, x in load.items():
                target = arc if image is None else image[arc]
                share[target] = share.get(target, Fraction(0)) + x
    lengths = {arc: length for arc, length in result.lengths.items() if length}
    return ConcurrentGroups(groups, result.time / unit, loads, lengths, len(maps) > 0)
