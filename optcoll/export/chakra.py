"""Chakra execution traces (ASTRA-sim custom collectives) from tree schedules.

ASTRA-sim runs a custom collective from one Chakra ET file per rank, ``PREFIX.<rank>.et``,
named (as ``PREFIX``) in the system JSON's ``all-reduce-implementation-custom``,
``all-gather-implementation-custom``, ``reduce-scatter-implementation-custom`` or
``all-to-all-implementation-custom`` (astra-sim ``astra-sim/system/astraccl/
CollectiveImplLookup.cc``; ``CustomAlgorithm.cc`` appends ``.<rank>.et``). A file is a
varint-delimited ``GlobalMetadata`` followed by varint-delimited ``Node`` messages
(``et_def.proto`` of mlcommons/chakra); ASTRA-sim issues a node once its ``data_deps``
have finished and runs ``COMM_SEND_NODE`` (``comm_dst``, ``comm_size`` bytes, ``comm_tag``),
``COMM_RECV_NODE`` (``comm_src``, ``comm_size``, ``comm_tag``) and ``COMP_NODE`` (here: a
reduction). The traces are for one message size (``comm_size`` is fixed in the file).

Data. The ``M``-byte message is cut into ``N`` blocks (block ``b`` has
``M*(b+1)//N - M*b//N`` bytes; broadcast and reduce: one block of ``M``), each block into
the schedule's ``k`` chunks the same way (chunk ``j`` of a ``B``-byte block has
``B*(j+1)//k - B*j//k`` bytes). Chunk ``c = b*k + j`` (all-to-all: block ``s*N + d`` is the
piece rank ``s`` sends to rank ``d``, of ``M*(d+1)//N - M*d//N`` bytes). Every node that
moves or reduces a chunk carries it as the attribute ``optcoll_chunk``; the metadata holds
``collective``, ``optcoll_ranks``, ``optcoll_chunks``, ``optcoll_bytes``, ``optcoll_rank``,
``optcoll_members`` (the compute nodes in rank order, JSON) and ``optcoll_root``, so :mod:`optcoll.verify.chakra` can judge the data. ASTRA-sim
ignores attributes it does not know.

Steps. A tree carries its chunks down (allgather, broadcast: a relay's sends depend on its
receive) or, reversed, up (reduce-scatter, reduce: a node's receives from its children
feed one ``COMP_NODE``, which ASTRA-sim runs for 1 ns, and its send to the parent depends on
it); allreduce runs a chunk up its tree, then down from the root (the root's sends and a
rank's receive of the result depend on its reduction and its own send up). An all-to-all
route carries each chunk hop by hop through the compute nodes on its path. Tags number the
transfers of each (sender, receiver) pair from 0, so every send meets exactly one receive
whatever the timing.

Examples
--------
>>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
>>> trees = (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
...          Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),)))
>>> files = chakra_traces(Schedule("allreduce", "pair", ("a", "b"), 1, trees), 1024)
>>> len(files), files[0].count(b"comm_tag")  # two ranks; rank 0: 2 sends, 2 receives
(2, 4)
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from optcoll.core.arguments import schedule_argument, size_argument
from optcoll.core.loads import PHASES
from optcoll.core.schedule import ImageTrees, Schedule, Tree
from optcoll.exceptions import ExportError
from optcoll.sim.quotient import tree_representatives
from optcoll.sim.simulator import piece_order

__all__ = ["chakra_traces", "smallest_chunk_message", "CHAKRA_SCHEMA", "ASTRA_SIM_COLLECTIVES"]

#: The schema string ASTRA-sim's collectiveapi converter writes into ``GlobalMetadata``.
CHAKRA_SCHEMA = "1.0.2-chakra.0.0.4"
#: Collectives ASTRA-sim runs from custom traces (``Workload.cc`` issues broadcast as a
#: fixed delay and refuses reduce), with their system-JSON keys.
ASTRA_SIM_COLLECTIVES = {
    "allreduce": "all-reduce-implementation-custom",
    "allgather": "all-gather-implementation-custom",
    "reduce_scatter": "reduce-scatter-implementation-custom",
    "alltoall": "all-to-all-implementation-custom",
}
_COMP, _SEND, _RECV = 4, 5, 6
#: What a transfer or reduction carries: one chunk, or several (a tuple).
Label = int | tuple[int, ...]


@dataclass
class _Node:
    id: int
    name: str
    type: int
    deps: list[int]
    attrs: dict[str, Any] = field(default_factory=dict)


class _Ranks:
    """The nodes of every rank as they are built; tags per (sender, receiver)."""

    def __init__(self, n: int) -> None:
        self.nodes: list[list[_Node]] = [[] for _ in range(n)]
        self.tags: dict[tuple[int, int], int] = defaultdict(int)

    def add(self, rank: int, kind: int, name: str, deps: list[int], **attrs: int | str) -> int:
        node = _Node(len(self.nodes[rank]), name, kind, [d for d in deps if d >= 0], attrs)
        self.nodes[rank].append(node)
        return node.id

    def transfer(self, src: int, dst: int, chunk: Label, size: int, after: list[int],
                 before: list[int], place: tuple[float, int, int | None] | None = None,
                 ) -> tuple[int, int]:  # fmt: skip
        """A send on ``src`` (after ``after``) and its receive on ``dst`` (after ``before``)
        of ``chunk`` (one chunk, or a tuple of the chunks it carries);
        ``place``: the send's place in its link's queue (``optcoll_order``) and its task
        number in the simulator (``optcoll_task``)."""
        tag = self.tags[(src, dst)]
        self.tags[(src, dst)] += 1
        common: dict[str, Any] = {"comm_size": size, "comm_tag": tag, **_label(chunk)}
        if place is not None:
            common["optcoll_order"], common["optcoll_task"], tie = place
            if tie is not None:
                common["optcoll_tie"] = tie
        send = self.add(src, _SEND, f"send {_named(chunk)} to {dst}", after, comm_src=src,
                        comm_dst=dst, **common)  # fmt: skip
        recv = self.add(dst, _RECV, f"recv {_named(chunk)} from {src}", before, comm_src=src,
                        comm_dst=dst, **common)  # fmt: skip
        return send, recv


def _label(chunk: Label) -> dict[str, int | str]:
    """The chunk label of a node: ``optcoll_chunk``, or for several chunks a JSON
    ``optcoll_chunk_list``."""
    if isinstance(chunk, int):
        return {"optcoll_chunk": chunk}
    if len(chunk) == 1:
        return {"optcoll_chunk": chunk[0]}
    return {"optcoll_chunk_list": json.dumps(list(chunk))}


def _named(chunk: Label) -> str:
    """``c<chunk>`` or, for several, ``c<first>-<last>`` (node names)."""
    if isinstance(chunk, int):
        return f"c{chunk}"
    return f"c{chunk[0]}" if len(chunk) == 1 else f"c{chunk[0]}-{chunk[-1]}"


def chakra_traces(
    schedule: Schedule,
    size: int,
    *,
    allgather: Schedule | None = None,
    slice_bytes: int | None = None,
    equivariant: bool = False,
    link_chains: bool = False,
    served: Sequence[float] | None = None,
) -> list[bytes]:
    """The Chakra ET file of every rank (rank ``r`` = ``schedule.compute_nodes[r]``).

    Parameters
    ----------
    schedule : Schedule
        A tree schedule (its trees in broadcast direction) or an all-to-all.
    size : int
        The message size ``M`` in bytes the traces are for.
    allgather : Schedule, optional
        With a reduce_scatter ``schedule``: the allgather trees that follow it, making an
        allreduce (as :func:`optcoll.export.msccl.msccl_program`).
    slice_bytes : int, optional
        Send each chunk in slices of at most this many bytes, as the simulator runs it
        (``ceil(chunk / slice_bytes)`` equal slices of the chunk's ``data(M) / k`` bytes,
        :func:`optcoll.sim.simulator.tree_tasks`): every slice is its own message, a relay
        forwards a slice once it has it, and every transfer carries ``optcoll_order``, its
        place in its link's queue under the schedule's order (``stats.priority``, a
        timetable's ``stats.starts``; :func:`optcoll.sim.simulator.piece_order`) as an
        integer rank, and ``optcoll_task``, the number the simulator gives its task
        (:func:`optcoll.sim.simulator.tree_tasks`, which breaks ties by it), so
        ``simulate`` runs the traces exactly as the schedule ran. Nodes are written slice by slice
        across the chunks, the order ASTRA-sim issues ready nodes in. The traces then hold
        ``k * slices`` chunks per block (``optcoll_chunks``). None (default): whole chunks.
    equivariant : bool
        With ``slice_bytes`` and a compact schedule (its trees images of representatives):
        every transfer also carries ``optcoll_tie``, the key that breaks ties alike on
        every translate (:func:`optcoll.sim.quotient.translate_ties`), as plan simulates
        such a schedule from its quotient; ``simulate`` then breaks ties by it.
    link_chains : bool
        With ``slice_bytes`` and a timetable (``stats.priority``, of every schedule given):
        issue every rank's sends into one link in the timetable's order, not only those
        that wait for the same nodes (the order gates of ``_gate_sends``). For ASTRA-sim,
        whose links serve messages first come first served: planned with
        ``store_and_forward``, the timetable's order is the order they come in.
    served : sequence of float, optional
        With ``link_chains``: chain every rank's sends into one link in this order
        instead, ``served[t]`` the time the send of ``optcoll_task`` ``t`` starts on its
        first link (as a simulation of the unchained traces ran them), for any schedule:
        ASTRA-sim then issues them in the order plan's simulation served them.

    Raises
    ------
    ExportError
        A chunk would have no byte (``size`` too small for the ranks and ``k``), or the
        schedule is malformed (a tree that does not span the compute nodes, chunks that do
        not add up to ``k``).
    """
    schedule_argument(schedule)
    size_argument(size, "size")
    n, k = len(schedule.compute_nodes), schedule.k
    coll = "allreduce" if allgather is not None else schedule.collective
    if allgather is not None and (
        schedule.collective != "reduce_scatter"
        or allgather.collective != "allgather"
        or allgather.compute_nodes != schedule.compute_nodes
        or allgather.k != k
    ):
        raise ExportError("an allreduce is composed of a reduce_scatter and an allgather schedule "
                          "of the same compute nodes and k")  # fmt: skip
    blocks = 1 if coll in ("broadcast", "reduce") else n
    if size < blocks * k:
        raise ExportError(
            f"--size {size} bytes is too small: the {coll} cuts it into {blocks * k} chunks "
            f"({blocks} block(s) of k = {k}), each needs at least one byte"
        )
    ranks = _Ranks(n)
    rank = {v: i for i, v in enumerate(schedule.compute_nodes)}
    if coll == "alltoall":
        _alltoall(schedule, size, rank, ranks)
    else:
        up = schedule.trees if coll in ("reduce_scatter", "reduce", "allreduce") else ()
        down = schedule.trees if coll in ("allgather", "broadcast") else ()
        if coll == "allreduce":
            down = allgather.trees if allgather is not None else schedule.trees
        root = None if schedule.root is None else rank.get(schedule.root)
        if coll in ("broadcast", "reduce") and root is None:
            raise ExportError(f"the {coll} schedule names no root among its compute nodes")
        up_of = _chunk_trees(up, rank, k, root)
        down_of = _chunk_trees(down, rank, k, root)
        count = _slice_count(size / (blocks * k), slice_bytes)
        names = schedule.compute_nodes
        sliced = slice_bytes is not None
        up_order = _orders(schedule, count, True, equivariant) if sliced else None
        down_order = _orders(allgather or schedule, count, False, equivariant) if sliced else None
        for part in range(count):
            for chunk in sorted(set(up_of) | set(down_of)):
                block, j = divmod(chunk, k)
                piece = (block * k + j) * count + part
                nbytes = _chunk_bytes(coll, size, n, k * count, piece)
                reduced: dict[int, int] = {}
                sent_up: dict[int, int] = {}
                if chunk in up_of:
                    order = _placed(up_order, up_of[chunk], names, count, part)
                    reduced, sent_up = _up(up_of[chunk][:2], piece, nbytes, ranks, order)
                if chunk in down_of:
                    order = _placed(down_order, down_of[chunk], names, count, part)
                    _down(down_of[chunk][:2], piece, nbytes, ranks, reduced, sent_up, order)
        k *= count
        if slice_bytes is not None:
            _rank_orders(ranks)
            timed = link_chains and (served is not None or all(
                s.stats.get("priority") == "timetable" for s in (schedule, allgather)
                if s is not None))  # fmt: skip
            _gate_sends(ranks, equivariant, _first_hops(up, down, rank), timed, served)
    meta: dict[str, int | str] = {"optcoll_ranks": n, "optcoll_chunks": k, "optcoll_bytes": size}
    if schedule.root is not None:
        meta["optcoll_root"] = rank[schedule.root]
    meta["optcoll_members"] = json.dumps(list(schedule.compute_nodes))
    return _encode(ranks, coll, meta)


def smallest_chunk_message(
    schedule: Schedule, size: int, *, slice_bytes: int | None = None, allgather: bool = False
) -> int:
    """The fewest bytes a message of ``chakra_traces(schedule, size, slice_bytes=...)``
    carries (``allgather``: one is given), without writing them: the smallest of the
    ``blocks * k * slices`` pieces (block sizes differ by at most a byte, and so do a
    block's pieces, so it is ``size // (blocks * k * slices)``; an all-to-all's pieces are
    cut alike).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> schedule = pack_arborescences(build("ring:4"))  # allgather, k = 2
    >>> schedule.k, smallest_chunk_message(schedule, 1000), smallest_chunk_message(
    ...     schedule, 2**20, slice_bytes=2**15)
    (2, 125, 32768)
    """
    coll = "allreduce" if allgather else schedule.collective
    blocks = 1 if coll in ("broadcast", "reduce") else len(schedule.compute_nodes)
    if coll == "alltoall":  # a piece of M / N bytes to each rank, in k chunks, unsliced
        return size // (blocks * schedule.k)
    count = _slice_count(size / (blocks * schedule.k), slice_bytes)
    return size // (blocks * schedule.k * count)


def _chunk_bytes(coll: str, size: int, n: int, k: int, chunk: int) -> int:
    block, j = divmod(chunk, k)
    whole = size
    if coll not in ("broadcast", "reduce"):
        part = block % n if coll == "alltoall" else block
        whole = size * (part + 1) // n - size * part // n
    return whole * (j + 1) // k - whole * j // k


def _slice_count(chunk: float, slice_bytes: int | None) -> int:
    """Slices of a ``chunk``-byte chunk: the simulator's rule (``_slices`` of
    :mod:`optcoll.sim.simulator`)."""
    return 1 if slice_bytes is None or chunk <= slice_bytes else math.ceil(chunk / slice_bytes)


Place = Callable[[str, str, int], tuple[float, int, int | None]]


def _orders(schedule: Schedule, count: int, reverse: bool, equivariant: bool) -> list[Place]:
    """Per tree of ``schedule``, where its pieces (numbered chunk-major) go in their links'
    queues, the number :func:`optcoll.sim.simulator.tree_tasks` gives their task, in the
    phase that runs the tree forward or, ``reverse``, toward its root, and (``equivariant``,
    a compact schedule) its tie key as :func:`optcoll.sim.quotient.translate_ties` gives it:
    the number of the same task of the tree's representative."""
    priority = schedule.stats.get("priority", "progress")
    starts = schedule.stats.get("starts") if priority == "timetable" else None
    phases = PHASES.get(schedule.collective, (reverse,))
    phase = phases.index(reverse) if reverse in phases else 0
    trees = schedule.trees
    representatives: Sequence[Tree] | None = None
    image_of: list[int] = []
    if equivariant and isinstance(trees, ImageTrees):
        representatives = trees.representatives
        # tree i's tie key is its representative's (not representative i mod their number)
        image_of = tree_representatives(trees)
    firsts = [0]
    for rep in representatives or ():
        firsts.append(firsts[-1] + rep.chunks * count * len(phases) * len(rep.edges))
    orders: list[Place] = []
    offset = 0
    for i, tree in enumerate(schedule.trees):
        place = piece_order(tree, "progress" if starts is not None else priority, count,
                            None if starts is None else starts[i])  # fmt: skip
        edges = len(tree.edges)
        position = {
            ((e.dst, e.src) if reverse else (e.src, e.dst)): edges - 1 - j if reverse else j
            for j, e in enumerate(tree.edges)
        }
        tie = None if representatives is None else firsts[image_of[i]]
        orders.append(_numbered(place, position, offset, phase * edges,
                                len(phases) * edges, tie))  # fmt: skip
        offset += tree.chunks * count * len(phases) * edges
    return orders


