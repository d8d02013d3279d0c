"""optcoll bound --sizes, simulate's start-up bound: the one lower bound of plan, per size."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from optcoll.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_bound_sizes_torus_allreduce(capsys):
    """torus 8x8, o = 1, links 1/2: at 1 GiB the partition bound's crossings over all 256
    links between o and T - 1/2; at 1 MiB the antipode's data into a node (7 hops to its
    neighbours, then one link), which the combined bound exceeds."""
    argv = ["bound", "torus:8x8", "--collective", "allreduce", "--sizes", "1M", "1G",
            "--overhead", "1", "--latency", "0.5", "--json"]  # fmt: skip
    data = _json(capsys, argv)
    small, large = data["sizes"]
    assert large["lower_bound_us"] == pytest.approx(
        float(Fraction(3, 2) + Fraction(2 * 63 * 2**30, 25_600_000)), abs=1e-4
    )
    assert large["startup_cut"] == "allreduce: the partition bound's crossings"
    start_up = pytest.approx(float(5 + Fraction(2**20, 400_000)), abs=1e-4)
    assert small["startup_bound_us"] == start_up
    assert small["lower_bound_us"] == small["combined_bound_us"] > small["startup_bound_us"]
    assert small["latency_bound_us"] == 5.0 and small["bandwidth_bound_us"] < 5.2
    assert "only compute nodes reduce" in data["bound_holds_for"]
    main(argv[:-1])
    assert "tightest start-up cut" in capsys.readouterr().out


def test_simulate_reports_the_start_up_bound(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["solve", "ring:4", "-o", str(out)]) == 0
    capsys.readouterr()
    schedule = next(out.glob("*.schedule.json"))
    data = _json(capsys, ["simulate", "ring:4", str(schedule), "--sizes", "1G", "--json"])
    (row,) = data["results"]
    assert row["lower_bound_us"] == max(
        row["latency_bound_us"], row["bandwidth_bound_us"], row["startup_bound_us"]
    )
    # ring:4 allgather at 1 GiB: r*'s time plus the overhead and one link (1 µs each)
    assert row["startup_bound_us"] == pytest.approx(row["bandwidth_bound_us"] + 2, abs=1e-4)
    assert row["time_us"] >= row["lower_bound_us"]
