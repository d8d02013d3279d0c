"""``optcoll lp``: export or solve the LP models (congestion, multicast, ...)."""

from __future__ import annotations

import argparse
from typing import Any

from optcoll.cli._core import (
    add_reader_options,
    command_inputs,
    print_json,
    reader_options,
    time_limit,
)
from optcoll.core.rational import fraction_text

NAME = "lp"
HELP = "export or solve the LP models (congestion, multicast, ...)"
#: Shown at the end of ``optcoll lp --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll lp solve dgx-a100:2
  optcoll lp export dgx-a100:1 --model multicast -o multicast.lp
"""

_LP_MODELS = ("congestion", "multicast", "fixed-k", "tree-packing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(
        dest="lp_action", metavar="ACTION", required=True, parser_class=type(parser)
    )
    export = actions.add_parser(
        "export", help="write an LP model as .mps or .lp", description="write an LP model"
    )
    solve = actions.add_parser(
        "solve", help="solve an LP model with HiGHS", description="solve an LP model with HiGHS"
    )
    for sub, models in ((export, _LP_MODELS[:3]), (solve, _LP_MODELS)):
        sub.add_argument("topo", metavar="TOPO", help="topology file or built-in spec")
        add_reader_options(sub)
        sub.add_argument(
            "--model",
            choices=models,
            default="congestion",
            help=f"which model: {', '.join(models)} (default congestion"
            + (
                "; fixed-k needs a switch-free topology)"
                if sub is export
                else "; fixed-k and tree-packing need a switch-free topology)"
            ),
        )
        sub.add_argument(
            "--form",
            choices=("time", "rate"),
            default=None,
            help="congestion LP form: min t (time, export default) or max 1/t (rate, solve default)",
        )
        sub.add_argument(
            "-k", type=int, default=None, metavar="K", help="chunks per root (fixed-k)"
        )
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="FILE.mps or FILE.lp")
    export.add_argument("--force", action="store_true", help="overwrite an existing FILE")
    solve.add_argument("--time-limit", type=time_limit, default=None, metavar="S", help="seconds")
    solve.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from optcoll.core.output import check_output
    from optcoll.io import load_topology
    from optcoll.lp.model_file import write_model

    inputs = command_inputs(args)
    if args.lp_action == "export":
        check_output(args.output, force=args.force, inputs=inputs)
    topology = load_topology(args.topo, **reader_options(args))
    if args.lp_action == "export":
        model = _lp_model(topology, args)
        path = write_model(model, args.output, force=args.force, inputs=inputs)
        rows, cols = len(model.constraints()), len(model.variables())
        print(f"wrote {path}: {args.model} model of {topology.name}, {cols} variables, {rows} rows")
        return 0
    label, value, data, lines = _lp_solve(topology, args)
    unit = topology.bandwidth_unit
    algbw = Fraction(topology.num_compute) / value
    data |= {label.replace(" ", "_"): fraction_text(value), "algbw": round(float(algbw), 3)}
    if args.json:
        print_json(data)
        return 0
    print(f"topology     {topology.name} ({topology.num_compute} compute nodes)")
    print(f"{label:<12} {value} per {unit}")
    print(f"algbw        {float(algbw):.3f} {unit}")
    for line in lines:
        print(line)
    return 0


def _lp_chunks(args: argparse.Namespace) -> int:
    from optcoll.exceptions import MethodError

    if args.k is None:
        raise MethodError("--model fixed-k needs -k K, the number of chunks per root")
    return args.k


def _check_model_size(topology: Any, model: str) -> None:
    """Refuse a model of more than :data:`~optcoll.core.limits.MAX_LP_VARIABLES` variables
    before building it: the congestion LP has a flow per source and link, the
    multicast and fixed-k LPs one per source, destination and link."""
    from optcoll.core.limits import MAX_LP_VARIABLES
    from optcoll.exceptions import MethodError

    n, links = topology.num_compute, len(topology.capacity)
    variables = n * links if model == "congestion" else n * (n - 1) * links
    if model != "tree-packing" and variables > MAX_LP_VARIABLES:
        raise MethodError(
            f"the {model} LP of {topology.name} would have about {variables:,} variables, "
            f"more than the {MAX_LP_VARIABLES:,} optcoll lp builds (PuLP holds each in "
            "memory); optcoll bound gives r* exactly without an LP"
        )


def _lp_model(topology: Any, args: argparse.Namespace) -> Any:
    """The PuLP model ``optcoll lp export`` writes."""
    _check_model_size(topology, args.model)
    if args.model == "congestion":
        from formulations.congestion import build_congestion

        return build_congestion(topology, args.form or "time")
    if args.model == "multicast":
        from formulations.multicast import build_multicast

        return build_multicast(topology)
    from formulations.fixed_k import build_fixed_k
    from optcoll.core.rational import integer_scaling
    from optcoll.schedules.tree_packing import check_switch_free

    nodes = check_switch_free(topology.compute_nodes, topology.capacity)
    caps, _ = integer_scaling(topology.capacity)
    return build_fixed_k(nodes, caps, _lp_chunks(args))


def _lp_solve(
    topology: Any, args: argparse.Namespace
) -> tuple[str, Any, dict[str, Any], list[str]]:
    """Solve the chosen model: (label, exact value, JSON fields, text lines)."""
    data: dict[str, Any] = {"topology": topology.name, "model": args.model}
    _check_model_size(topology, args.model)
    if args.model == "tree-packing":
        from optcoll.schedules.tree_packing import fractional_tree_packing

        packing = fractional_tree_packing(
            topology.compute_nodes, topology.capacity, time_limit=args.time_limit
        )
        data |= {
            "trees": len(packing.packing),
            "iterations": packing.iterations,
            "columns": packing.columns,
            "gap": packing.gap,
            "max_overload": str(packing.max_overload),
            "seconds": packing.seconds,
        }
        lines = [
            f"trees        {len(packing.packing)} with positive weight "
            f"({packing.columns} columns generated in {packing.iterations} rounds)",
            f"gap          {packing.gap:.3g}; exact overload {packing.max_overload}",
            f"seconds      {packing.seconds:.2f}",
        ]
        if not packing.proved:
            why = (
                f"its weights overload an arc by {packing.max_overload} ({packing.weights_source})"
                if packing.max_overload
                else f"its exact dual bound is {packing.lower_bound}, not {packing.t}"
            )
            return _fallback(topology, packing.t_float, why, data, lines)
        data["proved"] = True
        return "cut ratio", packing.t, data, lines
    from optcoll.exceptions import ReconstructionError

    lines = []
    try:
        if args.model == "congestion":
            from optcoll.bounds.congestion import congestion_bound

            congestion = congestion_bound(
                topology, form=args.form or "rate", time_limit=args.time_limit
            )
            label, value, report = "cut ratio", congestion.cut_ratio, congestion.report
            inside = sum(1 for v in congestion.cut if topology.is_compute(v))
            data |= {
                "form": congestion.form,
                "cut": sorted(congestion.cut, key=topology.node_ids.index),
            }
            lines.append(
                f"cut          {inside} compute nodes, "
                f"B+(S) = {topology.cut_bandwidth(congestion.cut)} {topology.bandwidth_unit}"
            )
        elif args.model == "multicast":
            from optcoll.bounds.multicast import multicast_bound

            multicast = multicast_bound(topology, time_limit=args.time_limit)
            label, value, report = "cut ratio", multicast.cut_ratio, multicast.report
        else:
            from optcoll.schedules.fixed_k import fixed_k_optimum

            fixed = fixed_k_optimum(
                topology.compute_nodes,
                topology.capacity,
                _lp_chunks(args),
                time_limit=args.time_limit,
            )
            label, value, report = "time factor", fixed.t, fixed.report
            data["k"] = fixed.K
            lines.append(f"k            {fixed.K} chunks per root")
    except ReconstructionError as err:
        return _fallback(topology, None, str(err), data, lines)
    if args.model != "fixed-k":
        data["proved"] = True
    data["report"] = report.to_dict()
    lines += [
        f"size         {report.num_variables} variables, {report.num_constraints} rows, "
        f"{report.num_nonzeros} nonzeros",
        f"seconds      build {report.build_seconds:.2f}, solve {report.solve_seconds:.2f} "
        f"(HiGHS {report.highs_seconds:.2f}, {report.simplex_iterations} simplex iterations)",
    ]
    return label, value, data, lines


def _fallback(
    topology: Any, approximate: float | None, why: str, data: dict[str, Any], lines: list[str]
) -> tuple[str, Any, dict[str, Any], list[str]]:
    """The combinatorial r* in place of an LP value that was not proved exactly."""
    from optcoll.bounds.cut_ratio import optimal_cut_ratio

    bound = optimal_cut_ratio(topology)
    data |= {"proved": False, "value_from": "combinatorial", "lp_not_proved": why}
    lines = [
        *lines,
        f"not proved   the LP's value was not proved exactly ({why}); shown instead: "
        f"the combinatorial r*, certified by its cut",
    ]
    if approximate is not None:
        data["lp_value_approx"] = approximate
        lines.append(f"LP value     ~{approximate:.9g} (float, approximate)")
    return "cut ratio", bound.ratio, data, lines
