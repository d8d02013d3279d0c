"""The combined bound (optcoll.bounds.combined): hand-computed values, the LP against an
independent flow formulation (scipy), exact certificates re-checked and tampered ones
refused, and no plan candidate faster than it (random topologies; Trivance's step
schedules on rings and tori)."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_startup_bound import _runs, latency_topologies

from optcoll.bounds.combined import check_timed_cost, combined_bound, timed_cost
from optcoll.bounds.depth import cost_symmetry, depth_bound, hop_costs
from optcoll.exceptions import SolveError
from optcoll.schedules.baselines.routing import torus_shape
from optcoll.schedules.baselines.step_catalogue import step_schedules
from optcoll.sim.simulator import SimOptions
from optcoll.sim.size_plan import size_bound
from optcoll.sim.steps import route_steps, step_tasks
from optcoll.topologies import build

HALF = Fraction(1, 2)
#: Bytes per µs of a 100 GB/s link.
LINK = 100 * 1000


def timed_optimum(costs, kind, layers, capacities, spans=None):
    """The LP of the module docstring as a flow formulation without symmetry (scipy): a
    unit flow per needed pair under its family's arc variables, and per layer ``t`` the
    cost of the arcs arriving by ``t`` at most ``capacities[t]``; None when infeasible."""
    from scipy.optimize import linprog

    n = len(costs)
    spans = spans or [[1] * n for _ in range(n)]
    families = 1 if kind == "allreduce" else n
    arcs = [
        (t, a, b)
        for t in range(layers)
        for a in range(n)
        for b in range(n)
        if a != b and t + spans[a][b] <= layers
    ]
    idle = [(t, a) for t in range(layers) for a in range(n)]
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v]
    if kind == "allreduce":
        needed = [(0, u, v) for u, v in pairs]
    else:
        needed = [(u if kind == "allgather" else v, u, v) for u, v in pairs]
    xs = families * len(arcs)
    per_flow = len(arcs) + len(idle)
    size = xs + len(needed) * per_flow
    cost = np.zeros(size)
    for k in range(families):
        for i, (_, a, b) in enumerate(arcs):
            cost[k * len(arcs) + i] = costs[a][b]
    eq_rows, eq_rhs, ub_rows, ub_rhs = [], [], [], []
    for p, (k, u, v) in enumerate(needed):
        base = xs + p * per_flow
        balance = {}
        for i, (t, a, b) in enumerate(arcs):
            balance.setdefault((t, a), []).append((base + i, -1))
            balance.setdefault((t + spans[a][b], b), []).append((base + i, 1))
            row = np.zeros(size)
            row[base + i], row[k * len(arcs) + i] = 1, -1
            ub_rows.append(row)
            ub_rhs.append(0)
        for j, (t, a) in enumerate(idle):
            balance.setdefault((t, a), []).append((base + len(arcs) + j, -1))
            balance.setdefault((t + 1, a), []).append((base + len(arcs) + j, 1))
        for (t, a), terms in balance.items():
            row = np.zeros(size)
            for index, sign in terms:
                row[index] += sign
            eq_rows.append(row)
            eq_rhs.append(-1 if (t, a) == (0, u) else 1 if (t, a) == (layers, v) else 0)
    for t in range(layers):
        row = np.zeros(size)
        for k in range(families):
            for i, (s, a, b) in enumerate(arcs):
                if s + spans[a][b] <= t:
                    row[k * len(arcs) + i] = costs[a][b]
        ub_rows.append(row)
        ub_rhs.append(float(capacities[t]))
    found = linprog(cost, A_ub=np.array(ub_rows), b_ub=np.array(ub_rhs), A_eq=np.array(eq_rows),
                    b_eq=np.array(eq_rhs), bounds=(0, None), method="highs")  # fmt: skip
    if found.status == 2:
        return None
    assert found.status == 0
    return found.fun


def test_two_nodes_exactly():
    """Two nodes, a 100 GB/s link each way: each element crosses both links once however
    late, so the bound is ``o + lat + M / B`` exactly (256 KiB: 1.5 + 2.62144 µs)."""
    bound = combined_bound(build("line:2"), "allreduce", overhead=1, default_latency=HALF)
    size = 2**18
    assert bound.quantum == Fraction(3, 4)  # half the least step
    assert bound.time_us(size) == Fraction(3, 2) + Fraction(size, LINK)
    assert bound.at_layers(size, 3) == 3  # some transfer arrives at 3 µs or later


def test_ring_of_four_exactly():
    """Ring of 4 (100 GB/s, o = 1, lat = 0.5, layers of 0.75 µs, a transfer spans two):
    at 64 KiB, within 3 layers (below 3 µs) a chain holds one transfer, so every pair goes
    directly (16 link crossings per element) and the 8 links' windows open at 1.5 µs; the
    depth bound, searching layers of 0.5 µs, stops at 2.5."""
    topo = build("ring:4")
    bound = combined_bound(topo, "allreduce", overhead=1, default_latency=HALF)
    size = 2**16
    expected = Fraction(3, 2) + Fraction(16 * size, 8 * LINK)
    assert bound.at_layers(size, 3) == expected == Fraction(35134, 12500)
    assert bound.at_layers(size, 2) == Fraction(9, 4)  # the direct sends cannot arrive by 2.25 µs
    assert bound.time_us(size) == expected
    depth = depth_bound(topo, "allreduce", overhead=1, default_latency=HALF)
    assert depth.time_us(size, Fraction(0)) < expected
    plan_bound = size_bound(topo, "allreduce", overhead=1.0, default_latency=HALF)
    assert plan_bound.lower_us(size) == expected
    assert "combined bound (every link): holds for every allreduce in which only compute" in (
        plan_bound.describe()
    )


def test_hand_values_of_the_lp():
    """Path of three: within 2 layers the star at the middle (4); with nothing allowed to
    arrive before the last layer, every pair directly (8)."""
    line = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    assert timed_cost(line, "allreduce", 2, [Fraction(10)] * 2).value == 4
    assert timed_cost(line, "allreduce", 3, [0, 0, 10]).value == 4
    assert timed_cost(line, "allreduce", 3, [0, 0, 0]).value == 8
    assert timed_cost(line, "allreduce", 3, [0, 1, 0]).value >= 6  # the star needs 2 by layer 1


@pytest.mark.parametrize("kind", ["allreduce", "allgather", "reduce_scatter"])
@pytest.mark.parametrize("spec", ["ring:4", "mesh:2x2", "star:3"])
def test_cut_generation_matches_the_flow_formulation(spec, kind):
    """The certified value is at most the independent LP's optimum and, where cut
    generation converged, within 1 % of it; where the rows make the LP infeasible the
    certified value exceeds what the last row allows."""
    costs = hop_costs(build(spec))
    n = len(costs)
    spans = [[0 if a == b else 1 + costs[a][b] // 2 for b in range(n)] for a in range(n)]
    total = sum(map(sum, costs)) * (1 if kind == "allreduce" else n)
    for layers, span in ((2, None), (3, None), (3, spans), (4, spans)):
        for fraction in (Fraction(0), Fraction(1, 8), Fraction(1, 3), Fraction(1)):
            capacities = [fraction * total * t / layers for t in range(layers)]
            try:
                found = timed_cost(costs, kind, layers, capacities, cost_symmetry(costs), span)
            except SolveError:  # no chain fits: the flow formulation is infeasible too
                assert timed_optimum(costs, kind, layers, capacities, span) is None
                continue
            assert check_timed_cost(costs, found, span) == found.value
            optimum = timed_optimum(costs, kind, layers, capacities, span)
            if optimum is None:
                assert found.value > total  # no set of arcs fits the rows
                continue
            assert found.value <= optimum + 1e-7
            if found.optimal:
                assert found.value >= optimum * (1 - 0.011)
            plain = timed_cost(costs, kind, layers, capacities, spans=span)  # no symmetry
            assert math.isclose(float(plain.value), optimum, rel_tol=0.011)


def test_certificate_is_rechecked_exactly():
    costs = hop_costs(build("ring:4"))
    found = timed_cost(costs, "allreduce", 2, [0, 1], cost_symmetry(costs))
    # each unit of cost arriving in layer 1 saves 3 of the 16 of sending directly
    assert check_timed_cost(costs, found) == found.value == 13
    assert found.paces == (0, 3)  # 16 - 3 * 1
    assert math.isclose(timed_optimum(costs, "allreduce", 2, [0, 1]), 13)
    louder = tuple(m * Fraction(11, 10) for m in found.multipliers)
    with pytest.raises(SolveError, match="overloads"):
        check_timed_cost(costs, replace(found, multipliers=louder))
    t = next(t for t, m in enumerate(found.paces) if m)
    slower = list(found.paces)
    slower[t] = 0
    with pytest.raises(SolveError, match="overloads|value"):
        check_timed_cost(costs, replace(found, paces=tuple(slower)))
    slower[t] = -found.paces[t]
    with pytest.raises(SolveError, match="negative pace"):
        check_timed_cost(costs, replace(found, paces=tuple(slower)))
    more = tuple(c + 1 for c in found.capacities)  # the value claimed for other rows
    with pytest.raises(SolveError, match="value"):
        check_timed_cost(costs, replace(found, capacities=more))
    with pytest.raises(SolveError, match="value"):
        check_timed_cost(costs, replace(found, value=found.value + Fraction(1, 10**9)))
    i = next(i for i, m in enumerate(found.multipliers) if m > 0)
    cuts = list(found.cuts)
    cuts[i] = (cuts[i][0], frozenset(range(3 * 4)))  # every node: it separates nothing
    with pytest.raises(SolveError, match="separates no needed pair"):
        check_timed_cost(costs, replace(found, cuts=tuple(cuts)))
    with pytest.raises(SolveError, match="does not keep"):
        check_timed_cost(costs, replace(found, generators=((1, 0, 2, 3),)))


def test_finer_layers_where_the_combined_bound_holds():
    """Ring of 6, allreduce of 64 KiB, o = 1, lat = 0.5: on layers of 0.75 µs (half the
    least step) the bound is 3.0 µs; the depth bound's layers of 0.5 µs (a transfer
    between neighbours spans 3 of them, exactly its 1.5 µs) then prove 3.5."""
    bound = combined_bound(build("ring:6"), "allreduce", default_latency=HALF)
    assert (bound.quantum, bound.finer.quantum) == (Fraction(3, 4), HALF)
    assert replace(bound, finer=None).time_us(65536) == 3
    assert bound.time_us(65536) == Fraction(7, 2)
    assert bound.finer.at_layers(65536, 6) == Fraction(7, 2)  # 6 layers' ceiling holds
    assert bound.finer.at_layers(65536, 7) < 4
    assert bound.finer.finer is None and bound.finer.most_layers == 21


def test_bad_arguments_and_no_bound():
    line = [[0, 1], [1, 0]]
    with pytest.raises(SolveError, match="not alltoall"):
        timed_cost(line, "alltoall", 2, [0, 0])
    with pytest.raises(SolveError, match="one per layer"):
        timed_cost(line, "allreduce", 2, [0])
    assert combined_bound(build("star:4,sharp=1"), "allreduce") is None
    assert combined_bound(build("ring:4"), "alltoall") is None


def test_bound_sizes_reports_the_combined_bound(capsys):
    import json

    from optcoll.cli import main

    main(["bound", "ring:4", "--collective", "allreduce", "--sizes", "64K",
          "--overhead", "1", "--latency", "0.5", "--json"])  # fmt: skip
    row = json.loads(capsys.readouterr().out)["sizes"][0]
    assert row["combined_bound_us"] == 2.8107 == row["lower_bound_us"]
    main(["bound", "ring:4", "--collective", "allreduce", "--sizes", "64K",
          "--overhead", "1", "--latency", "0.5"])  # fmt: skip
    text = capsys.readouterr().out
    assert "combined" in text and "2.811" in text


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(
    latency_topologies(max_compute=4, max_switches=1),
    st.sampled_from(["allgather", "reduce_scatter", "allreduce"]),
    st.sampled_from([1024, 100_000, 3 * 2**20]),
    st.sampled_from([0.5, 1.0, 2.0]),
    st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(2)]),
    st.sampled_from([None, 64 * 1024]),
    st.booleans(),
)
def test_no_simulated_candidate_beats_the_combined_bound(
    topo, collective, size, overhead, latency, slice_bytes, store_and_forward
):
    """Every candidate of plan runs no faster than the combined bound at every number of
    layers up to just past its time (the theorem itself, each ``L``), and than plan's bound."""
    bound = combined_bound(topo, collective, overhead=overhead, default_latency=latency)
    assume(bound is not None)
    sim = SimOptions(overhead, slice_bytes, latency)
    runs = list(_runs(topo, collective, size, sim, store_and_forward))
    assume(runs)
    fastest = min(time for _, time in runs)
    layered = [b for b in (bound, bound.finer) if b is not None]  # both layer lengths
    for each in layered:
        top = min(40, math.floor(Fraction(fastest) / each.quantum) + 2)
        for layers in range(1, top + 1):
            lower = float(each.at_layers(size, layers))
            assert fastest >= lower * (1 - 1e-9), (each.quantum, layers, fastest, lower)
    assert fastest >= float(bound.time_us(size)) * (1 - 1e-9)
    for family in (f for each in layered for f in each.families):  # every certificate used
        for found in family.values.values():
            assert check_timed_cost(family.depth.costs, found, family.depth.spans) == found.value
    lower = float(
        size_bound(topo, collective, overhead=overhead, default_latency=latency).lower_us(size)
    )
    assert fastest >= lower * (1 - 1e-9)


