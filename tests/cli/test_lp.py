"""The `optcoll lp` command."""

from __future__ import annotations

import json
from pathlib import Path

import highspy
import pytest

from optcoll.cli import main


def test_lp_solve_congestion_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lp", "solve", "dgx-a100:2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cut_ratio"] == "3/65" and data["form"] == "rate"
    assert data["algbw"] == pytest.approx(346.667, abs=1e-3)
    assert len([v for v in data["cut"] if "gpu" in v]) == 15


def test_lp_solve_text_forms_agree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lp", "solve", "dgx-a100:1", "--form", "time"]) == 0
    time_form = capsys.readouterr().out
    assert main(["lp", "solve", "dgx-a100:1", "--model", "multicast"]) == 0
    multicast = capsys.readouterr().out
    for out in (time_form, multicast):
        assert "cut ratio    7/300" in out and "algbw        342.857 GB/s" in out


RING4 = {
    "name": "ring",
    "nodes": [{"id": f"g{i}"} for i in range(4)],
    "links": [
        {"src": f"g{i}", "dst": f"g{(i + 1) % 4}", "bandwidth": 10, "bidirectional": True}
        for i in range(4)
    ],
}


def test_lp_solve_tree_packing_and_fixed_k(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "ring.json"
    file.write_text(json.dumps(RING4))
    assert main(["lp", "solve", str(file), "--model", "tree-packing", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cut_ratio"] == "3/20" and data["max_overload"] == "0"
    # r* = 3/20 needs two chunks per root; with one the best time factor is 2/10.
    for k, expected in (("2", "3/20"), ("1", "1/5")):
        assert main(["lp", "solve", str(file), "--model", "fixed-k", "-k", k, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["time_factor"] == expected and data["k"] == int(k)
    assert main(["lp", "solve", str(file), "--model", "fixed-k"]) == 2
    assert "needs -k K" in capsys.readouterr().err
    out = tmp_path / "fixed.lp"
    assert main(["lp", "export", str(file), "--model", "fixed-k", "-k", "2", "-o", str(out)]) == 0
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.readModel(str(out))
    highs.run()
    assert highs.getInfo().objective_function_value == pytest.approx(1.5)  # 3/2 in units of 10


def test_lp_export_writes_solvable_models(tmp_path: Path) -> None:
    for model, suffix in (("congestion", ".mps"), ("multicast", ".lp")):
        out = tmp_path / f"m{suffix}"
        assert main(["lp", "export", "dgx-a100:1", "--model", model, "-o", str(out)]) == 0
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        highs.readModel(str(out))
        highs.run()
        assert highs.getInfo().objective_function_value == pytest.approx(7.0)


def test_lp_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lp", "export", "dgx-a100:1", "-o", str(tmp_path / "m.txt")]) == 2
    assert "unknown model file suffix '.txt'" in capsys.readouterr().err
    assert main(["lp", "solve", "dgx-a100:2", "--model", "tree-packing"]) == 2
    err = capsys.readouterr().err
    assert "not a compute node" in err and err.count("\n") == 1
