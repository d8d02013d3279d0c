"""Pictures: layout geometry, what each drawing shows, exact loads, CLI."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction

import pytest
from matplotlib.collections import LineCollection
from matplotlib.patches import FancyArrowPatch

from optcoll import cli, load_topology
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import PlotError, UnknownNodeError
from optcoll.plot import (
    plot_algbw_curves,
    plot_cut,
    plot_link_utilisation,
    plot_topology,
    plot_tree,
    save_figure,
    schedule_link_loads,
    topology_layout,
)
from optcoll.plot.draw import CUT_COLOR

SPECS = ["dgx-a100:1", "dgx-a100:2", "mi250:1", "mi250:2"]


def ring3() -> Topology:
    """Three GPUs on a bidirectional ring with one slow direction."""
    return Topology(
        "ring3",
        [Node("a"), Node("b"), Node("c")],
        [
            Link("a", "b", 10, bidirectional=True),
            Link("b", "c", 10, bidirectional=True),
            Link("c", "a", 10),
            Link("a", "c", 5),
        ],
    )


def star_schedule(topo: Topology, k: int = 1) -> Schedule:
    """Every root sends straight to every other compute node along shortest paths."""
    import networkx as nx

    graph = topo.to_networkx()
    trees = []
    for r in topo.compute_nodes:
        paths = nx.single_source_shortest_path(graph, r)
        edges = tuple(TreeEdge(r, v, tuple(paths[v])) for v in topo.compute_nodes if v != r)
        trees.append(Tree(r, k, edges))
    return Schedule("allgather", topo.name, topo.compute_nodes, k, tuple(trees))


# --- layout ---------------------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS + ["dgx-a100:4"])
def test_layout_places_every_node_once_and_is_deterministic(spec):
    topo = load_topology(spec)
    pos = topology_layout(topo)
    assert set(pos) == set(topo.node_ids)
    assert len(set(pos.values())) == len(pos)  # no two nodes on one spot
    assert topology_layout(load_topology(spec)) == pos


@pytest.mark.parametrize("spec", ["dgx-a100:2", "mi250:2", "dgx-a100:4"])
def test_boxes_side_by_side_and_shared_switches_above(spec):
    topo = load_topology(spec)
    pos = topology_layout(topo)
    spans = []
    for g in sorted({n.group for n in topo.nodes if n.group}, key=lambda g: int(g[3:])):
        xs = [pos[n.id][0] for n in topo.nodes if n.group == g]
        spans.append((min(xs), max(xs)))
    for (_, right), (left, _) in zip(spans, spans[1:], strict=False):
        assert right < left  # boxes do not overlap and are in order
    boxed_top = max(pos[n.id][1] for n in topo.nodes if n.group)
    for s in (n.id for n in topo.nodes if n.group is None):
        assert pos[s][1] > boxed_top


def test_dgx_nic_sits_above_its_gpu_and_nvswitch_below():
    pos = topology_layout(load_topology("dgx-a100:2"))
    for b in range(2):
        for g in range(8):
            gpu, nic = pos[f"b{b}.gpu{g}"], pos[f"b{b}.nic{g}"]
            assert nic[0] == gpu[0] and nic[1] > gpu[1]
            assert pos[f"b{b}.nvswitch"][1] < gpu[1]


def test_box_switch_with_uplinks_sits_above_its_hosts():
    pos = topology_layout(load_topology("leaf-spine:leaves=2,hosts=2,spines=1"))
    for leaf in (0, 1):
        hosts = [pos[f"l{leaf}.h{h}"] for h in (0, 1)]
        assert all(pos[f"leaf{leaf}"][1] > y for _, y in hosts)
        assert hosts[0][0] < pos[f"leaf{leaf}"][0] < hosts[1][0]
    assert pos["spine0"][1] > pos["leaf0"][1]


def test_meshed_box_is_a_circle_with_its_nic_above():
    topo = load_topology("dgx-v100:2")
    pos = topology_layout(topo)
    gpus = [pos[f"b0.gpu{i}"] for i in range(8)]
    cx = sum(x for x, _ in gpus) / 8
    cy = sum(y for _, y in gpus) / 8
    radii = {round(((x - cx) ** 2 + (y - cy) ** 2) ** 0.5, 4) for x, y in gpus}
    assert len(radii) == 1  # NVLink hybrid cube mesh: the GPUs sit on a circle
    assert pos["b0.nic"][1] > max(y for _, y in gpus)  # the box NIC links out: above
    assert pos["ib"][1] > pos["b0.nic"][1]


def test_layout_without_groups_stacks_switches_by_distance():
    topo = Topology(
        "leafspine",
        [Node(f"h{i}") for i in range(4)]
        + [Node("leaf0", "switch"), Node("leaf1", "switch"), Node("spine", "switch")],
        [Link(f"h{i}", f"leaf{i // 2}", 10, bidirectional=True) for i in range(4)]
        + [Link(f"leaf{j}", "spine", 20, bidirectional=True) for j in range(2)],
    )
    pos = topology_layout(topo)
    assert {pos[f"h{i}"][1] for i in range(4)} == {0.0}
    assert pos["leaf0"][1] == pos["leaf1"][1] > 0
    assert pos["spine"][1] > pos["leaf0"][1]
    assert pos["leaf0"][0] < pos["leaf1"][0]  # above their own hosts


# --- topology, cut, tree --------------------------------------------------------


def test_topology_line_widths_follow_bandwidth():
    ax = plot_topology(load_topology("dgx-a100:2"))
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    widths = sorted(set(lines.get_linewidths()))
    assert len(widths) == 2  # 25 GB/s and 300 GB/s pairs
    assert widths[1] == pytest.approx(0.5 + 4.0)
    assert widths[0] == pytest.approx(0.5 + 4.0 * 25 / 300)
    counts = sorted(len(c.get_offsets()) for c in ax.collections if c is not lines)
    assert counts == [16, 20]  # one scatter for GPUs, one for switches


def test_explicit_layout_must_place_every_node():
    topo = ring3()
    ax = plot_topology(topo, layout={"a": (0, 0), "b": (1, 0), "c": (0, 1)})
    assert ax.get_xlim() == (-0.7, 1.7)
    with pytest.raises(PlotError, match="no position for node 'c'"):
        plot_topology(topo, layout={"a": (0, 0), "b": (1, 0)})


def test_one_way_links_are_arrows():
    ax = plot_topology(ring3())
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(lines.get_segments()) == 3  # a-b, b-c, c-a: every pair linked both ways
    ax = plot_topology(
        Topology(
            "uni",
            [Node("a"), Node("b"), Node("c")],
            [Link("a", "b", 1), Link("b", "c", 1), Link("c", "a", 1)],
        )
    )
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(arrows) == 3


def test_cut_of_dgx_a100_2_shows_the_certificate():
    topo = load_topology("dgx-a100:2")
    side = set(topo.node_ids) - {"b0.gpu7"}
    ax = plot_cut(topo, side)
    assert ax.get_title() == "cut S: 15 compute nodes, B+(S) = 325 GB/s, ratio 3/65 per GB/s"
    crossing = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(crossing) == 2  # nvswitch -> gpu7 and nic7 -> gpu7
    labels = sorted(t.get_text() for t in ax.texts if t.get_color() == CUT_COLOR)
    assert labels == ["25", "300"]


def test_cut_rejects_non_cuts_and_unknown_nodes():
    topo = load_topology("dgx-a100:1")
    with pytest.raises(PlotError, match="holds 0 of 8"):
        plot_cut(topo, {"b0.nvswitch"})
    with pytest.raises(PlotError, match="holds 8 of 8"):
        plot_cut(topo, set(topo.compute_nodes))
    with pytest.raises(UnknownNodeError, match="'gpu99'"):
        plot_cut(topo, {"gpu99"})


def test_tree_depths_and_height():
    topo = load_topology("mi250:1")
    g = "b0.gcd"
    # a path 0 -> 1 -> 5 -> 4 plus 0 -> 8: depths 1, 2, 3 and 1
    edges = (
        TreeEdge(g + "0", g + "1", (g + "0", g + "1")),
        TreeEdge(g + "1", g + "5", (g + "1", g + "5")),
        TreeEdge(g + "5", g + "4", (g + "5", g + "4")),
        TreeEdge(g + "0", g + "8", (g + "0", g + "8")),
    )
    ax = plot_tree(topo, Tree(g + "0", 2, edges), k=3)
    assert ax.get_title() == "tree rooted at b0.gcd0 (2/3 of its shard), height 3"
    assert sorted(t.get_text() for t in ax.texts if t.get_text().isdigit()) == ["1", "1", "2", "3"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "root",
        "depth 1",
        "depth 2",
        "depth 3",
    ]
    assert len([p for p in ax.patches if isinstance(p, FancyArrowPatch)]) == 4


def test_tree_over_switches_draws_every_physical_hop():
    topo = load_topology("dgx-a100:1")
    sw = "b0.nvswitch"
    edges = tuple(
        TreeEdge("b0.gpu0", f"b0.gpu{i}", ("b0.gpu0", sw, f"b0.gpu{i}")) for i in range(1, 8)
    )
    ax = plot_tree(topo, Tree("b0.gpu0", 1, edges), k=1)
    assert len([p for p in ax.patches if isinstance(p, FancyArrowPatch)]) == 14
    with pytest.raises(UnknownNodeError, match="tree edge 0"):
        plot_tree(topo, Tree("b0.gpu0", 1, (TreeEdge("b0.gpu0", "x", ("b0.gpu0", "x")),)))


# --- loads ----------------------------------------------------------------------


def test_link_loads_are_exact_and_follow_the_collective_direction():
    topo = ring3()
    trees = (
        Tree("a", 2, (TreeEdge("a", "b", ("a", "b")), TreeEdge("b", "c", ("b", "c")))),
        Tree("a", 1, (TreeEdge("a", "c", ("a", "c")), TreeEdge("a", "b", ("a", "b")))),
    )
    s = Schedule("allgather", "ring3", ("a", "b", "c"), 3, trees)
    assert schedule_link_loads(topo, s) == {("a", "b"): 3, ("b", "c"): 2, ("a", "c"): 1}
    rs = Schedule("reduce_scatter", "ring3", ("a", "b", "c"), 3, trees)
    assert schedule_link_loads(topo, rs) == {("b", "a"): 3, ("c", "b"): 2, ("c", "a"): 1}
    ar = Schedule("allreduce", "ring3", ("a", "b", "c"), 3, trees)
    assert schedule_link_loads(topo, ar) == {
        ("a", "b"): 3,
        ("b", "a"): 3,
        ("b", "c"): 2,
        ("c", "b"): 2,
        ("a", "c"): 1,
        ("c", "a"): 1,
    }


def test_link_loads_name_a_missing_link():
    topo = Topology(
        "uni",
        [Node("a"), Node("b"), Node("c")],
        [Link("a", "b", 1), Link("b", "c", 1), Link("c", "a", 1)],
    )
    bad = Schedule(
        "allgather", "uni", ("a", "b", "c"), 1, (Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),)),)
    )
    with pytest.raises(PlotError, match=r"tree 0 \(root b\): path step b -> a is not a link"):
        schedule_link_loads(topo, bad)


def test_utilisation_of_dgx_a100_1_star_schedule_is_optimal():
    topo = load_topology("dgx-a100:1")
    ax = plot_link_utilisation(topo, star_schedule(topo))
    # every GPU sends 7 copies up to the NVSwitch and receives 7: 7/300 = r*
    assert ax.get_title() == (
        "allgather on dgx-a100:1, k=1: time factor 7/300 per GB/s, 16 of 16 links at the bottleneck"
    )


def test_utilisation_time_factor_matches_an_independent_count():
    topo = load_topology("dgx-a100:2")
    s = star_schedule(topo, k=2)
    uses: Counter[tuple[str, str]] = Counter()
    for tree in s.trees:
        for e in tree.edges:
            for hop in zip(e.path, e.path[1:], strict=False):
                uses[hop] += tree.chunks
    expected = max(Fraction(n, 2) / topo.capacity[hop] for hop, n in uses.items())
    ax = plot_link_utilisation(topo, s)
    assert f"time factor {expected.numerator}/{expected.denominator} per GB/s" in ax.get_title()
    drawn = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(drawn) == len(topo.capacity)  # used links coloured, unused dotted


# --- curves, files --------------------------------------------------------------


def test_algbw_curves():
    ax = plot_algbw_curves(
        {
            "optimal": ([1024, 2**20, 2**30], [1.0, 100.0, 346.7]),
            "ring": ([1024, 2**20], [0.5, 80.0]),
        }
    )
    assert [line.get_label() for line in ax.get_lines()] == ["optimal", "ring"]
    assert ax.xaxis.get_major_formatter()(2**20, 0) == "1M"
    assert ax.xaxis.get_major_formatter()(3 * 2**30, 0) == "3G"
    with pytest.raises(PlotError, match="3 x values but 2 y values"):
        plot_algbw_curves({"bad": ([1, 2, 3], [1, 2])})
    with pytest.raises(PlotError, match="no curves"):
        plot_algbw_curves({})


def test_save_figure_is_byte_for_byte_deterministic(tmp_path):
    topo = load_topology("mi250:1")
    a = save_figure(plot_topology(topo), tmp_path / "a.png").read_bytes()
    b = save_figure(plot_topology(topo), tmp_path / "b.png").read_bytes()
    assert a == b and a[:4] == b"\x89PNG"


# --- CLI ------------------------------------------------------------------------


def test_cli_plot_topology_and_schedule(tmp_path, capsys):
    out = tmp_path / "t.png"
    assert cli.main(["plot", "dgx-a100:1", "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    topo = load_topology("dgx-a100:1")
    sched = tmp_path / "s.json"
    sched.write_text(json.dumps(star_schedule(topo).to_dict()))
    assert (
        cli.main(["plot", "dgx-a100:1", "--schedule", str(sched), "-o", str(tmp_path / "u.png")])
        == 0
    )
    assert (
        cli.main(
            [
                "plot",
                "dgx-a100:1",
                "--schedule",
                str(sched),
                "--tree",
                "b0.gpu3",
                "-o",
                str(tmp_path / "r.png"),
            ]
        )
        == 0
    )
    assert (tmp_path / "r.png").exists()
    capsys.readouterr()
    assert (
        cli.main(
            [
                "plot",
                "dgx-a100:1",
                "--schedule",
                str(sched),
                "--tree",
                "nope",
                "-o",
                str(tmp_path / "x.png"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "no tree rooted at 'nope'" in err and err.count("\n") == 1
    assert (
        cli.main(
            ["plot", "dgx-a100:1", "--cut", "--tree", "b0.gpu0", "-o", str(tmp_path / "x.png")]
        )
        == 2
    )
    assert "leave out --tree" in capsys.readouterr().err


def test_cli_plot_cut_and_computed_tree(tmp_path, capsys):
    out = tmp_path / "cut.png"
    assert cli.main(["plot", "dgx-a100:1", "--cut", "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["plot", "dgx-a100:1", "--tree", "b0.gpu2", "-o", str(tmp_path / "t.svg")]) == 0
    assert (tmp_path / "t.svg").read_text().lstrip().startswith("<?xml")
    assert capsys.readouterr().out.count("wrote ") == 2
