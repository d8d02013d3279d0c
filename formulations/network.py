"""What the models read of a network: a structural type, so they import no topology class.

:class:`optcoll.core.topology.Topology` satisfies :class:`Network` as it is (``typing``
matches members, not base classes); any object with these members does. The
models read node ids and the integer-scaled capacities, nothing else, and raise
their own errors naming ``name``.

Examples
--------
>>> from fractions import Fraction
>>> class Pair:
...     name = "pair"
...     node_ids = compute_nodes = ("a", "b")
...     switch_nodes = ()
...     def integer_capacities(self):
...         return {("a", "b"): 1, ("b", "a"): 1}, Fraction(25)
...     def short_switches(self):
...         return []
>>> from optcoll.bounds.congestion import congestion_bound
>>> found = congestion_bound(Pair())
>>> found.cut_ratio, found.cut
(Fraction(1, 25), frozenset({'a'}))
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from fractions import Fraction
from typing import Protocol

from formulations.errors import MethodError

__all__ = ["Network", "Arc", "check_capacity", "FLOAT_EXACT_LIMIT"]

#: A directed arc ``(tail, head)`` between two node ids.
Arc = tuple[str, str]

#: Integers up to this size are exact as floats, so a model built from them is exact
#: (and its optimum can be recovered and proved exactly, :mod:`optcoll.lp.exact`).
FLOAT_EXACT_LIMIT = 2**53


def check_capacity(nodes: Collection[str], capacity: Mapping[Arc, int]) -> None:
    """Check that every arc joins two of ``nodes`` with a positive integer capacity
    exact as a float (at most :data:`FLOAT_EXACT_LIMIT`).

    Raises
    ------
    MethodError
        Naming the first arc at fault.

    Examples
    --------
    >>> check_capacity(["a", "b"], {("a", "b"): 2})
    >>> try:
    ...     check_capacity(["a", "b"], {("a", "c"): 2})
    ... except MethodError as err:
    ...     print(err)
    arc ('a', 'c') joins a node outside the node list
    """
    known = set(nodes)
    for arc, c in capacity.items():
        if arc[0] not in known or arc[1] not in known:
            raise MethodError(f"arc {arc!r} joins a node outside the node list")
        if isinstance(c, bool) or not isinstance(c, int) or c <= 0:
            raise MethodError(
                f"arc {arc!r} has capacity {c!r}; capacities must be positive integers"
            )
        if c > FLOAT_EXACT_LIMIT:
            raise MethodError(
                f"arc {arc!r} has capacity {c}, above 2**53: the LP's floats would round it, "
                f"so its optimum could not be proved exactly; use the combinatorial method"
            )


class Network(Protocol):
    """A network as the models see it (:class:`optcoll.core.topology.Topology` is one).

    ``node_ids`` lists every node, ``compute_nodes`` the compute nodes (in rank
    order) and ``switch_nodes`` the rest; ``integer_capacities()`` gives every
    arc's capacity as an integer and the bandwidth one integer unit stands for;
    ``short_switches()`` the switches with less capacity in than out.
    """

    @property
    def name(self) -> str: ...

    @property
    def node_ids(self) -> Sequence[str]: ...

    @property
    def compute_nodes(self) -> Sequence[str]: ...

    @property
    def switch_nodes(self) -> Sequence[str]: ...

    def integer_capacities(self) -> tuple[Mapping[Arc, int], Fraction]: ...

    def short_switches(self) -> Sequence[str]: ...
