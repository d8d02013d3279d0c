"""Chakra execution traces of a step schedule (recursive doubling, Rabenseifner, Bruck, Swing,
Bine, PAT, hierarchical, direct, ...), one message at a time, sliced as plan simulates it.

A :class:`~optcoll.core.step_schedule.StepSchedule` is steps of messages between compute
nodes (:mod:`optcoll.core.step_schedule`); :func:`step_traces` writes every message as the
simulator runs it (:func:`optcoll.sim.steps.step_tasks`): cut into
:func:`~optcoll.sim.steps.message_slices` equal slices, each its own send and receive, in
the order plan's simulator numbers them (``optcoll_task``) with its place in its link's
queue (``optcoll_order``). A receive that adds (``Send.reduce``) feeds a ``COMP_NODE``
(the reduction). A rank's sends of step ``s`` depend on the receives (and reductions) of
the last step before ``s`` it received in, which come after all its earlier ones, so a
message leaves once its sender holds what it forwards, as plan simulates it; a receive (or
its reduction) also waits for the rank's own sends so far that carry the same data, so
that it never changes data still to be sent.

Data. The ``M``-byte message is the schedule's ``blocks`` blocks (block ``b`` is part of
rank ``b mod N``'s shard; a broadcast's or reduce's blocks are the root's vector), each cut
into ``q`` chunks, ``q`` the least number that puts every slice boundary on a chunk boundary
(1 unless a message's slices cut its blocks; if that is above :data:`MAX_CHUNKS_PER_BLOCK`,
that many, and a message's slices are whole chunks that differ by at most one chunk from the
simulator's equal slices); in the checker's numbering (:mod:`optcoll.verify.chakra`:
``optcoll_chunks = k`` chunks per rank) chunk ``t`` of block ``b`` is
``(b mod N) k + (b div N) q + t``, ``k = q blocks / N`` (a broadcast or reduce: chunk
``b q + t`` of ``k = q blocks``, the root in ``optcoll_root``). A slice that carries several
chunks lists them (``optcoll_chunk_list``, JSON), so ``optcoll check-et`` executes the
traces and judges what every rank ends with.

What the traces add: a receive that would change data its rank is still sending waits for
that send (plan's messages land in fresh buffers, as an MSCCL++ put's), so there a trace
may run behind plan (mesh 3x3 Swing (latency) allreduce at 1 MiB: 83.400 against 69.915
µs; ``tests/export/test_step_exports.py``).

Examples
--------
>>> from optcoll.schedules.baselines.logstep import recursive_doubling_allgather
>>> files = step_traces(recursive_doubling_allgather(("a", "b", "c", "d")), 4096)
>>> len(files), files[0].count(b"comm_tag")  # rank 0: 2 sends and 2 receives
(4, 4)
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

from optcoll.core.arguments import size_argument
from optcoll.core.step_schedule import StepSchedule
from optcoll.exceptions import ExportError
from optcoll.export.chakra import (
    _COMP,
    _RECV,
    _SEND,
    _chunk_bytes,
    _encode,
    _gate_sends,
    _label,
    _Ranks,
)
from optcoll.sim.steps import message_slices

__all__ = ["step_traces", "MAX_CHUNKS_PER_BLOCK"]

#: The most chunks one block is cut into so that every slice is whole chunks.
MAX_CHUNKS_PER_BLOCK = 64


def step_traces(
    schedule: StepSchedule,
    size: int,
    *,
    slice_bytes: int | None = None,
    paths: Mapping[tuple[str, str], Sequence[str]] | None = None,
) -> list[bytes]:
    """The Chakra ET file of every rank (rank ``r`` = ``schedule.compute_nodes[r]``) of
    ``schedule`` for an ``size``-byte collective, each message in slices of at most
    ``slice_bytes`` (None: whole messages), as :func:`optcoll.sim.steps.step_tasks` runs it.
    ``paths`` (each message's path, :attr:`~optcoll.sim.steps.RoutedSteps.paths`): a rank's
    ready sends are chained in queue order only where they enter the same link (without
    them: all of a rank's ready sends, each gate costing ASTRA-sim 1 ns).

    Raises
    ------
    ExportError
        ``size`` too small for a byte per chunk.
    """
    size_argument(size, "size")
    nodes = schedule.compute_nodes
    n, blocks = len(nodes), schedule.blocks
    block_bytes = schedule.block_bytes(size)
    pieces = [
        [message_slices(block_bytes * len(send.blocks), slice_bytes) for send in step]
        for step in schedule.steps
    ]
    q, least = 1, 1
    for step, counts in zip(schedule.steps, pieces, strict=True):
        for send, p in zip(step, counts, strict=True):
            q = math.lcm(q, p // math.gcd(p, len(send.blocks)))
            least = max(least, -(-p // len(send.blocks)))
    if q > MAX_CHUNKS_PER_BLOCK:  # slices of whole chunks, equal to within a chunk
        q = max(MAX_CHUNKS_PER_BLOCK, least)
    if size < blocks * q:
        raise ExportError(
            f"--size {size} bytes is too small: the {schedule.method} {schedule.collective} "
            f"cuts it into {blocks * q} chunks, each needs at least one byte"
        )
    coll = schedule.collective
    rooted = schedule.root is not None
    k = schedule.rank_blocks * q  # chunks per rank in the checker's numbering

    def chunk(b: int, t: int) -> int:
        return b * q + t if rooted else (b % n) * k + (b // n) * q + t

    rank = {v: i for i, v in enumerate(nodes)}
    ranks = _Ranks(n)
    # each rank's receives (and reductions) of the last step it received in: its sends wait
    # for them only (a message leaves once its sender holds what it forwards)
    held: dict[int, list[int]] = {}
    carried: dict[int, list[tuple[frozenset[int], int]]] = defaultdict(list)  # sends so far
    task = 0  # the simulator's task number of each slice
    places: list[tuple[int, int, float]] = []  # (rank, node id, place in its link's queue)
    for step in schedule.steps:
        now: dict[int, list[int]] = defaultdict(list)
        received = []
        for send in schedule.posted(step):  # in the simulator's order
            p = message_slices(block_bytes * len(send.blocks), slice_bytes)
            src, dst = rank[send.src], rank[send.dst]
            units = [chunk(b, t) for b in send.blocks for t in range(q)]
            for piece in range(p):
                labels = units[piece * len(units) // p : (piece + 1) * len(units) // p]
                nbytes = sum(_chunk_bytes(coll, size, n, k, c) for c in labels)
                tag = ranks.tags[(src, dst)]
                ranks.tags[(src, dst)] += 1
                attrs: dict[str, int | str] = {
                    "comm_src": src, "comm_dst": dst, "comm_size": nbytes, "comm_tag": tag,
                    "optcoll_task": task,
                    **_label(tuple(labels)),
                }  # fmt: skip
                task += 1
                ident = ranks.add(src, _SEND, f"send {send.src}->{send.dst} step slice {piece}",
                                  held.get(src, []), **attrs)  # fmt: skip
                ranks.nodes[src][ident].attrs["optcoll_order"] = 0
                places.append((src, ident, piece / p))
                carried[src].append((frozenset(labels), ident))
                received.append((dst, send, piece, labels, attrs))
        for dst, send, piece, labels, attrs in received:
            mine = set(labels)
            # the rank's own sends of the data it receives: a receive never changes data
            # still to be sent
            before = [i for labels_sent, i in carried[dst] if labels_sent & mine]
            recv_attrs = {key: value for key, value in attrs.items() if key != "optcoll_task"}
            recv = ranks.add(dst, _RECV, f"recv {send.src}->{send.dst} slice {piece}",
                             held.get(dst, []) + before, **recv_attrs)  # fmt: skip
            now[dst].append(recv)
            if send.reduce:
                comp = ranks.add(dst, _COMP, f"reduce from {send.src} slice {piece}",
                                 [recv, *before], **_label(tuple(labels)))  # fmt: skip
                now[dst].append(comp)
        for v, idents in now.items():
            held[v] = idents
    # the places as integers (the attribute is an integer): their ranks among them all
    index = {value: i for i, value in enumerate(sorted({p for _, _, p in places}))}
    for src, ident, place in places:
        ranks.nodes[src][ident].attrs["optcoll_order"] = index[place]
    # a rank's sends that wait for the same nodes are issued in the simulator's queue order
    # (each slice's place, then the posting order), whatever order ASTRA-sim issues ready
    # nodes in (Switch 16 two-shot allreduce at 64 KiB: 4,813-4,965 ns by the issue order
    # without the gates)
    rank = {v: r for r, v in enumerate(nodes)}
    hops: dict[tuple[int, int], str | None] = {
        (rank[src], rank[dst]): path[1] for (src, dst), path in (paths or {}).items()
    }
    _gate_sends(ranks, False, hops)
    meta: dict[str, int | str] = {
        "optcoll_ranks": n,
        "optcoll_chunks": k,
        "optcoll_bytes": size,
        "optcoll_members": json.dumps(list(nodes)),
        "optcoll_method": schedule.method,
    }
    if schedule.root is not None:
        meta["optcoll_root"] = rank[schedule.root]
    return _encode(ranks, coll, meta)
