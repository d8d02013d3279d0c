"""What an MSCCL++ plan costs in simulate: one overhead per op that issues a transfer (a put,
a reduce-send, a packet send, a switch op), nothing for the ops that only synchronise
(signal, wait, nop, semaphores) or work locally; the writer's fused ``res`` (reduce and
send on memory channels) is executed by check-plan and simulated as a put; step plans
simulate at plan's time of their schedule."""

from __future__ import annotations

import copy
import json

import pytest

from optcoll.core.topology import TopologyBuilder
from optcoll.export.mscclpp import boxes_of, mscclpp_plan
from optcoll.export.mscclpp_steps import mscclpp_step_plan
from optcoll.schedules.baselines.direct import (
    direct_allgather,
    direct_reduce_scatter,
    two_shot_allreduce,
)
from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
from optcoll.schedules.baselines.trivance import (
    trivance_reduce_scatter,
    trivance_torus_allreduce,
)
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.programs import mscclpp_tasks
from optcoll.sim.simulator import Network, simulate
from optcoll.sim.steps import route_steps, simulate_steps
from optcoll.topologies import build
from optcoll.verify.mscclpp import verify_plan
from optcoll.verify.mscclpp.plan import parse_plan


def _pair():
    """Two GPUs, one link each way of 1 GB/s (1000 B/µs) and 2 µs latency."""
    builder = TopologyBuilder("pair")
    builder.compute("a")
    builder.compute("b")
    builder.link("a", "b", 1, latency=2, bidirectional=True)
    return builder.build()


def _document(sender_ops, receiver_ops):
    """A 2-GPU allgather plan (1 chunk each) whose rank 0 runs ``sender_ops`` and rank 1
    ``receiver_ops`` on one memory channel, rank 0 writing rank 1's output."""

    def gpu(rank, ops, remote):
        block = {
            "id": 0,
            "ops": ops,
            "channels": [{"channel_type": "memory", "channel_ids": [0]}],
        }
        if remote:
            block["remote_buffer_refs"] = [
                {"access_channel_type": "memory", "remote_buffer_ids": [0]}
            ]
        return {
            "id": rank,
            "input_chunks": 1,
            "output_chunks": 2,
            "scratch_chunks": 0,
            "threadblocks": [block],
            "channels": [{"channel_type": "memory", "connected_to": [1 - rank]}],
            "remote_buffers": [{"rank": 1 - rank, "type": "o", "access_channel_types": ["memory"]}]
            if remote
            else [],
        }

    return {
        "name": "pair",
        "collective": "allgather",
        "protocol": "Simple",
        "inplace": False,
        "reuse_resources": False,
        "num_threads_per_block": 1024,
        "use_double_scratch_buffer": False,
        "buffer_alignment": 16,
        "min_message_size": 0,
        "max_message_size": 2**30,
        "gpus": [gpu(0, sender_ops, True), gpu(1, receiver_ops, False)],
    }


PUT = {
    "name": "put",
    "src_buff": [{"type": "i", "index": 0, "size": 1}],
    "dst_buff": [{"buffer_id": 0, "index": 0, "size": 1}],
    "channel_type": "memory",
    "channel_ids": [0],
}
NOP, SIGNAL = {"name": "nop"}, {"name": "signal", "channel_type": "memory", "channel_ids": [0]}
WAIT = {"name": "wait", "channel_type": "memory", "channel_ids": [0]}


def _time(document, size=2000, overhead=1.0):
    topology = _pair()
    network = Network.of(topology)
    graph = mscclpp_tasks(parse_plan(document), topology, network, size)
    return simulate(graph, network, size, overhead=overhead).time_us


