"""The multi-commodity layer and the all-to-all LP: exact optima against an independent LP,
certificates re-checked, the cut bound beside t*."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse
from conftest import random_topologies
from hypothesis import HealthCheck, given, settings

from formulations.multicommodity import Commodity, build_multicommodity
from optcoll import load_topology
from optcoll.bounds.multicommodity import length_bound, routing_time, solve_multicommodity
from optcoll.cli import main
from optcoll.core.topology import Topology
from optcoll.exceptions import MethodError
from optcoll.lp.exact import check_optimality
from optcoll.schedules.alltoall import (
    alltoall_bound,
    alltoall_cut_bound,
    alltoall_optimum,
    pair_demand,
)


def pair_lp(topology: Topology) -> float:
    """t* by an independent model: one commodity per ordered pair, built with scipy, solved
    by scipy's own HiGHS interface (no code shared with formulations/)."""
    arcs = list(topology.capacity)
    nodes = list(topology.node_ids)
    pairs = [(s, d) for s in topology.compute_nodes for d in topology.compute_nodes if s != d]
    n_arcs, n_nodes = len(arcs), len(nodes)
    n_vars = len(pairs) * n_arcs + 1
    rows, cols, vals, rhs = [], [], [], []
    for p, (s, d) in enumerate(pairs):
        for a, (u, v) in enumerate(arcs):
            col = p * n_arcs + a
            rows += [p * n_nodes + nodes.index(u), p * n_nodes + nodes.index(v)]
            cols += [col, col]
            vals += [1.0, -1.0]
        for u in nodes:
            rhs.append(1.0 if u == s else -1.0 if u == d else 0.0)
    a_eq = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(len(pairs) * n_nodes, n_vars))
    rows, cols, vals = [], [], []
    for a, arc in enumerate(arcs):
        for p in range(len(pairs)):
            rows.append(a)
            cols.append(p * n_arcs + a)
            vals.append(1.0)
        rows.append(a)
        cols.append(n_vars - 1)
        vals.append(-float(topology.capacity[arc]))
    a_ub = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(n_arcs, n_vars))
    cost = np.zeros(n_vars)
    cost[-1] = 1.0
    result = scipy.optimize.linprog(
        cost, A_ub=a_ub, b_ub=np.zeros(n_arcs), A_eq=a_eq, b_eq=np.array(rhs), method="highs"
    )
    assert result.status == 0, result.message
    return float(result.fun)


def brute_cut_bound(topology: Topology) -> Fraction:
    """max over every proper node set S of d(S) / B+(S), by plain enumeration."""
    nodes = topology.node_ids
    best = Fraction(0)
    for mask in range(1, 2 ** len(nodes) - 1):
        side = {v for i, v in enumerate(nodes) if mask >> i & 1}
        demand = pair_demand(topology, side)
        if demand:
            best = max(best, demand / topology.cut_bandwidth(side))
    return best


def check_routing(topology: Topology, routing: dict, t: Fraction) -> None:
    """Exact conservation of every source's flow and loads within t * bandwidth."""
    compute = set(topology.compute_nodes)
    n = len(compute)
    total: dict = {}
    for source, flow in routing.items():
        net = dict.fromkeys(topology.node_ids, Fraction(0))
        for (u, v), x in flow.items():
            assert x > 0
            net[u] += x
            net[v] -= x
            total[(u, v)] = total.get((u, v), 0) + x
        for u, value in net.items():
            assert value == (n - 1 if u == source else -1 if u in compute else 0)
    assert max(x / topology.capacity[arc] for arc, x in total.items()) == t


@settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(random_topologies(bandwidths=(1, 2, 3, Fraction(5, 2), 25, Fraction(1, 3))))
def test_alltoall_exact_equals_independent_lp(topology: Topology) -> None:
    result = alltoall_optimum(topology)
    assert abs(float(result.time_factor) - pair_lp(topology)) <= 1e-7 * float(result.time_factor)
    assert result.certificate_bound == result.time_factor
    check_routing(topology, result.routing, result.time_factor)
    cut = brute_cut_bound(topology)
    assert cut <= result.time_factor
    if len(topology.node_ids) <= 14:
        assert alltoall_cut_bound(topology).ratio == cut


@pytest.mark.parametrize(
    "spec",
    [
        "dgx-a100:1",
        "dgx-a100:2",
        "mi250:1",
        "dgx-v100:1",
        "torus:3x3",
        "hypercube:3",
        "leaf-spine:leaves=2,hosts=3,spines=2,oversub=2",
        "random:n=6,switches=2,seed=3",
    ],
)
def test_builtin_alltoall_against_pair_lp(spec: str) -> None:
    topology = load_topology(spec)
    result = alltoall_optimum(topology)
    assert abs(float(result.time_factor) - pair_lp(topology)) <= 1e-7 * float(result.time_factor)
    assert result.certificate_bound == result.time_factor
    check_routing(topology, result.routing, result.time_factor)


def test_closed_forms() -> None:
    # One NVSwitch box: every GPU pushes 7 pieces through its 300 GB/s port.
    assert alltoall_optimum(load_topology("dgx-a100:1")).time_factor == Fraction(7, 300)
    # Two boxes: 64 pieces cross each way over 8 NICs of 25 GB/s.
    assert alltoall_optimum(load_topology("dgx-a100:2")).time_factor == Fraction(8, 25)
    # Unidirectional 4-ring: 1 + 2 + 3 hops per source, 4 sources, 4 links.
    assert alltoall_optimum(load_topology("ring:4,direction=uni,bw=1")).time_factor == 6


