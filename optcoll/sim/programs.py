"""Readers of programs the simulator runs: MSCCL algorithm XML, MSCCL++ execution plans and
Chakra execution traces, each turned into a task graph of the event engine
(:mod:`optcoll.sim.simulator`, whose module docstring states the model).

The programs are parsed by the independent checkers' parsers (:mod:`optcoll.verify.msccl`,
:mod:`optcoll.verify.mscclpp`, :mod:`optcoll.verify.chakra`); a program they find wrong is
refused with their first finding. An MSCCL++ plan whose every rank runs rank 0's program
rotated (an NVLS switch-channel plan) is simulated from its quotient
(:func:`mscclpp_quotient`, :mod:`optcoll.sim.quotient`'s argument): rank 0's tasks alone.

Examples
--------
>>> import tempfile, os
>>> from optcoll.topologies import build
>>> from optcoll.schedules.packing import pack_arborescences
>>> from optcoll.export.msccl import to_msccl_xml
>>> topo = build("ring:4")
>>> path = os.path.join(tempfile.mkdtemp(), "ring4.xml")
>>> with open(path, "w") as out:
...     _ = out.write(to_msccl_xml(pack_arborescences(topo)))
>>> round(simulate_msccl(path, topo, 2**20).time_us, 1)
9.9
"""

from __future__ import annotations

import heapq
import json
import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from optcoll.core.cost import DEFAULT_LATENCY
from optcoll.core.msccl_runtimes import DEFAULT_RUNTIME, RUNTIMES
from optcoll.core.schedule import Rotation
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.routing import spread_paths
from optcoll.sim.quotient import Quotient, expand_simulation, free_quotient
from optcoll.sim.simulator import (
    DEFAULT_OVERHEAD,
    DEFAULT_SLICE,
    Network,
    SimOptions,
    Simulation,
    TaskGraph,
    _check_size,
    _slices,
    simulate,
)
from optcoll.verify.chakra import read_traces, verify_traces
from optcoll.verify.chakra.wire import decode_trace
from optcoll.verify.msccl.limits import STEP_SEMANTICS, Algo, decode
from optcoll.verify.msccl.program import read_program

__all__ = [
    "msccl_tasks",
    "simulate_msccl",
    "read_msccl",
    "mscclpp_tasks",
    "mscclpp_quotient",
    "simulate_mscclpp",
    "switch_tasks",
    "ISSUING_OPS",
    "issues",
    "ChakraTraces",
    "read_chakra",
    "decode_chakra",
    "chakra_tasks",
    "chakra_ties",
]


def _sender_paths(
    found: dict[str, dict[str, tuple[str, ...]]], topology: Topology, sender: str
) -> dict[str, tuple[str, ...]]:
    """:func:`optcoll.schedules.baselines.routing.spread_paths` from ``sender``, found once
    per sender (kept in ``found``): a pair's path depends on all of its sender's."""
    if sender not in found:
        found[sender] = spread_paths(topology, sender)
    return found[sender]


# --- MSCCL programs ----------------------------------------------------------------------


