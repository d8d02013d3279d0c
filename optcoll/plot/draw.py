"""Drawing primitives shared by the pictures: axes that show in Jupyter, nodes, links, boxes, labels."""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from fractions import Fraction

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.colors import Colormap
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Rectangle

from optcoll.core.rational import rounded_text
from optcoll.core.topology import Topology
from optcoll.exceptions import UnknownNodeError
from optcoll.plot.layout import Position, _groups

__all__ = ["PictureAxes"]

#: A matplotlib colour: a name or hex string, or an RGBA tuple (as colormaps return).
Colour = str | tuple[float, float, float, float]

COMPUTE_COLOR = "#4c72b0"

SWITCH_COLOR = "#8c8c8c"

CUT_COLOR = "#dd5500"

LINK_COLOR = "#9aa7b8"


class PictureAxes(Axes):
    """The ``Axes`` of a figure a drawing function made: an ordinary matplotlib ``Axes``
    that Jupyter shows as its figure's picture (IPython calls :meth:`_repr_png_`)."""

    def _repr_png_(self) -> bytes:
        figure = self.figure
        while isinstance(figure, SubFigure):
            figure = figure.figure
        picture = io.BytesIO()
        figure.savefig(picture, format="png", dpi=100, metadata={"Software": None})
        return picture.getvalue()


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
    return fig.add_subplot(axes_class=PictureAxes)


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


def _check_nodes(topology: Topology, nodes: Iterable[object], what: str) -> None:
    for v in nodes:
        if not isinstance(v, str) or v not in topology.node:
            raise UnknownNodeError(
                f"{what} names node {v!r}, which is not in topology {topology.name!r}"
            )


def _colormap(name: str) -> Colormap:
    return colormaps[name]
