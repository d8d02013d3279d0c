"""The exactness bridge: from an LP's floating-point optimum back to an exact fraction.

Every optimum the formulations compute is a cut ratio ``|S ∩ Vc| / B+(S)``.
With capacities scaled to integers (:func:`integer_scaling`), ``B+(S)`` is an
integer and ``|S ∩ Vc| < N``, so the *inverse* of the scaled optimum is a
fraction whose denominator is below ``N``. Two distinct such fractions differ
by at least ``1/(N-1)**2``, so a float within half that distance identifies the
exact value uniquely (best rational approximation by continued fractions,
:meth:`fractions.Fraction.limit_denominator`). Callers then re-verify the
candidate exactly (a cut whose ratio equals it).

Examples
--------
>>> from fractions import Fraction
>>> reconstruct_cut_ratio(15 / 13 + 1e-10, num_compute=16)
Fraction(15, 13)
>>> integer_scaling({("a", "b"): Fraction(25, 2), ("b", "a"): 25})
({('a', 'b'): 1, ('b', 'a'): 2}, Fraction(25, 2))
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from fractions import Fraction
from typing import TypeVar

from optcoll.exceptions import ReconstructionError, TopologyError
from optcoll.topology import exact_number

__all__ = ["integer_scaling", "reconstruct_cut_ratio", "REL_TOL"]

#: Relative tolerance within which an LP optimum must match its exact value.
REL_TOL = 1e-6

K = TypeVar("K", bound=Hashable)


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
    exact: dict[K, Fraction] = {}
    for arc, value in capacity.items():
        try:
            c = exact_number(value, f"capacity of arc {arc!r}")
        except ValueError as err:
            raise TopologyError(str(err)) from None
        if c <= 0:
            raise TopologyError(f"capacity of arc {arc!r} must be positive, got {value!r}")
        exact[arc] = c
    denominator = math.lcm(*(c.denominator for c in exact.values()))
    scaled = {arc: int(c * denominator) for arc, c in exact.items()}
    g = math.gcd(*scaled.values())
    return {arc: v // g for arc, v in scaled.items()}, Fraction(g, denominator)


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
