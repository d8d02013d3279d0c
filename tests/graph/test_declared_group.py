"""The declared groups of the families added for issue 40 (nvl72, cluster, leaf-spine,
mesh, hypercube): every kept generator is an automorphism, they commute and act freely
on the compute nodes, and trees packed by them reach r* (checked against the LP) and
verify by the full walk over every image."""

import math

import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.graph.family_symmetry import declared_generators, declared_group
from optcoll.graph.symmetry import is_automorphism
from optcoll.schedules import packing
from optcoll.schedules.packing import pack_arborescences
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

#: spec -> (orders of the kept generators, representatives)
GROUPS = {
    "nvl72": ((72,), 1),
    "nvl72:racks=2": ((2, 72), 1),
    "cluster:servers=4x4,box=ring,box_bw=100,nic_bw=25,fabric=rails,per_leaf=2,spines=2": (
        (2, 2, 4),
        1,
    ),
    "cluster:servers=4x2,box=fc,box_bw=100,nic_bw=25,fabric=star": ((4, 2), 1),
    "leaf-spine:leaves=4,hosts=3,spines=2,oversub=2": ((3, 4), 1),
    "mesh:4x4": ((2, 2), 4),
    "mesh:3x2": ((2,), 3),  # the odd axis's reflection fixes its middle: dropped
    "hypercube:4": ((2, 2, 2, 2), 1),
}


@pytest.mark.parametrize("spec", sorted(GROUPS))
def test_declared_group_is_free_and_made_of_automorphisms(spec):
    topology = build(spec)
    group = declared_group(topology)
    assert (group.orders, len(group.representatives)) == GROUPS[spec]
    kinds = {n.id: (n.type, n.reduce, n.multicast) for n in topology.nodes}
    assert all(is_automorphism(topology.capacity, kinds, g) for g in declared_generators(topology))
    assert all(is_automorphism(topology.capacity, kinds, g) for g in group.generators)
    # free: the images of the representatives under the whole group are every compute node once
    images = set()
    for rep in group.representatives:
        orbit = {rep}
        for g, order in zip(group.generators, group.orders, strict=True):
            grown = set(orbit)
            for v in orbit:
                for _ in range(order - 1):
                    v = g.get(v, v)
                    grown.add(v)
            orbit = grown
        assert len(orbit) == group.order
        images |= orbit
    assert len(images) == topology.num_compute == group.order * len(group.representatives)
    assert math.prod(group.orders) == group.order


def test_a_heterogeneous_cluster_has_no_declared_group():
    spec = "cluster:servers=1x8+2x4,box=switch+fc,box_bw=450+100,nic_bw=50+25,fabric=star"
    assert declared_group(build(spec)) is None


@pytest.mark.parametrize(
    "spec",
    [
        "nvl72",
        "leaf-spine:leaves=4,hosts=3,spines=2,oversub=2",
        "cluster:servers=4x4,box=ring,box_bw=100,nic_bw=25,fabric=rails,per_leaf=2,spines=2",
    ],
)
def test_trees_by_the_declared_group_reach_r_star(monkeypatch, spec):
    pytest.importorskip("highspy")
    monkeypatch.setattr(packing, "DECLARED_FROM", 1)
    topology = build(spec)
    bound = optimal_cut_ratio(topology)
    assert bound.ratio == optimal_cut_ratio(topology, "lp").ratio
    schedule = pack_arborescences(topology)
    assert schedule.stats["logical_arcs"] is None  # packed by the declared group
    assert schedule.time_factor == bound.ratio
    full = verify_schedule(topology, schedule, require_optimal=True, method="full")
    assert full.valid and full.time_factor == bound.ratio
