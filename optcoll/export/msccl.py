"""MSCCL algorithm XML from tree schedules.

MSCCL (and RCCL's MSCCL) load a collective algorithm from an XML file::

    <algo name proto nchannels nchunksperloop ngpus coll inplace outofplace minBytes maxBytes>
      <gpu id i_chunks o_chunks s_chunks>
        <tb id send recv chan>
          <step s type srcbuf srcoff dstbuf dstoff cnt depid deps hasdep/>

Each GPU's input (``i``), output (``o``) and scratch (``s``) buffers are cut
into chunks; a thread block (``tb``) runs its steps in order, talks to at most
one send peer and one receive peer on one channel, and a step may wait for one
step of another thread block of the same GPU (``depid``/``deps``; ``hasdep``
marks steps that others wait for). Sends on a connection (GPU, peer, channel)
are matched in order with the receives of the peer's thread block for that
connection. Step types used here: ``s`` (send), ``r`` (receive), ``rrc``
(receive, reduce with a local chunk, store) and ``cpy`` (local copy).

Layout, with ``k`` chunks per shard and ``N`` GPUs (rank = position in the
schedule's ``compute_nodes``):

* allgather: ``i_chunks = k``, ``o_chunks = N*k``; chunk ``j`` of rank ``r``'s
  shard lands at output offset ``r*k + j``;
* reduce_scatter: ``i_chunks = N*k``, ``o_chunks = k``, partial sums of non-root
  tree nodes in scratch (``s_chunks = N*k``);
* allreduce: ``i_chunks = o_chunks = N*k``; tree ``T`` rooted at ``r`` first
  reduces offsets ``r*k + j`` up toward ``r`` (``rrc`` steps chained through
  dependencies) and then broadcasts the result down;
* broadcast / reduce: ``i_chunks = o_chunks = k`` (reduce keeps partial sums in
  scratch, ``s_chunks = k``).

Each GPU has one thread block per (peer, direction, channel) - the sends to a
peer in one, the receives from it in another - plus one for local copies; with
``pair_peers`` (automatically when a GPU would exceed its thread block cap) the
sends to and receives from one peer share a thread block.

A tree carrying ``c`` chunks moves them as one step of ``cnt = c`` (split into
pieces of at most ``max_count`` chunks); pieces are dealt round-robin over the
channels. Every transfer gets a key (phase, level, tree, piece, sibling) and all
thread blocks list their steps in key order; each dependency points to a
strictly smaller key, so the steps cannot deadlock even when a send waits for
its receive (rendezvous).

``coll`` is written as the schedule's collective name (``reduce_scatter`` as in
msccl-tools; some MSCCL runtimes spell it ``reducescatter``: pass
``coll_name``).

Examples
--------
>>> from optcoll.schedule import Schedule, Tree, TreeEdge
>>> trees = (Tree("a", 1, (TreeEdge("a", "b", ("a", "sw", "b")),)),
...          Tree("b", 1, (TreeEdge("b", "a", ("b", "sw", "a")),)))
>>> xml = to_msccl_xml(Schedule("allgather", "pair", ("a", "b"), 1, trees))
>>> print(xml.splitlines()[1])
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field

from optcoll.exceptions import ExportError
from optcoll.schedule import Schedule, Tree

__all__ = ["MscclLimits", "to_msccl_xml"]

Location = tuple[str, int]

_SUPPORTED = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")
_REDUCING = ("reduce_scatter", "allreduce", "reduce")


@dataclass(frozen=True)
class MscclLimits:
    """Capacity limits of the MSCCL runtime the XML must respect.

    Defaults follow MSCCL's interpreter: at most 256 steps per thread block,
    ``cnt < 72`` per step, 32 send and 32 receive peers per channel, 32
    channels; ``max_threadblocks`` per GPU defaults to 108 (an A100's SM count).
    """

    max_threadblocks: int = 108
    max_channels: int = 32
    max_peers_per_channel: int = 32
    max_steps: int = 256
    max_count: int = 71


@dataclass(eq=False)
class _Step:
    """One step before numbering; ``tb`` is (kind, peer rank, channel)."""

    type: str
    src: Location
    dst: Location
    cnt: int
    key: tuple[int, ...]
    tb: tuple[str, int, int]
    dep: _Step | None = None
    index: int = -1
    tb_id: int = -1
    has_dependent: bool = field(default=False)


def to_msccl_xml(
    schedule: Schedule,
    *,
    channels: int = 1,
    limits: MscclLimits | None = None,
    name: str | None = None,
    proto: str = "Simple",
    min_bytes: int = 0,
    max_bytes: int = 0,
    coll_name: str | None = None,
    pair_peers: bool | None = None,
) -> str:
    """The MSCCL XML text of ``schedule`` (deterministic, byte for byte).

    Parameters
    ----------
    schedule : Schedule
        Allgather, reduce_scatter, allreduce, broadcast or reduce schedule; its
        trees are in broadcast direction (reducing phases run them reversed).
    channels : int
        Channels to spread tree pieces over (round-robin), at most
        ``limits.max_channels``.
    limits : MscclLimits, optional
        Runtime caps; exceeding one raises :class:`ExportError`.
    name, proto, min_bytes, max_bytes, coll_name
        Written to the ``<algo>`` element (``maxBytes = 0`` means no upper limit).
    pair_peers : bool, optional
        Put the sends to and the receives from one peer (on one channel) into one
        thread block (``send = recv = peer``): half the thread blocks, less
        concurrency. ``None`` (default) pairs only on GPUs that would otherwise
        exceed ``limits.max_threadblocks``.

    Raises
    ------
    ExportError
        The schedule needs more thread blocks, peers per channel or steps per
        thread block than ``limits`` allow (the message names the GPU and suggests
        fewer channels, more channels or a smaller k), or the collective is unknown.

    Examples
    --------
    >>> from optcoll.schedule import Schedule, Tree, TreeEdge
    >>> t = (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)), Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),)))
    >>> xml = to_msccl_xml(Schedule("allreduce", "pair", ("a", "b"), 1, t))
    >>> xml.count('type="rrc"'), xml.count('type="s"'), xml.count('type="r"')
    (2, 4, 2)
    """
    limits = limits or MscclLimits()
    if schedule.collective not in _SUPPORTED:
        raise ExportError(
            f"collective {schedule.collective!r} cannot be exported to MSCCL; "
            f"valid: {', '.join(_SUPPORTED)}"
        )
    if not 1 <= channels <= limits.max_channels:
        raise ExportError(f"channels must be between 1 and {limits.max_channels}, got {channels}")
    builder = _Builder(schedule, channels, limits.max_count)
    builder.build()
    tbs = _number(builder.steps, schedule, limits, pair_peers)
    return _render(schedule, builder, tbs, channels, name, proto, min_bytes, max_bytes, coll_name)


class _Builder:
    """Turns trees into per-GPU steps with keys and dependencies."""

    def __init__(self, schedule: Schedule, channels: int, max_count: int) -> None:
        self.schedule = schedule
        self.channels = channels
        self.max_count = max_count
        self.ranks = {node: i for i, node in enumerate(schedule.compute_nodes)}
        self.steps: dict[int, list[_Step]] = defaultdict(list)
        n, k = len(schedule.compute_nodes), schedule.k
        self.chunks = {
            "allgather": (k, n * k, 0),
            "reduce_scatter": (n * k, k, n * k),
            "allreduce": (n * k, n * k, 0),
            "broadcast": (k, k, 0),
            "reduce": (k, k, k),
        }[schedule.collective]

    def build(self) -> None:
        trees = self.schedule.trees
        shapes = [_shape(i, t, self.schedule.compute_nodes) for i, t in enumerate(trees)]
        _check_chunks(self.schedule)
        height = max((max(depth.values()) for _, depth in shapes), default=0)
        offsets: dict[str, int] = defaultdict(int)
        piece_number = 0
        for ti, tree in enumerate(trees):
            start = offsets[tree.root]
            offsets[tree.root] += tree.chunks
            for p, first in enumerate(range(start, start + tree.chunks, self.max_count)):
                cnt = min(self.max_count, start + tree.chunks - first)
                chan = piece_number % self.channels
                piece_number += 1
                self._piece(tree, shapes[ti], height, (ti, p), first, cnt, chan)

    # --- where a piece lives on each GPU -----------------------------------------

    def _slot(self, root: str, offset: int) -> int:
        if self.schedule.collective in ("broadcast", "reduce"):
            return offset
        return self.ranks[root] * self.schedule.k + offset

    def _source(self, root: str, offset: int) -> Location:
        if self.schedule.collective in ("allgather", "broadcast", "reduce"):
            return ("i", offset)
        return ("i", self._slot(root, offset))

    def _acc(self, v: str, root: str, offset: int) -> Location:
        coll = self.schedule.collective
        if coll == "allreduce":
            return ("o", self._slot(root, offset))
        if v == root:
            return ("o", offset)
        return ("s", self._slot(root, offset))

    def _out(self, root: str, offset: int) -> Location:
        return ("o", self._slot(root, offset))

    # --- one piece of one tree -------------------------------------------------

    def _piece(
        self,
        tree: Tree,
        shape: tuple[dict[str, list[str]], dict[str, int]],
        height: int,
        ident: tuple[int, int],
        offset: int,
        cnt: int,
        chan: int,
    ) -> None:
        children, depth = shape
        coll, root = self.schedule.collective, tree.root
        rank = self.ranks
        last_up: dict[str, _Step | None] = {}
        if coll in _REDUCING:
            for v in sorted(depth, key=lambda n: (-depth[n], rank[n])):
                prev: _Step | None = None
                for j, c in enumerate(children[v]):
                    key = (0, height - depth[c], *ident, j)
                    src = self._acc(v, root, offset) if prev else self._source(root, offset)
                    rrc = _Step(
                        "rrc",
                        src,
                        self._acc(v, root, offset),
                        cnt,
                        key,
                        ("recv", rank[c], chan),
                        prev,
                    )
                    own = self._acc(c, root, offset) if children[c] else self._source(root, offset)
                    send = _Step(
                        "s",
                        own,
                        self._acc(v, root, offset),
                        cnt,
                        key,
                        ("send", rank[v], chan),
                        last_up[c],
                    )
                    self.steps[rank[v]].append(rrc)
                    self.steps[rank[c]].append(send)
                    prev = rrc
                last_up[v] = prev
        if coll in ("allgather", "broadcast", "allreduce"):
            received: dict[str, _Step | None] = {root: last_up.get(root)}
            if coll != "allreduce":
                cpy = _Step(
                    "cpy",
                    self._source(root, offset),
                    self._out(root, offset),
                    cnt,
                    (1, 0, *ident, -1),
                    ("local", -1, 0),
                )
                self.steps[rank[root]].append(cpy)
            for v in sorted(depth, key=lambda n: (depth[n], rank[n])):
                own = self._out(root, offset)
                if v == root and coll != "allreduce":
                    own = self._source(root, offset)
                for j, c in enumerate(children[v]):
                    key = (1, depth[c], *ident, j)
                    out = self._out(root, offset)
                    recv = _Step("r", own, out, cnt, key, ("recv", rank[v], chan))
                    send = _Step("s", own, out, cnt, key, ("send", rank[c], chan), received[v])
                    self.steps[rank[c]].append(recv)
                    self.steps[rank[v]].append(send)
                    received[c] = recv


def _shape(
    index: int, tree: Tree, compute_nodes: tuple[str, ...]
) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Children lists (edge order) and depths of a tree; ExportError unless it is a
    spanning arborescence of the compute nodes."""
    where = f"tree {index} (root {tree.root!r})"
    children: dict[str, list[str]] = defaultdict(list)
    for edge in tree.edges:
        children[edge.src].append(edge.dst)
    depth = {tree.root: 0}
    frontier = [tree.root]
    while frontier:
        nxt = []
        for v in frontier:
            for c in children[v]:
                if c in depth:
                    raise ExportError(f"{where}: node {c!r} has two parents or lies on a cycle")
                depth[c] = depth[v] + 1
                nxt.append(c)
        frontier = nxt
    if set(depth) != set(compute_nodes) or len(tree.edges) != len(compute_nodes) - 1:
        missing = sorted(set(compute_nodes) - set(depth))
        extra = sorted(set(depth) - set(compute_nodes))
        raise ExportError(
            f"{where} is not a spanning arborescence of the compute nodes"
            + (f"; unreached: {', '.join(missing)}" if missing else "")
            + (f"; not compute nodes: {', '.join(extra)}" if extra else "")
        )
    return children, depth


