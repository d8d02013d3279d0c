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
race. Not modelled: the source of a port-channel put being read later by the proxy
(our plans never overwrite a source), scratch reuse across launches, ``pipeline`` and
switch-channel ops (a plan with them is not executed).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from optcoll.verify.mscclpp.plan import Op, Plan, Ref

__all__ = ["Outcome", "execute", "STRATEGIES"]

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
    """One interleaving's result: findings as (kind, message) and final values."""

    strategy: str
    findings: list[tuple[str, str]] = field(default_factory=list)
    values: dict[Cell, Value] = field(default_factory=dict)
    completed: bool = False


class _Clock:
    """A vector clock over thread blocks plus single ops ordered out of turn (``pws``)."""

    __slots__ = ("time", "extra")

    def __init__(self, size: int) -> None:
        self.time = [0] * size
        self.extra: set[Stamp] = set()

    def copy(self) -> _Clock:
        other = _Clock(0)
        other.time = list(self.time)
        other.extra = set(self.extra)
        return other

    def join(self, other: _Clock) -> None:
        mine = self.time
        for i, v in enumerate(other.time):
            if v > mine[i]:
                mine[i] = v
        self.extra |= other.extra

    def covers(self, stamp: Stamp) -> bool:
        return self.time[stamp[0]] > stamp[1] or stamp in self.extra


