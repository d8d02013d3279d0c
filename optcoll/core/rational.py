"""Exact numbers: reading them, writing them, scaling them to integers, recovering them.

* :func:`exact_number` reads a number (int, Fraction, Decimal, float by its shortest
  repr, ``"p/q"`` string) as an exact :class:`~fractions.Fraction`.
* :func:`parse_fraction` reads a number text (``"3/65"``, ``"1.25e-2"``), refusing
  texts whose exactness would cost unbounded time or memory.
* :func:`fraction_text` writes one: the one convention every report and JSON field
  uses, ``str(Fraction(value))``: ``"3/65"``, and an integer as ``"325"`` (never
  ``"325/1"``). Every such string parses back with :class:`fractions.Fraction`.
* :func:`count_text` writes a count with its noun: ``"1 switch"``, ``"2 switches"``.
* :func:`integer_scaling` scales positive capacities to integers with gcd 1
  (:meth:`optcoll.core.topology.Topology.integer_capacities` and the LP models use it).
* :func:`reconstruct_cut_ratio` is the exactness bridge from an LP's floating-point
  optimum back to an exact fraction. Every optimum the formulations compute is a cut
  ratio ``|S ∩ Vc| / B+(S)``; with integer capacities ``B+(S)`` is an integer and
  ``|S ∩ Vc| < N``, so the *inverse* of the scaled optimum is a fraction whose
  denominator is below ``N``. Two distinct such fractions differ by at least
  ``1/(N-1)**2``, so a float within half that distance identifies the exact value
  uniquely (best rational approximation by continued fractions,
  :meth:`fractions.Fraction.limit_denominator`). Callers then re-verify the candidate
  exactly (a cut whose ratio equals it).

Examples
--------
>>> reconstruct_cut_ratio(15 / 13 + 1e-10, num_compute=16)
Fraction(15, 13)
>>> integer_scaling({("a", "b"): Fraction(25, 2), ("b", "a"): 25})
({('a', 'b'): 1, ('b', 'a'): 2}, Fraction(25, 2))
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Hashable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any, TypeVar

from optcoll.exceptions import ReconstructionError, TopologyError, shown

__all__ = [
    "exact_number",
    "parse_fraction",
    "MAX_NUMBER_DIGITS",
    "WrittenNumber",
    "MAX_DECIMAL_EXPONENT",
    "fraction_text",
    "decimal_text",
    "rounded_text",
    "count_text",
    "integer_scaling",
    "reconstruct_cut_ratio",
    "REL_TOL",
]

#: Longest number text :func:`parse_fraction` reads (more digits than any measurement).
MAX_NUMBER_DIGITS = 1000

_EXPONENT = re.compile(r"[eE]([+-]?\d+)\s*$")

#: An exact rational written as a string in a file, e.g. ``"100/3"``.
#: "p/q", or "p" as fraction_text writes an integer (no leading zero: YAML 1.1 reads 010 as 8)
_FRACTION_TEXT = re.compile(r"\s*(?:[0-9]+\s*/\s*[0-9]+|0|[1-9][0-9]*)\s*")


#: Largest decimal exponent accepted in a written number (``1e-400`` is fine; ``1e-99999999``
#: would need a 100-million-digit denominator).
MAX_DECIMAL_EXPONENT = 1000


class WrittenNumber(float):
    """A number read from a file that keeps the decimal text it was written as.

    It behaves as a float everywhere, and :func:`exact_number` takes its exact
    value from ``text``, so digits beyond a float's 17 are not lost.

    Examples
    --------
    >>> x = WrittenNumber("0.1000000000000000000001")
    >>> x == 0.1, exact_number(x, "bandwidth")
    (True, Fraction(1000000000000000000001, 10000000000000000000000))
    """

    text: str

    def __new__(cls, text: str) -> WrittenNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number


def _exact_decimal(value: Decimal, what: str) -> Fraction:
    if not value.is_finite():
        raise ValueError(f"{what} must be finite, got {value}")
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int), "a finite Decimal has an integer exponent"
    if abs(exponent) > MAX_DECIMAL_EXPONENT:
        raise ValueError(
            f"{what} {value} has a decimal exponent beyond +-{MAX_DECIMAL_EXPONENT}; "
            f"write it with fewer zeros or in another bandwidth unit"
        )
    return Fraction(value)


def exact_number(value: Any, what: str) -> Fraction:
    """Return ``value`` as an exact :class:`~fractions.Fraction`.

    Integers, :class:`~fractions.Fraction`, :class:`~decimal.Decimal`, numbers
    read from files (:class:`WrittenNumber`: exactly the decimal written, however
    many digits), finite floats (through their shortest decimal repr, so ``0.1``
    becomes ``1/10``) and
    strings of the exact form ``"p/q"`` or ``"p"`` (how files store rationals such as
    ``100/3`` that no decimal writes exactly, and how
    :func:`fraction_text` writes an integer) are accepted. Booleans, other
    strings, NaN and infinities are rejected with a :class:`ValueError` naming
    ``what``.

    Examples
    --------
    >>> exact_number(12.5, "bandwidth")
    Fraction(25, 2)
    >>> exact_number(0.1, "bandwidth")
    Fraction(1, 10)
    >>> exact_number("100/3", "bandwidth"), exact_number("1", "latency")
    (Fraction(100, 3), Fraction(1, 1))
    """
    if isinstance(value, str) and _FRACTION_TEXT.fullmatch(value):
        above, _, below = value.partition("/")
        numerator, denominator = int(above), int(below or 1)
        if denominator == 0:
            raise ValueError(f"{what} has a zero denominator: {shown(value)}")
        return Fraction(numerator, denominator)
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        raise ValueError(
            f"{what} must be a number (or an exact fraction string such as '100/3'), "
            f"got {shown(value)} ({type(value).__name__})"
        )
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {shown(value)}")
    if isinstance(value, WrittenNumber):
        return _exact_decimal(Decimal(value.text), what)
    if isinstance(value, Decimal):
        return _exact_decimal(value, what)
    return Fraction(repr(float(value)))


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


def decimal_text(value: Fraction) -> str | None:
    """The exact decimal text of ``value``, or None if it has none (its denominator has a
    prime factor other than 2 and 5).

    Examples
    --------
    >>> decimal_text(Fraction(9765625, 1048576)), decimal_text(Fraction(-1, 8)), decimal_text(3)
    ('9.31322574615478515625', '-0.125', '3')
    >>> decimal_text(Fraction(1, 3)) is None
    True
    """
    value = Fraction(value)
    twos = fives = 0
    rest = value.denominator
    while rest % 2 == 0:
        rest, twos = rest // 2, twos + 1
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        return None
    places = max(twos, fives)
    scaled = abs(value.numerator) * 10**places // value.denominator
    sign = "-" if value < 0 else ""
    if places == 0:
        return f"{sign}{scaled}"
    whole, part = divmod(scaled, 10**places)
    return f"{sign}{whole}.{part:0{places}d}"


def rounded_text(value: Fraction, digits: int = 6) -> str:
    """``value`` for reading, not for computing: an integer exactly, else ``digits``
    significant digits (``fraction_text`` is the exact text).

    Examples
    --------
    >>> rounded_text(Fraction(300)), rounded_text(Fraction(1, 3)), rounded_text(Fraction(1, 3), 4)
    ('300', '0.333333', '0.3333')
    """
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.{digits}g}"


def parse_fraction(text: str) -> Fraction:
    """The exact value of a number text: ``"3/65"``, ``"12.5"``, ``"1e-3"``, ``"-7"``.

    Unlike :class:`fractions.Fraction`, it refuses texts whose exactness would cost
    unbounded time or memory: more than :data:`MAX_NUMBER_DIGITS` characters or a
    decimal exponent beyond :data:`MAX_DECIMAL_EXPONENT` (``1e-99999999``
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


#: Relative tolerance within which an LP optimum must match its exact value.
REL_TOL = 1e-6

K = TypeVar("K", bound=Hashable)


def count_text(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless the count is one (``-es`` after s, x, ch, sh).

    Examples
    --------
    >>> count_text(1, "switch"), count_text(2, "switch"), count_text(0, "compute node")
    ('1 switch', '2 switches', '0 compute nodes')
    """
    if count == 1:
        return f"{count} {noun}"
    suffix = "es" if noun.endswith(("s", "x", "ch", "sh")) else "s"
    return f"{count} {noun}{suffix}"


def _value_key(value: Any) -> tuple[type, Any]:
    """``value`` by type and value (``0.1`` and ``Fraction(0.1)`` differ), or by identity
    when it cannot be hashed (it is then refused as a number)."""
    try:
        hash(value)
    except TypeError:
        return (type(value), id(value))
    return (type(value), value)


def integer_scaling(capacity: Mapping[K, int | Fraction]) -> tuple[dict[K, int], Fraction]:
    """Scale positive exact capacities to integers with gcd 1.

    Returns ``(caps, unit)`` with ``capacity[a] == caps[a] * unit`` exactly.

    Raises
    ------
    TopologyError
        If the mapping is empty or a capacity is not a positive finite number
        (the message names the arc).

    Examples
    --------
    >>> integer_scaling({"ab": 300, "ba": 25})
    ({'ab': 12, 'ba': 1}, Fraction(25, 1))
    """
    if not capacity:
        raise TopologyError("the capacity mapping is empty; at least one arc is needed")
    # each distinct value (by type and value: 0.1 and Fraction(0.1) differ) is read once;
    # a fabric of 600,000 arcs has a handful
    exact: dict[tuple[type, Any], Fraction] = {}
    for arc, value in capacity.items():
        key = _value_key(value)
        if key in exact:
            continue
        try:
            c = exact_number(value, f"capacity of arc {arc!r}")
        except ValueError as err:
            raise TopologyError(str(err)) from None
        if c <= 0:
            raise TopologyError(f"capacity of arc {arc!r} must be positive, got {value!r}")
        exact[key] = c
    denominator = math.lcm(*(c.denominator for c in exact.values()))
    scaled = {key: int(c * denominator) for key, c in exact.items()}
    g = math.gcd(*scaled.values())
    return {arc: scaled[(type(value), value)] // g for arc, value in capacity.items()}, Fraction(
        g, denominator
    )


def reconstruct_cut_ratio(value: float, num_compute: int, *, rel_tol: float = REL_TOL) -> Fraction:
    """The exact cut ratio (in integer-scaled units) that the float ``value`` approximates.

    Parameters
    ----------
    value : float
        A positive LP optimum ``≈ |S ∩ Vc| / B`` with ``B`` a positive integer.
    num_compute : int
        N; the numerator ``|S ∩ Vc|`` is at most ``N - 1``.
    rel_tol : float
        Largest accepted relative distance between ``value`` and the result.

    Returns
    -------
    Fraction
        ``p / q`` with ``1 <= p <= N - 1``.

    Raises
    ------
    ReconstructionError
        If no such fraction is close enough to ``value`` to be the unique one.

    Examples
    --------
    >>> reconstruct_cut_ratio(0.0466666666667, 16)
    Fraction(7, 150)
    """
    if not (math.isfinite(value) and value > 0):
        raise ReconstructionError(f"LP optimum {value!r} is not a positive finite cut ratio")
    largest = max(num_compute - 1, 1)
    inverse = Fraction(1 / value)
    candidate_inverse = inverse.limit_denominator(largest)
    candidate = 1 / candidate_inverse
    unique_within = Fraction(1, 2 * largest * largest)
    if abs(inverse - candidate_inverse) >= unique_within or abs(
        value - float(candidate)
    ) > rel_tol * float(candidate):
        raise ReconstructionError(
            f"LP optimum {value!r} is not within tolerance of any ratio p/q with p <= "
            f"{largest} (nearest {candidate}); the solve is inaccurate: tighten HiGHS's "
            f"tolerances or use the combinatorial method"
        )
    return candidate
