"""Schedule files (JSON or YAML, docs/schedule-format.md): reads and writes them.

Examples
--------
>>> is_schedule_document({"format": "optcoll-schedule", "trees": []})
True
>>> is_schedule_document({"nodes": [], "links": []})
False
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from optcoll.core.aggregation import AggregationSchedule, is_aggregation_document
from optcoll.core.arguments import path_argument, schedule_argument
from optcoll.core.groups_schedule import GroupsSchedule
from optcoll.core.output import exists, require_suffix
from optcoll.core.schedule import Schedule
from optcoll.exceptions import ScheduleError
from optcoll.io.document import DOCUMENT_SUFFIXES, document_text, read_document, write_document

__all__ = [
    "load_schedule",
    "load_any_schedule",
    "save_schedule",
    "schedule_text",
    "is_schedule_document",
    "is_schedule_file",
]


def is_schedule_document(data: Any) -> bool:
    """True for a parsed document that is a schedule (its ``format``, or trees and no nodes)."""
    return isinstance(data, dict) and (
        data.get("format") == "optcoll-schedule"
        or (
            "format" not in data
            and ("trees" in data or "aggregation" in data)
            and "nodes" not in data
        )
    )


def is_schedule_file(path: str | Path) -> bool:
    """True if ``path`` is an existing JSON/YAML file holding a schedule.

    Files of other suffixes (GraphML, edge lists, ...) are never read here.

    Raises
    ------
    FileFormatError
        A JSON/YAML file that cannot be parsed.

    Examples
    --------
    >>> is_schedule_file("no-such-file.json"), is_schedule_file("ring:4")
    (False, False)
    """
    path = Path(path)
    return (
        exists(path)
        and path.is_file()
        and path.suffix.lower() in DOCUMENT_SUFFIXES
        and is_schedule_document(read_document(path))
    )


def load_schedule(path: str | Path) -> Schedule:
    """Read a schedule file (JSON or YAML, docs/schedule-format.md).

    Parse errors raise :class:`FileFormatError` (file, line, column); a
    malformed schedule raises :class:`ScheduleError` prefixed by the file name.
    Whether the schedule is valid for a topology is
    :func:`optcoll.verify.schedule.verify_schedule`'s job.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from optcoll.core.schedule import Schedule, Tree, TreeEdge
    >>> s = Schedule("allgather", "pair", ("a", "b"), 1,
    ...              (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
    ...               Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),))))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     save_schedule(s, pathlib.Path(d) / "s.json")
    ...     load_schedule(pathlib.Path(d) / "s.json") == s
    True
    """
    schedule = load_any_schedule(path)
    if isinstance(schedule, AggregationSchedule):
        raise ScheduleError(
            f"{path} holds an allreduce by aggregation trees (field 'aggregation': reduce and "
            f"multicast trees, through reducing switches or over spanning trees); `optcoll "
            f"verify` and `optcoll simulate` read those, other commands do not yet"
        )
    if not isinstance(schedule, Schedule):
        raise ScheduleError(
            f"{path} holds the schedules of concurrent process groups (field 'groups'); "
            f"only `optcoll verify` reads those so far"
        )
    return schedule


def load_any_schedule(path: str | Path) -> Schedule | GroupsSchedule | AggregationSchedule:
    """Read a schedule file: one collective's, concurrent groups' (a top-level ``groups``)
    or an in-network allreduce's (a top-level ``aggregation``).

    Raises
    ------
    FileFormatError, ScheduleError
        As :func:`load_schedule`.
    """

    path = path_argument(path)
    path = Path(path)
    data = read_document(path)
    try:
        if isinstance(data, dict) and "groups" in data:
            return GroupsSchedule.from_dict(data)
        if is_aggregation_document(data):
            return AggregationSchedule.from_dict(data)
        return Schedule.from_dict(data)
    except ScheduleError as err:
        raise ScheduleError(f"{path}: {err}") from None


def save_schedule(
    schedule: Schedule | AggregationSchedule,
    path: str | Path,
    *,
    force: bool = False,
    inputs: Iterable[str | Path] = (),
) -> None:
    """Write ``schedule`` as JSON or YAML (by suffix); lossless with :func:`load_schedule`.

    Written by :func:`~optcoll.io.document.write_document` (``force`` and ``inputs``
    as there).

    Raises
    ------
    OutputError
        The suffix is not one of :data:`DOCUMENT_SUFFIXES`.
    """
    if not isinstance(schedule, AggregationSchedule):
        schedule_argument(schedule)
    path = path_argument(path)
    require_suffix(path, sorted(DOCUMENT_SUFFIXES), "a schedule file")
    write_document(schedule.to_dict(), path, force=force, inputs=inputs)


def schedule_text(schedule: Schedule, suffix: str = ".json") -> str:
    """The text :func:`save_schedule` writes for ``schedule`` into a file with ``suffix``."""
    return document_text(schedule_argument(schedule).to_dict(), suffix)
