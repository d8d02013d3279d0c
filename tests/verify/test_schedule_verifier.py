"""The independent verifier: valid hand-made schedules and precisely diagnosed broken ones."""

from __future__ import annotations

import itertools
import json
from collections import deque
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.cli import main
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.exceptions import FileFormatError, ScheduleError
from optcoll.io import load_schedule, load_topology, save_schedule
from optcoll.verify.schedule import verify_schedule

# --- hand-built topologies and schedules -----------------------------------------------


def directed_ring() -> Topology:
    """a -> b -> c -> a at 10 GB/s; r* = 2/10 (the cut {a, b} has one 10 GB/s link out)."""
    b = TopologyBuilder("ring3")
    for g in "abc":
        b.compute(g)
    for u, v in ("ab", "bc", "ca"):
        b.link(u, v, 10)
    return b.build()


def bidirectional_ring() -> Topology:
    b = TopologyBuilder("biring3")
    for g in "abc":
        b.compute(g)
    for u, v in ("ab", "bc", "ca"):
        b.link(u, v, 10, bidirectional=True)
    return b.build()


def switch_pair() -> Topology:
    b = TopologyBuilder("pair")
    b.compute("a")
    b.compute("b")
    b.switch("sw")
    b.link("a", "sw", 100, bidirectional=True)
    b.link("b", "sw", 100, bidirectional=True)
    return b.build()


def chain(root: str, second: str, third: str, chunks: int = 1) -> Tree:
    return Tree(
        root,
        chunks,
        (TreeEdge(root, second, (root, second)), TreeEdge(second, third, (second, third))),
    )


def ring_schedule(**changes) -> Schedule:
    trees = (chain("a", "b", "c"), chain("b", "c", "a"), chain("c", "a", "b"))
    base = Schedule("allgather", "ring3", ("a", "b", "c"), 1, trees)
    return replace(base, **changes)


def star(root: str, nodes, hub: str) -> Tree:
    return Tree(root, 1, tuple(TreeEdge(root, v, (root, hub, v)) for v in nodes if v != root))


def neighbour_schedule(collective: str = "allgather") -> Schedule:
    """On the bidirectional ring every root sends straight to both neighbours: optimal."""
    trees = tuple(Tree(r, 1, tuple(TreeEdge(r, v, (r, v)) for v in "abc" if v != r)) for r in "abc")
    return Schedule(collective, "biring3", ("a", "b", "c"), 1, trees)


def pair_schedule(**changes) -> Schedule:
    trees = (
        Tree("a", 1, (TreeEdge("a", "b", ("a", "sw", "b")),)),
        Tree("b", 1, (TreeEdge("b", "a", ("b", "sw", "a")),)),
    )
    return replace(Schedule("allgather", "pair", ("a", "b"), 1, trees), **changes)


def reason(topology: Topology, schedule: Schedule, **kwargs) -> str | None:
    result = verify_schedule(topology, schedule, **kwargs)
    assert result.valid == (result.reason is None)
    return result.reason


# --- valid schedules ---------------------------------------------------------------------


def test_directed_ring_chains_are_valid_with_exact_loads():
    result = verify_schedule(directed_ring(), ring_schedule(), optimum=Fraction(1, 5))
    assert result.valid and result.reason is None
    assert result.time_factor == Fraction(1, 5)
    assert result.ratio_to_optimum == 1
    assert result.link_loads == {("a", "b"): 2, ("b", "c"): 2, ("c", "a"): 2}
    assert result.bottleneck_links == [("a", "b"), ("b", "c"), ("c", "a")]


def test_dgx_a100_1_star_trees_reach_the_optimum():
    topo = load_topology("dgx-a100:1")
    gpus = topo.compute_nodes
    trees = tuple(star(r, gpus, "b0.nvswitch") for r in gpus)
    schedule = Schedule("allgather", topo.name, gpus, 1, trees, time_factor=Fraction(7, 300))
    result = verify_schedule(topo, schedule, optimum=Fraction(7, 300), require_optimal=True)
    assert result.valid
    assert result.time_factor == Fraction(7, 300)  # reference.json: dgx-a100:1 cut_ratio 7/300
    assert set(result.link_loads.values()) == {7}
    assert len(result.link_loads) == 16 and len(result.bottleneck_links) == 16


