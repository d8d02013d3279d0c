"""Checks every foreign-format reader shares: required fields, exact numbers, square matrices.

Each raises :class:`~optcoll.exceptions.ImportFormatError` naming the field or
entry at fault; the registry prefixes the file name.

Examples
--------
>>> number("12.5", "bandwidth")
Fraction(25, 2)
>>> matrix({"links": [[0, 1], [1, 0]]}, "links", 2, "the profile")
[[Fraction(0, 1), Fraction(1, 1)], [Fraction(1, 1), Fraction(0, 1)]]
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from optcoll.core.rational import exact_number
from optcoll.exceptions import ImportFormatError

__all__ = ["field", "number", "matrix"]


def field(data: Mapping[str, Any], key: str, what: str) -> Any:
    """``data[key]``, or an error saying ``what`` lacks the field."""
    if key not in data:
        raise ImportFormatError(f"{what} is missing the required field {key!r}")
    return data[key]


def number(value: Any, where: str, *, positive: bool = False) -> Fraction:
    """``value`` as an exact non-negative (or positive) number; strings may be ``"p/q"``."""
    try:
        if isinstance(value, str):
            result = Fraction(value.strip())
        else:
            result = exact_number(value, where)
    except (ValueError, ZeroDivisionError):
        raise ImportFormatError(f"{where} must be a number, got {value!r}") from None
    if result < 0 or (positive and result == 0):
        raise ImportFormatError(
            f"{where} must be {'positive' if positive else 'non-negative'}, got {value!r}"
        )
    return result


def matrix(data: Mapping[str, Any], key: str, size: int | None, what: str) -> list[list[Fraction]]:
    """``data[key]`` as a ``size`` x ``size`` matrix of exact numbers (any size if None)."""
    rows = field(data, key, what)
    if not isinstance(rows, list) or not rows:
        raise ImportFormatError(f"field {key!r} must be a non-empty list of rows")
    size = len(rows) if size is None else size
    if len(rows) != size:
        raise ImportFormatError(f"field {key!r} has {len(rows)} rows; expected {size}")
    matrix = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != size:
            got = len(row) if isinstance(row, list) else type(row).__name__
            raise ImportFormatError(f"{key}[{i}] must be a list of {size} numbers, got {got}")
        matrix.append([number(x, f"{key}[{i}][{j}]") for j, x in enumerate(row)])
    return matrix
