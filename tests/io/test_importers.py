"""Importers: hand-written msccl-tools, TACCL, GraphML and edge-list files."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.bounds.multicast import multicast_bound
from optcoll.cli import main
from optcoll.exceptions import (
    BandwidthError,
    FileFormatError,
    ImportFormatError,
    NodeTypeError,
    NotStronglyConnectedError,
)
from optcoll.io import (
    detect_format,
    from_edgelist,
    from_msccl,
    import_topology,
)

DATA = Path(__file__).parents[1] / "data" / "importers"


def write(tmp_path: Path, name: str, content: object) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


# --- detection --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("msccl_ring4.json", "msccl"),
        ("msccl_asymmetric3.json", "msccl"),
        ("taccl_quad.json", "taccl"),
        ("star.graphml", "graphml"),
        ("leafspine.edgelist", "edgelist"),
    ],
)
def test_detect_format(name, fmt):
    assert detect_format(DATA / name) == fmt


def test_detect_format_of_native_file_and_unknown_suffix(tmp_path):
    native = write(tmp_path, "t.json", {"nodes": [], "links": []})
    assert detect_format(native) == "optcoll"
    with pytest.raises(
        ImportFormatError, match=r"t\.xyz: cannot tell the format from the suffix '\.xyz'"
    ):
        detect_format(write(tmp_path, "t.xyz", "a b 1"))


# --- msccl-tools ------------------------------------------------------------------


def test_msccl_ring_with_link_bandwidth_and_its_optimum():
    topo = import_topology(DATA / "msccl_ring4.json", link_bandwidth=25)
    assert topo.name == "Ring(n=4)" and topo.bandwidth_unit == "GB/s"
    assert topo.compute_nodes == ("gpu0", "gpu1", "gpu2", "gpu3")
    assert topo.capacity == {
        (f"gpu{s}", f"gpu{d}"): Fraction(25) for s in range(4) for d in ((s + 1) % 4, (s - 1) % 4)
    }
    # three GPUs behind the two links into the fourth: 3/50
    assert optimal_cut_ratio(topo).ratio == Fraction(3, 50)


def test_msccl_links_are_indexed_destination_first():
    topo = import_topology(DATA / "msccl_asymmetric3.json")
    assert topo.bandwidth_unit == "link"
    assert topo.capacity == {
        ("gpu1", "gpu0"): 2,
        ("gpu2", "gpu0"): 1,
        ("gpu0", "gpu1"): 1,
        ("gpu1", "gpu2"): 1,
    }


def test_msccl_hub_and_spoke_becomes_one_switch_with_the_same_optimum():
    topo = import_topology(DATA / "msccl_hub4.json")
    assert topo.switch_nodes == ("switch0",)
    assert topo.capacity == {
        **{(f"gpu{i}", "switch0"): Fraction(1) for i in range(4)},
        **{("switch0", f"gpu{i}"): Fraction(1) for i in range(4)},
    }
    # each rank receives the other 3 shards through an ingress cap of 1 link
    assert optimal_cut_ratio(topo).ratio == 3


def test_msccl_blocking_star_gets_one_switch_per_direction():
    topo = import_topology(DATA / "msccl_star4_blocking.json")
    assert topo.switch_nodes == ("to_points", "from_points")
    assert topo.capacity[("gpu0", "to_points")] == 1
    assert topo.capacity[("to_points", "gpu2")] == 1
    assert topo.capacity[("gpu3", "from_points")] == 1
    assert topo.capacity[("from_points", "gpu0")] == 1
    assert ("gpu0", "gpu1") not in topo.capacity
    # to_points receives 1 (from gpu0) but could send 3: it cannot copy, so gpu0's
    # shard (3 copies) and each other shard (2 copies, relayed by gpu0) all cross
    # gpu0 -> to_points: 9 units on 1, the multicast LP's optimum too (the cut
    # ratio of the raw links, 3, would need the switch to copy)
    assert optimal_cut_ratio(topo).ratio == 9
    assert multicast_bound(topo).cut_ratio == 9


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"links": [[0, 1], [1]]}, r"links\[1\] must be a list of 2 numbers, got 1"),
        ({"links": [[0, 1], [1, -1]]}, r"links\[1\]\[1\] must be non-negative"),
        ({"links": [[1, 1], [1, 0]]}, r"links\[0\]\[0\] links rank 0 to itself"),
        ({"links": [[0, "x"], [1, 0]]}, r"links\[0\]\[1\] must be a number, got 'x'"),
        ({"links": "nope"}, r"field 'links' must be a non-empty list of rows"),
        ({"msccl_type": "algorithm"}, r"field 'topology' of the msccl-tools algorithm must be"),
        ({"msccl_type": "instance"}, r"only 'topology' and 'algorithm' objects hold a topology"),
        ({"switches": [[[0], [1], 1]]}, r"switches\[0\] must be \[srcs, dsts, bandwidth, name\]"),
        ({"switches": [[[0], [5], 1, "s"]]}, r"switches\[0\]: dsts holds 5, not a rank in 0\.\.2"),
        ({"switches": [[[0], [1], 0, "s"]]}, r"switches\[0\] bandwidth must be positive"),
        (
            {"switches": [[[0, 1], [1, 2], 1, "shared"]]},
            r"switches\[0\] \('shared'\) caps 2 sources and 2 destinations together",
        ),
        (
            {"links": [[0, 1, 0], [1, 0, 1], [0, 1, 0]], "switches": [[[0], [1, 2], 1, "s"]]},
            r"cap rank 0 -> rank 2, which has no link",
        ),
        (
            {"switches": [[[0], [1, 2], 3, "out"], [[0, 2], [1], 3, "in"]]},
            r"the link rank 0 -> rank 1 \(1 link units\) is narrower than what switch entries 'out', 'in' let through \(3\)",
        ),
    ],
)
def test_msccl_malformed_files_name_the_field(tmp_path, change, message):
    data = {
        "msccl_type": "topology",
        "name": "t",
        "links": [[0, 1, 1], [1, 0, 1], [1, 1, 0]],
        "switches": [],
    }
    data.update(change)
    path = write(tmp_path, "bad.json", data)
    with pytest.raises(ImportFormatError, match=message) as caught:
        import_topology(path, format="msccl")
    assert str(caught.value).startswith(f"{path}: ")


def test_msccl_exactness_check_uses_the_group_caps():
    # rank 0 may send 3 links' worth in total but each direct link is 1 wide: not expressible
    data = {"links": [[0, 1, 1], [1, 0, 1], [1, 1, 0]], "switches": [[[0], [1, 2], 1, "ok"]]}
    topo = from_msccl(data)
    assert topo.capacity[("gpu0", "ok")] == 1 and topo.capacity[("ok", "gpu1")] == 1


def test_msccl_disconnected_matrix_is_a_topology_error(tmp_path):
    path = write(tmp_path, "cut.json", {"links": [[0, 1, 0], [1, 0, 0], [0, 0, 0]]})
    with pytest.raises(NotStronglyConnectedError, match="gpu2"):
        import_topology(path)


# --- msccl-tools: DistributedHubAndSpoke and algorithm files --------------------------


def _msccl_model_max_flow(data, sources, sinks):
    """Max flow from ``sources`` to ``sinks`` in msccl-tools' own model, by an LP: a flow
    on every linked pair (``links[dst][src]`` wide), conserved at the other ranks, each
    ``switches`` entry capping the sum over its (src, dst) pairs (scipy's HiGHS, floats)."""
    import numpy as np
    from scipy.optimize import linprog

    links = data["links"]
    n = len(links)
    pairs = [(s, d) for d in range(n) for s in range(n) if links[d][s] > 0]
    index = {p: i for i, p in enumerate(pairs)}
    gain = np.array([float((d in sinks) - (s in sinks)) for s, d in pairs])
    caps = []
    for srcs, dsts, _, _ in data["switches"]:
        row = np.zeros(len(pairs))
        for p in ((s, d) for s in srcs for d in dsts if (s, d) in index):
            row[index[p]] = 1
        caps.append(row)
    balance = [
        np.array([float((d == v) - (s == v)) for s, d in pairs])
        for v in range(n)
        if v not in sources and v not in sinks
    ]
    result = linprog(
        -gain,
        A_ub=np.array(caps) if caps else None,
        b_ub=[bw for _, _, bw, _ in data["switches"]] or None,
        A_eq=np.array(balance) if balance else None,
        b_eq=np.zeros(len(balance)) if balance else None,
        bounds=[(0, links[d][s]) for s, d in pairs],
        method="highs",
    )
    assert result.status == 0
    return -result.fun


@pytest.mark.parametrize(
    ("name", "blocks", "r_star"),
    [
        # HubAndSpoke(3) x 2 copies, remote bandwidth 1
        ("msccl_distributed_hub6.json", [{0, 1, 2}, {3, 4, 5}], Fraction(15, 4)),
        # FullyConnected(2) x 3 copies, remote bandwidth 2
        ("msccl_distributed_fc6.json", [{0, 1}, {2, 3}, {4, 5}], Fraction(5, 2)),
    ],
)
def test_msccl_distributed_hub_and_spoke_is_exact(name, blocks, r_star):
    data = json.loads((DATA / name).read_text())
    topo = import_topology(DATA / name)
    n = len(data["links"])
    assert topo.name == data["name"] and topo.compute_nodes == tuple(f"gpu{r}" for r in range(n))
    remote = data["switches"][-1][2]
    for a, block in enumerate(blocks):
        assert topo.capacity[(f"block{a}.out", f"block{a}.up")] == remote
        for b, other in enumerate(blocks):
            if a != b:
                assert topo.capacity[(f"block{a}.up", f"block{b}.down")] == remote
                assert not any(
                    (f"gpu{s}", f"gpu{d}") in topo.capacity for s in block for d in other
                )
    # between any two sets of ranks the graph carries what msccl-tools' own constraints
    # allow (an LP max flow over its links and switch caps, no optcoll code)
    graph = nx.DiGraph()
    for (u, v), c in topo.capacity.items():
        graph.add_edge(u, v, capacity=c)
    for size in range(1, n):
        for inside in itertools.combinations(range(n), size):
            outside = set(range(n)) - set(inside)
            for sinks in (set(inside), {inside[0]}):
                graph.add_edges_from(("SOURCE", f"gpu{s}") for s in outside)
                graph.add_edges_from((f"gpu{d}", "SINK") for d in sinks)
                flow = nx.maximum_flow_value(graph, "SOURCE", "SINK")
                graph.remove_nodes_from(["SOURCE", "SINK"])
                assert flow == pytest.approx(_msccl_model_max_flow(data, outside, sinks)), (
                    outside,
                    sinks,
                )
    # switches cannot copy (nor can msccl-tools' switch caps): the optimum is the
    # forwardable cut ratio, which the multicast LP confirms
    assert optimal_cut_ratio(topo).ratio == multicast_bound(topo).cut_ratio == r_star


def test_msccl_algorithm_file_is_read_through_its_topology():
    topo = import_topology(DATA / "msccl_algorithm_ring4.json", link_bandwidth=25)
    assert topo.name == "allgather-ring-4"
    assert "of msccl-tools algorithm 'allgather-ring-4'" in topo.description
    assert topo.capacity == import_topology(DATA / "msccl_ring4.json", link_bandwidth=25).capacity
    status = main(["show", str(DATA / "msccl_algorithm_ring4.json")])
    assert status == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"topology": None}, "field 'topology' of the msccl-tools algorithm must be a topology"),
        ({"topology": {"msccl_type": "instance"}}, "must be a topology object"),
    ],
)
def test_msccl_algorithm_without_a_topology_is_refused(tmp_path, change, message):
    data = json.loads((DATA / "msccl_algorithm_ring4.json").read_text())
    data.update(change)
    path = write(tmp_path, "algo.json", data)
    with pytest.raises(ImportFormatError, match=message):
        import_topology(path)


