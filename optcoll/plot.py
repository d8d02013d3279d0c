"""Pictures of topologies, trees, cuts, link loads and algbw curves (matplotlib).

Every drawing function takes an optional matplotlib ``Axes`` (a new figure is
made when it is omitted), returns the ``Axes`` it drew on, and never touches
pyplot's global state, so it works headless (Agg) and inside notebooks alike.
:func:`save_figure` writes PNG, PDF or SVG without time stamps or random ids,
so the same input gives the same bytes.

The node positions come from :func:`topology_layout`: boxes (``Node.group``)
side by side, each with its GPUs in a row, the NVSwitch below and per-GPU NICs
above (or its GPUs on a circle when they are linked directly, as in an xGMI
mesh); switches shared by several boxes in a row above. Topologies without
groups are drawn in layers (compute nodes in a row, switches above them by hop
distance) or, without switches, by Kamada-Kawai.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.plot import plot_cut, plot_topology
>>> topo = load_topology("dgx-a100:1")
>>> ax = plot_topology(topo)
>>> ax.get_title()
'dgx-a100:1: 8 compute nodes, 1 switch'
>>> side = {f"b0.gpu{i}" for i in range(7)} | {"b0.nvswitch"}
>>> plot_cut(topo, side).get_title()
'cut S: 7 compute nodes, B+(S) = 300 GB/s, ratio 7/300 per GB/s'
"""

from __future__ import annotations

import io
import math
import numbers
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path

import matplotlib
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import Colormap, Normalize
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.ticker import FuncFormatter

from optcoll.core.arguments import instance_argument, schedule_argument, topology_argument
from optcoll.core.groups_schedule import GroupsSchedule
from optcoll.core.loads import PHASES, link_loads, route_loads
from optcoll.core.output import check_output, require_suffix, write_output
from optcoll.core.rational import fraction_text, rounded_text
from optcoll.core.schedule import Schedule, Tree
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, PlotError, UnknownNodeError

__all__ = [
    "PICTURE_SUFFIXES",
    "topology_layout",
    "plot_topology",
    "plot_tree",
    "plot_cut",
    "plot_link_utilisation",
    "plot_algbw_curves",
    "plot_failure_drops",
    "plot_group_links",
    "schedule_link_loads",
    "save_figure",
    "MAX_DPI",
]

Position = tuple[float, float]
#: A matplotlib colour: a name or hex string, or an RGBA tuple (as colormaps return).
Colour = str | tuple[float, float, float, float]

#: Picture files :func:`save_figure` writes.
PICTURE_SUFFIXES = (".png", ".pdf", ".svg")

#: Largest resolution :func:`save_figure` accepts (a larger one asks gigabytes of pixels).
MAX_DPI = 1200

COMPUTE_COLOR = "#4c72b0"
SWITCH_COLOR = "#8c8c8c"
CUT_COLOR = "#dd5500"
LINK_COLOR = "#9aa7b8"

_PITCH = 0.6  # distance between neighbouring compute nodes of a box
_BOX_GAP = 1.0  # horizontal gap between boxes
_HUB_DROP = 1.4  # box switches serving several compute nodes sit this far below them
_LEAF_RISE = 0.8  # a switch serving one compute node (a NIC) sits this far above it
_SHARED_ROW = 1.6  # switches shared by boxes: this far above the highest box node
_BOXES_PER_ROW = 4  # more boxes wrap into rows (about as many rows as boxes per row)
_ROW_GAP = 1.4  # vertical gap between rows of boxes


# --- layout -----------------------------------------------------------------------


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


# --- drawing helpers --------------------------------------------------------------


def _axes(ax: Axes | None, pos: Mapping[str, Position] | None = None) -> Axes:
    if ax is not None:
        return ax
    size = (7.0, 4.5)
    if pos:
        xs = [p[0] for p in pos.values()]
        ys = [p[1] for p in pos.values()]
        scale = 1.25
        width = (max(xs) - min(xs) + 1.6) * scale
        height = (max(ys) - min(ys) + 1.6) * scale + 0.6
        shrink = min(1.0, 22.0 / width, 14.0 / height)
        size = (max(width * shrink, 5.0), max(height * shrink, 3.5))
    fig = Figure(figsize=size, layout="constrained")
    return fig.add_subplot()


def _short_label(topology: Topology, v: str) -> str:
    if topology.node[v].group is not None and "." in v:
        return v.rsplit(".", 1)[1]
    return v


