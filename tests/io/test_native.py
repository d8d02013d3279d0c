"""Topology files: the issue's example loads, JSON and YAML round-trip losslessly,
and malformed files fail with the file name and, where possible, the line."""

from __future__ import annotations

import json
import tempfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import (
    BandwidthError,
    FileFormatError,
    MissingFieldError,
    TopologyError,
    TopologySpecError,
    UnknownFieldError,
    UnknownNodeError,
)
from optcoll.io import load_topology, looks_like_path, read_document, save_topology

ISSUE_EXAMPLE = """\
{"name": "two-gpus", "bandwidth_unit": "GB/s",
 "nodes": [{"id": "g0", "type": "compute"}, {"id": "g1", "type": "compute"}, {"id": "sw", "type": "switch"}],
 "links": [{"src": "g0", "dst": "sw", "bandwidth": 100, "bidirectional": true},
           {"src": "g1", "dst": "sw", "bandwidth": 100, "bidirectional": true}]}
"""

ISSUE_EXAMPLE_YAML = """\
name: two-gpus
bandwidth_unit: GB/s
nodes:
  - {id: g0, type: compute}
  - {id: g1, type: compute}
  - {id: sw, type: switch}
links:
  - {src: g0, dst: sw, bandwidth: 100, bidirectional: true}
  - {src: g1, dst: sw, bandwidth: 100, bidirectional: true}
"""


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_issue_example_loads_from_json_and_yaml(tmp_path):
    from_json = load_topology(write(tmp_path, "two.json", ISSUE_EXAMPLE))
    from_yaml = load_topology(write(tmp_path, "two.yaml", ISSUE_EXAMPLE_YAML))
    assert from_json == from_yaml
    assert from_json.name == "two-gpus"
    assert from_json.compute_nodes == ("g0", "g1") and from_json.switch_nodes == ("sw",)
    assert dict(from_json.capacity) == {
        ("g0", "sw"): 100,
        ("sw", "g0"): 100,
        ("g1", "sw"): 100,
        ("sw", "g1"): 100,
    }


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_saved_file_is_versioned_and_reloads_identically(tmp_path, suffix):
    topo = load_topology("leaf-spine:leaves=2,hosts=3,spines=2,oversub=3")
    path = tmp_path / f"t{suffix}"
    save_topology(topo, path)
    data = read_document(path)
    assert data["format"] == "optcoll-topology" and data["version"] == 1
    # 3 hosts * 100 / (2 spines * 3) = 50 per uplink; exact in the file.
    assert data["links"][-1]["bandwidth"] == 50
    again = load_topology(path)
    assert again == topo and again.capacity == topo.capacity
    save_topology(again, tmp_path / f"u{suffix}")
    assert (tmp_path / f"u{suffix}").read_bytes() == path.read_bytes()


def test_rational_bandwidth_is_stored_as_a_fraction_string(tmp_path):
    topo = Topology(
        "third", [Node("a"), Node("b")], [Link("a", "b", Fraction(100, 3), bidirectional=True)]
    )
    for suffix in (".json", ".yaml"):
        path = tmp_path / f"third{suffix}"
        save_topology(topo, path)
        assert read_document(path)["links"][0]["bandwidth"] == "100/3"
        assert load_topology(path).capacity[("b", "a")] == Fraction(100, 3)


# --- hypothesis round trip -----------------------------------------------------------------

_ids = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=6
) | st.sampled_from(
    ["null", "yes", "no", "true", "1", "0x1F", "1e3", "~", "-", "a: b", "#c", "[x]"]
)
_bandwidths = st.one_of(
    st.integers(1, 10**15),
    st.floats(min_value=1e-9, max_value=1e15),
    st.fractions(min_value=Fraction(1, 10**9), max_value=10**9).filter(lambda f: f > 0),
    st.decimals(min_value=Decimal("0.001"), max_value=Decimal("100000"), places=3).filter(
        lambda d: d > 0
    ),
)
_latencies = st.none() | st.integers(0, 10**6) | st.floats(min_value=0, max_value=1e6)
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
#: A topology name is text on one line (no control characters, as node ids).
_name = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)


