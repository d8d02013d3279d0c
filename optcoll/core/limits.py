"""One resource policy: the largest input of each kind optcoll accepts, whatever its source.

A built-in spec, an imported file, a program to check and a command-line count are held
to the same limits, checked before anything is allocated, so an input that declares a
billion GPUs fails at once with one line naming the field instead of exhausting memory.

The limits are sized by cost: building a topology costs about 25 microseconds and
0.5 KB per directed link (``hypercube:14``, 229,376 links: 5 s, 140 MB), and every
method after that costs more.

Examples
--------
>>> check_size("ring:8", 8, 16)
>>> check_count(10**9, MAX_NODES, "npus_count")
Traceback (most recent call last):
...
optcoll.exceptions.ArgumentError: npus_count is 1000000000; optcoll accepts at most 50000 (the limit every input shares): choose a smaller size
"""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping
from contextvars import ContextVar
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.exceptions import ArgumentError, FileFormatError, OptCollError

_DECIMAL = re.compile(r"[0-9]+\Z")

__all__ = [
    "MAX_NODES",
    "MAX_LINKS",
    "MAX_BUILT_NODES",
    "MAX_BUILT_LINKS",
    "LARGE_BUILT",
    "MAX_PROGRAM_CELLS",
    "MAX_NESTING",
    "MAX_TRIALS",
    "check_size",
    "check_count",
    "count_value",
    "check_nesting",
    "is_decimal",
    "MAX_FILE_BYTES",
    "MAX_LP_VARIABLES",
    "BANDWIDTH_RANGE",
    "check_bandwidth_range",
    "read_file",
]

#: Nodes of the largest topology read from a file (or declared by a file's counts).
MAX_NODES = 50_000
#: Directed links of the largest topology read from a file.
MAX_LINKS = 250_000
#: Nodes of the largest topology built in Python (a built-in family's spec, or
#: :class:`~optcoll.core.topology.Topology` made by a program): 100,000 GPUs of
#: ``dgx-h100:12500`` are 212,508 nodes.
MAX_BUILT_NODES = 250_000
#: Directed links of the largest topology built in Python (``dgx-h100:12500``: 600,000).
MAX_BUILT_LINKS = 1_000_000
#: Whether a topology built in Python may reach :data:`MAX_BUILT_NODES` and
#: :data:`MAX_BUILT_LINKS`: true for the Python API, ``optcoll bound`` and ``optcoll trees``
#: (whose costs grow with the orbits, not the nodes; ``trees`` refuses at once a large
#: topology without declared symmetry); the other commands set it false, so that ``solve``
#: of a 100,000-GPU spec is refused at once instead of running for hours.
LARGE_BUILT: ContextVar[bool] = ContextVar("large_built", default=True)
#: Buffer cells (``ngpus * nchunksperloop``) of the largest MSCCL program the checker
#: executes: each cell is a Python integer in a dictionary (about 100 bytes), so
#: 4 million cells per buffer stay below a gigabyte.
MAX_PROGRAM_CELLS = 2**22
#: Deepest nesting of elements in an XML, JSON or YAML document (no format optcoll
#: reads nests more than a few levels; Python's recursion limit is 1000).
MAX_NESTING = 100
#: Random draws of a resilience study (each solves one topology exactly).
MAX_TRIALS = 100_000
#: Bytes of the largest input file (topology, schedule, program, plan, trace).
MAX_FILE_BYTES = 256 * 1024 * 1024
#: Variables of the largest LP model ``optcoll lp`` builds: PuLP holds each variable and
#: its terms as Python objects (about 1 KiB), so 2 million stay within a few gigabytes.
MAX_LP_VARIABLES = 2_000_000
#: Smallest and largest link bandwidth a computation accepts: exact values beyond it load,
#: but an algbw or an LP coefficient of theirs overflows a float (about 1.8e308).
BANDWIDTH_RANGE = (Fraction(1, 10**300), Fraction(10**300))


def check_bandwidth_range(capacity: Mapping[Any, Fraction], name: str, unit: str) -> None:
    """Refuse a topology ``name`` whose link capacities leave :data:`BANDWIDTH_RANGE`.

    Examples
    --------
    >>> check_bandwidth_range({("a", "b"): Fraction(10**308)}, "t", "GB/s")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ArgumentError: topology 't': link a -> b has bandwidth 1e+308 GB/s, beyond the range 1e-300 to 1e300 that floats (algbw, LP coefficients) hold; give the bandwidths in another bandwidth_unit
    """
    low, high = BANDWIDTH_RANGE
    for arc, value in capacity.items():
        if not low <= value <= high:
            digits = len(str(value.numerator)) - len(str(value.denominator))
            size = f"1e+{digits}" if digits > 0 else f"about 1e{digits}"
            raise ArgumentError(
                f"topology {name!r}: link {arc[0]} -> {arc[1]} has bandwidth {size} {unit}, "
                "beyond the range 1e-300 to 1e300 that floats (algbw, LP coefficients) hold; "
                "give the bandwidths in another bandwidth_unit"
            )


