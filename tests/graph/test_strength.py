"""The exact strength against brute force over every partition of small random graphs."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.exceptions import SolveError
from optcoll.graph.strength import graph_strength, partition_ratio, set_partitions


@st.composite
def weighted_graphs(draw):
    n = draw(st.integers(2, 7))
    nodes = [f"v{i}" for i in range(n)]
    edges = {}
    for i in range(n):
        for j in range(i + 1, n):
            if draw(st.booleans()):
                edges[(nodes[i], nodes[j])] = Fraction(
                    draw(st.integers(1, 12)), draw(st.integers(1, 3))
                )
    return nodes, edges


@settings(max_examples=80, deadline=None)
@given(weighted_graphs())
def test_strength_is_the_least_partition_ratio(graph):
    nodes, edges = graph
    result = graph_strength(nodes, edges)
    least = min(partition_ratio(edges, parts) for parts in set_partitions(nodes) if len(parts) > 1)
    assert result.value == least
    assert sorted(v for part in result.parts for v in part) == sorted(nodes)
    assert partition_ratio(edges, result.parts) == result.value


def test_bad_graphs_are_refused():
    with pytest.raises(SolveError, match="unknown node"):
        graph_strength(["a", "b"], {("a", "c"): 1})
    with pytest.raises(SolveError, match="negative"):
        graph_strength(["a", "b"], {("a", "b"): -1})
    with pytest.raises(SolveError, match="two distinct nodes"):
        graph_strength(["a"], {})
