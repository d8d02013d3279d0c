"""An independent checker of MSCCL algorithm XML: does the program run, and compute its collective?

It shares no code with optcoll's exporter, only the table of runtime facts
(:mod:`optcoll.core.msccl_runtimes`): it reads any MSCCL XML (optcoll's, msccl-tools',
TACCL's, ForestColl's), checks it against a runtime profile's parser rules with checks of its
own (:mod:`~optcoll.verify.msccl.limits`), executes it
(:mod:`~optcoll.verify.msccl.execute`) at several connection depths and in every placement
the file claims (``inplace``, ``outofplace``), and reports deadlocks with their wait-for
cycle, wrong output chunks, data races, unmatched sends and the load of each GPU pair.

Examples
--------
>>> from optcoll.verify.msccl import verify_text
>>> report = verify_text('<algo coll="allgather" ngpus="2"/>')
>>> report.ok, report.findings[0].kind
(False, 'limit')
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.core.arguments import path_argument, text_argument
from optcoll.core.msccl_runtimes import DEFAULT_RUNTIME
from optcoll.core.rational import fraction_text
from optcoll.core.topology import Topology
from optcoll.verify.msccl.execute import describe_value, execute, expected_outputs
from optcoll.verify.msccl.limits import STEP_SEMANTICS, Algo, decode
from optcoll.verify.msccl.profiles import runtime_profile
from optcoll.verify.msccl.program import Program, parse_program, read_program
from optcoll.verify.report import Finding, Report, capped

__all__ = ["CheckReport", "verify_program", "verify_text", "verify_file", "DEPTHS"]

#: Connection depths (chunks in flight) every program is run at.
DEPTHS = (1, 2, 8)


@dataclass
class CheckReport(Report):
    """What :func:`verify_program` found.

    ``findings`` empty means the program is correct (``ok``); ``notes`` say what was not
    judged (the output of a collective the checker does not know). ``pair_load`` maps
    (sender rank, receiver rank) to the bytes that pair carries per byte of message
    (the message being the ``count * sizeMultiplier`` bytes the runtime sizes chunks by).
    """

    source: str
    runtime: str
    coll: str | None
    ngpus: int | None
    nchunksperloop: int | None
    placements: tuple[str, ...]
    depths: tuple[int, ...]
    root: int | None
    findings: list[Finding]
    pair_load: dict[tuple[int, int], Fraction] = field(default_factory=dict)
    executed: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        """True when the program ran and its output was judged (the checker knows what its
        ``coll`` computes); a program that is ``ok`` but not judged is not known correct."""
        return self.executed and not self.notes

    @property
    def max_pair_load(self) -> Fraction:
        """The largest bytes-per-message-byte any GPU pair carries (0 with no sends)."""
        return max(self.pair_load.values(), default=Fraction(0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (loads as exact fraction strings)."""

        return {
            "file": self.source,
            "runtime": self.runtime,
            "coll": self.coll,
            "ngpus": self.ngpus,
            "nchunksperloop": self.nchunksperloop,
            "ok": self.ok,
            "executed": self.executed,
            "placements": list(self.placements),
            "depths": list(self.depths),
            "root": self.root,
            "findings": self.findings_to_dicts(),
            "notes": list(self.notes),
            "judged": self.judged,
            "max_pair_load": fraction_text(self.max_pair_load),
            "pair_load": [
                {"src": s, "dst": d, "load": fraction_text(v)}
                for (s, d), v in sorted(self.pair_load.items())
            ],
        }


def verify_program(
    program: Program,
    *,
    runtime: str = DEFAULT_RUNTIME,
    topology: Topology | None = None,
    depths: tuple[int, ...] = DEPTHS,
    races: bool = True,
) -> CheckReport:
    """Check ``program`` against ``runtime``'s rules and execute it (see the module doc).

    Parameters
    ----------
    program : Program
        A parsed file (:func:`~optcoll.verify.msccl.program.read_program`).
    runtime : str
        ``rccl`` (default), ``msccl`` or ``msccl-executor``.
    topology : Topology, optional
        When given, ``ngpus`` must be its number of compute nodes (rank ``r`` is its
        ``r``-th compute node) and every pair that sends must be joined by a link or a
        path through switches only.
    depths : tuple of int
        Chunks a connection holds in flight; the program runs once per depth.
    races : bool
        Look for data races (vector clocks; memory grows with the square of the number of
        thread blocks).
    """

    profile = runtime_profile(runtime)
    decoded = decode(program, profile)
    algo, findings = decoded.algo, decoded.findings
    report = CheckReport(
        program.source, runtime, program.attrs.get("coll"), None, None, (), tuple(depths), None,
        findings,
    )  # fmt: skip
    if algo is None:
        return report
    report.ngpus, report.nchunksperloop = algo.ngpus, algo.nchunksperloop
    report.pair_load = _pair_load(algo)
    if topology is not None:
        findings += _check_topology(algo, topology, report.pair_load)
    if any(f.kind in ("bounds", "structure") for f in findings):
        return report
    placements = (("in place",) if algo.inplace else ()) + (
        ("out of place",) if algo.outofplace else ()
    )
    report.placements = placements
    report.executed = True
    for placement in placements:
        inplace = placement == "in place"
        for n, depth in enumerate(sorted(depths, reverse=True)):
            run = execute(algo, inplace=inplace, depth=depth, values=n == 0, races=races and n == 0)
            found = run.findings + run.races
            if n == 0 and run.completed:
                report.root, wrong = _judge(algo, run.memory, inplace, report.notes)
                found += wrong
            for f in found:
                placed = Finding(f.kind, f"{placement}: {f.message}")
                if placed not in findings:
                    findings.append(placed)
    report.findings = capped(findings)
    return report


