"""Cost model and baselines: exact hand-computed values, and no baseline beats the bound."""

from __future__ import annotations

import itertools
import json
import random
from fractions import Fraction

import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import TopologyBuilder
from optcoll.schedules.baselines import (
    double_binary_tree_allreduce,
    hierarchical_ring_allgather,
    ring_allgather,
    ring_allreduce,
    widest_paths,
)
from optcoll.schedules.collectives import allreduce
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.cost_model import SIZES, schedule_cost
from optcoll.studies.compare import compare_methods
from optcoll.topologies import build


def _ring4(latency=None):
    b = TopologyBuilder("ring4")
    nodes = ["g0", "g1", "g2", "g3"]
    for n in nodes:
        b.compute(n)
    topo_links = list(zip(nodes, nodes[1:] + nodes[:1], strict=True))
    for u, v in topo_links:
        b.link(u, v, 10, bidirectional=True)
    topo = b.build()
    if latency is not None:
        data = topo.to_dict()
        for link in data["links"]:
            link["latency"] = latency
        topo = type(topo).from_dict(data)
    return topo, nodes


def _star(thin):
    """4 GPUs on a switch, g0's link thin (``thin`` GB/s each way), the others 100."""
    b = TopologyBuilder("star")
    for i in range(4):
        b.compute(f"g{i}")
    b.switch("sw")
    for i in range(4):
        b.link(f"g{i}", "sw", thin if i == 0 else 100, bidirectional=True)
    return b.build()


def test_chain_schedule_cost_is_exact():
    topo, nodes = _ring4(latency=2.5)
    trees = []
    for i in range(4):
        order = [nodes[(i + j) % 4] for j in range(4)]
        edges = tuple(TreeEdge(a, b, (a, b)) for a, b in itertools.pairwise(order))
        trees.append(Tree(order[0], 1, edges))
    schedule = Schedule("allgather", "ring4", tuple(nodes), 1, tuple(trees))
    cost = schedule_cost(topo, schedule)
    # every clockwise link carries 3 chunks of 10 GB/s; depth 3 hops of 2.5 µs
    assert cost.time_factor == Fraction(3, 10) and cost.alpha == Fraction(15, 2)
    assert cost.asymptotic_algbw == pytest.approx(4 / 0.3)
    assert SIZES[0] == 1024 and SIZES[-1] == 4 * 1024**3
    ar = schedule_cost(topo, allreduce(schedule, topo))
    assert ar.time_factor == Fraction(3, 5) and ar.alpha == 15


def test_ring_baseline_on_a_ring_is_optimal_and_uses_both_directions():
    topo, _ = _ring4()
    ring = ring_allgather(topo)
    # both directions, each link half a shard per step, 3 steps: 3 * (1/2) / 10
    assert ring.time_factor == Fraction(3, 20) == optimal_cut_ratio(topo).ratio
    assert ring.alpha == 3
    assert ring_allreduce(topo).time_factor == Fraction(3, 10)


def test_widest_path_prefers_bandwidth_over_hops():
    b = TopologyBuilder("detour")
    for n in ("a", "b", "c"):
        b.compute(n)
    b.link("a", "b", 1, bidirectional=True)
    b.link("a", "c", 5, bidirectional=True)
    b.link("c", "b", 5, bidirectional=True)
    assert widest_paths(b.build(), "a")["b"] == ("a", "c", "b")


def test_hierarchical_ring_on_two_dgx_boxes_spreads_over_all_nics():
    topo = build("dgx-a100:2")
    cost = hierarchical_ring_allgather(topo)
    # each of the 16 NIC links carries one hop of 1/8 of the data per step, 15 steps
    assert cost.time_factor == Fraction(15, 8 * 25)
    assert hierarchical_ring_allgather(build("dgx-a100:1")) is None


def _random_topology(seed):
    rng = random.Random(seed)
    b = TopologyBuilder(f"random{seed}")
    compute = [f"c{i}" for i in range(rng.randint(3, 6))]
    switches = [f"s{i}" for i in range(rng.randint(0, 2))]
    for i, c in enumerate(compute):
        b.compute(c, f"box{i % 2}")
    for s in switches:
        b.switch(s)
    ring = compute + switches
    for u, v in zip(ring, ring[1:] + ring[:1], strict=True):
        b.link(u, v, rng.choice([1, 2, 4]), bidirectional=True)
    for _ in range(rng.randint(1, 6)):
        u, v = rng.sample(ring, 2)
        b.link(u, v, rng.choice([1, 3, 8]), bidirectional=True)
    return b.build()


@pytest.mark.parametrize("seed", range(10))
def test_no_allgather_baseline_beats_the_bound_on_random_topologies(seed):
    topo = _random_topology(seed)
    r_star = optimal_cut_ratio(topo).ratio
    baselines = [ring_allgather(topo), hierarchical_ring_allgather(topo)]
    baselines.append(schedule_cost(topo, pack_arborescences(topo, 1), "fixed k=1"))
    for cost in baselines:
        if cost is not None:
            assert cost.time_factor >= r_star, cost.method
    assert schedule_cost(topo, pack_arborescences(topo)).time_factor == r_star


