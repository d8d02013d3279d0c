"""The topology model: every validation rule names its culprit; capacities are exact."""

from __future__ import annotations

import dataclasses
import math
import re
from decimal import Decimal
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll import load_topology
from optcoll.core.rational import exact_number
from optcoll.core.topology import Link, Node, Topology, TopologyBuilder, plain_number
from optcoll.exceptions import (
    BandwidthError,
    DuplicateNodeError,
    LatencyError,
    MissingFieldError,
    NodeTypeError,
    NotStronglyConnectedError,
    SelfLoopError,
    TooFewComputeNodesError,
    TopologyError,
    UnknownFieldError,
    UnknownNodeError,
)

PAIR = [Node("a"), Node("b")]


def pair(bandwidth=10, latency=None, **kw) -> Topology:
    """Two compute nodes a <-> b with the given link attributes."""
    return Topology("pair", PAIR, [Link("a", "b", bandwidth, latency, True, **kw)])


def doc(**changes) -> dict:
    """The issue's example document, with top-level fields replaced."""
    data = {
        "name": "two-gpus",
        "bandwidth_unit": "GB/s",
        "nodes": [
            {"id": "g0", "type": "compute"},
            {"id": "g1", "type": "compute"},
            {"id": "sw", "type": "switch"},
        ],
        "links": [
            {"src": "g0", "dst": "sw", "bandwidth": 100, "bidirectional": True},
            {"src": "g1", "dst": "sw", "bandwidth": 100, "bidirectional": True},
        ],
    }
    data.update(changes)
    return data


# --- structure ----------------------------------------------------------------------------


def test_duplicate_node_id_names_the_id_and_both_positions():
    with pytest.raises(
        DuplicateNodeError, match=r"duplicate node id 'a' \(nodes\[0\] and nodes\[2\]\)"
    ):
        Topology("t", [Node("a"), Node("b"), Node("a", "switch")], [])


def test_link_to_unknown_node_names_link_and_node():
    with pytest.raises(
        UnknownNodeError, match=r"links\[1\] \(b -> zz\) refers to unknown node 'zz'"
    ):
        Topology("t", PAIR, [Link("a", "b", 1), Link("b", "zz", 1)])
    with pytest.raises(
        UnknownNodeError, match=r"links\[0\] \(yy <-> a\) refers to unknown node 'yy'"
    ):
        Topology("t", PAIR, [Link("yy", "a", 1, bidirectional=True)])


def test_self_loop_names_the_node():
    with pytest.raises(SelfLoopError, match=r"links\[0\] \(a -> a\) is a self-loop on node 'a'"):
        Topology("t", PAIR, [Link("a", "a", 1)])


def test_unknown_node_type_names_node_and_type():
    with pytest.raises(
        NodeTypeError,
        match=r"node 'b' has unknown type 'gpu'; valid types are 'compute' and 'switch'",
    ):
        Topology("t", [Node("a"), Node("b", "gpu")], [])


@pytest.mark.parametrize("bad_id", ["", 7, None])
def test_node_id_must_be_a_non_empty_string(bad_id):
    with pytest.raises(MissingFieldError, match=r"nodes\[1\]: node id must be a non-empty string"):
        Topology("t", [Node("a"), Node(bad_id)], [])


def test_group_must_be_a_string():
    with pytest.raises(MissingFieldError, match=r"node 'b': group must be a string, got 3"):
        Topology("t", [Node("a"), Node("b", group=3)], [])


def test_non_node_and_non_link_entries_are_rejected():
    with pytest.raises(MissingFieldError, match=r"nodes\[0\] must be a Node"):
        Topology("t", ["a"], [])
    with pytest.raises(MissingFieldError, match=r"links\[0\] must be a Link"):
        Topology("t", PAIR, [("a", "b", 1)])


