"""Readers on real files of other tools (tests/data/README.md names their sources)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import networkx as nx
import pytest

from optcoll import cli
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.exceptions import ImportFormatError
from optcoll.io import detect_format, import_topology, load_topology
from optcoll.io.astra_sim import GB_PER_ASTRA_GB

DATA = Path(__file__).parents[1] / "data"


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


# --- NCCL topology XML ----------------------------------------------------------------

#: (file, boxes, fabric) -> (GPUs, switches, directed links, r*). Counts from the file:
#: DGX A100 has 2 CPUs, 4 PCIe switches, 8 NICs and one NVSwitch node (NCCL merges the six);
#: DGX H100 2 CPUs, 8 PCIe switches, 8 NICs, one NVSwitch node; per box the links are
#: GPU-NVSwitch, GPU-PCIe, NIC-PCIe, PCIe-CPU (both ways) and CPU-CPU; a rail cluster adds one
#: rail switch per NIC and a NIC-rail link both ways. r* is checked against the LP below.
NCCL = {
    ("dgx-a100.xml", 1, "rails"): (8, 15, 2 * (8 + 8 + 8 + 4 + 1), Fraction(7, 264)),
    ("dgx-a100.xml", 4, "rails"): (32, 4 * 15 + 8, 4 * 58 + 4 * 8 * 2, Fraction(1, 8)),
    ("dgx-h100.xml", 1, "rails"): (8, 19, 2 * (8 + 8 + 8 + 8 + 1), Fraction(35, 2094)),
    ("dgx-h100.xml", 4, "rails"): (32, 4 * 19 + 8, 4 * 66 + 4 * 8 * 2, Fraction(155, 2094)),
    ("dgx-h100.xml", 4, "leaf-spine"): (32, 4 * 19 + 4 + 2, 4 * 66 + 4 * 8 * 2 + 4 * 2 * 2, None),
    ("ibm-hgx-h100-vm.xml", 1, "rails"): (8, 19, 66, Fraction(560, 29679)),
    ("ibm-hgx-h100-vm.xml", 4, "switch"): (32, 4 * 19 + 1, 328, Fraction(3, 25)),
    ("azure-ncv4.xml", 1, "rails"): (4, 5, 26, Fraction(1, 12)),
}


def test_nccl_bandwidths_come_from_nccls_tables():
    a100 = import_topology(DATA / "nccl" / "dgx-a100.xml")
    assert a100.capacity[("b0.gpu0", "b0.nvswitch")] == 12 * 20  # 12 NVLink3 x SM80_NVLINK_BW
    assert a100.capacity[("b0.nic0", "b0.pci0000:0f:00.0")] == 24  # Gen4 x16: 16 * 120 / 80
    assert a100.capacity[("b0.cpu0", "b0.cpu1")] == 16  # AMD_BW
    h100 = import_topology(DATA / "nccl" / "dgx-h100.xml", boxes=2)
    assert h100.capacity[("b0.gpu0", "b0.nvswitch")] == 18 * Fraction("20.6")  # SM90_NVLINK_BW
    assert h100.capacity[("b0.cpu0", "b0.cpu1")] == 22  # SRP_QPI_BW (Sapphire Rapids)
    assert h100.capacity[("b1.nic0", "rail0")] == 50  # 400000 Mb/s / 8000
    vm = import_topology(DATA / "nccl" / "ibm-hgx-h100-vm.xml")
    assert vm.capacity[("b0.pci0000:a1:00.0", "b0.cpu0")] == Fraction(3, 16)  # x1 at 2.5 GT/s
    assert vm.capacity[("b0.gpu0", "b0.pci0000:a1:00.0")] == 48  # width 0 reads as 16, Gen5
    ncv4 = import_topology(DATA / "nccl" / "azure-ncv4.xml")
    assert ncv4.capacity[("b0.gpu0", "b0.gpu1")] == 240  # GPU-GPU NVLink bridge, 12 links
    assert ncv4.capacity[("b0.gpu0", "b0.cpu0")] == 12  # no link_speed: NCCL's Gen3 default


def test_nccl_leaf_spine_oversubscription():
    topo = import_topology(
        DATA / "nccl" / "dgx-h100.xml", boxes=4, fabric="leaf-spine", spines=2, oversub=2
    )
    assert topo.capacity[("leaf0", "spine1")] == 8 * 50 / 2 / 2  # box NIC bandwidth / O / S
    # the data of 24 GPUs enters a box through its leaf's 2 x 100 GB/s of uplink
    assert optimal_cut_ratio(topo).ratio == Fraction(3, 25) == optimal_cut_ratio(topo, "lp").ratio


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('count="2"', 'count="x"'), r"<nvlink> of gpu0: count='x' is not an integer"),
        (('sm="80" ', ""), r"<gpu> of <pci busid=0000:07:00.0> has no 'sm' attribute"),
        (('tclass="0x068000"', 'tclass="0x0b4000"'), r"tclass '0x0b4000' is none of"),
        (("</system>", ""), r"not well-formed XML"),
        (
            (
                'link_speed="16.0 GT/s PCIe" link_width="16">\n      <pci busid="0000:07',
                '>\n      <pci busid="0000:07',
            ),
            r"<pci busid=0000:0f:00.0> has no 'link_speed'",
        ),
    ],
)
def test_malformed_nccl_dumps_name_the_element(tmp_path, edit, message, capsys):
    text = (DATA / "nccl" / "dgx-a100.xml").read_text()
    assert edit[0] in text
    path = tmp_path / "bad.xml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(ImportFormatError, match=message) as caught:
        import_topology(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert cli.main(["show", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_nccl_real_broken_and_partial_files_are_refused(tmp_path):
    with pytest.raises(ImportFormatError, match=r"target '0001:00:00.0' is the GPU itself"):
        import_topology(DATA / "nccl" / "azure-ncv4-selfloop.xml")
    partial = tmp_path / "partial.xml"  # an NCCL_TOPO_FILE that leaves the GPUs to NCCL
    partial.write_text(
        '<system version="1"><cpu numaid="0" arch="x86_64">'
        '<pci busid="0001:00:00.0" class="0x030200" link_speed="16 GT/s" '
        'link_width="16"/></cpu></system>'
    )
    with pytest.raises(ImportFormatError, match="holds no <gpu>"):
        import_topology(partial)
    with pytest.raises(ImportFormatError, match="has no NIC, so its copies cannot be joined"):
        text = (DATA / "nccl" / "dgx-a100.xml").read_text()
        nic_free = tmp_path / "nonic.xml"
        nic_free.write_text(
            text.replace('class="0x020700"', 'class="0x010802"')
            .replace("<nic>", "<nvme>")
            .replace("</nic>", "</nvme>")
        )
        import_topology(nic_free, boxes=2)


def test_export_reads_an_nccl_dump(tmp_path):
    out = tmp_path / "a100.json"
    argv = ["export", str(DATA / "nccl" / "azure-ncv4.xml"), "--format", "json", "-o", str(out)]
    assert cli.main(argv) == 0
    assert len(json.loads(out.read_text())["compute_nodes"]) == 4


def test_xml_files_are_told_apart_by_their_root(tmp_path):
    graph = nx.Graph()
    graph.add_edge("a", "b", bandwidth=10)
    path = tmp_path / "g.xml"
    nx.write_graphml(graph, path)
    assert detect_format(path) == "graphml"
    assert detect_format(DATA / "nccl" / "dgx-a100.xml") == "nccl"
    other = tmp_path / "other.xml"
    other.write_text("<html></html>")
    with pytest.raises(ImportFormatError, match="neither an NCCL topology"):
        detect_format(other)


# --- ASTRA-sim analytical network configs ---------------------------------------------

#: file -> (NPUs, switches, directed links, r*): a Ring of n NPUs has 2n arcs (n = 2: 2), a
#: FullyConnected block n(n-1), a Switch block one switch and 2n arcs; r* checked by the LP.
#: r* is in 1/(GB/s); the files' bandwidths are GiB/s (``GB_PER_ASTRA_GB`` GB/s each).
ASTRA = {
    name: (n, s, a, r / GB_PER_ASTRA_GB)
    for name, (n, s, a, r) in {
        "Ring_4npus.yml": (4, 0, 8, Fraction(3, 100)),
        "Ring_8npus.yml": (8, 0, 16, Fraction(7, 100)),
        "Ring_16npus.yml": (16, 0, 32, Fraction(3, 20)),
        "HGX-H100-validated.yml": (8, 1, 16, Fraction(7, 400)),
        "FullyConnected.yml": (16, 0, 240, Fraction(1, 50)),
        "hgx_h100_16gpu.yml": (16, 2, 2 * 16 + 8 * 2, Fraction(1, 30)),
        "hgx_h100_32gpu.yml": (32, 4, 2 * 32 + 8 * 8, Fraction(31, 500)),
        "tpu_v3_32_2dtorus.yml": (32, 0, 4 * 32, Fraction(31, 320)),
    }.items()
}


def test_astra_sim_dimensions_bandwidths_and_latencies():
    topo = import_topology(DATA / "astra" / "hgx_h100_32gpu.yml")  # [Switch, Ring] x [8, 4]
    assert topo.capacity[("npu0", "dim0.sw0")] == 400 * Fraction(2**30, 10**9)  # GiB/s
    assert topo.latency[("npu0", "dim0.sw0")] == Fraction(93625, 100000)  # 936.25 ns in us
    assert topo.capacity[("npu0", "npu8")] == 50 * GB_PER_ASTRA_GB  # dim 1: steps of 8
    assert topo.capacity[("npu0", "npu24")] == 50 * GB_PER_ASTRA_GB  # ... a ring of 4
    assert ("npu0", "npu16") not in topo.capacity


def test_astra_sim_malformed_configs(tmp_path, capsys):
    real = DATA / "astra" / "dgx_v100_8gpu.yml"  # ASTRA-sim's own file, bandwidths still 'tbd'
    with pytest.raises(ImportFormatError, match=r"dgx_v100_8gpu\.yml: bandwidth\[0\] must be"):
        import_topology(real)
    for text, message in [
        (
            "topology: [Ring, Torus]\nnpus_count: [2, 2]\nbandwidth: [1, 1]\nlatency: [0, 0]\n",
            r"topology\[1\] is 'Torus'",
        ),
        (
            "topology: [Ring]\nnpus_count: [1]\nbandwidth: [1]\nlatency: [0]\n",
            r"npus_count\[0\] must be an integer > 1",
        ),
        (
            "topology: [Ring]\nnpus_count: [4, 2]\nbandwidth: [1]\nlatency: [0]\n",
            r"field 'npus_count' has 2 entries but 'topology' has 1",
        ),
        ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1]\n", r"has no 'latency' list"),
    ]:
        path = tmp_path / "net.yml"
        path.write_text(text)
        with pytest.raises(ImportFormatError, match=message):
            import_topology(path)
    assert cli.main(["bound", str(real)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("spec", ["ring:8", "torus:4x4,bw=100/50", "star:4", "dgx-a100:1"])
def test_convert_writes_astra_sim_configs_that_read_back(tmp_path, spec):
    out = tmp_path / "net.yml"
    assert cli.main(["convert", spec, str(out), "--format", "astra-sim"]) == 0
    back = import_topology(out)
    original = load_topology(spec)
    assert back.num_compute == original.num_compute
    assert optimal_cut_ratio(back).ratio == optimal_cut_ratio(original).ratio
    assert sorted(back.capacity.values()) == sorted(original.capacity.values())


def test_convert_refuses_what_astra_sim_cannot_express(tmp_path, capsys):
    assert cli.main(["convert", "mi250:1", str(tmp_path / "x.yml"), "--format", "astra-sim"]) == 2
    assert "not expressible as an ASTRA-sim analytical network" in capsys.readouterr().err
    assert not (tmp_path / "x.yml").exists()


# --- every real file above: counts and r*, cross-checked with the LP ---------------------

REAL_FILES = (
    [
        (f"taccl/{n}", {"chunk_bytes": chunk, "boxes": boxes}, e)
        for (n, chunk, boxes), e in TACCL.items()
    ]
    + [
        (f"nccl/{n}", {"boxes": boxes, **({"fabric": f} if boxes > 1 else {})}, e)
        for (n, boxes, f), e in NCCL.items()
    ]
    + [(f"astra/{n}", {}, e) for n, e in ASTRA.items()]
)


@pytest.mark.parametrize(
    ("name", "options", "expected"), REAL_FILES, ids=[f"{n}-{o}" for n, o, _ in REAL_FILES]
)
def test_real_files_import_with_their_counts_and_optimum(name, options, expected):
    """(compute nodes, switches, directed links, r* or None); r* agrees with the LP."""
    topo = import_topology(DATA / name, **options)
    assert (topo.num_compute, len(topo.switch_nodes), len(topo.capacity)) == expected[:3]
    if expected[3] is not None:
        assert optimal_cut_ratio(topo).ratio == expected[3] == optimal_cut_ratio(topo, "lp").ratio
