"""Root symmetry: one tree family per orbit of roots, mapped by a cyclic group; always sound,
used only when exactly optimal, checked by the independent verifier."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.core.schedule import Schedule
from optcoll.exceptions import ScheduleError
from optcoll.graph.splitting import LogicalGraph, split_switches
from optcoll.graph.symmetry import RootSymmetry, preserves_capacity, root_symmetry
from optcoll.schedules.packing import (
    chunk_capacities,
    expand_packing,
    pack_arborescences,
    pack_layered,
    pack_symmetric,
)
from optcoll.schedules.tree_shape import shorten_trees, tree_heights
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule


def logical_graph(spec):
    topology = build(spec)
    bound = optimal_cut_ratio(topology)
    set_up = chunk_capacities(topology, bound=bound)
    k, capacity = set_up.chunks, set_up.capacity
    roots = dict.fromkeys(topology.compute_nodes, k)
    logical = split_switches(bound.usable, capacity, roots, k * topology.num_compute)
    return topology, logical, roots


@pytest.mark.parametrize(
    ("spec", "order", "representatives"),
    [("dgx-a100:16", 64, 2), ("dgx-h100:16", 16, 8), ("ring:6", 6, 1)],
)
def test_group_rotations_that_preserve_the_logical_graph_are_found(spec, order, representatives):
    topology, logical, _ = logical_graph(spec)
    groups = {v: topology.node[v].group for v in topology.compute_nodes}
    symmetry = root_symmetry(logical, groups)
    assert (symmetry.order, len(symmetry.representatives)) == (order, representatives)
    names = logical.compute_nodes
    rho = {names[v]: names[symmetry.image(1, v)] for v in range(len(names))}
    assert preserves_capacity(logical.capacity, rho)
    assert symmetry.image(order, 5) == 5 and symmetry.image(1, 5) != 5


def test_a_permutation_with_fixed_points_generates_no_symmetry():
    assert RootSymmetry.generated_by([1, 2, 0, 3]) is None  # cycles of length 3 and 1
    assert RootSymmetry.generated_by([0, 1]) is None  # the identity


@pytest.mark.parametrize("spec", ["dgx-a100:16", "dgx-h100:16"])
def test_symmetric_schedules_are_exactly_optimal_and_verified(spec):
    topology = build(spec)
    fast = pack_arborescences(topology)
    full = pack_arborescences(topology, symmetry=False)
    assert fast.stats["packed_roots"] < full.stats["packed_roots"] == topology.num_compute
    assert fast.time_factor == full.time_factor == optimal_cut_ratio(topology).ratio
    assert Counter(t.root for t in fast.trees) == Counter(t.root for t in full.trees)
    assert fast.stats["max_height"] <= full.stats["max_height"]
    verdict = verify_schedule(topology, fast, optimum=fast.cut_ratio, require_optimal=True)
    assert verdict.valid and verdict.time_factor == fast.cut_ratio, verdict.problems


def test_layered_trees_pack_where_the_greedy_gets_stuck():
    """dgx-a100:2's greedy orbit trees with k = 13 get stuck; the layered packing of one
    root (its automorphisms are transitive on the GPUs) is exactly optimal."""
    topology, logical, roots = logical_graph("dgx-a100:2")
    symmetry = root_symmetry(logical, {v: topology.node[v].group for v in topology.compute_nodes})
    assert len(symmetry.representatives) == 1
    assert pack_symmetric(logical, roots, symmetry) is None
    assert pack_layered(logical, roots, symmetry) is not None
    schedule = pack_arborescences(topology)
    assert schedule.stats["packed_roots"] == 1 and schedule.stats["height_excess"] == 0
    verdict = verify_schedule(topology, schedule, optimum=schedule.cut_ratio, require_optimal=True)
    assert verdict.valid and verdict.time_factor == schedule.cut_ratio, verdict.problems


def check_expansion(logical, packing, symmetry, per_root):
    """The images form a packing: spanning trees, ``per_root`` per root, arcs within capacity."""
    expanded = expand_packing(logical, packing, symmetry)
    load: Counter = Counter()
    roots: Counter = Counter()
    for root, mu, arcs in expanded:
        reached = {root}
        for u, v in arcs:
            assert u in reached and v not in reached
            reached.add(v)
            load[(u, v)] += mu
        assert reached == set(logical.compute_nodes)
        roots[root] += mu
    assert all(load[arc] <= logical.capacity.get(arc, 0) for arc in load)
    assert roots == dict.fromkeys(logical.compute_nodes, per_root)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    st.sampled_from([(4, 2), (6, 3), (6, 2), (8, 4), (8, 2)]),
    st.lists(st.sampled_from([0, 1, 2, 3, 4, 4]), min_size=56, max_size=56),
    st.integers(1, 2),
)
def test_images_of_the_representatives_never_exceed_a_capacity(shape, draws, per_root):
    """Capacities drawn at random (rarely invariant): the orbit's least capacity keeps the
    images within every arc's capacity, before and after shaping."""
    n, order = shape
    names = tuple(f"v{i}" for i in range(n))
    pairs = [(a, b) for a in names for b in names if a != b]
    capacity = {arc: c for arc, c in zip(pairs, draws, strict=False) if c}
    logical = LogicalGraph(names, capacity, {})
    step = n // order  # v -> v + step (mod n): free, of the given order
    symmetry = RootSymmetry.generated_by([(v + step) % n for v in range(n)])
    packing = pack_symmetric(logical, dict.fromkeys(names, per_root), symmetry)
    assume(packing is not None)  # about a quarter of the draws
    check_expansion(logical, packing, symmetry, per_root)
    shaped = shorten_trees(logical, packing, symmetry=symmetry)
    check_expansion(logical, shaped, symmetry, per_root)
    assert sorted(tree_heights(shaped)) <= sorted(tree_heights(packing))


