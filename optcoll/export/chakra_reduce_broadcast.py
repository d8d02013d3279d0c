"""Chakra execution traces of an allreduce by reduce + broadcast over trees of the ranks,
sliced and ordered as plan simulates it.

``optcoll plan``'s reduce + broadcast candidates of an allreduce (NCCL's double binary
tree, the spanning trees of
:func:`optcoll.schedules.spanning_tree_allreduce.reduce_broadcast_trees`, the shallow trees
of :func:`optcoll.schedules.shallow_trees.shallow_trees`) split the whole ``M``-byte
message into ``k`` chunks among trees of the compute nodes (an
:class:`~optcoll.core.aggregation.AggregationSchedule` whose apexes are compute nodes,
:func:`optcoll.export.mscclpp_reduce_broadcast.broadcast_trees`): tree ``t`` carries
chunks ``c_0 + ... + c_{t-1}`` to ``c_0 + ... + c_t`` of every rank's buffer, each cut
into plan's ``ceil(M / k / slice)`` slices (:func:`optcoll.sim.simulator.tree_tasks`
with phases ``(True, False)``). :func:`reduce_broadcast_traces` writes every slice as
:mod:`optcoll.export.chakra` writes a tree allreduce's: up the tree (a rank's receives
from its children feed one ``COMP_NODE``, the reduction, and its send to its parent
waits for it), then down from the root (the root's sends wait for its reduction, a
rank's receive of the sum for its own send up, which it overwrites); every transfer
carries ``optcoll_task``, the number ``tree_tasks`` gives its task, and
``optcoll_order``, its place in its link's queue under plan's link order, so ``optcoll
simulate`` breaks ties as plan did; sends of a rank that wait for the same nodes and
enter the same link are issued in that order through order gates, and with
``link_chains`` every send of a rank into a link in the order a simulation served them
(``_gate_sends`` of :mod:`optcoll.export.chakra`: ASTRA-sim issues ready nodes in any
order and serves a link first come first served).

Data. ``optcoll check-et`` (:mod:`optcoll.verify.chakra`) numbers an allreduce's data in
``N`` blocks of ``optcoll_chunks`` chunks; the ``P = k * slices`` pieces here cut the
whole message. The traces declare ``U / N`` chunks per block, ``U = lcm(N, P)``, and
piece ``p`` (slice ``s`` of chunk ``j``: ``p = j * slices + s``) carries chunks ``p U / P``
to ``(p + 1) U / P`` (``optcoll_chunk_list`` where that is more than one), its
``comm_size`` their bytes: within two bytes of plan's ``M / P``, exactly it where ``U``
divides ``M``.

What the traces cannot carry of plan's run: a routed tree edge's path (a shallow tree's
edge between ranks the topology does not join): a send names only its receiver, and
``simulate`` routes it over the sender's widest path
(:func:`optcoll.sim.programs.chakra_tasks`), ASTRA-sim over its own routes.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.schedules.spanning_tree_allreduce import spanning_tree_schedule
>>> files = reduce_broadcast_traces(spanning_tree_schedule(build("ring:4")), 4096)
>>> len(files), files[0].count(b"comm_tag")  # n0 roots two of the four trees
(4, 12)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.arguments import size_argument
from optcoll.core.schedule import Schedule
from optcoll.exceptions import ExportError
from optcoll.export.chakra import (
    _chunk_bytes,
    _chunk_trees,
    _down,
    _encode,
    _first_hops,
    _gate_sends,
    _orders,
    _placed,
    _rank_orders,
    _Ranks,
    _slice_count,
    _up,
)
from optcoll.export.mscclpp_reduce_broadcast import broadcast_trees

__all__ = ["reduce_broadcast_traces", "smallest_piece_message"]


def reduce_broadcast_traces(
    schedule: AggregationSchedule,
    size: int,
    *,
    slice_bytes: int | None = None,
    priority: str = "progress",
    link_chains: bool = False,
    served: Sequence[float] | None = None,
) -> list[bytes]:
    """The Chakra ET file of every rank (rank ``r`` = ``schedule.compute_nodes[r]``) of the
    allreduce that reduces up and broadcasts down the trees of ``schedule`` (module
    docstring), for an ``size``-byte message.

    Parameters
    ----------
    schedule : AggregationSchedule
        Trees of the compute nodes, each apex a compute node
        (:func:`~optcoll.export.mscclpp_reduce_broadcast.broadcast_trees`).
    size : int
        The message size ``M`` in bytes.
    slice_bytes : int, optional
        Plan's slice: each chunk in ``ceil(M / k / slice_bytes)`` slices (None: whole
        chunks, unordered).
    priority : str
        The link order plan ran the trees in (``stats.priority`` of a tree schedule,
        :data:`optcoll.core.schedule.PRIORITIES`), written into every transfer.
    link_chains, served : bool, sequence of float
        With ``slice_bytes``: chain every rank's sends into one link in the order
        ``served`` gives (a start time per ``optcoll_task``, as a simulation of the
        unchained traces ran them), as :func:`optcoll.export.chakra.chakra_traces` does.

    Raises
    ------
    ExportError
        A tree that is not a spanning tree of the compute nodes reduced up and broadcast
        down the same edges, or ``size`` too small for a byte per piece.
    """
    trees = broadcast_trees(schedule)
    size_argument(size, "size")
    names = schedule.compute_nodes
    n, k = len(names), schedule.k
    rank = {v: i for i, v in enumerate(names)}
    count = _slice_count(size / k, slice_bytes)
    if size < k * count:
        raise ExportError(
            f"--size {size} bytes is too small: the reduce + broadcast trees cut it into "
            f"{k * count} pieces ({k} chunks of {count} slices), each needs at least one byte"
        )
    units, labelled = _pieces(n, k, count, size)
    carriers = {}  # chunk -> (root, children, tree index, its number within the tree)
    first = 0
    for index, tree in enumerate(trees):
        one = _chunk_trees((tree,), rank, tree.chunks, 0)
        for j, (root, children, _, number) in one.items():
            carriers[first + j] = (root, children, index, number)
        first += tree.chunks
    if first != k:
        raise ExportError(f"the reduce + broadcast trees carry {first} chunks, expected k = {k}")
    ranks = _Ranks(n)
    sliced = slice_bytes is not None
    shaped = Schedule("allreduce", schedule.topology, names, k, trees,
                      stats={"priority": priority})  # fmt: skip
    up_order = _orders(shaped, count, True, False) if sliced else None
    down_order = _orders(shaped, count, False, False) if sliced else None
    for part in range(count):  # slice by slice across the chunks, as chakra_traces
        for chunk in range(k):
            carrier = carriers[chunk]
            label, nbytes = labelled[chunk * count + part]
            order = _placed(up_order, carrier, names, count, part)
            reduced, sent_up = _up(carrier[:2], label, nbytes, ranks, order)
            order = _placed(down_order, carrier, names, count, part)
            _down(carrier[:2], label, nbytes, ranks, reduced, sent_up, order)
    if sliced:
        _rank_orders(ranks)
        _gate_sends(ranks, False, _first_hops(trees, trees, rank),
                    link_chains and served is not None, served)  # fmt: skip
    meta: dict[str, int | str] = {
        "optcoll_ranks": n,
        "optcoll_chunks": units // n,
        "optcoll_bytes": size,
        "optcoll_members": json.dumps(list(names)),
    }
    method = schedule.stats.get("method")
    if isinstance(method, str):
        meta["optcoll_method"] = method
    return _encode(ranks, "allreduce", meta)


def smallest_piece_message(
    schedule: AggregationSchedule, size: int, slice_bytes: int | None
) -> int:
    """The fewest bytes a message of ``reduce_broadcast_traces(schedule, size,
    slice_bytes=...)`` carries, without writing them.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.spanning_tree_allreduce import spanning_tree_schedule
    >>> schedule = spanning_tree_schedule(build("ring:4"))  # k = 4
    >>> smallest_piece_message(schedule, 10**6, None), smallest_piece_message(schedule, 2**20, 2**15)
    (250000, 32768)
    """
    k = schedule.k
    count = _slice_count(size / k, slice_bytes)
    _, labelled = _pieces(len(schedule.compute_nodes), k, count, size)
    return min(nbytes for _, nbytes in labelled)


def _pieces(n: int, k: int, count: int, size: int) -> tuple[int, list[tuple[tuple[int, ...], int]]]:
    """The checker's chunks ``U = lcm(n, k * count)`` of an allreduce over ``n`` ranks, and
    per piece (``chunk * count + slice``) the chunks it carries and their bytes (module
    docstring)."""
    pieces = k * count
    units = math.lcm(n, pieces)
    per = units // pieces
    labelled = []
    for piece in range(pieces):
        label = tuple(range(piece * per, (piece + 1) * per))
        labelled.append(
            (label, sum(_chunk_bytes("allreduce", size, n, units // n, c) for c in label))
        )
    return units, labelled