def _node_size(topology: Topology) -> float:
    """Marker area: smaller when a box (or the whole topology, without boxes) is crowded."""
    groups = _groups(topology)
    crowd = max(len(m) for m in groups.values()) if groups else len(topology.node_ids)
    return max(40.0, min(360.0, 5200.0 / crowd))


def _bandwidth_text(value: Fraction, unit: str = "") -> str:
    number = rounded_text(value, 4)
    return f"{number} {unit}" if unit else number


def _pair_bandwidth(topology: Topology) -> dict[tuple[str, str], tuple[Fraction, bool]]:
    """Unordered pairs (first-seen order) -> (larger direction's bandwidth, both directions)."""
    pairs: dict[tuple[str, str], tuple[Fraction, bool]] = {}
    for (u, v), c in topology.capacity.items():
        key = (u, v) if (v, u) not in pairs else (v, u)
        if key in pairs:
            old, _ = pairs[key]
            pairs[key] = (max(old, c), True)
        else:
            pairs[key] = (c, False)
    return pairs


def _width(bandwidth: Fraction, largest: Fraction) -> float:
    return 0.5 + 4.0 * float(bandwidth / largest)


def _draw_boxes(ax: Axes, topology: Topology, pos: Mapping[str, Position]) -> None:
    for group, members in _groups(topology).items():
        xs = [pos[v][0] for v in members]
        ys = [pos[v][1] for v in members]
        pad = 0.35
        x0, y0 = min(xs) - pad, min(ys) - pad
        ax.add_patch(
            Rectangle(
                (x0, y0),
                max(xs) - min(xs) + 2 * pad,
                max(ys) - min(ys) + 2 * pad,
                facecolor="#f3f5f8",
                edgecolor="#c5ccd6",
                linewidth=1.0,
                zorder=0,
            )
        )
        ax.text(x0 + 0.05, y0 + 0.05, group, fontsize=8, color="#6b7685", va="bottom", zorder=1)


