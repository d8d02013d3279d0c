"""Switches with less bandwidth in than out: r* counts only what a switch can forward.

The ground truth is the multicast LP (one capacity vector per root, a switch
forwards at most what it receives; exact, proved by LP duality). The
combinatorial method (cutting planes over exact parametric max-flow), the
congestion LP with a forwardable capacity, the schedule of trees (verified on
the original topology) and the cross-check must all give it.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import optcoll
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.bounds.multicast import multicast_bound
from optcoll.cli import main
from optcoll.core.topology import Link, Topology, TopologyBuilder
from optcoll.exceptions import SolveError
from optcoll.io import save_topology
from optcoll.schedules.collectives import broadcast, broadcast_usable, collective_lower_bound
from optcoll.schedules.packing import pack_arborescences
from optcoll.studies.crosscheck import crosscheck
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule


def _check_everything(topology: Topology) -> Fraction:
    """Every method's value on ``topology``; returns the agreed r*."""
    truth = multicast_bound(topology).cut_ratio
    bound = optimal_cut_ratio(topology)
    assert bound.ratio == truth
    assert optimal_cut_ratio(topology, method="lp").ratio == truth
    schedule = pack_arborescences(topology)
    result = verify_schedule(topology, schedule)
    assert result.valid, result.reason
    assert result.time_factor == truth == schedule.time_factor
    return truth


@st.composite
def short_switch_topologies(draw):
    """3-4 GPUs on a ring plus 1-2 switches with random links, some switch short of input."""
    n = draw(st.integers(3, 4))
    m = draw(st.integers(1, 2))
    builder = TopologyBuilder("random-short-switch")
    gpus = [f"g{i}" for i in range(n)]
    switches = [f"w{j}" for j in range(m)]
    for v in gpus:
        builder.compute(v)
    for w in switches:
        builder.switch(w)
    for i, v in enumerate(gpus):
        builder.link(v, gpus[(i + 1) % n], draw(st.integers(1, 4)))
    for w in switches:
        for v in gpus + [x for x in switches if x != w]:
            if draw(st.booleans()):
                builder.link(v, w, draw(st.integers(1, 4)))
            if draw(st.booleans()):
                builder.link(w, v, draw(st.integers(1, 6)))
    return builder.build()


@settings(derandomize=True, max_examples=40, deadline=None)
@given(short_switch_topologies())
def test_random_short_switches_agree_with_the_multicast_lp(topology):
    truth = _check_everything(topology)
    check = crosscheck(topology)
    assert check.agree, check.disagreement
    assert check.reference == truth
    assert ("brute-force" in check.skipped) == bool(topology.short_switches())


def _raw_cut_ratio(topology: Topology) -> Fraction:
    """max |S ∩ Vc| / B+(S) over all node sets, switches counted at full capacity."""
    nodes = topology.node_ids
    best = Fraction(0)
    for mask in range(1, 2 ** len(nodes) - 1):
        inside = {v for i, v in enumerate(nodes) if mask >> i & 1}
        count = sum(topology.is_compute(v) for v in inside)
        if 0 < count < topology.num_compute:
            best = max(best, Fraction(count) / topology.cut_bandwidth(inside))
    return best


def _switch_with_100_in_and_200_out() -> Topology:
    """a -> w 100, w -> b and w -> c 200 each, b and c back to a, b <-> c 10."""
    builder = TopologyBuilder("short")
    for v in ("a", "b", "c"):
        builder.compute(v)
    builder.switch("w")
    builder.link("a", "w", 100)
    builder.link("w", "b", 200)
    builder.link("w", "c", 200)
    builder.link("b", "a", 100)
    builder.link("c", "a", 100)
    builder.link("b", "c", 10, bidirectional=True)
    return builder.build()