def read_file(path: str | Path, error: type[OptCollError] = FileFormatError) -> bytes:
    """The bytes of the regular file ``path`` of at most :data:`MAX_FILE_BYTES`, else
    ``error`` naming it: a FIFO would block forever, ``/dev/zero`` never ends, and a
    folder or a missing file is said as such. Every reader of an input file reads it here.

    Examples
    --------
    >>> read_file("/dev/zero")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.FileFormatError: /dev/zero: not a regular file (a pipe or a device); give a file
    """
    path = Path(path)
    try:
        status = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except (OSError, ValueError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        shown = str(path) if len(str(path)) <= 80 else str(path)[:77] + "..."
        raise error(f"{shown}: cannot read file ({reason})") from None
    if stat.S_ISDIR(status.st_mode):
        raise error(f"{path}: is a folder; give a file")
    if not stat.S_ISREG(status.st_mode):
        raise error(f"{path}: not a regular file (a pipe or a device); give a file")
    if status.st_size > MAX_FILE_BYTES:
        raise error(
            f"{path}: {status.st_size} bytes, more than the {MAX_FILE_BYTES} an input file may have"
        )
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise error(f"{path}: cannot read file ({err.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise error(f"{path}: more than {MAX_FILE_BYTES} bytes")
    return data


def check_size(
    what: str,
    nodes: int,
    links: int,
    error: type[OptCollError] = ArgumentError,
    *,
    built: bool = False,
) -> None:
    """Refuse a topology of more than :data:`MAX_NODES` nodes or :data:`MAX_LINKS` links
    (with ``built``, a topology built in Python: :data:`MAX_BUILT_NODES` and
    :data:`MAX_BUILT_LINKS`).

    Builders and readers call it with the node and directed-link counts (or upper
    bounds) an input declares, before building anything.

    Raises
    ------
    error
        Naming ``what`` (a spec, or a file and its field), both counts and the limits.

    Examples
    --------
    >>> check_size("torus:100000x100000", 10**10, 4 * 10**10)
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ArgumentError: torus:100000x100000 would have 10000000000 nodes and 40000000000 directed links; every topology file is limited to 50000 nodes and 250000 links (building alone would take minutes and gigabytes): choose a smaller size
    >>> check_size("dgx-h100:12500", 212508, 600000, built=True)
    """
    large = built and LARGE_BUILT.get()
    most_nodes, most_links = (MAX_BUILT_NODES, MAX_BUILT_LINKS) if large else (MAX_NODES, MAX_LINKS)
    if nodes > most_nodes or links > most_links:
        kind = (
            "built topology" if large else "topology of this command" if built else "topology file"
        )
        if built and not large:
            what = (
                f"{what} (optcoll bound, optcoll trees and the Python API take up to "
                f"{MAX_BUILT_NODES} nodes)"
            )
        raise error(
            f"{what} would have {_amount(nodes)} nodes and {_amount(links)} directed links; "
            f"every {kind} is limited to {most_nodes} nodes and {most_links} links (building "
            "alone would take minutes and gigabytes): choose a smaller size"
        )


def check_count(
    value: int, limit: int, what: str, error: type[OptCollError] = ArgumentError
) -> int:
    """``value`` if it is at most ``limit``; else ``error`` naming ``what`` (a field or flag)."""
    if value > limit:
        raise error(
            f"{what} is {_amount(value)}; optcoll accepts at most {limit} (the limit every "
            "input shares): choose a smaller size"
        )
    return value


def check_nesting(
    root: Any, what: str, error: type[OptCollError] = ArgumentError, limit: int = MAX_NESTING
) -> None:
    """Refuse an XML element tree (:mod:`xml.etree.ElementTree`) nested deeper than
    ``limit``, walked without recursion (a recursive reader would hit Python's limit).

    Examples
    --------
    >>> import xml.etree.ElementTree as ElementTree
    >>> check_nesting(ElementTree.fromstring("<a>" * 3 + "</a>" * 3), "x.xml", limit=3)
    >>> check_nesting(ElementTree.fromstring("<a>" * 4 + "</a>" * 4), "x.xml", limit=3)
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ArgumentError: x.xml: elements are nested more than 3 deep (<a> at depth 4); no format optcoll reads nests that deep
    """
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        if depth > limit:
            raise error(
                f"{what}: elements are nested more than {limit} deep (<{element.tag}> at depth "
                f"{depth}); no format optcoll reads nests that deep"
            )
        stack.extend((child, depth + 1) for child in element)


def is_decimal(text: str) -> bool:
    """True for ASCII decimal digits only (``str.isdigit`` also takes ``²`` and ``٣``).

    Examples
    --------
    >>> is_decimal("12"), is_decimal("²"), is_decimal("")
    (True, False, False)
    """
    return bool(_DECIMAL.match(text))


def count_value(
    value: Any,
    what: str,
    limit: int,
    error: type[OptCollError] = ArgumentError,
    least: int = 1,
) -> int:
    """A count given as an int or as decimal text (a command-line option), from ``least``
    to ``limit``; else ``error`` naming ``what``.

    Examples
    --------
    >>> count_value("4", "boxes", MAX_NODES)
    4
    >>> count_value("²", "boxes", MAX_NODES)
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ArgumentError: boxes must be a positive integer, got '²'
    """
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif text is not None and is_decimal(text):
        number = int(text)
    else:
        number = None
    if number is None or number < least:
        wanted = "a positive integer" if least == 1 else f"an integer >= {least}"
        raise error(f"{what} must be {wanted}, got {value!r}")
    return check_count(number, limit, what, error)


def _amount(count: int) -> str:
    """``count`` in digits, or as a power of two when it has more than 15 digits."""
    return str(count) if count < 10**15 else f"about 2^{count.bit_length() - 1}"
