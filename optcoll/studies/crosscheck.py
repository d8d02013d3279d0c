"""Cross-check every method that computes or attains r* on one topology.

The optimal allgather cut ratio r* is reached from independent directions:
lower bounds certified by a cut (the combinatorial parametric max-flow, the
congestion LP, brute-force cut enumeration; the multicast LP, whose value is
proved by exact LP duality without a cut) and schedules that attain it (the
combinatorial spanning-tree packing, the LP tree packing rounded to integral
trees), each schedule checked by the independent verifier
:func:`optcoll.verify.schedule.verify_schedule`. :func:`crosscheck` runs the methods that
fit the topology's size and checks that all values are the same Fraction.

A disagreement is explained by a cut: the certificate cut with the largest exact
ratio (recomputed from the topology, whichever method produced it) shows which
value is wrong - every schedule's time factor and every correct bound must equal
the largest ratio over all cuts, so a value below a cut's ratio is refuted by
that cut, and a value above every certified cut is unsupported.

With ``groups`` (:func:`crosscheck_groups`) the concurrent process groups'
optimal time t* is compared: the combinatorial bound of each group alone
(when every group shares no link with another and its relays have in >= out,
t* is the largest group's cut ratio; a method independent of every LP), one
edge-form LP over all groups at once (no classes, no symmetry), the
production path (:func:`optcoll.groups.bounds.groups_bound`: classes of groups
sharing links, symmetry), and the groups' trees, verified.

With ``collective="alltoall"`` the all-to-all optimum t* is reached by two
independent LPs - the source-aggregated edge LP (:mod:`formulations.alltoall`)
and the path LP by column generation (:mod:`formulations.path_flow`), each
proved exactly by its own length function - and attained by the routes of
:func:`optcoll.schedules.alltoall.alltoall_schedule`, verified. The cut bound
``max_S |S ∩ Vc| |Vc \\ S| / B+(S)`` is reported beside them with the flow-cut
gap; it is a lower bound, not a method that must agree.

Examples
--------
>>> from optcoll import load_topology
>>> check = crosscheck(load_topology("dgx-a100:1"), methods=("combinatorial", "brute-force"))
>>> check.agree, check.reference
(True, Fraction(7, 300))
>>> [row.method for row in check.results]
['combinatorial', 'brute-force']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optcoll.bounds.cut_ratio import optimal_cut_ratio_core
from optcoll.core.arguments import collective_argument, instance_argument, topology_argument
from optcoll.core.process_groups import ProcessGroups
from optcoll.core.rational import fraction_text
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, MethodError, OptCollError
from optcoll.graph.splitting import split_switches
from optcoll.groups.bounds import groups_bound
from optcoll.groups.schedule import groups_schedule
from optcoll.schedules.alltoall import (
    alltoall_bound_core,
    alltoall_optimum,
    alltoall_schedule_core,
)
from optcoll.schedules.packing import chunk_capacities, pack_arborescences_core
from optcoll.schedules.rounding import round_packing
from optcoll.verify.schedule import verify_groups_schedule, verify_schedule_core

__all__ = [
    "MethodResult",
    "CrossCheck",
    "crosscheck",
    "crosscheck_groups",
    "METHODS",
    "ALLTOALL_METHODS",
    "GROUP_METHODS",
]

#: Size limits (nodes or compute nodes) beyond which a method is not run.
BRUTE_FORCE_MAX_NODES = 16
#: N |links| flow variables: dgx-a100:16 (~98k) builds in seconds, random:n=200 (~2.4M)
#: would take many minutes.
CONGESTION_LP_MAX_VARIABLES = 200_000
TREES_MAX_COMPUTE = 256
PACKING_LP_MAX_COMPUTE = 16
#: N (N - 1) |links| flow variables: mi250:1 (~13k) takes seconds, dgx-a100:4 (~190k) many minutes.
MULTICAST_MAX_FLOW_VARIABLES = 30_000
#: Flow variables up to which the concurrent groups' one LP over all groups runs.
GROUPS_LP_MAX_FLOW_VARIABLES = 300_000
#: Compute nodes up to which the all-to-all path LP (column generation) runs.
PATH_LP_MAX_COMPUTE = 32


@dataclass(frozen=True)
class MethodResult:
    """One row of the cross-check table.

    Attributes
    ----------
    method : str
    kind : str
        ``"bound"`` (a value certified by a cut) or ``"schedule"`` (an attained,
        verified time factor).
    value : Fraction or None
        The method's r* (bound) or verified time factor (schedule); None on failure.
    seconds : float
    cut : tuple of str or None
        The certificate cut a bound method returned (node ids in topology order).
    detail : str
        Extra facts (k, tree count) or the error / invalid-schedule reason.
    """

    method: str
    kind: str
    value: Fraction | None
    seconds: float
    cut: tuple[str, ...] | None = None
    detail: str = ""


@dataclass(frozen=True)
class CrossCheck:
    """The cross-check of one topology: every row, and whether they agree."""

    topology: str
    results: tuple[MethodResult, ...]
    reference: Fraction | None
    agree: bool
    disagreement: str | None
    skipped: tuple[str, ...] = ()
    cut_bound: Fraction | None = None
    cut_exhaustive: bool | None = None

    def table(self) -> str:
        """The human-readable table (method, exact value, seconds, agreement)."""
        rows = [("method", "value", "seconds", "agrees", "detail")]
        for r in self.results:
            value = "-" if r.value is None else _short(r.value)
            agrees = "yes" if r.value is not None and r.value == self.reference else "NO"
            rows.append((r.method, value, f"{r.seconds:.3f}", agrees, r.detail))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=False))
            + "  "
            + row[4]
            for row in rows
        ]
        if self.skipped:
            lines.append(
                f"skipped (too large, or not for this topology): {', '.join(self.skipped)}"
            )
        if self.cut_bound is not None:
            search = "every node set" if self.cut_exhaustive else "candidate sets"
            gap = (
                ""
                if self.reference is None
                else f", flow-cut gap {_short(self.reference / self.cut_bound)}"
            )
            lines.append(f"cut bound {_short(self.cut_bound)} (a lower bound, {search}){gap}")
        return "\n".join(line.rstrip() for line in lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (exact values as ``"p/q"`` strings)."""
        return {
            "topology": self.topology,
            "reference": None if self.reference is None else fraction_text(self.reference),
            "agree": self.agree,
            "disagreement": self.disagreement,
            "skipped": list(self.skipped),
            **(
                {}
                if self.cut_bound is None
                else {
                    "cut_bound": fraction_text(self.cut_bound),
                    "cut_exhaustive": self.cut_exhaustive,
                    "flow_cut_gap": None
                    if self.reference is None
                    else fraction_text(self.reference / self.cut_bound),
                }
            ),
            "methods": [
                {
                    "method": r.method,
                    "kind": r.kind,
                    "value": None if r.value is None else fraction_text(r.value),
                    "seconds": round(r.seconds, 6),
                    "cut": None if r.cut is None else list(r.cut),
                    "detail": r.detail,
                }
                for r in self.results
            ],
        }


