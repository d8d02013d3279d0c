"""MSCCL++ execution plans of an in-network (NVLS) allreduce: switch channels, ``glres``.

Where every compute node links, both ways, to switches that reduce and multicast (one
NVLS domain: ``dgx-h100:1,nvls=1``, ``nvl72:racks=1,nvls=1``), the in-network allreduce
that ``optcoll solve`` and ``optcoll plan`` find (:mod:`optcoll.core.aggregation`: every
GPU's data summed in a switch and multicast back) runs in MSCCL++ on *switch channels*:
a multicast object that binds one buffer of every rank of a group, which the GPU reaches
through the switches (``multimem`` instructions). :func:`mscclpp_nvls_plan` writes it as
MSCCL++'s executor expects (microsoft/mscclpp commit
1f5f065d7b13ab02df32c22568f38785d1eeec01, MIT; facts only):

* each GPU declares its switch channels in ``channels`` as
  ``{"channel_type": "switch", "buffer_type": B, "rank_groups": [{"size": N, "ranks":
  [0, ..., N - 1]}]}`` (``parseChannels`` in ``src/core/executor/execution_plan.cc``;
  ``size`` is the group's rank count, as the DSL's ``RankGroup`` writes it,
  ``python/mscclpp/language/internal/gpu.py``): out of place one on the input
  (``i``) and one on the output (``o``); in place one on the input (the output);
  ``setupConnections`` / ``setupNvlsChannels`` in ``src/core/executor/executor.cc``
  bind each whole buffer (``connectNvlsCollective``, ``bindAllocatedMemory``), so every
  rank declares the same groups in the same order;
* each thread block lists them as ``{"channel_type": "switch", "channel_ids": [...]}``
  and its ``glres`` op names them per buffer with ``switch_channel_id``:
  ``{"name": "glres", "src_buff": [{"switch_channel_id": 0, "index": c, "size": 1}],
  "dst_buff": [{"switch_channel_id": 1, "index": c, "size": 1}], "channel_type":
  "switch", "reduce_op": "sum"}`` (``setupOperation``; the DSL's
  ``GroupLoadReduceStore.to_dict`` in ``python/mscclpp/language/internal/operations.py``);
  ``handleMultiLoadReduceStore`` (``src/core/include/execution_kernel.hpp``) loads chunk
  ``c`` of every bound buffer summed (``multimem.ld_reduce``) and stores the sum into
  chunk ``c`` of every rank's output (``multimem.st``);
* the buffers hold ``N * blocks`` chunks: block ``b`` of GPU ``r`` reduces chunk
  ``r * blocks + b``, so each GPU reduces its ``1 / N`` shard in ``blocks`` thread blocks
  (:data:`NVLS_THREADBLOCKS`, the ``instances=8`` of MSCCL++'s
  ``python/mscclpp/language/tests/single_node/allreduce_nvls_zero_copy.py``), each
  ``glres`` in a ``pipeline`` of :func:`nvls_unit` bytes per unit (as MSCCL++'s
  ``test/executor-tests/execution-plans/reduce_nvls_pipeline.json`` runs it);
* a ``glres`` reads other GPUs' inputs and writes their outputs, so every block first
  hears from every other GPU (it may not have started the collective) and, after its
  store, signals every other GPU, which waits before it ends: a barrier of memory-channel
  ``signal`` / ``wait`` / ``nop`` before and after. With at most 16 peers it is one round
  (a signal to every peer, a wait for every peer: ``MAX_CHANNEL = 16`` channels per
  block, 8 per op, ``src/core/include/execution_common.hpp``); with more, a dissemination
  barrier (Hensgen, Finkel and Manber 1988): in round ``i`` a GPU signals ``r + 2^i`` and
  waits for ``r - 2^i`` (mod ``N``), ``ceil(log2 N)`` rounds.

What a switch channel costs on the wire (the simulator's reader,
:func:`optcoll.sim.programs.mscclpp_tasks`): the issuing GPU's ``glres`` of ``c`` bytes
sends ``c`` up from every GPU of the group to the switch, the sum down to the issuer,
then ``c`` from the issuer to the switch and a copy down to every GPU. Each GPU's link
carries ``(1 + 1 / N) M`` each way, where an aggregation tree with the switch as apex
(plan's model) carries ``M``: the issuer's own copy goes up and down once more.

Examples
--------
>>> from optcoll.topologies import build
>>> plan = mscclpp_nvls_plan(build("dgx-h100:1,nvls=1"), blocks=2)
>>> gpu = plan.document["gpus"][0]
>>> gpu["input_chunks"], [c["channel_type"] for c in gpu["channels"]]
(16, ['memory', 'switch', 'switch'])
>>> [op["name"] for op in gpu["threadblocks"][1]["ops"]]
['signal', 'wait', 'nop', 'pipeline', 'nop', 'signal', 'wait']
>>> gpu["threadblocks"][1]["ops"][3]["ops"][0]["src_buff"]  # block 1 of GPU 0: chunk 1
[{'switch_channel_id': 0, 'index': 1, 'size': 1}]
"""

