"""The discrete-event simulator against closed forms, the bound and the 4 GB limit."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.core.topology import TopologyBuilder
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines import double_binary_trees, ring_schedule
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.programs import simulate_msccl
from optcoll.sim.simulator import simulate_schedule, simulate_trees
from optcoll.topologies import build

MiB = 1024**2
GiB = 1024**3


def _uniform(name, nodes, edges, bandwidth, latency, switch=None):
    b = TopologyBuilder(name)
    for n in nodes:
        b.compute(n)
    if switch:
        b.switch(switch)
    for u, v in edges:
        b.link(u, v, bandwidth, bidirectional=True, latency=latency)
    return b.build()


def _ring(n, bandwidth=10, latency=2):
    nodes = [f"g{i}" for i in range(n)]
    b = TopologyBuilder(f"uniring{n}")
    for v in nodes:
        b.compute(v)
    for i in range(n):
        b.link(nodes[i], nodes[(i + 1) % n], bandwidth, latency=latency)
    return b.build()


@pytest.mark.parametrize("n", [3, 5, 8])
@pytest.mark.parametrize("overhead", [0.0, 1.5])
def test_ring_allgather_is_the_alpha_beta_closed_form(n, overhead):
    """One-way ring, unsliced: (N - 1) (o + alpha + M / (N B)), B in bytes/µs."""
    topo = _ring(n, bandwidth=10, latency=2)
    schedule = ring_schedule(topo)
    assert schedule.k == 1  # the one-way ring is the only ring
    size = 3 * MiB
    run = simulate_schedule(topo, schedule, size, overhead=overhead, slice_bytes=None)
    expected = (n - 1) * (overhead + 2 + size / n / 10_000)
    assert run.time_us == pytest.approx(expected, rel=1e-12)
    assert run.algbw == pytest.approx(size / expected / 1000, rel=1e-12)
    # every link sends N - 1 shards and nothing else
    assert len(run.busy_us) == n
    assert list(run.busy_us.values()) == pytest.approx([(n - 1) * size / n / 10_000] * n)


@pytest.mark.parametrize(("hops", "slices"), [(1, 1), (4, 1), (4, 16), (7, 5)])
def test_pipelined_chain_broadcast_is_the_closed_form(hops, slices):
    """A broadcast down a chain in S slices: (h) (o + alpha + s/B) + (S - 1) s/B (o <= s/B)."""
    nodes = [f"g{i}" for i in range(hops + 1)]
    topo = _uniform("chain", nodes, zip(nodes, nodes[1:], strict=False), 20, 0.5)
    tree = Tree(
        "g0", 1, tuple(TreeEdge(a, b, (a, b)) for a, b in zip(nodes, nodes[1:], strict=False))
    )
    schedule = Schedule("broadcast", "chain", tuple(nodes), 1, (tree,), root="g0")
    piece = 256 * 1024
    run = simulate_schedule(topo, schedule, slices * piece, overhead=1.0, slice_bytes=piece)
    step = piece / 20_000
    assert run.time_us == pytest.approx(hops * (1.0 + 0.5 + step) + (slices - 1) * step, rel=1e-12)


@pytest.mark.parametrize("slices", [1, 8])
def test_star_broadcast_through_a_switch_is_serialised_on_the_root_link(slices):
    """The root's link to the switch carries N - 1 copies back to back; the switch cuts
    through: o + (N - 1) M / B + 2 alpha."""
    nodes = [f"g{i}" for i in range(6)]
    topo = _uniform("star", nodes, [(v, "sw") for v in nodes], 50, 0.25, switch="sw")
    tree = Tree("g0", 1, tuple(TreeEdge("g0", v, ("g0", "sw", v)) for v in nodes[1:]))
    schedule = Schedule("broadcast", "star", tuple(nodes), 1, (tree,), root="g0")
    size = 4 * MiB
    run = simulate_schedule(topo, schedule, size, overhead=1.0, slice_bytes=size // slices)
    assert run.time_us == pytest.approx(1.0 + 5 * size / 50_000 + 0.5, rel=1e-12)
    assert run.busy_us[("g0", "sw")] == pytest.approx(5 * size / 50_000)
    assert run.utilisation()[("g0", "sw")] == pytest.approx(5 * size / 50_000 / run.time_us)


def test_double_binary_tree_reduce_then_broadcast_on_two_nodes():
    """Two nodes, each tree one edge: reduce M/2 one way then broadcast it back, both trees
    at once on the two directions: 2 (o + alpha + M / (2B))."""
    topo = _uniform("pair", ["a", "b"], [("a", "b")], 10, 3)
    trees = double_binary_trees(topo)
    size = 2 * MiB
    run = simulate_trees(topo, trees, size, (True, False), overhead=0.5, slice_bytes=None)
    assert run.time_us == pytest.approx(2 * (0.5 + 3 + size / 2 / 10_000), rel=1e-12)


def _two_gpu_ring_xml():
    def step(s, kind, buf, off):
        return (
            f'<step s="{s}" type="{kind}" srcbuf="{buf}" srcoff="{off}" dstbuf="{buf}" '
            f'dstoff="{off}" cnt="1" depid="-1" deps="-1" hasdep="0"/>'
        )

    def gpu(rank):
        other = 1 - rank
        return (
            f'<gpu id="{rank}" i_chunks="1" o_chunks="2" s_chunks="0">'
            f'<tb id="0" send="{other}" recv="{other}" chan="0">'
            + step(0, "s", "i", 0)
            + step(1, "r", "o", other)
            + f'<step s="2" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{rank}" '
            'cnt="1" depid="-1" deps="-1" hasdep="0"/></tb></gpu>'
        )

    return (
        '<algo name="ring" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" '
        'coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">'
        + gpu(0)
        + gpu(1)
        + "</algo>"
    )


def test_msccl_program_runs_step_by_step(tmp_path):
    """send (o), the chunk crosses (M/2 / B + alpha), receive (o), copy (a local step: no
    overhead)."""
    path = tmp_path / "ring.xml"
    path.write_text(_two_gpu_ring_xml())
    topo = _uniform("pair", ["a", "b"], [("a", "b")], 10, 3)
    size = 2 * MiB
    run = simulate_msccl(str(path), topo, size, overhead=0.5, slice_bytes=None)
    assert run.time_us == pytest.approx(2 * 0.5 + 3 + size / 2 / 10_000, rel=1e-12)
    # sliced in 4 loops: the thread block walks the whole program once per loop, in order
    run4 = simulate_msccl(str(path), topo, size, overhead=0.5, slice_bytes=size // 8)
    assert run4.tasks == 4 * run.tasks
    assert run4.time_us == pytest.approx(4 * (2 * 0.5 + 3 + size / 8 / 10_000), rel=1e-12)


def test_deadlocked_program_is_refused(tmp_path):
    text = _two_gpu_ring_xml().replace('type="s" srcbuf="i"', 'type="r" srcbuf="i"')
    path = tmp_path / "dead.xml"
    path.write_text(text)
    topo = _uniform("pair", ["a", "b"], [("a", "b")], 10, 3)
    with pytest.raises(ScheduleError, match="never became ready|sends nothing more"):
        simulate_msccl(str(path), topo, MiB)


def test_exported_program_and_its_schedule_agree_at_large_sizes(tmp_path):
    """The MSCCL file optcoll exports runs the same trees: within 1 % at 1 GiB, never
    below the bound."""
    topo = build("dgx-a100:1")
    xml = tmp_path / "ag.xml"
    assert main(["export", "dgx-a100:1", "-o", str(xml)]) == 0
    bound = GiB / 8 * float(optimal_cut_ratio(topo).ratio) / 1000
    from_xml = simulate_msccl(str(xml), topo, GiB)  # export -o FILE writes FILE
    from_trees = simulate_schedule(topo, pack_arborescences(topo), GiB)
    assert bound < from_trees.time_us <= from_xml.time_us <= 1.01 * from_trees.time_us


@st.composite
def _topologies(draw):
    n = draw(st.integers(2, 5))
    b = TopologyBuilder("random")
    nodes = [f"c{i}" for i in range(n)]
    for v in nodes:
        b.compute(v)
    switch = draw(st.booleans())
    if switch:
        b.switch("s")
    ring = nodes + (["s"] if switch else [])
    for u, v in zip(ring, ring[1:] + ring[:1], strict=True):
        b.link(u, v, draw(st.sampled_from([1, 2, 5, 8])), bidirectional=True,
               latency=draw(st.sampled_from([None, 0, 0.5])))  # fmt: skip
    for _ in range(draw(st.integers(0, 3))):
        u, v = draw(st.permutations(ring))[:2]
        b.link(u, v, draw(st.sampled_from([1, 3, 4])))
    return b.build()


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(_topologies(), st.sampled_from([1024, 300_000, 3 * MiB]), st.sampled_from([None, 1, 2]))
def test_no_simulated_schedule_beats_the_bound(topo, size, k):
    """Simulated time >= data(M) * time factor >= data(M) * r*, for the optimum, fixed k
    and the ring, on random topologies; the busiest link is busy exactly load / bandwidth."""
    r_star = optimal_cut_ratio(topo).ratio
    for schedule in (pack_arborescences(topo, k), ring_schedule(topo)):
        run = simulate_schedule(topo, schedule, size, slice_bytes=64 * 1024)
        data = size / topo.num_compute
        assert run.time_us >= data * float(schedule.time_factor) / 1000 * (1 - 1e-12)
        assert schedule.time_factor >= r_star
        busiest = max(run.busy_us.values())
        assert busiest == pytest.approx(data * float(schedule.time_factor) / 1000, rel=1e-9)


LIMIT_INSTANCES = [
    "dgx-a100:1",
    "torus:4x4",
    "ring:6",
    "line:5",
    "star:8",
    "hypercube:3",
    "fully-connected:5",
    "mesh:3x3",
    "leaf-spine:leaves=2,hosts=4,spines=2",
    pytest.param("dgx-v100:1", marks=pytest.mark.slow),
    pytest.param("dgx-2:1", marks=pytest.mark.slow),
    pytest.param("mi250:1", marks=pytest.mark.slow),
    pytest.param("dgx-a100:2", marks=pytest.mark.slow),
    pytest.param("dgx-h100:2", marks=pytest.mark.slow),
    pytest.param("mi250:2", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("spec", LIMIT_INSTANCES)
def test_optimal_schedule_reaches_the_bound_at_4_gib(spec):
    """At M = 4 GiB the optimal allgather is within 1 % of (M / N) r* (and never below)."""
    topo = build(spec)
    schedule = pack_arborescences(topo)
    size = 4 * GiB
    run = simulate_schedule(topo, schedule, size)
    bound = size / topo.num_compute * float(schedule.cut_ratio) / 1000
    assert bound <= run.time_us <= 1.01 * bound, run.time_us / bound


def test_cli_simulate_json_text_and_errors(tmp_path, capsys):
    schedule = tmp_path / "s.json"
    assert main(["trees", "ring:4", "-o", str(schedule)]) == 0
    capsys.readouterr()
    assert main(["simulate", "ring:4", str(schedule), "--sizes", "1K", "1M", "--json",
                 "--overhead", "0", "--latency", "2", "--slice", "64K"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    results = data["results"]
    assert [r["bytes"] for r in results] == [1024, MiB]
    for r in results:
        assert set(r) >= {"bytes", "time_us", "algbw", "lower_bound_us", "ratio", "links"}
        assert r["algbw"] == pytest.approx(r["bytes"] / r["time_us"] / 1000, abs=1e-3)
        assert r["time_us"] >= r["lower_bound_us"]
    assert main(["simulate", "ring:4", str(schedule), "--sizes", "1M"]) == 0
    out = capsys.readouterr().out
    assert "busiest links at 1M" in out and "ratio" in out
    with pytest.raises(SystemExit) as info:
        main(["simulate", "ring:4", str(schedule), "--overhead", "-1"])
    assert info.value.code == 2
    assert main(["simulate", "ring:5", str(schedule)]) == 2
    assert "content hash" in capsys.readouterr().err
    bad = tmp_path / "bad.xml"
    bad.write_text("<algo")
    assert main(["simulate", "ring:4", str(bad)]) == 2
    assert "not well-formed" in capsys.readouterr().err


def _pipeline(topo, schedule, size, overhead, slice_bytes):
    """The closed form of a pipelined tree schedule on uniform links (one-way ring, chain,
    star): the first slice pays a step per edge and the latency of the deepest path, then
    the busiest link or the deepest pipeline sets the pace, unless one connection's steps
    alone take longer. (optcoll's cost model used it for every schedule until it was
    retired for the simulator: it holds only where every link is alike.)"""
    import math
    from collections import Counter

    from optcoll.core.cost import link_latencies

    n = len(schedule.compute_nodes)
    data = size / n if schedule.collective == "allgather" else size
    chunk = data / schedule.k
    count = 1 if slice_bytes is None or chunk <= slice_bytes else math.ceil(chunk / slice_bytes)
    piece = chunk / count
    latency = {a: float(v) for a, v in link_latencies(topo).items()}
    loads, steps, depth, alpha = Counter(), Counter(), 0, 0.0
    for tree in schedule.trees:
        level, late = {tree.root: 0}, {tree.root: 0.0}
        for e in tree.edges:
            arcs = list(zip(e.path, e.path[1:], strict=False))
            level[e.dst] = level[e.src] + 1
            late[e.dst] = late[e.src] + sum(latency[a] for a in arcs)
            steps[(e.src, e.dst)] += tree.chunks
            loads.update({a: tree.chunks for a in arcs})
        depth, alpha = max(depth, max(level.values())), max(alpha, max(late.values()))
    rate = min(float(topo.capacity[a]) for a in loads) * 1000  # bytes per µs, all alike
    bandwidth = data * max(loads.values()) / schedule.k / rate
    most = max(t.chunks for t in schedule.trees)
    pipeline = (most * count + depth - 1) * piece / rate
    return max(
        alpha + depth * overhead + max(bandwidth, pipeline), max(steps.values()) * count * overhead
    )


def test_simulator_is_exact_on_the_pipeline_closed_forms():
    """The simulator agrees with the pipeline closed form on ring, chain and star."""
    ring = _ring(5, bandwidth=10, latency=2)
    nodes = [f"g{i}" for i in range(5)]
    chain = _uniform("chain", nodes, zip(nodes, nodes[1:], strict=False), 20, 0.5)
    path = Tree(
        "g0", 1, tuple(TreeEdge(a, b, (a, b)) for a, b in zip(nodes, nodes[1:], strict=False))
    )
    leaves = [f"g{i}" for i in range(6)]
    star = _uniform("star", leaves, [(v, "sw") for v in leaves], 50, 0.25, switch="sw")
    fan = Tree("g0", 1, tuple(TreeEdge("g0", v, ("g0", "sw", v)) for v in leaves[1:]))
    cases = [
        (ring, ring_schedule(ring), 3 * MiB, None),
        (ring, ring_schedule(ring), 3 * MiB, 128 * 1024),
        (chain, Schedule("broadcast", "c", tuple(nodes), 1, (path,), root="g0"), 4 * MiB, MiB // 4),
        (star, Schedule("broadcast", "s", tuple(leaves), 1, (fan,), root="g0"), 4 * MiB, MiB // 2),
    ]
    for topo, schedule, size, piece in cases:
        closed = _pipeline(topo, schedule, size, 1.0, piece)
        run = simulate_schedule(topo, schedule, size, overhead=1.0, slice_bytes=piece)
        assert closed == pytest.approx(run.time_us, rel=1e-12), schedule.topology
