"""NVLS (``multimem``) switches against SHARP ones: the model, the exact optimum, the checker.

A multimem switch sums what a GPU loads (its own data included, the sum back to it alone)
and copies what a GPU stores (back to it too). On a star of ``N`` GPUs with links of
``B`` each way, every tree pair of an aggregation schedule crosses the links at least
``2 min(2N - 2, N + 1)`` times (``docs/in_network.md``), so the optimum among
aggregation-tree schedules is ``min(2N - 2, N + 1) / (N B)``: ``(N + 1) / (N B)`` from
``N = 3`` on, where a SHARP switch gives the cut bound ``1 / B``.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.bounds.in_network import aggregation_bound, reduction_cut
from optcoll.core.aggregation import AggregationSchedule, AggregationTree
from optcoll.core.schedule import TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import OptCollError
from optcoll.schedules.aggregation import aggregation_schedule
from optcoll.schedules.baselines import nvls_schedule
from optcoll.topologies import build
from optcoll.verify.aggregation import verify_aggregation_schedule


def _star(n: int, bw: int, *, multimem: bool, trays: int = 1) -> Topology:
    """``n`` GPUs on ``trays`` switches that reduce and multicast, ``bw`` each way per link."""
    flags = {"reduce": True, "multicast": True, **({"multimem": True} if multimem else {})}
    nodes = [{"id": f"g{i}", "type": "compute"} for i in range(n)]
    nodes += [{"id": f"w{t}", "type": "switch", **flags} for t in range(trays)]
    links = [
        {"src": f"g{i}", "dst": f"w{t}", "bandwidth": bw, "bidirectional": True}
        for i in range(n)
        for t in range(trays)
    ]
    return Topology.from_dict({"name": f"star{n}x{trays}", "nodes": nodes, "links": links})


@pytest.mark.parametrize(("n", "bw"), [(2, 100), (3, 100), (4, 100), (5, 30), (8, 450)])
def test_multimem_star_optimum_is_exact(n, bw):
    bound = aggregation_bound(_star(n, bw, multimem=True))
    assert bound.proved
    assert bound.cut_bound == Fraction(1, bw)
    assert bound.optimum == Fraction(min(2 * n - 2, n + 1), n * bw)
    sharp = aggregation_bound(_star(n, bw, multimem=False))
    assert sharp.proved and sharp.optimum == Fraction(1, bw)  # SHARP: unchanged, the cut


def test_multimem_optimum_is_each_gpu_loading_its_share():
    topology = _star(4, 100, multimem=True)
    schedule = aggregation_schedule(topology)
    assert sorted(t.apex for t in schedule.trees) == ["g0", "g1", "g2", "g3"]
    verdict = verify_aggregation_schedule(
        topology, schedule, optimum=Fraction(1, 80), require_optimal=True
    )
    assert verdict.valid, verdict.reason
    # every GPU link carries 5 of the 4 chunks each way: its loads and the others'
    assert set(verdict.link_loads.values()) == {5}
    # the switch sums 4 inputs into 1 (3 merged) and copies 1 into 4, per chunk
    assert verdict.switch_work["w0"] == {"received": 20, "reduced": 12, "copied": 12, "sent": 20}


def test_dgx_h100_nvls_is_nine_eighths_of_the_cut_and_two_boxes_reach_it():
    one = aggregation_bound(build("dgx-h100:1,nvls=1"))
    assert (one.cut_bound, one.optimum, one.proved) == (Fraction(1, 450), Fraction(1, 400), True)
    two = aggregation_bound(build("dgx-h100:2,nvls=1"))  # the rails' 1/400 is binding
    assert (two.cut_bound, two.optimum, two.proved) == (Fraction(1, 400), Fraction(1, 400), True)
    # proved by the cut's prices (1/400 on each arc leaving the cut), not by a long generation
    assert set(two.prices.values()) == {1 / reduction_cut(build("dgx-h100:2,nvls=1")).bandwidth}


def test_nvls_baseline_spreads_over_every_switch_of_the_domain():
    topology = _star(4, 50, multimem=True, trays=2)  # 100 GB/s a GPU over two switches
    schedule = nvls_schedule(topology)
    assert schedule is not None and schedule.k == 8 and len(schedule.trees) == 8
    assert {e.dst for t in schedule.trees for e in t.reduce_edges if e.src == "g0"} == {"w0", "w1"}
    verdict = verify_aggregation_schedule(topology, schedule)
    assert verdict.valid and verdict.time_factor == schedule.time_factor == Fraction(1, 80)
    assert aggregation_bound(topology).optimum == Fraction(1, 80)  # the LP agrees
    nvl72 = nvls_schedule(build("nvl72:racks=1,nvls=1"))
    assert nvl72 is not None and len({t.reduce_edges[0].dst for t in nvl72.trees}) == 9
    assert nvl72.time_factor == Fraction(73, 72) / 900  # 73/72 M on each GPU's 900 GB/s


def test_checker_refuses_a_multimem_switch_as_apex():
    topology = _star(3, 100, multimem=True)
    up = tuple(TreeEdge(g, "w0", (g, "w0")) for g in topology.compute_nodes)
    down = tuple(TreeEdge("w0", g, ("w0", g)) for g in topology.compute_nodes)
    tree = AggregationTree("w0", 1, up, down)  # SHARP's form: valid on a SHARP switch only
    schedule = AggregationSchedule(topology.name, topology.compute_nodes, 1, (tree,))
    assert "multimem (NVLS) switch" in str(verify_aggregation_schedule(topology, schedule).reason)
    sharp = _star(3, 100, multimem=False)
    assert verify_aggregation_schedule(sharp, schedule).time_factor == Fraction(1, 100)


def test_multimem_needs_reduce_and_multicast_and_enters_the_hash():
    data = _star(3, 100, multimem=True).to_dict()
    assert data["nodes"][-1]["multimem"] is True
    assert Topology.from_dict(data) == _star(3, 100, multimem=True)
    assert _star(3, 100, multimem=True).content_hash != _star(3, 100, multimem=False).content_hash
    data["nodes"][-1]["multicast"] = False
    with pytest.raises(OptCollError, match="multimem"):
        Topology.from_dict(data)
