"""The cross-check harness: every method agrees on built-in and random topologies."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import random_topologies, switched_topologies
from hypothesis import given, settings
from hypothesis import strategies as st

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.exceptions import MethodError
from optcoll.io import load_topology
from optcoll.studies import crosscheck as harness
from optcoll.studies.crosscheck import METHODS, crosscheck

REFERENCE = {
    "dgx-a100:1": Fraction(7, 300),
    "dgx-a100:2": Fraction(3, 65),
    "mi250:1": Fraction(7, 150),
}


@pytest.mark.slow
@pytest.mark.parametrize("spec", sorted(REFERENCE))
def test_reference_topologies(spec):
    # On dgx-a100:2 the multicast LP alone takes ~10 s (the LP helper's tests cover it),
    # and the LP tree packing is checked on its own in test_lp_packing_on_dgx_a100_2.
    skip = ("multicast LP", "LP packing + rounding + verify") if spec == "dgx-a100:2" else ()
    check = crosscheck(load_topology(spec), methods=[m for m in METHODS if m not in skip])
    assert check.agree, check.disagreement
    assert check.reference == REFERENCE[spec]
    names = [row.method for row in check.results]
    assert "combinatorial" in names and "congestion LP" in names and "trees + verify" in names
    assert "LP packing + rounding + verify" in names or spec == "dgx-a100:2"
    assert ("brute-force" in check.skipped) == (len(load_topology(spec).node_ids) > 16)
    assert all(row.value == REFERENCE[spec] for row in check.results)


@pytest.mark.slow
def test_lp_packing_on_dgx_a100_2(shared_tree_packing):
    # Column generation's weights here need the exact basis solve (no small denominators);
    # the packing is shared with test_formulations_tree_packing's check of the same graph.
    check = crosscheck(
        load_topology("dgx-a100:2"), methods=("combinatorial", "LP packing + rounding + verify")
    )
    assert check.agree, check.disagreement


@pytest.mark.parametrize(
    "spec",
    [
        "ring:5",
        "ring:4,direction=uni",
        "line:4",
        "star:4",
        "torus:2x3",
        "mesh:2x2x2",
        "hypercube:3",
        "fully-connected:4",
        "leaf-spine:leaves=2,hosts=2,spines=2",
        "random:n=6,switches=2,seed=3",
        "dgx-v100",
    ],
)
def test_builtin_families_at_small_sizes(spec):
    check = crosscheck(load_topology(spec))
    assert check.agree, check.disagreement
    assert len(check.results) >= 3


@settings(derandomize=True, max_examples=30, deadline=None)
@given(switched_topologies(min_switches=0, max_switches=2, bandwidths=(2.5, 5, 10, 12.5, 25)))
def test_random_topologies_agree(topology):
    check = crosscheck(topology)
    assert check.agree, check.disagreement
    assert [row.method for row in check.results][:2] == ["combinatorial", "brute-force"]


def test_disagreement_names_both_values_and_the_cut(monkeypatch, capsys):
    # Two wrong bounds on dgx-a100:1, whose true r* is 7/300: one above it, one below.
    def high(topology):
        return Fraction(1, 20), None, "too high"

    def low(topology):
        return Fraction(1, 50), None, "too low"

    extra = (("high", "bound", lambda t: True, high), ("low", "bound", lambda t: True, low))
    monkeypatch.setattr(harness, "_METHODS", harness._METHODS + extra)
    monkeypatch.setattr(harness, "METHODS", harness.METHODS + ("high", "low"))
    topo = load_topology("dgx-a100:1")
    outside = [v for v in topo.node_ids if v not in optimal_cut_ratio(topo).bottleneck_cut]
    assert len(outside) == 1 and outside[0] in topo.compute_nodes  # 7 GPUs behind 300 GB/s
    cut = f"the cut S = every node except {outside} (7 compute nodes, B+(S) = 300) has exact ratio 7/300"
    check = crosscheck(topo, methods=("combinatorial", "high"))
    assert not check.agree
    assert check.disagreement == (
        f"combinatorial gives 7/300, high gives 1/20; {cut}, and no cut supports high's 1/20"
    )
    check = crosscheck(topo, methods=("combinatorial", "low"))
    assert check.disagreement == (
        f"combinatorial gives 7/300, low gives 1/50; {cut} > 1/50, refuting low"
    )
    assert "NO" in check.table().splitlines()[2]
    assert main(["crosscheck", "dgx-a100:1", "--methods", "combinatorial", "low"]) == 1
    assert "DISAGREEMENT: combinatorial gives 7/300, low gives 1/50" in capsys.readouterr().out


def test_unknown_method_and_cli(capsys):
    with pytest.raises(MethodError, match="unknown cross-check method 'magic'"):
        crosscheck(load_topology("ring:3"), methods=("magic",))
    assert main(["crosscheck", "ring:4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["agree"] is True and data["reference"] == "3/200"
    assert {m["method"] for m in data["methods"]} <= set(METHODS)
    assert main(["crosscheck", "ring:4", "--methods", "combinatorial", "brute-force"]) == 0
    out = capsys.readouterr().out
    assert "all methods agree" in out and "3/200" in out


@settings(max_examples=12, deadline=None)
@given(random_topologies(max_compute=6, bandwidths=st.integers(100_000, 9_999_999)))
def test_every_method_agrees_with_six_and_seven_digit_bandwidths(topology):
    """Bandwidths of 6-7 digits make r*'s denominator, and the rounding's k, huge (tens
    of digits): the LP packing + rounding still reaches r* exactly, as every other method."""
    check = crosscheck(topology)
    assert check.agree, check.disagreement
    assert check.reference == optimal_cut_ratio(topology).ratio
