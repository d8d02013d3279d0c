"""MSCCL algorithm XML from tree schedules.

MSCCL runtimes (RCCL, microsoft/msccl, msccl-executor; see
:mod:`optcoll.export.runtimes`) load a collective algorithm from an XML file::

    <algo name proto nchannels nchunksperloop ngpus coll inplace outofplace minBytes maxBytes>
      <gpu id i_chunks o_chunks s_chunks>
        <tb id send recv chan>
          <step s type srcbuf srcoff dstbuf dstoff cnt depid deps hasdep/>

Each GPU's input (``i``), output (``o``) and scratch (``s``) buffers are cut
into chunks; a thread block (``tb``) runs its steps in order, talks to at most
one send peer and one receive peer on one channel, and a step may wait for one
step of another thread block of the same GPU (``depid``/``deps``; ``hasdep``
marks steps that others wait for). Sends on a connection (sender, receiver,
channel) are matched in order with the receives of the receiver's thread block
for that connection. Step types used here: ``s`` (send), ``r`` (receive),
``rrc`` (receive, reduce with a local chunk, store), ``cpy`` (local copy) and, where the
runtime's kernel runs them, ``rcs``/``rrcs`` (a receive fused with the send forwarding
it, :mod:`optcoll.export.msccl_fusion`; kept where that shortens the longest chain of
steps). RCCL launches none of ``rcs``, ``rrs``, ``rrc``, ``rrcs``
(:attr:`~optcoll.core.msccl_runtimes.RuntimeProfile.launch_step_types`): for it a
reducing receive is an ``r`` into scratch and a ``re`` (add a local chunk into another)
after it in its thread block (``_Builder._reduce``).

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
  scratch, ``s_chunks = k``);
* alltoall (MSCCL's convention, as msccl-tools' ``AllToAll``): ``i_chunks =
  o_chunks = N*k``; chunk ``j`` of the piece rank ``s`` sends to rank ``d`` is
  input chunk ``d*k + j`` of ``s`` and lands at output chunk ``s*k + j`` of
  ``d``. Each path of a route carries its chunks hop by hop through the compute
  nodes on it (switches are inside a connection); a relay receives them into
  its own scratch chunks and sends them on (a dependency on the receive).

Placement. The runtimes call a collective *in place* when the input is aliased
into the output: allgather ``i[j] = o[r*k + j]``, reduce_scatter
``o[j] = i[r*k + j]``, the others ``i = o``. The reduce_scatter, allreduce and
reduce programs are correct either way (every read of an input chunk happens
before the write of the output chunk it aliases, through the step order or the
messages in between), so they are written once with ``inplace="1"
outofplace="1"``. Allgather and broadcast need two programs: out of place the
root copies its input into its output and sends from the input; in place there
is nothing to copy and the root sends from its output. All-to-all needs two as
well: in place, a piece arriving at output chunk ``s*k + j`` would overwrite the
input chunk for rank ``s`` before it is sent, so the in-place program first
copies the whole input into scratch chunks ``0..N*k-1``, sends from there, and
every receive into the output waits for that copy. Out of place it sends from
the input and copies its own piece. microsoft/msccl refuses in-place all-to-all
calls outright, so it only gets the out-of-place program.

Thread blocks. A thread block runs its steps in program order, once per loop of
the buffer, so the order decides how much of the trees' pipelining survives. Every
transfer moves one chunk (``cnt = 1``): a relay forwards chunk ``j`` of a tree while
chunk ``j + 1`` arrives, where a step of ``cnt = c`` would make it wait for all
``c``. Every transfer gets a key (phase, level, tree, chunk, sibling): the level is
the receiver's depth in a broadcasting phase and, in a reducing phase, the height of
the sender's subtree (when its partial sum can be ready); a node reduces its
children in order of that height. Each GPU pair gets ``channels`` channels (by
default one per level the pair carries, as far as 64 thread blocks per GPU and the
runtime allow; more when its steps exceed the profile's steps per thread block); a
connection's transfers, in key order, are cut into consecutive runs, one per
channel, so a thread block holds transfers of neighbouring levels and a step waiting
for deep data does not hold up the next loop's shallow steps behind it. The channels
of each GPU pair are chosen first-fit so that no GPU has more than the profile's
send (or receive) peers on one channel. Each GPU has one thread block per (peer,
direction, channel) plus one for local copies; where a GPU would exceed its thread
block cap (or with ``pair_peers``), the sends to and receives from one peer on one
channel share a thread block. All thread blocks list their steps in key order; each
dependency points to a strictly smaller key, so the steps cannot deadlock even when
a send waits for its receive (rendezvous).

Examples
--------
>>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
>>> trees = (Tree("a", 1, (TreeEdge("a", "b", ("a", "sw", "b")),)),
...          Tree("b", 1, (TreeEdge("b", "a", ("b", "sw", "a")),)))
>>> xml = to_msccl_xml(Schedule("allgather", "pair", ("a", "b"), 1, trees))
>>> print(xml.splitlines()[2])
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from optcoll.core.arguments import (
    choice_argument,
    count_argument,
    schedule_argument,
    size_argument,
    text_argument,
)
from optcoll.core.schedule import Schedule, Tree, a_collective
from optcoll.exceptions import ExportError
from optcoll.export.msccl_blocks import WIDEST_THREADBLOCKS, Block, Location, _Step
from optcoll.export.msccl_fusion import (
    chain_channels,
    deadlocked_fusions,
    fuse,
    fuses,
    longest_chain,
)
from optcoll.export.placement import placement_paths
from optcoll.export.runtimes import (
    DEFAULT_RUNTIME,
    RUNTIMES,
    RuntimeProfile,
    coll_spelling,
    max_bytes_value,
    runtime_profile,
)

__all__ = [
    "PLACEMENTS",
    "MscclProgram",
    "placements",
    "placement_files",
    "msccl_program",
    "rank_order_comment",
    "to_msccl_xml",
]


class ProgramShape(Protocol):
    """What the thread-block numbering and the rendering read of a schedule (a
    :class:`~optcoll.core.schedule.Schedule`, or a step schedule's stand-in)."""

    @property
    def compute_nodes(self) -> tuple[str, ...]: ...
    @property
    def k(self) -> int: ...
    @property
    def root(self) -> str | None: ...
    @property
    def topology(self) -> str: ...


class ProgramSteps(Protocol):
    """What the channel assignment and the rendering read of a builder: every GPU's
    steps, the buffers' chunk counts ``(i, o, s)`` and the collective."""

    @property
    def steps(self) -> dict[int, list[_Step]]: ...
    @property
    def chunks(self) -> tuple[int, int, int]: ...
    @property
    def collective(self) -> str: ...


_SUPPORTED = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "alltoall")
_REDUCING = ("reduce_scatter", "allreduce", "reduce")
_PLACEMENT_SENSITIVE = ("allgather", "broadcast", "alltoall")

