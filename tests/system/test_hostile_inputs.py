"""Hostile, lying and edge-case inputs (issue 28): each case is one line and stays fixed.

A case gives the files it starts from, the command line, the exit status it must end
with (2: one line on stderr naming the field or file at fault; 1: a verdict that the
input is false) and a text the message must hold. Every case also checks that no file
it started from changed and that a refused command wrote nothing.

The lying schedules are generated: every claim a schedule file states is falsified in
turn, from a real schedule ``optcoll trees`` wrote, and ``verify`` must name each one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

import optcoll
from optcoll.cli import main
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, OutputError
from optcoll.io import load_topology, save_topology

#: CPU seconds a case may take before it counts as a hang.
SECONDS = 60

_RING4 = {
    "nodes": [{"id": f"n{i}"} for i in range(4)],
    "links": [
        {"src": f"n{i}", "dst": f"n{(i + 1) % 4}", "bandwidth": 100, "bidirectional": True}
        for i in range(4)
    ],
}
_NCCL = Path(__file__).parents[1] / "data" / "nccl" / "dgx-a100.xml"
_TACCL = Path(__file__).parents[1] / "data" / "taccl" / "topo-ndv2-1MB.json"
_XML_HEAD = (
    '<algo name="x" proto="Simple" nchannels="1" nchunksperloop="{loop}" ngpus="{ngpus}" '
    'coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">'
)
_XML_GPU = (
    '<gpu id="{g}" i_chunks="1" o_chunks="2" s_chunks="0"><tb id="0" send="{o}" recv="{o}" '
    'chan="0"><step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" '
    'depid="-1" deps="-1" hasdep="0"/></tb></gpu>'
)


def _msccl(ngpus: int, loop: int) -> str:
    gpus = "".join(_XML_GPU.format(g=g, o=1 - g) for g in range(2))
    return _XML_HEAD.format(ngpus=ngpus, loop=loop) + gpus + "</algo>\n"


def _deep_nccl(depth: int) -> str:
    pci = '<pci busid="0" class="0x0604" link_speed="16 GT/s">'
    return (
        '<system version="1"><cpu numaid="0">'
        + pci * depth
        + "</pci>" * depth
        + "</cpu></system>\n"
    )


_NESTED_GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="bw" for="edge" attr.name="bandwidth" attr.type="double"/>
  <graph id="G" edgedefault="undirected">
    <node id="a"/><node id="b"/>
    <node id="box"><graph id="inner" edgedefault="undirected"><node id="c"/></graph></node>
    <edge source="a" target="b"><data key="bw">10</data></edge>
    <edge source="b" target="c"><data key="bw">10</data></edge>
  </graph>
</graphml>
"""
_SPEC = {"base": "ring:{n}", "grid": {"n": [3, 4]}, "quantities": ["cut_ratio"]}
_GROUPS = {"groups": [["n0", "n1"], ["n2", "n3"]]}
_RECURSIVE = "nodes: &n [*n]\nlinks: []\n"


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang(f"more than {SECONDS} CPU seconds")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``optcoll argv`` in-process under a CPU alarm: (status, stdout, stderr)."""
    capsys.readouterr()
    previous = signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, SECONDS)
    try:
        try:
            status = main(argv)
        except SystemExit as exit_:  # argparse
            status = exit_.code if isinstance(exit_.code, int) else 2
        except _Hang as hang:
            pytest.fail(f"optcoll {' '.join(argv)[:200]}: {hang}")
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    out, err = capsys.readouterr()
    return status, out, err


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _files(folder: Path, files: dict[str, str | dict]) -> None:
    for name, content in files.items():
        text = content if isinstance(content, str) else json.dumps(content)
        (folder / name).write_text(text, encoding="utf-8")


def _check(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    text: str,
) -> str:
    """Run ``argv`` in ``tmp_path``: the status, ``text`` in its message, no file changed
    and (on exit 2) nothing written and exactly one line on stderr."""
    before = _snapshot(tmp_path)
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        got, out, err = _run(argv, capsys)
    finally:
        os.chdir(cwd)
    assert got == status, f"exit {got}, expected {status}: {err or out}"
    message = err if status == 2 else out
    assert text in message, message
    if status == 2:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert _snapshot(tmp_path) == before  # refused: nothing written, nothing changed
    else:
        after = _snapshot(tmp_path)
        assert {name: after[name] for name in before} == before  # no input changed
    return message


# --- 1. lies that pass: every claim of a schedule file is judged --------------------


@pytest.fixture(scope="module")
def allgather_file(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A real schedule ``optcoll trees ring:4`` wrote (8 trees, k = 2, r* = 3/200)."""
    folder = tmp_path_factory.mktemp("schedule")
    assert main(["trees", "ring:4", "-o", str(folder / "s.json")]) == 0
    return json.loads((folder / "s.json").read_text())


