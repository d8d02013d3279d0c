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

The plan. Each tree of a schedule carries a range of its root's chunks; every range is cut
into *pieces* (op granularity; the more, the deeper the pipeline) and every piece is a
*unit* run by one thread block per GPU, the same block id on every GPU (units are packed
into blocks so that no block exceeds 64 ops). For one piece, a node of a reducing tree
waits for its children's partial sums (put into its scratch), sums them with its own
input (``re``) and puts the sum into its parent's scratch; a node of a broadcasting tree
waits for its parent's put and puts the piece into its children's output. Every put is
followed by ``nop`` and ``signal`` (memory channels) or is a ``pws`` (port channels); every
wait by a ``nop``. A block runs its steps ordered by (piece, phase, level, tree) where the
level is the depth when broadcasting and minus the depth when reducing, so every step
waits only for steps of smaller keys and the signals of a channel are waited for in the
order they are sent: the plan cannot deadlock. All-to-all routes are chains (relays keep
the piece in scratch). Every written region is written once, so no region is reused.

Default choices: GPUs in one *box* talk over memory channels, others over port
channels (``boxes``; the CLI puts ``bX.*`` nodes of the built-in DGX/MI250 families in box
``bX`` and every other node in a box of its own); protocol ``Simple``; up to 64 thread
blocks; pieces: as many as fit (at most 8 per tree); ``max_message_size`` unlimited.
Not written: LL (packet) plans and NVLS (switch channel) reductions.

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
from collections.abc import Mapping
from dataclasses import dataclass, field

from optcoll.core.schedule import Schedule, Tree
from optcoll.exceptions import ExportError

__all__ = ["MscclppPlan", "mscclpp_plan", "mscclpp_placements", "COLLECTIVE_NAMES"]

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

Loc = tuple[str, int, int]  # (buffer, first chunk, chunks)


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

    @property
    def text(self) -> str:
        return json.dumps(self.document, indent=1) + "\n"


@dataclass
class _Step:
    """One node's part of one unit, before numbering: ops with symbolic references."""

    rank: int
    group: int
    key: tuple
    waits: list[int] = field(default_factory=list)  # peers
    reduces: list[tuple[Loc, list[Loc]]] = field(default_factory=list)
    copies: list[tuple[Loc, Loc]] = field(default_factory=list)
    puts: list[tuple[int, Loc, Loc]] = field(default_factory=list)  # peer, src, remote dst


def mscclpp_plan(
    schedule: Schedule,
    *,
    placement: str = "outofplace",
    name: str | None = None,
    boxes: Mapping[str, str] | None = None,
    max_message_size: int | None = None,
    min_message_size: int = 0,
    pieces: int | None = None,
    allgather: Schedule | None = None,
) -> MscclppPlan:
    """The MSCCL++ plan of ``schedule`` (deterministic).

    Parameters
    ----------
    schedule : Schedule
        A tree schedule (trees in broadcast direction) or an all-to-all schedule.
    placement : str
        ``outofplace`` or ``inplace`` (see :func:`mscclpp_placements`).
    boxes : mapping, optional
        Compute node -> box; pairs in one box use memory channels, others port
        channels. Default: every node in a box of its own (port channels everywhere).
    pieces : int, optional
        Pieces per tree (default: the most up to 8 that keep every thread block within 64
        ops and every GPU within 64 thread blocks).
    allgather : Schedule, optional
        With a reduce-scatter ``schedule``: the allgather whose trees broadcast, making
        an allreduce of two tree sets.

    Raises
    ------
    ExportError
        Malformed schedule, a placement that is not correct, or limits no piece count
        meets.
    """
    coll = "allreduce" if allgather is not None else schedule.collective
    if coll not in COLLECTIVE_NAMES:
        raise ExportError(
            f"collective {coll!r} has no MSCCL++ plan; valid: {', '.join(COLLECTIVE_NAMES)}"
        )
    if placement not in mscclpp_placements(coll):
        raise ExportError(
            f"a {coll} plan is correct only {', '.join(mscclpp_placements(coll))}; "
            f"got placement {placement!r}"
        )
    if pieces is not None and pieces < 1:
        raise ExportError(f"pieces must be >= 1, got {pieces}")
    nodes = schedule.compute_nodes
    box = {v: (boxes or {}).get(v, f"\0{v}") for v in nodes}
    segments = _segments(schedule, allgather)
    tries = [pieces] if pieces else list(range(MAX_PIECES, 0, -1))
    last_error = ""
    for count in tries:
        steps, chunks = _steps(schedule, coll, segments, count)
        groups = _pack(steps, len(nodes))
        if groups is None:
            last_error = f"with {count} piece(s) per tree a unit needs more than {MAX_OPS} ops"
            continue
        if max(groups.values(), default=0) + 1 > MAX_THREADBLOCKS:
            last_error = (
                f"with {count} piece(s) per tree a GPU needs "
                f"{max(groups.values()) + 1} thread blocks (limit {MAX_THREADBLOCKS})"
            )
            continue
        try:
            document = _render(
                schedule,
                coll,
                placement,
                name,
                steps,
                groups,
                chunks,
                box,
                min_message_size,
                max_message_size,
            )
        except _Limit as err:
            last_error = str(err)
            continue
        blocks = max(len(g["threadblocks"]) for g in document["gpus"])
        most = max(len(tb["ops"]) for g in document["gpus"] for tb in g["threadblocks"])
        pairs = {
            (a, b)
            for a in range(len(nodes))
            for b in range(a + 1, len(nodes))
            if any(_uses(st, a, b) for st in steps)
        }
        memory = sum(1 for a, b in pairs if box[nodes[a]] == box[nodes[b]])
        return MscclppPlan(document, blocks, most, count, memory, len(pairs) - memory)
    raise ExportError(
        f"no MSCCL++ plan fits the executor's limits ({last_error}); use a "
        "smaller -k or fewer --pieces"
    )