#: ``outofplace``, ``inplace``, or ``both`` (one program correct either way).
PLACEMENTS = ("outofplace", "inplace", "both")


def placements(collective: str, runtime: RuntimeProfile | str = DEFAULT_RUNTIME) -> tuple[str, ...]:
    """The programs to write so that ``collective`` is served in place and out of place.

    One program marked ``both`` where it is correct either way and the runtime reads
    separate ``inplace``/``outofplace`` flags; otherwise one per placement.

    Examples
    --------
    >>> placements("allreduce"), placements("allgather"), placements("allreduce", "msccl")
    (('both',), ('outofplace', 'inplace'), ('outofplace', 'inplace'))
    >>> placements("alltoall", "msccl")
    ('outofplace',)
    """
    profile = runtime_profile(runtime) if isinstance(runtime, str) else runtime
    if collective in profile.never_in_place:
        return ("outofplace",)
    if collective in _PLACEMENT_SENSITIVE or not profile.has_outofplace:
        return ("outofplace", "inplace")
    return ("both",)


def placement_files(
    path: str | Path,
    collective: str,
    runtime: RuntimeProfile | str = DEFAULT_RUNTIME,
    placement: str | None = None,
) -> tuple[tuple[str, Path], ...]:
    """The MSCCL programs to write for ``placement`` and their files; the first is ``path``
    (the rule of :func:`optcoll.export.placement.placement_paths` on :func:`placements`).

    Examples
    --------
    >>> placement_files("ag.xml", "allgather")
    (('outofplace', PosixPath('ag.xml')),)
    >>> placement_files("ag.xml", "allgather", placement="both")
    (('outofplace', PosixPath('ag.xml')), ('inplace', PosixPath('ag.inplace.xml')))
    >>> placement_files("ar.xml", "allreduce", placement="inplace")
    (('both', PosixPath('ar.xml')),)
    """
    profile = runtime_profile(runtime) if isinstance(runtime, str) else runtime
    return placement_paths(
        path,
        placements(collective, profile),
        placement,
        what=f"{profile.name} with {a_collective(collective)}",
    )


@dataclass(frozen=True)
class MscclProgram:
    """One MSCCL XML program and the figures the runtimes bound.

    Attributes
    ----------
    text : str
        The XML.
    placement : str
        ``outofplace``, ``inplace`` or ``both``.
    nchannels, nchunksperloop : int
    max_steps : int
        Most steps in one thread block.
    max_threadblocks : int
        Most thread blocks on one GPU.
    max_peers : int
        Most distinct peers one GPU sends to or receives from.
    """

    text: str
    placement: str
    nchannels: int
    nchunksperloop: int
    max_steps: int
    max_threadblocks: int
    max_peers: int


def to_msccl_xml(schedule: Schedule, **options: object) -> str:
    """The MSCCL XML text of ``schedule``: :func:`msccl_program`'s ``text``.

    Examples
    --------
    >>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
    >>> t = (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)), Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),)))
    >>> xml = to_msccl_xml(Schedule("allreduce", "pair", ("a", "b"), 1, t))
    >>> [xml.count(f'type="{kind}"') for kind in ("s", "r", "re", "cpy", "rrc")]  # for rccl
    [4, 4, 2, 2, 0]
    """
    return msccl_program(schedule, **options).text  # type: ignore[arg-type]


def msccl_program(
    schedule: Schedule,
    *,
    runtime: RuntimeProfile | str = DEFAULT_RUNTIME,
    channels: int | None = None,
    placement: str | None = None,
    name: str | None = None,
    proto: str = "Simple",
    min_bytes: int = 0,
    max_bytes: int | None = None,
    pair_peers: bool | None = None,
    allgather: Schedule | None = None,
    spread: bool = False,
) -> MscclProgram:
    """The MSCCL program of ``schedule`` for ``runtime`` (deterministic, byte for byte).

    Parameters
    ----------
    schedule : Schedule
        Allgather, reduce_scatter, allreduce, broadcast or reduce schedule; its
        trees are in broadcast direction (reducing phases run them reversed).
    runtime : RuntimeProfile or str
        The runtime whose parser must accept the file (spelling of ``coll``, limits,
        ``maxBytes`` semantics, placement flags).
    channels : int, optional
        Channels per GPU pair (at least 1; more where a connection's steps exceed
        the runtime's steps per thread block). ``None`` (default): the most that keep
        every GPU within the runtime's thread blocks and 64 (see
        :data:`WIDEST_THREADBLOCKS`); more channels mean more thread blocks, each
        holding steps of fewer tree levels.
    placement : str, optional
        ``outofplace``, ``inplace`` or ``both``; default: the first of
        :func:`placements`.
    name, proto
        Written to the ``<algo>`` element (``name`` defaults to a description).
    min_bytes, max_bytes : int
        The smallest and largest message (bytes) the file serves; ``max_bytes=None``
        means no upper limit (written in the runtime's convention).
    pair_peers : bool, optional
        Put the sends to and the receives from one peer on one channel into one
        thread block. ``None`` (default) pairs only where a GPU would otherwise
        exceed the runtime's thread blocks.
    allgather : Schedule, optional
        With a reduce_scatter ``schedule``: an allgather schedule (same compute nodes
        and ``k``) whose trees run after the reduce-scatter's, making an allreduce
        program. This composes an allreduce where the reduce-scatter trees must differ
        from the allgather trees (a topology whose links lack reverses or have
        asymmetric bandwidths).
    spread : bool
        With ``channels`` None: a channel per transfer of a GPU pair rather than per tree
        level, as far as the thread blocks allow (:func:`_assign_channels`), so a GPU's
        receives run side by side; small messages, where a step's overhead outweighs its
        bytes, run faster so.

    Raises
    ------
    ExportError
        The program exceeds a limit of the runtime (the message names the limit, its
        value and what helps), the placement is not correct for this collective, or
        the schedule is malformed.
    """
    schedule_argument(schedule)
    if channels is not None:
        count_argument(channels, "channels")
    if not isinstance(runtime, RuntimeProfile):
        runtime = runtime_profile(text_argument(runtime, "runtime"))
    profile = runtime
    choice_argument(proto, profile.protocols, "proto")
    size_argument(min_bytes, "min_bytes")
    if max_bytes is not None:
        size_argument(max_bytes, "max_bytes")
    coll = schedule.collective
    if allgather is not None:
        _check_composable(schedule, allgather)
        coll = "allreduce"
    if coll not in _SUPPORTED:
        raise ExportError(
            f"collective {coll!r} cannot be exported to MSCCL; valid: {', '.join(_SUPPORTED)}"
        )
    placement = placement or placements(coll, profile)[0]
    if placement not in PLACEMENTS:
        raise ExportError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    if placement == "both" and coll in _PLACEMENT_SENSITIVE:
        raise ExportError(
            f"{a_collective(coll)} program is not correct both in place and out of place; "
            "write one per placement"
        )
    if placement == "both" and not profile.has_outofplace:
        raise ExportError(
            f"runtime {profile.name!r} reads only 'inplace': a file serves one placement"
        )
    if placement == "inplace" and coll in profile.never_in_place:
        raise ExportError(
            f"runtime {profile.name!r} refuses in-place all-to-all calls before it looks for "
            f"an algorithm ({profile.sources['never_in_place']}); write the out-of-place "
            "program, or use --runtime rccl or msccl-executor"
        )
    builder = _Builder(schedule, profile, inplace=placement == "inplace", down=allgather)
    _check_offsets(builder.chunks, profile)  # before building k steps per tree
    builder.build()
    _check_offsets(builder.chunks, profile)  # with the scratch of split reductions
    nchunks = max(builder.chunks[0], builder.chunks[1])
    _assign_channels(builder, schedule, profile, channels, spread)
    tbs = _number(builder.steps, schedule, profile, pair_peers)
    if channels is None and not pair_peers and not spread:
        fused = _fused_program(schedule, profile, placement, allgather)
        if fused is not None and _chain(fused[1]) < _chain(tbs):
            builder, tbs = fused
    text = _render(
        schedule,
        builder,
        tbs,
        profile,
        placement,
        name,
        proto,
        min_bytes,
        max_bytes_value(profile, max_bytes, scratch=builder.chunks[2] > 0),
    )
    return MscclProgram(
        text=text,
        placement=placement,
        nchannels=1 + max((tb[2] for blocks in tbs.values() for tb, _ in blocks), default=0),
        nchunksperloop=nchunks,
        max_steps=max((len(b) for blocks in tbs.values() for _, b in blocks), default=0),
        max_threadblocks=max((len(blocks) for blocks in tbs.values()), default=0),
        max_peers=_most_peers(tbs),
    )


