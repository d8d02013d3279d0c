"""The exact optimal cut ratio: reference optima, brute-force cross-checks, certificates, CLI."""

from __future__ import annotations

import json
from fractions import Fraction
from itertools import combinations

import pytest
from conftest import random_topologies
from hypothesis import given, settings

from benchmarks._common import load_reference
from optcoll.bounds.cut_ratio import METHODS, CutRatio, optimal_cut_ratio
from optcoll.cli import main
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import MethodError
from optcoll.io import load_topology


def _reference_optima() -> list[dict]:
    return load_reference()["optima"]


def _spec(entry: dict) -> str:
    return f"{entry['topology']}:{entry['boxes']}"


def _marks(entry: dict) -> list:
    return [pytest.mark.slow] if entry["num_compute"] >= 256 else []


def check_certificate(topology: Topology, result: CutRatio) -> None:
    """The bottleneck cut is a valid cut whose ratio, recomputed here, is r*.

    Its bandwidth is counted in the usable capacity: the topology's own, or
    (a switch short of input) a part of it where no switch sends more than it receives.
    """
    cut = result.bottleneck_cut
    compute = [v for v in cut if topology.is_compute(v)]
    assert 0 < len(compute) < topology.num_compute
    usable = result.usable.capacity
    assert all(c <= topology.capacity[arc] for arc, c in usable.items())
    for w in topology.switch_nodes:
        sent = sum((c for (u, _), c in usable.items() if u == w), Fraction(0))
        received = sum((c for (_, v), c in usable.items() if v == w), Fraction(0))
        assert sent <= received or usable == topology.capacity
    bandwidth = sum((c for (u, v), c in usable.items() if u in cut and v not in cut), Fraction(0))
    assert bandwidth == result.cut_bandwidth
    assert len(compute) == result.cut_compute
    assert Fraction(len(compute)) / bandwidth == result.ratio


# --- reference optima ----------------------------------------------------------------


def test_reference_file_is_present():
    assert len(_reference_optima()) >= 12


@pytest.mark.parametrize(
    "entry",
    [pytest.param(e, id=_spec(e), marks=_marks(e)) for e in _reference_optima()],
)
def test_reference_optimum_reproduced(entry):
    topology = load_topology(_spec(entry))
    assert topology.num_compute == entry["num_compute"]
    result = optimal_cut_ratio(topology)
    data = result.to_dict()
    assert data["cut_ratio"] == entry["cut_ratio"]
    assert round(result.algbw, 3) == pytest.approx(entry["algbw"], abs=1e-3)
    if "k" in entry:
        assert result.k == entry["k"]
        assert result.U == entry["k"] * Fraction(entry["cut_ratio"])
    check_certificate(topology, result)


def test_forestcoll_pairs_from_the_issue():
    dgx = optimal_cut_ratio(load_topology("dgx-a100:2"))
    assert (dgx.ratio, dgx.k, dgx.U) == (Fraction(3, 65), 13, Fraction(3, 5))
    # in integer capacity units (25 GB/s) r* = 15/13, ForestColl's U = 15 over k = 13
    assert dgx.ratio * 25 == Fraction(15, 13)
    mi = optimal_cut_ratio(load_topology("mi250:2"))
    assert (mi.ratio, mi.k) == (Fraction(15, 166), 83)


# --- random topologies: combinatorial == brute force ---------------------------------


@settings(derandomize=True, max_examples=200, deadline=None)
@given(random_topologies())
def test_combinatorial_equals_brute_force(topology):
    # with a switch short of input, brute force checks the cut ratio of the usable
    # capacity (test_forwardable checks that capacity against the multicast LP)
    fast = optimal_cut_ratio(topology)
    slow = optimal_cut_ratio(fast.usable, "brute-force")
    assert fast.ratio == slow.ratio
    assert fast.k == slow.k
    check_certificate(topology, fast)
    check_certificate(fast.usable, slow)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(random_topologies(max_compute=4, max_switches=2, bandwidths=[1, 10**12 + 1, Fraction(1, 7)]))
def test_huge_capacity_ratios_use_exact_arithmetic(topology):
    # integer capacities beyond int32: the max-flow falls back to Python ints
    fast = optimal_cut_ratio(topology)
    assert fast.ratio == optimal_cut_ratio(fast.usable, "brute-force").ratio


@settings(derandomize=True, max_examples=30, deadline=None)
@given(random_topologies(max_compute=4, max_switches=2))
def test_no_cut_beats_the_optimum(topology):
    r_star = optimal_cut_ratio(topology).ratio
    ids = topology.node_ids
    compute = set(topology.compute_nodes)
    for size in range(1, len(ids)):
        for side in combinations(ids, size):
            inside = len(compute.intersection(side))
            if 0 < inside < len(compute):
                assert Fraction(inside) / topology.cut_bandwidth(side) <= r_star


def test_parallel_links_add_up():
    nodes = [Node("a"), Node("b")]
    single = Topology("one", nodes, [Link("a", "b", 10, bidirectional=True)])
    double = Topology(
        "two", nodes, [Link("a", "b", 4, bidirectional=True), Link("a", "b", 6, bidirectional=True)]
    )
    assert optimal_cut_ratio(single).ratio == optimal_cut_ratio(double).ratio == Fraction(1, 10)


