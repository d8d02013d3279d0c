"""All-to-allv schedules (optcoll.schedules.alltoallv): the optimum attained, baselines verified."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll import load_topology
from optcoll.bounds.demand import demand_optimum
from optcoll.core.demand import demand_matrix, uniform_demand
from optcoll.core.moe import MoeSpec, moe_demand
from optcoll.exceptions import MethodError
from optcoll.schedules.alltoallv import demand_schedule, proved_optimum
from optcoll.verify.demand import verify_demand_routes


@pytest.fixture(scope="module")
def moe_h100():
    topo = load_topology("dgx-h100:2")
    spec = MoeSpec(tokens=128, hidden=1024, dtype_bytes=2, experts=32, top_k=4, zipf=1.3, seed=3)
    demand = moe_demand(spec, topo.compute_nodes)
    return topo, demand, demand_optimum(topo, demand)


def test_optimal_schedule_attains_the_optimum_within_its_rounding(moe_h100):
    topo, demand, optimum = moe_h100
    schedule = demand_schedule(topo, demand, optimum=optimum)
    check = verify_demand_routes(topo, demand, schedule.routes, optimum.time_factor)
    assert check.valid and check.time_factor == schedule.time_factor
    # rounding moves each path by < 1 byte: at most one byte per pair on a link
    slack = max(Fraction(len(demand.pairs()), 1) / c for c in topo.capacity.values())
    assert optimum.time_factor <= schedule.time_factor <= optimum.time_factor + slack


def test_baselines_are_verified_and_never_beat_the_optimum(moe_h100):
    topo, demand, optimum = moe_h100
    times = {}
    for method in ("direct", "hierarchical"):
        schedule = demand_schedule(topo, demand, method, optimum=optimum)
        assert (
            verify_demand_routes(topo, demand, schedule.routes).time_factor == schedule.time_factor
        )
        assert all(len(r.paths) == 1 for r in schedule.routes)
        times[method] = schedule.time_factor
    assert min(times.values()) >= optimum.time_factor
    # the hierarchical route crosses the network on the source's rail, then NVLink
    hier = demand_schedule(topo, demand, "hierarchical", optimum=optimum)
    route = next(r for r in hier.routes if (r.src, r.dst) == ("b0.gpu2", "b1.gpu5"))
    assert route.paths[0].path == (
        "b0.gpu2",
        "b0.nic2",
        "rail2",
        "b1.nic2",
        "b1.gpu2",
        "b1.nvswitch",
        "b1.gpu5",
    )
    direct = demand_schedule(topo, demand, "direct", optimum=optimum)
    route = next(r for r in direct.routes if (r.src, r.dst) == ("b0.gpu2", "b1.gpu5"))
    assert route.paths[0].path == (
        "b0.gpu2",
        "b0.nvswitch",
        "b0.gpu5",
        "b0.nic5",
        "rail5",
        "b1.nic5",
        "b1.gpu5",
    )


def test_exact_schedule_when_pieces_divide():
    topo = load_topology("ring:4,direction=uni,bw=1")
    demand = uniform_demand(topo.compute_nodes, 12)
    schedule = demand_schedule(topo, demand)
    assert schedule.time_factor == schedule.optimum == 12 * 6


def test_verifier_rejects_tampering(moe_h100):
    topo, demand, optimum = moe_h100
    routes = list(demand_schedule(topo, demand, "direct").routes)
    first = routes[0]
    from optcoll.core.schedule import Route, RoutePath

    short = Route(
        first.src, first.dst, (RoutePath(first.paths[0].chunks - 1, first.paths[0].path),)
    )
    assert "the demand is" in verify_demand_routes(topo, demand, [short, *routes[1:]]).reason
    assert "no route delivers" in verify_demand_routes(topo, demand, routes[1:]).reason
    assert "routed twice" in verify_demand_routes(topo, demand, [first, *routes]).reason
    jump = Route(first.src, first.dst, (RoutePath(first.paths[0].chunks, (first.src, first.dst)),))
    assert "there is no link" in verify_demand_routes(topo, demand, [jump, *routes[1:]]).reason
    # a schedule claimed faster than the proved optimum is refused
    ring = load_topology("ring:3,direction=uni,bw=1")
    d = demand_matrix([[0, 1, 0], [0, 0, 0], [0, 0, 0]], ring.compute_nodes)
    fine = [Route("n0", "n1", (RoutePath(1, ("n0", "n1")),))]
    assert verify_demand_routes(ring, d, fine).valid
    assert not verify_demand_routes(ring, d, fine, optimum=Fraction(2)).valid


def test_spray_attains_the_cut_bound_on_a_skewed_moe(moe_h100):
    topo, demand, optimum = moe_h100
    spray = demand_schedule(topo, demand, "spray", optimum=optimum)
    # the cut bound proves the spray optimal without the LP: it equals the LP's optimum
    assert spray.time_factor == optimum.cut_bound == optimum.time_factor
    route = next(r for r in spray.routes if (r.src, r.dst) == ("b0.gpu2", "b1.gpu5"))
    rails = {node for p in route.paths for node in p.path if node.startswith("rail")}
    assert len(route.paths) == 8 and rails == {f"rail{j}" for j in range(8)}
    assert sum(p.chunks for p in route.paths) == demand.pairs()[("b0.gpu2", "b1.gpu5")]


def test_proved_optimum_by_a_cut_equals_the_lp(moe_h100):
    topo, demand, optimum = moe_h100
    found = proved_optimum(topo, demand)
    assert found.method == "cut" and found.report is None
    assert found.time_factor == found.certificate_bound == optimum.time_factor
    # the cut's length function proves it from scratch
    from formulations.multicommodity import Commodity
    from optcoll.bounds.multicommodity import length_bound

    rows: dict = {}
    for (s, d), b in demand.pairs().items():
        rows.setdefault(s, {})[d] = b
    ks = [Commodity(s, sinks) for s, sinks in rows.items()]
    assert length_bound(topo.node_ids, topo.capacity, ks, found.lengths) == found.time_factor
    assert proved_optimum(topo, demand, "lp").time_factor == optimum.time_factor


def test_proved_optimum_falls_back_to_column_generation_where_no_cut_is_met():
    topo = load_topology("ring:4,direction=uni,bw=1")  # flow-cut gap 3/2 for the uniform demand
    demand = uniform_demand(topo.compute_nodes, 1)
    found = proved_optimum(topo, demand)
    assert found.method == "columns" and found.time_factor == 6 == found.certificate_bound
    assert proved_optimum(topo, demand, "lp").time_factor == 6
    with pytest.raises(MethodError, match="no cut proves it optimal"):
        proved_optimum(topo, demand, "cut")
