"""The built-in library: node/link counts and bandwidth totals against hand counts,
spec parsing with clear errors, and the random family's guarantees."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.core.topology import Topology
from optcoll.exceptions import TopologySpecError
from optcoll.topologies import FAMILIES, build, families
from optcoll.topologies.generic import leaf_spine, random_topology, torus


def total(topo: Topology) -> Fraction:
    """Sum of the bandwidth of every directed link."""
    return sum(topo.capacity.values(), Fraction(0))


# (spec, compute nodes, switches, directed links, total bandwidth), counted by hand.
HAND_COUNTS = [
    # 8 GPUs <-> 1 NVSwitch at 300: 16 arcs, 8*300*2.
    ("dgx-a100:1", 8, 1, 16, 4800),
    # per box: 16 GPU-NVSwitch + 16 GPU-NIC + 16 NIC-IB arcs; 4800 + 8*25*2*2 = 5600.
    ("dgx-a100:2", 16, 2 + 16 + 2, 96, 11200),
    # 16 GCDs, 56 ordered xGMI pairs, every GCD 7 links * 50 GB/s.
    ("mi250:1", 16, 0, 56, 16 * 7 * 50),
    # plus 16 GCD <-> IB arcs per direction per box at 16.
    ("mi250:2", 32, 1, 2 * 56 + 2 * 32, 2 * 16 * 7 * 50 + 2 * 32 * 16),
    ("dgx-h100:1", 8, 1, 16, 8 * 450 * 2),
    # per box: 16 + 16 + 16 arcs; 7200 + 8*50*2 (GPU-NIC) + 8*50*2 (NIC-rail); 8 rails.
    ("dgx-h100:2", 16, 2 + 16 + 8, 96, 2 * (7200 + 800 + 800)),
    ("dgx-h100:3", 24, 3 + 24 + 8, 144, 3 * (7200 + 800 + 800)),
    # hybrid cube-mesh: 16 GPU pairs -> 32 arcs; each GPU 6 NVLink2 * 25 = 150 out.
    ("dgx-v100:1", 8, 0, 32, 8 * 150),
    # per box: 32 + 16 GPU-NIC (16 GB/s) + 2 NIC-IB (12.5) arcs; one shared IB switch.
    ("dgx-v100:2", 16, 2 + 1, 2 * 50, 2 * (1200 + 8 * 16 * 2 + 25)),
    ("ndv2:3", 24, 3 + 1, 3 * 50, 3 * (1200 + 256 + 25)),
    ("dgx-2:1", 16, 1, 32, 16 * 150 * 2),
    # per box: 32 + 32 GPU-NIC (2 GPUs per NIC, 16 GB/s) + 16 NIC-rail (12.5) arcs.
    ("dgx-2:2", 32, 2 + 16 + 8, 2 * 80, 2 * (4800 + 16 * 16 * 2 + 8 * 12.5 * 2)),
    ("ring:5", 5, 0, 10, 1000),
    ("ring:2", 2, 0, 2, 200),
    ("ring:5,direction=uni", 5, 0, 5, 500),
    ("ring:6,bw=12.5,direction=uni", 6, 0, 6, 75),
    ("line:4", 4, 0, 6, 600),
    ("line:2,bw=7", 2, 0, 2, 14),
    # 4x4 torus: 16 nodes * 2 dims = 32 links, 64 arcs.
    ("torus:4x4", 16, 0, 64, 6400),
    # 4x4x2: 32 links along dim 0 (100), 32 along dim 1 (50), 16 along the size-2 dim (25).
    ("torus:4x4x2,bw=100/50/25", 32, 0, 160, 2 * (32 * 100 + 32 * 50 + 16 * 25)),
    ("torus:3x3x3,bw=10", 27, 0, 2 * 81, 2 * 81 * 10),
    ("torus:2x2", 4, 0, 8, 800),
    # 4x4 mesh: 2 * 4 * 3 = 24 links.
    ("mesh:4x4", 16, 0, 48, 4800),
    ("mesh:3x4,bw=20/10", 12, 0, 2 * (8 + 9), 2 * (8 * 20 + 9 * 10)),
    ("mesh:3x3x3", 27, 0, 2 * 54, 2 * 54 * 100),
    # hypercube: d * 2^(d-1) links.
    ("hypercube:1", 2, 0, 2, 200),
    ("hypercube:4", 16, 0, 64, 6400),
    ("fully-connected:5", 5, 0, 20, 2000),
    ("star:4", 4, 1, 8, 800),
    ("hub-and-spoke:3,bw=2.5", 3, 1, 6, 15),
    # 16 host links (100) + 8 leaf-spine links of 4*100/(2*2) = 100.
    ("leaf-spine:leaves=4,hosts=4,spines=2,oversub=2", 16, 6, 48, 2 * (1600 + 800)),
    # uplinks: 3*100/(2*3) = 50 each; 6 host + 4 leaf-spine links.
    ("fat-tree:leaves=2,hosts=3,spines=2,oversub=3", 6, 4, 20, 2 * (600 + 200)),
    # non-blocking: uplink bandwidth per leaf equals host bandwidth per leaf.
    ("leaf-spine:leaves=3,hosts=2,spines=4,bw=50", 6, 7, 2 * (6 + 12), 2 * (300 + 300)),
]


@pytest.mark.parametrize("spec, compute, switches, arcs, bandwidth", HAND_COUNTS)
def test_hand_counts(spec, compute, switches, arcs, bandwidth):
    topo = build(spec)
    assert topo.num_compute == compute
    assert len(topo.switch_nodes) == switches
    assert len(topo.capacity) == arcs
    assert total(topo) == Fraction(bandwidth)


def test_every_required_family_is_registered():
    required = {
        "dgx-a100", "mi250", "dgx-h100", "dgx-v100", "ndv2", "dgx-2", "ring", "line", "torus",
        "mesh", "hypercube", "fully-connected", "star", "leaf-spine", "random",
    }  # fmt: skip
    assert required <= set(FAMILIES)
    names = [f.name for f in families()]
    assert names == sorted(set(names)) and "ndv2" not in names


@pytest.mark.parametrize(
    "spec", [spec for spec, *_ in HAND_COUNTS] + ["random:n=6,switches=2,seed=4,p=0.5"]
)
def test_name_is_a_canonical_spec_that_rebuilds_the_same_topology(spec):
    topo = build(spec)
    assert build(topo.name) == topo


def test_aliases_resolve_to_the_canonical_family():
    assert build("ndv2:2") == build("dgx-v100:2")
    assert build("ndv2").name == "dgx-v100:1"
    assert build("fat-tree:leaves=2,hosts=2,spines=1") == build(
        "leaf-spine:leaves=2,hosts=2,spines=1"
    )
    assert build("hub-and-spoke:3") == build("star:3")


# --- hardware models ---------------------------------------------------------------------


def test_dgx_a100_matches_the_reference_model():
    topo = build("dgx-a100:3")
    assert topo.capacity[("b2.gpu5", "b2.nvswitch")] == 300
    assert topo.capacity[("b2.nic5", "ib1")] == 25 and topo.capacity[("ib0", "b1.nic4")] == 25
    assert ("b0.nic1", "ib0") not in topo.capacity


def test_dgx_h100_is_rail_optimised():
    topo = build("dgx-h100:3")
    for box in range(3):
        for j in range(8):
            assert topo.capacity[(f"b{box}.gpu{j}", f"b{box}.nic{j}")] == 50
            assert topo.capacity[(f"b{box}.nic{j}", f"rail{j}")] == 50
    assert [topo.in_bandwidth(f"rail{j}") for j in range(8)] == [150] * 8
    assert topo.out_bandwidth("b0.gpu0") == 450 + 50
    # Leaving one box: 8 NICs at 50 each.
    box0 = [n for n in topo.node_ids if n.startswith("b0.")]
    assert topo.cut_bandwidth(box0) == 400


def test_dgx_v100_hybrid_cube_mesh():
    topo = build("dgx-v100:1")
    nvlinks = Counter()
    for (u, v), c in topo.capacity.items():
        nvlinks[u] += c / 25
        assert topo.capacity[(v, u)] == c  # symmetric
    assert set(nvlinks.values()) == {6}  # every V100 uses its 6 NVLink2 ports
    # Two fully connected quads plus GPU i <-> GPU i+4.
    for quad in ((0, 1, 2, 3), (4, 5, 6, 7)):
        for i in quad:
            for j in quad:
                assert i == j or (f"b0.gpu{i}", f"b0.gpu{j}") in topo.capacity
    for i in range(4):
        assert (f"b0.gpu{i}", f"b0.gpu{i + 4}") in topo.capacity
    assert ("b0.gpu0", "b0.gpu5") not in topo.capacity
    two = build("ndv2:2")
    box0 = [n for n in two.node_ids if n.startswith("b0.")]
    assert two.cut_bandwidth(box0) == Fraction(25, 2)  # one EDR NIC per box


def test_dgx_2():
    topo = build("dgx-2:2")
    assert topo.out_bandwidth("b1.gpu15") == 150 + 16
    assert topo.in_bandwidth("b0.nic3") == 16 + 16 + Fraction(25, 2)
    box0 = [n for n in topo.node_ids if n.startswith("b0.")]
    assert topo.cut_bandwidth(box0) == 8 * Fraction(25, 2)


@pytest.mark.parametrize("spec", ["dgx-a100:2", "dgx-h100:2", "dgx-v100:2", "dgx-2:2", "mi250:2"])
def test_box_models_set_groups(spec):
    topo = build(spec)
    groups = Counter(topo.node[c].group for c in topo.compute_nodes)
    per_box = topo.num_compute // 2
    assert groups == {"box0": per_box, "box1": per_box}


@pytest.mark.parametrize(
    "spec", ["dgx-a100:2", "dgx-h100:2", "dgx-v100:2", "dgx-2:2", "mi250:2", "star:3"]
)
def test_switches_have_equal_in_and_out_bandwidth(spec):
    topo = build(spec)
    for s in topo.switch_nodes:
        assert topo.in_bandwidth(s) == topo.out_bandwidth(s)


# --- generic families --------------------------------------------------------------------


def test_torus_neighbours_and_per_dimension_bandwidth():
    topo = build("torus:4x3x2,bw=100/50/25")
    assert topo.capacity[("n0_0_0", "n3_0_0")] == 100  # wrap-around
    assert topo.capacity[("n0_0_0", "n0_2_0")] == 50
    assert topo.capacity[("n0_0_0", "n0_0_1")] == 25  # size 2: a single link
    assert topo.out_bandwidth("n1_1_1") == 2 * 100 + 2 * 50 + 25
    assert torus((4, 4), bw=(100, 50)) == build("torus:4x4,bw=100/50")


def test_mesh_has_no_wrap_around():
    topo = build("mesh:4x4")
    assert ("n0_0", "n3_0") not in topo.capacity
    assert topo.out_bandwidth("n0_0") == 200 and topo.out_bandwidth("n1_1") == 400


def test_ring_directions():
    uni = build("ring:4,direction=uni")
    assert set(uni.capacity) == {("n0", "n1"), ("n1", "n2"), ("n2", "n3"), ("n3", "n0")}
    bi = build("ring:4")
    assert ("n1", "n0") in bi.capacity and bi.out_bandwidth("n0") == 200


def test_hypercube_links_differ_in_one_bit():
    topo = build("hypercube:3")
    for u, v in topo.capacity:
        assert bin(int(u[1:]) ^ int(v[1:])).count("1") == 1


def test_leaf_spine_oversubscription_is_host_over_uplink_bandwidth():
    for oversub in ("1", "2", "3/2", "4"):
        topo = build(f"leaf-spine:leaves=3,hosts=4,spines=2,oversub={oversub}")
        hosts = sum(topo.capacity[(f"l0.h{j}", "leaf0")] for j in range(4))
        uplinks = sum(topo.capacity[("leaf0", f"spine{s}")] for s in range(2))
        assert hosts / uplinks == Fraction(oversub)
        assert {topo.node[f"l1.h{j}"].group for j in range(4)} == {"leaf1"}


def test_leaf_spine_name_shows_the_exact_oversubscription():
    assert build("leaf-spine:leaves=2,hosts=2,spines=2,oversub=3/2").name.endswith("oversub=1.5")
    assert build("leaf-spine:leaves=2,hosts=2,spines=2,oversub=1/3").name.endswith("oversub=1/3")


# --- random --------------------------------------------------------------------------------


def test_random_is_deterministic_and_seed_dependent():
    assert build("random:n=8,switches=2,seed=1") == random_topology(8, switches=2, seed=1)
    assert build("random:n=8,switches=2,seed=1") != build("random:n=8,switches=2,seed=2")
    assert build("random:8").name == "random:n=8,switches=0,seed=0"


def test_random_has_asymmetric_heterogeneous_bandwidths():
    topo = build("random:n=8,seed=1,p=0.6")
    cap = topo.capacity
    assert any(cap.get((v, u)) != c for (u, v), c in cap.items())
    assert len(set(cap.values())) >= 3
    assert any(c.denominator != 1 for c in cap.values())


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    n=st.integers(2, 9),
    switches=st.integers(0, 4),
    seed=st.integers(0, 10**6),
    p=st.sampled_from(["0", "0.1", "0.3", "1"]),
)
def test_random_is_always_valid(n, switches, seed, p):
    # Topology() validates strong connectivity among compute nodes, so building is the check;
    # additionally every switch is reachable and balanced (in == out) for edge splitting.
    topo = build(f"random:n={n},switches={switches},seed={seed},p={p}")
    assert topo.num_compute == n and len(topo.switch_nodes) == switches
    assert nx.is_strongly_connected(topo.to_networkx())
    for s in topo.switch_nodes:
        assert topo.in_bandwidth(s) == topo.out_bandwidth(s)
    if p == "1":
        assert len(topo.capacity) == (n + switches) * (n + switches - 1)


# --- spec errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, message",
    [
        ("ring", "ring: missing parameter 'n'; usage: ring:N"),
        ("ring:1", r"ring:1: n: expected an integer >= 2, got 1"),
        ("ring:four", r"ring:four: n: expected an integer >= 2, got 'four'"),
        ("ring:4,bw=0", "ring:4,bw=0: bw: expected a positive number, got '0'"),
        ("ring:4,bw=-3", "bw: expected a positive number, got '-3'"),
        ("ring:4,bw=inf", "bw: expected a positive number such as 100, 12.5 or 3/2, got 'inf'"),
        ("ring:4,bw=nan", "bw: expected a positive number"),
        ("ring:4,speed=5", "unknown parameter 'speed'; valid parameters are n, bw, direction"),
        ("ring:4,direction=up", "direction: expected one of bi, uni, got 'up'"),
        ("ring:n=4,n=5", "parameter 'n' given twice"),
        ("ring:bw=5,4", "unexpected argument '4'"),
        ("ring:4,5", "unexpected argument '5'"),
        ("torus:4", r"dims: expected 2 or 3 dimensions"),
        ("torus:4x4x4x4", r"dims: expected 2 or 3 dimensions"),
        ("torus:4xa", r"dims: expected a shape such as 4x4 or 4x4x2, got '4xa'"),
        ("torus:1x1", "the shape '1x1' has fewer than 2 nodes"),
        ("torus:4x4,bw=1/2/3", "bw gives 3 bandwidths for 2 dimensions"),
        ("mesh:0x4", r"dims: expected 2 or 3 dimensions, each >= 1"),
        ("hypercube:0", "d: expected an integer >= 1, got 0"),
        ("leaf-spine:leaves=4,hosts=4", "missing parameter 'spines'"),
        ("leaf-spine:leaves=4,hosts=4,spines=2,oversub=0", "oversub: expected a positive number"),
        ("random:n=1", "n: expected an integer >= 2, got 1"),
        ("random:n=4,p=1.5", "p: expected a probability between 0 and 1, got '1.5'"),
        ("random:n=4,seed=x", "seed: expected an integer seed, got 'x'"),
        ("random:n=4,switches=-1", "switches: expected an integer >= 0, got -1"),
        (
            "dgx-a100:0",
            r"dgx-a100:0: boxes: expected an integer >= 1, got 0; usage: dgx-a100\[:BOXES\]",
        ),
        ("dgx-h100:two", "dgx-h100:two: boxes: expected an integer >= 1, got 'two'"),
        ("mi250:-1", "boxes: expected an integer >= 1, got -1"),
        ("mi250:1,2", "unexpected argument '2'"),
        ("ndv2:0", r"dgx-v100:0: boxes: .* \(ndv2 is an alias of dgx-v100\)"),
        (
            "tours:4x4",
            r"unknown topology 'tours:4x4': not a file and not a built-in family; built-ins are",
        ),
    ],
)
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(TopologySpecError, match=message):
        build(spec)


def test_large_models_build():
    # dgx-a100:128 stays cheap enough for interactive use (speed itself lives in benchmarks/).
    topo = build("dgx-a100:128")
    assert topo.num_compute == 1024 and len(topo.capacity) == 128 * 48
    assert build("dgx-h100:64").num_compute == 512


def test_python_api_checks_its_arguments_too():
    from optcoll.topologies.generic import ring

    with pytest.raises(
        TopologySpecError, match="ring: direction must be 'bi' or 'uni', got 'sideways'"
    ):
        ring(4, direction="sideways")
    with pytest.raises(TopologySpecError, match=r"torus: 3 bandwidths given for 2 dimensions"):
        torus((4, 4), bw=(1, 2, 3))
    with pytest.raises(TopologySpecError, match="leaf-spine: .* got leaves=2, hosts=2, spines=0"):
        leaf_spine(2, 2, 0)
    with pytest.raises(TopologySpecError, match="oversub=0"):
        leaf_spine(2, 2, 2, oversub=0)