def test_asymmetric_ring_is_limited_by_its_slowest_link():
    # directed ring a -> b -> c -> a; the cut {a, b} leaves only through b -> c
    nodes = [Node("a"), Node("b"), Node("c")]
    links = [Link("a", "b", 30), Link("b", "c", 10), Link("c", "a", 20)]
    result = optimal_cut_ratio(Topology("ring", nodes, links))
    assert result.ratio == Fraction(2, 10)
    assert result.bottleneck_cut == frozenset({"a", "b"})


def _ring(n: int, bandwidth: int, bidirectional: bool) -> Topology:
    nodes = [Node(f"g{i}") for i in range(n)]
    links = [
        Link(f"g{i}", f"g{(i + 1) % n}", bandwidth, bidirectional=bidirectional) for i in range(n)
    ]
    return Topology(f"ring{n}", nodes, links)


@pytest.mark.parametrize("n", [3, 8, 33, 64])
def test_rings_beyond_brute_force(n):
    # all nodes but one, behind that node's in-links, is the bottleneck
    assert optimal_cut_ratio(_ring(n, 100, True)).ratio == Fraction(n - 1, 200)
    assert optimal_cut_ratio(_ring(n, 100, False)).ratio == Fraction(n - 1, 100)


@pytest.mark.parametrize("dimension", [3, 5, 6])
def test_hypercubes_beyond_brute_force(dimension):
    n = 2**dimension
    nodes = [Node(f"h{i}") for i in range(n)]
    links = [Link(f"h{i}", f"h{i ^ (1 << d)}", 25) for i in range(n) for d in range(dimension)]
    result = optimal_cut_ratio(Topology(f"cube{dimension}", nodes, links))
    assert result.ratio == Fraction(n - 1, 25 * dimension)
    check_certificate(result.topology, result)


# --- result object -------------------------------------------------------------------


def test_result_fields_and_words():
    result = optimal_cut_ratio(load_topology("dgx-a100:4"))
    assert result.ratio == Fraction(3, 25)
    assert result.algbw_exact == Fraction(32 * 25, 3)
    assert result.cut_compute == 24 and result.cut_bandwidth == 200
    assert (
        result.describe_cut() == "box1, box2, box3 plus ib0, ib1: 24 compute nodes behind 200 GB/s"
    )
    # 1 GB allgathered: each GPU's 1/32 GB crosses the cut at r* = 3/25 s per GB
    assert result.allgather_time(10**9) == Fraction(1, 32) * Fraction(3, 25)
    assert result.stats["max_flows"] >= 1


def test_methods_agree_on_a_small_builtin():
    topology = load_topology("dgx-a100:1")
    brute = optimal_cut_ratio(topology, "brute-force")
    assert brute.ratio == optimal_cut_ratio(topology).ratio == Fraction(7, 300)
    # several cuts attain r*; brute force returns the one with the smallest bit mask
    assert brute.describe_cut() == "every node except b0.gpu7: 7 compute nodes behind 300 GB/s"


def test_lp_method_agrees():
    topology = load_topology("mi250:1")
    result = optimal_cut_ratio(topology, "lp")
    assert result.ratio == Fraction(7, 150)
    check_certificate(topology, result)


def test_bad_methods_are_rejected():
    topology = load_topology("dgx-a100:2")
    with pytest.raises(MethodError, match="valid methods are combinatorial, lp, brute-force"):
        optimal_cut_ratio(topology, "simplex")
    with pytest.raises(MethodError, match="at most 16 nodes; topology 'dgx-a100:2' has 36"):
        optimal_cut_ratio(topology, "brute-force")
    assert METHODS == ("combinatorial", "lp", "brute-force")


# --- CLI -----------------------------------------------------------------------------


def test_cli_json(capsys):
    assert main(["bound", "mi250:2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["topology"] == "mi250:2"
    assert data["num_compute"] == 32
    assert data["cut_ratio"] == "15/166"
    assert data["U"] == "15/2" and data["k"] == 83
    assert data["algbw"] == pytest.approx(354.1333333)
    assert data["method"] == "combinatorial"
    assert data["seconds"] >= 0
    topology = load_topology("mi250:2")
    cut = set(data["bottleneck_cut"])
    assert data["cut_compute"] == len(cut & set(topology.compute_nodes))
    assert Fraction(data["cut_bandwidth"]) == topology.cut_bandwidth(cut)
    assert Fraction(data["cut_compute"]) / Fraction(data["cut_bandwidth"]) == Fraction(15, 166)


def test_cli_table_and_errors(capsys):
    assert main(["bound", "dgx-a100:2"]) == 0
    out = capsys.readouterr().out
    assert "3/65 per GB/s" in out and "k = 13 chunks per root" in out
    assert "15 compute nodes behind 325 GB/s" in out
    assert main(["bound", "dgx-a100:2", "--method", "brute-force"]) == 2
    assert "at most 16 nodes" in capsys.readouterr().err
    assert main(["bound", "dgx-a100:2", "--method", "simplex"]) == 2
    assert "valid methods are combinatorial, lp, brute-force" in capsys.readouterr().err


def test_results_are_deterministic():
    topology = load_topology("mi250:2")
    first, second = optimal_cut_ratio(topology).to_dict(), optimal_cut_ratio(topology).to_dict()
    first.pop("seconds"), second.pop("seconds")
    assert first == second