@pytest.mark.parametrize(
    "nodes, count",
    [([], 0), ([Node("a")], 1), ([Node("a"), Node("s", "switch")], 1), ([Node("s", "switch")], 0)],
)
def test_fewer_than_two_compute_nodes(nodes, count):
    with pytest.raises(
        TooFewComputeNodesError, match=rf"topology 't' has {count} compute node\(s\); at least 2"
    ):
        Topology("t", nodes, [])


def test_unreachable_compute_node_is_named_with_one_it_cannot_reach():
    nodes = [Node("a"), Node("b"), Node("c")]
    # a -> b -> c -> b: b and c are reachable from a but cannot reach it.
    links = [Link("a", "b", 1), Link("b", "c", 1), Link("c", "b", 1)]
    with pytest.raises(
        NotStronglyConnectedError, match=r"compute node 'b' cannot reach compute node 'a'"
    ):
        Topology("t", nodes, links)
    # b <-> c, c -> a: a reaches no one.
    links = [Link("b", "c", 1, bidirectional=True), Link("c", "a", 1)]
    with pytest.raises(
        NotStronglyConnectedError, match=r"compute node 'b' cannot be reached from compute node 'a'"
    ):
        Topology("t", nodes, links)


def test_reachability_through_switches_counts_but_switches_need_not_be_reachable():
    nodes = [Node("a"), Node("b"), Node("s", "switch"), Node("dead", "switch")]
    links = [
        Link("a", "s", 5, bidirectional=True),
        Link("s", "b", 5, bidirectional=True),
        Link("dead", "a", 1),
    ]
    topo = Topology("t", nodes, links)
    assert topo.switch_nodes == ("s", "dead")
    with pytest.raises(NotStronglyConnectedError, match="'b' cannot reach compute node 'a'"):
        Topology("t", nodes[:3], [Link("a", "s", 5, bidirectional=True), Link("s", "b", 5)])


# --- numbers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, reason",
    [
        (0, "bandwidth must be positive, got 0"),
        (-5, "bandwidth must be positive, got -5"),
        (-0.5, "bandwidth must be positive, got -0.5"),
        (Fraction(0), "bandwidth must be positive"),
        (math.nan, "bandwidth must be finite, got nan"),
        (math.inf, "bandwidth must be finite, got inf"),
        (-math.inf, "bandwidth must be finite, got -inf"),
        (Decimal("NaN"), "bandwidth must be finite"),
        (True, r"bandwidth must be a number .* got True \(bool\)"),
        (False, r"bandwidth must be a number .* got False \(bool\)"),
        ("100.5", r"bandwidth must be a number .* got '100.5' \(str\)"),
        ("0100", r"bandwidth must be a number .* got '0100' \(str\)"),
        ("fast", r"bandwidth must be a number .* got 'fast' \(str\)"),
        ("1/0", "bandwidth has a zero denominator: '1/0'"),
        ("0/4", "bandwidth must be positive, got '0/4'"),
        (None, r"bandwidth must be a number .* got None \(NoneType\)"),
        ([100], r"bandwidth must be a number .* got \[100\] \(list\)"),
        (1 + 2j, r"bandwidth must be a number .* \(complex\)"),
    ],
)
def test_invalid_bandwidth_names_the_link(value, reason):
    with pytest.raises(BandwidthError, match=r"links\[0\] \(a <-> b\): " + reason):
        pair(value)


@pytest.mark.parametrize(
    "value, exact",
    [
        (100, Fraction(100)),
        (12.5, Fraction(25, 2)),
        (0.1, Fraction(1, 10)),
        (Fraction(100, 3), Fraction(100, 3)),
        (Decimal("0.3"), Fraction(3, 10)),
        ("100/3", Fraction(100, 3)),
        (" 7 / 2 ", Fraction(7, 2)),
        (np.int64(40), Fraction(40)),
        (np.float64(2.5), Fraction(5, 2)),
        (np.float32(0.5), Fraction(1, 2)),
        (10**30, Fraction(10**30)),
    ],
)
def test_valid_bandwidths_are_held_exactly(value, exact):
    topo = pair(value)
    assert topo.capacity[("a", "b")] == exact
    assert topo.capacity[("b", "a")] == exact
    assert Topology.from_dict(topo.to_dict()) == topo