# --- the methods ---------------------------------------------------------------------


def _combinatorial(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:

    bound = optimal_cut_ratio_core(topology)
    return bound.ratio, bound.bottleneck_cut, f"k = {bound.k}"


def _brute_force(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:

    bound = optimal_cut_ratio_core(topology, method="brute-force")
    return bound.ratio, bound.bottleneck_cut, f"{2 ** len(topology.node_ids)} subsets"


def _congestion_lp(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:
    found = optimal_cut_ratio_core(topology, method="lp")
    return found.ratio, found.bottleneck_cut, "dual cut, proved by LP duality"


def _multicast_lp(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:
    from optcoll.bounds.multicast import multicast_bound

    result = multicast_bound(topology)
    return result.cut_ratio, None, "exact vertex and duals, proved by LP duality"


def _multicast_fits(topology: Topology) -> bool:
    n = topology.num_compute
    return n * (n - 1) * len(topology.capacity) <= MULTICAST_MAX_FLOW_VARIABLES


def _trees(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:

    schedule = pack_arborescences_core(topology)
    return _verified(topology, schedule)


def _lp_packing(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:
    """Column-generation tree packing, rounded exactly, verified.

    Direct-connect topologies are packed on their links; with switches, on the
    logical graph of :func:`~optcoll.graph.splitting.split_switches` at r* (ForestColl's
    ``U * caps`` link capacities, ``k`` per root, requirement ``N * k``).
    """
    from optcoll.schedules.tree_packing import fractional_tree_packing

    logical = None
    capacity: Any = topology.capacity
    if topology.switch_nodes:
        bound = optimal_cut_ratio_core(topology)  # on its forwardable capacity if a switch is short
        set_up = chunk_capacities(topology, bound=bound)
        k, link_capacity = set_up.chunks, set_up.capacity
        roots = dict.fromkeys(topology.compute_nodes, k)
        logical = split_switches(bound.usable, link_capacity, roots, k * topology.num_compute)
        capacity = logical.capacity
    result = fractional_tree_packing(topology.compute_nodes, capacity)
    schedule = round_packing(topology, result.packing, logical=logical)
    value, _, detail = _verified(topology, schedule)
    if result.max_overload > 0:  # the exact vertex was not recovered: say why
        detail = (
            f"LP weights overload t by {float(result.max_overload):.2g} "
            f"({result.weights_source}), {detail}"
        )
    return value, None, f"{result.columns} columns, {detail}"


def _alltoall_edge_lp(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:

    result = alltoall_optimum(topology, method="full")
    return (
        result.time_factor,
        None,
        (f"{result.report.num_variables} variables, proved by LP duality and its length function"),
    )


def _alltoall_orbit_lp(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:

    result = alltoall_optimum(topology, method="orbits")
    assert result.symmetry is not None
    return (
        result.time_factor,
        None,
        (
            f"{result.report.num_variables} variables, group of order "
            f"{result.symmetry.group.order}, lifted and proved on the full LP"
        ),
    )


def _has_symmetry(topology: Topology) -> bool:
    from optcoll.bounds.alltoall_orbits import alltoall_symmetry

    return alltoall_symmetry(topology) is not None


def _alltoall_path_lp(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:
    from optcoll.bounds.path_flow import path_concurrent_flow

    caps, unit = topology.integer_capacities()
    compute = topology.compute_nodes
    pairs = {(s, d): 1 for s in compute for d in compute if s != d}
    result = path_concurrent_flow(topology.node_ids, caps, pairs)
    return (
        result.time / unit,
        None,
        (
            f"{result.columns} paths, {result.rounds[0]} + {result.rounds[1]} pricing rounds "
            "(float + exact), proved by its length function"
        ),
    )


def _alltoall_routes(topology: Topology) -> tuple[Fraction, frozenset[str] | None, str]:

    schedule = alltoall_schedule_core(topology)
    result = verify_schedule_core(topology, schedule)
    if not result.valid or result.time_factor is None:
        raise _Failed(f"invalid schedule: {result.reason}")
    return result.time_factor, None, f"k = {schedule.k}, {schedule.stats['paths']} paths, verified"


def _verified(topology: Topology, schedule: Any) -> tuple[Fraction, None, str]:

    result = verify_schedule_core(topology, schedule)
    if not result.valid or result.time_factor is None:
        raise _Failed(f"invalid schedule: {result.reason}")
    k = str(schedule.k) if schedule.k < 10**9 else f"a {len(str(schedule.k))}-digit number"
    return result.time_factor, None, f"k = {k}, {len(schedule.trees)} trees, verified"


class _Failed(Exception):
    """Internal: a method ran but produced something unusable (e.g. an invalid schedule)."""


_Runner = Callable[[Topology], tuple[Fraction, "frozenset[str] | None", str]]

#: (name, kind, fits(topology), runner) in table order.
_METHODS: tuple[tuple[str, str, Callable[[Topology], bool], _Runner], ...] = (
    ("combinatorial", "bound", lambda t: True, _combinatorial),
    (
        "brute-force",
        "bound",
        lambda t: len(t.node_ids) <= BRUTE_FORCE_MAX_NODES and not t.short_switches(),
        _brute_force,
    ),
    (
        "congestion LP",
        "bound",
        lambda t: t.num_compute * len(t.capacity) <= CONGESTION_LP_MAX_VARIABLES,
        _congestion_lp,
    ),
    ("multicast LP", "bound", _multicast_fits, _multicast_lp),
    ("trees + verify", "schedule", lambda t: t.num_compute <= TREES_MAX_COMPUTE, _trees),
    (
        "LP packing + rounding + verify",
        "schedule",
        lambda t: t.num_compute <= PACKING_LP_MAX_COMPUTE,
        _lp_packing,
    ),
)

#: The method names, in table order.
METHODS = tuple(name for name, *_ in _METHODS)

#: The all-to-all table: (name, kind, fits(topology), runner).
_ALLTOALL_METHODS: tuple[tuple[str, str, Callable[[Topology], bool], _Runner], ...] = (
    ("source-aggregated LP", "bound", lambda t: True, _alltoall_edge_lp),
    ("orbit LP (automorphisms)", "bound", _has_symmetry, _alltoall_orbit_lp),
    (
        "path LP (column generation)",
        "bound",
        lambda t: t.num_compute <= PATH_LP_MAX_COMPUTE,
        _alltoall_path_lp,
    ),
    ("routes + verify", "schedule", lambda t: True, _alltoall_routes),
)

#: The all-to-all method names, in table order.
ALLTOALL_METHODS = tuple(name for name, *_ in _ALLTOALL_METHODS)


def crosscheck(
    topology: Topology, *, methods: Sequence[str] | None = None, collective: str = "allgather"
) -> CrossCheck:
    """Run every method that fits ``topology`` and compare their exact values.

    Parameters
    ----------
    topology : Topology
    methods : sequence of str, optional
        Restrict to these methods (names from :data:`METHODS`, or
        :data:`ALLTOALL_METHODS` for the all-to-all; default all).
    collective : str
        ``allgather`` (r*) or ``alltoall`` (t*, with the cut bound beside it).
        Methods that do not fit the size (brute force beyond 16 nodes, the LPs
        and tree packings beyond the limits in this module) are skipped and
        listed in ``skipped``; so is brute force when a switch has less
        bandwidth in than out (it enumerates cuts of the full bandwidths).

    Returns
    -------
    CrossCheck
        ``agree`` is True when every method ran and all values are equal; the
        first method's value is the reference. ``disagreement`` explains a
        mismatch with both values and the separating cut.

    Raises
    ------
    MethodError
        An unknown method name or collective.
    """
    topology_argument(topology)
    collective = collective_argument(collective)
    if methods is not None and (isinstance(methods, str) or not isinstance(methods, Sequence)):
        raise ArgumentError(f"methods must be a list of method names, got {methods!r}")
    if collective not in ("allgather", "alltoall"):
        raise MethodError(f"crosscheck covers allgather and alltoall, got {collective!r}")
    table = _METHODS if collective == "allgather" else _ALLTOALL_METHODS
    results, skipped = _run(table, topology, topology, methods, collective)
    reference = results[0].value
    agree = reference is not None and all(r.value == reference for r in results)
    disagreement = None if agree else _explain(topology, results)
    cut_bound = cut_exhaustive = None
    if collective == "alltoall":
        try:
            bound = alltoall_bound_core(topology, None)
            cut_bound, cut_exhaustive = bound.cut_bound, bound.cut_exhaustive
        except OptCollError:  # the LP row above already says why
            pass
    return CrossCheck(
        topology.name,
        tuple(results),
        reference,
        agree,
        disagreement,
        tuple(skipped),
        cut_bound,
        cut_exhaustive,
    )


def _run(
    table: Sequence[tuple[str, str, Callable[[Any], bool], Callable[[Any], Any]]],
    subject: Any,
    topology: Topology,
    methods: Sequence[str] | None,
    what: str,
) -> tuple[list[MethodResult], list[str]]:
    """Run the methods of ``table`` (all, or those named in ``methods``) on ``subject``."""
    names = tuple(name for name, *_ in table)
    if methods is not None:
        for name in methods:
            if name not in names:
                raise MethodError(
                    f"unknown cross-check method {name!r} for {what}; valid: {', '.join(names)}"
                )
    results, skipped = [], []
    for name, kind, fits, run in table:
        if methods is not None and name not in methods:
            continue
        if not fits(subject):
            skipped.append(name)
            continue
        start = time.perf_counter()
        try:
            value, cut, detail = run(subject)
        except (OptCollError, _Failed) as err:
            value, cut, detail = None, None, f"failed: {err}"
        seconds = time.perf_counter() - start
        ordered = None if cut is None else tuple(v for v in topology.node_ids if v in cut)
        results.append(MethodResult(name, kind, value, seconds, ordered, detail))
    if not results:
        raise MethodError(
            f"{', '.join(skipped)} cannot run on {topology.name} ({len(topology.node_ids)} nodes, "
            f"{len(topology.capacity)} links): too large for "
            f"{'it' if len(skipped) == 1 else 'them'}; choose other --methods"
        )
    return results, skipped


def _groups_combinatorial(groups: ProcessGroups) -> tuple[Fraction, None, str]:

    ratios = [
        optimal_cut_ratio_core(groups.group_topology(g)).ratio for g in range(len(groups.groups))
    ]
    worst = max(range(len(ratios)), key=ratios.__getitem__)
    return ratios[worst], None, f"group {worst}'s cut ratio, on the graph it sees"


def _groups_alone_balanced(groups: ProcessGroups) -> bool:
    """Every group alone in its class of link-sharing groups, its relays in >= out."""
    return len(groups.sharing_components()) == len(groups.groups) and not any(
        groups.group_topology(g).short_switches() for g in range(len(groups.groups))
    )


def _groups_flow_variables(groups: ProcessGroups) -> int:
    return sum(
        len(members) * (len(members) - 1) * len(arcs)
        for members, arcs in zip(groups.groups, groups.useful_arcs, strict=True)
    )


def _groups_edge_lp(groups: ProcessGroups) -> tuple[Fraction, None, str]:
    from optcoll.groups.concurrent import concurrent_optimum

    solved = concurrent_optimum(groups, range(len(groups.groups)), symmetric=False)
    return solved.time_factor, None, "one LP over all groups, proved by LP duality"


def _groups_classes(groups: ProcessGroups, form: str) -> tuple[Fraction, None, str]:

    bound = groups_bound(groups, form=form)
    classes = len(groups.sharing_components())
    return bound.time_factor, None, f"{classes} class{'es' * (classes != 1)}, {bound.method}"


def _groups_trees(groups: ProcessGroups) -> tuple[Fraction, None, str]:

    schedule = groups_schedule(groups)
    result = verify_groups_schedule(groups.topology, schedule)
    if not result.valid or result.time_factor is None:
        raise _Failed(f"invalid schedule: {result.reason}")
    trees = sum(len(s.trees) for s in schedule.groups)
    return result.time_factor, None, f"{trees} trees, verified"


#: The concurrent groups' table: (name, kind, fits(groups), runner).
_GROUP_METHODS: tuple[tuple[str, str, Callable[[Any], bool], Callable[[Any], Any]], ...] = (
    ("combinatorial (each group alone)", "bound", _groups_alone_balanced, _groups_combinatorial),
    (
        "edge LP (all groups at once)",
        "bound",
        lambda g: _groups_flow_variables(g) <= GROUPS_LP_MAX_FLOW_VARIABLES,
        _groups_edge_lp,
    ),
    (
        "edge LP (classes, symmetry)",
        "bound",
        lambda g: True,
        lambda g: _groups_classes(g, "edge"),
    ),
    (
        "tree-column LP (classes, symmetry)",
        "bound",
        lambda g: True,
        lambda g: _groups_classes(g, "columns"),
    ),
    ("trees + verify", "schedule", lambda g: True, _groups_trees),
)

#: The concurrent groups' method names, in table order.
GROUP_METHODS = tuple(name for name, *_ in _GROUP_METHODS)


def crosscheck_groups(groups: ProcessGroups, *, methods: Sequence[str] | None = None) -> CrossCheck:
    """Compare every method for the concurrent groups' optimal time t* (allgather).

    The methods are :data:`GROUP_METHODS` (see the module docstring); the
    combinatorial row runs only when no two groups share a link and every
    relay has in >= out (where t* is the largest group's cut ratio), the
    one-LP row only up to :data:`GROUPS_LP_MAX_FLOW_VARIABLES` flow variables.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.io.process_groups import parse_groups
    >>> check = crosscheck_groups(parse_groups(load_topology("dgx-a100:2"), "strided:8"))
    >>> check.agree, check.reference, check.skipped
    (True, Fraction(1, 25), ())
    """

    instance_argument(groups, ProcessGroups, "groups", "optcoll.io.process_groups.parse_groups")
    if methods is not None and (isinstance(methods, str) or not isinstance(methods, Sequence)):
        raise ArgumentError(f"methods must be a list of method names, got {methods!r}")
    topology = groups.topology
    results, skipped = _run(_GROUP_METHODS, groups, topology, methods, "process groups")
    reference = results[0].value
    agree = reference is not None and all(r.value == reference for r in results)
    return CrossCheck(
        f"{topology.name}, {len(groups.groups)} groups (relay {groups.relay})",
        tuple(results),
        reference,
        agree,
        None if agree else _explain(topology, results),
        tuple(skipped),
    )


def _explain(topology: Topology, results: Sequence[MethodResult]) -> str:
    failed = [r for r in results if r.value is None]
    if failed:
        return f"{failed[0].method} {failed[0].detail}"
    values = {r.method: r.value for r in results if r.value is not None}
    first = results[0]
    other = next(r for r in results if r.value != first.value)
    low, high = sorted((first, other), key=lambda r: values[r.method])
    text = (
        f"{first.method} gives {_short(values[first.method])}, "
        f"{other.method} gives {_short(values[other.method])}"
    )
    cuts = [r.cut for r in results if r.cut is not None]
    if not cuts:
        return text + "; no method produced a cut"
    best = max(cuts, key=lambda s: _cut_ratio(topology, s))  # the first of the best
    ratio = _cut_ratio(topology, best)
    compute = sum(1 for v in best if topology.is_compute(v))
    outside = [v for v in topology.node_ids if v not in best]
    named = f"every node except {outside}" if len(outside) < len(best) else str(list(best))
    where = (
        f"the cut S = {named} ({compute} compute nodes, B+(S) = "
        f"{fraction_text(topology.cut_bandwidth(best))}) has exact ratio {fraction_text(ratio)}"
    )
    if ratio > values[low.method]:
        return f"{text}; {where} > {_short(values[low.method])}, refuting {low.method}"
    return f"{text}; {where}, and no cut supports {high.method}'s {_short(values[high.method])}"


def _cut_ratio(topology: Topology, side: Sequence[str]) -> Fraction:
    compute = sum(1 for v in side if topology.is_compute(v))
    bandwidth = topology.cut_bandwidth(side)
    if compute == 0 or compute == topology.num_compute or bandwidth == 0:
        return Fraction(0)
    return Fraction(compute) / bandwidth


def _short(value: Fraction) -> str:
    """``p/q``, or a float with the size of ``q`` when the exact text would be unreadable."""
    text = fraction_text(value)
    if len(text) <= 40:
        return text
    return f"~{float(value):.9g} (exact, {len(str(value.denominator))}-digit denominator)"
