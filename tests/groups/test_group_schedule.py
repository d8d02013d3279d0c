"""Schedules of concurrent process groups: built, verified exactly against the concurrent
optimum (computed independently, without pruning), written, read and refused when broken."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import concurrent_groups, unpruned_optimum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optcoll import load_topology
from optcoll.bounds.multicommodity import solve_multicommodity
from optcoll.cli import main
from optcoll.core.groups_schedule import GroupsSchedule
from optcoll.core.process_groups import ProcessGroups, make_groups
from optcoll.core.schedule import Tree, TreeEdge
from optcoll.exceptions import OptCollError, ScheduleError
from optcoll.groups.bounds import groups_bound
from optcoll.groups.concurrent import group_commodities
from optcoll.groups.schedule import (
    group_roots,
    groups_collective,
    groups_lower_bound,
    groups_schedule,
    reversed_groups,
    rooted_optimum,
)
from optcoll.io import load_schedule
from optcoll.io.process_groups import parse_groups
from optcoll.schedules.collectives import is_symmetric
from optcoll.verify.schedule import verify_groups_schedule


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(groups=concurrent_groups())
def test_schedules_attain_the_concurrent_optimum(groups: ProcessGroups) -> None:
    optimum = unpruned_optimum(groups)  # one LP over all groups and all allowed links
    schedule = groups_schedule(groups)
    assert schedule.time_factor == optimum
    verdict = verify_groups_schedule(
        groups.topology, schedule, optimum=optimum, require_optimal=True
    )
    assert verdict.valid, verdict.reason
    assert verdict.time_factor == optimum and verdict.ratio_to_optimum == 1
    assert [s.compute_nodes for s in schedule.groups] == list(groups.groups)


@pytest.mark.parametrize(
    ("spec", "text", "relay", "optimum"),
    [
        ("dgx-a100:4", "blocks:8", "members", Fraction(7, 325)),
        ("dgx-a100:16", "strided:16", "members", Fraction(15, 25)),
        pytest.param(  # one class of 8 groups: trees on their LP shares
            "dgx-a100:2", "strided:2", "any", Fraction(8, 200), marks=pytest.mark.slow
        ),
        ("fat-tree:leaves=4,hosts=4,spines=2,oversub=2", "strided:4", "members", None),
    ],
)
def test_built_in_schedules_verify(spec: str, text: str, relay: str, optimum: Fraction) -> None:
    groups = parse_groups(load_topology(spec), text, relay)
    bound = groups_bound(groups)
    if optimum is not None:
        assert bound.time_factor == optimum
    schedule = groups_schedule(groups, bound)
    verdict = verify_groups_schedule(groups.topology, schedule, optimum=bound.time_factor)
    assert verdict.valid and verdict.time_factor == bound.time_factor
    assert GroupsSchedule.from_dict(json.loads(json.dumps(schedule.to_dict()))) == schedule


@pytest.fixture(scope="module")
def ring_schedule() -> GroupsSchedule:
    topo = load_topology("ring:4,bw=1")
    return groups_schedule(make_groups(topo, [["n0", "n2"], ["n1", "n3"]], relay="any"))


def replace_group(schedule: GroupsSchedule, index: int, **changes: object) -> GroupsSchedule:
    groups = list(schedule.groups)
    groups[index] = dataclasses.replace(groups[index], **changes)
    return dataclasses.replace(schedule, groups=tuple(groups))


def test_broken_schedules_are_named(ring_schedule: GroupsSchedule) -> None:
    ring = load_topology("ring:4,bw=1")
    assert verify_groups_schedule(ring, ring_schedule, optimum=Fraction(1)).valid
    # a claim the loads do not give
    wrong = dataclasses.replace(ring_schedule, time_factor=Fraction(1, 2))
    assert "claims time factor 1/2" in str(verify_groups_schedule(ring, wrong).reason)
    # a tree that misses a member
    first = ring_schedule.groups[0]
    cut = Tree(first.trees[0].root, first.trees[0].chunks, ())
    broken = replace_group(ring_schedule, 0, trees=(cut, *first.trees[1:]))
    assert str(verify_groups_schedule(ring, broken).reason).startswith("group 0: ")
    # relay members: group 0's path through n1 (a member of group 1) is not allowed
    members = dataclasses.replace(ring_schedule, relay="members")
    assert "cannot reach" in str(verify_groups_schedule(ring, members).reason)
    # an optimum above the schedule's time is wrong; below it, not optimal
    assert "lower bound" in str(verify_groups_schedule(ring, ring_schedule, optimum=2).reason)
    assert verify_groups_schedule(ring, ring_schedule, optimum=Fraction(1, 2)).valid
    assert not verify_groups_schedule(
        ring, ring_schedule, optimum=Fraction(1, 2), require_optimal=True
    ).valid
    # overlapping groups
    both = replace_group(ring_schedule, 1, compute_nodes=("n0", "n3"))
    assert "and group 0 too" in str(verify_groups_schedule(ring, both).reason)


def test_path_through_a_non_member_gpu_needs_relay_any() -> None:
    # dgx-a100:2, one rail pair: with relay members the path b0.gpu0 -> b0.nvswitch ->
    # b0.gpu1 -> b0.nic1 is refused (b0.gpu1 is not a member), with any it is fine.
    topo = load_topology("dgx-a100:2")
    route = ("b0.gpu0", "b0.nvswitch", "b0.gpu1", "b0.nic1", "ib1", "b1.nic1", "b1.gpu1")
    route = (*route, "b1.nvswitch", "b1.gpu0")
    back = ("b1.gpu0", "b1.nic0", "ib0", "b0.nic0", "b0.gpu0")
    pair = ("b0.gpu0", "b1.gpu0")
    trees = (
        Tree("b0.gpu0", 1, (TreeEdge("b0.gpu0", "b1.gpu0", route),)),
        Tree("b1.gpu0", 1, (TreeEdge("b1.gpu0", "b0.gpu0", back),)),
    )
    from optcoll.core.schedule import Schedule

    group = Schedule("allgather", topo.name, pair, 1, trees)
    for relay, valid in (("members", False), ("any", True)):
        schedule = GroupsSchedule("allgather", topo.name, relay, (group,))
        verdict = verify_groups_schedule(topo, schedule)
        assert verdict.valid is valid, verdict.reason
        if not valid:
            assert "b0.gpu1" in str(verdict.reason)


def test_cli_trees_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "groups.json"
    assert main(["trees", "dgx-a100:2", "--groups", "blocks:8", "-o", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["time_factor"] == "7/325" and len(summary["groups"]) == 2
    data = json.loads(out.read_text())
    assert data["relay"] == "members" and data["time_factor"] == "7/325"
    assert set(data["groups"][0]) == {"members", "k", "trees"}
    assert main(["verify", "dgx-a100:2", str(out), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["valid"] and verdict["optimum"] == verdict["time_factor"] == "7/325"
    # a stated time factor the loads do not give: invalid, exit 1
    data["time_factor"] = "1/325"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["verify", "dgx-a100:2", str(bad)]) == 1
    assert "claims time factor 1/325" in capsys.readouterr().out
    # one line, exit 2: an existing output, -k with groups, a groups file where one
    # collective's schedule is expected
    assert main(["trees", "dgx-a100:2", "--groups", "blocks:8", "-o", str(out)]) == 2
    assert main(["trees", "dgx-a100:2", "--groups", "blocks:8", "-k", "2"]) == 2
    assert main(["trees", "dgx-a100:2", "--relay", "any"]) == 2
    err = capsys.readouterr().err
    assert "drop -k" in err and "give --groups" in err and err.count("\n") == 3
    with pytest.raises(ScheduleError, match="concurrent process groups"):
        load_schedule(out)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"groups": []}, "non-empty list"),
        ({"extra": 1}, "unknown field(s) 'extra'"),
        ({"groups": [{"members": ["a", "b"], "trees": []}]}, "missing: 'k'"),
        ({"groups": [{"members": ["a", "b"], "k": 0, "trees": []}]}, "group 0: field 'k'"),
        ({"time_factor": "-1"}, "positive ratio"),
    ],
)
def test_malformed_files_name_the_field(
    ring_schedule: GroupsSchedule, change: dict[str, object], message: str
) -> None:
    data = {**ring_schedule.to_dict(), **change}
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        GroupsSchedule.from_dict(data)


def unpruned_rooted(groups: ProcessGroups, roots: tuple[str, ...]) -> Fraction:
    """The concurrent broadcasts' LP over every group on every link the relaying allows."""
    topo = groups.topology
    caps, unit = topo.integer_capacities()
    commodities = [
        dataclasses.replace(k, arcs=None)
        for _, k in group_commodities(groups, range(len(groups.groups)), roots=roots)
    ]
    return solve_multicommodity(topo.node_ids, dict(caps), commodities).time / unit


