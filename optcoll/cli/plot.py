"""``optcoll plot``: draw a topology, a tree, the bottleneck cut or link loads."""

from __future__ import annotations

import argparse

from optcoll.cli._core import (
    add_group_options,
    add_reader_options,
    command_inputs,
    process_groups,
    reader_options,
    resolution,
)

NAME = "plot"
HELP = "draw a topology, a tree, the bottleneck cut or link loads"
#: Shown at the end of ``optcoll plot --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll plot dgx-a100:2 --cut -o cut.png
  optcoll plot mi250:1 --tree b0.gcd0 -o tree.png
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(p)
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="picture file (.png, .pdf, .svg)"
    )
    p.add_argument(
        "--schedule", metavar="FILE", help="schedule file: draw its link loads as a heat map"
    )
    p.add_argument(
        "--tree", metavar="ROOT", help="draw the tree rooted at ROOT (from --schedule, or computed)"
    )
    p.add_argument(
        "--cut", action="store_true", help="draw the bottleneck cut S* that certifies the bound"
    )
    add_group_options(p)
    p.add_argument("--dpi", type=resolution, default=150, help="resolution of a PNG (default 150)")
    p.add_argument("--force", action="store_true", help="overwrite an existing OUT")


def run(args: argparse.Namespace) -> int:
    from optcoll import plot
    from optcoll.core.aggregation import AggregationSchedule
    from optcoll.core.groups_schedule import GroupsSchedule
    from optcoll.core.output import check_output, require_suffix
    from optcoll.core.schedule import Schedule, check_schedule_topology
    from optcoll.exceptions import MethodError, ScheduleError
    from optcoll.io import load_topology
    from optcoll.io.schedule_json import load_any_schedule

    require_suffix(args.output, plot.PICTURE_SUFFIXES, "a picture")
    inputs = command_inputs(args)
    check_output(args.output, force=args.force, inputs=inputs)
    topology = load_topology(args.topology, **reader_options(args))
    if args.cut and (args.tree or args.schedule):
        raise MethodError("--cut draws the bottleneck cut alone; leave out --tree and --schedule")
    groups = process_groups(topology, args)
    schedule: Schedule | GroupsSchedule | None = None
    if args.schedule:
        loaded = load_any_schedule(args.schedule)
        check_schedule_topology(loaded, topology, str(args.schedule))
        if isinstance(loaded, AggregationSchedule):
            raise ScheduleError(
                f"{args.schedule} holds an allreduce by aggregation trees through reducing "
                "switches (field 'aggregation'); plot draws relaying schedules only"
            )
        schedule = loaded
    if groups is not None or isinstance(schedule, GroupsSchedule):
        if args.cut or args.tree or (groups is not None and schedule is not None):
            raise MethodError(
                "process groups are drawn link by link (which links each group uses): give "
                "--groups or a groups --schedule file, without --cut or --tree"
            )
        if not isinstance(schedule, GroupsSchedule):
            from optcoll.groups.schedule import groups_schedule

            schedule = groups_schedule(groups, form=args.group_form)
        ax = plot.plot_group_links(topology, schedule)
    elif args.cut:
        from optcoll.bounds.cut_ratio import optimal_cut_ratio

        ax = plot.plot_cut(topology, optimal_cut_ratio(topology).bottleneck_cut)
    elif args.tree:
        if schedule is None:
            from optcoll.schedules.packing import pack_arborescences

            schedule = pack_arborescences(topology)
        trees = [t for t in schedule.trees if t.root == args.tree]
        if not trees:
            roots = sorted({t.root for t in schedule.trees})
            raise ScheduleError(
                f"the schedule has no tree rooted at {args.tree!r}; roots are {', '.join(roots)}"
            )
        tree = max(trees, key=lambda t: t.chunks)
        ax = plot.plot_tree(topology, tree, k=schedule.k)
    elif schedule is not None:
        ax = plot.plot_link_utilisation(topology, schedule)
    else:
        ax = plot.plot_topology(topology)
    path = plot.save_figure(ax, args.output, dpi=args.dpi, force=args.force, inputs=inputs)
    print(f"wrote {path}")
    return 0
