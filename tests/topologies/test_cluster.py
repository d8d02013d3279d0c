"""Clusters composed from server templates: the one-line spec, heterogeneity, exact r*."""

from fractions import Fraction

import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.exceptions import TopologySpecError
from optcoll.schedules.packing import pack_arborescences
from optcoll.topologies import build
from optcoll.topologies.cluster import Server, cluster
from optcoll.verify.schedule import verify_schedule

NEWCOMER = (
    "cluster:servers=4x4,box=fc,box_bw=100,nic_bw=25,fabric=leaf-spine,per_leaf=2,spines=2,"
    "oversub=2"
)


def test_the_newcomers_cluster_is_one_line():
    # servers of 4 fully connected GPUs, NICs into a 2:1 leaf-spine
    t = build(NEWCOMER)
    assert t.num_compute == 16
    assert t.capacity[("b0.gpu0", "b0.gpu3")] == 100
    assert t.capacity[("b3.nic2", "leaf1")] == 25
    # a leaf takes 2 servers x 4 NICs x 25 GB/s = 200; 2:1 over 2 spines: 50 per link
    assert t.capacity[("leaf1", "spine1")] == 50
    ratio = optimal_cut_ratio(t)
    # the bottleneck is a server's NICs: the 12 other GPUs behind 4 x 25 GB/s (a leaf,
    # 8 GPUs behind 2 x 50 GB/s of uplinks, is less tight)
    assert ratio.ratio == Fraction(12, 100)
    assert ratio.cut_compute == 12
    assert optimal_cut_ratio(t, method="lp").ratio == ratio.ratio


def test_python_builder_equals_the_spec():
    spec = build(NEWCOMER)
    built = cluster(
        [Server(4, "fc", 100, 25)] * 4, "leaf-spine", per_leaf=2, spines=2, oversub=2, name="x"
    )
    assert built.capacity == spec.capacity


@pytest.mark.parametrize(
    "spec",
    [
        "cluster:servers=1x4+2x3,box=switch+ring,box_bw=200+50,nic_bw=50+10,fabric=rails,"
        "per_leaf=2,spines=1",
        "cluster:servers=2x3,box=ring,box_bw=40,nic_bw=10,fabric=star",
        "cluster:servers=3x2,box=fc,box_bw=30,nic_bw=10,fabric=leaf-spine,per_leaf=2,spines=2,"
        "lat=0.1/1/2",
    ],
)
def test_heterogeneous_clusters_exact_and_verified(spec):
    t = build(spec)
    assert build(t.name).capacity == t.capacity
    ratio = optimal_cut_ratio(t)
    assert optimal_cut_ratio(t, method="lp").ratio == ratio.ratio
    schedule = pack_arborescences(t)
    verdict = verify_schedule(t, schedule, optimum=ratio.ratio, require_optimal=True)
    assert verdict.valid


def test_rail_fat_tree_is_the_rails_fabric():
    rails = build("rail-fat-tree:servers=4,gpus=2,per_leaf=2,spines=2,oversub=2")
    composed = build(
        "cluster:servers=4x2,box=switch,box_bw=450,nic_bw=50,fabric=rails,per_leaf=2,spines=2,"
        "oversub=2"
    )
    assert rails.capacity == composed.capacity


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("cluster:servers=2x4+1x8,box_bw=1+2+3", "3 values for 2 server templates"),
        ("cluster:servers=4", "COUNTxGPUS"),
        ("cluster:servers=2x4,fabric=torus", "fabric"),
        ("cluster:servers=2x2,box=ring", "a ring at least 3"),
        ("cluster:box=fc", "missing parameter 'servers'"),
    ],
)
def test_bad_cluster_specs(spec, words):
    with pytest.raises(TopologySpecError) as caught:
        build(spec)
    assert words in str(caught.value)
