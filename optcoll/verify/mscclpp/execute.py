"""Abstract execution of an MSCCL++ plan: every thread block of every rank runs its ops.

What each op does, and what orders two ops, is taken from the kernel,
``src/core/include/execution_kernel.hpp`` of microsoft/mscclpp (commit 1f5f065d, MIT):

* Ops of one thread block run one after the other **without** a barrier: all threads
  of the block share the work of a data op and go on to the next op at their own pace,
  so an op is ordered after an earlier op of its block only by a ``nop``
  (``__syncthreads``) or a ``barrier`` between them.
* ``signal``/``wait`` are run by thread ``i`` for channel ``i``; ``signal`` fences the
  signalling thread's earlier writes, so what a peer may read after its ``wait`` (and
  a ``nop``) is what the signalling block had completed before its last ``nop``.
  ``rlxsignal``/``rlxwait`` order nothing. ``pws``/``pwsf`` on a *port* channel put
  and signal in one proxy request, so the put is visible with the signal; on a
  *memory* channel ``handlePut`` returns before signalling: they are plain puts.
* The ``n``-th ``wait`` on a channel returns after the ``n``-th ``signal`` of the
  channel paired with it (a counting semaphore); signals left unconsumed at the end
  make the next launch's waits return early.
* ``put`` on a memory channel copies from the buffer of ``src_buff[0]`` (offsets per
  output), ``dst_buff[i]``'s size; ``get`` writes the local buffer at ``src_buff[i]``'s
  offset from the remote buffer at ``dst_buff[i]``'s offset (the kernel passes the two
  offsets that way round); ``re``/``res``/``rre``/``rres`` sum ``src_buff`` into
  ``dst_buff[0]`` (and write ``dst_buff[1:]`` remotely); packet ops (``ppkt``,
  ``upkt``, ``cpkt``, ``rppkt``, ``respkt``, ``repkt``, ``recpkt``, ``recspkt``)
  read packets from the scratch buffer, each waiting for its flag.

The execution tracks, per rank and buffer chunk, the symbolic value (a multiset of
input chunks) and, with vector clocks, which op wrote it and which read it since: a read
or write not ordered after the last write (and, for a write, after the reads since) is a
race. A ``pipeline`` runs its inner ops once per unit (``handlePipeline``), each on that
unit of its ranges, at a model size: a chunk of ``CHUNK_UNITS`` (1.5, in
:mod:`~optcoll.verify.mscclpp.plan`) of the first pipeline's units, so a range of ``c`` chunks takes
``ceil(1.5 c)`` units, the last one partial for odd ``c`` (other sizes give other unit
counts; a defect that shows only at them is not seen). ``sem_release`` passes its
block's clock to the matching ``sem_acquire``, which (one thread per semaphore) orders
the block only at its next ``nop``. A port channel's ``ppkt`` sends the packets in its
local scratch as they are: they must be packets, written before (ordered by a ``nop``).
Switch (NVLS) channel ops (``handleMultiLoadReduceStore``, ``handleMultiStore``):
``glres`` reads its range (``src_buff[0]``, a switch channel) from the buffer every rank
of the channel's group binds to it, sums them (``multimem.ld_reduce``) and writes the
sum to ``dst_buff[0]``'s range on every rank of that channel's group
(``multimem.st``); ``gstore`` writes its local ``src_buff[0]`` so. A read of another
rank's buffer is a race unless the reader saw that rank's last write, as for any read;
and both ops reach ranks that may not have started the collective yet: the block must
have *heard from* every rank it touches (a ``wait`` or ``rlxwait`` for a signal that
rank sent, relaxed or not, then a ``nop``), or it may read inputs not yet written and
write outputs still in use ("sync"). A rank may end the collective (its kernel
returns) only after every switch store into its buffers: each must be ordered before
the end of some thread block of that rank by a signal it heard ("race").
Not modelled: the source of a port-channel put being read later by the proxy (our plans
never overwrite a source), scratch reuse across launches, a packet region and plain
data overlapping in scratch (packets sit at twice the chunk offset), and ``gstorepkt``
(a plan with it is not executed).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from optcoll.verify.mscclpp.plan import Op, Plan, Ref, ThreadBlock, unit_parts
from optcoll.verify.report import Finding

__all__ = ["Outcome", "execute", "programs", "STRATEGIES"]

#: Interleavings run: (name, how the next thread block is chosen, ops per turn, seed).
STRATEGIES = (
    ("in-order", "first", 0, 0),
    ("reverse", "last", 0, 0),
    ("round-robin", "first", 1, 0),
    ("random-1", "random", 1, 1),
    ("random-2", "random", 3, 2),
)

Cell = tuple[int, str, int]
Value = tuple[tuple[int, int], ...] | None
Stamp = tuple[int, int]  # (global thread block, op position)


@dataclass
class Outcome:
    """One interleaving's result: its findings and final values."""

    strategy: str
    findings: list[Finding] = field(default_factory=list)
    values: dict[Cell, Value] = field(default_factory=dict)
    completed: bool = False


