"""Exact numbers as text: the one convention every report and JSON field uses.

An exact value is written as ``str(Fraction(value))``: ``"3/65"``, and an integer as
``"325"`` (never ``"325/1"``). Every such string parses back with
:class:`fractions.Fraction`.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["fraction_text"]


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