def _numbered(place: Callable[[str, str, int], float], position: dict[tuple[str, str], int],
              offset: int, phase: int, per_piece: int, tie: int | None) -> Place:  # fmt: skip
    def numbered(src: str, dst: str, n: int) -> tuple[float, int, int | None]:
        local = phase + n * per_piece + position[(src, dst)]
        return place(src, dst, n), offset + local, None if tie is None else tie + local

    return numbered


def _placed(
    orders: list[Place] | None,
    carrier: tuple[int, dict[int, list[int]], int, int],
    names: Sequence[str],
    count: int,
    part: int,
) -> Callable[[int, int], tuple[float, int, int | None]] | None:
    """Place, task number and tie key of slice ``part`` of a chunk sent from rank to rank
    (None: unordered)."""
    if orders is None:
        return None
    place, number = orders[carrier[2]], carrier[3] * count + part
    return lambda src, dst: place(names[src], names[dst], number)


def _rank_orders(ranks: _Ranks) -> None:
    """Every ``optcoll_order`` (a float place) replaced by its rank among them all."""
    places = sorted({n.attrs["optcoll_order"] for r in ranks.nodes for n in r
                     if "optcoll_order" in n.attrs})  # fmt: skip
    index = {value: i for i, value in enumerate(places)}
    for nodes in ranks.nodes:
        for node in nodes:
            if "optcoll_order" in node.attrs:
                node.attrs["optcoll_order"] = index[node.attrs["optcoll_order"]]