def test_flow_cut_gap_on_unidirectional_ring() -> None:
    bound = alltoall_bound(load_topology("ring:4,direction=uni,bw=1"))
    assert bound.cut_exhaustive
    assert (bound.time_factor, bound.cut_bound) == (6, 4)
    assert bound.flow_cut_gap == Fraction(3, 2)
    assert pair_demand(load_topology("ring:4,direction=uni,bw=1"), bound.cut) == 4


def test_length_bound_refutes_bad_lengths_and_is_checked_by_hand() -> None:
    caps = {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1}
    ks = [Commodity(u, {v: 1 for v in "abc" if v != u}) for u in "abc"]
    # Uniform lengths on a directed triangle: each source's pieces travel 1 + 2 hops.
    assert length_bound("abc", caps, ks, dict.fromkeys(caps, Fraction(1))) == 3
    # Lengths on one arc only: only pairs crossing it count.
    assert length_bound("abc", caps, ks, {("a", "b"): Fraction(1)}) == 3
    with pytest.raises(MethodError, match="zero on every arc"):
        length_bound("abc", caps, ks, {})
    assert routing_time(caps, [{("a", "b"): Fraction(3)}]) == 3


def test_multicast_commodity_copies_and_relays_forward() -> None:
    caps = {("s", "r"): 2, ("r", "a"): 1, ("r", "b"): 1, ("a", "s"): 1, ("b", "s"): 1}
    nodes = ["s", "r", "a", "b"]
    copy = solve_multicommodity(nodes, caps, [Commodity("s", {"a": 1, "b": 1}, copies=True)])
    # r cannot copy: 2 units enter it for 2 sinks; the out-links of r need time 1.
    assert copy.time == 1
    assert copy.loads[0][("s", "r")] == 2
    assert [sum(f.values()) for f in copy.flows[0]] == [2, 2]
    unicast = solve_multicommodity(nodes, caps, [Commodity("s", {"a": 1, "b": 1})])
    assert unicast.time == 1 and unicast.lengths_bound == 1
    caps[("s", "a")] = 1
    caps[("a", "b")] = 1
    members_relay = Commodity("s", {"a": 1, "b": 1}, copies=True, relays=frozenset({"a"}))
    assert solve_multicommodity(nodes, caps, [members_relay]).time == 1
    # Both forms give the same exact optimum.
    both = [Commodity("s", {"a": 1, "b": 1}, copies=True), Commodity("a", {"b": 2})]
    assert (
        solve_multicommodity(nodes, caps, both).time
        == solve_multicommodity(nodes, caps, both, form="rate").time
    )


def test_duality_check_catches_a_wrong_pair() -> None:
    caps = {("a", "b"): 1, ("b", "a"): 1}
    model = build_multicommodity(["a", "b"], caps, [Commodity("a", {"b": 1})])
    primal = {"t": Fraction(1), "f_0_0": Fraction(1)}
    dual = {"node_0_0": Fraction(1), "node_0_1": Fraction(0), "cap_0": Fraction(-1)}
    assert check_optimality(model, primal, dual) is None
    assert "duality gap" in check_optimality(model, {**primal, "t": Fraction(2)}, dual)
    assert "violated" in check_optimality(model, {**primal, "t": Fraction(1, 2)}, dual)
    assert "wrong sign" in check_optimality(model, primal, {**dual, "cap_0": Fraction(1)})


def test_bad_commodity_data_is_named() -> None:
    caps = {("a", "b"): 1}
    with pytest.raises(MethodError, match="sink 'z'"):
        build_multicommodity(["a", "b"], caps, [Commodity("a", {"z": 1})])
    with pytest.raises(MethodError, match="positive integers"):
        build_multicommodity(["a", "b"], {("a", "b"): 0}, [Commodity("a", {"b": 1})])
    with pytest.raises(MethodError, match="unknown multi-commodity LP form"):
        build_multicommodity(["a", "b"], caps, [Commodity("a", {"b": 1})], form="dual")


def test_cli_bound_alltoall_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bound", "ring:4,direction=uni,bw=1", "--collective", "alltoall", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["time_factor"] == "6" and data["cut_bound"] == "4"
    assert data["flow_cut_gap"] == "3/2" and data["certificate_bound"] == "6"
    assert main(["bound", "dgx-a100:2", "--collective", "alltoall"]) == 0
    out = capsys.readouterr().out
    assert "8/25" in out and "flow-cut gap" in out


@pytest.mark.parametrize(
    ("nodes", "links", "message"),
    [
        ([{"id": "a"}, {"id": "s", "type": "switch"}], [["a", "s"]], "1 compute node"),
        ([{"id": "a"}, {"id": "b"}, {"id": "c"}], [["a", "b"], ["b", "c"]], "cannot reach"),
    ],
)
def test_cli_bad_topology_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nodes: list, links: list, message: str
) -> None:
    data = {
        "nodes": nodes,
        "links": [{"src": u, "dst": v, "bandwidth": 10, "bidirectional": False} for u, v in links],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    assert main(["bound", str(path), "--collective", "alltoall"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
