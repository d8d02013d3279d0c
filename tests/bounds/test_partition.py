"""The partition bound: the issue's exact figures, brute force over every partition on
small random topologies, and soundness against schedules that exist (RS+AG, allgather)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import random_topologies
from hypothesis import given, settings

from optcoll.bounds.partition import (
    brute_force_partition_bound,
    evaluate_partition,
    partition_bound,
)
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ArgumentError
from optcoll.schedules.collectives import collective_lower_bound
from optcoll.topologies import build


def test_torus_single_nodes_give_the_issue_figure():
    torus = build("torus:8x8")
    single = evaluate_partition(torus, [[v] for v in torus.node_ids])
    assert single.capacity == 25600
    assert single.time_factor == Fraction(2 * 63, 25600)
    assert round(single.time_us(2**30), 1) == 5284.8
    best = partition_bound(torus)
    assert best.exact and best.time_factor == single.time_factor
    # reduce-scatter + allgather attains it: optimal among every allreduce where only GPUs reduce
    assert collective_lower_bound(torus, "allreduce") / 64 == best.time_factor


def test_dgx_h100_boxes_and_single_gpus():
    dgx = build("dgx-h100:4")
    boxes = [[v for v in dgx.node_ids if v.startswith(f"b{i}.")] for i in range(4)]
    rails = [v for v in dgx.node_ids if v.startswith("rail")]
    box = evaluate_partition(dgx, [*boxes, rails])
    assert (box.compute_parts, box.crossings, box.capacity) == (4, 2, 3200)
    assert box.time_factor == Fraction(30, 8000)
    best = partition_bound(dgx)
    assert best.time_factor == Fraction(31, 8000) == collective_lower_bound(dgx, "allreduce") / 32


def test_mesh_strength_is_160():
    mesh = build("mesh:4x4")
    best = partition_bound(mesh)
    assert best.exact and best.time_factor == Fraction(1, 160)
    assert best.capacity / 2 / (best.compute_parts - 1) == 160  # tau = 2,400 / 15
    assert collective_lower_bound(mesh, "allreduce") / 16 == Fraction(1, 160) * Fraction(3, 2)


@settings(max_examples=40, deadline=None)
@given(random_topologies(max_compute=6, max_switches=0))
def test_strength_partition_is_the_best_of_all_without_switches(topology):
    for collective in ("allreduce", "allgather"):
        best = partition_bound(topology, collective)
        assert best.time_factor == brute_force_partition_bound(topology, collective).time_factor


@settings(max_examples=40, deadline=None)
@given(random_topologies(max_compute=4, max_switches=3))
def test_switch_partitions_are_valid_and_below_brute_force(topology):
    best = partition_bound(topology)
    again = evaluate_partition(topology, best.parts)
    assert again.time_factor == best.time_factor
    assert best.time_factor <= brute_force_partition_bound(topology).time_factor


@settings(max_examples=40, deadline=None)
@given(random_topologies(max_compute=5, max_switches=2))
def test_never_above_schedules_that_exist(topology):
    """RS+AG is an allreduce where only compute nodes reduce; optcoll's allgather and
    reduce-scatter are attained: no partition may bound them higher."""
    n = topology.num_compute
    rs_ag = collective_lower_bound(topology, "allreduce") / n
    assert brute_force_partition_bound(topology).time_factor <= rs_ag
    for collective in ("allgather", "reduce_scatter"):
        attained = collective_lower_bound(topology, collective) / n
        assert partition_bound(topology, collective).time_factor <= attained


def _pair_behind(switch: Node) -> Topology:
    nodes = [Node("a"), Node("b"), switch]
    links = [Link("a", "s", 1, bidirectional=True), Link("b", "s", 1, bidirectional=True)]
    return Topology("pair", nodes, links)


def test_bad_partitions_are_refused_by_name():
    t = _pair_behind(Node("s", "switch"))
    with pytest.raises(ArgumentError, match="'a' is in parts 0 and 1"):
        evaluate_partition(t, [["a"], ["a", "b"], ["s"]])
    with pytest.raises(ArgumentError, match="'s' is in no part"):
        evaluate_partition(t, [["a"], ["b"]])
    with pytest.raises(ArgumentError, match="unknown node 'x'"):
        evaluate_partition(t, [["a"], ["b"], ["s", "x"]])
    with pytest.raises(ArgumentError, match="two parts with compute nodes"):
        evaluate_partition(t, [["a", "b"], ["s"]])
    with pytest.raises(ArgumentError, match="not collective 'broadcast'"):
        evaluate_partition(t, [["a"], ["b"], ["s"]], "broadcast")
    assert evaluate_partition(t, [["a"], ["b"], ["s"]]).time_factor == Fraction(2 * 2, 4)


def test_a_reducing_switch_must_sit_in_a_compute_part():
    t = _pair_behind(Node("s", "switch", reduce=True))
    with pytest.raises(ArgumentError, match="switch 's' reduces"):
        evaluate_partition(t, [["a"], ["b"], ["s"]])
    best = partition_bound(t)
    assert best.crossings == 1 and best.time_factor == Fraction(2, 2)
