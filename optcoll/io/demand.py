"""Demand files: the ``N x N`` byte matrix of an all-to-allv (``--demand FILE``).

Reads (nothing is written here):

* ``.json`` (or ``.yaml``): ``{"bytes": [[...], ...]}``, row = source, column =
  destination, in the topology's rank order; or PyTorch's ``all_to_all_single``
  split sizes ``{"input_split_sizes": [[...], ...], "element_bytes": 2}``
  (optionally ``"output_split_sizes"``, checked against them);
* ``.csv``: ``N`` lines of ``N`` comma-separated integers (no header);
* ``.npy``: a NumPy ``N x N`` array of integers (or integral floats), read without
  pickles.

Every entry must be a non-negative integer; the diagonal is what a rank keeps
(:mod:`optcoll.core.demand`). A malformed file is a :class:`FileFormatError` naming
the file, the row and the column.

Examples
--------
>>> import json, pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "d.json"
>>> _ = path.write_text(json.dumps({"bytes": [[0, 3], [1, 0]]}))
>>> read_demand(path, ("a", "b")).pairs()
{('a', 'b'): 3, ('b', 'a'): 1}
>>> _ = path.write_text(json.dumps({"bytes": [[0, 3], [1, -2]]}))
>>> try:
...     read_demand(path, ("a", "b"))
... except FileFormatError as bad:
...     print(str(bad).replace(str(path), "d.json"))
d.json: row 1 (rank b), column 1 (rank b): bytes must be non-negative, got -2
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optcoll.core.arguments import path_argument
from optcoll.core.demand import Demand, demand_from_splits, demand_matrix
from optcoll.core.limits import read_file
from optcoll.core.schedule import Route, RoutePath
from optcoll.exceptions import ArgumentError, FileFormatError, shown
from optcoll.io.document import read_document, read_text

__all__ = ["DEMAND_SUFFIXES", "ROUTES_FORMAT", "DemandRoutes", "read_demand", "read_demand_routes"]

#: The ``format`` field of an all-to-allv routes file (``optcoll solve --demand`` writes it).
ROUTES_FORMAT = "optcoll-alltoallv-routes"

#: The suffixes :func:`read_demand` reads.
DEMAND_SUFFIXES = (".json", ".yaml", ".yml", ".csv", ".npy")

_JSON_KEYS = {"bytes"}
_SPLIT_KEYS = {"input_split_sizes", "output_split_sizes", "element_bytes"}


def read_demand(path: str | Path, ranks: Sequence[str]) -> Demand:
    """The demand in ``path`` over the compute nodes ``ranks`` (the topology's rank order).

    Raises
    ------
    FileFormatError
        An unknown suffix, an unreadable or malformed file, a wrong shape, or an entry
        that is not a non-negative integer (the message names the row and column).
    """
    path = path_argument(path, "demand file")
    suffix = path.suffix.lower()
    origin = str(path)
    try:
        if suffix == ".csv":
            return demand_matrix(_csv_rows(path), ranks, origin)
        if suffix == ".npy":
            return demand_matrix(_npy_rows(path), ranks, origin)
        if suffix in (".json", ".yaml", ".yml"):
            return _document(read_document(path), ranks, origin)
    except ArgumentError as bad:
        raise FileFormatError(str(bad)) from None
    raise FileFormatError(
        f"{path}: unknown demand file suffix {suffix or '(none)'!r}; valid: "
        + ", ".join(DEMAND_SUFFIXES)
    )


def _document(data: Any, ranks: Sequence[str], origin: str) -> Demand:
    if not isinstance(data, dict):
        raise FileFormatError(
            f'{origin}: expected an object {{"bytes": [[...]]}}, got {shown(data)}'
        )
    keys = set(data)
    if "bytes" in keys:
        if keys - _JSON_KEYS:
            raise FileFormatError(
                f"{origin}: unknown field(s) {sorted(keys - _JSON_KEYS)} beside 'bytes'"
            )
        return demand_matrix(data["bytes"], ranks, origin)
    if "input_split_sizes" in keys:
        if keys - _SPLIT_KEYS:
            raise FileFormatError(
                f"{origin}: unknown field(s) {sorted(keys - _SPLIT_KEYS)}; split sizes take "
                f"{sorted(_SPLIT_KEYS)}"
            )
        if "element_bytes" not in keys:
            raise FileFormatError(
                f"{origin}: 'input_split_sizes' needs 'element_bytes' (bytes per element)"
            )
        return demand_from_splits(
            data["input_split_sizes"],
            element_bytes=data["element_bytes"],
            ranks=ranks,
            output_split_sizes=data.get("output_split_sizes"),
            origin=origin,
        )
    raise FileFormatError(
        f"{origin}: no field 'bytes' (an N x N matrix) or 'input_split_sizes'; got {sorted(keys)}"
    )


def _csv_rows(path: Path) -> list[list[Any]]:
    rows = []
    for number, line in enumerate(csv.reader(io.StringIO(read_text(path)))):
        if not line or all(not cell.strip() for cell in line):
            continue
        row: list[Any] = []
        for column, cell in enumerate(line):
            text = cell.strip()
            try:
                row.append(int(text))
            except ValueError:
                raise FileFormatError(
                    f"{path}: line {number + 1}, column {column}: expected a non-negative "
                    f"integer, got {shown(text)}"
                ) from None
        rows.append(row)
    return rows


def _npy_rows(path: Path) -> list[list[Any]]:
    import numpy as np

    try:
        array = np.load(io.BytesIO(read_file(path)), allow_pickle=False)
    except ValueError as err:
        raise FileFormatError(f"{path}: not a NumPy .npy array without pickles: {err}") from None
    if array.ndim != 2:
        raise FileFormatError(f"{path}: expected a 2-D array, got shape {array.shape}")
    if array.dtype.kind not in "iuf":
        raise FileFormatError(f"{path}: expected an integer array, got dtype {array.dtype}")
    return array.tolist()


@dataclass(frozen=True)
class DemandRoutes:
    """An all-to-allv routes file: its ``topology`` and ``ranks`` as written, its
    ``method`` and its ``routes`` (one per pair; ``chunks`` = bytes on each path)."""

    topology: str
    ranks: tuple[str, ...]
    method: str
    routes: tuple[Route, ...]


def read_demand_routes(path: str | Path) -> DemandRoutes:
    """The routes in an all-to-allv routes file (``format: optcoll-alltoallv-routes``).

    Only the shape is checked here (objects, names, positive integer bytes); whether the
    routes deliver a demand over real links is the independent verifier's job
    (:func:`optcoll.verify.demand.verify_demand_routes`).

    Raises
    ------
    FileFormatError
        Not such a file, or a route, path or field of the wrong type (named).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.json"
    >>> doc = {"format": ROUTES_FORMAT, "topology": "star:2", "ranks": ["h0", "h1"],
    ...        "method": "direct", "routes": [{"src": "h0", "dst": "h1",
    ...        "paths": [{"bytes": 6, "path": ["h0", "hub", "h1"]}]}]}
    >>> _ = path.write_text(json.dumps(doc))
    >>> read_demand_routes(path).routes
    (Route(src='h0', dst='h1', paths=(RoutePath(chunks=6, path=('h0', 'hub', 'h1')),)),)
    """
    path = path_argument(path, "routes file")
    data = read_document(path)
    if not isinstance(data, dict) or data.get("format") != ROUTES_FORMAT:
        raise FileFormatError(f"{path}: not an all-to-allv routes file (format {ROUTES_FORMAT!r})")
    for key in ("topology", "method"):
        if not isinstance(data.get(key), str):
            raise FileFormatError(f"{path}: field {key!r} must be a string")
    ranks = data.get("ranks")
    if not isinstance(ranks, list) or not all(isinstance(r, str) for r in ranks):
        raise FileFormatError(f"{path}: field 'ranks' must be a list of node names")
    listed = data.get("routes")
    if not isinstance(listed, list):
        raise FileFormatError(f"{path}: field 'routes' must be a list")
    routes = []
    for i, route in enumerate(listed):
        where = f"{path}: route {i}"
        if not isinstance(route, dict) or not isinstance(route.get("paths"), list):
            raise FileFormatError(f"{where}: expected {{'src', 'dst', 'paths': [...]}}")
        src, dst = route.get("src"), route.get("dst")
        if not isinstance(src, str) or not isinstance(dst, str):
            raise FileFormatError(f"{where}: 'src' and 'dst' must be node names")
        steps = []
        for j, step in enumerate(route["paths"]):
            if not isinstance(step, dict):
                raise FileFormatError(f"{where}, path {j}: expected {{'bytes', 'path'}}")
            amount, nodes = step.get("bytes"), step.get("path")
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
                raise FileFormatError(
                    f"{where}, path {j}: 'bytes' must be a positive integer, got {shown(amount)}"
                )
            if not isinstance(nodes, list) or not all(isinstance(v, str) for v in nodes):
                raise FileFormatError(f"{where}, path {j}: 'path' must be a list of node names")
            steps.append(RoutePath(amount, tuple(nodes)))
        routes.append(Route(src, dst, tuple(steps)))
    return DemandRoutes(data["topology"], tuple(ranks), data["method"], tuple(routes))