def msccl_tasks(
    algo: Algo,
    topology: Topology,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
) -> TaskGraph:
    """The task graph of a decoded MSCCL program for a ``size``-byte collective.

    Rank ``r`` is the ``r``-th compute node; a send travels on the widest path between the
    two (:func:`optcoll.schedules.baselines.routing.spread_paths`: each sender's paths
    least loaded, as plan routes step schedules). The program runs once per slice (its loop),
    every thread block executing its steps in order; the ``i``-th chunk a connection
    (sender, receiver, channel) carries is the ``i``-th its receiver takes; a step with
    ``depid``/``deps`` also waits for that thread block's first ``hasdep`` step at or after
    ``deps``. A step that sends or receives costs its thread block the per-message
    overhead; a local one (``cpy``, ``re``, ``nop``) costs nothing but its place in the
    order and its wait, as the MSCCL++ model's local copies and reductions
    (:func:`issues`): in the kernel (ROCm/rccl ``src/device/msccl_kernel_impl.h``
    325-351, 372-373) a ``re`` or ``cpy`` is the block's threads reading and writing its
    own GPU's memory, then a barrier, with no peer to wait for and no connection to post
    to, and a ``nop`` is no step at all (``msccl_parser.cc`` 538-539, 568: its wait goes to
    the next step); memory bandwidth is not modelled (nor is an ``rrc``'s addition). The message is the buffer ``M``: the output of an allgather, the input of the
    other collectives; its chunk is ``M`` over that buffer's chunks.
    """

    compute = topology.compute_nodes
    if algo.ngpus != len(compute):
        raise ScheduleError(
            f"the program has ngpus={algo.ngpus} but {topology.name} has {len(compute)} "
            "compute nodes"
        )
    buffer = algo.output_chunks if algo.collective == "allgather" else algo.input_chunks
    count, piece = _slices(size / max(buffer, 1), slice_bytes)
    routes: dict[tuple[int, int], tuple[int, ...]] = {}
    found: dict[str, dict[str, tuple[str, ...]]] = {}

    def route(src: int, dst: int) -> tuple[int, ...]:
        if (src, dst) not in routes:
            paths = _sender_paths(found, topology, compute[src])
            routes[(src, dst)] = network.path(paths[compute[dst]])
        return routes[(src, dst)]

    blocks = [(g, tb) for g, tbs in sorted(algo.gpus.items()) for _, tb in sorted(tbs.items())]
    _check_size(2 * count * sum(len(tb.steps) for _, tb in blocks), count)
    graph = TaskGraph()
    last: dict[tuple[int, int], list[int]] = {}  # each thread block's latest step
    for loop in range(count):
        step_task: dict[tuple[int, int, int], int] = {}
        sent: dict[tuple[int, int, int], list[int]] = {}
        for gpu, tb in blocks:
            for step in tb.steps:
                receives, sends = STEP_SEMANTICS[step.type][:2]
                lane = ("tb", gpu, tb.id) if sends or receives else None  # local: no overhead
                task = graph.add(lane, (), 0.0, last.get((gpu, tb.id), []), loop / count)
                step_task[(gpu, tb.id, step.pos)] = task
                if sends and tb.send >= 0:
                    transfer = graph.add(
                        None, route(gpu, tb.send), piece * step.cnt, [task], loop / count
                    )
                    sent.setdefault((gpu, tb.send, tb.chan), []).append(transfer)
                last[(gpu, tb.id)] = [task]
        # receives and dependency flags: extra predecessors, added now that every task exists
        taken: dict[tuple[int, int, int], int] = {}
        for gpu, tb in blocks:
            for step in tb.steps:
                task = step_task[(gpu, tb.id, step.pos)]
                receives = STEP_SEMANTICS[step.type][0]
                if receives and tb.recv >= 0:
                    key = (tb.recv, gpu, tb.chan)
                    n = taken.get(key, 0)
                    taken[key] = n + 1
                    transfers = sent.get(key, [])
                    if n >= len(transfers):
                        raise ScheduleError(
                            f"{step.where()} receives from GPU {tb.recv} on channel {tb.chan}, "
                            "which sends nothing more (run optcoll check-xml)"
                        )
                    _depend(graph, transfers[n], task)
                if step.depid >= 0:
                    flag = _flag_step(algo, gpu, step.depid, step.deps)
                    if flag is None:
                        raise ScheduleError(
                            f"{step.where()} waits for tb {step.depid} step {step.deps}, which "
                            "never sets its flag (run optcoll check-xml)"
                        )
                    _depend(graph, step_task[(gpu, step.depid, flag)], task)
    return graph


#: Packet (LL) ops of MSCCL++ plans: their reads of scratch wait for the packets' flags.
_PACKET_OPS = frozenset("ppkt rppkt cpkt upkt respkt repkt recpkt recspkt".split())
#: MSCCL++ ops that issue a transfer to or from a peer (``execution_kernel.hpp``
#: ``executeDeviceFunction``): puts (``handlePut``: a memory channel's block copies into the
#: peer, a port channel's threads post one proxy request each), ``get``, the reductions that
#: read (``rre``) or write (``res``, ``rres``) peers' memory, packet sends (``ppkt``,
#: ``rppkt``, ``respkt``, ``recspkt``) and switch ops (``glres``, ``gstore``, ``gstorepkt``).
#: Each costs its thread block one overhead per run (per pipeline unit); so does a
#: ``signal`` on a port channel (one proxy request, ``BasePortChannel::signal``, as a put's).
#: The others cost nothing but their waiting: a memory channel's ``signal`` is one thread's
#: store into the peer's semaphore, ``wait`` polls a local one, ``nop`` is
#: ``__syncthreads``, ``flush``, ``sem_*`` and ``barrier`` synchronise, and local copies and
#: reductions (``copy``, ``re``, ``cpkt``, ``upkt``, ``repkt``, ``recpkt``) move no bytes
#: between GPUs (the simulator does not model memory bandwidth).
ISSUING_OPS = frozenset(
    "put pws pwsf get rre res rres ppkt rppkt respkt recspkt glres gstore gstorepkt".split()
)


def issues(op: Any) -> bool:
    """Whether MSCCL++ op ``op`` issues a transfer, and so costs its thread block the
    per-message overhead (:data:`ISSUING_OPS`; a ``signal`` on a port channel too).

    Examples
    --------
    >>> from types import SimpleNamespace as Op
    >>> [issues(Op(name=n, channel_type=c)) for n, c in
    ...  [("put", "memory"), ("signal", "memory"), ("signal", "port"), ("wait", "port")]]
    [True, False, True, False]
    """
    return op.name in ISSUING_OPS or (op.name == "signal" and op.channel_type == "port")


