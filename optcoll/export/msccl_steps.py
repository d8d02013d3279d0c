"""MSCCL algorithm XML of a step schedule (recursive doubling, Rabenseifner, Bruck, Swing, Bine,
PAT, multiport Swing, hierarchical, direct, ...).

A :class:`~optcoll.core.step_schedule.StepSchedule` is steps of messages between compute
nodes; :func:`msccl_step_program` writes each message as MSCCL steps (the thread blocks,
channels and XML of :mod:`optcoll.export.msccl`): a send (``s``) on the sender and a
receive on the receiver, ``rrc`` where the message is added (``Send.reduce``; for RCCL,
whose kernel runs no ``rrc``, an ``r`` and a ``re`` adding the operand to what it brought),
``r`` where it is stored; one pair per run of the message's blocks that are consecutive chunks on both
sides (at most the runtime's ``cnt``).

Buffers. Block ``b`` is chunk ``(b mod N) k + b div N`` of a buffer of ``N k`` chunks
(``k = blocks / N``; an allreduce's, a broadcast's and a reduce's blocks, a buffer of ``blocks``
chunks, in the order of the messages that carry them, :func:`_layout`). A rank's own data is
where the collective gives it (allgather, and a broadcast's root: its input, or its output
in place; the others: the input). Every receive writes a chunk nothing has written before:
the block's place in the output for its last write (allgather, allreduce, broadcast, a
reduce's root; a reduce-scatter's own blocks at their place in its output), else the next
free scratch chunks (one run per message). So no receive overwrites data a send may still be
reading, and a receive need not wait for the rank's own sends.

Order. The sends to and the receives from each peer have thread blocks of their own, and a
step waits (``depid``/``deps``) in one of two ways, whichever gives the shorter longest
chain of steps that wait for one another (each step costs an overhead; ties: the fewer
steps, then the first). By data: a send waits for the receive that wrote what it carries (a
message carries what its sender held at the start of its step), a reduction for the receive
that wrote the value it adds to, a store for nothing; the receives of one step from several
peers then run side by side (a multiport schedule's), but a message whose blocks two
receives wrote is one step per receive. In order (tried only where that cut a message:
uncut, the same steps wait for less by data): a rank's receives run one after another (each
waits for the rank's receive before it), and each send waits for the rank's last receive of
an earlier step. Either way every wait points to an earlier receive, and a receive waits
only for earlier receives and for its message: the program cannot deadlock, whatever a
connection holds.

Relays. An MSCCL connection is a transport between two GPUs, and in a topology only a link
or switches carry one: a pair joined by neither has none (``optcoll check-xml`` with the
topology refuses it; no GPU forwards a peer's data unless a step does). Given
the topology, a message between GPUs further apart (one-shot on a ring, a dimension-wise
schedule's partners two hops round a torus ring) goes along a shortest path of connections
(:func:`relay_paths`, the least-loaded one): each GPU on the way receives it into scratch
chunks of its own and sends it on (an ``r`` and an ``s`` waiting for it; an ``rcs`` where the
runtime fuses). A relayed step's transfers are keyed by hop counted back from the receivers,
so a thread block takes the step's first hops first and every wait still points to a
smaller key. Each relay costs one or two steps plan does not run (plan routes the message
over the links, as a switch would).

Placement. An allgather or broadcast program is written out of place (the own shard,
the root's vector, first copied from input to output, alongside) or in place. A
reduce-scatter, allreduce or reduce is written out of place only: in place its last sums
would overwrite inputs that earlier sends may still be reading.

What the XML cannot carry: a message's slicing (an MSCCL program runs once per loop over
its whole buffer, every message in as many pieces as a block has, where plan cuts a
message of ``c`` blocks into ``ceil(c M / blocks / slice)`` slices); a message whose blocks
are not consecutive chunks is several steps (Swing, Bine, Bruck, multiport Swing); a
receive is a step of its own (one more overhead in ``optcoll simulate`` per step of the
schedule: multiport Swing's allreduce on torus 4x4 at 1 MiB, 4 steps, plan 18.49 µs,
the XML 22.49) unless it is fused with the send forwarding it (``rcs``/``rrcs``, where the
runtime runs them, :mod:`optcoll.export.msccl_fusion`: a message of many chunks that adds
to what the previous step brought rarely fuses, as its receiver's next step waits for the
whole fused step); and, waiting in order, a rank's receives are taken one after another.
So ``simulate`` of the XML is slower than plan's time of the schedule wherever
overheads count (measured in ``docs/log_step.md``).

Examples
--------
>>> from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
>>> program = msccl_step_program(recursive_doubling_allreduce(("a", "b", "c", "d")))
>>> program.placement, program.nchunksperloop, program.text.count('type="re"')
('outofplace', 4, 8)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from optcoll.core.arguments import count_argument
from optcoll.core.step_schedule import StepSchedule
from optcoll.core.topology import Topology, reachable
from optcoll.exceptions import ExportError
from optcoll.export.msccl import (
    MscclProgram,
    _assign_channels,
    _most_peers,
    _number,
    _render,
)
from optcoll.export.msccl_blocks import Block, Location, _Step
from optcoll.export.msccl_fusion import (
    chain_channels,
    deadlocked_fusions,
    fuse,
    fuses,
    longest_chain,
)
from optcoll.export.runtimes import (
    DEFAULT_RUNTIME,
    RuntimeProfile,
    max_bytes_value,
    runtime_profile,
)

__all__ = ["msccl_step_program", "step_placements"]


@dataclass(frozen=True)
class _Shape:
    """The names the renderer reads of a schedule."""

    compute_nodes: tuple[str, ...]
    k: int
    topology: str
    root: str | None = None


@dataclass
class _StepBuilder:
    """Every GPU's MSCCL steps of a step schedule."""

    collective: str
    chunks: tuple[int, int, int]
    steps: dict[int, list[_Step]] = field(default_factory=lambda: defaultdict(list))