@pytest.mark.parametrize("spec", ["ring:8", "torus:3x3", "torus:2x4"])
@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce"])
@pytest.mark.parametrize(
    ("size", "overhead", "latency", "store_and_forward"),
    [(1024, 1.0, HALF, False), (100_000, 0.5, Fraction(0), True), (2**20, 1.0, HALF, False),
     (3 * 2**20, 2.0, Fraction(2), True)],
)  # fmt: skip
def test_trivance_runs_no_faster_than_the_bounds(
    spec, collective, size, overhead, latency, store_and_forward
):
    """The Trivance step schedules of tori and rings (the bandwidth forms with their evened
    overlaps, fused Trivance), which the random topologies above never are, run no faster
    than the combined bound at any number of layers up to their time, nor than plan's."""
    topo = build(spec)
    sim = SimOptions(overhead, 64 * 1024, latency, store_and_forward)
    network = sim.network(topo)
    nodes, shape = topo.compute_nodes, torus_shape(topo)
    runs = {
        s.method: sim.run(step_tasks(route_steps(topo, s), network, size), network, size).time_us
        for s in step_schedules(nodes, collective, shape=shape)
        if "Trivance" in s.method
    }
    assert "Trivance" in runs and ("fused Trivance" in runs) == (collective == "allreduce")
    bound = combined_bound(topo, collective, overhead=overhead, default_latency=latency)
    lower = size_bound(topo, collective, overhead=overhead, default_latency=latency)
    for method, time in runs.items():
        top = min(40, math.floor(Fraction(time) / bound.quantum) + 2)
        for layers in range(1, top + 1):
            assert time >= float(bound.at_layers(size, layers)) * (1 - 1e-9), (method, layers)
        assert time >= float(lower.lower_us(size)) * (1 - 1e-9), method