class _Clock:
    """A vector clock over thread blocks plus single ops ordered out of turn (``pws``); its
    entries an integer array, so a join is one element-wise maximum. Clocks share their
    entries until one of them changes (copy on write): a copy, e.g. a signal's message,
    costs nothing, and a clock that has seen nothing (``blank``) takes what it joins."""

    __slots__ = ("time", "extra", "shared", "blank")

    def __init__(
        self, time: np.ndarray, extra: frozenset[Stamp] = frozenset(), blank: bool = False
    ) -> None:
        self.time = time  # never changed in place while ``shared``
        self.extra = extra  # never changed in place
        self.shared = True
        self.blank = blank

    def copy(self) -> _Clock:
        self.shared = True
        return _Clock(self.time, self.extra, self.blank)

    def stamped(self, stamp: Stamp) -> _Clock:
        """A copy that also covers the single op ``stamp``."""
        self.shared = True
        return _Clock(self.time, self.extra | {stamp})

    def join(self, other: _Clock) -> None:
        if other.blank:
            return
        if self.blank:
            other.shared = True
            self.time, self.extra, self.shared, self.blank = other.time, other.extra, True, False
            return
        if other.time is not self.time:
            if self.shared:
                self.time = np.maximum(self.time, other.time)
                self.shared = False
            else:
                np.maximum(self.time, other.time, out=self.time)
        if other.extra and other.extra is not self.extra:
            self.extra = self.extra | other.extra if self.extra else other.extra

    def advance(self, t: int, value: int) -> None:
        """Block ``t``'s entry at least ``value``."""
        if self.time[t] < value:
            if self.shared:
                self.time = self.time.copy()
                self.shared = False
            self.time[t] = value
            self.blank = False

    def covers(self, stamp: Stamp) -> bool:
        return bool(self.time[stamp[0]] > stamp[1]) or stamp in self.extra


class _Where:
    """An op's place in a finding, ``rank 0 tb 1 op 3 (put of unit 2)``, spelt only when
    a finding names it (most ops run without one)."""

    __slots__ = ("machine", "stamp")

    def __init__(self, machine: _Machine, stamp: Stamp) -> None:
        self.machine, self.stamp = machine, stamp

    def __format__(self, spec: str) -> str:
        return format(self.machine.label(self.stamp), spec)


