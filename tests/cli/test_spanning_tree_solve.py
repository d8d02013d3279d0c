"""``solve --collective allreduce`` by reduce + broadcast over spanning trees, and its file.

On a topology without switches where the spanning trees beat reduce-scatter + allgather
(mesh 4x4: M/160 GB/s against M/106.7), ``solve`` writes them as an aggregation schedule
(apexes are compute nodes), states the exact partition bound they attain, and ``verify``
and ``simulate`` read the file back.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

from optcoll.cli import main
from optcoll.core.aggregation import AggregationSchedule
from optcoll.io import save_schedule
from optcoll.io.schedule_json import load_any_schedule
from optcoll.schedules.spanning_tree_allreduce import spanning_tree_schedule
from optcoll.topologies import build
from optcoll.verify.aggregation import verify_aggregation_schedule


def _json(capsys, argv):
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_solve_writes_the_spanning_trees_at_the_partition_bound(tmp_path, capsys):
    code, out = _json(
        capsys, ["solve", "mesh:4x4", "--collective", "allreduce", "-o", str(tmp_path), "--json"]
    )
    assert code == 0 and out["method"] == "spanning trees (reduce+broadcast)"
    assert out["algbw"] == 160.0 and out["optimal"] is True and out["in_network"] is False
    assert out["partition_bound"] == "1/10" and out["lower_bound"] == "1/10"  # 16 / 160
    assert out["reduce_scatter_allgather"] == "3/320"  # RS + AG: M / 106.7
    assert out["claim"].startswith("optimal among all allreduce schedules in which only compute")
    (path,) = out["files"]
    schedule = load_any_schedule(path)
    assert isinstance(schedule, AggregationSchedule)
    assert all(tree.apex in schedule.compute_nodes for tree in schedule.trees)
    code, checked = _json(capsys, ["verify", "mesh:4x4", path, "--json"])
    assert code == 0 and checked["valid"] and checked["at_partition_bound"] is True
    assert checked["partition_bound"] == "1/160" and checked["cut_bound"] == "1/200"
    code, simulated = _json(capsys, ["simulate", "mesh:4x4", path, "--sizes", "1G", "--json"])
    (row,) = simulated["results"]
    bound_us = 2**30 / 160e3  # M / 160 GB/s in µs
    assert code == 0 and bound_us <= row["time_us"] <= 1.02 * bound_us


def test_a_false_proved_claim_is_caught(tmp_path, capsys):
    mesh = build("mesh:4x4")
    good = spanning_tree_schedule(mesh)
    one = replace(good.trees[0], chunks=1)  # one tree only: not the optimum
    bad = replace(good, k=1, trees=(one,), time_factor=None)
    verdict = verify_aggregation_schedule(mesh, bad)
    assert verdict.valid and verdict.time_factor > Fraction(1, 160)
    path = tmp_path / "bad.json"
    save_schedule(bad, path)
    code = main(["verify", "mesh:4x4", str(path)])
    out = capsys.readouterr().out
    assert code == 1 and "stats.proved" in out and "INVALID" in out


def test_rs_ag_stays_where_it_attains_or_k_is_given(tmp_path, capsys):
    code, torus = _json(
        capsys, ["solve", "torus:4x4", "--collective", "allreduce", "-o", str(tmp_path), "--json"]
    )
    assert code == 0 and "method" not in torus and torus["trees"] == 48
    assert torus["partition_bound"] == torus["lower_bound"] == "3/40"
    code, fixed = _json(
        capsys,
        [
            "solve",
            "mesh:4x4",
            "--collective",
            "allreduce",
            "-k",
            "2",
            "-o",
            str(tmp_path / "k"),
            "--json",
            "--force",
        ],
    )
    assert code == 0 and fixed["algbw"] == 106.667 and fixed["partition_bound"] == "1/10"
