"""Size bands of plan's choices as MSCCL XML or MSCCL++ files: ``export --bands`` and
``optcoll plan --export``.

At every planned size :func:`optcoll.export.planned_programs.file_choice` writes (in memory),
checks and simulates the file of plan's choice there: the fastest as a file of plan's
fastest candidates the format holds (tree schedules, timetables, log-step schedules).
:func:`planned_bands` merges consecutive sizes whose files are the same, byte for byte, into
one band: the band runs from its first size (0 for the first band) to just below the next
band's first size (no limit for the last), so a band's file is what ``export --size S``
writes at every planned size ``S`` in it, and its simulated time there is reported beside
plan's. Where plan's choice changes between two sizes (another method, or a timetable
synthesized anew for the size) the band ends: a file is never stretched over a size whose
choice differs. Between planned sizes a band's file is the choice at the size below.

Examples
--------
>>> import tempfile, os
>>> from optcoll.export.request import ExportRequest
>>> from optcoll.topologies import build
>>> request = ExportRequest("ring:4", os.path.join(tempfile.mkdtemp(), "ag.xml"), bands=True,
...                         sizes=[2**10, 2**30])
>>> bands = planned_bands(request, build("ring:4"))
>>> [(b.low, b.high, b.method) for b in bands]
[(0, 1073741823, 'multiport Swing'), (1073741824, None, 'NCCL-like ring (2 channels)')]
>>> [round(one.times[0] / one.plan_us - 1, 4) for b in bands for one in b.sizes]  # file vs plan
[0.9971, 0.0002]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optcoll.core.output import check_output, input_files, require_suffix, write_output
from optcoll.core.sizes import size_text
from optcoll.export.planned import PlannedChoice, planned_choices
from optcoll.export.planned_programs import (
    CARRIED_ORDERS,
    FileChoice,
    check_texts,
    file_bound,
    file_choice,
    not_carried,
    program_texts,
    refuse_unplanned,
    request_sim,
)
from optcoll.export.report import ExportReport
from optcoll.export.request import ExportRequest
from optcoll.io import load_topology
from optcoll.sim.cost_model import SIZES

__all__ = ["PlannedBand", "file_choices", "planned_bands", "export_planned_bands", "band_name"]


@dataclass(frozen=True)
class PlannedBand:
    """One band: messages of ``low`` to ``high`` bytes (None: no limit), the candidate
    written (``method``), its files (path, text, placement; with the band's limits) and,
    per planned size in the band, the file choice there (its plan time and file times)."""

    low: int
    high: int | None
    method: str
    files: tuple[tuple[Path, str, str], ...]
    sizes: tuple[FileChoice, ...]


def band_name(low: int, high: int | None) -> str:
    """A band's part of a file name.

    >>> band_name(0, 1048575), band_name(1048576, None)
    ('0-1048575B', '1048576-maxB')
    """
    return f"{low}-{'max' if high is None else high}B"


def file_choices(
    request: ExportRequest,
    topology: Any,
    choices: Sequence[PlannedChoice] | None = None,
    *,
    progress: bool = False,
) -> list[FileChoice]:
    """The file of plan's choice at each planned size of ``request`` (its format, runtime,
    sizes, ``max_bytes`` and simulator options) on ``topology``, smallest size first
    (:func:`~optcoll.export.planned_programs.file_choice`; the files of a candidate
    schedule are written once for all sizes; each one's lower bound raised to the
    format's own, :func:`~optcoll.export.planned_programs.file_bound`, computed once).
    ``choices``: plan's at each size, if already planned
    (:func:`optcoll.export.planned.ranked_choices`); ``progress``: a tqdm bar over the
    sizes (simulating the files of the largest takes the longest).

    Raises
    ------
    ExportError
        A size at which no candidate of plan has a file the format holds.
    """
    sim = request_sim(request)
    if choices is None:
        sizes = sorted(set(request.sizes or SIZES))
        choices = planned_choices(
            topology, request.collective, sizes, root=request.root, overhead=sim.overhead,
            default_latency=sim.default_latency, slice_bytes=sim.slice_bytes,
            choose_slice=request.slice is None, every_candidate=True,
            orders=CARRIED_ORDERS[request.format],
        )  # fmt: skip
    cache: dict[tuple[Any, ...], Any] = {}
    own = file_bound(request, topology, sim)
    ordered: Iterable[PlannedChoice] = sorted(choices, key=lambda c: c.size)
    if progress:
        from tqdm import tqdm

        ordered = tqdm(ordered, desc=f"{request.format} files", unit="size", leave=False)
    return [
        file_choice(request, topology, choice, sim, written=cache, own=own) for choice in ordered
    ]


def planned_bands(
    request: ExportRequest,
    topology: Any,
    chosen: Sequence[FileChoice] | None = None,
    *,
    output: Any = None,
    same: Callable[[FileChoice, FileChoice], bool] | None = None,
) -> list[PlannedBand]:
    """The bands of plan's choices (module docstring) for ``request`` (its format, runtime,
    placement, sizes and simulator options) on ``topology``. ``chosen``: the file choice at
    each size, if already made (:func:`file_choices`); ``output``:
    maps ``(low, high, method)`` to the file a band is named after (default:
    ``STEM.LOW-HIGHB.SUFFIX`` beside ``request.output``, or ``request.output`` itself for
    a single band); ``same``: whether two consecutive sizes' choices may share a band
    beyond writing the same files (``plan --export`` also writes each tree band's schedule
    with plan's order and slices).

    Raises
    ------
    ExportError
        A size at which no candidate of plan has a file the format holds.
    """
    runs: list[list[FileChoice]] = []
    for best in file_choices(request, topology) if chosen is None else chosen:
        if request.max_bytes is not None and runs and best.size > request.max_bytes:
            break
        last = runs[-1][-1] if runs else None
        if (
            last is not None
            and (last.ranked.method, last.texts) == (best.ranked.method, best.texts)
            and (same is None or same(last, best))
        ):
            runs[-1].append(best)
        else:
            runs.append([best])
    base = Path(request.output)
    bands = []
    for i, run in enumerate(runs):
        low = 0 if i == 0 else run[0].size
        high = runs[i + 1][0].size - 1 if i + 1 < len(runs) else None
        if request.max_bytes is not None:
            high = request.max_bytes if high is None else min(high, request.max_bytes)
        ranked = run[0].ranked
        if output is not None:
            path = output(low, high, ranked.method)
        elif len(runs) == 1:
            path = base
        else:
            path = base.with_name(f"{base.stem}.{band_name(low, high)}{base.suffix}")
        files = program_texts(
            request, topology, ranked, output=path, low=low, high=high,
            interleave=run[0].interleave, split=run[0].split, unit=run[0].unit,
            spread=run[0].spread, pieces=run[0].pieces, layout=run[0].layout,
        )  # fmt: skip
        check_texts(request, topology, files)
        bands.append(PlannedBand(low, high, ranked.method, tuple(files), tuple(run)))
    return bands


def export_planned_bands(request: ExportRequest) -> ExportReport:
    """``export --bands --format msccl|mscclpp`` from a topology: write the files of
    :func:`planned_bands`, each checked by its format's checker, and report every band
    with plan's time and the file's at each planned size in it.

    Raises
    ------
    ExportError
        Options a planned band does not take (a schedule file, ``-k``, ``--exact``,
        ``--groups``, ``--channels``, an all-to-all), or a size no file can serve.
    """
    fmt = request.format
    require_suffix(request.output, (".xml",) if fmt == "msccl" else (".json",),
                   "an MSCCL program" if fmt == "msccl" else "an MSCCL++ execution plan")  # fmt: skip
    refuse_unplanned(request, "--bands writes what plan chose in each band")
    topology = load_topology(request.source, **request.reader_keywords())
    bands = planned_bands(request, topology)
    inputs = input_files(request.source)
    files = [f for band in bands for f in band.files]
    for path, _, _ in files:
        check_output(path, force=request.force, inputs=inputs)
    for path, text, _ in files:
        write_output(path, text, force=request.force, inputs=inputs)
    entries, lines = [], []
    for band in bands:
        top = "no limit" if band.high is None else f"{band.high} B"
        at: list[dict[str, Any]] = [
            {
                "bytes": one.size,
                "planned": one.chosen,
                "plan_time_us": round(one.plan_us, 4),
                "candidate_plan_time_us": round(one.ranked.time_us, 4),
                "file_time_us": round(one.times[0], 4),
                "gap": round(one.times[0] / one.plan_us - 1, 6),
                "slice_bytes": one.ranked.slice_bytes,
                "priority": one.ranked.priority,
            }
            for one in band.sizes
        ]
        for path, _, placement in band.files:
            entries.append(
                {
                    "path": str(path),
                    "placement": placement,
                    "method": band.method,
                    "k": getattr(band.sizes[0].ranked.schedule, "k", None),
                    "steps": getattr(band.sizes[0].ranked.schedule, "num_steps", None),
                    "min_bytes": band.low,
                    "max_bytes": band.high,
                    "checked": True,
                    "sizes": at,
                }
            )
            lines.append(
                f"wrote {path}: {placement}, {band.method}, {band.low} B .. {top}; checked"
            )
        for one in at:
            chose = "" if one["planned"] == band.method else f" (plan chose {one['planned']})"
            lines.append(
                f"  at {size_text(one['bytes'])}: plan {one['plan_time_us']:.4f} µs{chose}, "
                f"this file simulated {one['file_time_us']:.4f} µs ({one['gap']:+.1%})"
            )
    lines.append(f"  not carried by {fmt}: {not_carried(fmt, request.runtime)}")
    refused = sorted({why for band in bands for one in band.sizes for why in one.refused})
    warnings = [f"not written ({why})" for why in refused]
    data = {"format": fmt, "bands": True, "files": entries, "not_carried": not_carried(fmt, request.runtime),
            "warnings": warnings}  # fmt: skip
    return ExportReport([path for path, _, _ in files], data, lines, warnings)
