"""optcoll.export.workflow is the library behind ``optcoll export``: for every option of the
command, the library writes the same files, byte for byte, and reports what the command prints."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from optcoll.cli import main
from optcoll.exceptions import ExportError, OutputError
from optcoll.export.request import ExportRequest
from optcoll.export.workflow import export_files

EDGELIST = Path(__file__).resolve().parents[1] / "data" / "importers" / "leafspine.edgelist"

#: (command-line arguments after ``export``, the same request as keyword arguments)
CASES = [
    (["ring:4", "-o", "ag.xml"], {"source": "ring:4", "output": "ag.xml"}),
    (
        ["dgx-a100:1", "--collective", "allreduce", "--placement", "both", "-o", "ar.xml"],
        {
            "source": "dgx-a100:1",
            "output": "ar.xml",
            "collective": "allreduce",
            "placement": "both",
        },
    ),
    (
        ["ring:4", "--format", "json", "-o", "ag.json", "-k", "3"],
        {"source": "ring:4", "output": "ag.json", "format": "json", "k": 3},
    ),
    (
        ["ring:6", "--runtime", "msccl", "--max-bytes", "1M", "--exact", "-o", "m.xml"],
        {
            "source": "ring:6",
            "output": "m.xml",
            "runtime": "msccl",
            "max_bytes": 2**20,
            "exact": True,
        },
    ),
    (
        [
            "ring:6",
            "--tolerance",
            "5%",
            "--channels",
            "2",
            "--max-threadblocks",
            "40",
            "-o",
            "t.xml",
        ],
        {
            "source": "ring:6",
            "output": "t.xml",
            "tolerance": Fraction(1, 20),
            "channels": 2,
            "max_threadblocks": 40,
        },
    ),
    (
        ["ring:4", "--bands", "--sizes", "1K", "1G", "-o", "b.xml"],
        {"source": "ring:4", "output": "b.xml", "bands": True, "sizes": [1024, 2**30]},
    ),
    (
        ["ring:4", "--collective", "broadcast", "--root", "n1", "-o", "bc.xml"],
        {"source": "ring:4", "output": "bc.xml", "collective": "broadcast", "root": "n1"},
    ),
    (
        [
            "ring:4",
            "--format",
            "mscclpp",
            "--collective",
            "allreduce",
            "--placement",
            "both",
            "-o",
            "p.json",
        ],
        {
            "source": "ring:4",
            "output": "p.json",
            "format": "mscclpp",
            "collective": "allreduce",
            "placement": "both",
        },
    ),
    (
        ["ring:4", "--format", "chakra", "--size", "64K", "-o", "et"],
        {"source": "ring:4", "output": "et", "format": "chakra", "size": 65536},
    ),
    (
        ["ring:8", "--groups", "blocks:4", "--relay", "any", "--group-form", "edge", "-o", "g.xml"],
        {
            "source": "ring:8",
            "output": "g.xml",
            "groups": "blocks:4",
            "relay": "any",
            "group_form": "edge",
        },
    ),
    (
        ["ring:8", "--groups", "blocks:4", "--format", "chakra", "--size", "1M", "-o", "get"],
        {
            "source": "ring:8",
            "output": "get",
            "groups": "blocks:4",
            "format": "chakra",
            "size": 2**20,
        },
    ),
    (
        ["ring:8", "--groups", "blocks:4", "--format", "mscclpp", "-o", "gp.json"],
        {"source": "ring:8", "output": "gp.json", "groups": "blocks:4", "format": "mscclpp"},
    ),
    (
        ["ring:4", "--unchecked", "-o", "u.xml"],
        {"source": "ring:4", "output": "u.xml", "unchecked": True},
    ),
    (
        [str(EDGELIST), "--bandwidth-attr", "bandwidth", "-o", "e.xml"],
        {"source": str(EDGELIST), "output": "e.xml", "bandwidth_attr": "bandwidth"},
    ),
]


def _cli(folder: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    assert main(["export", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize(("argv", "options"), CASES, ids=[" ".join(c[0][:4]) for c in CASES])
def test_the_library_writes_what_the_command_writes(
    argv, options, as_json, tmp_path, monkeypatch, capsys
):
    command, library = tmp_path / "command", tmp_path / "library"
    command.mkdir()
    library.mkdir()
    monkeypatch.chdir(command)
    out, err = _cli(command, [*argv, *(["--json"] if as_json else [])], capsys)
    monkeypatch.chdir(library)
    report = export_files(ExportRequest(**options))
    written = _files(command)
    assert written and _files(library) == written
    assert sorted(p.name for p in report.files) == sorted(written)
    if as_json:
        assert json.loads(out) == report.data
        assert out == json.dumps(report.data, indent=2) + "\n"
    else:
        assert out == "".join(f"{line}\n" for line in report.lines)
        assert err == "".join(f"warning: {w}\n" for w in report.warnings)


def test_a_schedule_file_with_its_topology(tmp_path, monkeypatch, capsys):
    """``--topology`` and a schedule file as the source; then ``--force`` over the output."""
    monkeypatch.chdir(tmp_path)
    export_files(ExportRequest("ring:4", "ag.json", format="json"))
    shutil.copy("ag.json", "copy.json")
    argv = ["ag.json", "--topology", "ring:4", "-o", "cli.xml"]
    out, _ = _cli(tmp_path, argv, capsys)
    report = export_files(ExportRequest("ag.json", "lib.xml", topology="ring:4"))
    assert Path("lib.xml").read_bytes() == Path("cli.xml").read_bytes()
    assert out == "".join(f"{line}\n" for line in report.lines).replace("lib.xml", "cli.xml")
    with pytest.raises(OutputError, match="lib.xml exists"):
        export_files(ExportRequest("ag.json", "lib.xml", topology="ring:4"))
    again = export_files(ExportRequest("ag.json", "lib.xml", topology="ring:4", force=True))
    assert again.files == [Path("lib.xml")]


def test_bad_options_are_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ExportError, match="--exact keeps the optimal k"):
        export_files(ExportRequest("ring:4", "x.xml", exact=True, k=2))
    with pytest.raises(ExportError, match="--format chakra needs --size"):
        export_files(ExportRequest("ring:4", "x", format="chakra"))
    assert list(tmp_path.iterdir()) == []
