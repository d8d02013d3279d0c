"""Design-space sweeps: one exact computation per point of a parameter grid, as a tidy table.

A sweep spec (a YAML/JSON file, or the same mapping in Python) names

``base``
    a built-in spec or a topology file, with ``{placeholders}``: ``"torus:{n}x{n}"``;
``grid``
    the values of each placeholder: ``{n: [3, 4, 5]}`` (every combination is a point,
    in the order the keys and values are given);
``quantities``
    what to compute per point, names of :data:`QUANTITIES`: ``[cut_ratio, algbw, k]``;
``scale`` (optional)
    perturbations of the topology: a list of ``{links: TEXT, factor: NUMBER}``, each
    multiplying the bandwidth of every link with ``TEXT`` in its source or destination id
    (placeholders allowed: ``{links: nic, factor: "{nic_speed}"}``);
``plan`` (needed by the ``plan_*`` quantities)
    the message sizes and collective of :func:`optcoll.sim.size_plan.plan`:
    ``{sizes: [1K, 1M, 1G], collective: allreduce}`` (``collective`` defaults to
    ``allgather``); each ``plan_*`` quantity gets one column per size, ``NAME@SIZE``
    (``plan_ratio@1M``);
``plot`` (optional)
    the column ``optcoll sweep --plot`` draws (default: the first numeric one).

The table has one row per point: a column per grid key, ``topology`` (the resolved
spec), a column per quantity (exact values as ``"p/q"`` strings, ``algbw`` a float
rounded to 3 decimals), then ``error`` (empty, or why the point failed) and ``key``.

Every point is keyed by a content hash of its resolved topology text, the topology's
content (:attr:`Topology.content_hash`), the columns, the plan's collective and the
optcoll version: a
rerun with ``resume`` reuses every finished point of the output (and of the journal an
interrupted run leaves beside it) and computes only the rest.

Examples
--------
>>> spec = parse_sweep_spec({"base": "ring:{n}", "grid": {"n": [3, 4]},
...                          "quantities": ["cut_ratio", "algbw", "k"]})
>>> [point.topology for point in sweep_points(spec)]
['ring:3', 'ring:4']
>>> rows = run_sweep(spec, workers=1)
>>> [(row["n"], row["cut_ratio"], row["algbw"], row["k"]) for row in rows]
[(3, '1/100', 300.0, 1), (4, '3/200', 266.667, 2)]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.bounds.cut_ratio import optimal_cut_ratio_core
from optcoll.core.arguments import count_argument, flag_argument, instance_argument, path_argument
from optcoll.core.limits import MAX_TRIALS
from optcoll.core.output import check_output, exists, require_suffix, write_output
from optcoll.core.rational import WrittenNumber, exact_number, fraction_text, parse_fraction
from optcoll.core.schedule import canonical_collective
from optcoll.core.sizes import parse_size, size_text
from optcoll.core.topology import Link, Topology
from optcoll.exceptions import BandwidthError, OptCollError, OutputError, ScheduleError
from optcoll.io import load_topology, read_document
from optcoll.schedules.alltoall import alltoall_bound_core
from optcoll.schedules.packing import pack_arborescences_core
from optcoll.sim.size_plan import plan
from optcoll.studies.engines import TaskError, run_tasks
from optcoll.topologies import is_spec

__all__ = [
    "QUANTITIES",
    "TABLE_SUFFIXES",
    "SweepSpec",
    "SweepSpecError",
    "Point",
    "parse_sweep_spec",
    "load_sweep_spec",
    "sweep_points",
    "run_sweep",
    "sweep_table",
    "write_sweep",
    "read_finished",
    "journal_path",
    "metadata_path",
    "plot_values",
    "polars",
]

#: Output suffixes of a sweep table.
TABLE_SUFFIXES = (".csv", ".parquet")

#: The spec's keys.
SPEC_KEYS = ("base", "grid", "quantities", "scale", "plan", "plot")

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Columns after the quantities.
_TRAILING = ("error", "key")
#: Quantities whose values are words, not numbers (``--plot`` cannot draw them).
_WORDS = ("cut_description", "plan_method")


class SweepSpecError(OptCollError):
    """A sweep spec is malformed: the message names the key at fault."""


@dataclass(frozen=True)
class _Quantity:
    """A quantity of a point: its column type and how it is computed."""

    kind: str  # "text", "float" or "int"
    needs: str  # "bound" (from the cut ratio), "topology" or "plan" (a SizePlan per size)
    compute: Callable[[Any], Any]


def _alltoall_optimum(topology: Topology) -> str:

    return fraction_text(alltoall_bound_core(topology, None).time_factor)


def _time_factor_k1(topology: Topology) -> str:

    schedule = pack_arborescences_core(topology, k=1, shape=False)
    assert schedule.time_factor is not None, "a packed schedule knows its time factor"
    return fraction_text(schedule.time_factor)


#: Every quantity a sweep computes: name -> column type and computation. ``cut_ratio``
#: (r*), ``U``, ``time_factor_k1`` (the best allgather with one chunk per root) and
#: ``alltoall`` (t*) are exact ``"p/q"`` strings. The ``plan_*`` quantities are the plan
#: at each of the spec's sizes: the fastest method, its simulated time and algbw, and its
#: certified gap to the lower bound (:class:`optcoll.sim.size_plan.SizePlan`).
QUANTITIES: dict[str, _Quantity] = {
    "cut_ratio": _Quantity("text", "bound", lambda b: fraction_text(b.ratio)),
    "algbw": _Quantity("float", "bound", lambda b: round(b.algbw, 3)),
    "k": _Quantity("int", "bound", lambda b: b.k),
    "U": _Quantity("text", "bound", lambda b: fraction_text(b.U)),
    "cut_description": _Quantity("text", "bound", lambda b: b.describe_cut()),
    "num_compute": _Quantity("int", "topology", lambda t: t.num_compute),
    "time_factor_k1": _Quantity("text", "topology", _time_factor_k1),
    "alltoall": _Quantity("text", "topology", _alltoall_optimum),
    "plan_method": _Quantity("text", "plan", lambda row: row.method),
    "plan_time_us": _Quantity("float", "plan", lambda row: round(row.time_us, 4)),
    "plan_algbw": _Quantity("float", "plan", lambda row: round(row.algbw, 3)),
    "plan_ratio": _Quantity("float", "plan", lambda row: round(row.ratio, 6)),
}


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep spec (see the module docstring)."""

    base: str
    grid: Mapping[str, tuple[Any, ...]]
    quantities: tuple[str, ...]
    scale: tuple[tuple[str, str], ...] = ()
    plot: str | None = None
    folder: Path = field(default=Path("."), compare=False)
    source: Mapping[str, Any] = field(default_factory=dict, compare=False)
    plan_sizes: tuple[int, ...] = ()
    plan_collective: str = "allgather"

    @property
    def columns(self) -> tuple[str, ...]:
        """The quantity columns, in table order (``plan_*`` ones once per planned size).

        Examples
        --------
        >>> spec = parse_sweep_spec({"base": "ring:4", "quantities": ["k", "plan_ratio"],
        ...                          "plan": {"sizes": ["1K", 1048576]}})
        >>> spec.columns
        ('k', 'plan_ratio@1K', 'plan_ratio@1M')
        """

        columns: list[str] = []
        for name in self.quantities:
            if QUANTITIES[name].needs == "plan":
                columns += [_column(name, size) for size in self.plan_sizes]
            else:
                columns.append(name)
        return tuple(columns)


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its grid values, resolved topology text, topology and key."""

    params: Mapping[str, Any]
    topology: str
    built: Topology = field(repr=False)
    key: str


def _fail(message: str) -> SweepSpecError:
    return SweepSpecError(message)


def _value_text(value: Any) -> str:
    """How a grid value is written into a placeholder."""
    if isinstance(value, WrittenNumber):
        return value.text
    return str(value)


def parse_sweep_spec(
    data: Any, *, folder: str | Path = ".", where: str = "sweep spec"
) -> SweepSpec:
    """Check a sweep spec mapping and return it as a :class:`SweepSpec`.

    Parameters
    ----------
    data : mapping
        The spec (as read from its file).
    folder : path
        Relative topology file names in ``base`` are read from this folder.
    where : str
        How error messages name the spec (its file name).

    Raises
    ------
    SweepSpecError
        Naming the key at fault and what would be valid.

    Examples
    --------
    >>> parse_sweep_spec({"base": "ring:{n}", "grid": {"m": [3]}, "quantities": ["k"]})
    Traceback (most recent call last):
    ...
    optcoll.studies.sweep.SweepSpecError: sweep spec: base has placeholder {n} but grid has no key 'n'
    """
    if not isinstance(data, Mapping):
        raise _fail(f"{where}: a sweep spec is a mapping with keys {', '.join(SPEC_KEYS)}")
    unknown = [key for key in data if key not in SPEC_KEYS]
    if unknown:
        raise _fail(f"{where}: unknown key {unknown[0]!r}; valid keys are {', '.join(SPEC_KEYS)}")
    for key in ("base", "quantities"):
        if key not in data:
            raise _fail(f"{where}: the key {key!r} is missing")
    base = data["base"]
    if not isinstance(base, str) or not base.strip():
        raise _fail(f"{where}: base must be a topology spec or file name, got {base!r}")
    grid_data = data.get("grid", {})
    if grid_data is None:
        grid_data = {}
    if not isinstance(grid_data, Mapping):
        raise _fail(f"{where}: grid must map each placeholder to a list of values")
    grid: dict[str, tuple[Any, ...]] = {}
    for name, values in grid_data.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise _fail(f"{where}: grid key {name!r} must be a name (letters, digits, _)")
        if name in {"topology", *QUANTITIES, *_TRAILING}:
            raise _fail(f"{where}: grid key {name!r} is also a column name; rename it")
        if not isinstance(values, list) or not values:
            raise _fail(f"{where}: grid.{name} must be a non-empty list of values")
        for value in values:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise _fail(f"{where}: grid.{name} holds {value!r}; values are numbers or strings")
        if len({_value_text(v) for v in values}) != len(values):
            raise _fail(f"{where}: grid.{name} repeats a value")
        grid[name] = tuple(values)
    points = math.prod(len(values) for values in grid.values())
    if points > MAX_TRIALS:  # each point solves a topology, as a resilience trial does
        raise _fail(
            f"{where}: the grid has {points} points; a sweep computes at most {MAX_TRIALS} "
            "(optcoll.core.limits, the limit of resilience trials)"
        )
    quantities = data["quantities"]
    if isinstance(quantities, str):
        quantities = [quantities]
    if not isinstance(quantities, list) or not quantities:
        raise _fail(f"{where}: quantities must be a non-empty list of {', '.join(QUANTITIES)}")
    for name in quantities:
        if name not in QUANTITIES:
            raise _fail(
                f"{where}: unknown quantity {name!r}; valid quantities are {', '.join(QUANTITIES)}"
            )
    if len(set(quantities)) != len(quantities):
        raise _fail(f"{where}: quantities repeat a name")
    scale = []
    scale_data = data.get("scale", [])
    if not isinstance(scale_data, list):
        raise _fail(f"{where}: scale must be a list of {{links: TEXT, factor: NUMBER}}")
    for i, entry in enumerate(scale_data):
        if not isinstance(entry, Mapping) or set(entry) != {"links", "factor"}:
            raise _fail(f"{where}: scale[{i}] must be a mapping with exactly links and factor")
        links, factor = entry["links"], entry["factor"]
        if not isinstance(links, str) or not links:
            raise _fail(f"{where}: scale[{i}].links must be a non-empty text")
        if isinstance(factor, bool) or not isinstance(factor, int | float | str):
            raise _fail(f"{where}: scale[{i}].factor must be a number or a placeholder")
        scale.append((links, _value_text(factor)))
    used = set()
    for text, what in [(base, "base")] + [
        (part, f"scale[{i}]") for i, pair in enumerate(scale) for part in pair
    ]:
        for name in _PLACEHOLDER.findall(text):
            if name not in grid:
                raise _fail(
                    f"{where}: {what} has placeholder {{{name}}} but grid has no key {name!r}"
                )
            used.add(name)
    for name in grid:
        if name not in used:
            raise _fail(f"{where}: grid key {name!r} is used by no placeholder of base or scale")
    sizes, collective = _plan_options(data.get("plan"), quantities, where)
    spec = SweepSpec(
        base,
        grid,
        tuple(quantities),
        tuple(scale),
        None,
        Path(folder),
        dict(data),
        sizes,
        collective,
    )
    plot = data.get("plot")
    if plot is not None and plot not in spec.columns:
        raise _fail(f"{where}: plot must be one of the columns ({', '.join(spec.columns)})")
    return replace(spec, plot=plot)


def _plan_options(data: Any, quantities: Sequence[str], where: str) -> tuple[tuple[int, ...], str]:
    """The spec's ``plan`` key as (sizes in bytes, canonical collective)."""

    wanted = [q for q in quantities if QUANTITIES[q].needs == "plan"]
    if data is None:
        if wanted:
            raise _fail(f"{where}: quantity {wanted[0]!r} needs a plan key: {{sizes: [1K, 1M]}}")
        return (), "allgather"
    if not wanted:
        raise _fail(f"{where}: plan is used only by the plan_* quantities; none is asked for")
    if not isinstance(data, Mapping) or "sizes" not in data or set(data) - {"sizes", "collective"}:
        raise _fail(f"{where}: plan must be a mapping with sizes (and optionally collective)")
    values = data["sizes"]
    if not isinstance(values, list) or not values:
        raise _fail(f"{where}: plan.sizes must be a non-empty list of sizes (1024, 64K, 1M, ...)")
    sizes = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise _fail(f"{where}: plan.sizes holds {value!r}; a size is bytes or 64K, 1M, 1G")
        try:
            sizes.append(parse_size(str(value)))
        except ValueError as err:
            raise _fail(f"{where}: plan.sizes: {err}") from None
    if len(set(sizes)) != len(sizes):
        raise _fail(f"{where}: plan.sizes repeats a size")
    try:
        collective = canonical_collective(data.get("collective", "allgather"))
    except ScheduleError as err:
        raise _fail(f"{where}: plan.collective: {err}") from None
    return tuple(sizes), collective


