"""MSCCL files with a channel per transfer of a GPU pair (``spread``): each receive in a thread
block of its own, so receives one thread block would run one after another (an overhead
each, ``optcoll.sim.programs.msccl_tasks``) run side by side. Every file is judged by the
independent checker under RCCL's rules on its topology, and its simulated time is pinned
(overhead 1 µs, links of 0.5 µs, 512 KiB slices, as ``benchmarks.export_fidelity``)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.export.msccl import msccl_program
from optcoll.export.msccl_steps import msccl_step_program
from optcoll.export.planned_programs import _simulated
from optcoll.schedules.baselines.logstep import recursive_doubling_allgather
from optcoll.schedules.deploy import deployable_schedule
from optcoll.sim.simulator import SimOptions
from optcoll.topologies import build
from optcoll.verify.msccl import verify_text

SIM = SimOptions(1.0, 512 * 1024, Fraction(1, 2))


def _time(text: str, topology, size: int, slice_bytes: int | None = SIM.slice_bytes) -> float:
    network = SIM.network(topology)
    args = (topology, network, size, SIM.overhead, slice_bytes, SIM.default_latency)
    return round(_simulated("msccl", text, *args), 4)


def _checked(text: str, topology) -> None:
    report = verify_text(text, runtime="rccl", topology=topology)
    assert report.ok and report.judged, report.findings[:3]


@pytest.mark.parametrize(
    ("spec", "collective", "one_per_level", "spread", "threadblocks"),
    [
        # k = 4 trees: a GPU receives 4 roots' chunks from one neighbour at one level
        ("hypercube:4", "allgather", 17.5307, 13.0614, 57),
        ("torus:4x4", "allreduce", 34.5922, 31.0819, 56),
        ("dgx-h100:2", "reduce_scatter", 10.0865, 7.2002, 60),
    ],
)
def test_spread_tree_files_run_their_receives_side_by_side(
    spec, collective, one_per_level, spread, threadblocks
):
    topology = build(spec)
    schedule = deployable_schedule(topology, collective).schedule
    level = msccl_program(schedule, runtime="rccl")
    wide = msccl_program(schedule, runtime="rccl", spread=True)
    _checked(wide.text, topology)
    assert (_time(level.text, topology, 2**16), _time(wide.text, topology, 2**16)) == (
        one_per_level,
        spread,
    )
    # within RCCL's 64 thread blocks a GPU (MSCCL_MAX_NUM_THREAD_BLOCKS) and more than before
    assert level.max_threadblocks < wide.max_threadblocks == threadblocks <= 64


def test_spread_step_program_reaches_the_per_hop_floor():
    """Recursive doubling allgather on hypercube:4 at 64 KiB: a message of non-consecutive
    chunks is several runs, which one thread block a connection took one after another
    (15.4096 µs); spread, each step costs a send and a receive (1 µs each), a 0.5 µs link
    and one 4 KiB chunk over 100 GB/s (the chunk a next step forwards first): 4 x 2.5409."""
    topology = build("hypercube:4")
    schedule = recursive_doubling_allgather(topology.compute_nodes)
    times = []
    for spread in (False, True):
        program = msccl_step_program(schedule, runtime="rccl", topology=topology, spread=spread)
        _checked(program.text, topology)
        times.append(_time(program.text, topology, 2**16, None))
    assert times == [15.4096, 10.1638]
    assert times[1] == round(4 * (2 * SIM.overhead + 0.5 + 4096 / 100e3), 4)
