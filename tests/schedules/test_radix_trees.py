"""The mixed-radix trees of a declared group (:mod:`optcoll.schedules.radix_trees`): at r*
on the dragonflies where the greedy of :mod:`optcoll.schedules.declared_trees` left the
sends per orbit of hosts unbalanced (the smallest found: 80 hosts), and on hypercubes,
where one order of the dimensions is not enough; every schedule verified independently."""

from __future__ import annotations

from collections import Counter

import pytest

import optcoll.schedules.packing as packing
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.schedule import ImageTrees
from optcoll.graph.family_symmetry import declared_group
from optcoll.schedules.packing import chunk_capacities, pack_arborescences
from optcoll.schedules.radix_trees import radix_trees
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule


def _orbit_of(group) -> dict[str, int]:
    """Compute node -> number of its orbit (the representative's index)."""
    number: dict[str, int] = {}
    for i, rho in enumerate(group.representatives):
        orbit = [rho]
        number[rho] = i
        for x in orbit:
            for g in group.generators:
                y = g.get(x, x)
                if y not in number:
                    number[y] = i
                    orbit.append(y)
    return number


@pytest.mark.parametrize(
    ("spec", "ratio", "roots", "height"),
    [
        ("dragonfly:a=4,p=4,h=2,g=5", "79/100", 4, 3),
        ("dragonfly:a=8,p=8,h=4,g=16", "1023/100", 8, 3),
        ("dragonfly:a=4,p=2,h=2,g=9", "71/100", 4, 3),
    ],
)
def test_dragonflies_reach_r_star_with_every_orbit_balanced(
    spec, ratio, roots, height, monkeypatch
):
    topology = build(spec)
    bound = optimal_cut_ratio(topology)
    assert str(bound.ratio) == ratio
    optimal = chunk_capacities(topology, None, bound=bound)
    group = declared_group(bound.usable)
    assert group is not None and len(group.representatives) == roots
    trees = radix_trees(bound.usable, optimal.capacity, optimal.chunks, group)
    assert trees is not None
    n = topology.num_compute
    assert all(len(t.edges) == n - 1 for t in trees)
    # a host's one link is full both ways at r*: every orbit sends as much as it receives,
    # k (N - 1) chunks over the representatives' trees
    orbit = _orbit_of(group)
    sends, entries = Counter(), Counter()
    for t in trees:
        for e in t.edges:
            sends[orbit[e.src]] += t.chunks
            entries[orbit[e.dst]] += t.chunks
    assert set(sends.values()) == set(entries.values()) == {optimal.chunks * (n - 1)}
    monkeypatch.setattr(packing, "DECLARED_FROM", 1)  # the declared path from any size
    schedule = pack_arborescences(topology)
    assert isinstance(schedule.trees, ImageTrees)
    assert schedule.stats["packed_roots"] == roots
    assert schedule.stats["max_height"] == height  # own orbit: 2 levels; others: 1 + 2
    assert schedule.time_factor == bound.ratio
    checked = verify_schedule(topology, schedule)
    assert checked.valid and checked.time_factor == bound.ratio


@pytest.mark.parametrize("d", [3, 4, 5])
def test_hypercubes_share_the_chunks_over_the_cyclic_orders(d, monkeypatch):
    topology = build(f"hypercube:{d}")
    bound = optimal_cut_ratio(topology)
    optimal = chunk_capacities(topology, None, bound=bound)
    group = declared_group(bound.usable)
    assert optimal.chunks == d and group is not None and group.orders == (2,) * d
    trees = radix_trees(bound.usable, optimal.capacity, optimal.chunks, group)
    assert trees is not None and [t.chunks for t in trees] == [1] * d
    # binomial trees whose first dimensions differ: each dimension 2^d - 1 times in all
    dimension = Counter()
    for t in trees:
        for e in t.edges:
            a, b = int(e.src[1:]), int(e.dst[1:])
            dimension[(a ^ b).bit_length()] += 1
    assert dimension == {i + 1: 2**d - 1 for i in range(d)}
    monkeypatch.setattr(packing, "DECLARED_FROM", 1)
    schedule = pack_arborescences(topology)
    assert isinstance(schedule.trees, ImageTrees)
    assert schedule.time_factor == bound.ratio and schedule.stats["max_height"] == d
    checked = verify_schedule(topology, schedule)
    assert checked.valid and checked.time_factor == bound.ratio


def test_no_path_through_switches_only_gives_none():
    # a torus's translations by 2 have no path without a compute node on it
    topology = build("torus:4x4")
    bound = optimal_cut_ratio(topology)
    optimal = chunk_capacities(topology, None, bound=bound)
    group = declared_group(bound.usable)
    assert group is not None
    assert radix_trees(bound.usable, optimal.capacity, optimal.chunks, group) is None


def test_oversubscribed_rail_fat_tree_reaches_r_star(monkeypatch):
    # the greedy left no room for the last trees here (and the splitting ran)
    topology = build("rail-fat-tree:servers=16,gpus=8,per_leaf=4,spines=2,oversub=2")
    monkeypatch.setattr(packing, "DECLARED_FROM", 1)
    schedule = pack_arborescences(topology)
    assert isinstance(schedule.trees, ImageTrees)
    assert schedule.stats["max_height"] == 3  # one level per generator of the group
    assert schedule.time_factor == optimal_cut_ratio(topology).ratio
    checked = verify_schedule(topology, schedule, method="full")
    assert checked.valid and checked.time_factor == schedule.cut_ratio
