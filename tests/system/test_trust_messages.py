"""Messages that say what is wrong (issue 38): each case was misleading on main."""

from __future__ import annotations

import json

import pytest

from optcoll.cli import main
from optcoll.core.schedule import a_collective, canonical_collective
from optcoll.core.sizes import parse_size


def _error(capsys, argv: list[str]) -> str:
    try:
        status = main(argv)
    except SystemExit as exit:  # a usage error, from argparse
        status = exit.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 or "usage:" in err, err
    return err.strip().splitlines()[-1]


def test_bands_with_json_names_the_format_not_k(tmp_path, capsys):
    # main: "drop -k/--exact" although neither was given
    err = _error(
        capsys, ["export", "ring:4", "--bands", "--format", "json", "-o", str(tmp_path / "x.json")]
    )
    assert "--format json" in err and "-k" not in err and "--exact" not in err
    err = _error(capsys, ["export", "ring:4", "--bands", "-k", "2", "-o", str(tmp_path / "x.xml")])
    assert "drop -k" in err and "--exact" not in err


def test_a_huge_start_time_is_blamed_on_the_start_time(tmp_path, capsys):
    # main: a 900-digit start was accepted and the overflow blamed on bandwidths
    out, spec = tmp_path / "out", "random:n=4,seed=1"  # no symmetry: every tree in the file
    assert main(["solve", spec, "-o", str(out)]) == 0
    capsys.readouterr()
    path = out / "random_n-4_switches-0_seed-1.allgather.schedule.json"
    data = json.loads(path.read_text())
    edges = [len(tree["edges"]) for tree in data["trees"]]
    data["stats"]["priority"] = "timetable"
    data["stats"]["starts"] = [[0] * n for n in edges]
    data["stats"]["starts"][0][0] = 10**900
    path.write_text(json.dumps(data))
    err = _error(capsys, ["simulate", spec, str(path), "--sizes", "1M"])
    assert "stats.starts[0]" in err and "bandwidth" not in err and len(err) < 400


def test_trials_up_to_the_documented_limit(capsys):
    # docs/trust.md: --trials up to 100,000; main stopped at 50,000
    err = _error(capsys, ["resilience", "ring:4", "--random", "1", "--trials", "100001"])
    assert "from 1 to 100000" in err
    assert main(["resilience", "ring:4", "--random", "1", "--trials", "50001", "--json"]) == 0


def test_swapped_verify_arguments_get_a_hint(tmp_path, capsys):
    # main: "unknown field 'collective'" and nothing more
    assert main(["solve", "ring:4", "-o", str(tmp_path)]) == 0
    assert main(["convert", "ring:4", str(tmp_path / "ring.json")]) == 0
    capsys.readouterr()
    schedule = str(tmp_path / "ring_4.allgather.schedule.json")
    err = _error(capsys, ["verify", schedule, str(tmp_path / "ring.json")])
    assert "this is a schedule file" in err and "optcoll verify TOPO SCHEDULE" in err
    err = _error(capsys, ["verify", schedule, "ring:4"])
    assert "this is a schedule file" in err


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1MiB", 2**20),
        ("4KiB", 4096),
        ("1GiB", 2**30),
        ("1M", 2**20),
        ("1MB", 10**6),
        ("3kB", 3000),
    ],
)
def test_sizes_read_binary_and_decimal_units(text, size):
    # main: 1MiB refused, 1MB read as 1 MiB
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["1Mb", "8Kb", "1Gb", "64b", "1Mib"])
def test_bit_sizes_are_refused_not_read_as_bytes(text, capsys):
    # main: 1Mb (a megabit) was read as 1 MiB
    with pytest.raises(ValueError, match="in bits"):
        parse_size(text)
    err = _error(capsys, ["simulate", "ring:4", "x.json", "--sizes", text])
    assert "in bits" in err


@pytest.mark.parametrize(
    ("spelling", "name"),
    [
        ("all-reduce", "allreduce"),
        ("All_Gather", "allgather"),
        ("reduce-scatter", "reduce_scatter"),
        ("reducescatter", "reduce_scatter"),
        ("all-to-all", "alltoall"),
    ],
)
def test_every_collective_is_spelled_either_way(spelling, name, tmp_path, capsys):
    assert canonical_collective(spelling) == name
    if name in ("allreduce", "allgather", "alltoall"):  # bound refused all-reduce on main
        assert main(["bound", "ring:4", "--collective", spelling, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["collective"] == name


def test_an_allreduce():
    assert [a_collective(c) for c in ("allreduce", "broadcast", "alltoall")] == [
        "an allreduce",
        "a broadcast",
        "an alltoall",
    ]