def _reversed_ranks(data: dict) -> dict:
    data = dict(data, compute_nodes=data["compute_nodes"][::-1])
    data.pop("rotation")
    return data


#: (case id, how the schedule lies, text ``verify`` must print).
LIES = [
    ("cut_ratio", lambda d: dict(d, cut_ratio="1/100"), "field 'cut_ratio' states 1/100"),
    ("cut_ratio-high", lambda d: dict(d, cut_ratio="1/50"), "exact cut bound"),
    ("time_factor", lambda d: dict(d, time_factor="1/1000"), "claimed time factor 1/1000"),
    ("time_factor-high", lambda d: dict(d, time_factor="1/10"), "claims time factor 1/10"),
    ("algbw", lambda d: dict(d, algbw=999), "field 'algbw' states 999"),
    ("stats.trees", lambda d: dict(d, stats=dict(d["stats"], trees=3)), "'stats.trees'"),
    ("stats.max_height", lambda d: dict(d, stats=dict(d["stats"], max_height=1)), "max_height"),
    ("stats.mean_height", lambda d: dict(d, stats=dict(d["stats"], mean_height=1.5)), "mean_h"),
    ("stats.total_sends", lambda d: dict(d, stats=dict(d["stats"], total_sends=5)), "total_s"),
    (
        "stats.ratio_to_optimum",
        lambda d: dict(d, stats=dict(d["stats"], ratio_to_optimum="1/2")),
        "'stats.ratio_to_optimum' states '1/2'",
    ),
    ("compute_nodes-order", _reversed_ranks, "compute_nodes lists 'n3' as rank 0"),
    ("k", lambda d: dict(d, k=3), "expected k = 3"),
    ("collective", lambda d: dict(d, collective="allreduce"), "time factor"),
    ("root", lambda d: dict(d, collective="broadcast", root="n0"), "rooted at"),
]


@pytest.mark.parametrize("lie", [lie[1:] for lie in LIES], ids=[lie[0] for lie in LIES])
def test_verify_names_every_false_claim(tmp_path, capsys, allgather_file, lie):
    falsify, text = lie
    _files(tmp_path, {"s.json": falsify(allgather_file)})
    out = _check(tmp_path, capsys, ["verify", "ring:4", "s.json"], 1, text)
    assert "verdict      INVALID" in out


def test_the_true_schedule_states_only_what_verify_checks(tmp_path, capsys, allgather_file):
    _files(tmp_path, {"s.json": allgather_file})
    out = _check(tmp_path, capsys, ["verify", "ring:4", "s.json"], 0, "verdict      valid")
    assert "unchecked" not in out
    assert "U_scaled" in allgather_file["stats"]


def test_a_builder_record_no_reader_can_check_is_listed_unchecked(tmp_path, capsys, allgather_file):
    doc = json.loads(json.dumps(allgather_file))
    doc["stats"]["logical_arcs"] = 8
    _files(tmp_path, {"s.json": json.dumps(doc)})
    out = _check(tmp_path, capsys, ["verify", "ring:4", "s.json"], 0, "verdict      valid")
    unchecked = next(line for line in out.splitlines() if line.startswith("unchecked"))
    assert "stats.logical_arcs" in unchecked and "stats.U_scaled" not in unchecked


