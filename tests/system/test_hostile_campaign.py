"""Generated hostile inputs (issue 28): the classes of ``benchmarks/campaign.py`` as tests.

Each class is generated from files optcoll itself wrote, with fixed seeds, and run
in-process: a lying file must get a negative verdict (exit 1) or a one-line refusal
(exit 2), never "valid"/"correct" nor a traceback; a bad input of any reader must be
refused with one line naming it; no command may change a file it read.
"""

from __future__ import annotations

import json
import os
import random
import threading
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from optcoll.cli import main
from optcoll.core.limits import MAX_NODES
from optcoll.core.rational import MAX_NUMBER_DIGITS
from optcoll.core.schedule import FILE_STATS

_NCCL = Path(__file__).parents[1] / "data" / "nccl" / "dgx-a100.xml"


def _cli(folder: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    """``optcoll argv`` run in ``folder``: (status, stdout, stderr); argparse exits count."""
    capsys.readouterr()
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    return status, out, err


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _refused(folder: Path, capsys: pytest.CaptureFixture[str], argv: list[str], text: str) -> None:
    """``argv`` ends with exit 2, one line on stderr holding ``text``, nothing written."""
    before = _files(folder)
    status, out, err = _cli(folder, capsys, argv)
    assert status == 2, f"optcoll {' '.join(argv)[:160]}: exit {status}: {out[-300:]}"
    assert len(err.strip().splitlines()) == 1 and text in err, err
    assert _files(folder) == before


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Genuine files optcoll wrote for ring:4: schedules of four collectives, a groups'
    schedule and an MSCCL program."""
    folder = tmp_path_factory.mktemp("made")
    (folder / "g.json").write_text(json.dumps({"groups": [["n0", "n1"], ["n2", "n3"]]}))
    runs = [
        ["trees", "ring:4", "-o", "allgather.json"],
        ["export", "ring:4", "--format", "json", "--collective", "broadcast", "--root", "n0",
         "-o", "broadcast.json"],
        ["export", "ring:4", "--format", "json", "--collective", "alltoall", "-o", "alltoall.json"],
        ["export", "ring:4", "--format", "json", "--collective", "reduce_scatter", "-o",
         "reduce_scatter.json"],
        ["trees", "ring:4", "--groups", "g.json", "-o", "groups.json"],
        ["export", "ring:4", "-o", "ring4.xml"],
    ]  # fmt: skip
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        for argv in runs:
            assert main(argv) == 0, argv
    finally:
        os.chdir(cwd)
    docs = {
        name: json.loads((folder / f"{name}.json").read_text())
        for name in ("allgather", "broadcast", "alltoall", "reduce_scatter", "groups")
    }
    return {"docs": docs, "xml": (folder / "ring4.xml").read_text()}


# --- lying schedule files: every field a file states, falsified -----------------------


def _claims(doc: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(field path, a false value) for every claim of a schedule file: the header's
    ratios, counts and nodes, and every stat it states (all must be recomputed)."""
    for key in ("cut_ratio", "time_factor"):
        if key in doc:
            value = Fraction(doc[key])
            for lie in (value * 2, value + Fraction(1, 7), Fraction(1, 100)):
                if lie != value:
                    yield key, str(lie)
    if "algbw" in doc:
        yield "algbw", round(doc["algbw"] * 2 + 1, 3)
    if "k" in doc:
        yield "k", doc["k"] + 1
    if "compute_nodes" in doc:
        yield "compute_nodes", doc["compute_nodes"][::-1]
        yield "compute_nodes", doc["compute_nodes"][:-1]
    for name, value in doc.get("stats", {}).items():
        if isinstance(value, list):
            yield f"stats.{name}", value[:-1]
            yield f"stats.{name}", [*value, value[0]]
        elif isinstance(value, str):
            yield f"stats.{name}", str(Fraction(value) * 2 + 1)
        elif isinstance(value, int | float):
            yield f"stats.{name}", value + 1
            yield f"stats.{name}", value * 2 + 3


def _lies() -> list[tuple[str, int]]:
    """(collective, claim index): the claims are generated from the real file in the test
    (more indices than any file states; the rest skip)."""
    return [
        (collective, index)
        for collective in ("allgather", "broadcast", "alltoall", "reduce_scatter", "groups")
        for index in range(24)
    ]


@pytest.mark.parametrize("collective, index", _lies())
def test_verify_refuses_every_falsified_claim(tmp_path, capsys, made, collective, index):
    doc = made["docs"][collective]
    claims = list(_claims(doc))
    if index >= len(claims):
        pytest.skip(f"a {collective} file states {len(claims)} claims")
    field, lie = claims[index]
    falsified = json.loads(json.dumps(doc))
    target, key = falsified, field
    if field.startswith("stats."):
        target, key = falsified["stats"], field.removeprefix("stats.")
    target[key] = lie
    (tmp_path / "lie.json").write_text(json.dumps(falsified))
    argv = ["verify", "ring:4", "lie.json"]
    if collective == "groups":
        (tmp_path / "g.json").write_text(json.dumps({"groups": [["n0", "n1"], ["n2", "n3"]]}))
        argv += ["--groups", "g.json"]
    status, out, err = _cli(tmp_path, capsys, argv)
    assert status in (1, 2), f"{collective} with {field} = {lie!r} passed: {out}"
    assert "Traceback" not in err


def test_a_schedule_file_states_only_claims_verify_checks(made):
    for collective, doc in made["docs"].items():
        if collective != "groups":
            assert set(doc.get("stats", {})) <= FILE_STATS, collective


# --- lying MSCCL programs and MSCCL++ plans ------------------------------------------


def _xml_lies(text: str, seed: int) -> Iterator[tuple[str, str]]:
    """Programs that cannot compute the allgather they declare: a step that sends or
    receives on a thread block without that peer, channel and buffer counts the runtime
    does not have, and a relabelled collective."""
    rng = random.Random(seed)
    root = ElementTree.fromstring(text)
    blocks = [tb for gpu in root for tb in gpu]
    for tb in rng.sample(blocks, 6):
        for step in tb:
            kind = step.get("type")
            if tb.get("send") == "-1":
                step.set("type", "s")
                yield (
                    f"send without peer (gpu tb {tb.get('id')})",
                    ElementTree.tostring(root, "unicode"),
                )
            elif tb.get("recv") == "-1":
                step.set("type", "r")
                yield (
                    f"recv without peer (gpu tb {tb.get('id')})",
                    ElementTree.tostring(root, "unicode"),
                )
            step.set("type", kind)
            break
    for attr, value in (("nchannels", "1000000000"), ("nchannels", "0"), ("coll", "scatter")):
        old = root.get(attr)
        root.set(attr, value)
        yield f"{attr}={value}", ElementTree.tostring(root, "unicode")
        root.set(attr, old)
    gpu = root[rng.randrange(len(root))]
    for attr in ("i_chunks", "o_chunks", "s_chunks"):
        old = gpu.get(attr)
        gpu.set(attr, "-1")
        yield f"{attr}=-1", ElementTree.tostring(root, "unicode")
        gpu.set(attr, old)


@pytest.mark.parametrize("seed", range(3))
def test_check_xml_never_calls_a_broken_program_correct(tmp_path, capsys, made, seed):
    for what, lie in _xml_lies(made["xml"], seed):
        (tmp_path / "lie.xml").write_text(lie)
        status, out, err = _cli(tmp_path, capsys, ["check-xml", "lie.xml"])
        assert status == 1 and "verdict      correct" not in out, f"{what}: {out}"
        assert "Traceback" not in err, what


@pytest.mark.parametrize("collective", ["allgatherx", "scatter", "AllGather", "", "reduce scatter"])
def test_check_plan_judges_only_collectives_it_knows(tmp_path, capsys, collective):
    status, _, err = _cli(
        tmp_path, capsys, ["export", "ring:4", "--format", "mscclpp", "-o", "p.json"]
    )
    assert status == 0, err
    plan = json.loads((tmp_path / "p.json").read_text())
    plan["collective"] = collective
    (tmp_path / "lie.json").write_text(json.dumps(plan))
    status, out, err = _cli(tmp_path, capsys, ["check-plan", "lie.json"])
    assert status in (1, 2) and "verdict      correct" not in out, out


# --- resources: every reader holds to the shared limits -----------------------------


@pytest.mark.parametrize("digits", [MAX_NUMBER_DIGITS + 1, 4301, 20_000])
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_integers_longer_than_the_limit_are_refused(tmp_path, capsys, digits, suffix):
    big = "9" * digits
    if suffix == ".json":
        text = ('{"nodes": [{"id": "a"}, {"id": "b"}], "links": [{"src": "a", "dst": "b", '
                f'"bandwidth": {big}, "bidirectional": true}}]}}')  # fmt: skip
    else:
        text = f"nodes: [{{id: a}}, {{id: b}}]\nlinks: [{{src: a, dst: b, bandwidth: {big}}}]\n"
    (tmp_path / f"t{suffix}").write_text(text)
    _refused(tmp_path, capsys, ["show", f"t{suffix}"], f"{digits} digits")


@pytest.mark.parametrize("shape", ["path", "star", "pairs"])
def test_an_imported_topology_is_held_to_the_built_in_limit(tmp_path, capsys, shape):
    n = MAX_NODES + 1
    if shape == "path":
        lines = [f"n{i} n{i + 1} 1" for i in range(n - 1)]
    elif shape == "star":
        lines = [f"hub n{i} 1" for i in range(n - 1)]
    else:
        lines = [f"a{i} b{i} 1" for i in range(n // 2 + 1)] + [
            f"b{i} a{i + 1} 1" for i in range(n // 2)
        ]
    (tmp_path / "big.edgelist").write_text("# bidirectional\n" + "\n".join(lines) + "\n")
    _refused(tmp_path, capsys, ["show", "big.edgelist"], "limited to 50000 nodes")


_NCCL_OPTIONS = [
    (["boxes=1", "fabric=switch"], "needs boxes >= 2"),
    (["spines=4"], "needs boxes >= 2"),
    (["boxes=2", "spines=4"], "shapes fabric=leaf-spine"),
    (["boxes=2", "oversub=0"], "shapes fabric=leaf-spine"),
    (["boxes=2", "fabric=switch", "oversub=2"], "shapes fabric=leaf-spine"),
    (["boxes=2", "fabric=rails", "spines=100000"], "shapes fabric=leaf-spine"),
]


@pytest.mark.parametrize("options, text", _NCCL_OPTIONS)
def test_nccl_options_that_do_not_apply_are_refused(tmp_path, capsys, options, text):
    (tmp_path / "n.xml").write_text(_NCCL.read_text())
    argv = ["show", "n.xml"] + [a for o in options for a in ("--option", o)]
    _refused(tmp_path, capsys, argv, text)


_GRAPHML = (
    '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
    '<key id="bw" for="edge" attr.name="bandwidth" attr.type="double"/>{}</graphml>'
)


def _graph(nodes: list[str], edges: list[tuple[str, str]]) -> str:
    body = "".join(f'<node id="{v}"/>' for v in nodes)
    body += "".join(
        f'<edge source="{u}" target="{v}"><data key="bw">1</data></edge>' for u, v in edges
    )
    return f'<graph edgedefault="undirected">{body}</graph>'


@pytest.mark.parametrize("seed", range(4))
def test_graphml_never_drops_or_invents_nodes(tmp_path, capsys, seed):
    rng = random.Random(seed)
    nodes = [f"v{i}" for i in range(rng.randint(3, 8))]
    edges = list(zip(nodes, nodes[1:], strict=False))
    second = _graph([f"w{i}" for i in range(rng.randint(1, 3))], [])
    (tmp_path / "two.graphml").write_text(_GRAPHML.format(_graph(nodes, edges) + second))
    _refused(tmp_path, capsys, ["show", "two.graphml"], "top-level <graph> elements")
    ghost = rng.choice(["zz", "v99", ""])
    (tmp_path / "ghost.graphml").write_text(
        _GRAPHML.format(_graph(nodes, [*edges, (rng.choice(nodes), ghost)]))
    )
    _refused(tmp_path, capsys, ["show", "ghost.graphml"], "is not a declared <node>")


# --- the user's files: no command writes over one of its inputs ---------------------

_WRITERS = [
    (["convert", "t.json", "{}"], "t.json"),
    (["trees", "t.json", "-o", "{}"], "t.json"),
    (["trees", "t.json", "--groups", "g.json", "-o", "{}"], "g.json"),
    (["export", "t.json", "-o", "{}"], "t.json"),
    (["export", "t.json", "--groups", "g.json", "-o", "{}"], "g.json"),
    (["export", "s.json", "--topology", "t.json", "--format", "json", "-o", "{}"], "s.json"),
    (["export", "s.json", "--topology", "t.json", "--format", "json", "-o", "{}"], "t.json"),
    (["plot", "t.json", "-o", "{}"], "t.json"),
    (["compare", "t.json", "--plot", "{}"], "t.json"),
    (["solve", "t.json", "-o", "{}"], "t.json"),
]


def _alias(folder: Path, target: str, how: str) -> str:
    if how == "same":
        return target
    if how == "dot":
        return f"./{target}"
    if how == "parent":
        (folder / "sub").mkdir(exist_ok=True)
        return f"sub/../{target}"
    alias = f"{how}.{target}"
    (os.link if how == "hardlink" else os.symlink)(
        folder / target if how == "hardlink" else target, folder / alias
    )
    return alias


@pytest.mark.parametrize("how", ["same", "dot", "parent", "hardlink", "symlink"])
@pytest.mark.parametrize("argv, target", _WRITERS)
def test_no_command_writes_over_its_input(tmp_path, capsys, made, argv, target, how):
    (tmp_path / "t.json").write_text(
        json.dumps({"nodes": [{"id": f"n{i}"} for i in range(4)],
                    "links": [{"src": f"n{i}", "dst": f"n{(i + 1) % 4}", "bandwidth": 100,
                               "bidirectional": True} for i in range(4)]})
    )  # fmt: skip
    (tmp_path / "g.json").write_text(json.dumps({"groups": [["n0", "n1"], ["n2", "n3"]]}))
    status, _, err = _cli(tmp_path, capsys, ["trees", "t.json", "-o", "s.json"])
    assert status == 0, err
    out = _alias(tmp_path, target, how)
    before = _files(tmp_path)
    status, _, err = _cli(tmp_path, capsys, [a.replace("{}", out) for a in argv] + ["--force"])
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert _files(tmp_path) == before


# --- the public API: a wrong argument is an OptCollError, whatever it is -------------


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


_BAD = {
    "None": None,
    "int": 3,
    "negative": -1,
    "nan": float("nan"),
    "list": [1],
    "nested 100000 deep": _deep(100_000),
    "bytes": b"n0",
    "NUL": "n\x000",
    "bool": True,
}


#: (value, call) pairs where the value is a valid argument.
_VALID = {("bool", "save_topology(force)"), ("None", "solve(k)"), ("int", "solve(k)")}


def _calls(topology: Any, folder: Path) -> dict[str, Any]:
    import optcoll

    out = folder / "x.json"
    return {
        "Topology.is_compute": topology.is_compute,
        "Topology.in_bandwidth": topology.in_bandwidth,
        "Topology.out_bandwidth": topology.out_bandwidth,
        "Topology.without_link(src)": lambda v: topology.without_link(v, "n1"),
        "Topology.without_link(dst)": lambda v: topology.without_link("n0", v),
        "Topology.with_name": topology.with_name,
        "Topology.cut_bandwidth": topology.cut_bandwidth,
        "load_topology": optcoll.load_topology,
        "save_topology(path)": lambda v: optcoll.save_topology(topology, v),
        "save_topology(force)": lambda v: optcoll.save_topology(topology, out, force=v),
        "save_topology(inputs)": lambda v: optcoll.save_topology(topology, out, inputs=v),
        "solve(collective)": lambda v: optcoll.solve(topology, v),
        "solve(k)": lambda v: optcoll.solve(topology, k=v),
    }


@pytest.mark.parametrize("bad", list(_BAD), ids=list(_BAD))
def test_public_functions_refuse_wrong_arguments_with_an_optcoll_error(tmp_path, bad):
    import optcoll
    from optcoll.exceptions import OptCollError

    topology = optcoll.load_topology("ring:4")
    value = _BAD[bad]
    for name, call in _calls(topology, tmp_path).items():
        if (bad, name) in _VALID:
            continue
        with pytest.raises(OptCollError):
            call(value)
            pytest.fail(f"{name}({bad}) was accepted")


# --- files that are not regular files ------------------------------------------------


def _fifo(path: Path, data: bytes) -> threading.Thread:
    """A FIFO at ``path`` that a thread fills with ``data`` once someone opens it."""
    os.mkfifo(path)

    def feed() -> None:
        try:
            with open(path, "wb") as stream:
                stream.write(data)
        except OSError:
            pass

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    "argv, source",
    [
        (["check-xml", "in"], "ring4.xml"),
        (["check-plan", "in"], "plan.json"),
        (["simulate", "ring:4", "in"], "s.json"),
        (["verify", "ring:4", "in"], "s.json"),
        (["show", "in"], "t.json"),
    ],
)
def test_every_reader_refuses_a_pipe_instead_of_reading_it(tmp_path, capsys, argv, source):
    """A pipe (here one that holds a genuine file) may never end: it is refused unread."""
    for run in (["export", "ring:4", "-o", "ring4.xml"],
                ["export", "ring:4", "--format", "mscclpp", "-o", "plan.json"],
                ["trees", "ring:4", "-o", "s.json"], ["convert", "ring:4", "t.json"]):  # fmt: skip
        assert _cli(tmp_path, capsys, run)[0] == 0
    feeder = _fifo(tmp_path / "in", (tmp_path / source).read_bytes())
    status, out, err = _cli(tmp_path, capsys, argv)
    unblock = os.open(tmp_path / "in", os.O_RDONLY | os.O_NONBLOCK)  # lets the feeder end
    feeder.join(10)
    os.close(unblock)
    assert status == 2 and "not a regular file" in err, out or err


@pytest.mark.parametrize("field", ["input_chunks", "output_chunks", "scratch_chunks", "num_chunks"])
@pytest.mark.parametrize("count", [2**23, 10**9, 10**18])
def test_check_plan_refuses_declared_counts_beyond_the_limit(tmp_path, capsys, field, count):
    assert (
        _cli(tmp_path, capsys, ["export", "ring:4", "--format", "mscclpp", "-o", "p.json"])[0] == 0
    )
    plan = json.loads((tmp_path / "p.json").read_text())
    if field == "num_chunks":
        plan["gpus"][1]["threadblocks"][0]["ops"][0]["iter_context"]["num_chunks"] = count
    else:
        plan["gpus"][1][field] = count
    (tmp_path / "big.json").write_text(json.dumps(plan))
    _refused(tmp_path, capsys, ["check-plan", "big.json"], f"{field} is ")


@pytest.mark.parametrize("sizes", [[100_001], [400, 300], [50, 50, 50]])
def test_a_sweep_grid_beyond_the_limit_is_refused_before_any_work(tmp_path, capsys, sizes):
    grid = {f"x{i}": list(range(1, n + 1)) for i, n in enumerate(sizes)}
    spec = {"base": "ring:" + "".join(f"{{x{i}}}" for i in range(len(sizes))), "grid": grid,
            "quantities": ["k"]}  # fmt: skip
    (tmp_path / "s.json").write_text(json.dumps(spec))
    _refused(tmp_path, capsys, ["sweep", "s.json", "-o", "s.csv"], "points; a sweep computes")
