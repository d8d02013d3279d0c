"""What ``optcoll export`` is asked to write and the verified schedules that answers it.

An :class:`ExportRequest` holds every option of the command (the same names as its flags:
``--max-bytes`` is ``max_bytes``); :func:`chosen_schedules` builds (or reads from a schedule
file) and verifies the schedules to write, :func:`groups_schedule` those of concurrent
process groups. The writers of :mod:`optcoll.export.workflow` (MSCCL XML, schedule JSON),
:mod:`optcoll.export.mscclpp_workflow` and :mod:`optcoll.export.chakra_workflow` turn them
into files.

Examples
--------
>>> request = ExportRequest("ring:4", "ag.xml")
>>> topology, chosen, tried = chosen_schedules(request)
>>> chosen[0].schedule.k, chosen[0].time_factor
(2, Fraction(3, 200))
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll import topologies
from optcoll.core.aggregation import AggregationSchedule
from optcoll.core.arguments import number_argument
from optcoll.core.groups_schedule import GroupsSchedule
from optcoll.core.output import input_files
from optcoll.core.process_groups import make_groups
from optcoll.core.schedule import FILE_STATS, ORDER_STATS, a_collective, check_schedule_topology
from optcoll.exceptions import (
    ExportError,
    GroupError,
    OptCollError,
    ScheduleError,
    TopologySpecError,
)
from optcoll.export.runtimes import DEFAULT_RUNTIME
from optcoll.groups.schedule import groups_collective, groups_lower_bound
from optcoll.io import is_schedule_file, load_schedule, load_topology
from optcoll.io.process_groups import parse_groups
from optcoll.io.schedule_json import load_any_schedule
from optcoll.schedules.collectives import (
    allreduce,
    collective_cut_ratio,
    collective_lower_bound,
    reduce_scatter,
)
from optcoll.schedules.deploy import DEFAULT_TOLERANCE, deployable_schedule
from optcoll.schedules.spanning_tree_allreduce import rooted_optimum, rooted_schedule
from optcoll.verify.aggregation import verify_aggregation_schedule
from optcoll.verify.schedule import verify_groups_schedule, verify_schedule

__all__ = [
    "ExportRequest",
    "Chosen",
    "chosen_schedules",
    "groups_schedule",
    "schedule_path",
    "topology_of",
]


@dataclass(frozen=True)
class ExportRequest:
    """Every option of ``optcoll export`` (see ``optcoll export --help``), by the names of its
    flags. ``reader_options`` are ``--option KEY=VALUE`` pairs; ``inputs``, the files the
    export must not write over (None: every option naming an existing file); ``progress``
    shows a progress bar while planning size bands."""

    source: str
    output: str
    collective: str = "allgather"
    format: str = "msccl"
    size: int | None = None
    placement: str | None = None
    runtime: str = DEFAULT_RUNTIME
    k: int | None = None
    exact: bool = False
    tolerance: Fraction | None = None
    bands: bool = False
    sizes: list[int] | None = None
    max_bytes: int | None = None
    root: str | None = None
    topology: str | None = None
    channels: int | None = None
    max_threadblocks: int | None = None
    groups: str | None = None
    relay: str | None = None
    group_form: str | None = None
    force: bool = False
    unchecked: bool = False
    overhead: float | None = None
    latency: Fraction | None = None
    slice: int | None = None
    switch_model: str | None = None
    reader_options: tuple[tuple[str, str], ...] = ()
    bandwidth_attr: str | None = None
    latency_attr: str | None = None
    inputs: tuple[Path, ...] | None = None
    progress: bool = False

    def __post_init__(self) -> None:
        """Read ``latency`` and ``tolerance`` exactly (a float by its shortest decimal, as
        a topology file's), or raise :class:`~optcoll.exceptions.ArgumentError` naming it.

        >>> ExportRequest("ring:4", "ag.xml", latency=0.5, tolerance=0.01).latency
        Fraction(1, 2)
        """
        for name in ("latency", "tolerance"):
            if getattr(self, name) is not None:  # frozen: set through object
                object.__setattr__(self, name, number_argument(getattr(self, name), name))

    @classmethod
    def argument_names(cls) -> tuple[str, ...]:
        """The fields that are flags of ``optcoll export`` (all but ``inputs`` and ``progress``).

        >>> ExportRequest.argument_names()[:3]
        ('source', 'output', 'collective')
        """
        return tuple(f.name for f in fields(cls) if f.name not in ("inputs", "progress"))

    def reader_keywords(self) -> dict[str, str]:
        """The topology reader's options, as keyword arguments of ``load_topology``.

        >>> ExportRequest("t.graphml", "a.xml", reader_options=(("boxes", "2"),),
        ...               bandwidth_attr="cap").reader_keywords()
        {'boxes': '2', 'bandwidth_attr': 'cap'}
        """
        options = dict(self.reader_options)
        for key in ("bandwidth_attr", "latency_attr"):
            if getattr(self, key) is not None:
                options[key] = getattr(self, key)
        return options

    def input_paths(self) -> list[Path]:
        """The files the export reads, which it never writes over: ``inputs``, or every
        option but ``output`` that names an existing file."""
        if self.inputs is not None:
            return list(self.inputs)
        values = [self.source, self.topology, self.groups]
        return input_files(*(v for v in values if v is not None))

    def process_groups(self, topology: Any) -> Any:
        """The :class:`~optcoll.core.process_groups.ProcessGroups` of ``groups`` and
        ``relay`` on ``topology``, or None without ``groups``.

        Raises
        ------
        GroupError
            ``relay`` or ``group_form`` without ``groups``, and every error of
            :func:`optcoll.io.process_groups.parse_groups`.
        """

        if self.groups is None:
            for flag, value in (("--relay", self.relay), ("--group-form", self.group_form)):
                if value is not None:
                    raise GroupError(f"{flag} applies to process groups: give --groups too")
            return None

        return parse_groups(topology, self.groups, self.relay)


@dataclass(frozen=True)
class Chosen:
    """A schedule to write, with its verified time factor and optimum (``allgather``:
    the second phase of an allreduce composed of two tree sets)."""

    schedule: Any
    time_factor: Fraction | None
    optimum: Fraction | None
    allgather: Any = None


def groups_schedule(request: ExportRequest) -> tuple[Any, Any, Fraction | None] | None:
    """With ``--groups`` or a groups schedule file: the topology, the verified concurrent
    groups' schedule and its exact bound; else None."""

    path = schedule_path(request.source)
    loaded = None if path is None else load_any_schedule(path)
    if not isinstance(loaded, GroupsSchedule) and request.groups is None:
        if request.relay is not None or request.group_form is not None:
            request.process_groups(None)  # without --groups: its one-line error
        return None
    if request.k is not None or request.exact or request.bands or request.root or request.tolerance:
        raise ExportError(
            "process groups are exported with each group's own k, rooted at its first member: "
            "drop -k, --exact, --bands, --tolerance and --root"
        )
    if path is None or loaded is None:
        topology = load_topology(request.source, **request.reader_keywords())
        groups = request.process_groups(topology)
        schedule = groups_collective(groups, request.collective, form=request.group_form)
    elif not isinstance(loaded, GroupsSchedule):
        raise ExportError(
            f"{path} plans one collective over every compute node, not process groups; "
            "--groups exports from a topology or from a schedule written by trees --groups"
        )
    else:
        if request.groups is not None or request.relay is not None:
            raise ExportError(f"{path} holds its own groups and relay: drop --groups and --relay")
        if loaded.collective != request.collective:
            raise ExportError(
                f"{path} holds a {loaded.collective} of process groups; give --collective "
                f"{loaded.collective} (a groups file is exported as it is)"
            )
        topology = topology_of(request.topology, loaded, path, request.reader_keywords())
        schedule = loaded
        groups = make_groups(topology, [s.compute_nodes for s in schedule.groups], schedule.relay)
    if request.unchecked:
        return topology, schedule, None
    roots = tuple(s.root or s.compute_nodes[0] for s in schedule.groups)
    optimum = groups_lower_bound(groups, schedule.collective, roots, form=request.group_form)
    verdict = verify_groups_schedule(topology, schedule, optimum=optimum)
    if not verdict.valid:
        raise ExportError(
            f"the groups' {schedule.collective} fails verification on {topology.name!r}: "
            f"{verdict.reason}; nothing written (--unchecked writes it anyway)"
        )
    return topology, schedule, optimum


def chosen_schedules(request: ExportRequest) -> tuple[Any, list[Chosen], tuple]:
    """The topology (None if unknown and unchecked), the verified schedules to write and the
    ``k`` tried (``--bands`` plans each band's choice instead:
    :mod:`optcoll.export.planned_bands`)."""

    tolerance = DEFAULT_TOLERANCE if request.tolerance is None else request.tolerance
    schedule_file = schedule_path(request.source)
    if schedule_file is None:
        topology = load_topology(request.source, **request.reader_keywords())
        best = deployable_schedule(
            topology,
            request.collective,
            tolerance=tolerance,
            k=request.k,
            exact=request.exact,
            root=request.root,
        )
        phases = [(best.schedule, best.allgather)]
        tried = best.tried
    else:
        if request.k is not None or request.exact or request.bands:
            raise ExportError(
                f"{request.source} is a schedule file with its own k; -k, --exact and --bands "
                "apply to a topology"
            )
        spanning = _spanning_trees(request, schedule_file)
        if spanning is not None:
            return spanning
        topology, schedules = _from_file(request, schedule_file)
        phases = [(schedule, None) for schedule in schedules]
        tried = ()
    chosen = []
    for schedule, allgather in phases:
        if request.unchecked:  # claims nobody checked are not passed on
            plain = replace(schedule, cut_ratio=None, time_factor=None, stats={})
            chosen.append(Chosen(plain, None, None, allgather))
            continue
        factor, optimum = Fraction(0), Fraction(0)
        for phase in (schedule, allgather):
            if phase is not None:
                bound = collective_lower_bound(topology, phase.collective, phase.root)
                assert bound is not None  # every schedule here names its root if it needs one
                factor += _verified(topology, phase, bound)
                optimum += bound
        chosen.append(Chosen(schedule, factor, optimum, allgather))
    return topology, chosen, tried


def _spanning_trees(request: ExportRequest, path: Path) -> tuple[Any, list[Chosen], tuple] | None:
    """An aggregation schedule file of reduce + broadcast over spanning trees (``solve
    --collective allreduce`` where they beat reduce-scatter + allgather) as the tree schedule
    the writers take (:func:`optcoll.schedules.spanning_tree_allreduce.rooted_schedule`):
    the topology, the schedule with the aggregation verifier's exact time factor (``N``
    times it, a tree schedule's time being ``(M / N) * time_factor``) and the partition
    bound as its optimum (the least time of every allreduce in which only compute nodes
    reduce, where exact); None if the file holds no aggregation schedule."""
    loaded = load_any_schedule(path)
    if not isinstance(loaded, AggregationSchedule):
        return None
    if request.collective != "allreduce":
        raise ExportError(f"{path} holds an allreduce (aggregation trees): give --collective "
                          "allreduce")  # fmt: skip
    topology = topology_of(request.topology, loaded, path, request.reader_keywords())
    try:
        schedule = rooted_schedule(loaded)
    except ScheduleError as err:
        raise ExportError(f"{path}: {err}") from None
    n = len(schedule.compute_nodes)
    if request.unchecked:
        plain = replace(schedule, time_factor=None, stats={})
        return topology, [Chosen(plain, None, None)], ()
    verdict = verify_aggregation_schedule(topology, loaded)
    if not verdict.valid or verdict.time_factor is None:
        raise ExportError(f"{path} fails verification on {topology.name!r}: {verdict.reason}; "
                          "nothing written (--unchecked writes it anyway)")  # fmt: skip
    rooted = verify_schedule(topology, replace(schedule, time_factor=None))
    if not rooted.valid:  # the same trees and paths, so never; but checked, not assumed
        raise ExportError(f"the rooted trees of {path} fail verification: {rooted.reason}")
    factor = n * verdict.time_factor
    chosen = Chosen(replace(schedule, time_factor=factor), factor, rooted_optimum(topology))
    return topology, [chosen], ()


def _verified(topology: Any, schedule: Any, optimum: Fraction | None) -> Fraction:
    """The verifier's exact time factor; ExportError if it rejects the schedule (paths,
    trees, chunks, or a time factor it claims that its link loads do not give)."""

    cut_ratio = collective_cut_ratio(topology, schedule.collective, schedule.root)
    verdict = verify_schedule(topology, schedule, optimum=optimum, cut_ratio=cut_ratio)
    if not verdict.valid:
        raise ExportError(
            f"the {schedule.collective} schedule fails verification on {topology.name!r}: "
            f"{verdict.reason}; nothing written (--unchecked writes it anyway)"
        )
    assert verdict.time_factor is not None  # a valid verdict has its time factor
    return verdict.time_factor


def schedule_path(source: str) -> Path | None:
    """``source`` as a path if it holds a schedule (not a topology in any format)."""

    path = Path(source)
    return path if is_schedule_file(path) else None


def _from_file(request: ExportRequest, path: Path) -> tuple[Any, list[Any]]:
    """A schedule file's topology and the schedule of ``--collective`` built from it."""

    # a file's stats beyond FILE_STATS (claims, recomputed) and ORDER_STATS (how to run
    # it, checked for form) are records of another builder: none is passed on
    loaded = load_schedule(path)
    kept = FILE_STATS | ORDER_STATS
    schedule = replace(loaded, stats={k: v for k, v in loaded.stats.items() if k in kept})
    try:
        topology = topology_of(request.topology, schedule, path, request.reader_keywords())
    except OptCollError:
        if not request.unchecked or schedule.collective != request.collective:
            raise
        topology = None
    if schedule.collective == request.collective:
        return topology, [schedule]
    if schedule.collective != "allgather" or request.collective not in (
        "reduce_scatter",
        "allreduce",
    ):
        raise ScheduleError(
            f"{path}: {a_collective(schedule.collective)} schedule cannot be exported as "
            f"{request.collective}; "
            "only allgather schedules convert (to reduce_scatter or allreduce) - pass a "
            "topology instead to build it"
        )
    assert topology is not None  # only a schedule of --collective is exported unchecked
    convert = reduce_scatter if request.collective == "reduce_scatter" else allreduce
    return topology, [convert(schedule, topology)]


def topology_of(source: str | None, schedule: Any, path: Path, options: dict[str, str]) -> Any:
    """The topology of a schedule file: ``--topology``, or its ``topology`` field as a
    built-in spec; either must have the content hash the schedule records."""

    if source is not None:
        topology = load_topology(source, **options)
    else:
        try:
            topology = topologies.build(schedule.topology)
        except TopologySpecError:
            raise ScheduleError(
                f"{path} was built for topology {schedule.topology!r}, which is not a "
                "built-in spec; pass its file with --topology FILE"
            ) from None
    check_schedule_topology(schedule, topology, str(path))
    return topology
