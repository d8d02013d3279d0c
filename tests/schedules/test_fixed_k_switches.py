"""Fixed k with switches: ``trees -k K`` works and is the best K-chunk schedule.

Rounding capacities down for a fixed K can leave a switch able to send more
than it receives (even a balanced one); the rounded capacities are then made
forwardable again before switch removal. Every schedule is checked by the
independent verifier, and on small topologies the fixed-k time factor equals
an exhaustive search over all K-chunk schedules of trees (paths through the
switch included).
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.io import save_topology
from optcoll.schedules.packing import pack_arborescences
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

KS = (1, 2, 4, 8)

#: Small instances of every built-in family (the random one with switches too).
FAMILIES = (
    "dgx-a100:1",
    "dgx-h100:1",
    "dgx-2:1",
    "dgx-v100:1",
    "mi250:1",
    "fully-connected:4",
    "hypercube:3",
    "leaf-spine:leaves=2,hosts=2,spines=2,oversub=2",
    "line:4",
    "mesh:2x3",
    "ring:5",
    "star:5",
    "torus:3x3",
    "random:n=6,switches=2,seed=3",
)


def _verified_k(topology: Topology, k: int) -> Fraction:
    schedule = pack_arborescences(topology, k=k)
    result = verify_schedule(topology, schedule)
    assert result.valid, result.reason
    assert schedule.k == k and result.time_factor == schedule.time_factor
    return schedule.time_factor


def issue_example() -> Topology:
    """The switch w has in = out = 5; rounding for k = 1 or 2 used to unbalance it."""
    builder = TopologyBuilder("balanced-switch")
    for v in ("g0", "g1", "g2"):
        builder.compute(v)
    builder.switch("w")
    for u, v, c in (("g0", "w", 1), ("g1", "w", 2), ("g2", "w", 2), ("w", "g0", 5)):
        builder.link(u, v, c)
    builder.link("g1", "g2", 3)
    builder.link("g0", "g1", 3)
    return builder.build()


@pytest.mark.parametrize("k", KS)
def test_the_issue_example_on_the_command_line(k, tmp_path, capsys):
    path = tmp_path / "balanced-switch.json"
    save_topology(issue_example(), path)
    assert main(["trees", str(path), "-k", str(k), "-o", str(tmp_path / "s.json")]) == 0
    assert main(["verify", str(path), str(tmp_path / "s.json")]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("k", (1, 2))
def test_the_issue_example_is_the_best_k_chunk_schedule(k):
    topology = issue_example()
    assert _verified_k(topology, k) == _exhaustive_k(topology, k)


@pytest.mark.slow
@pytest.mark.parametrize("spec", FAMILIES)
def test_every_family_for_k_1_2_4_8(spec):
    topology = build(spec)
    for k in KS:
        assert _verified_k(topology, k) >= pack_arborescences(topology).time_factor


def random_switch_topology(seed: int) -> Topology:
    """3 GPUs on one switch with random bandwidths, and some random GPU-GPU links."""
    rng = random.Random(seed)
    builder = TopologyBuilder(f"random-switch-{seed}")
    gpus = ["g0", "g1", "g2"]
    for v in gpus:
        builder.compute(v)
    builder.switch("w")
    for v in gpus:
        builder.link(v, "w", rng.choice([1, 2, 3, 5]))
        builder.link("w", v, rng.choice([1, 2, 3, 5]))
        for u in gpus:
            if u != v and rng.random() < 0.4:
                builder.link(v, u, rng.choice([1, 2, 3, 5, 7]))
    return builder.build()


@pytest.mark.slow
def test_generated_switch_topologies():
    above_optimum = 0
    for seed in range(30):
        topology = random_switch_topology(seed)
        r_star = optimal_cut_ratio(topology).ratio
        for k in KS:
            factor = _verified_k(topology, k)
            if k <= 2:
                assert factor == _exhaustive_k(topology, k), (seed, k)
                above_optimum += factor > r_star
    # the search is not trivial: 7 of these 60 cases cannot reach r* with K chunks
    assert above_optimum == 7


def _exhaustive_k(topology: Topology, k: int) -> Fraction:
    """The best time factor over every schedule with ``k`` chunks per root.

    A chunk goes down a spanning tree of the compute nodes whose every edge
    ``u -> v`` is a direct link or the path ``u -> s -> v`` through a switch
    ``s``; each root picks a multiset of ``k`` such trees; the time factor is
    ``max_a load(a) / (k c(a))``. Exhaustive over all choices (tiny topologies).
    """
    compute = topology.compute_nodes
    arcs = list(topology.capacity)
    position = {arc: i for i, arc in enumerate(arcs)}
    routes: dict[tuple[str, str], list[list[int]]] = {}
    for u, v in itertools.permutations(compute, 2):
        options = [[position[(u, v)]]] if (u, v) in position else []
        options += [
            [position[(u, s)], position[(s, v)]]
            for s in topology.switch_nodes
            if (u, s) in position and (s, v) in position
        ]
        routes[(u, v)] = options
    per_root = []
    for root in compute:
        trees = set()
        for parents in itertools.product(compute, repeat=len(compute)):
            edges = [(p, v) for p, v in zip(parents, compute, strict=True) if v != root]
            if any(p == v for p, v in edges) or not _spans(root, edges, compute):
                continue
            for choice in itertools.product(*(routes[e] for e in edges)):
                usage = np.zeros(len(arcs), dtype=np.int64)
                for path in choice:
                    usage[path] += 1
                trees.add(tuple(usage))
        loads = {
            tuple(np.sum(combo, axis=0))
            for combo in itertools.combinations_with_replacement(sorted(trees), k)
        }
        per_root.append(np.array(sorted(loads), dtype=np.int64))
    caps = [topology.capacity[a] for a in arcs]
    scale = math.lcm(*(c.denominator for c in caps))
    common = math.lcm(*(int(c * scale) for c in caps))
    weights = np.array([common // int(c * scale) for c in caps], dtype=np.int64)
    total = per_root[0]
    for loads in per_root[1:]:
        total = (total[:, None, :] + loads[None, :, :]).reshape(-1, len(arcs))
    best = int(np.min(np.max(total * weights, axis=1)))
    return Fraction(best * scale, common * k)


def _spans(root: str, edges: list[tuple[str, str]], nodes: tuple[str, ...]) -> bool:
    children: dict[str, list[str]] = {}
    for p, v in edges:
        children.setdefault(p, []).append(v)
    seen, stack = {root}, [root]
    while stack:
        for v in children.get(stack.pop(), []):
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return len(seen) == len(nodes)


@pytest.mark.slow
def test_random_family_with_switches_for_k_1_2_4_8():
    verified = 0
    for n in (4, 6, 8):
        for switches in (1, 2, 3):
            for seed in range(5):
                topology = build(f"random:n={n},switches={switches},seed={seed}")
                for k in KS:
                    _verified_k(topology, k)
                    verified += 1
    assert verified == 180
