"""A box is a topology fact (issue 38, item 2): the MSCCL++ export puts GPUs of one group
(``Node.group``) on memory channels, whatever their ids look like, and says so."""

from __future__ import annotations

import json

import pytest

from optcoll.cli import main
from optcoll.export.mscclpp import boxes_of
from optcoll.topologies import build


def _two_servers(prefix: str, group: str | None) -> dict:
    """2 servers of 2 GPUs on a switch each, the switches joined by a slower link."""
    nodes, links = [], []
    for s in range(2):
        for g in range(2):
            node = {"id": f"{prefix}{s}.gpu{g}"}
            if group is not None:
                node["group"] = f"{group}{s}"
            nodes.append(node)
            links.append(
                {
                    "src": f"{prefix}{s}.gpu{g}",
                    "dst": f"sw{s}",
                    "bandwidth": 300,
                    "bidirectional": True,
                }
            )
        nodes.append({"id": f"sw{s}", "type": "switch"})
    links.append({"src": "sw0", "dst": "sw1", "bandwidth": 50, "bidirectional": True})
    return {"name": f"{prefix}-{group}", "nodes": nodes, "links": links}


def _export(tmp_path, topology: dict) -> dict:
    source = tmp_path / f"{topology['name']}.json"
    source.write_text(json.dumps(topology))
    out = tmp_path / f"{topology['name']}.plan.json"
    argv = ["export", str(source), "--format", "mscclpp", "-o", str(out), "--json"]
    assert main([*argv, "--collective", "allgather"]) == 0
    return out


def _entries(capsys) -> list[dict]:
    return json.loads(capsys.readouterr().out)["files"]


@pytest.mark.parametrize("prefix", ["s", "b"])
def test_the_issue_case_memory_channels_follow_the_groups(tmp_path, capsys, prefix):
    # the issue: `group: server0` with ids `s0.gpu0` had 0 pairs on memory channels
    _export(tmp_path, _two_servers(prefix, "server"))
    entries = _entries(capsys)
    for entry in entries:
        # the two GPU pairs inside a server on memory channels, the 4 across on port ones
        assert (entry["memory_channel_pairs"], entry["port_channel_pairs"]) == (2, 4)
        assert entry["boxes_from"] == "the topology's groups: 2 boxes, 4 GPUs in boxes"


def test_built_in_spelling_without_groups_gives_no_memory_channels(tmp_path, capsys):
    _export(tmp_path, _two_servers("b", None))
    for entry in _entries(capsys):
        assert entry["memory_channel_pairs"] == 0 and entry["port_channel_pairs"] > 0
        assert entry["boxes_from"] == "the topology's groups: none, every GPU a box of its own"


def test_the_text_output_names_where_the_boxes_come_from(tmp_path, capsys):
    topology = _two_servers("s", "server")
    source = tmp_path / "t.json"
    source.write_text(json.dumps(topology))
    out = tmp_path / "t.plan.json"
    assert main(["export", str(source), "--format", "mscclpp", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 GPU pairs on memory and 4 on port channels (boxes from the topology's groups" in text


def test_boxes_of_a_built_in_are_its_groups():
    topo = build("dgx-a100:2")
    boxes = boxes_of(topo)
    assert set(boxes.values()) == {"box0", "box1"}
    assert [v for v in topo.compute_nodes if boxes[v] == "box1"] == [f"b1.gpu{g}" for g in range(8)]