def test_shaping_the_representatives_lowers_every_image():
    """The chain's three arcs share one orbit (capacity 3): shaped, a star using three orbits."""
    names = tuple("abcd")
    logical = LogicalGraph(names, {(a, b): 3 for a in names for b in names if a != b}, {})
    symmetry = RootSymmetry.generated_by([1, 2, 3, 0])
    chain = [("a", 1, (("a", "b"), ("b", "c"), ("c", "d")))]
    check_expansion(logical, chain, symmetry, 1)
    star = shorten_trees(logical, chain, symmetry=symmetry)
    assert tree_heights(star) == [1]
    check_expansion(logical, star, symmetry, 1)


def test_compact_files_hold_the_representatives_and_expand_to_the_same_schedule(tmp_path):
    topology = build("dgx-a100:16")
    schedule = pack_arborescences(topology)
    data = schedule.to_dict()
    assert data["rotation"]["order"] == 64 and len(data["rotation"]["images"]) > 128
    assert sorted({tree["root"] for tree in data["trees"]}) == ["b0.gpu0", "b0.gpu1"]
    back = Schedule.from_dict(json.loads(json.dumps(data)))
    assert back == schedule and back.trees == schedule.trees
    full = pack_arborescences(topology, symmetry=False).to_dict()
    assert "rotation" not in full and len(json.dumps(data)) * 40 < len(json.dumps(full))
    out = tmp_path / "s.json"
    assert main(["trees", "dgx-a100:16", "-o", str(out)]) == 0
    assert main(["verify", "dgx-a100:16", str(out)]) == 0


def test_trees_that_are_not_the_images_are_written_in_full():
    schedule = pack_arborescences(build("dgx-a100:4"))
    first, *rest = schedule.trees
    edited = replace(schedule, trees=(replace(first, edges=first.edges[::-1]), *rest))
    data = edited.to_dict()
    assert "rotation" not in data and len(data["trees"]) == 32
    assert Schedule.from_dict(data) == edited


@pytest.mark.parametrize(
    ("rotation", "message"),
    [
        ({"order": 2, "images": {"a": "b"}}, "not a permutation"),
        ({"order": 3, "images": {"a": "b", "b": "a"}}, "is not the permutation's order"),
        ({"order": 2, "images": {}}, "is not the permutation's order"),
        ({"order": 2, "images": {"a": 1}}, "must map node id strings"),
        ({"order": 2, "images": {"a": "b", "b": "a"}, "extra": 1}, "unknown field 'extra'"),
        ({"order": 4, "images": {"a": "b", "b": "c", "c": "d", "d": "a"}}, "exceeds the 2"),
    ],
)
def test_a_bad_rotation_is_refused_naming_the_fault(rotation, message):
    data = {
        "collective": "allgather",
        "topology": "t",
        "compute_nodes": ["a", "b"],
        "k": 1,
        "trees": [{"root": "a", "chunks": 1, "edges": [{"src": "a", "dst": "b"}]}],
        "rotation": rotation,
    }
    with pytest.raises(ScheduleError, match=message):
        Schedule.from_dict(data)
