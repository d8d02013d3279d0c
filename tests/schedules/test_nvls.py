"""NCCL's NVLS and NVLS-tree as aggregation trees: checked, exact, in compare and plan."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.bounds.in_network import reduction_cut
from optcoll.schedules.baselines import nvls_schedule
from optcoll.sim.size_plan import candidates
from optcoll.studies.compare import compare_methods
from optcoll.topologies import build
from optcoll.verify.aggregation import verify_aggregation_schedule


@pytest.mark.parametrize(
    ("spec", "method", "factor"),
    [
        # multimem: the issuer's own 1/8 goes up and down once more, 9/8 M on 450 GB/s
        ("dgx-h100:1,nvls=1", "NVLS", Fraction(1, 400)),
        ("star:8,sharp=1", "NVLS", Fraction(1, 100)),  # SHARP: M up and down a 100 GB/s link
        ("dgx-h100:2,nvls=1", "NVLS-tree", Fraction(1, 400)),  # 8 rails x 50 GB/s
        ("dgx-h100:3,nvls=1", "NVLS-tree", Fraction(1, 200)),  # middle heads send twice
    ],
)
def test_nvls_is_a_valid_aggregation_schedule_of_the_stated_time(spec, method, factor):
    topo = build(spec)
    schedule = nvls_schedule(topo)
    assert schedule is not None and schedule.stats["method"] == method
    verdict = verify_aggregation_schedule(topo, schedule)
    assert verdict.valid, verdict.reason
    assert verdict.time_factor == schedule.time_factor == factor
    assert factor >= reduction_cut(topo).time_factor  # never below the cut bound


def test_no_nvls_without_reducing_switches():
    assert nvls_schedule(build("dgx-h100:2")) is None
    assert nvls_schedule(build("torus:4x4")) is None


def test_compare_and_plan_list_nvls_tree_where_switches_reduce():
    topo = build("dgx-h100:2,nvls=1")
    costs = {c.method: c for c in compare_methods(topo, "allreduce")}
    assert costs["NVLS-tree"].time_factor == costs["in-network"].time_factor  # M / 400 here
    assert "NVLS-tree" in [c.method for c in candidates(topo, "allreduce")]
    assert "NVLS-tree" not in [c.method for c in compare_methods(build("dgx-h100:2"), "allreduce")]