def _first_hops(
    up: Sequence[Tree], down: Sequence[Tree], rank: dict[str, int]
) -> dict[tuple[int, int], str | None]:
    """(sender, receiver) rank -> the node its transfers enter first (the tree edges' paths;
    None where trees route the pair differently)."""
    hops: dict[tuple[int, int], str | None] = {}
    for trees, reverse in ((up, True), (down, False)):
        for tree in trees:
            for e in tree.edges:
                pair = (rank[e.dst], rank[e.src]) if reverse else (rank[e.src], rank[e.dst])
                hop = e.path[-2] if reverse else e.path[1]
                hops[pair] = hop if hops.get(pair, hop) == hop else None
    return hops


def _gate_sends(
    ranks: _Ranks,
    equivariant: bool,
    first_hops: dict[tuple[int, int], str | None],
    timed: bool = False,
    served: Sequence[float] | None = None,
) -> None:
    """Issue a rank's sends that wait for the same nodes and enter the same link in their
    queue order; ``timed`` (a timetable, whose queue order is the order of its start times):
    all of a rank's sends that enter the same link.

    ASTRA-sim issues the nodes that become ready together in the order of an
    ``std::unordered_set`` (``issue_dep_free_nodes`` of ``CustomAlgorithm.cc`` walks
    ``get_dependancy_free_nodes()`` of Chakra's ``feeder_v3/dependancy_solver.h``), not in
    file order, and each link serves messages first come first served
    (``Link::send`` of astra-network-analytical ``congestion_aware/network/Link.cpp``
    appends to ``pending_chunks``). Sends of one rank with the same dependencies are put in
    the simulator's queue order (``optcoll_order``, then ``optcoll_tie`` for a compact
    schedule, else ``optcoll_task``) and chained by order gates: a ``COMP_NODE`` labelled
    ``optcoll_gate`` that moves no data, which ASTRA-sim runs for 1 ns (``runtime()`` 0,
    ``CustomAlgorithm::issue``), so the ``j``-th send is issued ``j - 1`` ns after the first,
    behind it in every queue they share. Sends that enter different links (``first_hops``)
    are not chained. optcoll's simulator gives a node that moves no data no time, so the
    gates change nothing there.

    Sends with different dependencies that become ready at the same time are issued in
    the order ASTRA-sim's event queue delivers their dependencies, not in the queue order:
    on a 4x4 torus a timetable all-gather of 1 MiB then ran 9 % slower in ASTRA-sim than
    planned (a forwarded chunk queued behind two others). Planned for store-and-forward
    links (first come first served, as ASTRA-sim's), a timetable's sends start in the order
    of their start times, so there (``timed``) every send of a rank into a link is chained:
    its gate waits for its own dependencies and for the previous send's gate (or, for the
    second send, the first send's dependencies). A tree schedule's queue order is a
    priority that a later-ready send may pass (so is a timetable's under cut-through
    links, where plan's simulator serves a link by priority), so there only sends that
    wait for the same nodes are chained. ``served`` (with ``timed``): a time per
    ``optcoll_task``, the order to chain every send of a rank into a link in (the order a
    simulation served them), for a tree schedule too."""
    key = "optcoll_tie" if equivariant else "optcoll_task"
    for rank, nodes in enumerate(ranks.nodes):
        groups: dict[tuple[Any, ...], list[_Node]] = defaultdict(list)
        for node in nodes:
            if node.type == _SEND and "optcoll_order" in node.attrs:
                hop = first_hops.get((rank, node.attrs["comm_dst"]))
                groups[(hop,) if timed else (hop, tuple(sorted(node.deps)))].append(node)
        for sends in groups.values():
            if served is not None:
                sends.sort(key=lambda n: (served[n.attrs["optcoll_task"]], n.attrs["optcoll_task"]))
            else:
                sends.sort(key=lambda n: (n.attrs["optcoll_order"], n.attrs.get(key, 0)))
            issued = list(sends[0].deps)  # what the previous send's issue waits for
            for j, later in enumerate(sends[1:]):
                deps = sorted({*later.deps, *issued}) if timed else issued
                gate = ranks.add(rank, _COMP, f"gate {j + 1}", deps, optcoll_gate=1)
                issued = [gate]
                later.deps = [gate]