def _uses(step: _Step, a: int, b: int) -> bool:
    peers = set(step.waits) | {p for p, _, _ in step.puts}
    return (step.rank == a and b in peers) or (step.rank == b and a in peers)


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
    roots = [schedule.root] if coll in ("broadcast", "reduce") else list(schedule.compute_nodes)
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


def _ranges(trees: tuple[Tree, ...] | None, root: str) -> list[tuple[Tree, int, int]]:
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
    schedule: Schedule, coll: str, segments: list[Segment], count: int
) -> tuple[list[_Step], dict[str, int]]:
    """Every node's step of every unit, and the buffer chunks (scratch per busiest GPU)."""
    nodes = schedule.compute_nodes
    ranks = {v: i for i, v in enumerate(nodes)}
    n, k = len(nodes), schedule.k
    scratch = [0] * n
    steps: list[_Step] = []

    def slot(rank: int, size: int) -> Loc:
        scratch[rank] += size
        return ("s", scratch[rank] - size, size)

    per_root = coll in ("allgather", "reduce_scatter", "allreduce")
    for seg, root, first, chunks, up, down, chain, _ in segments:
        parts = min(count, chunks)
        bounds = [first + chunks * p // parts for p in range(parts + 1)]
        r = ranks[root]
        for p in range(parts):
            lo, size = bounds[p], bounds[p + 1] - bounds[p]
            unit = len(steps)
            mine: dict[int, _Step] = {}

            def step(rank: int, phase: int, level: int, key: tuple = (p, seg, unit)) -> _Step:
                made = _Step(rank, -1, (key[0], phase, level, key[1], key[2]))
                steps.append(made)
                return made

            if chain is not None:  # all-to-all: source -> relays -> sink
                src, dst = chain[0], chain[-1]
                where: Loc = ("i", dst * k + lo, size)
                for h in range(len(chain) - 1):
                    a, b = chain[h], chain[h + 1]
                    into = ("o", src * k + lo, size) if b == dst else slot(b, size)
                    sender = mine.get(a) or step(a, 0, h)
                    sender.puts.append((b, where, into))
                    receiver = step(b, 0, h + 1)
                    receiver.waits.append(a)
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
                    own = source
                    if children[v]:
                        inputs = [source]
                        for c in children[v]:
                            box = slot(v, size)
                            s.waits.append(c)
                            inputs.append(box)
                            partial[c] = box
                        own = final if v == r else slot(v, size)
                        s.reduces.append((own, inputs))
                    mine[v] = s
                    if v != r:
                        s.rank = v
                        s.puts.append((-1, own, ("?", v, 0)))  # parent's box, filled below
                for v, s in list(mine.items()):
                    for i, (peer, own, _marker) in enumerate(s.puts):
                        if peer == -1:
                            parent = next(a for a, cs in children.items() if v in cs)
                            s.puts[i] = (parent, own, partial[v])
            if down is not None:
                children, depth = _shape(down, ranks)
                for v in sorted(depth, key=lambda x: (depth[x], x)):
                    s = step(v, 1, depth[v])
                    held = final
                    if v == r and up is None:
                        held = source
                        if coll in ("allgather", "broadcast"):
                            s.copies.append((final, source))
                    for c in children[v]:
                        s.puts.append((c, held, final))
                    if v != r:
                        parent = next(a for a, cs in children.items() if v in cs)
                        s.waits.append(parent)
    if coll == "alltoall":
        for rank in range(n):  # the own piece, out of place
            own = _Step(rank, -1, (-1, 0, 0, -1, -1))
            own.copies.append((("o", rank * k, k), ("i", rank * k, k)))
            steps.append(own)
    chunks = {
        "allgather": {"i": k, "o": n * k},
        "reduce_scatter": {"i": n * k, "o": k},
        "allreduce": {"i": n * k, "o": n * k},
        "broadcast": {"i": k, "o": k},
        "reduce": {"i": k, "o": k},
        "alltoall": {"i": n * k, "o": n * k},
    }[coll]
    chunks["s"] = max(scratch)
    chunks["scratch"] = scratch  # type: ignore[assignment]
    return steps, chunks


def _op_count(step: _Step, memory: bool = True) -> int:
    """Ops of a step (at most; memory channels cost a put, a nop and a signal)."""
    count = 0
    if step.waits:
        count += 2 * math.ceil(len(step.waits) / MAX_PER_OP)
    for _, inputs in step.reduces:
        count += 2 * math.ceil((len(inputs) - 1) / MAX_PER_OP)
    count += len(step.copies)
    if step.puts:
        count += 3 * math.ceil(len(step.puts) / MAX_PER_OP)
    return count


def _pack(steps: list[_Step], n: int) -> dict[int, int] | None:
    """Thread block of every unit (the key's last field): the tree (segment) ``s`` runs in
    block ``s mod B``, ``B`` the segments up to 64, so trees run side by side; None if a
    block of some GPU would exceed 64 ops."""
    by_unit: dict[int, list[_Step]] = defaultdict(list)
    for s in steps:
        by_unit[s.key[-1]].append(s)
    segments = {s.key[3] for s in steps if s.key[3] >= 0}
    width = max(1, min(MAX_THREADBLOCKS, len(segments)))
    load: dict[tuple[int, int], int] = defaultdict(int)
    groups: dict[int, int] = {}
    for unit, members in sorted(by_unit.items()):
        group = max(members[0].key[3], 0) % width
        for s in members:
            load[(group, s.rank)] += _op_count(s)
            s.group = group
        groups[unit] = group
    if any(v > MAX_OPS for v in load.values()):
        return None
    return groups


def _render(
    schedule: Schedule,
    coll: str,
    placement: str,
    name: str | None,
    steps: list[_Step],
    groups: dict[int, int],
    chunks: dict,
    box: dict[str, str],
    low: int,
    high: int | None,
) -> dict:
    nodes = schedule.compute_nodes
    n = len(nodes)

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
        threadblocks = []
        for tb_id, g in enumerate(sorted(blocks)):
            tb = _Block(rank, g, channel_index, ctype, remote)
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
                "semaphores": [],
            }
        )
    root = f" root={schedule.root}" if schedule.root is not None else ""
    return {
        "name": name or f"optcoll {coll} {schedule.topology} k={schedule.k}{root} {placement}",
        "collective": COLLECTIVE_NAMES[coll],
        "protocol": "Simple",
        "inplace": placement == "inplace",
        "reuse_resources": False,
        "num_threads_per_block": 1024,
        "use_double_scratch_buffer": False,
        "buffer_alignment": 16,
        "min_message_size": low,
        "max_message_size": 2**64 - 1 if high is None else high,
        "gpus": gpus,
    }