def test_chunk_multiplicities_and_k_scale_the_loads():
    # Two half-chunks per root along opposite directions of the bidirectional ring.
    trees = []
    for r, (x, y) in zip("abc", ("bc", "ca", "ab"), strict=True):
        trees.append(chain(r, x, y))
        trees.append(chain(r, y, x))
    schedule = Schedule("allgather", "biring3", ("a", "b", "c"), 2, tuple(trees))
    result = verify_schedule(bidirectional_ring(), schedule)
    assert result.valid
    assert result.link_loads == {arc: 2 for arc in bidirectional_ring().capacity}
    assert result.time_factor == Fraction(2, 2 * 10)


def test_reduce_scatter_runs_the_trees_reversed():
    topo = bidirectional_ring()
    ag = verify_schedule(topo, neighbour_schedule("allgather"))
    rs = verify_schedule(topo, neighbour_schedule("reduce_scatter"))
    assert ag.valid and rs.valid
    assert ag.time_factor == rs.time_factor == Fraction(1, 10)
    # On the one-way ring the reversed links do not exist.
    rs_ring = ring_schedule(collective="reduce_scatter")
    assert reason(directed_ring(), rs_ring) == (
        "tree 0 (root 'a'), edge 'a' -> 'b': the path runs reversed (aggregation toward the "
        "root) over the missing link 'b' -> 'a'"
    )


def test_allreduce_time_factor_is_the_sum_of_both_phases():
    topo = bidirectional_ring()
    result = verify_schedule(topo, neighbour_schedule("allreduce"), optimum=Fraction(1, 5))
    assert result.valid
    assert result.time_factor == Fraction(1, 5)  # 2 * r*, r* = 1/10
    assert result.ratio_to_optimum == 1
    assert result.link_loads == {arc: 2 for arc in topo.capacity}  # 1 per phase


def test_allreduce_on_an_asymmetric_topology_adds_different_phases():
    b = TopologyBuilder("asym")
    b.compute("a")
    b.compute("b")
    b.compute("c")
    b.link("a", "b", 10)
    b.link("b", "a", 20)
    b.link("b", "c", 10, bidirectional=True)
    b.link("c", "a", 10, bidirectional=True)
    topo = b.build()
    trees = tuple(Tree(r, 1, tuple(TreeEdge(r, v, (r, v)) for v in "abc" if v != r)) for r in "abc")
    ag = verify_schedule(topo, Schedule("allgather", "asym", ("a", "b", "c"), 1, trees))
    ar = verify_schedule(topo, Schedule("allreduce", "asym", ("a", "b", "c"), 1, trees))
    assert ag.time_factor == Fraction(1, 10)
    assert ar.time_factor == Fraction(1, 10) + Fraction(1, 10)
    assert ar.link_loads[("b", "a")] == 2


def test_broadcast_from_one_root():
    topo = load_topology("dgx-a100:1")
    gpus = topo.compute_nodes
    schedule = Schedule(
        "broadcast", topo.name, gpus, 1, (star(gpus[0], gpus, "b0.nvswitch"),), root=gpus[0]
    )
    result = verify_schedule(topo, schedule)
    assert result.valid
    assert result.time_factor == Fraction(7, 300)  # gpu0 -> nvswitch carries 7 chunks
    assert result.bottleneck_links == [(gpus[0], "b0.nvswitch")]
    assert reason(topo, replace(schedule, root=None)) == (
        "collective 'broadcast' needs a root; none is given"
    )
    assert reason(topo, replace(schedule, root=gpus[1])) == (
        "tree 0 is rooted at 'b0.gpu0', but the broadcast root is 'b0.gpu1'"
    )
    reduce = replace(schedule, collective="reduce")
    assert verify_schedule(topo, reduce).bottleneck_links == [("b0.nvswitch", gpus[0])]


# --- broken schedules: the exact reason --------------------------------------------------


def test_missing_node():
    trees = (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),) + ring_schedule().trees[1:]
    assert reason(directed_ring(), ring_schedule(trees=trees)) == (
        "tree 0 (root 'a'): compute node 'c' is not spanned (no edge enters it)"
    )


def test_cycle():
    cyclic = Tree("a", 1, (TreeEdge("b", "c", ("b", "c")), TreeEdge("c", "b", ("c", "b"))))
    schedule = replace(neighbour_schedule(), trees=(cyclic,) + neighbour_schedule().trees[1:])
    assert reason(bidirectional_ring(), schedule) == (
        "tree 0 (root 'a'): the edges form a cycle 'b' -> 'c' -> 'b' cut off from the root"
    )


