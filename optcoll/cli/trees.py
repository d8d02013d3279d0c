"""``optcoll trees``: allgather spanning-tree schedule reaching the optimum (or the best with k chunks)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from optcoll.cli._core import (
    add_collective_option,
    add_group_options,
    add_reader_options,
    command_inputs,
    print_json,
    process_groups,
    reader_options,
)
from optcoll.core.rational import fraction_text

NAME = "trees"
HELP = "allgather spanning-tree schedule reaching the optimum (or the best with k chunks)"
#: Shown at the end of ``optcoll trees --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll trees dgx-a100:2 -o trees.json
  optcoll trees mi250:2 -k 1 --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
    add_reader_options(parser)
    parser.add_argument(
        "-k",
        type=int,
        default=None,
        metavar="K",
        help="chunks per root (default: the k that reaches the optimum r*)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the schedule (JSON or YAML)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    add_group_options(parser)
    add_collective_option(
        parser,
        "with --groups: allgather (default), reduce-scatter, allreduce, broadcast or reduce "
        "(root: each group's first member); without --groups only allgather (see solve)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def run(args: argparse.Namespace) -> int:
    import time

    from optcoll.core.output import check_output, require_suffix
    from optcoll.io import TOPOLOGY_SUFFIXES, load_topology, save_schedule
    from optcoll.schedules.packing import pack_arborescences

    inputs = command_inputs(args)
    if args.output:
        require_suffix(args.output, TOPOLOGY_SUFFIXES, "a schedule file")
        check_output(args.output, force=args.force, inputs=inputs)
    topology = load_topology(args.topo, **reader_options(args))
    groups = process_groups(topology, args)
    if groups is not None:
        return _groups(groups, args, inputs)
    if args.collective != "allgather":
        from optcoll.exceptions import MethodError

        raise MethodError(
            f"trees builds the allgather; --collective {args.collective} applies with --groups "
            "(optcoll solve builds every collective)"
        )
    started = time.perf_counter()
    schedule = pack_arborescences(topology, args.k, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - started
    if args.output:
        save_schedule(schedule, args.output, force=args.force, inputs=inputs)
    stats = dict(schedule.stats)
    cut_ratio, time_factor, algbw = schedule.cut_ratio, schedule.time_factor, schedule.algbw
    assert cut_ratio is not None and time_factor is not None and algbw is not None, (
        "a packed schedule carries its cut ratio and time factor"
    )
    if args.json:
        print_json(
            {
                "topology": topology.name,
                "collective": schedule.collective,
                "cut_ratio": fraction_text(cut_ratio),
                "k": schedule.k,
                "time_factor": fraction_text(time_factor),
                "algbw": round(algbw, 3),
                **stats,
                "output": args.output,
                "seconds": round(seconds, 3),
            }
        )
        return 0
    print(f"topology     {topology.name}: {topology.num_compute} compute nodes")
    print(f"r*           {fraction_text(cut_ratio)}")
    divisor = stats.get("divisor_k")
    print(
        f"k            {schedule.k}"
        + (
            ""
            if divisor is None
            else f" (the trees of k = {divisor}, each carrying {schedule.k // divisor} times "
            f"its chunks: faster than the capacities rounded for k = {schedule.k})"
        )
    )
    print(
        f"time factor  {fraction_text(time_factor)} (ratio to r* {stats['ratio_to_optimum']}, "
        f"algbw {algbw:.3f} {topology.bandwidth_unit})"
    )
    print(
        f"trees        {stats['trees']} (height max {stats['max_height']}, "
        f"mean {stats['mean_height']}), {stats['total_sends']} sends"
    )
    if args.output:
        print(f"schedule     {args.output}")
    print(f"seconds      {seconds:.2f}")
    return 0


def _groups(groups: Any, args: argparse.Namespace, inputs: Any) -> int:
    import time

    from optcoll.exceptions import MethodError
    from optcoll.groups.schedule import groups_collective
    from optcoll.io import write_document

    if args.k is not None:
        raise MethodError(
            "-k does not apply with --groups: each group takes the k that reaches the "
            "concurrent optimum t*; drop -k"
        )
    started = time.perf_counter()
    topology = groups.topology
    schedule = groups_collective(groups, args.collective, form=args.group_form)
    seconds = time.perf_counter() - started
    if args.output:
        write_document(schedule.to_dict(), args.output, force=args.force, inputs=inputs)
    assert schedule.time_factor is not None, "a built groups schedule states its time factor"
    if args.json:
        print_json(
            {
                "topology": topology.name,
                "collective": schedule.collective,
                "relay": schedule.relay,
                "time_factor": fraction_text(schedule.time_factor),
                "groups": [
                    {
                        "members": list(s.compute_nodes),
                        **({} if s.root is None else {"root": s.root}),
                        "k": s.k,
                        "trees": len(s.trees),
                    }
                    for s in schedule.groups
                ],
                "output": args.output,
                "seconds": round(seconds, 3),
            }
        )
        return 0
    print(f"topology     {topology.name}: {topology.num_compute} compute nodes")
    print(f"groups       {len(schedule.groups)} (relay {schedule.relay}), {schedule.collective}")
    print(f"time factor  {fraction_text(schedule.time_factor)} ({_claim(schedule.collective)})")
    print(
        f"trees        {sum(len(s.trees) for s in schedule.groups)}, "
        f"k per group {sorted({s.k for s in schedule.groups})}"
    )
    if args.output:
        print(f"schedule     {args.output}")
    print(f"seconds      {seconds:.2f}")
    return 0


def _claim(collective: str) -> str:
    """What a groups schedule's time factor is optimal among (see optcoll.groups.schedule)."""
    return {
        "allgather": "the concurrent optimum t*",
        "reduce_scatter": "t* of the reversed network",
        "allreduce": "optimal among reduce-scatter + allgather schedules on symmetric networks",
        "broadcast": "the concurrent broadcasts' optimum from each group's first member",
        "reduce": "the concurrent reduces' optimum toward each group's first member",
    }[collective]
