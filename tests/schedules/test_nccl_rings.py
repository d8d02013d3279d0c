"""NCCL-like rings: channels found, data delivered, simulated time the closed form."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.core.topology import TopologyBuilder
from optcoll.schedules.baselines import nccl_ring_schedule, nccl_rings, ring_schedule
from optcoll.schedules.baselines.nccl_rings import disjoint_hamiltonian_cycles
from optcoll.schedules.collectives import allreduce, reduce_scatter
from optcoll.sim.simulator import simulate_schedule
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

MiB = 1024 * 1024


def _ring(n, bandwidth=10, latency=2):
    nodes = [f"g{i}" for i in range(n)]
    b = TopologyBuilder(f"biring{n}")
    for v in nodes:
        b.compute(v)
    for i in range(n):
        b.link(nodes[i], nodes[(i + 1) % n], bandwidth, bidirectional=True, latency=latency)
    return b.build()


@pytest.mark.parametrize("spec", ["ring:6", "torus:4x4", "mesh:3x4", "dgx-h100:2", "dgx-v100:1"])
def test_every_collective_of_the_rings_delivers_its_data(spec):
    topo = build(spec)
    schedule = nccl_ring_schedule(topo)
    for run in (schedule, reduce_scatter(schedule, topo), allreduce(schedule, topo)):
        verdict = verify_schedule(topo, run)
        assert verdict.valid, verdict.reason
        assert verdict.time_factor == run.time_factor


def test_torus_channels_are_disjoint_hamiltonian_cycles_using_every_link_once():
    topo = build("torus:8x8")
    cycles = disjoint_hamiltonian_cycles(topo)
    assert len(cycles) == 2
    used = [frozenset(p) for c in cycles for p in zip(c, c[1:] + c[:1], strict=True)]
    assert all(sorted(c) == sorted(topo.compute_nodes) for c in cycles)
    assert len(set(used)) == len(used) == 128  # every undirected torus link, once
    schedule = nccl_ring_schedule(topo)
    assert schedule.stats["method"] == "NCCL-like ring (4 channels)"
    # each link direction carries one channel: (N - 1) shards of 1/4 at 100 GB/s
    assert schedule.time_factor == Fraction(63, 400)
    assert schedule.time_factor == ring_schedule(topo).time_factor / 2


def test_dgx_channels_are_the_rail_rings():
    topo = build("dgx-h100:4")
    rings = nccl_rings(topo)
    assert len(rings) == 16 and all(len(r) == 32 for r in rings)
    # four times the single ring's bandwidth: every rail carries its share
    assert nccl_ring_schedule(topo).time_factor * 4 == ring_schedule(topo).time_factor


@pytest.mark.parametrize("n", [3, 5, 8])
@pytest.mark.parametrize("overhead", [0.0, 1.5])
def test_bidirectional_ring_time_is_the_closed_form(n, overhead):
    """Both directions, unsliced: allgather (N - 1) (o + alpha + M / (2 N B)), allreduce twice."""
    topo = _ring(n, bandwidth=10, latency=2)
    schedule = nccl_ring_schedule(topo)
    assert schedule.k == 2
    size = 3 * MiB
    step = overhead + 2 + size / n / 2 / 10_000
    run = simulate_schedule(topo, schedule, size, overhead=overhead, slice_bytes=None)
    assert run.time_us == pytest.approx((n - 1) * step, rel=1e-12)
    both = allreduce(schedule, topo)
    run = simulate_schedule(topo, both, size, overhead=overhead, slice_bytes=None)
    assert run.time_us == pytest.approx(2 * (n - 1) * step, rel=1e-12)


@pytest.mark.parametrize("n", [3, 4, 6])
@pytest.mark.parametrize("overhead", [0.0, 1.5])
def test_star_time_is_the_closed_form(n, overhead):
    """GPUs on one switch, both directions, unsliced: each GPU's link to the switch sends
    its 2 (N - 1) chunks of M / (2 N) back to back, after one overhead, and the last one
    crosses two links: o + 2 alpha + (N - 1) M / (N B)."""
    b = TopologyBuilder(f"star{n}")
    b.switch("sw")
    for i in range(n):
        b.compute(f"g{i}")
        b.link(f"g{i}", "sw", 10, bidirectional=True, latency=2)
    topo = b.build()
    schedule = nccl_ring_schedule(topo)
    assert schedule.stats["method"] == "NCCL-like ring (2 channels)"
    size = 3 * MiB
    run = simulate_schedule(topo, schedule, size, overhead=overhead, slice_bytes=None)
    assert run.time_us == pytest.approx(overhead + 2 * 2 + (n - 1) * size / n / 10_000, rel=1e-12)
