"""Declared family symmetry in the combinatorial cut ratio: the candidates are checked
exactly, r* is unchanged with or without them, and a wrong candidate is dropped."""

from fractions import Fraction
from itertools import pairwise

import pytest

from optcoll.bounds import cut_ratio
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.limits import check_size
from optcoll.exceptions import ArgumentError
from optcoll.graph.family_symmetry import FAMILIES_WITH_SYMMETRY, declared_generators
from optcoll.graph.symmetry import is_automorphism
from optcoll.topologies import build

SMALL = [
    "dgx-a100:3",
    "dgx-h100:3",
    "dgx-h100:2,nvls=1",
    "dgx-2:2",
    "dgx-v100:3",
    "rail-fat-tree:servers=4,gpus=2,per_leaf=2,spines=2",
    "rail-fat-tree:servers=6,gpus=4,per_leaf=3,spines=2,oversub=2",
    "dragonfly:a=2,p=2,h=1",
    "dragonfly:a=4,p=2,h=2,g=5",
    "torus:3x4",
    "twisted-torus:2x2x4",
    "hyperx:3x3,t=2",
    "cluster:servers=4x4,box=ring,box_bw=100,nic_bw=25,fabric=rails,per_leaf=2,spines=2",
    "cluster:servers=4x2,box=fc,box_bw=100,nic_bw=25,fabric=star",
    "leaf-spine:leaves=4,hosts=3,spines=2,oversub=2",
    "mesh:4x3",
    "hypercube:4",
    "nvl72:racks=2",
]


def _kinds(topology):
    return {n.id: (n.type, n.reduce, n.multicast) for n in topology.nodes}


def _without_symmetry(monkeypatch, topology):
    with monkeypatch.context() as patch:
        patch.setattr(cut_ratio, "declared_generators", lambda t: ())
        patch.setattr(cut_ratio, "_found_representatives", lambda t, caps: None)
        return optimal_cut_ratio(topology)


def test_every_family_with_symmetry_has_a_small_instance():
    assert {spec.split(":")[0] for spec in SMALL} == set(FAMILIES_WITH_SYMMETRY)


@pytest.mark.parametrize("spec", SMALL)
def test_declared_generators_are_automorphisms(spec):
    topology = build(spec)
    caps = topology.capacity
    generators = declared_generators(topology)
    assert generators
    assert all(is_automorphism(caps, _kinds(topology), g) for g in generators)


@pytest.mark.parametrize("spec", SMALL)
def test_ratio_with_declared_symmetry_equals_ratio_without(monkeypatch, spec):
    topology = build(spec)
    with_symmetry = optimal_cut_ratio(topology)
    without = _without_symmetry(monkeypatch, topology)
    assert with_symmetry.ratio == without.ratio
    assert with_symmetry.stats["rejected_generators"] == 0
    assert with_symmetry.stats["max_flows"] <= without.stats["max_flows"]


def test_ratio_agrees_with_the_lp_on_a_dragonfly():
    pytest.importorskip("highspy")
    topology = build("dragonfly:a=2,p=2,h=1")
    assert optimal_cut_ratio(topology).ratio == optimal_cut_ratio(topology, "lp").ratio


def test_dgx_h100_has_one_orbit_of_gpus():
    result = optimal_cut_ratio(build("dgx-h100:64"))
    assert result.stats["max_flows"] == 1
    assert result.stats["declared_generators"] == 2
    # all boxes but one: 504 GPUs behind the 8 x 50 GB/s links into the NICs of the last
    assert result.ratio == Fraction(504, 400)


def test_a_wrong_declared_generator_is_rejected_and_the_bound_falls_back(monkeypatch):
    topology = build("dgx-h100:3")
    right = declared_generators(topology)
    wrong = {"b0.gpu0": "b0.nic0", "b0.nic0": "b0.gpu0"}  # a GPU is not a NIC
    monkeypatch.setattr(cut_ratio, "declared_generators", lambda t: (wrong, *right))
    result = optimal_cut_ratio(topology)
    assert result.stats["rejected_generators"] == 1
    assert result.stats["declared_generators"] == 2
    monkeypatch.setattr(cut_ratio, "declared_generators", lambda t: (wrong,))
    fallback = optimal_cut_ratio(topology)
    assert fallback.stats["declared_generators"] == 0
    assert fallback.ratio == result.ratio == _without_symmetry(monkeypatch, topology).ratio


def test_an_edited_topology_keeps_its_family_name_but_not_its_symmetry(monkeypatch):
    """A faster rail for box 0's GPU 0: the box and GPU rotations are no longer
    automorphisms, both are dropped, and r* is the exact one of the edited topology."""
    topology = build("dgx-h100:3")
    edited = topology.with_capacity(
        {**topology.capacity, ("b0.nic0", "rail0"): Fraction(10), ("rail0", "b0.nic0"): 10}
    ).with_name("dgx-h100:3")
    result = optimal_cut_ratio(edited)
    assert result.stats["rejected_generators"] == 2
    assert result.ratio == _without_symmetry(monkeypatch, edited).ratio
    assert result.ratio != optimal_cut_ratio(topology).ratio


def test_is_automorphism_needs_a_bijection_keeping_kinds():
    arcs = {("a", "s"): 1, ("s", "a"): 1, ("b", "s"): 1, ("s", "b"): 1}
    kinds = {"a": "compute", "b": "compute", "s": "switch"}
    assert is_automorphism(arcs, kinds, {"a": "b", "b": "a"})
    assert not is_automorphism(arcs, kinds, {"a": "b"})  # not a bijection
    assert not is_automorphism(arcs, kinds, {"a": "s", "s": "a"})  # a compute node to a switch
    assert not is_automorphism(arcs, kinds, {"a": "x", "x": "a"})  # an unknown node


def test_built_topologies_may_reach_100000_gpus_files_stay_at_50000_nodes():
    check_size("dgx-h100:12500", 17 * 12500 + 8, 48 * 12500, built=True)
    with pytest.raises(ArgumentError, match="every topology file is limited to 50000 nodes"):
        check_size("big.json", 50_001, 10)
    with pytest.raises(ArgumentError, match="every built topology is limited to 250000 nodes"):
        check_size("dgx-h100:20000", 17 * 20000 + 8, 48 * 20000, built=True)


@pytest.mark.parametrize(
    "name, ids",
    [
        ("torus:odd", ["n0", "n1_2", "n0_0_1"]),
        ("dgx-h100:odd", ["b0.gpu0", "b1.nic3", "rail0", "b2.x"]),
        ("dragonfly:odd", ["g0.r0.h0", "g1.r0", "g3.h2"]),
        ("rail-fat-tree:odd", ["b0.gpu0", "rail0.leaf1", "leaf0", "b3.nic0"]),
    ],
)
def test_a_file_under_a_family_name_gets_checked_candidates_and_its_exact_ratio(
    monkeypatch, name, ids
):
    """Ids a family never makes (a path of links of bandwidths 1 and 2): reading
    candidates off them is never an error, and r* is the exact one."""
    from optcoll.core.topology import Link, Node, Topology

    topology = Topology(
        name,
        [Node(v) for v in ids],
        [Link(u, v, 1 + i % 2, bidirectional=True) for i, (u, v) in enumerate(pairwise(ids))],
    )
    assert optimal_cut_ratio(topology).ratio == _without_symmetry(monkeypatch, topology).ratio
