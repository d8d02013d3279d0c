"""Direct step schedules in the simulator: on a star their times are closed forms exactly
(every node's N - 1 messages of a step go out on its one link back to back, posted shift by
shift, so each link is busy without a gap), and compare's exact terms agree."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.schedules.baselines.direct import (
    direct_allgather,
    direct_reduce_scatter,
    one_shot_allreduce,
    two_shot_allreduce,
)
from optcoll.sim.size_plan import plan
from optcoll.sim.steps import route_steps, simulate_steps, step_cost
from optcoll.topologies import build

OVERHEAD, LATENCY, BANDWIDTH = 1.0, 1.0, 100  # µs, µs, GB/s = 1e5 bytes/µs


@pytest.mark.parametrize("n", range(2, 13))
def test_star_times_are_closed_forms(n):
    """o + 2 L per step, and the N - 1 messages of each node's link back to back:
    direct (N - 1) (M / N) / B, one-shot (N - 1) M / B, two-shot twice the direct."""
    topo = build(f"star:{n},bw={BANDWIDTH}")
    size = n * 3 * 10**5  # a block of M / N takes 3 µs
    block_us = 3.0
    expected = {
        direct_allgather: OVERHEAD + 2 * LATENCY + (n - 1) * block_us,
        direct_reduce_scatter: OVERHEAD + 2 * LATENCY + (n - 1) * block_us,
        one_shot_allreduce: OVERHEAD + 2 * LATENCY + (n - 1) * n * block_us,
        two_shot_allreduce: 2 * (OVERHEAD + 2 * LATENCY + (n - 1) * block_us),
    }
    for build_schedule, closed in expected.items():
        routed = route_steps(topo, build_schedule(topo.compute_nodes))
        run = simulate_steps(topo, routed, size, overhead=OVERHEAD, slice_bytes=None)
        assert run.time_us == pytest.approx(closed, rel=1e-12), build_schedule.__name__


@pytest.mark.parametrize("n", [2, 5, 8])
def test_exact_terms_on_a_star(n):
    """compare's terms: 2 L of latency a step; the busiest link (a node's uplink) carries
    N - 1 blocks of M / N a step (one-shot: N - 1 vectors), in units of M / N over B."""
    topo = build(f"star:{n},bw={BANDWIDTH}")
    for build_schedule, steps, units in (
        (direct_allgather, 1, n - 1),
        (direct_reduce_scatter, 1, n - 1),
        (one_shot_allreduce, 1, n * (n - 1)),
        (two_shot_allreduce, 2, 2 * (n - 1)),
    ):
        cost = step_cost(topo, route_steps(topo, build_schedule(topo.compute_nodes)))
        assert cost.alpha == 2 * steps
        assert cost.time_factor == Fraction(units, BANDWIDTH)


def test_one_shot_wins_at_1_kib_on_torus_8x8():
    """The issue's settings (overhead 1 µs, latency 0.5 µs): one step of 63 messages, each on
    its own connection and path, ends 0.195 µs after the latency bound (overhead + 8 hops of
    0.5 µs = 5 µs; 0.616 µs after it when the widest paths put 32 of a sender's 63 on one
    of its four links, where least-loaded routing puts at most 16); the best before it was
    multiport Swing (latency) at 11.02 µs."""
    topo = build("torus:8x8")
    (row,) = plan(topo, "allreduce", [1024], overhead=1.0, default_latency=Fraction(1, 2))
    assert row.method == "one-shot"
    assert row.lower_bound_us >= 5.0  # at least overhead + 8 hops of 0.5 µs
    assert row.time_us == pytest.approx(5.19456, abs=1e-5)
    assert row.ratio < 1.13