def _check_offsets(chunks: tuple[int, int, int], profile: RuntimeProfile) -> None:
    """ExportError where a buffer has more chunks than the runtime's offsets address."""
    if max(chunks) - 1 > profile.max_offset:
        raise ExportError(
            f"the buffers need {max(chunks)} chunks, above the {profile.max_offset + 1} "
            f"offsets runtime {profile.name!r} can address ({profile.sources['max_offset']}); "
            "use a smaller -k"
        )


def _most_peers(tbs: dict[int, list[tuple[Block, list[_Step]]]]) -> int:
    """Most distinct peers one GPU sends to or receives from (a fused step's two)."""
    most = 0
    for gpu, blocks in tbs.items():
        peers: set[int] = set()
        for _, block in blocks:
            for st in block:
                for link in (st.link, st.fused.link if st.fused else None):
                    peers |= set(link or ())
        most = max(most, len(peers - {gpu}))
    return most


def _fused_program(
    schedule: Schedule, profile: RuntimeProfile, placement: str, allgather: Schedule | None
) -> tuple[_Builder, dict[int, list[tuple[Block, list[_Step]]]]] | None:
    """The program with receives fused with the sends that forward them
    (:mod:`optcoll.export.msccl_fusion`): every forwarding chain on one channel, the fusions
    that would leave it stuck with connections of one chunk written unfused. None where the
    runtime runs no fused steps, nothing fuses, or the channels or thread blocks it needs
    exceed the runtime's limits."""
    if not fuses(profile):
        return None
    excluded: frozenset[tuple[int, tuple[int, ...]]] = frozenset()
    while True:
        builder = _Builder(schedule, profile, inplace=placement == "inplace", down=allgather)
        builder.build()
        if not chain_channels(builder.steps, profile):
            return None
        if not fuse(builder.steps, excluded, profile.max_steps):
            return None
        for gpu_steps in builder.steps.values():  # a wait inside one thread block is its order
            for step in gpu_steps:
                if step.dep is not None and step.dep.tb == step.tb:
                    step.dep = None
        try:
            tbs = _number(builder.steps, schedule, profile, False)
        except ExportError:  # beyond a limit fused: the unfused program stands
            return None
        undo = {(st.gpu, st.key) for st in deadlocked_fusions(tbs)}
        if not undo:
            return builder, tbs
        excluded |= undo


def _chain(tbs: dict[int, list[tuple[Block, list[_Step]]]]) -> tuple[int, int]:
    """(steps in the longest chain of steps that wait for one another, steps)."""
    return longest_chain(tbs), sum(len(b) for bs in tbs.values() for _, b in bs)


