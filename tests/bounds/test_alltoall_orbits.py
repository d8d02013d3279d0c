"""The all-to-all LP on the orbits of a group of automorphisms (issue 27, item 7): the same
exact t* as the full LP, a lifted routing and length function that pass the checks on the
full problem, schedules that verify at t*, and the group's orbits checked on their own."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import random_topologies
from hypothesis import HealthCheck, given, settings

from formulations.alltoall import build_orbit_alltoall
from formulations.errors import MethodError
from optcoll import load_topology
from optcoll.bounds.alltoall_orbits import alltoall_symmetry, solve_orbit_alltoall
from optcoll.bounds.multicommodity import length_bound
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, ReconstructionError
from optcoll.graph.symmetry import preserves_capacity
from optcoll.schedules.alltoall import (
    alltoall_bound,
    alltoall_optimum,
    alltoall_schedule,
    path_decomposition,
)
from optcoll.verify.schedule import verify_schedule

SMALL = ["ring:6", "ring:5,direction=uni", "torus:4x4", "dgx-a100:2", "mesh:3x3", "mesh:4x4"]


def check_group(topology: Topology) -> None:
    """The group found is made of automorphisms, its orbits are the orbits, and the
    representatives' weights count every compute node once."""
    symmetry = alltoall_symmetry(topology)
    assert symmetry is not None
    caps, _ = topology.integer_capacities()
    ids = symmetry.nodes
    elements = symmetry.group.elements()
    assert len({tuple(row) for row in elements.tolist()}) == symmetry.group.order
    for row in elements.tolist():
        image = {ids[i]: ids[j] for i, j in enumerate(row)}
        assert preserves_capacity(caps, image)
        assert all(topology.is_compute(image[v]) for v in topology.compute_nodes)
    for r, size in symmetry.sources.items():
        orbit = {ids[row[ids.index(r)]] for row in elements.tolist()}
        assert len(orbit) == size and topology.is_compute(r)
    assert sum(symmetry.sources.values()) == topology.num_compute
    arcs = [arc for orbit in symmetry.arc_orbits for arc in orbit]
    assert sorted(arcs) == sorted(caps)
    for orbit in symmetry.arc_orbits:
        u, v = orbit[0]
        images = {(ids[row[ids.index(u)]], ids[row[ids.index(v)]]) for row in elements.tolist()}
        assert images == set(orbit)


@pytest.mark.parametrize("spec", SMALL)
def test_orbit_lp_equals_the_full_lp_exactly(spec: str) -> None:
    topology = load_topology(spec)
    check_group(topology)
    full = alltoall_optimum(topology, method="full")
    orbits = alltoall_optimum(topology, method="orbits")
    assert orbits.method == "orbits" and full.method == "full"
    assert orbits.time_factor == full.time_factor == orbits.certificate_bound
    assert orbits.report.num_variables < full.report.num_variables
    # the lifted lengths prove t* on the full LP, from every source (no group used)
    caps, unit = topology.integer_capacities()
    from formulations.alltoall import alltoall_commodities

    scaled = {arc: x * unit for arc, x in orbits.lengths.items()}
    norm = sum(caps[arc] * x for arc, x in scaled.items())
    bound = length_bound(
        topology.node_ids,
        caps,
        alltoall_commodities(topology.compute_nodes),
        {arc: x / norm for arc, x in scaled.items()},
    )
    assert bound / unit == full.time_factor