def _packet_tasks(
    graph: TaskGraph,
    op: Any,
    rank: int,
    task: int,
    chunk: float,
    route: Any,
    packets: dict[tuple[int, int], list[int]],
    reads: list[tuple[int, list[tuple[int, int]]]],
) -> None:
    """The transfers of packet op ``op`` (step ``task`` of ``rank``): packets written
    locally (``cpkt``, ``recpkt``'s second output) or sent to a peer's scratch (twice the
    data's bytes: LL packets carry a flag beside each datum), and the scratch chunks whose
    packets it reads (``execution_kernel.hpp``)."""

    def chunks(ref: Any, owner: int) -> list[tuple[int, int]]:
        return [(owner, j) for j in range(ref.index, ref.index + ref.size)]

    name, src, dst = op.name, op.src, op.dst
    read = {"upkt": src[:1], "rppkt": src[:1]}.get(name, src[1:] if name != "ppkt" else ())
    if name == "ppkt" and op.channel_type == "port":
        read = src
    wanted = [c for ref in read for c in chunks(ref, rank)]
    if name not in ("cpkt", "ppkt"):
        reads.append((task, wanted))
    if name == "cpkt" or name in ("recpkt", "recspkt"):
        local = dst[0] if name == "cpkt" else dst[1]
        for cell in chunks(local, rank):
            packets.setdefault(cell, []).append(task)
    for d in dst:
        if not d.remote:
            continue
        sent = []
        count, piece = _slices(2 * d.size * chunk, None)
        for _ in range(count):
            sent.append(graph.add(None, route(rank, d.rank), piece, [task]))
        for cell in chunks(d, d.rank):
            packets.setdefault(cell, []).extend(sent)


def _plan_program(
    ops: Sequence[Any], chunk: float
) -> Iterator[tuple[Any, float, float, tuple[int, int]]]:
    """The ops a plan's thread block runs, in order, each with the byte offset and most
    bytes it moves and its (iteration, iterations) of its loop: a ``pipeline``'s inner ops once
    per unit of its ``num_chunks`` chunks (``ceil(num_chunks chunk / unit_size)`` units,
    ``execution_plan.cc``), other ops once on their whole ranges."""
    o = 0
    while o < len(ops):
        op = ops[o]
        if op.loop is None:
            yield op, 0.0, math.inf, (0, 1)
            o += 1
            continue
        unit, chunks = op.loop
        iterations = max(1, math.ceil(chunks * chunk / unit))
        for i in range(iterations):
            for inner in ops[o + 1 : o + 1 + op.body]:
                yield inner, i * unit, unit, (i, iterations)
        o += 1 + op.body


def _depend(graph: TaskGraph, before: int, task: int) -> None:
    graph.successors[before].append(task)
    graph.waiting[task] += 1


def _flag_step(algo: Algo, gpu: int, tb: int, deps: int) -> int | None:
    """The first step at or after ``deps`` of thread block ``tb`` that sets its flag."""
    block = algo.gpus.get(gpu, {}).get(tb)
    if block is None:
        return None
    for step in block.steps[max(deps, 0) :]:
        if step.hasdep and step.type != "nop":
            return step.pos
    return None


def simulate_msccl(
    source: str,
    topology: Topology,
    size: int,
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    default_latency: Fraction = DEFAULT_LATENCY,
    progress: bool = False,
) -> Simulation:
    """Simulate the MSCCL XML file ``source`` on ``topology`` (see :func:`msccl_tasks`)."""
    algo = read_msccl(source)
    sim = SimOptions(overhead, slice_bytes, default_latency)
    network = sim.network(topology)
    graph = msccl_tasks(algo, topology, network, size, slice_bytes=sim.slice_bytes)
    return sim.run(graph, network, size, progress=progress)


def read_msccl(source: str) -> Algo:
    """Read and decode an MSCCL XML file with the program checker's parser; a file whose
    attributes cannot be decoded is refused with the checker's first finding."""

    decoded = decode(read_program(source), RUNTIMES[DEFAULT_RUNTIME])
    algo, findings = decoded.algo, decoded.findings
    blocking = [f for f in findings if f.kind in ("bounds", "structure")]
    if algo is None or blocking:
        first = (blocking or findings)[0].message if (blocking or findings) else "unreadable"
        raise ScheduleError(f"{source}: cannot be executed: {first}")
    return algo


# --- MSCCL++ execution plans ---------------------------------------------------------------


