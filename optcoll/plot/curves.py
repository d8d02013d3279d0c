"""Curves: algbw against message size, and bound drops under link failures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize
from matplotlib.ticker import FuncFormatter

from optcoll.core.topology import Topology
from optcoll.exceptions import PlotError
from optcoll.plot.draw import (
    Colour,
    _axes,
    _check_nodes,
    _colormap,
    _draw_boxes,
    _draw_links,
    _draw_nodes,
    _finish,
    _node_size,
)
from optcoll.plot.layout import Position, _positions

__all__ = ["plot_failure_drops", "plot_algbw_curves"]


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