@pytest.mark.parametrize("fmt, out", [("json", "o.json"), ("msccl", "o.xml")])
def test_export_refuses_a_schedule_whose_claims_are_false(
    tmp_path, capsys, allgather_file, fmt, out
):
    lie = dict(allgather_file, cut_ratio="1/100")
    _files(tmp_path, {"s.json": lie})
    argv = ["export", "s.json", "--format", fmt, "-o", out]
    _check(tmp_path, capsys, argv, 2, "field 'cut_ratio' states 1/100")


def test_export_unchecked_does_not_pass_claims_on(tmp_path, capsys, allgather_file):
    _files(tmp_path, {"s.json": dict(allgather_file, cut_ratio="1/100")})
    argv = ["export", "s.json", "--format", "json", "-o", "o.json", "--unchecked"]
    _check(tmp_path, capsys, argv, 0, "wrote")
    written = json.loads((tmp_path / "o.json").read_text())
    assert "cut_ratio" not in written and "time_factor" not in written


@pytest.mark.parametrize("coll", ["scatter", "gather"])
def test_check_xml_names_the_collective_a_relabelled_program_computes(tmp_path, capsys, coll):
    assert (
        main(["export", "ring:4", "--collective", "allreduce", "-o", str(tmp_path / "a.xml")]) == 0
    )
    text = (tmp_path / "a.xml").read_text().replace('coll="allreduce"', f'coll="{coll}"')
    _files(tmp_path, {"b.xml": text})
    out = _check(tmp_path, capsys, ["check-xml", "b.xml"], 1, "the program computes allreduce")
    assert "verdict      WRONG" in out


# --- 2. memory and time without bound: one resource policy --------------------------

RESOURCES = [
    ("xml-nchunksperloop", {"p.xml": _msccl(2, 10**9)}, ["check-xml", "p.xml"], 1, "limit"),
    ("xml-ngpus", {"p.xml": _msccl(10**9, 2)}, ["check-xml", "p.xml"], 1, "ngpus=1000000000"),
    ("simulate-xml", {"p.xml": _msccl(2, 10**9)}, ["simulate", "ring:2", "p.xml"], 2, "p.xml"),
    ("yaml-alias-topology", {"t.yaml": _RECURSIVE}, ["show", "t.yaml"], 2, "recursive alias"),
    ("yaml-alias-map", {"t.yaml": "a: &a {b: *a}\n"}, ["bound", "t.yaml"], 2, "recursive alias"),
    (
        "yaml-alias-schedule",
        {"s.yaml": "trees: &t [*t]\n"},
        ["verify", "ring:4", "s.yaml"],
        2,
        "recursive alias",
    ),
    (
        "yaml-alias-groups",
        {"g.yaml": "groups: &g [*g]\n"},
        ["bound", "ring:4", "--groups", "g.yaml"],
        2,
        "recursive alias",
    ),
    ("yaml-alias-sweep", {"s.yaml": "grid: &g {n: *g}\n"}, ["sweep", "s.yaml"], 2, "recursive"),
    (
        "astra-npus",
        {"a.yml": "topology: [Ring]\nnpus_count: [1000000000]\nbandwidth: [50]\nlatency: [1]\n"},
        ["show", "a.yml"],
        2,
        "npus_count",
    ),
    (
        "astra-npus-2d",
        {"a.yml": "topology: [Ring, Switch]\nnpus_count: [100000, 1000]\nbandwidth: [1, 1]\n"
         "latency: [1, 1]\n"},
        ["show", "a.yml"],
        2,
        "limited to 50000 nodes",
    ),
    ("nccl-boxes", {}, ["show", str(_NCCL), "--option", "boxes=100000"], 2, "boxes is 100000"),
    ("nccl-boxes-10k", {}, ["show", str(_NCCL), "--option", "boxes=10000"], 2, "boxes=10000"),
    ("taccl-boxes", {}, ["show", str(_TACCL), "--option", "boxes=100000"], 2, "boxes"),
    (
        "resilience-trials",
        {},
        ["resilience", "ring:4", "--random", "1", "--trials", "100000000"],
        2,
        "trials",
    ),
    ("fully-connected", {}, ["bound", "fully-connected:3000"], 2, "fully-connected:3000"),
]  # fmt: skip


