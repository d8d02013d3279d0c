"""Re-planning (optcoll.schedules.replan): verified schedules with exact, valid gaps."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll import load_topology
from optcoll.bounds.demand import demand_cut_bound, demand_optimum
from optcoll.core.moe import MoeSpec, moe_demand
from optcoll.schedules.replan import replan, replan_basis
from optcoll.verify.demand import verify_demand_routes

SPEC = {"tokens": 96, "hidden": 64, "dtype_bytes": 2, "experts": 32, "top_k": 4, "zipf": 1.2}


@pytest.fixture(scope="module")
def warm():
    topo = load_topology("dgx-h100:2")
    first = demand_optimum(topo, moe_demand(MoeSpec(**SPEC), topo.compute_nodes))
    return topo, replan_basis(topo, first)


@pytest.mark.parametrize("step", [1, 2])
def test_replan_gap_is_certified_by_the_exact_optimum(warm, step):
    topo, basis = warm
    demand = moe_demand(MoeSpec(**SPEC, step=step), topo.compute_nodes)
    plan = replan(basis, demand)
    exact = demand_optimum(topo, demand).time_factor
    assert plan.lower_bound <= exact <= plan.schedule.time_factor
    assert plan.gap == plan.schedule.time_factor / plan.lower_bound >= 1
    check = verify_demand_routes(topo, demand, plan.schedule.routes)
    assert check.valid and check.time_factor == plan.schedule.time_factor


def test_cold_start_needs_no_optimum(warm):
    topo, _ = warm
    demand = moe_demand(MoeSpec(**SPEC, step=3), topo.compute_nodes)
    plan = replan(replan_basis(topo), demand)
    exact = demand_optimum(topo, demand).time_factor
    assert plan.bound == "cut" and plan.lower_bound <= exact <= plan.schedule.time_factor
    # here the spray meets the cut bound: optimal, proved without any LP
    assert plan.schedule.method == "replan (spray)" and plan.gap == 1


def test_fast_cut_bound_matches_the_cuts_it_names():
    topo = load_topology("dgx-h100:2")  # 42 nodes: singles and boxes, not every set
    demand = moe_demand(MoeSpec(**SPEC, step=4), topo.compute_nodes)
    cut = demand_cut_bound(topo, demand)
    pairs = demand.pairs()
    crossing = sum(b for (s, d), b in pairs.items() if s in cut.side and d not in cut.side)
    assert not cut.exhaustive and cut.ratio == crossing / topo.cut_bandwidth(cut.side)
    everything = frozenset(topo.node_ids)
    boxes = [
        frozenset(v for v in topo.node_ids if topo.node[v].group == g) for g in ("box0", "box1")
    ]
    sides = [frozenset({v}) for v in topo.compute_nodes] + boxes
    best = Fraction(0)
    for side in sides + [everything - s for s in sides]:
        moved = sum(b for (s, d), b in pairs.items() if s in side and d not in side)
        if moved:
            best = max(best, moved / topo.cut_bandwidth(side))
    assert cut.ratio == best
