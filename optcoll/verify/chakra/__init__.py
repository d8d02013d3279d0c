"""An independent checker of Chakra execution traces for ASTRA-sim's custom collectives.

ASTRA-sim runs a custom collective from one trace per rank, ``PREFIX.<rank>.et``
(``CustomAlgorithm`` in astra-sim ``astra-sim/system/astraccl/custom_collectives/
CustomAlgorithm.cc`` appends ``"." + pos_in_comm + ".et"`` to the path named in the system
JSON's ``all-reduce-implementation-custom`` and its kin,
``astra-sim/system/astraccl/CollectiveImplLookup.cc``). It issues every node whose
``data_deps`` and ``ctrl_deps`` have finished and honours three node types:
``COMM_SEND_NODE`` (``comm_dst``, ``comm_size`` bytes, ``comm_tag``), ``COMM_RECV_NODE``
(``comm_src``, ``comm_size``, ``comm_tag``) and ``COMP_NODE`` (a reduction, ``duration_micros``;
labelled ``optcoll_gate``: an order gate that moves no data, see :mod:`optcoll.export.chakra`);
any other node is taken and never finishes. The network matches the ``i``-th send with the
``i``-th receive of the same (tag, source, destination, size) (the analytical backend's
``ChunkIdGenerator``/``CallbackTracker``); tags are taken modulo 500,000,000
(``Sys::front_end_sim_send``) and sizes must be positive.

This checker reads the files with its own wire decoder (:mod:`~optcoll.verify.chakra.wire`),
shares no code with optcoll's writer, and reports:

* **format / metadata / node**: undecodable bytes, a missing GlobalMetadata, node types
  ASTRA-sim does not run, missing or non-integer ``comm_*`` attributes, ``comm_*`` values of
  another kind than Chakra's own feeder reads (``comm_size`` int64, ``comm_src``,
  ``comm_dst``, ``comm_tag`` int32; it reads any other kind as 0), ranks out of range,
  tags outside ``0 .. 499999999``, sizes below 1, duplicate ids, ranks with no node;
* **dependency**: a dependency on an id the file does not hold, a cycle;
* **match**: sends and receives of one key that nothing orders (which send meets which
  receive depends on timing), a send nobody receives, a receive nobody sends to;
* **deadlock**: execution stops with nodes left (every send completes when issued, a receive
  when its message is there) - run in four orders (first ready first, last ready first and
  two seeded random orders);
* **result** and **race**: with optcoll's chunk labels (``optcoll_chunk`` on transfers and
  reductions, or ``optcoll_chunk_list``, a JSON list of chunks, for one that carries
  several, as a step schedule's message does; ``optcoll_ranks``/``optcoll_chunks``/
  ``optcoll_bytes`` in the metadata), the data each rank ends with: every rank holds what
  the collective promises, each reduction holds every rank's input exactly once, every
  transfer's size is the sum of its chunks', and all four orders agree. Traces without labels (another tool's) are checked for everything else.

Examples
--------
>>> report = verify_traces([("t.0.et", b"")])
>>> report.ok, report.findings[0].kind
(False, 'format')
"""

from __future__ import annotations

import json
import random
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optcoll.core.arguments import path_argument
from optcoll.core.limits import read_file
from optcoll.exceptions import FileFormatError
from optcoll.verify.chakra.wire import Metadata, TraceNode, decode_trace
from optcoll.verify.report import Finding, Report, capped

__all__ = ["Finding", "EtReport", "verify_traces", "verify_prefix", "trace_files", "read_traces"]

