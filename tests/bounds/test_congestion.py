"""Congestion LP and multicast LP against independent methods, with exact certificates."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import random_topologies
from hypothesis import HealthCheck, given, settings

from formulations.congestion import FORMS, build_congestion
from formulations.multicast import build_multicast
from optcoll import load_topology
from optcoll.bounds.congestion import congestion_bound
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.bounds.multicast import multicast_bound
from optcoll.core.rational import integer_scaling, reconstruct_cut_ratio
from optcoll.core.topology import Topology
from optcoll.exceptions import MethodError, ReconstructionError, TopologyError

BANDWIDTHS = (1, 2, 3, Fraction(5, 2), 25, Fraction(1, 3))


def cut_ratio_of(topology: Topology, cut: frozenset[str]) -> Fraction:
    """|S ∩ Vc| / B+(S), recomputed from the topology."""
    inside = sum(1 for v in cut if topology.is_compute(v))
    assert 0 < inside < topology.num_compute
    return Fraction(inside) / topology.cut_bandwidth(cut)


@pytest.mark.parametrize("spec", ["dgx-a100:1", "mi250:1", "dgx-a100:2"])
@pytest.mark.parametrize("form", FORMS)
def test_congestion_matches_combinatorial_with_certificate(spec: str, form: str) -> None:
    topo = load_topology(spec)
    found = congestion_bound(topo, form=form)
    ratio, cut = found.cut_ratio, found.cut
    assert ratio == optimal_cut_ratio(topo).ratio
    assert cut_ratio_of(topo, cut) == ratio


@pytest.mark.parametrize("spec", ["dgx-a100:1", "mi250:1"])
def test_congestion_matches_brute_force(spec: str) -> None:
    topo = load_topology(spec)
    assert optimal_cut_ratio(topo, "lp").ratio == optimal_cut_ratio(topo, "brute-force").ratio


def test_reference_optima() -> None:
    # Published optima (ForestColl reference implementation, confirmed by LP).
    assert optimal_cut_ratio(load_topology("dgx-a100:2"), "lp").ratio == Fraction(3, 65)
    assert optimal_cut_ratio(load_topology("mi250:1"), "lp").ratio == Fraction(7, 150)
    assert optimal_cut_ratio(load_topology("mi250:2"), "lp").ratio == Fraction(15, 166)


def test_bound_dispatches_to_lp() -> None:
    topo = load_topology("mi250:1")
    result = optimal_cut_ratio(topo, "lp")
    assert result.ratio == Fraction(7, 150) and result.k == 3


def test_congestion_report_sizes() -> None:
    topo = load_topology("dgx-a100:1")
    result = congestion_bound(topo, form="time")
    n, arcs, nodes = topo.num_compute, len(topo.capacity), len(topo.node_ids)
    assert result.report.num_variables == n * arcs + 1
    assert result.report.num_constraints == n * (nodes + arcs)
    assert result.report.build_seconds is not None and result.report.build_seconds >= 0
    assert result.unit == 300 and result.scaled_ratio == pytest.approx(7)


@pytest.mark.parametrize("spec", ["dgx-a100:1", "mi250:1"])
def test_multicast_matches_congestion(spec: str) -> None:
    topo = load_topology(spec)
    result = multicast_bound(topo)
    assert result.cut_ratio == optimal_cut_ratio(topo, "lp").ratio
    assert result.scaled_ratio == pytest.approx(float(result.cut_ratio * result.unit))
    # Each root's exact capacity vector fits the links jointly, exactly.
    caps, _ = topo.integer_capacities()
    for arc, c in caps.items():
        used = sum(y.get(arc, 0) for y in result.root_capacity.values())
        assert used <= result.cut_ratio * result.unit * c
    # A root must send at least one unit out of itself.
    for root, y in result.root_capacity.items():
        leaving = sum(v for (u, _), v in y.items() if u == root)
        assert leaving >= 1


@pytest.mark.slow
def test_multicast_matches_congestion_with_switches() -> None:
    topo = load_topology("dgx-a100:2")
    assert multicast_bound(topo).cut_ratio == Fraction(3, 65)


@settings(
    derandomize=True,
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(random_topologies(bandwidths=BANDWIDTHS))
def test_random_topologies_all_methods_agree(topo: Topology) -> None:
    # the multicast LP is the ground truth; brute force enumerates the cuts of the
    # usable capacity (a switch short of input forwards only what it receives)
    expected = multicast_bound(topo).cut_ratio
    bound = optimal_cut_ratio(topo)
    assert bound.ratio == expected
    assert optimal_cut_ratio(bound.usable, "brute-force").ratio == expected
    for form in FORMS:
        result = congestion_bound(topo, form=form)
        assert result.cut_ratio == expected
        assert cut_ratio_of(topo.with_capacity(result.usable), result.cut) == expected


def test_build_has_no_side_effects() -> None:
    topo = load_topology("dgx-a100:1")
    model = build_congestion(topo)
    assert all(v.varValue is None for v in model.variables())
    assert model.status == 0  # pulp's "not solved"


def test_unknown_form_is_rejected() -> None:
    with pytest.raises(MethodError, match="'bogus'"):
        build_congestion(load_topology("dgx-a100:1"), form="bogus")


def test_multicast_refuses_large_topologies() -> None:
    with pytest.raises(MethodError, match="congestion LP"):
        build_multicast(load_topology("mi250:4"))


def test_reconstruction() -> None:
    assert reconstruct_cut_ratio(15 / 13, 16) == Fraction(15, 13)
    assert reconstruct_cut_ratio(15 / 83 * (1 + 1e-9), 32) == Fraction(15, 83)
    with pytest.raises(ReconstructionError, match="not within tolerance"):
        reconstruct_cut_ratio(0.123456789, 4)
    with pytest.raises(ReconstructionError, match="positive finite"):
        reconstruct_cut_ratio(float("nan"), 4)


def test_integer_scaling_names_bad_arc() -> None:
    assert integer_scaling({("a", "b"): Fraction(1, 3), ("b", "a"): 2}) == (
        {("a", "b"): 1, ("b", "a"): 6},
        Fraction(1, 3),
    )
    with pytest.raises(TopologyError, match=r"\('b', 'a'\)"):
        integer_scaling({("a", "b"): 1, ("b", "a"): 0})


def test_deterministic_cut() -> None:
    topo = load_topology("dgx-a100:2")
    assert optimal_cut_ratio(topo, "lp") == optimal_cut_ratio(topo, "lp")
