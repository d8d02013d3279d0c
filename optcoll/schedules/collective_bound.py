"""One bandwidth lower bound per collective and model, with the schedules it holds for.

``plan``, ``simulate``, ``compare`` and ``bound`` all divide by :func:`collective_bound`:

* allgather: the cut bound r* (every allgather; attained);
* reduce-scatter: r* of the reversed topology (every reduce-scatter; attained);
* allreduce: the largest of the cut bound r* (an allreduce of inputs that vanish outside
  each node's shard is an allgather: every allreduce), the partition bound
  (:mod:`optcoll.bounds.partition`: every allreduce in which only compute nodes reduce)
  and, where switches reduce, the reduction cut ``M / lambda``
  (:func:`optcoll.bounds.in_network.reduction_cut`: every allreduce);
* broadcast and reduce: the min-cut bound from (to) the root; all-to-all: t*.

The bound is a time factor per byte of the collective's data (``data_bytes``: ``M / N`` for
allgather, reduce-scatter, allreduce and all-to-all, ``M`` for broadcast and reduce), as
:func:`optcoll.schedules.collectives.collective_lower_bound`, whose reduce-scatter +
allgather sum is *not* a bound on every allreduce.

Examples
--------
>>> from optcoll.topologies import build
>>> bound = collective_bound(build("torus:8x8"), "allreduce")
>>> bound.time_factor, bound.holds_for
(Fraction(63, 200), 'every allreduce in which only compute nodes reduce')
>>> collective_bound(build("mesh:4x4"), "allreduce").time_factor / 16  # per byte of M
Fraction(1, 160)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from optcoll.bounds.cut_ratio import optimal_cut_ratio_core
from optcoll.bounds.in_network import reduction_cut
from optcoll.bounds.partition import COLLECTIVES, PartitionBound, partition_bound
from optcoll.bounds.startup import StartupBound, startup_bound
from optcoll.core.schedule import canonical_collective
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError
from optcoll.schedules.collectives import collective_lower_bound_core, reversed_topology

__all__ = ["CollectiveBound", "collective_bound"]


@dataclass(frozen=True)
class CollectiveBound:
    """The lower bound of a collective on a topology.

    Attributes
    ----------
    collective : str
    time_factor : Fraction
        Per byte of the collective's data (module docstring), in 1/bandwidth unit.
    holds_for : str
        The class of schedules no member of which is faster.
    name : str
        Which bound it is (``"cut bound r*"``, ``"partition bound"``, ...).
    partition : PartitionBound or None
        The certificate when the partition bound is the largest.
    cut : frozenset of str or None
        The bottleneck node set of r* (allgather) or of the reversed topology's r*
        (reduce-scatter), for :meth:`startup`.
    """

    collective: str
    time_factor: Fraction
    holds_for: str
    name: str
    partition: PartitionBound | None = None
    cut: frozenset[str] | None = None

    def describe(self) -> str:
        """``name (holds for ...)``, for reports."""
        return f"{self.name}: holds for {self.holds_for}"

    def startup(
        self,
        topology: Topology,
        *,
        overhead: Fraction | float,
        default_latency: Fraction,
        root: str | None = None,
    ) -> StartupBound:
        """The window cuts (:func:`optcoll.bounds.startup.startup_bound`) of this
        collective under a per-step ``overhead`` and link latencies, from this bound's
        cut or partition: they hold for the same schedules, as the simulator runs them."""
        partition = None
        if self.partition is not None:
            p = self.partition
            share = COLLECTIVES[p.collective] * (p.compute_parts - 1) * p.crossings
            partition = (p.parts, Fraction(share))
        return startup_bound(
            topology, self.collective, overhead=overhead, default_latency=default_latency,
            root=root, cut=self.cut, partition=partition,
        )  # fmt: skip


def collective_bound(
    topology: Topology, collective: str, root: str | None = None
) -> CollectiveBound:
    """The bound of the module docstring (``root`` for broadcast and reduce).

    Raises
    ------
    ArgumentError
        A broadcast or reduce without a root.
    """
    collective = canonical_collective(collective)
    n = topology.num_compute
    if collective == "allreduce":
        cut = collective_lower_bound_core(topology, "allgather")
        assert cut is not None
        best = CollectiveBound(collective, cut, "every allreduce", "cut bound r*")
        if topology.has_in_network:
            lam = n * reduction_cut(topology).time_factor
            if lam > best.time_factor:
                best = CollectiveBound(collective, lam, "every allreduce", "reduction cut M/lambda")
        try:
            partition = partition_bound(topology, "allreduce")
        except ArgumentError:  # no partition without a combining switch between its parts
            return best
        if n * partition.time_factor > best.time_factor:
            holds = (
                "every allreduce (reducing switches inside compute parts)"
                if topology.has_in_network
                else partition.holds_for
            )
            best = CollectiveBound(
                collective, n * partition.time_factor, holds, "partition bound", partition
            )
        return best
    if collective in ("allgather", "reduce_scatter"):
        graph = topology if collective == "allgather" else reversed_topology(topology)
        found = optimal_cut_ratio_core(graph)
        names = {"allgather": "cut bound r*", "reduce_scatter": "cut bound r* (reversed)"}
        return CollectiveBound(
            collective, found.ratio, f"every {collective.replace('_', '-')}",
            names[collective], cut=found.bottleneck_cut,
        )  # fmt: skip
    factor = collective_lower_bound_core(topology, collective, root)
    if factor is None:
        raise ArgumentError(f"a {collective} bound needs a root")
    name = "all-to-all bound t*" if collective == "alltoall" else "min-cut bound"
    return CollectiveBound(collective, factor, f"every {collective.replace('_', '-')}", name)