def _draw_links(
    ax: Axes,
    topology: Topology,
    pos: Mapping[str, Position],
    *,
    color: str = LINK_COLOR,
    alpha: float = 1.0,
    legend: bool = True,
) -> None:
    pairs = _pair_bandwidth(topology)
    largest = max(bw for bw, _ in pairs.values())
    segments, widths = [], []
    for (u, v), (bw, both) in pairs.items():
        if both:
            segments.append([pos[u], pos[v]])
            widths.append(_width(bw, largest))
        else:
            ax.add_patch(_arrow(pos[u], pos[v], color, _width(bw, largest), alpha, 1))
    ax.add_collection(
        LineCollection(
            segments, linewidths=widths, colors=color, alpha=alpha, zorder=1, capstyle="round"
        )
    )
    if legend:
        values = sorted({bw for bw, _ in pairs.values()}, reverse=True)
        if len(values) > 4:
            values = [values[0], values[len(values) // 3], values[2 * len(values) // 3], values[-1]]
        handles = [Line2D([], [], color=color, linewidth=_width(bw, largest)) for bw in values]
        labels = [_bandwidth_text(bw, topology.bandwidth_unit) for bw in values]
        ax.legend(
            handles,
            labels,
            title="link bandwidth",
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
            fontsize=7,
            title_fontsize=7,
            framealpha=0.9,
        )


def _arrow(
    a: Position,
    b: Position,
    color: Colour,
    width: float,
    alpha: float,
    zorder: float,
    rad: float = 0.0,
) -> FancyArrowPatch:
    return FancyArrowPatch(
        a,
        b,
        arrowstyle="-|>",
        mutation_scale=6 + 2.5 * width,
        linewidth=width,
        color=color,
        alpha=alpha,
        shrinkA=7,
        shrinkB=7,
        zorder=zorder,
        connectionstyle=f"arc3,rad={rad}",
    )


def _draw_nodes(
    ax: Axes,
    topology: Topology,
    pos: Mapping[str, Position],
    *,
    alpha: float = 1.0,
    labels: bool | None = None,
) -> None:
    size = _node_size(topology)
    for ids, marker, color in (
        (topology.compute_nodes, "o", COMPUTE_COLOR),
        (topology.switch_nodes, "s", SWITCH_COLOR),
    ):
        if ids:
            ax.scatter(
                [pos[v][0] for v in ids],
                [pos[v][1] for v in ids],
                s=size,
                marker=marker,
                c=color,
                edgecolors="white",
                linewidths=0.8,
                alpha=alpha,
                zorder=3,
            )
    if labels is None:
        labels = len(topology.node_ids) <= 80
    if labels:
        fontsize = 7 if size >= 150 else 5
        for v in topology.node_ids:
            ax.annotate(
                _short_label(topology, v),
                pos[v],
                xytext=(0, -9 if size < 150 else -11),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=fontsize,
                color="#333333",
                alpha=alpha,
                zorder=4,
            )


def _draw_unused(
    ax: Axes, topology: Topology, pos: Mapping[str, Position], used: Iterable[tuple[str, str]]
) -> None:
    """The links not in ``used`` as dotted grey curves (a load picture's background)."""
    busy = set(used)
    for u, v in topology.capacity:
        if (u, v) not in busy:
            ax.add_patch(
                FancyArrowPatch(
                    pos[u],
                    pos[v],
                    arrowstyle="-",
                    linestyle=":",
                    linewidth=0.6,
                    color="#c8c8c8",
                    shrinkA=6,
                    shrinkB=6,
                    zorder=1,
                    connectionstyle="arc3,rad=0.12",
                )
            )


def _finish(ax: Axes, pos: Mapping[str, Position], title: str) -> Axes:
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    margin = 0.7
    ax.set_xlim(min(xs) - margin, max(xs) + margin)
    ax.set_ylim(min(ys) - margin, max(ys) + margin)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(title, fontsize=10, wrap=True)  # a long title wraps at the figure's edge
    return ax


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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else ("es" if word.endswith("h") else "s"))


def _check_nodes(topology: Topology, nodes: Iterable[object], what: str) -> None:
    for v in nodes:
        if not isinstance(v, str) or v not in topology.node:
            raise UnknownNodeError(
                f"{what} names node {v!r}, which is not in topology {topology.name!r}"
            )


# --- public drawing functions -----------------------------------------------------


def plot_topology(
    topology: Topology,
    *,
    ax: Axes | None = None,
    layout: Mapping[str, Position] | None = None,
    labels: bool | None = None,
    title: str | None = None,
) -> Axes:
    """Draw ``topology``: compute nodes as blue circles, switches as grey squares,
    link width proportional to bandwidth, boxes (``Node.group``) as shaded frames.

    A pair of nodes linked both ways is one line (its width shows the larger
    direction); a one-way link is an arrow.

    Parameters
    ----------
    topology : Topology
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure is made when omitted.
    layout : mapping, optional
        Node positions; :func:`topology_layout` by default.
    labels : bool, optional
        Show node names (default: when the topology has at most 80 nodes).
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from optcoll import load_topology
    >>> ax = plot_topology(load_topology("mi250:2"))
    >>> ax.get_title()
    'mi250:2: 32 compute nodes, 1 switch'
    """
    topology_argument(topology)
    pos = _positions(topology, layout)
    ax = _axes(ax, pos)
    _draw_boxes(ax, topology, pos)
    _draw_links(ax, topology, pos)
    _draw_nodes(ax, topology, pos, labels=labels)
    if title is None:
        title = (
            f"{topology.name}: {_plural(topology.num_compute, 'compute node')}, "
            f"{_plural(len(topology.switch_nodes), 'switch')}"
        )
    return _finish(ax, pos, title)


def plot_tree(
    topology: Topology,
    tree: Tree,
    *,
    k: int | None = None,
    ax: Axes | None = None,
    layout: Mapping[str, Position] | None = None,
    title: str | None = None,
) -> Axes:
    """Draw one tree of a schedule over the topology, coloured by hop depth.

    Every logical tree edge ``src -> dst`` is drawn along its physical path;
    its colour is the depth of ``dst`` in the tree (1 = a child of the root).
    The root is a red star; each compute node shows its name below (up to 80
    nodes) and its depth above.

    Parameters
    ----------
    topology : Topology
    tree : Tree
        A tree of a :class:`~optcoll.core.schedule.Schedule` on ``topology``.
    k : int, optional
        The schedule's chunks per shard (shown in the title as ``chunks/k``).
    ax, layout, title
        As for :func:`plot_topology`.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    UnknownNodeError
        The tree names a node that is not in ``topology``.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.schedule import Tree, TreeEdge
    >>> topo = load_topology("dgx-a100:1")
    >>> sw = "b0.nvswitch"
    >>> edges = [TreeEdge("b0.gpu0", f"b0.gpu{i}", ("b0.gpu0", sw, f"b0.gpu{i}")) for i in range(1, 8)]
    >>> plot_tree(topo, Tree("b0.gpu0", 1, tuple(edges)), k=1).get_title()
    'tree rooted at b0.gpu0 (1/1 of its shard), height 1'
    """
    topology_argument(topology)
    for i, e in enumerate(tree.edges):
        _check_nodes(topology, (tree.root, e.src, e.dst, *e.path), f"tree edge {i}")
    pos = _positions(topology, layout)
    ax = _axes(ax, pos)
    _draw_boxes(ax, topology, pos)
    _draw_links(ax, topology, pos, color="#dfe3e8", legend=False)
    _draw_nodes(ax, topology, pos, alpha=0.35, labels=False)
    depth = _tree_depths(tree)
    height = max(depth.values(), default=0)
    cmap = _colormap("viridis")
    colour = {d: cmap(0.85 * (d - 1) / max(height - 1, 1)) for d in range(1, height + 1)}
    for e in sorted(tree.edges, key=lambda e: -depth.get(e.dst, height + 1)):
        c = colour.get(depth.get(e.dst, 0), "#bbbbbb")
        for a, b in zip(e.path, e.path[1:], strict=False):
            ax.add_patch(_arrow(pos[a], pos[b], c, 1.8, 0.95, 2, rad=0.1))
    named = len(topology.node_ids) <= 80
    for v in topology.compute_nodes:
        notes = [(_short_label(topology, v), -11, "top")] if named else []
        if v in depth and v != tree.root:
            notes.append((str(depth[v]), 8, "bottom"))  # the depth above the node
        for text, dy, va in notes:
            ax.annotate(
                text,
                pos[v],
                xytext=(0, dy),
                textcoords="offset points",
                ha="center",
                va=va,
                fontsize=7,
                color="#222222",
                zorder=5,
            )
    ax.scatter(
        *pos[tree.root],
        s=2.2 * _node_size(topology),
        marker="*",
        c="#d62728",
        edgecolors="white",
        zorder=5,
    )
    handles = [Line2D([], [], marker="*", color="#d62728", linestyle="", markersize=10)]
    names = ["root"]
    for d in range(1, height + 1):
        handles.append(Line2D([], [], color=colour[d], linewidth=2))
        names.append(f"depth {d}")
    ax.legend(
        handles, names, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, framealpha=0.9
    )
    if title is None:
        share = f" ({tree.chunks}/{k} of its shard)" if k else f" ({tree.chunks} chunks)"
        title = f"tree rooted at {tree.root}{share}, height {height}"
    return _finish(ax, pos, title)


def _tree_depths(tree: Tree) -> dict[str, int]:
    """Hop depth of every node reached from the root along logical edges (BFS)."""
    children: dict[str, list[str]] = defaultdict(list)
    for e in tree.edges:
        children[e.src].append(e.dst)
    depth = {tree.root: 0}
    queue = deque([tree.root])
    while queue:
        u = queue.popleft()
        for w in children[u]:
            if w not in depth:
                depth[w] = depth[u] + 1
                queue.append(w)
    return depth


def _colormap(name: str) -> Colormap:
    return colormaps[name]


def plot_cut(
    topology: Topology,
    side: Iterable[str],
    *,
    ax: Axes | None = None,
    layout: Mapping[str, Position] | None = None,
    title: str | None = None,
) -> Axes:
    """Draw the cut ``S = side``: nodes of S shaded, links leaving S in red with
    their bandwidth.

    The title gives |S ∩ compute|, B+(S) and their ratio, exactly; for the
    bottleneck cut S* that ratio is the optimal cut ratio r*.

    Raises
    ------
    UnknownNodeError
        ``side`` names a node that is not in ``topology``.
    PlotError
        ``side`` holds no compute node or all of them (not a cut).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topo = load_topology("dgx-a100:2")
    >>> side = set(topo.node_ids) - {"b0.gpu7"}
    >>> plot_cut(topo, side).get_title()
    'cut S: 15 compute nodes, B+(S) = 325 GB/s, ratio 3/65 per GB/s'
    """
    topology_argument(topology)
    if isinstance(side, str) or not isinstance(side, Iterable):
        raise ArgumentError(f"side (the cut) must be a collection of node ids, got {side!r}")
    nodes = list(side)  # once: side may be an iterator
    _check_nodes(topology, sorted(nodes, key=str), "side (the cut)")
    inside = set(nodes)
    count = sum(1 for v in topology.compute_nodes if v in inside)
    if count in (0, topology.num_compute):
        raise PlotError(
            f"a cut must hold some but not all compute nodes; this one holds {count} of "
            f"{topology.num_compute}"
        )
    bandwidth = topology.cut_bandwidth(inside)
    pos = _positions(topology, layout)
    ax = _axes(ax, pos)
    _draw_boxes(ax, topology, pos)
    _draw_links(ax, topology, pos, color="#cfd5dd", legend=False)
    members = [v for v in topology.node_ids if v in inside]
    ax.scatter(
        [pos[v][0] for v in members],
        [pos[v][1] for v in members],
        s=3.2 * _node_size(topology),
        c=CUT_COLOR,
        alpha=0.22,
        linewidths=0,
        zorder=2,
    )
    _draw_nodes(ax, topology, pos, labels=len(topology.node_ids) <= 40)
    crossing = [
        (u, v, c) for (u, v), c in topology.capacity.items() if u in inside and v not in inside
    ]
    largest = max(topology.capacity.values())
    for u, v, c in crossing:
        ax.add_patch(_arrow(pos[u], pos[v], CUT_COLOR, _width(c, largest), 0.95, 2.5, rad=0.08))
    if len(crossing) <= 24:
        for u, v, c in crossing:
            (x0, y0), (x1, y1) = pos[u], pos[v]
            ax.text(
                (x0 + x1) / 2,
                (y0 + y1) / 2,
                _bandwidth_text(c),
                fontsize=7,
                color=CUT_COLOR,
                ha="center",
                va="center",
                zorder=6,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
            )
    handles = [
        Line2D([], [], marker="o", color=CUT_COLOR, alpha=0.35, linestyle="", markersize=12),
        Line2D([], [], color=CUT_COLOR, linewidth=2),
    ]
    ax.legend(
        handles,
        ["S", f"links leaving S ({len(crossing)})"],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=7,
        framealpha=0.9,
    )
    if title is None:
        ratio = Fraction(count) / bandwidth
        title = (
            f"cut S: {_plural(count, 'compute node')}, B+(S) = "
            f"{_bandwidth_text(bandwidth, topology.bandwidth_unit)}, ratio "
            f"{fraction_text(ratio)} per {topology.bandwidth_unit}"
        )
    return _finish(ax, pos, title)


def schedule_link_loads(topology: Topology, schedule: Schedule) -> dict[tuple[str, str], int]:
    """Chunks carried by each directed link: Σ over trees (or all-to-all routes) of ``chunks`` × uses.

    Trees of ``reduce_scatter`` and ``reduce`` schedules run toward the root, so
    their paths load the reversed links; ``allreduce`` loads both directions.
    Links the schedule does not use are absent. The loads are
    :func:`optcoll.core.loads.link_loads` per phase (:data:`optcoll.core.loads.PHASES`).

    Raises
    ------
    PlotError
        A path step is not a link of ``topology`` (the tree and step are named).

    Examples
    --------
    >>> from optcoll.core.topology import Topology, Node, Link
    >>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
    >>> t = Topology("pair", [Node("a"), Node("b")], [Link("a", "b", 10, bidirectional=True)])
    >>> s = Schedule("allgather", "pair", ("a", "b"), 2,
    ...              (Tree("a", 2, (TreeEdge("a", "b", ("a", "b")),)),
    ...               Tree("b", 2, (TreeEdge("b", "a", ("b", "a")),))))
    >>> schedule_link_loads(t, s)
    {('a', 'b'): 2, ('b', 'a'): 2}
    """
    loads: dict[tuple[str, str], int] = {}
    for index, route in enumerate(schedule.routes):
        for link, load in route_loads([route]).items():
            if link not in topology.capacity:
                raise PlotError(
                    f"route {index} ({route.src} -> {route.dst}): path step {link[0]} -> "
                    f"{link[1]} is not a link of topology {topology.name!r}"
                )
            loads[link] = loads.get(link, 0) + load
    for reverse in PHASES.get(schedule.collective, (False,)):
        for index, tree in enumerate(schedule.trees):
            for link, load in link_loads([tree], reverse=reverse).items():
                if link not in topology.capacity:
                    raise PlotError(
                        f"tree {index} (root {tree.root}): path step {link[0]} -> {link[1]} "
                        f"is not a link of topology {topology.name!r}"
                    )
                loads[link] = loads.get(link, 0) + load
    return loads


def plot_link_utilisation(
    topology: Topology,
    schedule: Schedule,
    *,
    ax: Axes | None = None,
    layout: Mapping[str, Position] | None = None,
    title: str | None = None,
) -> Axes:
    """Heat map of a schedule's link loads drawn over the topology.

    Each directed link is a slightly curved arrow coloured by its time share
    ``load / (k · bandwidth)`` relative to the busiest link (1 = a bottleneck
    link, which sets the schedule's time); unused links are dotted grey.

    Examples
    --------
    >>> from optcoll.core.topology import Topology, Node, Link
    >>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
    >>> t = Topology("pair", [Node("a"), Node("b")], [Link("a", "b", 10, bidirectional=True)])
    >>> s = Schedule("allgather", "pair", ("a", "b"), 1,
    ...              (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
    ...               Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),))))
    >>> plot_link_utilisation(t, s).get_title()
    'allgather on pair, k=1: time factor 1/10 per GB/s, 2 of 2 links at the bottleneck'
    """
    topology_argument(topology)
    schedule_argument(schedule)
    loads = schedule_link_loads(topology, schedule)
    share = {
        link: Fraction(load) / (schedule.k * topology.capacity[link])
        for link, load in loads.items()
    }
    peak = max(share.values(), default=Fraction(0))
    if peak == 0:
        raise PlotError("the schedule has no tree edges or routes, so there is no load to draw")
    pos = _positions(topology, layout)
    ax = _axes(ax, pos)
    _draw_boxes(ax, topology, pos)
    _draw_nodes(ax, topology, pos, labels=len(topology.node_ids) <= 40)
    cmap = _colormap("plasma_r")
    _draw_unused(ax, topology, pos, share)
    for (u, v), s in sorted(share.items(), key=lambda item: item[1]):
        level = float(s / peak)
        ax.add_patch(
            _arrow(pos[u], pos[v], cmap(0.1 + 0.9 * level), 0.6 + 2.2 * level, 0.95, 2, rad=0.12)
        )
    mappable = ScalarMappable(norm=Normalize(0, 1), cmap=cmap)
    bar = ax.figure.colorbar(mappable, ax=ax, shrink=0.6, pad=0.01)
    bar.set_label("load / (k · bandwidth), relative to the busiest link", fontsize=8)
    bottlenecks = sum(1 for s in share.values() if s == peak)
    if title is None:
        title = (
            f"{schedule.collective} on {topology.name}, k={schedule.k}: time factor "
            f"{fraction_text(peak)} per {topology.bandwidth_unit}, "
            f"{bottlenecks} of {len(topology.capacity)} links at the bottleneck"
        )
    return _finish(ax, pos, title)


def plot_group_links(
    topology: Topology,
    schedule: GroupsSchedule,
    *,
    ax: Axes | None = None,
    layout: Mapping[str, Position] | None = None,
    title: str | None = None,
) -> Axes:
    """Which links each process group uses: concurrent groups' schedule drawn over the topology.

    Every member is drawn in its group's colour; every link a group's trees use
    is an arrow in that group's colour, black where several groups share it,
    as wide as its load over ``time factor · bandwidth`` (full width: the link
    is busy for the whole collective); unused links are dotted grey. Loads are
    summed per phase as :func:`schedule_link_loads` sums them, each group's in
    shards (its chunks over its ``k``).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.groups.schedule import groups_schedule
    >>> from optcoll.io.process_groups import parse_groups
    >>> topo = load_topology("dgx-a100:2")
    >>> plot_group_links(topo, groups_schedule(parse_groups(topo, "strided:2"))).get_title()
    'allgather of 8 groups on dgx-a100:2 (relay members): 64 links used, 0 shared'
    """

    topology_argument(topology)
    instance_argument(
        schedule, GroupsSchedule, "schedule", "optcoll.core.groups_schedule.GroupsSchedule"
    )
    users: dict[tuple[str, str], dict[int, Fraction]] = defaultdict(dict)
    for index, group in enumerate(schedule.groups):
        for arc, load in schedule_link_loads(topology, group).items():
            users[arc][index] = Fraction(load, group.k)
    if not users:
        raise PlotError("the schedule has no tree edges, so there is no link to draw")
    share = {arc: sum(by.values()) / topology.capacity[arc] for arc, by in users.items()}
    peak = max(share.values())
    pos = _positions(topology, layout)
    ax = _axes(ax, pos)
    _draw_boxes(ax, topology, pos)
    _draw_nodes(ax, topology, pos, labels=len(topology.node_ids) <= 40)
    cmap = _colormap("tab10" if len(schedule.groups) <= 10 else "turbo")
    count = max(len(schedule.groups) - 1, 1)

    def colour(index: int) -> Colour:
        return cmap(index % 10) if len(schedule.groups) <= 10 else cmap(index / count)

    for index, group in enumerate(schedule.groups):
        ax.scatter(
            [pos[v][0] for v in group.compute_nodes],
            [pos[v][1] for v in group.compute_nodes],
            s=_node_size(topology),
            c=[colour(index)],
            edgecolors="white",
            linewidths=0.8,
            zorder=3.5,
        )
    _draw_unused(ax, topology, pos, users)
    shared = 0
    for (u, v), by in users.items():
        shared += len(by) > 1
        tint = "black" if len(by) > 1 else colour(next(iter(by)))
        level = float(share[(u, v)] / peak)
        ax.add_patch(_arrow(pos[u], pos[v], tint, 0.6 + 2.2 * level, 0.9, 2, rad=0.12))
    shown = list(range(min(len(schedule.groups), 10)))
    handles = [Line2D([], [], color=colour(i), linewidth=2.5) for i in shown]
    labels = [f"group {i}" for i in shown]
    if len(schedule.groups) > len(shown):
        handles.append(Line2D([], [], color="white"))
        labels.append(f"... {len(schedule.groups)} groups")
    handles.append(Line2D([], [], color="black", linewidth=2.5))
    labels.append("shared")
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    if title is None:
        title = (
            f"{schedule.collective} of {len(schedule.groups)} groups on {topology.name} "
            f"(relay {schedule.relay}): {len(users)} links used, {shared} shared"
        )
    return _finish(ax, pos, title)


def plot_failure_drops(
    topology: Topology,
    drops: Mapping[str | tuple[str, str], float | None],
    *,
    ax: Axes | None = None,
    layout: Mapping[str, Position] | None = None,
    title: str | None = None,
) -> Axes:
    """The topology coloured by what each failure costs (``optcoll resilience --plot``).

    ``drops`` maps a link (a node pair) or a node to the share of the optimal algbw it
    takes away when it fails (0: nothing, 1: all), or None when its failure disconnects
    the compute nodes (drawn black). Links and nodes not in ``drops`` stay grey.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topo = load_topology("ring:4")
    >>> ax = plot_failure_drops(topo, {("n0", "n1"): 0.25, "n2": None})
    >>> ax.get_title()
    'ring:4: algbw lost by each failure (worst 25%; 1 disconnects)'
    """
    _check_nodes(
        topology, [v for e in drops for v in ((e,) if isinstance(e, str) else e)], "a failure"
    )
    pos = _positions(topology, layout)
    ax = _axes(ax, pos)
    _draw_boxes(ax, topology, pos)
    _draw_links(ax, topology, pos, color="#d9dde3", legend=False)
    _draw_nodes(ax, topology, pos, alpha=0.35, labels=len(topology.node_ids) <= 40)
    cmap = _colormap("YlOrRd")
    known = [d for d in drops.values() if d is not None]
    worst = max(known, default=0.0)

    def colour(drop: float | None) -> Colour:
        return "black" if drop is None else cmap(0.15 + 0.85 * min(max(drop, 0.0), 1.0))

    for element, drop in sorted(drops.items(), key=lambda item: -1 if item[1] is None else item[1]):
        if isinstance(element, str):
            ax.scatter(
                [pos[element][0]],
                [pos[element][1]],
                s=_node_size(topology),
                marker="o" if topology.is_compute(element) else "s",
                c=[colour(drop)],
                edgecolors="white",
                zorder=4,
            )
        else:
            u, v = element
            width = 1.2 + 2.4 * (1.0 if drop is None else min(max(drop, 0.0), 1.0))
            ax.add_collection(
                LineCollection(
                    [[pos[u], pos[v]]], linewidths=width, colors=[colour(drop)], zorder=2
                )
            )
    mappable = ScalarMappable(norm=Normalize(0, 100), cmap=cmap)
    bar = ax.figure.colorbar(mappable, ax=ax, shrink=0.6, pad=0.01)
    bar.set_label("algbw lost by the failure (%; black: disconnects)", fontsize=8)
    if title is None:
        cut_off = sum(1 for d in drops.values() if d is None)
        title = f"{topology.name}: algbw lost by each failure (worst {100 * worst:.0f}%"
        title += f"; {cut_off} disconnect{'s' * (cut_off == 1)})" if cut_off else ")"
    return _finish(ax, pos, title)


def plot_algbw_curves(
    curves: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    ax: Axes | None = None,
    xlabel: str = "message size",
    ylabel: str = "algbw (GB/s)",
    bytes_axis: bool = True,
    logy: bool = False,
    title: str | None = None,
) -> Axes:
    """Line plot of algbw (or any y) against message size (or any x), one line per curve.

    Parameters
    ----------
    curves : mapping
        ``label -> (xs, ys)``, drawn in the mapping's order.
    bytes_axis : bool
        x is a size in bytes: logarithmic, ticks labelled 1K, 1M, 1G.
        Otherwise x is linear (e.g. number of boxes).
    logy : bool
        Logarithmic y axis (for times).

    Examples
    --------
    >>> ax = plot_algbw_curves({"optimal": ([2**10, 2**20, 2**30], [3.1, 180.0, 346.6])})
    >>> ax.get_xscale(), ax.get_lines()[0].get_label()
    ('log', 'optimal')
    """
    ax = _axes(ax)
    if not curves:
        raise PlotError("no curves to draw")
    markers = "osD^v<>phX"
    for i, (label, (xs, ys)) in enumerate(curves.items()):
        if len(xs) != len(ys):
            raise PlotError(f"curve {label!r} has {len(xs)} x values but {len(ys)} y values")
        ax.plot(list(xs), list(ys), marker=markers[i % len(markers)], markersize=4, label=label)
    if bytes_axis:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _bytes_text(x)))
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def _bytes_text(x: float) -> str:
    for power, suffix in ((30, "G"), (20, "M"), (10, "K")):
        if x >= 2**power:
            value = x / 2**power
            return f"{value:g}{suffix}"
    return f"{x:g}"