class _Builder:
    """Turns trees into per-GPU steps with keys and dependencies."""

    def __init__(
        self,
        schedule: Schedule,
        profile: RuntimeProfile,
        *,
        inplace: bool,
        down: Schedule | None = None,
    ) -> None:
        self.schedule = schedule
        self.down = down
        self.collective = "allreduce" if down is not None else schedule.collective
        self.max_count = profile.max_count
        self.reduce_in_receive = "rrc" in profile.launch_step_types
        self.inplace = inplace
        self.scratch_used: dict[int, int] = {}  # per GPU, scratch chunks of split reductions
        self.ranks = {node: i for i, node in enumerate(schedule.compute_nodes)}
        self.steps: dict[int, list[_Step]] = defaultdict(list)
        self.levels = _levels(schedule) if down is None else None
        n, k = len(schedule.compute_nodes), schedule.k
        if self.collective == "alltoall":
            self.hops = _route_hops(schedule, self.ranks)
            self.relay, relayed = _relay_slots(self.hops, n * k if inplace else 0)
            self.chunks = (n * k, n * k, relayed)
            return
        self.chunks = {
            "allgather": (k, n * k, 0),
            "reduce_scatter": (n * k, k, n * k),
            "allreduce": (n * k, n * k, 0),
            "broadcast": (k, k, 0),
            "reduce": (k, k, k),
        }[self.collective]

    def build(self) -> None:
        if self.collective == "alltoall":
            self._alltoall()
            return
        trees = self.schedule.trees
        shapes = [_shape(i, t, self.schedule.compute_nodes) for i, t in enumerate(trees)]
        _check_chunks(self.schedule)
        if self.down is not None:
            self._composed(shapes)
            return
        if self.collective in _PLACEMENT_SENSITIVE and not self.inplace:
            # out of place, each root first copies its whole shard into its output
            roots = sorted({t.root for t in trees}, key=self.ranks.__getitem__)
            for root in roots:
                for first in range(0, self.schedule.k, self.max_count):
                    cnt = min(self.max_count, self.schedule.k - first)
                    src, dst = ("i", first), self._out(root, first)
                    self._add(_Step("cpy", src, dst, cnt, (1, -1, first), self.ranks[root], None))
        offsets: dict[str, int] = defaultdict(int)
        for ti, tree in enumerate(trees):
            start = offsets[tree.root]
            offsets[tree.root] += tree.chunks
            for p in range(tree.chunks):
                last = self._reduce(tree, shapes[ti], (ti, p), start + p)
                self._broadcast(tree, shapes[ti], (ti, p), start + p, last)
        i_chunks, o_chunks, s_chunks = self.chunks
        self.chunks = (i_chunks, o_chunks, max([s_chunks, *self.scratch_used.values()]))

    def _composed(self, up_shapes: list[tuple[dict[str, list[str]], dict[str, int]]]) -> None:
        """Allreduce on two tree sets: the reduce-scatter trees up, then the allgather
        trees down. Each root's chunk range is cut at the ends of both sets' trees, so
        every segment lies in one tree of each; a segment's broadcast waits for its
        reduction at the root."""
        assert self.down is not None
        down = self.down.trees
        _check_chunks(self.down)
        down_shapes = [_shape(i, t, self.schedule.compute_nodes) for i, t in enumerate(down)]
        segment = 0
        for root in self.schedule.compute_nodes:
            up_ranges = _ranges(self.schedule.trees, root)
            down_ranges = _ranges(down, root)
            cuts = sorted({lo for _, lo, _ in up_ranges + down_ranges} | {self.schedule.k})
            for lo, hi in zip(cuts, cuts[1:], strict=False):
                ui = next(i for i, a, b in up_ranges if a <= lo < b)
                di = next(i for i, a, b in down_ranges if a <= lo < b)
                up_tree, down_tree = self.schedule.trees[ui], down[di]
                for p in range(hi - lo):
                    last = self._reduce(up_tree, up_shapes[ui], (segment, p), lo + p)
                    self._broadcast(down_tree, down_shapes[di], (segment, p), lo + p, last)
                segment += 1
        i_chunks, o_chunks, s_chunks = self.chunks
        self.chunks = (i_chunks, o_chunks, max([s_chunks, *self.scratch_used.values()]))

    def _alltoall(self) -> None:
        """Every route's chunks hop by hop (see the module docstring for the layout)."""
        n, k, most = len(self.ranks), self.schedule.k, self.max_count
        ready: dict[int, _Step | None] = dict.fromkeys(range(n))
        for rank in range(n):
            # in place: the whole input into scratch first; out of place: the own piece
            first, end = (0, n * k) if self.inplace else (rank * k, rank * k + k)
            for p, lo in enumerate(range(first, end, most)):
                cnt = min(most, end - lo)
                dst = ("s", lo) if self.inplace else ("o", lo)
                copy = self._add(_Step("cpy", ("i", lo), dst, cnt, (0, p), rank, None))
                if self.inplace:  # sends and receives into the output wait for the copy
                    ready[rank] = copy
        for ri, pi, first, chunks, hops in self.hops:
            source, sink = hops[0], hops[-1]
            for p, lo in enumerate(range(first, first + chunks, most)):
                cnt = min(most, first + chunks - lo)
                offset = lo - first
                sent: Location = ("s" if self.inplace else "i", sink * k + lo)
                received: _Step | None = ready[source]
                for h, (a, b) in enumerate(zip(hops, hops[1:], strict=False)):
                    key = (1, h, ri, pi, p)
                    last = h == len(hops) - 2
                    into = (
                        ("o", source * k + lo)
                        if last
                        else ("s", self.relay[(ri, pi, h + 1)] + offset)
                    )
                    self._add(_Step("s", sent, into, cnt, key, a, (a, b), received))
                    wait = ready[b] if last else None
                    received = self._add(_Step("r", sent, into, cnt, key, b, (a, b), wait))
                    sent = into

    # --- where a piece lives on each GPU -----------------------------------------

    def _slot(self, root: str, offset: int) -> int:
        if self.collective in ("broadcast", "reduce"):
            return offset
        return self.ranks[root] * self.schedule.k + offset

    def _source(self, root: str, offset: int) -> Location:
        coll = self.collective
        if coll in _PLACEMENT_SENSITIVE:
            return ("o", self._slot(root, offset)) if self.inplace else ("i", offset)
        if coll == "reduce":
            return ("i", offset)
        return ("i", self._slot(root, offset))

    def _acc(self, v: str, root: str, offset: int) -> Location:
        coll = self.collective
        if coll == "allreduce":
            return ("o", self._slot(root, offset))
        if v == root:
            return ("o", offset)
        return ("s", self._slot(root, offset))

    def _out(self, root: str, offset: int) -> Location:
        return ("o", self._slot(root, offset))

    def _add(self, step: _Step) -> _Step:
        """Add ``step``; a send that reads what the receive it waits for wrote forwards it."""
        dep = step.dep
        if step.type == "s" and dep is not None and dep.type in ("r", "rrc"):
            if dep.dst == step.src and dep.cnt == step.cnt:
                step.forwards = dep
        self.steps[step.gpu].append(step)
        return step

    # --- one piece of one tree -------------------------------------------------

    def _scratch(self, gpu: int) -> Location:
        """A scratch chunk of ``gpu`` nothing else uses (after the collective's own)."""
        used = self.scratch_used.get(gpu, self.chunks[2])
        self.scratch_used[gpu] = used + 1
        return ("s", used)

    def _reduce(
        self,
        tree: Tree,
        shape: tuple[dict[str, list[str]], dict[str, int]],
        ident: tuple[int, int],
        offset: int,
    ) -> _Step | None:
        """The reducing phase of one piece (none for allgather and broadcast); returns
        the root's last reduction step.

        Where the runtime runs ``rrc``, a node adds each child's partial sum as it receives
        it, into its accumulator (its output chunk for allreduce and at a root, else
        scratch), the first to its own input. Elsewhere (RCCL) each child's sum is received
        into scratch and added by a ``re`` in the receive's thread block, right after it
        (``re`` adds its source to its destination), each ``re`` waiting for the previous:
        a root adds every child's into its output chunk, which a ``cpy`` of its input
        fills between its first receive and that receive's ``re``; another node adds its
        own input to the first child's, in the scratch chunk that arrived in, then the
        others' to that chunk, and forwards it.
        """
        if self.collective not in _REDUCING:
            return None
        children, depth = shape
        root, rank = tree.root, self.ranks
        last_up: dict[str, _Step | None] = {}
        held: dict[str, Location] = {}  # where each inner node holds its partial sum
        below: dict[str, int] = {}
        for v in sorted(depth, key=lambda n: (-depth[n], rank[n])):
            prev: _Step | None = None
            below[v] = 1 + max((below[c] for c in children[v]), default=-1)
            acc = self._acc(v, root, offset)
            for j, c in enumerate(sorted(children[v], key=below.__getitem__)):
                key = (0, below[c], *ident, j)
                link = (rank[c], rank[v])
                own = held[c] if children[c] else self._source(root, offset)
                if self.reduce_in_receive:
                    src = acc if prev else self._source(root, offset)
                    prev = self._add(_Step("rrc", src, acc, 1, key, rank[v], link, prev))
                    held[v] = into = acc
                elif v == root:
                    into = self._scratch(rank[v])
                    recv = self._add(_Step("r", own, into, 1, key, rank[v], link))
                    if prev is None:  # its input into its output first (in place: onto itself)
                        src = self._source(root, offset)
                        self._add(_Step("cpy", src, acc, 1, (*key, 0), rank[v], None, joins=recv))
                    add = _Step("re", into, acc, 1, (*key, 1), rank[v], None, prev, joins=recv)
                    prev = self._add(add)
                else:
                    first = prev is None
                    into = acc if first and acc[0] == "s" else self._scratch(rank[v])
                    if first:
                        held[v] = into
                    recv = self._add(_Step("r", own, into, 1, key, rank[v], link))
                    src, dst = (self._source(root, offset), into) if first else (into, held[v])
                    add = _Step("re", src, dst, 1, (*key, 1), rank[v], None, prev, joins=recv)
                    prev = self._add(add)
                self._add(_Step("s", own, into, 1, key, rank[c], link, last_up[c]))
            last_up[v] = prev
        return last_up[root]

    def _broadcast(
        self,
        tree: Tree,
        shape: tuple[dict[str, list[str]], dict[str, int]],
        ident: tuple[int, int],
        offset: int,
        after: _Step | None,
    ) -> None:
        """The broadcasting phase of one piece (none for reduce-scatter and reduce);
        the root's sends wait for ``after``."""
        coll = self.collective
        if coll not in ("allgather", "broadcast", "allreduce"):
            return
        children, depth = shape
        root, rank = tree.root, self.ranks
        level = depth if self.levels is None else self.levels[ident[0]]
        received: dict[str, _Step | None] = {root: after}
        for v in sorted(depth, key=lambda n: (depth[n], rank[n])):
            own = self._out(root, offset)
            if v == root and coll != "allreduce":
                own = self._source(root, offset)
            for j, c in enumerate(children[v]):
                key = (1, level[c], *ident, j)
                out = self._out(root, offset)
                link = (rank[v], rank[c])
                recv = self._add(_Step("r", own, out, 1, key, rank[c], link))
                self._add(_Step("s", own, out, 1, key, rank[v], link, received[v]))
                received[c] = recv


