"""Bandwidth units are units (issue 38, item 1): every accepted unit is converted exactly to
GB/s, anything else is refused naming the field and the file."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll import load_topology, solve
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.topology import Link, Node, Topology
from optcoll.core.units import BYTES_PER_SECOND, RELATIVE_UNITS
from optcoll.exceptions import OptCollError
from optcoll.sim.simulator import simulate_schedule

#: Bytes per second of each unit, written out independently of optcoll's table.
EXPECTED = {
    "B/s": 1,
    "kB/s": 1000,
    "MB/s": 1000**2,
    "GB/s": 1000**3,
    "TB/s": 1000**4,
    "PB/s": 1000**5,
    "KiB/s": 1024,
    "MiB/s": 1024**2,
    "GiB/s": 1024**3,
    "TiB/s": 1024**4,
    "PiB/s": 1024**5,
}
EXPECTED.update({unit.replace("B/s", "b/s"): Fraction(v, 8) for unit, v in list(EXPECTED.items())})


def _triangle(unit: str, bandwidth: object) -> str:
    links = "\n".join(
        f" - {{src: {a}, dst: {b}, bandwidth: {bandwidth}, bidirectional: true}}"
        for a, b in (("a", "b"), ("b", "c"), ("c", "a"))
    )
    return f"name: u\nbandwidth_unit: {unit}\nnodes: [{{id: a}}, {{id: b}}, {{id: c}}]\nlinks:\n{links}\n"


def test_the_accepted_set_is_the_documented_one():
    assert set(BYTES_PER_SECOND) == set(EXPECTED)
    assert RELATIVE_UNITS == ("link", "chunk/us")


@pytest.mark.parametrize("unit", sorted(EXPECTED))
def test_every_unit_is_converted_exactly_to_gigabytes(tmp_path, unit):
    path = tmp_path / "t.yaml"
    path.write_text(_triangle(unit, 3))
    topo = load_topology(path)
    assert topo.bandwidth_unit == "GB/s"  # the unit it computes and reports in
    assert topo.capacity[("a", "b")] == 3 * Fraction(EXPECTED[unit]) / 10**9


def test_gigabits_are_an_eighth_of_gigabytes_in_every_result(tmp_path):
    # the case: 400 Gb/s simulated 8x faster than the same link written as 50 GB/s
    (tmp_path / "gbit.yaml").write_text(_triangle("Gb/s", 400))
    (tmp_path / "gbyte.yaml").write_text(_triangle("GB/s", 50))
    bits, byte = load_topology(tmp_path / "gbit.yaml"), load_topology(tmp_path / "gbyte.yaml")
    assert bits.capacity == byte.capacity
    assert (
        optimal_cut_ratio(bits).ratio == optimal_cut_ratio(byte).ratio == Fraction(1, 50)
    )  # 2 GPUs behind 100 GB/s
    schedule = solve(byte).schedule
    fast = simulate_schedule(byte, schedule, 2**30)
    assert simulate_schedule(bits, schedule, 2**30).time_us == fast.time_us
    assert round(fast.algbw) == 150  # N / r* = 3 * 50


def test_gibibytes_are_not_gigabytes():
    gib = Topology("g", [Node("a"), Node("b")], [Link("a", "b", 1, bidirectional=True)], "GiB/s")
    assert gib.capacity[("a", "b")] == Fraction(2**30, 10**9)
    assert gib.to_dict()["bandwidth_unit"] == "GB/s"
    assert Topology.from_dict(gib.to_dict()) == gib  # saved in GB/s, lossless


@pytest.mark.parametrize(
    ("unit", "words"),
    [
        ("potatoes", "unknown bandwidth unit 'potatoes'"),
        ("GBps", "unknown bandwidth unit 'GBps'"),
        ("KB/s", "ambiguous"),
        ("gb/s", "unknown bandwidth unit"),
    ],
)
def test_anything_else_is_refused_naming_the_field_and_file(tmp_path, unit, words):
    path = tmp_path / "t.yaml"
    path.write_text(_triangle(unit, 3))
    with pytest.raises(OptCollError) as caught:
        load_topology(path)
    message = str(caught.value)
    assert words in message and "bandwidth_unit" in message and "t.yaml" in message


def test_a_relative_unit_is_kept_as_given():
    t = Topology("r", [Node("a"), Node("b")], [Link("a", "b", 2, bidirectional=True)], "link")
    assert t.bandwidth_unit == "link" and t.capacity[("a", "b")] == 2


def test_the_cli_refuses_an_unknown_unit(tmp_path, capsys):
    from optcoll.cli import main

    path = tmp_path / "t.yaml"
    path.write_text(_triangle("potatoes", 3))
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "potatoes" in err and "bandwidth_unit" in err
