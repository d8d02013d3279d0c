"""The CLI of uneven all-to-all, scatter and gather (optcoll.cli._demand via bound and solve)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from optcoll import load_topology
from optcoll.bounds.demand import demand_optimum
from optcoll.cli import main
from optcoll.io.demand import read_demand

DATA = Path(__file__).parent.parent / "data" / "demand_dgx_h100_2.json"


def test_bound_reports_time_us(capsys):
    assert (
        main(["bound", "dgx-h100:2", "--collective", "alltoall", "--demand", str(DATA), "--json"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    topo = load_topology("dgx-h100:2")
    expected = demand_optimum(topo, read_demand(DATA, topo.compute_nodes)).time_factor
    assert Fraction(data["time_factor"]) == expected
    assert data["time_us"] == pytest.approx(float(expected) / 1000)
    assert data["certificate_bound"] == data["time_factor"]


def test_moe_and_solve_write_verified_routes(tmp_path, capsys):
    args = [
        "solve",
        "dgx-h100:2",
        "--collective",
        "alltoall",
        "--moe",
        "tokens=64,experts=16,top_k=2,zipf=1",
        "-o",
        str(tmp_path),
        "--json",
    ]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["schedules"]) == {"optimal", "spray", "direct", "hierarchical"}
    for schedule in data["schedules"].values():
        assert Fraction(schedule["time_factor"]) >= Fraction(data["time_factor"])
    written = json.loads(Path(data["schedule"]).read_text())
    assert written["format"] == "optcoll-alltoallv-routes" and written["routes"]
    assert main(args) == 2  # exists: refused without --force
    assert "--force" in capsys.readouterr().err


@pytest.mark.parametrize("collective", ["scatter", "gather"])
def test_rooted_bound_and_solve(collective, tmp_path, capsys):
    base = ["dgx-a100:2", "--collective", collective, "--root", "b1.gpu2", "--json"]
    assert main(["bound", *base]) == 0
    bound = json.loads(capsys.readouterr().out)
    assert bound["algbw"] == pytest.approx(float(1 / Fraction(bound["time_factor"])), abs=1e-3)
    assert main(["solve", *base, "-o", str(tmp_path)]) == 0
    solved = json.loads(capsys.readouterr().out)
    assert solved["lp_agrees"] and solved["verified"]
    assert solved["schedule_time_factor"] == solved["time_factor"] == bound["time_factor"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--collective", "scatter"], "needs --root"),
        (["--collective", "gather", "--root", "zz"], "zz"),
        (["--demand", "DATA"], "use --collective alltoall"),
        (["--collective", "alltoall", "--demand", "missing.json"], "missing.json"),
        (["--collective", "alltoall", "--moe", "topk=2"], "unknown key 'topk'"),
        (["--collective", "scatter", "--root", "b0.gpu0", "--method", "lp"], "--method lp"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, capsys):
    args = [str(DATA) if a == "DATA" else a for a in args]
    assert main(["bound", "dgx-h100:2", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
