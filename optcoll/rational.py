"""Exact numbers as text: the one convention every report and JSON field uses.

An exact value is written as ``str(Fraction(value))``: ``"3/65"``, and an integer as
``"325"`` (never ``"325/1"``). Every such string parses back with
:class:`fractions.Fraction`.
"""

from __future__ import annotations

import re
from fractions import Fraction

from optcoll.topology import MAX_DECIMAL_EXPONENT

__all__ = ["fraction_text", "parse_fraction", "MAX_NUMBER_DIGITS"]

#: Longest number text :func:`parse_fraction` reads (more digits than any measurement).
MAX_NUMBER_DIGITS = 1000

_EXPONENT = re.compile(r"[eE]([+-]?\d+)\s*$")


def fraction_text(value: Fraction | int | str) -> str:
    """The exact text of ``value``: ``"p/q"`` in lowest terms, or ``"p"`` for an integer.

    Examples
    --------
    >>> fraction_text(Fraction(6, 130)), fraction_text(Fraction(325, 1)), fraction_text(4)
    ('3/65', '325', '4')
    >>> Fraction(fraction_text(Fraction(7, 300))) == Fraction(7, 300)
    True
    """
    return str(Fraction(value))


def parse_fraction(text: str) -> Fraction:
    """The exact value of a number text: ``"3/65"``, ``"12.5"``, ``"1e-3"``, ``"-7"``.

    Unlike :class:`fractions.Fraction`, it refuses texts whose exactness would cost
    unbounded time or memory: more than :data:`MAX_NUMBER_DIGITS` characters or a
    decimal exponent beyond :data:`optcoll.topology.MAX_DECIMAL_EXPONENT` (``1e-99999999``
    would take minutes and gigabytes to make exact).

    Raises
    ------
    ValueError
        Not a finite number, a zero denominator, or too long or too large an exponent
        (the message says which).

    Examples
    --------
    >>> parse_fraction("3/65"), parse_fraction(" 1.25e-2 ")
    (Fraction(3, 65), Fraction(1, 80))
    >>> parse_fraction("1e-99999999")
    Traceback (most recent call last):
    ...
    ValueError: exponent -99999999 is beyond +-1000
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a number text, got {type(text).__name__}")
    if len(text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"number text of {len(text)} characters, more than {MAX_NUMBER_DIGITS}")
    exponent = _EXPONENT.search(text)
    if exponent and abs(int(exponent.group(1))) > MAX_DECIMAL_EXPONENT:
        raise ValueError(f"exponent {int(exponent.group(1))} is beyond +-{MAX_DECIMAL_EXPONENT}")
    try:
        return Fraction(text.strip())
    except ZeroDivisionError:
        raise ValueError(f"zero denominator in {text!r}") from None