class _Machine:
    def __init__(
        self, plan: Plan, strategy: str, programs: list[list[tuple[Op, tuple[int, int] | None]]]
    ) -> None:
        self.plan = plan
        self.outcome = Outcome(strategy)
        self.blocks = [(g.rank, tb) for g in plan.gpus for tb in g.threadblocks]
        size = len(self.blocks)
        #: the entries of a clock that has seen nothing (shared, never changed)
        self.zeros = np.zeros(size, dtype=np.int32)
        self.clock = [self.blank() for _ in self.blocks]
        self.pending = [self.blank() for _ in self.blocks]
        #: what each block has heard of (signals, relaxed ones too): control order, which
        #: only switch ops consult (not followed in a plan without them)
        self.switched = any(op.name in ("glres", "gstore") for _, tb in self.blocks
                            for op in tb.ops)  # fmt: skip
        self.control = [self.blank() for _ in self.blocks]
        self.pending_control = [self.blank() for _ in self.blocks]
        self.heard_from: dict[tuple[str, int, int, int], list[_Clock | None]] = defaultdict(list)
        #: cells written by switch ops: their writer
        self.multicast: dict[Cell, Stamp] = {}
        self.pc = [0] * size
        self.program = programs
        self.at = 0
        self.window: tuple[int, int] | None = None
        #: (channel type, sender, receiver, ordinal) -> its signals (None: relaxed)
        self.signals: dict[tuple[str, int, int, int], list[_Clock | None]] = defaultdict(list)
        self.taken: dict[tuple[str, int, int, int], int] = defaultdict(int)
        #: (rank, semaphore) -> the clocks of its releases, and how many were acquired
        self.releases: dict[tuple[int, int], list[_Clock | None]] = defaultdict(list)
        self.acquired: dict[tuple[int, int], int] = defaultdict(int)
        self.values: dict[Cell, Value] = {}
        self.writer: dict[Cell, Stamp] = {}
        self.readers: dict[Cell, list[Stamp]] = defaultdict(list)
        self.packet: dict[Cell, _Clock] = {}
        self.packet_writer: dict[Cell, Stamp] = {}
        self.barriers: dict[tuple[int, int], list[int]] = defaultdict(list)
        self.released: set[tuple[int, int]] = set()
        self.seen: set[object] = set()
        self.op: Op | None = None
        parts = plan.parts
        for gpu in plan.gpus:
            for x in range(gpu.chunks["i"] * parts):
                self.values[self.cell(gpu.rank, "i", x)] = ((gpu.rank, x),)

    def blank(self) -> _Clock:
        """A clock that has seen nothing."""
        return _Clock(self.zeros, blank=True)

    def cell(self, rank: int, kind: str, part: int) -> Cell:
        """The cell of part ``part`` of a buffer (in place, the input is the output's)."""
        if kind == "i" and self.plan.inplace:
            if self.plan.collective == "allgather":
                shift = rank * self.plan.gpus[rank].chunks["i"] * self.plan.parts
                return (rank, "o", shift + part)
            return (rank, "o", part)
        return (rank, kind, part)

    def find(self, kind: str, message: str, key: object = None) -> None:
        """Record a finding once (per ``key`` if given, e.g. an op's, so a defect in a
        pipeline is reported at its first unit only)."""
        key = message if key is None else key
        if key not in self.seen:
            self.seen.add(key)
            self.outcome.findings.append(Finding(kind, message))

    # --- memory ------------------------------------------------------------------------

    def cells(
        self, ref: Ref, kind: str | None = None, index: int | None = None, size: int | None = None
    ) -> list[Cell]:
        kind = ref.kind if kind is None else kind
        index = ref.index if index is None else index
        size = ref.size if size is None else size
        chunks = self.plan.gpus[ref.rank].chunks[kind]
        if index + size > chunks:
            raise _Bounds(
                f"{kind}[{index}:{index + size}] of rank {ref.rank} (it has {chunks} chunks)"
            )
        parts = self.plan.parts
        assert self.op is not None
        place, count = self.op.group
        span = size * parts
        first, last = (
            index * parts + span * place // count,
            index * parts + span * (place + 1) // count,
        )
        if self.window is not None:  # one unit of a pipeline: the kernel's offset and size
            offset = first + self.window[0] * self.window[1]
            if offset > last:
                raise _Bounds(
                    f"{kind}[{index}:{index + size}] of rank {ref.rank} at unit "
                    f"{self.window[0]}, past its end (the kernel's size - offset wraps around)"
                )
            first, last = offset, min(last, offset + self.window[1])
        return [self.cell(ref.rank, kind, x) for x in range(first, last)]

    def read(self, t: int, op: Op, cells: list[Cell], where: _Where) -> list[Value]:
        stamp, clock = (t, self.at), self.clock[t]
        out = []
        plain = late = None
        for c in cells:
            w = self.writer.get(c)
            if c in self.packet and w is None:
                plain = plain or c
            if w is not None and w != stamp and not clock.covers(w):
                late = late or w
            self.readers[c].append(stamp)
            out.append(self.values.get(c))
        if plain is not None:  # one finding per op, naming the chunks it reads
            self.find(
                "format", f"{where} reads packet-format data as plain from {self.span(cells)}"
            )
        if late is not None:
            self.find(
                "race",
                f"{where} reads {self.span(cells)} before the write of "
                f"{self.label(late)} is visible to it",
                ("read", t, op.position),
            )
        return out

    def write(self, t: int, op: Op, cells: list[Cell], values: list[Value], where: _Where) -> None:
        stamp, clock = (t, self.at), self.clock[t]
        written = read = None
        for c, v in zip(cells, values, strict=True):
            w = self.writer.get(c)
            if w is not None and w != stamp and not clock.covers(w):
                written = written or w
            for r in self.readers.get(c, ()):
                if r != stamp and not clock.covers(r):
                    read = read or r
                    break
            self.writer[c] = stamp
            self.readers[c] = []
            self.packet.pop(c, None)
            self.values[c] = v
        if written is not None:  # one finding per op and kind, naming the chunks
            self.find(
                "race",
                f"{where} writes {self.span(cells)} unordered with the write of "
                f"{self.label(written)}",
                ("write", t, op.position),
            )
        if read is not None:
            self.find(
                "race",
                f"{where} overwrites {self.span(cells)} unordered with its read by "
                f"{self.label(read)}",
                ("overwrite", t, op.position),
            )

    def span(self, cells: list[Cell]) -> str:
        """The chunks ``cells`` (parts of one buffer) lie in, e.g. ``s[2:4] of rank 1``."""
        rank, kind, first = cells[0]
        last = cells[-1][2]
        parts = self.plan.parts
        return f"{kind}[{first // parts}:{last // parts + 1}] of rank {rank}"

    def read_packets(self, t: int, cells: list[Cell]) -> list[Value] | None:
        if any(c not in self.packet for c in cells):
            return None
        for c in cells:  # element by element, the flag orders the reader after the writer
            self.clock[t].join(self.packet[c])
        return [self.values.get(c) for c in cells]

    def write_packets(self, t: int, op: Op, cells: list[Cell], values: list[Value]) -> None:
        message = self.clock[t].stamped((t, self.at))
        for c, v in zip(cells, values, strict=True):
            self.packet[c] = message
            self.packet_writer[c] = (t, self.at)
            self.writer.pop(c, None)
            self.readers.pop(c, None)
            self.values[c] = v

    def send_packets(self, t: int, cells: list[Cell], where: _Where) -> list[Value]:
        """Packets a port channel's ``ppkt`` hands to the proxy: they must be packets
        already (``handlePutPackets`` copies the bytes), written before (a ``nop``
        after a ``cpkt`` of the same block); nothing waits for their flags."""
        clock = self.clock[t]
        plain = late = None
        for c in cells:
            if c not in self.packet:
                plain = plain or c
            elif not clock.covers(self.packet_writer[c]):
                late = late or self.packet_writer[c]
        if plain is not None:
            self.find(
                "format",
                f"{where} sends {self.span(cells)} as packets, but it holds plain data",
                ("format", t, self.at),
            )
        if late is not None:
            self.find(
                "race",
                f"{where} sends {self.span(cells)} before the write of {self.label(late)} "
                "is visible to it",
                ("read", t, self.at),
            )
        return [self.values.get(c) for c in cells]

    def label(self, stamp: Stamp) -> str:
        rank, tb = self.blocks[stamp[0]]
        return f"rank {rank} tb {tb.id} op {self._where(stamp[0], stamp[1])}"

    def _where(self, t: int, at: int) -> str:
        op, window = self.program[t][at]
        unit = "" if window is None else f" of unit {window[0]}"
        return f"{op.position} ({op.name}{unit})"

    # --- one op --------------------------------------------------------------------------

    def step(self, t: int) -> bool:
        """Run thread block ``t``'s next op; False when it must wait."""
        rank, tb = self.blocks[t]
        op, self.window = self.program[t][self.pc[t]]
        self.at = self.pc[t]
        where = _Where(self, (t, self.at))
        self.op = op
        try:
            done = self._run(t, rank, op, where)
        except _Bounds as err:
            self.find("bounds", f"{where} addresses {err}")
            done = True
        if done:
            self.pc[t] += 1
        return done

    def _sync(self, t: int, position: int) -> None:
        clock = self.clock[t]
        clock.join(self.pending[t])
        self.pending[t] = self.blank()
        clock.advance(t, position + 1)
        self.control[t].join(self.pending_control[t])
        self.pending_control[t] = self.blank()

    def _signal(self, key: tuple[str, int, int, int], t: int, message: _Clock | None) -> None:
        """Block ``t`` signals channel ``key`` (``message``: what the waiter then sees,
        None if relaxed); a plan with switch ops also passes what ``t`` has heard."""
        self.signals[key].append(message)
        if self.switched:
            self.heard_from[key].append(self.heard(t))

    def heard(self, t: int) -> _Clock:
        """What block ``t`` has seen, in memory or control order (ops before its last
        ``nop``), marked as running (``(t, -1)``)."""
        seen = self.clock[t].stamped((t, -1))
        seen.join(self.control[t])
        return seen

    def started(self, t: int, rank: int) -> bool:
        """Whether block ``t`` has heard from ``rank`` (so that rank runs the collective)."""
        if self.blocks[t][0] == rank:
            return True
        seen = self.heard(t)
        return any(
            seen.time[u] > 0 or (u, -1) in seen.extra
            for u, (r, _) in enumerate(self.blocks)
            if r == rank
        )

    def _run(self, t: int, rank: int, op: Op, where: _Where) -> bool:
        name = op.name
        if name == "nop":
            self._sync(t, self.at)
            return True
        if name == "barrier":
            return self._barrier(t, rank, op)
        if name in ("signal", "rlxsignal"):
            message = None if name == "rlxsignal" else self.clock[t].copy()
            for peer, ordinal in op.channel_peers:
                self._signal((op.channel_type, rank, peer, ordinal), t, message)
            return True
        if name in ("wait", "rlxwait"):
            keys = [(op.channel_type, peer, rank, ordinal) for peer, ordinal in op.channel_peers]
            # a channel listed twice is waited on twice: each of its threads takes the next
            # expected signal (an atomic add, mscclpp semaphore_device.hpp)
            need = Counter(keys) if len(keys) > 1 else dict.fromkeys(keys, 1)
            if any(self.taken[k] + c > len(self.signals[k]) for k, c in need.items()):
                return False
            for k in keys:  # a message taken is not kept (only the count of them)
                i = self.taken[k]
                message, self.signals[k][i] = self.signals[k][i], None
                heard = self.heard_from[k]
                if i < len(heard):
                    self.pending_control[t].join(_taken(heard, i))
                self.taken[k] += 1
                if message is not None:
                    self.pending[t].join(message)
            return True
        if name == "sem_release":
            for s in op.semaphores:
                self.releases[(rank, s)].append(self.clock[t].copy())
            return True
        if name == "sem_acquire":
            sems = [(rank, s) for s in op.semaphores]
            have = [len(self.releases[m]) + self.plan.gpus[rank].semaphores[m[1]] for m in sems]
            if any(self.acquired[m] >= n for m, n in zip(sems, have, strict=True)):
                return False
            for m in sems:  # run by one thread per semaphore: a nop orders the others
                i = self.acquired[m]
                if i < len(self.releases[m]):
                    self.pending[t].join(_taken(self.releases[m], i))
                self.acquired[m] += 1
            return True
        if name == "flush":
            return True
        return self._data(t, rank, op, where)

    def _barrier(self, t: int, rank: int, op: Op) -> bool:
        assert op.barrier is not None
        key = (rank, op.barrier[0])
        if (t, self.at) in self.released:
            return True
        arrived = self.barriers[key]
        if t not in arrived:
            arrived.append(t)
        if len(arrived) < op.barrier[1]:
            return False
        joined = self.blank()
        for u in arrived:
            self._sync(u, self.pc[u])
            joined.join(self.clock[u])
        for u in arrived:
            self.clock[u].join(joined)
            self.released.add((u, self.pc[u]))
        self.barriers[key] = []
        return True

    def _data(self, t: int, rank: int, op: Op, where: _Where) -> bool:
        name, src, dst = op.name, op.src, op.dst
        if name in ("put", "pws", "pwsf"):
            port = op.channel_type == "port"
            if op.channel_type not in ("memory", "port"):
                self.find("structure", f"{where} has channel_type {op.channel_type!r}")
                return True
            # the puts' signal: what the block saw, and the puts themselves (one proxy request)
            message = self.clock[t].stamped((t, self.at)) if port and name != "put" else None
            for i, d in enumerate(dst):
                s = src[i] if port else src[0]
                index = src[i].index if i < len(src) else s.index
                got = self.read(t, op, self.cells(s, s.kind, index, d.size), where)
                self.write(t, op, self.cells(d), got, where)
                if message is not None and i < len(op.channel_peers):
                    peer, ordinal = op.channel_peers[i]
                    self._signal(("port", rank, peer, ordinal), t, message)
            return True
        if name == "get":
            for s, d in zip(src, dst, strict=False):
                got = self.read(t, op, self.cells(s, s.kind, d.index, s.size), where)
                self.write(t, op, self.cells(d, d.kind, s.index, s.size), got, where)
            return True
        if name == "copy":
            got = self.read(t, op, self.cells(src[0]), where)
            self.write(t, op, self.cells(dst[0], None, None, src[0].size), got, where)
            return True
        if name in ("re", "res", "rre", "rres"):
            size = src[0].size
            parts = [self.read(t, op, self.cells(s, None, None, size), where) for s in src]
            total = [_sum(column) for column in zip(*parts, strict=True)]
            targets = dst if name in ("res", "rres") else dst[:1]
            for d in targets:
                self.write(t, op, self.cells(d, None, None, size), total, where)
            return True
        if name == "ppkt" and op.channel_type == "port":
            for i, d in enumerate(dst):  # the proxy copies packets as they are
                s = src[i] if i < len(src) else src[0]
                got = self.send_packets(t, self.cells(s), where)
                self.write_packets(t, op, self.cells(d, None, None, s.size), got)
            return True
        if name in ("ppkt", "cpkt"):
            outputs = dst if name == "ppkt" else dst[:1]
            for i, d in enumerate(outputs):
                s = src[i] if i < len(src) else src[0]
                got = self.read(t, op, self.cells(src[0], src[0].kind, s.index, s.size), where)
                self.write_packets(t, op, self.cells(d, None, None, s.size), got)
            return True
        if name in ("upkt", "rppkt"):
            arrived = self.read_packets(t, self.cells(src[0], "s"))
            if arrived is None:
                return False
            if name == "upkt":
                self.write(t, op, self.cells(dst[0], None, None, src[0].size), arrived, where)
            else:
                for d in dst:
                    self.write_packets(t, op, self.cells(d, None, None, src[0].size), arrived)
            return True
        if name in ("respkt", "repkt", "recpkt", "recspkt"):
            size = src[0].size
            packets = []
            for s in src[1:]:
                arrived = self.read_packets(t, self.cells(s, "s", None, size))
                if arrived is None:
                    return False
                packets.append(arrived)
            own = self.read(t, op, self.cells(src[0]), where)
            total = [_sum(column) for column in zip(own, *packets, strict=True)]
            self.write(t, op, self.cells(dst[0], None, None, size), total, where)
            sent = 2 if name.startswith("rec") else 1
            if sent == 2:
                self.write_packets(t, op, self.cells(dst[1], None, None, size), total)
            if name in ("respkt", "recspkt"):
                for d in dst[sent:]:
                    self.write_packets(t, op, self.cells(d, None, None, size), total)
            return True
        if name in ("glres", "gstore"):
            self._switch(t, rank, op, where)
            return True
        self.find("unsupported", f"{where}: op {name!r} is not executed by this checker")
        return True

    def _switch(self, t: int, rank: int, op: Op, where: _Where) -> None:
        """``glres`` (load-reduce from every rank of the source channel's group, store to
        every rank of the destination's) or ``gstore`` (a local range stored so)."""
        src, dst = op.src, op.dst
        needs = (src[:1] if op.name == "glres" else ()) + dst[:1]
        if len(src) != 1 or len(dst) != 1 or any(r.switch is None for r in needs):
            shape = "src_buff and dst_buff" if op.name == "glres" else "dst_buff"
            self.find(
                "structure",
                f"{where}: {op.name} needs one range in src_buff and one in dst_buff, "
                f"{shape} on a switch channel (switch_channel_id)",
            )
            return
        size = src[0].size
        if op.name == "glres":
            group = self.plan.gpus[rank].switches[src[0].switch]  # type: ignore[index]
            parts = []
            for member in group.ranks:
                self._reach(t, member, where)
                ref = Ref(member, group.members[member], src[0].index, size)
                parts.append(self.read(t, op, self.cells(ref), where))
            total = [_sum(column) for column in zip(*parts, strict=True)]
        else:
            total = self.read(t, op, self.cells(src[0]), where)
        group = self.plan.gpus[rank].switches[dst[0].switch]  # type: ignore[index]
        for member in group.ranks:
            self._reach(t, member, where)
            cells = self.cells(Ref(member, group.members[member], dst[0].index, size))
            self.write(t, op, cells, total, where)
            for c in cells:
                self.multicast[c] = (t, self.at)

    def _reach(self, t: int, member: int, where: _Where) -> None:
        if not self.started(t, member):
            self.find(
                "sync",
                f"{where} reaches rank {member} through its switch channel before hearing "
                f"from it (no wait for a signal of rank {member}): rank {member} may not "
                "have started the collective",
                ("sync", t, self.at, member),
            )

    def _ends(self) -> None:
        """Every switch store into a rank is ordered before that rank's end."""
        if not self.multicast:
            return
        ends: dict[int, _Clock] = {}
        for u, (rank, _) in enumerate(self.blocks):
            done = self.clock[u].copy()
            for seen in (self.pending[u], self.control[u], self.pending_control[u]):
                done.join(seen)
            done.advance(u, len(self.program[u]))
            ends.setdefault(rank, self.blank()).join(done)
        for (rank, kind, part), stamp in sorted(self.multicast.items()):
            if rank in ends and not ends[rank].covers(stamp):
                parts = self.plan.parts
                self.find(
                    "race",
                    f"rank {rank} may end the collective before the switch store of "
                    f"{self.label(stamp)} into {kind}[{part // parts}] reaches it (no signal "
                    f"after the store is waited for on rank {rank})",
                    ("end", rank, stamp),
                )

    # --- scheduling ----------------------------------------------------------------------

    def run(self, choose: str, burst: int, seed: int) -> None:
        rng = random.Random(seed)
        ready = [t for t in range(len(self.blocks)) if self.program[t]]
        waiting: list[int] = []
        progress = True
        while ready or (waiting and progress):
            if not ready:
                ready, waiting, progress = waiting, [], False
                continue
            if choose == "first":
                t = ready.pop(0)
            elif choose == "last":
                t = ready.pop()
            else:
                t = ready.pop(rng.randrange(len(ready)))
            ops = self.program[t]
            count = 0
            while self.pc[t] < len(ops) and (burst == 0 or count < burst):
                if not self.step(t):
                    break
                count += 1
                progress = True
            if self.pc[t] < len(ops):
                (waiting if count == 0 else ready).append(t)
        stuck = [t for t in range(len(self.blocks)) if self.pc[t] < len(self.program[t])]
        for t in stuck[:4]:
            rank, tb = self.blocks[t]
            op = self.program[t][self.pc[t]][0]
            self.find(
                "deadlock",
                f"rank {rank} tb {tb.id} waits forever at op "
                f"{self._where(t, self.pc[t])[:-1]}{_channels(op)})",
            )
        if len(stuck) > 4:
            self.find("deadlock", f"{len(stuck) - 4} more thread blocks wait forever")
        self.outcome.completed = not stuck
        if not stuck:
            self._ends()
            for key, messages in sorted(self.signals.items(), key=str):
                if len(messages) > self.taken[key]:
                    self.find(
                        "signal",
                        f"{len(messages) - self.taken[key]} {key[0]} signal(s) of "
                        f"rank {key[1]} to rank {key[2]} (channel {key[3]}) are never waited "
                        "for: the next launch's waits would return early",
                    )
        self.outcome.values = self.values