def _levels(schedule: Schedule) -> list[dict[str, int]] | None:
    """Per tree, each node's level in the broadcasting phase's step keys, from the order
    ``optcoll plan`` chose (the schedule's ``stats``): a timetable's (``starts``: the
    rank of the start time of the transfer into the node, so every link sends in the
    timetable's order), deepest subtree first (``priority`` ``depth`` or
    ``progress-depth``: minus the edges below the node), or None: the node's depth.
    Each is larger at a child than at its parent, so a step still waits only for
    smaller keys.

    >>> from optcoll.core.schedule import TreeEdge
    >>> t = Tree("a", 1, (TreeEdge("a", "b", ("a", "b")), TreeEdge("b", "c", ("b", "c"))))
    >>> s = Schedule("broadcast", "p", ("a", "b", "c"), 1, (t,), root="a",
    ...              stats={"priority": "depth"})
    >>> _levels(s)
    [{'b': -2, 'c': -1}]
    """
    starts = schedule.stats.get("starts")
    if starts is not None:
        _check_starts(schedule, starts)
        times = sorted({t for per_tree in starts for t in per_tree})
        rank = {t: i for i, t in enumerate(times)}
        return [
            {e.dst: rank[t] for e, t in zip(tree.edges, per_tree, strict=True)}
            for tree, per_tree in zip(schedule.trees, starts, strict=True)
        ]
    if schedule.stats.get("priority") not in ("depth", "progress-depth"):
        return None
    levels = []
    for tree in schedule.trees:
        height = {tree.root: 0} | {e.dst: 0 for e in tree.edges}
        for e in reversed(tree.edges):  # children before parents
            height[e.src] = max(height[e.src], height[e.dst] + 1)
        levels.append({e.dst: -(height[e.dst] + 1) for e in tree.edges})
    return levels


def _check_starts(schedule: Schedule, starts: object) -> None:
    """ExportError unless ``starts`` has a number per edge of every tree, each edge
    starting after the edge into its sender."""
    shaped = isinstance(starts, list) and len(starts) == len(schedule.trees)
    for i, tree in enumerate(schedule.trees):
        per_tree = starts[i] if shaped else None  # type: ignore[index]
        if not isinstance(per_tree, list) or len(per_tree) != len(tree.edges):
            raise ExportError(
                f"stats 'starts' must list one start time per edge of every tree (tree {i} "
                f"has {len(tree.edges)} edges)"
            )
        into: dict[str, float] = {}
        for e, t in zip(tree.edges, per_tree, strict=True):
            if not isinstance(t, (int, float)) or t <= into.get(e.src, -math.inf):
                raise ExportError(
                    f"stats 'starts': tree {i} edge {e.src}->{e.dst} starts at {t!r}, not a "
                    "number after the edge into its sender"
                )
            into[e.dst] = t


Hops = tuple[int, int, int, int, tuple[int, ...]]