class _Block:
    """The ops of one thread block on one GPU."""

    def __init__(self, rank: int, group: int, channel_index: dict, ctype, remote: list) -> None:
        self.rank, self.group = rank, group
        self.channel_index, self.ctype, self.remote = channel_index, ctype, remote
        self.ops: list[dict] = []
        self.channels: dict[str, list[int]] = {"memory": [], "port": []}
        self.buffers: dict[str, list[int]] = {"memory": [], "port": []}

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
        by_type: dict[str, list[int]] = defaultdict(list)
        for peer in step.waits:
            kind, index = self.channel(peer)
            by_type[kind].append(index)
        for kind in ("memory", "port"):
            for part in _chunked(by_type[kind]):
                self.ops.append({"name": "wait", "channel_type": kind, "channel_ids": part})
        if step.waits:
            self.ops.append({"name": "nop"})
        for dst, src in step.copies:
            self.ops.append({"name": "copy", "src_buff": [_local(src)], "dst_buff": [_local(dst)]})
        if step.copies:
            self.ops.append({"name": "nop"})
        for dst, inputs in step.reduces:
            first = inputs[0]
            rest = inputs[1:]
            for i in range(0, len(rest), MAX_PER_OP):
                self.ops.append(
                    {
                        "name": "re",
                        "src_buff": [_local(first)] + [_local(x) for x in rest[i : i + MAX_PER_OP]],
                        "dst_buff": [_local(dst)],
                    }
                )
                self.ops.append({"name": "nop"})
                first = dst
        puts: dict[str, list[tuple[int, int, tuple, tuple]]] = defaultdict(list)
        for peer, src, dst in step.puts:
            kind, index = self.channel(peer)
            bid = self.buffer(peer, dst[0], kind)
            puts[kind].append((index, bid, src, dst))
        for kind in ("memory", "port"):
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
        if len(self.ops) > MAX_OPS:
            raise _Limit(f"a thread block needs {len(self.ops)} ops")
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


def _chunked(items: list[int]) -> list[list[int]]:
    return [items[i : i + MAX_PER_OP] for i in range(0, len(items), MAX_PER_OP)]


def _local(loc: Loc) -> dict:
    return {"type": loc[0], "index": loc[1], "size": loc[2]}