@pytest.mark.parametrize(
    "value, reason",
    [
        (-1, "latency must be >= 0, got -1"),
        (math.nan, "latency must be finite, got nan"),
        (math.inf, "latency must be finite, got inf"),
        (True, r"latency must be a number .* \(bool\)"),
        ("slow", r"latency must be a number .* \(str\)"),
    ],
)
def test_invalid_latency_names_the_link(value, reason):
    with pytest.raises(LatencyError, match=r"links\[0\] \(a <-> b\): " + reason):
        pair(10, value)


def test_latency_defaults_to_zero_and_parallel_links_keep_the_largest():
    topo = Topology("t", PAIR, [Link("a", "b", 1, 2.5), Link("a", "b", 1, 1), Link("b", "a", 1)])
    assert topo.latency == {("a", "b"): Fraction(5, 2), ("b", "a"): Fraction(0)}


def test_bidirectional_must_be_a_boolean():
    with pytest.raises(
        MissingFieldError, match=r"links\[0\] .*: bidirectional must be true or false, got 'yes'"
    ):
        Topology("t", PAIR, [Link("a", "b", 1, None, "yes")])


def test_exact_number_rejects_with_the_name_it_is_given():
    with pytest.raises(ValueError, match="speed must be finite"):
        exact_number(math.inf, "speed")


def test_plain_number_reads_back_exactly():
    for value in (Fraction(1, 3), Fraction(25, 2), Fraction(7), Decimal("0.1"), 0.1, 3):
        assert exact_number(plain_number(value), "x") == exact_number(value, "x")
    assert plain_number(Fraction(1, 3)) == "1/3"
    assert plain_number(Fraction(25, 2)) == 12.5


# --- capacities ---------------------------------------------------------------------------


def test_parallel_and_bidirectional_links_add_exactly():
    links = [Link("a", "b", 0.1), Link("a", "b", 0.2), Link("b", "a", 0.3, bidirectional=True)]
    topo = Topology("t", PAIR, links)
    # 0.1 + 0.2 is 3/10 exactly, not the float 0.30000000000000004.
    assert topo.capacity == {("a", "b"): Fraction(3, 5), ("b", "a"): Fraction(3, 10)}
    caps, unit = topo.integer_capacities()
    assert caps == {("a", "b"): 2, ("b", "a"): 1}
    assert unit == Fraction(3, 10)


def test_node_bandwidths_and_cuts_on_a_switch():
    topo = Topology(
        "t",
        [Node("a"), Node("b"), Node("c"), Node("s", "switch")],
        [
            Link("a", "s", 3, bidirectional=True),
            Link("b", "s", 5, bidirectional=True),
            Link("c", "s", 7),
            Link("s", "c", 1),
        ],
    )
    assert topo.out_bandwidth("s") == 9 and topo.in_bandwidth("s") == 15
    assert topo.out_bandwidth("c") == 7 and topo.in_bandwidth("c") == 1
    assert topo.cut_bandwidth({"a", "s"}) == 5 + 1
    assert topo.cut_bandwidth({"c"}) == 7
    with pytest.raises(UnknownNodeError, match="unknown node 'q' in topology 't'"):
        topo.cut_bandwidth({"q"})
    with pytest.raises(UnknownNodeError, match="unknown node 'q'"):
        topo.out_bandwidth("q")


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(1, 10**9),
            st.fractions(min_value=Fraction(1, 10**6), max_value=10**6).filter(lambda f: f > 0),
            st.floats(min_value=1e-6, max_value=1e9),
        ),
        min_size=2,
        max_size=8,
    )
)
def test_integer_capacities_are_exact_with_gcd_one(bandwidths):
    nodes = [Node(f"n{i}") for i in range(len(bandwidths))]
    links = [Link(f"n{i}", f"n{(i + 1) % len(bandwidths)}", bw) for i, bw in enumerate(bandwidths)]
    if len(bandwidths) == 2:
        links = [Link("n0", "n1", bandwidths[0]), Link("n1", "n0", bandwidths[1])]
    topo = Topology("ring", nodes, links)
    caps, unit = topo.integer_capacities()
    assert all(isinstance(v, int) and v > 0 for v in caps.values())
    assert math.gcd(*caps.values()) == 1
    assert {arc: c * unit for arc, c in caps.items()} == dict(topo.capacity)