@st.composite
def topologies(draw) -> Topology:
    ids = draw(st.lists(_ids, min_size=2, max_size=7, unique=True))
    n_compute = draw(st.integers(2, len(ids)))
    groups = st.none() | _text
    nodes = [
        Node(node_id, "compute" if i < n_compute else "switch", draw(groups))
        for i, node_id in enumerate(ids)
    ]
    links = [
        Link(
            ids[i],
            ids[(i + 1) % n_compute],
            draw(_bandwidths),
            draw(_latencies),
            draw(st.booleans()),
        )
        for i in range(n_compute)
        if n_compute > 2 or i == 0
    ]
    if n_compute == 2:
        links.append(Link(ids[1], ids[0], draw(_bandwidths)))
    pairs = st.tuples(st.sampled_from(ids), st.sampled_from(ids)).filter(lambda p: p[0] != p[1])
    for src, dst in draw(st.lists(pairs, max_size=6)):
        links.append(Link(src, dst, draw(_bandwidths), draw(_latencies), draw(st.booleans())))
    order = draw(st.permutations(range(len(links))))
    return Topology(
        draw(_name),
        nodes,
        [links[i] for i in order],
        draw(st.sampled_from(["GB/s", "Gb/s"])),
        draw(_text),
    )


@settings(derandomize=True, max_examples=100, deadline=None)
@given(topologies(), st.sampled_from([".json", ".yaml", ".yml"]))
def test_round_trip_is_lossless(topo, suffix):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"t{suffix}"
        save_topology(topo, path)
        loaded = load_topology(path)
        assert loaded == topo
        assert loaded.capacity == topo.capacity and loaded.latency == topo.latency
        assert loaded.nodes == topo.nodes
        assert loaded.integer_capacities() == topo.integer_capacities()
        again = Path(folder) / f"again{suffix}"
        save_topology(loaded, again)
        assert again.read_bytes() == path.read_bytes()


# --- malformed files -----------------------------------------------------------------------


def test_bad_json_names_file_line_and_column(tmp_path):
    path = write(tmp_path, "bad.json", '{"name": "x",\n "nodes": [}\n')
    with pytest.raises(
        FileFormatError, match=r"bad\.json: line 2, column 12: invalid JSON: Expecting value"
    ):
        load_topology(path)


def test_bad_yaml_names_file_line_and_column(tmp_path):
    path = write(tmp_path, "bad.yaml", "nodes: [a, b\nlinks: []\n")
    with pytest.raises(FileFormatError, match=r"bad\.yaml: line 2, column \d+: invalid YAML: "):
        load_topology(path)


def _nested_mappings(depth: int) -> str:
    return (
        "".join(" " * level + "a:\n" for level in range(depth - 1)) + " " * (depth - 1) + "a: 1\n"
    )


@pytest.mark.parametrize("pure_python", [False, True])
def test_yaml_nesting_is_limited_before_pyyaml_recurses(tmp_path, monkeypatch, pure_python):
    """PyYAML composes nodes recursively (in C with libyaml, where no RecursionError
    comes): a deep file once killed CI with a segfault. The depth is checked first."""
    from optcoll.io import document

    if pure_python:  # the other PyYAML build (with or without libyaml) than this one's
        monkeypatch.setattr(document, "_SafeLoader", yaml.SafeLoader)
    limit = document.MAX_YAML_DEPTH
    assert read_document(write(tmp_path, "ok.yaml", _nested_mappings(limit)))["a"]["a"]
    deep = write(tmp_path, "deep.yaml", _nested_mappings(limit + 1))
    with pytest.raises(
        FileFormatError, match=rf"deep\.yaml: line {limit + 1}: invalid YAML: nested more than"
    ):
        read_document(deep)
    huge = write(tmp_path, "huge.yaml", _nested_mappings(20_000))
    with pytest.raises(FileFormatError, match=r"huge\.yaml: line \d+: invalid YAML: nested"):
        read_document(huge)


@pytest.mark.parametrize(
    "name, text",
    [("dup.json", '{"name": "x", "name": "y"}'), ("dup.yaml", "name: x\nnodes: []\nname: y\n")],
)
def test_duplicate_keys_are_rejected_not_overwritten(tmp_path, name, text):
    with pytest.raises(
        FileFormatError, match=rf"{name.replace('.', '[.]')}: .*duplicate key 'name'"
    ):
        load_topology(write(tmp_path, name, text))
    if name.endswith(".yaml"):
        with pytest.raises(FileFormatError, match="line 3, column 1"):
            load_topology(write(tmp_path, name, text))


