"""Readers on real files of other tools (tests/data/README.md names their sources)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import networkx as nx
import pytest

from optcoll import cli
from optcoll.bound import optimal_cut_ratio
from optcoll.exceptions import ImportFormatError
from optcoll.io import import_topology, load_topology

DATA = Path(__file__).parent / "data"

# --- TACCL: every profile of examples/topo/ --------------------------------------------

#: (file, chunk bytes, boxes) -> (compute nodes, switches, directed links, r*): the counts
#: follow from TACCL's wiring (NDv2: 8 GPUs x 4 neighbours; DGX2: 16 GPUs on one switch;
#: per box nics_per_node NICs on one IB switch); r* is checked against the LP below.
TACCL = {
    ("topo-ndv2-1MB.json", 2**20, 1): (8, 0, 32, Fraction(20125, 393216)),
    ("topo-ndv2-1MB.json", 2**20, 4): (32, 5, 200, Fraction(39375, 16384)),
    ("topo-ndv2-1KB.json", 2**10, 1): (8, 0, 32, Fraction(55125, 10784)),
    ("topo-ndv2-1KB.json", 2**10, 2): (16, 3, 100, Fraction(5125, 64)),
    ("topo-ndv2-32KB.json", 2**15, 1): (8, 0, 32, Fraction(1290605, 2523136)),
    ("topo-ndv2-32KB.json", 2**15, 4): (32, 5, 200, Fraction(3075, 128)),
    ("topo-dgx2-1MB.json", 2**20, 1): (16, 1, 32, Fraction(1875, 16384)),
    ("topo-dgx2-1MB.json", 2**20, 2): (32, 19, 160, Fraction(406875, 1851392)),
    ("topo-dgx2-1KB.json", 2**10, 1): (16, 1, 32, Fraction(1875, 128)),
    ("topo-dgx2-1KB.json", 2**10, 4): (64, 37, 320, Fraction(15375, 256)),
}


@pytest.mark.parametrize(("key", "expected"), TACCL.items(), ids=lambda x: str(x))
def test_every_taccl_example_profile_imports_with_its_optimum(key, expected):
    name, chunk, boxes = key
    topo = import_topology(DATA / "taccl" / name, chunk_bytes=chunk, boxes=boxes)
    computed = (topo.num_compute, len(topo.switch_nodes), len(topo.capacity))
    assert computed == expected[:3]
    assert optimal_cut_ratio(topo).ratio == expected[3] == optimal_cut_ratio(topo, "lp").ratio


def test_taccl_ndv2_bandwidths_are_chunk_over_beta():
    profile = json.loads((DATA / "taccl" / "topo-ndv2-1MB.json").read_text())
    topo = import_topology(DATA / "taccl" / "topo-ndv2-1MB.json", chunk_bytes=10**6)
    fast, slow = (Fraction(1000, b) for b in profile["node_betas_list"])  # GB/s
    assert topo.capacity[("b0.gpu0", "b0.gpu1")] == fast  # betas[1][0] is beta_m1
    assert topo.capacity[("b0.gpu0", "b0.gpu2")] == slow  # betas[2][0] is beta_m2
    assert ("b0.gpu0", "b0.gpu5") not in topo.capacity
    assert topo.latency[("b0.gpu0", "b0.gpu1")] == Fraction(3, 10)  # alpha
    assert sorted(set(topo.capacity.values())) == sorted({fast, slow})


def test_taccl_one_gpu_per_node_needs_several_boxes(tmp_path):
    profile = {
        "name": "single",
        "gpus_per_node": 1,
        "nics_per_node": 1,
        "alpha": 1,
        "links": [[0]],
        "betas": [[0]],
        "remote_alpha": 2,
        "remote_beta": 40,
    }
    path = tmp_path / "one.json"
    path.write_text(json.dumps(profile))
    topo = import_topology(path, chunk_bytes=10**6, boxes=4)  # 25 GB/s per NIC
    assert (topo.num_compute, len(topo.switch_nodes)) == (4, 5)
    assert optimal_cut_ratio(topo).ratio == Fraction(3, 25)
    with pytest.raises(ImportFormatError, match=r"one\.json: field 'gpus_per_node' must be"):
        import_topology(path)


def test_cli_passes_reader_options_to_every_command(tmp_path, capsys):
    source = str(DATA / "taccl" / "topo-ndv2-1MB.json")
    options = ["--option", f"chunk_bytes={2**20}", "--option", "boxes=4"]
    assert cli.main(["bound", source, *options, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cut_ratio"] == "39375/16384"
    out = tmp_path / "ndv2x4.yaml"
    assert cli.main(["convert", source, str(out), *options]) == 0
    assert load_topology(out).num_compute == 32


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--option", "boxes"], "must be KEY=VALUE"),
        (["--option", "speed=3"], "the taccl reader takes no option 'speed'"),
        (["--option", "boxes=two"], "boxes must be a positive integer, got 'two'"),
        (["--option", "box=DGX1"], "box='DGX1' is not one of TACCL's boxes"),
    ],
)
def test_bad_reader_options_are_one_line_errors(argv, message, capsys):
    try:
        status = cli.main(["show", str(DATA / "taccl" / "topo-ndv2-1MB.json"), *argv])
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") <= 2  # argparse: usage + error line


def test_reader_options_do_not_apply_to_a_builtin_spec():
    with pytest.raises(ImportFormatError, match="apply to topology files, not to a built-in"):
        load_topology("ring:4", boxes=2)


# --- edge lists and GraphML -----------------------------------------------------------


def test_networkx_directed_edge_list_is_read_once_per_arc(tmp_path):
    mi250 = load_topology("mi250:1")
    graph = nx.DiGraph()
    for (u, v), bw in mi250.capacity.items():
        graph.add_edge(u, v, bandwidth=int(bw))
    path = tmp_path / "mi250.edgelist"
    nx.write_edgelist(graph, path)  # each arc once, as ``u v {'bandwidth': 50}``
    topo = import_topology(path)
    assert dict(topo.capacity) == dict(mi250.capacity)
    assert optimal_cut_ratio(topo).ratio == Fraction(7, 150)


def test_edge_list_direction_from_option_and_attribute_names(tmp_path):
    path = tmp_path / "pair.edges"
    path.write_text("a b {'cap': 10, 'delay': 2}\n")
    topo = import_topology(path, directed="false", bandwidth_attr="cap", latency_attr="delay")
    assert topo.capacity == {("a", "b"): 10, ("b", "a"): 10}
    assert topo.latency[("b", "a")] == 2
    with pytest.raises(ImportFormatError, match=r"pair\.edges: line 1: unknown attribute 'cap'"):
        import_topology(path, directed="false")


def test_graphml_bandwidth_attribute_is_named_and_delay_becomes_latency(tmp_path, capsys):
    graph = nx.Graph()
    graph.add_edge("a", "b", capacity=40.0, delay=3.0)
    graph.add_edge("b", "c", capacity=20.0, delay=1.0)
    path = tmp_path / "zoo.graphml"
    nx.write_graphml(graph, path)
    with pytest.raises(ImportFormatError, match=r"has no 'bandwidth' attribute \(it has: "):
        import_topology(path)
    topo = import_topology(path, bandwidth_attr="capacity")
    assert topo.capacity[("c", "b")] == 20 and topo.latency[("a", "b")] == 3
    assert cli.main(["bound", str(path), "--bandwidth-attr", "capacity", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cut_ratio"] == "1/10"
