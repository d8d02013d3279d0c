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
from optcoll.core.output import check_output, write_output
from optcoll.core.schedule import Schedule
from optcoll.exceptions import ExportError
from optcoll.export.msccl import MscclProgram, msccl_program, placement_files, to_msccl_xml
from optcoll.export.runtimes import DEFAULT_RUNTIME, RUNTIMES, RuntimeProfile, runtime_profile
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
    schedule: Schedule,
    fmt: str,
    path: str | Path,
    *,
    force: bool = False,
    placement: str | None = None,
    **options: Any,
) -> list[Path]:
    """Write ``schedule`` to ``path`` in format ``fmt``; the files written.

    The files ``optcoll export -o PATH`` writes: ``path`` itself and, for MSCCL with
    ``placement="both"``, the in-place program beside it (the rule of
    :func:`~optcoll.export.msccl.placement_files`). Every file is checked before any is
    written; each is written atomically, an existing one only with ``force=True``, and
    parent folders are created.

    Parameters
    ----------
    schedule : Schedule
    fmt : str
        ``msccl`` or ``json``.
    path : str or Path
    force : bool
        Replace existing files.
    placement : str, optional
        MSCCL: ``outofplace`` (default), ``inplace`` or ``both``.
    **options
        Options of :func:`~optcoll.export.msccl.msccl_program` (``runtime``, ``channels``...).

    Raises
    ------
    ExportError
        An unknown format or placement, or options the format does not take.
    OutputError
        A file exists (without ``force=True``) or cannot be written.

    Examples
    --------
    >>> import tempfile, optcoll
    >>> schedule = optcoll.solve("ring:4").schedule
    >>> folder = Path(tempfile.mkdtemp())
    >>> [p.name for p in export_schedule(schedule, "msccl", folder / "ag.xml", placement="both")]
    ['ag.xml', 'ag.inplace.xml']
    """
    schedule_argument(schedule)
    text_argument(fmt, "fmt (the export format)")
    path = path_argument(path)
    if fmt != "msccl":
        if placement is not None:
            raise ExportError("placement chooses an MSCCL program: it needs fmt='msccl'")
        write_output(path, export_text(schedule, fmt, **options), force=force)
        return [path]
    runtime = options.pop("runtime", DEFAULT_RUNTIME)
    files = placement_files(path, schedule.collective, runtime, placement)
    for _, target in files:
        check_output(target, force=force)
    for where, target in files:
        program = msccl_program(schedule, runtime=runtime, placement=where, **options)
        write_output(target, program.text, force=force)
    return [target for _, target in files]
