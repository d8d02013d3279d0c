"""The dissemination step schedules (multiport Swing on sides not powers of two,
bandwidth-optimal and fused Trivance) written by the step exporters and executed by each format's
independent checker, and timed from the files."""

from __future__ import annotations

import pytest

from optcoll.export.chakra_steps import step_traces
from optcoll.export.msccl_steps import msccl_step_program
from optcoll.export.mscclpp import boxes_of
from optcoll.export.mscclpp_steps import mscclpp_step_plan
from optcoll.schedules.baselines.routing import torus_shape
from optcoll.schedules.baselines.swing import (
    multiport_swing_allgather,
    multiport_swing_allreduce,
    multiport_swing_reduce_scatter,
)
from optcoll.schedules.baselines.trivance import (
    trivance_allgather,
    trivance_bandwidth_allreduce,
    trivance_fused_allreduce,
    trivance_reduce_scatter,
)
from optcoll.sim.programs import mscclpp_tasks
from optcoll.sim.simulator import SimOptions
from optcoll.sim.steps import route_steps, simulate_steps
from optcoll.topologies import build
from optcoll.verify.chakra import verify_traces
from optcoll.verify.msccl import verify_text
from optcoll.verify.mscclpp import verify_plan
from optcoll.verify.mscclpp.plan import parse_plan

CASES = [
    ("ring:9", trivance_allgather),
    ("ring:9", trivance_reduce_scatter),
    ("torus:3x3", trivance_bandwidth_allreduce),
    ("torus:9x9", trivance_bandwidth_allreduce),
    ("ring:6", multiport_swing_allgather),
    ("ring:6", multiport_swing_reduce_scatter),
    ("ring:9", multiport_swing_allreduce),
    ("torus:6x6", multiport_swing_allgather),
    ("ring:8", trivance_fused_allreduce),
    ("torus:4x4", trivance_fused_allreduce),
]


@pytest.mark.parametrize(("spec", "build_schedule"), CASES)
def test_every_format_delivers(spec, build_schedule):
    topology = build(spec)
    schedule = build_schedule(topology.compute_nodes, torus_shape(topology))
    files = step_traces(schedule, 2**20, slice_bytes=2**19)
    report = verify_traces([(f"t.{r}.et", data) for r, data in enumerate(files)])
    assert report.ok and report.judged, report.findings[:2]
    assert verify_text(msccl_step_program(schedule).text).ok
    assert verify_plan(mscclpp_step_plan(schedule, boxes=boxes_of(topology)).document).ok


def test_mscclpp_spreads_scattered_blocks_over_thread_blocks():
    """The Trivance allreduce on torus 4x4 needed 81 ops on one thread block (refused: the
    executor takes 64); each block now carries a stretch of the buffer: 2 blocks of at most
    43 ops, executed correct."""
    topology = build("torus:4x4")
    schedule = trivance_bandwidth_allreduce(topology.compute_nodes, (4, 4))
    plan = mscclpp_step_plan(schedule, boxes=boxes_of(topology))
    assert (plan.threadblocks, plan.max_ops) == (2, 43)
    assert verify_plan(plan.document).ok


def test_mscclpp_plan_on_ring_9_runs_as_plan_without_overhead():
    """One collective on both directions of the ring, each step two partners: the plan's
    puts leave once their own GPU is ready, plan's messages also wait for the receiver."""
    topology = build("ring:9")
    free = SimOptions(0.0, 2**19)
    network = free.network(topology)
    size = 2**20
    schedule = trivance_bandwidth_allreduce(topology.compute_nodes)
    plan = mscclpp_step_plan(schedule, boxes=boxes_of(topology))
    got = free.run(mscclpp_tasks(parse_plan(plan.document), topology, network, size), network, size)
    routed = route_steps(topology, schedule)
    planned = simulate_steps(topology, routed, size, overhead=0.0, slice_bytes=2**19).time_us
    assert got.time_us == pytest.approx(planned, rel=0.02)
