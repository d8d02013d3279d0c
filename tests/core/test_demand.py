"""Demand matrices, PyTorch split sizes and the MoE generator (optcoll.core.demand, .moe)."""

from __future__ import annotations

import math

import pytest

from optcoll.core.demand import demand_from_splits, demand_matrix, uniform_demand
from optcoll.core.moe import MoeSpec, moe_demand, parse_moe_spec
from optcoll.exceptions import ArgumentError, OptCollError

RANKS = ("a", "b", "c")


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([[0, 1, 2], [3, 0, 4]], "2 rows, but the topology has 3 compute nodes"),
        ([[0, 1, 2], [3, 0], [1, 1, 0]], "row 1 (rank b) has 2 entries"),
        (
            [[0, 1, 2], [3, 0, -4], [1, 1, 0]],
            "row 1 (rank b), column 2 (rank c): bytes must be non-negative, got -4",
        ),
        (
            [[0, 1, 2.5], [3, 0, 4], [1, 1, 0]],
            "row 0 (rank a), column 2 (rank c): expected a non-negative integer",
        ),
        ([[0, 1, 2], [3, 0, 4], [True, 1, 0]], "row 2 (rank c), column 0 (rank a)"),
        ([[0, 1, 2], [3, 0, 4], [float("nan"), 1, 0]], "row 2 (rank c), column 0 (rank a)"),
        ([[0, 1, 2], [3, 0, 4], "abc"], "row 2 (rank c): expected a list of 3 entries"),
        ([[7, 0, 0], [0, 5, 0], [0, 0, 1]], "no byte leaves its rank"),
        ({"bytes": 1}, "expected a list of 3 rows"),
        (
            [[0, 10**41, 2], [3, 0, 4], [1, 1, 0]],
            "row 0 (rank a), column 1 (rank b): more than 2**53 bytes",
        ),
        ([[0, 1e300, 2], [3, 0, 4], [1, 1, 0]], "more than 2**53 bytes"),
    ],
)
def test_bad_matrices_are_refused_naming_row_and_column(rows, message):
    with pytest.raises(ArgumentError) as info:
        demand_matrix(rows, RANKS, "m.json")
    assert str(info.value).startswith("m.json") and message in str(info.value)
    assert isinstance(info.value, OptCollError)


def test_diagonal_is_kept_local_and_never_a_pair():
    d = demand_matrix([[9, 1, 0], [0, 4, 2], [3.0, 0, 0]], RANKS)
    assert d.pairs() == {("a", "b"): 1, ("b", "c"): 2, ("c", "a"): 3}
    assert (d.total_bytes, d.local_bytes) == (6, 13)
    assert d.transposed().pairs() == {("b", "a"): 1, ("c", "b"): 2, ("a", "c"): 3}


def test_split_sizes_are_pytorch_all_to_all_single():
    splits = [[0, 2, 1], [4, 0, 0], [1, 1, 3]]  # rank r sends splits[r][d] elements to d
    received = [[splits[s][d] for s in range(3)] for d in range(3)]
    d = demand_from_splits(splits, element_bytes=2, ranks=RANKS, output_split_sizes=received)
    assert d.bytes == ((0, 4, 2), (8, 0, 0), (2, 2, 6))
    received[2][0] += 1
    with pytest.raises(ArgumentError, match="rank c's output_split_sizes\\[a\\] is 2, but rank a"):
        demand_from_splits(splits, element_bytes=2, ranks=RANKS, output_split_sizes=received)
    with pytest.raises(ArgumentError, match="element_bytes must be positive"):
        demand_from_splits(splits, element_bytes=0, ranks=RANKS)


def test_uniform_demand():
    assert uniform_demand(RANKS, 3).pairs() == {(s, d): 3 for s in RANKS for d in RANKS if s != d}


def _ranks(n):
    return tuple(f"r{i}" for i in range(n))


def test_moe_is_seeded_and_deterministic():
    spec = MoeSpec(tokens=200, hidden=8, dtype_bytes=2, experts=16, top_k=4, zipf=1.0, seed=5)
    assert moe_demand(spec, _ranks(8)) == moe_demand(spec, _ranks(8))
    other = MoeSpec(**{**spec.__dict__, "seed": 6})
    assert moe_demand(other, _ranks(8)) != moe_demand(spec, _ranks(8))


def test_moe_rows_count_each_token_once_per_destination_rank():
    n, tokens, per_token = 8, 300, 8 * 2
    spec = MoeSpec(tokens=tokens, hidden=8, dtype_bytes=2, experts=32, top_k=6, zipf=0.7, seed=1)
    d = moe_demand(spec, _ranks(n))
    for row in d.bytes:
        assert all(b % per_token == 0 for b in row)
        reached = sum(row) // per_token  # (token, destination rank) pairs
        assert tokens <= reached <= tokens * min(spec.top_k, n)
        assert max(row) <= tokens * per_token  # a token reaches a rank at most once
    # top_k = experts: every token reaches every rank (4 experts per rank)
    full = moe_demand(MoeSpec(tokens=10, hidden=1, dtype_bytes=1, experts=32, top_k=32), _ranks(n))
    assert full.bytes == tuple(tuple([10] * n) for _ in range(n))


def test_moe_skew_concentrates_traffic_on_hot_ranks():
    def hottest_share(zipf):
        spec = MoeSpec(tokens=500, hidden=1, dtype_bytes=1, experts=64, top_k=2, zipf=zipf)
        d = moe_demand(spec, _ranks(8))
        received = [sum(d.bytes[s][r] for s in range(8)) for r in range(8)]
        return max(received) / sum(received)

    uniform, skewed = hottest_share(0.0), hottest_share(1.5)
    assert uniform < 0.15 < 0.3 < skewed  # 1/8 = 0.125 when balanced


def test_moe_combine_is_dispatch_transposed_and_placement_is_honoured():
    spec = MoeSpec(tokens=50, hidden=2, dtype_bytes=1, experts=4, top_k=1, zipf=0.0, seed=2)
    dispatch = moe_demand(spec, _ranks(4))
    combine = moe_demand(MoeSpec(**{**spec.__dict__, "phase": "combine"}), _ranks(4))
    assert combine.bytes == dispatch.transposed().bytes
    placed = moe_demand(MoeSpec(**{**spec.__dict__, "placement": (3, 3, 3, 3)}), _ranks(4))
    assert all(row[:3] == (0, 0, 0) and row[3] == 100 for row in placed.bytes)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("top_k=9,experts=8", "top_k = 9 exceeds the 8 experts"),
        ("zipf=-1", "zipf exponent must lie in"),
        ("tokens=0", "tokens must be a positive integer"),
        ("phase=forward", "phase 'forward' is unknown"),
        ("experts=2,top_k=1,placement=0/9", "expert 1 on rank 9"),
        ("experts=2,top_k=1,placement=0", "lists 1 ranks for 2 experts"),
    ],
)
def test_bad_moe_specs(spec, message):
    with pytest.raises(ArgumentError, match=message.replace("(", "\\(")):
        moe_demand(parse_moe_spec(spec), _ranks(4))


def test_moe_spec_parse_errors():
    with pytest.raises(ArgumentError, match="tokens='x' is not a number"):
        parse_moe_spec("tokens=x")
    with pytest.raises(ArgumentError, match="needs a value"):
        parse_moe_spec("seed")
    assert math.isclose(parse_moe_spec("zipf=1.5").zipf, 1.5)
