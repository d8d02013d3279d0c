"""`optcoll topologies`, `optcoll show` and `optcoll convert`, including bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from optcoll.cli import main
from optcoll.io import load_topology, read_document
from optcoll.topologies import families

REPO = Path(__file__).resolve().parents[2]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_topologies_lists_every_family_with_usage(capsys):
    code, out, err = run(capsys, "topologies")
    assert code == 0 and err == ""
    for family in families():
        assert f"{family.name} " in out and family.summary in out
        assert f"usage: {family.usage}" in out


def test_topologies_json(capsys):
    code, out, _ = run(capsys, "topologies", "--json")
    entries = json.loads(out)
    by_name = {e["name"]: e for e in entries}
    assert code == 0 and by_name["dgx-v100"]["aliases"] == ["ndv2"]
    assert by_name["leaf-spine"]["usage"].startswith("leaf-spine:leaves=L,hosts=H,spines=S")


def test_show_human(capsys):
    code, out, err = run(capsys, "show", "star:3,bw=12.5")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("star:3,bw=12.5: 3 hosts around one switch")
    assert (
        lines[1]
        == "3 compute nodes, 1 switch, 6 directed links (3 declared), total bandwidth 75 GB/s"
    )
    head = ["rank", "compute", "node", "group", "ingress", "GB/s", "egress", "GB/s"]
    assert lines[3].split() == head
    assert lines[4].split() == ["0", "h0", "-", "12.5", "12.5"]
    assert lines[-1].split() == ["hub", "-", "37.5", "37.5"]


def test_show_json_per_node_bandwidth(capsys):
    code, out, _ = run(capsys, "show", "dgx-a100:2", "--json")
    data = json.loads(out)
    assert code == 0
    assert (data["name"], data["num_compute"], data["num_switches"], data["num_links"]) == (
        "dgx-a100:2",
        16,
        20,
        96,
    )
    assert data["total_bandwidth"] == 11200
    gpu = data["compute_nodes"][0]
    assert gpu == {"id": "b0.gpu0", "group": "box0", "ingress": 325, "egress": 325}
    assert {s["id"]: s["egress"] for s in data["switches"]}["ib0"] == 8 * 25


def test_show_json_keeps_rationals_exact(capsys):
    _, out, _ = run(capsys, "show", "leaf-spine:leaves=2,hosts=2,spines=3,oversub=3", "--json")
    switches = {s["id"]: s for s in json.loads(out)["switches"]}
    # Uplinks carry 2*100/(3*3) = 200/9 each; a spine has two of them.
    assert switches["spine0"]["ingress"] == "400/9"


def test_show_reads_files(capsys, tmp_path):
    path = tmp_path / "ring.yaml"
    assert run(capsys, "convert", "ring:3", str(path))[0] == 0
    code, out, _ = run(capsys, "show", str(path), "--json")
    assert code == 0 and json.loads(out)["num_links"] == 6


def test_convert_both_ways_is_lossless(capsys, tmp_path):
    spec = "random:n=6,switches=2,seed=5"
    code, out, err = run(capsys, "convert", spec, str(tmp_path / "t.json"))
    assert code == 0 and err == "" and out.startswith(f"wrote {tmp_path / 't.json'}: {spec}")
    assert run(capsys, "convert", str(tmp_path / "t.json"), str(tmp_path / "t.yaml"))[0] == 0
    assert run(capsys, "convert", str(tmp_path / "t.yaml"), str(tmp_path / "back.json"))[0] == 0
    assert (tmp_path / "back.json").read_bytes() == (tmp_path / "t.json").read_bytes()
    assert load_topology(tmp_path / "t.yaml") == load_topology(spec)


def test_convert_refuses_to_overwrite(capsys, tmp_path):
    path = tmp_path / "t.yaml"
    run(capsys, "convert", "ring:3", str(path))
    before = path.read_bytes()
    code, out, err = run(capsys, "convert", str(path), str(path))
    assert code == 2 and out == ""
    assert (
        err == f"optcoll: error: {path} is an input of this command; choose another output file\n"
    )
    code, _, err = run(capsys, "convert", str(path), str(tmp_path / "." / "t.yaml"), "--force")
    assert code == 2 and "is an input of this command" in err
    (tmp_path / "alias.yaml").symlink_to(path)
    code, _, err = run(capsys, "convert", str(tmp_path / "alias.yaml"), str(path), "--force")
    assert code == 2 and "is an input of this command" in err
    code, _, err = run(capsys, "convert", "ring:5", str(path))
    assert code == 2 and err == f"optcoll: error: {path} exists; pass --force to overwrite it\n"
    assert path.read_bytes() == before
    assert run(capsys, "convert", "ring:5", str(path), "--force")[0] == 0
    assert read_document(path)["name"] == "ring:5"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "missing.json"], "optcoll: error: missing.json: file not found"),
        (["show", "tours:4"], "optcoll: error: unknown topology 'tours:4'"),
        (["show", "ring:1"], "optcoll: error: ring:1: n: expected an integer >= 2"),
        (
            ["convert", "ring:3", "out.txt"],
            "optcoll: error: out.txt: unknown topology file type '.txt'",
        ),
        (
            ["convert", "nowhere/in.yaml", "out.json"],
            "optcoll: error: nowhere/in.yaml: file not found",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "out.txt").exists()


def test_invalid_file_through_the_console_entry_point(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "nodes:\n  - {id: a}\n  - {id: b}\nlinks:\n  - {src: a, dst: b, bandwidth: .nan}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "optcoll.cli", "show", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        f"optcoll: error: {bad}: line 5: links[0] (a -> b): bandwidth must be finite, got nan\n"
    )
    assert "Traceback" not in result.stderr


def test_missing_argument_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["show"])
    assert info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