@settings(
    max_examples=16,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    groups=concurrent_groups(),
    collective=st.sampled_from(["reduce_scatter", "allreduce", "broadcast", "reduce"]),
)
def test_other_collectives_attain_their_bound(groups: ProcessGroups, collective: str) -> None:
    # the oracle: unpruned LPs over all groups, on the reversed network for reductions
    roots = group_roots(groups)
    backward = reversed_groups(groups)
    symmetric = is_symmetric(groups.topology)
    optimum = {
        "reduce_scatter": lambda: unpruned_optimum(backward),
        "allreduce": lambda: unpruned_optimum(groups) + unpruned_optimum(backward),
        "broadcast": lambda: unpruned_rooted(groups, roots),
        "reduce": lambda: unpruned_rooted(backward, roots),
    }[collective]()
    assert groups_lower_bound(groups, collective) == optimum
    try:
        schedule = groups_collective(groups, collective)
    except OptCollError as err:  # allreduce needs links usable both ways
        assert collective == "allreduce" and not symmetric, err
        return
    verdict = verify_groups_schedule(groups.topology, schedule, optimum=optimum)
    assert verdict.valid, verdict.reason
    assert schedule.time_factor == verdict.time_factor
    if collective != "allreduce" or symmetric:
        assert schedule.time_factor == optimum
    assert [s.compute_nodes for s in schedule.groups] == list(groups.groups)
    if collective in ("broadcast", "reduce"):
        assert [s.root for s in schedule.groups] == [g[0] for g in groups.groups]
    assert GroupsSchedule.from_dict(json.loads(json.dumps(schedule.to_dict()))) == schedule