@pytest.mark.parametrize(
    "files, argv, status, text", [c[1:] for c in RESOURCES], ids=[c[0] for c in RESOURCES]
)
def test_declared_sizes_are_refused_before_allocation(tmp_path, capsys, files, argv, status, text):
    _files(tmp_path, files)
    _check(tmp_path, capsys, argv, status, text)


def test_a_long_ring_needs_one_max_flow():
    from optcoll.bounds.cut_ratio import optimal_cut_ratio
    from optcoll.topologies import build

    bound = optimal_cut_ratio(build("ring:1000"))
    assert bound.ratio == Fraction(999, 200)  # N-1 nodes behind the 2 links of one node
    assert bound.stats["max_flows"] == 1


# --- 3. the user's files: never an input overwritten, never a finished point lost ---

USER_FILES = [
    ("trees-groups", {"g.json": _GROUPS},
     ["trees", "ring:4", "--groups", "g.json", "-o", "g.json", "--force"], "g.json is an input"),
    ("export-manifest", {"g.groups.json": _GROUPS},
     ["export", "ring:4", "--groups", "g.groups.json", "--collective", "allgather", "-o",
      "g.xml", "--force"], "g.groups.json is an input"),
    ("sweep-meta-over-spec", {"x.csv.meta.json": _SPEC},
     ["sweep", "x.csv.meta.json", "-o", "x.csv", "--force"], "is an input"),
    ("sweep-spec-as-table", {"s.csv": _SPEC}, ["sweep", "s.csv", "-o", "s.csv"], "s.csv"),
    ("convert-over-input", {"t.json": _RING4}, ["convert", "t.json", "t.json", "--force"],
     "t.json is an input"),
    ("solve-schedule-over-input", {"t.json": _RING4},
     ["export", "t.json", "--format", "json", "-o", "t.json", "--force"], "t.json is an input"),
]  # fmt: skip


@pytest.mark.parametrize(
    "files, argv, text", [c[1:] for c in USER_FILES], ids=[c[0] for c in USER_FILES]
)
def test_no_command_writes_over_its_inputs(tmp_path, capsys, files, argv, text):
    _files(tmp_path, files)
    _check(tmp_path, capsys, argv, 2, text)


def test_export_never_writes_over_its_topology_file(tmp_path, capsys, allgather_file):
    _files(tmp_path, {"t.json": _RING4, "s.json": allgather_file})
    argv = ["export", "s.json", "--topology", "t.json", "--format", "json", "-o", "t.json"]
    _check(tmp_path, capsys, argv + ["--force"], 2, "t.json is an input")


@pytest.mark.parametrize("edit, text", [("grid", "would drop them"), ("quantities", "no column")])
def test_resume_with_an_edited_spec_is_refused(tmp_path, capsys, edit, text):
    _files(tmp_path, {"spec.json": _SPEC})
    assert (
        _run(["sweep", str(tmp_path / "spec.json"), "-o", str(tmp_path / "t.csv")], capsys)[0] == 0
    )
    changed = dict(_SPEC, grid={"n": [5]}) if edit == "grid" else dict(_SPEC, quantities=["k"])
    _files(tmp_path, {"spec.json": changed})
    argv = ["sweep", "spec.json", "-o", "t.csv", "--resume"]
    _check(tmp_path, capsys, argv, 2, text)