def _route_hops(schedule: Schedule, ranks: dict[str, int]) -> list[Hops]:
    """``(route, path, first chunk, chunks, ranks on the path)`` of every route path;
    ExportError unless each ordered pair of compute nodes has one route whose paths
    run from its source to its sink, visit each compute node once and carry ``k``
    chunks in all."""
    k = schedule.k
    seen: set[tuple[str, str]] = set()
    result: list[Hops] = []
    for ri, route in enumerate(schedule.routes):
        where = f"route {ri} ({route.src} -> {route.dst})"
        if route.src not in ranks or route.dst not in ranks or route.src == route.dst:
            raise ExportError(f"{where}: source and sink must be two compute nodes")
        if (route.src, route.dst) in seen:
            raise ExportError(f"{where}: a second route for this pair")
        seen.add((route.src, route.dst))
        first = 0
        for pi, path in enumerate(route.paths):
            hops = tuple(ranks[v] for v in path.path if v in ranks)
            if path.chunks < 1 or path.path[:1] != (route.src,) or path.path[-1:] != (route.dst,):
                raise ExportError(
                    f"{where}, path {pi}: needs at least one chunk and must run from "
                    f"{route.src} to {route.dst}"
                )
            if len(set(hops)) != len(hops):
                raise ExportError(f"{where}, path {pi}: visits a compute node twice")
            result.append((ri, pi, first, path.chunks, hops))
            first += path.chunks
        if first != k:
            raise ExportError(f"{where}: its paths carry {first} chunks, expected k = {k}")
    missing = len(ranks) * (len(ranks) - 1) - len(seen)
    if missing:
        raise ExportError(f"the alltoall schedule has no route for {missing} ordered pair(s)")
    return result


def _relay_slots(hops: list[Hops], base: int) -> tuple[dict[tuple[int, int, int], int], int]:
    """Scratch chunk of each relay (route, path, hop position), allotted from ``base``
    on each GPU, and the scratch chunks the busiest GPU needs."""
    used: dict[int, int] = defaultdict(lambda: base)
    slots = {}
    for ri, pi, _, chunks, ranks in hops:
        for h in range(1, len(ranks) - 1):
            slots[(ri, pi, h)] = used[ranks[h]]
            used[ranks[h]] += chunks
    return slots, max(used.values(), default=base)


def _ranges(trees: Sequence[Tree], root: str) -> list[tuple[int, int, int]]:
    """``(tree index, first chunk, end)`` of ``root``'s trees, in order."""
    result, start = [], 0
    for i, tree in enumerate(trees):
        if tree.root == root:
            result.append((i, start, start + tree.chunks))
            start += tree.chunks
    return result


def _check_composable(reducing: Schedule, allgather: Schedule) -> None:
    """A reduce-scatter and an allgather schedule that make one allreduce program."""
    if reducing.collective != "reduce_scatter" or allgather.collective != "allgather":
        raise ExportError(
            "an allreduce is composed of a reduce_scatter schedule and an allgather "
            f"schedule, got {reducing.collective} and {allgather.collective}"
        )
    if reducing.compute_nodes != allgather.compute_nodes or reducing.k != allgather.k:
        raise ExportError(
            "the reduce_scatter and allgather schedules of a composed allreduce need the "
            f"same compute nodes and k (k = {reducing.k} and {allgather.k})"
        )


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
    totals: dict[str | None, int] = defaultdict(int)
    for tree in schedule.trees:
        totals[tree.root] += tree.chunks
    expected: dict[str | None, int]
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


_KIND_ORDER = {"local": 0, "pair": 1, "recv": 2, "send": 3, "fused": 4}


def _assign_channels(
    builder: ProgramSteps,
    schedule: ProgramShape,
    profile: RuntimeProfile,
    channels: int | None,
    spread: bool = False,
) -> None:
    """Give every transfer its thread block (direction, peer, channel).

    Both directions between two GPUs get the same ``w`` channels, ``w`` the larger of
    ``channels`` (``None``: :func:`_widest_channels`) and what keeps each connection
    within ``profile.max_steps``. With ``spread`` (and ``channels`` None) a pair gets a
    channel per transfer of its busier direction, as far as every GPU stays within
    :func:`_widest_channels` thread blocks: each receive then has a thread block of its
    own, and receives that a thread block would run one after another, an overhead each,
    run side by side (what small messages, whose steps cost more than their bytes, gain). The channels come from the fewest ids ``0..C-1`` on
    which no GPU exceeds ``profile.max_peers_per_channel`` send or receive peers: ``C``
    starts at the bound ``ceil(peers / limit)`` of the busiest GPU, each pair (busiest
    first) takes its least-loaded admissible channels, and ``C`` grows until every pair
    fits. A connection's transfers, in key order, are cut into ``w`` consecutive runs,
    one per channel (:func:`_runs`; ``w`` grows until each run's steps, a receive with the
    steps joining it, fit in ``profile.max_steps``): each thread block holds transfers of neighbouring
    levels, whose data is ready at about the same time, so a step waiting for deep data
    does not hold up the next loop's shallow steps behind it.
    """
    by_link: dict[tuple[int, int], dict[tuple[int, ...], list[_Step]]] = defaultdict(
        lambda: defaultdict(list)
    )
    joining: list[_Step] = []  # steps that run in their receive's thread block
    for gpu_steps in builder.steps.values():
        for step in gpu_steps:
            if step.link is not None:
                by_link[step.link][step.key].append(step)
            elif step.joins is not None:
                joining.append(step)
    # a key's steps on its receiver's thread block: the receive and the steps joining it
    weight: dict[tuple[int, int], dict[tuple[int, ...], int]] = defaultdict(
        lambda: defaultdict(lambda: 1)
    )
    for step in joining:
        assert step.joins is not None and step.joins.link is not None
        weight[step.joins.link][step.joins.key] += 1
    steps = {  # per connection, the steps of each key (in order) on its receiver
        link: [weight[link][key] if key in weight[link] else 1 for key in sorted(keys)]
        for link, keys in by_link.items()
    }
    load = {link: sum(counts) for link, counts in steps.items()}
    names = schedule.compute_nodes
    # what a pair can use: a channel per tree level (per transfer with ``spread``)
    useful = {
        link: len({key if spread else key[:2] for key in keys}) for link, keys in by_link.items()
    }
    widest = 1
    if channels is None:
        widest = _widest_channels(load, profile, useful if spread else None)
    widths = {}
    for a, b in {(min(link), max(link)) for link in by_link}:
        links = tuple(link for link in ((a, b), (b, a)) if link in by_link)
        most = max(load[link] for link in links)
        if channels is not None:
            wanted = channels
        else:  # one channel per tree level (transfer), as far as the thread blocks allow
            wanted = min(widest, max(useful[link] for link in links))
        heaviest = max(max(steps[link]) for link in links)
        if heaviest > profile.max_steps:
            raise ExportError(
                f"GPUs {a} ({names[a]}) and {b} ({names[b]}): a receive and the steps after "
                f"it in its thread block (its re, a root's copy) are {heaviest} steps, above "
                f"the {profile.max_steps} per thread block of runtime {profile.name!r} "
                f"({profile.sources['max_steps']})"
            )
        width = max(wanted, math.ceil(most / profile.max_steps))
        while width <= profile.max_channels and any(
            _runs(steps[link], width, profile.max_steps) is None for link in links
        ):
            width += 1
        widths[(a, b)] = (links, width, most)
        if widths[(a, b)][1] > profile.max_channels:
            raise ExportError(
                f"GPUs {a} ({names[a]}) and {b} ({names[b]}) exchange {most} steps one way: "
                f"more than {profile.max_steps} steps per thread block "
                f"({profile.sources['max_steps']}) on each of the {profile.max_channels} "
                f"channels of runtime {profile.name!r}; use a smaller -k"
            )
    degree: dict[tuple[str, int], int] = defaultdict(int)
    for links, width, _ in widths.values():
        for sender, receiver in links:
            degree[("send", sender)] += width
            degree[("recv", receiver)] += width
    limit = profile.max_peers_per_channel
    order = sorted(widths, key=lambda pair: (-widths[pair][1], -widths[pair][2], pair))
    for count in range(
        max(1, math.ceil(max(degree.values(), default=0) / limit)), profile.max_channels + 1
    ):
        chosen = _channel_choice(widths, order, count, limit)
        if chosen is not None:
            break
    else:
        raise ExportError(
            f"the GPUs talk to too many peers: no assignment of the {profile.max_channels} "
            f"channels of runtime {profile.name!r} keeps every GPU within {limit} send and "
            f"{limit} receive peers per channel ({profile.sources['max_peers_per_channel']}; "
            f"{profile.sources['max_channels']})"
            + ("; use fewer --channels" if channels is not None and channels > 1 else "")
        )
    for pair, (links, width, _) in widths.items():
        for link in links:
            runs = _runs(steps[link], width, profile.max_steps)
            assert runs is not None
            for key, run in zip(sorted(by_link[link]), runs, strict=True):
                chan = chosen[pair][run]
                for step in by_link[link][key]:
                    sender = step.gpu == link[0]
                    step.tb = ("send" if sender else "recv", link[1] if sender else link[0], chan)
    for step in joining:
        assert step.joins is not None
        step.tb = step.joins.tb