def test_only_the_put_costs_the_overhead():
    """A 1000-byte put at 1 GB/s over a 2 µs link: 1 µs overhead + 1 µs + 2 µs = 4 µs; the
    nop, signal and wait around it cost nothing, however many there are (each costed 1 µs
    before: 5 ops on the path, 8 µs); a second put costs a second overhead."""
    assert _time(_document([PUT, NOP, SIGNAL], [WAIT, NOP])) == pytest.approx(4.0, abs=1e-12)
    padded = _document([NOP, PUT, NOP, NOP, SIGNAL, NOP], [NOP, WAIT, NOP, NOP])
    assert _time(padded) == pytest.approx(4.0, abs=1e-12)
    assert _time(_document([PUT, NOP, SIGNAL], [WAIT, NOP]), overhead=3) == pytest.approx(6.0)
    second = dict(PUT, dst_buff=[{"buffer_id": 0, "index": 0, "size": 1}])
    twice = _document([PUT, second, NOP, SIGNAL], [WAIT, NOP])
    # the second put's overhead (1 to 2 µs) overlaps the first put's bytes on the link
    assert _time(twice) == pytest.approx(2 * 1 + 1 + 2, abs=1e-12)


def _ring4_with_memory_channels():
    topology = build("ring:4")
    best = pack_arborescences(topology)
    from optcoll.core.schedule import Schedule

    schedule = Schedule("allreduce", best.topology, best.compute_nodes, best.k, best.trees)
    return topology, mscclpp_plan(schedule, boxes=dict.fromkeys(topology.compute_nodes, "box"))


def _inner_ops(document):
    """Every op of a plan document, a pipeline's inner ops after it."""
    return [
        inner
        for gpu in document["gpus"]
        for tb in gpu["threadblocks"]
        for op in tb["ops"]
        for inner in [op, *op.get("ops", ())]
    ]


def test_sums_sent_on_memory_channels_are_fused_res_ops_check_plan_executes():
    """A sum a GPU sends on memory channels is one ``res`` (REDUCE_SEND); check-plan runs it
    (its remote writes reach the parent) and finds a mutation of its remote range."""
    _, plan = _ring4_with_memory_channels()
    fused = [op for op in _inner_ops(plan.document) if op["name"] == "res"]
    assert fused and all(
        op["channel_type"] == "memory"
        and len(op["dst_buff"]) >= 2
        and "buffer_id" in op["dst_buff"][1]
        for op in fused
    )
    assert verify_plan(plan.document).ok
    # the first res loses its remote write: the parent's sum misses this contribution
    broken = copy.deepcopy(plan.document)
    first = next(op for op in _inner_ops(broken) if op["name"] == "res")
    first.update(name="re", dst_buff=first["dst_buff"][:1])
    del first["channel_type"]
    assert not verify_plan(broken).ok


def test_res_is_simulated_as_a_put():
    """The plan with ``res`` simulates as the same plan written with ``re``, ``nop`` and
    ``put`` (the res writes what the put wrote): ring:4 allreduce at 1 MiB."""
    topology, plan = _ring4_with_memory_channels()
    unfused = copy.deepcopy(plan.document)
    for gpu in unfused["gpus"]:
        for tb in gpu["threadblocks"]:
            for op in tb["ops"]:
                inner = op.get("ops", [])
                for one in [o for o in inner if o["name"] == "res"]:
                    j = inner.index(one)
                    local, *remote = one["dst_buff"]
                    # the res's peers are the channels its signal (after a nop) names
                    signal = next(o for o in inner[j:] if o["name"] == "signal")
                    put = {
                        "name": "put",
                        "src_buff": [local] * len(remote),
                        "dst_buff": remote,
                        "channel_type": "memory",
                        "channel_ids": signal["channel_ids"][: len(remote)],
                    }
                    re = {"name": "re", "src_buff": one["src_buff"], "dst_buff": [local]}
                    inner[j : j + 1] = [re, {"name": "nop"}, put]
    assert verify_plan(unfused).ok
    network = Network.of(topology)
    size = 2**20
    times = [
        simulate(mscclpp_tasks(parse_plan(d), topology, network, size), network, size).time_us
        for d in (plan.document, unfused)
    ]
    assert times[0] == pytest.approx(times[1], rel=1e-12)


