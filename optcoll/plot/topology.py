"""Pictures of a topology and of a cut of it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from optcoll.core.arguments import topology_argument
from optcoll.core.rational import count_text, fraction_text
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, PlotError
from optcoll.plot.draw import (
    CUT_COLOR,
    _arrow,
    _axes,
    _bandwidth_text,
    _check_nodes,
    _draw_boxes,
    _draw_links,
    _draw_nodes,
    _finish,
    _node_size,
    _width,
)
from optcoll.plot.layout import Position, _positions

__all__ = ["plot_topology", "plot_cut"]


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
            f"{topology.name}: {count_text(topology.num_compute, 'compute node')}, "
            f"{count_text(len(topology.switch_nodes), 'switch')}"
        )
    return _finish(ax, pos, title)


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
            f"cut S: {count_text(count, 'compute node')}, B+(S) = "
            f"{_bandwidth_text(bandwidth, topology.bandwidth_unit)}, ratio "
            f"{fraction_text(ratio)} per {topology.bandwidth_unit}"
        )
    return _finish(ax, pos, title)