_COMP, _SEND, _RECV = 4, 5, 6
#: Tags are reduced modulo this (``Sys::FrontEndSendRecvType::COLLECTIVE``).
TAG_LIMIT = 500_000_000
ORDERS = ("first ready first", "last ready first", "random (seed 1)", "random (seed 2)")
_PER_NODE = ("allgather", "reduce_scatter", "allreduce")
_REDUCING = ("reduce_scatter", "allreduce", "reduce")
_COLLECTIVES = (*_PER_NODE, "broadcast", "reduce", "alltoall")
#: The one value kind Chakra's own feeder reads for each attribute (mlcommons/chakra
#: ``src/feeder/et_feeder_node.cpp``: ``attr.int64_val()`` / ``attr.int32_val()``; a value of
#: another kind reads as 0); ASTRA-sim's ``feeder_v3`` converts any integer kind.
_FEEDER_KINDS = {
    "comm_size": "int64",
    "comm_src": "int32",
    "comm_dst": "int32",
    "comm_tag": "int32",
}


@dataclass
class EtReport(Report):
    """What :func:`verify_traces` found (``ok`` when ``findings`` is empty)."""

    source: str
    ranks: int
    collective: str | None
    nodes: int
    transfers: int
    bytes_sent: int
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    executed: bool = False
    judged: bool = False
    #: each rank's decoded metadata and nodes (empty when a file does not decode)
    decoded: list[tuple[Metadata, list[TraceNode]]] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prefix": self.source,
            "ranks": self.ranks,
            "collective": self.collective,
            "nodes": self.nodes,
            "transfers": self.transfers,
            "bytes_sent": self.bytes_sent,
            "ok": self.ok,
            "executed": self.executed,
            "result_judged": self.judged,
            "orders": list(ORDERS) if self.executed else [],
            "findings": self.findings_to_dicts(),
            "notes": list(self.notes),
        }


@dataclass
class _Op:
    """A node as the checker runs it (``rank``, position ``index`` in the global list)."""

    rank: int
    node: TraceNode
    kind: str  # "send", "recv", "comp", "gate" or "other"
    peer: int = -1
    tag: int = -1
    size: int = 0
    chunks: tuple[int, ...] | None = None
    parents: list[int] = field(default_factory=list)
    children: list[int] = field(default_factory=list)

    def where(self) -> str:
        return f"rank {self.rank} node {self.node.id} ({self.node.type_name})"

    def key(self) -> tuple[int, int, int, int]:
        """(source, destination, tag mod the limit, size): what the network matches on."""
        src, dst = (self.rank, self.peer) if self.kind == "send" else (self.peer, self.rank)
        return (src, dst, self.tag % TAG_LIMIT, self.size)


def trace_files(prefix: str | Path) -> list[Path]:
    """``PREFIX.0.et``, ``PREFIX.1.et``, ... while they exist.

    Raises
    ------
    FileFormatError
        No ``PREFIX.0.et``.
    """
    base = str(path_argument(prefix, "prefix"))
    files: list[Path] = []
    while Path(f"{base}.{len(files)}.et").is_file():
        files.append(Path(f"{base}.{len(files)}.et"))
    if not files:
        raise FileFormatError(f"no trace {base}.0.et: give the PREFIX of PREFIX.<rank>.et files")
    return files


def read_traces(prefix: str | Path) -> list[tuple[str, bytes]]:
    """``(file name, bytes)`` of every rank's trace of ``prefix``, rank order."""
    result = []
    for path in trace_files(prefix):
        result.append((str(path), read_file(path)))
    return result


def verify_prefix(prefix: str | Path) -> EtReport:
    """:func:`verify_traces` of the files ``PREFIX.<rank>.et``."""
    report = verify_traces(read_traces(prefix))
    report.source = str(prefix)
    return report


