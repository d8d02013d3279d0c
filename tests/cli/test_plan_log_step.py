"""optcoll plan lists the log-step candidates by name and says when one it cannot export wins."""

from __future__ import annotations

import json

from optcoll.cli import main


def test_plan_names_log_step_candidates_and_what_it_cannot_export(tmp_path, capsys):
    args = ["plan", "ring:8", "--collective", "allreduce", "--sizes", "1K",
            "--overhead", "1", "--latency", "0.5"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["sizes"]
    names = [c["method"] for c in row["candidates"]]
    assert {"recursive doubling", "Rabenseifner", "Swing", "Swing (latency)"} <= set(names)
    assert row["method"] == "one-shot"  # one step: 7 messages of 1 KiB, each on its own path
    assert main([*args, "--export", str(tmp_path / "bands")]) == 0
    out = capsys.readouterr().out
    # one-shot's partners up to 4 hops away share no link: MSCCL connects GPUs joined by one
    assert "not exported as MSCCL" in out and "one-shot: check-xml: GPU 0 (n0) sends to GPU" in out
    assert [p.suffix for p in sorted((tmp_path / "bands").iterdir())] == [".json", ".xml"]
