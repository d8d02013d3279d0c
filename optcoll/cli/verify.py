"""``optcoll verify``: check a schedule file against a topology (exact)."""

from __future__ import annotations

import argparse
from typing import Any

from optcoll.cli._core import (
    add_group_options,
    add_reader_options,
    print_json,
    process_groups,
    reader_options,
)
from optcoll.cli._demand import add_demand_options, demand_verify, has_demand
from optcoll.core.rational import fraction_text

NAME = "verify"
HELP = "check a schedule file against a topology (exact)"
#: Shown at the end of ``optcoll verify --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll verify dgx-a100:2 optcoll-out/dgx-a100_2.allgather.schedule.json
  optcoll verify dgx-h100:2 optcoll-out/dgx-h100_2.alltoallv.routes.json --moe tokens=256,experts=16
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument("schedule", metavar="SCHEDULE", help="schedule file (JSON or YAML)")
    add_group_options(parser)
    parser.add_argument(
        "--full",
        action="store_true",
        help="walk every tree of a compact schedule (one with rotations) instead of checking "
        "its representatives and the group's generators",
    )
    add_demand_options(parser)
    parser.add_argument(
        "--optimum",
        action="store_true",
        help="with --demand/--moe: also prove the demand's optimum and compare",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.core.aggregation import AggregationSchedule
    from optcoll.core.schedule import Schedule, check_schedule_topology
    from optcoll.exceptions import ScheduleError
    from optcoll.io import load_topology
    from optcoll.io.schedule_json import load_any_schedule
    from optcoll.schedules.collectives import collective_cut_ratio, collective_lower_bound
    from optcoll.verify.schedule import verify_schedule

    topology = load_topology(args.topo, **reader_options(args))
    if has_demand(args):
        return demand_verify(topology, args)
    if args.optimum:
        raise ScheduleError("--optimum compares an all-to-allv routes file: give --demand or --moe")
    expected = process_groups(topology, args)
    loaded = load_any_schedule(args.schedule)
    check_schedule_topology(loaded, topology, str(args.schedule))
    if isinstance(loaded, AggregationSchedule):
        return _aggregation(topology, loaded, args, expected)
    if not isinstance(loaded, Schedule):
        return _groups(topology, loaded, args, expected)
    if expected is not None:
        raise ScheduleError(
            f"{args.schedule}: plans one collective over every compute node, not process "
            "groups; --groups checks a schedule written by trees --groups"
        )
    schedule = loaded
    optimum = collective_lower_bound(topology, schedule.collective, schedule.root)
    cut_ratio = collective_cut_ratio(topology, schedule.collective, schedule.root)
    method = "full" if args.full else "auto"
    result = verify_schedule(
        topology, schedule, optimum=optimum, cut_ratio=cut_ratio, method=method
    )
    if args.json:
        data = {
            "topology": topology.name,
            "schedule": str(args.schedule),
            "collective": schedule.collective,
            "k": schedule.k,
            "trees": len(schedule.trees),
            "routes": len(schedule.routes),
            "optimum": None if optimum is None else fraction_text(optimum),
            **result.to_dict(),
        }
        print_json(data)
    else:
        parts = (
            f"{len(schedule.routes)} routes"
            if schedule.collective == "alltoall"
            else f"{len(schedule.trees)} trees"
        )
        print(
            f"schedule     {args.schedule}: {schedule.collective}, k = {schedule.k}, "
            f"{parts}, on {topology.name}"
        )
        checked = "every tree" if result.method == "full" else "representatives and generators"
        print(f"verdict      {'valid' if result.valid else 'INVALID'} (checked {checked})")
        if result.reason is not None:
            print(f"reason       {result.reason}")
        if result.time_factor is not None:
            n = topology.num_compute if schedule.collective != "broadcast" else 1
            algbw = f"{float(n / result.time_factor):.3f} {topology.bandwidth_unit}"
            shown = (
                f" (algbw {algbw})"
                if schedule.collective in ("allgather", "broadcast", "alltoall")
                else ""
            )
            print(f"time factor  {fraction_text(result.time_factor)}{shown}")
        if optimum is not None:
            ratio = result.ratio_to_optimum
            shown = "" if ratio is None else f" (ratio {fraction_text(ratio)} = {float(ratio):.6f})"
            print(f"optimum      {fraction_text(optimum)}{shown}")
        if result.bottleneck_links:
            links = ", ".join(f"{u} -> {v}" for u, v in result.bottleneck_links[:6])
            more = len(result.bottleneck_links) - 6
            print(f"bottlenecks  {links}" + (f" and {more} more" if more > 0 else ""))
        if result.unchecked:
            names = ", ".join(f"stats.{name}" for name in result.unchecked)
            print(f"unchecked    {names} (the builder's own records, not recomputable)")
    return 0 if result.valid else 1


def _aggregation(topology: Any, schedule: Any, args: argparse.Namespace, expected: Any) -> int:
    """An allreduce by aggregation trees: checked against the cut bound (every schedule)."""
    from dataclasses import replace

    from optcoll.bounds.in_network import (
        MAX_CAPABLE_SWITCHES,
        aggregation_bound,
        has_aggregation_lp,
        reduction_cut,
    )
    from optcoll.bounds.partition import partition_bound
    from optcoll.exceptions import ScheduleError
    from optcoll.verify.aggregation import verify_aggregation_schedule

    if expected is not None:
        raise ScheduleError(f"{args.schedule}: an aggregation allreduce plans no process groups")
    bound = reduction_cut(topology).time_factor
    optimum = partition = None
    if not topology.switch_nodes:  # compute nodes only: the exact partition bound is the
        partition = partition_bound(topology, "allreduce")  # least time of every allreduce
        optimum = partition.time_factor if partition.exact else None
    elif schedule.stats.get("proved") is True and has_aggregation_lp(topology):
        exact = aggregation_bound(topology)  # the optimum that stats.proved claims
        optimum = exact.optimum if exact.proved else None
    result = verify_aggregation_schedule(topology, schedule, optimum=optimum, cut_bound=bound)
    if result.valid and "proved" in result.unchecked:  # a claim no one here can judge
        result = replace(
            result,
            valid=False,
            reason="field 'stats.proved' states true, but the optimum among aggregation-tree "
            f"schedules cannot be computed on topology {topology.name!r} (the exact LP needs 1 "
            f"to {MAX_CAPABLE_SWITCHES} switches that reduce or multicast); drop the claim",
        )
    reaches = result.time_factor is not None and result.time_factor == bound
    if args.json:
        print_json(
            {
                "topology": topology.name,
                "schedule": str(args.schedule),
                "collective": "allreduce",
                "k": schedule.k,
                "aggregation_trees": len(schedule.trees),
                "cut_bound": fraction_text(bound),
                "at_cut_bound": reaches,
                **(
                    {}
                    if partition is None
                    else {
                        "partition_bound": fraction_text(partition.time_factor),
                        "at_partition_bound": result.time_factor == partition.time_factor,
                    }
                ),
                **result.to_dict(),
            }
        )
        return 0 if result.valid else 1
    print(
        f"schedule     {args.schedule}: allreduce by {len(schedule.trees)} aggregation trees, "
        f"k = {schedule.k}, on {topology.name}"
    )
    print(f"verdict      {'valid' if result.valid else 'INVALID'}")
    if result.reason is not None:
        print(f"reason       {result.reason}")
    if result.time_factor is not None:
        algbw = f"{float(1 / result.time_factor):.3f} {topology.bandwidth_unit}"
        print(f"time factor  {fraction_text(result.time_factor)} per M (algbw {algbw})")
        print(
            f"cut bound    {fraction_text(bound)}"
            + (" (attained)" if reaches else f" (ratio {float(result.time_factor / bound):.6f})")
        )
        if partition is not None:
            ratio = result.time_factor / partition.time_factor
            print(
                f"partition    {fraction_text(partition.time_factor)}"
                + (" (attained)" if ratio == 1 else f" (ratio {float(ratio):.6f})")
                + f": {partition.holds_for}"
            )
    for switch, work in list(result.switch_work.items())[:8]:
        print(
            f"switch       {switch}: receives {work['received']}, sums away {work['reduced']}, "
            f"copies {work['copied']}, sends {work['sent']} chunks"
        )
    if len(result.switch_work) > 8:
        print(f"switch       ... and {len(result.switch_work) - 8} more")
    if result.unchecked:
        names = ", ".join(f"stats.{name}" for name in result.unchecked)
        print(f"unchecked    {names} (the builder's own records, not recomputable)")
    return 0 if result.valid else 1


def _groups(topology: Any, schedule: Any, args: argparse.Namespace, expected: Any) -> int:
    from optcoll.core.process_groups import make_groups
    from optcoll.exceptions import GroupError, ScheduleError
    from optcoll.groups.schedule import groups_lower_bound
    from optcoll.verify.schedule import Verification, verify_groups_schedule

    try:  # well-formed groups have a concurrent optimum to compare with
        members = [s.compute_nodes for s in schedule.groups]
        groups = make_groups(topology, members, schedule.relay)
        roots = tuple(s.root or s.compute_nodes[0] for s in schedule.groups)
        if schedule.collective in ("broadcast", "reduce") and any(
            s.root not in s.compute_nodes for s in schedule.groups
        ):
            optimum = None  # the verdict names the root that is not a member
        else:
            optimum = groups_lower_bound(groups, schedule.collective, roots)
    except (GroupError, ScheduleError):
        optimum = None  # the verdict names what is wrong with the groups
    mismatch = None if expected is None else _other_groups(schedule, expected, args.relay)
    if mismatch is not None:
        result = Verification(False, mismatch)
    else:
        result = verify_groups_schedule(topology, schedule, optimum=optimum)
    if args.json:
        print_json(
            {
                "topology": topology.name,
                "schedule": str(args.schedule),
                "collective": schedule.collective,
                "relay": schedule.relay,
                "groups": len(schedule.groups),
                "trees": sum(len(s.trees) for s in schedule.groups),
                "optimum": None if optimum is None else fraction_text(optimum),
                **result.to_dict(),
            }
        )
        return 0 if result.valid else 1
    print(
        f"schedule     {args.schedule}: {schedule.collective} of {len(schedule.groups)} groups "
        f"(relay {schedule.relay}), on {topology.name}"
    )
    print(f"verdict      {'valid' if result.valid else 'INVALID'}")
    if result.reason is not None:
        print(f"reason       {result.reason}")
    if result.time_factor is not None:
        print(f"time factor  {fraction_text(result.time_factor)}")
    if optimum is not None:
        print(f"optimum      {fraction_text(optimum)} (the groups' concurrent optimum)")
    return 0 if result.valid else 1


def _other_groups(schedule: Any, expected: Any, relay: str | None) -> str | None:
    """Why ``schedule`` does not plan the groups of ``--groups`` (and ``--relay``, when
    given), or None. The order of the groups does not matter; the order of a group's
    members does: member ``r`` is the group's rank ``r`` in every export."""
    planned = [tuple(s.compute_nodes) for s in schedule.groups]
    if relay is not None and schedule.relay != expected.relay:
        return f"the schedule relays {schedule.relay!r}, --relay asks for {expected.relay!r}"
    for members in expected.groups:
        for plan in planned:
            if sorted(plan) == sorted(members) and list(plan) != list(members):
                return (
                    f"the schedule ranks the group {list(members)} as {list(plan)}: a group's "
                    "members are its ranks in that order"
                )
    if sorted(map(sorted, planned)) != sorted(map(sorted, expected.groups)):
        for members in expected.groups:
            if sorted(members) not in map(sorted, planned):
                return (
                    f"--groups has the group {list(members)}, which the schedule does not plan "
                    f"(it plans {len(planned)} groups)"
                )
        return f"the schedule plans {len(planned)} groups, --groups gives {len(expected.groups)}"
    return None
