"""Fabric families: structure, exact r* by two independent methods, verified trees."""

from fractions import Fraction

import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.exceptions import TopologySpecError
from optcoll.io import load_topology
from optcoll.schedules.packing import pack_arborescences
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

SMALL = [
    "dragonfly:a=2,p=1,h=1",
    "dragonfly:a=2,p=2,h=2,g=3,bw=100/50/25",
    "hyperx:3x3,t=1",
    "hyperx:2x3,t=2,bw=100/40",
    "twisted-torus:2x2x4",
    "twisted-torus:2x4,bw=50",
    "rail-fat-tree:servers=4,gpus=2,per_leaf=2,spines=1,oversub=2",
    "rail-fat-tree:servers=2,gpus=2,per_leaf=1,spines=2",
]


@pytest.mark.parametrize("spec", SMALL)
def test_lp_and_combinatorial_agree_and_trees_verify(spec):
    topology = build(spec)
    combinatorial = optimal_cut_ratio(topology)
    lp = optimal_cut_ratio(topology, method="lp")
    assert combinatorial.ratio == lp.ratio
    schedule = pack_arborescences(topology)
    verdict = verify_schedule(topology, schedule, optimum=combinatorial.ratio, require_optimal=True)
    assert verdict.valid and verdict.time_factor == combinatorial.ratio


@pytest.mark.parametrize("spec", SMALL + ["nvl72", "nvl72:racks=2,nvls=1"])
def test_the_name_rebuilds_the_topology(spec):
    topology = build(spec)
    assert build(topology.name).capacity == topology.capacity
    assert load_topology(topology.name).name == topology.name


def test_dragonfly_counts_and_global_links():
    t = build("dragonfly:a=4,p=2,h=2")  # g = a*h + 1 = 9 groups, one global link per pair
    routers = [v for v in t.switch_nodes]
    assert (t.num_compute, len(routers)) == (72, 36)
    groups = {}
    for (u, v), bandwidth in t.capacity.items():
        gu, gv = u.split(".")[0], v.split(".")[0]
        if gu != gv:
            assert bandwidth == 50
            groups[(gu, gv)] = groups.get((gu, gv), 0) + 1
    assert len(groups) == 9 * 8 and set(groups.values()) == {1}
    # every router uses exactly h = 2 global ports
    ports = {}
    for u, v in t.capacity:
        if u.split(".")[0] != v.split(".")[0]:
            ports[u] = ports.get(u, 0) + 1
    assert set(ports.values()) == {2} and len(ports) == 36


def test_dragonfly_with_fewer_groups_doubles_global_links():
    t = build("dragonfly:a=2,p=1,h=2,g=3")  # 4 ports per group, 2 per pair of groups
    between = sum(bw for (u, v), bw in t.capacity.items() if u[:2] == "g0" and v[:2] == "g1")
    assert between == 2 * 50


def test_twisted_wrap_around_links():
    t = build("twisted-torus:4x4x8")
    assert (t.num_compute, len(t.capacity)) == (128, 768)
    assert ("n3_0_0", "n0_0_4") in t.capacity and ("n3_0_0", "n0_0_0") not in t.capacity
    assert ("n0_3_5", "n0_0_1") in t.capacity  # y wraps with +4 (mod 8) in z
    assert ("n0_0_7", "n0_0_0") in t.capacity  # the longest dimension wraps plainly
    assert all(t.out_bandwidth(v) == 600 for v in t.compute_nodes)


def test_twisted_torus_beats_the_plain_torus_cut():
    # the twist shortens the bisection's detour: r* never worse than the plain torus
    assert (
        optimal_cut_ratio(build("twisted-torus:2x2x4")).ratio
        <= optimal_cut_ratio(build("torus:2x2x4")).ratio
    )


def test_nvl72_per_gpu_bandwidth_and_nvls():
    t = build("nvl72:nvls=1")
    assert t.out_bandwidth("r0.gpu5") == 900
    assert len(t.reducing_switches) == 9
    assert optimal_cut_ratio(t).ratio == Fraction(71, 900)


def test_hyperx_switch_degree():
    t = build("hyperx:4x4,t=2")
    assert t.out_bandwidth("s1_2") == 100 * (2 + 3 + 3)


def test_rail_fat_tree_uplinks_and_rails():
    t = build("rail-fat-tree:servers=4,gpus=4,per_leaf=2,spines=2,oversub=2")
    assert t.capacity[("rail3.leaf1", "spine0")] == Fraction(2 * 50, 2 * 2)
    assert ("b3.nic2", "rail2.leaf1") in t.capacity


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("dragonfly:a=2,p=1,h=1,g=9", "g must be between 2 and a*h + 1"),
        ("dragonfly:a=2,p=1", "missing parameter 'h'"),
        ("dragonfly:a=2,p=1,h=1,bw=1/2", "give 1 or 3"),
        ("twisted-torus:4x4x4", "no shorter dimension"),
        ("twisted-torus:4x8x6", "last dimension must be the longest"),
        ("rail-fat-tree:servers=3,gpus=2,per_leaf=2,spines=1", "multiple of per_leaf"),
        ("hyperx:1x4,t=1", "each >= 2"),
    ],
)
def test_bad_specs_are_refused_naming_the_fault(spec, words):
    with pytest.raises(TopologySpecError, match=None) as caught:
        build(spec)
    assert words in str(caught.value)