@pytest.mark.parametrize(
    ("collective", "optimum", "k"),
    [
        # each pair of GPUs on rail j: one 25 GB/s NIC each way, one unit to move
        ("reduce-scatter", Fraction(1, 25), 1),
        ("allreduce", Fraction(2, 25), 1),
        ("broadcast", Fraction(1, 25), 1),
        ("reduce", Fraction(1, 25), 1),
    ],
)
def test_rail_pairs_run_every_collective(collective: str, optimum: Fraction, k: int) -> None:
    groups = parse_groups(load_topology("dgx-a100:2"), "strided:2")
    schedule = groups_collective(groups, collective)
    assert schedule.time_factor == optimum and {s.k for s in schedule.groups} == {k}
    verdict = verify_groups_schedule(
        groups.topology, schedule, optimum=optimum, require_optimal=True
    )
    assert verdict.valid, verdict.reason


def test_rooted_groups_name_their_root(ring_schedule: GroupsSchedule) -> None:
    ring = load_topology("ring:4,bw=1")
    groups = make_groups(ring, [["n0", "n2"], ["n1", "n3"]], relay="any")
    schedule = groups_collective(groups, "broadcast")
    # the two broadcasts cross on n1 -> n2 (or n0 -> n3): 1, not 1/2 each alone
    assert schedule.time_factor == 1 == rooted_optimum(groups, ("n0", "n1"))
    data = schedule.to_dict()
    assert [g["root"] for g in data["groups"]] == ["n0", "n1"]
    # a root that is not a member, and a broadcast group without a root, are named
    moved = replace_group(schedule, 0, root="n1")
    assert "root" in str(verify_groups_schedule(ring, moved).reason)
    rootless = replace_group(schedule, 1, root=None)
    assert "needs a root" in str(verify_groups_schedule(ring, rootless).reason)
    with pytest.raises(ScheduleError, match="not 'alltoall'"):
        groups_collective(groups, "alltoall")


def test_cli_trees_other_collectives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for collective, factor in (("reduce", "1/100"), ("allreduce", "2/25")):
        out = tmp_path / f"{collective}.json"
        args = ["trees", "dgx-a100:2", "--groups", "strided:8", "--collective", collective]
        assert main([*args, "-o", str(out), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["time_factor"] == factor
        assert main(["verify", "dgx-a100:2", str(out), "--json"]) == 0
        verdict = json.loads(capsys.readouterr().out)
        assert verdict["valid"] and verdict["optimum"] == verdict["time_factor"] == factor
    assert main(["trees", "dgx-a100:2", "--collective", "reduce"]) == 2
    assert "applies with --groups" in capsys.readouterr().err
