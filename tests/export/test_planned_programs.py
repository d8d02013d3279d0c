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
    """At 1 KiB plan chooses the one-shot allreduce; plan's four fastest candidates are
    written and simulated, and the fastest file is checked and kept: in MSCCL the
    hierarchical one-shot (one-shot's GPUs 0 and 9 no link or switch joins, so its messages
    between boxes off their rail are relayed, and its file is slower); in MSCCL++ the
    one-shot itself, whose puts to 15 peers leave from two thread blocks side by side
    (4.1729 µs against plan's 4.1593; on one block, two put ops one after the other, it
    took longer than the hierarchical file's 5.0364 until session 16); simulate of the
    written file gives the time the report states."""
    path = tmp_path / f"ar{suffix}"
    assert main(["export", *ARGS, "--format", fmt, "-o", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["files"]
    assert entry["planned"] == "one-shot"
    compared = report["compared"]
    # MSCCL: the relayed one-shot and two-shot ride beside the four
    relayed = {"one-shot", "two-shot"} if fmt == "msccl" else set()
    assert 1 <= len([c for c in compared if c["method"] not in relayed]) <= 4
    assert relayed <= {c["method"] for c in compared}
    assert entry["file_time_us"] == min(c["file_time_us"] for c in compared)
    written = {"msccl": "hierarchical (one-shot + one-shot)", "mscclpp": "one-shot"}
    assert entry["method"] == written[fmt]
    topology = build("dgx-h100:2")
    if fmt == "msccl":
        # rccl: every receive an r (one overhead), its addition a re (a local step, none):
        # a phase's receives run side by side, about an overhead more than plan per phase
        # (with rrc, one after another: above plan + 7)
        # (7.0501 whole; each message in 2 pieces, a channel per transfer, 7.0353)
        assert (entry["plan_time_us"], entry["file_time_us"]) == (5.0364, 7.0353)
        # one-shot relayed, a channel per transfer of a pair (7.1434 with its relay chains'
        # channels)
        assert compared[0] == {"method": "one-shot", "plan_time_us": 4.1593, "file_time_us": 7.1274}
        assert verify_file(path, topology=topology).ok
    else:  # measured: 4.1729 µs against plan's 4.1593 (an op's peers leave together)
        assert (entry["plan_time_us"], entry["file_time_us"]) == (4.1593, 4.1729)
        assert verify_plan(json.loads(path.read_text())).ok
    argv = ["simulate", "dgx-h100:2", str(path), "--sizes", "1K", "--overhead", "1"]
    assert main([*argv, "--latency", "0.5", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["results"]
    assert round(run["time_us"], 4) == entry["file_time_us"]


def test_planned_log_step_programs_without_overhead_run_as_planned(tmp_path, capsys):
    """With no per-step overhead (star:8 allreduce at 64 KiB) plan chose the tree schedule
    k = 1 at 5.1469 µs from its quotient, whose XML took 5.6384 (put down to its link
    order; it was the quotient's ties). Timed in full, ties first come first served, k = 1
    takes 5.6384, its file's time exactly, and plan chooses two-shot (5.1469; re-measured
    2026-12-03). The direct log-step candidates among plan's four fastest are written and
    simulated too. Written whole their several sends a step leave in the program's order
    (the one-partner schedules run exactly as planned: tests/export/test_step_exports.py);
    two-shot with each message in 4 pieces, a channel per transfer, forwards a message's
    first piece while the rest arrives and runs 4.8397 µs, below plan's 5.1469 for it (plan
    sends it whole): that file is kept. One-shot's file stays slower than plan's time of it."""
    path = tmp_path / "ar.xml"
    argv = ["export", "star:8", "--collective", "allreduce", "--size", "64K", "--overhead", "0"]
    assert main([*argv, "-o", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["files"]
    assert entry["method"] == entry["planned"] == "two-shot"
    assert (entry["spread"], entry["pieces"]) == (True, 4)
    assert (entry["plan_time_us"], entry["file_time_us"]) == (5.1469, 4.8397)
    compared = {c["method"]: c for c in report["compared"]}
    tree = compared["optimal (k=1)"]
    assert tree["plan_time_us"] == tree["file_time_us"] == 5.6384
    one_shot = compared["one-shot"]
    assert one_shot["file_time_us"] > one_shot["plan_time_us"] >= entry["plan_time_us"]


@pytest.mark.parametrize("extra", [["-k", "2"], ["--bands"], ["--exact"]])
def test_planned_program_refuses_what_it_does_not_take(extra, tmp_path, capsys):
    argv = ["export", "ring:4", "--size", "1M", "-o", str(tmp_path / "x.xml"), *extra]
    assert main(argv) == 2
    assert f"--size writes what plan chose at that size for a topology: drop {extra[0]}" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "x.xml").exists()


def test_mscclpp_export_times_plan_in_the_link_order_the_file_carries(tmp_path, capsys):
    """dgx-h100:2 allreduce at 64 MiB: plan runs optimal (k=2) fastest in its depth order
    (a link serves the slice with the deepest subtree ahead first), 261.4932 µs in 128 KiB
    slices; an MSCCL++ link serves what comes first, and the file written of it took
    270.4543 (+3.4 %). The export now plans in the orders the file carries
    (CARRIED_ORDERS): the data's, 271.5321 µs, and the same file runs within 0.4 % of it
    (a thread block per range, each running its steps tree level by tree level)."""
    path = tmp_path / "ar.json"
    argv = ["export", "dgx-h100:2", "--collective", "allreduce", "--size", "64M",
            "--format", "mscclpp", "-o", str(path)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "at 64M: plan 271.5321 µs, this file simulated 270.4543 µs (-0.4%" in out
    assert "optimal (k=2), k = 2, pipelined in 128K units; checked" in out
    argv = ["simulate", "dgx-h100:2", str(path), "--sizes", "64M", "--slice", "128K", "--json"]
    assert main(argv) == 0
    [row] = json.loads(capsys.readouterr().out)["results"]
    assert row["time_us"] == pytest.approx(270.4543, abs=1e-4)
    plain = main(["plan", "dgx-h100:2", "--collective", "allreduce", "--sizes", "64M", "--json"])
    assert plain == 0
    [own] = json.loads(capsys.readouterr().out)["sizes"]
    assert (own["time_us"], own["priority"]) == (261.4932, "depth")  # beyond the file


def test_candidates_that_cannot_win_are_timed_for_the_format_that_holds_only_them(tmp_path, capsys):
    # torus 4x4 allreduce at 64 KiB: plan's choice sends two hops along a line, which no
    # MSCCL program can name on a torus; the candidates plan had not timed (they cannot
    # win) are timed for the export, so it writes multiport Swing (latency) at 12.6554 µs,
    # not the k=1 trees at 25.3686 µs it wrote when it only saw the timed ones
    path = tmp_path / "ar.xml"
    argv = ["export", "torus:4x4", "--collective", "allreduce", "--format", "msccl"]
    assert main([*argv, "--size", "64K", "-o", str(path), "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert entry["planned"] == "multiport dimension-wise (one-shot + one-shot)"
    assert entry["method"] == "multiport Swing (latency)"
    assert entry["file_time_us"] == pytest.approx(12.6554, abs=1e-4)
    assert verify_file(path, topology=build("torus:4x4")).ok


@pytest.mark.parametrize(
    ("spec", "own_us", "file_us", "msccl_us"),
    [("mesh:4x4", 5.4237, 5.4406, 5.4491), ("torus:4x4", 3.4661, 3.4746, 3.4746),
     ("ring:8", 5.2598, 5.2598, 5.2598), ("hypercube:4", 3.3107, 3.6384, 3.4746)],
)  # fmt: skip
def test_timetable_files_run_in_plans_time_in_whole_chunks(
    spec, own_us, file_us, msccl_us, tmp_path, capsys
):
    """Allgather at 1 MiB, no overhead, 0.5 µs links: the greedy timetable (k=4) in whole
    chunks. Its MSCCL++ file runs its trees in the data's order, which is what the export
    now plans in (``CARRIED_ORDERS``): plan's time is the file's exactly, where plan timed
    it in the timetable's start-time order until 2026-12-03 (``own_us``: mesh 4x4 +0.3 %,
    torus +0.2 %, hypercube +9.9 % below the file). Sliced into 8 KiB, plan kept each
    link's start-time order slice by slice (mesh 4x4: 5.4152 µs) where the file's links
    serve every waiting put's first slice before any second one (5.9406). An MSCCL file
    lists a block's steps in the start-time order, which its links keep only in part
    (``msccl_us``: hypercube 4 +4.9 % over plan's model in that order): plan --format
    msccl prints the file's time, which export --format msccl writes."""
    path = tmp_path / "ag.json"
    argv = ["export", spec, "--size", "1M", "--format", "mscclpp", "--overhead", "0",
            "--latency", "0.5", "-o", str(path), "--json"]  # fmt: skip
    assert main(argv) == 0
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert (entry["planned"], entry["method"], entry["priority"]) == (
        "timetable (k=4)", "timetable (k=4)", "progress",
    )  # fmt: skip
    assert entry["slice_bytes"] == 512 * 1024  # whole chunks of 16 KiB (ring: 32 KiB)
    assert entry["planned_time_us"] == entry["plan_time_us"] == entry["file_time_us"]
    assert entry["file_time_us"] == pytest.approx(file_us, abs=1e-4)
    argv = ["simulate", spec, str(path), "--sizes", "1M", "--overhead", "0", "--latency", "0.5",
            "--slice", "512K", "--json"]  # fmt: skip
    assert main(argv) == 0
    [row] = json.loads(capsys.readouterr().out)["results"]
    assert row["time_us"] == pytest.approx(file_us, abs=1e-4)
    argv = ["plan", spec, "--sizes", "1M", "--overhead", "0", "--latency", "0.5", "--json"]
    assert main([*argv, "--format", "msccl"]) == 0  # MSCCL keeps the start times in a loop
    [row] = json.loads(capsys.readouterr().out)["sizes"]
    assert row["model"] == {"method": "timetable (k=4)", "time_us": own_us}
    assert (row["method"], row["priority"], row["time_us"]) == (
        "timetable (k=4)", "timetable", msccl_us,
    )  # fmt: skip
    argv = ["export", spec, "--size", "1M", "--overhead", "0", "--latency", "0.5",
            "-o", str(tmp_path / "ag.xml"), "--json"]  # fmt: skip
    assert main(argv) == 0
    entry = json.loads(capsys.readouterr().out)["files"][0]
    assert (entry["method"], entry["file_time_us"]) == (row["method"], msccl_us)


def test_a_library_callers_float_latency_is_read_exactly(tmp_path):
    """ExportRequest(latency=0.5) plans and simulates with links of exactly 1/2 µs, as
    --latency 0.5 does (a float crashed the exact latency bound); what is no number is an
    ArgumentError naming the field."""
    from fractions import Fraction

    from optcoll.exceptions import ArgumentError
    from optcoll.export.planned_programs import export_planned_program
    from optcoll.export.request import ExportRequest
    from optcoll.sim.size_plan import plan

    times = []
    for latency in (0.5, Fraction(1, 2)):
        request = ExportRequest("ring:4", str(tmp_path / f"{latency}.json"), format="mscclpp",
                                size=2**20, overhead=0, latency=latency)  # fmt: skip
        assert request.latency == Fraction(1, 2)
        (entry,) = export_planned_program(request).data["files"]
        times.append((entry["plan_time_us"], entry["file_time_us"]))
    assert times[0] == times[1] == (4.4322, 4.4322)
    [row] = plan(build("ring:4"), sizes=[2**20], overhead=0, default_latency=0.5)
    assert round(row.time_us, 4) == 4.4322
    with pytest.raises(ArgumentError, match="latency must be a number"):
        ExportRequest("ring:4", "ag.json", latency="half")
    with pytest.raises(ArgumentError, match="tolerance must be at least 0"):
        ExportRequest("ring:4", "ag.xml", tolerance=-0.01)