def test_resume_never_drops_a_journaled_point(tmp_path, capsys):
    # an interrupted run left a journal, no table or metadata; the spec then lost its point
    journal = {"key": "ring:9|cut_ratio", "values": {"cut_ratio": "1/1"}, "error": ""}
    _files(tmp_path, {"spec.json": _SPEC, "t.csv.partial.jsonl": json.dumps(journal) + "\n"})
    _check(tmp_path, capsys, ["sweep", "spec.json", "-o", "t.csv", "--resume"], 2, "would drop")


def test_the_sweep_journal_is_not_appended_through_a_symlink(tmp_path, capsys):
    _files(tmp_path, {"spec.json": _SPEC, "target.txt": "keep\n"})
    (tmp_path / "t.csv.partial.jsonl").symlink_to(tmp_path / "target.txt")
    _check(tmp_path, capsys, ["sweep", "spec.json", "-o", "t.csv", "--resume"], 2, "symbolic link")
    assert (tmp_path / "target.txt").read_text() == "keep\n"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_sweep_and_its_workers_at_once(tmp_path, sig):
    spec = {
        "base": "torus:{n}x{n}",
        "grid": {"n": [20, 24, 28, 30, 32, 34]},
        "quantities": ["algbw"],
    }
    _files(tmp_path, {"spec.json": spec})
    argv = [sys.executable, "-m", "optcoll", "sweep", "spec.json", "-o", "t.csv", "--workers", "2"]
    root = str(Path(optcoll.__file__).parents[1])  # this checkout's optcoll, not another
    env = dict(os.environ, PYTHONPATH=root)
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    children: set[int] = set()
    deadline = time.monotonic() + 60
    while len(children) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.005)  # signal as soon as both exist: while tasks are still being submitted
        children = _children(process.pid)
    assert len(children) == 2, "the two workers did not start"
    process.send_signal(sig)
    started = time.monotonic()
    _, err = process.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert process.returncode == 130
    assert "rerun with --resume" in err and "Traceback" not in err
    assert not any(Path(f"/proc/{pid}").exists() for pid in children)


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


# --- 4. tracebacks -> one line -------------------------------------------------------

TRACEBACKS = [
    ("nccl-nested-5000", {"d.xml": _deep_nccl(5000)}, ["show", "d.xml"], "nested more than"),
    ("boxes-superscript", {}, ["show", str(_NCCL), "--option", "boxes=²"], "boxes must be"),
    ("taccl-superscript", {}, ["show", str(_TACCL), "--option", "boxes=²"], "boxes must be"),
    ("edgelist-list-key", {"e.edgelist": "# bidirectional\na b {[1]: 2}\n"}, ["show", "e.edgelist"],
     "line 2: attribute name [1]"),
    ("edgelist-int-key", {"e.edgelist": "# bidirectional\na b {1: 2}\n"}, ["show", "e.edgelist"],
     "is not a string"),
    ("edgelist-deep", {"e.edgelist": "a b {'x': " + "[" * 3000 + "]" * 3000 + "}\n"},
     ["show", "e.edgelist"], "cannot read the attribute dictionary"),
    ("unit-not-text", {"t.json": dict(_RING4, bandwidth_unit=5)}, ["show", "t.json"],
     "bandwidth_unit"),
]  # fmt: skip


@pytest.mark.parametrize(
    "files, argv, text", [c[1:] for c in TRACEBACKS], ids=[c[0] for c in TRACEBACKS]
)
def test_bad_input_is_one_line(tmp_path, capsys, files, argv, text):
    _files(tmp_path, files)
    _check(tmp_path, capsys, argv, 2, text)


def test_a_nul_in_the_topology_name_is_refused_naming_the_field(tmp_path, capsys):
    # a name is text on one line, as a node id: a NUL could be no file name, XML or message
    _files(tmp_path, {"t.json": dict(_RING4, name="x\u0000y")})
    _check(tmp_path, capsys, ["solve", "t.json", "-o", "out"], 2, "name 'x\\x00y' contains")


