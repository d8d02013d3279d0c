"""Tree shape at a fixed time factor: lower trees and fewer peers, the time factor exactly kept."""

from __future__ import annotations

import pytest
from conftest import switched_topologies
from hypothesis import given, settings

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.graph.splitting import LogicalGraph, circulant_offsets, split_switches
from optcoll.schedules.packing import chunk_capacities, pack_arborescences, pack_rooted
from optcoll.schedules.tree_shape import peer_counts, shorten_trees, tree_heights
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule


def packing_of(schedule):
    return [(t.root, t.chunks, tuple((e.src, e.dst) for e in t.edges)) for t in schedule.trees]


def shaped_and_plain(spec, k=None, symmetry=True):
    topology = build(spec)
    return (
        topology,
        pack_arborescences(topology, k, shape=True, symmetry=symmetry),
        pack_arborescences(topology, k, shape=False, symmetry=symmetry),
    )


@pytest.mark.parametrize(
    ("spec", "k", "symmetry", "before", "after"),
    [
        ("dgx-a100:2", None, True, (2, 2.0), (2, 2.0)),  # layered: every tree at its eccentricity
        ("dgx-a100:2", 8, True, (2, 2.0), (2, 2.0)),  # fixed k: layered on one root per orbit
        ("dgx-a100:16", 1, True, (2, 2.0), (2, 2.0)),
        ("dgx-a100:2", 8, False, (8, 4.71), (8, 4.258)),  # every root packed: the shape pass
        ("dgx-a100:16", 1, False, (4, 2.055), (2, 2.0)),
        ("mi250:2", None, True, (18, 10.267), (17, 10.16)),
        ("mi250:4", None, True, (13, 7.987), (11, 7.625)),
    ],
)
def test_shaped_trees_are_lower_at_exactly_the_same_time_factor(spec, k, symmetry, before, after):
    topology, shaped, plain = shaped_and_plain(spec, k, symmetry)
    assert (plain.stats["max_height"], plain.stats["mean_height"]) == before
    assert (shaped.stats["max_height"], shaped.stats["mean_height"]) == after
    assert shaped.time_factor == plain.time_factor  # exact Fractions
    if k is None:
        assert shaped.time_factor == optimal_cut_ratio(topology).ratio
    for schedule in (shaped, plain):
        verdict = verify_schedule(
            topology, schedule, optimum=plain.time_factor, require_optimal=True
        )
        assert verdict.valid, verdict.problems


def test_dgx_a100_16_talks_to_23_peers_per_gpu():
    """7 NVSwitch peers and 16 rail peers (the same GPUs send and receive), 37 before."""
    _, shaped, _ = shaped_and_plain("dgx-a100:16", 1)
    peers = peer_counts(packing_of(shaped))
    assert max(peers.values()) == 23 and len(peers) == 128


def test_symmetric_offsets_make_send_peers_receive_peers():
    assert (
        circulant_offsets(128, 32, 31)
        == [o for pair in zip(range(1, 17), range(127, 111, -1), strict=True) for o in pair][:31]
    )
    assert all(o % 32 for o in circulant_offsets(128, 32, 200))
    assert circulant_offsets(6, 2, 9) == [1, 5, 3] and circulant_offsets(6, 1, 9) == [1, 5, 2, 4, 3]


def test_chains_on_a_complete_graph_become_stars():
    arcs = {(a, b): 1 for a in "abcd" for b in "abcd" if a != b}
    chains = [
        (r, 1, tuple(zip(order, order[1:], strict=False)))
        for r, order in (("a", "abcd"), ("b", "bcda"), ("c", "cdab"), ("d", "dabc"))
    ]
    shaped = shorten_trees(LogicalGraph(tuple("abcd"), arcs, {}), chains)
    assert tree_heights(chains) == [3, 3, 3, 3] and tree_heights(shaped) == [1, 1, 1, 1]


def test_exchanges_swap_parents_without_spare_capacity():
    """Every arc is full, so regrowth finds nothing; swapping c's parents lowers both trees."""
    first = ("r", 1, (("r", "a"), ("a", "b"), ("b", "c")))
    second = ("r", 1, (("r", "b"), ("b", "a"), ("a", "c")))
    arcs = dict.fromkeys(first[2] + second[2], 1)
    shaped = shorten_trees(LogicalGraph(tuple("rabc"), arcs, {}), [first, second])
    assert tree_heights([first, second]) == [3, 3] and tree_heights(shaped) == [2, 2]
    assert loads(shaped) == loads([first, second])
    assert shaped[0][2] == (("r", "a"), ("a", "b"), ("a", "c"))


