"""The Python API is as strict as the command line, and no error message echoes a long
value whole (issue 38, item 5)."""

from __future__ import annotations

import json

import networkx as nx
import pytest

import optcoll
from optcoll.cli import main
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ArgumentError, OptCollError, ScheduleError
from optcoll.io import load_schedule, save_schedule


def _pair(bandwidth: object) -> Topology:
    return Topology("pair", [Node("a"), Node("b")], [Link("a", "b", bandwidth, bidirectional=True)])


@pytest.mark.parametrize("bandwidth", [1e308, 10**400, "1/" + "1" + "0" * 301])
def test_solve_refuses_bandwidths_beyond_float_range(bandwidth):
    # main: solve() returned, then .algbw and str() raised a bare OverflowError
    with pytest.raises(ArgumentError, match="beyond the range 1e-300 to 1e300") as caught:
        optcoll.solve(_pair(bandwidth))
    assert "link a -> b" in str(caught.value) and len(str(caught.value)) < 300


def test_a_networkx_graph_is_held_to_the_same_range():
    graph = nx.DiGraph()
    graph.add_edge("a", "b", bandwidth=10**400)
    graph.add_edge("b", "a", bandwidth=10**400)
    with pytest.raises(ArgumentError, match="beyond the range"):
        optcoll.solve(graph)


def test_the_cli_and_the_api_refuse_the_same_file(tmp_path, capsys):
    path = tmp_path / "t.json"
    data = _pair(1).to_dict()
    data["links"][0]["bandwidth"] = 1e308
    path.write_text(json.dumps(data))
    with pytest.raises(OptCollError):
        optcoll.solve(path)
    assert main(["solve", str(path), "-o", str(tmp_path / "out")]) == 2
    assert "1e-300 to 1e300" in capsys.readouterr().err


def test_a_huge_value_is_not_echoed_whole(tmp_path, capsys):
    path = tmp_path / "ring.json"
    save_schedule(optcoll.solve("ring:4").schedule, path)
    data = json.loads(path.read_text())
    data["time_factor"] = "7" * 100_000 + "/3"
    path.write_text(json.dumps(data))
    with pytest.raises(ScheduleError) as caught:
        load_schedule(path)
    message = str(caught.value)
    assert "time_factor" in message and "100004 characters" in message
    assert len(message) < 400 and "\n" not in message
    assert main(["verify", "ring:4", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err) < 400 and err.count("\n") == 1


def test_every_error_is_one_line():
    error = OptCollError("first\nsecond")
    assert str(error) == "first second"