def save_figure(
    ax_or_figure: Axes | Figure,
    path: str | Path,
    *,
    dpi: int = 150,
    force: bool = False,
    inputs: Iterable[str | Path] = (),
) -> Path:
    """Write the figure holding ``ax_or_figure`` as PNG (or by suffix: PDF, SVG).

    No time stamp, software tag or random id is embedded, so equal figures give
    equal bytes. The file is written by :func:`optcoll.core.output.write_output`: never
    over an existing file without ``force``, never over one of ``inputs``, never
    half-written; parent folders are created. Another suffix than those of
    :data:`PICTURE_SUFFIXES` raises :class:`~optcoll.exceptions.OutputError`.

    Raises
    ------
    PlotError
        ``dpi`` is not a positive integer.
    OutputError
        The file exists (without ``force``), is an input, or cannot be written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> ax = plot_algbw_curves({"ring": ([1, 2], [1.0, 2.0])}, bytes_axis=False)
    >>> out = save_figure(ax, pathlib.Path(tempfile.mkdtemp()) / "a.png")
    >>> out.read_bytes()[:4]
    b'\\x89PNG'
    """
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 1 <= dpi <= MAX_DPI:
        raise PlotError(f"dpi must be an integer between 1 and {MAX_DPI}, got {dpi!r}")
    figure = ax_or_figure if isinstance(ax_or_figure, Figure) else ax_or_figure.figure
    if isinstance(figure, SubFigure):
        figure = figure.figure  # a subfigure is saved as part of the figure holding it
    path = require_suffix(path, PICTURE_SUFFIXES, "a picture")
    check_output(path, force=force, inputs=inputs)  # before the (slow) drawing
    suffix = path.suffix.lower()
    metadata: dict[str, None] = {"Software": None} if suffix == ".png" else {}
    if suffix == ".svg":
        metadata = {"Date": None}
    elif suffix == ".pdf":
        metadata = {"CreationDate": None, "ModDate": None}
    picture = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "optcoll"}):  # fixed ids in SVG
        figure.savefig(picture, format=suffix.lstrip(".") or None, dpi=dpi, metadata=metadata)
    return write_output(path, picture.getvalue(), force=force, inputs=inputs)