class _Machine:
    def __init__(self, plan: Plan, strategy: str) -> None:
        self.plan = plan
        self.outcome = Outcome(strategy)
        self.blocks = [(g.rank, tb) for g in plan.gpus for tb in g.threadblocks]
        size = len(self.blocks)
        self.clock = [_Clock(size) for _ in self.blocks]
        self.pending = [_Clock(size) for _ in self.blocks]
        self.pc = [0] * size
        self.queues: dict[tuple, list[_Clock | None]] = defaultdict(list)
        self.taken: dict[tuple, int] = defaultdict(int)
        self.values: dict[Cell, Value] = {}
        self.writer: dict[Cell, Stamp] = {}
        self.readers: dict[Cell, list[Stamp]] = defaultdict(list)
        self.packet: dict[Cell, _Clock] = {}
        self.barriers: dict[tuple[int, int], list[int]] = defaultdict(list)
        self.released: set[tuple[int, int]] = set()
        self.seen: set[str] = set()
        self.op: Op | None = None
        parts = plan.parts
        for gpu in plan.gpus:
            for x in range(gpu.chunks["i"] * parts):
                self.values[self.cell(gpu.rank, "i", x)] = ((gpu.rank, x),)

    def cell(self, rank: int, kind: str, part: int) -> Cell:
        """The cell of part ``part`` of a buffer (in place, the input is the output's)."""
        if kind == "i" and self.plan.inplace:
            if self.plan.collective == "allgather":
                shift = rank * self.plan.gpus[rank].chunks["i"] * self.plan.parts
                return (rank, "o", shift + part)
            return (rank, "o", part)
        return (rank, kind, part)

    def find(self, kind: str, message: str) -> None:
        if message not in self.seen:
            self.seen.add(message)
            self.outcome.findings.append((kind, message))

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
        return [self.cell(ref.rank, kind, x) for x in range(first, last)]

    def read(self, t: int, op: Op, cells: list[Cell], where: str) -> list[Value]:
        stamp, clock = (t, op.position), self.clock[t]
        out = []
        for c in cells:
            w = self.writer.get(c)
            if c in self.packet and w is None:
                self.find("format", f"{where} reads packet-format data as plain from {_name(c)}")
            if w is not None and w != stamp and not clock.covers(w):
                self.find(
                    "race",
                    f"{where} reads {_name(c)} before the write of "
                    f"{self.label(w)} is visible to it",
                )
            self.readers[c].append(stamp)
            out.append(self.values.get(c))
        return out

    def write(self, t: int, op: Op, cells: list[Cell], values: list[Value], where: str) -> None:
        stamp, clock = (t, op.position), self.clock[t]
        for c, v in zip(cells, values, strict=True):
            w = self.writer.get(c)
            if w is not None and w != stamp and not clock.covers(w):
                self.find(
                    "race", f"{where} writes {_name(c)} unordered with the write of {self.label(w)}"
                )
            for r in self.readers.get(c, ()):
                if r != stamp and not clock.covers(r):
                    self.find(
                        "race",
                        f"{where} overwrites {_name(c)} unordered with its read by {self.label(r)}",
                    )
                    break
            self.writer[c] = stamp
            self.readers[c] = []
            self.packet.pop(c, None)
            self.values[c] = v

    def read_packets(self, t: int, cells: list[Cell]) -> list[Value] | None:
        if any(c not in self.packet for c in cells):
            return None
        for c in cells:  # element by element, the flag orders the reader after the writer
            self.clock[t].join(self.packet[c])
        return [self.values.get(c) for c in cells]

    def write_packets(self, t: int, op: Op, cells: list[Cell], values: list[Value]) -> None:
        message = self.clock[t].copy()
        message.extra.add((t, op.position))
        for c, v in zip(cells, values, strict=True):
            self.packet[c] = message
            self.writer.pop(c, None)
            self.readers.pop(c, None)
            self.values[c] = v

    def label(self, stamp: Stamp) -> str:
        rank, tb = self.blocks[stamp[0]]
        return f"rank {rank} tb {tb.id} op {stamp[1]} ({tb.ops[stamp[1]].name})"

    # --- one op --------------------------------------------------------------------------

    def step(self, t: int) -> bool:
        """Run thread block ``t``'s next op; False when it must wait."""
        rank, tb = self.blocks[t]
        op = tb.ops[self.pc[t]]
        where = f"rank {rank} tb {tb.id} op {op.position} ({op.name})"
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
        self.pending[t] = _Clock(len(self.blocks))
        clock.time[t] = max(clock.time[t], position + 1)

    def _run(self, t: int, rank: int, op: Op, where: str) -> bool:
        name = op.name
        if name == "nop":
            self._sync(t, op.position)
            return True
        if name == "barrier":
            return self._barrier(t, rank, op)
        if name in ("signal", "rlxsignal"):
            for peer, ordinal in op.channel_peers:
                message = None if name == "rlxsignal" else self.clock[t].copy()
                self.queues[(op.channel_type, rank, peer, ordinal)].append(message)
            return True
        if name in ("wait", "rlxwait"):
            keys = [(op.channel_type, peer, rank, ordinal) for peer, ordinal in op.channel_peers]
            if any(self.taken[k] >= len(self.queues[k]) for k in keys):
                return False
            for k in keys:
                message = self.queues[k][self.taken[k]]
                self.taken[k] += 1
                if message is not None:
                    self.pending[t].join(message)
            return True
        if name == "sem_release":
            for s in op.semaphores:
                self.queues[("sem", rank, s)].append(self.clock[t].copy())
            return True
        if name == "sem_acquire":
            keys = [("sem", rank, s) for s in op.semaphores]
            have = [len(self.queues[k]) + self.plan.gpus[rank].semaphores[k[2]] for k in keys]
            if any(self.taken[k] >= n for k, n in zip(keys, have, strict=True)):
                return False
            for k in keys:
                if self.taken[k] < len(self.queues[k]):
                    self.pending[t].join(self.queues[k][self.taken[k]])
                self.taken[k] += 1
            self._sync(t, op.position)
            return True
        if name == "flush":
            return True
        return self._data(t, rank, op, where)

    def _barrier(self, t: int, rank: int, op: Op) -> bool:
        assert op.barrier is not None
        key = (rank, op.barrier[0])
        if (t, op.position) in self.released:
            return True
        arrived = self.barriers[key]
        if t not in arrived:
            arrived.append(t)
        if len(arrived) < op.barrier[1]:
            return False
        joined = _Clock(len(self.blocks))
        for u in arrived:
            self._sync(u, self.pc[u])
            joined.join(self.clock[u])
        for u in arrived:
            self.clock[u].join(joined)
            self.released.add((u, self.pc[u]))
        self.barriers[key] = []
        return True

    def _data(self, t: int, rank: int, op: Op, where: str) -> bool:
        name, src, dst = op.name, op.src, op.dst
        if name in ("put", "pws", "pwsf"):
            port = op.channel_type == "port"
            if op.channel_type not in ("memory", "port"):
                self.find("structure", f"{where} has channel_type {op.channel_type!r}")
                return True
            for i, d in enumerate(dst):
                s = src[i] if port else src[0]
                index = src[i].index if i < len(src) else s.index
                got = self.read(t, op, self.cells(s, s.kind, index, d.size), where)
                self.write(t, op, self.cells(d), got, where)
                if port and name != "put" and i < len(op.channel_peers):
                    peer, ordinal = op.channel_peers[i]
                    message = self.clock[t].copy()
                    message.extra.add((t, op.position))
                    self.queues[("port", rank, peer, ordinal)].append(message)
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
        if name in ("ppkt", "cpkt"):
            outputs = dst if name == "ppkt" else dst[:1]
            for i, d in enumerate(outputs):
                s = src[i] if i < len(src) else src[0]
                got = self.read(t, op, self.cells(src[0], src[0].kind, s.index, s.size), where)
                self.write_packets(t, op, self.cells(d, None, None, s.size), got)
            return True
        if name in ("upkt", "rppkt"):
            got = self.read_packets(t, self.cells(src[0], "s"))
            if got is None:
                return False
            if name == "upkt":
                self.write(t, op, self.cells(dst[0], None, None, src[0].size), got, where)
            else:
                for d in dst:
                    self.write_packets(t, op, self.cells(d, None, None, src[0].size), got)
            return True
        if name in ("respkt", "repkt", "recpkt", "recspkt"):
            size = src[0].size
            packets = []
            for s in src[1:]:
                got = self.read_packets(t, self.cells(s, "s", None, size))
                if got is None:
                    return False
                packets.append(got)
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
        self.find("unsupported", f"{where}: op {name!r} is not executed by this checker")
        return True

    # --- scheduling ----------------------------------------------------------------------

    def run(self, choose: str, burst: int, seed: int) -> None:
        rng = random.Random(seed)
        ready = [t for t in range(len(self.blocks)) if self.blocks[t][1].ops]
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
            ops = self.blocks[t][1].ops
            count = 0
            while self.pc[t] < len(ops) and (burst == 0 or count < burst):
                if not self.step(t):
                    break
                count += 1
                progress = True
            if self.pc[t] < len(ops):
                (waiting if count == 0 else ready).append(t)
        stuck = [t for t in range(len(self.blocks)) if self.pc[t] < len(self.blocks[t][1].ops)]
        for t in stuck[:4]:
            rank, tb = self.blocks[t]
            op = tb.ops[self.pc[t]]
            self.find(
                "deadlock",
                f"rank {rank} tb {tb.id} waits forever at op {op.position} "
                f"({op.name}{_channels(op)})",
            )
        if len(stuck) > 4:
            self.find("deadlock", f"{len(stuck) - 4} more thread blocks wait forever")
        self.outcome.completed = not stuck
        if not stuck:
            for key, messages in sorted(self.queues.items(), key=str):
                if key[0] != "sem" and len(messages) > self.taken[key]:
                    self.find(
                        "signal",
                        f"{len(messages) - self.taken[key]} {key[0]} signal(s) of "
                        f"rank {key[1]} to rank {key[2]} (channel {key[3]}) are never waited "
                        "for: the next launch's waits would return early",
                    )
        self.outcome.values = self.values


class _Bounds(Exception):
    pass


def _sum(column: tuple[Value, ...]) -> Value:
    if any(v is None for v in column):
        return None
    return tuple(sorted(term for v in column for term in v))  # type: ignore[union-attr]


def _name(cell: Cell) -> str:
    return f"{cell[1]} part {cell[2]} of rank {cell[0]}"


def _channels(op: Op) -> str:
    if not op.channel_peers:
        return ""
    return " on " + ", ".join(f"{op.channel_type} channel to rank {p}" for p, _ in op.channel_peers)


def execute(plan: Plan, strategy: tuple[str, str, int, int]) -> Outcome:
    """Run ``plan`` once under ``strategy`` (one of :data:`STRATEGIES`)."""
    machine = _Machine(plan, strategy[0])
    machine.run(strategy[1], strategy[2], strategy[3])
    return machine.outcome
