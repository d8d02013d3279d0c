"""Writers that turn schedules into files other tools run or read.

* ``msccl``: MSCCL algorithm XML (:mod:`optcoll.export.msccl`);
* ``json``: the optcoll schedule file (:meth:`optcoll.core.schedule.Schedule.to_dict`).

Examples
--------
>>> FORMATS
('msccl', 'json')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optcoll.core.arguments import path_argument, schedule_argument, text_argument
from optcoll.core.output import write_output
from optcoll.core.schedule import Schedule
from optcoll.exceptions import ExportError
from optcoll.export.msccl import MscclProgram, msccl_program, to_msccl_xml
from optcoll.export.runtimes import RUNTIMES, RuntimeProfile, runtime_profile
from optcoll.io import schedule_text

__all__ = [
    "FORMATS",
    "RUNTIMES",
    "export_text",
    "export_schedule",
    "MscclProgram",
    "RuntimeProfile",
    "msccl_program",
    "runtime_profile",
    "to_msccl_xml",
]

FORMATS = ("msccl", "json")


def export_text(schedule: Schedule, fmt: str, **options: Any) -> str:
    """The text of ``schedule`` in format ``fmt`` (options go to the format's writer).

    Examples
    --------
    >>> from optcoll.core.schedule import Tree, TreeEdge
    >>> s = Schedule("allgather", "pair", ("a", "b"), 1,
    ...              (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
    ...               Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),))))
    >>> export_text(s, "json").startswith('{\\n  "format": "optcoll-schedule"')
    True
    """
    schedule_argument(schedule)
    text_argument(fmt, "fmt (the export format)")
    if fmt == "msccl":
        return to_msccl_xml(schedule, **options)
    if fmt == "json":
        if options:
            raise ExportError(f"the json format takes no options, got {sorted(options)}")
        return schedule_text(schedule)
    raise ExportError(f"unknown export format {fmt!r}; valid: {', '.join(FORMATS)}")


def export_schedule(
    schedule: Schedule, fmt: str, path: str | Path, *, force: bool = False, **options: Any
) -> None:
    """Write ``schedule`` to ``path`` in format ``fmt`` (atomically; an existing file only
    with ``force``), creating parent folders."""
    schedule_argument(schedule)
    text_argument(fmt, "fmt (the export format)")
    path = path_argument(path)
    write_output(path, export_text(schedule, fmt, **options), force=force)
