"""export --bands and plan --export write plan's choice in each band, checked and simulated:
the file of a band is what export --size writes at each planned size in it, its simulated
time there is the one reported, and a band ends where plan's file changes."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest

from optcoll.cli import main
from optcoll.export.planned_bands import planned_bands
from optcoll.export.request import ExportRequest
from optcoll.sim.programs import (
    chakra_tasks,
    chakra_ties,
    msccl_tasks,
    mscclpp_tasks,
    read_chakra,
    read_msccl,
)
from optcoll.sim.simulator import Network, simulate
from optcoll.topologies import build
from optcoll.verify.chakra import verify_prefix
from optcoll.verify.msccl import verify_file
from optcoll.verify.mscclpp import verify_plan_file
from optcoll.verify.mscclpp.plan import read_plan

GIB40 = "42.94967296"  # 40 GiB/s in GB/s
BANDS = ["--bands", "--sizes", "1K", "1M", "1G"]


def _limits(text: str) -> str:
    """A file without its band limits (MSCCL minBytes/maxBytes, MSCCL++ message sizes)."""
    text = re.sub(r'(minBytes|maxBytes)="\d+"', r'\1=""', text)
    return re.sub(r'"(min|max)_message_size": \d+', r'"\1_message_size": 0', text)


@pytest.mark.parametrize("fmt", ["msccl", "mscclpp"])
def test_bands_hold_plans_choice_at_every_size(tmp_path, capsys, fmt):
    """ring:4 allgather at 1K, 1M, 1G: each band's file passes its checker, simulates at each
    of its sizes to the time reported there and is, but for its limits, the --size file."""
    suffix = ".xml" if fmt == "msccl" else ".json"
    topology = build("ring:4")
    argv = ["export", "ring:4", "--format", fmt, *BANDS, "--json"]
    assert main([*argv, "-o", str(tmp_path / f"ag{suffix}")]) == 0
    report = json.loads(capsys.readouterr().out)
    entries = [e for e in report["files"] if e["placement"] in ("outofplace", "both")]
    # bands tile the sizes: each starts one byte above the last
    assert entries[0]["min_bytes"] == 0 and entries[-1]["max_bytes"] is None
    for before, after in zip(entries, entries[1:], strict=False):
        assert after["min_bytes"] == before["max_bytes"] + 1
    planned = [one["bytes"] for e in entries for one in e["sizes"]]
    assert planned == [2**10, 2**20, 2**30]
    network = Network.of(topology)
    for entry in entries:
        path = entry["path"]
        if fmt == "msccl":
            assert verify_file(path, topology=topology).ok
            algo = read_msccl(path)
        else:
            assert verify_plan_file(path).ok
            plan = read_plan(path)
        for one in entry["sizes"]:
            size, piece = one["bytes"], one["slice_bytes"]
            graph = (
                msccl_tasks(algo, topology, network, size, slice_bytes=piece)
                if fmt == "msccl"
                else mscclpp_tasks(plan, topology, network, size, slice_bytes=piece)
            )
            assert simulate(graph, network, size).time_us == pytest.approx(
                one["file_time_us"], abs=1e-4
            )
            alone = tmp_path / f"at{size}{suffix}"
            assert main(["export", "ring:4", "--format", fmt, "--size", str(size),
                         "-o", str(alone)]) == 0  # fmt: skip
            capsys.readouterr()
            assert _limits(alone.read_text()) == _limits(open(path).read())


def test_bands_split_where_the_file_changes():
    """ring:4 allgather: at 1K plan chose its direct step schedule (its message to the GPU
    opposite relayed by a neighbour), whose file ties the Trivance and k=1 files at 6.00512
    µs on one channel a pair and runs 6.0032 with a channel per transfer; the multiport
    Swing file, each message in 4 pieces and a channel per transfer, is 6.0016 and is kept
    (the pieces' bytes overlap), and 1 GiB is a band of its own, where the two-channel ring's file (4,029.53 µs)
    beats the file of plan's timetable (4,031.22 µs: MSCCL cannot carry its start times);
    without overhead the timetable's file is the 16M band, at plan's time (the file carries
    its order), while at 64K the multiport Swing file, each message in 4 pieces, is faster
    than plan's timetable."""
    topology = build("ring:4")
    request = ExportRequest("ring:4", "ag.xml", bands=True, sizes=[2**10, 2**30])
    bands = planned_bands(request, topology)
    assert [(b.low, b.high, b.method) for b in bands] == [
        (0, 2**30 - 1, "multiport Swing"),
        (2**30, None, "NCCL-like ring (2 channels)"),
    ]
    (small,), (large,) = (band.sizes for band in bands)
    assert (small.spread, small.pieces) == (True, 4)
    assert small.times[0] == pytest.approx(6.0016, abs=1e-9)
    assert dict((r.method, round(t, 5)) for r, t in small.compared)["direct"] == 6.0032
    assert large.times[0] == pytest.approx(4029.53184, abs=1e-6)
    timetable = dict((r.method, t) for r, t in large.compared)["timetable (k=4)"]
    assert timetable == pytest.approx(4031.22112, abs=1e-6)
    request = ExportRequest("ring:4", "ag.xml", bands=True, sizes=[2**16, 2**24], overhead=0)
    pieces, band = planned_bands(request, topology)
    assert band.method == "timetable (k=4)" and [one.size for one in band.sizes] == [2**24]
    (one,) = band.sizes
    assert one.chosen == band.method
    assert one.times[0] == pytest.approx(one.plan_us, rel=1e-9)
    # at 64K the multiport Swing file in 4 pieces runs below plan's timetable
    (one,) = pieces.sizes
    assert (pieces.method, one.chosen, one.pieces) == ("multiport Swing", "timetable (k=4)", 4)
    assert (round(one.times[0], 4), round(one.plan_us, 4)) == (2.1024, 2.2048)


def test_mscclpp_bands_of_step_schedules(tmp_path, capsys):
    """mesh 3x9 at 40 GiB/s: plan's direct allgather is the band at 64K and timetables
    above: each band passes check-plan, with its own message limits, and runs in plan's
    time. (The direct step sends to 26 peers: four put ops, more than a thread block's 16
    remote buffers, so until session 16 the band was the multiport dimension-wise direct
    allgather, 9.7347 µs against plan's 9.0738; the ops now leave from four thread blocks
    side by side, and the direct file runs in plan's 9.0738.)"""
    out = tmp_path / "ag.json"
    argv = ["export", f"mesh:3x9,bw={GIB40}", "--latency", "0.7", "--format", "mscclpp",
            "--bands", "--sizes", "64K", "1M", "--json", "-o", str(out)]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    methods = [e["method"] for e in report["files"]]
    assert methods == ["direct", "timetable (k=1)"]
    for entry in report["files"]:
        assert verify_plan_file(entry["path"]).ok
        document = json.loads(open(entry["path"]).read())
        assert document["min_message_size"] == entry["min_bytes"]
    assert [e["sizes"][0]["planned"] for e in report["files"]] == ["direct", "timetable (k=1)"]
    for entry in report["files"]:
        (one,) = entry["sizes"]
        assert one["file_time_us"] == pytest.approx(one["plan_time_us"], rel=1e-6)
    assert report["files"][0]["sizes"][0]["file_time_us"] == 9.0738


def test_chakra_bands_reproduce_plans_time(tmp_path, capsys):
    """One trace set per size, each checked by check-et and simulated at plan's time: a
    step schedule at 64K, timetables at 1M and 4M (mesh 3x9, 40 GiB/s, 0.7 µs)."""
    prefix = tmp_path / "ag"
    spec = f"mesh:3x9,bw={GIB40}"
    argv = ["export", spec, "--latency", "0.7", "--format", "chakra", "--bands", "--sizes",
            "64K", "1M", "4M", "--json", "-o", str(prefix)]  # fmt: skip
    assert main(argv) == 0
    sets = json.loads(capsys.readouterr().out)["sets"]
    assert [s["method"] for s in sets] == ["direct", "timetable (k=1)", "timetable (k=4)"]
    topology = build(spec)
    network = Network.of(topology, Fraction(7, 10), store_and_forward=True)
    for entry in sets:
        assert verify_prefix(entry["prefix"]).ok
        assert abs(entry["gap"]) < 1e-4  # these traces run as plan ran them
        traces = read_chakra(entry["prefix"])
        graph = chakra_tasks(traces, topology, network, slice_bytes=entry["slice_bytes"])
        time_us = simulate(graph, network, entry["bytes"], ties=chakra_ties(traces, graph)).time_us
        assert time_us == pytest.approx(entry["file_time_us"], abs=1e-4)


def test_plan_export_writes_the_bands_of_export_bands(tmp_path, capsys):
    """plan --export and export --bands: the same MSCCL programs, byte for byte; plan's
    table gives the file's simulated time, and its model's beside it at each size."""
    sizes = ["--sizes", "1K", "1M", "64M"]
    common = ["ring:8", "--collective", "allreduce", *sizes, "--overhead", "1", "--latency",
              "0.5"]  # fmt: skip
    assert main(["plan", *common, "--export", str(tmp_path / "plan")]) == 0
    out = capsys.readouterr().out
    # plan's one-shot sends to GPUs up to 4 hops round the ring: its file relays them
    # (before relaying, the band's file was k=1's, 20.010 µs)
    assert re.search(
        r"band 0-1048575B \(one-shot\) at 1K: plan's model 3\.041 µs \(one-shot\), the MSCCL "
        r"file simulated 10\.041 µs",
        out,
    )
    # and the time a file gets, with what the file loses of plan's
    assert (
        "  achievable as rccl MSCCL: 10.041 µs, one-shot (3.041 µs in plan's model; as a file "
        "each receive a step of its own (rccl runs no rcs/rrcs); 40 messages relayed by GPUs between)"
    ) in out
    assert re.search(r"\n +1K .* 10\.041\* ", out)  # the table: the file's time
    (tmp_path / "bands").mkdir()
    argv = ["export", *common, "--bands", "--placement", "both"]
    assert main([*argv, "-o", str(tmp_path / "bands" / "ar.xml")]) == 0
    capsys.readouterr()
    planned = sorted(p.read_text() for p in (tmp_path / "plan").glob("*.xml"))
    banded = sorted(p.read_text() for p in (tmp_path / "bands").iterdir())
    assert len(planned) == 3 and planned == banded
