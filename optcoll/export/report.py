"""What an export wrote and says about it (:func:`optcoll.export.workflow.export_files`).

Examples
--------
>>> from pathlib import Path
>>> ExportReport([Path("ag.xml")], {"files": []}, ["wrote ag.xml"], []).files
[PosixPath('ag.xml')]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ExportReport"]


@dataclass(frozen=True)
class ExportReport:
    """The files written (in order), the report ``optcoll export --json`` prints (``data``),
    the lines the command prints without ``--json`` and its warnings (printed to standard
    error after the lines; with ``--json`` they are in ``data`` where the format has any)."""

    files: list[Path]
    data: dict[str, Any]
    lines: list[str]
    warnings: list[str]
