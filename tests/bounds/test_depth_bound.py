"""The depth bound (optcoll.bounds.depth): the LP against an independent flow formulation,
exact certificates re-checked, hand-computed cases, and no plan candidate faster than it."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_startup_bound import _runs, latency_topologies

from optcoll.bounds.depth import (
    check_shallow_cost,
    cost_symmetry,
    depth_bound,
    hop_costs,
    shallow_cost,
)
from optcoll.exceptions import SolveError
from optcoll.sim.simulator import SimOptions
from optcoll.sim.size_plan import size_bound
from optcoll.topologies import build

LINE = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]


def _needed(kind, n):
    """(family, u, v) of every chain the collective needs."""
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v]
    if kind == "allreduce":
        return [(0, u, v) for u, v in pairs]
    return [(u if kind == "allgather" else v, u, v) for u, v in pairs]


def flow_optimum(costs, kind, layers, spans=None):
    """The LP of the module docstring as a flow formulation (one unit flow per needed
    pair under the family's transfer variables), solved by scipy without symmetry: an
    independent check of the cut generation."""
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
    needed = _needed(kind, n)
    xs = families * len(arcs)
    per_flow = len(arcs) + len(idle)
    size = xs + len(needed) * per_flow
    cost = np.zeros(size)
    for k in range(families):
        for i, (_, a, b) in enumerate(arcs):
            cost[k * len(arcs) + i] = costs[a][b]
    eq_rows, eq_rhs, ub_rows = [], [], []
    for p, (k, u, v) in enumerate(needed):
        base = xs + p * per_flow
        balance = {}
        for i, (t, a, b) in enumerate(arcs):
            balance.setdefault((t, a), []).append((base + i, -1))
            balance.setdefault((t + spans[a][b], b), []).append((base + i, 1))
            ub_rows.append({base + i: 1, k * len(arcs) + i: -1})
        for j, (t, a) in enumerate(idle):
            balance.setdefault((t, a), []).append((base + len(arcs) + j, -1))
            balance.setdefault((t + 1, a), []).append((base + len(arcs) + j, 1))
        for (t, a), terms in balance.items():
            row = np.zeros(size)
            for index, sign in terms:
                row[index] += sign
            eq_rows.append(row)
            eq_rhs.append(-1 if (t, a) == (0, u) else 1 if (t, a) == (layers, v) else 0)
    ub = np.zeros((len(ub_rows), size))
    for r, terms in enumerate(ub_rows):
        for index, value in terms.items():
            ub[r, index] = value
    found = linprog(cost, A_ub=ub, b_ub=np.zeros(len(ub_rows)), A_eq=np.array(eq_rows),
                    b_eq=np.array(eq_rhs), bounds=(0, None), method="highs")  # fmt: skip
    assert found.status == 0
    return found.fun


def test_hand_computed_values():
    """Line of three: depth 1 is every pair directly (8), depth 2 the star at the middle
    (4); ring of four: 16, then two reduce-broadcast stars (8), then 2 (N - 1) = 6."""
    assert shallow_cost(LINE, "allreduce", 1).value == 8
    assert shallow_cost(LINE, "allreduce", 2).value == 4
    ring = hop_costs(build("ring:4"))
    assert [shallow_cost(ring, "allreduce", d).value for d in (1, 2, 3)] == [16, 8, 6]
    assert shallow_cost(ring, "allgather", 1).value == 16  # every source to every node
    assert shallow_cost(ring, "allgather", 2).value == 4 * 3  # a chain of 2 reaches the far node


def test_torus_depth_two_is_the_star():
    """On torus 8x8 (every link weighs 1) two steps cost about 2 sum_v dist(0, v) = 512:
    reduce to a centre, broadcast back; certified within the LP gap."""
    costs = hop_costs(build("torus:8x8"))
    assert 2 * sum(costs[0]) == 512
    found = shallow_cost(costs, "allreduce", 2, cost_symmetry(costs))
    assert 512 * (1 - 0.011) <= found.value <= 512
    assert check_shallow_cost(costs, found) == found.value


@pytest.mark.parametrize("kind", ["allreduce", "allgather", "reduce_scatter"])
@pytest.mark.parametrize("spec", ["ring:4", "mesh:2x2", "star:3"])
def test_cut_generation_matches_the_flow_formulation(spec, kind):
    costs = hop_costs(build(spec))
    n = len(costs)
    spans = [[0 if a == b else 1 + costs[a][b] // 2 for b in range(n)] for a in range(n)]
    for layers, span in ((1, None), (2, None), (3, None), (3, spans), (4, spans)):
        try:
            found = shallow_cost(costs, kind, layers, cost_symmetry(costs), spans=span)
        except SolveError:  # no chain fits: the flow formulation is infeasible too
            with pytest.raises(AssertionError):
                flow_optimum(costs, kind, layers, span)
            continue
        optimum = flow_optimum(costs, kind, layers, span)
        assert found.value <= optimum + 1e-7
        assert found.value >= optimum * (1 - 0.011)
        assert check_shallow_cost(costs, found, span) == found.value
        plain = shallow_cost(costs, kind, layers, spans=span)  # no symmetry: same LP
        assert math.isclose(float(plain.value), float(found.value), rel_tol=0.011)


def test_certificate_is_rechecked_exactly():
    costs = hop_costs(build("ring:4"))
    found = shallow_cost(costs, "allreduce", 2, cost_symmetry(costs))
    assert check_shallow_cost(costs, found) == found.value == 8
    louder = tuple(m * Fraction(11, 10) for m in found.multipliers)
    with pytest.raises(SolveError, match="overloads"):
        check_shallow_cost(costs, replace(found, multipliers=louder))
    i = next(i for i, m in enumerate(found.multipliers) if m > 0)
    cuts = list(found.cuts)
    cuts[i] = (cuts[i][0], frozenset(range(3 * 4)))  # every node: it separates nothing
    with pytest.raises(SolveError, match="separates no needed pair"):
        check_shallow_cost(costs, replace(found, cuts=tuple(cuts)))
    cuts[i] = (cuts[i][0], frozenset({0, 4}))  # node 0 at layers 0 and 1, not at 2
    with pytest.raises(SolveError, match="idle arc"):
        check_shallow_cost(costs, replace(found, cuts=tuple(cuts)))
    with pytest.raises(SolveError, match="does not keep"):
        check_shallow_cost(costs, replace(found, generators=((1, 0, 2, 3),)))


def test_no_bound_where_switches_combine_or_no_step():
    assert depth_bound(build("star:4,sharp=1"), "allreduce") is None
    assert depth_bound(build("ring:4"), "alltoall") is None
    assert (
        depth_bound(build("ring:4"), "allreduce", overhead=0, default_latency=Fraction(0)) is None
    )


def test_plan_bound_says_what_it_holds_for():
    bounds = size_bound(build("ring:4"), "allreduce", overhead=1.0, default_latency=Fraction(1, 2))
    assert "depth bound (every link): holds for every allreduce in which only compute nodes" in (
        bounds.describe()
    )


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
def test_no_simulated_candidate_beats_the_depth_bound(
    topo, collective, size, overhead, latency, slice_bytes, store_and_forward
):
    """Every candidate of plan runs no faster than the depth bound at every number of
    layers near its time (the theorem itself, each ``L``), and than plan's bound."""
    bound = depth_bound(topo, collective, overhead=overhead, default_latency=latency)
    assume(bound is not None)
    sim = SimOptions(overhead, slice_bytes, latency)
    runs = list(_runs(topo, collective, size, sim, store_and_forward))
    assume(runs)
    fastest = min(time for _, time in runs)
    top = min(24, math.floor(Fraction(fastest) / bound.quantum) + 2)
    for layers in range(1, top + 1):
        lower = float(bound.at_layers(size, layers))
        assert fastest >= lower * (1 - 1e-9), (layers, fastest, lower)
    lower = float(
        size_bound(topo, collective, overhead=overhead, default_latency=latency).lower_us(size)
    )
    assert fastest >= lower * (1 - 1e-9)