def _chunk_trees(
    trees: Sequence[Tree], rank: dict[str, int], k: int, root: int | None
) -> dict[int, tuple[int, dict[int, list[int]], int, int]]:
    """chunk -> (root rank, children lists by rank, tree index, the chunk's number within
    its tree) of the tree that carries it."""
    result = {}
    used: dict[int, int] = defaultdict(int)
    for index, tree in enumerate(trees):
        if tree.root not in rank:
            raise ExportError(f"tree {index}: root {tree.root!r} is not a compute node")
        r = rank[tree.root]
        children: dict[int, list[int]] = defaultdict(list)
        seen = {r}
        for edge in tree.edges:
            if edge.src not in rank or edge.dst not in rank or rank[edge.dst] in seen:
                raise ExportError(f"tree {index} (root {tree.root!r}) is not an arborescence of "
                                  f"the compute nodes at edge {edge.src} -> {edge.dst}")  # fmt: skip
            seen.add(rank[edge.dst])
            children[rank[edge.src]].append(rank[edge.dst])
        if len(seen) != len(rank) or not _reaches_all(r, children, len(rank)):
            raise ExportError(f"tree {index} (root {tree.root!r}) does not span the compute nodes")
        base = 0 if root is not None else r * k
        for j in range(used[r], used[r] + tree.chunks):
            result[base + j] = (r, dict(children), index, j - used[r])
        used[r] += tree.chunks
    for r, count in used.items():
        if count != k:
            raise ExportError(f"the trees of root {r} carry {count} chunks, expected k = {k}")
    return result


