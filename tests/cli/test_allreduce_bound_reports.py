"""bound, compare, simulate and plan report one bound per collective, what it holds for,
and busbw beside algbw (issue #37)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from optcoll.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_bound_allreduce_mesh(capsys):
    data = _json(capsys, ["bound", "mesh:4x4", "--collective", "allreduce", "--json"])
    assert data["bound"] == "1/160" and data["spanning_trees"] == "1/160"
    assert data["reduce_scatter_allgather"] == "3/320"
    partition = data["partition_bound"]
    assert partition["exact"] and partition["compute_parts"] == 16 and partition["crossings"] == 1
    assert "only compute nodes reduce" in data["bound_holds_for"]
    main(["bound", "mesh:4x4", "--collective", "allreduce"])
    text = capsys.readouterr().out
    assert "reduce + broadcast over spanning trees: optimal among all allreduce schedules" in text


def test_compare_mesh_allreduce_puts_spanning_trees_first(capsys):
    data = _json(
        capsys, ["compare", "mesh:2x3", "--collective", "allreduce", "--sizes", "1M", "--json"]
    )
    first = data["methods"][0]
    assert first["method"] == "spanning trees (reduce+broadcast)"
    assert data["bound_holds_for"].startswith("partition bound")
    for row in data["methods"]:
        assert row["busbw"] == pytest.approx(row["algbw"] * 2 * 5 / 6, abs=0.02)
        assert row["ratio_to_bound"] >= 1
    # mesh 2x3 (100 GB/s): tau = 7 links * 100 / 5 = 140 GB/s; the trees' chunks within 1 %
    assert (
        Fraction(1)
        <= Fraction(first["ratio_to_bound"]).limit_denominator(10**4)
        <= Fraction(101, 100)
    )


def test_simulate_reports_the_partition_bound_and_busbw(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["solve", "ring:4", "--collective", "allreduce", "-o", str(out)]) == 0
    capsys.readouterr()
    schedule = next(out.glob("*.schedule.json"))
    data = _json(capsys, ["simulate", "ring:4", str(schedule), "--sizes", "1M", "--json"])
    row = data["results"][0]
    assert row["bound_holds_for"].startswith(
        "partition bound: holds for every allreduce in which only compute nodes reduce, as "
        "the simulator runs them"
    )
    assert row["busbw"] == pytest.approx(row["algbw"] * 1.5, abs=2e-3)