def mscclpp_tasks(
    plan: Any,
    topology: Topology,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
    signal_flight: bool = False,
    quotient: Quotient | None = None,
) -> TaskGraph:
    """The task graph of an MSCCL++ plan (parsed by :mod:`optcoll.verify.mscclpp.plan`).

    Rank ``r`` is the ``r``-th compute node; a GPU writes to a peer over their direct
    link if they have one (peer-to-peer writes are not relayed by other GPUs), else on
    the widest path between them (each sender's paths least loaded,
    :func:`optcoll.schedules.baselines.routing.spread_paths`). Every thread block runs
    its ops in order (a
    ``pipeline``'s inner ops once per unit). An op that issues a transfer
    (:func:`issues`: a put, a reduction that writes or reads a peer, a packet send, a
    switch op) costs its block the per-message overhead, as plan's step of a connection
    does for each message; the other ops (``signal``, ``wait``, ``nop``, ``sem_*``, local
    copies and reductions) cost nothing but what they wait for. A put sends its chunks
    (or its unit of them) in slices, every destination of the op at once (its threads
    issue them together); the ``n``-th wait on a channel waits for the transfer of the
    put before the ``n``-th signal of its partner (a ``pws`` signals after its own put):
    a signal reaches the peer with the data it orders, as plan's relay forwards a slice
    once it has all of it. ``signal_flight``: a signal is instead a write of its own,
    sent once that data has arrived, and reaches the peer one path latency later (what
    the packet protocol LL saves; :func:`optcoll.export.mscclpp_workflow.ll_limit`
    compares the protocols so). The ``n``-th ``sem_acquire`` of a semaphore waits for
    its ``(n - initial value)``-th ``sem_release``. The message is the output of an
    allgather, the input of the other collectives.

    A switch (NVLS) channel op runs on the switches that reduce and multicast and link to
    every rank of the channel's group (:meth:`Topology.nvls_domain
    <optcoll.core.topology.Topology.nvls_domain>`), its bytes split among them in
    proportion to the issuing GPU's links to them: a ``glres`` of ``c`` bytes sends, slice
    by slice, ``c`` from every rank of the source group up to the switch, the sum down to
    the issuer (``multimem.ld_reduce``), then ``c`` from the issuer up and a copy down to
    every rank of the destination group (``multimem.st``); a ``gstore`` only the second
    half. Like a put, the op is posted: its block goes on, a later signal waits for the
    copies.

    ``quotient`` (:func:`mscclpp_quotient` of this plan): rank 0's tasks alone, on one
    link per orbit (:meth:`Quotient.network <optcoll.sim.quotient.Quotient.network>`);
    the ``n``-th wait of rank 0 on its channel from rank ``p`` waits for the ``n``-th
    signal of rank 0 on its channel to ``-p``, the image of ``p``'s signal under the
    rotation by ``-p`` (:func:`simulate_mscclpp` runs it).
    """
    compute = topology.compute_nodes
    if plan.ranks != len(compute):
        raise ScheduleError(
            f"the plan has {plan.ranks} ranks but {topology.name} has {len(compute)} compute nodes"
        )
    gpus = plan.gpus if quotient is None else plan.gpus[:1]
    if quotient is not None:
        network = quotient.network(network)
    first = plan.gpus[0].chunks
    buffer = first["o"] if plan.collective == "allgather" else first["i"]
    routes: dict[tuple[int, int], tuple[int, ...]] = {}
    found: dict[str, dict[str, tuple[str, ...]]] = {}

    def route(src: int, dst: int) -> tuple[int, ...]:
        if (src, dst) not in routes:
            pair = (compute[src], compute[dst])
            direct = pair if pair in topology.capacity else None
            path = direct or _sender_paths(found, topology, pair[0])[pair[1]]
            routes[(src, dst)] = network.path(path)
        return routes[(src, dst)]

    graph = TaskGraph()

    def flight(src: int, dst: int, after: list[int]) -> list[int]:
        """What a signal from ``src`` to ``dst`` waits for: the data it orders (and, with
        ``signal_flight``, then its own zero-byte write along the path)."""
        if not signal_flight:
            return after
        return [graph.add(None, route(src, dst), 0.0, after)]

    signals: dict[tuple, list[list[int]]] = {}
    waits: list[tuple[int, tuple, int]] = []
    packets: dict[tuple[int, int], list[int]] = {}  # (rank, scratch chunk) -> its writers
    reads: list[tuple[int, list[tuple[int, int]]]] = []
    chunk = size / max(buffer, 1)
    for gpu in gpus:
        for tb in gpu.threadblocks:
            last: list[int] = []
            sent: list[int] = []
            lane = ("tb", gpu.rank, tb.id)
            for op, offset, unit, (i, iterations) in _plan_program(tb.ops, chunk):
                task = graph.add(lane if issues(op) else None, (), 0.0, last)
                last = [task]
                if op.name in ("put", "pws", "pwsf", "res", "rres"):
                    sent = []  # a reduce-send writes its sum to its remote dst_buff as it goes
                    each: list[list[int]] = []  # per destination
                    for d in (d for d in op.dst if d.remote or op.name not in ("res", "rres")):
                        moved = max(0.0, min(d.size * chunk - offset, unit))
                        count, piece = _slices(moved, slice_bytes)
                        each.append(
                            [
                                graph.add(
                                    None,
                                    route(gpu.rank, d.rank),
                                    piece,
                                    [task],
                                    (i + s / count) / iterations,
                                )
                                for s in range(count)
                            ]
                        )
                        sent += each[-1]
                    if op.name != "put" and op.channel_type == "port":
                        # thread j's proxy request puts destination j, then signals its peer
                        for j, (peer, ordinal) in enumerate(op.channel_peers):
                            key = ("port", gpu.rank, peer, ordinal)
                            mine = each[j] if j < len(each) else sent
                            signals.setdefault(key, []).append(
                                flight(gpu.rank, peer, mine or [task])
                            )
                elif op.name in ("signal", "rlxsignal"):
                    for peer, ordinal in op.channel_peers:
                        key = (op.channel_type, gpu.rank, peer, ordinal)
                        signals.setdefault(key, []).append(flight(gpu.rank, peer, sent or [task]))
                elif op.name in ("wait", "rlxwait"):
                    for peer, ordinal in op.channel_peers:
                        key = (op.channel_type, peer, gpu.rank, ordinal)
                        if quotient is not None:  # the signal's image from rank 0
                            key = (op.channel_type, 0, (gpu.rank - peer) % plan.ranks, ordinal)
                        waits.append((task, key, 0))
                elif op.name in ("glres", "gstore"):
                    sent = []
                    for d in op.src[:1]:  # the kernel moves the source range's bytes
                        moved = max(0.0, min(d.size * chunk - offset, unit))
                        count, piece = _slices(moved, slice_bytes)
                        source, target, domain = _switch_ranks(plan, topology, gpu.rank, op)
                        for s in range(count):
                            sent += switch_tasks(
                                graph, topology, network, gpu.rank, source, target, piece,
                                task, (i + s / count) / iterations, domain=domain,
                            )  # fmt: skip
                elif op.name in _PACKET_OPS:
                    _packet_tasks(graph, op, gpu.rank, task, chunk, route, packets, reads)
                    sent = []
                elif op.name == "sem_release":
                    for sem in op.semaphores:
                        signals.setdefault(("sem", gpu.rank, sem), []).append([task])
                elif op.name == "sem_acquire":
                    for sem in op.semaphores:
                        waits.append((task, ("sem", gpu.rank, sem), gpu.semaphores[sem]))
    for task, cells in reads:  # a packet is read once its flag is there: once written
        for cell in cells:
            writers = packets.get(cell)
            if writers is None:
                raise ScheduleError(
                    f"rank {cell[0]} reads packets of scratch chunk {cell[1]} that nothing "
                    "writes (run optcoll check-plan)"
                )
            for before in writers:
                _depend(graph, before, task)
    taken: dict[tuple, int] = {}
    for task, key, initial in waits:
        n = taken.get(key, 0) - initial
        taken[key] = taken.get(key, 0) + 1
        if n < 0:  # a semaphore's initial value lets its first acquires through
            continue
        sources = signals.get(key, [])
        if n >= len(sources):
            what = (
                f"a sem_acquire of semaphore {key[2]} of rank {key[1]} has no sem_release"
                if key[0] == "sem"
                else f"a wait on {key[0]} channel {key[3]} of rank {key[2]} to rank "
                f"{key[1]} has no signal"
            )
            raise ScheduleError(f"{what} (run optcoll check-plan)")
        for before in sources[n]:
            _depend(graph, before, task)
    return graph


