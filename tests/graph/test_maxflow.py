"""The max-flow backend: both engines against each other and against networkx.

Every result is checked as a certificate: capacity and conservation constraints
hold, the flow value equals the capacity of the returned source side, and that
side holds the source but not the sink.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.exceptions import SolveError
from optcoll.graph.maxflow import SMALL_NETWORK_PAIRS, FlowNetwork, MaxFlow, max_flow


@st.composite
def flow_problems(draw, max_capacity=20):
    """(n, tails, heads, capacities, source, sink) with parallel arcs and self-loops."""
    n = draw(st.integers(2, 8))
    node = st.integers(0, n - 1)
    m = draw(st.integers(0, 24))
    tails = draw(st.lists(node, min_size=m, max_size=m))
    heads = draw(st.lists(node, min_size=m, max_size=m))
    caps = draw(st.lists(st.integers(0, max_capacity), min_size=m, max_size=m))
    source = draw(node)
    sink = draw(node.filter(lambda v: v != source))
    return n, tails, heads, caps, source, sink


def networkx_value(n, tails, heads, caps, source, sink) -> int:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    for u, v, c in zip(tails, heads, caps, strict=True):
        if u != v:
            old = graph.edges[u, v]["capacity"] if graph.has_edge(u, v) else 0
            graph.add_edge(u, v, capacity=old + c)
    return nx.maximum_flow_value(graph, source, sink)


def check_certificate(result: MaxFlow, n, tails, heads, caps, source, sink) -> None:
    flow = [int(f) for f in result.flow]
    assert len(flow) == len(caps)
    balance = [0] * n
    for f, u, v, c in zip(flow, tails, heads, caps, strict=True):
        assert 0 <= f <= c
        if u == v:
            assert f == 0
        balance[u] -= f
        balance[v] += f
    assert balance[sink] == result.value == -balance[source]
    assert all(balance[v] == 0 for v in range(n) if v not in (source, sink))
    side = result.source_side
    assert side.shape == (n,) and side[source] and not side[sink]
    cut = sum(c for u, v, c in zip(tails, heads, caps, strict=True) if side[u] and not side[v])
    assert cut == result.value


@settings(derandomize=True, max_examples=200, deadline=None)
@given(flow_problems())
def test_engines_agree_with_networkx(problem):
    expected = networkx_value(*problem)
    for engine in ("scipy", "python"):
        result = max_flow(*problem, engine=engine)
        assert result.engine == engine
        assert result.value == expected
        check_certificate(result, *problem)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(flow_problems(max_capacity=2**80))
def test_huge_capacities_fall_back_to_exact_python(problem):
    expected = networkx_value(*problem)
    result = max_flow(*problem)
    assert result.value == expected
    check_certificate(result, *problem)


def test_auto_engine_switches_at_int32_and_on_small_networks():
    assert max_flow(2, [0], [1], [5], 0, 1).engine == "python"  # small: no scipy call
    # a path of SMALL_NETWORK_PAIRS + 1 arcs, the last one at the int32 limit
    n = SMALL_NETWORK_PAIRS + 2
    caps = [2**31 - 1] * (n - 1)
    small = max_flow(n, list(range(n - 1)), list(range(1, n)), caps, 0, n - 1)
    assert small.engine == "scipy" and small.value == 2**31 - 1
    assert small.source_side.tolist() == [True] + [False] * (n - 1)
    # two parallel arcs: each fits in int32, their sum does not
    big = max_flow(3, [0, 0, 1], [1, 1, 2], [2**30, 2**30, 2**31], 0, 2)
    assert big.engine == "python" and big.value == 2**31
    assert [int(f) for f in big.flow] == [2**30, 2**30, 2**31]
    with pytest.raises(SolveError, match="int32"):
        FlowNetwork(2, [0], [1], [2**31], engine="scipy")


def test_network_reused_for_many_sinks_and_new_capacities():
    # a directed 5-cycle with chords; every sink is answered by the same network
    tails = [0, 1, 2, 3, 4, 0, 2]
    heads = [1, 2, 3, 4, 0, 3, 4]
    caps = [3, 1, 4, 1, 5, 9, 2]
    net = FlowNetwork(5, tails, heads, caps)
    for sink in range(1, 5):
        assert net.max_flow(0, sink).value == networkx_value(5, tails, heads, caps, 0, sink)
    doubled = net.with_capacities(np.array(caps, dtype=np.int64) * 2)
    for sink in range(1, 5):
        assert doubled.max_flow(0, sink).value == 2 * net.max_flow(0, sink).value
    assert net.max_flow(0, 1).value == 3  # the original is untouched


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((3, [0, 1], [1], [1, 1]), "equal lengths"),
        ((3, [0], [5], [1]), r"arc 0 \(0 -> 5\)"),
        ((3, [0, 1], [1, 2], [1, -4]), "arc 1 has negative capacity -4"),
        ((3, [0], [1], [1.5]), "capacity of arc 0 must be an integer"),
        ((3, [0], [1], [1, 2]), "one entry per arc"),
        ((0, [], [], []), "at least one node"),
        ((3, [0, True], [1, 2], [1, 1]), "tail of arc 1 must be an integer, got True"),
        ((3, [0, 1], [1, 2], [1, True]), "capacity of arc 1 must be an integer, got True"),
        ((3, np.array([0, 2**64 - 1], dtype=np.uint64), [1, 2], [1, 1]), "arc 1 has tail"),
        ((3, [0, 1], [1, 2.0], [1, 1]), "head of arc 1 must be an integer"),
    ],
)
def test_bad_networks_are_rejected(args, message):
    with pytest.raises(SolveError, match=message):
        FlowNetwork(*args)


def test_bad_queries_are_rejected():
    net = FlowNetwork(3, [0], [1], [1])
    with pytest.raises(SolveError, match="source and sink must differ"):
        net.max_flow(1, 1)
    with pytest.raises(SolveError, match="sink 3 is outside"):
        net.max_flow(0, 3)
    with pytest.raises(SolveError, match="unknown max-flow engine"):
        FlowNetwork(3, [0], [1], [1], engine="fast")
    with pytest.raises(SolveError, match="negative capacity"):
        net.with_capacities(np.array([-1]))


def test_unreachable_sink_gives_zero_flow_and_source_only_cut():
    result = max_flow(3, [1], [2], [7], 0, 2)
    assert result.value == 0
    assert result.source_side.tolist() == [True, False, False]


# --- rooted cuts: min over sinks with merged sinks and local certificates -----------


def cut_capacity(side, tails, heads, caps) -> int:
    return sum(c for u, v, c in zip(tails, heads, caps, strict=True) if side[u] and not side[v])


@settings(derandomize=True, max_examples=120, deadline=None)
@given(flow_problems(), st.randoms(use_true_random=False))
def test_min_rooted_cut_is_the_minimum_over_sinks(problem, rng):
    n, tails, heads, caps, source, _ = problem
    sinks = [v for v in range(n) if v != source]
    rng.shuffle(sinks)
    for engine in ("auto", "python"):
        net = FlowNetwork(n, tails, heads, caps, engine=engine)
        expected = min(net.max_flow(source, v).value for v in sinks)
        cut = net.min_rooted_cut(source, sinks)
        assert cut.value == expected
        assert cut.source_side[source] and not cut.source_side[cut.sink]
        assert cut_capacity(cut.source_side, tails, heads, caps) == expected
        assert net.rooted_violation(source, sinks, expected) is None
        violation = net.rooted_violation(source, sinks, expected + 1)
        assert violation is not None and violation.value <= expected
        assert violation.source_side[source] and not violation.source_side[violation.sink]
        assert cut_capacity(violation.source_side, tails, heads, caps) == violation.value


def test_rooted_cut_arguments_are_checked():
    net = FlowNetwork(3, [0, 1], [1, 2], [1, 1])
    with pytest.raises(SolveError, match="sink 0 is the source"):
        net.min_rooted_cut(0, [1, 0])
    with pytest.raises(SolveError, match="at least one sink"):
        net.rooted_violation(0, [], 1)
    with pytest.raises(SolveError, match="sink 5 is outside"):
        net.min_rooted_cut(0, [5])
