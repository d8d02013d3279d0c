"""``optcoll bound``: exact optimal allgather cut ratio r* and its bottleneck cut."""

from __future__ import annotations

import argparse
from typing import Any

from optcoll.cli._core import (
    add_group_options,
    add_latency_option,
    add_reader_options,
    add_sizes_option,
    collective_choice,
    print_json,
    process_groups,
    reader_options,
    sim_options,
    size_text,
)
from optcoll.cli._demand import add_demand_options, demand_bound, has_demand, rooted_bound
from optcoll.cli.simulate import overhead_us
from optcoll.core.schedule import DEFAULT_COLLECTIVE

NAME = "bound"
HELP = (
    "exact optimal allgather cut ratio r* and its bottleneck cut (or the all-to-all optimum t*, "
    "the allreduce bound with in-network reduction, the broadcast/reduce bound)"
)
#: Shown at the end of ``optcoll bound --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll bound mine.yaml --collective alltoall --json
  optcoll bound torus:8x8 --collective allreduce --sizes 1K 1M 1G --overhead 1 --latency 0.5
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument(
        "--method",
        default="combinatorial",
        help="combinatorial (parametric max-flow, default), lp, or brute-force (<= 16 nodes)",
    )
    parser.add_argument(
        "--collective",
        default=DEFAULT_COLLECTIVE,
        type=collective_choice,
        choices=(
            "allgather",
            "reduce_scatter",
            "alltoall",
            "allreduce",
            "broadcast",
            "reduce",
            "scatter",
            "gather",
        ),  # fmt: skip
        help="allgather (default: r* and its cut), alltoall (t* by the exact LP, its "
        "certificate and the cut bound), allreduce (the cut bound M/lambda and, when switches "
        "reduce or multicast, the exact aggregation-tree optimum; against reduce-scatter + "
        "allgather), broadcast or reduce (from or to --root, default rank 0), scatter or gather (exact, "
        "from or to --root; algbw = M / T)",
    )
    parser.add_argument(
        "--root", metavar="NODE", help="root of a scatter or gather (also of a broadcast or reduce)"
    )
    add_demand_options(parser)
    add_group_options(parser)
    add_sizes_option(
        parser,
        "the lower bound plan and simulate divide by at these message sizes: latency, "
        "bandwidth and start-up bounds (docs/bounds_every_size.md)",
    )
    parser.add_argument(
        "--overhead",
        type=overhead_us,
        default=None,
        metavar="US",
        help="with --sizes: per-step overhead of a connection in µs (default 1)",
    )
    add_latency_option(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.bounds.cut_ratio import optimal_cut_ratio
    from optcoll.io import load_topology

    topology = load_topology(args.topo, **reader_options(args))
    groups = process_groups(topology, args)
    if groups is not None:
        return _groups(groups, args)
    if has_demand(args):
        return demand_bound(topology, args)
    if args.collective in ("scatter", "gather"):
        return rooted_bound(topology, args)
    if args.sizes:
        return _sizes(topology, args)
    if args.collective == "alltoall":
        return _alltoall(topology, args)
    if args.collective in ("allreduce", "broadcast", "reduce"):
        return _in_network(topology, args)
    if args.collective == "reduce_scatter":
        from optcoll.schedules.collectives import reversed_topology

        topology = reversed_topology(topology)
    result = optimal_cut_ratio(topology, args.method)
    if args.json:
        print_json({"collective": args.collective, **result.to_dict()})
        return 0
    unit = topology.bandwidth_unit
    data = result.to_dict()
    work = ", ".join(f"{value} {key.replace('_', ' ')}" for key, value in result.stats.items())
    rows = [
        (
            "collective",
            "reduce-scatter: r* of the reversed topology"
            if args.collective == "reduce_scatter"
            else "allgather (reduce-scatter: the same r* on the reversed topology)",
        ),
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        ("cut ratio r*", f"{data['cut_ratio']} per {unit} of M/N (= {float(result.ratio):.6g})"),
        ("algbw N/r*", f"{result.algbw:.3f} {unit}"),
        (
            "k, U",
            f"k = {result.k} chunk{'s' * (result.k != 1)} per root, U = k r* = {data['U']} per {unit} of M/N",
        ),
        ("bottleneck cut", result.describe_cut()),
        ("method", f"{result.method}, {result.seconds:.3f} s" + (f" ({work})" if work else "")),
    ]
    if data["short_switches"]:
        rows.insert(
            5,
            (
                "forwardable",
                f"switch {', '.join(data['short_switches'])} can send more than it receives; "
                f"only what it can forward counts (the cut bandwidth too)",
            ),
        )
    for name, text in rows:
        print(f"{name:<15} {text}")
    return 0


def _sizes(topology: Any, args: argparse.Namespace) -> int:
    """The lower bound of plan and simulate at each of ``--sizes``
    (:class:`optcoll.sim.size_plan.SizeBound`)."""
    from fractions import Fraction

    from optcoll.exceptions import MethodError
    from optcoll.sim.size_plan import size_bound

    if args.method != "combinatorial":
        raise MethodError(f"--method {args.method} does not apply with --sizes")
    sim = sim_options(args)
    bounds = size_bound(
        topology, args.collective, root=args.root, overhead=sim.overhead,
        default_latency=sim.default_latency,
    )  # fmt: skip
    rows = []
    for size in args.sizes:
        tightest = bounds.startup.tightest(size)
        other = max(bounds.latency, bounds.bandwidth_us(size), bounds.startup.time_us(size))
        depth = None if bounds.depth is None else bounds.depth.time_us(size, other)
        joined = None
        if bounds.combined is not None:
            joined = bounds.combined.time_us(size, max(other, depth or Fraction(0)))
        rows.append(
            {
                "bytes": size,
                "latency_bound_us": round(float(bounds.latency), 4),
                "bandwidth_bound_us": round(float(bounds.bandwidth_us(size)), 4),
                "startup_bound_us": round(float(bounds.startup.time_us(size)), 4),
                "depth_bound_us": None if depth is None else round(float(depth), 4),
                "combined_bound_us": None if joined is None else round(float(joined), 4),
                "lower_bound_us": round(float(bounds.lower_us(size)), 4),
                "startup_cut": None if tightest is None else tightest.name,
            }
        )
    if args.json:
        print_json(
            {
                "topology": topology.name,
                "collective": bounds.collective,
                "overhead_us": sim.overhead,
                "latency_us": str(sim.default_latency),
                "bound_holds_for": bounds.describe(),
                "sizes": rows,
            }
        )
        return 0
    print(
        f"{bounds.collective} on {topology.name} ({topology.num_compute} compute nodes), "
        f"overhead {sim.overhead:g} µs, links without a latency {float(sim.default_latency):g} µs"
    )
    print(
        "lower bound = max(latency, bandwidth, start-up, depth, combined); holds for: "
        + bounds.describe()
    )
    print(
        f"{'size':>6}  {'latency':>10}  {'bandwidth':>12}  {'start-up':>12}  {'depth':>8}  "
        f"{'combined':>8}  {'lower bound':>12}  tightest start-up cut"
    )
    for row in rows:
        print(
            f"{size_text(row['bytes']):>6}  {row['latency_bound_us']:>10.3f}  "
            f"{row['bandwidth_bound_us']:>12.3f}  {row['startup_bound_us']:>12.3f}  "
            f"{'-' if not row['depth_bound_us'] else format(row['depth_bound_us'], '.3f'):>8}  "
            f"{'-' if not row['combined_bound_us'] else format(row['combined_bound_us'], '.3f'):>8}  "
            f"{row['lower_bound_us']:>12.3f}  {row['startup_cut'] or '-'}"
        )
    return 0


def _alltoall(topology: Any, args: argparse.Namespace) -> int:
    from optcoll.exceptions import MethodError
    from optcoll.schedules.alltoall import alltoall_bound

    if args.method != "combinatorial":
        raise MethodError(
            f"--method {args.method} applies to the allgather cut ratio; the all-to-all "
            "optimum always comes from its exact LP"
        )
    bound = alltoall_bound(topology)
    data = bound.to_dict()
    if args.json:
        print_json(data)
        return 0
    unit = topology.bandwidth_unit
    search = "all sets" if bound.cut_exhaustive else "candidate sets: a lower bound on the best cut"
    inside = sum(1 for v in bound.cut if topology.is_compute(v))
    rows = [
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        (
            "all-to-all t*",
            f"{data['time_factor']} per {unit} of M/N (= {float(bound.time_factor):.6g})",
        ),
        ("algbw N/t*", f"{bound.algbw:.3f} {unit}"),
        (
            "certificate",
            f"length function on {len(bound.lengths)} link{'s' * (len(bound.lengths) != 1)} "
            f"proves {data['certificate_bound']}",
        ),
        ("cut bound", f"{data['cut_bound']} ({search}; S has {inside} compute nodes)"),
        ("flow-cut gap", f"{data['flow_cut_gap']} (= {float(bound.flow_cut_gap):.4f})"),
        ("LP", f"{data['lp_variables']} variables, {bound.seconds:.3f} s"),
    ]
    for name, text in rows:
        print(f"{name:<15} {text}")
    return 0


def _in_network(topology: Any, args: argparse.Namespace) -> int:
    """Allreduce (cut bound, aggregation optimum, reduce-scatter + allgather), broadcast, reduce."""
    from optcoll.bounds.in_network import (
        MAX_CAPABLE_SWITCHES,
        aggregation_bound,
        has_aggregation_lp,
        reduction_cut,
    )
    from optcoll.core.rational import fraction_text, rounded_text
    from optcoll.core.units import time_factor_meaning
    from optcoll.exceptions import MethodError, OptCollError
    from optcoll.schedules.collective_bound import collective_bound
    from optcoll.schedules.collectives import collective_lower_bound
    from optcoll.schedules.spanning_tree_allreduce import (
        reduces_over_spanning_trees,
        spanning_tree_packing,
    )

    if args.method != "combinatorial":
        raise MethodError(f"--method {args.method} applies to the allgather cut ratio only")
    unit = topology.bandwidth_unit
    n = topology.num_compute
    if args.collective != "allreduce":
        root = topology.compute_nodes[0] if args.root is None else args.root
        bound = collective_lower_bound(topology, args.collective, root)
        if bound is None:  # None only for a broadcast or reduce without a root
            raise OptCollError(f"no {args.collective} lower bound from root {root}")
        data = {
            "topology": topology.name,
            "collective": args.collective,
            "num_compute": n,
            "bandwidth_unit": unit,
            "root": root,
            "time_factor": fraction_text(bound),
            "time_factor_meaning": time_factor_meaning(args.collective, unit),
            "algbw": round(float(1 / bound), 3),
            "in_network": "unchanged: the whole message crosses every cut between the root "
            "and a compute node, whatever the switches copy or sum",
        }
        if args.json:
            print_json(data)
            return 0
        rows = [
            ("topology", f"{topology.name} ({n} compute nodes)"),
            (f"{args.collective} T", f"M * {fraction_text(bound)} (root {root}, rank 0)"),
            ("algbw", f"{float(1 / bound):.3f} {unit}"),
            ("in-network", data["in_network"]),
        ]
        for name, text in rows:
            print(f"{name:<15} {text}")
        return 0
    cut = reduction_cut(topology)
    relaying = collective_lower_bound(topology, "allreduce") / n
    capable = set(topology.reducing_switches) | set(topology.multicast_switches)
    aggregation = aggregation_bound(topology) if has_aggregation_lp(topology) else None
    data = {
        "topology": topology.name,
        "collective": "allreduce",
        "num_compute": n,
        "bandwidth_unit": unit,
        "lower_bound": fraction_text(n * cut.time_factor),
        "time_factor_meaning": time_factor_meaning("allreduce", unit),
        "algbw": round(float(1 / cut.time_factor), 3),
        "per_message": "cut_bound, reduce_scatter_allgather and aggregation's cut_bound and "
        "optimum are per whole message: T = M * value",
        "reducing_switches": list(topology.reducing_switches),
        "multicast_switches": list(topology.multicast_switches),
        "cut_bandwidth": fraction_text(cut.bandwidth),
        "cut": sorted(cut.cut),
        "cut_bound": fraction_text(cut.time_factor),
        "reduce_scatter_allgather": fraction_text(relaying),
        "aggregation": None if aggregation is None else aggregation.to_dict(),
    }
    certified = collective_bound(topology, "allreduce")
    partition = certified.partition or _partition_or_none(topology)
    trees = spanning_tree_packing(topology) if reduces_over_spanning_trees(topology) else None
    data["bound"] = fraction_text(certified.time_factor / n)
    data["bound_holds_for"] = certified.describe()
    data["partition_bound"] = None if partition is None else _partition_dict(partition)
    data["spanning_trees"] = None if trees is None else fraction_text(trees.time_factor)
    if args.json:
        print_json(data)
        return 0
    inside = sum(1 for v in cut.cut if topology.is_compute(v))
    rows = [
        ("topology", f"{topology.name} ({n} compute nodes)"),
        (
            "in-network",
            f"reduce: {', '.join(topology.reducing_switches) or 'none'}; multicast: "
            f"{', '.join(topology.multicast_switches) or 'none'}",
        ),
        (
            "cut bound",
            f"T >= M * {fraction_text(cut.time_factor)} (algbw <= {float(cut.bandwidth):.3f} "
            f"{unit}): lambda = {rounded_text(cut.bandwidth)} {unit} leaves a set of {inside} "
            f"compute and {len(cut.cut) - inside} other nodes; holds for every schedule",
        ),
        (
            "RS + AG",
            f"T = M * {fraction_text(relaying)} (algbw {float(1 / relaying):.3f} {unit}): "
            "reduce-scatter then allgather, switches relaying",
        ),
    ]
    if partition is not None:
        rows.append(
            (
                "partition",
                f"T >= M * {fraction_text(partition.time_factor)} (algbw <= "
                f"{float(1 / partition.time_factor):.3f} {unit}): p = {partition.compute_parts} "
                f"compute parts, d = {partition.crossings}, C = {rounded_text(partition.capacity)}"
                f" {unit} ({'best of all partitions' if partition.exact else partition.method}); "
                f"holds for {partition.holds_for}",
            )
        )
    if trees is not None:
        rows.append(
            (
                "spanning trees",
                f"T = M * {fraction_text(trees.time_factor)} (algbw "
                f"{float(1 / trees.time_factor):.3f} {unit}): reduce + broadcast over "
                f"{len(trees.trees)} spanning trees (exact LP)",
            )
        )
    best = min([relaying, *([trees.time_factor] if trees is not None else [])])
    if partition is not None and best == partition.time_factor:
        which = "RS + AG" if best == relaying else "reduce + broadcast over spanning trees"
        rows.append(
            (
                "optimal",
                f"{which}: optimal among "
                + partition.holds_for.replace("every allreduce", "all allreduce schedules"),
            )
        )
    rows.append(("bound", certified.describe()))
    if len(capable) > MAX_CAPABLE_SWITCHES:
        rows.append(
            (
                "aggregation",
                f"not computed: {len(capable)} switches reduce or multicast, the exact LP "
                f"takes at most {MAX_CAPABLE_SWITCHES}",
            )
        )
    if aggregation is not None:
        proof = "proved by exact prices" if aggregation.proved else "NOT proved"
        rows.append(
            (
                "aggregation",
                f"T = M * {fraction_text(aggregation.optimum)} (algbw "
                f"{float(1 / aggregation.optimum):.3f} {unit}): optimal among aggregation-tree "
                f"schedules, {proof}; {len(aggregation.pieces)} trees, "
                f"{aggregation.seconds:.2f} s",
            )
        )
        gap = aggregation.gap
        reasons = []
        if topology.multimem_switches:
            reasons.append(
                "multimem (NVLS) switches return each sum to the GPU that loads it, whose "
                "own share goes up and comes down once more"
            )
        if set(topology.switch_nodes) - set(topology.reducing_switches):
            reasons.append("switches that only relay cannot sum, and aggregation trees need them")
        why = "; ".join(reasons)
        rows.append(
            (
                "gap",
                "none: the cut bound is attained"
                if gap == 1
                else f"{fraction_text(gap)} (= {float(gap):.4f}) above the cut bound: {why}",
            )
        )
        rows.append(("speed-up", f"{float(relaying / aggregation.optimum):.4f}x over RS + AG"))
    for name, text in rows:
        print(f"{name:<15} {text}")
    return 0


def _groups(groups: Any, args: argparse.Namespace) -> int:
    from optcoll.exceptions import MethodError
    from optcoll.groups.bounds import FORMS, groups_bound

    if args.collective != "allgather" or args.method != "combinatorial":
        raise MethodError(
            "--groups computes the allgather of concurrent groups (each group by the "
            "combinatorial method, several at once by their exact LP); drop "
            + ("--collective" if args.collective != "allgather" else "--method")
        )
    topology = groups.topology
    bound = groups_bound(groups, form=args.group_form or FORMS[0])
    data = bound.to_dict()
    if args.json:
        print_json(data)
        return 0
    unit = topology.bandwidth_unit
    rows = [
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        ("groups", f"{data['num_groups']} (relay {data['relay']})"),
        ("time factor t*", f"{data['time_factor']} per {unit} (= {float(bound.time_factor):.6g})"),
    ]
    for i, group in enumerate(data["groups"]):
        rows.append(
            (
                f"group {i}",
                f"{len(group['members'])} members, alone {group['optimum']}, "
                f"slowdown {group['slowdown']}",
            )
        )
    links = data["certificate"]["binding_links"]
    rows.append(("certificate", f"{data['certificate']['kind']}: {len(links)} binding links"))
    form = f" ({data['form']} form)" if data["form"] else ""
    rows.append(("method", f"{bound.method}{form}, {bound.seconds:.3f} s"))
    for name, text in rows:
        print(f"{name:<15} {text}")
    return 0


def _partition_or_none(topology: Any) -> Any:
    """The partition bound of the allreduce, or None where no partition applies."""
    from optcoll.bounds.partition import partition_bound
    from optcoll.exceptions import ArgumentError

    try:
        return partition_bound(topology, "allreduce")
    except ArgumentError:
        return None


def _partition_dict(partition: Any) -> dict[str, Any]:
    from optcoll.core.rational import fraction_text

    return {
        "time_factor": fraction_text(partition.time_factor),
        "compute_parts": partition.compute_parts,
        "crossings": partition.crossings,
        "capacity": fraction_text(partition.capacity),
        "exact": partition.exact,
        "method": partition.method,
        "holds_for": partition.holds_for,
        "parts": [sorted(part) for part in partition.parts],
    }