def _switch_ranks(
    plan: Any, topology: Topology, rank: int, op: Any
) -> tuple[list[int] | None, list[int], tuple[str, ...]]:
    """The ranks a ``glres`` / ``gstore`` of ``rank`` loads from (None: a ``gstore``) and
    stores to, each in order after ``rank`` (every rank's tasks are rank 0's rotated), and
    the switches that serve them (see :func:`mscclpp_tasks`)."""
    compute = topology.compute_nodes
    gpu = plan.gpus[rank]
    refs = (op.src[:1] if op.name == "glres" else ()) + op.dst[:1]
    if len(refs) < 1 + (op.name == "glres") or any(r.switch is None for r in refs):
        raise ScheduleError(
            f"rank {rank}'s {op.name} names no switch channel (run optcoll check-plan)"
        )
    n = plan.ranks

    def after_rank(group: Any) -> list[int]:
        return sorted(group.ranks, key=lambda m: (m - rank) % n)

    source = after_rank(gpu.switches[op.src[0].switch]) if op.name == "glres" else None
    target = after_rank(gpu.switches[op.dst[0].switch])
    members = sorted(set(target) | set(source or ()))
    domain = topology.nvls_domain(compute[m] for m in members)
    if not domain:
        raise ScheduleError(
            f"rank {rank}'s {op.name}: no switch of {topology.name} reduces and multicasts "
            f"and links to every rank of its switch channel {list(target)}"
        )
    return source, target, domain


def switch_tasks(
    graph: TaskGraph,
    topology: Topology,
    network: Network,
    rank: int,
    source: Sequence[int] | None,
    target: Sequence[int],
    piece: float,
    task: int,
    order: float,
    *,
    domain: Sequence[str],
) -> list[int]:
    """One ``piece``-byte slice of a switch-channel op of ``rank`` (step ``task``) on the
    switches ``domain``, its bytes split among them in proportion to ``rank``'s links to
    them: with ``source`` (a ``glres``, ``multimem.ld_reduce``) every source rank's copy up
    and the sum down to ``rank``; then (``multimem.st``) the sum up from ``rank`` and a
    copy down to every ``target`` rank. Returns the copies down, which a later signal
    waits for (:func:`mscclpp_tasks`; plan's model of the NVLS program,
    :func:`optcoll.sim.nvls_program.nvls_program_tasks`, builds its slices so too)."""
    compute = topology.compute_nodes
    me = compute[rank]
    total = sum(topology.capacity[(me, w)] for w in domain)
    copies = []
    for w in domain:
        share = piece * float(topology.capacity[(me, w)] / total)
        after = [task]
        if source is not None:  # multimem.ld_reduce: every rank's copy up, the sum down
            ups = [
                graph.add(None, network.path((compute[m], w)), share, [task], order) for m in source
            ]
            after = [graph.add(None, network.path((w, me)), share, ups, order)]
        up = graph.add(None, network.path((me, w)), share, after, order)  # multimem.st
        copies += [
            graph.add(None, network.path((w, compute[m])), share, [up], order) for m in target
        ]
    return copies


