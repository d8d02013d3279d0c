"""Step schedules in the simulator: on a star the simulated time is the closed form
exactly where no link is shared at once; plan and compare run them as candidates by name."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.schedules.baselines.logstep import (
    bruck_allgather,
    rabenseifner_allreduce,
    recursive_doubling_allgather,
)
from optcoll.schedules.baselines.step_catalogue import STEP_BUILDERS
from optcoll.sim.simulator import Network, simulate
from optcoll.sim.size_plan import candidates, method_times, plan
from optcoll.sim.steps import (
    route_steps,
    simulate_steps,
    step_cost,
    step_latency_floor,
    step_task_count,
    step_tasks,
)
from optcoll.topologies import build

# the log-step builders: at most one message from and one to each node a step (the direct
# ones, many messages a node, have their own closed forms: tests/sim/test_direct_steps.py)
BUILDERS = [
    b
    for builders in STEP_BUILDERS.values()
    for b in builders
    if b.__module__ != "optcoll.schedules.baselines.direct"
]
OVERHEAD, LATENCY, BANDWIDTH = 1.0, 1.0, 100  # µs, µs, GB/s = 1e5 bytes/µs


def _eager_ends(schedule, size: int) -> tuple[float, bool]:
    """The closed form on a star, links uncontended: a step's message leaves once its
    sender has received every message sent to it in earlier steps (its connection free
    of its previous message's overhead), takes ``o`` and then ``2 L + bytes / B``; and
    whether that holds exactly (no two messages' bytes on one link at once: the sender's
    link ``[start, start + bytes / B)``, the receiver's ``L`` later)."""
    held = dict.fromkeys(schedule.compute_nodes, 0.0)  # latest arrival at each node so far
    block = size / schedule.blocks
    connection: dict[tuple[str, str], float] = {}
    busy: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for step in schedule.steps:
        arrive: dict[str, float] = {}
        for m in step:
            start = max(held[m.src], connection.get((m.src, m.dst), 0.0)) + OVERHEAD
            connection[(m.src, m.dst)] = start
            send = len(m.blocks) * block / (BANDWIDTH * 1000)
            busy.setdefault((m.src, "up"), []).append((start, start + send))
            busy.setdefault((m.dst, "down"), []).append((start + LATENCY, start + LATENCY + send))
            arrive[m.dst] = max(arrive.get(m.dst, 0.0), start + 2 * LATENCY + send)
        for v, t in arrive.items():
            held[v] = max(held[v], t)
    alone = all(
        a[1] <= b[0] + 1e-9
        for spans in busy.values()
        for a, b in zip(sorted(spans), sorted(spans)[1:], strict=False)
    )
    return max(held.values()), alone


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_star_time_is_the_eager_closed_form(build):
    """Exactly the closed form where no two messages share a link at once, never below it
    (a shared link only delays); exact on at least the powers of two of the stars of 2 to
    17 nodes (on every one for Bruck and PAT)."""
    exact = 0
    for n in range(2, 18):
        topo = build_topology(n)
        routed = route_steps(topo, build(topo.compute_nodes))
        size = n * 3 * 10**5
        run = simulate_steps(topo, routed, size, overhead=OVERHEAD, slice_bytes=None)
        closed, alone = _eager_ends(routed.schedule, size)
        if alone:
            exact += 1
            assert run.time_us == pytest.approx(closed, rel=1e-12), n
        else:
            assert run.time_us >= closed * (1 - 1e-12), n
    assert exact >= 4  # at least the powers of two


def build_topology(n: int):
    return build(f"star:{n},bw={BANDWIDTH}")


@pytest.mark.parametrize("n", [2, 4, 8, 16])
@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_power_of_two_star_is_latency_times_steps_plus_bytes_over_bandwidth(n, build):
    """Every message of a step equally large: steps (o + 2 L) + sum of one message per
    step over B, which is also the cost model's alpha + data * time factor."""
    topo = build_topology(n)
    routed = route_steps(topo, build(topo.compute_nodes))
    size = n * 3 * 10**5
    schedule = routed.schedule
    per_step = [len(step[0].blocks) for step in schedule.steps]
    closed = schedule.num_steps * (OVERHEAD + 2 * LATENCY) + sum(per_step) * (
        size / schedule.blocks
    ) / (BANDWIDTH * 1000)
    run = simulate_steps(topo, routed, size, overhead=OVERHEAD, slice_bytes=None)
    assert run.time_us == pytest.approx(closed, rel=1e-12)
    cost = step_cost(topo, routed)
    assert cost.alpha == 2 * schedule.num_steps
    assert cost.time_factor == Fraction(sum(per_step) * n, schedule.blocks * BANDWIDTH)


def test_bruck_on_a_star_of_five():
    """3 steps of 1, 2 and 1 blocks: 3 (1 + 2) + 4 * 3 µs = 21 µs."""
    topo = build_topology(5)
    run = simulate_steps(
        topo, route_steps(topo, bruck_allgather(topo.compute_nodes)), 5 * 3 * 10**5,
        slice_bytes=None,
    )  # fmt: skip
    assert run.time_us == pytest.approx(21.0, rel=1e-12)


def test_rabenseifner_routes_on_the_torus_and_loads_links():
    """On ring:8 ranks 4 apart are 4 hops apart: the first halving step puts 4 messages
    of half the vector on each link of the busiest direction."""
    topo = build("ring:8")
    routed = route_steps(topo, rabenseifner_allreduce(topo.compute_nodes))
    assert len(routed.paths[("n0", "n4")]) == 5
    assert routed.step_factor >= routed.time_factor > 0


def test_plan_runs_and_chooses_log_step_candidates():
    """With a 1 µs overhead at 1 KiB on torus 4x4 a log-step allreduce wins, and plan's
    time for it is simulate_steps' time of the same routed schedule."""
    topo = build("torus:4x4")
    options = candidates(topo, "allreduce")
    names = [o.method for o in options]
    for name in ("recursive doubling", "Rabenseifner", "Swing", "Swing (latency)"):
        assert name in names
    (row,) = plan(topo, "allreduce", [1024], options=options, default_latency=Fraction(1, 2))
    times = dict(row.candidates)
    assert row.method in (
        "one-shot",
        "two-shot",
        "recursive doubling",
        "Swing (latency)",
        "Rabenseifner",
        "Swing",
        "multiport Swing",
        "multiport Swing (latency)",
    )
    chosen = next(o for o in options if o.method == row.method)
    alone = simulate_steps(
        topo, chosen.steps, 1024, slice_bytes=row.slice_bytes, default_latency=Fraction(1, 2)
    )
    assert times[row.method] == row.time_us == alone.time_us
    assert times["k=1"] is None or row.time_us < times["k=1"]  # None: its floor is slower


def test_compare_times_step_costs():
    topo = build("star:8,bw=100")
    cost = step_cost(topo, route_steps(topo, rabenseifner_allreduce(topo.compute_nodes)))
    (row,) = method_times(topo, [cost], [8 * 3 * 10**5], slice_bytes=None)
    # 6 steps of 1 + 2 µs, 4 + 2 + 1 + 1 + 2 + 4 blocks of 3 µs
    assert row == [pytest.approx(6 * 3 + 14 * 3, rel=1e-12)]


def test_a_message_waits_only_for_what_its_sender_receives():
    """Recursive doubling on a star of 3 (blocks of 3 µs, overhead and links 1 µs): h0
    sends h1 its block (6 µs); then h1 sends h2 two blocks and h2 sends h1 one, then h1
    sends h0 two. h2's message leaves at once (arrives 6) and h1's last once h1 holds
    both (6), but waits on h1's link behind its message to h2 (busy 7 to 13): 13 + 6 + 2
    = 21 (a rendezvous, h2's message waiting for h1's first step and h1's last for its
    second, would end at 24). The floor: the longest chain of overhead and path latency,
    h0 -> h1 -> h0, 6 µs."""
    topo = build_topology(3)
    routed = route_steps(topo, recursive_doubling_allgather(topo.compute_nodes))
    run = simulate_steps(topo, routed, 9 * 10**5, overhead=OVERHEAD, slice_bytes=None)
    assert run.time_us == 21.0
    assert step_latency_floor(routed, Network.of(topo), OVERHEAD) == 6.0


@pytest.mark.parametrize(
    "spec", ["torus:4x4", "mesh:3x3", "dgx-h100:2", "ring:6", "star:5", "torus:3x3x2"]
)
@pytest.mark.parametrize("collective", ["allreduce", "allgather"])
def test_every_schedule_counts_its_tasks_and_runs_above_its_floor(spec, collective):
    topo = build(spec)
    network = Network.of(topo)
    for option in candidates(topo, collective):
        if option.steps is None:
            continue
        for size, piece, overhead in ((2**10, None, OVERHEAD), (2**22, 2**19, 0.0)):
            graph = step_tasks(option.steps, network, size, slice_bytes=piece)
            assert len(graph) == step_task_count(option.steps, size, piece), option.method
            run = simulate(graph, network, size, overhead=overhead)
            floor = step_latency_floor(option.steps, network, overhead)
            assert 0 < floor <= run.time_us, option.method
