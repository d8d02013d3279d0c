"""Running a decoded MSCCL program under the runtime's semantics, chunk by chunk.

Every thread block runs its steps in order. A step with ``depid``/``deps`` first waits until
thread block ``depid`` of its GPU has finished a step at or after ``deps`` that is marked
``hasdep`` (the runtime's flag holds the index of the last such step, ``msccl_kernel_impl.h``
lines 269-282 and 377-378). A step of ``cnt`` chunks then moves them one at a time: a send
puts a chunk on the connection (sender, receiver, channel), which holds at most ``depth``
chunks (the runtimes hold 2 messages for the Simple protocol, 8 for LL/LL128, and a
message is one chunk once chunks are as large as a protocol step); a receive takes the
oldest chunk off
the connection from its peer. Values are sets of contributions ``(rank, input chunk)``
(a reduction is their disjoint union), so the final buffers say exactly what every output
chunk holds.

The schedule found by this execution is one of many, but its outcome is not: each
connection has one sender and one receiver and flags only grow, so whether it deadlocks and
what it computes do not depend on the order in which ready thread blocks run. Data races
are found with vector clocks over the happens-before order of program order, dependency
flags and sends-before-receives (without the back-pressure of a full connection, which a
correct program must not rely on: its depth depends on the protocol).

Examples
--------
>>> from optcoll.verify.msccl import verify_text
>>> def step(s, kind, buf, off):
...     return (f'<step s="{s}" type="{kind}" srcbuf="{buf}" srcoff="{off}" dstbuf="{buf}" '
...             f'dstoff="{off}" cnt="1" depid="-1" deps="-1" hasdep="0"/>')
>>> def gpu(rank):  # a two-GPU ring allgather: send my chunk, receive the other's, copy mine
...     other = 1 - rank
...     return (f'<gpu id="{rank}" i_chunks="1" o_chunks="2" s_chunks="0">'
...             f'<tb id="0" send="{other}" recv="{other}" chan="0">'
...             + step(0, "s", "i", 0) + step(1, "r", "o", other)
...             + f'<step s="2" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{rank}" '
...             'cnt="1" depid="-1" deps="-1" hasdep="0"/></tb></gpu>')
>>> ring = ('<algo name="ring" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" '
...         'coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">'
...         + gpu(0) + gpu(1) + '</algo>')
>>> verify_text(ring).ok
True
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optcoll.verify.msccl.limits import STEP_SEMANTICS, Algo, Step, ThreadBlock
from optcoll.verify.report import Finding

__all__ = ["Execution", "execute", "expected_outputs", "describe_value"]

Cell = tuple[str, int]
Connection = tuple[int, int, int]
Value = int | None
#: A value that holds some contribution twice (a reduction of overlapping sums).
DOUBLED = -1


@dataclass
class Execution:
    """The outcome of one run: findings, final memory of every GPU, steps completed."""

    findings: list[Finding]
    memory: list[dict[Cell, Value]]
    completed: bool
    races: list[Finding] = field(default_factory=list)


def _alias(algo: Algo, rank: int, inplace: bool) -> Callable[[str, int], Cell]:
    """Map (buffer, index) to the memory cell it is, with the input aliased into the output
    in place as the runtimes define it (``msccl_lifecycle.cc:313-326``)."""
    if not inplace:
        return lambda buf, index: (buf, index)
    if algo.collective == "allgather":
        base = rank * algo.input_chunks
        return lambda buf, index: ("o", base + index) if buf == "i" else (buf, index)
    if algo.collective == "reduce_scatter":
        base = rank * algo.output_chunks
        return lambda buf, index: ("i", base + index) if buf == "o" else (buf, index)
    return lambda buf, index: ("o", index) if buf == "i" else (buf, index)


def _initial_memory(algo: Algo, inplace: bool) -> list[dict[Cell, Value]]:
    memory: list[dict[Cell, Value]] = []
    for rank in range(algo.ngpus):
        cell = _alias(algo, rank, inplace)
        memory.append(
            {cell("i", j): 1 << (rank * algo.input_chunks + j) for j in range(algo.input_chunks)}
        )
    return memory


def _combine(a: Value, b: Value) -> Value:
    """Sum of two values: None if either is uninitialised, DOUBLED on overlap."""
    if a is None or b is None:
        return None
    if a == DOUBLED or b == DOUBLED or a & b:
        return DOUBLED
    return a | b


def describe_value(value: Value, algo: Algo) -> str:
    """A value in words: ``uninitialised``, ``a contribution counted twice``, or its sources.

    Examples
    --------
    >>> describe_value(None, None)
    'uninitialised memory'
    """
    if value is None:
        return "uninitialised memory"
    if value == DOUBLED:
        return "a sum that counts some input twice"
    parts = []
    bit, index = value, 0
    while bit:
        if bit & 1:
            rank, chunk = divmod(index, algo.input_chunks)
            parts.append(f"rank {rank} input {chunk}")
        bit >>= 1
        index += 1
    shown = ", ".join(parts[:4]) + (f" and {len(parts) - 4} more" if len(parts) > 4 else "")
    return ("the sum of " if len(parts) > 1 else "") + shown


def expected_outputs(algo: Algo, root: int | None) -> dict[tuple[int, int], int] | None:
    """(rank, output chunk) -> the contributions it must hold; None when the collective is
    not one the checker knows (its data is then not judged)."""
    n, ins, outs = algo.ngpus, algo.input_chunks, algo.output_chunks

    def bit(rank: int, chunk: int) -> int:
        return 1 << (rank * ins + chunk)

    coll = algo.collective
    expected: dict[tuple[int, int], int] = {}
    for r in range(n):
        for j in range(outs):
            if coll == "allgather":
                expected[(r, j)] = bit(j // ins, j % ins)
            elif coll == "reduce_scatter":
                expected[(r, j)] = sum(bit(q, r * outs + j) for q in range(n))
            elif coll == "allreduce":
                expected[(r, j)] = sum(bit(q, j) for q in range(n))
            elif coll == "alltoall":
                per = outs // n
                expected[(r, j)] = bit(j // per, r * per + j % per)
            elif coll == "broadcast" and root is not None:
                expected[(r, j)] = bit(root, j)
            elif coll == "reduce" and root is not None and r == root:
                expected[(r, j)] = sum(bit(q, j) for q in range(n))
            elif coll not in ("broadcast", "reduce"):
                return None
    return expected


class _Clocks:
    """Vector clocks of the thread blocks, for the happens-before race check."""

    def __init__(self, count: int, longest: int) -> None:
        dtype = np.int16 if longest < 32000 else np.int32
        self.dtype = dtype
        self.count = count
        self.current: dict[int, np.ndarray] = {}

    def of(self, t: int) -> np.ndarray:
        clock = self.current.get(t)
        if clock is None:
            clock = self.current[t] = np.zeros(self.count, dtype=self.dtype)
        return clock


def execute(
    algo: Algo, *, inplace: bool, depth: int, values: bool = True, races: bool = False
) -> Execution:
    """Run ``algo`` once with connections of ``depth`` chunks; see the module docstring.

    ``values=False`` only follows control (deadlock, unmatched and mismatched transfers);
    ``races`` also tracks happens-before (needs ``values``).
    """
    return _Run(algo, inplace, depth, values, values and races).run()


class _Run:
    def __init__(self, algo: Algo, inplace: bool, depth: int, values: bool, races: bool) -> None:
        self.algo = algo
        self.depth = depth
        self.tbs: list[ThreadBlock] = [
            tb for _, tbs in sorted(algo.gpus.items()) for _, tb in sorted(tbs.items())
        ]
        self.index = {(tb.gpu, tb.id): t for t, tb in enumerate(self.tbs)}
        self.aliases = [_alias(algo, r, inplace) for r in range(algo.ngpus)]
        self.memory = _initial_memory(algo, inplace)
        self.findings: list[Finding] = []
        self.queues: dict[Connection, deque] = defaultdict(deque)
        self.senders: dict[Connection, int] = {}
        self.receivers: dict[Connection, int] = {}
        for t, tb in enumerate(self.tbs):
            self._claim(self.senders, (tb.gpu, tb.send, tb.chan), t, "sends to", tb.send)
            self._claim(self.receivers, (tb.recv, tb.gpu, tb.chan), t, "receives from", tb.recv)
        self.pc = [0] * len(self.tbs)
        self.unit = [0] * len(self.tbs)
        self.entered = [False] * len(self.tbs)
        self.published = [-1] * len(self.tbs)
        self.blocked: dict[int, tuple[str, Any]] = {}
        self.waiters: dict[tuple, list[int]] = defaultdict(list)
        self.mismatched: set[Connection] = set()
        self.clocks = _Clocks(len(self.tbs), max((len(tb.steps) for tb in self.tbs), default=0))
        self.check_races = races
        self.values = values
        self.snapshots: dict[tuple[int, int], np.ndarray] = {}
        self.needed = self._releases() if races else {}
        self.access: list[dict[Cell, list]] = [dict() for _ in range(algo.ngpus)]
        self.races: list[Finding] = []
        self.raced: set[tuple[int, Cell]] = set()

    def _claim(self, table: dict, key: Connection, t: int, verb: str, peer: int) -> None:
        if peer < 0:
            return
        if key in table:
            other = self.tbs[table[key]]
            tb = self.tbs[t]
            self.findings.append(
                Finding(
                    "connection",
                    f"GPU {tb.gpu}: tb {other.id} and tb {tb.id} both {verb} GPU {peer} on "
                    f"channel {tb.chan}; a connection has one thread block at each end",
                )
            )
            return
        table[key] = t

    # --- running -------------------------------------------------------------------

    def run(self) -> Execution:
        ready = deque(range(len(self.tbs)))
        queued = [True] * len(self.tbs)
        while ready:
            t = ready.popleft()
            queued[t] = False
            for woken in self._advance(t):
                if not queued[woken]:
                    queued[woken] = True
                    ready.append(woken)
        completed = all(self.pc[t] == len(tb.steps) for t, tb in enumerate(self.tbs))
        if not completed:
            self.findings.append(self._deadlock())
        else:
            for (src, dst, chan), queue in sorted(self.queues.items()):
                if queue:
                    step = queue[0][0]
                    self.findings.append(
                        Finding(
                            "unmatched",
                            f"GPU {src} -> GPU {dst} channel {chan}: {len(queue)} chunk(s) sent "
                            f"and never received (first from {step.where()})",
                        )
                    )
        return Execution(self.findings, self.memory, completed, self.races)

    def _advance(self, t: int) -> list[int]:
        """Run thread block ``t`` as far as it can go; the thread blocks to wake."""
        tb = self.tbs[t]
        steps = tb.steps
        woken: list[int] = []
        self.blocked.pop(t, None)
        gpu = tb.gpu
        memory = self.memory[gpu]
        alias = self.aliases[gpu]
        values, races = self.values, self.check_races
        in_conn = (tb.recv, gpu, tb.chan)
        out_conn = (gpu, tb.send, tb.chan)
        inbox = self.queues[in_conn] if tb.recv >= 0 else None
        outbox = self.queues[out_conn] if tb.send >= 0 else None
        depth = self.depth
        while self.pc[t] < len(steps):
            step = steps[self.pc[t]]
            receives, sends, reads, writes, reads_dst = STEP_SEMANTICS[step.type]
            if not self.entered[t] and step.depid >= 0:
                target = self.index.get((gpu, step.depid))
                if target is None or self.published[target] < step.deps:
                    self._block(t, ("flag", target))
                    return woken
                if races:
                    self._acquire(t, step)
            self.entered[t] = True
            count = step.cnt if step.type != "nop" else 0
            j = self.unit[t]
            while j < count:
                if receives and not inbox:
                    self._block(t, ("data", in_conn))
                    self.unit[t] = j
                    return woken
                if sends and len(outbox) >= depth:  # type: ignore[arg-type]
                    self._block(t, ("room", out_conn))
                    self.unit[t] = j
                    return woken
                value: Value = None
                if receives:
                    sender_step, sender_unit, value, clock = inbox.popleft()  # type: ignore[union-attr]
                    if sender_unit != j or sender_step.cnt != step.cnt:
                        self._mismatch(in_conn, step, j, sender_step, sender_unit)
                    if races:
                        mine = self.clocks.of(t)
                        np.maximum(mine, clock, out=mine)
                    woken += self.waiters.pop(("room", in_conn), ())
                if values:
                    if reads:
                        src = alias(step.srcbuf, step.srcoff + j)
                        if races:
                            self._touch(t, step, src, False)
                        local = memory.get(src)
                        value = _combine(value, local) if receives else local
                    if writes:
                        dst = alias(step.dstbuf, step.dstoff + j)
                        if reads_dst:
                            if races:
                                self._touch(t, step, dst, False)
                            value = _combine(memory.get(dst), value)
                        if races:
                            self._touch(t, step, dst, True)
                        memory[dst] = value
                if sends:
                    clock = None
                    if races:
                        clock = self.clocks.of(t).copy()
                        clock[t] = step.pos + 1
                    outbox.append((step, j, value, clock))  # type: ignore[union-attr]
                    woken += self.waiters.pop(("data", out_conn), ())
                j += 1
            self.pc[t] += 1
            self.unit[t] = 0
            self.entered[t] = False
            if races:
                self.clocks.of(t)[t] = step.pos + 1
            if step.hasdep and step.type != "nop":
                self.published[t] = step.pos
                if (t, step.pos) in self.needed:
                    self.snapshots[(t, step.pos)] = self.clocks.of(t).copy()
                woken += self.waiters.pop(("flag", t), ())
        return woken

    def _mismatch(
        self, conn: Connection, step: Step, unit: int, sender_step: Step, sender_unit: int
    ) -> None:
        if conn in self.mismatched:
            return
        self.mismatched.add(conn)
        self.findings.append(
            Finding(
                "count-mismatch",
                f"{step.where()} receives chunk {unit} of {step.cnt} but the connection "
                f"delivers chunk {sender_unit} of {sender_step.cnt} from {sender_step.where()}",
            )
        )

    def _releases(self) -> dict[tuple[int, int], int]:
        """(thread block, step) -> how many waits its publication releases."""
        needed: dict[tuple[int, int], int] = defaultdict(int)
        for tb in self.tbs:
            for step in tb.steps:
                release = self._release(tb.gpu, step)
                if release is not None:
                    needed[release] += 1
        return needed

    def _release(self, gpu: int, step: Step) -> tuple[int, int] | None:
        """The step whose publication lets ``step``'s wait through (first hasdep at or
        after ``deps``), if any."""
        target = self.index.get((gpu, step.depid)) if step.depid >= 0 else None
        if target is None:
            return None
        for later in self.tbs[target].steps[max(step.deps, 0) :]:
            if later.hasdep and later.type != "nop":
                return target, later.pos
        return None

    def _acquire(self, t: int, step: Step) -> None:
        """Merge into ``t``'s clock the clock of the publication that released its wait."""
        release = self._release(step.gpu, step)
        assert release is not None, "a wait went through without a publication"
        clock = self.clocks.of(t)
        np.maximum(clock, self.snapshots[release], out=clock)
        self.needed[release] -= 1
        if not self.needed[release]:
            del self.snapshots[release]

    def _block(self, t: int, reason: tuple[str, Any]) -> None:
        self.blocked[t] = reason
        self.waiters[reason].append(t)

    # --- races ---------------------------------------------------------------------

    def _touch(self, t: int, step: Step, cell: Cell, write: bool) -> None:
        """Record an access and report it if it is unordered with a conflicting one."""
        if not self.check_races:
            return
        gpu = step.gpu
        state = self.access[gpu].get(cell)
        if state is None:
            state = self.access[gpu][cell] = [None, {}]
        last_write, reads = state
        clock = self.clocks.of(t)
        conflicts = []
        if last_write is not None and last_write[0] != t and clock[last_write[0]] <= last_write[1]:
            conflicts.append(last_write)
        if write:
            conflicts += [
                (other, pos) for other, pos in reads.items() if other != t and clock[other] <= pos
            ]
        if conflicts and (gpu, cell) not in self.raced:
            self.raced.add((gpu, cell))
            other_t, other_pos = conflicts[0]
            other = self.tbs[other_t].steps[other_pos]
            self.races.append(
                Finding(
                    "race",
                    f"GPU {gpu} {cell[0]}[{cell[1]}]: {step.where()} "
                    f"{'writes' if write else 'reads'} it unordered with {other.where()}",
                )
            )
        if write:
            state[0] = (t, step.pos)
            state[1] = {}
        else:
            reads[t] = step.pos

    # --- deadlock ------------------------------------------------------------------

    def _waits_for(self, t: int) -> tuple[int | None, str]:
        kind, what = self.blocked[t]
        step = self.tbs[t].steps[self.pc[t]]
        if kind == "flag":
            target = what
            if not isinstance(target, int):
                return None, f"waits for tb {step.depid}, which does not exist"
            return target, f"waits for tb {step.depid} to finish step {step.deps} (hasdep)"
        conn: Connection = what
        src, dst, chan = conn
        if kind == "data":
            sender = self.senders.get((src, dst, chan))
            return sender, f"waits for a chunk from GPU {src} on channel {chan}"
        receiver = self.receivers.get((src, dst, chan))
        return receiver, f"waits for room on the connection to GPU {dst} channel {chan}"

    def _deadlock(self) -> Finding:
        """The wait-for cycle (or the chain ending at a finished or missing thread block)."""
        stuck = [t for t in range(len(self.tbs)) if self.pc[t] < len(self.tbs[t].steps)]
        start = stuck[0]
        chain: list[int] = []
        seen: dict[int, int] = {}
        t: int | None = start
        while t is not None and t not in seen and t in self.blocked:
            seen[t] = len(chain)
            chain.append(t)
            t, _ = self._waits_for(t)
        lines = []
        for u in chain[seen[t] :] if t in seen else chain:
            _, why = self._waits_for(u)
            lines.append(f"{self.tbs[u].steps[self.pc[u]].where()} {why}")
        if t in seen:
            head = f"deadlock at depth {self.depth}: wait-for cycle: "
        elif t is None:
            head = f"deadlock at depth {self.depth}: no thread block can satisfy: "
        else:
            done = self.tbs[t]
            lines.append(f"GPU {done.gpu} tb {done.id} has finished all its steps")
            head = f"deadlock at depth {self.depth}: "
        return Finding(
            "deadlock",
            head + "; ".join(lines) + f" ({len(stuck)} thread blocks stuck)",
        )
