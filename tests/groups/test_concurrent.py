"""Process groups: parsing and its one-line errors, each group's optimum against `bound`
on the graph it sees, the LP against the combinatorial path, concurrent groups against
hand-checked optima."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import SMALL, concurrent_groups, random_topologies, unpruned_optimum
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.core.process_groups import ProcessGroups, make_groups
from optcoll.core.topology import Node, Topology
from optcoll.exceptions import GroupError
from optcoll.groups.bounds import group_optimum, groups_bound
from optcoll.groups.concurrent import concurrent_optimum
from optcoll.groups.symmetry import group_automorphism
from optcoll.io.process_groups import parse_groups

#: The bandwidths of the random topologies (exact, decimal-free, awkward ratios).
BANDWIDTHS = (1, 2, 3, Fraction(5, 2), 25, Fraction(1, 3))

# One small instance of every built-in family.


@pytest.mark.parametrize("spec", SMALL)
def test_one_group_of_all_compute_nodes_is_the_bound(spec: str) -> None:
    topo = load_topology(spec)
    groups = make_groups(topo, [list(topo.compute_nodes)])
    bound = groups_bound(groups)
    assert bound.time_factor == optimal_cut_ratio(topo).ratio
    assert bound.alone[0].exact_by == "cut"
    assert Fraction(bound.to_dict()["groups"][0]["slowdown"]) == 1
    if topo.num_compute <= 8:  # the LP, solved on its own, proves the same optimum
        assert concurrent_optimum(groups, [0]).time_factor == bound.time_factor


def retyped(topo: Topology, members: set[str]) -> Topology:
    """``topo`` with every compute node outside ``members`` declared a switch."""
    nodes = [
        n if n.id in members or not n.is_compute else Node(n.id, "switch", n.group)
        for n in topo.nodes
    ]
    return Topology("retyped", nodes, topo.links, topo.bandwidth_unit)


@pytest.mark.parametrize(
    ("spec", "picks"),
    [
        ("dgx-a100:2", [0, 9]),
        ("dgx-h100:2", [1, 2, 11]),
        ("torus:3x3", [0, 4, 8]),
        ("mi250:1", [0, 15]),
    ],
)
def test_relay_any_is_the_bound_with_non_members_as_switches(spec: str, picks: list[int]) -> None:
    topo = load_topology(spec)
    members = [topo.compute_nodes[i] for i in picks]
    alone = group_optimum(make_groups(topo, [members], relay="any"), 0)
    assert alone.ratio == optimal_cut_ratio(retyped(topo, set(members))).ratio


def test_a_lone_dp_pair_gains_8x_from_relaying_through_other_gpus_nics() -> None:
    topo = load_topology("dgx-a100:2")
    pair = [["b0.gpu0", "b1.gpu0"]]
    # members: one 25 GB/s NIC each way; any: all 8 NICs of the box.
    assert group_optimum(make_groups(topo, pair), 0).ratio == Fraction(1, 25)
    assert group_optimum(make_groups(topo, pair, relay="any"), 0).ratio == Fraction(1, 200)
    # All 8 rails busy: 8 units leave each box through 200 GB/s whatever the relaying.
    for relay in ("members", "any"):
        bound = groups_bound(parse_groups(topo, "strided:2", relay))
        assert bound.time_factor == Fraction(8, 200)


def test_two_groups_on_a_ring_hand_checked() -> None:
    # ring:4 with unit links; groups {n0, n2} and {n1, n3}, relay any. Each group alone:
    # its member sends 1 unit through 2 links out: 1/2. Together: 4 units each crossing
    # 2 of the 8 links, so t >= 8/8 = 1, and splitting each unit over both ways attains it.
    topo = load_topology("ring:4,bw=1")
    groups = make_groups(topo, [["n0", "n2"], ["n1", "n3"]], relay="any")
    bound = groups_bound(groups)
    assert bound.time_factor == 1
    assert [a.ratio for a in bound.alone] == [Fraction(1, 2)] * 2
    data = bound.to_dict()
    assert [Fraction(g["slowdown"]) for g in data["groups"]] == [2, 2]
    links = data["certificate"]["binding_links"]
    assert links and all(sum(Fraction(s) for s in link["shares"]) == 1 for link in links)
    # the duals sit on full links; which group fills them depends on the optimal vertex
    # (the symmetric LP's carries group 1's data as the image of group 0's)
    assert {g for link in links for g in link["groups"]} <= {0, 1}


def test_tp_groups_in_separate_boxes_do_not_interact() -> None:
    # blocks:8 on dgx-a100:2, relay members: a box's GPUs reach each other through the
    # NVSwitch (300) and through their NICs and the IB switch (25), so the cut of all
    # members but one is 7 / 325, alone and together (the boxes share no binding link).
    topo = load_topology("dgx-a100:2")
    bound = groups_bound(parse_groups(topo, "blocks:8"))
    assert bound.time_factor == Fraction(7, 325)
    assert all(a.ratio == Fraction(7, 325) for a in bound.alone)


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(topo=random_topologies(bandwidths=BANDWIDTHS), data=st.data())
def test_lp_and_combinatorial_agree_on_single_groups(topo: Topology, data: st.DataObject) -> None:
    compute = list(topo.compute_nodes)
    members = data.draw(st.lists(st.sampled_from(compute), min_size=2, unique=True))
    relay = data.draw(st.sampled_from(["members", "any"]))
    try:
        groups = make_groups(topo, [members], relay=relay)
    except GroupError as err:
        assert relay == "members" and "cannot reach" in str(err)
        assume(False)
    view = groups.group_topology(0)
    cut = optimal_cut_ratio(view).ratio
    lp = concurrent_optimum(groups, [0]).time_factor
    assert lp >= cut
    assert group_optimum(groups, 0).ratio == lp
    if all(view.in_bandwidth(v) >= view.out_bandwidth(v) for v in view.switch_nodes):
        assert lp == cut


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(groups=concurrent_groups())
def test_pruning_and_splitting_keep_the_optimum(groups: ProcessGroups) -> None:
    # groups_bound drops the links no group can use and solves the classes of groups
    # sharing links apart; the LP over all groups on all allowed links is the oracle.
    bound = groups_bound(groups)
    assert bound.time_factor == unpruned_optimum(groups)
    assert bound.time_factor == max(
        concurrent_optimum(groups, c).time_factor for c in groups.sharing_components()
    )
    allowed = [groups.relays(i) for i in range(len(groups.groups))]
    for arcs, relays in zip(groups.useful_arcs, allowed, strict=True):
        assert all(relays is None or (u in relays and v in relays) for u, v in arcs)
    shared = [
        set(groups.useful_arcs[a]) & set(groups.useful_arcs[b])
        for c, d in itertools.combinations(groups.sharing_components(), 2)
        for a in c
        for b in d
    ]
    assert not any(shared)


def test_rails_of_dgx_a100_share_nothing_unless_relayed() -> None:
    # strided:16 on dgx-a100:16: a rail's GPUs meet only through their own NICs and the
    # IB switch (no link of another rail), so the 8 rails are 8 classes and t* is one
    # rail's optimum: each GPU receives 15 units through its 25 GB/s NIC.
    topo = load_topology("dgx-a100:16")
    groups = parse_groups(topo, "strided:16")
    assert groups.sharing_components() == tuple((i,) for i in range(8))
    assert {len(arcs) for arcs in groups.useful_arcs} == {64}
    bound = groups_bound(groups)
    assert bound.time_factor == Fraction(15, 25) == bound.alone[0].ratio
    assert bound.method == "combinatorial" and len(bound.binding_groups) == 1
    # blocks:8: each box's GPUs reach each other through the NVSwitch and through their
    # NICs and the IB switch; no box uses another box's links.
    blocks = parse_groups(topo, "blocks:8")
    assert len(blocks.sharing_components()) == 16
    assert groups_bound(blocks).time_factor == Fraction(7, 325)


@pytest.mark.parametrize(
    ("spec", "text", "optimum"),
    [
        ("ring:4,bw=1", "blocks:2", Fraction(1)),
        ("dgx-a100:2", "strided:2", Fraction(8, 200)),
        pytest.param("torus:4x4", "blocks:4", Fraction(3, 200), marks=pytest.mark.slow),
    ],
)
def test_symmetric_lp_equals_the_full_lp(spec: str, text: str, optimum: Fraction) -> None:
    # relay any: every group shares links with every other (one class); the topology's
    # automorphisms map group 0 onto each group, so one group's flows are solved.
    groups = parse_groups(load_topology(spec), text, relay="any")
    indices = list(range(len(groups.groups)))
    reduced = concurrent_optimum(groups, indices)
    full = concurrent_optimum(groups, indices, symmetric=False)
    assert reduced.symmetric and not full.symmetric
    assert reduced.time_factor == full.time_factor == unpruned_optimum(groups) == optimum
    bandwidth = groups.topology.capacity
    for arc, bw in bandwidth.items():  # the expanded loads fit in t* bw
        assert sum(load.get(arc, 0) for load in reduced.loads.values()) <= optimum * bw
    for g, members in enumerate(groups.groups):  # each group receives its data
        into = {v: sum(x for (_, w), x in reduced.loads[g].items() if w == v) for v in members}
        assert all(received >= len(members) - 1 for received in into.values())


def test_automorphisms_are_checked() -> None:
    topo = load_topology("ring:6,bw=1")
    sizes = make_groups(topo, [["n0", "n1"], ["n2", "n3", "n4"]], relay="any")
    assert group_automorphism(sizes, 0, 1) is None
    turn = make_groups(topo, [["n0", "n1"], ["n2", "n3"], ["n4", "n5"]], relay="any")
    sigma = group_automorphism(turn, 0, 1)
    assert sigma is not None and [sigma[f"n{i}"] for i in range(6)] == [
        "n2",
        "n3",
        "n4",
        "n5",
        "n0",
        "n1",
    ]
    # one link twice as wide: no automorphism takes group 0 onto group 1, the full LP runs
    heavy = topo.scale_links(lambda link: (link.src, link.dst) == ("n0", "n1"), 2)
    uneven = make_groups(heavy, [["n0", "n1"], ["n2", "n3"], ["n4", "n5"]], relay="any")
    assert group_automorphism(uneven, 0, 1) is None
    solved = concurrent_optimum(uneven, [0, 1, 2])
    assert not solved.symmetric and solved.time_factor == unpruned_optimum(uneven)


def test_specs_follow_the_rank_order() -> None:
    topo = load_topology("dgx-a100:2")
    strided = parse_groups(topo, "strided:2").groups
    assert len(strided) == 8 and strided[3] == ("b0.gpu3", "b1.gpu3")
    blocks = parse_groups(topo, "blocks:4").groups
    assert blocks[1] == tuple(f"b0.gpu{i}" for i in range(4, 8))


def test_groups_file_with_relay(tmp_path: Path) -> None:
    topo = load_topology("ring:4,bw=1")
    path = tmp_path / "g.yaml"
    path.write_text("groups: [[n0, n2], [n1, n3]]\nrelay: any\n")
    groups = parse_groups(topo, str(path))
    assert groups.relay == "any" and groups.groups == (("n0", "n2"), ("n1", "n3"))


def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps([["n0", "n2"], ["n1", "n3"]]))
    assert main(["bound", "ring:4,bw=1", "--groups", str(path), "--relay", "any", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert Fraction(data["time_factor"]) == 1 and data["relay"] == "any"
    assert [g["optimum"] for g in data["groups"]] == ["1/2", "1/2"]
    assert main(["bound", "dgx-a100:1", "--groups", "blocks:8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert main(["bound", "dgx-a100:1", "--json"]) == 0
    cut_ratio = json.loads(capsys.readouterr().out)["cut_ratio"]
    assert Fraction(data["time_factor"]) == Fraction(cut_ratio)
    assert main(["bound", "dgx-a100:2", "--groups", "strided:2"]) == 0
    assert "time factor t*" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("topo", "groups", "extra", "message"),
    [
        ("ring:4", [["n0", "nx"]], [], "'nx' is not a node"),
        ("star:3", [["h0", "hub"]], [], "'hub' is a switch"),
        ("ring:4", [["n0", "n1", "n0"]], [], "'n0' twice"),
        ("ring:4", [["n0", "n1"], ["n1", "n2"]], [], "and group 0 too"),
        ("ring:4", [["n0"]], [], "at least two"),
        ("ring:4", [["n0", "n2"]], [], "cannot reach"),
        ("ring:4", "blocks:3", [], "3 does not divide the 4"),
        ("ring:4", "strided:1", [], "integer >= 2"),
        ("ring:4", "nowhere.json", [], "neither blocks:T"),
        (
            "ring:4",
            {"groups": [["n0", "n2"]], "relay": "any"},
            ["--relay", "members"],
            "says relay",
        ),
        ("ring:4", "blocks:2", ["--collective", "alltoall"], "drop --collective"),
    ],
)
def test_bad_groups_are_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    topo: str,
    groups: object,
    extra: list[str],
    message: str,
) -> None:
    if isinstance(groups, str):
        spec = groups
    else:
        path = tmp_path / "groups.json"
        path.write_text(json.dumps(groups))
        spec = str(path)
    assert main(["bound", topo, "--groups", spec, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_relay_without_groups_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bound", "ring:4", "--relay", "any"]) == 2
    assert "give --groups" in capsys.readouterr().err
