"""NCCL's NVLS allreduce where a box's switch reduces and multicasts, as aggregation trees.

* one box (every compute node on one switch that declares ``reduce`` and ``multicast``,
  e.g. ``dgx-h100:1,nvls=1``): **NVLS**. Where the switches declare ``multimem`` (they
  reduce and multicast at a GPU's request, as NVSwitch does), every GPU ``r`` loads the sum
  of its ``1 / N`` of the data from every GPU (``multimem.ld_reduce``, its own data
  included) and stores it to every GPU (``multimem.st``, itself included), as NCCL's NVLS
  allreduce does: one tree per GPU and switch of the domain (the switches the compute
  nodes share, :meth:`~optcoll.core.topology.Topology.nvls_domain`, each GPU's share split
  among them in proportion to its links: ``nvl72``'s nine trays), ``(N + 1) / N`` of the
  message on every GPU link each way. Otherwise (a SHARP switch) one tree: every GPU sends
  its message up to the switch, which sums and multicasts the result back down;
* equal boxes (``Node.group``), each with such a switch (``dgx-h100:B,nvls=1``):
  **NVLS-tree**, one tree per GPU position ``j`` carrying ``1 / R`` of the data (``R`` GPUs
  a box): inside every box the other GPUs' shares are summed by the switch into GPU ``j``
  (which adds its own); the boxes' GPUs ``j`` reduce along a chain to box 0 and send the
  sum back down it (each hop on its widest path, on a rail-optimised network rail ``j``);
  each GPU ``j`` multicasts the result through its switch. NCCL runs a tree between the
  boxes: a chain has more hops, but its inner heads send twice on their link out (up and
  down), a binary tree's inner nodes three times.

Both are :class:`~optcoll.core.aggregation.AggregationSchedule`\\ s, which
:mod:`optcoll.verify.aggregation` checks and the simulator runs like the in-network optimum.

Examples
--------
>>> from optcoll.topologies import build
>>> s = nvls_schedule(build("dgx-h100:1,nvls=1"))
>>> s.stats["method"], s.k, s.time_factor  # 9/8 M up and down each GPU's 450 GB/s link
('NVLS', 8, Fraction(1, 400))
>>> nvls_schedule(build("star:8,sharp=1")).time_factor  # a SHARP switch: M each way
Fraction(1, 100)
>>> nvls_schedule(build("dgx-h100:1")) is None
True
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

from optcoll.core.aggregation import AggregationSchedule, AggregationTree, tree_arc_uses
from optcoll.core.schedule import TreeEdge
from optcoll.core.topology import Topology
from optcoll.schedules.baselines.routing import Router, equal_boxes

__all__ = ["nvls_schedule"]


def _box_switch(topology: Topology, box: list[str]) -> str | None:
    """The switch every GPU of ``box`` links to both ways that reduces and multicasts."""
    for node in topology.node.values():
        if node.reduce and node.multicast and node.type == "switch":
            s = node.id
            if all((g, s) in topology.capacity and (s, g) in topology.capacity for g in box):
                return s
    return None


def _edge(a: str, b: str, path: tuple[str, ...] | None = None) -> TreeEdge:
    return TreeEdge(a, b, path if path is not None else (a, b))


def nvls_schedule(topology: Topology) -> AggregationSchedule | None:
    """NVLS (one box) or NVLS-tree (equal boxes) as aggregation trees (module docstring);
    None where a box has no switch that reduces and multicasts to all its GPUs.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> s = nvls_schedule(build("dgx-h100:2,nvls=1"))
    >>> s.stats["method"], s.k, s.time_factor  # the rails: M / (8 x 50 GB/s)
    ('NVLS-tree', 8, Fraction(1, 400))
    """
    boxes = equal_boxes(topology)
    if boxes is None:
        boxes = [list(topology.compute_nodes)]
    switches = [_box_switch(topology, box) for box in boxes]
    if any(s is None for s in switches) or len(boxes[0]) < 2:
        return None
    if len(boxes) == 1:
        (box,), (s,) = boxes, switches
        assert s is not None
        if topology.node[s].multimem:
            return _finish(topology, _issued(topology, box), None, "NVLS")
        tree = AggregationTree(
            s, 1, tuple(_edge(g, s) for g in box), tuple(_edge(s, g) for g in box)
        )
        return _finish(topology, (tree,), 1, "NVLS")
    router = Router(topology)
    trees = []
    for j in range(len(boxes[0])):
        up: list[TreeEdge] = []
        down: list[TreeEdge] = []
        for box, s in zip(boxes, switches, strict=True):
            assert s is not None
            head = box[j]
            up += [_edge(g, s) for g in box if g != head] + [_edge(s, head)]
            down += [_edge(head, s)] + [_edge(s, g) for g in box if g != head]
        heads = [box[j] for box in boxes]
        for child, parent in zip(heads[1:][::-1], heads[:-1][::-1], strict=True):
            up.append(_edge(child, parent, router.paths[child][parent]))
        for parent, child in zip(heads, heads[1:], strict=False):
            down.append(_edge(parent, child, router.paths[parent][child]))
        trees.append(AggregationTree(heads[0], 1, tuple(up), tuple(down)))
    return _finish(topology, tuple(trees), len(trees), "NVLS-tree")


def _issued(topology: Topology, box: list[str]) -> tuple[AggregationTree, ...]:
    """NCCL's NVLS on ``multimem`` switches: GPU ``r`` loads the sum of its share from every
    GPU and stores it to every GPU, on every switch of the domain, the share split among
    them in proportion to ``r``'s links (module docstring)."""
    domain = [w for w in topology.nvls_domain(box) if topology.node[w].multimem]
    trees = []
    for i, r in enumerate(box):
        rates = [Fraction(topology.capacity[(r, w)]) for w in domain]
        scale = math.lcm(*(c.denominator for c in rates))
        whole = [int(c * scale) for c in rates]
        common = math.gcd(*whole)
        for w, part in zip(domain, whole, strict=True):
            others = box[i + 1 :] + box[:i]  # GPU r's trees: GPU 0's rotated r places
            up = tuple(_edge(g, w) for g in others) + (_edge(w, r),)
            down = (_edge(r, w),) + tuple(_edge(w, g) for g in others)
            trees.append(AggregationTree(r, part // common, up, down))
    return tuple(trees)


def _finish(
    topology: Topology, trees: tuple[AggregationTree, ...], k: int | None, method: str
) -> AggregationSchedule:
    """The schedule with its exact time factor: ``max load / (k * bandwidth)`` (``k``
    None: every apex gets an equal share, its trees' chunks in their proportions)."""
    if k is None:
        per_gpu: dict[str, int] = {}
        for tree in trees:
            per_gpu[tree.apex] = per_gpu.get(tree.apex, 0) + tree.chunks
        share = math.lcm(*per_gpu.values())
        trees = tuple(replace(t, chunks=t.chunks * share // per_gpu[t.apex]) for t in trees)
        k = share * len(per_gpu)
    multimem = set(topology.multimem_switches)
    loads: dict[tuple[str, str], int] = {}
    for tree in trees:
        for arc, uses in tree_arc_uses(tree, multimem).items():
            loads[arc] = loads.get(arc, 0) + uses * tree.chunks
    factor = max(Fraction(load, k) / topology.capacity[arc] for arc, load in loads.items())
    return AggregationSchedule(
        topology.name,
        topology.compute_nodes,
        k,
        trees,
        time_factor=factor,
        topology_hash=topology.content_hash,
        stats={"method": method},
    )
