"""Checks of the public API's arguments: a misuse is an :class:`ArgumentError` naming the argument.

Each check returns the argument in the form the function works with (a
:class:`~fractions.Fraction`, a :class:`~pathlib.Path`, a canonical name), so a
public function starts with one line per argument and the code below it never
sees a wrong type.

Examples
--------
>>> count_argument(4, "k")
4
>>> count_argument(0, "k")
Traceback (most recent call last):
...
optcoll.exceptions.ArgumentError: k must be a positive integer, got 0
>>> choice_argument("lp", ("combinatorial", "lp"), "method")
'lp'
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Collection
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from optcoll.core.limits import check_bandwidth_range
from optcoll.core.rational import exact_number
from optcoll.core.schedule import Schedule, canonical_collective
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, ScheduleError, shown

__all__ = [
    "instance_argument",
    "topology_argument",
    "as_topology",
    "schedule_argument",
    "collective_argument",
    "choice_argument",
    "count_argument",
    "size_argument",
    "text_argument",
    "path_argument",
    "node_argument",
    "number_argument",
    "flag_argument",
]

T = TypeVar("T")


def instance_argument(value: Any, kind: type[T], name: str, hint: str = "") -> T:
    """``value`` if it is a ``kind``, else an :class:`ArgumentError` naming ``name``.

    Examples
    --------
    >>> instance_argument(3, int, "n")
    3
    """
    if not isinstance(value, kind):
        extra = f" ({hint})" if hint else ""
        raise ArgumentError(
            f"{name} must be a {kind.__name__}{extra}, got {shown(value)} ({type(value).__name__})"
        )
    return value


def topology_argument(value: Any, name: str = "topology") -> Topology:
    """``value`` if it is a :class:`~optcoll.core.topology.Topology`.

    Examples
    --------
    >>> topology_argument("ring:4")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ArgumentError: topology must be a Topology (optcoll.load_topology reads a file or a built-in spec), got 'ring:4' (str)
    """

    return instance_argument(
        value, Topology, name, "optcoll.load_topology reads a file or a built-in spec"
    )


def as_topology(value: Any, name: str = "topology") -> Topology:
    """``value`` if it is a :class:`~optcoll.core.topology.Topology`; a networkx graph as
    one (:meth:`~optcoll.core.topology.Topology.from_networkx`, bandwidth in the edge
    attribute ``bandwidth``); either with every bandwidth in
    :data:`~optcoll.core.limits.BANDWIDTH_RANGE` (as the command line requires).

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.complete_graph(3)
    >>> nx.set_edge_attributes(g, 10, "bandwidth")
    >>> as_topology(g).compute_nodes
    ('0', '1', '2')
    """
    if isinstance(value, Topology):
        topology = value
    elif type(value).__module__.startswith("networkx."):
        topology = Topology.from_networkx(value)
    else:
        topology = topology_argument(value, name)  # the error naming what is valid
    check_bandwidth_range(topology.capacity, topology.name, topology.bandwidth_unit)
    return topology


def schedule_argument(value: Any, name: str = "schedule") -> Schedule:
    """``value`` if it is a :class:`~optcoll.core.schedule.Schedule`."""

    return instance_argument(
        value, Schedule, name, "optcoll.solve(...).schedule or optcoll.io.load_schedule"
    )


def collective_argument(value: Any, name: str = "collective") -> str:
    """The canonical name of the collective ``value`` (``reduce-scatter`` -> ``reduce_scatter``).

    Examples
    --------
    >>> collective_argument("Reduce-Scatter")
    'reduce_scatter'
    """

    text = text_argument(value, name)
    try:
        return canonical_collective(text)
    except ScheduleError as error:
        raise ArgumentError(f"{name}: {error}") from None


def choice_argument(value: Any, choices: Collection[str], name: str) -> str:
    """``value`` if it is one of ``choices`` (listed in the error)."""
    text = text_argument(value, name)
    if text not in choices:
        raise ArgumentError(f"{name} {text!r} is not one of {', '.join(sorted(choices))}")
    return text


def count_argument(value: Any, name: str) -> int:
    """``value`` as an ``int`` if it is a positive integer (``bool`` is not a count)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ArgumentError(f"{name} must be a positive integer, got {shown(value)}")
    return int(value)


def size_argument(value: Any, name: str) -> int:
    """``value`` as an ``int`` if it is a non-negative integer (a byte count)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ArgumentError(f"{name} must be a non-negative integer, got {shown(value)}")
    return int(value)


def text_argument(value: Any, name: str) -> str:
    """``value`` if it is a ``str``."""
    if not isinstance(value, str):
        raise ArgumentError(f"{name} must be a string, got {shown(value)} ({type(value).__name__})")
    return value


def path_argument(value: Any, name: str = "path") -> Path:
    """``value`` as a :class:`~pathlib.Path` if it is a ``str`` or an ``os.PathLike``."""
    if not isinstance(value, str | os.PathLike):
        raise ArgumentError(
            f"{name} must be a file path (str or pathlib.Path), got {shown(value)} "
            f"({type(value).__name__})"
        )
    return Path(value)


def node_argument(topology: Topology, value: Any, name: str) -> str:
    """``value`` if it names a compute node of ``topology``."""
    text = text_argument(value, name)
    if text not in topology.node:
        raise ArgumentError(f"{name} {text!r} is not a node of {topology.name}")
    if text not in topology.compute_nodes:
        raise ArgumentError(f"{name} {text!r} is a switch, not a compute node of {topology.name}")
    return text


def number_argument(value: Any, name: str, *, minimum: Fraction | int = 0) -> Fraction:
    """``value`` as an exact :class:`~fractions.Fraction` if it is a number ``>= minimum``.

    Integers, fractions, finite floats (by their shortest decimal) and ``"p/q"``
    strings are numbers, as in topology files.

    Examples
    --------
    >>> number_argument(0.5, "latency")
    Fraction(1, 2)
    """

    try:
        number = exact_number(value, name)
    except ValueError as error:
        raise ArgumentError(str(error)) from None
    if number < minimum:
        raise ArgumentError(f"{name} must be at least {minimum}, got {shown(value)}")
    return number


def flag_argument(value: Any, name: str) -> bool:
    """``value`` if it is a ``bool`` (``progress='yes'`` is not ``True``).

    Examples
    --------
    >>> flag_argument(False, "progress")
    False
    """
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be True or False, got {shown(value)}")
    return value