def load_sweep_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep spec file (YAML or JSON).

    Raises
    ------
    FileFormatError
        The file is missing or not valid YAML/JSON.
    SweepSpecError
        The spec is malformed.
    """

    path = Path(path)
    return parse_sweep_spec(read_document(path), folder=path.parent, where=str(path))


def _substitute(text: str, params: Mapping[str, Any]) -> str:
    return _PLACEHOLDER.sub(lambda match: _value_text(params[match.group(1)]), text)


def _point_topology(spec: SweepSpec, text: str, params: Mapping[str, Any]) -> Topology:

    source: str | Path = text
    if not is_spec(text) and not Path(text).is_absolute():
        source = spec.folder / text
    topology = load_topology(source)
    for links, factor_text in spec.scale:
        needle = _substitute(links, params)
        try:
            factor = parse_fraction(_substitute(factor_text, params))
        except ValueError as err:
            raise BandwidthError(f"scale factor {factor_text!r}: {err}") from None
        topology = topology.scale_links(_touching(needle), factor, name=topology.name)
    return topology


def _touching(needle: str) -> Callable[[Link], bool]:
    """A link selector: ``needle`` is part of the link's source or destination id."""
    return lambda link: needle in link.src or needle in link.dst


def polars() -> Any:
    """The polars module, which writes and reads sweep tables.

    Raises
    ------
    OptCollError
        polars is not installed (it comes with the ``sweep`` extra).
    """
    try:
        import polars
    except ImportError:
        raise OptCollError(
            "sweep tables are written with polars: pip install 'optcoll[sweep]'"
        ) from None
    return polars


