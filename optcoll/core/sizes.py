"""Message sizes as text: ``"64K"``, ``"1M"``, ``"2G"`` (binary units) and back.

Examples
--------
>>> parse_size("64K"), parse_size("1MB"), parse_size("512")
(65536, 1048576, 512)
>>> size_text(4194304), size_text(1536), size_text(1024**3)
('4M', '1536', '1G')
"""

from __future__ import annotations

from optcoll.core.limits import is_decimal

__all__ = ["parse_size", "size_text"]

_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2}
_UNITS |= {"G": 1024**3, "GB": 1024**3}


def parse_size(text: str) -> int:
    """A message size in bytes from ``"4096"``, ``"64K"``, ``"1MB"`` or ``"2G"``.

    Raises
    ------
    ValueError
        ``text`` is not a positive integer with an optional unit K, M or G.

    Examples
    --------
    >>> parse_size("2g")
    2147483648
    >>> parse_size("1.5M")
    Traceback (most recent call last):
    ...
    ValueError: size '1.5M' must be a positive integer with an optional unit K, M or G (e.g. 64K)
    """
    value = text.strip().upper()
    number = value.rstrip("KMGB")
    unit = value[len(number) :]
    if not is_decimal(number) or unit not in _UNITS or int(number) <= 0:
        raise ValueError(
            f"size {text!r} must be a positive integer with an optional unit K, M or G (e.g. 64K)"
        )
    return int(number) * _UNITS[unit]


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
