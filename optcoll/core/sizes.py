"""Message sizes as text: ``"64K"``, ``"1MiB"``, ``"1MB"``, ``"2G"`` and back.

``K``, ``M``, ``G`` (as nccl-tests' ``-b 1M``) and ``KiB``, ``MiB``, ``GiB`` are powers of
1024; ``kB``, ``MB``, ``GB`` powers of 1000. A lower-case ``b`` after a prefix is a bit
(``1Mb`` is a megabit): a message size is in bytes, so it is refused.

Examples
--------
>>> parse_size("64K"), parse_size("1MiB"), parse_size("1MB"), parse_size("512")
(65536, 1048576, 1000000, 512)
>>> size_text(4194304), size_text(1536), size_text(1024**3)
('4M', '1536', '1G')
"""

from __future__ import annotations

import re

from optcoll.core.limits import is_decimal

__all__ = ["parse_size", "size_text"]

#: Bytes per unit, by the unit written in upper case (a bit unit is refused before).
_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_UNITS |= {"KIB": 1024, "MIB": 1024**2, "GIB": 1024**3, "KB": 1000, "MB": 1000**2, "GB": 1000**3}

_SIZE = re.compile(r"\s*([0-9]+)\s*([A-Za-z]*)\s*\Z")

_VALID = (
    "a positive integer with an optional unit: K, M, G or KiB, MiB, GiB (powers of 1024), "
    "kB, MB, GB (powers of 1000) or B (e.g. 64K)"
)


def parse_size(text: str) -> int:
    """A message size in bytes from ``"4096"``, ``"64K"``, ``"1MiB"``, ``"1MB"`` or ``"2G"``.

    Raises
    ------
    ValueError
        ``text`` is not a positive integer with an optional byte unit.

    Examples
    --------
    >>> parse_size("2g"), parse_size("3kB")
    (2147483648, 3000)
    >>> parse_size("1.5M")
    Traceback (most recent call last):
    ...
    ValueError: size '1.5M' must be a positive integer with an optional unit: K, M, G or KiB, MiB, GiB (powers of 1024), kB, MB, GB (powers of 1000) or B (e.g. 64K)
    >>> parse_size("8Mb")
    Traceback (most recent call last):
    ...
    ValueError: size '8Mb' is in bits (b); message sizes are in bytes: write B, e.g. 1MB = 8Mb
    """
    match = _SIZE.match(text) if isinstance(text, str) else None
    if match is None or not is_decimal(match.group(1)) or int(match.group(1)) <= 0:
        raise ValueError(f"size {text!r} must be {_VALID}")
    number, unit = match.groups()
    if unit.endswith("b") and (len(unit) > 1 or unit == "b"):
        raise ValueError(
            f"size {text!r} is in bits (b); message sizes are in bytes: write B, e.g. 1MB = 8Mb"
        )
    if unit.upper() not in _UNITS:
        raise ValueError(f"size {text!r} must be {_VALID}")
    return int(number) * _UNITS[unit.upper()]


def size_text(size: int) -> str:
    """A message size in the binary units :func:`parse_size` reads (``4194304`` -> ``4M``).

    Examples
    --------
    >>> size_text(65536)
    '64K'
    """
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)