def verify_traces(traces: list[tuple[str, bytes]]) -> EtReport:
    """Decode, match and execute one trace per rank (``(name, bytes)``, rank order)."""
    report = EtReport(traces[0][0] if traces else "", len(traces), None, 0, 0, 0)
    decoded: list[tuple[Metadata, list[TraceNode]]] = []
    for name, data in traces:
        try:
            decoded.append(decode_trace(data, name))
        except FileFormatError as err:
            report.findings.append(Finding("format", str(err)))
    if report.findings:
        return report
    report.decoded = decoded
    spec = _spec(decoded, report)
    ops = _ops(decoded, traces, spec, report)
    report.nodes = len(ops)
    sends = [op for op in ops if op.kind == "send"]
    report.transfers = len(sends)
    report.bytes_sent = sum(op.size for op in sends)
    if not any(f.kind in ("node", "dependency", "metadata") for f in report.findings):
        _check_order(ops, report)
    if not report.findings:
        report.executed = True
        outcomes = [_execute(ops, spec, order, report) for order in ORDERS]
        if spec is not None and not report.findings:
            report.judged = True
            if any(outcome != outcomes[0] for outcome in outcomes[1:]):
                report.findings.append(
                    Finding("race", "the ranks end with different data in different orders")
                )
            report.findings += _judge(spec, outcomes[0])
        elif spec is None:
            report.notes.append(
                "no optcoll chunk labels: structure, matching and deadlock checked, the data "
                "each rank ends with not judged"
            )
    report.findings = capped(report.findings)
    return report