class _Bounds(Exception):
    pass


def _taken(entries: list[_Clock | None], i: int) -> _Clock:
    """Entry ``i`` of ``entries`` (a clock passed on once), no longer kept."""
    entry, entries[i] = entries[i], None
    assert entry is not None
    return entry


def _sum(column: tuple[Value, ...]) -> Value:
    if any(v is None for v in column):
        return None
    return tuple(sorted(term for v in column for term in v))  # type: ignore[union-attr]


def _channels(op: Op) -> str:
    if not op.channel_peers:
        return ""
    return " on " + ", ".join(f"{op.channel_type} channel to rank {p}" for p, _ in op.channel_peers)


def _program(plan: Plan, tb: ThreadBlock) -> list[tuple[Op, tuple[int, int] | None]]:
    """The ops thread block ``tb`` runs, in order: a ``pipeline``'s inner ops once per
    unit, each with its window ``(unit, parts per unit)`` (see :func:`unit_parts`)."""
    program: list[tuple[Op, tuple[int, int] | None]] = []
    ops, o = tb.ops, 0
    while o < len(ops):
        op = ops[o]
        if op.loop is None:
            program.append((op, None))
            o += 1
            continue
        unit = unit_parts(plan, op.loop[0])
        assert unit is not None, "verify_plan does not execute plans with such units"
        iterations = -(-op.loop[1] * plan.parts // unit)
        for i in range(iterations):
            program.extend((inner, (i, unit)) for inner in ops[o + 1 : o + 1 + op.body])
        o += 1 + op.body
    return program


def programs(plan: Plan) -> list[list[tuple[Op, tuple[int, int] | None]]]:
    """What each thread block of ``plan`` runs, in :func:`execute`'s order of blocks (see
    :func:`_program`): made once for every strategy."""
    return [_program(plan, tb) for g in plan.gpus for tb in g.threadblocks]


def execute(
    plan: Plan,
    strategy: tuple[str, str, int, int],
    made: list[list[tuple[Op, tuple[int, int] | None]]] | None = None,
) -> Outcome:
    """Run ``plan`` once under ``strategy`` (one of :data:`STRATEGIES`); ``made``: its
    :func:`programs`, if made already."""
    machine = _Machine(plan, strategy[0], programs(plan) if made is None else made)
    machine.run(strategy[1], strategy[2], strategy[3])
    return machine.outcome
