"""export --format msccl|mscclpp --size S: the program of plan's choice at S, checked,
simulated and reported beside plan's time; the time reported is what simulate gives."""

from __future__ import annotations

import json

import pytest

from optcoll.cli import main
from optcoll.topologies import build
from optcoll.verify.msccl import verify_file
from optcoll.verify.mscclpp import verify_plan

ARGS = ["dgx-h100:2", "--collective", "allreduce", "--size", "1K", "--overhead", "1",
        "--latency", "0.5"]  # fmt: skip


@pytest.mark.parametrize(("fmt", "suffix"), [("msccl", ".xml"), ("mscclpp", ".json")])
def test_planned_program_is_checked_and_timed_as_simulate_times_it(fmt, suffix, tmp_path, capsys):
    """At 1 KiB plan chooses the hierarchical log-step allreduce; each of plan's four
    fastest candidates the format holds is written, checked and simulated, and the fastest
    file is kept (MSCCL: recursive doubling, whose receives cost fewer steps); simulate of
    the written file gives the time the report states."""
    path = tmp_path / f"ar{suffix}"
    assert main(["export", *ARGS, "--format", fmt, "-o", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["files"]
    assert entry["planned"] == "hierarchical (direct + recursive doubling)"
    compared = report["compared"]
    assert len(compared) == 4 and compared[0]["method"] == entry["planned"]
    assert entry["file_time_us"] == min(c["file_time_us"] for c in compared)
    assert entry["plan_time_us"] < entry["file_time_us"]  # the overhead of every step
    topology = build("dgx-h100:2")
    if fmt == "msccl":
        assert entry["method"] == "recursive doubling" and entry["steps"] == 4
        assert verify_file(path, topology=topology).ok
    else:
        assert verify_plan(json.loads(path.read_text())).ok
    argv = ["simulate", "dgx-h100:2", str(path), "--sizes", "1K", "--overhead", "1"]
    assert main([*argv, "--latency", "0.5", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["results"]
    assert round(run["time_us"], 4) == entry["file_time_us"]


def test_planned_log_step_programs_without_overhead_run_as_planned(tmp_path, capsys):
    """With no per-step overhead the MSCCL files of plan's log-step candidates run in plan's
    time (star:8 allreduce at 64 KiB: the readers' extra steps cost nothing then); the tree
    schedule plan chose, k = 1, loses its link order in the XML (5.64 against 5.15 µs) and is
    still the fastest file."""
    path = tmp_path / "ar.xml"
    argv = ["export", "star:8", "--collective", "allreduce", "--size", "64K", "--overhead", "0"]
    assert main([*argv, "-o", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["files"]
    assert entry["method"] == entry["planned"] == "optimal (k=1)"
    stepped = [c for c in report["compared"] if c["method"] in
               ("recursive doubling", "Swing (latency)")]  # fmt: skip
    assert len(stepped) == 2
    for c in stepped:
        assert c["file_time_us"] == pytest.approx(c["plan_time_us"], abs=1e-4)


@pytest.mark.parametrize("extra", [["-k", "2"], ["--bands"], ["--exact"]])
def test_planned_program_refuses_what_it_does_not_take(extra, tmp_path, capsys):
    argv = ["export", "ring:4", "--size", "1M", "-o", str(tmp_path / "x.xml"), *extra]
    assert main(argv) == 2
    assert f"--size writes what plan chose at that size for a topology: drop {extra[0]}" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "x.xml").exists()
