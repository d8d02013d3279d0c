"""MSCCL++ execution plans of an allreduce by reduce + broadcast over trees of the GPUs.

``optcoll plan``'s reduce + broadcast candidates of an allreduce (NCCL's double binary
tree, :func:`optcoll.schedules.baselines.trees.double_binary_trees`; the spanning trees
of :func:`optcoll.schedules.spanning_tree_allreduce.reduce_broadcast_trees`; the shallow
trees of routed edges of :func:`optcoll.schedules.shallow_trees.shallow_trees`) split the
whole message among trees of the compute nodes: tree ``t`` carries ``c_t`` of the ``k``
chunks of every GPU's buffer, reduces them up to its root and broadcasts the sum back
down (:func:`optcoll.sim.simulator.tree_tasks` with phases ``(True, False)``, slice by
slice). As a schedule they are an :class:`~optcoll.core.aggregation.AggregationSchedule`
whose apexes are compute nodes (:func:`optcoll.schedules.spanning_tree_allreduce.aggregation_trees`,
:func:`~optcoll.schedules.spanning_tree_allreduce.is_spanning_tree_allreduce`).

:func:`mscclpp_reduce_broadcast_plan` writes one in the ops and rules of
:mod:`optcoll.export.mscclpp` (microsoft/mscclpp 1f5f065d, whose executor's parser and
kernel that module cites), with its steps and renderer: tree ``t`` is the range of chunks
``c_0 + ... + c_{t-1}`` to ``c_0 + ... + c_t`` of every GPU's buffer (``k`` chunks in
the input and the output, as a reduce's or a broadcast's buffer); a node waits for its
children's partial sums (put into its scratch), sums them with its input (``re``, or
``res`` on memory channels) and puts the sum into its parent's scratch; the root sums
into its output, releases the range's semaphore, and its broadcast block (acquiring it
unit by unit) puts the sum into its children's outputs, each child forwarding it down.
The reduction and the broadcast of a range run in two thread blocks of the same id on
every GPU (up to 32 ranges; beyond, ranges share blocks as the tree writer packs them),
each step a ``pipeline`` over units of ``unit_size`` bytes, so the broadcast of unit
``i`` runs while unit ``i + 1`` is reduced, as plan's slices do: with
:func:`tree_unit`, plan's piece (its slice, or the whole chunk where that is smaller) is
the unit, so a relay forwards what plan's relay forwards. Every written region is
written once; the block order (phase, level, range) makes every wait follow the signal
it waits for, so the plan cannot deadlock (:mod:`optcoll.export.mscclpp`).

What the file cannot carry of plan's run: the link order (plan's ``depth`` order serves
the slice with most edges ahead first; a file's link serves what comes first), and a
routed edge's path (a GPU writes to a peer; ``optcoll simulate`` routes the write over
the widest path, :func:`optcoll.sim.programs.mscclpp_tasks`, where the shallow trees
chose theirs: mesh 4x4 at 1 MiB, 20 of their 104 GPU pairs). Plan charges the per-step
overhead per slice and connection, the file per op that issues a transfer and unit.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.schedules.spanning_tree_allreduce import spanning_tree_schedule
>>> plan = mscclpp_reduce_broadcast_plan(spanning_tree_schedule(build("ring:4")), unit_size=2**16)
>>> gpu = plan.document["gpus"][0]  # n0: the root of two of the four trees
>>> plan.document["collective"], gpu["input_chunks"], gpu["output_chunks"]
('allreduce', 4, 4)
>>> [[op["name"] for op in tb["ops"][0]["ops"]] for tb in gpu["threadblocks"][:2]]
[['wait', 'nop', 're', 'nop', 'sem_release'], ['sem_acquire', 'nop', 'pws']]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import cast

from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.schedule import Schedule, Tree
from optcoll.exceptions import ExportError
from optcoll.export.mscclpp import (
    ALIGNMENT,
    MAX_OPS,
    MscclppPlan,
    Segment,
    _check_tree,
    _Limit,
    _load,
    _pack,
    _render,
    _steps,
    channel_pairs,
    mscclpp_placements,
)
from optcoll.export.mscclpp_steps import _Shape
from optcoll.schedules.spanning_tree_allreduce import is_spanning_tree_allreduce

__all__ = ["mscclpp_reduce_broadcast_plan", "tree_unit", "broadcast_trees"]


def broadcast_trees(schedule: AggregationSchedule) -> tuple[Tree, ...]:
    """The trees of ``schedule`` in broadcast direction (root = apex, edges its multicast
    edges), as plan's candidates hold them.

    Raises
    ------
    ExportError
        A tree that is not a spanning tree of the compute nodes reduced up and broadcast
        down the same edges (a switch reduces or multicasts: NVLS, SHARP).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.spanning_tree_allreduce import spanning_tree_schedule
    >>> [(t.root, t.chunks) for t in broadcast_trees(spanning_tree_schedule(build("ring:4")))]
    [('n0', 1), ('n2', 1), ('n1', 1), ('n0', 1)]
    """
    if not is_spanning_tree_allreduce(schedule):
        raise ExportError(
            "an MSCCL++ reduce + broadcast plan takes trees of the compute nodes reduced up "
            "and broadcast down the same edges; a switch that reduces or multicasts needs "
            "switch channels (mscclpp_nvls_plan)"
        )
    return tuple(Tree(t.apex, t.chunks, t.multicast_edges) for t in schedule.trees)


def tree_unit(size: int, k: int, slice_bytes: int | None) -> int:
    """The ``pipeline`` unit (bytes) that moves plan's piece of a ``size``-byte allreduce
    of ``k`` chunks: its slice (``slice_bytes``; None: whole chunks), or the chunk
    (``size / k``) where that is smaller, rounded down to the buffer alignment (at least
    one alignment).

    Examples
    --------
    >>> tree_unit(2**28, 8, 2**17), tree_unit(2**20, 16, 2**19), tree_unit(2**20, 16, None)
    (131072, 65536, 65536)
    """
    piece = size / k if slice_bytes is None else min(slice_bytes, size / k)
    return max(ALIGNMENT, math.floor(piece / ALIGNMENT) * ALIGNMENT)


def mscclpp_reduce_broadcast_plan(
    schedule: AggregationSchedule,
    *,
    placement: str = "outofplace",
    name: str | None = None,
    boxes: Mapping[str, str] | None = None,
    unit_size: int | None = None,
    min_message_size: int = 0,
    max_message_size: int | None = None,
) -> MscclppPlan:
    """The MSCCL++ plan of an allreduce that reduces up and broadcasts down the trees of
    ``schedule`` (deterministic; see the module docstring).

    Parameters
    ----------
    schedule : AggregationSchedule
        Trees of the compute nodes, each apex a compute node
        (:func:`broadcast_trees`); ranks are its compute nodes in order.
    placement : str
        ``outofplace`` or ``inplace``.
    boxes : mapping, optional
        Compute node -> box (:func:`optcoll.export.mscclpp.boxes_of`): pairs in one box
        talk over memory channels, others over port channels (default: port channels).
    unit_size : int, optional
        Bytes per ``pipeline`` unit (:func:`tree_unit` gives plan's piece); None: no
        pipelines, every op moves its whole range.
    min_message_size, max_message_size : int
        The band of message sizes the plan serves (default: all the executor's 16-bit
        unit counts and 32-bit offsets allow).

    Raises
    ------
    ExportError
        Trees that are not spanning trees of the compute nodes, a bad placement or unit
        size, or a plan beyond the executor's limits.
    """
    trees = broadcast_trees(schedule)
    if placement not in mscclpp_placements("allreduce"):
        raise ExportError(f"placement must be outofplace or inplace, got {placement!r}")
    if unit_size is not None and (unit_size <= 0 or unit_size % ALIGNMENT):
        raise ExportError(f"unit_size must be a positive multiple of {ALIGNMENT}, got {unit_size}")
    nodes = schedule.compute_nodes
    segments: list[Segment] = []
    first = 0
    for index, tree in enumerate(trees):
        _check_tree(tree, nodes)
        segments.append((index, tree.root, first, tree.chunks, tree, tree, None, None))
        first += tree.chunks
    if first != schedule.k:
        raise ExportError(f"the trees carry {first} chunks, expected k = {schedule.k}")
    shape = _Shape(nodes, schedule.k, schedule.topology)
    box = {v: (boxes or {}).get(v, f"\0{v}") for v in nodes}
    # a reduce's steps over each tree's own range of the one k-chunk buffer (_steps reads
    # only the compute nodes and k of its schedule)
    steps, chunks = _steps(cast(Schedule, shape), "reduce", segments, 1)
    _pack(steps)
    heaviest = max(_load(steps, unit_size is not None).values(), default=0)
    try:
        if heaviest > MAX_OPS:
            raise _Limit(f"a thread block needs more than {MAX_OPS} ops")
        document = _render(
            shape, "allreduce", placement,
            name or f"optcoll allreduce reduce+broadcast {schedule.topology} k={schedule.k} "
            f"{placement}",
            steps, chunks, box, min_message_size, max_message_size, unit_size, "Simple",
        )  # fmt: skip
    except _Limit as err:
        raise ExportError(
            f"no MSCCL++ reduce + broadcast plan fits the executor's limits: {err}"
        ) from None
    blocks = max(len(g["threadblocks"]) for g in document["gpus"])
    most = max(
        sum(1 + len(op.get("ops", ())) for op in tb["ops"])
        for g in document["gpus"]
        for tb in g["threadblocks"]
    )
    pairs = channel_pairs(steps)
    memory = sum(1 for a, b in pairs if box[nodes[a]] == box[nodes[b]])
    return MscclppPlan(document, blocks, most, 1, memory, len(pairs) - memory, unit_size or 0)