def _runs(steps: list[int], width: int, most: int) -> list[int] | None:
    """The run (0..width-1) of each of a connection's keys, in key order, given the steps
    each holds on the receiver: consecutive runs of about equal keys (a run of levels), or
    where one would hold more than ``most`` steps, of about equal steps; None if that
    too leaves a run above ``most``.

    >>> _runs([1, 1, 1, 1], 2, 2), _runs([2, 2, 1, 1, 1, 1], 2, 4), _runs([2, 2, 1, 1], 2, 2)
    ([0, 0, 1, 1], [0, 0, 1, 1, 1, 1], None)
    """
    by_keys = [i * width // len(steps) for i in range(len(steps))]
    total, before, by_steps = sum(steps), 0, []
    for count in steps:
        by_steps.append(before * width // total)
        before += count
    for runs in (by_keys, by_steps):
        held: Counter[int] = Counter()
        for run, count in zip(runs, steps, strict=True):
            held[run] += count
        if max(held.values()) <= most:
            return runs
    return None


def _widest_channels(
    transfers: dict[tuple[int, int], int],
    profile: RuntimeProfile,
    useful: dict[tuple[int, int], int] | None = None,
) -> int:
    """The most channels per GPU pair that keep every GPU within
    ``min(profile.max_threadblocks, WIDEST_THREADBLOCKS)`` thread blocks (one per
    direction, peer and channel, plus one for local copies), counting the channels a
    connection needs for ``profile.max_steps``; at least 1.

    ``transfers`` holds the transfers of each connection (sender, receiver); ``useful``,
    if given, the most channels each connection fills (a pair given more leaves the rest
    without thread blocks), else every connection fills them all.

    Examples
    --------
    >>> from optcoll.export.runtimes import runtime_profile
    >>> _widest_channels({(0, 1): 3, (1, 0): 3}, runtime_profile("rccl"))  # 2 blocks a channel
    31
    >>> _widest_channels({(0, 1): 3, (1, 0): 3}, runtime_profile("rccl"), {(0, 1): 3, (1, 0): 3})
    63
    """
    cap = min(profile.max_threadblocks, WIDEST_THREADBLOCKS) - 1
    need: dict[tuple[int, int], int] = {}
    for (a, b), count in transfers.items():
        pair = (min(a, b), max(a, b))
        need[pair] = max(need.get(pair, 1), math.ceil(count / profile.max_steps))
    slots: dict[int, list[tuple[int, int]]] = defaultdict(list)  # per GPU: need, most used
    for link in transfers:
        fills = profile.max_channels if useful is None else useful[link]
        slot = (need[(min(link), max(link))], fills)
        slots[link[0]].append(slot)
        slots[link[1]].append(slot)
    for width in range(min(profile.max_channels, cap), 1, -1):
        if all(sum(max(min(width, f), n) for n, f in gpu) <= cap for gpu in slots.values()):
            return width
    return 1


def _channel_choice(
    widths: dict[tuple[int, int], tuple[tuple[tuple[int, int], ...], int, int]],
    order: list[tuple[int, int]],
    count: int,
    limit: int,
) -> dict[tuple[int, int], list[int]] | None:
    """Channels ``0..count-1`` for every GPU pair (least loaded first), or None if a pair
    finds too few on which both GPUs stay within ``limit`` peers per direction."""
    load: dict[tuple[str, int, int], int] = defaultdict(int)  # (direction, gpu, channel)
    chosen = {}
    for pair in order:
        links, width, _ = widths[pair]
        fill = [
            max(max(load[("send", s, c)], load[("recv", r, c)]) for s, r in links)
            for c in range(count)
        ]
        free = sorted((fill[c], c) for c in range(count) if fill[c] < limit)
        if len(free) < width:
            return None
        chosen[pair] = sorted(c for _, c in free[:width])
        for c in chosen[pair]:
            for s, r in links:
                load[("send", s, c)] += 1
                load[("recv", r, c)] += 1
    return chosen


def _blocks(
    steps: list[_Step], limit: int, pair: bool | None, cap: int
) -> dict[Block, list[_Step]]:
    """Thread blocks of one GPU: one per (direction, peer, channel); the sends to and
    receives from one peer on one channel share a ``("pair", peer, channel)`` block where
    their steps fit in ``limit`` - all such with ``pair``, with ``None`` the smallest
    first until at most ``cap`` blocks remain."""
    blocks: dict[Block, list[_Step]] = defaultdict(list)
    for step in steps:
        blocks[step.tb].append(step)
    if pair is False:
        return blocks
    candidates = sorted(
        (len(blocks[tb]) + len(blocks[("recv", tb[1], tb[2])]), tb)
        for tb in blocks
        if tb[0] == "send" and ("recv", tb[1], tb[2]) in blocks
    )
    for size, (_, peer, chan) in candidates:
        if size > limit or (pair is None and len(blocks) <= cap):
            break
        merged = blocks.pop(("send", peer, chan)) + blocks.pop(("recv", peer, chan))
        blocks[("pair", peer, chan)] = merged
    return blocks


def _number(
    steps: dict[int, list[_Step]],
    schedule: ProgramShape,
    profile: RuntimeProfile,
    pair_peers: bool | None,
) -> dict[int, list[tuple[Block, list[_Step]]]]:
    """Group steps into thread blocks, order them by key, number them, check limits."""
    names = schedule.compute_nodes
    where = f"runtime {profile.name!r}"
    result: dict[int, list[tuple[Block, list[_Step]]]] = {}
    for gpu in range(len(names)):
        blocks = _blocks(
            steps.get(gpu, []), profile.max_steps, pair_peers, profile.max_threadblocks
        )
        order = sorted(blocks, key=lambda tb: (_KIND_ORDER[tb[0]], tb[2], tb[1]))
        if len(order) > profile.max_threadblocks:
            raise ExportError(
                f"GPU {gpu} ({names[gpu]}) needs {len(order)} thread blocks (one per peer, "
                f"direction and channel; send and receive paired where their steps fit in "
                f"one), above the {profile.max_threadblocks} of {where} "
                f"({profile.sources['max_threadblocks']})"
                + _more_blocks_hint(schedule, profile, len(order))
            )
        numbered = []
        for tb_id, tb in enumerate(order):
            block = sorted(blocks[tb], key=lambda s: s.key)
            if len(block) > profile.max_steps:
                raise ExportError(
                    f"GPU {gpu} ({names[gpu]}): thread block {tb_id} ({tb[0]}) needs "
                    f"{len(block)} steps, above the {profile.max_steps} of {where} "
                    f"({profile.sources['max_steps']}); use a smaller -k"
                )
            for index, step in enumerate(block):
                step.index, step.tb_id = index, tb_id
            numbered.append((tb, block))
        result[gpu] = numbered
    for gpu, blocks_of_gpu in result.items():
        for _, block in blocks_of_gpu:
            for step in block:
                if step.dep is None:
                    continue
                step.dep.has_dependent = True
                if step.dep.tb_id > profile.max_depid:
                    raise ExportError(
                        f"GPU {gpu} ({names[gpu]}): a step waits for thread block "
                        f"{step.dep.tb_id}, above the depid range 0..{profile.max_depid} of "
                        f"{where} ({profile.sources['max_depid']}); use a smaller -k"
                    )
    return result


def _more_blocks_hint(schedule: ProgramShape, profile: RuntimeProfile, needed: int) -> str:
    """What helps a GPU that needs ``needed`` thread blocks: fewer steps per peer (a
    smaller k, so more send/receive pairs share a block) while k > 1, and the runtimes
    whose cap is large enough."""

    hints = ["a smaller -k (fewer steps per peer let more of them pair)"] if schedule.k > 1 else []
    roomier = [name for name, other in RUNTIMES.items() if other.max_threadblocks >= needed]
    hints += [f"--runtime {name}" for name in roomier if name != profile.name]
    if not hints:
        return "; no runtime allows that many: this GPU talks to too many peers"
    return "; try " + " or ".join(hints)


def _render(
    schedule: ProgramShape,
    builder: ProgramSteps,
    tbs: dict[int, list[tuple[Block, list[_Step]]]],
    profile: RuntimeProfile,
    placement: str,
    name: str | None,
    proto: str,
    min_bytes: int,
    max_bytes: int,
) -> str:
    i_chunks, o_chunks, s_chunks = builder.chunks
    used_channels = 1 + max((tb[2] for blocks in tbs.values() for tb, _ in blocks), default=0)
    root = f" root={schedule.root}" if schedule.root is not None else ""
    attrs = {
        "name": name or f"optcoll {builder.collective} {schedule.topology} k={schedule.k}{root}",
        "proto": proto,
        "nchannels": str(used_channels),
        "nchunksperloop": str(max(i_chunks, o_chunks)),
        "ngpus": str(len(schedule.compute_nodes)),
        "coll": coll_spelling(profile, builder.collective),
        "inplace": "0" if placement == "outofplace" else "1",
        "outofplace": "0" if placement == "inplace" else "1",
        "minBytes": str(min_bytes),
        "maxBytes": str(max_bytes),
    }
    if builder.collective in _REDUCING:
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
            send = peer if kind in ("send", "pair") else -1
            if kind == "fused":  # receives from peer, sends to its fused sends' receiver
                send = next(st.fused.link[1] for st in block if st.fused and st.fused.link)
            tb_el = ET.SubElement(
                gpu_el,
                "tb",
                {
                    "id": str(tb_id),
                    "send": str(send),
                    "recv": str(peer if kind in ("recv", "pair", "fused") else -1),
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
    text = ET.tostring(algo, encoding="unicode").replace(" />", "/>") + "\n"
    return rank_order_comment(schedule.compute_nodes) + "\n" + text


def rank_order_comment(compute_nodes: tuple[str, ...]) -> str:
    """The XML comment naming the compute node of every rank (GPU ``id``), first in the file.

    The list is JSON with ``<``, ``>`` and the second ``-`` of ``--`` escaped, so that
    no node id can end the comment; the runtimes' readers skip ``<!-- ... -->``
    (``msccl_parser.cc`` ``mscclXmlSkipComment``, microsoft/msccl ``xml.cc``).

    Examples
    --------
    >>> print(rank_order_comment(("b0.gpu0", "x--y")))
    <!-- rank order (GPU id r is entry r): ["b0.gpu0", "x-\\u002dy"] -->
    """
    text = json.dumps(list(compute_nodes), ensure_ascii=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e")
    while "--" in text:
        text = text.replace("--", "-\\u002d")
    return f"<!-- rank order (GPU id r is entry r): {text} -->"