def test_path_through_a_compute_node():
    tree = Tree("a", 1, (TreeEdge("a", "b", ("a", "b")), TreeEdge("a", "c", ("a", "b", "c"))))
    schedule = ring_schedule(trees=(tree,) + ring_schedule().trees[1:])
    assert reason(directed_ring(), schedule) == (
        "tree 0 (root 'a'), edge 'a' -> 'c': the path passes through compute node 'b'; only "
        "switches may relay inside a path"
    )


def test_path_over_a_missing_link():
    bad = Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),))
    schedule = pair_schedule(trees=(pair_schedule().trees[0], bad))
    assert reason(switch_pair(), schedule) == (
        "tree 1 (root 'b'), edge 'b' -> 'a': the path uses the missing link 'b' -> 'a'"
    )


def test_chunks_not_summing_to_k():
    trees = ring_schedule().trees + (chain("b", "c", "a"),)
    assert reason(directed_ring(), ring_schedule(trees=trees)) == (
        "root 'b': the chunks of its trees sum to 2, expected k = 1"
    )
    assert reason(directed_ring(), ring_schedule(trees=ring_schedule().trees[:2])) == (
        "root 'c': the chunks of its trees sum to 0, expected k = 1"
    )


def test_overloaded_link_worse_than_claimed():
    schedule = ring_schedule(time_factor=Fraction(1, 10))
    result = verify_schedule(directed_ring(), schedule)
    assert not result.valid
    assert result.time_factor == Fraction(1, 5)
    assert result.reason == (
        "link 'a' -> 'b' is overloaded: it carries 2 chunks at bandwidth 10 with k = 1 "
        "(time factor 1/5), more than the claimed time factor 1/10 allows (1 chunk)"
    )


def test_overloaded_link_against_the_optimum():
    # Chains on the bidirectional ring use one direction only: twice the optimum 1/10.
    trees = (chain("a", "b", "c"), chain("b", "c", "a"), chain("c", "a", "b"))
    schedule = Schedule("allgather", "biring3", ("a", "b", "c"), 1, trees)
    relaxed = verify_schedule(bidirectional_ring(), schedule, optimum=Fraction(1, 10))
    assert relaxed.valid and relaxed.ratio_to_optimum == 2
    assert reason(
        bidirectional_ring(), schedule, optimum=Fraction(1, 10), require_optimal=True
    ) == (
        "link 'a' -> 'b' is overloaded: it carries 2 chunks at bandwidth 10 with k = 1 "
        "(time factor 1/5), more than the optimum time factor 1/10 allows (1 chunk)"
    )


def test_allreduce_overload_names_both_phases():
    trees = (chain("a", "b", "c"), chain("b", "c", "a"), chain("c", "a", "b"))
    schedule = Schedule(
        "allreduce", "biring3", ("a", "b", "c"), 1, trees, time_factor=Fraction(1, 5)
    )
    assert reason(bidirectional_ring(), schedule) == (
        "the link loads give time factor 2/5 (reduce-scatter 1/5 on link 'b' -> 'a' + "
        "allgather 1/5 on link 'a' -> 'b'), more than the claimed 1/5"
    )


def test_better_than_claimed_and_below_the_optimum():
    assert reason(directed_ring(), ring_schedule(time_factor=Fraction(1, 2))) == (
        "the schedule claims time factor 1/2, but its link loads give the better 1/5"
    )
    assert reason(directed_ring(), ring_schedule(cut_ratio=Fraction(1, 4))) == (
        "the time factor 1/5 is below the schedule's own cut_ratio 1/4; no allgather can beat "
        "the cut bound, so that cut_ratio is wrong"
    )
    assert reason(directed_ring(), ring_schedule(), optimum=Fraction(1, 4)) == (
        "the time factor 1/5 is below the optimum 1/4; no schedule can beat a lower bound, "
        "so that optimum is wrong"
    )