def test_msccl_block_caps_that_are_not_blocks_are_refused():
    data = json.loads((DATA / "msccl_distributed_fc6.json").read_text())
    data["switches"][-1][0] = [0, 1, 2]  # copy 2's ingress cap: not from whole blocks
    with pytest.raises(ImportFormatError, match=r"a block's caps to and from all other blocks"):
        from_msccl(data)
    data = json.loads((DATA / "msccl_distributed_fc6.json").read_text())
    data["links"][2][0] = 1  # rank 0 -> rank 2 narrower than the block caps (2)
    with pytest.raises(ImportFormatError, match=r"rank 0 -> rank 2 \(1 link units\) is narrower"):
        from_msccl(data)


# --- TACCL ------------------------------------------------------------------------


def test_taccl_single_box_bandwidth_from_betas_and_latency_from_alpha():
    topo = import_topology(DATA / "taccl_quad.json", chunk_bytes=10**6)
    assert topo.name == "taccl-quad_1MB" and topo.bandwidth_unit == "GB/s"
    assert topo.num_compute == 4 and not topo.switch_nodes
    # 1 MB per 40 us is 25 GB/s per link; gpu0 <-> gpu3 has two links
    assert topo.capacity[("b0.gpu0", "b0.gpu1")] == 25
    assert topo.capacity[("b0.gpu3", "b0.gpu0")] == 50
    assert topo.capacity[("b0.gpu1", "b0.gpu2")] == 50
    assert topo.latency[("b0.gpu0", "b0.gpu1")] == Fraction(1, 2)
    # every GPU receives through links worth 100 GB/s: 3/100
    assert optimal_cut_ratio(topo).ratio == Fraction(3, 100)


