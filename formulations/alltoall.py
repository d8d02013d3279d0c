"""All-to-all: the exact optimum of the max-concurrent-flow LP, with its certificate.

Every ordered pair ``(s, d)`` of distinct compute nodes exchanges one piece
(``M / N`` bytes of an ``M``-byte all-to-all). Data may follow any paths;
compute nodes and switches forward, nothing copies (every piece is wanted by
one node only). The optimal time is ``(M / N) * t*`` where t* is the optimum of

    minimise t  subject to, for every compute source s, a flow f_s with
        out_s(u) - in_s(u) = N - 1  (u = s),  -1  (u another compute node),  0  (switch)
        sum_s f_s(a) <= t * c(a)    for every link a,   f >= 0.

The pairs are aggregated by source (each source's pieces form one flow with
``N - 1`` unit sinks: any such flow splits into one unit path-flow per sink),
so the model has ``N * |links| + 1`` variables, not ``N^2 * |links|``. It is
the unicast case of :mod:`formulations.multicommodity`, on the integer-scaled
capacities ``c = bandwidth / unit``; t* in 1/bandwidth units is the LP's
optimum divided by ``unit``.

**The orbit LP** (:func:`build_orbit_alltoall`). Under a group ``G`` of
automorphisms of the capacitated network that maps compute nodes to compute
nodes, the LP above has a ``G``-invariant optimum, and the invariant solutions
are given by one flow per orbit of sources. With representatives ``r`` (orbit of
``w_r`` sources) and the arcs' orbits ``O`` (all of one capacity ``c(O)``):

    minimise t  subject to, for every representative r, a flow f_r as above, and
        sum_r w_r sum_(a in O) f_r(a) <= t * |O| * c(O)   for every arc orbit O.

Its optimum equals t* (the proof, and how a solution lifts to the full LP, is in
:mod:`optcoll.bounds.alltoall_orbits`): ``|representatives| * |links|`` flow
variables and one capacity row per arc orbit, instead of ``N * |links|`` and
``|links|``; one source and six rows on a 3D torus.

The exact optimum with its length-function certificate is
:func:`optcoll.schedules.alltoall.alltoall_optimum`; the optimum is *among* all fractional
routings in which nodes forward without copying or combining data.

Cut bounds are weaker in general: every set S of nodes needs
``t * B+(S) >= |S ∩ Vc| * |Vc \\ S|``, so t* >= the best such ratio, with
strict inequality possible (``ring:4,direction=uni``: t* = 6 per unit
bandwidth, best cut 4).

Examples
--------
>>> from optcoll import load_topology
>>> build_alltoall(load_topology("ring:4,direction=uni,bw=1")).sense == pulp.LpMinimize
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulp

from formulations.errors import MethodError
from formulations.multicommodity import Commodity, build_multicommodity
from formulations.network import Arc, Network, check_capacity

__all__ = ["alltoall_commodities", "build_alltoall", "build_orbit_alltoall"]


def alltoall_commodities(compute_nodes: Sequence[str]) -> list[Commodity]:
    """One unicast commodity per compute source, one unit to every other compute node.

    Examples
    --------
    >>> [(k.source, dict(k.demands)) for k in alltoall_commodities(("a", "b"))]
    [('a', {'b': 1}), ('b', {'a': 1})]
    """
    return [Commodity(s, {d: 1 for d in compute_nodes if d != s}) for s in compute_nodes]


def build_alltoall(topology: Network, form: str = "time") -> pulp.LpProblem:
    """The source-aggregated all-to-all LP of ``topology`` (nothing is solved).

    Variables ``t`` (or ``lam`` in the rate form) and ``f_K_A`` (flow of compute
    source number ``K`` on arc number ``A`` of ``topology.integer_capacities()``).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> model = build_alltoall(load_topology("dgx-a100:1"))
    >>> len(model.variables())  # t, and 8 sources x 15 arcs (no flow enters its own source)
    121
    """
    caps, _ = topology.integer_capacities()
    return build_multicommodity(
        topology.node_ids, caps, alltoall_commodities(topology.compute_nodes), form
    )


def build_orbit_alltoall(
    nodes: Sequence[str],
    capacity: Mapping[Arc, int],
    compute_nodes: Sequence[str],
    sources: Mapping[str, int],
    arc_orbits: Sequence[Sequence[Arc]],
) -> pulp.LpProblem:
    """The all-to-all LP quotiented by a group of automorphisms (module docstring).

    ``sources`` maps one compute node per orbit of sources to the size of its
    orbit; ``arc_orbits`` partitions the arcs of ``capacity`` into orbits, each of
    one capacity. Nothing is solved, and nothing here checks that the orbits come
    from a group: the caller's exact checks on the lifted solution do
    (:func:`optcoll.bounds.alltoall_orbits.solve_orbit_alltoall`).

    Names: ``t``; ``f_K_A`` the flow of representative number ``K`` on arc number
    ``A`` (the order of ``capacity``); rows ``node_K_I`` (conservation at node
    number ``I``) and ``orbit_O`` (capacity of arc orbit number ``O``).

    Raises
    ------
    MethodError
        A source that is not a compute node, orbit sizes that are not positive
        integers summing to the number of compute nodes, or arc orbits that do
        not partition the arcs or mix capacities.

    Examples
    --------
    A bidirectional ring of 4 nodes under its rotations: one source of weight 4,
    two arc orbits (clockwise, counter-clockwise):

    >>> ring = {(f"n{i}", f"n{(i + s) % 4}"): 1 for i in range(4) for s in (1, 3)}
    >>> orbits = [[a for a in ring if int(a[1][1]) == (int(a[0][1]) + s) % 4] for s in (1, 3)]
    >>> model = build_orbit_alltoall(sorted({u for u, _ in ring}), ring, ["n0", "n1", "n2", "n3"],
    ...                              {"n0": 4}, orbits)
    >>> len(model.variables()), len(model.constraints())
    (7, 6)
    """
    check_capacity(nodes, capacity)
    compute = set(compute_nodes)
    for source, weight in sources.items():
        if source not in compute:
            raise MethodError(f"orbit representative {source!r} is not a compute node")
        if isinstance(weight, bool) or not isinstance(weight, int) or weight <= 0:
            raise MethodError(f"the orbit of {source!r} must have a positive integer size")
    if sum(sources.values()) != len(compute):
        raise MethodError(
            f"the source orbits hold {sum(sources.values())} nodes, not the {len(compute)} "
            "compute nodes"
        )
    arc_index = {arc: a for a, arc in enumerate(capacity)}
    orbit_of: dict[int, int] = {}
    for o, orbit in enumerate(arc_orbits):
        for arc in orbit:
            if arc not in arc_index or arc_index[arc] in orbit_of:
                raise MethodError(f"arc {arc} is not an arc or lies in two orbits")
            if capacity[arc] != capacity[orbit[0]]:
                raise MethodError(f"arc orbit {o} mixes capacities ({arc} and {orbit[0]})")
            orbit_of[arc_index[arc]] = o
    if len(orbit_of) != len(capacity):
        raise MethodError("the arc orbits do not cover every arc")
    problem = pulp.LpProblem("orbit_alltoall", pulp.LpMinimize)
    t = problem.add_variable("t", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(t, 1.0)]))
    arcs = list(capacity)
    rows: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in arc_orbits]
    supply_of = dict.fromkeys(compute, -1)
    for k, (source, weight) in enumerate(sources.items()):
        terms: dict[str, list[tuple[pulp.LpVariable, float]]] = {}
        for a, (u, v) in enumerate(arcs):
            if v == source:
                continue
            f = problem.add_variable(f"f_{k}_{a}", lowBound=0)
            terms.setdefault(u, []).append((f, 1.0))
            terms.setdefault(v, []).append((f, -1.0))
            rows[orbit_of[a]].append((f, float(weight)))
        for i, u in enumerate(nodes):
            b = len(compute) - 1 if u == source else supply_of.get(u, 0)
            if u in terms or b:
                problem.addConstraint(
                    pulp.LpConstraint(
                        pulp.LpAffineExpression(terms.get(u, [])), pulp.LpConstraintEQ, rhs=b
                    ),
                    f"node_{k}_{i}",
                )
    for o, orbit in enumerate(arc_orbits):
        row = [*rows[o], (t, -float(len(orbit) * capacity[orbit[0]]))]
        problem.addConstraint(
            pulp.LpConstraint(pulp.LpAffineExpression(row), pulp.LpConstraintLE, rhs=0.0),
            f"orbit_{o}",
        )
    return problem