def mscclpp_quotient(
    plan: Any, topology: Topology, network: Network, *, signal_flight: bool = False
) -> Quotient | None:
    """The :class:`~optcoll.sim.quotient.Quotient` of an MSCCL++ plan under the rotation
    of its ranks by one place (the ``r``-th compute node to the ``r + 1``-th, switches
    fixed), or None: it is simulated in full.

    Checked, not assumed: the rotation is an automorphism of the network that moves every
    link (:func:`~optcoll.sim.quotient.free_quotient`, exactly), every rank's program is
    rank 0's moved ``r`` places (every rank ``p`` it names read as ``p + r`` and every
    chunk ``j`` of a buffer of ``C`` chunks as ``j + r C / N``, mod ``N`` and ``C``; the
    ranks of a switch channel's group as a set), rank 0 writes to (and, with
    ``signal_flight``, signals) its peers over direct links (the reader's route, which
    the rotation moves to the peer's) and no op
    is a packet op (their flags would need their cells moved too). Then every task of
    :func:`mscclpp_tasks` is the image of one of rank 0's under one rotation, the run in
    an equivariant order is equivariant, and rank 0's tasks on one link per orbit give its
    time (:mod:`optcoll.sim.quotient`'s argument; ``tests/sim/test_mscclpp_quotient.py``
    compares the two runs): ``N`` times fewer tasks.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.export.mscclpp_nvls import mscclpp_nvls_plan
    >>> from optcoll.verify.mscclpp.plan import parse_plan
    >>> topo = build("dgx-h100:1,nvls=1")
    >>> document = mscclpp_nvls_plan(topo, blocks=2).document
    >>> mscclpp_quotient(parse_plan(document), topo, Network.of(topo)).order
    8
    >>> document["gpus"][3]["threadblocks"][1]["ops"][3]["ops"][0]["src_buff"][0]["index"] = 0
    >>> mscclpp_quotient(parse_plan(document), topo, Network.of(topo)) is None
    True
    """
    compute = topology.compute_nodes
    n = len(compute)
    if n < 2 or plan.ranks != n:
        return None
    first = plan.gpus[0]
    ops = [op for gpu in plan.gpus for tb in gpu.threadblocks for op in tb.ops]
    if any(op.name in _PACKET_OPS for op in ops):
        return None
    # the peers the reader routes to: those it writes, and with signal_flight signals
    peers = {x.rank for tb in first.threadblocks for op in tb.ops for x in (*op.src, *op.dst)
             if x.remote and x.switch is None}  # fmt: skip
    if signal_flight:
        peers |= {p for tb in first.threadblocks for op in tb.ops if op.channel_type != "switch"
                  for p, _ in op.channel_peers}  # fmt: skip
    if any((compute[0], compute[p]) not in topology.capacity for p in peers):
        return None
    rotation = Rotation(n, {v: compute[(i + 1) % n] for i, v in enumerate(compute)})
    quotient = free_quotient(topology, network, rotation, compute[:1])
    if quotient is None:
        return None
    for r, gpu in enumerate(plan.gpus[1:], 1):
        moved = _moved_program(first, r, n)
        if moved is None or moved != _moved_program(gpu, 0, n):
            return None
    return quotient