def test_taccl_boxes_share_an_ib_switch_through_their_nics():
    topo = import_topology(DATA / "taccl_quad.json", chunk_bytes=10**6, boxes=2)
    assert topo.name == "taccl-quad_1MB:2"
    assert topo.switch_nodes == ("ib", "b0.nic0", "b0.nic1", "b1.nic0", "b1.nic1")
    assert topo.capacity[("b0.gpu1", "b0.nic0")] == Fraction(25, 2)  # 1 MB per 80 us
    assert topo.capacity[("b1.gpu2", "b1.nic1")] == Fraction(25, 2)
    assert topo.capacity[("b0.nic1", "ib")] == Fraction(25, 2)
    assert topo.latency[("ib", "b1.nic0")] == Fraction(5, 2)
    # a box's two NICs carry 25 GB/s out, 4 GPUs of the other box must get the data
    assert optimal_cut_ratio(topo).ratio == Fraction(4, 25)


def test_taccl_without_chunk_size_uses_chunks_per_microsecond():
    topo = import_topology(DATA / "taccl_quad.json")
    assert topo.bandwidth_unit == "chunk/us"
    assert topo.capacity[("b0.gpu0", "b0.gpu1")] == Fraction(1, 40)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"gpus_per_node": 1},
            r"'gpus_per_node' must be an integer >= 2 \(or 1 with boxes >= 2\), got 1",
        ),
        ({"betas": [[0, 40], [40, 0]]}, r"field 'betas' has 2 rows; expected 4"),
        (
            {"betas": [[0, 0, 40, 40], [40, 0, 40, 40], [40, 40, 0, 40], [40, 40, 40, 0]]},
            r"betas\[0\]\[1\] is 0 but links\[0\]\[1\] is 1",
        ),
        ({"alpha": None}, r"field 'alpha' must be a number, got None"),
    ],
)
def test_taccl_malformed_profiles(tmp_path, change, message):
    data = json.loads((DATA / "taccl_quad.json").read_text())
    data.update(change)
    with pytest.raises(ImportFormatError, match=message):
        import_topology(write(tmp_path, "p.json", data))


