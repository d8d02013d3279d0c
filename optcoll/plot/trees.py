"""Pictures of one tree of a schedule, drawn on its topology."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping

from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from optcoll.core.arguments import topology_argument
from optcoll.core.schedule import Tree
from optcoll.core.topology import Topology
from optcoll.plot.draw import (
    _arrow,
    _axes,
    _check_nodes,
    _colormap,
    _draw_boxes,
    _draw_links,
    _draw_nodes,
    _finish,
    _node_size,
    _short_label,
)
from optcoll.plot.layout import Position, _positions

__all__ = ["plot_tree"]


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
