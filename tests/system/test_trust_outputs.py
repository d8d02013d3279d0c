"""Outputs a reader can trust (issue 38): one convention for every time factor, the same
``--json`` keys whatever the topology."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from optcoll.cli import main

#: The keys every ``solve --json`` carries, with or without in-network switches.
COMMON = {
    "collective",
    "topology",
    "topology_hash",
    "num_compute",
    "bandwidth_unit",
    "root",
    "k",
    "time_factor",
    "time_factor_meaning",
    "algbw",
    "lower_bound",
    "optimal_algbw",
    "optimal",
    "claim",
    "trees",
    "routes",
    "verified",
    "files",
}


def _json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_solve_allreduce_states_one_time_factor_with_and_without_a_reducing_switch(
    tmp_path, capsys
):
    # the issue: 1/450 (per whole message) beside 7/225 (per shard) read as 14x, not 1.75x
    plain = _json(
        capsys,
        ["solve", "star:8", "--collective", "allreduce", "--json", "-o", str(tmp_path / "a")],
    )
    sharp = _json(
        capsys,
        [
            "solve",
            "star:8,sharp=1",
            "--collective",
            "allreduce",
            "--json",
            "-o",
            str(tmp_path / "b"),
        ],
    )
    assert COMMON <= set(plain) and COMMON <= set(sharp)
    assert plain["time_factor_meaning"] == sharp["time_factor_meaning"]
    assert plain["time_factor_meaning"].startswith("T = (M/N) * time_factor")
    assert (plain["time_factor"], sharp["time_factor"]) == ("7/50", "2/25")
    assert Fraction(plain["time_factor"]) / Fraction(sharp["time_factor"]) == Fraction(7, 4)
    for data in (plain, sharp):  # algbw = N / time_factor in both
        assert data["num_compute"] == 8
        assert data["algbw"] == round(float(8 / Fraction(data["time_factor"])), 3)
        assert data["optimal_algbw"] == round(float(8 / Fraction(data["lower_bound"])), 3)
    assert (plain["algbw"], sharp["algbw"]) == (57.143, 100.0)
    # the per-message figures keep their value and say so, as in bound
    assert (sharp["cut_bound"], sharp["reduce_scatter_allgather"]) == ("1/100", "7/400")
    assert "per whole message" in sharp["per_message"]
    assert sharp["optimal"] is True and sharp["claim"].startswith("optimal: attains the cut bound")


def test_bound_allreduce_states_the_same_convention(capsys):
    plain = _json(capsys, ["bound", "star:8", "--collective", "allreduce", "--json"])
    sharp = _json(capsys, ["bound", "star:8,sharp=1", "--collective", "allreduce", "--json"])
    assert set(plain) == set(sharp)
    assert plain["lower_bound"] == sharp["lower_bound"] == "2/25"  # the cut bound, per shard
    assert plain["cut_bound"] == "1/100" and "per whole message" in plain["per_message"]
    assert plain["time_factor_meaning"].startswith("T = (M/N) * time_factor")
    assert (plain["num_compute"], plain["bandwidth_unit"], plain["algbw"]) == (8, "GB/s", 100.0)


def test_text_says_what_a_time_factor_multiplies(tmp_path, capsys):
    assert main(["solve", "ring:4", "-o", str(tmp_path)]) == 0
    solved = capsys.readouterr().out
    assert "(time factor 3/200 per GB/s of M/N)" in solved
    assert main(["bound", "ring:4"]) == 0
    assert "3/200 per GB/s of M/N" in capsys.readouterr().out


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_rooted_collectives_are_per_whole_message(tmp_path, capsys, collective):
    data = _json(
        capsys, ["solve", "ring:4", "--collective", collective, "--json", "-o", str(tmp_path)]
    )
    assert data["time_factor_meaning"].startswith("T = M * time_factor")
    assert data["algbw"] == round(float(1 / Fraction(data["time_factor"])), 3)


@pytest.mark.parametrize(
    ("spec", "collective"),
    [("star:4,sharp=1", "allreduce"), ("ring:4", "allreduce"), ("ring:4", "alltoall")],
)
def test_the_same_input_gives_the_same_bytes(tmp_path, capsys, spec, collective):
    # main: an in-network solve wrote stats.seconds into the schedule file
    written = []
    for run in ("first", "second"):
        argv = ["solve", spec, "--collective", collective, "-o", str(tmp_path / run)]
        assert main(argv) == 0
        files = sorted((tmp_path / run).iterdir())
        written.append({path.name: path.read_bytes() for path in files})
    assert written[0] == written[1]
    for name, data in written[0].items():
        if name.endswith(".json"):
            assert "seconds" not in json.loads(data).get("stats", {}), name