def test_taccl_builtin_profile_without_a_box_name_asks_for_the_box(tmp_path):
    data = json.loads((DATA / "taccl_ndv2_builtin.json").read_text())
    data["name"] = "my-box"
    path = write(tmp_path, "p.json", data)
    with pytest.raises(ImportFormatError, match=r"p\.json: .*pass the option box= one of NDv2"):
        import_topology(path)
    assert import_topology(path, box="ndv2").num_compute == 8


def test_taccl_multi_box_needs_the_remote_profile(tmp_path):
    data = json.loads((DATA / "taccl_quad.json").read_text())
    del data["remote_beta"]
    with pytest.raises(ImportFormatError, match="missing the required field 'remote_beta'"):
        import_topology(write(tmp_path, "p.json", data), boxes=2)
    assert import_topology(write(tmp_path, "q.json", data)).num_compute == 4  # one box is fine


# --- GraphML ----------------------------------------------------------------------


def test_graphml_undirected_with_types_groups_and_latency():
    topo = import_topology(DATA / "star.graphml")
    assert topo.name == "star"  # the file's stem (GraphML graph ids are not names)
    assert topo.compute_nodes == ("g0", "g1", "g2") and topo.switch_nodes == ("sw",)
    assert {n.group for n in topo.nodes} == {"box0"}
    assert topo.capacity[("sw", "g2")] == Fraction(25, 2)
    assert topo.capacity[("g0", "sw")] == 100
    assert topo.latency[("sw", "g0")] == Fraction(1, 2)
    # two GPUs behind g2's 12.5 GB/s link
    assert optimal_cut_ratio(topo).ratio == Fraction(4, 25)


