"""Node positions for pictures: boxes side by side, meshes on a grid, other topologies in layers."""

from __future__ import annotations

import math
import numbers
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from fractions import Fraction

from optcoll.core.arguments import instance_argument
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, PlotError

__all__ = ["topology_layout"]

Position = tuple[float, float]

_PITCH = 0.6  # distance between neighbouring compute nodes of a box

_BOX_GAP = 1.0  # horizontal gap between boxes

_HUB_DROP = 1.4  # box switches serving several compute nodes sit this far below them

_LEAF_RISE = 0.8  # a switch serving one compute node (a NIC) sits this far above it

_SHARED_ROW = 1.6  # switches shared by boxes: this far above the highest box node

_BOXES_PER_ROW = 4  # more boxes wrap into rows (about as many rows as boxes per row)

_ROW_GAP = 1.4  # vertical gap between rows of boxes


def topology_layout(topology: Topology) -> dict[str, Position]:
    """Deterministic 2-D positions for every node of ``topology``.

    Boxes (nodes sharing a ``Node.group``) sit side by side, in rows of
    ``max(4, ceil(sqrt(boxes)))`` so that many boxes make a rectangle, not a
    strip. When a box's
    compute nodes are linked directly (an xGMI or NVLink mesh) they sit on a
    circle, ordered by a walk along the widest links, with box switches in the
    middle, per-GPU switches just outside and switches that also link out of
    the box above. Otherwise the compute nodes form a row, a switch touching
    exactly one of them (a NIC) sits right above it, the other box switches
    below the row (an NVSwitch) or, when they also link out of the box (a leaf
    switch), above it. Switches without a group form a row above the boxes,
    compute nodes without a group a row below. Without any groups, compute
    nodes form a row and switches are stacked above by hop distance (leaf-spine,
    star); a topology with neither groups nor switches (ring, torus) is laid
    out by Kamada-Kawai, or on a circle beyond 64 nodes.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> pos = topology_layout(load_topology("dgx-a100:2"))
    >>> pos["b0.gpu0"], pos["b0.nic0"], pos["b0.nvswitch"]
    ((0.0, 0.0), (0.0, 0.8), (2.1, -1.4))
    >>> pos["ib0"][1] > pos["b0.nic0"][1] > pos["b0.gpu0"][1] > pos["b0.nvswitch"][1]
    True
    """
    groups = _groups(topology)
    if not groups:
        return _layered_layout(topology)
    neighbours = _neighbours(topology)
    boxes = [_box_layout(topology, members, neighbours) for members in groups.values()]
    span = max(max(y for _, y in b.values()) - min(y for _, y in b.values()) for b in boxes)
    per_row = max(_BOXES_PER_ROW, math.ceil(math.sqrt(len(boxes))))
    pos: dict[str, Position] = {}
    width = 0.0
    for first in range(0, len(boxes), per_row):
        left = 0.0
        drop = (first // per_row) * (span + _ROW_GAP)
        for local in boxes[first : first + per_row]:
            x_min = min(x for x, _ in local.values())
            x_max = max(x for x, _ in local.values())
            for v, (x, y) in local.items():
                pos[v] = (left + x - x_min, y - drop)
            left += x_max - x_min + _BOX_GAP
        width = max(width, left - _BOX_GAP)
    top = max(0.0, max(y for _, y in pos.values()))
    shared = [v for v in topology.switch_nodes if topology.node[v].group is None]
    loose = [v for v in topology.compute_nodes if topology.node[v].group is None]
    bottom = min(y for _, y in pos.values())
    for row, y in ((shared, top + _SHARED_ROW), (loose, bottom - _SHARED_ROW)):
        for i, v in enumerate(row):
            pos[v] = (_spread(i, len(row), width), y)
    return {v: (round(x, 6), round(y, 6)) for v, (x, y) in pos.items()}


def _box_layout(
    topology: Topology, members: list[str], neighbours: Mapping[str, list[str]]
) -> dict[str, Position]:
    """Positions of one box's nodes, relative to the box."""
    compute = [v for v in members if topology.is_compute(v)]
    in_box = set(compute)
    leaves: dict[str, str] = {}
    hubs: list[str] = []
    for s in (v for v in members if not topology.is_compute(v)):
        owners = [u for u in neighbours[s] if u in in_box]
        if len(owners) == 1:
            leaves[s] = owners[0]
        else:
            hubs.append(s)
    pos: dict[str, Position] = {}
    inside = set(members)
    uplinked = [s for s in hubs if any(u not in inside for u in neighbours[s])]
    local = [s for s in hubs if s not in uplinked]
    meshed = any(u in in_box and v in in_box for u, v in topology.capacity)
    if meshed:  # direct GPU-GPU links: a circle keeps them apart
        radius = max(1.0, len(compute) * _PITCH / (2 * math.pi))
        angle = {}
        for i, v in enumerate(_strong_walk(topology, compute)):
            angle[v] = math.pi / 2 - 2 * math.pi * i / len(compute)
            pos[v] = _polar(0.0, 0.0, radius, angle[v])
        for i, s in enumerate(local):
            r = 0.0 if len(local) == 1 else 0.4 * radius
            pos[s] = _polar(0.0, 0.0, r, math.pi / 2 - 2 * math.pi * i / len(local))
        for i, s in enumerate(uplinked):
            pos[s] = (_spread(i, len(uplinked), 2 * radius) - radius, radius + _HUB_DROP)
        for s, owner in leaves.items():
            pos[s] = _polar(0.0, 0.0, radius + _LEAF_RISE, angle[owner])
        return pos
    for i, v in enumerate(compute):
        pos[v] = (i * _PITCH, 0.0)
    width = (len(compute) - 1) * _PITCH
    for row, y in ((local, -_HUB_DROP), (uplinked, _HUB_DROP)):
        for i, s in enumerate(row):
            pos[s] = (_spread(i, len(row), width), y)
    stacked: dict[str, int] = defaultdict(int)
    for s, owner in leaves.items():
        stacked[owner] += 1
        pos[s] = (pos[owner][0], _LEAF_RISE * stacked[owner])
    return pos


def _strong_walk(topology: Topology, nodes: list[str]) -> list[str]:
    """Order ``nodes`` by a greedy walk along the widest links (fewer crossings on a circle)."""
    inside = set(nodes)
    width: dict[str, dict[str, Fraction]] = {v: {} for v in nodes}
    for (u, v), c in topology.capacity.items():
        if u in inside and v in inside:
            width[u][v] = width[u].get(v, Fraction(0)) + c
            width[v][u] = width[v].get(u, Fraction(0)) + c
    order = [nodes[0]]
    placed = {nodes[0]}
    while len(order) < len(nodes):
        here = order[-1]
        options = [(-c, nodes.index(w), w) for w, c in width[here].items() if w not in placed]
        step = min(options)[2] if options else next(v for v in nodes if v not in placed)
        order.append(step)
        placed.add(step)
    return order


def _polar(cx: float, cy: float, r: float, angle: float) -> Position:
    return (cx + r * math.cos(angle), cy + r * math.sin(angle))


def _spread(i: int, count: int, width: float) -> float:
    """x of item i of count, each centred in one of count equal slices of [0, width]."""
    span = max(width, (count - 1) * _PITCH)
    return width / 2 - span / 2 + span * (i + 0.5) / count


def _groups(topology: Topology) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for node in topology.nodes:
        if node.group is not None:
            groups.setdefault(node.group, []).append(node.id)
    return groups


def _neighbours(topology: Topology) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {v: [] for v in topology.node_ids}
    for u, v in topology.capacity:
        if v not in result[u]:
            result[u].append(v)
        if u not in result[v]:
            result[v].append(u)
    return result


def _mesh_layout(topology: Topology) -> dict[str, Position]:
    """Switch-free, box-free topologies (rings, tori, hypercubes): Kamada-Kawai
    (deterministic: it starts from a circle), scaled to about one unit per link."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(topology.compute_nodes)
    graph.add_edges_from(topology.capacity)
    if len(graph) > 64:
        n = len(graph)
        radius = n * _PITCH / (2 * math.pi)
        circle = {
            v: _polar(0.0, 0.0, radius, math.pi / 2 - 2 * math.pi * i / n)
            for i, v in enumerate(topology.compute_nodes)
        }
        return {v: (round(x, 6), round(y, 6)) for v, (x, y) in circle.items()}
    raw = nx.kamada_kawai_layout(graph)
    span = max(max(abs(x), abs(y)) for x, y in raw.values()) or 1.0
    scale = max(1.0, math.sqrt(len(graph)) * 0.6) / span
    return {
        v: (round(raw[v][0] * scale, 6), round(raw[v][1] * scale, 6))
        for v in topology.compute_nodes
    }


def _layered_layout(topology: Topology) -> dict[str, Position]:
    compute = topology.compute_nodes
    if not topology.switch_nodes:
        return _mesh_layout(topology)
    neighbours = _neighbours(topology)
    distance = {v: 0 for v in compute}
    queue = deque(compute)
    while queue:
        u = queue.popleft()
        for w in neighbours[u]:
            if w not in distance:
                distance[w] = distance[u] + 1
                queue.append(w)
    pitch = 1.0
    width = (len(compute) - 1) * pitch
    pos: dict[str, Position] = {v: (i * pitch, 0.0) for i, v in enumerate(compute)}
    layers: dict[int, list[str]] = defaultdict(list)
    for v in topology.switch_nodes:
        layers[distance.get(v, max(distance.values()) + 1)].append(v)
    for depth in sorted(layers):
        row = layers[depth]

        def barycentre(v: str) -> float:
            placed = [pos[u][0] for u in neighbours[v] if u in pos]
            return sum(placed) / len(placed) if placed else width / 2

        row = sorted(row, key=lambda v: (barycentre(v), row.index(v)))
        for i, v in enumerate(row):
            pos[v] = (_spread(i, len(row), width), 1.6 * depth)
    return {v: (round(x, 6), round(y, 6)) for v, (x, y) in pos.items()}


def _positions(topology: Topology, layout: Mapping[str, Position] | None) -> dict[str, Position]:
    """``layout`` (checked to place every node) or :func:`topology_layout`."""
    if layout is None:
        return topology_layout(topology)
    instance_argument(layout, Mapping, "layout", "node id -> (x, y)")  # type: ignore[type-abstract]
    missing = [v for v in topology.node_ids if v not in layout]
    if missing:
        raise PlotError(f"the layout gives no position for node {missing[0]!r}")
    for node in topology.node_ids:
        position = layout[node]
        if not (
            isinstance(position, Sequence)
            and len(position) == 2
            and all(isinstance(x, numbers.Real) for x in position)
        ):
            raise ArgumentError(
                f"layout gives node {node!r} the position {position!r}; expected (x, y)"
            )
    return dict(layout)