def _reaches_all(root: int, children: dict[int, list[int]], n: int) -> bool:
    seen, stack = {root}, [root]
    while stack:
        for c in children.get(stack.pop(), ()):
            seen.add(c)
            stack.append(c)
    return len(seen) == n


def _up(
    tree: tuple[int, dict[int, list[int]]], chunk: Label, size: int, ranks: _Ranks,
    place: Callable[[int, int], tuple[float, int, int | None]] | None = None,
) -> tuple[dict[int, int], dict[int, int]]:  # fmt: skip
    """Reduce ``chunk`` toward the tree's root: every rank's last reduction and send up."""
    root, children = tree
    order = _preorder(root, children)
    last: dict[int, int] = {}
    sent: dict[int, int] = {}
    for v in reversed(order):  # children before parents
        received = []
        for c in children.get(v, ()):
            send, recv = ranks.transfer(c, v, chunk, size, [last.get(c, -1)], [],
                                        None if place is None else place(c, v))  # fmt: skip
            sent[c] = send
            received.append(recv)
        if received:  # one reduction of all: ASTRA-sim runs each COMP_NODE at least 1 ns
            from_ = ",".join(str(c) for c in children[v])
            last[v] = ranks.add(v, _COMP, f"reduce {_named(chunk)} from {from_}", received,
                                **_label(chunk))  # fmt: skip
        else:
            last[v] = -1
    return last, sent