from __future__ import annotations

from optcoll.core.aggregation import AggregationSchedule, barrier_peers
from optcoll.core.topology import Topology
from optcoll.exceptions import ExportError
from optcoll.export.mscclpp import (
    ALIGNMENT,
    MAX_BUFFER_BYTES,
    MAX_CHANNELS,
    MAX_OPS,
    MAX_PER_OP,
    MAX_UNITS,
    MscclppPlan,
)
from optcoll.sim.nvls_program import NVLS_THREADBLOCKS, nvls_unit

__all__ = ["mscclpp_nvls_plan", "nvls_unit", "NVLS_THREADBLOCKS"]


def _check_schedule(topology: Topology, schedule: AggregationSchedule) -> None:
    """Every tree must sum every compute node's data in one switch of the domain and
    multicast the sum from it over direct links, what a switch channel does: the switch as
    apex (every GPU up, the sum down to every GPU), or a GPU ``r`` as apex (the others up,
    the switch's sum down to ``r``, which adds its own and sends it up to be copied to the
    others: ``solve``'s form)."""
    domain = topology.nvls_domain()
    nodes = set(topology.compute_nodes)
    if set(schedule.compute_nodes) != nodes:
        raise ExportError(
            f"the aggregation schedule serves {len(schedule.compute_nodes)} compute nodes, "
            f"{topology.name} has {len(nodes)}"
        )

    def star(apex: str, s: str) -> tuple[set, set]:
        others = nodes - {apex}
        up = {(g, s, (g, s)) for g in others} | ({(s, apex, (s, apex))} if apex != s else set())
        down = {(s, g, (s, g)) for g in others} | ({(apex, s, (apex, s))} if apex != s else set())
        return up, down

    for i, tree in enumerate(schedule.trees):
        ups = {(e.src, e.dst, e.path) for e in tree.reduce_edges}
        downs = {(e.src, e.dst, e.path) for e in tree.multicast_edges}
        if not any(star(tree.apex, s) == (ups, downs) for s in domain):
            raise ExportError(
                f"aggregation tree {i} (apex {tree.apex!r}) does not sum every GPU in one "
                "NVLS switch and multicast the sum from it over direct links; an MSCCL++ "
                "switch channel plan covers one NVLS domain (every GPU on the same "
                "reducing and multicasting switches)"
            )


def _barrier(rounds: list[tuple[list[int], list[int]]], local: dict[int, int]) -> list[dict]:
    """The ops of a barrier: per round, signals to its peers, waits for its peers, ``nop``
    (``local``: a peer's index in the block's memory channels)."""
    ops: list[dict] = []
    for out, into in rounds:
        for verb, ends in (("signal", out), ("wait", into)):
            for i in range(0, len(ends), MAX_PER_OP):
                ops.append(
                    {
                        "name": verb,
                        "channel_type": "memory",
                        "channel_ids": [local[p] for p in ends[i : i + MAX_PER_OP]],
                    }
                )
        ops.append({"name": "nop"})
    return ops