_T = load_topology("ring:4")

API = [
    ("save_topology-inputs", lambda tmp: save_topology(_T, tmp / "t.json", inputs=5)),
    ("save_topology-nul", lambda tmp: save_topology(_T, str(tmp / "t\0.json"))),
    ("cut_bandwidth-None", lambda tmp: _T.cut_bandwidth(None)),
    ("cut_bandwidth-str", lambda tmp: _T.cut_bandwidth("n0")),
    ("cut_bandwidth-int-node", lambda tmp: _T.cut_bandwidth([5])),
    ("with_capacity-None", lambda tmp: _T.with_capacity(None)),
    ("with_capacity-int-key", lambda tmp: _T.with_capacity({1: 2})),
    ("scale_links-int", lambda tmp: _T.scale_links(5, 2)),
    ("with_name-None", lambda tmp: _T.with_name(None)),
    ("bandwidth_unit-int", lambda tmp: Topology("t", _T.nodes, _T.links, bandwidth_unit=5)),
    ("solve-progress-yes", lambda tmp: __import__("optcoll").solve("ring:4", progress="yes")),
    ("verify-cut_ratio-text", lambda tmp: _verify(cut_ratio="x")),
]


def _verify(**options: object) -> object:
    from optcoll.schedules.packing import pack_arborescences
    from optcoll.verify.schedule import verify_schedule

    return verify_schedule(_T, pack_arborescences(_T), **options)


@pytest.mark.parametrize("call", [c[1] for c in API], ids=[c[0] for c in API])
def test_public_functions_raise_argument_errors(tmp_path, call):
    with pytest.raises((ArgumentError, OutputError)):
        call(tmp_path)
    assert not list(tmp_path.iterdir())


# --- 5. accepted but wrong -------------------------------------------------------------

WRONG = [
    ("export-root-allgather", {}, ["export", "ring:4", "--collective", "allgather", "--root", "n1",
     "-o", "a.xml"], "--root applies to broadcast and reduce"),
    ("export-topology-with-spec", {}, ["export", "ring:4", "--topology", "ring:5", "-o", "a.xml"],
     "drop --topology"),
    ("tolerance-double-percent", {}, ["export", "ring:4", "--tolerance", "5%%", "-o", "a.xml"],
     "tolerance '5%'"),
    ("trees-empty-output", {}, ["trees", "ring:4", "-o", ""], "file name is empty"),
    ("solve-empty-output", {}, ["solve", "ring:4", "-o", ""], "file name is empty"),
    ("nccl-negative-rank", {"n.xml": _NCCL.read_text().replace('rank="0"', 'rank="-1"', 1)},
     ["show", "n.xml"], "rank -1 is negative"),
    ("graphml-nested-graph", {"n.graphml": _NESTED_GRAPHML}, ["show", "n.graphml"],
     "nested <graph>"),
    ("edgelist-duplicate-key", {"e.edgelist": "# bidirectional\na b {'bandwidth': 1, "
     "'bandwidth': 2}\n"}, ["show", "e.edgelist"], "bandwidth is given twice"),
    ("edgelist-duplicate-token", {"e.edgelist": "# bidirectional\na b bandwidth=1 bandwidth=2\n"},
     ["show", "e.edgelist"], "bandwidth is given twice"),
    ("astra-sim-other-suffix", {}, ["convert", "ring:8", "a.txt", "--format", "astra-sim"],
     "written as .json, .yaml or .yml"),
]  # fmt: skip


@pytest.mark.parametrize("files, argv, text", [c[1:] for c in WRONG], ids=[c[0] for c in WRONG])
def test_flags_and_values_that_do_not_apply_are_refused(tmp_path, capsys, files, argv, text):
    _files(tmp_path, files)
    _check(tmp_path, capsys, argv, 2, text)


