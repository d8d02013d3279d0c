"""Birkhoff-von Neumann decomposition of a demand: phases in which every rank sends to one rank.

FLASH (Zhang et al., arXiv 2505.09764) schedules an uneven all-to-all as a sequence of
**phases**, each a permutation (every rank sends to exactly one rank and receives from
exactly one), so that no receiver is ever the target of two senders at once. The phases
come from the Birkhoff-von Neumann theorem: a nonnegative matrix whose rows and columns
all sum to ``L`` is a sum of permutation matrices with nonnegative weights.

:func:`birkhoff_phases` first **pads** the demand ``D`` (its off-diagonal part) with a
nonnegative ``P`` so that every row and column of ``D + P`` sums to ``L``, the largest
row or column sum of ``D`` (row deficits filled into column deficits greedily, a
transportation problem whose totals agree). Then, while anything is left, it takes a
perfect matching on the positive entries (one exists: König's theorem on a matrix of
equal line sums; Hopcroft-Karp, SciPy), removes its smallest entry ``lambda`` times that
permutation, and records the phase: each rank ``i`` sends ``pi(i)`` at most ``lambda``
bytes, real bytes before padding. Every step empties an entry, so there are at most
``nnz(D + P)`` phases; all amounts are integers. The phases' ``lambda`` sum to ``L``.

Examples
--------
>>> phases = birkhoff_phases([[0, 4, 0], [0, 0, 2], [1, 0, 0]])
>>> [(p.weight, p.pairs) for p in phases]
[(2, {(0, 1): 2}), (2, {(0, 1): 2, (1, 2): 2, (2, 0): 1})]
>>> sum(p.weight for p in phases)  # the largest row or column sum
4
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optcoll.exceptions import ArgumentError

__all__ = ["BirkhoffPhase", "birkhoff_phases"]


@dataclass(frozen=True)
class BirkhoffPhase:
    """One permutation of the decomposition: ``weight`` (lambda, bytes), ``permutation[i]``
    the rank ``i`` sends to (itself: idle), ``pairs`` the real bytes ``(i, j) -> b``
    (``0 < b <= weight``) sent in this phase."""

    weight: int
    permutation: tuple[int, ...]
    pairs: dict[tuple[int, int], int]


def birkhoff_phases(matrix: Sequence[Sequence[int]]) -> list[BirkhoffPhase]:
    """The phases of the padded demand ``matrix`` (``N x N`` non-negative integers; the
    diagonal is ignored: it never travels). See the module docstring.

    Raises
    ------
    ArgumentError
        Not a square matrix of non-negative integers.

    Examples
    --------
    A uniform demand is ``N - 1`` shifts:

    >>> [sorted(p.pairs) for p in birkhoff_phases([[0, 1, 1], [1, 0, 1], [1, 1, 0]])]
    [[(0, 2), (1, 0), (2, 1)], [(0, 1), (1, 2), (2, 0)]]
    """
    n = len(matrix)
    if any(len(row) != n for row in matrix):
        raise ArgumentError("the Birkhoff decomposition needs a square matrix")
    real: dict[tuple[int, int], int] = {}
    for i, row in enumerate(matrix):
        for j, b in enumerate(row):
            if isinstance(b, bool) or not isinstance(b, int) or b < 0:
                raise ArgumentError(f"entry ({i}, {j}) must be a non-negative integer, got {b!r}")
            if b and i != j:
                real[(i, j)] = b
    rows, cols = [0] * n, [0] * n
    for (i, j), b in real.items():
        rows[i] += b
        cols[j] += b
    line = max(rows + cols, default=0)
    total = dict(real)
    short_rows = [(i, line - r) for i, r in enumerate(rows) if r < line]
    short_cols = [(j, line - c) for j, c in enumerate(cols) if c < line]
    a = b = 0
    while a < len(short_rows) and b < len(short_cols):
        (i, need), (j, room) = short_rows[a], short_cols[b]
        amount = min(need, room)
        total[(i, j)] = total.get((i, j), 0) + amount
        short_rows[a], short_cols[b] = (i, need - amount), (j, room - amount)
        a += short_rows[a][1] == 0
        b += short_cols[b][1] == 0
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    phases = []
    while line > 0:
        keys = sorted(total)
        support = csr_matrix(
            (np.ones(len(keys)), ([i for i, _ in keys], [j for _, j in keys])), shape=(n, n)
        )
        match = maximum_bipartite_matching(support, perm_type="column")
        assert (match >= 0).all(), "a matrix of equal line sums has a perfect matching"
        permutation = tuple(int(j) for j in match)
        weight = min(total[(i, j)] for i, j in enumerate(permutation))
        pairs = {}
        for i, j in enumerate(permutation):
            left = total[(i, j)] - weight
            if left:
                total[(i, j)] = left
            else:
                del total[(i, j)]
            sent = min(weight, real.get((i, j), 0))
            if sent:
                pairs[(i, j)] = sent
                if real[(i, j)] == sent:
                    del real[(i, j)]
                else:
                    real[(i, j)] -= sent
        line -= weight
        phases.append(BirkhoffPhase(weight, permutation, pairs))
    assert not real, "every real byte is in a phase"
    return phases