def test_graphml_directed_with_exact_string_bandwidths():
    topo = import_topology(DATA / "ring_directed.graphml")
    assert topo.capacity == {("a", "b"): Fraction(1, 3), ("b", "c"): Fraction(1, 10), ("c", "a"): 2}


def test_graphml_round_trip_through_networkx(tmp_path):
    g = nx.DiGraph(name="written")
    g.add_edge("x", "y", bandwidth=3)
    g.add_edge("y", "x", bandwidth=5)
    path = tmp_path / "w.graphml"
    nx.write_graphml(g, path)
    topo = import_topology(path)
    assert topo.name == "written"
    assert topo.capacity == {("x", "y"): 3, ("y", "x"): 5}


def test_graphml_errors(tmp_path):
    g = nx.Graph()
    g.add_edge("a", "b", weight=1)
    nx.write_graphml(g, tmp_path / "nobw.graphml")
    with pytest.raises(
        ImportFormatError, match=r"nobw\.graphml: edge a -- b has no 'bandwidth' attribute"
    ):
        import_topology(tmp_path / "nobw.graphml")
    broken = write(tmp_path, "broken.graphml", "<graphml><graph>")
    with pytest.raises(ImportFormatError, match=r"broken\.graphml: not a readable GraphML file"):
        import_topology(broken)
    g = nx.Graph()
    g.add_edge("a", "b", bandwidth=-2.0)
    nx.write_graphml(g, tmp_path / "neg.graphml")
    with pytest.raises(
        ImportFormatError, match=r"edge a -- b: bandwidth must be positive, got -2\.0"
    ):
        import_topology(tmp_path / "neg.graphml")
    g = nx.Graph()
    g.add_node("s", type="router")
    g.add_edge("a", "s", bandwidth=1.0)
    g.add_edge("b", "s", bandwidth=1.0)
    nx.write_graphml(g, tmp_path / "type.graphml")
    with pytest.raises(NodeTypeError, match=r"type\.graphml: node 's' has unknown type 'router'"):
        import_topology(tmp_path / "type.graphml")


# --- edge lists -------------------------------------------------------------------


