"""The restricted master LP of fractional spanning-arborescence packing.

On a switch-free directed graph with compute nodes ``V`` and capacities ``c``,
the master LP has one variable ``x_T >= 0`` per spanning arborescence ``T``
rooted at some ``r``:

    minimise t  subject to  sum_{T rooted at r} x_T = 1          for every root r
                            sum_{T ∋ a} x_T <= t * c(a)           for every arc a

Its optimum is the optimal allgather cut ratio r* = max_S |S| / B+(S)
(Edmonds' branching theorem; ForestColl, arXiv 2402.06787). There are
exponentially many arborescences, so it is solved over a growing set of
columns (:func:`build_tree_master`); the column generation, its pricing and
the exact weights are :func:`optcoll.schedules.tree_packing.fractional_tree_packing`.

Examples
--------
>>> master = build_tree_master(["a", "b"], {("a", "b"): 1, ("b", "a"): 1},
...                            [("a", (("a", "b"),)), ("b", (("b", "a"),))])
>>> sorted(c.name for c in master.constraints())
['block_0', 'block_1', 'cap_0', 'cap_1']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulp

from formulations.column_generation import Column as GenericColumn
from formulations.column_generation import build_master
from formulations.network import Arc

__all__ = ["build_tree_master", "Column"]

#: A column of the master: a root and its arborescence's arcs.
Column = tuple[str, tuple[Arc, ...]]


def build_tree_master(
    roots: Sequence[str],
    capacity: Mapping[Arc, int],
    columns: Sequence[Column],
) -> pulp.LpProblem:
    """The restricted master LP over ``columns`` (no side effects).

    The packing master of :func:`formulations.column_generation.build_master`
    with root number ``R`` as block ``R`` and each arc loaded once: variables
    ``t`` and ``x_J`` (column number ``J``); rows ``block_R`` (root number
    ``R``'s weights sum to 1) and ``cap_A`` (arc number ``A`` of ``capacity``'s
    order: ``sum_{J ∋ A} x_J <= capacity[A] * t``).

    Examples
    --------
    >>> master = build_tree_master(["a", "b"], {("a", "b"): 2, ("b", "a"): 1},
    ...                            [("a", (("a", "b"),)), ("b", (("b", "a"),))])
    >>> len(master.variables()), len(master.constraints())
    (3, 4)
    """
    index = {r: i for i, r in enumerate(roots)}
    return build_master(
        len(roots),
        capacity,
        [GenericColumn(index[root], tuple((arc, 1) for arc in arcs)) for root, arcs in columns],
    )