def mscclpp_nvls_plan(
    topology: Topology,
    schedule: AggregationSchedule | None = None,
    *,
    placement: str = "outofplace",
    name: str | None = None,
    blocks: int = NVLS_THREADBLOCKS,
    unit_size: int | None = None,
    min_message_size: int = 0,
    max_message_size: int | None = None,
) -> MscclppPlan:
    """The MSCCL++ plan of an in-network allreduce on ``topology``'s NVLS domain
    (deterministic; see the module docstring).

    Parameters
    ----------
    topology : Topology
        Its compute nodes are the ranks, in order; all must share an NVLS domain
        (:meth:`Topology.nvls_domain <optcoll.core.topology.Topology.nvls_domain>`).
    schedule : AggregationSchedule, optional
        The in-network allreduce the plan runs (``solve``'s or plan's NVLS candidate):
        each tree one switch of the domain summing every GPU and multicasting back
        (checked). Default: the domain's own.
    placement : str
        ``outofplace`` (switch channels on the input and the output) or ``inplace``
        (one on the input, which is the output).
    blocks : int
        Thread blocks per GPU, each reducing ``1 / blocks`` of its shard.
    unit_size : int, optional
        Bytes per unit of the ``pipeline`` each ``glres`` runs in (default
        :func:`nvls_unit`).
    min_message_size, max_message_size : int
        The band of message sizes the plan serves (default: all up to the largest whose
        buffers stay below 4 GiB).

    Raises
    ------
    ExportError
        No NVLS domain of every compute node, a schedule that is not one, a bad
        placement or block count, or a barrier beyond the executor's limits.
    """
    nodes = topology.compute_nodes
    n = len(nodes)
    if n < 2 or not topology.nvls_domain():
        raise ExportError(
            f"{topology.name}: no switch that reduces and multicasts links to every compute "
            "node, so there is no switch (NVLS) channel over all of them"
        )
    if schedule is not None:
        _check_schedule(topology, schedule)
    if placement not in ("outofplace", "inplace"):
        raise ExportError(f"placement must be outofplace or inplace, got {placement!r}")
    if blocks < 1:
        raise ExportError(f"blocks must be >= 1, got {blocks}")
    unit = nvls_unit(topology, blocks) if unit_size is None else unit_size
    if unit < ALIGNMENT or unit % ALIGNMENT:
        raise ExportError(f"unit_size must be a positive multiple of {ALIGNMENT}, got {unit}")
    chunks = n * blocks
    # input and output hold the message: below 4 GiB (the executor's uint32_t offsets),
    # and a chunk in at most 2^16 - 1 units (handlePipeline counts them in 16 bits)
    high = min(MAX_BUFFER_BYTES, MAX_UNITS * unit * chunks)
    if max_message_size is not None:
        high = min(high, max_message_size)
    bound = ("i", "o") if placement == "outofplace" else ("i",)  # buffers on switch channels
    target = 1 if placement == "outofplace" else 0
    gpus = []
    most = 0
    pairs: set[tuple[int, int]] = set()
    for rank in range(n):
        rounds = barrier_peers(rank, n)
        # in their order after ``rank``: every rank's program is rank 0's rotated (what
        # :func:`optcoll.sim.programs.mscclpp_quotient` checks)
        peers = sorted(
            {p for out, into in rounds for p in out + into}, key=lambda p: (p - rank) % n
        )
        pairs |= {(min(rank, p), max(rank, p)) for p in peers}
        if len(peers) > MAX_CHANNELS:
            raise ExportError(f"a barrier block needs {len(peers)} memory channels")
        # the n-th channel of rank a to b is block n's (paired per peer, in order)
        connected = [p for _ in range(blocks) for p in peers]
        threadblocks = []
        for b in range(blocks):
            index = {p: b * len(peers) + i for i, p in enumerate(peers)}
            local = {p: i for i, p in enumerate(peers)}  # the block's channel list

            chunk = rank * blocks + b
            ops = [
                *_barrier(rounds, local),
                {
                    "name": "pipeline",
                    "iter_context": {"unit_size": unit, "num_chunks": 1},
                    "ops": [
                        {
                            "name": "glres",
                            "src_buff": [{"switch_channel_id": 0, "index": chunk, "size": 1}],
                            "dst_buff": [{"switch_channel_id": target, "index": chunk, "size": 1}],
                            "channel_type": "switch",
                            "reduce_op": "sum",
                        }
                    ],
                },
                {"name": "nop"},
                *_barrier(rounds, local)[:-1],  # a wait ends the kernel: no nop after it
            ]
            if len(ops) + 1 > MAX_OPS:  # the pipeline's inner op counts too
                raise ExportError(f"a thread block needs {len(ops) + 1} ops, above {MAX_OPS}")
            most = max(most, len(ops) + 1)
            threadblocks.append(
                {
                    "id": b,
                    "ops": ops,
                    "channels": [
                        {"channel_type": "memory", "channel_ids": [index[p] for p in peers]},
                        {"channel_type": "switch", "channel_ids": list(range(len(bound)))},
                    ],
                    "remote_buffer_refs": [],
                }
            )
        gpus.append(
            {
                "id": rank,
                "input_chunks": chunks,
                "output_chunks": chunks,
                "scratch_chunks": 0,
                "threadblocks": threadblocks,
                "channels": [
                    {"channel_type": "memory", "connected_to": connected},
                    *(
                        {
                            "channel_type": "switch",
                            "buffer_type": kind,
                            "rank_groups": [{"size": n, "ranks": list(range(n))}],
                        }
                        for kind in bound
                    ),
                ],
                "remote_buffers": [],
                "semaphores": [],
            }
        )
    document = {
        "name": name or f"optcoll allreduce NVLS {topology.name} {placement}",
        "collective": "allreduce",
        "protocol": "Simple",
        "inplace": placement == "inplace",
        "reuse_resources": False,
        "num_threads_per_block": 1024,
        "use_double_scratch_buffer": False,
        "buffer_alignment": ALIGNMENT,
        "min_message_size": min_message_size,
        "max_message_size": high,
        "gpus": gpus,
    }
    return MscclppPlan(document, blocks, most, 1, len(pairs), 0, unit)
