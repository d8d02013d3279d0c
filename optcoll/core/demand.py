"""A traffic demand: the bytes every compute node sends every other (an all-to-allv).

A :class:`Demand` is an ``N x N`` matrix of non-negative integers over the compute
nodes of a topology, in its rank order (:attr:`~optcoll.core.topology.Topology.compute_nodes`):
row = source, column = destination. The **diagonal** is what a rank keeps for
itself (a local copy in ``all_to_all_single``): it is accepted, kept, and never
crosses a link, so bounds and schedules ignore it (:attr:`Demand.local_bytes`).

Two ways in besides a plain matrix (:func:`demand_matrix`): PyTorch's
``all_to_all_single`` split sizes (:func:`demand_from_splits`: rank ``r``'s
``input_split_sizes[d]`` elements go to rank ``d``) and the uniform all-to-all
(:func:`uniform_demand`). Files are read by :mod:`optcoll.io.demand`.

Examples
--------
>>> d = demand_matrix([[5, 1], [2, 0]], ("a", "b"))
>>> d.pairs(), d.total_bytes, d.local_bytes
({('a', 'b'): 1, ('b', 'a'): 2}, 3, 5)
>>> demand_from_splits([[0, 3], [4, 0]], element_bytes=2, ranks=("a", "b")).pairs()
{('a', 'b'): 6, ('b', 'a'): 8}
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optcoll.exceptions import ArgumentError, shown

__all__ = ["MAX_BYTES", "Demand", "demand_matrix", "demand_from_splits", "uniform_demand"]

#: Largest entry accepted (2**53 bytes, 9 PB): every entry and ratio stays exact in the
#: solver's floating point, which mangles models whose coefficients span 40 decades.
MAX_BYTES = 2**53


@dataclass(frozen=True)
class Demand:
    """``bytes[i][j]``: what compute node ``ranks[i]`` sends ``ranks[j]`` (exact integers).

    ``origin`` says where the matrix came from (a file, a generator), for messages.
    """

    ranks: tuple[str, ...]
    bytes: tuple[tuple[int, ...], ...]
    origin: str = "demand"

    def pairs(self) -> dict[tuple[str, str], int]:
        """The positive off-diagonal entries, ``(source, destination) -> bytes``, row by row."""
        return {
            (s, d): b
            for s, row in zip(self.ranks, self.bytes, strict=True)
            for d, b in zip(self.ranks, row, strict=True)
            if b and s != d
        }

    @property
    def total_bytes(self) -> int:
        """Bytes that cross the network (the off-diagonal sum)."""
        return sum(self.pairs().values())

    @property
    def local_bytes(self) -> int:
        """Bytes each rank keeps (the diagonal sum): never on a link."""
        return sum(row[i] for i, row in enumerate(self.bytes))

    def transposed(self) -> Demand:
        """The reverse traffic (an MoE combine is its dispatch transposed)."""
        n = len(self.ranks)
        rows = tuple(tuple(self.bytes[j][i] for j in range(n)) for i in range(n))
        return Demand(self.ranks, rows, f"{self.origin} (transposed)")

    def scaled(self, factor: int) -> Demand:
        """Every entry times the positive integer ``factor``."""
        rows = tuple(tuple(b * factor for b in row) for row in self.bytes)
        return Demand(self.ranks, rows, self.origin)


def _entry(value: Any, where: str) -> int:
    """A non-negative integer entry (an integral float such as ``3.0`` is accepted)."""
    if isinstance(value, bool):
        raise ArgumentError(
            f"{where}: expected a non-negative integer number of bytes, got {value!r}"
        )
    if isinstance(value, numbers.Integral):
        number = int(value)
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        number = int(float(value))
    else:
        raise ArgumentError(
            f"{where}: expected a non-negative integer number of bytes, got {shown(value)}"
        )
    if number < 0:
        raise ArgumentError(f"{where}: bytes must be non-negative, got {number}")
    if number > MAX_BYTES:
        raise ArgumentError(f"{where}: more than 2**53 bytes (9 PB), the most an entry may be")
    return number


def demand_matrix(rows: Any, ranks: Sequence[str], origin: str = "demand") -> Demand:
    """Check ``rows`` (an ``N x N`` nested sequence of non-negative integers) against ``ranks``.

    Raises
    ------
    ArgumentError
        Naming ``origin``, the row and the column at fault: a wrong number of rows or
        columns, an entry that is not a non-negative integer (``2.5``, ``-1``, ``NaN``,
        ``True``), or no byte crossing the network at all.

    Examples
    --------
    >>> demand_matrix([[0, 1], [2]], ("a", "b"), "m.json")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ArgumentError: m.json: row 1 (rank b) has 1 entries; the topology has 2 compute nodes
    """
    n = len(ranks)
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise ArgumentError(f"{origin}: expected a list of {n} rows, got {shown(rows)}")
    if len(rows) != n:
        raise ArgumentError(
            f"{origin}: {len(rows)} rows, but the topology has {n} compute nodes "
            "(one row per rank, in rank order)"
        )
    checked = []
    for i, row in enumerate(rows):
        where = f"{origin}: row {i} (rank {ranks[i]})"
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
            raise ArgumentError(f"{where}: expected a list of {n} entries, got {shown(row)}")
        if len(row) != n:
            raise ArgumentError(
                f"{where} has {len(row)} entries; the topology has {n} compute nodes"
            )
        checked.append(
            tuple(_entry(x, f"{where}, column {j} (rank {ranks[j]})") for j, x in enumerate(row))
        )
    demand = Demand(tuple(ranks), tuple(checked), origin)
    if not demand.total_bytes:
        raise ArgumentError(f"{origin}: no byte leaves its rank (every off-diagonal entry is 0)")
    return demand


def demand_from_splits(
    input_split_sizes: Any,
    *,
    element_bytes: int,
    ranks: Sequence[str],
    output_split_sizes: Any = None,
    origin: str = "splits",
) -> Demand:
    """The demand of PyTorch's ``all_to_all_single`` from every rank's split sizes.

    Rank ``r`` passes ``input_split_sizes[r]`` (``N`` element counts: what it sends to
    each rank) and ``output_split_sizes[r]`` (what it receives from each). Bytes are
    counts times ``element_bytes``. When the output splits are given they must agree:
    ``output_split_sizes[d][r] == input_split_sizes[r][d]``.

    Raises
    ------
    ArgumentError
        A malformed split list, a non-positive ``element_bytes``, or output splits that
        disagree with the input splits (naming both ranks).

    Examples
    --------
    >>> demand_from_splits([[1, 2], [3, 4]], element_bytes=4, ranks=("a", "b"),
    ...                    output_split_sizes=[[1, 3], [5, 4]])
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ArgumentError: splits: rank b's output_split_sizes[a] is 5, but rank a's input_split_sizes[b] is 2
    """
    size = _entry(element_bytes, f"{origin}: element_bytes")
    if size == 0:
        raise ArgumentError(f"{origin}: element_bytes must be positive")
    counts = demand_matrix(input_split_sizes, ranks, f"{origin}: input_split_sizes")
    if output_split_sizes is not None:
        received = Demand(
            counts.ranks,
            demand_matrix(output_split_sizes, ranks, f"{origin}: output_split_sizes").bytes,
        )
        for d, row in enumerate(received.bytes):
            for s, x in enumerate(row):
                if x != counts.bytes[s][d]:
                    raise ArgumentError(
                        f"{origin}: rank {ranks[d]}'s output_split_sizes[{ranks[s]}] is {x}, "
                        f"but rank {ranks[s]}'s input_split_sizes[{ranks[d]}] is "
                        f"{counts.bytes[s][d]}"
                    )
    return Demand(counts.ranks, counts.scaled(size).bytes, origin)


def uniform_demand(ranks: Sequence[str], piece: int = 1) -> Demand:
    """Every rank sends ``piece`` bytes to every other (the all-to-all), nothing to itself.

    Examples
    --------
    >>> uniform_demand(("a", "b", "c"), 4).total_bytes
    24
    """
    n = len(ranks)
    rows = tuple(tuple(0 if i == j else piece for j in range(n)) for i in range(n))
    return Demand(tuple(ranks), rows, f"uniform all-to-all of {piece} bytes per pair")
