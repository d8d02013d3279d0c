"""Helpers shared by the figure scripts: output folder, CSV, reference figures."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks._common import load_reference as reference
from optcoll.core.output import write_output

#: Default output folder.
OUT = Path(__file__).resolve().parent / "out"


def output_folder(folder: str | Path | None) -> Path:
    """The output folder (created), :data:`OUT` when ``folder`` is None."""
    path = OUT if folder is None else Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """Write a CSV file with a header row, atomically, replacing the one an earlier run
    wrote (figures are generated outputs; the PNGs are saved with ``force=True`` too)."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return write_output(path, text.getvalue(), force=True)


def reference_optimum(family: str, boxes: int) -> dict[str, Any] | None:
    """The reference optimum entry of ``family:boxes``, if there is one."""
    for entry in reference()["optima"]:
        if entry["topology"] == family and entry["boxes"] == boxes:
            return entry
    return None


def reference_seconds(kind: str, spec: str) -> float | None:
    """The reference implementation's wall-clock seconds (2 cores) for ``kind``
    (``"bound"`` or ``"trees"``) on ``spec``."""
    return reference()["reference_seconds_2core"].get(kind, {}).get(spec)


def ratio_text(value: Any) -> str:
    """An exact ratio as ``"p/q"`` (or ``"p"``)."""
    from fractions import Fraction

    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def optimal_schedule(topology: Any) -> Any:
    """The throughput-optimal allgather schedule (ForestColl's k trees per root, time factor r*)."""
    from optcoll.schedules.packing import pack_arborescences

    return pack_arborescences(topology)
