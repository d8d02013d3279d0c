"""``optcoll.solve`` and ``optcoll solve``: every collective, its bound, its claim, its files."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import optcoll
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.bounds.partition import evaluate_partition
from optcoll.cli import main
from optcoll.exceptions import ArgumentError, ScheduleError
from optcoll.io import load_schedule
from optcoll.schedules.collectives import (
    bidirectional_core,
    collective_lower_bound,
    reversed_topology,
)
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

COLLECTIVES = ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", "alltoall")


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_every_collective_reaches_its_independent_bound(collective):
    topology = build("dgx-a100:2")
    solution = optcoll.solve(topology, collective=collective)
    canonical = collective.replace("-", "_")
    assert solution.collective == canonical == solution.schedule.collective
    # the bound computed once inside solve equals the one computed on its own
    assert solution.lower_bound == collective_lower_bound(
        topology, canonical, solution.schedule.root
    )
    assert solution.optimal and solution.time_factor == solution.lower_bound
    again = verify_schedule(topology, solution.schedule, optimum=solution.lower_bound)
    assert again.valid and again.time_factor == solution.time_factor
    assert solution.schedule.topology_hash == topology.content_hash


def test_known_optima_of_dgx_a100_2():
    r = Fraction(3, 65)
    assert optcoll.solve("dgx-a100:2", collective="allgather").time_factor == r
    assert optcoll.solve("dgx-a100:2").collective == "allgather"  # the default of every command
    allreduce = optcoll.solve("dgx-a100:2", collective="allreduce")
    assert allreduce.collective == "allreduce" and allreduce.time_factor == 2 * r
    # RS + AG attains the partition bound of single GPUs: 2 (N - 1) / C(P) per byte
    assert allreduce.attains_partition_bound
    assert allreduce.claim == (
        "optimal among all allreduce schedules in which only compute nodes reduce "
        "(partition bound attained)"
    )
    assert allreduce.partition is not None
    again = evaluate_partition(build("dgx-a100:2"), allreduce.partition.parts)  # re-checked
    assert again.compute_parts == 16 and 16 * again.time_factor == 2 * r
    assert round(allreduce.algbw, 3) == 173.333


def test_claim_stays_rs_ag_where_the_partition_bound_is_lower():
    mesh = optcoll.solve("mesh:4x4", collective="allreduce")
    assert mesh.optimal and not mesh.attains_partition_bound
    assert mesh.claim == "optimal among reduce-scatter + allgather schedules"
    assert mesh.partition is not None and mesh.partition.time_factor == Fraction(1, 160)
    assert dict(mesh.report_rows())["partition"].startswith("160.000 GB/s at most")
    assert mesh.to_dict()["partition_bound"] == "1/10"  # per M/N: 16 / 160


def test_asymmetric_reduce_scatter_uses_the_reversed_bound():
    b = optcoll.core.topology.TopologyBuilder("skew")
    for n in "abc":
        b.compute(n)
    b.link("a", "b", 10)
    b.link("b", "c", 10)
    b.link("c", "a", 10)
    b.link("b", "a", 4)
    topo = b.build()
    solution = optcoll.solve(topo, collective="reduce_scatter")
    assert solution.lower_bound == optimal_cut_ratio(reversed_topology(topo)).ratio
    assert solution.optimal and "reversed" in solution.describe_bound()


def _triangle_with_a_one_way_link():
    # a, b, c joined both ways with unequal bandwidths, d joined to a both ways, b -> d one way
    b = optcoll.core.topology.TopologyBuilder("one-way")
    for n in "abcd":
        b.compute(n)
    for src, dst, bw in (("a", "b", 10), ("b", "a", 4), ("b", "c", 10), ("c", "b", 3)):
        b.link(src, dst, bw)
    for src, dst, bw in (("c", "a", 10), ("a", "c", 5), ("a", "d", 6), ("d", "a", 6)):
        b.link(src, dst, bw)
    b.link("b", "d", 8)
    return b.build()


def test_allreduce_with_one_way_links_packs_the_bidirectional_core():
    topo = _triangle_with_a_one_way_link()
    solution = optcoll.solve(topo, collective="allreduce")
    # the lower bound stays the topology's own: r*(G) + r*(reverse G)
    assert solution.lower_bound == collective_lower_bound(topo, "allreduce")
    assert solution.lower_bound == (
        optimal_cut_ratio(topo).ratio + optimal_cut_ratio(reversed_topology(topo)).ratio
    )
    # the trees run both ways, so they are packed on the core: the smaller bandwidth
    # of each pair joined both ways, b -> d dropped
    core = bidirectional_core(topo)
    assert dict(core.capacity) == {
        **{("a", "b"): 4, ("b", "a"): 4, ("b", "c"): 3, ("c", "b"): 3},
        **{("a", "c"): 5, ("c", "a"): 5, ("a", "d"): 6, ("d", "a"): 6},
    }
    assert all((e.src, e.dst) in core.capacity for t in solution.schedule.trees for e in t.edges)
    # each phase takes at most the core's r* (G has at least the core's bandwidth each way)
    assert solution.time_factor <= 2 * optimal_cut_ratio(core).ratio
    assert verify_schedule(topo, solution.schedule, optimum=solution.lower_bound).valid
    assert solution.time_factor > solution.lower_bound and solution.claim == "not optimal"


def test_allreduce_whose_two_way_links_do_not_connect_says_what_to_run(capsys):
    with pytest.raises(ScheduleError, match="reduce-scatter and --collective allgather"):
        optcoll.solve(build("ring:4,direction=uni"), collective="allreduce")
    argv = ["solve", "ring:4,direction=uni", "--collective", "allreduce", "-o", "unused"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "composes the two" in err


def test_fixed_k_is_the_best_with_that_k_and_says_so():
    solution = optcoll.solve("mi250:2", collective="allgather", k=1)
    assert solution.time_factor == Fraction(1, 10) and solution.algbw == 320.0
    assert solution.lower_bound == Fraction(15, 166) and not solution.optimal
    assert solution.claim == "best with k = 1 chunk per root"
    assert repr(solution) == (
        "Solution(allgather on mi250:2: algbw 320.000 GB/s, best with k = 1 chunk per root, "
        "32 trees, verified)"
    )


def test_short_reprs():
    solution = optcoll.solve("dgx-a100:2", collective="allgather")
    assert len(repr(solution.schedule)) < 120 and len(repr(solution.topology)) < 120
    assert repr(solution.schedule) == (
        "Schedule(allgather on 'dgx-a100:2': k = 13, 32 trees, time factor 3/65)"
    )
    assert "<table>" in solution._repr_html_() and "32 trees" in solution._repr_html_()
    assert solution.topology._repr_html_().startswith("<code>Topology(")


def test_unknown_collective_is_named():
    with pytest.raises(ArgumentError, match="unknown collective .gather."):
        optcoll.solve("ring:4", collective="gather")


def test_cli_solve_names_its_collective_and_writes_its_files(tmp_path, capsys):
    status = main(["solve", "ring:4", "--collective", "reduce-scatter", "-o", str(tmp_path)])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    assert out.splitlines()[0].split() == ["collective", "reduce-scatter"]
    schedule = load_schedule(tmp_path / "ring_4.reduce_scatter.schedule.json")
    assert schedule.collective == "reduce_scatter"
    assert (tmp_path / "ring_4.reduce_scatter.cut.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_solve_json_uses_the_bound_vocabulary(tmp_path, capsys):
    assert main(["solve", "dgx-a100:2", "-k", "1", "--json", "-o", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    bound = json.loads(_bound_json(capsys))
    # allgather, the default of every command; allreduce doubles both (reduce-scatter + allgather)
    assert data["collective"] == "allgather" and data["k"] == 1 and data["optimal"] is False
    assert data["time_factor"] == "7/150" and data["lower_bound"] == "3/65"
    for key in ("cut_ratio", "bottleneck_cut", "cut_compute", "cut_bandwidth"):
        assert data[key] == bound[key]


def _bound_json(capsys) -> str:
    assert main(["bound", "dgx-a100:2", "--json"]) == 0
    return capsys.readouterr().out


def test_cli_solve_broadcast_writes_no_cut_picture(tmp_path, capsys):
    argv = ["solve", "ring:4", "--collective", "broadcast", "--root", "n2", "-o", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "min cut from root n2: 200 GB/s" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ring_4.broadcast.schedule.json"]


def test_verify_and_export_refuse_a_schedule_of_another_topology(tmp_path, capsys):
    from optcoll.io import save_topology

    edited = tmp_path / "edited.json"
    save_topology(build("ring:4").without_link("n0", "n1"), edited)
    assert main(["solve", "ring:4", "--collective", "allgather", "-o", str(tmp_path)]) == 0
    assert main(["solve", str(edited), "--collective", "allgather", "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    healthy = str(tmp_path / "ring_4.allgather.schedule.json")
    mine = str(tmp_path / "ring_4~edited.allgather.schedule.json")
    assert main(["verify", str(edited), healthy]) == 2
    err = capsys.readouterr().err
    assert "was built for topology 'ring:4'" in err and "content hash" in err
    out = str(tmp_path / "x.xml")
    assert main(["export", mine, "--collective", "allreduce", "-o", out]) == 2
    assert "pass its file with --topology FILE" in capsys.readouterr().err
    assert (
        main(["export", mine, "--collective", "allreduce", "--topology", "ring:4", "-o", out]) == 2
    )
    assert "content hash" in capsys.readouterr().err
    assert main(["verify", str(edited), mine]) == 0
