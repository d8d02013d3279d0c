"""Window cuts at every size (optcoll.bounds.startup): exact values, and no simulated
schedule of any candidate plan offers, nor any step, tree or aggregation run, beats them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from optcoll.bounds.startup import startup_bound, window_time
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import OptCollError, ScheduleError
from optcoll.sim.simulator import Network, SimOptions
from optcoll.sim.size_plan import candidates, size_bound
from optcoll.topologies import build

GiB = 1024**3


def test_window_time_is_the_least_time_exactly():
    windows = [
        (Fraction(100), Fraction(1)),
        (Fraction(50), Fraction(2)),
        (Fraction(7), Fraction(9)),
    ]
    for demand in (Fraction(0), Fraction(1, 3), Fraction(100), Fraction(150), Fraction(10**6)):
        t = window_time(demand, windows)
        supplied = sum(b * max(Fraction(0), t - c) for b, c in windows)
        assert supplied == demand  # it meets the demand ...
        if demand:  # ... and nothing earlier does (the supply rises strictly from min c)
            assert t > min(c for _, c in windows)
    assert window_time(Fraction(150), windows) == Fraction(7, 3)  # 100 (t-1) + 50 (t-2) = 150
    with pytest.raises(ValueError):
        window_time(Fraction(1), [])


def test_torus_closed_forms():
    """Torus 8x8 (100 GB/s links, 1/2 µs each, o = 1): at large sizes a node's four in-links
    carry the other 63 pieces between o and T - 1/2, so T >= o + 1/2 + 63 M / (64 * 400 GB/s);
    the allreduce's partition crossings likewise over all 256 links."""
    topo = build("torus:8x8")
    o, lat = Fraction(1), Fraction(1, 2)
    size = 2**32
    gather = startup_bound(topo, "allgather", overhead=o, default_latency=lat)
    assert gather.time_us(size) == o + lat + Fraction(63 * size, 64 * 400_000)
    scatter = startup_bound(topo, "reduce_scatter", overhead=o, default_latency=lat)
    assert scatter.time_us(size) == gather.time_us(size)
    bounds = size_bound(topo, "allreduce", overhead=1.0, default_latency=lat)
    assert bounds.lower_us(size) == o + lat + Fraction(2 * 63 * size, 25_600_000)
    # 1 MiB allreduce: the antipode's data enters through links whose tails lie 7 hops away
    startup = o + 7 * lat + lat + Fraction(2**20, 400_000)
    assert bounds.startup.time_us(2**20) == startup
    # the combined bound (links busy only as early as the data can reach them) is higher:
    # on layers of 0.5 µs (its finer pass) the ceiling of 17 layers holds
    assert bounds.lower_us(2**20) == bounds.combined.time_us(2**20) == 9 > startup


def test_mesh_corner_is_the_allgather_bottleneck():
    """A mesh 4x4 corner has two in-links: 15 pieces through 200 GB/s after o, before T - 1/2."""
    topo = build("mesh:4x4")
    bound = startup_bound(topo, "allgather", overhead=Fraction(1), default_latency=Fraction(1, 2))
    size = 2**24
    assert bound.time_us(size) == Fraction(3, 2) + Fraction(15 * size, 16 * 200_000)


LATENCIES = (Fraction(0), Fraction(1, 2), Fraction(1), Fraction(3))


@st.composite
def latency_topologies(draw, max_compute=4, max_switches=2):
    """Small random topologies with random link latencies and bandwidths (switches or
    not, a cycle through the compute nodes, one-way links)."""
    n = draw(st.integers(2, max_compute))
    k = draw(st.integers(0, max_switches))
    compute = [f"c{i}" for i in range(n)]
    switches = [f"s{i}" for i in range(k)]
    nodes = [Node(v, "compute") for v in compute] + [Node(v, "switch") for v in switches]
    bandwidth = st.sampled_from([1, 2, 5, 12.5, Fraction(1, 3)])
    latency = st.sampled_from(LATENCIES)
    links = []
    order = draw(st.permutations(compute))
    for a, b in zip(order, order[1:] + order[:1], strict=True):
        via = draw(st.sampled_from([None, *switches]))
        hops = [(a, b)] if via is None else [(a, via), (via, b)]
        both = draw(st.booleans())
        for u, v in hops:
            links.append(
                Link(u, v, draw(bandwidth), bidirectional=both, latency=float(draw(latency)))
            )
    everything = compute + switches
    pairs = st.tuples(st.sampled_from(everything), st.sampled_from(everything)).filter(
        lambda p: p[0] != p[1]
    )
    for a, b in draw(st.lists(pairs, max_size=4)):
        links.append(
            Link(a, b, draw(bandwidth), bidirectional=draw(st.booleans()), latency=float(draw(latency)))
        )  # fmt: skip
    return Topology("random", nodes, links)


def _runs(topo, collective, size, sim, store_and_forward=False):
    """Every candidate plan offers, simulated at ``size`` (name, time); none where plan
    has none (an allreduce whose links do not connect the nodes both ways), and not a
    candidate whose trees need a missing reverse link."""
    network = Network.of(topo, sim.default_latency, store_and_forward=store_and_forward)
    try:
        options = candidates(topo, collective)
    except OptCollError:
        return
    for option in options:
        try:
            if option.deferred is not None:
                option = type(option)(option.method, option.deferred())
            table = None
            if option.chunks_per_node:
                table = option.timetable(topo, size, sim.default_latency)
            graphs = [
                option.tasks(network, size, sim.slice_bytes, priority, table)
                for priority in option.priorities[:2]
            ]
        except ScheduleError:
            continue
        for graph in graphs:
            yield option.method, sim.run(graph, network, size).time_us


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(
    latency_topologies(),
    st.sampled_from(["allgather", "reduce_scatter", "allreduce"]),
    st.sampled_from([1024, 100_000, 3 * 2**20]),
    st.sampled_from([0.0, 0.5, 2.0]),
    st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(2)]),
    st.sampled_from([None, 64 * 1024]),
    st.booleans(),
)
def test_no_simulated_candidate_beats_the_bound(
    topo, collective, size, overhead, latency, slice_bytes, store_and_forward
):
    """Every candidate of plan (trees, rings, NCCL-like rings, timetables, log-step step
    schedules, spanning trees, double binary tree) runs no faster than the combined bound,
    with virtual cut-through or store-and-forward links."""
    bounds = size_bound(topo, collective, overhead=overhead, default_latency=latency)
    lower = float(bounds.lower_us(size))
    sim = SimOptions(overhead, slice_bytes, latency)
    runs = list(_runs(topo, collective, size, sim, store_and_forward))
    assume(runs)
    for method, time in runs:
        assert time >= lower * (1 - 1e-9), (method, time, lower)


@pytest.mark.parametrize(
    "spec", ["star:4,sharp=1", "dgx-h100:1,nvls=1", "leaf-spine:leaves=2,hosts=2,spines=2"]
)
def test_in_network_and_switched_allreduce_candidates_respect_the_bound(spec):
    """Where switches reduce (aggregation trees, NVLS) and on a leaf-spine, every plan
    candidate of an allreduce runs no faster than the bound, at 1 KiB and 1 MiB."""
    topo = build(spec)
    sim = SimOptions(1.0, 512 * 1024, Fraction(1, 2))
    for size in (1024, 2**20):
        lower = float(
            size_bound(
                topo, "allreduce", overhead=1.0, default_latency=sim.default_latency
            ).lower_us(size)
        )
        times = dict(_runs(topo, "allreduce", size, sim))
        assert times and min(times.values()) >= lower * (1 - 1e-9), (times, lower)
