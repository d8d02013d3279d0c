"""``optcoll compare``: algbw of the optimal schedule against ring, hierarchical ring and tree baselines."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from optcoll.cli._core import (
    add_collective_option,
    add_group_options,
    add_latency_option,
    add_reader_options,
    add_sizes_option,
    command_inputs,
    print_json,
    process_groups,
    reader_options,
    sim_options,
    size_text,
)
from optcoll.cli._demand import add_demand_options, demand_compare, has_demand
from optcoll.core.rational import fraction_text

NAME = "compare"
HELP = "algbw of the optimal schedule against ring, hierarchical ring and tree baselines"
#: Shown at the end of ``optcoll compare --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll compare dgx-a100:2
  optcoll compare mine.yaml --collective allreduce --sizes 1M 1G
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    add_collective_option(
        parser, "allgather (default), allreduce, broadcast, reduce (from --root) or alltoall"
    )
    parser.add_argument("--root", metavar="NODE", help="root of a broadcast or reduce")
    add_sizes_option(parser, "message sizes for the algbw curve (default 1K 4K ... 4G)")
    add_latency_option(parser)
    add_group_options(parser)
    add_demand_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--plot", metavar="PNG", help="draw algbw vs message size")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --plot file")


def run(args: argparse.Namespace) -> int:

    from optcoll.core.busbw import bus_factor
    from optcoll.core.output import check_output, require_suffix
    from optcoll.io import load_topology
    from optcoll.plot import PICTURE_SUFFIXES
    from optcoll.schedules.collective_bound import collective_bound
    from optcoll.sim.cost_model import SIZES
    from optcoll.sim.nccl_model import NcclEstimate, nccl_model, nccl_ring_channels
    from optcoll.sim.size_plan import method_times, size_bound
    from optcoll.studies.compare import compare_group_methods, compare_methods

    inputs = command_inputs(args)
    if args.plot:
        require_suffix(args.plot, PICTURE_SUFFIXES, "a picture")
        check_output(args.plot, force=args.force, inputs=inputs)
    topology = load_topology(args.topo, **reader_options(args))
    if args.root is not None and args.root not in topology.compute_nodes:
        from optcoll.exceptions import ScheduleError

        raise ScheduleError(f"--root {args.root!r} is not a compute node of {topology.name}")
    root = topology.compute_nodes[0] if args.root is None else args.root
    if has_demand(args):
        return demand_compare(topology, args)
    latency = sim_options(args).default_latency
    sizes = args.sizes or list(SIZES)
    groups = process_groups(topology, args)
    if groups is None:
        costs = compare_methods(
            topology, args.collective, root=root, default_latency=latency,
            progress=sys.stderr.isatty(),
        )  # fmt: skip
    else:
        costs = compare_group_methods(
            groups, args.collective, default_latency=latency, form=args.group_form
        )
    if groups is None:
        costs = _with_spanning_trees(topology, args.collective, costs, latency)
    certified = collective_bound(topology, args.collective, root)
    bus = float(bus_factor(args.collective, topology.num_compute))
    best = costs[0]
    mid = sizes[len(sizes) // 2]
    # every size-dependent number comes from the simulator (default overhead and slice)
    times = method_times(topology, costs, [*sizes, mid], default_latency=latency)
    channels: dict[int, int] = {}
    for index, cost in enumerate(costs):
        if groups is None and cost.method.startswith("NCCL-like ring"):
            channels = nccl_ring_channels(topology, args.collective, [*sizes, mid])
            times[index] = _nccl_times(topology, args.collective, channels, [*sizes, mid], latency)
    curves = [[None if t is None else m / t / 1000 for m, t in zip(sizes, row, strict=False)]
              for row in times]  # fmt: skip
    rows = []
    model: dict[int, NcclEstimate] = {}
    for cost, curve in zip(costs, curves, strict=True):
        nccl = groups is None and cost.method.startswith("NCCL-like ring")
        if nccl:
            model = {m: nccl_model(topology, args.collective, m) for m in [*sizes, mid]}
        rows.append(
            {
                "method": cost.method,
                "algbw": round(cost.asymptotic_algbw, 2),
                "busbw": round(cost.asymptotic_algbw * bus, 2),
                "ratio_to_optimal": round(float(best.time_factor / cost.time_factor), 4),
                "ratio_to_bound": round(float(cost.time_factor / certified.time_factor), 4),
                "time_factor": fraction_text(cost.time_factor),
                "latency_us": float(cost.alpha),
                "curve": [
                    {
                        "bytes": m,
                        "algbw": None if bw is None else round(bw, 3),
                        **(
                            {
                                "nccl_channels": channels[m],
                                "nccl_model_us": round(model[m].time_us, 3),
                                "nccl_model_choice": f"{model[m].algorithm}/{model[m].protocol}",
                            }
                            if nccl
                            else {}
                        ),
                    }
                    for m, bw in zip(sizes, curve, strict=True)
                ],
            }
        )
    if args.plot:
        _plot_curves(costs, sizes, curves, topology, args.collective, args)
    scope = {} if groups is None else {"relay": groups.relay, "num_groups": len(groups.groups)}
    floors: dict[int, float] = {}
    if groups is None:  # the bound plan and simulate divide by, at the simulated sizes
        bounds = size_bound(topology, args.collective, root=root, default_latency=latency)
        floors = {m: float(bounds.lower_us(m)) for m in [*sizes, mid]}
    if args.json:
        print_json(
            {
                "topology": topology.name,
                "collective": args.collective,
                **scope,
                "bound": fraction_text(certified.time_factor),
                "bound_holds_for": certified.describe(),
                "lower_bound_us": [
                    {"bytes": m, "lower_bound_us": round(floors[m], 4)} for m in sizes if floors
                ],
                "methods": rows,
            }
        )
        return 0
    unit = topology.bandwidth_unit
    print(f"{args.collective} on {topology.name} ({topology.num_compute} compute nodes)")
    if groups is not None:
        print(
            f"{len(groups.groups)} groups at once (relay {groups.relay}); algbw per group "
            "(the slowest group's)"
        )
    width = max(len(cost.method) for cost in costs)
    at_mid = f"algbw at M = {size_text(mid)}"
    print(
        f"bound (large M): algbw <= {float(_scale(topology, args.collective) / certified.time_factor):.2f}"
        f" {unit}, {certified.describe()}"
    )
    print(
        f"{'method':<{width}}  {'algbw (large M)':>16}  {'busbw (large M)':>16}  {'ratio':>6}  "
        f"{'/bound':>6}  {at_mid:>18}"
    )
    for row, time_us in zip(rows, (row[-1] for row in times), strict=True):
        at = "-" if time_us is None else f"{mid / time_us / 1000:.2f}"
        print(
            f"{row['method']:<{width}}  {row['algbw']:>11.2f} {unit}  {row['busbw']:>11.2f} {unit}  "
            f"{row['ratio_to_optimal']:>6.4f}  {row['ratio_to_bound']:>6.4f}  {at:>13} {unit}"
        )
    print("ratio: to the best method's algbw; /bound: its time over the bound's (large M)")
    if floors:
        print(
            f"lower bound at M = {size_text(mid)}: {floors[mid]:.3f} µs (algbw <= "
            f"{mid / floors[mid] / 1000:.2f} {unit}; latency, bandwidth and start-up bounds, "
            "docs/bounds_every_size.md)"
        )
    print("algbw at a size: simulated (optcoll simulate's model, 1 µs steps, 512K slices)")
    if channels:
        counts = ", ".join(f"{size_text(m)}: {c}" for m, c in channels.items() if m in sizes)
        print(f"NCCL-like rings at a size: on NCCL's channel count there (enqueue.cc): {counts}")
    if mid in model:
        est = model[mid]
        print(
            f"NCCL's own tuning model (tuning.cc) at M = {size_text(mid)}: "
            f"{est.time_us:.2f} µs ({est.algorithm}/{est.protocol}), "
            f"algbw {mid / est.time_us / 1000:.2f} {unit}, from the NCCL-like rings' bus bandwidth"
        )
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _nccl_times(
    topology: Any, collective: str, channels: dict[int, int], sizes: list[int], latency: Any
) -> list[float | None]:
    """The simulated time of NCCL-like rings at each of ``sizes`` (repeats allowed) with
    NCCL's channel count there (``channels``,
    :func:`optcoll.schedules.baselines.nccl_channels`)."""
    from functools import partial

    from optcoll.schedules.baselines import nccl_ring_schedule
    from optcoll.schedules.collectives import from_allgather_trees
    from optcoll.sim.cost_model import schedule_cost
    from optcoll.sim.size_plan import method_times

    times: dict[int, float | None] = {}
    for count in set(channels.values()):
        schedule = from_allgather_trees(
            topology, collective, partial(nccl_ring_schedule, channels=count)
        )
        cost = schedule_cost(topology, schedule, str(schedule.stats["method"]))
        at = [m for m, c in channels.items() if c == count]
        for size, time in zip(
            at, method_times(topology, [cost], at, default_latency=latency)[0], strict=True
        ):
            times[size] = time
    return [times[m] for m in sizes]


def _plot_curves(
    costs: Any, sizes: Any, curves: Any, topology: Any, collective: str, args: argparse.Namespace
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from optcoll.plot import save_figure

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for cost, curve in zip(costs, curves, strict=True):
        axes.plot(
            sizes,
            [math.nan if bw is None else bw for bw in curve],
            marker="o",
            markersize=3,
            label=cost.method,
        )
    axes.set_xscale("log", base=2)
    axes.set_xlabel("message size M (bytes)")
    axes.set_ylabel(f"algbw ({topology.bandwidth_unit})")
    axes.set_title(f"{collective} on {topology.name}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    try:
        save_figure(figure, args.plot, dpi=120, force=args.force, inputs=command_inputs(args))
    finally:
        plt.close(figure)


def _scale(topology: Any, collective: str) -> int:
    """``data(M)`` is ``M / N`` for these collectives, ``M`` otherwise."""
    from optcoll.core.schedule import canonical_collective

    per_node = ("allgather", "reduce_scatter", "allreduce", "alltoall")
    return topology.num_compute if canonical_collective(collective) in per_node else 1


def _with_spanning_trees(
    topology: Any, collective: str, costs: list[Any], latency: Any
) -> list[Any]:
    """``costs`` with reduce + broadcast over spanning trees (allreduce, no switches): first
    when it is the fastest, else last; then, on topologies
    :func:`optcoll.schedules.shallow_trees.reduces_over_shallow_trees` takes, over shallow
    trees of routed edges (last: never the least time factor)."""
    from optcoll.core.schedule import canonical_collective
    from optcoll.schedules.shallow_trees import reduces_over_shallow_trees, shallow_trees
    from optcoll.schedules.spanning_tree_allreduce import (
        reduce_broadcast_trees,
        reduces_over_spanning_trees,
    )

    if canonical_collective(collective) != "allreduce" or not reduces_over_spanning_trees(topology):
        return costs
    cost = _tree_cost(
        topology, "spanning trees (reduce+broadcast)", reduce_broadcast_trees(topology), latency
    )
    costs = [cost, *costs] if cost.time_factor < costs[0].time_factor else [*costs, cost]
    if reduces_over_shallow_trees(topology):
        costs.append(
            _tree_cost(
                topology, "shallow trees (reduce+broadcast)", shallow_trees(topology), latency
            )
        )
    return costs


def _tree_cost(topology: Any, method: str, trees: Any, latency: Any) -> Any:
    """The :class:`~optcoll.core.cost.Cost` of an allreduce reducing up ``trees`` and
    broadcasting down them: the time factor of their busiest link, the latency of their
    deepest path (every link of every edge's path) up then down."""
    from fractions import Fraction

    from optcoll.core.cost import Cost, link_latencies
    from optcoll.schedules.spanning_tree_allreduce import tree_time_factor

    delay = link_latencies(topology, latency)
    alpha = Fraction(0)
    for tree in trees:  # the deepest path, up then down
        depth = {tree.root: Fraction(0)}
        for edge in tree.edges:
            hops = zip(edge.path, edge.path[1:], strict=False)
            depth[edge.dst] = depth[edge.src] + sum((delay[hop] for hop in hops), Fraction(0))
        alpha = max(alpha, 2 * max(depth.values()))
    n = topology.num_compute
    return Cost(
        method,
        "allreduce",
        n,
        n * tree_time_factor(topology, trees),
        alpha,
        trees=trees,
        phases=(True, False),
    )