def step_placements(collective: str) -> tuple[str, ...]:
    """The placements :func:`msccl_step_program` writes for ``collective``.

    >>> step_placements("allgather"), step_placements("allreduce")
    (('outofplace', 'inplace'), ('outofplace',))
    """
    copied = ("allgather", "broadcast")
    return ("outofplace", "inplace") if collective in copied else ("outofplace",)


def msccl_step_program(
    schedule: StepSchedule,
    *,
    runtime: RuntimeProfile | str = DEFAULT_RUNTIME,
    placement: str = "outofplace",
    name: str | None = None,
    min_bytes: int = 0,
    max_bytes: int | None = None,
    topology: Topology | None = None,
    split_reductions: bool = False,
    spread: bool = False,
    pieces: int = 1,
) -> MscclProgram:
    """The MSCCL program of ``schedule`` for ``runtime`` (deterministic; see the module
    docstring), ``placement`` one of :func:`step_placements`. With ``topology``, a message
    between GPUs it joins by no link or switch path is relayed by the GPUs of a shortest
    path (:func:`relay_paths`). ``split_reductions``: every reducing receive an ``r`` and a
    ``re``, as for RCCL, also where the runtime runs ``rrc`` (an ``rrc`` waits for the value
    it adds to before it receives, so a rank's reducing receives of one step run one after
    another; split, they receive side by side and only the local ``re`` wait). ``spread``:
    a channel per transfer of a GPU pair, as far as the thread blocks allow, and no fusion
    (:func:`~optcoll.export.msccl._assign_channels`): a message's runs and a relay's
    receives then each have a thread block, their overheads side by side. ``pieces``: every
    message written as that many, each a piece of its blocks
    (:meth:`~optcoll.core.step_schedule.StepSchedule.in_pieces`): spread, a GPU forwards a
    message's first piece while the others still arrive (torus 4x4 allreduce at 1 MiB,
    multiport Swing (latency): 20.486 µs whole, 16.432 in 4 pieces).

    Raises
    ------
    ExportError
        A limit of the runtime (thread blocks, steps, channels, offsets) is exceeded, or
        the placement is not one this collective's program is correct in.
    """
    profile = runtime_profile(runtime) if isinstance(runtime, str) else runtime
    schedule = schedule.in_pieces(count_argument(pieces, "pieces"))
    coll = schedule.collective
    if placement not in step_placements(coll):
        raise ExportError(
            f"a step schedule's {coll} program is written {' and '.join(step_placements(coll))}"
            f", not {placement!r}"
        )
    nodes = schedule.compute_nodes
    k = schedule.rank_blocks
    shape = _Shape(nodes, k, schedule.method)
    # waiting for the data's receives runs a rank's receives side by side, but cuts a
    # message whose blocks two receives wrote into one step each: then keep the form whose
    # longest run of steps, one after another, is shorter (each step costs an overhead;
    # uncut, the same steps wait for less than in order, so never longer)
    paths = {} if topology is None else relay_paths(schedule, topology)
    forms = (paths, split_reductions, spread)
    builder, tbs, cut = _fused_steps(schedule, shape, profile, placement, True, forms)
    if cut:
        chained = _fused_steps(schedule, shape, profile, placement, False, forms)
        if _longest(chained[1]) < _longest(tbs):
            builder, tbs = chained[0], chained[1]
    text = _render(
        shape,
        builder,
        tbs,
        profile,
        placement,
        name or f"optcoll {coll} {schedule.method} ({schedule.num_steps} steps)",
        "Simple",
        min_bytes,
        max_bytes_value(profile, max_bytes, scratch=builder.chunks[2] > 0),
    )
    return MscclProgram(
        text=text,
        placement=placement,
        nchannels=1 + max((tb[2] for blocks in tbs.values() for tb, _ in blocks), default=0),
        nchunksperloop=max(builder.chunks[0], builder.chunks[1]),
        max_steps=max((len(b) for blocks in tbs.values() for _, b in blocks), default=0),
        max_threadblocks=max((len(blocks) for blocks in tbs.values()), default=0),
        max_peers=_most_peers(tbs),
    )


