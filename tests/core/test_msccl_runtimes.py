"""The one table of MSCCL runtime rules, and its two readers agreeing on it.

The writer (:mod:`optcoll.export`) and the independent checker (:mod:`optcoll.verify.msccl`)
share the facts of :mod:`optcoll.core.msccl_runtimes` and no code. Here every runtime's
profile is handed to both: the writer, pushed to a limit, must use the limit exactly, the
checker must accept that file under the same profile and refuse it when the limit is one
lower. A reader that took a ``max_*`` as exclusive (the old ``max_count`` 71-against-72
split) fails these tests.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import fields, replace

import pytest

from optcoll.core.msccl_runtimes import DEFAULT_RUNTIME, RUNTIMES, SOURCE_COMMITS, RuntimeProfile
from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.export.msccl import msccl_program
from optcoll.export.msccl_fusion import FUSED
from optcoll.export.runtimes import coll_spelling
from optcoll.verify.msccl import verify_text
from optcoll.verify.msccl.limits import decode
from optcoll.verify.msccl.program import parse_program

NODES = ("g0", "g1", "g2", "g3")
REPOSITORY = {"rccl": "ROCm/rccl", "msccl": "microsoft/msccl", "msccl-executor": "Azure/msccl-executor-nccl"}  # fmt: skip


def _chain(order, chunks):
    return Tree(
        order[0],
        chunks,
        tuple(TreeEdge(a, b, (a, b)) for a, b in zip(order, order[1:], strict=False)),
    )


def _ring(collective, k=3, chunks=(2, 1)):
    """4 GPUs on a bidirectional ring: per root a chain each way carrying ``chunks``
    (none where 0)."""
    trees = []
    for i in range(4):
        cw = [NODES[(i + j) % 4] for j in range(4)]
        ccw = [NODES[(i - j) % 4] for j in range(4)]
        trees += [_chain(order, c) for order, c in ((cw, chunks[0]), (ccw, chunks[1])) if c]
    return Schedule(collective, "ring4", NODES, k, tuple(trees))


def _measured(text):
    """What the file uses of each limit, read from the XML alone."""
    root = ET.fromstring(text)
    steps, blocks, channels, peers, counts = [], [], [], [], []
    for gpu in root.iter("gpu"):
        tbs = gpu.findall("tb")
        blocks.append(len(tbs))
        senders = Counter(tb.get("chan") for tb in tbs if tb.get("send") != "-1")
        receivers = Counter(tb.get("chan") for tb in tbs if tb.get("recv") != "-1")
        peers += [*senders.values(), *receivers.values()]
        for tb in tbs:
            channels.append(int(tb.get("chan")) + 1)
            steps.append(len(tb.findall("step")))
            counts += [int(s.get("cnt")) for s in tb.iter("step") if s.get("type") != "nop"]
    return {
        "max_steps": max(steps),
        "max_threadblocks": max(blocks),
        "max_channels": max(channels),
        "max_peers_per_channel": max(peers),
        "max_count": max(counts),
        "min_count": min(counts),
    }


def _limit_findings(text, profile):
    findings = decode(parse_program(text), profile).findings
    return [f for f in findings if f.kind in ("limit", "spelling")]


def test_every_fact_of_every_runtime_cites_a_file_of_that_runtime():
    facts = [f.name for f in fields(RuntimeProfile) if f.name not in ("name", "sources")]
    assert DEFAULT_RUNTIME in RUNTIMES and set(REPOSITORY.values()) == set(SOURCE_COMMITS)
    for name, profile in RUNTIMES.items():
        assert profile.name == name
        missing = [fact for fact in facts if fact not in profile.sources]
        assert not missing, f"{name}: no source for {missing}"
        wrong = [f for f in facts if not profile.sources[f].startswith(REPOSITORY[name] + " ")]
        assert not wrong, f"{name}: sources of {wrong} name another repository"


def test_the_table_is_read_only():
    with pytest.raises(TypeError):
        RUNTIMES["rccl"].sources["max_count"] = "elsewhere"  # type: ignore[index]
    with pytest.raises(TypeError):
        RUNTIMES["rccl"].collectives["nccl"] = "allreduce"  # type: ignore[index]


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_writer_fills_the_count_limit_and_the_checker_accepts_exactly_that(runtime):
    """At the table's own values: k = max_count + 1 chunks a tree, so some step carries
    exactly ``max_count`` chunks; the checker accepts the file for the runtime and refuses
    one ``cnt`` above the limit (and, where the runtime has one, below the minimum)."""
    profile = RUNTIMES[runtime]
    k = profile.max_count + 1
    program = msccl_program(_ring("allgather", k, (k, 0)), runtime=runtime, max_bytes=1 << 30)
    used = _measured(program.text)
    assert used["max_count"] == profile.max_count
    assert used["min_count"] >= profile.min_count
    assert f'coll="{coll_spelling(profile, "allgather")}"' in program.text
    report = verify_text(program.text, runtime=runtime)
    assert report.ok, [f.message for f in report.findings]
    full = f'cnt="{profile.max_count}"'
    for bad in (profile.max_count + 1, profile.min_count - 1):
        text = program.text.replace(full, f'cnt="{bad}"', 1)
        refused = [f.message for f in _limit_findings(text, profile)]
        assert any(f"cnt={bad}," in message for message in refused), (bad, refused)


# (limits lowered in the profile, the schedule that needs more than they allow)
PRESSED = [
    ({"max_steps": 2}, "allreduce"),
    ({"max_threadblocks": 2}, "allreduce"),
    ({"max_peers_per_channel": 1}, "allgather"),
    ({"max_steps": 2, "max_channels": 5}, "allreduce"),  # 9 steps on one link need 5
]
#: rccl writes a reducing receive as r + re, and a root's first as r, a cpy of its input
#: into its output, then re, in the receive's thread block: three steps
RCCL_PRESSED = {"max_steps": 3}, {"max_steps": 3, "max_channels": 9}


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize(("limits", "collective"), PRESSED)
def test_writer_reaches_a_lowered_limit_and_the_checker_draws_it_at_the_same_value(
    runtime, limits, collective
):
    """One profile for both readers: the writer's file uses each pressed limit exactly,
    the checker under that profile finds nothing wrong, and under the limit minus one
    refuses it. The profile runs no fused steps: its unfused program is the one that
    presses the limits (fused, the writer keeps whichever program has the shorter chain of
    steps, here one of 1-step thread blocks)."""
    unfused = [t for t in RUNTIMES[runtime].launch_step_types if t not in FUSED.values()]
    if runtime == "rccl" and "max_steps" in limits:
        limits = RCCL_PRESSED[0] if len(limits) == 1 else RCCL_PRESSED[1]
    profile = replace(RUNTIMES[runtime], launch_step_types=tuple(unfused), **limits)
    program = msccl_program(_ring(collective), runtime=profile, max_bytes=1 << 20)
    used = _measured(program.text)
    assert all(used[name] <= getattr(profile, name) for name in used if name.startswith("max"))
    assert _limit_findings(program.text, profile) == []
    for name, value in limits.items():
        assert used[name] == value, (name, used)
        tighter = replace(profile, **{name: value - 1})
        assert _limit_findings(program.text, tighter), f"{name} = {value - 1} not enforced"
