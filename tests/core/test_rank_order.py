"""The rank order of a topology's compute nodes: recorded (files, NCCL dumps), shown, and
written beside every export (the MSCCL XML's first line, the schedule's ``compute_nodes``)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from optcoll import load_topology
from optcoll.cli import main
from optcoll.core.topology import Topology
from optcoll.exceptions import OptCollError
from optcoll.verify.msccl import verify_file

DATA = Path(__file__).parents[1] / "data"


def _cli(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def _ring_file(tmp_path, rank_order=None):
    data = load_topology("ring:4").to_dict()
    if rank_order is not None:
        data["rank_order"] = rank_order
    path = tmp_path / "ring.json"
    path.write_text(json.dumps(data))
    return path


def test_default_is_declaration_order_and_files_keep_a_given_order(tmp_path):
    ring = load_topology("ring:4")
    assert ring.rank_order == ring.compute_nodes == ("n0", "n1", "n2", "n3")
    assert "rank_order" not in ring.to_dict()  # default order: files unchanged
    topo = load_topology(str(_ring_file(tmp_path, ["n2", "n0", "n3", "n1"])))
    assert topo.compute_nodes == ("n2", "n0", "n3", "n1")
    assert Topology.from_dict(topo.to_dict()) == topo
    assert topo.content_hash == ring.content_hash  # capacities, not ranks
    edited = topo.with_link("n0", "n2", 5, bidirectional=True)
    assert edited.compute_nodes == topo.compute_nodes
    # convert keeps it
    assert main(["convert", str(tmp_path / "ring.json"), str(tmp_path / "ring.yaml")]) == 0
    assert load_topology(str(tmp_path / "ring.yaml")).compute_nodes == topo.compute_nodes


@pytest.mark.parametrize(
    "order,message",
    [
        (["n0", "n1", "n2"], "rank_order must list each of the 4 compute nodes once; missing: n3"),
        (["n0", "n1", "n2", "n2"], "rank_order must list each of the 4 compute nodes once"),
        (["n0", "n1", "n2", "n9"], "rank_order[3] = 'n9' is not a compute node of 'ring:4'"),
        ("n0 n1 n2 n3", "field 'rank_order' must be a list of compute node ids"),
    ],
)
def test_bad_rank_orders_are_one_line_errors(tmp_path, order, message):
    path = _ring_file(tmp_path, order)
    with pytest.raises(OptCollError, match="rank_order"):
        load_topology(str(path))
    status, out, err = _cli(["show", str(path)])
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


def test_nccl_dump_ranks_follow_the_rank_attribute_not_the_pci_order(tmp_path):
    text = (DATA / "nccl" / "dgx-a100.xml").read_text()
    swapped = text.replace('dev="0" sm="80" rank="0"', 'dev="0" sm="80" rank="1"', 1).replace(
        'dev="1" sm="80" rank="1"', 'dev="1" sm="80" rank="0"', 1
    )
    path = tmp_path / "dump.xml"
    path.write_text(swapped)
    topo = load_topology(str(path))
    declared = [n.id for n in topo.nodes if n.is_compute]
    assert declared[:2] == ["b0.gpu1", "b0.gpu0"]  # the PCI tree lists dev 0 (rank 1) first
    assert topo.compute_nodes == tuple(f"b0.gpu{r}" for r in range(8))
    assert "gpu0 = dev 1 at 0000:0b:00.0, gpu1 = dev 0 at 0000:07:00.0" in topo.description
    cluster = load_topology(str(path), boxes=2)
    assert cluster.compute_nodes == tuple(f"b{b}.gpu{r}" for b in range(2) for r in range(8))


def test_show_prints_the_rank_order(tmp_path):
    path = _ring_file(tmp_path, ["n3", "n2", "n1", "n0"])
    status, out, _ = _cli(["show", str(path)])
    assert status == 0
    rows = [
        line.split() for line in out.splitlines() if line.strip().startswith(("0", "1", "2", "3"))
    ]
    assert [row[:2] for row in rows] == [["0", "n3"], ["1", "n2"], ["2", "n1"], ["3", "n0"]]
    status, out, _ = _cli(["show", str(path), "--json"])
    assert json.loads(out)["rank_order"] == ["n3", "n2", "n1", "n0"]


@pytest.mark.parametrize("collective", ["allgather", "alltoall"])
def test_exports_write_the_rank_order_and_follow_it(tmp_path, collective):
    order = ["n2", "n0", "n3", "n1"]
    path = _ring_file(tmp_path, order)
    status, out, err = _cli(["export", str(path), "--collective", collective,
                             "-o", str(tmp_path / "p.xml"), "--json"])  # fmt: skip
    assert status == 0, err
    report = json.loads(out)
    assert report["rank_order"] == order
    for entry in report["files"]:
        first = Path(entry["path"]).read_text().splitlines()[0]
        assert first == f"<!-- rank order (GPU id r is entry r): {json.dumps(order)} -->"
        # GPU id r is order[r]: the program's pairs are links of the file in that order
        checked = verify_file(entry["path"], topology=load_topology(str(path)))
        assert checked.ok, checked.findings
        neighbours = {(a, b) for a, b in load_topology(str(path)).capacity}
        assert {(order[s], order[d]) for s, d in checked.pair_load} <= neighbours
    status, _, err = _cli(["export", str(path), "--collective", collective, "--format", "json",
                           "-o", str(tmp_path / "s.json")])  # fmt: skip
    assert status == 0, err
    assert json.loads((tmp_path / "s.json").read_text())["compute_nodes"] == order


def test_views_of_a_topology_keep_its_rank_order(tmp_path):
    from fractions import Fraction

    from optcoll.core.process_groups import make_groups
    from optcoll.groups.schedule import share_topology
    from optcoll.studies.resilience import failed_topology

    topo = load_topology(str(_ring_file(tmp_path, ["n3", "n2", "n1", "n0"])))
    groups = make_groups(topo, [["n0", "n2"]], relay="any")
    assert groups.group_topology(0).compute_nodes == ("n2", "n0")
    loads = {arc: Fraction(1) for arc in topo.capacity}
    assert share_topology(groups, 0, loads, Fraction(1)).compute_nodes == ("n2", "n0")
    assert failed_topology(topo, ["n1"]).compute_nodes == ("n3", "n2", "n0")
