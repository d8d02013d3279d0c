"""MSCCL++ execution plans of a step schedule (recursive doubling, Rabenseifner, Bruck, Swing,
Bine, PAT, multiport Swing, hierarchical, direct, ...).

A :class:`~optcoll.core.step_schedule.StepSchedule` is steps of messages between compute
nodes; :func:`mscclpp_step_plan` runs it in the rules and ops of
:mod:`optcoll.export.mscclpp` (whose renderer writes the document): for each step a GPU
first puts every message it sends into its receiver's buffers (``put``, ``nop``,
``signal`` on memory channels inside a box; ``pws`` on port channels), then waits for every
message it receives (``wait``, ``nop``) and adds those that reduce (``re``; ``res`` where
the sum is sent on at once on memory channels; one ``nop`` a round of sums), the waits and
sums of one step followed by the puts of the next (waits with nothing to read after them
wait with the GPU's next step that reads, whose ``nop`` orders the reads). A stored
message is put straight where it belongs (the receiver's output for its last write, else
its scratch); a reduced one into fresh scratch chunks, which the receiver adds to its own
value into a chunk nothing wrote before (its output for the last sum). So no put
overwrites data its receiver may still read, and the ops of one GPU, in order, carry what
the sender held at the start of its step: every wait is for a signal of an earlier or the
same step, and the plan cannot deadlock.

Thread blocks: the plan runs on ``G`` blocks per GPU, block ``g`` carrying the blocks of
the schedule in the ``g``-th of ``G`` equal stretches of the buffer, on every GPU, so no
thread block waits for another's data. ``G`` is the fewest (up to :data:`MAX_GROUPS`) with
which every step of every thread block issues one op per channel type (tried at 1, 2, 3, 4, 6, 8, ... blocks; ``optcoll
simulate`` charges the overhead per op that issues a transfer, plan per message), else
the ``G`` that issues fewest, within the executor's limits (64 ops a thread block: the
Trivance reduce-scatter on torus 9x9 needed 330 on one). On one block, a GPU's puts to
more than :data:`~optcoll.export.mscclpp.MAX_PER_OP` peers, or on both channel types, leave
from blocks of their own, ordered by semaphores (:func:`_spread_puts`), so that each op's
overhead is paid side by side, as plan's connections pay theirs.

Blocks are laid out as in :func:`optcoll.export.msccl_steps.msccl_step_program` (an
allreduce's in the order of the messages that carry them); a message is one buffer range per
run of consecutive chunks. An allgather's and a reduce-scatter's buffers fix where each
rank's shard lies, in which most log-step messages are several runs (torus 4x4 PAT
allgather: 240 runs for 64 messages); their blocks are kept instead in the first scratch
chunks of every GPU in the order that makes the messages fewest runs (:func:`_home`: PAT,
Bine, the dimension-wise and hierarchical schedules, multiport Swing: one run a message),
copied there from the input before the first puts and, for an allgather, into the output
after the last waits (``copy`` ops, which move no data between GPUs: beyond
:data:`COPIES_INLINE` on thread blocks of their own, ordered by a semaphore):
``layout="runs"``, which runs in plan's time on one thread block. ``layout="buffers"``
keeps them in the collective's buffers, spread over the thread blocks that issue one op a
step, each going on once its own stretch arrives: a pipelining plan does not model, at
times faster (:func:`step_layouts` says where the two differ; ``optcoll export`` writes
both and keeps the faster file). Otherwise, on one thread block, an allgather's own shard
is read from its copy in the output, next to the blocks received (two ranges of one
message on one channel took two waits of one semaphore in one op, which ``check-plan``
refuses as a race). Plans are
written out of place only (in place, last sums would overwrite inputs that earlier puts
may still read); ``protocol`` Simple, no pipelines: every put moves its whole range,
which ``optcoll simulate`` sends in slices as it does a step schedule's message.

A GPU's puts of a step go to the ranks after it first
(:func:`~optcoll.core.step_schedule.ranks_after`), the order in which plan's simulator posts
them (:meth:`~optcoll.core.step_schedule.StepSchedule.posted`): an op's destinations leave
over the GPU's links one after another, and in rank order every GPU's first put of a direct
step went to the same GPU, whose link then took them one at a time (dgx-h100:2 hierarchical
(direct + one-shot) allreduce at 1 MiB: 20.90 µs in rank order, 17.70 rotated, which plan
now says too).

What the plan cannot carry: a message's slices each paying plan's overhead. A put leaves
once its sender has received what earlier steps send it, its target being fresh, as plan
simulates a step message (:mod:`optcoll.sim.steps`), so on one thread block with one range
a message the file runs exactly in plan's time (torus 4x4 allreduce at 1 MiB, no overhead,
Swing (latency): 77.157 µs both; a rendezvous, which plan ran until session 13, gave
67.915). So does a message of one range a
step on one thread block with overhead, where a step's puts fit one op. On ``G > 1``
thread blocks a block goes on once its own stretch has arrived, a message of several
ranges is a put each, and the overhead is charged per op: there the file runs apart
(``docs/log_step.md``, ``python -m benchmarks.step_fidelity``).

Examples
--------
>>> from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
>>> plan = mscclpp_step_plan(recursive_doubling_allreduce(("a", "b", "c", "d")))
>>> plan.document["collective"], plan.threadblocks, plan.port_pairs
('allreduce', 1, 4)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from optcoll.core.step_schedule import StepSchedule, ranks_after
from optcoll.exceptions import ExportError
from optcoll.export.msccl_steps import _layout
from optcoll.export.mscclpp import (
    MAX_OPS,
    MAX_PER_OP,
    MAX_THREADBLOCKS,
    Loc,
    MscclppPlan,
    _Chunks,
    _Limit,
    _render,
    _Step,
    channel_pairs,
)

__all__ = ["mscclpp_step_plan", "step_layouts", "LAYOUTS", "MAX_GROUPS"]

#: Where :func:`mscclpp_step_plan` keeps an allgather's or reduce-scatter's blocks: in
#: scratch in the order of fewest runs, or in the collective's buffers.
LAYOUTS = ("runs", "buffers")

#: Most thread blocks per GPU a plan is spread over (each carries the same stretch of the
#: buffer on every GPU, so no block waits for another's data): the tree plans' limit.
MAX_GROUPS = MAX_THREADBLOCKS
#: Most copies into or out of a thread block's home chunks (:func:`_steps`) that it runs
#: itself; more run on thread blocks of their own (each up to ``MAX_OPS - 4`` copies).
COPIES_INLINE = MAX_OPS // 4


@dataclass(frozen=True)
class _Shape:
    """The names the renderer reads of a schedule."""

    compute_nodes: tuple[str, ...]
    k: int
    topology: str
    root: str | None = None


def mscclpp_step_plan(
    schedule: StepSchedule,
    *,
    name: str | None = None,
    boxes: Mapping[str, str] | None = None,
    min_message_size: int = 0,
    max_message_size: int | None = None,
    layout: str = "runs",
) -> MscclppPlan:
    """The MSCCL++ plan of ``schedule``, out of place (deterministic; see the module
    docstring). ``boxes``: compute node -> box, as :func:`optcoll.export.mscclpp.mscclpp_plan`
    (pairs in one box use memory channels, others port channels). ``layout`` (one of
    :data:`LAYOUTS`): ``"runs"`` keeps an allgather's or reduce-scatter's blocks in scratch
    in the order that makes its messages fewest runs (:func:`_home`; the collective's
    buffers where that is no fewer, or exceeds the executor's limits); ``"buffers"`` keeps
    them in the collective's buffers, whose messages may be several runs spread over more
    thread blocks, each going on with its own stretch, which plan does not model but which
    can run faster (dgx-h100:2 hierarchical allgather at 16 MiB: 40.28 µs on 2 blocks,
    56.59 in plan's time as runs). :func:`step_layouts` says where the two differ.

    Raises
    ------
    ExportError
        The executor's limits (ops, channels or remote buffers per thread block) are
        exceeded, or ``layout`` is not one of :data:`LAYOUTS`.

    Examples
    --------
    PAT's allgather on 8 GPUs: as runs, each message one range of scratch, the blocks
    copied in first and out last (20 ops on GPU 0); in the output, 10 ops:

    >>> from optcoll.schedules.baselines.pat import pat_allgather
    >>> s = pat_allgather(tuple("abcdefgh"))
    >>> gpu0 = [mscclpp_step_plan(s, layout=w).document["gpus"][0] for w in step_layouts(s)]
    >>> [sum(len(tb["ops"]) for tb in g["threadblocks"]) for g in gpu0]
    [20, 10]
    """
    if layout not in LAYOUTS:
        raise ExportError(f"MSCCL++ step plan layout {layout!r}: not one of {', '.join(LAYOUTS)}")
    nodes = schedule.compute_nodes
    n = len(nodes)
    k = schedule.rank_blocks
    coll = schedule.collective
    rooted = schedule.root is not None  # a broadcast's or reduce's buffer: its blocks
    box = {v: (boxes or {}).get(v, f"\0{v}") for v in nodes}
    shape = _Shape(nodes, k, schedule.method)
    title = name or f"optcoll {coll} {schedule.method} ({schedule.num_steps} steps) outofplace"
    failed = f"no MSCCL++ plan of the {schedule.method} {coll}"
    most_groups = min(MAX_GROUPS, schedule.blocks)

    def kind(a: int, b: int) -> str:
        return "memory" if box[nodes[a]] == box[nodes[b]] else "port"

    def laid_out(g: int, laid: dict[int, int] | None) -> tuple[list[_Step], int]:
        made = _steps(schedule, k, g, laid)
        if g == 1:  # on one block, each put op from a block of its own
            _spread_puts(made[0], n, kind)
        return made

    # an allgather's or reduce-scatter's messages laid out in scratch where they are fewer
    # runs than in the collective's buffers (:func:`_home`), else in those buffers
    home = _home(schedule, k) if layout == "runs" else None
    for laid in (home, None) if home is not None else (None,):
        # the fewest blocks whose every step issues one op per channel type (plan's one
        # overhead per message), else those that issue the fewest, within the executor's
        # limits (tried at 1, 2, 3, 4, 6, 8, 12, ... blocks: each try lays the whole
        # schedule out; only the last layout is kept: a large schedule's take much memory)
        issued: dict[int, int] = {}
        tries = sorted({1, *(2**e for e in range(7)), *(3 * 2**e for e in range(6))})
        last: tuple[int, tuple[list[_Step], int]] | None = None
        for g in (g for g in tries if g <= most_groups):
            last = (g, laid_out(g, laid))
            issued[g] = _issue_ops(last[1][0], kind)
            if issued[g] <= 1:
                break
        for groups in sorted(issued, key=lambda g: (issued[g], g)):
            assert last is not None
            steps, scratch = last[1] if last[0] == groups else laid_out(groups, laid)
            chunks = _Chunks(
                i=k if coll == "allgather" or rooted else n * k,
                o=k if coll == "reduce_scatter" or rooted else n * k,
                s=scratch,
            )
            try:
                document = _render(
                    shape, coll, "outofplace", title, steps, chunks, box, min_message_size,
                    max_message_size, None, "Simple",
                )  # fmt: skip
            except _Limit as err:
                if "ops" not in str(err):  # channels and buffers do not shrink with more blocks
                    raise ExportError(f"{failed}: {err}") from None
                failed = f"no MSCCL++ plan of the {schedule.method} {coll}: {err}"
                continue
            most = max(len(tb["ops"]) for g in document["gpus"] for tb in g["threadblocks"])
            if most > MAX_OPS:
                failed = (
                    f"no MSCCL++ plan of the {schedule.method} {coll}: its thread block needs "
                    f"{most} ops, above {MAX_OPS}"
                )
                continue
            pairs = channel_pairs(steps)
            memory = sum(1 for a, b in pairs if box[nodes[a]] == box[nodes[b]])
            return MscclppPlan(document, groups, most, 1, memory, len(pairs) - memory, 0)
    raise ExportError(f"{failed} (on up to {most_groups} thread blocks a GPU)")


def step_layouts(schedule: StepSchedule) -> tuple[str, ...]:
    """The layouts (:data:`LAYOUTS`) in which :func:`mscclpp_step_plan` writes ``schedule``
    differently: both where an allgather's or reduce-scatter's messages are fewer runs in
    scratch than in its buffers (:func:`_home`), else ``("runs",)``.

    >>> from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
    >>> step_layouts(recursive_doubling_allreduce(("a", "b", "c", "d")))
    ('runs',)
    """
    return LAYOUTS if _home(schedule, schedule.rank_blocks) is not None else LAYOUTS[:1]


Run = tuple[Loc, Loc, Loc | None, Loc]  # what is sent, where it lands, operand, target


def _issue_ops(steps: list[_Step], kind: Callable[[int, int], str]) -> int:
    """The most ops that issue transfers on one channel type in one step of ``steps``, as
    the renderer writes them: a sum put on memory channels is one ``res`` (with up to
    ``MAX_PER_OP`` peers), other puts ``MAX_PER_OP`` to an op."""
    most = 0
    for step in steps:
        sums = {dst for dst, _ in step.reduces}
        fused: dict[Loc, int] = Counter()
        plain: dict[str, int] = Counter()
        for peer, src, _ in step.puts:
            if kind(step.rank, peer) == "memory" and src in sums:
                fused[src] += 1
            else:
                plain[kind(step.rank, peer)] += 1
        memory = sum(-(-c // MAX_PER_OP) for c in fused.values())
        memory += -(-plain["memory"] // MAX_PER_OP)
        most = max(most, memory, -(-plain["port"] // MAX_PER_OP))
    return most


def _home(schedule: StepSchedule, k: int) -> dict[int, int] | None:
    """Where an allgather's or a reduce-scatter's blocks live in scratch (chunk of each
    block), when its messages are fewer runs so than in the collective's buffers (which
    fix where a rank's shard lies: ``(b mod N) k + b div N``); None otherwise (and for the
    other collectives, whose blocks :func:`~optcoll.export.msccl_steps._layout` already
    orders by the messages that carry them).

    Two orders are tried, the fewer runs kept: blocks sorted by the numbers of the
    messages that carry them, and by those messages largest first (so that a block set
    every larger message holds stays together: PAT's, Bine's and the multiport
    allgathers' messages are then one run each, torus 4x4 PAT 64 runs for 64 messages,
    240 in the output's order).

    >>> from optcoll.core.step_schedule import Send
    >>> s = StepSchedule("allgather", "x", ("a", "b", "c", "d"), 4,
    ...                  ((Send("a", "c", (0,)), Send("c", "a", (2,)),
    ...                    Send("b", "d", (1,)), Send("d", "b", (3,))),
    ...                   (Send("a", "b", (0, 2)), Send("b", "a", (1, 3)),
    ...                    Send("c", "d", (0, 2)), Send("d", "c", (1, 3)))))
    >>> _home(s, 1)
    {0: 0, 2: 1, 1: 2, 3: 3}
    """
    if schedule.collective not in ("allgather", "reduce_scatter"):
        return None
    n = len(schedule.compute_nodes)
    numbered: dict[int, list[int]] = {b: [] for b in range(schedule.blocks)}
    sized: dict[int, list[tuple[int, int]]] = {b: [] for b in range(schedule.blocks)}
    number = 0
    for messages in schedule.steps:
        for send in messages:
            for b in send.blocks:
                numbered[b].append(number)
                sized[b].append((-len(send.blocks), number))
            number += 1
    laid = {b: (b % n) * k + b // n for b in range(schedule.blocks)}
    best, fewest = None, _run_count(schedule, laid)
    for key in (numbered, {b: sorted(v) for b, v in sized.items()}):
        order = sorted(range(schedule.blocks), key=lambda b: (key[b], b))  # noqa: B023
        place = {b: i for i, b in enumerate(order)}
        runs = _run_count(schedule, place)
        if runs < fewest:
            best, fewest = place, runs
    return best


def _run_count(schedule: StepSchedule, place: dict[int, int]) -> int:
    """How many runs of consecutive chunks the messages of ``schedule`` are, block ``b``
    at chunk ``place[b]``."""
    count = 0
    for messages in schedule.steps:
        for send in messages:
            at = sorted(place[b] for b in send.blocks)
            count += 1 + sum(1 for a, b in zip(at, at[1:], strict=False) if b != a + 1)
    return count


def _steps(
    schedule: StepSchedule, k: int, groups: int = 1, home: dict[int, int] | None = None
) -> tuple[list[_Step], int]:
    """Every GPU's steps (puts of a schedule step, then its waits and sums) and the scratch
    chunks the busiest GPU uses; with ``groups`` thread blocks, block ``g`` carries the
    blocks in the ``g``-th of ``groups`` equal stretches of the buffer on every GPU.
    ``home`` (:func:`_home`): an allgather's or reduce-scatter's blocks kept in the first
    scratch chunks in that order, copied there from the input first (an allgather's own
    shard, a reduce-scatter's input) and an allgather's into the output last; a
    reduce-scatter's last sums still written into its output."""
    nodes = schedule.compute_nodes
    n = len(nodes)
    rank = {v: i for i, v in enumerate(nodes)}
    coll = schedule.collective
    root = rank.get(schedule.root or "")
    place = _layout(schedule, k) if home is None else home
    group = {b: place[b] * groups // schedule.blocks for b in range(schedule.blocks)}
    where: dict[tuple[int, int], Loc] = {}
    out: list[_Step] = []
    first: dict[tuple[int, int], list[tuple[Loc, Loc]]] = defaultdict(list)  # copies in
    last_copies: dict[tuple[int, int], list[tuple[Loc, Loc]]] = defaultdict(list)  # out
    for r in range(n):
        for b in range(schedule.blocks):
            held = coll not in ("allgather", "broadcast") or (coll == "broadcast" and r == root)
            if home is not None and (held or b % n == r):  # into its home chunk
                source = b // n if coll == "allgather" else (b % n) * k + b // n
                first[(r, group[b])].append((("s", home[b], 1), ("i", source, 1)))
                where[(r, b)] = ("s", home[b], 1)
            elif held:
                where[(r, b)] = ("i", place[b], 1)
            elif coll == "allgather" and b % n == r:  # on one thread block, from the copy
                # in the output (its nop orders it before the puts): runs on with the
                # blocks received next to it (two ranges on one channel took two waits)
                where[(r, b)] = ("o", place[b], 1) if groups == 1 else ("i", b // n, 1)
            if home is not None and coll == "allgather":  # out of its home chunk
                final = ("o", (b % n) * k + b // n, 1)
                last_copies[(r, group[b])].append((final, ("s", home[b], 1)))
        if home is None and (coll == "allgather" or (coll == "broadcast" and r == root)):
            copy = _Step(r, 0, 0, (-1, 0), 1, 0)  # the own shard (root: vector) to the output
            copy.copies.append((("o", 0 if root == r else r * k, k), ("i", 0, k)))
            out.append(copy)
    writes: dict[tuple[int, int], int] = defaultdict(int)
    for messages in schedule.steps:
        for send in messages:
            for b in send.blocks:
                writes[(rank[send.dst], b)] += 1
    used = [0 if home is None else schedule.blocks] * n  # the home chunks first

    def fresh(r: int) -> Loc:
        used[r] += 1
        return ("s", used[r] - 1, 1)

    # a GPU's step t: the waits and sums of schedule step t - 1, then the puts of step t
    # (the renderer writes waits, nop, sums, puts: a put reads only after the nop); each
    # thread block of a GPU its own
    turns: list[dict[tuple[int, int], _Step]] = [{} for _ in range(len(schedule.steps) + 1)]

    def step_of(t: int, r: int, g: int) -> _Step:
        if (r, g) not in turns[t]:
            turns[t][(r, g)] = _Step(r, 0, 0, (t,), 1, g)
        return turns[t][(r, g)]

    for s, messages in enumerate(schedule.steps):
        start = dict(where)
        parts = []  # each message's blocks of each thread block
        for send in messages:
            mine: dict[int, list[int]] = defaultdict(list)
            for b in send.blocks:
                mine[group[b]].append(b)
            parts += [(send, g, mine[g]) for g in sorted(mine)]
        for send, g, blocks in parts:
            src, dst = rank[send.src], rank[send.dst]
            ordered = sorted(blocks, key=place.__getitem__)
            targets = {}
            for b in ordered:  # the targets first, then the landings: each a range
                writes[(dst, b)] -= 1
                last = writes[(dst, b)] == 0
                if last and home is not None and coll == "allgather":
                    targets[b] = ("s", home[b], 1)
                elif last and (coll not in ("reduce_scatter", "reduce") or dst == root):
                    targets[b] = ("o", place[b], 1)
                elif last and b % n == dst:
                    targets[b] = ("o", b // n, 1)
                else:
                    targets[b] = fresh(dst)
            runs: list[Run] = []
            for b in ordered:
                landing = fresh(dst) if send.reduce else targets[b]
                operand = where.get((dst, b)) if send.reduce else None
                runs.append((start[(src, b)], landing, operand, targets[b]))
                where[(dst, b)] = targets[b]
            for sent, landing, operand, target in _merged(runs):
                step_of(s, src, g).puts.append((dst, sent, landing))
                step_of(s + 1, dst, g).waits.append(src)
                if operand is not None:
                    step_of(s + 1, dst, g).reduces.append((target, [operand, landing]))
    owners = sorted({key for one in turns for key in one})
    for r, g in owners:  # waits with nothing after them in their turn move to the next
        pending: list[int] = []  # turn that reads, so that its nop orders the reads
        for t in range(len(turns)):
            step = turns[t].get((r, g))
            if step is None and not pending:
                continue
            step = step_of(t, r, g)
            step.waits = pending + step.waits
            pending = []
            if step.waits and not (step.puts or step.reduces):
                pending, step.waits = step.waits, []
        if pending:
            step_of(len(turns) - 1, r, g).waits += pending
    # the home copies: in the block's own steps (before its first puts, after its last
    # waits), or, beyond COPIES_INLINE of them, in thread blocks of their own that a
    # semaphore orders after (before) the block: sem_release / sem_acquire, device
    # semaphores of one GPU (MSCCL++ 1f5f065d src/core/include/execution_kernel.hpp l.
    # 671-685, docs/mscclpp.md), and copy, a local copy: ops that move no data between
    # GPUs, so they cost nothing in optcoll simulate (local memory bandwidth, not modelled)
    helpers = [groups] * n  # each rank's next thread block number
    semaphores = [0] * n  # and semaphore
    extra: list[_Step] = []
    for at_start, copying in ((True, first), (False, last_copies)):
        moment = 0 if at_start else len(turns) - 1
        for (r, g), copies in copying.items():
            merged = _merged_copies(copies)
            if len(merged) <= COPIES_INLINE:
                step_of(moment, r, g).copies += merged
                continue
            # before: each helper releases a semaphore of its own, which the block
            # acquires; after: the block's last step (its waits, a nop) releases one
            # semaphore once per helper, each helper acquiring it
            if not at_start:
                last_step = step_of(moment, r, g)
                last_step.segment, last_step.release = semaphores[r], True
            for c, i in enumerate(range(0, len(merged), MAX_OPS - 4)):
                helper = _Step(r, semaphores[r], 0, (0,), 1, helpers[r])
                helper.copies = merged[i : i + MAX_OPS - 4]
                helper.release, helper.acquire = at_start, not at_start
                extra.append(helper)
                helpers[r] += 1
                if at_start or c:
                    gate = _Step(r, semaphores[r], 0, (-1, c) if at_start else (len(turns), c),
                                 1, g)  # fmt: skip
                    gate.acquire, gate.release = at_start, not at_start
                    extra.append(gate)
                semaphores[r] += at_start
            semaphores[r] += not at_start
    for turn in turns:  # each GPU puts to the ranks after it first (module docstring)
        for step in turn.values():
            after = {peer: ranks_after(step.rank, peer, n) for peer, _, _ in step.puts}
            step.puts.sort(key=lambda put: after[put[0]])
    out += [
        step
        for turn in turns
        for step in turn.values()
        if step.puts or step.waits or step.copies or step.release
    ]
    out += extra
    return out, max(used)


def _spread_puts(steps: list[_Step], n: int, kind: Callable[[int, int], str]) -> None:
    """Give each issuing op of a plan on one thread block a block of its own (in place):
    a GPU's puts of a step to more than :data:`~optcoll.export.mscclpp.MAX_PER_OP` peers,
    or on both channel types, are several ops, each costing its block the overhead in
    turn, where plan's connections post every message at once (hypercube 4 allgather at
    64 KiB, overhead 1 µs, latency 0.5 µs, direct: 4.123 µs on one block, 3.246 so, plan's
    time; the two-shot allreduce, which needed 30 remote buffers on one block: 6.328,
    plan's).

    Each GPU with a step of several put ops has its peers, in the order it puts to them,
    cut into sets of at most ``MAX_PER_OP`` of one channel type; the first set stays on
    block 0, set ``j`` goes to block ``first + j - 1`` (``first`` after every block of the
    plan), for every step, and its receiver waits for it there (channels pair by block
    number); beyond :data:`~optcoll.export.mscclpp.MAX_THREADBLOCKS` blocks nothing is
    spread. Step ``t`` of a GPU
    then runs, on block 0: its waits and sums (``(t,)``), one ``sem_release`` per helper
    block that puts in the step (``(t, 0, h)``), its own puts (``(t, 1)``) and, before step
    ``t + 1``, one ``sem_acquire`` per helper block that waits in it (``(t, 2, h)``); on
    helper block ``h``: its waits of step ``t``, then ``sem_release`` (``(t,)``), then
    ``sem_acquire`` and its puts (``(t, 1)``). So a helper puts only what block 0 held or
    summed by then, and block 0 reads only what the helpers' waits saw (as the copies'
    helper blocks in :func:`_steps`); every acquire follows only releases of smaller keys,
    so the plan cannot deadlock.

    >>> from optcoll.core.step_schedule import Send
    >>> s = StepSchedule("allgather", "direct", tuple("abc"), 3, ((Send("a", "b", (0,)),
    ...     Send("a", "c", (0,)), Send("b", "a", (1,)), Send("b", "c", (1,)),
    ...     Send("c", "a", (2,)), Send("c", "b", (2,))),))
    >>> steps, _ = _steps(s, 1)
    >>> _spread_puts(steps, 3, lambda a, b: "memory" if {a, b} == {0, 1} else "port")
    >>> sorted((x.group, x.rank, x.key, [p for p, *_ in x.puts]) for x in steps if x.puts)
    [(0, 0, (0, 1), [1]), (0, 1, (0, 1), [0]), (0, 2, (0,), [0, 1]), (1, 0, (0, 1), [2]), \
(1, 1, (0, 1), [2])]
    >>> sorted((x.group, x.rank, x.key, x.waits) for x in steps if x.waits)
    [(0, 0, (1,), [1, 2]), (0, 1, (1,), [0, 2]), (1, 2, (1,), [0, 1])]
    """
    turns = [x for x in steps if x.group == 0 and len(x.key) == 1 and x.key[0] >= 0]
    first = max(x.group for x in steps) + 1
    block: dict[tuple[int, int], int] = {}  # (sender, receiver) -> the block it puts from
    for r in range(n):
        mine = [x for x in turns if x.rank == r]
        if all(_put_ops(x, kind) <= 1 for x in mine):
            continue  # every step of its puts one op already
        peers = sorted({p for x in mine for p, _, _ in x.puts},
                       key=lambda p: ranks_after(r, p, n))  # fmt: skip
        sets = []
        for channel in ("memory", "port"):
            typed = [p for p in peers if kind(r, p) == channel]
            sets += [typed[i : i + MAX_PER_OP] for i in range(0, len(typed), MAX_PER_OP)]
        if first + len(sets) - 1 > MAX_THREADBLOCKS:
            return
        block.update(((r, p), first + j - 1 if j else 0) for j, one in enumerate(sets) for p in one)
    if not any(block.values()):
        return

    def semaphore(h: int, waits: bool) -> int:  # one a helper block and direction, per GPU
        return 2 * (MAX_THREADBLOCKS + h) + waits

    for step in turns:
        t, r = step.key[0], step.rank
        helpers: dict[int, list[tuple[int, Loc, Loc]]] = defaultdict(list)
        for put in step.puts:
            helpers[block.get((r, put[0]), 0)].append(put)
        if not any(helpers):
            continue
        own = _Step(r, 0, 0, (t, 1), 1, 0)  # block 0's own puts, after the releases
        own.puts, step.puts = helpers.pop(0, []), []
        steps.append(own)
        for h, puts in helpers.items():
            release = _Step(r, semaphore(h, False), 0, (t, 0, h), 1, 0)
            release.release = True
            send = _Step(r, semaphore(h, False), 0, (t, 1), 1, h)
            send.acquire, send.puts = True, puts
            steps += [release, send]
    for step in turns:
        t, p = step.key[0], step.rank
        moved: dict[int, list[int]] = defaultdict(list)
        for src in step.waits:
            moved[block.get((src, p), 0)].append(src)
        step.waits = moved.pop(0, [])
        for h, sources in moved.items():
            wait = _Step(p, semaphore(h, True), 0, (t,), 1, h)
            wait.waits, wait.release = sources, True
            gate = _Step(p, semaphore(h, True), 0, (t - 1, 2, h), 1, 0)
            gate.acquire = True
            steps += [wait, gate]


def _put_ops(step: _Step, kind: Callable[[int, int], str]) -> int:
    """The put ops of ``step`` (``MAX_PER_OP`` puts to an op of one channel type)."""
    count = Counter(kind(step.rank, peer) for peer, _, _ in step.puts)
    return sum(-(-c // MAX_PER_OP) for c in count.values())


def _merged_copies(copies: list[tuple[Loc, Loc]]) -> list[tuple[Loc, Loc]]:
    """Copies of single chunks (target, source) merged where both run on, in the order of
    their targets."""
    merged: list[tuple[Loc, Loc]] = []
    for dst, src in sorted(copies):
        if merged:
            (d, dn, dc), (s, sn, sc) = merged[-1]
            if d == dst[0] and dn + dc == dst[1] and s == src[0] and sn + sc == src[1]:
                merged[-1] = ((d, dn, dc + 1), (s, sn, sc + 1))
                continue
        merged.append((dst, src))
    return merged


def _merged(runs: list[Run]) -> list[Run]:
    """Consecutive chunks in every location merged into ranges."""
    merged: list[Run] = []
    for run in runs:
        if merged and all(
            (a is None) == (b is None)
            and (a is None or b is None or (a[0] == b[0] and b[1] == a[1] + a[2]))
            for a, b in zip(merged[-1], run, strict=True)
        ):
            merged[-1] = tuple(  # type: ignore[assignment]
                None if a is None else (a[0], a[1], a[2] + 1) for a in merged[-1]
            )
        else:
            merged.append(run)
    return merged
