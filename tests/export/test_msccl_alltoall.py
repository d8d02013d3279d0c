"""MSCCL export of all-to-all, judged by the independent checker ``optcoll.verify.msccl``.

Every exported program must be accepted by its runtime's parser rules and, executed at
connection depths 1, 2 and 8 in each placement it claims, put every (source, sink)
piece into the sink's output slot ``source * k + j``; broken variants must be caught
for the reason they are broken.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import replace
from fractions import Fraction

import pytest

from optcoll import load_topology
from optcoll.cli import main
from optcoll.exceptions import ExportError
from optcoll.export.msccl import msccl_program, placements
from optcoll.schedules.alltoall import alltoall_schedule
from optcoll.verify.msccl import verify_text

FAMILIES = (
    "ring:4",
    "ring:5,direction=uni",
    "line:3",
    "star:4",
    "torus:3x3",
    "mesh:2x3",
    "random:n=5,seed=1",
    "dgx-a100:1",
    "dgx-v100:1",
    "mi250:1",
)


def _programs(spec, k=None, runtime="rccl", max_bytes=None):
    topology = load_topology(spec)
    schedule = alltoall_schedule(topology, k)
    programs = [
        msccl_program(schedule, runtime=runtime, placement=placement, max_bytes=max_bytes)
        for placement in placements("alltoall", runtime)
    ]
    return topology, schedule, programs


def _checked(text, runtime, topology):
    report = verify_text(text, runtime=runtime, topology=topology)
    assert report.ok, report.findings
    assert report.executed and report.depths == (1, 2, 8)
    assert not report.notes  # the output was judged, not skipped
    return report


@pytest.mark.parametrize("spec", FAMILIES)
@pytest.mark.parametrize("k", [None, 1, 2])
def test_alltoall_programs_deliver_every_piece(spec, k):
    topology, schedule, programs = _programs(spec, k)
    n = topology.num_compute
    served = set()
    for program in programs:
        report = _checked(program.text, "rccl", topology)
        served.update(report.placements)
        assert report.nchunksperloop == program.nchunksperloop == n * schedule.k
        # every pair that exchanges data directly carries what the routes put on it
        assert sum(report.pair_load.values()) >= Fraction(n - 1, 1)
    assert served == {"in place", "out of place"}


@pytest.mark.parametrize("runtime", ["msccl", "msccl-executor"])
@pytest.mark.parametrize("spec", ["ring:4", "dgx-a100:1", "mi250:1"])
def test_other_runtimes(spec, runtime):
    topology, _, programs = _programs(spec, runtime=runtime, max_bytes=1 << 30)
    placed = {_checked(p.text, runtime, topology).placements for p in programs}
    if runtime == "msccl":  # microsoft/msccl refuses in-place all-to-all calls
        assert placed == {("out of place",)}
    else:
        assert placed == {("out of place",), ("in place",)}


def test_buffer_layout_and_scratch():
    # dgx-a100:1: every pair is one switch hop, no relay: out of place needs no scratch
    _, schedule, (out, inplace) = _programs("dgx-a100:1")
    n = 8
    assert 'i_chunks="8" o_chunks="8" s_chunks="0"' in out.text
    assert f'i_chunks="8" o_chunks="8" s_chunks="{n}"' in inplace.text  # the input copy
    assert 'coll="alltoall"' in out.text and 'inplace="0" outofplace="1"' in out.text
    assert 'inplace="1" outofplace="0"' in inplace.text
    assert out.text.count('type="s"') == out.text.count('type="r"') == n * (n - 1)
    # ring:4: the piece to the opposite node is relayed through a neighbour's scratch
    _, _, (out, inplace) = _programs("ring:4")
    relays = re.findall(r's_chunks="(\d+)"', out.text)
    assert max(map(int, relays)) >= 1
    assert all(int(s) >= 4 for s in re.findall(r's_chunks="(\d+)"', inplace.text))


def test_checker_catches_a_piece_in_the_wrong_slot():
    topology, _, (out, _) = _programs("dgx-a100:1")
    # GPU 1 receives rank 0's piece into output slot 0; send it to slot 2 instead
    lines = out.text.splitlines()
    gpu1 = lines.index(next(line for line in lines if '<gpu id="1"' in line))
    at = next(
        i
        for i in range(gpu1, len(lines))
        if 'type="r"' in lines[i] and 'dstbuf="o" dstoff="0"' in lines[i]
    )
    lines[at] = lines[at].replace('dstoff="0"', 'dstoff="2"')
    report = verify_text("\n".join(lines), topology=topology)
    wrong = [f.message for f in report.findings if f.kind == "wrong-data"]
    assert (
        "out of place: rank 1 output chunk 0: expected rank 0 input 1, got uninitialised memory"
        in wrong
    )
    # two receives now write output chunk 2, unordered
    races = [f.message for f in report.findings if f.kind == "race"]
    assert races and races[0].startswith("out of place: GPU 1 o[2]: GPU 1 tb")


def test_checker_catches_an_out_of_place_program_run_in_place():
    # without the scratch copy, a received piece overwrites input not yet sent
    topology, _, (out, _) = _programs("ring:4")
    text = out.text.replace('inplace="0" outofplace="1"', 'inplace="1" outofplace="0"')
    report = verify_text(text, topology=topology)
    assert not report.ok
    assert {f.kind for f in report.findings} <= {"race", "wrong-data"}
    assert any(f.kind == "race" and "o[" in f.message for f in report.findings)


def test_checker_catches_a_receive_that_does_not_wait_for_the_input_copy():
    topology, _, (_, inplace) = _programs("ring:4")
    # the first receive into the output of GPU 0 no longer waits for the copy
    text = inplace.text.replace(
        'dstbuf="o" dstoff="1" cnt="1" depid="0" deps="0"',
        'dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1"',
        1,
    )
    assert text != inplace.text
    report = verify_text(text, topology=topology)
    assert [f.kind for f in report.findings] == ["race"]
    assert "GPU 0 o[1]" in report.findings[0].message


def test_checker_refuses_ragged_loops_and_msccl_in_place():
    _, _, (out, inplace) = _programs("ring:4", runtime="msccl-executor")
    ragged = out.text.replace('nchunksperloop="4"', 'nchunksperloop="6"')
    report = verify_text(ragged)
    assert not report.executed
    assert any(
        "nchunksperloop=6 is not a multiple of ngpus=4" in f.message for f in report.findings
    )
    report = verify_text(inplace.text.replace(' outofplace="0"', ""), runtime="msccl")
    assert any(
        "msccl refuses every in-place alltoall call" in f.message
        and "never uses this file" in f.message
        for f in report.findings
    )


def test_msccl_in_place_and_malformed_routes_are_refused():
    topology = load_topology("ring:4")
    schedule = alltoall_schedule(topology)
    with pytest.raises(ExportError, match="refuses in-place all-to-all calls"):
        msccl_program(schedule, runtime="msccl", placement="inplace", max_bytes=1 << 20)
    with pytest.raises(ExportError, match="no route for 1 ordered pair"):
        msccl_program(replace(schedule, routes=schedule.routes[1:]))
    first = schedule.routes[0]
    doubled = replace(first, paths=first.paths + first.paths)
    with pytest.raises(ExportError, match=r"carry 2 chunks, expected k = 1"):
        msccl_program(replace(schedule, routes=(doubled, *schedule.routes[1:])))
    backwards = replace(first, paths=(replace(first.paths[0], path=first.paths[0].path[::-1]),))
    with pytest.raises(ExportError, match="must run from"):
        msccl_program(replace(schedule, routes=(backwards, *schedule.routes[1:])))


def _cli(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def test_cli_fixed_k_states_the_rounding_bound_of_the_json_export(tmp_path):
    status, out, err = _cli(["export", "mi250:1", "--collective", "alltoall", "-k", "2",
                             "--placement", "both", "-o", str(tmp_path / "a2a.xml"), "--json"])  # fmt: skip
    assert status == 0, err
    files = json.loads(out)["files"]
    status, _, err = _cli(["export", "mi250:1", "--collective", "alltoall", "-k", "2",
                           "--format", "json", "-o", str(tmp_path / "a2a.json")])  # fmt: skip
    assert status == 0, err
    stats = json.loads((tmp_path / "a2a.json").read_text())["stats"]
    assert [f["placement"] for f in files] == ["outofplace", "inplace"]
    for entry in files:
        assert entry["k"] == 2 and entry["nchunksperloop"] == 32
        assert entry["rounding_bound"] == "7/30"  # the builder's, not a claim of the file
        assert "rounding_bound" not in stats
        assert entry["time_factor"] == "11/50" and entry["ratio_to_optimum"] == "33/32"
        assert Fraction(entry["time_factor"]) <= Fraction(entry["rounding_bound"])
        _checked(open(entry["path"]).read(), "rccl", load_topology("mi250:1"))


def test_cli_msccl_writes_only_out_of_place_and_says_why(tmp_path):
    status, out, err = _cli(["export", "dgx-a100:1", "--collective", "alltoall", "--runtime",
                             "msccl", "--placement", "both", "-o", str(tmp_path / "a2a.xml")])  # fmt: skip
    assert status == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a2a.xml"]
    assert "warning: no in-place program: msccl refuses in-place all-to-all calls" in err
    # relays need scratch, which microsoft/msccl sizes from maxBytes
    status, _, err = _cli(["export", "ring:4", "--collective", "alltoall", "--runtime", "msccl",
                           "-o", str(tmp_path / "ring.xml")])  # fmt: skip
    assert status == 2 and "give the largest message with --max-bytes" in err
