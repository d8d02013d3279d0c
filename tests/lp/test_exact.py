"""Every exact value an LP method prints is proved, even with many significant digits.

Bandwidths with 6 or 7 significant decimals give integer-scaled capacities near
10**7, where a float optimum no longer identifies the fraction by its size
alone. Each method must still give the one exact r*: the combinatorial bound
(certified by its cut), brute force, the congestion LP and the multicast LP
(vertex and duals proved by exact LP duality), the LP tree packing (exact
weights and an exact dual bound), and both verified schedules.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.bounds.multicast import multicast_bound
from optcoll.cli import main
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.exceptions import ReconstructionError
from optcoll.io import save_topology
from optcoll.schedules.tree_packing import fractional_tree_packing
from optcoll.studies.crosscheck import METHODS, crosscheck


def decimal_mesh(digits: int, seed: int, n: int = 4) -> Topology:
    """A full mesh of ``n`` GPUs whose bandwidths carry ``digits`` significant decimals."""
    rng = random.Random(seed)
    builder = TopologyBuilder(f"mesh-{digits}-{seed}")
    for i in range(n):
        builder.compute(f"g{i}")
    for i in range(n):
        for j in range(n):
            if i != j:
                mantissa = rng.randrange(10 ** (digits - 1), 10**digits)
                builder.link(f"g{i}", f"g{j}", Fraction(mantissa, 10 ** (digits - 3)))
    return builder.build()


MESHES = [(digits, seed) for digits in (6, 7) for seed in range(12)]


@pytest.mark.slow
@pytest.mark.parametrize(("digits", "seed"), MESHES)
def test_every_method_agrees_on_many_digit_bandwidths(digits, seed):
    topology = decimal_mesh(digits, seed)
    check = crosscheck(topology, methods=METHODS)
    assert check.agree, check.disagreement
    assert not check.skipped
    assert {row.method for row in check.results} == set(METHODS)
    reference = optimal_cut_ratio(topology, method="brute-force").ratio
    assert check.reference == reference
    assert multicast_bound(topology).cut_ratio == reference
    packing = fractional_tree_packing(topology.compute_nodes, topology.capacity)
    assert packing.proved and packing.t == reference


def test_lp_solve_prints_the_proved_multicast_value(capsys, tmp_path):
    # 7 significant decimals: the multicast LP used to print 5000/2818507 here.
    topology = decimal_mesh(7, 0)
    exact = optimal_cut_ratio(topology, method="brute-force").ratio
    assert exact == Fraction(15000, 9108473)
    path = _write(topology, tmp_path)
    for model in ("multicast", "congestion", "tree-packing"):
        assert main(["lp", "solve", path, "--model", model, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["cut_ratio"] == "15000/9108473" and data["proved"] is True


def test_lp_solve_falls_back_when_the_lp_is_not_proved(capsys, monkeypatch, tmp_path):
    import optcoll.bounds.multicast

    def unproved(topology, **_):
        raise ReconstructionError("the exact basis solution is not optimal: a test says so")

    monkeypatch.setattr(optcoll.bounds.multicast, "multicast_bound", unproved)
    topology = decimal_mesh(6, 1)
    exact = optimal_cut_ratio(topology).ratio
    assert main(["lp", "solve", _write(topology, tmp_path), "--model", "multicast"]) == 0
    out = capsys.readouterr().out
    assert f"cut ratio    {exact} " in out
    assert "not proved   the LP's value was not proved exactly" in out
    assert "a test says so" in out and "the combinatorial r*, certified by its cut" in out


def _write(topology: Topology, folder: Path) -> str:
    path = folder / f"{topology.name}.json"
    save_topology(topology, path)
    return str(path)