def _down(
    tree: tuple[int, dict[int, list[int]]], chunk: Label, size: int, ranks: _Ranks,
    reduced: dict[int, int], sent_up: dict[int, int],
    place: Callable[[int, int], tuple[float, int, int | None]] | None = None,
) -> None:  # fmt: skip
    """Carry ``chunk`` from the tree's root to every rank; the root's sends wait for its
    reduction, a rank's receive for its own send up (it overwrites what that sent)."""
    root, children = tree
    have = {root: reduced.get(root, -1)}
    for v in _preorder(root, children):
        for c in children.get(v, ()):
            _, have[c] = ranks.transfer(v, c, chunk, size, [have[v]], [sent_up.get(c, -1)],
                                        None if place is None else place(v, c))  # fmt: skip


def _preorder(root: int, children: dict[int, list[int]]) -> list[int]:
    order, stack = [], [root]
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(reversed(children.get(v, ())))
    return order


def _alltoall(schedule: Schedule, size: int, rank: dict[str, int], ranks: _Ranks) -> None:
    n, k = len(rank), schedule.k
    pairs = set()
    for index, route in enumerate(schedule.routes):
        if route.src not in rank or route.dst not in rank or route.src == route.dst:
            raise ExportError(f"route {index}: {route.src} -> {route.dst} is not a pair of "
                              "compute nodes")  # fmt: skip
        s, d = rank[route.src], rank[route.dst]
        pairs.add((s, d))
        first = 0
        for path in route.paths:
            hops = [rank[v] for v in path.path if v in rank]
            if hops[:1] != [s] or hops[-1:] != [d] or len(set(hops)) != len(hops):
                raise ExportError(f"route {index} ({route.src} -> {route.dst}): a path must run "
                                  "from its source to its sink through each compute node once")  # fmt: skip
            for j in range(first, first + path.chunks):
                chunk = (s * n + d) * k + j
                nbytes = _chunk_bytes("alltoall", size, n, k, chunk)
                have = -1
                for a, b in zip(hops, hops[1:], strict=False):
                    _, have = ranks.transfer(a, b, chunk, nbytes, [have], [])
            first += path.chunks
        if first != k:
            raise ExportError(f"route {index} ({route.src} -> {route.dst}) carries {first} "
                              f"chunks, expected k = {k}")  # fmt: skip
    if len(pairs) != n * (n - 1):
        raise ExportError(f"the all-to-all has routes for {len(pairs)} of the {n * (n - 1)} pairs")


