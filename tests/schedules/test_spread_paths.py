"""Least-loaded routing (``spread_paths``): as wide and as short as the widest paths,
spread evenly over a stage of spines and over a node's own links, unchanged where every
pair has one widest fewest-hop path, and the step schedules it routes run faster on a
leaf-spine."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import pytest

from optcoll.schedules.baselines.direct import two_shot_allreduce
from optcoll.schedules.baselines.rooted_steps import direct_broadcast
from optcoll.schedules.baselines.routing import spread_paths, widest_paths
from optcoll.sim.steps import route_steps, simulate_steps
from optcoll.topologies import build

LEAF_SPINE = "leaf-spine:leaves=4,hosts=8,spines=4"


def _width(topology, path):
    return min(topology.capacity[a] for a in zip(path, path[1:], strict=False))


@pytest.mark.parametrize(
    "spec",
    [
        LEAF_SPINE,
        "dgx-h100:2",
        "torus:4x4",
        "mesh:3x3",
        "rail-fat-tree:servers=4,gpus=4,per_leaf=2,spines=2",
    ],
)
def test_as_wide_and_as_short_as_the_widest(spec: str) -> None:
    topology = build(spec)
    for source in topology.compute_nodes[:5]:
        widest, spread = widest_paths(topology, source), spread_paths(topology, source)
        for target in topology.compute_nodes:
            if target == source:
                continue
            a, b = widest[target], spread[target]
            assert b[0] == source and b[-1] == target
            assert all(arc in topology.capacity for arc in zip(b, b[1:], strict=False))
            assert len(a) == len(b) and _width(topology, a) == _width(topology, b)


@pytest.mark.parametrize("spec", ["ring:5", "star:4", "line:4"])
def test_unchanged_where_every_pair_has_one_path(spec: str) -> None:
    topology = build(spec)
    for source in topology.compute_nodes:
        assert spread_paths(topology, source) == widest_paths(topology, source)


def test_deterministic() -> None:
    topology = build("torus:8x8")
    assert spread_paths(topology, "n3_5") == spread_paths(topology, "n3_5")


@pytest.mark.parametrize(("spec", "root", "ports"), [("torus:4x4", "n1_1", 4),
                                                    ("torus:8x8", "n3_5", 4),
                                                    ("hypercube:4", "n5", 4)])  # fmt: skip
def test_direct_broadcast_spread_over_the_roots_links(spec: str, root: str, ports: int) -> None:
    """The direct broadcast's messages, as route_steps routes them, leave the root evenly
    over its links: at most ceil((N - 1) / ports) a link (torus 4x4: 4 where the widest
    paths put 8 of 15 on one)."""
    topology = build(spec)
    routed = route_steps(topology, direct_broadcast(topology.compute_nodes, root))
    out = Counter(path[:2] for path in routed.paths.values())
    assert len(out) == ports
    assert max(out.values()) == math.ceil((topology.num_compute - 1) / ports)


def test_even_over_the_spines() -> None:
    """Every leaf sends as many host pairs' paths up each of its 4 spines (48 each), where
    the widest paths put all 192 on the first."""
    topology = build(LEAF_SPINE)
    hosts = topology.compute_nodes
    for pick in (spread_paths, widest_paths):
        up: Counter[tuple[str, str]] = Counter()
        for s in hosts:
            paths = pick(topology, s)
            for t in hosts:
                if len(paths.get(t, ())) == 5:  # host, leaf, spine, leaf, host
                    up[(paths[t][1], paths[t][2])] += 1
        counts = set(up.values())
        assert counts == ({48} if pick is spread_paths else {192})


def test_two_shot_on_a_leaf_spine_runs_faster() -> None:
    """Two-shot allreduce, 256 KiB, 1 µs overhead, 0.5 µs links: 21.688 µs with every
    message through the first spine (21.278 since messages leave once their sender holds
    what they carry), 11.407 µs spread over the four (measured)."""
    topology = build(LEAF_SPINE)
    schedule = two_shot_allreduce(topology.compute_nodes)
    routed = route_steps(topology, schedule)
    first = dict(routed.paths)
    for s, t in first:
        first[(s, t)] = widest_paths(topology, s)[t]
    times = [
        simulate_steps(
            topology,
            r,
            2**18,
            overhead=1.0,
            slice_bytes=None,
            default_latency=Fraction(1, 2),
        ).time_us
        for r in (routed, type(routed)(schedule, first, routed.time_factor, routed.step_factor))
    ]
    assert times[0] == pytest.approx(11.407, abs=1e-3)
    assert times[1] == pytest.approx(21.278, abs=1e-3)
