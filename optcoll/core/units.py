"""Bandwidth units: the spellings a topology may declare and their exact value in GB/s.

optcoll computes and reports in GB/s (10**9 bytes per second). A topology may declare
its bandwidths in any rate unit of :data:`BYTES_PER_SECOND`; they are converted to
GB/s exactly (as fractions) when the topology is built, so ``400`` at ``Gb/s`` is the
same link as ``50`` at ``GB/s`` everywhere (bounds, simulation, exports). Decimal
prefixes are powers of 1000, binary ones (``Ki``, ``Mi``, ``Gi``, ``Ti``) powers of
1024; a lower-case ``b`` is a bit (1/8 byte). :data:`RELATIVE_UNITS` are the units of
imported files that give no byte rate (every link one ``link``; TACCL's chunks per
microsecond): their numbers are kept as they are. Anything else is refused, as is
the ambiguous ``KB/s`` (1000 or 1024?).

Examples
--------
>>> gigabytes_per_second("Gb/s")
Fraction(1, 8)
>>> gigabytes_per_second("GiB/s")
Fraction(2097152, 1953125)
>>> gigabytes_per_second("link") is None
True
"""

from __future__ import annotations

from fractions import Fraction

__all__ = [
    "BYTES_PER_SECOND",
    "RELATIVE_UNITS",
    "REPORT_UNIT",
    "gigabytes_per_second",
    "time_factor_share",
    "time_factor_meaning",
]

#: The unit every computation and report uses.
REPORT_UNIT = "GB/s"


def _rates() -> dict[str, Fraction]:
    prefixes = {
        "": 1,
        "k": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
        "P": 10**15,
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
        "Pi": 2**50,
    }
    rates = {}
    for prefix, scale in prefixes.items():
        rates[f"{prefix}B/s"] = Fraction(scale)
        rates[f"{prefix}b/s"] = Fraction(scale, 8)
    return rates


#: Bytes per second in one unit of every rate unit a topology may declare.
BYTES_PER_SECOND: dict[str, Fraction] = _rates()

#: Units without a byte rate (imported files that give none); numbers are kept as given.
RELATIVE_UNITS = ("link", "chunk/us")

_HINTS = {
    "KB/s": "KB/s is ambiguous: write kB/s (1000 B/s) or KiB/s (1024 B/s)",
    "Kb/s": "Kb/s is ambiguous: write kb/s (1000 bit/s) or Kib/s (1024 bit/s)",
}


def gigabytes_per_second(unit: str) -> Fraction | None:
    """GB/s in one ``unit`` exactly, or None for a relative unit.

    Raises
    ------
    ValueError
        ``unit`` is neither a rate unit of :data:`BYTES_PER_SECOND` nor a relative
        unit; the message lists what is accepted (the caller names the field and file).

    Examples
    --------
    >>> gigabytes_per_second("MiB/s")
    Fraction(2048, 1953125)
    >>> gigabytes_per_second("potatoes")
    Traceback (most recent call last):
    ...
    ValueError: unknown bandwidth unit 'potatoes'; accepted: B/s, kB/s, MB/s, GB/s, TB/s, PB/s, KiB/s, MiB/s, GiB/s, TiB/s, PiB/s, the same with b (bits) for B (bytes), or link, chunk/us
    """
    if unit in BYTES_PER_SECOND:
        return BYTES_PER_SECOND[unit] / 10**9
    if unit in RELATIVE_UNITS:
        return None
    shown = unit if len(unit) <= 40 else unit[:37] + "..."
    hint = _HINTS.get(unit)
    if hint is not None:
        raise ValueError(f"bandwidth unit {shown!r}: {hint}")
    bytes_units = ", ".join(u for u in BYTES_PER_SECOND if u.endswith("B/s"))
    raise ValueError(
        f"unknown bandwidth unit {shown!r}; accepted: {bytes_units}, the same with b (bits) "
        f"for B (bytes), or {', '.join(RELATIVE_UNITS)}"
    )


def time_factor_share(collective: str) -> str:
    """What a time factor of ``collective`` multiplies: the whole message ``M`` for a
    broadcast or reduce, the shard ``M/N`` (``N`` compute nodes) for every other one.

    Examples
    --------
    >>> time_factor_share("allreduce"), time_factor_share("broadcast")
    ('M/N', 'M')
    """
    return "M" if collective in ("broadcast", "reduce") else "M/N"


def time_factor_meaning(collective: str, unit: str = REPORT_UNIT) -> str:
    """The one meaning of every ``time_factor`` (and ``lower_bound``) optcoll states for
    ``collective``, in words: the ``time_factor_meaning`` of ``--json`` outputs.

    Examples
    --------
    >>> time_factor_meaning("allreduce")
    'T = (M/N) * time_factor (T in s, M in GB, time_factor per GB/s); algbw = N / time_factor GB/s'
    >>> time_factor_meaning("reduce")
    'T = M * time_factor (T in s, M in GB, time_factor per GB/s); algbw = 1 / time_factor GB/s'
    """
    share = time_factor_share(collective)
    times = "(M/N)" if share == "M/N" else "M"
    algbw = "N" if share == "M/N" else "1"
    size = unit.split("/")[0]
    return (
        f"T = {times} * time_factor (T in s, M in {size}, time_factor per {unit}); "
        f"algbw = {algbw} / time_factor {unit}"
    )