@pytest.mark.parametrize("spec", SMALL)
def test_lifted_routing_is_feasible_and_schedules_verify(spec: str) -> None:
    topology = load_topology(spec)
    bound = alltoall_bound(topology)
    assert bound.stats["method"] == "orbits"
    # the lifted routing, source by source: conservation and loads within t* * bandwidth
    load: dict = {}
    n = topology.num_compute
    for s in topology.compute_nodes:
        net: dict = {}
        for (u, v), x in bound.routing[s].items():
            assert x > 0
            net[u] = net.get(u, 0) + x
            net[v] = net.get(v, 0) - x
            load[(u, v)] = load.get((u, v), 0) + x
        for v in topology.node_ids:
            want = n - 1 if v == s else -1 if topology.is_compute(v) else 0
            assert net.get(v, 0) == want
    assert max(x / topology.capacity[a] for a, x in load.items()) == bound.time_factor
    schedule = alltoall_schedule(topology, bound=bound)
    check = verify_schedule(topology, schedule, optimum=bound.time_factor, require_optimal=True)
    assert check.valid, check.reason
    assert check.time_factor == schedule.time_factor == bound.time_factor
    # the same routing decomposed source by source gives paths as good
    direct = path_decomposition(topology, bound.routing)
    assert len(direct) == n * (n - 1)
    rounded = alltoall_schedule(topology, 1, bound=bound)
    check = verify_schedule(topology, rounded, optimum=bound.time_factor)
    assert check.valid, check.reason
    assert check.time_factor <= Fraction(rounded.stats["rounding_bound"])


def test_mesh_reflections_fix_the_centre() -> None:
    symmetry = alltoall_symmetry(load_topology("mesh:3x3"))
    assert symmetry is not None and symmetry.group.order == 4
    assert sorted(symmetry.sources.values()) == [1, 2, 2, 4]  # centre, edge pairs, corners


def test_torus_and_cluster_have_few_orbits() -> None:
    torus = alltoall_symmetry(load_topology("torus:4x4"))
    assert torus is not None and list(torus.sources.values()) == [16]
    cluster = alltoall_symmetry(load_topology("dgx-a100:2"))
    assert cluster is not None and cluster.found_by == "box rotation"
    assert sorted(cluster.sources.values()) == [8, 8]  # even and odd GPUs (two IB rails)


@settings(
    max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(random_topologies(bandwidths=(1, 2, 25)))
def test_random_topologies_agree_with_the_full_lp(topology: Topology) -> None:
    full = alltoall_optimum(topology, method="full")
    auto = alltoall_optimum(topology)
    assert auto.time_factor == full.time_factor
    if auto.method == "orbits":
        schedule = alltoall_schedule(topology)
        check = verify_schedule(topology, schedule, optimum=full.time_factor, require_optimal=True)
        assert check.valid, check.reason


def test_methods_and_bad_orbits_are_refused() -> None:
    ring = load_topology("ring:4,bw=1")
    with pytest.raises(ArgumentError, match="method"):
        alltoall_optimum(ring, method="quotient")
    with pytest.raises(ArgumentError, match="time form"):
        alltoall_optimum(ring, method="orbits", form="rate")
    line = load_topology("star:3")  # the hub's spokes: symmetric, but ask for the rate form
    assert alltoall_optimum(line, form="rate").method == "full"
    caps, _ = ring.integer_capacities()
    nodes, compute = ring.node_ids, ring.compute_nodes
    with pytest.raises(MethodError, match="not the 4 compute nodes"):
        build_orbit_alltoall(nodes, caps, compute, {"n0": 3}, [list(caps)])
    with pytest.raises(MethodError, match="do not cover"):
        build_orbit_alltoall(nodes, caps, compute, {"n0": 4}, [list(caps)[:2]])
    with pytest.raises(MethodError, match="not a compute node"):
        build_orbit_alltoall(nodes, caps, compute, {"x": 4}, [list(caps)])


def test_a_wrong_orbit_claim_is_caught_by_the_full_checks() -> None:
    """Orbits that are not the group's (the centre of mesh 3x3 claimed to stand for
    all nine sources) give an orbit LP whose lift the checks on the full LP reject."""
    from dataclasses import replace

    topology = load_topology("mesh:3x3")
    symmetry = alltoall_symmetry(topology)
    assert symmetry is not None
    wrong = replace(symmetry, sources={"n1_1": 9})
    with pytest.raises(ReconstructionError, match="not conserved"):
        solve_orbit_alltoall(topology, wrong)
