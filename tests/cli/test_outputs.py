"""Every command, with its output going into a closed pipe or to a file of the wrong kind,
ends with one error line and exit status 2, never a traceback."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from optcoll.cli import COMMANDS, main

#: One ordinary run of every command (``{tmp}`` is a fresh folder).
RUNS = {
    "solve": ["solve", "ring:4", "--collective", "allgather", "-o", "{tmp}/out"],
    "topologies": ["topologies"],
    "show": ["show", "ring:4"],
    "convert": ["convert", "ring:4", "{tmp}/ring.json"],
    "bound": ["bound", "ring:4"],
    "verify": ["verify", "ring:4", "{tmp}/schedule.json"],
    "plot": ["plot", "ring:4", "-o", "{tmp}/ring.png"],
    "crosscheck": ["crosscheck", "ring:4", "--methods", "combinatorial"],
    "trees": ["trees", "ring:4"],
    "export": ["export", "ring:4", "-o", "{tmp}/ring.xml"],
    "check_xml": ["check-xml", "{tmp}/program.xml"],
    "check_et": ["check-et", "{tmp}/trace"],
    "check_plan": ["check-plan", "{tmp}/plan.json"],
    "compare": ["compare", "ring:4", "--sizes", "1M"],
    "simulate": ["simulate", "ring:4", "{tmp}/schedule.json", "--sizes", "1M"],
    "plan": ["plan", "ring:4", "--sizes", "1K", "1M", "--export", "{tmp}/bands"],
    "lp": ["lp", "solve", "ring:4"],
    "sweep": ["sweep", "{tmp}/sweep.yaml", "--workers", "1"],
    "resilience": ["resilience", "ring:4", "--workers", "1"],
}

#: Runs that name an output file of a kind the command does not write.
BAD_SUFFIX = {
    "solve": ["solve", "ring:4", "-o", "{tmp}/a-file.txt"],
    "convert": ["convert", "ring:4", "{tmp}/ring.txt"],
    "plot-jpg": ["plot", "ring:4", "-o", "{tmp}/ring.jpg"],
    "plot-txt": ["plot", "ring:4", "-o", "{tmp}/ring.txt"],
    "plot-none": ["plot", "ring:4", "-o", "{tmp}/ring"],
    "trees": ["trees", "ring:4", "-o", "{tmp}/schedule.txt"],
    "export-msccl": ["export", "ring:4", "-o", "{tmp}/ring.txt"],
    "export-json": ["export", "ring:4", "--format", "json", "-o", "{tmp}/ring.xml"],
    "compare": ["compare", "ring:4", "--plot", "{tmp}/curve.jpg"],
    "plan": ["plan", "ring:4", "--sizes", "1K", "--plot", "{tmp}/plan.jpg"],
    "lp": ["lp", "export", "ring:4", "-o", "{tmp}/model.txt"],
    "sweep": ["sweep", "{tmp}/sweep.yaml", "-o", "{tmp}/table.txt"],
    "resilience": ["resilience", "ring:4", "--plot", "{tmp}/drops.jpg"],
}


def _argv(template: list[str], tmp) -> list[str]:
    return [part.replace("{tmp}", str(tmp)) for part in template]


@pytest.fixture
def schedule_file(tmp_path):
    assert main(["trees", "ring:4", "-o", str(tmp_path / "schedule.json")]) == 0
    program = ["export", "ring:4", "--collective", "allreduce", "-o", str(tmp_path / "program.xml")]
    assert main(program) == 0  # one file serving both placements
    traces = [
        "export",
        "ring:4",
        "--format",
        "chakra",
        "--size",
        "1M",
        "-o",
        str(tmp_path / "trace"),
    ]
    assert main(traces) == 0
    plan = ["export", "ring:4", "--collective", "allreduce", "--format", "mscclpp"]
    assert main([*plan, "-o", str(tmp_path / "plan.json")]) == 0
    (tmp_path / "sweep.yaml").write_text("base: ring:{n}\ngrid: {n: [3, 4]}\nquantities: [k]\n")
    return tmp_path


def test_every_command_is_exercised():
    without_output_file = {
        "topologies", "show", "bound", "verify", "crosscheck", "check_xml", "check_et",
        "check_plan", "simulate",
    }  # fmt: skip
    assert set(RUNS) == set(COMMANDS)
    assert {argv[0] for argv in BAD_SUFFIX.values()} == set(COMMANDS) - without_output_file


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("optcoll: error: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("command", sorted(RUNS))
def test_closed_output_pipe(command, schedule_file, capsys, monkeypatch):
    reader, writer = os.pipe()
    os.close(reader)
    closed = io.TextIOWrapper(os.fdopen(writer, "wb"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", closed)
    capsys.readouterr()
    try:
        status = main(_argv(RUNS[command], schedule_file))
    finally:
        monkeypatch.undo()
        try:
            closed.close()
        except BrokenPipeError:
            pass
    _, err = capsys.readouterr()
    assert status == 2
    assert "pipe closed" in _one_error_line(err)


@pytest.mark.parametrize("case", sorted(BAD_SUFFIX))
def test_bad_output_suffix(case, tmp_path, capsys):
    (tmp_path / "a-file.txt").write_text("not a folder\n")
    (tmp_path / "sweep.yaml").write_text("base: ring:{n}\ngrid: {n: [3, 4]}\nquantities: [k]\n")
    status = main(_argv(BAD_SUFFIX[case], tmp_path))
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert status == 2 and out == ""
    assert str(tmp_path) in line
    written = {p.name for p in tmp_path.iterdir()}
    assert written == {"a-file.txt", "sweep.yaml"}, "nothing may be written under a wrong name"


def test_closed_pipe_in_a_real_process(tmp_path):
    """The interpreter's own flush at exit must not print a second message."""
    child = subprocess.Popen(
        [sys.executable, "-m", "optcoll", "topologies", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 2
    assert "pipe closed" in _one_error_line(err)