def test_exchanges_between_multiplicities_use_only_spare_capacity():
    """Swapping c's parents moves one more chunk onto (a, c): allowed only with it spare."""
    first = ("r", 2, (("r", "a"), ("a", "b"), ("b", "c")))
    second = ("r", 1, (("r", "b"), ("b", "a"), ("a", "c")))
    tight = {**dict.fromkeys(first[2], 2), **dict.fromkeys(second[2], 1)}
    for spare, heights in ((0, [3, 3]), (1, [2, 2])):
        arcs = {**tight, ("a", "c"): 1 + spare}
        shaped = shorten_trees(LogicalGraph(tuple("rabc"), arcs, {}), [first, second])
        assert tree_heights(shaped) == heights
        assert all(load <= arcs[arc] for arc, load in loads(shaped).items())
    assert loads(shaped)[("a", "c")] == 2 and loads(shaped)[("b", "c")] == 1


def loads(packing):
    result: dict[tuple[str, str], int] = {}
    for _, mu, arcs in packing:
        for arc in arcs:
            result[arc] = result.get(arc, 0) + mu
    return result


@settings(derandomize=True, max_examples=30, deadline=None)
@given(switched_topologies())
def test_shaping_keeps_capacities_and_never_raises_the_height_profile(topology):
    set_up = chunk_capacities(topology)
    k, link = set_up.chunks, set_up.capacity
    roots = dict.fromkeys(topology.compute_nodes, k)
    usable = optimal_cut_ratio(topology).usable
    logical = split_switches(usable, link, roots, k * topology.num_compute)
    packing = pack_rooted(logical, roots)
    shaped = shorten_trees(logical, packing)
    assert [(r, m) for r, m, _ in shaped] == [(r, m) for r, m, _ in packing]
    # regrowth never raises a tree; an exchange may raise the lower tree of a pair to
    # lower the taller one, so the heights sorted tallest first only decrease
    before = sorted(tree_heights(packing), reverse=True)
    after = sorted(tree_heights(shaped), reverse=True)
    assert after <= before
    assert all(load <= logical.capacity[arc] for arc, load in loads(shaped).items())
    for root, _, arcs in shaped:  # spanning arborescences, parents first
        reached = {root}
        for u, v in arcs:
            assert u in reached and v not in reached
            reached.add(v)
        assert reached == set(topology.compute_nodes)


def test_an_exchange_may_raise_one_tree_to_lower_a_taller_one():
    """Found by the property test under the oldest hypothesis: c0's star gives c3 to c4
    so that c2's chain through c4 gets one hop shorter (heights 1, 4 become 2, 3)."""
    arcs = [("c0", "c1"), ("c0", "c2"), ("c0", "c3"), ("c0", "c4"), ("c1", "c0"), ("c1", "c2")]
    arcs += [("c2", "c1"), ("c3", "c0"), ("c3", "c4"), ("c4", "c0"), ("c4", "c3")]
    logical = LogicalGraph(tuple(f"c{i}" for i in range(5)), dict.fromkeys(arcs, 2), {})
    packing = [
        ("c0", 1, (("c0", "c1"), ("c0", "c2"), ("c0", "c3"), ("c0", "c4"))),
        ("c1", 1, (("c1", "c0"), ("c1", "c2"), ("c0", "c3"), ("c3", "c4"))),
        ("c2", 1, (("c2", "c1"), ("c1", "c0"), ("c0", "c4"), ("c4", "c3"))),
        ("c3", 1, (("c3", "c0"), ("c3", "c4"), ("c0", "c1"), ("c1", "c2"))),
        ("c4", 1, (("c4", "c0"), ("c4", "c3"), ("c0", "c2"), ("c2", "c1"))),
    ]
    shaped = shorten_trees(logical, packing)
    assert tree_heights(packing) == [1, 3, 4, 3, 3]
    assert max(tree_heights(shaped)) == 3
    assert sorted(tree_heights(shaped), reverse=True) < [4, 3, 3, 3, 1]
    assert all(load <= logical.capacity[arc] for arc, load in loads(shaped).items())