def _check_chunks(schedule: Schedule) -> None:
    """Per root the chunks sum to k (broadcast/reduce: only the schedule's root has trees)."""
    totals: dict[str, int] = defaultdict(int)
    for tree in schedule.trees:
        totals[tree.root] += tree.chunks
    if schedule.collective in ("broadcast", "reduce"):
        if schedule.root is None:
            raise ExportError(f"the {schedule.collective} schedule names no root")
        expected = {schedule.root: schedule.k}
    else:
        expected = dict.fromkeys(schedule.compute_nodes, schedule.k)
    for root in sorted(set(totals) | set(expected), key=str):
        if totals.get(root, 0) != expected.get(root, 0):
            raise ExportError(
                f"root {root!r}: the chunks of its trees sum to {totals.get(root, 0)}, "
                f"expected {expected.get(root, 0)} (k = {schedule.k})"
            )


_KIND_ORDER = {"local": 0, "pair": 1, "send": 2, "recv": 3}
_DIRECTIONS = {"local": (), "pair": ("send", "recv"), "send": ("send",), "recv": ("recv",)}


def _blocks(steps: list[_Step], *, pair: bool) -> dict[tuple[str, int, int], list[_Step]]:
    """Thread blocks of one GPU: one per (direction, peer, channel), or with ``pair``
    one ``("pair", peer, channel)`` block wherever a peer is both sent to and received from."""
    blocks: dict[tuple[str, int, int], list[_Step]] = defaultdict(list)
    for step in steps:
        blocks[step.tb].append(step)
    if pair:
        for kind, peer, chan in list(blocks):
            if kind == "send" and ("recv", peer, chan) in blocks:
                merged = blocks.pop((kind, peer, chan)) + blocks.pop(("recv", peer, chan))
                blocks[("pair", peer, chan)] = merged
    return blocks