# --- views and immutability -----------------------------------------------------------------


def test_networkx_view_carries_types_groups_and_exact_bandwidth():
    b = TopologyBuilder("t")
    b.compute("a", "box0")
    b.compute("b", "box1")
    b.switch("s")
    b.link("a", "s", 12.5, bidirectional=True)
    b.link("b", "s", 25, bidirectional=True)
    b.link("a", "s", 12.5)
    graph = b.build().to_networkx()
    assert isinstance(graph, nx.DiGraph)
    assert graph.nodes["a"] == {"type": "compute", "group": "box0"}
    assert graph.nodes["s"] == {"type": "switch"}
    assert graph.edges["a", "s"]["bandwidth"] == Fraction(25)
    assert graph.number_of_edges() == 4


def test_topology_is_immutable():
    topo = pair()
    with pytest.raises(dataclasses.FrozenInstanceError):
        topo.name = "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        topo.nodes[0].id = "z"
    assert isinstance(topo.nodes, tuple) and isinstance(topo.links, tuple)


def test_equality_and_hash_follow_content():
    assert pair(12.5) == pair(Fraction(25, 2))
    assert hash(pair(12.5)) == hash(pair(Fraction(25, 2)))
    assert pair(12.5) != pair(12)


# --- the file-format dictionary --------------------------------------------------------------


def test_issue_example_dictionary_loads():
    topo = Topology.from_dict(doc())
    assert topo.compute_nodes == ("g0", "g1") and topo.switch_nodes == ("sw",)
    assert topo.capacity[("sw", "g0")] == 100
    assert topo.to_dict()["version"] == 1


@pytest.mark.parametrize(
    "where, entry, field",
    [
        ("topology", None, "nmae"),
        ("nodes[1]", "nodes", "kind"),
        ("links[0]", "links", "bandwith"),
    ],
)
def test_unknown_fields_are_rejected_at_every_level(where, entry, field):
    data = doc()
    if entry is None:
        data[field] = "x"
    else:
        data[entry][1 if entry == "nodes" else 0][field] = 1
    with pytest.raises(
        UnknownFieldError,
        match=rf"{re.escape(where)} has unknown field '{field}'; allowed fields are \[",
    ):
        Topology.from_dict(data)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.pop("nodes"), "topology is missing the required field 'nodes'"),
        (lambda d: d.pop("links"), "topology is missing the required field 'links'"),
        (lambda d: d["nodes"][0].pop("id"), r"nodes\[0\] is missing the required field 'id'"),
        (lambda d: d["links"][1].pop("src"), r"links\[1\] is missing the required field 'src'"),
        (lambda d: d["links"][1].pop("dst"), r"links\[1\] is missing the required field 'dst'"),
        (
            lambda d: d["links"][0].pop("bandwidth"),
            r"links\[0\] is missing the required field 'bandwidth'",
        ),
    ],
)
def test_missing_keys_are_named(mutate, message):
    data = doc()
    mutate(data)
    with pytest.raises(MissingFieldError, match=message):
        Topology.from_dict(data)


