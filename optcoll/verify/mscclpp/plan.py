"""MSCCL++ execution plans read by the rules of MSCCL++'s own parser.

The rules come from microsoft/mscclpp at commit 1f5f065d7b13ab02df32c22568f38785d1eeec01
(2026-08-20), MIT licence; only facts are copied:

* ``src/core/executor/execution_plan.cc`` (``ExecutionPlan::Impl``): the keys read
  (``name``, ``collective``, ``protocol``, ``inplace``, ``gpus`` with ``id``,
  ``input_chunks``, ``output_chunks``, ``scratch_chunks``, ``threadblocks``,
  ``channels``, ``remote_buffers``; optional ``semaphores``, ``buffer_alignment``
  (16), ``min_message_size`` (0), ``max_message_size`` (2**64 - 1),
  ``num_threads_per_block`` (1024)); the op names of ``getOpType``, the buffer types
  ``i``/``o``/``s`` and channel types ``memory``/``port``/``none``/``switch``, each
  refused otherwise; ``gpus[rank]["id"] == rank``; a buffer reference with
  ``buffer_id`` takes its buffer from the thread block's ``remote_buffer_refs`` of the
  op's ``channel_type`` (``memory`` or ``port``, else "Invalid channel type");
  ``checkMessageSize``: input and output sizes multiples of ``buffer_alignment`` and
  ``size / alignment`` a multiple of the buffer's chunks, the message (the output for
  ``allgather``, else the input) within ``[min_message_size, max_message_size]``;
  ``getSizeAndChunks``: ``input / input_chunks == output / output_chunks``.
* ``src/core/include/execution_common.hpp``: ``MAX_OPERATION = 64`` operations per
  thread block (``executor.cc`` throws above it), ``MAX_CHANNEL = 16`` memory and 16
  port channels and remote buffers per thread block, ``MAX_CHANNEL_PER_OPERATION = 8``,
  ``MAX_LOCAL_BUFFER_PER_OPERATION + MAX_CHANNEL_PER_OPERATION = 10`` buffers per op
  side, ``MAX_DEVICE_SYNCERS = 16`` barriers, ``MAX_DEVICE_SEMAPHORES = 16``.
* ``pipeline`` ops (``setupOperation``): ``iter_context`` with ``unit_size`` (bytes;
  0 refused here: the executor divides by it) and ``num_chunks``; their ``ops`` follow
  them in the thread block's op list (and count among its 64).
* ``src/core/executor/executor.cc`` ``setupConnections``: a rank's channels to one peer
  are numbered by a per-peer tag counter, memory channels first, then port channels;
  the ``n``-th channel of rank ``a`` to ``b`` is connected to the ``n``-th of ``b`` to
  ``a``.
* Switch (NVLS) channels (``parseChannels``, ``setupNvlsChannels``): a GPU's
  ``channels`` entry ``{"channel_type": "switch", "buffer_type": B, "rank_groups":
  [{"size": S, "ranks": [...]}, ...]}`` gives one switch channel per rank group, in
  order; each binds the whole buffer ``B`` of every rank of the group to one multicast
  object (``connectNvlsCollective(comm, ranks, size)``, a collective call of those
  ranks: each of them must declare the same groups with each other in the same order,
  and must be in its own group, or the call never completes). A thread block's
  ``switch`` channel ids index the GPU's switch channels; an op's buffer reference
  ``{"switch_channel_id": c, "index": i, "size": s}`` names the block's ``c``-th one
  (chunks ``i .. i + s - 1`` of the bound buffer of every rank of the group).

Refusals of the parser (and of the executor's setup) raise :class:`FileFormatError`
naming the field; array overflows the parser does not check (more than 16 channels in a
thread block, 8 channels in an op) are returned as findings.

Examples
--------
>>> plan = parse_plan({"name": "x", "collective": "allgather", "protocol": "Simple",
...     "inplace": False, "gpus": []})
>>> plan.collective, plan.protocol, plan.alignment
('allgather', 'Simple', 16)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.core.limits import MAX_PROGRAM_CELLS, check_count, read_file
from optcoll.exceptions import FileFormatError

__all__ = [
    "CHUNK_UNITS",
    "LIMITS",
    "OP_NAMES",
    "Ref",
    "SwitchGroup",
    "Op",
    "ThreadBlock",
    "Gpu",
    "Plan",
    "parse_plan",
    "read_plan",
    "unit_parts",
]

#: Each limit with its value and the upstream file that sets it.
LIMITS: dict[str, tuple[int, str]] = {
    "operations_per_threadblock": (64, "execution_common.hpp MAX_OPERATION; executor.cc"),
    "channels_per_threadblock": (16, "execution_common.hpp MAX_CHANNEL"),
    "channels_per_operation": (8, "execution_common.hpp MAX_CHANNEL_PER_OPERATION"),
    "buffers_per_operation": (
        10,
        "execution_common.hpp MAX_LOCAL_BUFFER_PER_OPERATION + MAX_CHANNEL_PER_OPERATION",
    ),
    "barriers": (16, "execution_common.hpp MAX_DEVICE_SYNCERS"),
    "semaphores_per_operation": (16, "execution_common.hpp MAX_DEVICE_SEMAPHORES"),
}

#: The chunk, in units of the first pipeline, at which the checker executes pipelines
#: (a model size: a range of ``c`` chunks takes ``ceil(3 c / 2)`` units, the last one
#: partial when ``c`` is odd).
CHUNK_UNITS = Fraction(3, 2)

#: Operation names ``getOpType`` accepts (execution_plan.cc).
OP_NAMES = frozenset(
    "nop barrier put pws pwsf get copy signal wait flush re res rre rres ppkt rppkt respkt "
    "cpkt upkt repkt recpkt recspkt glres gstore gstorepkt rlxsignal rlxwait pipeline "
    "sem_acquire sem_release".split()
)
_BUFFERS = ("i", "o", "s")
_CHANNELS = ("memory", "port", "none", "switch")


@dataclass(frozen=True)
class Ref:
    """A buffer range of an op: ``rank``'s buffer ``kind`` (``i``, ``o``, ``s``), chunks
    ``index .. index + size - 1``; ``remote`` when reached through a channel; ``switch``
    the GPU's switch channel (index into :attr:`Gpu.switches`) when it is a multicast
    reference (the range on every rank bound to that channel)."""

    rank: int
    kind: str
    index: int
    size: int
    remote: bool = False
    switch: int | None = None


@dataclass(frozen=True)
class SwitchGroup:
    """One switch (NVLS) channel of a GPU: its ``ranks`` (in the file's order) and, for
    each of them, the buffer that rank binds to it (``members``: rank -> ``i``/``o``/``s``,
    from that rank's own declaration of the group); ``where`` names the field."""

    ranks: tuple[int, ...]
    kind: str
    where: str
    members: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Op:
    """One operation: ``channels`` are indices into its thread block's channel list of
    type ``channel_type``; ``channel_peers`` the peers those channels connect to, with
    the channel's ordinal among the rank's channels to that peer."""

    name: str
    position: int
    channel_type: str
    channels: tuple[int, ...]
    channel_peers: tuple[tuple[int, int], ...]
    src: tuple[Ref, ...]
    dst: tuple[Ref, ...]
    barrier: tuple[int, int] | None = None
    semaphores: tuple[int, ...] = ()
    #: thread block group: (this block's place, the group's size); the op handles that
    #: slice of each range (``calcOffset``/``calcSize``)
    group: tuple[int, int] = (0, 1)
    #: a ``pipeline``: ``(unit_size, num_chunks)`` of its ``iter_context``; the ``body``
    #: ops after it are its inner ops, run once per unit of ``num_chunks`` chunks
    loop: tuple[int, int] | None = None
    body: int = 0


@dataclass
class ThreadBlock:
    id: int
    ops: list[Op]


@dataclass
class Gpu:
    rank: int
    chunks: dict[str, int]
    threadblocks: list[ThreadBlock]
    #: per channel type, each channel's (peer, ordinal among this rank's channels to it);
    #: a ``switch`` channel's entry is (its index in ``switches``, 0)
    channels: dict[str, list[tuple[int, int]]]
    semaphores: list[int] = field(default_factory=list)
    #: the GPU's switch (NVLS) channels, one per rank group, in order
    switches: list[SwitchGroup] = field(default_factory=list)


@dataclass
class Plan:
    name: str
    collective: str
    protocol: str
    inplace: bool
    alignment: int
    min_message_size: int
    max_message_size: int
    gpus: list[Gpu]
    #: overflows the parser does not check: (field, message)
    overflows: list[tuple[str, str]] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    #: parts each chunk is cut into: the least common multiple of the thread block
    #: group sizes (so that every group's slice is whole parts) and, with pipelines, the
    #: denominator of :data:`CHUNK_UNITS`
    parts: int = 1
    #: the first pipeline's ``unit_size`` (bytes): the checker executes pipelines with a
    #: chunk of :data:`CHUNK_UNITS` such units
    unit_size: int | None = None

    @property
    def ranks(self) -> int:
        return len(self.gpus)


def read_plan(path: str | Path) -> Plan:
    """Read and parse a plan file; FileFormatError if it is not JSON or breaks a rule."""
    try:
        text = read_file(path).decode("utf-8")
    except UnicodeDecodeError as err:
        raise FileFormatError(f"{path}: cannot read the plan ({err})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise FileFormatError(f"{path}: not JSON (line {err.lineno}: {err.msg})") from None
    try:
        return parse_plan(document)
    except FileFormatError as err:
        raise FileFormatError(f"{path}: {err}") from None


def _get(obj: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise FileFormatError(f"{where}: missing field {key!r}")
    value = obj[key]
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FileFormatError(f"{where}.{key}: must be an integer, got {value!r}")
        if value < 0:
            raise FileFormatError(f"{where}.{key}: must be >= 0, got {value}")
        return value
    if not isinstance(value, kind):
        raise FileFormatError(f"{where}.{key}: wrong type {type(value).__name__}")
    return value


def _optional(obj: dict, key: str, default: int, where: str) -> int:
    return _get(obj, key, where, int) if key in obj else default


def _kind(value: Any, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise FileFormatError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return value


def parse_plan(document: Any) -> Plan:
    """A :class:`Plan` from a decoded JSON document (see the module docstring)."""
    if not isinstance(document, dict):
        raise FileFormatError("the plan must be a JSON object")
    name = _get(document, "name", "plan", str)
    collective = _get(document, "collective", "plan", str)
    protocol = _get(document, "protocol", "plan", str)
    inplace = _get(document, "inplace", "plan", bool)
    alignment = _optional(document, "buffer_alignment", 16, "plan")
    if alignment < 1:
        raise FileFormatError("plan.buffer_alignment: must be >= 1")
    low = _optional(document, "min_message_size", 0, "plan")
    high = _optional(document, "max_message_size", 2**64 - 1, "plan")
    if low > high:
        raise FileFormatError(f"plan.min_message_size {low} exceeds max_message_size {high}")
    gpus_field = _get(document, "gpus", "plan", list)
    plan = Plan(name, collective, protocol, inplace, alignment, low, high, [])
    raw_remote: list[list[tuple[int, str, tuple[str, ...]]]] = []
    for position, gpu in enumerate(gpus_field):
        where = f"gpus[{position}]"
        if _get(gpu, "id", where, int) != position:
            raise FileFormatError(f"{where}.id: is {gpu['id']}, must be {position} (GPU rank)")
        chunks = {
            kind: check_count(
                _get(gpu, f"{word}_chunks", where, int),
                MAX_PROGRAM_CELLS // max(len(gpus_field), 1),
                f"{where}.{word}_chunks",
                FileFormatError,
            )
            for kind, word in (("i", "input"), ("o", "output"), ("s", "scratch"))
        }
        channels: dict[str, list[tuple[int, int]]] = {"memory": [], "port": [], "switch": []}
        switches: list[SwitchGroup] = []
        for c, channel in enumerate(_get(gpu, "channels", where, list)):
            cw = f"{where}.channels[{c}]"
            ctype = _kind(_get(channel, "channel_type", cw, str), _CHANNELS, f"{cw}.channel_type")
            if ctype == "switch":
                kind = _kind(_get(channel, "buffer_type", cw, str), _BUFFERS, f"{cw}.buffer_type")
                for g, group in enumerate(_get(channel, "rank_groups", cw, list)):
                    gw = f"{cw}.rank_groups[{g}]"
                    _get(group, "size", gw, int)
                    ranks = _get(group, "ranks", gw, list)
                    for r in ranks:
                        if isinstance(r, bool) or not isinstance(r, int):
                            raise FileFormatError(f"{gw}.ranks: {r!r} is not a rank")
                    if len(set(ranks)) != len(ranks):
                        raise FileFormatError(f"{gw}.ranks: {ranks} names a rank twice")
                    channels["switch"].append((len(switches), 0))
                    switches.append(SwitchGroup(tuple(ranks), kind, f"{gw}.ranks"))
                continue
            for peer in _get(channel, "connected_to", cw, list):
                if isinstance(peer, bool) or not isinstance(peer, int):
                    raise FileFormatError(f"{cw}.connected_to: {peer!r} is not a rank")
                if ctype in ("memory", "port"):
                    channels[ctype].append((peer, 0))
        remote = []
        for b, buffer in enumerate(_get(gpu, "remote_buffers", where, list)):
            bw = f"{where}.remote_buffers[{b}]"
            access = tuple(
                _kind(t, _CHANNELS, f"{bw}.access_channel_types")
                for t in _get(buffer, "access_channel_types", bw, list)
            )
            kind = _kind(_get(buffer, "type", bw, str), _BUFFERS, f"{bw}.type")
            remote.append((_get(buffer, "rank", bw, int), kind, access))
        raw_remote.append(remote)
        semaphores = [
            _get(s, "init_value", f"{where}.semaphores[{i}]", int)
            for i, s in enumerate(gpu.get("semaphores", []))
        ]
        plan.gpus.append(Gpu(position, chunks, [], channels, semaphores, switches))
    n = len(plan.gpus)
    _pair_switches(plan)
    for gpu in plan.gpus:
        ordinal: dict[int, int] = {}
        for ctype in ("memory", "port"):  # the per-peer tag counter: memory first
            numbered = []
            for peer, _ in gpu.channels[ctype]:
                if not 0 <= peer < n or peer == gpu.rank:
                    raise FileFormatError(
                        f"gpus[{gpu.rank}].channels: connected_to {peer} is not another rank "
                        f"of the {n}"
                    )
                numbered.append((peer, ordinal.get(peer, 0)))
                ordinal[peer] = ordinal.get(peer, 0) + 1
            gpu.channels[ctype] = numbered
        for b, (rank, _, _) in enumerate(raw_remote[gpu.rank]):
            if not 0 <= rank < n:
                raise FileFormatError(
                    f"gpus[{gpu.rank}].remote_buffers[{b}].rank: {rank} is not a rank of the {n}"
                )
    for position, gpu_doc in enumerate(gpus_field):
        _parse_threadblocks(plan, plan.gpus[position], gpu_doc, raw_remote[position])
    for gpu in plan.gpus:
        for tb in gpu.threadblocks:
            for op in tb.ops:
                if op.loop is not None and unit_parts(plan, op.loop[0]) is None:
                    plan.unsupported.append(
                        f"gpus[{gpu.rank}].threadblocks[{tb.id}]: a pipeline unit of "
                        f"{op.loop[0]} B beside the first of {plan.unit_size} B"
                    )
    return plan


def _pair_switches(plan: Plan) -> None:
    """Check that the switch channels can be set up (``connectNvlsCollective`` is a
    collective call of a group's ranks) and record which buffer each member binds.

    Every rank of a group is a rank of the plan and declares the group itself (the
    group holds the declaring rank); for two ranks ``a`` and ``b``, the groups ``a``
    declares that hold ``b`` are, in order, the groups ``b`` declares that hold ``a``.
    """
    n = len(plan.gpus)
    for gpu in plan.gpus:
        for group in gpu.switches:
            for r in group.ranks:
                if not 0 <= r < n:
                    raise FileFormatError(f"{group.where}: {r} is not a rank of the {n}")
            if gpu.rank not in group.ranks:
                raise FileFormatError(
                    f"{group.where}: {list(group.ranks)} leaves out rank {gpu.rank}, which "
                    "declares it (a GPU binds its own buffer to its switch channels)"
                )
    for gpu in plan.gpus:
        for g, group in enumerate(gpu.switches):
            for peer in group.ranks:
                mine = [h for h in gpu.switches if peer in h.ranks]
                theirs = [h for h in plan.gpus[peer].switches if gpu.rank in h.ranks]
                place = sum(1 for h in gpu.switches[:g] if peer in h.ranks)
                if place >= len(theirs) or theirs[place].ranks != group.ranks:
                    got, odd = "nothing", ""
                    if place < len(theirs):
                        got = str(list(theirs[place].ranks))
                        extra = sorted(set(theirs[place].ranks) ^ set(group.ranks))
                        if extra:
                            odd = f"; rank(s) {extra} in one and not the other"
                    raise FileFormatError(
                        f"{group.where}: {list(group.ranks)} is switch channel {place} of "
                        f"rank {gpu.rank} with rank {peer}, but rank {peer} declares "
                        f"{got} there{odd} (connectNvlsCollective, a collective call of the "
                        "group's ranks, would never complete)"
                    )
                if len(mine) != len(theirs):
                    raise FileFormatError(
                        f"{group.where}: rank {gpu.rank} declares {len(mine)} switch "
                        f"channel(s) with rank {peer}, rank {peer} {len(theirs)} with rank "
                        f"{gpu.rank} (connectNvlsCollective would never complete)"
                    )
                group.members[peer] = theirs[place].kind


def _parse_threadblocks(
    plan: Plan, gpu: Gpu, doc: dict, remote: list[tuple[int, str, tuple[str, ...]]]
) -> None:
    where = f"gpus[{gpu.rank}]"
    blocks = _get(doc, "threadblocks", where, list)
    limit_ops = LIMITS["operations_per_threadblock"][0]
    limit_channels = LIMITS["channels_per_threadblock"][0]
    for t, block in enumerate(blocks):
        tw = f"{where}.threadblocks[{t}]"
        if _get(block, "id", tw, int) != t:
            raise FileFormatError(f"{tw}.id: is {block['id']}, must be {t} (its position)")
        tb_channels: dict[str, list[tuple[int, int]]] = {"memory": [], "port": [], "switch": []}
        for c, channel in enumerate(_get(block, "channels", tw, list)):
            cw = f"{tw}.channels[{c}]"
            ctype = _kind(_get(channel, "channel_type", cw, str), _CHANNELS, f"{cw}.channel_type")
            if "buff" in channel:
                _kind(channel["buff"], _BUFFERS, f"{cw}.buff")
            for cid in _get(channel, "channel_ids", cw, list):
                if ctype == "none":
                    continue
                pool = gpu.channels[ctype]
                if isinstance(cid, bool) or not isinstance(cid, int) or not 0 <= cid < len(pool):
                    raise FileFormatError(
                        f"{cw}.channel_ids: {cid!r} is not one of the {len(pool)} {ctype} "
                        f"channels of GPU {gpu.rank}"
                    )
                tb_channels[ctype].append(pool[cid])
        buffers: dict[str, list[int]] = {"memory": [], "port": []}
        for r, refs in enumerate(block.get("remote_buffer_refs", [])):
            rw = f"{tw}.remote_buffer_refs[{r}]"
            ctype = _kind(_get(refs, "access_channel_type", rw, str), _CHANNELS, rw)
            for bid in _get(refs, "remote_buffer_ids", rw, list):
                if isinstance(bid, bool) or not isinstance(bid, int) or not 0 <= bid < len(remote):
                    raise FileFormatError(
                        f"{rw}.remote_buffer_ids: {bid!r} is not one of the {len(remote)} "
                        f"remote buffers of GPU {gpu.rank}"
                    )
                if ctype in buffers:
                    if ctype not in remote[bid][2]:
                        raise FileFormatError(
                            f"{rw}: remote buffer {bid} is not accessible by {ctype} channels"
                        )
                    buffers[ctype].append(bid)
        for ctype in ("memory", "port"):
            if len(tb_channels[ctype]) > limit_channels or len(buffers[ctype]) > limit_channels:
                plan.overflows.append(
                    (
                        tw,
                        f"more than {limit_channels} {ctype} channels or remote buffers "
                        f"({LIMITS['channels_per_threadblock'][1]})",
                    )
                )
        ops: list[Op] = []
        for o, op_doc in enumerate(_get(block, "ops", tw, list)):
            ops.append(
                _parse_op(
                    plan, gpu, op_doc, f"{tw}.ops[{o}]", len(ops), tb_channels, buffers, remote
                )
            )
            if ops[-1].name == "pipeline":
                ow = f"{tw}.ops[{o}]"
                context = _get(op_doc, "iter_context", ow, dict)
                unit = _get(context, "unit_size", f"{ow}.iter_context", int)
                if unit == 0:
                    raise FileFormatError(
                        f"{ow}.iter_context.unit_size: must be > 0 (the executor divides by it)"
                    )
                inner_ops = _get(op_doc, "ops", ow, list)
                loop = (
                    unit,
                    check_count(
                        _get(context, "num_chunks", f"{ow}.iter_context", int),
                        MAX_PROGRAM_CELLS,
                        f"{ow}.iter_context.num_chunks",
                        FileFormatError,
                    ),
                )
                if plan.unit_size is None:
                    plan.unit_size = unit
                    plan.parts = math.lcm(plan.parts, CHUNK_UNITS.numerator)
                ops[-1] = replace(ops[-1], loop=loop, body=len(inner_ops))
                for i, inner in enumerate(inner_ops):
                    if isinstance(inner, dict) and inner.get("name") == "pipeline":
                        plan.unsupported.append(f"{ow}.ops[{i}]: a pipeline inside a pipeline")
                    ops.append(
                        _parse_op(
                            plan,
                            gpu,
                            inner,
                            f"{tw}.ops[{o}].ops[{i}]",
                            len(ops),
                            tb_channels,
                            buffers,
                            remote,
                        )
                    )
        if len(ops) > limit_ops:
            raise FileFormatError(
                f"{tw}.ops: {len(ops)} operations, above the {limit_ops} the executor accepts "
                f"({LIMITS['operations_per_threadblock'][1]})"
            )
        gpu.threadblocks.append(ThreadBlock(t, ops))


def _parse_op(
    plan: Plan,
    gpu: Gpu,
    doc: dict,
    where: str,
    position: int,
    tb_channels: dict[str, list[tuple[int, int]]],
    buffers: dict[str, list[int]],
    remote: list[tuple[int, str, tuple[str, ...]]],
) -> Op:
    name = _get(doc, "name", where, str)
    if name not in OP_NAMES:
        raise FileFormatError(f"{where}.name: invalid operation type {name!r}")
    if name == "gstorepkt":
        plan.unsupported.append(f"{where}: {name} (switch channel packets)")
    ctype = "none"
    if "channel_type" in doc:
        ctype = _kind(doc["channel_type"], _CHANNELS, f"{where}.channel_type")
    channels = tuple(doc.get("channel_ids", ()))
    per_op = LIMITS["channels_per_operation"][0]
    if len(channels) > per_op:
        plan.overflows.append(
            (
                where,
                f"{len(channels)} channel_ids, above {per_op} "
                f"({LIMITS['channels_per_operation'][1]})",
            )
        )
    peers = []
    for cid in channels:
        pool = tb_channels.get(ctype, [])
        if isinstance(cid, bool) or not isinstance(cid, int) or not 0 <= cid < len(pool):
            raise FileFormatError(
                f"{where}.channel_ids: {cid!r} is not one of the thread block's {len(pool)} "
                f"{ctype} channels"
            )
        peers.append(pool[cid])
    sides = []
    for side in ("src_buff", "dst_buff"):
        refs = []
        entries = doc.get(side, [])
        if len(entries) > LIMITS["buffers_per_operation"][0]:
            plan.overflows.append(
                (
                    where,
                    f"{len(entries)} {side} entries, above {LIMITS['buffers_per_operation'][0]}",
                )
            )
        for b, buff in enumerate(entries):
            bw = f"{where}.{side}[{b}]"
            index, size = _get(buff, "index", bw, int), _get(buff, "size", bw, int)
            # the parser converts a "type" wherever it is given, beside a buffer_id too
            kind = _kind(buff["type"], _BUFFERS, f"{bw}.type") if "type" in buff else None
            if "switch_channel_id" in buff:  # the executor takes it over a type or buffer_id
                sid = buff["switch_channel_id"]
                pool = tb_channels["switch"]
                if isinstance(sid, bool) or not isinstance(sid, int) or not 0 <= sid < len(pool):
                    raise FileFormatError(
                        f"{bw}.switch_channel_id: {sid!r} is not one of the thread block's "
                        f"{len(pool)} switch channels"
                    )
                g = pool[sid][0]
                refs.append(Ref(gpu.rank, gpu.switches[g].kind, index, size, True, g))
            elif "buffer_id" in buff:
                if ctype not in buffers:
                    raise FileFormatError(
                        f"{bw}.buffer_id: the op's channel_type is {ctype!r}; a remote buffer "
                        "needs memory or port (Invalid channel type)"
                    )
                bid = buff["buffer_id"]
                bids = buffers[ctype]
                if isinstance(bid, bool) or not isinstance(bid, int) or not 0 <= bid < len(bids):
                    raise FileFormatError(
                        f"{bw}.buffer_id: {bid!r} is not one of the thread block's {len(bids)} "
                        f"{ctype} remote buffers"
                    )
                rank, kind, _ = remote[bids[bid]]
                refs.append(Ref(rank, kind, index, size, remote=True))
            elif kind is not None:
                refs.append(Ref(gpu.rank, kind, index, size))
            else:
                raise FileFormatError(f"{bw}: names neither type nor buffer_id")
        sides.append(tuple(refs))
    barrier = None
    if name == "barrier":
        bid = _get(doc, "barrier_id", where, int)
        if bid >= LIMITS["barriers"][0]:
            plan.overflows.append((where, f"barrier_id {bid} beyond {LIMITS['barriers'][0]}"))
        barrier = (bid, _get(doc, "num_threadblocks", where, int))
    semaphores = tuple(doc.get("semaphore_ids", ()))
    for s in semaphores:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < len(gpu.semaphores):
            raise FileFormatError(f"{where}.semaphore_ids: {s!r} is not a semaphore of the GPU")
    group = (0, 1)
    if "tbg_info" in doc:
        info = doc["tbg_info"]
        group = (
            _get(info, "tb_id", f"{where}.tbg_info", int),
            _get(info, "tbg_size", f"{where}.tbg_info", int),
        )
        if not 0 <= group[0] < group[1]:
            raise FileFormatError(
                f"{where}.tbg_info: tb_id {group[0]} not below tbg_size {group[1]}"
            )
        plan.parts = math.lcm(plan.parts, group[1])
    return Op(
        name,
        position,
        ctype,
        channels,
        tuple(peers),
        sides[0],
        sides[1],
        barrier,
        semaphores,
        group,
    )


def unit_parts(plan: Plan, unit_size: int) -> int | None:
    """Parts (of :attr:`Plan.parts` per chunk) in a pipeline unit of ``unit_size`` bytes,
    the chunk being :data:`CHUNK_UNITS` of the plan's first unit size; None if that is no
    whole number of parts.

    Examples
    --------
    >>> plan = Plan("x", "allgather", "Simple", False, 16, 0, 1, [], unit_size=1024, parts=3)
    >>> unit_parts(plan, 1024), unit_parts(plan, 512), unit_parts(plan, 100)
    (2, 1, None)
    """
    assert plan.unit_size is not None
    parts = Fraction(plan.parts * unit_size) / (CHUNK_UNITS * plan.unit_size)
    return parts.numerator if parts.denominator == 1 and parts > 0 else None
