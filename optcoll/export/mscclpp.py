"""MSCCL++ JSON execution plans from tree schedules and all-to-all routes.

MSCCL++ (microsoft/mscclpp) runs a collective from a JSON *execution plan*: per GPU, its
buffers cut into chunks, its channels (``memory``: CUDA IPC inside a box; ``port``: a
proxy over IB or IPC, any pair), the remote buffers it writes, and thread blocks, each a
list of at most 64 ops. The rules this writer follows, all from microsoft/mscclpp at
commit 1f5f065d7b13ab02df32c22568f38785d1eeec01 (MIT):

* fields, defaults, the size rule (input and output sizes multiples of
  ``buffer_alignment`` times their chunk counts), channel pairing (the n-th channel of
  ``a`` to ``b``, memory before port, is the n-th of ``b`` to ``a``):
  ``src/core/executor/execution_plan.cc``, ``src/core/executor/executor.cc``;
* limits: 64 ops and 16 channels or remote buffers per thread block and channel type,
  8 channels per op, 10 buffers per op side: ``src/core/include/execution_common.hpp``;
* op semantics: ``src/core/include/execution_kernel.hpp`` - ops of a thread block are
  ordered only by a ``nop`` (``__syncthreads``); a ``put`` on a memory channel is seen
  by the peer after a ``nop``, a ``signal`` and the peer's ``wait`` (and its ``nop``);
  ``pws`` on a port channel puts and signals in one proxy request (on a memory channel
  ``pws`` does not signal, so it is not used there);
* collective names and buffer sizes (``allgather``: input ``k``, output ``N k``;
  ``allreduce``: ``N k`` both; ``reducescatter``: ``N k`` in, ``k`` out; ``alltoall``):
  ``python/mscclpp/language/collectives.py``; in place means input == output pointer,
  for allgather input == output + rank * size (``src/core/algorithm.cc``).

* ``pipeline`` (``handlePipeline``): its inner ops (at most 16,
  ``MAX_DEVICE_FUNCTIONS_IN_PIPELINE``; they count among the block's 64) run once per
  unit of ``iter_context.unit_size`` bytes of ``num_chunks`` chunks, each op on that
  unit of each of its ranges; the unit count is kept in 16 bits; ``sem_acquire`` /
  ``sem_release`` count on a GPU's ``semaphores`` (``concurrency_device.hpp``);
* LL (``protocol: "LL"``): packet ops write data with a flag in each 8 bytes into the
  peer's scratch (at twice the chunk offset), and their readers spin on the flags, so no
  signal or wait is needed; a port channel's ``ppkt`` sends packets already in the
  local scratch (``cpkt``, ``recpkt``) as they are.

The plan. Each tree of a schedule carries a range of its root's chunks (a range, cut
where the reduce-scatter and allgather trees of a composed allreduce change). For a
range, a node of a reducing tree waits for its children's partial sums (put into its
scratch), sums them with its own input (``re``) and puts the sum into its parent's
scratch; a node of a broadcasting tree waits for its parent's put and puts the data into
its children's output. Every put is followed by ``nop`` and ``signal`` (memory channels)
or is a ``pws`` (port channels); every wait that precedes a read by a ``nop``. A sum sent
on memory channels is one ``res`` (REDUCE_SEND, ``handleReduceSend``: the sum written
locally and into the peers as it is computed; the DSL's fusion of ``re`` and ``put``,
``ReduceOperation.__add__`` in ``python/mscclpp/language/internal/operations.py``). Each step
is a ``pipeline`` over units of ``unit_size`` bytes (:func:`pipeline_unit` chooses it
from the topology), so a relay forwards unit ``i`` while unit ``i + 1`` arrives: the
pipeline fills in a unit, not in a range. A range runs in one thread block per GPU (the
same id on every GPU); an allreduce's reduction and broadcast of a range in two, the
root's broadcast acquiring, unit by unit, a semaphore its reduction releases once the
sum is written. A block runs its steps ordered by (phase, piece, level, range), the
level the depth when broadcasting and minus the depth when reducing, so every step
waits only for steps of smaller keys and the signals of a channel are waited for in the
order they are sent: the plan cannot deadlock. All-to-all routes are chains (relays keep
the data in scratch). Every written region is written once, so no region is reused.

LL plans (allgather, allreduce, broadcast, all-to-all; for small messages): a node's
data arrives as packets in a scratch slot, is unpacked (``upkt``) into the output and
forwarded as it is (``rppkt``); plain data is sent with ``ppkt`` (memory channels) or
turned into packets (``cpkt``, ``nop``) and sent (port channels); reductions use
``respkt`` / ``recpkt`` / ``repkt``, a node's partial sum being written to the output
range its total later overwrites (which is why reduce-scatter and reduce, whose outputs
have no such range, have no LL plan).

Default choices: GPUs in one *box* talk over memory channels, others over port
channels (``boxes``; :func:`boxes_of` takes the boxes from the topology's groups,
``Node.group``, never from how node ids are spelled: a compute node without a group is a
box of its own); protocol ``Simple``; up to 64 thread
blocks; 1 MiB units; ``max_message_size`` as far as the 16-bit unit count and the
32-bit offsets (every buffer below 4 GiB) allow.
Not written: NVLS (switch channel) reductions, thread block groups.

Examples
--------
>>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
>>> trees = (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
...          Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),)))
>>> plan = mscclpp_plan(Schedule("allgather", "pair", ("a", "b"), 1, trees))
>>> plan.document["collective"], plan.document["gpus"][0]["output_chunks"]
('allgather', 2)
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from json.encoder import encode_basestring_ascii
from typing import Protocol, TypedDict

from optcoll.core.loads import PHASES, phase_time_factor, routes_time_factor
from optcoll.core.schedule import Schedule, Tree, a_collective
from optcoll.core.topology import Topology
from optcoll.exceptions import ExportError
from optcoll.sim.nvls_program import MAX_UNIT, MIN_UNIT, OP_COST_US, UNIT_MARGIN
from optcoll.sim.simulator import data_bytes

__all__ = [
    "MscclppPlan",
    "mscclpp_plan",
    "mscclpp_placements",
    "pipeline_unit",
    "piece_unit",
    "boxes_of",
    "COLLECTIVE_NAMES",
]

#: optcoll collective -> the plan's ``collective`` (the DSL's names; ``broadcast`` and
#: ``reduce`` have no DSL class and keep optcoll's names).
COLLECTIVE_NAMES = {
    "allgather": "allgather",
    "reduce_scatter": "reducescatter",
    "allreduce": "allreduce",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "alltoall",
}
MAX_OPS = 64
MAX_CHANNELS = 16
MAX_PER_OP = 8
#: Thread blocks per GPU: all must be resident at once (they spin on semaphores); 64 is
#: half an A100's 108 or an H100's 132 streaming multiprocessors.
MAX_THREADBLOCKS = 64
MAX_PIECES = 8
#: Bytes per pipeline unit: 1 MiB takes 10 µs on a 100 GB/s link, several times the
#: few ops a unit costs a thread block, and cuts a 1 GiB collective's ranges into
#: dozens of units, so relays forward early.
DEFAULT_UNIT = 2**20
#: Ops a thread block ran per unit of a reducing step (wait, nop, re, nop, put, nop,
#: signal) and of a broadcasting or relaying one (wait, nop, put, nop, signal) before
#: ``res``, and the µs each was taken to cost (the simulator's default step overhead,
#: :data:`optcoll.sim.simulator.DEFAULT_OVERHEAD`); :func:`pipeline_unit` makes a unit
#: take :data:`UNIT_MARGIN` times as long on the wire as these. ``simulate`` now charges
#: only a unit's put (or ``res``), so a block could issue units 5 to 7 times smaller;
#: the units are kept: they are at least plan's 512 KiB slices on the built-ins' big
#: links, where the files then pipeline as plan's trees do (ring:4 allreduce at 1 MiB to
#: 1 GiB: the file's time is plan's; with units of 64 KiB it is 16.5 % faster at 1 MiB).
#: The smallest and largest unit it chooses (:data:`MIN_UNIT`, :data:`MAX_UNIT`) and the
#: margin are the NVLS program's too (:mod:`optcoll.sim.nvls_program`, where they live).
OPS_PER_UNIT = {True: 7, False: 5}
#: Collectives with LL plans (reductions other than allreduce have no plain place for
#: a node's partial sum: the reduce packet ops write one).
LL_COLLECTIVES = ("allgather", "allreduce", "broadcast", "alltoall")
#: ``buffer_alignment`` of our plans (bytes; MSCCL++'s default).
ALIGNMENT = 16
#: Inner ops of one ``pipeline`` (``MAX_DEVICE_FUNCTIONS_IN_PIPELINE``,
#: ``execution_kernel.hpp``).
MAX_PIPELINE_OPS = 16
#: Units of one pipeline: ``handlePipeline`` keeps the count in 16 bits.
MAX_UNITS = 2**16 - 1
#: Largest buffer (input, output, scratch) in bytes: ``Operation`` keeps offsets and sizes
#: as ``uint32_t`` (``execution_common.hpp``), and ``execution_plan.cc`` computes them so.
MAX_BUFFER_BYTES = 2**32 - 1

Loc = tuple[str, int, int]  # (buffer, first chunk, chunks)


class PlanShape(Protocol):
    """What the rendering reads of a schedule (a :class:`~optcoll.core.schedule.Schedule`,
    or a step schedule's stand-in)."""

    @property
    def compute_nodes(self) -> tuple[str, ...]: ...
    @property
    def k(self) -> int: ...
    @property
    def root(self) -> str | None: ...
    @property
    def topology(self) -> str: ...


class _Chunks(TypedDict):
    """Chunks of every GPU's input (``i``), output (``o``) and scratch (``s``) buffer."""

    i: int
    o: int
    s: int


def pipeline_unit(topology: Topology, schedule: Schedule, allgather: Schedule | None = None) -> int:
    """The pipeline unit (bytes) for plans of ``schedule`` on ``topology``: the smallest
    power of two a range's thread block needs more time to send at its range's rate than
    to run its ops (:data:`OPS_PER_UNIT` x :data:`OP_COST_US` x :data:`UNIT_MARGIN`),
    within [:data:`MIN_UNIT`, :data:`MAX_UNIT`]. Smaller units forward sooner (less
    pipeline fill); a block could not issue smaller ones as fast as the links carry them.

    A range of ``c`` of the ``k`` chunks of a phase whose time factor is ``t`` (µs per
    byte of ``data(M)`` over 1000: bandwidths in GB/s) moves at ``c / (k t)`` GB/s; an
    all-to-all route path of ``c`` chunks likewise with the routes' time factor.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> topo = build("ring:4")
    >>> pipeline_unit(topo, pack_arborescences(topo)) // 1024
    256
    """
    k = schedule.k
    wanted = 0.0
    if schedule.collective == "alltoall":
        factor = routes_time_factor(topology, schedule.routes, k)
        chunks = max(p.chunks for r in schedule.routes for p in r.paths)
        wanted = float(Fraction(chunks, k) / factor) * OPS_PER_UNIT[False]
    else:
        phases = [(schedule, reverse) for reverse in PHASES[schedule.collective]]
        if allgather is not None:
            phases = [(schedule, True), (allgather, False)]
        for part, reverse in phases:
            factor = phase_time_factor(topology, part.trees, part.k, reverse=reverse)
            if factor:
                widest = max(t.chunks for t in part.trees)
                rate = float(Fraction(widest, part.k) / factor)
                wanted = max(wanted, rate * OPS_PER_UNIT[reverse])
    # beyond MAX_THREADBLOCKS ranges a block runs several ranges' steps in turn
    ranges = (
        sum(len(r.paths) for r in schedule.routes)
        if schedule.collective == "alltoall"
        else len(schedule.trees)
    )
    wanted *= math.ceil(ranges / MAX_THREADBLOCKS)
    wanted *= 1000 * OP_COST_US * UNIT_MARGIN  # GB/s = 1000 B/µs
    if wanted <= MIN_UNIT:
        return MIN_UNIT
    return min(MAX_UNIT, 2 ** math.ceil(math.log2(wanted)))


def piece_unit(schedule: Schedule, size: int, slice_bytes: int | None) -> int:
    """The pipeline unit (bytes) in which a plan of tree schedule ``schedule`` moves its
    data as ``optcoll plan`` simulated it at ``size`` with ``slice_bytes``: plan's piece, a
    chunk (``data(M) / k``) or, above ``slice_bytes``, its equal slices
    (:mod:`optcoll.sim.simulator`), rounded up to :data:`ALIGNMENT`. A relay then forwards
    each unit once it has all of it, as plan's relay forwards a piece; a coarser unit (the
    topology's :func:`pipeline_unit`, 64 KiB or more) makes it wait for several of plan's
    pieces first (torus 4x4 allreduce at 1 MiB, k=2: chunks of 32 KiB in 256 KiB units).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> schedule = pack_arborescences(build("ring:4"))  # k = 2: a root's 1/4 in 2 chunks
    >>> piece_unit(schedule, 2**20, 512 * 1024) // 1024  # 128 KiB chunks, whole
    128
    >>> piece_unit(schedule, 2**30, 512 * 1024) // 1024  # 128 MiB chunks in 256 slices
    512
    """
    chunk = data_bytes(schedule.collective, size, len(schedule.compute_nodes)) / schedule.k
    count = 1 if slice_bytes is None or chunk <= slice_bytes else math.ceil(chunk / slice_bytes)
    return max(ALIGNMENT, math.ceil(chunk / count / ALIGNMENT) * ALIGNMENT)


def boxes_of(topology: Topology | None) -> dict[str, str]:
    """The box of each compute node: its group (:attr:`Node.group
    <optcoll.core.topology.Node.group>`), a topology fact; a node without a group is a
    box of its own (port channels to every other GPU). No topology: no boxes.

    Examples
    --------
    >>> from optcoll.core.topology import Link, Node, Topology
    >>> t = Topology("t", [Node("s0.gpu0", group="server0"), Node("s0.gpu1", group="server0"),
    ...                    Node("x")], [Link("s0.gpu0", "s0.gpu1", 1, bidirectional=True),
    ...                                 Link("s0.gpu1", "x", 1, bidirectional=True)])
    >>> boxes_of(t)
    {'s0.gpu0': 'server0', 's0.gpu1': 'server0'}
    """
    if topology is None:
        return {}
    return {v: group for v in topology.compute_nodes if (group := topology.node[v].group)}


def mscclpp_placements(collective: str) -> tuple[str, ...]:
    """The placements whose plans are correct: reduce-scatter and all-to-all only out of
    place (in place, results would overwrite inputs still to be sent).

    Examples
    --------
    >>> mscclpp_placements("allreduce"), mscclpp_placements("alltoall")
    (('outofplace', 'inplace'), ('outofplace',))
    """
    if collective in ("reduce_scatter", "alltoall"):
        return ("outofplace",)
    return ("outofplace", "inplace")


@dataclass(frozen=True)
class MscclppPlan:
    """A plan document and its figures."""

    document: dict
    threadblocks: int
    max_ops: int
    pieces: int
    memory_pairs: int
    port_pairs: int
    #: bytes per pipeline unit (0: no pipelines)
    unit_size: int = 0

    @property
    def text(self) -> str:
        """The document as ``json.dumps(document, indent=1)`` writes it, and a newline."""
        try:
            return _indented(self.document, "\n") + "\n"
        except _NotStrKey:
            return json.dumps(self.document, indent=1) + "\n"


class _NotStrKey(Exception):
    pass


def _indented(value: object, pad: str) -> str:
    """``value`` as ``json.dumps(value, indent=1)`` writes it at the indent of ``pad``
    (a newline and the spaces before its items' enclosing bracket), faster: the plan
    of a large torus is millions of values, and the standard encoder indents in Python
    generators. Raises _NotStrKey at a key that is not a string (json converts those).

    Examples
    --------
    >>> doc = {"a": [1, {"b": None, "c": True}, [], {}], "d": "é", "e": (0.5, -2)}
    >>> _indented(doc, chr(10)) == json.dumps(doc, indent=1)
    True
    """
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if type(value) is int:
        return int.__repr__(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = pad + " "
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotStrKey
            items.append(inner + encode_basestring_ascii(key) + ": " + _indented(item, inner))
        return "{" + ",".join(items) + pad + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner = pad + " "
        return "[" + ",".join([inner + _indented(item, inner) for item in value]) + pad + "]"
    return json.dumps(value)  # None, booleans, floats: as the encoder spells them


@dataclass
class _Step:
    """One node's part of one unit, before numbering: ops with symbolic references."""

    rank: int
    segment: int
    piece: int
    key: tuple
    size: int  # chunks of each range it moves (a pipeline's num_chunks)
    group: int = -1
    waits: list[int] = field(default_factory=list)  # peers
    reduces: list[tuple[Loc, list[Loc]]] = field(default_factory=list)
    copies: list[tuple[Loc, Loc]] = field(default_factory=list)
    puts: list[tuple[int, Loc, Loc]] = field(default_factory=list)  # peer, src, remote dst
    #: broadcasting: the tree edges the data put to each peer still has ahead (the peer's
    #: subtree height + 1); the channel type whose puts have the most goes first
    ahead: dict[int, int] = field(default_factory=dict)
    #: an allreduce root: its reduce step releases the range's semaphore once the sum is
    #: written, its broadcast step acquires it before sending (they may run in two blocks)
    release: bool = False
    acquire: bool = False
    #: LL only: packets (in a scratch slot) unpacked into plain data, and the slot plain
    #: data is turned into packets in before a port channel sends it
    unpacks: list[tuple[Loc, Loc]] = field(default_factory=list)  # plain dst, slot
    staging: Loc | None = None


def mscclpp_plan(
    schedule: Schedule,
    *,
    placement: str = "outofplace",
    name: str | None = None,
    boxes: Mapping[str, str] | None = None,
    max_message_size: int | None = None,
    min_message_size: int = 0,
    pieces: int | None = None,
    unit_size: int | None = DEFAULT_UNIT,
    protocol: str = "Simple",
    allgather: Schedule | None = None,
    interleave: bool = False,
) -> MscclppPlan:
    """The MSCCL++ plan of ``schedule`` (deterministic).

    Parameters
    ----------
    schedule : Schedule
        A tree schedule (trees in broadcast direction) or an all-to-all schedule.
    placement : str
        ``outofplace`` or ``inplace`` (see :func:`mscclpp_placements`).
    boxes : mapping, optional
        Compute node -> box (:func:`boxes_of` the topology); pairs in one box use
        memory channels, others port channels. A node it does not list is a box of its
        own. Default: every node in a box of its own (port channels everywhere).
    pieces : int, optional
        Pieces per tree range, each its own steps (default: 1 with pipelines, else the
        most up to :data:`MAX_PIECES` that keep every thread block within 64 ops).
    unit_size : int or None
        Bytes per unit of the ``pipeline`` ops that run every step unit by unit (default
        :data:`DEFAULT_UNIT`); None: no pipelines, every op moves its whole range.
    protocol : str
        ``Simple`` (puts, signals and waits) or ``LL`` (packets: data and flag in each
        8 bytes, so no signal or wait; for small messages; not pipelined; see
        :data:`LL_COLLECTIVES`).
    allgather : Schedule, optional
        With a reduce-scatter ``schedule``: the allgather whose trees broadcast, making
        an allreduce of two tree sets.
    interleave : bool
        A root's ranges share its thread block (one per phase of an allreduce) and run
        unit by unit in one ``pipeline``: each unit, the steps in the block's order
        (:func:`_pack`), so the puts a GPU makes at one unit leave in that order - while
        reducing, the range in whose tree the GPU lies deepest first, as plan's ``depth``
        order serves them (Simple plans of tree schedules; every shared block must fit one
        pipeline of :data:`MAX_PIPELINE_OPS` ops).

    Raises
    ------
    ExportError
        Malformed schedule, a placement that is not correct, or limits no piece count
        meets (with ``interleave``: a shared block that fits no pipeline).
    """
    coll = "allreduce" if allgather is not None else schedule.collective
    if coll not in COLLECTIVE_NAMES:
        raise ExportError(
            f"collective {coll!r} has no MSCCL++ plan; valid: {', '.join(COLLECTIVE_NAMES)}"
        )
    if placement not in mscclpp_placements(coll):
        raise ExportError(
            f"{a_collective(coll)} plan is correct only {', '.join(mscclpp_placements(coll))}; "
            f"got placement {placement!r}"
        )
    if pieces is not None and pieces < 1:
        raise ExportError(f"pieces must be >= 1, got {pieces}")
    if protocol not in ("Simple", "LL"):
        raise ExportError(f"protocol must be Simple or LL, got {protocol!r}")
    packets = protocol == "LL"
    if packets and coll not in LL_COLLECTIVES:
        raise ExportError(
            f"no LL plan for {coll}: its partial sums would need plain space the output "
            f"does not give; LL plans: {', '.join(LL_COLLECTIVES)}"
        )
    if packets:
        unit_size = None
    if unit_size is not None and unit_size % ALIGNMENT or unit_size == 0:
        raise ExportError(f"unit_size must be a positive multiple of {ALIGNMENT}, got {unit_size}")
    if interleave and (unit_size is None or coll == "alltoall"):
        raise ExportError("interleave: a Simple plan of a tree schedule with a unit_size only")
    nodes = schedule.compute_nodes
    box = {v: (boxes or {}).get(v, f"\0{v}") for v in nodes}
    segments = _segments(schedule, allgather)
    shared = {seg[0]: nodes.index(seg[1]) for seg in segments} if interleave else None
    if pieces is not None:
        tries = [pieces]
    elif unit_size is not None or packets:
        tries = [1]
    else:
        tries = list(range(_most_pieces(schedule, coll, segments), 0, -1))
    last_error = ""
    for count in tries:
        steps, chunks = _steps(schedule, coll, segments, count, packets)
        _pack(steps, shared)
        load = _load(steps, unit_size is not None)
        if max(load.values(), default=0) > MAX_OPS:
            last_error = (
                f"with {count} piece(s) per tree a thread block needs more than {MAX_OPS} ops"
            )
            continue
        try:
            document = _render(
                schedule,
                coll,
                placement,
                name,
                steps,
                chunks,
                box,
                min_message_size,
                max_message_size,
                unit_size,
                protocol,
                deepest_first=not interleave,
            )
            if interleave:
                _interleave(document)
        except _Limit as err:
            last_error = str(err)
            continue
        blocks = max(len(g["threadblocks"]) for g in document["gpus"])
        most = max(
            sum(1 + len(op.get("ops", ())) for op in tb["ops"])
            for g in document["gpus"]
            for tb in g["threadblocks"]
        )
        pairs = channel_pairs(steps)
        memory = sum(1 for a, b in pairs if box[nodes[a]] == box[nodes[b]])
        return MscclppPlan(
            document, blocks, most, count, memory, len(pairs) - memory, unit_size or 0
        )
    raise ExportError(
        f"no MSCCL++ plan fits the executor's limits ({last_error}); use a "
        "smaller -k or fewer --pieces"
    )


def channel_pairs(steps: Sequence[_Step]) -> set[tuple[int, int]]:
    """The GPU pairs ``(a, b)``, ``a < b``, that some step connects (a wait or a put of one
    for the other), in one pass over the steps.

    >>> step = _Step(0, 0, 0, (0,), 1, 0)
    >>> step.waits, step.puts = [2], [(1, ("o", 0, 1), ("o", 0, 1))]
    >>> sorted(channel_pairs([step]))
    [(0, 1), (0, 2)]
    """
    pairs = set()
    for step in steps:
        for peer in {*step.waits, *(p for p, _, _ in step.puts)}:
            if peer != step.rank:
                pairs.add((min(step.rank, peer), max(step.rank, peer)))
    return pairs


class _Limit(Exception):
    pass


Segment = tuple[int, str, int, int, Tree | None, Tree | None, tuple[int, ...] | None, Loc | None]


def _segments(schedule: Schedule, allgather: Schedule | None) -> list[Segment]:
    """``(index, root, first chunk, chunks, up tree, down tree, chain, chain dst)`` of every
    range: a tree's chunks, cut where the reduce-scatter and allgather trees of a composed
    allreduce change; an all-to-all route path as a chain of ranks."""
    ranks = {v: i for i, v in enumerate(schedule.compute_nodes)}
    coll = schedule.collective
    result: list[Segment] = []
    if coll == "alltoall":
        k = schedule.k
        for route in schedule.routes:
            first = 0
            for path in route.paths:
                chain = tuple(ranks[v] for v in path.path if v in ranks)
                if len(set(chain)) != len(chain) or len(chain) < 2:
                    raise ExportError(
                        f"route {route.src} -> {route.dst}: a path must visit "
                        "two or more compute nodes once each"
                    )
                result.append((len(result), route.src, first, path.chunks, None, None, chain, None))
                first += path.chunks
            if first != k:
                raise ExportError(
                    f"route {route.src} -> {route.dst} carries {first} chunks, expected k = {k}"
                )
        return result
    for tree in schedule.trees:
        _check_tree(tree, schedule.compute_nodes)
    up_sets = schedule.trees if coll in ("reduce_scatter", "allreduce", "reduce") else None
    down_sets = schedule.trees if coll in ("allgather", "allreduce", "broadcast") else None
    if allgather is not None:
        for tree in allgather.trees:
            _check_tree(tree, allgather.compute_nodes)
        down_sets = allgather.trees
    roots = list(schedule.compute_nodes)
    if coll in ("broadcast", "reduce"):
        if schedule.root is None:
            raise ExportError(f"{a_collective(coll)} schedule needs a root")
        roots = [schedule.root]
    for root in roots:
        up = _ranges(up_sets, root)
        down = _ranges(down_sets, root)
        ends = {hi for _, _, hi in up + down}
        total = max(ends, default=0)
        if total != schedule.k:
            raise ExportError(
                f"root {root!r}: its trees carry {total} chunks, expected k = {schedule.k}"
            )
        cuts = sorted({lo for _, lo, _ in up + down} | {total})
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            u = next((t for t, a, b in up if a <= lo < b), None)
            d = next((t for t, a, b in down if a <= lo < b), None)
            result.append((len(result), root, lo, hi - lo, u, d, None, None))
    return result


def _ranges(trees: Sequence[Tree] | None, root: str) -> list[tuple[Tree, int, int]]:
    out, start = [], 0
    for tree in trees or ():
        if tree.root == root:
            out.append((tree, start, start + tree.chunks))
            start += tree.chunks
    return out


def _check_tree(tree: Tree, nodes: tuple[str, ...]) -> None:
    reached = {tree.root}
    for edge in tree.edges:
        reached.add(edge.dst)
    parents = [e.dst for e in tree.edges]
    if set(reached) != set(nodes) or len(parents) != len(set(parents)) or tree.root in parents:
        raise ExportError(
            f"tree rooted at {tree.root!r} is not a spanning arborescence of the compute nodes"
        )


def _shape(tree: Tree, ranks: dict[str, int]) -> tuple[dict[int, list[int]], dict[int, int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for edge in tree.edges:
        children[ranks[edge.src]].append(ranks[edge.dst])
    depth = {ranks[tree.root]: 0}
    frontier = [ranks[tree.root]]
    while frontier:
        frontier = [
            c for v in frontier for c in children[v] if depth.setdefault(c, depth[v] + 1) >= 0
        ]
    return children, depth


def _steps(
    schedule: Schedule, coll: str, segments: list[Segment], count: int, packets: bool = False
) -> tuple[list[_Step], _Chunks]:
    """Every node's step of every unit, and the buffer chunks (scratch per busiest GPU).

    Every chunk of the schedule is ``count`` chunks of the plan, so every range of ``c``
    schedule chunks is ``count`` pieces of ``c`` plan chunks each."""
    nodes = schedule.compute_nodes
    ranks = {v: i for i, v in enumerate(nodes)}
    n, k = len(nodes), schedule.k * count
    scratch = [0] * n
    steps: list[_Step] = []

    def slot(rank: int, size: int) -> Loc:
        scratch[rank] += size
        return ("s", scratch[rank] - size, size)

    per_root = coll in ("allgather", "reduce_scatter", "allreduce")
    for seg, root, first, chunks, up, down, chain, _ in segments:
        r = ranks[root]
        for p in range(count):
            lo, size = first * count + p * chunks, chunks
            unit = len(steps)
            mine: dict[int, _Step] = {}

            def step(rank: int, phase: int, level: int, at: tuple = (p, seg, unit, size)) -> _Step:
                made = _Step(rank, at[1], at[0], (phase, at[0], level, at[1], at[2]), at[3])
                steps.append(made)
                return made

            if chain is not None:  # all-to-all: source -> relays -> sink
                src, dst = chain[0], chain[-1]
                where: Loc = ("i", dst * k + lo, size)
                for h in range(len(chain) - 1):
                    a, b = chain[h], chain[h + 1]
                    into = ("o", src * k + lo, size) if b == dst else slot(b, size)
                    if packets and b == dst:  # packets land in scratch, then are unpacked
                        into = slot(b, size)
                    sender = mine.get(a) or step(a, 0, h)
                    sender.puts.append((b, where, into))
                    receiver = step(b, 0, h + 1)
                    receiver.waits.append(a)
                    if packets and b == dst:
                        receiver.unpacks.append((("o", src * k + lo, size), into))
                    mine[b] = receiver
                    where = into
                continue
            slot_index = r * k + lo if per_root else lo
            source: Loc = ("i", lo if coll == "allgather" else slot_index, size)
            final: Loc = ("o", lo if coll == "reduce_scatter" else slot_index, size)
            if up is not None:
                children, depth = _shape(up, ranks)
                partial: dict[int, Loc] = {}
                for v in sorted(depth, key=lambda x: (-depth[x], x)):
                    s = step(v, 0, -depth[v])
                    s.release = v == r and down is not None
                    own = source
                    if children[v]:
                        inputs = [source]
                        for c in children[v]:
                            box = slot(v, size)
                            s.waits.append(c)
                            inputs.append(box)
                            partial[c] = box
                        # an LL partial sum goes to the output range the sum overwrites
                        own = final if v == r or packets else slot(v, size)
                        s.reduces.append((own, inputs))
                    mine[v] = s
                    if v != r:
                        s.puts.append((-1, own, ("?", v, 0)))  # parent's box, filled below
                for v, s in list(mine.items()):
                    for i, (peer, own, _marker) in enumerate(s.puts):
                        if peer == -1:
                            parent = next(a for a, cs in children.items() if v in cs)
                            s.puts[i] = (parent, own, partial[v])
            if down is not None:
                children, depth = _shape(down, ranks)
                height = dict.fromkeys(depth, 0)
                for v in sorted(depth, key=lambda x: -depth[x]):  # leaves first
                    height[v] = max((height[c] + 1 for c in children[v]), default=0)
                # LL: a node's packets arrive in a slot of its scratch and are unpacked
                inbox = {v: slot(v, size) if packets else final for v in depth if v != r}
                for v in sorted(depth, key=lambda x: (depth[x], x)):
                    s = step(v, 1, depth[v])
                    s.acquire = v == r and up is not None
                    held = final
                    if v == r and up is None:
                        held = source
                        if coll in ("allgather", "broadcast"):
                            s.copies.append((final, source))
                    if v != r:
                        held = inbox[v]
                        parent = next(a for a, cs in children.items() if v in cs)
                        s.waits.append(parent)
                        if packets:
                            s.unpacks.append((final, inbox[v]))
                    for c in children[v]:
                        s.puts.append((c, held, inbox[c]))
                        s.ahead[c] = height[c] + 1
    if packets:  # plain data a port channel sends is first turned into packets here
        for s in steps:
            if any(src[0] != "s" for _, src, _ in s.puts):
                s.staging = slot(s.rank, s.size)
    if coll == "alltoall":
        for rank in range(n):  # the own piece, out of place
            own_piece = _Step(rank, -1, 0, (-1, 0, 0, -1, -1), k)
            own_piece.copies.append((("o", rank * k, k), ("i", rank * k, k)))
            steps.append(own_piece)
    input_chunks, output_chunks = {
        "allgather": (k, n * k),
        "reduce_scatter": (n * k, k),
        "allreduce": (n * k, n * k),
        "broadcast": (k, k),
        "reduce": (k, k),
        "alltoall": (n * k, n * k),
    }[coll]
    return steps, _Chunks(i=input_chunks, o=output_chunks, s=max(scratch))


def _op_count(step: _Step) -> int:
    """Ops of a step (at most; memory channels cost a put, a nop and a signal)."""
    count = 0
    if step.waits:
        count += 2 * math.ceil(len(step.waits) / MAX_PER_OP)
    for _, inputs in step.reduces:
        count += 2 * math.ceil((len(inputs) - 1) / MAX_PER_OP)
    count += len(step.copies) + (1 if step.copies else 0) + 2 * step.acquire + step.release
    if step.puts:
        count += 3 * math.ceil(len(step.puts) / MAX_PER_OP)
    return count


def _pack(steps: list[_Step], shared: Mapping[int, int] | None = None) -> None:
    """Set every step's thread block: range ``s`` runs in block ``s`` (its pieces one
    after the other), or - for an allreduce, when :data:`MAX_THREADBLOCKS` allows - its
    reduction in block ``2 s`` and its broadcast in block ``2 s + 1``, so a range's leaves
    send their next data while its broadcast runs; beyond the limit, range ``s`` runs in
    block ``s mod`` :data:`MAX_THREADBLOCKS`. (More blocks per range would not be faster:
    blocks that put at once share the links, so a piece's data would arrive no earlier.)
    ``shared`` (range -> a block number, e.g. its root's rank): ranges of one number share
    that block instead. A block runs its steps ordered by their keys, which every step's
    wait only follows (:func:`_steps`), whichever ranges share it."""
    ranges = len({s.segment for s in steps if s.segment >= 0})
    if shared is not None:
        ranges = len(set(shared.values()))
    split = any(s.acquire for s in steps) and 2 * ranges <= MAX_THREADBLOCKS
    for s in steps:
        segment = max(s.segment, 0)
        if shared is not None:
            segment = shared[segment]
        s.group = 2 * segment + s.key[0] if split else segment % MAX_THREADBLOCKS


def _load(steps: list[_Step], pipelined: bool = False) -> dict[tuple[int, int], int]:
    """Ops (at most) of every (thread block, rank); a pipeline adds one op per step."""
    load: dict[tuple[int, int], int] = defaultdict(int)
    for s in steps:
        load[(s.group, s.rank)] += _op_count(s) + pipelined
    return load


def _most_pieces(schedule: Schedule, coll: str, segments: list[Segment]) -> int:
    """The most pieces per range, up to :data:`MAX_PIECES`, whose thread blocks (as
    :func:`_pack` makes them) stay within :data:`MAX_OPS` ops: the pieces of a range are
    alike, so the ops of one piece, counted once, give every count's."""
    steps, _ = _steps(schedule, coll, segments, 1)
    _pack(steps)
    fixed = sum(_op_count(s) for s in steps if s.segment < 0)
    heaviest = max(_load([s for s in steps if s.segment >= 0]).values(), default=1)
    return max(1, min(MAX_PIECES, (MAX_OPS - fixed) // heaviest))


def _interleave(document: dict) -> None:
    """Run each thread block's pipelines as one, unit by unit (their inner ops in order,
    each unit), where the block of that id can on every GPU: all its ops pipelines of one
    ``iter_context``, :data:`MAX_PIPELINE_OPS` inner ops in all; _Limit where a block
    cannot. A block of one id on every GPU, so each channel's signals are waited for in
    the order they are sent, unit by unit; a step waits only for steps of smaller keys,
    each unit, so the plan cannot deadlock.

    >>> pipe = lambda *names: {"name": "pipeline", "iter_context": {"unit_size": 16,
    ...                        "num_chunks": 1}, "ops": [{"name": n} for n in names]}
    >>> doc = {"gpus": [{"threadblocks": [{"id": 0, "ops": [pipe("put", "nop"), pipe("wait")]}]}]}
    >>> _interleave(doc)
    >>> [[op["name"] for op in tb["ops"][0]["ops"]] for tb in doc["gpus"][0]["threadblocks"]]
    [['put', 'nop', 'wait']]
    """
    for gpu in document["gpus"]:
        for tb in gpu["threadblocks"]:
            ops = tb["ops"]
            if len(ops) < 2:
                continue
            inner = [op for pipe in ops for op in pipe.get("ops", ())]
            context = ops[0].get("iter_context")
            if (
                any(pipe["name"] != "pipeline" or pipe["iter_context"] != context for pipe in ops)
                or len(inner) > MAX_PIPELINE_OPS
            ):
                raise _Limit(
                    f"thread block {tb['id']} of rank {gpu['id']} runs {len(ops)} steps that "
                    f"fit no pipeline of {MAX_PIPELINE_OPS} ops"
                )
            tb["ops"] = [{"name": "pipeline", "iter_context": context, "ops": inner}]


def _render(
    schedule: PlanShape,
    coll: str,
    placement: str,
    name: str | None,
    steps: list[_Step],
    chunks: _Chunks,
    box: dict[str, str],
    low: int,
    high: int | None,
    unit: int | None,
    protocol: str,
    deepest_first: bool = True,
) -> dict:
    nodes = schedule.compute_nodes
    n = len(nodes)
    high = 2**64 - 1 if high is None else high
    buffer = chunks["o"] if coll == "allgather" else chunks["i"]
    if unit is not None:  # the kernel counts a pipeline's units in 16 bits
        widest = max(s.size for s in steps)
        high = min(high, MAX_UNITS * unit * buffer // widest)
    # every buffer below 4 GiB: a chunk is message / buffer bytes, LL scratch holds twice
    largest = max(chunks["i"], chunks["o"], chunks["s"] * (2 if protocol == "LL" else 1))
    high = min(high, MAX_BUFFER_BYTES * buffer // largest)

    def ctype(a: int, b: int) -> str:
        return "memory" if box[nodes[a]] == box[nodes[b]] else "port"

    # channels: one per (GPU pair, thread block) that the block's steps use, on both GPUs
    used: set[tuple[int, int, int]] = set()
    for s in steps:
        for peer in s.waits + [p for p, _, _ in s.puts]:
            a, b = min(s.rank, peer), max(s.rank, peer)
            used.add((s.group, a, b))
    channel_index: dict[tuple[int, int, int], int] = {}  # (rank, peer, block) -> index
    channel_lists: dict[int, dict[str, list[int]]] = {}
    for rank in range(n):
        lists: dict[str, list[int]] = {"memory": [], "port": []}
        for g, a, b in sorted(used):
            if rank in (a, b):
                peer = b if rank == a else a
                kind = ctype(rank, peer)
                channel_index[(rank, peer, g)] = len(lists[kind])
                lists[kind].append(peer)
        channel_lists[rank] = lists
    gpus = []
    for rank in range(n):
        mine = sorted((s for s in steps if s.rank == rank), key=lambda s: s.key)
        blocks: dict[int, list[_Step]] = defaultdict(list)
        for s in mine:
            blocks[s.group].append(s)
        remote: list[tuple[int, str, str]] = []
        semaphores: dict[int, int] = {}  # range -> its semaphore on this rank
        threadblocks = []
        for tb_id, g in enumerate(sorted(blocks)):
            tb = _Block(rank, g, channel_index, ctype, remote, unit, semaphores, deepest_first)
            tb.packets = protocol == "LL"
            for s in blocks[g]:
                tb.emit(s)
            threadblocks.append(tb.render(tb_id))
        # ranks with no steps in a block still need the block's id contiguous: renumbered
        lists = channel_lists[rank]
        gpus.append(
            {
                "id": rank,
                "input_chunks": chunks["i"],
                "output_chunks": chunks["o"],
                "scratch_chunks": chunks["s"],
                "threadblocks": threadblocks,
                "channels": [
                    {"channel_type": t, "connected_to": lists[t]}
                    for t in ("memory", "port")
                    if lists[t]
                ],
                "remote_buffers": [
                    {"rank": r, "type": b, "access_channel_types": [t]} for r, b, t in remote
                ],
                "semaphores": [{"init_value": 0} for _ in semaphores],
            }
        )
    root = f" root={schedule.root}" if schedule.root is not None else ""
    return {
        "name": name or f"optcoll {coll} {schedule.topology} k={schedule.k}{root} {placement}",
        "collective": COLLECTIVE_NAMES[coll],
        "protocol": protocol,
        "inplace": placement == "inplace",
        "reuse_resources": False,
        "num_threads_per_block": 1024,
        "use_double_scratch_buffer": False,
        "buffer_alignment": ALIGNMENT,
        "min_message_size": low,
        "max_message_size": high,
        "gpus": gpus,
    }


class _Block:
    """The ops of one thread block on one GPU."""

    def __init__(
        self,
        rank: int,
        group: int,
        channel_index: dict,
        ctype,
        remote: list,
        unit: int | None,
        semaphores: dict[int, int],
        deepest_first: bool = True,
    ) -> None:
        self.rank, self.group, self.unit, self.semaphores = rank, group, unit, semaphores
        self.deepest_first = deepest_first
        self.channel_index, self.ctype, self.remote = channel_index, ctype, remote
        self.ops: list[dict] = []
        self.count = 0  # inner ops of pipelines: the executor counts them as ops
        self.packets = False
        self.channels: dict[str, list[int]] = {"memory": [], "port": []}
        self.buffers: dict[str, list[int]] = {"memory": [], "port": []}

    def kind(self, peer: int) -> str:
        """The type of this block's channel to ``peer``: ``memory`` or ``port``."""
        return str(self.ctype(self.rank, peer))

    def channel(self, peer: int) -> tuple[str, int]:
        kind = self.ctype(self.rank, peer)
        index = self.channel_index[(self.rank, peer, self.group)]
        if index not in self.channels[kind]:
            self.channels[kind].append(index)
            if len(self.channels[kind]) > MAX_CHANNELS:
                raise _Limit(f"a thread block needs more than {MAX_CHANNELS} {kind} channels")
        return kind, self.channels[kind].index(index)

    def buffer(self, peer: int, kind: str, access: str) -> int:
        key = (peer, kind, access)
        if key not in self.remote:
            self.remote.append(key)
        bid = self.remote.index(key)
        if bid not in self.buffers[access]:
            self.buffers[access].append(bid)
            if len(self.buffers[access]) > MAX_CHANNELS:
                raise _Limit(f"a thread block needs more than {MAX_CHANNELS} remote buffers")
        return self.buffers[access].index(bid)

    def emit(self, step: _Step) -> None:
        """Append the ops of ``step``: in a ``pipeline`` over its range when the block has
        a unit size and the step moves data."""
        if self.packets:
            self._emit_packets(step)
            return
        outer, self.ops = self.ops, []
        self._emit(step)
        inner, self.ops = self.ops, outer
        if self.unit is None or not (step.puts or step.waits):
            self.ops.extend(inner)
            return
        if len(inner) > MAX_PIPELINE_OPS:
            raise _Limit(f"a step needs {len(inner)} ops, above {MAX_PIPELINE_OPS} in a pipeline")
        self.ops.append(
            {
                "name": "pipeline",
                "iter_context": {"unit_size": self.unit, "num_chunks": step.size},
                "ops": inner,
            }
        )
        self.count += len(inner)

    def _emit_packets(self, step: _Step) -> None:
        """The LL ops of ``step``: packets carry their own flags, so nothing signals or
        waits; a ``nop`` orders plain data written by one op before another op reads it."""
        if step.acquire or step.release:
            semaphore = self.semaphores.setdefault(step.segment, len(self.semaphores))
        if step.acquire:
            self.ops.append({"name": "sem_acquire", "semaphore_ids": [semaphore]})
            self.ops.append({"name": "nop"})
        for dst, src in step.copies:
            self.ops.append({"name": "copy", "src_buff": [_local(src)], "dst_buff": [_local(dst)]})
        if step.copies:  # in place the copy writes what the puts read
            self.ops.append({"name": "nop"})
        for dst, src in step.unpacks:
            self.ops.append({"name": "upkt", "src_buff": [_local(src)], "dst_buff": [_local(dst)]})
        puts = list(step.puts)
        for own, inputs in step.reduces:
            if len(inputs) > MAX_PER_OP + 1:
                raise _Limit(f"an LL reduction of {len(inputs)} buffers, above {MAX_PER_OP + 1}")
            srcs = [_local(x) for x in inputs]
            if not puts:
                self.ops.append({"name": "repkt", "src_buff": srcs, "dst_buff": [_local(own)]})
            else:
                (peer, _, dst), *puts = puts
                kind, index = self.channel(peer)
                remote = {
                    "buffer_id": self.buffer(peer, "s", kind),
                    "index": dst[1],
                    "size": dst[2],
                }
                staging: Loc | None = None  # a port channel sends the sum from here
                if kind == "memory":
                    dsts, name = [_local(own), remote], "respkt"
                else:
                    assert step.staging is not None
                    staging = step.staging
                    dsts, name = [_local(own), _local(staging)], "recpkt"
                op: dict[str, object] = {"name": name, "src_buff": srcs, "dst_buff": dsts}
                if kind == "memory":
                    op.update(channel_type="memory", channel_ids=[index])
                self.ops.append(op)
                if staging is not None:
                    self.ops.append({"name": "nop"})
                    self.ops.append(
                        {
                            "name": "ppkt",
                            "src_buff": [_local(staging)],
                            "dst_buff": [remote],
                            "channel_type": "port",
                            "channel_ids": [index],
                        }
                    )
            if step.release:  # the sum is plain data in the output: a nop, then release
                self.ops.append({"name": "nop"})
                self.ops.append({"name": "sem_release", "semaphore_ids": [semaphore]})
        by_kind: dict[tuple[str, bool], list[tuple[int, int, Loc, Loc]]] = defaultdict(list)
        for peer, src, dst in puts:
            kind, index = self.channel(peer)
            by_kind[(kind, src[0] == "s")].append((index, self.buffer(peer, "s", kind), src, dst))
        staged = False
        for (kind, received), items in sorted(by_kind.items()):
            if kind == "port" and not received and not staged:  # packets first, locally
                assert step.staging is not None
                src = items[0][2]
                self.ops.append(
                    {"name": "cpkt", "src_buff": [_local(src)], "dst_buff": [_local(step.staging)]}
                )
                self.ops.append({"name": "nop"})
                staged = True
            for i in range(0, len(items), MAX_PER_OP):
                part = items[i : i + MAX_PER_OP]
                if received:  # forward the packets this GPU received (waits for their flags)
                    name, srcs = "rppkt", [_local(part[0][2])]
                elif kind == "memory":  # plain data written as packets
                    name, srcs = "ppkt", [_local(src) for _, _, src, _ in part]
                else:  # the staged packets, sent as they are
                    assert step.staging is not None
                    name, srcs = "ppkt", [_local(step.staging)] * len(part)
                self.ops.append(
                    {
                        "name": name,
                        "src_buff": srcs,
                        "dst_buff": [
                            {"buffer_id": bid, "index": dst[1], "size": dst[2]}
                            for _, bid, _, dst in part
                        ],
                        "channel_type": kind,
                        "channel_ids": [index for index, _, _, _ in part],
                    }
                )

    def _emit(self, step: _Step) -> None:
        if step.acquire or step.release:
            semaphore = self.semaphores.setdefault(step.segment, len(self.semaphores))
        if step.acquire:
            self.ops.append({"name": "sem_acquire", "semaphore_ids": [semaphore]})
            self.ops.append({"name": "nop"})
        by_type: dict[str, list[int]] = defaultdict(list)
        for peer in step.waits:
            kind, index = self.channel(peer)
            by_type[kind].append(index)
        for kind in ("memory", "port"):
            for ids in _chunked(by_type[kind]):
                self.ops.append({"name": "wait", "channel_type": kind, "channel_ids": ids})
        # a leaf reads nothing; a release passes on what the waits saw (to another block
        # of this GPU, docs/mscclpp.md: one thread releases, so a nop first)
        if step.waits and (step.copies or step.reduces or step.puts or step.release):
            self.ops.append({"name": "nop"})
        for dst, src in step.copies:
            self.ops.append({"name": "copy", "src_buff": [_local(src)], "dst_buff": [_local(dst)]})
        if step.copies:
            self.ops.append({"name": "nop"})
        # a sum sent on memory channels is written to them as it is computed: ``res``
        # (REDUCE_SEND, ``handleReduceSend``), the DSL's fusion of ``re`` and ``put``
        # (``ReduceOperation.__add__``); its signals follow its nop
        pending = list(step.puts)
        sent = [put for put in pending if self.kind(put[0]) == "memory"]
        fused: list[int] = []
        for round_ in _rounds(step.reduces):
            for dst, first, rest, last in round_:
                op: dict[str, object] = {
                    "name": "re",
                    "src_buff": [_local(first)] + [_local(x) for x in rest],
                    "dst_buff": [_local(dst)],
                }
                remote = [put for put in sent if put[1] == dst][:MAX_PER_OP]
                if last and remote:  # the whole sum: written to the peers as it is computed
                    fused += [self.channel(peer)[1] for peer, _, _ in remote]
                    op["name"] = "res"
                    op["dst_buff"] = [_local(dst)] + [
                        {"buffer_id": self.buffer(peer, d[0], "memory"), "index": d[1], "size": d[2]}
                        for peer, _, d in remote
                    ]  # fmt: skip
                    op.update(channel_type="memory", reduce_op="sum")
                    sent = [put for put in sent if put not in remote]
                    pending = [put for put in pending if put not in remote]
                self.ops.append(op)
            self.ops.append({"name": "nop"})
        for ids in _chunked(fused):
            self.ops.append({"name": "signal", "channel_type": "memory", "channel_ids": ids})
        if step.release:  # after the nop that ends the sum
            self.ops.append({"name": "sem_release", "semaphore_ids": [semaphore]})
        puts: dict[str, list[tuple[int, int, Loc, Loc]]] = defaultdict(list)
        most = {"memory": 0, "port": 0}  # tree edges ahead of each type's puts
        for peer, src, dst in pending:
            kind, index = self.channel(peer)
            bid = self.buffer(peer, dst[0], kind)
            puts[kind].append((index, bid, src, dst))
            most[kind] = max(most[kind], step.ahead.get(peer, 0))
        # each op costs the block an overhead: the puts whose data has the most tree edges
        # ahead go first (plan's connections, one per edge, send them all at once); an
        # interleaved block keeps memory first (its steps are in plan's depth order already,
        # and port first was slower: dgx-h100:2 allreduce 16M, 80.66 against 77.17 µs)
        kinds = ["memory", "port"]
        if self.deepest_first:
            kinds.sort(key=lambda kind: -most[kind])
        for kind in kinds:
            items = puts[kind]
            for i in range(0, len(items), MAX_PER_OP):
                part = items[i : i + MAX_PER_OP]
                self.ops.append(
                    {
                        "name": "put" if kind == "memory" else "pws",
                        "src_buff": [_local(src) for _, _, src, _ in part],
                        "dst_buff": [
                            {"buffer_id": bid, "index": dst[1], "size": dst[2]}
                            for _, bid, _, dst in part
                        ],
                        "channel_type": kind,
                        "channel_ids": [index for index, _, _, _ in part],
                    }
                )
                if kind == "memory":
                    self.ops.append({"name": "nop"})
                    self.ops.append(
                        {
                            "name": "signal",
                            "channel_type": "memory",
                            "channel_ids": [index for index, _, _, _ in part],
                        }
                    )

    def render(self, tb_id: int) -> dict:
        if len(self.ops) + self.count > MAX_OPS:
            raise _Limit(f"a thread block needs {len(self.ops) + self.count} ops")
        return {
            "id": tb_id,
            "ops": self.ops,
            "channels": [
                {"channel_type": t, "channel_ids": self.channels[t]}
                for t in ("memory", "port")
                if self.channels[t]
            ],
            "remote_buffer_refs": [
                {"access_channel_type": t, "remote_buffer_ids": self.buffers[t]}
                for t in ("memory", "port")
                if self.buffers[t]
            ],
        }


def _rounds(reduces: list[tuple[Loc, list[Loc]]]) -> list[list[tuple[Loc, Loc, list[Loc], bool]]]:
    """The ops of a step's sums in rounds, a ``nop`` after each: a sum of more than
    ``MAX_PER_OP + 1`` inputs in parts (``(dst, first input, other inputs, last part)``),
    each part in a round after the one before it and after every earlier part that writes
    a range it reads or writes (a block received twice in a step is summed twice).

    >>> a, b, c = ("s", 0, 1), ("s", 1, 1), ("o", 0, 1)
    >>> [[part[0] for part in r] for r in _rounds([(a, [c, b]), (("o", 1, 1), [c, b]), (b, [a, c])])]
    [[('s', 0, 1), ('o', 1, 1)], [('s', 1, 1)]]
    """
    rounds: list[list[tuple[Loc, Loc, list[Loc], bool]]] = []
    written: list[tuple[Loc, int]] = []  # each part's dst and round
    for dst, inputs in reduces:
        after = -1
        for i in range(0, len(inputs) - 1, MAX_PER_OP):
            first, rest = (inputs[0] if i == 0 else dst), inputs[1:][i : i + MAX_PER_OP]
            touched = [dst, first, *rest]
            at = 1 + max([after] + [r for w, r in written if any(_overlap(w, x) for x in touched)])
            while len(rounds) <= at:
                rounds.append([])
            rounds[at].append((dst, first, rest, i + MAX_PER_OP >= len(inputs) - 1))
            written.append((dst, at))
            after = at
    return rounds


def _overlap(a: Loc, b: Loc) -> bool:
    """Whether two ranges of one GPU's buffers share a chunk."""
    return a[0] == b[0] and a[1] < b[1] + b[2] and b[1] < a[1] + a[2]


def _chunked(items: list[int]) -> list[list[int]]:
    return [items[i : i + MAX_PER_OP] for i in range(0, len(items), MAX_PER_OP)]


def _local(loc: Loc) -> dict:
    return {"type": loc[0], "index": loc[1], "size": loc[2]}