def _point_key(text: str, topology: Topology, spec: SweepSpec) -> str:
    from optcoll import __version__

    content = [text, topology.content_hash, list(spec.columns), __version__]
    if spec.plan_sizes:
        content.append(spec.plan_collective)
    return hashlib.sha256(json.dumps(content).encode("utf-8")).hexdigest()[:16]


def sweep_points(spec: SweepSpec) -> list[Point]:
    """Every point of the spec's grid, with its topology built and its key.

    Raises
    ------
    OptCollError
        A point's topology cannot be built (the message names the point).
    """
    names = list(spec.grid)
    points = []
    for values in itertools.product(*(spec.grid[name] for name in names)):
        params = dict(zip(names, values, strict=True))
        text = _substitute(spec.base, params)
        try:
            topology = _point_topology(spec, text, params)
        except OptCollError as err:
            where = ", ".join(f"{k}={_value_text(v)}" for k, v in params.items())
            raise type(err)(f"sweep point {where or text}: {err}") from None
        points.append(Point(params, text, topology, _point_key(text, topology, spec)))
    return points


def evaluate_point(task: tuple[dict[str, Any], SweepSpec]) -> dict[str, Any]:
    """The quantities of one point (runs on a worker): ``{column: value}``.

    ``task`` is the topology's file-format dictionary (:meth:`Topology.to_dict`, which
    pickles where a topology does not) and the spec (its quantities and plan options).
    """

    data, spec = task
    topology = Topology.from_dict(data)
    bound = None
    rows = None
    values = {}
    for name in spec.quantities:
        quantity = QUANTITIES[name]
        if quantity.needs == "bound":
            if bound is None:
                bound = optimal_cut_ratio_core(topology)
            values[name] = quantity.compute(bound)
        elif quantity.needs == "plan":
            if rows is None:
                rows = plan(topology, spec.plan_collective, spec.plan_sizes)
            for row in rows:
                values[_column(name, row.size)] = quantity.compute(row)
        else:
            values[name] = quantity.compute(topology)
    return values