@pytest.mark.parametrize(
    "spec", ["dgx-a100:1", "mi250:1", pytest.param("dgx-a100:2", marks=pytest.mark.slow)]
)
def test_no_baseline_beats_the_optimum_on_builtin_topologies(spec):
    topo = build(spec)
    r_star = optimal_cut_ratio(topo).ratio
    gather = compare_methods(topo, "allgather")
    assert gather[0].method.startswith("optimal") and gather[0].time_factor == r_star
    assert all(c.time_factor >= r_star for c in gather)
    reduce_all = compare_methods(topo, "allreduce")
    assert reduce_all[0].time_factor == 2 * r_star
    assert {c.method for c in reduce_all} >= {"ring", "double binary tree"}
    assert all(c.time_factor >= 2 * r_star for c in reduce_all)


def test_double_binary_tree_can_beat_two_r_star_when_one_gpu_is_thin():
    """2 r* bounds reduce-scatter-then-allgather schedules, not every allreduce.

    g0 has a 1 GB/s link: the phases of an allreduce built from reduce-scatter
    and allgather each push (N-1)/N of the data through it, one after the other,
    while the double binary tree (g0 is a one-child root and a leaf) sends and
    receives M once, concurrently.
    """
    topo = _star(1)
    r_star = optimal_cut_ratio(topo).ratio
    assert r_star == 3
    dbt = double_binary_tree_allreduce(topo)
    assert dbt.time_factor == 4 < 2 * r_star


def test_cli_compare_json_table_and_plot(tmp_path, capsys):
    plot = tmp_path / "curve.png"
    assert main(["compare", "dgx-a100:1", "--json", "--sizes", "1K", "1M", "1G"]) == 0
    data = json.loads(capsys.readouterr().out)
    methods = data["methods"]
    assert methods[0]["method"] == "optimal (k=1)" and methods[0]["ratio_to_optimal"] == 1.0
    assert methods[0]["algbw"] == 342.86
    assert [p["bytes"] for p in methods[0]["curve"]] == [1024, 1024**2, 1024**3]
    assert all(m["ratio_to_optimal"] <= 1.0 for m in methods)
    assert main(["compare", "dgx-a100:1", "--collective", "allreduce", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "double binary tree" in out and plot.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "dgx-a100:1", "--sizes", "12Q"])
    assert exit_info.value.code == 2
    assert "must be a positive integer" in capsys.readouterr().err


def test_compare_curves_are_the_simulator_times(capsys):
    """One timing model: compare's algbw at every size is M over the simulated time of
    the same schedule (default overhead and slice), for trees, rings and the double
    binary tree; it never beats the asymptotic algbw."""
    from optcoll.sim.simulator import simulate_schedule, simulate_trees
    from optcoll.sim.steps import RoutedSteps, simulate_steps

    topo = build("dgx-a100:1")
    assert main(["compare", "dgx-a100:1", "--collective", "allreduce", "--sizes", "1M", "256M",
                 "--json"]) == 0  # fmt: skip
    rows = {r["method"]: r for r in json.loads(capsys.readouterr().out)["methods"]}
    costs = {c.method: c for c in compare_methods(topo, "allreduce")}
    for method, cost in costs.items():
        for point in rows[method]["curve"]:
            size = point["bytes"]
            if isinstance(cost.schedule, RoutedSteps):
                time_us = simulate_steps(topo, cost.schedule, size).time_us
            elif cost.schedule is not None:
                time_us = simulate_schedule(topo, cost.schedule, size).time_us
            else:
                time_us = simulate_trees(topo, cost.trees, size, cost.phases).time_us
            assert point["algbw"] == pytest.approx(size / time_us / 1000, abs=1e-3), method
            assert point["algbw"] <= rows[method]["algbw"] + 1e-6
    assert set(rows) == {"optimal (k=1)", "fixed k=1", "ring", "NCCL-like ring (2 channels)",
                         "double binary tree",
                         "recursive doubling", "Rabenseifner", "Swing", "Swing (latency)", "Trivance (latency)"}  # fmt: skip


def test_mi250_2_k2_disagreement_is_gone():
    """The retired closed form put mi250:2 (k = 2) at 382 µs for 32 MiB; the simulator, now
    the only model, at 195 µs: the closed form charged every slice of the deepest tree at
    the slowest bandwidth any tree uses (16 GB/s), which the deep trees barely cross."""
    from optcoll.schedules.deploy import deployable_schedule
    from optcoll.sim.simulator import simulate_schedule

    topo = build("mi250:2")
    schedule = deployable_schedule(topo, "allgather", k=2).schedule
    cost = schedule_cost(topo, schedule)
    run = simulate_schedule(topo, schedule, 32 * 2**20)
    slowest = min(topo.capacity.values())
    assert slowest == 16 and cost.time_factor == Fraction(3, 32)
    bound = 2**20 * float(cost.time_factor) / 1000  # data(M) * time factor, µs
    assert bound <= run.time_us < 2 * bound  # 98.3 <= 194.6 µs
    assert run.time_us == pytest.approx(194.57, abs=0.01)
