"""The all-to-allv (``--demand FILE`` / ``--moe SPEC``) and scatter/gather branches of
``optcoll bound`` and ``optcoll solve``.

``bound`` prints the exact optimum (``time_us`` in ``--json``), its certificate and
bottleneck; ``solve`` adds the optimal schedule in bytes, checked by the independent
verifier, beside the direct (NCCL) and hierarchical (DeepEP) baselines, and writes it
as ``DIR/<topology>.alltoallv.routes.json``. Scatter and gather (``--root NODE``)
report ``algbw`` = M / T.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from optcoll.cli._core import command_inputs, print_json, sim_options
from optcoll.core.rational import fraction_text
from optcoll.exceptions import ArgumentError, OptCollError

__all__ = [
    "add_demand_options",
    "has_demand",
    "demand_of",
    "demand_bound",
    "demand_solve",
    "demand_export",
    "demand_verify",
    "demand_compare",
    "VARIABLE_SIZE_REFUSALS",
    "rooted_bound",
    "rooted_solve",
]


def add_demand_options(parser: argparse.ArgumentParser) -> None:
    """``--demand FILE`` and ``--moe SPEC`` (one or the other)."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--demand",
        metavar="FILE",
        help='alltoall of uneven sizes: an N x N byte matrix ({"bytes": [[...]]} in .json, '
        "or .csv, .npy; row = source, in rank order) or PyTorch split sizes "
        '({"input_split_sizes": [[...]], "element_bytes": 2})',
    )
    which.add_argument(
        "--moe",
        metavar="SPEC",
        help="alltoall of a generated mixture-of-experts layer: key=value,... of tokens, "
        "hidden, dtype_bytes, experts, top_k, zipf (0 uniform routing, larger skewed), seed, "
        "step, phase (dispatch or combine), placement (expert ranks joined by /)",
    )


def has_demand(args: argparse.Namespace) -> bool:
    """Whether ``--demand`` or ``--moe`` was given."""
    return bool(getattr(args, "demand", None) or getattr(args, "moe", None))


def demand_of(topology: Any, args: argparse.Namespace) -> Any:
    """The :class:`~optcoll.core.demand.Demand` of ``--demand`` or ``--moe``."""
    if getattr(args, "collective", "alltoall") != "alltoall":
        raise ArgumentError(
            f"--demand and --moe give an alltoall's sizes; use --collective alltoall, not "
            f"{args.collective}"
        )
    if args.demand:
        from optcoll.io.demand import read_demand

        return read_demand(args.demand, topology.compute_nodes)
    from optcoll.core.moe import moe_demand, parse_moe_spec

    return moe_demand(parse_moe_spec(args.moe), topology.compute_nodes)


def _no_method(args: argparse.Namespace, what: str) -> None:
    """Refuse ``bound --method`` where it does not apply (it picks the allgather's method)."""
    if getattr(args, "method", "combinatorial") != "combinatorial":
        raise ArgumentError(f"--method {args.method} applies to the allgather cut ratio; {what}")


def demand_bound(topology: Any, args: argparse.Namespace) -> int:
    """``bound --collective alltoall --demand FILE``."""
    _no_method(args, "an uneven all-to-all is proved by a cut or its exact LP")
    from optcoll.schedules.alltoallv import proved_optimum

    optimum = proved_optimum(topology, demand_of(topology, args))
    data = optimum.to_dict()
    if args.json:
        print_json(data)
        return 0
    for name, text in _optimum_rows(topology, optimum):
        print(f"{name:<15} {text}")
    return 0


def _optimum_rows(topology: Any, optimum: Any) -> list[tuple[str, str]]:
    unit = topology.bandwidth_unit
    demand = optimum.demand
    inside = sum(1 for v in optimum.cut if topology.is_compute(v))
    links = ", ".join(f"{u}->{v}" for u, v in optimum.tight_links[:4])
    more = len(optimum.tight_links) - 4
    explained = (
        "equals the optimum: this cut is the bottleneck"
        if optimum.cut_bound == optimum.time_factor
        else f"below the optimum (flow-cut gap {float(optimum.time_factor / optimum.cut_bound):.4f})"
    )
    return [
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        (
            "demand",
            f"{demand.origin}: {demand.total_bytes} bytes over the network, "
            f"{demand.local_bytes} kept local",
        ),
        (
            "optimum T",
            f"{optimum.time_us:.6g} us ({fraction_text(optimum.time_factor)} bytes per {unit})",
        ),
        (
            "certificate",
            f"length function on {len(optimum.lengths)} links proves "
            f"{fraction_text(optimum.certificate_bound)}",
        ),
        ("tight links", links + (f" and {more} more" if more > 0 else "")),
        (
            "cut bound",
            f"{fraction_text(optimum.cut_bound)}, {explained} (S has {inside} compute nodes)",
        ),
        ("method", _method_text(optimum)),
    ]


