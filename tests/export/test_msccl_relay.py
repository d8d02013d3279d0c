"""MSCCL step programs whose messages cross GPUs the topology does not connect: relayed.

MSCCL opens a connection only between GPUs joined by a link or switches (check-xml with the
topology refuses any other pair), so a log-step schedule whose partners are further apart
(one-shot on a ring, dimension-wise schedules on a torus) is written with each such message
received into scratch by the GPUs of a shortest path and sent on
(:func:`optcoll.export.msccl_steps.relay_paths`); on runtimes that run ``rcs`` a relay is one
fused step. Each file below is judged by the independent checker with the topology (depths
1, 2 and 8) and its simulated time is the one the export reports.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from optcoll.export.msccl_steps import msccl_step_program, relay_paths
from optcoll.export.planned import planned_choices
from optcoll.export.request import ExportRequest
from optcoll.export.workflow import export_files
from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
from optcoll.topologies import build
from optcoll.verify.msccl import verify_text


def _export(tmp_path, runtime: str, size: int) -> tuple[dict, dict, str]:
    path = tmp_path / f"{runtime}.xml"
    report = export_files(
        ExportRequest("torus:4x4", str(path), collective="allreduce", format="msccl",
                      size=size, overhead=1, latency=Fraction(1, 2), runtime=runtime)
    )  # fmt: skip
    [entry] = report.data["files"]
    compared = {
        c["method"]: (c["plan_time_us"], c["file_time_us"]) for c in report.data["compared"]
    }
    return entry, compared, path.read_text()


def test_relayed_one_shot_is_the_fastest_msccl_executor_file(tmp_path):
    """torus 4x4 allreduce at 64 KiB: plan's multiport dimension-wise (one-shot + one-shot),
    5.3107 µs, sends each half to the GPU two hops away in its ring of four. Relayed (an
    rcs on the GPU between), with its reductions as r + re so a rank's three receives of a
    phase run side by side, its msccl-executor file is the fastest: 9.3107 µs, 4 overheads
    above plan (a receive step and a relay step a phase), where the band file was
    multiport Swing (latency)'s 10.6554 before."""
    entry, compared, text = _export(tmp_path, "msccl-executor", 2**16)
    assert entry["method"] == "multiport dimension-wise (one-shot + one-shot)"
    assert (entry["plan_time_us"], entry["file_time_us"]) == (5.3107, 9.3107)
    assert compared["multiport Swing (latency)"] == (6.6554, 10.6554)
    assert text.count('type="rcs"') == 64 and 'type="rrc"' not in text and 'type="re"' in text
    report = verify_text(text, runtime="msccl-executor", topology=build("torus:4x4"))
    assert report.ok and report.executed


def test_relayed_one_shot_on_rccl_pays_two_steps_a_relay(tmp_path):
    """The same schedule for RCCL, which runs no rcs: each relay is an r and an s, so the file
    takes 11.3107 µs and multiport Swing (latency)'s 10.6554 stays the fastest file; the
    relayed file is still correct for RCCL with the topology."""
    entry, compared, _ = _export(tmp_path, "rccl", 2**16)
    assert entry["method"] == "multiport Swing (latency)" and entry["file_time_us"] == 10.6554
    assert compared["multiport dimension-wise (one-shot + one-shot)"] == (5.3107, 11.3107)
    topology = build("torus:4x4")
    (choice,) = planned_choices(topology, "allreduce", [2**16], overhead=1,
                                default_latency=Fraction(1, 2), every_candidate=True)  # fmt: skip
    method = "multiport dimension-wise (one-shot + one-shot)"
    schedule = next(r.schedule for r in choice.ranked if r.method == method)
    text = msccl_step_program(schedule, runtime="rccl", topology=topology).text
    assert 'type="rcs"' not in text and 'type="rrc"' not in text
    report = verify_text(text, runtime="rccl", topology=topology)
    assert report.ok and report.executed
    # without the topology the program names GPU pairs two hops apart: refused
    bare = msccl_step_program(schedule, runtime="rccl").text
    refused = verify_text(bare, runtime="rccl", topology=topology)
    assert not refused.ok and "has no link or switch path" in refused.findings[0].message


def test_relay_paths_spread_both_ways_round_each_ring():
    """Recursive doubling on torus 4x4: its distance-2 partners (steps 1 and 3) are relayed,
    each by the GPU between, and every directed link carries the same number of relayed
    messages in a step (the least-loaded shortest path); its distance-1 ones are not."""
    topology = build("torus:4x4")
    schedule = recursive_doubling_allreduce(topology.compute_nodes)
    paths = relay_paths(schedule, topology)
    assert {s for s, _ in paths} == {1, 3}
    assert all(len(path) == 3 for path in paths.values())
    for step in (1, 3):
        load = Counter(
            hop
            for (s, _), path in paths.items()
            if s == step
            for hop in zip(path, path[1:], strict=False)
        )
        assert len(load) == 32 and set(load.values()) == {1}


@pytest.mark.parametrize("runtime", ["rccl", "msccl", "msccl-executor"])
def test_relayed_recursive_doubling_is_correct_on_every_runtime(runtime):
    """microsoft/msccl reads only ``inplace`` (``inplace="0"``: an out-of-place file), and
    its step programs were refused before ("reads only in-place programs"); with a bounded
    maxBytes (it allocates scratch by maxBytes) the relayed program passes its checker."""
    topology = build("torus:4x4")
    schedule = recursive_doubling_allreduce(topology.compute_nodes)
    program = msccl_step_program(schedule, runtime=runtime, topology=topology, max_bytes=2**30)
    assert 'inplace="0" outofplace="1"' in program.text
    report = verify_text(program.text, runtime=runtime, topology=topology)
    assert report.ok and report.executed
