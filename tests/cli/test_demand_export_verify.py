"""export, verify and compare with --demand / --moe (optcoll.cli._demand)."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from optcoll import load_topology
from optcoll.cli import main
from optcoll.io.demand import read_demand
from optcoll.schedules.alltoallv import proved_optimum
from optcoll.verify.chakra import verify_prefix

DATA = Path(__file__).parent.parent / "data" / "demand_dgx_h100_2.json"
MOE = "tokens=64,experts=16,top_k=2,zipf=1"


def test_export_chakra_writes_checked_traces(tmp_path, capsys):
    prefix = tmp_path / "a2av"
    args = ["export", "dgx-h100:2", "--collective", "alltoall", "--demand", str(DATA)]
    assert main([*args, "--format", "chakra", "-o", str(prefix), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["files"]) == 16 and all(Path(f).is_file() for f in data["files"])
    topo = load_topology("dgx-h100:2")
    demand = read_demand(DATA, topo.compute_nodes)
    assert Fraction(data["optimum"]) == proved_optimum(topo, demand).time_factor
    assert Fraction(data["time_factor"]) >= Fraction(data["optimum"])
    report = verify_prefix(prefix)
    assert report.findings == [] and report.executed
    assert report.bytes_sent == data["bytes_sent"] >= demand.total_bytes
    assert main([*args, "--format", "chakra", "-o", str(prefix)]) == 2  # no overwrite
    assert "--force" in capsys.readouterr().err
    assert main([*args, "--format", "chakra", "-o", f"{tmp_path}/", "--json"]) == 0  # a DIR/
    assert json.loads(capsys.readouterr().out)["files"][0].endswith("dgx-h100_2.alltoallv.0.et")


@pytest.mark.parametrize(
    ("fmt", "reason"),
    [("msccl", "MSCCL XML gives every chunk"), ("mscclpp", "MSCCL\\+\\+ plan gives every chunk")],
)
def test_export_refuses_fixed_chunk_formats(fmt, reason, tmp_path, capsys):
    out = tmp_path / "x.out"
    args = ["export", "dgx-h100:2", "--collective", "alltoall", "--moe", MOE, "--format", fmt]
    assert main([*args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert re.search(reason, err) and not out.exists()


def test_verify_routes_file_against_its_demand(tmp_path, capsys):
    base = ["dgx-h100:2", "--collective", "alltoall", "--moe", MOE]
    assert main(["solve", *base, "-o", str(tmp_path), "--json"]) == 0
    solved = json.loads(capsys.readouterr().out)
    routes = solved["schedule"]
    assert main(["verify", "dgx-h100:2", routes, "--moe", MOE, "--optimum", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] and data["time_factor"] == solved["schedules"]["optimal"]["time_factor"]
    assert Fraction(data["ratio_to_optimum"]) >= 1
    # another demand: some pair's bytes differ
    assert main(["verify", "dgx-h100:2", routes, "--moe", MOE + ",seed=5"]) == 1
    assert "INVALID: pair" in capsys.readouterr().out
    # a path on a link that does not exist
    doc = json.loads(Path(routes).read_text())
    doc["routes"][0]["paths"][0]["path"] = [doc["routes"][0]["src"], doc["routes"][0]["dst"]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["verify", "dgx-h100:2", str(bad), "--moe", MOE]) == 1
    assert "there is no link" in capsys.readouterr().out
    assert main(["verify", "dgx-h100:1", routes, "--moe", MOE]) == 2  # other ranks


def test_compare_lists_every_demand_schedule(capsys):
    args = ["compare", "dgx-h100:2", "--collective", "alltoall", "--moe", MOE, "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {row["method"]: row for row in data["schedules"]}
    assert set(rows) == {"optimal", "spray", "direct", "hierarchical", "birkhoff", "flash"}
    optimum = Fraction(data["time_factor"])
    assert Fraction(rows["optimal"]["time_factor"]) == optimum
    for row in rows.values():
        assert Fraction(row["time_factor"]) >= optimum
        assert row["simulated_us"] >= row["time_us"]
    assert rows["birkhoff"]["phases"] >= 1 and rows["flash"]["phases"] >= 1
    assert main([*args[:-1], "--plot", "x.png"]) == 2