def _fused_steps(
    schedule: StepSchedule,
    shape: _Shape,
    profile: RuntimeProfile,
    placement: str,
    data: bool,
    forms: tuple[Paths, bool, bool],
) -> tuple[_StepBuilder, dict[int, list[tuple[Block, list[_Step]]]], bool]:
    """:func:`_steps`, fused where the runtime runs fused steps and that makes the longest
    chain of steps that wait for one another shorter (:func:`_longest`; a merged thread
    block runs steps one after another that two ran side by side). The fusions
    :func:`~optcoll.export.msccl_fusion.deadlocked_fusions` names are written unfused, until
    the program completes with connections of one chunk."""
    plain = _steps(schedule, shape, profile, placement, data, None, forms)
    if not fuses(profile) or forms[2]:
        return plain
    excluded: frozenset[tuple[int, tuple[int, ...]]] = frozenset()
    while True:
        fused = _steps(schedule, shape, profile, placement, data, excluded, forms)
        undo = {(st.gpu, st.key) for st in deadlocked_fusions(fused[1])}
        if not undo:
            return fused if _longest(fused[1]) < _longest(plain[1]) else plain
        excluded |= undo


def _steps(
    schedule: StepSchedule,
    shape: _Shape,
    profile: RuntimeProfile,
    placement: str,
    data: bool,
    excluded: frozenset[tuple[int, tuple[int, ...]]] | None,
    forms: tuple[Paths, bool, bool],
) -> tuple[_StepBuilder, dict[int, list[tuple[Block, list[_Step]]]], bool]:
    """The numbered steps of every GPU (:func:`_build` with ``data``), receives fused with
    the sends that forward them (unless ``excluded`` is None; not the receives
    ``(gpu, key)`` in it), their thread blocks, and whether waiting for the data cut a
    message into more steps."""
    coll, n, k = schedule.collective, len(shape.compute_nodes), shape.k
    builder = _StepBuilder(coll, (0, 0, 0))
    paths, split, spread = forms
    scratch, cut = _build(schedule, builder, k, placement == "inplace", profile, data, paths, split)
    builder.chunks = {
        "allgather": (k, n * k, scratch),
        "reduce_scatter": (n * k, k, scratch),
        "allreduce": (n * k, n * k, scratch),
        "broadcast": (k, k, scratch),
        "reduce": (k, k, scratch),
    }[coll]
    if max(builder.chunks) - 1 > profile.max_offset:
        raise ExportError(
            f"the {schedule.method} program needs {max(builder.chunks)} chunks of a buffer, "
            f"above the {profile.max_offset + 1} offsets runtime {profile.name!r} can address "
            f"({profile.sources['max_offset']})"
        )
    chained = (excluded is not None or (paths and not spread)) and chain_channels(
        builder.steps, profile
    )
    if not chained:
        _assign_channels(builder, shape, profile, None if spread else 1, spread)
    if excluded is not None:
        fuse(builder.steps, excluded, profile.max_steps)
    for gpu_steps in builder.steps.values():  # a wait inside one thread block is its order
        for step in gpu_steps:
            if step.dep is not None and step.dep.tb == step.tb:
                step.dep = None
    tbs = _number(builder.steps, shape, profile, False)
    return builder, tbs, cut


