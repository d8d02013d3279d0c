"""``optcoll export`` as a library: every file the command writes, and its report.

:func:`export_files` takes an :class:`~optcoll.export.request.ExportRequest` (the command's
options by name) and writes MSCCL XML programs (one per size band with ``bands``, one per
process group with ``groups``), a schedule file (``format="json"``), MSCCL++ execution plans
(:mod:`optcoll.export.mscclpp_workflow`) or Chakra traces
(:mod:`optcoll.export.chakra_workflow`). It returns an :class:`ExportReport`: the files
written, the report ``optcoll export --json`` prints, the lines the command prints and its
warnings. The command only parses its arguments into the request and prints the report.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.core.output import check_output, output_transaction, require_suffix, write_output
from optcoll.core.rational import fraction_text
from optcoll.exceptions import ExportError
from optcoll.export import export_text
from optcoll.export.chakra_workflow import export_chakra
from optcoll.export.msccl import msccl_program, placement_files
from optcoll.export.mscclpp_workflow import export_mscclpp
from optcoll.export.planned_bands import export_planned_bands
from optcoll.export.planned_programs import export_planned_program
from optcoll.export.report import ExportReport
from optcoll.export.request import (
    Chosen,
    ExportRequest,
    chosen_schedules,
    groups_schedule,
    schedule_path,
)
from optcoll.export.runtimes import runtime_profile
from optcoll.io import TOPOLOGY_SUFFIXES
from optcoll.io.document import document_text

__all__ = ["EXPORT_FORMATS", "ExportReport", "ExportRequest", "export_files"]

#: The formats of ``optcoll export --format``.
EXPORT_FORMATS = ("msccl", "json", "chakra", "mscclpp")

_ELEMENT_BYTES = 4  # sizes served are reported for 4-byte elements (float32)


def export_files(request: ExportRequest) -> ExportReport:
    """Write the files ``optcoll export`` writes for ``request`` and report them.

    Every schedule is verified first (unless ``request.unchecked``) and every file checked
    before any is written; an existing file is replaced only with ``request.force``. The
    files appear together or not at all (:func:`optcoll.core.output.output_transaction`):
    a failure while writing one leaves none of them.

    Raises
    ------
    ExportError
        Options that do not go together, or a schedule that fails verification (nothing
        is written).
    OutputError
        A file exists (without ``force``) or cannot be written.

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> report = export_files(ExportRequest("ring:4", os.path.join(folder, "ag.xml")))
    >>> [p.name for p in report.files], report.data["files"][0]["time_factor"]
    (['ag.xml'], '3/200')
    """
    with output_transaction():
        return _export_files(request)


def _export_files(request: ExportRequest) -> ExportReport:
    if request.placement is not None and request.format not in ("msccl", "mscclpp"):
        raise ExportError(
            "--placement chooses an MSCCL or MSCCL++ program: it needs --format msccl or mscclpp"
        )
    if request.format == "chakra" and request.size is None and not request.bands:
        raise ExportError("--format chakra needs --size (the traces are for one message size) "
                          "or --bands --sizes (one trace set per size)")  # fmt: skip
    if request.format == "json" and request.size is not None:
        raise ExportError("--size writes plan's choice at that size: it needs --format chakra, "
                          "msccl or mscclpp")  # fmt: skip
    if (
        request.size is None
        and not request.bands
        and request.format != "chakra"
        and any(value is not None for value in (request.overhead, request.latency, request.slice))
    ):
        raise ExportError("--overhead, --latency and --slice plan a size: they need --size, "
                          "--bands (or --format chakra)")  # fmt: skip
    if request.format != "chakra" and request.switch_model is not None:
        raise ExportError("--switch-model plans Chakra traces for ASTRA-sim's switches: it "
                          "needs --format chakra")  # fmt: skip
    if request.format == "chakra":
        return export_chakra(request)
    if request.size is not None:  # plan's choice at the size, as MSCCL XML or MSCCL++
        return export_planned_program(request)
    if request.bands and request.format in ("msccl", "mscclpp"):  # plan's choice per band
        if request.exact or request.k is not None:
            given = "--exact" if request.exact else "-k"
            raise ExportError(f"--bands writes plan's choice in each band: drop {given}")
        return export_planned_bands(request)
    if request.format == "mscclpp":
        return export_mscclpp(request)
    if request.format == "msccl":
        require_suffix(request.output, (".xml",), "an MSCCL program")
    else:
        require_suffix(request.output, TOPOLOGY_SUFFIXES, "a schedule file")
    if request.root is not None and request.collective not in ("broadcast", "reduce"):
        raise ExportError(
            f"--root applies to broadcast and reduce; --collective {request.collective} has no single root"
        )
    if request.topology is not None and schedule_path(request.source) is None:
        raise ExportError(
            f"--topology names the topology of a schedule file, but {request.source} is a "
            "topology: drop --topology"
        )
    profile = runtime_profile(request.runtime)
    if request.max_threadblocks is not None:
        if request.max_threadblocks < 1:
            raise ExportError(f"--max-threadblocks must be >= 1, got {request.max_threadblocks}")
        profile = replace(profile, max_threadblocks=request.max_threadblocks)
    if request.exact and request.k is not None:
        raise ExportError("--exact keeps the optimal k; it cannot be combined with -k")
    if request.bands:
        raise ExportError(
            f"--bands plans MSCCL XML, MSCCL++ or Chakra size bands; --format {request.format} "
            "has none: drop --bands or use --format msccl, mscclpp or chakra"
        )
    if request.sizes and not request.bands:
        raise ExportError("--sizes plans the size bands: it needs --bands")

    grouped = groups_schedule(request)
    if grouped is not None:
        files = _plan_groups(request, profile, *grouped)
        _write(request, files)
        return _report_groups(request, profile, grouped[1], files)
    topology, chosen, tried = chosen_schedules(request)
    files = _plan(request, profile, chosen)

    _write(request, files)
    return _report(request, profile, chosen, files, tried)


def _write(request: ExportRequest, files: list[tuple[Path, str, dict[str, Any]]]) -> None:
    """Check every file, then write them (none if any is refused)."""
    inputs = request.input_paths()
    for path, *_ in files:
        check_output(path, force=request.force, inputs=inputs)
    for path, text, _ in files:
        write_output(path, text, force=request.force, inputs=inputs)


def _plan_groups(
    request: ExportRequest, profile: Any, topology: Any, schedule: Any, optimum: Any
) -> list[tuple[Path, str, dict[str, Any]]]:
    """One MSCCL program per group (per communicator) and a manifest, or one JSON file.

    Group i's program is ``STEM.group<i>.xml`` (:func:`~optcoll.export.msccl.placement_files`
    names the in-place one beside it with ``--placement both``); rank r of a program is the
    group's r-th member (its rank-order comment and the manifest ``STEM.groups.json``
    list them).
    """

    base = Path(request.output)
    factor = schedule.time_factor
    summary = {
        "topology": topology.name,
        "collective": schedule.collective,
        "relay": schedule.relay,
        "time_factor": None if factor is None else fraction_text(factor),
        "optimum": None if optimum is None else fraction_text(optimum),
    }
    if request.format == "json":
        return [(base, document_text(schedule.to_dict(), base.suffix), {"path": str(base)})]
    files: list[tuple[Path, str, dict[str, Any]]] = []
    groups = []
    for index, part in enumerate(schedule.groups):
        entries = []
        group_file = base.with_name(f"{base.stem}.group{index}{base.suffix}")
        for placement, path in placement_files(
            group_file, schedule.collective, profile, request.placement
        ):
            program = msccl_program(
                part,
                runtime=profile,
                channels=request.channels,
                placement=placement,
                name=f"{schedule.collective} group {index} of {len(schedule.groups)} on "
                f"{topology.name}",
                max_bytes=request.max_bytes,
            )
            entry = {
                "path": str(path),
                "group": index,
                "placement": placement,
                "nchunksperloop": program.nchunksperloop,
                "nchannels": program.nchannels,
                "threadblocks_per_gpu": program.max_threadblocks,
            }
            entries.append(entry)
            files.append((path, program.text, entry))
        groups.append(
            {
                "members": list(part.compute_nodes),
                **({} if part.root is None else {"root": part.root}),
                "k": part.k,
                "files": [entry["path"] for entry in entries],
            }
        )
    manifest = base.with_name(f"{base.stem}.groups.json")
    text = {
        "format": "optcoll-msccl-groups",
        **summary,
        "runtime": profile.name,
        "ranks": "rank r of a group's programs is its r-th member",
        "channels": (
            f"{request.channels} channel(s) per connection in every program; the groups' capacity "
            "shares are carried by their trees (each link's chunks), not by channels"
        ),
        "groups": groups,
    }
    files.append((manifest, document_text(text), {"path": str(manifest)}))
    return files


def _report_groups(
    request: ExportRequest,
    profile: Any,
    schedule: Any,
    files: list[tuple[Path, str, dict[str, Any]]],
) -> ExportReport:
    factor = schedule.time_factor
    shown = "unverified" if request.unchecked else f"time factor {fraction_text(factor)}"
    data = {
        "collective": schedule.collective,
        "topology": schedule.topology,
        "relay": schedule.relay,
        "num_groups": len(schedule.groups),
        "format": request.format,
        "runtime": profile.name if request.format == "msccl" else None,
        "verified": not request.unchecked,
        "time_factor": None if request.unchecked else fraction_text(factor),
        "files": [entry for _, _, entry in files],
    }
    lines: list[str] = []
    lines.append(
        f"{schedule.collective} of {len(schedule.groups)} groups on {schedule.topology} "
        f"(relay {schedule.relay}), all at once: {shown}"
    )
    for _, _, entry in files:
        if "group" in entry:
            lines.append(
                f"wrote {entry['path']}: group {entry['group']}, {entry['placement']}, "
                f"nchunksperloop {entry['nchunksperloop']}, {entry['nchannels']} channel(s), "
                f"{entry['threadblocks_per_gpu']} thread blocks per GPU"
            )
        else:
            lines.append(f"wrote {entry['path']}")
    return ExportReport([path for path, _, _ in files], data, lines, [])


def _plan(
    request: ExportRequest,
    profile: Any,
    chosen: list[Chosen],
) -> list[tuple[Path, str, dict[str, Any]]]:
    """Every file to write: (path, text, report entry)."""

    base = Path(request.output)
    first = chosen[0].schedule
    if request.format == "json":
        if chosen[0].allgather is not None:
            raise ExportError(
                "this allreduce runs its reduce-scatter and allgather on different trees (the "
                "topology is not symmetric), which one schedule file cannot hold: export "
                "--collective reduce_scatter and --collective allgather as JSON instead"
            )
        entry = {"path": str(base), "k": first.k, **_factors(chosen[0]), **_rounding(first)}
        return [(base, export_text(first, "json"), entry)]
    choice = chosen[0]
    schedule = choice.schedule
    low, high = 0, request.max_bytes
    files = []
    for placement, path in placement_files(base, schedule.collective, profile, request.placement):
        program = msccl_program(
            schedule,
            runtime=profile,
            channels=request.channels,
            placement=placement,
            min_bytes=low,
            max_bytes=high,
            allgather=choice.allgather,
        )
        entry = {
            "path": str(path),
            "k": schedule.k,
            **_factors(choice),
            **_rounding(schedule),
            "placement": placement,
            "min_bytes": low,
            "max_bytes": high,
            "nchunksperloop": program.nchunksperloop,
            "nchannels": program.nchannels,
            "steps_per_threadblock": program.max_steps,
            "threadblocks_per_gpu": program.max_threadblocks,
            "peers_per_gpu": program.max_peers,
            "powers_of_two_from": _powers_of_two_from(program.nchunksperloop, low, high),
        }
        files.append((path, program.text, entry))
    return files


def _factors(choice: Chosen) -> dict[str, Any]:
    if choice.time_factor is None:
        return {"time_factor": None, "optimum": None, "ratio_to_optimum": None}
    ratio = None if not choice.optimum else choice.time_factor / choice.optimum
    return {
        "time_factor": fraction_text(choice.time_factor),
        "optimum": None if choice.optimum is None else fraction_text(choice.optimum),
        "ratio_to_optimum": None if ratio is None else fraction_text(ratio),
    }


def _rounding(schedule: Any) -> dict[str, Any]:
    """An all-to-all's ``rounding_bound``: the time factor its ``k`` is proved within
    (t* plus the rounding slack, :func:`optcoll.schedules.alltoall.alltoall_schedule`)."""
    bound = schedule.stats.get("rounding_bound") if schedule.collective == "alltoall" else None
    return {} if bound is None else {"rounding_bound": bound}


def _powers_of_two_from(nchunks: int, low: int, high: int | None) -> int | None:
    """The smallest power-of-two byte size (4-byte elements) the file serves, if any:
    every larger one up to ``high`` is served too."""
    if nchunks & (nchunks - 1):
        return None
    size = _ELEMENT_BYTES * nchunks
    while size < low:
        size *= 2
    return size if high is None or size <= high else None


def _sizes_warning(entry: dict[str, Any], collective: str, n: int) -> str:
    """Why a file serves no power-of-two size. For an allgather or reduce-scatter the
    element count is ``count * N``: with ``N`` not a power of two no total is a power of
    two, but per-rank counts (multiples of ``k``) may be."""
    nchunks, k = entry["nchunksperloop"], entry["k"]
    served = f"{entry['path']} serves only element counts that are multiples of {nchunks}"
    if n & (n - 1) == 0 or collective not in ("allgather", "reduce_scatter") or nchunks != n * k:
        return f"{served}: no power-of-two size"
    per_rank = (
        f"per-rank counts that are powers of two from {k} elements are served"
        if k & (k - 1) == 0
        else f"per-rank counts must be multiples of {k}: no power of two"
    )
    return (
        f"{served} (count * N with N = {n}, not a power of two): no power-of-two total "
        f"size; {per_rank}"
    )


def _report(
    request: ExportRequest,
    profile: Any,
    chosen: list[Chosen],
    files: list[tuple[Path, str, dict[str, Any]]],
    tried: tuple,
) -> ExportReport:
    first = chosen[-1].schedule
    collective = "allreduce" if chosen[-1].allgather is not None else first.collective
    warnings = []
    if first.root is not None:
        warnings.append(
            f"the file is for root {first.root} (rank {first.compute_nodes.index(first.root)}); "
            f"{profile.name} does not check the root of a {first.collective}: load it only "
            "where every call uses this root"
        )
    for _, _, entry in files:
        if request.format == "msccl" and entry["powers_of_two_from"] is None:
            warnings.append(_sizes_warning(entry, collective, len(first.compute_nodes)))
    if (
        request.format == "msccl"
        and request.placement == "both"
        and collective in profile.never_in_place
    ):
        warnings.append(
            f"no in-place program: {profile.name} refuses in-place all-to-all calls "
            f"({profile.sources['never_in_place']})"
        )
    if profile.max_files is not None and len(files) > profile.max_files:
        warnings.append(
            f"{len(files)} files, but {profile.name} loads at most {profile.max_files} "
            f"({profile.sources['max_files']})"
        )
    if request.unchecked:
        warnings.append("not verified (--unchecked): no time factor is reported")
    data = {
        "collective": collective,
        "composed": chosen[-1].allgather is not None,
        "topology": first.topology,
        "format": request.format,
        "runtime": profile.name if request.format == "msccl" else None,
        "verified": not request.unchecked,
        "k_tried": [[k, fraction_text(r)] for k, r in tried],
        "rank_order": list(first.compute_nodes),
        "files": [entry for _, _, entry in files],
        "warnings": warnings,
    }
    lines: list[str] = []
    for _, _, entry in files:
        factor = (
            "unverified"
            if entry["time_factor"] is None
            else f"time factor {entry['time_factor']} (optimum {entry['optimum']}, "
            f"ratio {entry['ratio_to_optimum']} = "
            f"{float(Fraction(entry['ratio_to_optimum'])):.4f})"
        )
        how = " (reduce-scatter trees, then allgather trees)" if chosen[-1].allgather else ""
        bound = entry.get("rounding_bound")
        if bound is not None:
            factor += f", within its rounding bound {bound}"
        lines.append(f"wrote {entry['path']}: {collective}{how}, k = {entry['k']}, {factor}")
        if request.format != "msccl":
            continue
        top = "no limit" if entry["max_bytes"] is None else f"{entry['max_bytes']} B"
        powers = entry["powers_of_two_from"]
        lines.append(
            f"  {profile.name}, {entry['placement']}: nchunksperloop {entry['nchunksperloop']}, "
            f"{entry['nchannels']} channel(s), {entry['steps_per_threadblock']} steps per "
            f"thread block (limit {profile.max_steps}), {entry['threadblocks_per_gpu']} thread "
            f"blocks per GPU (limit {profile.max_threadblocks}), "
            f"{entry['peers_per_gpu']} peers per GPU"
        )
        lines.append(
            f"  sizes {entry['min_bytes']} B .. {top}, multiples of {entry['nchunksperloop']} "
            "elements"
            + ("" if powers is None else f": every power of two from {powers} B (4-byte elements)")
        )
    return ExportReport([path for path, _, _ in files], data, lines, warnings)
