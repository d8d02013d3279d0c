"""optcoll plan lists the log-step candidates by name, and exports a winner whose partners
no link joins by relaying its messages, saying what the file gets."""

from __future__ import annotations

import json

from optcoll.cli import main


def test_plan_names_log_step_candidates_and_relays_what_no_link_joins(tmp_path, capsys):
    args = ["plan", "ring:8", "--collective", "allreduce", "--sizes", "1K",
            "--overhead", "1", "--latency", "0.5"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["sizes"]
    names = [c["method"] for c in row["candidates"]]
    assert {"recursive doubling", "Rabenseifner", "Swing", "Swing (latency)"} <= set(names)
    assert row["method"] == "one-shot"  # one step: 7 messages of 1 KiB, each on its own path
    assert main([*args, "--export", str(tmp_path / "bands")]) == 0
    out = capsys.readouterr().out
    # one-shot's partners up to 4 hops away share no link: the GPUs between relay them, each
    # relay a receive and a send (rccl runs no rcs), so the file loses to plan and says so
    assert "wrote" in out and "allreduce.0-maxB.one-shot.outofplace.xml" in out
    assert "achievable as rccl MSCCL: 10.041 µs, one-shot (3.041 µs in plan's model;" in out
    assert "40 messages relayed by GPUs between" in out
    assert [p.name for p in sorted((tmp_path / "bands").iterdir())] == [
        "allreduce.0-maxB.one-shot.outofplace.xml"
    ]


def test_plan_export_max_bytes_lets_msccl_hold_a_scratch_step_program(tmp_path, capsys):
    """microsoft/msccl allocates maxBytes * s_chunks / nchunksperloop bytes of scratch, so a
    scratch-using step program needs a bounded last band; --max-bytes gives it one."""
    args = ["plan", "ring:8", "--collective", "allreduce", "--sizes", "1K", "--overhead", "1",
            "--latency", "0.5", "--runtime", "msccl"]  # fmt: skip
    assert main([*args, "--export", str(tmp_path / "open")]) == 0
    out = capsys.readouterr().out
    assert "one-shot: runtime 'msccl' has no unlimited maxBytes" in out
    assert "the MSCCL file simulated 14.006 µs" in out  # optimal (k=2) holds the band instead
    assert main([*args, "--export", str(tmp_path / "bounded"), "--max-bytes", "4K"]) == 0
    out = capsys.readouterr().out
    assert "the MSCCL file simulated 7.041 µs" in out
    (written,) = (tmp_path / "bounded").iterdir()
    assert written.name == "allreduce.0-4096B.one-shot.outofplace.xml"
    assert 'maxBytes="4097"' in written.read_text()  # msccl's bound is exclusive


def test_plan_max_bytes_needs_export(capsys):
    assert main(["plan", "ring:8", "--max-bytes", "1M"]) == 2
    assert "--max-bytes bounds the --export files" in capsys.readouterr().err
