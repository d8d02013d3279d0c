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
from pathlib import Path
from typing import Any

from optcoll.core.arguments import path_argument
from optcoll.core.demand import Demand, demand_from_splits, demand_matrix
from optcoll.core.limits import read_file
from optcoll.exceptions import ArgumentError, FileFormatError, shown
from optcoll.io.document import read_document, read_text

__all__ = ["DEMAND_SUFFIXES", "read_demand"]

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