def journal_path(output: str | Path) -> Path:
    """The journal of finished points an unfinished sweep keeps beside ``output``.

    Examples
    --------
    >>> journal_path("out/results.csv").as_posix()
    'out/results.csv.partial.jsonl'
    """
    path = Path(output)
    return path.with_name(path.name + ".partial.jsonl")


def metadata_path(output: str | Path) -> Path:
    """The file recording a sweep's spec and versions beside its table ``output``.

    Examples
    --------
    >>> metadata_path("results.parquet").as_posix()
    'results.parquet.meta.json'
    """
    path = Path(output)
    return path.with_name(path.name + ".meta.json")


def _column(quantity: str, size: int) -> str:
    """The column of a ``plan_*`` quantity at one size: ``plan_ratio@1M``."""

    return f"{quantity}@{size_text(size)}"


def _quantity(column: str) -> str:
    """The quantity a column holds (``plan_ratio@1M`` -> ``plan_ratio``)."""
    return column.partition("@")[0]


def _kind(column: str) -> str:
    """The type of a quantity column: ``"text"``, ``"float"`` or ``"int"``."""
    return QUANTITIES[_quantity(column)].kind


def _typed(column: str, value: Any) -> Any:
    """A quantity value read back from a table or journal, in its column type."""
    if value is None or value == "":
        return None
    kind = _kind(column)
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    return str(value)


