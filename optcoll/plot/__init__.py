"""Pictures of topologies, trees, cuts, link loads and algbw curves (matplotlib).

Every drawing function takes an optional matplotlib ``Axes`` (a new figure is
made when it is omitted), returns the ``Axes`` it drew on, and never touches
pyplot's global state, so it works headless (Agg) and inside notebooks alike.
The ``Axes`` of a figure made here is a :class:`PictureAxes`: as a Jupyter
cell's last line it shows the picture (``plot_topology(t)``, no ``.figure``).
:func:`save_figure` writes PNG, PDF or SVG without time stamps or random ids,
so the same input gives the same bytes.

The node positions come from :func:`topology_layout`: boxes (``Node.group``)
side by side, each with its GPUs in a row, the NVSwitch below and per-GPU NICs
above (or its GPUs on a circle when they are linked directly, as in an xGMI
mesh); switches shared by several boxes in a row above. Topologies without
groups are drawn in layers (compute nodes in a row, switches above them by hop
distance) or, without switches, by Kamada-Kawai.

One module per kind of picture: :mod:`~optcoll.plot.topology` (topologies and cuts),
:mod:`~optcoll.plot.trees`, :mod:`~optcoll.plot.loads` (link utilisation, process groups),
:mod:`~optcoll.plot.curves` (algbw curves, failure drops), beside the shared
:mod:`~optcoll.plot.layout`, :mod:`~optcoll.plot.draw` and :mod:`~optcoll.plot.files`.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.plot import plot_cut, plot_topology
>>> topo = load_topology("dgx-a100:1")
>>> ax = plot_topology(topo)
>>> ax.get_title()
'dgx-a100:1: 8 compute nodes, 1 switch'
>>> ax._repr_png_()[:4]  # what Jupyter shows
b'PNG'
>>> side = {f"b0.gpu{i}" for i in range(7)} | {"b0.nvswitch"}
>>> plot_cut(topo, side).get_title()
'cut S: 7 compute nodes, B+(S) = 300 GB/s, ratio 7/300 per GB/s'
"""

from __future__ import annotations

from optcoll.plot.curves import plot_algbw_curves, plot_failure_drops
from optcoll.plot.draw import PictureAxes
from optcoll.plot.files import MAX_DPI, PICTURE_SUFFIXES, save_figure
from optcoll.plot.layout import topology_layout
from optcoll.plot.loads import plot_group_links, plot_link_utilisation, schedule_link_loads
from optcoll.plot.topology import plot_cut, plot_topology
from optcoll.plot.trees import plot_tree

__all__ = [
    "PICTURE_SUFFIXES",
    "PictureAxes",
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
