"""Process groups on every command that plans a collective: solve, export (MSCCL programs per
group, checked and executed), plot, compare, crosscheck, verify; and bad groups refused in one
line."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from optcoll import load_topology
from optcoll.cli import main
from optcoll.core.process_groups import make_groups
from optcoll.groups.schedule import groups_lower_bound
from optcoll.io.process_groups import parse_groups
from optcoll.io.schedule_json import load_any_schedule
from optcoll.sim.programs import simulate_msccl
from optcoll.sim.simulator import data_bytes
from optcoll.verify.msccl import verify_file
from optcoll.verify.schedule import verify_groups_schedule

#: Every command that takes --groups, with the arguments that make it write into DIR.
COMMANDS = {
    "bound": lambda d: [],
    "trees": lambda d: ["-o", str(d / "s.json")],
    "solve": lambda d: ["-o", str(d / "out")],
    "export": lambda d: ["-o", str(d / "p.xml")],
    "plot": lambda d: ["-o", str(d / "p.png")],
    "compare": lambda d: [],
    "crosscheck": lambda d: [],
    "verify": lambda d: [str(d / "unread.json")],  # groups are checked before the file is read
}

BAD = {
    "switch": ("dgx-a100:1", [["b0.gpu0", "b0.nvswitch"]], "is a switch"),
    "unknown id": ("dgx-a100:1", [["b0.gpu0", "b9.gpu0"]], "is not a node"),
    "duplicate": ("dgx-a100:1", [["b0.gpu0", "b0.gpu0"]], "twice"),
    "in two groups": ("dgx-a100:1", [["b0.gpu0", "b0.gpu1"], ["b0.gpu1", "b0.gpu2"]], "too"),
    "group of one": ("dgx-a100:1", [["b0.gpu0"]], "at least two"),
    "spec not dividing N": ("dgx-a100:1", "blocks:3", "does not divide"),
    "unreachable": ("ring:4", [["n0", "n2"]], "cannot reach"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_groups_one_line_exit_2(
    command: str, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topo, groups, message = BAD[case]
    if isinstance(groups, str):
        spec = groups
    else:
        spec = str(tmp_path / "groups.json")
        Path(spec).write_text(json.dumps(groups))
    assert main([command, topo, *COMMANDS[command](tmp_path), "--groups", spec]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["groups.json"] if spec != groups else [])


@pytest.mark.parametrize("flag", [["--relay", "any"], ["--group-form", "edge"]])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_relay_needs_groups(
    command: str, flag: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "ring:4", *COMMANDS[command](tmp_path), *flag]) == 2
    err = capsys.readouterr().err
    assert "give --groups too" in err and err.count("\n") == 1


def test_solve_groups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    args = ["solve", "dgx-a100:2", "--groups", "strided:2", "--collective", "allreduce"]
    args += ["-o", str(out), "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    # allreduce of 8 rail pairs: each pair moves one unit each way through its 25 GB/s NICs
    assert summary["collective"] == "allreduce" and summary["time_factor"] == "2/25"
    schedule_path, picture = (Path(p) for p in summary["files"])
    assert picture.read_bytes().startswith(b"\x89PNG")
    schedule = load_any_schedule(schedule_path)
    topo = load_topology("dgx-a100:2")
    verdict = verify_groups_schedule(topo, schedule)
    assert verdict.valid and verdict.time_factor == Fraction(2, 25)
    assert main(args) == 2  # the files exist: refused without --force
    assert "exists" in capsys.readouterr().err
    assert main([*args, "--root", "b0.gpu0"]) == 2


def test_plot_groups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schedule = tmp_path / "s.json"
    assert main(["trees", "dgx-a100:2", "--groups", "blocks:8", "-o", str(schedule)]) == 0
    for extra, name in (
        (["--schedule", str(schedule)], "a.png"),
        (["--groups", "strided:2"], "b.png"),
    ):
        assert main(["plot", "dgx-a100:2", *extra, "-o", str(tmp_path / name)]) == 0
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")
    assert (
        main(
            ["plot", "dgx-a100:2", "--groups", "strided:2", "--cut", "-o", str(tmp_path / "c.png")]
        )
        == 2
    )
    capsys.readouterr()


def test_compare_groups(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "dgx-a100:2", "--groups", "strided:8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["num_groups"] == 2 and data["relay"] == "members"
    optimal, ring = data["methods"]
    # t* = 1/25: box 0's four members send their 4 units out through four 25 GB/s NICs
    assert optimal["time_factor"] == "1/25" and optimal["algbw"] == 200.0
    assert ring["method"] == "ring" and Fraction(ring["time_factor"]) > Fraction(1, 25)


@pytest.mark.parametrize(
    ("spec", "groups", "relay", "rows"),
    [
        ("dgx-a100:2", "strided:2", "members", 5),  # classes of one: the cut bound runs too
        ("dgx-a100:2", [["b0.gpu0", "b1.gpu3"]], "any", 5),  # one group: LPs vs cut
        ("ring:6", "blocks:3", "any", 4),  # sharing groups: edge form vs tree columns
    ],
)
def test_crosscheck_groups(
    spec: str,
    groups: object,
    relay: str,
    rows: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = groups
    if not isinstance(groups, str):
        text = str(tmp_path / "g.json")
        Path(text).write_text(json.dumps(groups))
    assert main(["crosscheck", spec, "--groups", str(text), "--relay", relay, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["agree"] and len(data["methods"]) == rows
    assert data["reference"] == [m["value"] for m in data["methods"]][0]
    topo = load_topology(spec)
    parsed = parse_groups(topo, str(text), relay)
    assert Fraction(data["reference"]) == groups_lower_bound(parsed, "allgather")


@pytest.mark.parametrize(
    ("groups", "relay", "collective"),
    [
        ("blocks:8", "members", "allreduce"),
        ("strided:2", "any", "broadcast"),
        ("strided:8", "members", "reduce-scatter"),
    ],
)
def test_export_groups_programs_check_and_run(
    groups: str, relay: str, collective: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "g.xml"
    canonical = collective.replace("-", "_")
    args = ["export", "dgx-a100:2", "--groups", groups, "--relay", relay]
    assert main([*args, "--collective", collective, "-o", str(out)]) == 0
    capsys.readouterr()
    manifest = json.loads((tmp_path / "g.groups.json").read_text())
    topo = load_topology("dgx-a100:2")
    parsed = parse_groups(topo, groups, relay)
    assert [g["members"] for g in manifest["groups"]] == [list(g) for g in parsed.groups]
    for index, entry in enumerate(manifest["groups"]):
        view = parsed.group_topology(index)  # spec groups: rank r is the r-th member
        alone = groups_lower_bound(make_groups(topo, [entry["members"]], relay), collective)
        for path in entry["files"]:
            report = verify_file(path, topology=view)  # the runtime's rules, then executed
            assert report.ok and report.ngpus == len(entry["members"]), report.findings
            size = 64 * 1024 * 1024
            run = simulate_msccl(path, view, size)
            data = data_bytes(canonical, size, len(entry["members"]))
            assert run.time_us >= float(alone) * data / 1000  # GB/s = 1000 bytes/µs
    # a groups schedule file exports the same way
    schedule = tmp_path / "s.json"
    assert main([*args, "--collective", collective, "--format", "json", "-o", str(schedule)]) == 0
    again = tmp_path / "again.xml"
    assert main(["export", str(schedule), "--collective", canonical, "-o", str(again)]) == 0
    first = sorted(p.name for p in tmp_path.glob("g.group*.xml"))
    second = sorted(p.name for p in tmp_path.glob("again.group*.xml"))
    assert [n.replace("g.", "again.", 1) for n in first] == second
    for a, b in zip(first, second, strict=True):  # the same programs
        assert (tmp_path / a).read_text() == (tmp_path / b).read_text()
    capsys.readouterr()


def test_verify_checks_the_schedule_plans_the_given_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    groups_file, single = tmp_path / "g.json", tmp_path / "s.json"
    assert main(["trees", "dgx-a100:2", "--groups", "strided:8", "-o", str(groups_file)]) == 0
    assert main(["trees", "dgx-a100:2", "-o", str(single)]) == 0
    capsys.readouterr()
    assert main(["verify", "dgx-a100:2", str(groups_file), "--groups", "strided:8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] and data["time_factor"] == data["optimum"] == "1/25"
    assert main(["verify", "dgx-a100:2", str(groups_file), "--groups", "blocks:8", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert not data["valid"] and "--groups has the group ['b0.gpu0'," in data["reason"]
    args = ["verify", "dgx-a100:2", str(groups_file), "--groups", "strided:8", "--relay", "any"]
    assert main(args) == 1
    assert "the schedule relays 'members', --relay asks for 'any'" in capsys.readouterr().out
    assert main(["verify", "dgx-a100:2", str(single), "--groups", "strided:8"]) == 2
    assert "not process groups" in capsys.readouterr().err
    # a group's members are its ranks: the same members in another order are other ranks
    doc = json.loads(groups_file.read_text())
    doc["groups"][0]["members"].reverse()
    (tmp_path / "reranked.json").write_text(json.dumps(doc))
    argv = ["verify", "dgx-a100:2", str(tmp_path / "reranked.json"), "--groups", "strided:8"]
    assert main([*argv, "--json"]) == 1
    assert (
        "a group's members are its ranks in that order"
        in json.loads(capsys.readouterr().out)["reason"]
    )


def test_export_groups_refuses_a_schedule_without_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    single = tmp_path / "s.json"
    assert main(["trees", "dgx-a100:1", "-o", str(single)]) == 0
    capsys.readouterr()
    args = ["export", str(single), "--groups", "blocks:4", "-o", str(tmp_path / "p.xml")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "plans one collective over every compute node, not process groups" in err
    assert err.count("\n") == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]