@pytest.mark.parametrize("name", ["empty.json", "empty.yaml"])
def test_empty_file(tmp_path, name):
    with pytest.raises(FileFormatError, match=rf"{name.replace('.', '[.]')}: the file is empty"):
        load_topology(write(tmp_path, name, "  \n"))


def test_not_utf8(tmp_path):
    with pytest.raises(FileFormatError, match=r"latin\.json: not a UTF-8 text file"):
        load_topology(write(tmp_path, "latin.json", b'{"name": "caf\xe9"}'))


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("list.json", "[1, 2]", "a topology must be a mapping with 'nodes' and 'links', got list"),
        ("scalar.yaml", "just text\n", "a topology must be a mapping .* got str"),
        ("nolinks.yaml", "nodes: []\n", "topology is missing the required field 'links'"),
    ],
)
def test_wrong_top_level_shape_names_the_file(tmp_path, name, text, message):
    with pytest.raises(MissingFieldError, match=rf"{name.replace('.', '[.]')}: {message}"):
        load_topology(write(tmp_path, name, text))


def test_schema_errors_point_at_the_line_in_yaml(tmp_path):
    text = ISSUE_EXAMPLE_YAML.replace("{src: g1, dst: sw", "{src: g1, dst: sw9")
    with pytest.raises(
        UnknownNodeError,
        match=r"two\.yaml: line 9: links\[1\] \(g1 <-> sw9\) refers to unknown node 'sw9'",
    ):
        load_topology(write(tmp_path, "two.yaml", text))


def test_schema_errors_point_at_the_line_in_json(tmp_path):
    text = ISSUE_EXAMPLE.replace('"type": "switch"', '"type": "switch", "colour": "red"')
    with pytest.raises(
        UnknownFieldError, match=r"two\.json: line 2: nodes\[2\] has unknown field 'colour'"
    ):
        load_topology(write(tmp_path, "two.json", text))
    text = ISSUE_EXAMPLE.replace(
        '"bandwidth": 100, "bidirectional": true}]', '"bandwidth": -1, "bidirectional": true}]'
    )
    with pytest.raises(
        BandwidthError,
        match=r"two\.json: line 4: links\[1\] \(g1 <-> sw\): bandwidth must be positive",
    ):
        load_topology(write(tmp_path, "two.json", text))


def test_missing_path_says_file_not_found_not_unknown_builtin(tmp_path):
    for source in ("topo.json", "configs/topo", str(tmp_path / "missing.yaml"), "dgx-a100.yaml"):
        with pytest.raises(FileFormatError, match=r"file not found"):
            load_topology(source)


def test_unknown_builtin_lists_the_families():
    with pytest.raises(
        TopologySpecError, match=r"unknown topology 'dgx-z100:2'.*built-ins are .*dgx-a100"
    ):
        load_topology("dgx-z100:2")


def test_spec_with_slashes_and_dots_is_still_a_spec():
    assert looks_like_path("torus:4x4,bw=12.5/50")  # it looks like one ...
    topo = load_topology("torus:4x4,bw=12.5/50")  # ... but a registered family wins
    assert topo.out_bandwidth("n0_0") == 2 * Fraction(25, 2) + 2 * 50


