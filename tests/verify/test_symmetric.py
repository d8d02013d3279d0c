"""Compact verification (optcoll.verify.symmetric) against the full walk, and tampering."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from optcoll.core.schedule import ImageTrees, Rotation, Rotations, Schedule, Tree, TreeEdge
from optcoll.exceptions import ArgumentError
from optcoll.schedules.packing import pack_arborescences
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

SPECS = ["torus:4x4", "torus:3x4", "mesh:4x4", "torus:2x2x3", "hypercube:3", "dgx-a100:2"]


def _packed(spec: str) -> tuple[object, Schedule]:
    topology = build(spec)
    schedule = pack_arborescences(topology)
    assert isinstance(schedule.trees, ImageTrees), spec
    return topology, schedule


def _with(schedule: Schedule, representatives=None, group=None) -> Schedule:
    trees = schedule.trees
    assert isinstance(trees, ImageTrees)
    return replace(
        schedule,
        trees=ImageTrees(
            trees.representatives if representatives is None else representatives,
            trees.group if group is None else group,
            schedule.compute_nodes,
        ),
    )


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce"])
def test_compact_and_full_agree(spec, collective):
    topology, schedule = _packed(spec)
    schedule = replace(schedule, collective=collective, time_factor=None)
    compact = verify_schedule(topology, schedule)
    assert compact.method == "compact" and not schedule.trees.expanded
    full = verify_schedule(topology, schedule, method="full")
    assert full.method == "full" and schedule.trees.expanded
    assert compact.valid and full.valid
    assert compact.time_factor == full.time_factor
    assert compact.link_loads == full.link_loads
    assert compact.bottleneck_links == full.bottleneck_links
    phases = 2 if collective == "allreduce" else 1
    assert compact.time_factor == phases * schedule.cut_ratio


@pytest.mark.parametrize("spec", ["torus:4x4", "dgx-a100:2"])
def test_file_stays_compact_and_verifies(spec):
    topology, schedule = _packed(spec)
    data = schedule.to_dict()
    assert len(data["trees"]) == len(schedule.trees.representatives)
    loaded = Schedule.from_dict(data)
    assert isinstance(loaded.trees, ImageTrees) and not loaded.trees.expanded
    verdict = verify_schedule(topology, loaded, optimum=schedule.cut_ratio, require_optimal=True)
    assert verdict.valid and verdict.method == "compact" and not loaded.trees.expanded
    assert verdict.time_factor == schedule.cut_ratio
    assert loaded == schedule  # expands both and compares tree by tree


def test_non_automorphism_is_caught():
    topology, schedule = _packed("torus:4x4")
    cycle = ["n0_0", "n1_1", "n2_2", "n3_3"]  # order 4, but no translation
    bent = Rotation(4, {a: b for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True)})
    group = Rotations((bent, schedule.trees.group.generators[1]))
    tampered = _with(schedule, group=group)
    compact = verify_schedule(topology, tampered, method="compact")
    assert not compact.valid and "which is not a link" in compact.reason
    assert not verify_schedule(topology, tampered).valid  # auto: the full walk decides


def test_wrong_capacity_is_caught_and_auto_falls_back():
    topology, schedule = _packed("torus:4x4")
    u, v = next(iter(topology.capacity))

    def one_link(link):
        return (link.src, link.dst) in ((u, v), (v, u))

    wider = topology.scale_links(one_link, 2)
    compact = verify_schedule(wider, schedule, method="compact")
    assert not compact.valid and "capacity" in compact.reason
    # The trees themselves still fit the wider link at the same time factor.
    auto = verify_schedule(wider, schedule)
    assert auto.valid and auto.method == "full" and auto.time_factor == schedule.time_factor
    narrower = topology.scale_links(one_link, Fraction(1, 2))
    assert not verify_schedule(narrower, schedule).valid


def test_non_free_action_is_caught():
    topology, schedule = _packed("torus:4x4")
    generators = schedule.trees.group.generators
    assert schedule.trees.group.order == 16 and len(generators) > 1
    twice = Rotations((*generators[:-1], generators[0]))  # 16 terms, fewer elements
    tampered = _with(schedule, group=twice)
    compact = verify_schedule(topology, tampered, method="compact")
    assert not compact.valid and "does not act freely" in compact.reason
    auto = verify_schedule(topology, tampered)
    assert not auto.valid and auto.method == "full"


def test_non_commuting_generators_are_caught():
    topology, schedule = _packed("torus:4x4")
    shift = Rotation(4, {f"n{i}_{j}": f"n{(i + 1) % 4}_{j}" for i in range(4) for j in range(4)})
    mirror = Rotation(2, {f"n{i}_{j}": f"n{-i % 4}_{j}" for i in (1, 3) for j in range(4)})
    tampered = _with(schedule, group=Rotations((shift, mirror)))
    reason = verify_schedule(topology, tampered, method="compact").reason
    assert reason is not None and "do not commute" in reason


def test_representatives_sharing_an_orbit_are_caught():
    topology, schedule = _packed("torus:4x4")
    trees = schedule.trees
    (root,) = {t.root for t in trees.representatives}  # one orbit: one representative root
    other = tuple(t for t in trees if t.root == trees[-1].root)  # another root's trees
    assert trees[-1].root != root
    tampered = _with(schedule, representatives=trees.representatives + other)
    reason = verify_schedule(topology, tampered, method="compact").reason
    assert reason is not None and "not the 16 compute nodes" in reason


def test_tampered_representative_tree_is_caught():
    topology, schedule = _packed("torus:4x4")
    first, *rest = schedule.trees.representatives
    cut = Tree(first.root, first.chunks, first.edges[:-1])
    tampered = _with(schedule, representatives=(cut, *rest))
    for method in ("auto", "full"):
        verdict = verify_schedule(topology, tampered, method=method)
        assert not verdict.valid and "is not spanned" in verdict.reason


def test_tampered_loads_agree_with_the_full_walk():
    """One more chunk on one representative tree (k + 1): still valid, but its loads,
    summed over the group, are no longer uniform; compact and full loads must match."""
    topology, schedule = _packed("torus:4x4")
    first, *rest = schedule.trees.representatives
    heavier = Tree(first.root, first.chunks + 1, first.edges)
    tampered = _with(schedule, representatives=(heavier, *rest))
    tampered = replace(tampered, k=schedule.k + 1, time_factor=None)
    compact = verify_schedule(topology, tampered)
    full = verify_schedule(topology, tampered, method="full")
    assert compact.method == "compact" and compact.valid and full.valid
    assert compact.time_factor == full.time_factor != schedule.time_factor
    assert compact.link_loads == full.link_loads
    assert compact.bottleneck_links == full.bottleneck_links


def test_compact_method_needs_a_compact_schedule():
    topology = build("ring:3")
    tree = Tree("n0", 1, (TreeEdge("n0", "n1", ("n0", "n1")), TreeEdge("n1", "n2", ("n1", "n2"))))
    schedule = Schedule("allgather", "ring:3", topology.compute_nodes, 1, (tree,))
    with pytest.raises(ArgumentError, match="compact schedule"):
        verify_schedule(topology, schedule, method="compact")
    assert verify_schedule(topology, schedule, method="full").reason == (
        "root 'n1': the chunks of its trees sum to 0, expected k = 1"
    )


def test_fraction_claims_checked_compactly():
    topology, schedule = _packed("torus:3x4")
    wrong = replace(schedule, time_factor=schedule.time_factor / 2)
    compact = verify_schedule(topology, wrong)
    full = verify_schedule(topology, wrong, method="full")
    assert compact.method == "compact" and not compact.valid
    assert compact.reason == full.reason
    assert compact.time_factor == full.time_factor == schedule.time_factor
    assert isinstance(compact.time_factor, Fraction)


def test_false_stats_are_caught_compactly_as_in_full():
    topology, schedule = _packed("torus:4x4")
    for name, value in (("max_height", 99), ("total_sends", 1), ("trees", 2)):
        wrong = replace(schedule, stats={**schedule.stats, name: value})
        compact = verify_schedule(topology, wrong)
        full = verify_schedule(topology, wrong, method="full")
        assert compact.method == "compact" and not compact.valid
        assert compact.reason == full.reason and f"stats.{name}" in compact.reason
    honest = verify_schedule(topology, schedule)
    assert (
        honest.valid
        and honest.unchecked == verify_schedule(topology, schedule, method="full").unchecked
    )
