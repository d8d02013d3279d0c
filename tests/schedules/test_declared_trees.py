"""Optimal trees of one root per orbit of a family's declared symmetry, on the physical
links: the time factor equals r* exactly (r* itself checked against the LP), the full walk
over every image agrees with the compact verdict, and a greedy that cannot finish gives
way to the ordinary packing."""

from fractions import Fraction

import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.schedule import ImageTrees
from optcoll.exceptions import ArgumentError
from optcoll.graph.family_symmetry import declared_group
from optcoll.graph.symmetry import is_automorphism
from optcoll.schedules import packing
from optcoll.schedules.declared_trees import declared_trees, hop_eccentricity, link_orbits
from optcoll.schedules.packing import pack_arborescences
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

#: spec -> exact r* (checked against the LP below)
DECLARED = {
    "dgx-h100:5": Fraction(2, 25),  # 4 boxes behind the 8 x 50 GB/s NIC links of the fifth
    "dgx-h100:8": Fraction(7, 50),
    "torus:4x4": Fraction(3, 80),
    "hyperx:3x3,t=2": Fraction(17, 100),
    "dragonfly:a=2,p=2,h=1": Fraction(11, 100),  # one host's 100 GB/s link, 4 orbits of hosts
    "rail-fat-tree:servers=8,gpus=4,per_leaf=2,spines=2": Fraction(7, 50),
    "dgx-2:3": Fraction(8, 25),
}


@pytest.fixture
def declared_from_any_size(monkeypatch):
    monkeypatch.setattr(packing, "DECLARED_FROM", 1)


@pytest.mark.parametrize("spec", sorted(DECLARED))
def test_declared_trees_reach_r_star_and_verify_in_full(declared_from_any_size, spec):
    pytest.importorskip("highspy")
    topology = build(spec)
    assert optimal_cut_ratio(topology, "lp").ratio == DECLARED[spec]
    schedule = pack_arborescences(topology)
    assert isinstance(schedule.trees, ImageTrees)
    assert schedule.stats["packed_roots"] == len(declared_group(topology).representatives)
    assert schedule.time_factor == schedule.cut_ratio == DECLARED[spec]
    compact = verify_schedule(topology, schedule, require_optimal=True)
    full = verify_schedule(topology, schedule, require_optimal=True, method="full")
    assert compact.method == "compact" and full.method == "full"
    assert compact.valid and full.valid
    assert compact.time_factor == full.time_factor == DECLARED[spec]
    assert len(schedule.trees) == declared_group(topology).order * len(
        schedule.trees.representatives
    )


def test_dgx_h100_tree_enters_every_box_once_on_the_roots_rail(declared_from_any_size):
    topology = build("dgx-h100:8")
    (tree,) = pack_arborescences(topology).trees.representatives
    crossings = [e.path for e in tree.edges if len(e.path) == 5]
    assert [p[2] for p in crossings] == ["rail0"] * 7  # 7 other boxes, one NIC path each
    assert sum(len(e.path) == 3 for e in tree.edges) == 7 * 8  # the rest inside boxes
    assert hop_eccentricity(topology, tree.root) == 2


def test_declared_group_of_dgx_h100():
    topology = build("dgx-h100:4")
    group = declared_group(topology)
    assert group.orders == (4, 8) and group.order == 32
    assert group.representatives == ("b0.gpu0",)
    kinds = {n.id: (n.type, n.reduce, n.multicast) for n in topology.nodes}
    assert all(is_automorphism(topology.capacity, kinds, g) for g in group.generators)


def test_link_orbits_of_dgx_h100_are_the_six_link_classes():
    topology = build("dgx-h100:4")
    _, orbit, size = link_orbits(topology, declared_group(topology).generators)
    assert len(size) == 6 and set(size) == {32}
    assert len(orbit) == len(topology.capacity) == 6 * 32


def test_a_greedy_that_cannot_finish_gives_way_to_the_ordinary_packing(declared_from_any_size):
    topology = build("dgx-h100:4")  # the single-GPU cut binds: k = 10, budgets exactly tight
    bound = optimal_cut_ratio(topology)
    caps, unit = topology.integer_capacities()
    scaled = bound.ratio * unit
    capacity = {e: scaled.numerator * c for e, c in caps.items()}
    assert declared_trees(topology, capacity, scaled.denominator, declared_group(topology)) is None
    schedule = pack_arborescences(topology)
    assert schedule.time_factor == bound.ratio == Fraction(31, 500)
    assert schedule.stats["logical_arcs"] is not None  # packed on the split graph


def test_without_declared_symmetry_a_topology_above_the_limits_is_refused(monkeypatch):
    monkeypatch.setattr(packing, "MAX_NODES", 3)
    with pytest.raises(ArgumentError, match="declared symmetry"):
        pack_arborescences(build("ring:4"))
