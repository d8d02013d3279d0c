"""The exact, size-independent cost terms of a method, and link latencies.

A :class:`Cost` holds:

* ``time_factor``, the exact bandwidth term: the max over links of the link's load
  divided by its bandwidth, loads counted in units of the data each piece carries.
  ``data(M) = M / N`` for allgather, reduce-scatter and allreduce (``M`` = the full
  vector) and ``data(M) = M`` for broadcast and reduce. No schedule runs faster than
  ``data(M) * time_factor``, and as ``M`` grows its algbw tends to ``N / time_factor``
  (allgather family) or ``1 / time_factor`` (broadcast, reduce): the asymptotic algbw;
* ``alpha``, the latency term: the per-link latencies (:func:`link_latencies`, from the
  topology file; ``default_latency`` for links that declare none) summed along the deepest
  root-to-leaf path of any tree, once per phase (a ring pays its slowest hop once per
  each of its ``N - 1`` steps);
* what the simulator runs (``schedule``, or ``trees`` in ``phases``), so that every
  size-dependent number (``optcoll compare``'s curves) comes from one model, the event
  simulator (:func:`optcoll.sim.size_plan.method_times`).

The costs of tree schedules are :func:`optcoll.sim.cost_model.schedule_cost`; those of the
baselines are computed by their builders (:mod:`optcoll.schedules.baselines`).

Examples
--------
>>> from optcoll.topologies import build
>>> link_latencies(build("dgx-a100:1"))[("b0.gpu0", "b0.nvswitch")]
Fraction(1, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from optcoll.core.schedule import Tree
from optcoll.core.topology import Topology

__all__ = ["DEFAULT_LATENCY", "Cost", "link_latencies", "path_latency"]

Arc = tuple[str, str]

#: Latency (µs) of a link whose topology entry declares none.
DEFAULT_LATENCY = Fraction(1)

_DATA_PER_NODE = ("allgather", "reduce_scatter", "allreduce", "alltoall")


@dataclass(frozen=True)
class Cost:
    """The exact terms of one method (see the module docstring).

    Attributes
    ----------
    method : str
        Display name, e.g. ``"optimal (k=13)"`` or ``"ring"``.
    collective : str
    num_compute : int
    time_factor : Fraction
        Exact bandwidth term in 1/(bandwidth unit), per ``data(M)``.
    alpha : Fraction
        Latency term in µs.
    schedule : Schedule, AggregationSchedule, GroupsSchedule or None
        What the simulator runs for this method (groups: every group's schedule at once).
    trees, phases
        Or trees that split the whole message among them, run in ``phases`` (the double
        binary tree).
    down
        An allreduce whose ``trees`` reduce and whose ``down`` trees then broadcast
        (reduce-scatter and allgather trees that differ).
    """

    method: str
    collective: str
    num_compute: int
    time_factor: Fraction
    alpha: Fraction
    schedule: Any = field(default=None, compare=False, repr=False)
    trees: tuple[Tree, ...] = field(default=(), compare=False, repr=False)
    phases: tuple[bool, ...] = ()
    down: tuple[Tree, ...] = field(default=(), compare=False, repr=False)

    @property
    def asymptotic_algbw(self) -> float:
        """``lim algbw(M)`` as ``M`` grows: ``N / time_factor`` or ``1 / time_factor``."""
        scale = self.num_compute if self.collective in _DATA_PER_NODE else 1
        return float(scale / self.time_factor)


def link_latencies(topology: Topology, default: Fraction = DEFAULT_LATENCY) -> dict[Arc, Fraction]:
    """Latency (µs) of every directed link: the largest its parallel links declare, ``default``
    for a link that declares none.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> link_latencies(build("dgx-a100:1"))[("b0.gpu0", "b0.nvswitch")]
    Fraction(1, 1)
    """
    declared: dict[Arc, Fraction] = {}
    for link in topology.links:
        value = default if link.latency is None else Fraction(str(link.latency))
        for arc in link.arcs():
            declared[arc] = max(declared.get(arc, Fraction(0)), value)
    return declared


def path_latency(path: Sequence[str], latency: dict[Arc, Fraction]) -> Fraction:
    """Sum of the latencies of the links along ``path``."""
    return sum((latency[a] for a in zip(path, path[1:], strict=False)), Fraction(0))