def _number(
    steps: dict[int, list[_Step]],
    schedule: Schedule,
    limits: MscclLimits,
    pair_peers: bool | None,
) -> dict[int, list[tuple[tuple[str, int, int], list[_Step]]]]:
    """Group steps into thread blocks, order them by key, number them, check limits."""
    names = schedule.compute_nodes
    result: dict[int, list[tuple[tuple[str, int, int], list[_Step]]]] = {}
    for gpu in range(len(names)):
        blocks = _blocks(steps.get(gpu, []), pair=pair_peers is True)
        if pair_peers is None and len(blocks) > limits.max_threadblocks:
            blocks = _blocks(steps.get(gpu, []), pair=True)
        order = sorted(blocks, key=lambda tb: (tb[2], _KIND_ORDER[tb[0]], tb[1]))
        if len(order) > limits.max_threadblocks:
            raise ExportError(
                f"GPU {gpu} ({names[gpu]}) needs {len(order)} thread blocks (one per peer and "
                f"direction on each channel, send and receive paired where possible), above "
                f"the cap of {limits.max_threadblocks}; use fewer channels or a smaller k "
                f"(fewer trees reach fewer peers), or raise max_threadblocks"
            )
        per_channel: dict[tuple[int, str], int] = defaultdict(int)
        for kind, _, chan in order:
            for direction in _DIRECTIONS[kind]:
                per_channel[(chan, direction)] += 1
        for (chan, kind), count in sorted(per_channel.items()):
            if count > limits.max_peers_per_channel:
                raise ExportError(
                    f"GPU {gpu} ({names[gpu]}) has {count} {kind} peers on channel {chan}, above "
                    f"MSCCL's {limits.max_peers_per_channel} per channel; use more channels or "
                    f"a smaller k"
                )
        numbered = []
        for tb_id, tb in enumerate(order):
            block = sorted(blocks[tb], key=lambda s: s.key)
            if len(block) > limits.max_steps:
                raise ExportError(
                    f"GPU {gpu} ({names[gpu]}): thread block {tb_id} ({tb[0]} peer {tb[1]}, "
                    f"channel {tb[2]}) needs {len(block)} steps, above the cap of "
                    f"{limits.max_steps}; use more channels or a smaller k"
                )
            for index, step in enumerate(block):
                step.index, step.tb_id = index, tb_id
            numbered.append((tb, block))
        result[gpu] = numbered
    for blocks_of_gpu in result.values():
        for _, block in blocks_of_gpu:
            for step in block:
                if step.dep is not None:
                    step.dep.has_dependent = True
    return result