#: A relayed message's GPUs, from its sender to its receiver, by (step, message) index.
Paths = dict[tuple[int, int], tuple[int, ...]]


def relay_paths(schedule: StepSchedule, topology: Topology) -> Paths:
    """The GPUs relaying each message of ``schedule`` between two GPUs that ``topology``
    joins by no link or switch path (MSCCL connects only such pairs: its transports open a
    connection between two GPUs, and no GPU forwards a peer's data unless a step does):
    the ranks of a shortest path of such connections, from sender to receiver, by (step,
    message). Of the shortest paths each message takes, in schedule order, the one whose
    busiest connection carries the fewest blocks so far in that step (ties: the first in
    networkx's order), so a step's relayed messages spread over both ways round a ring.

    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines.logstep import recursive_doubling_allreduce
    >>> ring = build("ring:4")
    >>> paths = relay_paths(recursive_doubling_allreduce(ring.compute_nodes), ring)
    >>> sorted(paths.items())
    [((1, 0), (0, 1, 2)), ((1, 1), (1, 0, 3)), ((1, 2), (2, 3, 0)), ((1, 3), (3, 2, 1))]

    Raises
    ------
    ExportError
        A message between GPUs no chain of connections joins.
    """
    import networkx as nx

    nodes = schedule.compute_nodes
    rank = {v: i for i, v in enumerate(nodes)}
    out: dict[str, list[str]] = defaultdict(list)
    for u, v in topology.capacity:
        out[u].append(v)
    joined = nx.DiGraph()
    joined.add_nodes_from(range(len(nodes)))
    for v in nodes:  # the GPUs v reaches through switches only: its connections
        ends = reachable({x: out[x] if x == v or not topology.is_compute(x) else []
                          for x in topology.node_ids}, v)  # fmt: skip
        joined.add_edges_from((rank[v], rank[w]) for w in nodes if w in ends and w != v)
    paths: Paths = {}
    for s, messages in enumerate(schedule.steps):
        load: dict[tuple[int, int], int] = defaultdict(int)
        for m, send in enumerate(messages):
            src, dst = rank[send.src], rank[send.dst]
            if joined.has_edge(src, dst):
                load[(src, dst)] += len(send.blocks)
                continue
            try:
                options = [tuple(p) for p in nx.all_shortest_paths(joined, src, dst)]
            except nx.NetworkXNoPath:
                raise ExportError(
                    f"the {schedule.method} schedule sends from {send.src} to {send.dst}, "
                    f"which no chain of {topology.name}'s links and switches joins"
                ) from None
            path = min(options, key=lambda p: max(load[e] for e in zip(p, p[1:], strict=False)))
            for e in zip(path, path[1:], strict=False):
                load[e] += len(send.blocks)
            paths[(s, m)] = path
    return paths


def _longest(tbs: dict[int, list[tuple[Block, list[_Step]]]]) -> tuple[int, int]:
    """(steps in the longest chain of steps that wait for one another, steps)."""
    return longest_chain(tbs), sum(len(b) for bs in tbs.values() for _, b in bs)


#: block, source, operand, target, and the receives that wrote the source (on the sender)
#: and the operand (on the receiver; None: the rank's own input)
Target = tuple[int, Location, Location | None, Location, _Step | None, _Step | None]


