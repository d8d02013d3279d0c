"""The declared-symmetry greedy (:mod:`optcoll.schedules.declared_trees`) on dragonflies
with several hosts per router, where it failed while it took links in their order: it
now completes at r*, and the trees with their images verify."""

from __future__ import annotations

import pytest

import optcoll.schedules.packing as packing
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.schedule import ImageTrees
from optcoll.graph.family_symmetry import declared_group
from optcoll.schedules.declared_trees import declared_trees
from optcoll.schedules.packing import chunk_capacities, pack_arborescences
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule


@pytest.mark.parametrize(
    ("spec", "ratio", "roots"),
    [("dragonfly:a=4,p=4,h=2,g=9", "143/100", 4), ("dragonfly:a=4,p=2,h=2,g=9", "71/100", 4)],
)
def test_the_greedy_completes_at_r_star(spec, ratio, roots, monkeypatch):
    topology = build(spec)
    bound = optimal_cut_ratio(topology)
    assert str(bound.ratio) == ratio
    optimal = chunk_capacities(topology, None, bound=bound)
    group = declared_group(bound.usable)
    assert group is not None and len(group.representatives) == roots
    trees = declared_trees(bound.usable, optimal.capacity, optimal.chunks, group)
    assert trees is not None
    assert {t.root for t in trees} == set(group.representatives)
    monkeypatch.setattr(packing, "DECLARED_FROM", 1)  # the declared path from any size
    schedule = pack_arborescences(topology)
    assert isinstance(schedule.trees, ImageTrees)
    assert schedule.stats["packed_roots"] == roots
    assert schedule.time_factor == bound.ratio
    checked = verify_schedule(topology, schedule)
    assert checked.valid and checked.time_factor == bound.ratio
