"""A command that fails leaves nothing of its own outputs behind (issue 38, item 7)."""

from __future__ import annotations

import errno
import os

import pytest

import optcoll.core.output as output
from optcoll.cli import main


def _disk_full_at(monkeypatch, failing_call: int) -> None:
    """Make the ``failing_call``-th file write fail as on a full disk."""
    real = output._write_all
    calls = {"n": 0}

    def write_all(handle: int, payload: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == failing_call:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(handle, payload)

    monkeypatch.setattr(output, "_write_all", write_all)


@pytest.mark.parametrize(("spec", "collective"), [("ring:4", "allgather"), ("ring:4", "alltoall")])
def test_solve_on_a_full_disk_leaves_no_schedule_without_its_picture(
    tmp_path, capsys, monkeypatch, spec, collective
):
    # main: the schedule was written, the picture missing, and a rerun refused the schedule
    out = tmp_path / "out"
    _disk_full_at(monkeypatch, 2)
    assert main(["solve", spec, "--collective", collective, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and err.count("\n") == 1
    assert not out.exists() or list(out.iterdir()) == []  # no output, no temporary
    monkeypatch.undo()
    assert main(["solve", spec, "--collective", collective, "-o", str(out)]) == 0  # no --force
    assert len(list(out.iterdir())) == 2


def test_a_forced_rerun_that_fails_keeps_no_half_set(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert main(["solve", "ring:4", "-o", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    _disk_full_at(monkeypatch, 2)
    assert main(["solve", "ring:5", "-o", str(out), "--force"]) == 2
    capsys.readouterr()
    # the ring:4 files are untouched and no ring:5 file (or temporary) is left
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_export_writes_all_placements_or_none(tmp_path, capsys, monkeypatch):
    target = tmp_path / "ag.xml"
    _disk_full_at(monkeypatch, 2)
    argv = ["export", "ring:4", "--collective", "allgather", "--placement", "both"]
    assert main([*argv, "-o", str(target)]) == 2
    capsys.readouterr()
    assert list(tmp_path.iterdir()) == []