def test_a_switch_with_100_in_and_200_out(tmp_path, capsys):
    topology = _switch_with_100_in_and_200_out()
    assert topology.short_switches() == ["w"]
    # w forwards at most the 100 it receives, x to b and 100 - x to c: {a, w, b} sends
    # 2 shards over 100 - x + 10 and {a, w, c} over x + 10, so x = 50 and r* = 2/60
    assert _check_everything(topology) == Fraction(1, 30)
    assert _raw_cut_ratio(topology) == Fraction(2, 110)  # {a, b}: a -> w and b -> c
    path = tmp_path / "short.json"
    save_topology(topology, path)
    out = str(tmp_path / "out")
    assert main(["solve", str(path), "--collective", "allgather", "-o", out, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cut_ratio"] == "1/30" and data["verified"] is True
    assert data["time_factor"] == "1/30"


def test_competing_cuts_need_more_than_one_trimming():
    # w gets 1 from a and could send 1 to b and 1 to c: the cuts {a, w, b} and
    # {a, w, c} each want w's whole output, but w forwards 1 in total, so no
    # single trimming serves both: the optimum splits it, r* = 2 / (1 + 1/2).
    builder = TopologyBuilder("competing")
    for v in ("a", "b", "c"):
        builder.compute(v)
    builder.switch("w")
    builder.link("a", "w", 1)
    builder.link("w", "b", 1)
    builder.link("w", "c", 1)
    for u, v in (("b", "a"), ("c", "a"), ("b", "c"), ("c", "b")):
        builder.link(u, v, 1)
    topology = builder.build()
    assert _check_everything(topology) == Fraction(4, 3)
    # the raw cut ratio, and the best single cut with w trimmed for that cut alone, say 1
    assert _raw_cut_ratio(topology) == 1
    usable = optimal_cut_ratio(topology).usable
    assert usable.out_bandwidth("w") <= usable.in_bandwidth("w") == 1


def _degraded_dgx_h100_4(bandwidth: int) -> Topology:
    """dgx-h100:4 with the GPU -> NIC direction of b0.gpu0's NIC degraded to ``bandwidth``."""
    healthy = build("dgx-h100:4")
    links = [
        Link(u, v, bandwidth if (u, v) == ("b0.gpu0", "b0.nic0") else c)
        for (u, v), c in healthy.capacity.items()
    ]
    return Topology("dgx-h100:4-nic-degraded", healthy.nodes, links, healthy.bandwidth_unit)


@pytest.mark.slow
def test_dgx_h100_4_with_a_one_direction_nic_degradation(tmp_path, capsys):
    topology = _degraded_dgx_h100_4(25)
    assert topology.short_switches() == ["b0.nic0"]
    bound = optimal_cut_ratio(topology)
    assert bound.algbw_exact == Fraction(15800, 31)  # 509.677 GB/s; the raw cut ratio says 516.129
    assert optimal_cut_ratio(topology, method="lp").ratio == bound.ratio
    check = crosscheck(topology, methods=("combinatorial", "congestion LP", "trees + verify"))
    assert check.agree, check.disagreement
    assert check.reference == bound.ratio


def _broadcast_lp(topology: Topology, root: str) -> float:
    """max rate from ``root`` to every compute node when switches never copy, by a
    float LP written here (scipy, nothing of optcoll's models): one flow per sink
    within a shared forwardable capacity g <= c (out_g <= in_g at every switch)."""
    from scipy.optimize import linprog

    arcs = list(topology.capacity)
    sinks = [v for v in topology.compute_nodes if v != root]
    m = len(arcs)
    size = 1 + m + m * len(sinks)  # lam, g, a flow per sink
    g = lambda a: 1 + a  # noqa: E731
    f = lambda s, a: 1 + m + s * m + a  # noqa: E731
    upper, upper_rhs, equal, equal_rhs = [], [], [], []
    for s, sink in enumerate(sinks):
        for a in range(m):  # f_s <= g
            row = [0.0] * size
            row[f(s, a)], row[g(a)] = 1.0, -1.0
            upper.append(row)
            upper_rhs.append(0.0)
        for v in topology.node_ids:  # conservation; lam leaves the root, reaches the sink
            row = [0.0] * size
            for a, (x, y) in enumerate(arcs):
                row[f(s, a)] += (x == v) - (y == v)
            row[0] = -1.0 if v == root else 1.0 if v == sink else 0.0
            equal.append(row)
            equal_rhs.append(0.0)
    for w in topology.switch_nodes:
        row = [0.0] * size
        for a, (x, y) in enumerate(arcs):
            row[g(a)] += (x == w) - (y == w)
        upper.append(row)
        upper_rhs.append(0.0)
    bounds = [(0, None)] + [(0, float(topology.capacity[arc])) for arc in arcs]
    bounds += [(0, None)] * (m * len(sinks))
    objective = [-1.0] + [0.0] * (size - 1)
    result = linprog(objective, upper, upper_rhs, equal, equal_rhs, bounds, method="highs")
    assert result.status == 0
    return -result.fun


def test_broadcast_and_reduce_through_a_short_switch():
    topology = _switch_with_100_in_and_200_out()
    # from a: w forwards x to b and 100 - x to c, b and c swap 10: min(x + 10, 110 - x) = 60
    # (the raw min cut, a's own 100 out, is not reachable)
    solution = optcoll.solve(topology, "broadcast", root="a")
    assert solution.schedule.time_factor == Fraction(1, 60) == solution.lower_bound
    assert verify_schedule(topology, solution.schedule).valid
    assert solution.algbw == 60
    reduce = optcoll.solve(topology, "reduce", root="a")
    assert reduce.schedule.time_factor == Fraction(1, 110)  # b -> a and c -> a, 10 across


@settings(derandomize=True, max_examples=25, deadline=None)
@given(short_switch_topologies(), st.integers(0, 3))
def test_random_short_switch_broadcasts_match_an_independent_lp(topology, pick):
    root = topology.compute_nodes[pick % topology.num_compute]
    schedule = broadcast(topology, root)
    result = verify_schedule(topology, schedule)
    assert result.valid, result.reason
    rate = 1 / schedule.time_factor
    assert rate == 1 / collective_lower_bound(topology, "broadcast", root)
    assert abs(float(rate) - _broadcast_lp(topology, root)) <= 1e-6 * float(rate)


def _two_switches(links):
    b = TopologyBuilder("short-return")
    for v in ("c0", "c1"):
        b.compute(v)
    for w in ("w0", "w1"):
        b.switch(w)
    for (u, v), bandwidth in links.items():
        b.link(u, v, bandwidth)
    topology = b.build()
    assert topology.short_switches()
    return topology


def test_a_broadcast_keeps_spare_capacity_back_to_its_root():
    # the best forwardable part for a broadcast from c1 kept no link back to c1
    # (NotStronglyConnectedError before): the spare capacity of the switches gives one back
    topology = _two_switches(
        {
            ("c0", "w1"): 1,
            ("c1", "c0"): 1,
            ("c1", "w0"): 1,
            ("w0", "c1"): 5,
            ("w0", "w1"): 5,
            ("w1", "c0"): 1,
            ("w1", "w0"): 1,
        }
    )
    usable = broadcast_usable(topology, "c1")
    assert not usable.short_switches()
    assert all(usable.capacity[arc] <= topology.capacity[arc] for arc in usable.capacity)
    schedule = broadcast(topology, "c1")
    optimum = collective_lower_bound(topology, "broadcast", "c1")
    verdict = verify_schedule(topology, schedule, optimum=optimum)
    assert verdict.valid and verdict.ratio_to_optimum == 1
    assert optimum == Fraction(1, 2)  # c0 receives 1 directly and 1 through w0 -> w1


def test_a_broadcast_whose_forwardable_part_cannot_return_says_so():
    # the LP's best part circulates w0 -> w1 -> w0 and leaves w0 no surplus for w0 -> c1:
    # a known limitation, reported as such (not as a disconnected topology)
    topology = _two_switches(
        {
            ("w0", "c1"): 2,
            ("w1", "w0"): 2,
            ("c1", "c0"): 1,
            ("w0", "w1"): 10,
            ("c0", "w1"): 2,
            ("c1", "w0"): 1,
            ("w1", "c0"): 5,
        }
    )
    with pytest.raises(SolveError, match="known limitation") as raised:
        broadcast_usable(topology, "c1")
    assert "cannot be reached from compute node 'c0'" in str(raised.value)