def test_existing_file_wins_over_a_spec(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_topology(load_topology("ring:3"), tmp_path / "x.json")
    Path("ring:5").write_text((tmp_path / "x.json").read_text())
    assert load_topology("ring:5").num_compute == 3


def test_a_directory_is_not_a_topology(tmp_path):
    with pytest.raises(FileFormatError, match="cannot read file"):
        load_topology(tmp_path)


def test_save_refuses_unknown_suffix(tmp_path):
    with pytest.raises(
        FileFormatError,
        match=r"t\.txt: unknown topology file type '\.txt'; use one of \.json, \.yaml, \.yml",
    ):
        save_topology(load_topology("ring:3"), tmp_path / "t.txt")
    assert not (tmp_path / "t.txt").exists()


def test_json_and_yaml_files_hold_the_same_document(tmp_path):
    topo = load_topology("random:n=5,switches=2,seed=3")
    save_topology(topo, tmp_path / "t.json")
    save_topology(topo, tmp_path / "t.yaml")
    assert json.loads((tmp_path / "t.json").read_text()) == yaml.safe_load(
        (tmp_path / "t.yaml").read_text()
    )


def test_yaml_ids_read_as_numbers_get_a_quoting_hint(tmp_path):
    path = write(tmp_path, "num.yaml", "nodes:\n  - {id: a}\n  - {id: 0}\nlinks: []\n")
    with pytest.raises(
        MissingFieldError,
        match=r"num\.yaml: line 3: nodes\[1\]: 'id' must be a non-empty string, got 0 \(quote it",
    ):
        load_topology(path)


def _topology_text(bandwidth: str, suffix: str) -> str:
    if suffix == ".json":
        return (
            '{"name": "t", "nodes": [{"id": "a"}, {"id": "b"}], "links": '
            f'[{{"src": "a", "dst": "b", "bandwidth": {bandwidth}, "bidirectional": true}}]}}'
        )
    return (
        "name: t\nnodes: [{id: a}, {id: b}]\n"
        f"links:\n  - {{src: a, dst: b, bandwidth: {bandwidth}, bidirectional: true}}\n"
    )


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize(
    ("written", "exact"),
    [
        ("100.000000000000000000001", Fraction(100000000000000000000001, 10**21)),
        ("0.12345678901234567890123", Fraction(12345678901234567890123, 10**23)),
        ("1.5e+2", Fraction(150)),
        ("1.0e-400", Fraction(1, 10**400)),
        ("42", Fraction(42)),
    ],
)
def test_bandwidths_are_exact_decimals_as_written(tmp_path, suffix, written, exact):
    path = tmp_path / f"t{suffix}"
    path.write_text(_topology_text(written, suffix))
    assert load_topology(path).capacity[("a", "b")] == exact


@pytest.mark.parametrize(
    "written",
    ["1:30", "010", "0x10", "0b11", "1_000", "190:20:30.15"],
)
def test_yaml_1_1_numbers_are_not_read_as_other_numbers(tmp_path, written):
    # YAML 1.1 reads 1:30 as 90 (base 60), 010 as 8, 0x10 as 16: none is a bandwidth.
    path = tmp_path / "t.yaml"
    path.write_text(_topology_text(written, ".yaml"))
    with pytest.raises(TopologyError, match=f"bandwidth must be a number.*got '{written}'"):
        load_topology(path)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_huge_decimal_exponent_is_an_error_not_a_hang(tmp_path, suffix):
    path = tmp_path / f"t{suffix}"
    path.write_text(_topology_text("1.0e-99999999", suffix))
    with pytest.raises(TopologyError, match="decimal exponent beyond"):
        load_topology(path)


def test_yaml_ids_that_look_like_base_60_stay_text(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        "name: t\nnodes: [{id: 1:30}, {id: b}]\n"
        "links:\n  - {src: 1:30, dst: b, bandwidth: 1, bidirectional: true}\n"
    )
    assert load_topology(path).node_ids == ("1:30", "b")


def test_an_edited_builtin_file_is_named_by_its_file(tmp_path):
    from optcoll.topologies import build

    path = tmp_path / "healthy.json"
    save_topology(build("dgx-h100:2"), path)
    assert load_topology(path).name == "dgx-h100:2"  # unedited: still the built-in
    data = json.loads(path.read_text())
    data["links"].pop(0)
    edited = tmp_path / "broken.json"
    edited.write_text(json.dumps(data))
    topology = load_topology(edited)
    assert topology.name == "broken"
    assert "edited from built-in dgx-h100:2 (file broken.json)" in topology.description


def test_python_writers_say_force_true_and_the_cli_says_force(tmp_path, capsys):
    import optcoll
    from optcoll.cli import main
    from optcoll.exceptions import OutputExistsError
    from optcoll.io import save_schedule

    schedule = optcoll.solve("ring:4").schedule
    path = tmp_path / "s.json"
    save_schedule(schedule, path)
    with pytest.raises(OutputExistsError, match=r"s\.json exists; pass force=True to overwrite"):
        save_schedule(schedule, path)
    assert main(["trees", "ring:4", "-o", str(path)]) == 2
    assert capsys.readouterr().err.endswith("s.json exists; pass --force to overwrite it\n")
