"""The all-to-all LP solved on the orbits of a group of automorphisms, and lifted back exactly.

**The full LP.** ``P``: minimise ``t`` over flows ``f_s`` (one per compute source
``s``, ``N - 1`` units out of ``s``, one unit into every other compute node, zero
net at switches) with ``sum_s f_s(a) <= t c(a)`` on every arc
(:mod:`formulations.alltoall`, integer capacities ``c``).

**The group.** ``G`` is a group of permutations of the nodes that maps every arc
to an arc of the same capacity and compute nodes to compute nodes (checked
exactly, :func:`~optcoll.graph.symmetry.preserves_capacity` and the colours). It
acts on solutions by ``(g f)_s(a) = f_(g^-1 s)(g^-1 a)``: ``g f`` is again a flow
system of ``P`` (``g`` maps a flow out of ``g^-1 s`` onto one out of ``s`` with the
same demands, since it permutes the compute nodes) and loads arc ``a`` as ``f``
loads ``g^-1 a``, whose capacity is ``c(a)``: ``(g f, t)`` is feasible whenever
``(f, t)`` is.

**Theorem.** Let ``R`` hold one compute node per orbit of sources, ``w_r`` the size
of ``r``'s orbit, and give each arc orbit ``O`` its capacity ``c(O)``. The *orbit
LP* ``Q`` (:func:`formulations.alltoall.build_orbit_alltoall`): minimise ``t`` over
flows ``f_r`` (one per ``r`` in ``R``, demands as in ``P``) with
``sum_r w_r sum_(a in O) f_r(a) <= t |O| c(O)`` for every arc orbit ``O``. Then
``opt(Q) = opt(P)``.

*Proof.* (``opt(Q) <= opt(P)``) ``P`` is a linear programme, so its feasible set is
convex, and it is invariant under ``G`` (above). Averaging an optimal ``(f, t*)``
over the group, ``f' = (1/|G|) sum_g g f``, gives a feasible solution of the same
time that is *symmetric*: ``f'_(gs)(ga) = f'_s(a)``. Then for every arc ``b``
the load ``sum_s f'_s(b)`` is the same on all arcs of ``b``'s orbit, and summing
the capacity rows of ``P`` over the orbit ``O`` (each arc has capacity ``c(O)``)
gives ``sum_s sum_(a in O) f'_s(a) <= t* |O| c(O)``. For ``s = g r`` symmetry gives
``sum_(a in O) f'_s(a) = sum_(a in O) f'_r(g^-1 a) = sum_(a in O) f'_r(a)`` (``g^-1``
permutes ``O``), so the flows ``f'_r`` of the representatives satisfy ``Q`` with
``t*``. (``opt(P) <= opt(Q)``) Given a solution ``(f_r, t)`` of ``Q``, *lift* it:
for ``s`` in ``r``'s orbit let ``f_s = (1/|G_r|) sum_(g : g r = s) g f_r`` (``G_r``
the stabiliser of ``r``; ``|G_r|`` elements map ``r`` to ``s``). Each ``g f_r`` is a
flow out of ``s`` with the demands of ``P``, and so is their average. The load of
arc ``b`` is ``sum_r (1/|G_r|) sum_(g in G) f_r(g^-1 b)``; as ``g`` runs over ``G``,
``g^-1 b`` runs over ``b``'s orbit ``O``, each arc ``|G| / |O|`` times, so the load is
``sum_r (|G| / (|G_r| |O|)) sum_(a in O) f_r(a) = (1/|O|) sum_r w_r sum_(a in O)
f_r(a) <= t c(O) = t c(b)``: ``(f, t)`` is feasible for ``P``. QED.

**Duals.** The same averaging applies to ``P``'s dual (lengths ``l >= 0`` on the
arcs, :func:`~optcoll.bounds.multicommodity.length_bound`): a symmetric optimal
length function is constant on arc orbits, and the dual of ``Q``'s row for ``O``,
put on every arc of ``O``, is one: ``sum_s sum_d dist_l(s, d) = sum_r w_r sum_d
dist_l(r, d)`` (automorphisms preserve distances under invariant lengths) and
``sum_a c(a) l(a) = sum_O |O| c(O) l(O)``, which are ``Q``'s dual objective and
normalisation.

**What is checked, exactly, on the full problem.** Nothing above is taken on
trust. :func:`solve_orbit_alltoall` proves ``Q``'s vertex and duals optimal for
``Q`` (:func:`~optcoll.lp.exact.solve_proved`), lifts both, and then checks on
``P`` itself, without the group: every lifted flow is nonnegative and conserves
flow with ``P``'s demands at every node, every arc's total load is at most
``t c(a)`` (the routing needs time ``t``), and the lifted lengths prove the lower
bound ``t`` by :func:`~optcoll.bounds.multicommodity.length_bound` with one
shortest-path tree from *every* source. A feasible routing of time ``t`` and a
lower bound ``t`` make ``t = t*`` exactly, whatever group was used. (The exact
duality check of :func:`~optcoll.lp.exact.check_optimality` on ``P``'s model would
need the full model built, the cost this module avoids; the length certificate is
``P``'s dual in closed form.)

Examples
--------
>>> from optcoll import load_topology
>>> topology = load_topology("torus:4x4")
>>> symmetry = alltoall_symmetry(topology)
>>> symmetry.group.order, list(symmetry.sources.values()), len(symmetry.arc_orbits)
(16, [16], 4)
>>> result = solve_orbit_alltoall(topology, symmetry)
>>> result.time / topology.integer_capacities()[1], result.lengths_bound == result.time
(Fraction(2, 25), True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from formulations.alltoall import alltoall_commodities, build_orbit_alltoall
from formulations.network import Arc
from formulations.solve import SolverReport
from optcoll.bounds.multicommodity import length_bound
from optcoll.core.topology import Topology
from optcoll.exceptions import ReconstructionError
from optcoll.graph.symmetry import (
    PermutationGroup,
    automorphisms,
    box_rotations,
    extend_automorphism,
)
from optcoll.lp.exact import solve_proved

__all__ = [
    "AlltoallSymmetry",
    "alltoall_symmetry",
    "LiftedRouting",
    "OrbitAlltoallResult",
    "solve_orbit_alltoall",
]


@dataclass(frozen=True)
class AlltoallSymmetry:
    """A group of automorphisms of a topology and the orbits the all-to-all LP needs.

    Attributes
    ----------
    group : PermutationGroup
        Permutations of the indices of ``nodes``.
    nodes : tuple of str
        The topology's node ids (index order of ``group``).
    sources : dict
        One compute node per orbit of compute nodes (the least in declaration
        order) -> the size of its orbit.
    arc_orbits : tuple of tuple
        The orbits of the arcs, each in declaration order, ordered by first arc.
    found_by : str
        ``"automorphisms"`` (:func:`~optcoll.graph.symmetry.automorphisms`) or
        ``"box rotation"`` (:func:`~optcoll.graph.symmetry.box_rotations` extended to
        the switches).
    """

    group: PermutationGroup
    nodes: tuple[str, ...]
    sources: dict[str, int]
    arc_orbits: tuple[tuple[Arc, ...], ...]
    found_by: str


def alltoall_symmetry(topology: Topology) -> AlltoallSymmetry | None:
    """The group of automorphisms with the fewest orbits of compute nodes that is found.

    Two searches, both checked exactly: the automorphism search on the whole graph
    with compute nodes and switches kept apart
    (:func:`~optcoll.graph.symmetry.automorphisms`: translations of tori, reflections
    of meshes), and the box rotations of the compute nodes (largest order first)
    extended to the switches (:func:`~optcoll.graph.symmetry.extend_automorphism`:
    a cluster of identical boxes whose fabric the rotation preserves). ``None``
    when neither finds an automorphism that moves a compute node.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> symmetry = alltoall_symmetry(load_topology("dgx-a100:4"))
    >>> symmetry.found_by, symmetry.group.order, sorted(symmetry.sources.values())
    ('box rotation', 16, [16, 16])
    """
    ids = topology.node_ids
    caps, _ = topology.integer_capacities()
    index = {v: i for i, v in enumerate(ids)}
    arcs = {(index[a], index[b]): c for (a, b), c in caps.items()}
    colour = [int(topology.is_compute(v)) for v in ids]
    candidates: list[tuple[PermutationGroup, str]] = []
    found = automorphisms(len(ids), arcs, colour)
    if found is not None:
        candidates.append((found, "automorphisms"))
    compute = topology.compute_nodes
    groups = {v: topology.node[v].group for v in compute}
    for rho in box_rotations(compute, groups):
        partial = {index[compute[i]]: index[compute[j]] for i, j in enumerate(rho)}
        sigma = extend_automorphism(len(ids), arcs, partial, colour)
        rotation = None if sigma is None else PermutationGroup.generated_by(sigma)
        if rotation is not None:
            candidates.append((rotation, "box rotation"))
            break
    best: AlltoallSymmetry | None = None
    for group, how in candidates:
        symmetry = _orbits(group, ids, caps, colour, how)
        if len(symmetry.sources) < topology.num_compute and (
            best is None or len(symmetry.sources) < len(best.sources)
        ):
            best = symmetry
    return best


def _orbits(
    group: PermutationGroup,
    ids: tuple[str, ...],
    caps: Mapping[Arc, int],
    colour: list[int],
    how: str,
) -> AlltoallSymmetry:
    """The source and arc orbits of ``group`` (the arcs' from its action on arc numbers)."""
    sources = {ids[o[0]]: len(o) for o in group.orbits() if colour[o[0]]}
    arcs = list(caps)
    position = {arc: a for a, arc in enumerate(arcs)}
    index = {v: i for i, v in enumerate(ids)}
    on_arcs = PermutationGroup(
        tuple(
            tuple(position[(ids[g[index[u]]], ids[g[index[v]]])] for u, v in arcs)
            for g in group.generators
        ),
        group.orders,
    )
    orbits = tuple(tuple(arcs[a] for a in orbit) for orbit in on_arcs.orbits())
    return AlltoallSymmetry(group, ids, sources, orbits, how)


@dataclass(frozen=True)
class OrbitAlltoallResult:
    """The all-to-all optimum from the orbit LP, lifted and proved on the full LP.

    ``time`` is t* in integer-capacity units (the topology's
    ``integer_capacities()``); ``flows[r]`` representative ``r``'s exact flow;
    ``routing[s]`` every source's lifted flow; ``lengths`` the lifted length
    function, normalised to ``sum_a c(a) l(a) = 1``, and ``lengths_bound`` what it
    proves on the full LP (equal to ``time``); ``lp_time`` HiGHS's float optimum of
    the orbit LP and ``report`` its solver report; ``seconds`` the exact lift and
    checks.
    """

    time: Fraction
    flows: dict[str, dict[Arc, Fraction]]
    routing: LiftedRouting
    lengths: dict[Arc, Fraction]
    lengths_bound: Fraction
    lp_time: float
    report: SolverReport
    seconds: float


def solve_orbit_alltoall(
    topology: Topology, symmetry: AlltoallSymmetry, *, time_limit: float | None = None
) -> OrbitAlltoallResult:
    """Solve the orbit LP exactly, lift its solution and prove it optimal for the full LP.

    See the module docstring for the theorem and the checks. Cost: the orbit LP
    (``|sources| * |links|`` variables), the lift (``|G| * |sources| * |links|``
    integer operations) and one shortest-path tree per compute node.

    Raises
    ------
    ReconstructionError
        If the orbit LP's exact vertex or duals are not recovered or not optimal,
        or the lifted solution fails a check on the full LP (the message says which).
    SolveError
        Any other solver failure (see :func:`formulations.solve.solve`).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topology = load_topology("mesh:3x3")
    >>> result = solve_orbit_alltoall(topology, alltoall_symmetry(topology))
    >>> len(result.flows), len(result.routing), result.time == result.lengths_bound
    (4, 9, True)
    """

    caps, _ = topology.integer_capacities()
    compute = topology.compute_nodes
    nodes = topology.node_ids
    sources = symmetry.sources
    start = time.perf_counter()
    problem = build_orbit_alltoall(nodes, caps, compute, sources, symmetry.arc_orbits)
    built = time.perf_counter() - start
    where = (
        f"orbit all-to-all LP ({len(sources)} source orbits, {len(symmetry.arc_orbits)} arc "
        f"orbits, group of order {symmetry.group.order})"
    )
    proved = solve_proved(problem, where, time_limit=time_limit, build_seconds=built)
    lifting = time.perf_counter()
    primal, dual = proved.primal, proved.dual
    t = primal["t"]
    if t <= 0:
        raise ReconstructionError(f"{where}: the exact optimum {t} is not positive")
    arcs = list(caps)
    zero = Fraction(0)
    flows = {
        r: {arcs[a]: x for a in range(len(arcs)) if (x := primal.get(f"f_{k}_{a}", zero))}
        for k, r in enumerate(sources)
    }
    lengths: dict[Arc, Fraction] = {}
    for o, orbit in enumerate(symmetry.arc_orbits):
        y = abs(dual.get(f"orbit_{o}", Fraction(0)))
        if y:
            lengths.update(dict.fromkeys(orbit, y))
    norm = sum(caps[arc] * y for arc, y in lengths.items())
    if norm <= 0:
        raise ReconstructionError(f"{where}: the orbit rows' duals are all zero")
    lengths = {arc: y / norm for arc, y in lengths.items()}

    routing = LiftedRouting(symmetry, arcs, compute, flows)
    _check_lifted_routing(routing, caps, t, where)
    commodities = alltoall_commodities(compute)
    bound = length_bound(nodes, caps, commodities, lengths)
    if bound != t:
        raise ReconstructionError(
            f"{where}: the lifted length function proves {bound} on the full LP, not {t}"
        )
    result = proved.result
    assert result is not None, "solve_proved returns HiGHS's result"
    return OrbitAlltoallResult(
        t,
        flows,
        routing,
        lengths,
        bound,
        result.objective,
        result.report,
        time.perf_counter() - lifting,
    )


class LiftedRouting(Mapping[str, dict[Arc, Fraction]]):
    """Every source's flow, lifted from the representatives' (module docstring):
    ``routing[s] = (1/|G_r|) sum over g with g(r) = s of g(f_r)``, computed when asked.

    Holds the images of the representatives' arcs under every element
    (``|G| x support`` integers), not ``N`` dictionaries.
    """

    def __init__(
        self,
        symmetry: AlltoallSymmetry,
        arcs: list[Arc],
        compute: tuple[str, ...],
        flows: Mapping[str, Mapping[Arc, Fraction]],
    ) -> None:
        import numpy as np

        nodes = symmetry.nodes
        elements = symmetry.group.elements()
        index = {v: i for i, v in enumerate(nodes)}
        tails = np.array([index[u] for u, _ in arcs], dtype=np.int64)
        heads = np.array([index[v] for _, v in arcs], dtype=np.int64)
        position = {arc: a for a, arc in enumerate(arcs)}
        keys = tails * len(nodes) + heads
        order = np.argsort(keys)
        self.arcs, self.compute, self.nodes = arcs, compute, nodes
        self.tails, self.heads = tails, heads
        #: per representative: (its values / |G_r|, the arc numbers of their images
        #: under every element, the image of the representative under every element)
        self.parts: list[tuple[list[Fraction], Any, Any]] = []
        self.by_source: dict[str, list[tuple[int, int]]] = {s: [] for s in compute}
        for r, flow in flows.items():
            support = np.array([position[arc] for arc in flow], dtype=np.int64)
            image_keys = elements[:, tails[support]] * len(nodes) + elements[:, heads[support]]
            images = order[np.searchsorted(keys, image_keys, sorter=order)]
            if not (keys[images] == image_keys).all():
                raise ReconstructionError("a group element maps an arc to a non-arc")
            stabiliser = symmetry.group.order // len(symmetry.group.orbit_of(index[r]))
            share = [x / stabiliser for x in flow.values()]
            owners = elements[:, index[r]]
            for g, s in enumerate(owners.tolist()):
                self.by_source[nodes[s]].append((len(self.parts), g))
            self.parts.append((share, images, owners))

    def __getitem__(self, source: str) -> dict[Arc, Fraction]:
        flow: dict[Arc, Fraction] = {}
        for part, g in self.by_source[source]:
            share, images, _ = self.parts[part]
            for a, x in zip(images[g].tolist(), share, strict=True):
                arc = self.arcs[a]
                flow[arc] = flow[arc] + x if arc in flow else x
        return flow

    def __iter__(self) -> Iterator[str]:
        return iter(self.compute)

    def __len__(self) -> int:
        return len(self.compute)


def _check_lifted_routing(
    routing: LiftedRouting, caps: Mapping[Arc, int], t: Fraction, where: str
) -> None:
    """Exact feasibility of the lifted ``routing`` for the full LP at time ``t``: every
    flow nonnegative, conserved with the all-to-all demands, and every arc's total
    load at most ``t c(a)`` (in integers: all values times a common denominator)."""
    import numpy as np

    nodes, compute = routing.nodes, routing.compute
    denominator = math.lcm(*(x.denominator for share, _, _ in routing.parts for x in share))
    numerators = [[int(x * denominator) for x in share] for share, _, _ in routing.parts]
    largest = max((max(row, default=0) for row in numerators), default=0)
    terms = sum(images.size for _, images, _ in routing.parts)
    dtype: Any = np.int64 if (largest + 1) * (terms + 1) < 2**62 else object
    net = np.zeros((len(compute), len(nodes)), dtype=dtype)
    load = np.zeros(len(routing.arcs), dtype=dtype)
    where_compute = np.full(len(nodes), -1, dtype=np.int64)
    for i, v in enumerate(compute):
        where_compute[nodes.index(v)] = i
    for (_, images, owners), row in zip(routing.parts, numerators, strict=True):
        if min(row, default=0) < 0:
            raise ReconstructionError(f"{where}: a lifted flow is negative")
        values = np.array(row, dtype=dtype)
        sources = where_compute[owners][:, None]
        np.add.at(net, (sources, routing.tails[images]), values[None, :])
        np.add.at(net, (sources, routing.heads[images]), -values[None, :])
        np.add.at(load, images, np.broadcast_to(values, images.shape))
    expected = np.zeros((len(compute), len(nodes)), dtype=dtype)
    columns = [nodes.index(v) for v in compute]
    expected[:, columns] = -denominator
    expected[np.arange(len(compute)), columns] = (len(compute) - 1) * denominator
    if not (net == expected).all():
        rank, place = (int(x[0]) for x in np.nonzero(net != expected))
        raise ReconstructionError(
            f"{where}: the lifted flow of {compute[rank]!r} is not conserved at {nodes[place]!r}"
        )
    for a, arc in enumerate(routing.arcs):
        if Fraction(int(load[a]), denominator) > t * caps[arc]:
            raise ReconstructionError(f"{where}: the lifted routing overloads {arc} beyond {t}")