def test_edgelist_all_three_line_styles():
    topo = import_topology(DATA / "leafspine.edgelist")
    assert topo.name == "leafspine"
    assert topo.compute_nodes == ("h0", "h1", "h2", "h3")
    assert topo.switch_nodes == ("leaf0", "leaf1", "spine")
    assert all(c == 100 for c in topo.capacity.values()) and len(topo.capacity) == 12
    assert topo.latency[("leaf0", "h1")] == Fraction(1, 2)
    assert topo.latency[("h3", "leaf1")] == Fraction(1, 2)
    # each host receives 3 shards over its 100 GB/s link (worse than 2 behind an uplink)
    assert optimal_cut_ratio(topo).ratio == Fraction(3, 100)


def test_edgelist_directed_directive():
    topo = from_edgelist("# directed\na b 1\nb c 2\nc a 3\n", name="tri")
    assert topo.capacity == {("a", "b"): 1, ("b", "c"): 2, ("c", "a"): 3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b\n", r"line 1: link a b has no 'bandwidth'"),
        ("a b 1\nb c x\n", r"line 2: bandwidth must be a number, got 'x'"),
        ("a b 1 2 3\n", r"line 1: expected SRC DST BANDWIDTH \[LATENCY\], got 5 fields"),
        ("a b speed=3\n", r"line 1: unknown attribute 'speed'"),
        ("a b 3 bandwidth=3\n", r"line 1: bandwidth is given twice"),
        ("a b {'bandwidth': }\n", r"line 1: cannot read the attribute dictionary"),
        ("# only comments\n", r"the edge list holds no links"),
        ("# switches: sw\na b 1\n", r"'# switches:' names 'sw', which no link uses"),
        ("a {'bandwidth': 1}\n", r"line 1: expected SRC DST before the attributes"),
        ("a b 1\nb c 1\n", r"does not say whether its links are directed"),
        ("# directed\n# bidirectional\na b 1\n", r"says both '# directed and # bidirectional'"),
    ],
)
def test_edgelist_errors_name_the_line(tmp_path, text, message):
    path = write(tmp_path, "bad.edges", text)
    with pytest.raises(ImportFormatError, match=message) as caught:
        import_topology(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_edgelist_zero_bandwidth_is_rejected(tmp_path):
    with pytest.raises(ImportFormatError, match=r"line 1: bandwidth must be positive, got '0'"):
        import_topology(write(tmp_path, "z.txt", "a b 0\n"))


def test_import_topology_errors(tmp_path):
    with pytest.raises(FileFormatError, match=r"missing\.json: file not found"):
        import_topology(tmp_path / "missing.json")
    with pytest.raises(ImportFormatError, match="unknown format 'dot'"):
        import_topology(DATA / "star.graphml", format="dot")
    native = write(
        tmp_path,
        "native.json",
        {
            "nodes": [{"id": "a"}, {"id": "b"}],
            "links": [{"src": "a", "dst": "b", "bandwidth": 0, "bidirectional": True}],
        },
    )
    with pytest.raises(BandwidthError, match=r"native\.json: .*bandwidth must be positive"):
        import_topology(native)


# --- property tests: what goes in comes out, exactly ----------------------------------

bandwidths = st.fractions(min_value=Fraction(1, 8), max_value=400, max_denominator=16)


@st.composite
def ring_with_chords(draw):
    """A strongly connected directed graph: a ring plus random chords, exact bandwidths."""
    n = draw(st.integers(3, 7))
    arcs = {(i, (i + 1) % n): draw(bandwidths) for i in range(n)}
    for _ in range(draw(st.integers(0, 6))):
        u, v = draw(st.sampled_from([(a, b) for a in range(n) for b in range(n) if a != b]))
        arcs[(u, v)] = draw(bandwidths)
    return n, arcs


@settings(derandomize=True, max_examples=40, deadline=None)
@given(ring_with_chords())
def test_edgelist_round_trip_is_exact(graph):
    n, arcs = graph
    text = "# directed\n" + "".join(f"n{u} n{v} {bw}\n" for (u, v), bw in arcs.items())
    topo = from_edgelist(text, name="g")
    assert dict(topo.capacity) == {(f"n{u}", f"n{v}"): bw for (u, v), bw in arcs.items()}


@settings(derandomize=True, max_examples=40, deadline=None)
@given(ring_with_chords(), st.integers(1, 4))
def test_msccl_matrix_round_trip_is_exact(graph, multiplier):
    n, arcs = graph
    links = [[0] * n for _ in range(n)]
    for (u, v), bw in arcs.items():
        links[v][u] = bw.numerator  # destination-first, whole links
    topo = from_msccl({"links": links}, link_bandwidth=Fraction(25, multiplier))
    expected = {
        (f"gpu{u}", f"gpu{v}"): bw.numerator * Fraction(25, multiplier)
        for (u, v), bw in arcs.items()
    }
    assert dict(topo.capacity) == expected


@settings(derandomize=True, max_examples=25, deadline=None)
@given(ring_with_chords())
def test_graphml_round_trip_is_exact(tmp_path_factory, graph):
    n, arcs = graph
    g = nx.DiGraph()
    for (u, v), bw in arcs.items():
        g.add_edge(f"n{u}", f"n{v}", bandwidth=f"{bw.numerator}/{bw.denominator}")
    path = tmp_path_factory.mktemp("graphml") / "g.graphml"
    nx.write_graphml(g, path)
    topo = import_topology(path)
    assert dict(topo.capacity) == {(f"n{u}", f"n{v}"): bw for (u, v), bw in arcs.items()}


def test_native_files_pass_through_with_an_optional_new_name(tmp_path):
    from optcoll import load_topology
    from optcoll.io import save_topology

    path = tmp_path / "mi.yaml"
    save_topology(load_topology("mi250:1"), path)
    assert detect_format(path) == "optcoll"
    assert import_topology(path) == load_topology("mi250:1")
    renamed = import_topology(path, name="my-box")
    assert renamed.name == "my-box" and renamed.capacity == load_topology("mi250:1").capacity


@pytest.mark.parametrize(
    "name", ["msccl_hub4.json", "taccl_quad.json", "star.graphml", "leafspine.edgelist"]
)
def test_export_reads_every_file_show_reads(tmp_path, name, capsys):
    from optcoll import cli
    from optcoll.io import load_schedule

    assert cli.main(["show", str(DATA / name)]) == 0
    out = tmp_path / "s.json"
    assert cli.main(["export", str(DATA / name), "--format", "json", "-o", str(out)]) == 0
    schedule = load_schedule(out)
    assert set(schedule.compute_nodes) == set(import_topology(DATA / name).compute_nodes)


def test_a_file_of_unknown_suffix_is_read_as_json_only_when_it_looks_like_json(tmp_path):
    odd = write(tmp_path, "t.topo", "a b 1")
    with pytest.raises(ImportFormatError, match=r"t\.topo: cannot tell the format"):
        import_topology(odd)
    native = write(
        tmp_path,
        "t.topo2",
        {
            "nodes": [{"id": "a"}, {"id": "b"}],
            "links": [{"src": "a", "dst": "b", "bandwidth": 1, "bidirectional": True}],
        },
    )
    assert detect_format(native) == "optcoll" and import_topology(native).num_compute == 2


def test_every_command_reads_foreign_files_convert_included(tmp_path, capsys):
    from optcoll import cli, load_topology

    out = tmp_path / "hub.yaml"
    assert cli.main(["convert", str(DATA / "msccl_hub4.json"), str(out)]) == 0
    assert load_topology(out) == import_topology(DATA / "msccl_hub4.json")
    assert load_topology(DATA / "leafspine.edgelist").switch_nodes == ("leaf0", "leaf1", "spine")
    assert cli.main(["bound", str(DATA / "star.graphml"), "--json"]) == 0
    assert '"cut_ratio": "4/25"' in capsys.readouterr().out