def _encode(ranks: _Ranks, coll: str, meta: dict[str, int | str]) -> list[bytes]:
    """Each rank's nodes as varint-delimited protobuf messages (metadata first)."""
    classes = _message_classes()
    files = []
    for r, nodes in enumerate(ranks.nodes):
        attr = classes["AttributeProto"]
        metadata = classes["GlobalMetadata"](
            version="0.0.4",
            attr=[
                attr(name="schema", string_val=CHAKRA_SCHEMA),
                attr(name="collective", string_val=coll),
                *(
                    attr(name=key, string_val=value)
                    if isinstance(value, str)
                    else attr(name=key, uint64_val=value)
                    for key, value in meta.items()
                ),
                attr(name="optcoll_rank", uint64_val=r),
            ],  # fmt: skip
        )
        parts = [metadata.SerializeToString()]
        for node in nodes:
            message = classes["Node"](
                id=node.id,
                name=node.name,
                type=node.type,
                data_deps=node.deps,
                attr=[_attribute(attr, key, value) for key, value in node.attrs.items()],
            )
            parts.append(message.SerializeToString())
        files.append(b"".join(_varint(len(p)) + p for p in parts))
    return files


def _varint(value: int) -> bytes:
    """``value`` (>= 0) as a protobuf varint: 7 bits a byte, low first, high bit = more."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _attribute(attr: Any, key: str, value: int | str) -> Any:
    """``comm_src``/``comm_dst``/``comm_tag`` as int32 and ``comm_size`` as int64, the only
    kinds Chakra's own feeder reads (mlcommons/chakra ``src/feeder/et_feeder_node.cpp``:
    ``attr.int32_val()``, ``attr.int64_val()``; another kind reads as 0), and the kinds
    Chakra's converters write; ASTRA-sim's ``feeder_v3`` converts any integer kind. Our
    labels as uint64 (a list of chunks as a JSON string)."""
    if isinstance(value, str):
        return attr(name=key, string_val=value)
    if key in ("comm_src", "comm_dst", "comm_tag"):
        return attr(name=key, int32_val=value)
    if key == "comm_size":
        return attr(name=key, int64_val=value)
    return attr(name=key, uint64_val=value)


_CLASSES: dict[str, Any] = {}


def _message_classes() -> dict[str, Any]:
    """Message classes of the part of ``et_def.proto`` (package ``ChakraProtoMsg``) the
    writer uses, from a descriptor built here: field names, numbers and types as in
    mlcommons/chakra ``schema/protobuf/et_def.proto``."""
    if _CLASSES:
        return _CLASSES
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    f = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="optcoll_chakra_et_def.proto", package="ChakraProtoMsg", syntax="proto3"
    )
    attribute = proto.message_type.add(name="AttributeProto")
    attribute.oneof_decl.add(name="value")
    for name, number, kind in (("name", 1, f.TYPE_STRING), ("doc_string", 2, f.TYPE_STRING)):
        attribute.field.add(name=name, number=number, type=kind, label=f.LABEL_OPTIONAL)
    for name, number, kind in (
        ("int32_val", 7, f.TYPE_INT32),
        ("int64_val", 9, f.TYPE_INT64),
        ("uint64_val", 13, f.TYPE_UINT64),
        ("string_val", 29, f.TYPE_STRING),
    ):
        attribute.field.add(
            name=name, number=number, type=kind, label=f.LABEL_OPTIONAL, oneof_index=0
        )
    metadata = proto.message_type.add(name="GlobalMetadata")
    metadata.field.add(name="version", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    metadata.field.add(
        name="attr", number=2, type=f.TYPE_MESSAGE, label=f.LABEL_REPEATED,
        type_name=".ChakraProtoMsg.AttributeProto",
    )  # fmt: skip
    node_type = proto.enum_type.add(name="NodeType")
    for name, number in (
        ("INVALID_NODE", 0), ("METADATA_NODE", 1), ("MEM_LOAD_NODE", 2), ("MEM_STORE_NODE", 3),
        ("COMP_NODE", 4), ("COMM_SEND_NODE", 5), ("COMM_RECV_NODE", 6), ("COMM_COLL_NODE", 7),
    ):  # fmt: skip
        node_type.value.add(name=name, number=number)
    node = proto.message_type.add(name="Node")
    node.field.add(name="id", number=1, type=f.TYPE_UINT64, label=f.LABEL_OPTIONAL)
    node.field.add(name="name", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    node.field.add(
        name="type", number=3, type=f.TYPE_ENUM, label=f.LABEL_OPTIONAL,
        type_name=".ChakraProtoMsg.NodeType",
    )  # fmt: skip
    for name, number in (("ctrl_deps", 4), ("data_deps", 5)):
        node.field.add(name=name, number=number, type=f.TYPE_UINT64, label=f.LABEL_REPEATED)
    for name, number in (("start_time_micros", 6), ("duration_micros", 7)):
        node.field.add(name=name, number=number, type=f.TYPE_UINT64, label=f.LABEL_OPTIONAL)
    node.field.add(
        name="attr", number=10, type=f.TYPE_MESSAGE, label=f.LABEL_REPEATED,
        type_name=".ChakraProtoMsg.AttributeProto",
    )  # fmt: skip
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    for name in ("AttributeProto", "GlobalMetadata", "Node"):
        descriptor = pool.FindMessageTypeByName(f"ChakraProtoMsg.{name}")
        _CLASSES[name] = message_factory.GetMessageClass(descriptor)
    return _CLASSES
