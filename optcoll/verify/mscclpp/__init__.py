"""An independent checker of MSCCL++ execution plans: would the executor accept the plan,
and does running it compute its collective?

It shares no code with optcoll's writer (:mod:`optcoll.export.mscclpp`): it reads any plan
(MSCCL++'s shipped ones, its DSL's, ours) by the parser's rules
(:mod:`~optcoll.verify.mscclpp.plan`; refusals raise ``FileFormatError``), executes it
abstractly under several interleavings of thread blocks and ranks
(:mod:`~optcoll.verify.mscclpp.execute`) and reports deadlocks, races (a read before the
write that fills it is visible), unconsumed signals, out-of-bounds ranges and wrong
outputs: every rank must end with the right chunks, sums of the right inputs.

Examples
--------
>>> report = verify_plan({"name": "empty", "collective": "allgather", "protocol": "Simple",
...     "inplace": False, "gpus": []})
>>> report.ok, report.findings[0][0]
(False, 'structure')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optcoll.verify.mscclpp.execute import STRATEGIES, execute, programs
from optcoll.verify.mscclpp.plan import Plan, parse_plan, read_plan
from optcoll.verify.report import Finding, Report

__all__ = ["PlanReport", "verify_plan", "verify_plan_file", "granule", "read_plan"]

_NAMES = {"reduce_scatter": "reducescatter", "all_to_all": "alltoall"}
#: The largest buffer whose offsets and sizes fit the uint32_t fields of MSCCL++'s
#: ``Operation`` (``src/core/include/execution_common.hpp``).
UINT32_BYTES = 2**32 - 1


@dataclass
class PlanReport(Report):
    """What :func:`verify_plan` found; ``ok`` when ``findings`` is empty."""

    name: str
    collective: str
    protocol: str
    inplace: bool
    ranks: int
    threadblocks: int
    operations: int
    granule: int
    root: int | None = None
    strategies: tuple[str, ...] = ()
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    known_collective: bool = True

    @property
    def judged(self) -> bool:
        """True when the plan was executed (under :data:`STRATEGIES`) and its output judged
        (its ``collective`` is one the checker knows); a plan that is ``ok`` but was not
        executed (ops the checker does not run) or not judged is not known correct."""
        return bool(self.strategies) and self.known_collective

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "collective": self.collective,
            "protocol": self.protocol,
            "inplace": self.inplace,
            "ranks": self.ranks,
            "threadblocks_per_rank": self.threadblocks,
            "operations": self.operations,
            "size_granule_bytes": self.granule,
            "root": self.root,
            "interleavings": list(self.strategies),
            "ok": self.ok,
            "judged": self.judged,
            "findings": self.findings_to_dicts(),
            "notes": self.notes,
        }


def granule(plan: Plan) -> int:
    """The byte granule of the message (output for allgather, input otherwise) that
    ``checkMessageSize`` accepts on every rank: sizes must be multiples of it.

    Examples
    --------
    >>> from optcoll.verify.mscclpp.plan import parse_plan
    >>> g = {"id": 0, "input_chunks": 3, "output_chunks": 6, "scratch_chunks": 0,
    ...      "threadblocks": [], "channels": [], "remote_buffers": []}
    >>> granule(parse_plan({"name": "n", "collective": "allgather", "protocol": "LL",
    ...     "inplace": False, "gpus": [g, dict(g, id=1)]}))
    96
    """
    step = 1
    for gpu in plan.gpus:
        ic, oc = gpu.chunks["i"], gpu.chunks["o"]
        for chunks in (ic, oc):
            if chunks:
                step = math.lcm(step, plan.alignment * chunks)
    return step


def verify_plan_file(path: str | Path) -> PlanReport:
    """Check the plan in file ``path`` (FileFormatError if MSCCL++ would refuse it)."""
    report = verify_plan(read_plan(path))
    return report


def verify_plan(plan: Plan | dict) -> PlanReport:
    """Check a parsed plan (or a decoded JSON document)."""
    if not isinstance(plan, Plan):
        plan = parse_plan(plan)
    collective = _NAMES.get(plan.collective, plan.collective)
    report = PlanReport(
        plan.name,
        collective,
        plan.protocol,
        plan.inplace,
        plan.ranks,
        max((len(g.threadblocks) for g in plan.gpus), default=0),
        sum(len(tb.ops) for g in plan.gpus for tb in g.threadblocks),
        granule(plan),
    )
    if not plan.gpus:
        report.findings.append(Finding("structure", "the plan has no GPUs"))
        return report
    step = report.granule
    smallest = -(-max(plan.min_message_size, 1) // step) * step
    if smallest > plan.max_message_size:
        report.findings.append(
            Finding(
                "structure",
                f"no message size fits the band [{plan.min_message_size}, "
                f"{plan.max_message_size}]: checkMessageSize takes positive multiples of "
                f"{step} B",
            )
        )
    if plan.protocol not in ("Simple", "LL"):
        report.notes.append(
            f"protocol {plan.protocol!r} is run as Simple (only 'LL' selects packets)"
        )
    for where, message in plan.overflows:
        report.findings.append(Finding("limit", f"{where}: {message}"))
    _check_chunks(plan, report)
    _check_pairing(plan, report)
    if plan.unsupported:
        report.notes.append("not executed: " + "; ".join(plan.unsupported[:3]))
        return report
    seen = {m for _, m in report.findings}
    made = programs(plan)
    for strategy in STRATEGIES:
        outcome = execute(plan, strategy, made)
        report.strategies += (strategy[0],)
        for kind, message in outcome.findings:
            if message not in seen:
                seen.add(message)
                report.findings.append(Finding(kind, f"[{strategy[0]}] {message}"))
        if outcome.completed:
            for message in _postcondition(plan, collective, outcome.values, report):
                if message not in seen:
                    seen.add(message)
                    report.findings.append(Finding("wrong-data", f"[{strategy[0]}] {message}"))
    return report


def _check_chunks(plan: Plan, report: PlanReport) -> None:
    first = plan.gpus[0].chunks
    for gpu in plan.gpus:
        if gpu.chunks != first:
            report.findings.append(
                Finding(
                    "structure",
                    f"rank {gpu.rank} has chunks {gpu.chunks}, "
                    f"rank 0 {first}: one message size cannot fit both",
                )
            )
        ic, oc = gpu.chunks["i"], gpu.chunks["o"]
        if ic == 0 and oc == 0:
            report.findings.append(
                Finding(
                    "structure",
                    f"rank {gpu.rank}: input_chunks and "
                    "output_chunks are both 0 (the executor throws)",
                )
            )
        elif 0 in (ic, oc):
            report.findings.append(
                Finding(
                    "structure",
                    f"rank {gpu.rank}: a buffer with 0 chunks; checkMessageSize divides "
                    "by it (an integer division by zero at every size)",
                )
            )
    ic, oc = first["i"], first["o"]
    largest = _largest_message(plan)
    if largest is not None and plan.max_message_size > largest:
        report.notes.append(
            f"messages above {largest} B put a buffer past 4 GiB, which the executor's "
            "uint32_t offsets and sizes (Operation, execution_common.hpp) cannot address"
        )
    n = plan.ranks
    expect = {"allgather": oc == n * ic, "reducescatter": ic == n * oc}
    if plan.collective in expect and not expect[plan.collective]:
        report.findings.append(
            Finding(
                "structure",
                f"{plan.collective} with {ic} input and {oc} "
                f"output chunks on {n} ranks: the chunk sizes differ",
            )
        )


def _largest_message(plan: Plan) -> int | None:
    """The largest message whose input, output and scratch buffers (LL: twice the data)
    all stay below 4 GiB on every rank (None if a buffer has no chunks)."""
    largest = None
    for gpu in plan.gpus:
        ic, oc, sc = gpu.chunks["i"], gpu.chunks["o"], gpu.chunks["s"]
        message_chunks = oc if plan.collective == "allgather" else ic
        if not message_chunks or not ic or not oc:
            return None
        widest = max(ic, oc, sc * (2 if plan.protocol == "LL" else 1))
        bound = UINT32_BYTES * message_chunks // widest
        largest = bound if largest is None else min(largest, bound)
    return largest


def _check_pairing(plan: Plan, report: PlanReport) -> None:
    """The n-th channel of a to b is connected to the n-th of b to a: same type."""
    kinds = {}
    for gpu in plan.gpus:
        for ctype in ("memory", "port"):
            for peer, ordinal in gpu.channels[ctype]:
                kinds[(gpu.rank, peer, ordinal)] = ctype
    for (a, b, ordinal), ctype in sorted(kinds.items()):
        other = kinds.get((b, a, ordinal))
        if other is not None and other != ctype:
            report.findings.append(
                Finding(
                    "structure",
                    f"channel {ordinal} of rank {a} to rank {b} is "
                    f"{ctype} but its partner on rank {b} is {other}",
                )
            )


def _postcondition(plan: Plan, collective: str, values: dict, report: PlanReport) -> list[str]:
    n, parts = plan.ranks, plan.parts
    ic, oc = plan.gpus[0].chunks["i"], plan.gpus[0].chunks["o"]
    wrong: list[str] = []

    def want(rank: int, index: int, value: tuple) -> None:
        for p in range(parts):  # every part of output chunk ``index``: those of the inputs
            got = values.get((rank, "o", index * parts + p))
            expected = tuple((q, j * parts + p) for q, j in value)
            if got != expected:  # one finding per chunk, at its first wrong part
                if len(wrong) < 6:
                    wrong.append(
                        f"rank {rank} output chunk {index}{_part(p, parts)} holds "
                        f"{_text(got, parts)}, expected {_text(expected, parts)}"
                    )
                return

    if collective == "allgather":
        for r in range(n):
            for q in range(n):
                for j in range(ic):
                    want(r, q * ic + j, ((q, j),))
    elif collective == "allreduce":
        for r in range(n):
            for c in range(oc):
                want(r, c, tuple((q, c) for q in range(n)))
    elif collective == "reducescatter":
        for r in range(n):
            for j in range(oc):
                want(r, j, tuple((q, r * oc + j) for q in range(n)))
    elif collective == "alltoall":
        k = oc // n
        for d in range(n):
            for s in range(n):
                for j in range(k):
                    want(d, s * k + j, ((s, d * k + j),))
    elif collective == "broadcast":
        got = values.get((0, "o", 0))
        root = got[0][0] if got and len(got) == 1 else 0
        report.root = root
        for r in range(n):
            for j in range(oc):
                want(r, j, ((root, j),))
    elif collective == "reduce":
        total = tuple((q, 0) for q in range(n))
        roots = [r for r in range(n) if values.get((r, "o", 0)) == total]
        report.root = roots[0] if roots else 0
        for j in range(oc):
            want(report.root, j, tuple((q, j) for q in range(n)))
    else:
        note = f"collective {plan.collective!r}: its output is not judged"
        report.known_collective = False
        if note not in report.notes:
            report.notes.append(note)
    return wrong


def _part(part: int, parts: int) -> str:
    return "" if parts == 1 else f" (from part {part} of {parts})"


def _text(value: Any, parts: int) -> str:
    if value is None:
        return "nothing"
    if parts == 1:
        return "+".join(f"in{r}[{j}]" for r, j in value)
    return "+".join(f"in{r}[{j // parts}].{j % parts}" for r, j in value)


#: The names before the checkers shared one verb (``verify_*``), for callers outside
#: the package; out of ``__all__``.
check_plan = verify_plan
check_plan_file = verify_plan_file