@pytest.mark.parametrize(
    ("spec", "make"),
    [
        ("dgx-h100:2", lambda t: recursive_doubling_allreduce(t.compute_nodes)),
        ("torus:3x3", lambda t: trivance_torus_allreduce(t.compute_nodes, (3, 3))),
    ],
)
def test_step_plans_simulate_at_plans_time(spec, make):
    """The MSCCL++ plan of a step schedule simulates at plan's time of the schedule, exactly
    (measured before: dgx-h100:2 recursive doubling at 64 KiB 31.7 against 15.7 µs)."""
    topology = build(spec)
    schedule = make(topology)
    plan = mscclpp_step_plan(schedule, boxes=boxes_of(topology))
    network = Network.of(topology)
    parsed = parse_plan(plan.document)
    n = len(topology.compute_nodes)
    for size in (2**16 // (64 * n) * 64 * n, 2**20 // (64 * n) * 64 * n):
        graph = mscclpp_tasks(parsed, topology, network, size)
        ours = simulate(graph, network, size).time_us
        planned = simulate_steps(topology, route_steps(topology, schedule), size).time_us
        assert ours == pytest.approx(planned, rel=1e-9)


def test_a_reduce_scatter_beyond_64_ops_fits_one_thread_block_with_copy_helpers():
    """Trivance reduce-scatter on torus 9x9 needed 330 ops in one thread block (MSCCL++
    takes 64), and was spread over blocks each carrying a stretch of the buffer (-0.25 %
    against plan at 64 KiB). With its blocks kept in scratch in the order that makes its
    messages fewest runs (``mscclpp_steps._home``) it runs on one thread block (62 ops),
    the input copied into scratch by three helper blocks that a semaphore orders before
    it; it passes check-plan and simulates in plan's time exactly (12.1536 µs)."""
    topology = build("torus:9x9")
    schedule = trivance_reduce_scatter(topology.compute_nodes, (9, 9))
    plan = mscclpp_step_plan(schedule, boxes=boxes_of(topology))
    assert (plan.threadblocks, plan.max_ops) == (1, 62)
    assert len(plan.document["gpus"][0]["threadblocks"]) == 4
    assert verify_plan(json.loads(plan.text)).ok
    network = Network.of(topology)
    size = 2**16 // (81 * 64) * 81 * 64
    ours = simulate(
        mscclpp_tasks(parse_plan(plan.document), topology, network, size), network, size
    )
    planned = simulate_steps(topology, route_steps(topology, schedule), size)
    assert ours.time_us == pytest.approx(planned.time_us, rel=1e-12)
    assert round(ours.time_us, 4) == 12.1536


@pytest.mark.parametrize(
    ("spec", "make", "rel"),
    [
        ("hypercube:4", direct_allgather, 1e-12),
        ("torus:4x4", direct_reduce_scatter, 1e-12),
        ("hypercube:4", two_shot_allreduce, 1e-12),
        # an op's 8 peers over one NIC leave together, plan's messages one after another
        ("dgx-h100:2", direct_allgather, 1e-2),
    ],
)
def test_puts_to_many_peers_leave_from_blocks_of_their_own(spec, make, rel):
    """A direct step to 15 peers is two put ops (8 peers an op); on one thread block they
    paid the overhead one after the other where plan's connections pay it side by side
    (hypercube 4 direct allgather at 64 KiB, overhead 1 µs, latency 0.5 µs: 4.1229 µs
    against plan's 3.2458), and the two-shot allreduce needed 30 remote buffers on one
    block (16 allowed: refused). The second op now leaves from a helper block ordered by
    semaphores: check-plan executes every plan and it simulates in plan's time exactly."""
    topology = build(spec)
    schedule = make(topology.compute_nodes)
    plan = mscclpp_step_plan(schedule, boxes=boxes_of(topology))
    gpu = plan.document["gpus"][0]
    assert (plan.threadblocks, len(gpu["threadblocks"])) == (1, 2)
    assert any(op["name"] == "sem_acquire" for tb in gpu["threadblocks"] for op in tb["ops"])
    assert verify_plan(json.loads(plan.text)).ok
    network = Network.of(topology)
    size = 2**16
    ours = simulate(
        mscclpp_tasks(parse_plan(plan.document), topology, network, size), network, size
    ).time_us
    planned = simulate_steps(topology, route_steps(topology, schedule), size).time_us
    assert ours == pytest.approx(planned, rel=rel)