def _render(
    schedule: Schedule,
    builder: _Builder,
    tbs: dict[int, list[tuple[tuple[str, int, int], list[_Step]]]],
    channels: int,
    name: str | None,
    proto: str,
    min_bytes: int,
    max_bytes: int,
    coll_name: str | None,
) -> str:
    i_chunks, o_chunks, s_chunks = builder.chunks
    used_channels = 1 + max((tb[2] for blocks in tbs.values() for tb, _ in blocks), default=0)
    attrs = {
        "name": name or f"optcoll {schedule.collective} {schedule.topology} k={schedule.k}",
        "proto": proto,
        "nchannels": str(min(channels, used_channels)),
        "nchunksperloop": str(max(i_chunks, o_chunks)),
        "ngpus": str(len(schedule.compute_nodes)),
        "coll": coll_name or schedule.collective,
        "inplace": "0",
        "outofplace": "1",
        "minBytes": str(min_bytes),
        "maxBytes": str(max_bytes),
    }
    if schedule.collective in _REDUCING:
        attrs["redop"] = "sum"
    algo = ET.Element("algo", attrs)
    for gpu in range(len(schedule.compute_nodes)):
        gpu_el = ET.SubElement(
            algo,
            "gpu",
            {
                "id": str(gpu),
                "i_chunks": str(i_chunks),
                "o_chunks": str(o_chunks),
                "s_chunks": str(s_chunks),
            },
        )
        for tb_id, ((kind, peer, chan), block) in enumerate(tbs[gpu]):
            tb_el = ET.SubElement(
                gpu_el,
                "tb",
                {
                    "id": str(tb_id),
                    "send": str(peer if kind in ("send", "pair") else -1),
                    "recv": str(peer if kind in ("recv", "pair") else -1),
                    "chan": str(chan),
                },
            )
            for step in block:
                ET.SubElement(
                    tb_el,
                    "step",
                    {
                        "s": str(step.index),
                        "type": step.type,
                        "srcbuf": step.src[0],
                        "srcoff": str(step.src[1]),
                        "dstbuf": step.dst[0],
                        "dstoff": str(step.dst[1]),
                        "cnt": str(step.cnt),
                        "depid": str(step.dep.tb_id if step.dep else -1),
                        "deps": str(step.dep.index if step.dep else -1),
                        "hasdep": "1" if step.has_dependent else "0",
                    },
                )
    ET.indent(algo, space="  ")
    # self-closing tags without a space before "/>", as msccl-tools writes them
    return ET.tostring(algo, encoding="unicode").replace(" />", "/>") + "\n"