def _moved_program(gpu: Any, r: int, n: int) -> tuple | None:
    """Rank ``gpu``'s program with every rank ``p`` it names read as ``p + r`` and every
    chunk ``j`` of a buffer of ``C`` chunks as ``j + r C / n`` (mod ``n`` and ``C``), in a
    form that compares equal to the program of the rank it lands on if that rank runs
    it; None if a buffer's chunks do not split in ``n`` or a range would wrap around."""
    chunks = gpu.chunks

    def moved(ref: Any) -> Any:
        count = chunks[ref.kind]
        if count % n:
            raise _Unmoved
        index = (ref.index + r * count // n) % count
        if index + ref.size > count:
            raise _Unmoved
        return replace(ref, rank=(ref.rank + r) % n, index=index)

    def peers(pairs: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
        return tuple(((p + r) % n, o) for p, o in pairs)

    try:
        blocks = tuple(
            (
                tb.id,
                tuple(
                    replace(
                        op,
                        channel_peers=op.channel_peers
                        if op.channel_type == "switch"
                        else peers(op.channel_peers),
                        src=tuple(moved(x) for x in op.src),
                        dst=tuple(moved(x) for x in op.dst),
                    )
                    for op in tb.ops
                ),
            )
            for tb in gpu.threadblocks
        )
    except _Unmoved:
        return None
    groups = tuple(
        (
            frozenset((q + r) % n for q in group.ranks),
            group.kind,
            frozenset(((q + r) % n, kind) for q, kind in group.members.items()),
        )
        for group in gpu.switches
    )
    channels = {kind: peers(pairs) if kind != "switch" else tuple(pairs)
                for kind, pairs in gpu.channels.items()}  # fmt: skip
    return (tuple(sorted(chunks.items())), channels, groups, tuple(gpu.semaphores), blocks)


class _Unmoved(Exception):
    """A program the rotation cannot move (:func:`_moved_program`)."""


def simulate_mscclpp(
    plan: Any,
    topology: Topology,
    network: Network,
    size: int,
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    signal_flight: bool = False,
    progress: bool = False,
) -> Simulation:
    """Run an MSCCL++ plan (:func:`mscclpp_tasks`): from its quotient
    (:func:`mscclpp_quotient`, rank 0's tasks in an equivariant order, every link's busy
    time its orbit representative's) where it has one, else in full.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.export.mscclpp_nvls import mscclpp_nvls_plan
    >>> from optcoll.verify.mscclpp.plan import parse_plan
    >>> topo = build("dgx-h100:1,nvls=1")
    >>> plan = parse_plan(mscclpp_nvls_plan(topo).document)
    >>> run = simulate_mscclpp(plan, topo, Network.of(topo), 2**30)
    >>> round(run.time_us, 1), run.tasks
    (2696.8, 311680)
    """
    quotient = mscclpp_quotient(plan, topology, network, signal_flight=signal_flight)
    graph = mscclpp_tasks(plan, topology, network, size, slice_bytes=slice_bytes,
                          signal_flight=signal_flight, quotient=quotient)  # fmt: skip
    if quotient is None:
        return simulate(graph, network, size, overhead=overhead, progress=progress)
    run = simulate(graph, network, size, overhead=overhead, progress=progress,
                   ties=range(len(graph)))  # fmt: skip
    return expand_simulation(run, quotient, network)


# --- Chakra execution traces ---------------------------------------------------------------


@dataclass(frozen=True)
class ChakraTraces:
    """Decoded Chakra traces of one collective (:func:`read_chakra`): each rank's nodes, the
    message size and collective their metadata names (None if absent) and the compute nodes
    of the ranks (``optcoll_members``; None: the topology's compute nodes in order)."""

    nodes: tuple[tuple[Any, ...], ...]
    size: int | None
    collective: str | None
    root: int | None
    members: tuple[str, ...] | None

    @property
    def sliced(self) -> bool:
        """Whether the traces are already cut into plan's slices: their sends carry
        ``optcoll_order`` (:func:`optcoll.export.chakra.chakra_traces` writes it), and they
        run once, each send whole (:func:`chakra_tasks`)."""
        return any(
            node.get("optcoll_order") is not None
            for nodes in self.nodes
            for node in nodes
            if node.type == 5  # COMM_SEND_NODE
        )


def read_chakra(prefix: str) -> ChakraTraces:
    """Read ``PREFIX.<rank>.et`` with the trace checker's decoder; traces the checker finds
    wrong are refused with its first finding (run ``optcoll check-et``)."""
    return decode_chakra(read_traces(prefix), prefix)


def decode_chakra(
    raw: Sequence[tuple[str, bytes]], prefix: str, *, checked: bool = True
) -> ChakraTraces:
    """Decode each rank's trace ``(name, data)`` of one set (``prefix``, for messages) with
    the trace checker's decoder, once the checker accepts them (``checked=False``: without
    running the checker, for traces a writer has just made and that are checked when
    written out).

    Raises
    ------
    ScheduleError
        The trace checker's first finding.
    """
    if checked:
        report = verify_traces(list(raw))
        if not report.ok:
            raise ScheduleError(f"{prefix}: cannot be simulated: {report.findings[0].message}")
        decoded = report.decoded
    else:
        decoded = [decode_trace(data, name) for name, data in raw]
    meta = decoded[0][0]

    def value(name: str) -> Any:
        attr = meta.get(name)
        return None if attr is None else attr.value

    members = value("optcoll_members")
    return ChakraTraces(
        tuple(tuple(nodes) for _, nodes in decoded),
        value("optcoll_bytes"),
        value("collective"),
        value("optcoll_root"),
        None if members is None else tuple(json.loads(members)),
    )


def chakra_tasks(
    traces: ChakraTraces,
    topology: Topology,
    network: Network,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
) -> TaskGraph:
    """The task graph of Chakra traces, run as ASTRA-sim runs them: a node starts once its
    dependencies have finished; a send is a step of its connection (sender, receiver) and then
    a transfer on the widest path between the two (each sender's paths least loaded,
    :func:`optcoll.schedules.baselines.routing.spread_paths`; one task, as :func:`tree_tasks` builds a
    tree edge's); a receive finishes when the ``i``-th send of its (source, destination, tag,
    size) arrives (``i`` its place in the receiver's dependency order) and its dependencies
    have finished; a reduction when its dependencies have (neither is a task: no cost). As with MSCCL programs, the traces run once per
    slice: a transfer of ``b`` bytes moves ``b / count`` per loop, ``count`` the slices of the
    largest transfer. A link serves its waiting slices earliest loop first; traces whose
    nodes carry ``optcoll_order`` (as :func:`optcoll.export.chakra.chakra_traces` writes
    sliced traces) are served in that order, then by loop. Such traces are already cut
    into slices (each send one, as plan ran it): they run once, every send moved whole as
    ASTRA-sim moves it, whatever ``slice_bytes`` (step traces cut a message at chunk
    boundaries, so a slice may exceed plan's by a byte: sliced again, every transfer would
    be halved).
    """
    compute = traces.members or tuple(topology.compute_nodes)
    missing = [v for v in compute if v not in topology.compute_nodes]
    if len(compute) != len(traces.nodes) or missing:
        raise ScheduleError(
            f"the traces have {len(traces.nodes)} ranks"
            + (f" on compute nodes {', '.join(missing)} not" if missing else "")
            + f" in {topology.name} ({len(topology.compute_nodes)} compute nodes)"
        )
    kinds = {5: "send", 6: "recv", 4: "comp"}
    sizes = [
        node.get("comm_size").value
        for nodes in traces.nodes
        for node in nodes
        if kinds.get(node.type) == "send"
    ]
    count = 1 if traces.sliced else _slices(max(sizes, default=1), slice_bytes)[0]
    _check_size(2 * count * sum(len(nodes) for nodes in traces.nodes), count)
    routes: dict[tuple[int, int], tuple[int, ...]] = {}
    found: dict[str, dict[str, tuple[str, ...]]] = {}

    def route(src: int, dst: int) -> tuple[int, ...]:
        if (src, dst) not in routes:
            paths = _sender_paths(found, topology, compute[src])
            routes[(src, dst)] = network.path(paths[compute[dst]])
        return routes[(src, dst)]

    orders = [_dependency_order(nodes) for nodes in traces.nodes]
    graph = TaskGraph()

    def place(node: Any, loop: int) -> float:
        given = node.get("optcoll_order")
        return loop / count if given is None else given.value * count + loop

    # sends in the order their tasks are made: by optcoll_task where the traces give it (the
    # number tree_tasks gives them, so ties go as there), else rank by rank
    ranked = [(rank, node) for rank, ordered in enumerate(orders) for node in ordered]
    issued = sorted(
        ((rank, node) for rank, node in ranked if kinds[node.type] == "send"),
        key=lambda pair: _task_number(pair[1]),
    )
    for loop in range(count):
        sends: dict[tuple[int, int], int] = {}  # (rank, send id) -> its transfer
        sent: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for rank, node in issued:
            peer = node.get("comm_dst").value
            size = node.get("comm_size").value
            sends[(rank, node.id)] = graph.add(
                ("send", rank, peer), route(rank, peer), size / count, (), place(node, loop)
            )
            sent[(rank, peer, node.get("comm_tag").value, size)].append(sends[(rank, node.id)])
        received: dict[tuple[int, ...], list[tuple[int, int]]] = defaultdict(list)
        for rank, node in ranked:
            if kinds[node.type] == "recv":
                peer, size = node.get("comm_src").value, node.get("comm_size").value
                received[(peer, rank, node.get("comm_tag").value, size)].append((rank, node.id))
        arrival = {
            receive: transfer
            for matched, receives in received.items()
            for transfer, receive in zip(sent[matched], receives, strict=True)
        }
        # a receive or a reduction costs nothing: it finishes with the transfers it waits for
        done: dict[tuple[int, int], set[int]] = {}  # (rank, node id) -> those transfers
        waits: dict[tuple[int, int], set[int]] = {}
        for rank, node in ranked:
            key = (rank, node.id)
            waits[key] = set().union(*(done[(rank, d)] for d in (*node.data_deps, *node.ctrl_deps)))
            if key in sends:
                done[key] = {sends[key]}
            else:
                done[key] = waits[key] | ({arrival[key]} if key in arrival else set())
        for rank, node in issued:
            for before in sorted(waits[(rank, node.id)]):
                _depend(graph, before, sends[(rank, node.id)])
    return graph


def chakra_ties(traces: ChakraTraces, graph: TaskGraph) -> list[int] | None:
    """The tie keys of :func:`chakra_tasks`'s ``graph`` of ``traces``: each send's
    ``optcoll_tie`` (written for a compact schedule, the same on every translate,
    :func:`optcoll.sim.quotient.translate_ties`), per loop; None if a send has none.

    Examples
    --------
    >>> chakra_ties(ChakraTraces(((),), None, "allgather", None, None), TaskGraph()) is None
    True
    """
    sends = sorted(
        (node for nodes in traces.nodes for node in nodes if node.type == 5), key=_task_number
    )
    keys = [node.get("optcoll_tie") for node in sends]
    if not keys or any(key is None for key in keys) or len(graph) % len(keys):
        return None
    count = len(graph) // len(keys)
    return [key.value * count + loop for loop in range(count) for key in keys]


def _task_number(node: Any) -> int:
    """A send's ``optcoll_task`` (0 without one: the sort keeps file order)."""
    given = node.get("optcoll_task")
    return 0 if given is None else given.value


def _dependency_order(nodes: Sequence[Any]) -> list[Any]:
    """``nodes`` in dependency order (ties in file order)."""
    by_id = {node.id: node for node in nodes}
    waiting = {node.id: len({*node.data_deps, *node.ctrl_deps}) for node in nodes}
    children: dict[int, list[int]] = defaultdict(list)
    for node in nodes:
        for dep in {*node.data_deps, *node.ctrl_deps}:
            children[dep].append(node.id)
    position = {node.id: i for i, node in enumerate(nodes)}
    queue = [(position[node.id], node.id) for node in nodes if waiting[node.id] == 0]
    heapq.heapify(queue)
    order = []
    while queue:
        _, ident = heapq.heappop(queue)
        order.append(by_id[ident])
        for child in children[ident]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(queue, (position[child], child))
    return order
