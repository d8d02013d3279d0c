"""In-network reduction and multicast (NVLS, SHARP): the model, the bounds, the schedules.

Oracles: brute-force cut enumeration, closed forms (one switch; a tree of switches; a
relaying star's reduce-scatter + allgather, Patarasuk and Yuan 2009), the relaying
optimum of the rest of optcoll, and the independent checker.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from fractions import Fraction
from itertools import combinations

import pytest
from conftest import random_topologies
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.bounds.in_network import aggregation_bound, reduction_cut
from optcoll.cli import main
from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.schedule import TreeEdge
from optcoll.core.topology import Link, Node, Topology, TopologyBuilder
from optcoll.exceptions import (
    ImportFormatError,
    MissingFieldError,
    NodeTypeError,
    ScheduleError,
    TopologySpecError,
)
from optcoll.io import load_topology
from optcoll.io.native import read_native, save_topology
from optcoll.io.schedule_json import load_any_schedule, load_schedule, save_schedule
from optcoll.schedules.aggregation import aggregation_schedule, schedule_of_bound
from optcoll.schedules.collectives import collective_lower_bound
from optcoll.sim.size_plan import plan
from optcoll.studies.compare import compare_methods
from optcoll.topologies import build
from optcoll.verify.aggregation import verify_aggregation_schedule

# --- the model ---------------------------------------------------------------------------


def _old_hash(topology: Topology) -> str:
    """The content hash as it was before switches could declare anything (an oracle)."""
    content = {
        "bandwidth_unit": topology.bandwidth_unit,
        "nodes": sorted([n.id, n.type] for n in topology.nodes),
        "capacity": sorted([u, v, str(c)] for (u, v), c in topology.capacity.items()),
    }
    text = json.dumps(content, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@pytest.mark.parametrize(
    "spec", ["dgx-h100:2", "dgx-a100:2", "leaf-spine:leaves=2,hosts=2,spines=2", "star:4", "ring:5"]
)
def test_without_flags_hash_and_file_as_before(spec):
    topology = build(spec)
    assert not topology.has_in_network
    assert topology.content_hash == _old_hash(topology)
    assert all(set(n) <= {"id", "type", "group"} for n in topology.to_dict()["nodes"])


def test_flags_change_hash_and_survive_files(tmp_path):
    plain, nvls = build("dgx-h100:2"), build("dgx-h100:2,nvls=1")
    assert plain.capacity == nvls.capacity
    assert plain.content_hash != nvls.content_hash
    assert nvls.reducing_switches == nvls.multicast_switches == ("b0.nvswitch", "b1.nvswitch")
    path = tmp_path / "nvls.yaml"
    save_topology(nvls, path)
    again = read_native(path)
    assert again == nvls and again.content_hash == nvls.content_hash
    assert build(nvls.name) == nvls  # the spec the name states builds it again
    flagged = [n for n in nvls.to_dict()["nodes"] if n.get("reduce")]
    assert [n["id"] for n in flagged] == ["b0.nvswitch", "b1.nvswitch"]
    assert all(n["multicast"] is True for n in flagged)


def test_sharp_fabrics():
    fabric = build("leaf-spine:leaves=2,hosts=2,spines=2,sharp=1")
    assert fabric.reducing_switches == ("leaf0", "leaf1", "spine0", "spine1")
    assert build("star:3,sharp=1").multicast_switches == ("hub",)
    assert not build("leaf-spine:leaves=2,hosts=2,spines=2,sharp=0").has_in_network


@pytest.mark.parametrize(
    ("data", "error", "text"),
    [
        ({"id": "g0", "type": "compute", "reduce": True}, NodeTypeError, "only switches"),
        ({"id": "sw", "type": "switch", "reduce": "yes"}, MissingFieldError, "nodes[2]"),
        ({"id": "sw", "type": "switch", "multicast": 1}, MissingFieldError, "'multicast'"),
    ],
)
def test_bad_flags_are_named(data, error, text):
    document = {
        "nodes": [{"id": "a"}, {"id": "b"}, data],
        "links": [{"src": "a", "dst": "b", "bandwidth": 1, "bidirectional": True}],
    }
    if data["id"] == "g0":
        document["nodes"][2] = data
    with pytest.raises(error, match=text.replace("[", r"\[").replace("]", r"\]")):
        Topology.from_dict(document)


def test_bad_spec_flag():
    with pytest.raises(TopologySpecError, match="nvls: expected 1 or 0"):
        build("dgx-h100:2,nvls=2")


def test_graphml_flags(tmp_path):
    import networkx as nx

    from optcoll.io.graphml import from_networkx

    g = nx.Graph()
    g.add_node("sw", type="switch", reduce=True, multicast=False)
    g.add_edge("a", "sw", bandwidth=1)
    g.add_edge("b", "sw", bandwidth=1)
    topology = from_networkx(g, "g")
    assert topology.reducing_switches == ("sw",) and topology.multicast_switches == ()
    g.nodes["sw"]["reduce"] = "maybe"
    with pytest.raises(ImportFormatError, match="node sw: reduce must be true or false"):
        from_networkx(g, "g")


# --- the cut bound -----------------------------------------------------------------------


def _brute_force_cut(topology: Topology) -> Fraction:
    nodes = topology.node_ids
    compute = set(topology.compute_nodes)
    best = None
    for size in range(1, len(nodes)):
        for side in combinations(nodes, size):
            inside = compute & set(side)
            if inside and inside != compute:
                value = topology.cut_bandwidth(side)
                best = value if best is None else min(best, value)
    return best


@settings(max_examples=40, deadline=None, derandomize=True)
@given(random_topologies(max_compute=4, max_switches=3))
def test_cut_bound_is_the_least_cut(topology):
    cut = reduction_cut(topology)
    assert cut.bandwidth == _brute_force_cut(topology)
    inside = set(cut.cut) & set(topology.compute_nodes)
    assert inside and inside != set(topology.compute_nodes)
    assert topology.cut_bandwidth(cut.cut) == cut.bandwidth


# --- attained on one switch and on trees of switches -------------------------------------


def _check_at_bound(topology: Topology) -> AggregationSchedule:
    """The schedule verifies exactly at the cut bound, which is the LP optimum."""
    bound = aggregation_bound(topology)
    assert bound.proved and bound.optimum == bound.cut_bound and bound.gap == 1
    schedule = schedule_of_bound(bound)
    verdict = verify_aggregation_schedule(
        topology, schedule, optimum=bound.cut_bound, require_optimal=True
    )
    assert verdict.valid, verdict.reason
    assert verdict.time_factor == bound.cut_bound
    return schedule


@pytest.mark.parametrize(("n", "bw"), [(2, 100), (5, 25), (8, 450), (7, Fraction(25, 2))])
def test_one_reducing_switch(n, bw):
    topology = build(f"star:{n},bw={bw},sharp=1")
    assert reduction_cut(topology).bandwidth == bw
    schedule = _check_at_bound(topology)
    verdict = verify_aggregation_schedule(topology, schedule)
    hub = verdict.switch_work["hub"]
    k = schedule.k
    # every link is a cut, so each carries exactly k chunks at the bound
    assert hub["received"] == hub["sent"] == n * k
    assert hub["reduced"] == hub["copied"]
    assert (hub["reduced"] > 0) == (n > 2)  # two nodes need no summing in the switch


def _tree_of_switches() -> Topology:
    """Three levels of reducing switches, heterogeneous links, compute nodes at the leaves."""
    b = TopologyBuilder("switch-tree")
    for w in ("root", "left", "right", "deep"):
        b.switch(w, reduce=True, multicast=True)
    bandwidths = {"a": 40, "b": 30, "c": 50, "d": 45, "e": 60}
    for c in bandwidths:
        b.compute(c)
    b.link("left", "root", 35, bidirectional=True)
    b.link("right", "root", 70, bidirectional=True)
    b.link("deep", "right", 33, bidirectional=True)
    for c, parent in zip(bandwidths, ("left", "left", "right", "deep", "deep"), strict=True):
        b.link(c, parent, bandwidths[c], bidirectional=True)
    return b.build()


@pytest.mark.parametrize(
    "spec",
    [
        "leaf-spine:leaves=3,hosts=3,spines=1,sharp=1",
        "leaf-spine:leaves=2,hosts=4,spines=1,oversub=4,sharp=1",
    ],
)
def test_trees_of_reducing_switches(spec):
    _check_at_bound(build(spec))


def test_heterogeneous_tree_of_switches():
    topology = _tree_of_switches()
    assert reduction_cut(topology).bandwidth == 30  # the slowest link is a cut
    _check_at_bound(topology)


def test_fat_tree_with_several_spines():
    _check_at_bound(build("leaf-spine:leaves=2,hosts=4,spines=2,sharp=1"))


# --- where switches only relay ------------------------------------------------------------


@pytest.mark.parametrize(("n", "bw"), [(3, 10), (4, 100), (8, 450)])
def test_relaying_star_is_reduce_scatter_allgather(n, bw):
    topology = build(f"star:{n},bw={bw}")
    bound = aggregation_bound(topology)
    assert bound.proved
    assert bound.cut_bound == Fraction(1, bw)
    assert bound.optimum == Fraction(2 * (n - 1), n * bw)  # Patarasuk and Yuan's optimum
    assert bound.optimum == collective_lower_bound(topology, "allreduce") / n


def test_dgx_h100_one_box_nvls_is_fourteen_ninths_faster():
    nvls = aggregation_bound(build("dgx-h100:1,nvls=1"))  # multimem: 9/8 M on each link
    relaying = collective_lower_bound(build("dgx-h100:1"), "allreduce") / 8
    assert nvls.optimum == Fraction(1, 400) and nvls.proved
    assert relaying / nvls.optimum == Fraction(14, 9)


def test_dgx_h100_two_boxes_attain_the_cut_bound():
    topology = build("dgx-h100:2,nvls=1")
    cut = reduction_cut(topology)
    assert cut.bandwidth == 400  # a box's eight 50 GB/s NICs
    assert sum(1 for v in cut.cut if topology.is_compute(v)) == 8
    schedule = _check_at_bound(topology)
    work = verify_aggregation_schedule(topology, schedule).switch_work
    assert all(work[f"rail{j}"]["reduced"] == 0 for j in range(8))  # rails only relay
    assert work["b0.nvswitch"]["reduced"] > 0


def test_dgx_h100_three_boxes_gap_is_certified():
    """Relaying rails: among aggregation trees the boxes' partial sums cross the rails as a
    reduce-scatter + allgather of B boxes would, 2 (B - 1) / B times the cut bound."""
    topology = build("dgx-h100:3,nvls=1")
    bound = aggregation_bound(topology)
    assert bound.proved and bound.lower_bound == bound.optimum
    assert bound.cut_bound == Fraction(1, 400)
    assert bound.optimum == Fraction(1, 300)
    assert bound.gap == Fraction(2 * (3 - 1), 3)
    caps = topology.capacity
    assert sum(caps[arc] * w for arc, w in bound.prices.items()) == 1
    assert all(w >= 0 for w in bound.prices.values())
    schedule = schedule_of_bound(bound)
    verdict = verify_aggregation_schedule(topology, schedule, optimum=bound.optimum)
    assert verdict.valid and verdict.time_factor == bound.optimum


def _flag_switches(topology: Topology, flags: list[tuple[bool, bool]]) -> Topology:
    nodes = []
    for node in topology.nodes:
        if not node.is_compute and flags:
            reduce, multicast = flags.pop()
            node = replace(node, reduce=reduce, multicast=multicast)
        nodes.append(node)
    return Topology(topology.name, nodes, topology.links)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    random_topologies(max_compute=4, max_switches=2, bandwidths=(1, 2, 3, Fraction(1, 2))),
    st.lists(st.tuples(st.booleans(), st.booleans()), min_size=2, max_size=2),
)
def test_random_mixes(topology, flags):
    """Any mix: the optimum is at least the cut bound, its schedule verifies at it exactly,
    and no flag makes it worse than the relaying reduce-scatter + allgather."""
    relaying = collective_lower_bound(topology, "allreduce") / topology.num_compute
    plain = aggregation_bound(topology)
    assert plain.proved and plain.optimum <= relaying
    flagged = _flag_switches(topology, list(flags))
    bound = aggregation_bound(flagged)
    assert bound.proved
    assert bound.cut_bound <= bound.optimum <= plain.optimum
    schedule = schedule_of_bound(bound)
    verdict = verify_aggregation_schedule(
        flagged, schedule, optimum=bound.optimum, require_optimal=True
    )
    assert verdict.valid, verdict.reason


# --- the checker -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def star_schedule():
    topology = build("star:3,sharp=1")
    return topology, aggregation_schedule(topology)


def _tree(schedule, **changes):
    return replace(schedule, trees=(replace(schedule.trees[0], **changes), *schedule.trees[1:]))


def test_checker_rejects(star_schedule):
    topology, schedule = star_schedule
    tree = schedule.trees[0]
    relaying = build("star:3")
    cases = [
        (relaying, schedule, "does not declare"),
        (topology, replace(schedule, k=schedule.k + 1), "expected k ="),
        (topology, replace(schedule, time_factor=Fraction(1, 1000)), "claims time factor"),
        (topology, replace(schedule, lower_bound=Fraction(1, 10)), "below the lower_bound"),
        (topology, _tree(schedule, multicast_edges=tree.multicast_edges[1:]), "misses"),
        (
            topology,
            _tree(schedule, reduce_edges=(*tree.reduce_edges, TreeEdge("h1", "h2", ("h1", "h2")))),
            "already has",
        ),
        (topology, _tree(schedule, apex="h9"), "not a node"),
    ]
    for topo, bad, reason in cases:
        verdict = verify_aggregation_schedule(topo, bad)
        assert not verdict.valid and reason in verdict.reason, (reason, verdict.reason)
    verdict = verify_aggregation_schedule(topology, schedule, optimum=schedule.time_factor * 2)
    assert not verdict.valid and "below the optimum" in verdict.reason
    verdict = verify_aggregation_schedule(
        topology, schedule, optimum=schedule.time_factor / 2, require_optimal=True
    )
    assert not verdict.valid and "is overloaded" in verdict.reason


def test_checker_names_a_relaying_switch_vertex():
    """A relaying switch may appear in paths only: as a vertex it would sum or copy."""
    topology = build("star:3")
    up = tuple(TreeEdge(h, "hub", (h, "hub")) for h in ("h1", "h2"))
    up += (TreeEdge("hub", "h0", ("hub", "h0")),)
    down = tuple(TreeEdge("h0", h, ("h0", "hub", h)) for h in ("h1", "h2"))
    from optcoll.core.aggregation import AggregationTree

    schedule = AggregationSchedule(
        topology.name, topology.compute_nodes, 1, (AggregationTree("h0", 1, up, down),)
    )
    reason = verify_aggregation_schedule(topology, schedule).reason
    assert reason == (
        "tree 0 (apex 'h0'): switch 'hub' is a vertex of the reduce tree but does not "
        "declare reduce"
    )
    ok = replace(
        schedule,
        trees=(
            AggregationTree(
                "h0", 1, tuple(TreeEdge(h, "h0", (h, "hub", "h0")) for h in ("h1", "h2")), down
            ),
        ),
    )
    verdict = verify_aggregation_schedule(topology, ok)
    assert verdict.valid and verdict.time_factor == Fraction(1, 50)
    assert verdict.switch_work["hub"] == {"received": 4, "reduced": 0, "copied": 0, "sent": 4}


def test_schedule_files(tmp_path, star_schedule):
    topology, schedule = star_schedule
    path = tmp_path / "s.json"
    save_schedule(schedule, path)
    again = load_any_schedule(path)
    assert again == schedule and again.topology_hash == topology.content_hash
    with pytest.raises(ScheduleError, match="allreduce by aggregation trees"):
        load_schedule(path)
    data = json.loads(path.read_text())
    data["aggregation"][0]["apex"] = 3
    path.write_text(json.dumps(data))
    with pytest.raises(ScheduleError, match=r"aggregation\[0\]: 'apex' must be"):
        load_any_schedule(path)


# --- plan, compare, simulate, CLI --------------------------------------------------------


def test_plan_chooses_by_size():
    rows = plan(build("dgx-h100:1,nvls=1"), "allreduce", [1024, 2**30])
    small, large = rows
    # one box: NCCL's NVLS loads and stores each GPU's 1/8 (9/8 M / 450 GB/s); at 1 KiB
    # one-shot (one step, every GPU to every other through the switch: 3.02 µs) beats NVLS
    # (one issuing step and four hops, its barriers' signals and waits issue no transfer:
    # 5.00 µs), which beats the relaying trees (6.00 µs)
    assert large.method in ("in-network", "NVLS") and small.method == "one-shot"
    others = sorted((t, m) for m, t in small.candidates if t is not None)
    assert [m for _, m in others[:2]] == ["one-shot", "NVLS"]
    assert others[1][0] < dict((m, t) for t, m in others)["optimal (k=1)"]
    assert all(row.ratio >= 1 for row in rows)
    # the floor at 1 GiB is the cut bound M / 450 GB/s (in µs), and a GPU's M bytes leave
    # through its one link only after the 1 µs step and must still take 2 links of 1 µs
    assert large.lower_bound_us == pytest.approx(3 + 2**30 / 450 / 1000)


def test_compare_has_in_network_only_with_flags():
    with_flags = compare_methods(build("dgx-h100:1,nvls=1"), "allreduce")
    without = compare_methods(build("dgx-h100:1"), "allreduce")
    assert [c.method for c in with_flags] == [c.method for c in without] + ["in-network", "NVLS"]
    assert with_flags[-2].asymptotic_algbw == pytest.approx(400)  # NVLS: 9/8 M a link
    assert with_flags[-1].time_factor == with_flags[-2].time_factor


def test_cli_round_trip(tmp_path, capsys):
    spec = "leaf-spine:leaves=2,hosts=2,spines=1,sharp=1"
    assert main(["bound", spec, "--collective", "allreduce", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cut_bound"] == "1/100" and data["aggregation"]["optimum"] == "1/100"
    assert data["reduce_scatter_allgather"] == "3/200"
    assert main(["solve", spec, "--collective", "allreduce", "-o", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("*.schedule.json")
    capsys.readouterr()
    assert main(["verify", spec, str(path), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["valid"] and verdict["at_cut_bound"]
    assert verdict["switch_work"]["leaf0"]["reduced"] > 0
    assert main(["simulate", spec, str(path), "--sizes", "1G", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert 1 <= row["ratio"] < 1.02
    # the same file on the relaying fabric: refused by its content hash, one line, exit 2
    assert main(["verify", "leaf-spine:leaves=2,hosts=2,spines=1", str(path)]) == 2
    assert "content hash" in capsys.readouterr().err
    assert main(["bound", spec, "--collective", "broadcast", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["root"] == "l0.h0" and data["time_factor"] == "1/100"


def test_load_topology_spec_with_flags():
    assert load_topology("dgx-h100:2,nvls=1").reducing_switches == ("b0.nvswitch", "b1.nvswitch")
    assert Node("s", "switch", reduce=True).in_network and not Node("c").in_network
    assert Link("a", "b", 1).arcs() == [("a", "b")]
