"""Execute a step schedule and check that it delivers its collective.

Independent of the builders (:mod:`optcoll.schedules.baselines`): every node's value
of every block is tracked as the set of inputs summed into it (a bit set, one bit per
node) (an allgather's block ``b`` is node ``b mod N``'s input, a broadcast's every block
the root's), the steps are executed as :mod:`optcoll.core.step_schedule`
defines them (every message carries what its sender held at the start of the step), and
the end state is compared with what the collective must leave. A reduction that would add
an input twice, a message of a block its sender does not hold, a send to itself or to a
node outside the schedule are findings. ``O(messages * blocks)`` set operations on
``N``-bit integers.

Examples
--------
>>> from optcoll.core.step_schedule import Send, StepSchedule
>>> swap = StepSchedule("allreduce", "x", ("a", "b"), 1,
...                     ((Send("a", "b", (0,), True), Send("b", "a", (0,), True)),))
>>> verify_steps(swap).valid
True
>>> verify_steps(StepSchedule("allreduce", "x", ("a", "b"), 1,
...                           ((Send("a", "b", (0,), True),),))).reason
'node a ends with block 0 summed over 1 of 2 inputs (missing b)'
>>> verify_steps(StepSchedule("broadcast", "x", ("a", "b", "c"), 2,
...                           ((Send("b", "a", (0, 1)),),), root="b")).reason
'node c ends without block 0'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optcoll.core.step_schedule import StepSchedule
from optcoll.verify.report import Finding, Verdict

__all__ = ["StepVerdict", "verify_steps"]


@dataclass(frozen=True)
class StepVerdict(Verdict):
    """What :func:`verify_steps` found: ``valid``, the first ``reason`` it is not, and the
    steps and messages executed."""

    valid: bool
    reason: str
    steps: int
    messages: int
    findings: tuple[Finding, ...] = field(init=False, repr=False, compare=False)


def verify_steps(schedule: StepSchedule) -> StepVerdict:
    """Execute ``schedule`` on sets of inputs and check what every node ends with."""
    nodes = schedule.compute_nodes
    n, blocks = len(nodes), schedule.blocks
    rank = {v: i for i, v in enumerate(nodes)}
    everyone = (1 << n) - 1

    def fail(reason: str) -> StepVerdict:
        return StepVerdict(False, reason, schedule.num_steps, schedule.messages)

    if len(rank) != n:
        return fail("a compute node is listed twice")
    coll = schedule.collective
    sharded = coll in ("allgather", "reduce_scatter")
    if sharded and (blocks < n or blocks % n):
        return fail(f"a {coll} has blocks a multiple of its {n} nodes, not {blocks}")
    if blocks < 1:
        return fail(f"a {coll} has at least one block, not {blocks}")
    root = -1 if schedule.root is None else rank[schedule.root]  # in the nodes: checked
    held: list[dict[int, int]]
    if coll == "allgather":
        held = [{b: 1 << i for b in range(i, blocks, n)} for i in range(n)]
    elif coll == "broadcast":
        held = [dict.fromkeys(range(blocks), 1 << i) if i == root else {} for i in range(n)]
    else:
        held = [dict.fromkeys(range(blocks), 1 << i) for i in range(n)]
    for number, step in enumerate(schedule.steps):
        arriving = []
        for send in step:
            where = f"step {number}: {send.src} -> {send.dst}"
            if send.src not in rank or send.dst not in rank:
                return fail(f"{where}: not a compute node of the schedule")
            if send.src == send.dst:
                return fail(f"{where}: a node sends to itself")
            if not send.blocks:
                return fail(f"{where}: an empty message")
            source = held[rank[send.src]]
            for block in send.blocks:
                if block not in source:
                    return fail(f"{where}: block {block} is not held by {send.src}")
            arriving.append((send, [(b, source[b]) for b in send.blocks]))
        for send, values in arriving:
            target = held[rank[send.dst]]
            for block, inputs in values:
                if send.reduce:
                    mine = target.get(block, 0)
                    if mine & inputs:
                        twice = ", ".join(_members(mine & inputs, nodes))
                        return fail(
                            f"step {number}: {send.src} -> {send.dst}: block {block} would "
                            f"add the input of {twice} twice"
                        )
                    target[block] = mine | inputs
                else:
                    target[block] = inputs
    for i, state in enumerate(held):
        wanted = range(i, blocks, n) if coll == "reduce_scatter" else range(blocks)
        if coll == "reduce" and i != root:
            wanted = range(0)
        for block in wanted:
            full = everyone
            if coll in ("allgather", "broadcast"):
                full = 1 << (block % n if coll == "allgather" else root)
            if block not in state:
                return fail(f"node {nodes[i]} ends without block {block}")
            if state[block] != full:
                missing = ", ".join(_members(full & ~state[block], nodes))
                return fail(
                    f"node {nodes[i]} ends with block {block} summed over "
                    f"{state[block].bit_count()} of {full.bit_count()} inputs (missing {missing})"
                )
    return StepVerdict(True, "", schedule.num_steps, schedule.messages)


def _members(bits: int, nodes: tuple[str, ...]) -> list[str]:
    """The nodes whose bits are set in ``bits``, in rank order."""
    return [v for i, v in enumerate(nodes) if bits >> i & 1]
