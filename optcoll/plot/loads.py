"""Pictures of link loads: a schedule's utilisation and the links each process group uses."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction

from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.lines import Line2D

from optcoll.core.arguments import instance_argument, schedule_argument, topology_argument
from optcoll.core.groups_schedule import GroupsSchedule
from optcoll.core.loads import PHASES, link_loads, route_loads
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import Schedule
from optcoll.core.topology import Topology
from optcoll.exceptions import PlotError
from optcoll.plot.draw import (
    Colour,
    _arrow,
    _axes,
    _colormap,
    _draw_boxes,
    _draw_nodes,
    _draw_unused,
    _finish,
    _node_size,
)
from optcoll.plot.layout import Position, _positions

__all__ = ["schedule_link_loads", "plot_link_utilisation", "plot_group_links"]


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