@pytest.mark.parametrize("suffix", [".json", ".yml"])
def test_an_astra_sim_config_reads_back_in_either_suffix(tmp_path, capsys, suffix):
    _check(tmp_path, capsys, ["convert", "ring:8", f"a{suffix}", "--format", "astra-sim"], 0, "")
    topology, ring = load_topology(tmp_path / f"a{suffix}"), load_topology("ring:8")
    assert topology.num_compute == 8
    assert sorted(topology.capacity.values()) == sorted(ring.capacity.values())


@pytest.mark.parametrize("latency", ["1", "100/3", 1])
def test_latency_texts_are_read_as_written(tmp_path, latency):
    data = dict(_RING4, links=[dict(link, latency=latency) for link in _RING4["links"]])
    _files(tmp_path, {"t.json": data})
    topology = load_topology(tmp_path / "t.json")
    assert topology.latency[("n0", "n1")] == Fraction(str(latency))


# An interrupt delivered while a given module is being imported, deterministically: the
# child process hooks ``__import__`` and sends itself SIGINT (or SIGTERM) on the first
# import of MODULE, then runs the command. Before the command's modules are loaded the
# process ends at once; afterwards the run stops. Either way: one line, status 130.
_INTERRUPT_DURING_IMPORT = """
import builtins, os, signal, sys
module, signum = sys.argv[1], getattr(signal, sys.argv[2])
real_import = builtins.__import__
def hooked(name, *args, **kwargs):
    if name == module and not hooked.sent:
        hooked.sent = True
        os.kill(os.getpid(), signum)
    return real_import(name, *args, **kwargs)
hooked.sent = False
builtins.__import__ = hooked
from optcoll.cli import main
status = main(sys.argv[3:])
print("finished", file=sys.stderr)
sys.exit(status)
"""


@pytest.mark.parametrize(
    "module, signame",
    [
        ("argparse", "SIGINT"),  # while optcoll.cli itself loads
        ("optcoll.cli._core", "SIGTERM"),
        ("optcoll.core.schedule", "SIGINT"),  # while the command modules load
        ("numpy", "SIGINT"),  # numpy turns an interrupted import into ImportError
        ("optcoll.bounds.cut_ratio", "SIGTERM"),
    ],
)
def test_an_interrupt_while_modules_load_ends_with_one_line(module, signame):
    root = str(Path(optcoll.__file__).parents[1])
    env = dict(os.environ, PYTHONPATH=root)
    argv = [sys.executable, "-c", _INTERRUPT_DURING_IMPORT, module, signame, "bound", "ring:4"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "optcoll: interrupted\n"
    assert done.stdout == ""


def test_an_interrupt_swallowed_by_a_callback_still_stops_the_run(monkeypatch, capsys):
    """Python prints an exception raised inside a callback and carries on; the command
    must not: the interrupt is delivered again and the run ends with status 130."""
    import weakref

    from optcoll.cli import bound

    reached = []

    class Target:
        pass

    def run(args):
        target = Target()
        watcher = weakref.ref(target, lambda _: signal.raise_signal(signal.SIGINT))
        del target  # the callback runs here; its KeyboardInterrupt is "ignored"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the re-sent interrupt lands in here
            pass
        reached.append(watcher)
        return 0

    monkeypatch.setattr(bound, "run", run)
    assert main(["bound", "ring:4"]) == 130
    assert reached == []
    assert capsys.readouterr().err == "optcoll: interrupted\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["lp", "export", "fully-connected:200", "-o", "x.lp"],  # congestion: 7,960,000
        ["lp", "solve", "ring:400", "--model", "multicast"],  # 400 * 399 * 800
        ["lp", "export", "torus:16x16", "--model", "fixed-k", "-k", "2", "-o", "x.lp"],
    ],
)
def test_an_lp_too_large_to_build_is_refused_before_it_is_built(
    argv, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "variables, more than the 2,000,000 optcoll lp builds" in err
    assert not (tmp_path / "x.lp").exists()