@pytest.mark.parametrize(
    "mutate, error, message",
    [
        (
            lambda d: d.update(nodes={"g0": "compute"}),
            MissingFieldError,
            "field 'nodes' must be a list, got dict",
        ),
        (
            lambda d: d.update(links="g0-g1"),
            MissingFieldError,
            "field 'links' must be a list, got str",
        ),
        (
            lambda d: d["nodes"].__setitem__(0, "g0"),
            MissingFieldError,
            r"nodes\[0\] must be a mapping, got 'g0'",
        ),
        (
            lambda d: d["links"].__setitem__(0, ["g0", "sw"]),
            MissingFieldError,
            r"links\[0\] must be a mapping",
        ),
        (
            lambda d: d["nodes"][0].update(id=0),
            MissingFieldError,
            r"nodes\[0\]: 'id' must be a non-empty string, got 0",
        ),
        (
            lambda d: d["nodes"][0].update(group=1),
            MissingFieldError,
            r"nodes\[0\]: 'group' must be a string, got 1",
        ),
        (
            lambda d: d["nodes"][2].update(type="router"),
            NodeTypeError,
            "node 'sw' has unknown type 'router'",
        ),
        (
            lambda d: d["nodes"][2].update(type=None),
            NodeTypeError,
            "node 'sw' has unknown type None",
        ),
        (
            lambda d: d["links"][0].update(src=1),
            MissingFieldError,
            r"links\[0\]: 'src' must be a node id string, got 1",
        ),
        (
            lambda d: d["links"][0].update(dst=None),
            MissingFieldError,
            r"links\[0\]: 'dst' must be a node id string",
        ),
        (
            lambda d: d["links"][0].update(bandwidth="100.0"),
            BandwidthError,
            r"links\[0\] \(g0 <-> sw\): bandwidth must be a number",
        ),
        (
            lambda d: d["links"][0].update(bidirectional="true"),
            MissingFieldError,
            "bidirectional must be true or false, got 'true'",
        ),
        (lambda d: d["links"][0].update(latency=-1), LatencyError, "latency must be >= 0"),
        (lambda d: d.update(name=3), MissingFieldError, "field 'name' must be a string, got 3"),
        (
            lambda d: d.update(description=["x"]),
            MissingFieldError,
            "field 'description' must be a string",
        ),
        (
            lambda d: d.update(bandwidth_unit=None),
            MissingFieldError,
            "field 'bandwidth_unit' must be a string",
        ),
        (
            lambda d: d.update(version=2),
            MissingFieldError,
            "field 'version' is 2; this optcoll reads version 1",
        ),
        (lambda d: d.update(version=True), MissingFieldError, "field 'version' is True"),
        (
            lambda d: d.update(format="msccl"),
            MissingFieldError,
            "field 'format' must be 'optcoll-topology', got 'msccl'",
        ),
        (lambda d: d["nodes"].append({"id": "g0"}), DuplicateNodeError, "duplicate node id 'g0'"),
    ],
)
def test_wrong_types_are_named(mutate, error, message):
    data = doc()
    mutate(data)
    with pytest.raises(error, match=message):
        Topology.from_dict(data)


@pytest.mark.parametrize("data", [[], "topology", 3, None])
def test_top_level_must_be_a_mapping(data):
    with pytest.raises(
        MissingFieldError, match="a topology must be a mapping with 'nodes' and 'links'"
    ):
        Topology.from_dict(data)


def test_errors_carry_the_location_of_the_entry():
    data = doc()
    data["links"][1]["dst"] = "nowhere"
    with pytest.raises(TopologyError) as info:
        Topology.from_dict(data)
    assert info.value.location == ("links", 1)
    data = doc()
    data["nodes"][2]["colour"] = "red"
    with pytest.raises(TopologyError) as info:
        Topology.from_dict(data)
    assert info.value.location == ("nodes", 2, "colour")


def test_defaults_type_compute_name_from_caller_unit_gbps():
    data = {
        "nodes": [{"id": "a"}, {"id": "b"}],
        "links": [{"src": "a", "dst": "b", "bandwidth": 1, "bidirectional": True}],
    }
    topo = Topology.from_dict(data, default_name="file-stem")
    assert topo.name == "file-stem" and topo.bandwidth_unit == "GB/s" and topo.num_compute == 2