def _method_text(optimum: Any) -> str:
    """How the optimum was proved, in words."""
    if optimum.report is not None:
        return f"LP of {optimum.report.num_variables} variables, {optimum.seconds:.3f} s"
    if optimum.method == "columns":
        stats = optimum.stats
        return (
            f"column generation over trees: {stats['columns']} trees, master of "
            f"{stats['lp_rows']} rows, {stats['rounds']} rounds, {optimum.seconds:.3f} s"
        )
    return f"a routing meets the cut bound (no LP), {optimum.seconds:.3f} s"


def demand_solve(topology: Any, args: argparse.Namespace, out: Path) -> int:
    """``solve --collective alltoall --demand FILE``: optimum, schedules, file."""
    import time

    from optcoll.core.output import check_output, write_output
    from optcoll.schedules.alltoallv import ROUTED_METHODS, demand_schedule, proved_optimum

    if args.k is not None:
        raise ArgumentError("-k applies to the uniform alltoall; a demand's paths carry bytes")
    inputs = command_inputs(args)
    check_output(out, force=args.force, inputs=inputs)
    started = time.perf_counter()
    demand = demand_of(topology, args)
    optimum = proved_optimum(topology, demand)
    schedules = {m: demand_schedule(topology, demand, m, optimum=optimum) for m in ROUTED_METHODS}
    best = schedules["optimal"]
    write_output(
        out, json.dumps(routes_document(best), indent=1) + "\n", force=args.force, inputs=inputs
    )
    summary = optimum.to_dict() | {
        "schedules": {m: s.to_dict() for m, s in schedules.items()},
        "verified": True,
        "schedule": str(out),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if args.json:
        print_json(summary)
        return 0
    rows = _optimum_rows(topology, optimum)
    for method, schedule in schedules.items():
        ratio = float(schedule.time_factor / optimum.time_factor)
        rows.append(
            (
                method,
                f"{schedule.time_us:.6g} us ({ratio:.4f} x optimum), "
                f"{len(schedule.routes)} routes, verified independently",
            )
        )
    rows.append(("wrote", str(out)))
    for name, text in rows:
        print(f"{name:<15} {text}")
    return 0


def routes_document(schedule: Any) -> dict[str, Any]:
    """The JSON of a demand schedule: its paths with their bytes."""
    return {
        "format": "optcoll-alltoallv-routes",
        "topology": schedule.topology,
        "ranks": list(schedule.demand.ranks),
        "demand": schedule.demand.origin,
        "method": schedule.method,
        "time_factor": fraction_text(schedule.time_factor),
        "time_us": round(schedule.time_us, 6),
        "routes": [
            {
                "src": r.src,
                "dst": r.dst,
                "paths": [{"bytes": p.chunks, "path": list(p.path)} for p in r.paths],
            }
            for r in schedule.routes
        ],
    }


def _root(topology: Any, args: argparse.Namespace) -> str:
    if args.root is None:
        raise ArgumentError(f"--collective {args.collective} needs --root NODE (a compute node)")
    from optcoll.core.arguments import node_argument

    return node_argument(topology, args.root, "--root")


def _rooted_data(topology: Any, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from optcoll.bounds.scatter_gather import rooted_cut

    cut = rooted_cut(topology, _root(topology, args), args.collective)
    inside = sum(1 for v in cut.side if topology.is_compute(v))
    return cut, {
        "topology": topology.name,
        "collective": args.collective,
        "root": cut.root,
        "num_compute": cut.num_compute,
        "time_factor": fraction_text(cut.time_factor),
        "algbw": round(float(cut.algbw), 3),
        "piece_time_factor": fraction_text(cut.ratio),
        "cut": sorted(cut.side),
        "cut_compute_nodes": inside,
        "max_flows": cut.max_flows,
    }


def rooted_bound(topology: Any, args: argparse.Namespace) -> int:
    """``bound --collective scatter|gather --root NODE``."""
    _no_method(args, "a scatter or gather is solved by max-flow")
    cut, data = _rooted_data(topology, args)
    if args.json:
        print_json(data)
        return 0
    _print_rooted(topology, cut, data)
    return 0


def _print_rooted(topology: Any, cut: Any, data: dict[str, Any]) -> None:
    unit = topology.bandwidth_unit
    side = "the root's side" if cut.collective == "scatter" else "the side without the root"
    for name, text in [
        ("topology", f"{topology.name} ({topology.num_compute} compute nodes)"),
        (f"{cut.collective} T", f"M * {data['time_factor']} (root {cut.root})"),
        ("algbw", f"{float(cut.algbw):.3f} {unit}"),
        (
            "bottleneck",
            f"{side} has {data['cut_compute_nodes']} compute and "
            f"{len(cut.side) - data['cut_compute_nodes']} other nodes; exact by "
            f"{cut.max_flows} max-flows",
        ),
    ]:
        print(f"{name:<15} {text}")


def rooted_solve(topology: Any, args: argparse.Namespace, out: Path) -> int:
    """``solve --collective scatter|gather --root NODE``: bound, LP, schedule, file."""
    from optcoll.bounds.demand import demand_optimum
    from optcoll.core.demand import Demand
    from optcoll.core.output import check_output, write_output
    from optcoll.schedules.alltoallv import demand_path_decomposition, demand_schedule

    inputs = command_inputs(args)
    check_output(out, force=args.force, inputs=inputs)
    cut, data = _rooted_data(topology, args)
    ranks = topology.compute_nodes
    r = ranks.index(cut.root)
    rows = tuple(
        tuple(
            int(i != j and (i == r if args.collective == "scatter" else j == r))
            for j in range(len(ranks))
        )
        for i in range(len(ranks))
    )
    demand = Demand(ranks, rows, f"{args.collective} of one byte per rank, root {cut.root}")
    optimum = demand_optimum(topology, demand)
    if optimum.time_factor != cut.ratio:
        raise OptCollError(
            f"internal error: the {args.collective} LP gives {optimum.time_factor}, the "
            f"max-flow cut {cut.ratio}"
        )
    # whole-byte paths attain the optimum once each piece is the paths' common denominator
    paths = demand_path_decomposition(topology, optimum.routing, demand.pairs())
    piece = math.lcm(*(w.denominator for found in paths.values() for _, w in found))
    demand = demand.scaled(piece)
    optimum = dataclasses.replace(
        optimum,
        demand=demand,
        time_factor=optimum.time_factor * piece,
        routing={s: {a: x * piece for a, x in f.items()} for s, f in optimum.routing.items()},
    )
    schedule = demand_schedule(topology, demand, optimum=optimum)
    write_output(
        out, json.dumps(routes_document(schedule), indent=1) + "\n", force=args.force, inputs=inputs
    )
    data |= {
        "lp_agrees": True,
        "piece_bytes": piece,
        "schedule_time_factor": fraction_text(schedule.time_factor / piece / topology.num_compute),
        "verified": True,
        "routes": len(schedule.routes),
        "schedule": str(out),
    }
    if args.json:
        print_json(data)
        return 0
    _print_rooted(topology, cut, data)
    print(
        f"{'schedule':<15} {len(schedule.routes)} routes, time factor "
        f"{data['schedule_time_factor']} (the LP agrees), verified independently"
    )
    print(f"{'wrote':<15} {out}")
    return 0


#: Why ``export --demand`` refuses each format but Chakra (one line each).
VARIABLE_SIZE_REFUSALS = {
    "msccl": "MSCCL XML gives every chunk of a buffer one size (the buffer / chunks), so an "
    "uneven all-to-all cannot be expressed",
    "mscclpp": "an MSCCL++ plan gives every chunk of a buffer one size (the buffer / chunks), "
    "so an uneven all-to-all cannot be expressed",
    "json": "optcoll schedule JSON carries k equal chunks per pair; a demand's routes are the "
    "routes file `optcoll solve --demand` writes",
}


def demand_export(topology: Any, args: argparse.Namespace) -> int:
    """``export --collective alltoall --demand FILE --format chakra -o PREFIX|DIR/``: the
    optimal schedule's Chakra traces, one file per rank, checked by the independent trace
    checker before anything is written."""
    import os

    from optcoll.core.output import check_output, write_output
    from optcoll.exceptions import ExportError
    from optcoll.export.chakra_alltoallv import chakra_demand_traces
    from optcoll.schedules.alltoallv import demand_schedule, proved_optimum
    from optcoll.verify.chakra import verify_traces

    if args.format != "chakra":
        raise ExportError(
            f"--format {args.format} with --demand: {VARIABLE_SIZE_REFUSALS[args.format]}; "
            "use --format chakra (a size per message)"
        )
    ignored = [
        flag
        for flag, value in (
            ("--size", args.size),
            ("-k", args.k),
            ("--bands", args.bands),
            ("--exact", args.exact),
            ("--placement", args.placement),
            ("--groups", getattr(args, "groups", None)),
        )
        if value
    ]
    if ignored:
        raise ArgumentError(
            f"{ignored[0]} does not apply to --demand (the demand gives every size)"
        )
    demand = demand_of(topology, args)
    optimum = proved_optimum(topology, demand)
    schedule = demand_schedule(topology, demand, "optimal", optimum=optimum)
    # plan's slicing (--slice, default the simulator's 512K): each path's bytes in slices,
    # so a switch that stores and forwards a message (ASTRA-sim) holds back a slice
    sim = sim_options(args)
    traces = chakra_demand_traces(
        topology.compute_nodes, schedule.routes, slice_bytes=sim.slice_bytes
    )
    output = str(args.output)
    if output.endswith(os.sep) or Path(output).is_dir():
        output = str(Path(output) / f"{topology.name.replace(':', '_')}.alltoallv")
    paths = [f"{output}.{rank}.et" for rank in range(len(traces))]
    check = verify_traces(list(zip(paths, traces, strict=True)))
    if check.findings or not check.executed:
        found = check.findings[0].message if check.findings else "not executed"
        raise ExportError(f"the all-to-allv traces fail the trace checker: {found}")
    planned_us, traces_us = _demand_times(topology, schedule.routes, paths, traces, args)
    inputs = command_inputs(args)
    for path in paths:
        check_output(path, force=args.force, inputs=inputs)
    for path, trace in zip(paths, traces, strict=True):
        write_output(path, trace, force=args.force, inputs=inputs)
    data = {
        "topology": topology.name,
        "collective": "alltoallv",
        "format": "chakra",
        "demand": demand.origin,
        "total_bytes": demand.total_bytes,
        "files": paths,
        "time_factor": fraction_text(schedule.time_factor),
        "time_us": round(schedule.time_us, 6),
        "optimum": fraction_text(optimum.time_factor),
        "optimum_method": optimum.method,
        "routes": len(schedule.routes),
        "paths": sum(len(r.paths) for r in schedule.routes),
        "bytes_sent": check.bytes_sent,
        "slice_bytes": sim.slice_bytes,
        "switch_model": args.switch_model or "store-and-forward",
        "simulated_us": round(planned_us, 4),
        "traces_simulated_us": round(traces_us, 4),
        "verified": True,
    }
    if args.json:
        print_json(data)
        return 0
    ratio = float(schedule.time_factor / optimum.time_factor)
    print(
        f"wrote {len(paths)} Chakra traces {output}.<rank>.et: the optimal all-to-allv "
        f"({demand.total_bytes} bytes over the network, {schedule.time_us:.6g} us, "
        f"{ratio:.6f} x the optimum proved by {optimum.method}), "
        f"{data['paths']} paths, checked by the trace checker"
    )
    piece = "whole paths" if sim.slice_bytes is None else f"slices of {sim.slice_bytes} bytes"
    print(
        f"  in {piece} ({data['switch_model']} switches): the routes simulated "
        f"{planned_us:.4f} us, these traces {traces_us:.4f} us "
        f"({traces_us / planned_us - 1:+.2%})"
    )
    return 0


def _demand_times(
    topology: Any, routes: Any, paths: list[str], traces: list[bytes], args: argparse.Namespace
) -> tuple[float, float]:
    """The simulated time (µs) of the all-to-allv ``routes`` in ``--slice`` slices and of
    their Chakra ``traces`` (each message as written), on ``--switch-model`` switches
    (default store-and-forward, as ASTRA-sim's analytical backend)."""
    from dataclasses import replace

    from optcoll.sim.demand import demand_tasks
    from optcoll.sim.programs import chakra_tasks, decode_chakra
    from optcoll.sim.simulator import simulate

    sim = sim_options(args)
    network = replace(sim.network(topology), store_and_forward=args.switch_model != "cut-through")
    size = sum(path.chunks for route in routes for path in route.paths)
    routed = demand_tasks(network, routes, sim.slice_bytes)
    decoded = decode_chakra(list(zip(paths, traces, strict=True)), paths[0])
    written = chakra_tasks(decoded, topology, network, slice_bytes=None)
    return (
        simulate(routed, network, size, overhead=sim.overhead).time_us,
        simulate(written, network, size, overhead=sim.overhead).time_us,
    )


def demand_verify(topology: Any, args: argparse.Namespace) -> int:
    """``verify TOPO ROUTES --demand FILE``: the routes file checked against the demand by
    the independent verifier (every pair's bytes delivered on real links, exact time);
    with ``--optimum`` also against the proved optimum. Exit status 1 when invalid."""
    from optcoll.io.demand import read_demand_routes
    from optcoll.verify.demand import verify_demand_routes

    found = read_demand_routes(args.schedule)
    if tuple(found.ranks) != tuple(topology.compute_nodes):
        raise ArgumentError(
            f"{args.schedule}: its ranks are not the compute nodes of {topology.name!r} in rank "
            "order (written for another topology?)"
        )
    demand = demand_of(topology, args)
    optimum = None
    if args.optimum:
        from optcoll.schedules.alltoallv import proved_optimum

        optimum = proved_optimum(topology, demand)
    check = verify_demand_routes(
        topology, demand, found.routes, None if optimum is None else optimum.time_factor
    )
    data: dict[str, Any] = {
        "topology": topology.name,
        "routes_file": str(args.schedule),
        "method": found.method,
        "demand": demand.origin,
        "valid": check.valid,
        "reason": check.reason,
        "routes": len(found.routes),
        "time_factor": None if check.time_factor is None else fraction_text(check.time_factor),
        "time_us": None if check.time_factor is None else round(float(check.time_factor) / 1000, 6),
        "busiest_links": [list(arc) for arc in check.busiest],
    }
    if optimum is not None and check.time_factor is not None:
        data["optimum"] = fraction_text(optimum.time_factor)
        data["ratio_to_optimum"] = fraction_text(check.time_factor / optimum.time_factor)
    if args.json:
        print_json(data)
    elif check.valid:
        extra = (
            f", {float(check.time_factor / optimum.time_factor):.6f} x the optimum"
            if optimum is not None and check.time_factor is not None
            else ""
        )
        print(
            f"valid: {len(found.routes)} routes deliver every pair's bytes of {demand.origin} "
            f"on {topology.name}; time {data['time_us']:.6g} us "
            f"({data['time_factor']} bytes per {topology.bandwidth_unit}){extra}"
        )
    else:
        print(f"INVALID: {check.reason}")
    return 0 if check.valid else 1


def demand_compare(topology: Any, args: argparse.Namespace) -> int:
    """``compare TOPO --collective alltoall --demand FILE``: the proved optimum beside every
    demand schedule (:data:`~optcoll.schedules.alltoallv.DEMAND_METHODS`: ours, the spray,
    NCCL's direct sends, DeepEP's hierarchical route, FLASH's Birkhoff phases per rank and
    per box), each verified,
    in the bandwidth model and in the event simulator."""
    from optcoll.schedules.alltoallv import DEMAND_METHODS, demand_schedule, proved_optimum
    from optcoll.sim.demand import simulate_demand_phases, simulate_demand_schedule

    for flag, value in (("--plot", args.plot), ("--sizes", args.sizes), ("--groups", args.groups)):
        if value:
            raise ArgumentError(f"{flag} does not apply to --demand (one demand, all sizes given)")
    demand = demand_of(topology, args)
    latency = sim_options(args).default_latency
    optimum = proved_optimum(topology, demand)
    rows = []
    for method in DEMAND_METHODS:
        schedule = demand_schedule(topology, demand, method, optimum=optimum)
        if schedule.phases:
            simulated = simulate_demand_phases(topology, schedule.phases, default_latency=latency)
        else:
            simulated = simulate_demand_schedule(
                topology, schedule.routes, default_latency=latency
            ).time_us
        rows.append(
            {
                **schedule.to_dict(),
                "ratio_to_optimum_float": round(
                    float(schedule.time_factor / optimum.time_factor), 6
                ),
                "simulated_us": round(simulated, 4),
            }
        )
    data = optimum.to_dict() | {"schedules": rows}
    if args.json:
        print_json(data)
        return 0
    print(
        f"{topology.name}: {demand.origin}, {demand.total_bytes} bytes over the network; "
        f"optimum {optimum.time_us:.6g} us (proved by {optimum.method})"
    )
    print(f"{'schedule':<14} {'bandwidth us':>14} {'x optimum':>10} {'simulated us':>14}  notes")
    for row in rows:
        note = f"{row['phases']} phases in sequence" if "phases" in row else f"{row['paths']} paths"
        print(
            f"{row['method']:<14} {row['time_us']:>14.6g} {row['ratio_to_optimum_float']:>10.4f} "
            f"{row['simulated_us']:>14.6g}  {note}"
        )
    return 0