def _build(
    schedule: StepSchedule,
    builder: _StepBuilder,
    k: int,
    inplace: bool,
    profile: RuntimeProfile,
    data: bool,
    paths: Paths,
    split_reductions: bool,
) -> tuple[int, bool]:
    """The steps of every message (see the module docstring), each waiting for the
    receives that wrote what it reads (``data``) or for the rank's receives in order;
    returns the scratch chunks the busiest rank uses and whether a message is more steps
    than its runs of consecutive chunks (their blocks written by several receives).

    A reducing receive is one ``rrc`` where the runtime runs it; elsewhere (RCCL) an ``r``
    into the target, then, in its thread block, a ``re`` adding the operand to it (the
    target is a chunk nothing has written before, so the ``r`` need not wait): the ``re``
    waits where the ``rrc`` would have, and it is the step later ones wait for."""
    most = profile.max_count
    split = split_reductions or "rrc" not in profile.launch_step_types
    nodes = schedule.compute_nodes
    n = len(nodes)
    rank = {v: i for i, v in enumerate(nodes)}
    coll = schedule.collective
    root = rank.get(schedule.root or "")

    place = _layout(schedule, k)

    def offset(b: int) -> int:
        return place[b]

    where: dict[tuple[int, int], Location] = {}  # (rank, block) -> where its value is
    for r in range(n):
        for b in range(schedule.blocks):
            if coll not in ("allgather", "broadcast"):
                where[(r, b)] = ("i", offset(b))
            elif coll == "allgather" and b % n == r:
                where[(r, b)] = ("o", offset(b)) if inplace else ("i", b // n)
            elif coll == "broadcast" and r == root:
                where[(r, b)] = ("o" if inplace else "i", offset(b))
    # the own shard (the broadcast's root: its vector) into the output, alongside
    for r in range(n) if coll in ("allgather", "broadcast") and not inplace else ():
        if coll == "broadcast" and r != root:
            continue
        base = 0 if coll == "broadcast" else r * k
        for first in range(0, k, most):
            cnt = min(most, k - first)
            copy = _Step("cpy", ("i", first), ("o", base + first), cnt, (-1, 0, first), r, None)
            builder.steps[r].append(copy)
    writes: dict[tuple[int, int], int] = defaultdict(int)  # writes left to each block
    for messages in schedule.steps:
        for send in messages:
            for b in send.blocks:
                writes[(rank[send.dst], b)] += 1
    used = [0] * n  # scratch chunks written on each rank
    cut = False  # a message cut where two receives wrote its blocks
    wrote: dict[tuple[int, int], _Step] = {}  # (rank, block) -> the receive of its value
    last_receive: dict[int, _Step] = {}  # each rank's latest receive so far
    for s, messages in enumerate(schedule.steps):
        # a relayed step's transfers are keyed by hop, counted back from the receivers, so a
        # thread block takes a step's first hops before its later ones and every wait still
        # points to a smaller key (the last hops, in message order, as unrelayed)
        top = max((len(paths[(s, m)]) - 2 for m in range(len(messages)) if (s, m) in paths),
                  default=None)  # fmt: skip
        before = dict(last_receive)  # what this step's sends wait for, in order
        start = dict(where)  # what this step's sends carry: the values at its start
        start_wrote = dict(wrote)  # and the receives that wrote them
        for m, send in enumerate(messages):
            src, dst = rank[send.src], rank[send.dst]
            targets: list[Target] = []
            for b in sorted(send.blocks, key=offset):
                if (src, b) not in start:
                    raise ExportError(
                        f"the {schedule.method} schedule sends block {b} from {send.src} "
                        "before it holds it"
                    )
                writes[(dst, b)] -= 1
                last = writes[(dst, b)] == 0
                if last and (coll not in ("reduce_scatter", "reduce") or dst == root):
                    target: Location = ("o", offset(b))
                elif last and b % n == dst:
                    target = ("o", b // n)
                else:
                    target = ("s", used[dst])
                    used[dst] += 1
                # a reduction adds to the receiver's latest value, once its receive is done
                writers = (start_wrote.get((src, b)), wrote.get((dst, b)))
                targets.append((b, start[(src, b)], where.get((dst, b)), target, *writers))
                where[(dst, b)] = target
            writer = {t[0]: t[4] for t in targets}
            unwritten: list[Target] = [(*t[:4], None, None) for t in targets]
            runs = _runs(targets if data else unwritten, most)
            cut = cut or len(runs) > len(_runs(unwritten, most))
            for j, run in enumerate(runs):
                (_, source, operand, target, carried, added), cnt = run[0], len(run)
                # the receive that wrote exactly the run's chunks, if one did
                forwards = writer[run[0][0]]
                if forwards is not None and (
                    forwards.dst != source
                    or forwards.cnt != cnt
                    or any(writer[item[0]] is not forwards for item in run)
                ):
                    forwards = None
                if not data:  # the rank's receives run one after another
                    carried, added = before.get(src), last_receive.get(dst)
                key: tuple[int, ...] = (s, m, j) if top is None else (s, top, m, j)
                sender, path = src, paths.get((s, m), (src, dst))
                if len(path) > 2:  # each relay receives into scratch, sends on from there
                    assert top is not None
                    for h, (a, b) in enumerate(zip(path, path[1:-1], strict=False)):
                        hop = (s, top + h + 2 - len(path), m, j)
                        relayed: Location = ("s", used[b])
                        used[b] += cnt
                        out = _Step("s", source, relayed, cnt, hop, a, (a, b), carried)
                        out.forwards = forwards
                        builder.steps[a].append(out)
                        forwards = carried = _Step("r", source, relayed, cnt, hop, b, (a, b))
                        builder.steps[b].append(forwards)
                        source = relayed
                    sender = path[-2]
                out = _Step("s", source, target, cnt, key, sender, (sender, dst), carried)
                out.forwards = forwards
                builder.steps[sender].append(out)
                if send.reduce and not split:
                    assert operand is not None  # a reducing rank holds its own input
                    into = _Step("rrc", operand, target, cnt, key, dst, (sender, dst), added)
                else:
                    into = _Step("r", source, target, cnt, key, dst, (sender, dst),
                                 None if data else added)  # fmt: skip
                builder.steps[dst].append(into)
                if send.reduce and split:
                    assert operand is not None
                    wait = added if data else None  # in order, the ``r`` waited already
                    into = _Step("re", operand, target, cnt, (*key, 1), dst, None, wait,
                                 joins=into)  # fmt: skip
                    builder.steps[dst].append(into)
                for item in run:
                    wrote[(dst, item[0])] = into
                last_receive[dst] = into
    return max(used), cut


def _layout(schedule: StepSchedule, k: int) -> dict[int, int]:
    """The buffer chunk of every block. An allgather's or reduce-scatter's block ``b`` is
    chunk ``(b mod N) k + b div N`` (its rank's shard, as the collective lays it out). An
    allreduce (a broadcast, a reduce) treats every chunk alike, so its blocks may lie in
    any order: sorted by the
    messages that carry them (numbered in step order), blocks that always travel together
    are consecutive chunks and their messages one run each (the direct steps of the
    hierarchical schedules: four runs a message become one on dgx-h100:4).

    >>> from optcoll.core.step_schedule import Send
    >>> s = StepSchedule("allreduce", "x", ("a", "b"), 4,
    ...                  ((Send("a", "b", (0, 2), True), Send("b", "a", (1, 3), True)),
    ...                   (Send("b", "a", (0, 2)), Send("a", "b", (1, 3)))))
    >>> _layout(s, 2)
    {0: 0, 2: 1, 1: 2, 3: 3}
    """
    n = len(schedule.compute_nodes)
    if schedule.collective in ("allgather", "reduce_scatter"):
        return {b: (b % n) * k + b // n for b in range(schedule.blocks)}
    carried: dict[int, list[int]] = {b: [] for b in range(schedule.blocks)}
    number = 0
    for messages in schedule.steps:
        for send in messages:
            for b in send.blocks:
                carried[b].append(number)
            number += 1
    order = sorted(range(schedule.blocks), key=lambda b: (carried[b], b))
    return {b: i for i, b in enumerate(order)}


def _runs(targets: list[Target], most: int) -> list[list[Target]]:
    """A message's blocks (in buffer order) cut into runs that are consecutive chunks in
    every buffer a step names (source, operand, target), at most ``most`` long."""
    runs: list[list[Target]] = []
    for item in targets:
        if runs and len(runs[-1]) < most and _follows(runs[-1][-1], item):
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs


def _follows(a: Target, b: Target) -> bool:
    """Whether every location of ``b`` is the chunk after ``a``'s, written by the same
    receives (a step waits for one)."""
    if a[4] is not b[4] or a[5] is not b[5]:
        return False
    for x, y in ((a[1], b[1]), (a[2], b[2]), (a[3], b[3])):
        if (x is None) != (y is None):
            return False
        if x is not None and y is not None and (x[0] != y[0] or y[1] != x[1] + 1):
            return False
    return True