@pytest.mark.parametrize("end", [0, None, ["a"]])
def test_link_ends_must_be_strings(end):
    with pytest.raises(MissingFieldError, match=r"links\[0\]: src and dst must be node id strings"):
        Topology("t", PAIR, [Link("a", end, 1)])


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=4)
    | st.sampled_from(["g0", "g1", "sw", "compute", "switch", "1/2", "0/0"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    st.sampled_from(
        [
            (),
            ("nodes",),
            ("links",),
            ("nodes", 0),
            ("links", 1),
            ("nodes", 2, "type"),
            ("nodes", 1, "id"),
            ("links", 0, "src"),
            ("links", 0, "bandwidth"),
            ("links", 1, "latency"),
            ("links", 0, "bidirectional"),
            ("name",),
            ("version",),
            ("nodes", 0, "group"),
        ]
    ),
    _json_values,
)
def test_any_malformed_document_raises_a_topology_error(path, value):
    data = doc()
    if not path:
        data = value
    else:
        target = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
    try:
        topo = Topology.from_dict(data)
    except TopologyError:
        return
    assert topo.num_compute >= 2


def test_cached_views_are_read_only():
    topology = load_topology("dgx-a100:1")
    caps, _ = topology.integer_capacities()
    for view in (topology.capacity, topology.latency, topology.node, caps):
        with pytest.raises(TypeError):
            view[next(iter(view))] = 0  # type: ignore[index]
    assert topology.capacity == load_topology("dgx-a100:1").capacity


# --- editing API and content hash ----------------------------------------------------


def test_edits_return_renamed_validated_copies():

    from optcoll.topologies import build

    ring = build("ring:4")
    added = ring.with_link("n0", "n2", 50, bidirectional=True)
    assert added.name == "ring:4~edited" and added.capacity[("n2", "n0")] == 50
    assert "added link n0 <-> n2" in added.description
    removed = added.without_link("n0", "n2", bidirectional=True, name="back")
    assert removed.name == "back" and removed.content_hash == ring.content_hash
    one_way = ring.without_link("n0", "n1")
    assert ("n0", "n1") not in one_way.capacity and one_way.capacity[("n1", "n0")] == 100
    with pytest.raises(UnknownNodeError, match="no link n0 -> n2"):
        ring.without_link("n0", "n2")
    with pytest.raises(NotStronglyConnectedError):
        ring.without_link("n0", "n1", bidirectional=True).without_link(
            "n2", "n3", bidirectional=True
        )


def test_scale_links_by_node_and_by_predicate():

    from optcoll.topologies import build

    ring = build("ring:4")
    slow = ring.scale_links("n0", 0.5)
    assert slow.capacity[("n0", "n1")] == 50 and slow.capacity[("n3", "n0")] == 50
    assert slow.capacity[("n1", "n2")] == 100 and slow.name == "ring:4~edited"
    assert slow.scale_links("n0", 2).content_hash == ring.content_hash
    with pytest.raises(UnknownNodeError, match="matches no link"):
        ring.scale_links(lambda link: False, 2)
    with pytest.raises(BandwidthError):
        ring.scale_links("n0", 0)
    with pytest.raises(UnknownNodeError):
        ring.scale_links("n9", 2)


def test_content_hash_ignores_name_and_declaration_split():
    from optcoll.topologies import build

    ring = build("ring:4")
    split = Topology(
        "other",
        ring.nodes,
        [Link(u, v, c) for (u, v), c in reversed(list(ring.capacity.items()))],
    )
    assert split.content_hash == ring.content_hash
    assert ring.with_name("x").content_hash == ring.content_hash


@pytest.mark.parametrize("bad", ["a\nb", "tab\there", "bell\x07", "del\x7f", "nul\x00"])
def test_node_ids_with_control_characters_are_refused(bad):
    nodes = [Node(bad), Node("b")]
    links = [Link(bad, "b", 1), Link("b", bad, 1)]
    code = next(ch for ch in bad if ord(ch) < 32 or ord(ch) == 127)
    with pytest.raises(MissingFieldError, match=rf"nodes\[0\]: .*U\+{ord(code):04X}"):
        Topology("t", nodes, links)