def read_finished(output: str | Path, columns: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Finished points of an earlier run: ``{key: {column: value}}``.

    Read from the table ``output`` and the journal an interrupted run left beside it
    (:func:`journal_path`); points that failed (a non-empty ``error``) are not
    finished, and a journal's torn last line is ignored.

    Raises
    ------
    OutputError
        ``output`` exists but is not a sweep table of these quantity columns.
    """
    output = Path(output)
    finished: dict[str, dict[str, Any]] = {}
    if exists(output):
        pl = polars()

        try:
            if output.suffix.lower() == ".parquet":
                frame = pl.read_parquet(output).cast(pl.String)
            else:
                frame = pl.read_csv(output, infer_schema_length=0)  # every column as text
        except Exception as err:  # polars raises many types for a damaged file
            raise OutputError(f"{output}: cannot be read as a sweep table ({err})") from None
        missing = [c for c in ("key", "error", *columns) if c not in frame.columns]
        if missing:
            raise OutputError(
                f"{output}: not a sweep table of quantities {', '.join(columns)} "
                f"(no column {missing[0]!r}); choose another output or pass --force"
            )
        for row in frame.iter_rows(named=True):
            if not row["error"]:
                finished[row["key"]] = {c: _typed(c, row[c]) for c in columns}
    journal = journal_path(output)
    if exists(journal):
        for line in journal.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # the line being written when the run stopped
            if isinstance(entry, dict) and not entry.get("error") and "key" in entry:
                values = entry.get("values", {})
                if all(c in values for c in columns):
                    finished[entry["key"]] = {c: _typed(c, values[c]) for c in columns}
    return finished


def run_sweep(
    spec: SweepSpec,
    *,
    output: str | Path | None = None,
    resume: bool = False,
    force: bool = False,
    workers: int | None = None,
    dask: Any = None,
    progress: bool = False,
    inputs: Iterable[str | Path] = (),
) -> list[dict[str, Any]]:
    """Compute every point of ``spec``; the rows of the table, in grid order.

    Parameters
    ----------
    spec : SweepSpec
    output : path, optional
        Write the table here (``.csv`` or ``.parquet``, by :func:`write_sweep`) and
        its metadata beside it; while the sweep runs, every finished point is appended
        to a journal beside it (:func:`journal_path`), removed once the table is written.
    resume : bool
        Reuse the finished points of ``output`` and of its journal (points that
        failed are computed again), then rewrite ``output`` with all points. Refused
        when a finished point is not a point of ``spec`` (an edited grid) or the table
        lacks one of its quantities: nothing finished is ever dropped.
    force : bool
        Without ``resume``: overwrite ``output`` (and discard a journal) instead of
        refusing. With ``resume`` it changes nothing.
    workers, dask, progress
        The engine (:func:`optcoll.studies.engines.run_tasks`).
    inputs : paths
        Files the caller read (the spec file): the table, its metadata and its
        journal are never written over them.

    Raises
    ------
    ArgumentError
        An argument of the wrong type (the message names it).
    OutputError
        ``output`` or its journal exists without ``resume`` or ``force``, or ``resume``
        without ``output``.
    """
    spec = instance_argument(spec, SweepSpec, "spec", " (parse_sweep_spec makes one)")
    flag_argument(resume, "resume")
    flag_argument(force, "force")
    flag_argument(progress, "progress")
    if output is not None:
        output = path_argument(output, "output")
    if workers is not None:
        workers = count_argument(workers, "workers")
    if resume and output is None:
        raise OutputError("--resume continues the sweep written to an output: give -o OUT")
    points = sweep_points(spec)
    finished: dict[str, dict[str, Any]] = {}
    journal = None
    if output is not None:
        output = require_suffix(output, TABLE_SUFFIXES, "a sweep table")
        journal = journal_path(output)
        for path in (output, metadata_path(output), journal):
            check_output(path, force=True, inputs=inputs)
        if journal.is_symlink():
            raise OutputError(
                f"{journal} is a symbolic link; the sweep journal is appended to only as a "
                "regular file: remove the link"
            )
        if resume:
            finished = read_finished(output, spec.columns)
            _check_kept(output, finished, {p.key for p in points})
        else:
            if exists(journal) and not force:
                raise OutputError(
                    f"{journal} holds the finished points of an interrupted sweep; pass "
                    "--resume to continue it or --force to start over"
                )
            for path in (output, metadata_path(output)):
                if exists(path) and not force:
                    raise OutputError(
                        f"{path} exists; pass --resume to reuse its finished points or "
                        "--force to start over"
                    )
                check_output(path, force=True)
            if exists(journal):
                journal.unlink()
    results: dict[str, tuple[dict[str, Any], str]] = {
        key: (values, "") for key, values in finished.items()
    }
    todo = [p for p in points if p.key not in results]
    todo = list({p.key: p for p in todo}.values())  # equal points are computed once
    tasks = [(p.built.to_dict(), spec) for p in todo]
    with _Journal(journal) as log:
        for index, outcome in run_tasks(
            evaluate_point, tasks, workers=workers, dask=dask, progress=progress
        ):
            key = todo[index].key
            if isinstance(outcome, TaskError):
                results[key] = ({}, outcome.message)
            else:
                results[key] = (outcome, "")
            log.add(key, *results[key])
    rows = []
    for point in points:
        values, error = results[point.key]
        row: dict[str, Any] = dict(point.params)
        row["topology"] = point.topology
        row.update({c: values.get(c) for c in spec.columns})
        row.update({"error": error, "key": point.key})
        rows.append(row)
    if output is not None:
        write_sweep(rows, spec, output, force=True, inputs=inputs)
        if journal is not None and exists(journal):
            journal.unlink()
    return rows


def _check_kept(output: Path, finished: Mapping[str, Any], keys: set[str]) -> None:
    """Refuse to resume when a finished point is not a point of the spec (it would be lost)."""
    lost = [key for key in finished if key not in keys]
    if lost:
        raise OutputError(
            f"{output} (or its journal) holds {len(lost)} finished point(s) this spec no "
            f"longer has (e.g. {lost[0]}); --resume would drop them: restore the spec, or "
            "write to a new -o OUT"
        )


class _Journal:
    """Appends each finished point to the journal file, one flushed JSON line each
    (the file is made at the first point)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.stream: Any = None

    def __enter__(self) -> _Journal:
        return self

    def add(self, key: str, values: Mapping[str, Any], error: str) -> None:
        if self.path is None:
            return
        if self.stream is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
            try:
                handle = os.open(self.path, flags, 0o644)
            except OSError as err:
                raise OutputError(
                    f"{self.path}: cannot append to the sweep journal ({err.strerror}); it "
                    "must be a regular file, not a symbolic link"
                ) from None
            self.stream = os.fdopen(handle, "a", encoding="utf-8")
        entry = {"key": key, "values": dict(values), "error": error}
        self.stream.write(json.dumps(entry) + "\n")
        self.stream.flush()

    def __exit__(self, *exc: object) -> None:
        if self.stream is not None:
            self.stream.close()


def sweep_table(rows: Iterable[Mapping[str, Any]], spec: SweepSpec) -> Any:
    """The rows as a :class:`polars.DataFrame` with the columns in table order.

    Columns: the grid keys, ``topology``, the quantity columns (``algbw`` and the plan's
    times, algbw and ratios Float64, ``k`` and ``num_compute`` Int64, the others text),
    ``error``, ``key``.
    """
    pl = polars()
    kinds = {"text": pl.String, "float": pl.Float64, "int": pl.Int64}
    schema: dict[str, Any] = {}
    rows = list(rows)
    for name, values in spec.grid.items():
        if all(isinstance(v, int) for v in values):
            schema[name] = pl.Int64
        elif all(isinstance(v, int | float) for v in values):
            schema[name] = pl.Float64
        else:
            schema[name] = pl.String
    schema["topology"] = pl.String
    for name in spec.columns:
        schema[name] = kinds[_kind(name)]
    schema["error"] = pl.String
    schema["key"] = pl.String
    columns = {
        name: [
            (_value_text(row[name]) if kind == pl.String and row[name] is not None else row[name])
            for row in rows
        ]
        for name, kind in schema.items()
    }
    for name, kind in schema.items():
        if kind == pl.Float64:
            columns[name] = [None if v is None else float(v) for v in columns[name]]
    return pl.DataFrame(columns, schema=schema)


def _metadata(spec: SweepSpec, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    import platform

    from optcoll import __version__

    def plain(value: Any) -> Any:
        if isinstance(value, WrittenNumber):
            return value.text
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    versions = {
        "optcoll": __version__,
        "python": platform.python_version(),
        "polars": polars().__version__,
    }
    for engine in ("dask", "distributed"):  # recorded when this run used Dask
        if engine in sys.modules:
            versions[engine] = sys.modules[engine].__version__
    return {
        "spec": plain(spec.source),
        "points": len(rows),
        "failed": sum(1 for row in rows if row["error"]),
        "versions": versions,
    }


def write_sweep(
    rows: Sequence[Mapping[str, Any]],
    spec: SweepSpec,
    output: str | Path,
    *,
    force: bool = False,
    inputs: Iterable[str | Path] = (),
) -> Path:
    """Write the table (``.csv`` or ``.parquet``) and its metadata file, atomically.

    The metadata (:func:`metadata_path`) records the spec as given (seeds of random
    topologies are in it), the number of points and of failed points, and the versions
    of optcoll, Python, polars and (when this process used it) Dask.
    """
    import io

    output = require_suffix(output, TABLE_SUFFIXES, "a sweep table")
    frame = sweep_table(rows, spec)
    buffer = io.BytesIO()
    if output.suffix.lower() == ".parquet":
        frame.write_parquet(buffer)
    else:
        frame.write_csv(buffer)
    meta = json.dumps(_metadata(spec, rows), indent=2) + "\n"
    write_output(metadata_path(output), meta, force=force, inputs=inputs)
    return write_output(output, buffer.getvalue(), force=force, inputs=inputs)


def plot_values(
    rows: Sequence[Mapping[str, Any]], spec: SweepSpec
) -> tuple[str, dict[str, tuple[list[float], list[float]]]]:
    """The curves of the plotted quantity against the first grid key, one per value of the others.

    Returns the quantity's name and ``{label: (xs, ys)}``; failed points are left out.

    Raises
    ------
    SweepSpecError
        The spec has no grid, or no numeric quantity to plot.
    """
    keys = list(spec.grid)
    if not keys:
        raise _fail("--plot draws a quantity against a grid key; the spec has no grid")
    numeric = [c for c in spec.columns if _quantity(c) not in _WORDS]
    quantity = spec.plot or (numeric[0] if numeric else None)
    if quantity is None or quantity not in numeric:
        raise _fail(
            "--plot needs a numeric quantity (cut_ratio, algbw, k, U, plan_ratio@SIZE, ...)"
        )
    x_key, others = keys[0], keys[1:]
    if not all(isinstance(v, int | float) for v in spec.grid[x_key]):
        raise _fail(
            f"--plot draws against the first grid key, {x_key!r}, whose values must be numbers"
        )
    curves: dict[str, tuple[list[float], list[float]]] = {}
    for row in rows:
        if row["error"] or row[quantity] is None:
            continue
        label = ", ".join(f"{k}={_value_text(row[k])}" for k in others) or quantity
        xs, ys = curves.setdefault(label, ([], []))
        x = row[x_key]
        xs.append(float(exact_number(x, x_key)))
        ys.append(
            float(Fraction(row[quantity]))
            if isinstance(row[quantity], str)
            else float(row[quantity])
        )
    return quantity, curves
