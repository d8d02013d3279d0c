"""Every paper figure script runs at its small size and writes checked PNG + CSV."""

from __future__ import annotations

import csv
import importlib
from fractions import Fraction
from pathlib import Path

import pytest

from paper_figures import FIGURES
from paper_figures.__main__ import main as run_figures
from paper_figures._common import reference


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, list[Path]]:
    folder = tmp_path_factory.mktemp("figures")
    return {
        name: importlib.import_module(f"paper_figures.{name}").main(out_dir=folder, small=True)
        for name in FIGURES
    }


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_writes_a_png_and_a_csv(outputs, name):
    written = outputs[name]
    assert sorted(p.suffix for p in written) == [".csv", ".png"]
    assert all(p.stem == name for p in written)
    png = next(p for p in written if p.suffix == ".png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert read_csv(next(p for p in written if p.suffix == ".csv"))  # header plus rows


def test_optima_table_agrees_with_the_reference(outputs):
    rows = read_csv(outputs["optima_table"][0])
    assert [(r["topology"], r["boxes"]) for r in rows] == [
        ("dgx-a100", "1"),
        ("dgx-a100", "2"),
        ("mi250", "1"),
    ]
    for r in rows:
        assert r["cut_ratio"] == r["reference_cut_ratio"] and r["agrees"] == "True"
        assert r["k"] == r["reference_k"]
        n = int(r["gpus"])
        assert float(r["algbw_GBps"]) == pytest.approx(
            float(n / Fraction(r["cut_ratio"])), abs=1e-3
        )


def test_bottleneck_cut_links_add_up_to_the_cut_bandwidth(outputs):
    rows = read_csv(outputs["bottleneck_cut"][0])
    for spec in ("dgx-a100:1", "mi250:1"):
        mine = [r for r in rows if r["topology"] == spec]
        ratio = Fraction(mine[0]["cut_ratio"])
        bandwidth = sum(Fraction(r["link_bandwidth_GBps"]) for r in mine)
        assert Fraction(int(mine[0]["cut_compute"])) / bandwidth == ratio
    assert {r["cut_ratio"] for r in rows} == {"7/300", "7/150"}


def test_mi250_tree_is_a_spanning_arborescence_of_the_optimal_schedule(outputs):
    rows = read_csv(outputs["mi250_tree"][0])
    k = {int(r["k"]) for r in rows}
    assert k == {3}  # ForestColl's k for mi250:1
    trees = {}
    for r in rows:
        trees.setdefault(r["tree"], []).append(r)
    assert sum(int(edges[0]["chunks"]) for edges in trees.values()) == 3
    for edges in trees.values():
        assert len(edges) == 15  # spans the 16 GCDs
        assert len({e["dst"] for e in edges}) == 15
        assert {e["src"] for e in edges if e["depth"] == "1"} == {"b0.gcd0"}
    assert sum(r["drawn"] == "1" for r in rows) == 15


def test_fixed_k_reaches_the_optimum_at_forestcoll_k(outputs):
    rows = read_csv(outputs["fixed_k"][0])
    assert [int(r["k"]) for r in rows] == [1, 2, 3]
    assert all(r["verified"] == "True" for r in rows)
    ratios = [Fraction(r["ratio_to_optimum"]) for r in rows]
    assert ratios == sorted(ratios) and ratios[-1] == 1 and ratios[0] < 1
    assert rows[-1]["time_factor"] == "7/150"


def test_generation_time_lists_the_reference_timings(outputs):
    rows = read_csv(outputs["generation_time"][0])
    seconds = reference()["reference_seconds_2core"]
    assert [(r["method"], r["topology"]) for r in rows] == [
        ("bound", "dgx-a100:1"),
        ("bound", "dgx-a100:2"),
        ("bound", "mi250:1"),
        ("trees", "dgx-a100:1"),
    ]
    for r in rows:
        expected = seconds[r["method"]].get(r["topology"])
        assert r["reference_seconds"] == ("" if expected is None else str(expected))


def test_main_runs_named_figures_and_rejects_unknown_ones(tmp_path, capsys):
    assert run_figures(["bottleneck_cut", "--small", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "bottleneck_cut.png").exists()
    assert "bottleneck_cut: bottleneck_cut.csv, bottleneck_cut.png" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        run_figures(["nope"])
    assert "unknown figure 'nope'" in capsys.readouterr().err


def test_no_baseline_beats_the_optimum(outputs):
    rows = read_csv(outputs["algbw_vs_baselines"][0])
    limits = [r for r in rows if r["message_bytes"] == ""]
    assert {(r["topology"], r["method"]) for r in limits} == {
        ("dgx-a100:1", "optimal (N / r*)"),
        ("dgx-a100:1", "ring"),
        ("dgx-a100:2", "optimal (N / r*)"),
        ("dgx-a100:2", "ring"),
        ("dgx-a100:2", "hierarchical ring"),
        ("mi250:1", "optimal (N / r*)"),
        ("mi250:1", "ring"),
    }
    assert all(float(r["ratio_to_optimal"]) <= 1 for r in rows)
    optimal = {r["topology"]: r["algbw_GBps"] for r in limits if r["method"].startswith("optimal")}
    assert optimal == {"dgx-a100:1": "342.857", "dgx-a100:2": "346.667", "mi250:1": "342.857"}
    # one NVSwitch box: a ring is already optimal
    ring = {r["topology"]: r["ratio_to_optimal"] for r in limits if r["method"] == "ring"}
    assert ring["dgx-a100:1"] == "1.0" and float(ring["dgx-a100:2"]) < 1
    curve = [r for r in rows if r["message_bytes"] != ""]
    assert {r["method"] for r in curve} == {"optimal (k=1)", "ring"}
    algbw = [float(r["algbw_GBps"]) for r in curve if r["method"] == "optimal (k=1)"]
    assert algbw == sorted(algbw) and algbw[-1] <= 342.857


def test_runs_twice_from_any_folder(tmp_path):
    """A second run replaces the first run's files; the folder runs from anywhere."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]  # the repository
    script = root / "paper_figures"
    argv = [sys.executable, str(script), "--small", "optima_table", "--out", str(tmp_path / "o")]
    for _ in range(2):
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert done.stdout.startswith("optima_table: optima_table.csv, optima_table.png")
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "optima_table.csv",
        "optima_table.png",
    ]
