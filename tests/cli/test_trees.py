"""The `optcoll trees` command: files, summaries, determinism, errors."""

from __future__ import annotations

import json
from fractions import Fraction

from optcoll.cli import main
from optcoll.io import load_schedule, load_topology
from optcoll.verify.schedule import verify_schedule


def test_trees_writes_a_verified_optimal_schedule(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["trees", "dgx-a100:2", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "r*           3/65" in text and "k            13" in text
    schedule = load_schedule(out)
    assert schedule.collective == "allgather" and schedule.k == 13
    verdict = verify_schedule(
        load_topology("dgx-a100:2"), schedule, optimum=Fraction(3, 65), require_optimal=True
    )
    assert verdict.valid, verdict.reason
    assert verdict.time_factor == Fraction(3, 65)


def test_trees_json_summary_and_fixed_k(capsys):
    assert main(["trees", "mi250:1", "-k", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["k"] == 1 and data["cut_ratio"] == "7/150"
    # one chunk per root cannot reach r*: the best such schedule is exactly 9/7 slower here
    assert Fraction(data["time_factor"]) == Fraction(3, 50)
    assert Fraction(data["ratio_to_optimum"]) == Fraction(3, 50) / Fraction(7, 150)
    assert data["trees"] >= 16 and data["max_height"] >= 1


def test_trees_output_is_byte_identical(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.yaml"
    assert main(["trees", "mi250:1", "-o", str(first)]) == 0
    assert main(["trees", "mi250:1", "-o", str(first.with_name("c.json"))]) == 0
    assert first.read_bytes() == first.with_name("c.json").read_bytes()
    assert main(["trees", "mi250:1", "-o", str(second)]) == 0
    assert load_schedule(second) == load_schedule(first)


def test_trees_errors_exit_2(capsys):
    assert main(["trees", "no-such-family:3"]) == 2
    assert "no-such-family" in capsys.readouterr().err
    assert main(["trees", "dgx-a100:1", "-k", "0"]) == 2
    assert "k must be a positive integer" in capsys.readouterr().err