@dataclass(frozen=True)
class _Spec:
    """The collective the labels describe."""

    collective: str
    ranks: int
    chunks: int
    size: int
    root: int | None

    def chunk_count(self) -> int:
        n, k = self.ranks, self.chunks
        return {"broadcast": k, "reduce": k, "alltoall": n * n * k}.get(self.collective, n * k)

    def chunk_bytes(self, chunk: int) -> int:
        """Bytes of ``chunk``: the message cut into equal-as-can-be blocks, blocks into chunks."""
        n, k, m = self.ranks, self.chunks, self.size
        block, j = divmod(chunk, k)
        if self.collective in ("broadcast", "reduce"):
            whole = m
        else:
            part = block % n if self.collective == "alltoall" else block
            whole = m * (part + 1) // n - m * part // n
        return whole * (j + 1) // k - whole * j // k

    def initial(self, rank: int) -> dict[int, tuple[int, ...]]:
        """What ``rank`` holds at the start: chunk -> contributions per rank."""
        n, k = self.ranks, self.chunks
        own = tuple(int(i == rank) for i in range(n))
        coll = self.collective
        if coll == "allgather":
            chunks = range(rank * k, rank * k + k)
        elif coll in ("reduce_scatter", "allreduce"):
            chunks = range(n * k)
        elif coll == "broadcast":
            chunks = range(k) if rank == self.root else range(0)
        elif coll == "reduce":
            chunks = range(k)
        else:
            chunks = range(rank * n * k, rank * n * k + n * k)
        return dict.fromkeys(chunks, own)

    def expected(self, rank: int) -> dict[int, tuple[int, ...]]:
        """What ``rank`` must hold at the end (at least)."""
        n, k = self.ranks, self.chunks
        every = (1,) * n
        coll = self.collective
        if coll == "allgather":
            return {c: tuple(int(i == c // k) for i in range(n)) for c in range(n * k)}
        if coll == "reduce_scatter":
            return dict.fromkeys(range(rank * k, rank * k + k), every)
        if coll == "allreduce":
            return dict.fromkeys(range(n * k), every)
        if coll == "broadcast":
            return dict.fromkeys(range(k), tuple(int(i == self.root) for i in range(n)))
        if coll == "reduce":
            return dict.fromkeys(range(k), every) if rank == self.root else {}
        return {
            (s * n + rank) * k + j: tuple(int(i == s) for i in range(n))
            for s in range(n)
            for j in range(k)
        }


def _integer(meta: Metadata, name: str) -> int | None:
    attr = meta.get(name)
    return attr.value if attr is not None and attr.integer else None


def _spec(decoded: list[tuple[Metadata, list[TraceNode]]], report: EtReport) -> _Spec | None:
    """The labelled collective of the metadata (every rank's must agree), or None."""
    specs: list[_Spec | None] = []
    for rank, (meta, _) in enumerate(decoded):
        coll = meta.get("collective")
        report.collective = report.collective or (coll.value if coll else None)
        ranks, chunks, size = (
            _integer(meta, f"optcoll_{name}") for name in ("ranks", "chunks", "bytes")
        )
        if ranks is None or chunks is None or size is None or coll is None:
            specs.append(None)
            continue
        root = _integer(meta, "optcoll_root")
        own = _integer(meta, "optcoll_rank")
        where = f"rank {rank}: GlobalMetadata"
        if coll.value not in _COLLECTIVES:
            report.findings.append(
                Finding("metadata", f"{where}: unknown collective {coll.value!r}")
            )
        elif ranks != len(decoded):
            report.findings.append(
                Finding(
                    "metadata", f"{where} says {ranks} ranks, but there are {len(decoded)} files"
                )
            )
        elif own is not None and own != rank:
            report.findings.append(Finding("metadata", f"{where} says optcoll_rank {own}"))
        elif chunks < 1 or size < 1:
            report.findings.append(Finding("metadata", f"{where}: chunks and bytes must be >= 1"))
        elif coll.value in ("broadcast", "reduce") and (root is None or not 0 <= root < ranks):
            report.findings.append(Finding("metadata", f"{where}: no valid optcoll_root"))
        specs.append(_Spec(coll.value, ranks, chunks, size, root))
    if specs and all(s is not None for s in specs):
        if any(s != specs[0] for s in specs):
            report.findings.append(Finding("metadata", "the ranks' GlobalMetadata disagree"))
            return None
        return specs[0]
    return None


def _ops(
    decoded: list[tuple[Metadata, list[TraceNode]]],
    traces: list[tuple[str, bytes]],
    spec: _Spec | None,
    report: EtReport,
) -> list[_Op]:
    """Every node as an :class:`_Op`, with its parents; node-level findings."""
    found = report.findings
    n = len(decoded)
    ops: list[_Op] = []
    for rank, (_, nodes) in enumerate(decoded):
        if not nodes:
            found.append(Finding("node", f"rank {rank} ({traces[rank][0]}): no node to run"))
        index: dict[int, int] = {}
        first = len(ops)
        for node in nodes:
            kind = {_SEND: "send", _RECV: "recv", _COMP: "comp"}.get(node.type, "other")
            if kind == "comp" and node.get("optcoll_gate") is not None:
                kind = "gate"  # optcoll's order gate: a COMP_NODE that moves no data
            op = _Op(rank, node, kind)
            if node.id in index:
                found.append(Finding("node", f"{op.where()}: a second node with this id"))
            index[node.id] = len(ops)
            ops.append(op)
            if op.kind == "other":
                found.append(
                    Finding(
                        "node",
                        f"{op.where()}: ASTRA-sim's custom collectives run only "
                        "COMM_SEND_NODE, COMM_RECV_NODE and COMP_NODE",
                    )  # fmt: skip
                )
                continue
            _read_attributes(op, n, spec, found)
        for op in ops[first:]:
            for dep in (*op.node.data_deps, *op.node.ctrl_deps):
                if dep not in index:
                    found.append(Finding("dependency", f"{op.where()} depends on node {dep}, "
                                         "which the file does not hold"))  # fmt: skip
                elif index[dep] not in op.parents:
                    op.parents.append(index[dep])
    for i, op in enumerate(ops):
        for p in op.parents:
            ops[p].children.append(i)
    return ops


def _read_attributes(op: _Op, n: int, spec: _Spec | None, found: list[Finding]) -> None:
    node = op.node
    if op.kind == "gate":
        return
    if spec is not None:
        op.chunks = _labels(node, spec.chunk_count())
        if op.chunks is None:
            found.append(Finding("node", f"{op.where()}: no valid optcoll_chunk label"))
    if op.kind == "comp":
        return
    names = ("comm_dst", "comm_size", "comm_tag") if op.kind == "send" else ("comm_src",)
    names = names if op.kind == "send" else ("comm_src", "comm_size", "comm_tag")
    values = {}
    for name in names:
        attr = node.get(name)
        if attr is None or not attr.integer:
            found.append(Finding("node", f"{op.where()}: {name} missing or not an integer"))
            return
        values[name] = attr.value
    for name, kind in _FEEDER_KINDS.items():
        attr = node.get(name)
        if attr is not None and attr.kind != kind:
            found.append(
                Finding(
                    "node",
                    f"{op.where()}: {name} is {attr.kind}; Chakra's ET feeder reads only "
                    f"{kind} and would see 0",
                )  # fmt: skip
            )
    op.peer = values["comm_dst" if op.kind == "send" else "comm_src"]
    op.size, op.tag = values["comm_size"], values["comm_tag"]
    own = node.get("comm_src" if op.kind == "send" else "comm_dst")
    if own is not None and (not own.integer or own.value != op.rank):
        found.append(Finding("node", f"{op.where()}: {own.name} {own.value} is not its own rank"))
    if not 0 <= op.peer < n or op.peer == op.rank:
        found.append(
            Finding("node", f"{op.where()}: peer rank {op.peer} is not another of the {n} ranks")
        )
    if not 0 <= op.tag < TAG_LIMIT:
        found.append(Finding("node", f"{op.where()}: comm_tag {op.tag} outside 0..{TAG_LIMIT - 1}"))
    if op.size < 1:
        found.append(Finding("node", f"{op.where()}: comm_size {op.size} (must be >= 1)"))
    elif spec is not None and op.chunks is not None:
        expected = sum(spec.chunk_bytes(c) for c in op.chunks)
        if op.size != expected:
            found.append(
                Finding(
                    "node",
                    f"{op.where()}: comm_size {op.size} but chunk {_named(op.chunks)} has "
                    f"{expected} bytes",
                )  # fmt: skip
            )


def _labels(node: TraceNode, count: int) -> tuple[int, ...] | None:
    """The chunks a node's labels name (``optcoll_chunk_list``, a JSON list, else
    ``optcoll_chunk``), or None if they are missing, malformed or out of ``0 .. count - 1``."""
    listed = node.get("optcoll_chunk_list")
    if listed is not None:
        try:
            chunks = json.loads(listed.value) if listed.kind == "string" else None
        except ValueError:
            return None
        if not isinstance(chunks, list) or not chunks:
            return None
        values = tuple(chunks)
    else:
        chunk = node.get("optcoll_chunk")
        if chunk is None or not chunk.integer:
            return None
        values = (chunk.value,)
    valid = all(type(c) is int and 0 <= c < count for c in values)
    return values if valid and len(set(values)) == len(values) else None


def _named(chunks: tuple[int, ...]) -> str:
    """``3`` for one chunk, ``[3, 5]`` for several."""
    return str(chunks[0]) if len(chunks) == 1 else str(list(chunks))


def _check_order(ops: list[_Op], report: EtReport) -> None:
    """Dependency cycles in a rank; sends (receives) of one key that nothing orders."""
    position = _topological(ops, report)
    if position is None:
        return
    groups: dict[tuple[str, tuple[int, ...]], list[int]] = defaultdict(list)
    for i, op in enumerate(ops):
        if op.kind in ("send", "recv"):
            groups[(op.kind, op.key())].append(i)
    for (kind, key), members in groups.items():
        members.sort(key=position.__getitem__)
        for a, b in zip(members, members[1:], strict=False):
            if not _reaches(ops, a, b, position):
                report.findings.append(
                    Finding(
                        "match",
                        f"{ops[a].where()} and {ops[b].where()}: two {kind}s of "
                        f"source {key[0]}, destination {key[1]}, tag {key[2]}, size {key[3]} "
                        "that no dependency orders: which meets which depends on timing",
                    )  # fmt: skip
                )


def _topological(ops: list[_Op], report: EtReport) -> dict[int, int] | None:
    """Position of every op in one topological order, or None (a cycle, reported)."""
    waiting = [len(op.parents) for op in ops]
    queue = deque(i for i, w in enumerate(waiting) if w == 0)
    position: dict[int, int] = {}
    while queue:
        i = queue.popleft()
        position[i] = len(position)
        for c in ops[i].children:
            waiting[c] -= 1
            if waiting[c] == 0:
                queue.append(c)
    if len(position) == len(ops):
        return position
    stuck = [i for i in range(len(ops)) if i not in position]
    cycle = _cycle(ops, set(stuck))
    report.findings.append(
        Finding(
            "dependency",
            f"a dependency cycle on rank {ops[cycle[0]].rank}: nodes "
            + " -> ".join(str(ops[i].node.id) for i in cycle),
        )  # fmt: skip
    )
    return None


def _cycle(ops: list[_Op], stuck: set[int]) -> list[int]:
    """One cycle among ``stuck`` (each has a stuck parent): walk parents until one repeats."""
    node = min(stuck)
    seen: dict[int, int] = {}
    path: list[int] = []
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(p for p in ops[node].parents if p in stuck)
    return list(reversed(path[seen[node] :]))


def _reaches(ops: list[_Op], a: int, b: int, position: dict[int, int]) -> bool:
    """Whether a path of dependencies leads from op ``a`` to op ``b``."""
    limit = position[b]
    stack, seen = [a], {a}
    while stack:
        i = stack.pop()
        if i == b:
            return True
        for c in ops[i].children:
            if c not in seen and position[c] <= limit:
                seen.add(c)
                stack.append(c)
    return False


Outcome = tuple[tuple[tuple[int, tuple[int, ...]], ...], ...]


def _execute(ops: list[_Op], spec: _Spec | None, order: str, report: EtReport) -> Outcome:
    """Run every op once its parents have finished, picking ready ops in ``order``; returns
    what each rank holds (chunk -> contributions) when labels are known."""
    rng = random.Random(order.count("1") + 2 * order.count("2"))
    ready: list[int] = [i for i, op in enumerate(ops) if not op.parents]
    waiting = [len(op.parents) for op in ops]
    messages: dict[tuple[int, ...], deque[tuple[int, Any]]] = defaultdict(deque)
    posted: dict[tuple[int, ...], deque[int]] = defaultdict(deque)
    held = [dict(spec.initial(r)) if spec else {} for r in range(report.ranks)]
    incoming: dict[int, Any] = {}
    reduced = {p for op in ops if op.kind == "comp" for p in op.parents if ops[p].kind == "recv"}
    done = 0
    found = report.findings

    def finish(i: int) -> None:
        nonlocal done
        done += 1
        for c in ops[i].children:
            waiting[c] -= 1
            if waiting[c] == 0:
                ready.append(c)

    def arrive(i: int, sender: int, value: Any) -> None:
        op = ops[i]
        if spec is not None and value is not None:
            if ops[sender].chunks != op.chunks:
                found.append(Finding("match", f"{op.where()} receives chunk "
                                     f"{_named(ops[sender].chunks or ())} from "
                                     f"{ops[sender].where()}, labelled "
                                     f"{_named(op.chunks or ())}"))  # fmt: skip
            elif i in reduced:
                incoming[i] = value
            else:
                for chunk, part in zip(op.chunks or (), value, strict=True):
                    held[op.rank][chunk] = part
        finish(i)

    while ready:
        if order.startswith("first"):
            i = ready.pop(0)
        elif order.startswith("last"):
            i = ready.pop()
        else:
            i = ready.pop(rng.randrange(len(ready)))
        op = ops[i]
        if op.kind == "send":
            value = None
            if spec is not None:
                parts = [held[op.rank].get(c) for c in op.chunks or ()]
                value = None if any(p is None for p in parts) else tuple(parts)
                if value is None:
                    found.append(Finding("result", f"{op.where()} sends chunk "
                                         f"{_named(op.chunks or ())}, which the rank does not "
                                         "hold yet"))  # fmt: skip
            key = op.key()
            if posted[key]:
                arrive(posted[key].popleft(), i, value)
            else:
                messages[key].append((i, value))
            finish(i)
        elif op.kind == "recv":
            key = op.key()
            if messages[key]:
                sender, value = messages[key].popleft()
                arrive(i, sender, value)
            else:
                posted[key].append(i)
        else:
            if spec is not None and op.kind == "comp":
                _reduce(ops, i, held, incoming, found)
            finish(i)
    if done < len(ops):
        _stuck(ops, posted, messages, order, len(ops) - done, found)
    return tuple(tuple(sorted(h.items())) for h in held)


def _reduce(
    ops: list[_Op],
    i: int,
    held: list[dict[int, Any]],
    incoming: dict[int, Any],
    found: list[Finding],
) -> None:
    """A COMP node adds the data of the receives it depends on (same chunks) into its chunks."""
    op = ops[i]
    chunks = op.chunks or ()
    sources = [p for p in op.parents if ops[p].kind == "recv" and ops[p].chunks == op.chunks]
    if not sources:
        found.append(Finding("result", f"{op.where()} reduces chunk {_named(chunks)} but "
                             "depends on no receive of it"))  # fmt: skip
        return
    totals = [held[op.rank].get(c) for c in chunks]
    if any(total is None for total in totals):
        found.append(Finding("result", f"{op.where()} reduces into chunk {_named(chunks)}, "
                             "which the rank does not hold"))  # fmt: skip
        return
    for p in sources:
        value = incoming.pop(p, None)
        if value is None:
            found.append(Finding("result", f"{op.where()}: the data of {ops[p].where()} was "
                                 "already reduced"))  # fmt: skip
            return
        totals = [
            tuple(a + b for a, b in zip(total, part, strict=True))  # type: ignore[arg-type]
            for total, part in zip(totals, value, strict=True)
        ]
    for chunk, total in zip(chunks, totals, strict=True):
        held[op.rank][chunk] = total


def _stuck(
    ops: list[_Op],
    posted: dict[tuple[int, ...], deque[int]],
    messages: dict[tuple[int, ...], deque[tuple[int, Any]]],
    order: str,
    left: int,
    found: list[Finding],
) -> None:
    receives = [i for queue in posted.values() for i in queue]
    sends = [i for queue in messages.values() for i, _ in queue]
    detail = []
    if receives:
        op = ops[receives[0]]
        src, dst, tag, size = op.key()
        detail.append(
            f"{len(receives)} receive(s) wait for a send that never comes, e.g. {op.where()} "
            f"(source {src}, tag {tag}, size {size})"
        )
    if sends:
        op = ops[sends[0]]
        detail.append(f"{len(sends)} send(s) nobody receives, e.g. {op.where()} to rank {op.peer}")
    message = f"{order}: {left} of {len(ops)} nodes never run"
    finding = Finding("deadlock", message + ("; " + "; ".join(detail) if detail else ""))
    if not any(f.kind == "deadlock" for f in found):
        found.append(finding)


def _judge(spec: _Spec, outcome: Outcome) -> list[Finding]:
    """Findings where a rank does not end with what the collective promises."""
    found = []
    for rank, held in enumerate(outcome):
        have = dict(held)
        for chunk, value in spec.expected(rank).items():
            got = have.get(chunk)
            if got is None:
                found.append(Finding("result", f"rank {rank} ends without chunk {chunk}"))
            elif got != value:
                found.append(
                    Finding(
                        "result",
                        f"rank {rank} ends with chunk {chunk} holding "
                        f"{_contributions(got)}; expected {_contributions(value)}",
                    )  # fmt: skip
                )
    return found


def _contributions(value: tuple[int, ...]) -> str:
    """``rank 0 x1, rank 2 x2``: whose inputs a chunk holds, how often (none: ``nothing``)."""
    return ", ".join(f"rank {r} x{c}" for r, c in enumerate(value) if c) or "nothing"


#: The names before the checkers shared one verb (``verify_*``), for callers outside
#: the package; out of ``__all__``.
check_traces = verify_traces
check_prefix = verify_prefix