def verify_text(text: str, **options: Any) -> CheckReport:
    """:func:`verify_program` of MSCCL XML ``text``."""
    text_argument(text, "text")
    return verify_program(parse_program(text), **options)


def verify_file(path: str | Path, **options: Any) -> CheckReport:
    """:func:`verify_program` of the MSCCL XML file at ``path``."""
    path = path_argument(path)
    return verify_program(read_program(path), **options)


def _pair_load(algo: Algo) -> dict[tuple[int, int], Fraction]:
    """Chunks each (sender, receiver) pair carries, over ``nchunksperloop``."""
    chunks: dict[tuple[int, int], int] = defaultdict(int)
    for tbs in algo.gpus.values():
        for tb in tbs.values():
            for step in tb.steps:
                if STEP_SEMANTICS[step.type][1] and tb.send >= 0:
                    chunks[(tb.gpu, tb.send)] += step.cnt
    return {pair: Fraction(c, algo.nchunksperloop) for pair, c in sorted(chunks.items())}


def _check_topology(
    algo: Algo, topology: Topology, load: dict[tuple[int, int], Fraction]
) -> list[Finding]:
    compute = topology.compute_nodes
    if len(compute) != algo.ngpus:
        return [
            Finding(
                "topology",
                f"ngpus={algo.ngpus} but topology {topology.name} has {len(compute)} compute nodes",
            )
        ]
    out: dict[str, list[str]] = defaultdict(list)
    for u, v in topology.capacity:
        out[u].append(v)
    findings = []
    for src, dst in sorted(load):
        reached, frontier = set(), [compute[src]]
        while frontier:
            node = frontier.pop()
            for nxt in out[node]:
                if nxt not in reached:
                    reached.add(nxt)
                    if not topology.is_compute(nxt):
                        frontier.append(nxt)
        if compute[dst] not in reached:
            findings.append(
                Finding(
                    "topology",
                    f"GPU {src} ({compute[src]}) sends to GPU {dst} ({compute[dst]}), but "
                    f"{topology.name} has no link or switch path between them",
                )
            )
    return findings


def _judge(algo: Algo, memory, inplace: bool, notes: list[str]) -> tuple[int | None, list[Finding]]:
    """The root (broadcast and reduce, found from the data) and the wrong output chunks."""

    root = _infer_root(algo, memory, inplace)
    expected = expected_outputs(algo, root)
    findings: list[Finding] = []
    if expected is None:
        computed = _computed_collective(algo, memory, inplace)
        if computed is not None:
            return root, [
                Finding(
                    "wrong-collective",
                    f"<algo>: coll={algo.coll!r}, but every rank's output is exactly the "
                    f"{computed}'s: the program computes {computed}, not {algo.coll}",
                )
            ]
        note = f"coll={algo.coll!r}: the checker does not know its result; output not judged"
        if note not in notes:
            notes.append(note)
        return root, []
    if algo.collective in ("broadcast", "reduce") and root is None:
        return None, [Finding("wrong-data", f"no rank ends with a complete {algo.collective}")]
    out = "i" if inplace and algo.collective == "reduce_scatter" else "o"
    for (rank, chunk), want in sorted(expected.items()):
        index = chunk + (rank * algo.output_chunks if out == "i" else 0)
        got = memory[rank].get((out, index))
        if got != want:
            findings.append(
                Finding(
                    "wrong-data",
                    f"rank {rank} output chunk {chunk}: expected {describe_value(want, algo)}, "
                    f"got {describe_value(got, algo)}",
                )
            )
    if not inplace:
        for rank in range(algo.ngpus):
            for j in range(algo.input_chunks):
                if memory[rank].get(("i", j)) != 1 << (rank * algo.input_chunks + j):
                    findings.append(
                        Finding("input-modified", f"rank {rank} input chunk {j} is overwritten")
                    )
    return root, findings


def _computed_collective(algo: Algo, memory, inplace: bool) -> str | None:
    """The known collective (with the same buffers as ``algo``) whose every output chunk the
    final ``memory`` holds, or None: what a program declaring an unknown ``coll`` computes."""
    same_buffers = ["allreduce", "broadcast", "reduce"]
    if algo.nchunksperloop % algo.ngpus == 0:
        same_buffers.append("alltoall")
    for name in same_buffers:
        known = replace(algo, collective=name)
        expected = expected_outputs(known, _infer_root(known, memory, inplace))
        if expected and all(
            memory[rank].get(("o", chunk)) == want for (rank, chunk), want in expected.items()
        ):
            return name
    return None


def _infer_root(algo: Algo, memory, inplace: bool) -> int | None:
    """Broadcast: the rank whose input chunk 0 rank 0's output holds; reduce: the first rank
    whose output chunk 0 is the full sum."""
    if algo.collective == "broadcast":
        value = memory[0].get(("o", 0))
        if value is not None and value > 0 and value & (value - 1) == 0:
            rank, chunk = divmod(value.bit_length() - 1, algo.input_chunks)
            return rank if chunk == 0 else None
    if algo.collective == "reduce":
        full = sum(1 << (q * algo.input_chunks) for q in range(algo.ngpus))
        for rank in range(algo.ngpus):
            if memory[rank].get(("o", 0)) == full:
                return rank
    return None


#: The names before the checkers shared one verb (``verify_*``), for callers outside
#: the package; out of ``__all__``.
check_program = verify_program
check_text = verify_text
check_file = verify_file
