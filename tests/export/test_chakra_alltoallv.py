"""Chakra traces of all-to-allv schedules, judged by the independent ET checker."""

from __future__ import annotations

import pytest

from optcoll import load_topology
from optcoll.core.moe import MoeSpec, moe_demand
from optcoll.exceptions import ExportError
from optcoll.export.chakra_alltoallv import chakra_demand_traces
from optcoll.schedules.alltoallv import demand_schedule
from optcoll.verify.chakra import verify_traces


@pytest.mark.parametrize("method", ["optimal", "spray", "hierarchical", "direct"])
def test_traces_match_run_without_deadlock_and_carry_the_bytes(method):
    topo = load_topology("dgx-h100:2")
    spec = MoeSpec(tokens=32, hidden=16, dtype_bytes=2, experts=16, top_k=2, zipf=1.0)
    demand = moe_demand(spec, topo.compute_nodes)
    schedule = demand_schedule(topo, demand, method)
    files = chakra_demand_traces(topo.compute_nodes, schedule.routes)
    report = verify_traces([(f"t.{r}.et", data) for r, data in enumerate(files)])
    assert report.findings == [] and report.executed
    compute = set(topo.compute_nodes)
    expected = sum(
        p.chunks * (sum(1 for v in p.path if v in compute) - 1)
        for r in schedule.routes
        for p in r.paths
    )
    assert report.bytes_sent == expected and expected >= demand.total_bytes


def test_bad_routes_are_refused():
    from optcoll.core.schedule import Route, RoutePath

    with pytest.raises(ExportError, match="not a pair"):
        chakra_demand_traces(("a", "b"), [Route("a", "a", (RoutePath(1, ("a",)),))])
    with pytest.raises(ExportError, match="must run from a to b"):
        chakra_demand_traces(("a", "b"), [Route("a", "b", (RoutePath(1, ("b", "a")),))])