@pytest.mark.parametrize(
    ("trees", "expected"),
    [
        (
            (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")), TreeEdge("c", "a", ("c", "a")))),),
            "tree 0 (root 'a'): edge 'c' -> 'a' enters the root",
        ),
        (
            (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")), TreeEdge("c", "b", ("c", "b")))),),
            "tree 0 (root 'a'): node 'b' has two parents, 'a' and 'c'",
        ),
        (
            (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")), TreeEdge("a", "b", ("a", "b")))),),
            "tree 0 (root 'a'): edge 'a' -> 'b' appears twice",
        ),
        (
            (Tree("a", 1, (TreeEdge("a", "x", ("a", "x")),)),),
            "tree 0 (root 'a'): edge 'a' -> 'x' names unknown node 'x'",
        ),
        (
            (Tree("a", 1, (TreeEdge("a", "b", ("c", "b")), TreeEdge("a", "c", ("a", "c")))),),
            "tree 0 (root 'a'), edge 'a' -> 'b': the path starts at 'c', not at the source 'a'",
        ),
        (
            (Tree("a", 1, (TreeEdge("a", "b", ("a", "c")), TreeEdge("a", "c", ("a", "c")))),),
            "tree 0 (root 'a'), edge 'a' -> 'b': the path ends at 'c', not at the destination 'b'",
        ),
        (
            (Tree("a", 1, (TreeEdge("a", "b", ("a",)), TreeEdge("a", "c", ("a", "c")))),),
            "tree 0 (root 'a'), edge 'a' -> 'b': the path ['a'] needs at least its two ends",
        ),
        (
            (Tree("a", 0, (TreeEdge("a", "b", ("a", "b")), TreeEdge("a", "c", ("a", "c")))),),
            "tree 0 (root 'a'): chunks must be a positive integer, got 0",
        ),
    ],
)
def test_broken_trees(trees, expected):
    schedule = replace(neighbour_schedule(), trees=trees + neighbour_schedule().trees[1:])
    assert reason(bidirectional_ring(), schedule) == expected


def test_switches_and_node_lists():
    topo = switch_pair()
    base = pair_schedule()
    swroot = Tree("sw", 1, (TreeEdge("sw", "a", ("sw", "a")),))
    assert reason(topo, replace(base, trees=base.trees + (swroot,))) == (
        "tree 2: root 'sw' is a switch, not a compute node"
    )
    to_switch = Tree("a", 1, (TreeEdge("a", "sw", ("a", "sw")),))
    assert reason(topo, replace(base, trees=(to_switch, base.trees[1]))) == (
        "tree 0 (root 'a'): edge 'a' -> 'sw' has switch 'sw' as an end; tree edges join "
        "compute nodes (switches belong inside paths)"
    )
    assert reason(topo, replace(base, compute_nodes=("a",))) == (
        "compute_nodes misses compute node 'b' of topology 'pair'"
    )
    assert reason(topo, replace(base, compute_nodes=("a", "b", "sw"))) == (
        "compute_nodes lists 'sw', which is not a compute node of topology 'pair'"
    )
    assert reason(topo, replace(base, root="a")) == (
        "collective 'allgather' has no single root, but root 'a' is given"
    )
    assert reason(topo, replace(base, k=0)) == "k must be a positive integer, got 0"


# --- files and CLI -------------------------------------------------------------------------


def test_schedule_file_round_trip(tmp_path):
    schedule = ring_schedule(time_factor=Fraction(1, 5), cut_ratio=Fraction(1, 5))
    for name in ("s.json", "s.yaml"):
        save_schedule(schedule, tmp_path / name)
        assert load_schedule(tmp_path / name) == schedule


def test_malformed_json_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": "optcoll-schedule", "trees": [}\n', encoding="utf-8")
    with pytest.raises(FileFormatError) as err:
        load_schedule(path)
    assert str(err.value) == f"{path}: line 1, column 42: invalid JSON: Expecting value"
    path.write_text(json.dumps({"collective": "allgather"}), encoding="utf-8")
    with pytest.raises(ScheduleError) as err:
        load_schedule(path)
    assert str(err.value) == f"{path}: schedule is missing the required field 'topology'"


def _topology_file(tmp_path, topology: Topology):
    from optcoll.io import save_topology

    path = tmp_path / "topo.json"
    save_topology(topology, path)
    return str(path)


def test_cli_verify_exit_codes(tmp_path, capsys):
    topo = _topology_file(tmp_path, directed_ring())
    good = tmp_path / "good.json"
    save_schedule(ring_schedule(time_factor=Fraction(1, 5)), good)
    assert main(["verify", topo, str(good), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] is True and data["time_factor"] == "1/5"
    assert data["optimum"] == "1/5" and data["ratio_to_optimum"] == "1"  # r* of the ring
    assert data["link_loads"] == [["a", "b", 2], ["b", "c", 2], ["c", "a", 2]]

    bad = tmp_path / "bad.json"
    save_schedule(ring_schedule(time_factor=Fraction(1, 10)), bad)
    assert main(["verify", topo, str(bad)]) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and "link a -> b" not in out and "link 'a' -> 'b' is overloaded" in out

    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    assert main(["verify", topo, str(broken)]) == 2
    assert "invalid JSON" in capsys.readouterr().err


# --- property: any shortest-path schedule is valid; deleting an edge is caught ------------


@st.composite
def topologies(draw):
    """Small random strongly connected topologies with switches and parallel links."""
    n_compute = draw(st.integers(2, 5))
    n_switch = draw(st.integers(0, 2))
    names = [f"g{i}" for i in range(n_compute)] + [f"s{i}" for i in range(n_switch)]
    b = TopologyBuilder("random")
    for name in names[:n_compute]:
        b.compute(name)
    for name in names[n_compute:]:
        b.switch(name)
    # A bidirectional cycle through every node keeps all compute nodes mutually reachable.
    for u, v in zip(names, names[1:] + names[:1], strict=True):
        b.link(u, v, draw(st.integers(1, 4)) * 5, bidirectional=True)
    extra = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=4))
    for u, v in extra:
        if u != v:
            b.link(u, v, draw(st.sampled_from([2.5, 5, 10])))
    return b.build()


def shortest_path_schedule(topology: Topology) -> Schedule:
    """Each root reaches every other compute node along a BFS path through switches only."""
    succ = {n: [] for n in topology.node_ids}
    for u, v in topology.capacity:
        succ[u].append(v)
    trees = []
    for root in topology.compute_nodes:
        prev = {root: None}
        queue = deque([root])
        while queue:
            u = queue.popleft()
            if u != root and topology.is_compute(u):
                continue  # compute nodes end paths; they do not relay
            for v in succ[u]:
                if v not in prev:
                    prev[v] = u
                    queue.append(v)
        edges = []
        for dst in topology.compute_nodes:
            if dst == root or dst not in prev:
                continue
            path = [dst]
            while path[-1] != root:
                path.append(prev[path[-1]])
            path.reverse()
            edges.append(TreeEdge(root, dst, tuple(path)))
        trees.append(Tree(root, 1, tuple(edges)))
    return Schedule("allgather", topology.name, topology.compute_nodes, 1, tuple(trees))


def brute_force_ratio(topology: Topology) -> Fraction:
    best = Fraction(0)
    nodes = topology.node_ids
    compute = set(topology.compute_nodes)
    for size in range(1, len(nodes)):
        for side in itertools.combinations(nodes, size):
            inside = compute.intersection(side)
            if inside and inside != compute:
                best = max(best, Fraction(len(inside)) / topology.cut_bandwidth(side))
    return best


@settings(derandomize=True, max_examples=40, deadline=None)
@given(topologies())
def test_random_star_schedules(topology):
    schedule = shortest_path_schedule(topology)
    spanning = all(len(t.edges) == topology.num_compute - 1 for t in schedule.trees)
    result = verify_schedule(topology, schedule)
    if not spanning:
        # Some compute node is reachable only through another compute node.
        assert not result.valid and "is not spanned" in result.reason
        return
    assert result.valid, result.reason
    # No valid schedule beats the cut bound, and the verifier's time factor is exact.
    assert result.time_factor >= brute_force_ratio(topology)
    expected = max(
        Fraction(load) / topology.capacity[arc] for arc, load in result.link_loads.items()
    )
    assert result.time_factor == expected
    # Removing any tree edge leaves its destination unspanned.
    tree = schedule.trees[-1]
    cut = Tree(tree.root, 1, tree.edges[1:])
    broken = replace(schedule, trees=schedule.trees[:-1] + (cut,))
    assert verify_schedule(topology, broken).reason == (
        f"tree {len(schedule.trees) - 1} (root {tree.root!r}): compute node "
        f"{tree.edges[0].dst!r} is not spanned (no edge enters it)"
    )


def test_cli_verifies_a_trees_schedule_and_catches_tampering(tmp_path, capsys):
    path = tmp_path / "dgx2.json"
    assert main(["trees", "dgx-a100:2", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["verify", "dgx-a100:2", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] and data["time_factor"] == data["optimum"] == "3/65"
    assert data["ratio_to_optimum"] == "1" and data["k"] == 13

    document = json.loads(path.read_text(encoding="utf-8"))
    document["trees"][0]["chunks"] += 1
    root = document["trees"][0]["root"]
    total = sum(t["chunks"] for t in document["trees"] if t["root"] == root)
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["verify", "dgx-a100:2", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"root {root!r}: the chunks of its trees sum to {total}, expected k = 13" in out
