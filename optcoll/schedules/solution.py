"""The main job in one call: the optimal schedule of a collective, its bound, and its check.

:func:`solve` computes the exact lower bound of a collective on a topology (r*,
:mod:`optcoll.bounds.cut_ratio`, computed once), builds the schedule that reaches it
(:func:`optcoll.schedules.collectives.build_collective`), re-checks it with the independent
verifier (:mod:`optcoll.verify.schedule`) and returns one :class:`Solution`. ``optcoll solve``
is this function plus the report and the files.

What "optimal" means for each collective (the bandwidth model of docs/theory.md):

* allgather and broadcast: optimal among all schedules (the cut bound is attained);
* reduce-scatter and reduce: optimal among all schedules (the bound of the reversed
  topology is attained);
* allreduce: optimal among schedules made of a reduce-scatter followed by an
  allgather (time factor ``r*`` of each phase summed, ``2 r*`` on a symmetric
  topology); in-network reduction or interleaved phases are outside this bound;
  where it also attains the partition bound of single nodes or boxes
  (:func:`optcoll.bounds.partition.partition_bound`), optimal among all allreduce
  schedules in which only compute nodes reduce;
* all-to-all: optimal among all routings (t*, the max-concurrent-flow LP of
  :mod:`optcoll.schedules.alltoall`, exact);
* with ``k`` given: the best schedule with exactly ``k`` chunks per root.

Examples
--------
>>> import optcoll
>>> solution = optcoll.solve("dgx-a100:2", collective="allreduce")
>>> solution
Solution(allreduce on dgx-a100:2: algbw 173.333 GB/s, optimal among all allreduce schedules in which only compute nodes reduce (partition bound attained), k = 13, 32 trees, verified)
>>> solution.time_factor, solution.lower_bound, solution.bound.ratio
(Fraction(6, 65), Fraction(6, 65), Fraction(3, 65))
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optcoll.bounds.cut_ratio import CutRatio, optimal_cut_ratio_core
from optcoll.bounds.partition import PartitionBound, partition_bound
from optcoll.core.arguments import (
    as_topology,
    collective_argument,
    count_argument,
    flag_argument,
    node_argument,
    path_argument,
)
from optcoll.core.rational import fraction_text
from optcoll.core.schedule import DEFAULT_COLLECTIVE, Schedule, canonical_collective
from optcoll.core.topology import Topology
from optcoll.core.units import time_factor_meaning, time_factor_share
from optcoll.exceptions import SolveError
from optcoll.io import load_topology
from optcoll.schedules.alltoall import (
    alltoall_bound_core,
    alltoall_schedule_core,
)
from optcoll.schedules.collectives import (
    build_collective_core,
    collective_lower_bound_core,
    is_symmetric,
    packing_topology,
    reversed_topology,
)
from optcoll.verify.schedule import Verification, verify_schedule_core

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Solution", "solve", "optimality_claim"]

_ROOTED = ("broadcast", "reduce")


def optimality_claim(collective: str, k: int | None = None) -> str:
    """What the optimum of ``collective`` is optimal among, in words (the reports use it).

    Examples
    --------
    >>> optimality_claim("allreduce")
    'optimal among reduce-scatter + allgather schedules'
    >>> optimality_claim("allgather", k=1)
    'best with k = 1 chunk per root'
    """
    if k is not None:
        return f"best with k = {k} chunk{'s' * (k != 1)} per root"
    if canonical_collective(collective) == "allreduce":
        return "optimal among reduce-scatter + allgather schedules"
    return "optimal"


@dataclass(frozen=True, repr=False)
class Solution:
    """The result of :func:`solve`.

    Attributes
    ----------
    topology : Topology
    schedule : Schedule
        The verified schedule (``schedule.collective`` is the collective).
    lower_bound : Fraction
        The exact lower bound on the collective's time factor (see
        :func:`optcoll.schedules.collectives.collective_lower_bound`).
    bound : CutRatio or None
        The allgather cut ratio r* and its bottleneck cut of the topology whose trees
        were packed (the topology, or its reversal for reduce-scatter on an asymmetric
        topology); None for broadcast and reduce, whose bound is a rooted min cut.
    verification : Verification
        The independent verifier's verdict (always valid: :func:`solve` raises otherwise).
    fixed_k : bool
        True when ``k`` was given: the schedule is the best with that ``k``.
    seconds : float
        Wall-clock seconds of the whole computation.
    partition : PartitionBound or None
        Allreduce: the partition bound of single nodes and boxes
        (:func:`optcoll.bounds.partition.partition_bound` without the strength
        search), which holds for every allreduce in which only compute nodes reduce;
        where the schedule attains it, it is optimal among all of those.
    """

    topology: Topology
    schedule: Schedule
    lower_bound: Fraction
    bound: CutRatio | None
    verification: Verification
    fixed_k: bool = False
    seconds: float = field(default=0.0, compare=False)
    partition: PartitionBound | None = None

    @property
    def attains_partition_bound(self) -> bool:
        """True when the time factor equals the partition bound (per ``M/N``): no allreduce
        in which only compute nodes reduce is faster."""
        if self.partition is None:
            return False
        return self.time_factor == self.topology.num_compute * self.partition.time_factor

    @property
    def collective(self) -> str:
        """The collective's canonical name (``reduce_scatter`` with an underscore)."""
        return self.schedule.collective

    @property
    def time_factor(self) -> Fraction:
        """The schedule's exact time factor, as the verifier computed it."""
        assert self.verification.time_factor is not None
        return self.verification.time_factor

    @property
    def optimal(self) -> bool:
        """True when the time factor equals the lower bound."""
        return self.time_factor == self.lower_bound

    @property
    def algbw(self) -> float:
        """The schedule's algorithm bandwidth (message size over time) in bandwidth units."""
        algbw = self.schedule.algbw
        assert algbw is not None
        return algbw

    @property
    def optimal_algbw(self) -> float:
        """The algbw of the lower bound (the best any schedule of the claim can reach)."""
        n = 1 if self.collective in _ROOTED else self.topology.num_compute
        return float(n / self.lower_bound)

    @property
    def claim(self) -> str:
        """What the schedule is optimal among, or ``best with k = ...``."""
        if self.collective == "alltoall":
            if self.optimal:
                return "optimal"
            ratio = fraction_text(self.time_factor / self.lower_bound)
            return f"paths rounded to k = {self.schedule.k} chunks per pair: {ratio} times t*"
        if self.fixed_k:
            return optimality_claim(self.collective, self.schedule.k)
        if self.attains_partition_bound:
            return "optimal among all allreduce schedules in which only compute nodes reduce (partition bound attained)"
        return optimality_claim(self.collective) if self.optimal else "not optimal"

    def describe_bound(self) -> str:
        """The certificate of the lower bound in words (the bottleneck cut for all-to-all
        collectives, the rooted min cut for broadcast and reduce)."""
        if self.collective == "alltoall":
            return "t*, the exact optimum of the max-concurrent-flow LP (see All-to-all)"
        if self.bound is None:
            unit = self.topology.bandwidth_unit
            toward = "from" if self.collective == "broadcast" else "toward"
            cut = fraction_text(1 / self.lower_bound)
            return f"min cut {toward} root {self.schedule.root}: {cut} {unit}"
        reversed_note = (
            " (of the reversed topology)" if self.bound.topology is not self.topology else ""
        )
        return self.bound.describe_cut() + reversed_note

    def __repr__(self) -> str:
        unit = self.topology.bandwidth_unit
        root = "" if self.schedule.root is None else f" from {self.schedule.root}"
        k = "" if self.fixed_k else f", k = {self.schedule.k}"
        return (
            f"Solution({self.collective}{root} on {self.topology.name}: algbw "
            f"{self.algbw:.3f} {unit}, {self.claim}{k}, {self._parts()}, verified)"
        )

    def _parts(self) -> str:
        if self.collective == "alltoall":
            return f"{len(self.schedule.routes)} routes"
        return f"{len(self.schedule.trees)} trees"

    def _repr_html_(self) -> str:
        from html import escape

        rows = "".join(
            f"<tr><th style='text-align:left'>{escape(name)}</th><td>{escape(text)}</td></tr>"
            for name, text in self.report_rows()
        )
        return f"<table>{rows}</table>"

    def report_rows(self) -> list[tuple[str, str]]:
        """The ``optcoll solve`` report as (label, text) rows.

        Examples
        --------
        >>> import optcoll
        >>> for label, text in optcoll.solve("ring:4", collective="allgather").report_rows():
        ...     print(f"{label:<15} {text}")
        collective      allgather
        topology        ring:4 (4 compute nodes)
        algbw           266.667 GB/s  (time factor 3/200 per GB/s of M/N)
        optimum         266.667 GB/s  (lower bound 3/200 per GB/s of M/N)
        optimality      optimal
        bottleneck cut  every node except n0: 3 compute nodes behind 200 GB/s
        schedule        8 trees, k = 2 chunks per root, verified independently
        """
        unit = self.topology.bandwidth_unit
        n = self.topology.num_compute
        root = "" if self.schedule.root is None else f" from root {self.schedule.root}"
        tf = fraction_text(self.time_factor)
        chunks = "chunk" if self.schedule.k == 1 else "chunks"
        share = time_factor_share(self.collective)
        per = {"alltoall": "per pair", "broadcast": "of the message", "reduce": "of the message"}
        per_text = per.get(self.collective, "per root")
        return [
            ("collective", f"{self.collective.replace('_', '-')}{root}"),
            ("topology", f"{self.topology.name} ({n} compute nodes)"),
            ("algbw", f"{self.algbw:.3f} {unit}  (time factor {tf} per {unit} of {share})"),
            (
                "optimum",
                f"{self.optimal_algbw:.3f} {unit}  "
                f"(lower bound {fraction_text(self.lower_bound)} per {unit} of {share})",
            ),
            ("optimality", self.claim),
            *self._partition_rows(),
            ("bottleneck cut", self.describe_bound()),
            (
                "schedule",
                f"{self._parts()}, k = {self.schedule.k} {chunks} {per_text}, verified independently",
            ),
        ]

    def _partition_rows(self) -> list[tuple[str, str]]:
        """The partition bound's row (allreduce), when it is not already the claim."""
        if self.partition is None or self.attains_partition_bound:
            return []
        unit = self.topology.bandwidth_unit
        return [
            (
                "partition",
                f"{float(1 / self.partition.time_factor):.3f} {unit} at most for "
                f"{self.partition.holds_for} ({self.partition.method})",
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary in the vocabulary of the reports (exact numbers as ``"p/q"``)."""
        data: dict[str, Any] = {
            "collective": self.collective,
            "topology": self.topology.name,
            "topology_hash": self.topology.content_hash,
            "num_compute": self.topology.num_compute,
            "bandwidth_unit": self.topology.bandwidth_unit,
            "root": self.schedule.root,
            "k": self.schedule.k,
            "time_factor": fraction_text(self.time_factor),
            "time_factor_meaning": time_factor_meaning(
                self.collective, self.topology.bandwidth_unit
            ),
            "algbw": round(self.algbw, 3),
            "lower_bound": fraction_text(self.lower_bound),
            "optimal_algbw": round(self.optimal_algbw, 3),
            "optimal": self.optimal,
            "claim": self.claim,
            "trees": len(self.schedule.trees),
            "routes": len(self.schedule.routes),
            "verified": self.verification.valid,
        }
        if self.bound is not None:
            bound = self.bound.to_dict()
            data |= {
                "cut_ratio": bound["cut_ratio"],
                "bottleneck_cut": bound["bottleneck_cut"],
                "cut_compute": bound["cut_compute"],
                "cut_bandwidth": bound["cut_bandwidth"],
            }
        if self.partition is not None:
            data |= {
                "partition_bound": fraction_text(
                    self.topology.num_compute * self.partition.time_factor
                ),
                "partition_holds_for": self.partition.holds_for,
            }
        data["cut_description"] = self.describe_bound()
        data["seconds"] = round(self.seconds, 3)
        return data


def solve(
    topology: Topology | str | Path | nx.Graph,
    collective: str = DEFAULT_COLLECTIVE,
    *,
    k: int | None = None,
    root: str | None = None,
    progress: bool = False,
) -> Solution:
    """The verified optimal schedule of ``collective`` on ``topology``, with its bound.

    Parameters
    ----------
    topology : Topology, str, Path or networkx graph
        A topology, a topology file, a built-in spec such as ``"dgx-a100:2"``, or a
        networkx graph with edge attribute ``bandwidth`` (:meth:`Topology.from_networkx
        <optcoll.core.topology.Topology.from_networkx>`).
    collective : str
        ``allgather`` (default, as for every command), ``reduce-scatter`` (or
        ``reduce_scatter``), ``allreduce``, ``broadcast``, ``reduce`` or ``alltoall``.
    k : int, optional
        Chunks per root: the best schedule with exactly ``k`` (not for broadcast
        and reduce, which use the most trees their root allows).
    root : str, optional
        The root of a broadcast or reduce (default: the first compute node).
    progress : bool
        Show progress bars on stderr.

    Returns
    -------
    Solution

    Raises
    ------
    OptCollError
        Bad input (unknown topology, collective, root, or ``k`` for broadcast/reduce).
    SolveError
        The schedule failed the independent verification (an internal error).

    Examples
    --------
    >>> import optcoll
    >>> optcoll.solve("mi250:2", collective="allgather", k=1).algbw
    320.0
    """

    started = time.perf_counter()
    topo = as_topology(
        load_topology(path_argument(topology, "topology"))
        if isinstance(topology, (str, Path))
        else topology
    )
    collective = collective_argument(collective)
    k = None if k is None else count_argument(k, "k")
    root = None if root is None else node_argument(topo, root, "root")
    flag_argument(progress, "progress")
    bound = None
    if collective == "alltoall":
        optimum = alltoall_bound_core(topo, None)
        schedule = alltoall_schedule_core(topo, k, bound=optimum)
        lower = optimum.time_factor
    elif collective in _ROOTED:
        schedule = build_collective_core(topo, collective, k=k, root=root, progress=progress)
        rooted_lower = collective_lower_bound_core(topo, collective, schedule.root)
        assert rooted_lower is not None  # a broadcast/reduce schedule has its root
        lower = rooted_lower
    else:
        packed = packing_topology(topo, collective)
        packed_bound = optimal_cut_ratio_core(packed)
        bound = packed_bound
        if collective == "allreduce":
            bound = packed_bound if packed is topo else optimal_cut_ratio_core(topo)
            reverse = (
                bound if is_symmetric(topo) else optimal_cut_ratio_core(reversed_topology(topo))
            )
            lower = bound.ratio + reverse.ratio
        else:
            lower = bound.ratio
        schedule = build_collective_core(
            topo, collective, k=k, root=root, progress=progress, bound=packed_bound
        )
    check = verify_schedule_core(topo, schedule, optimum=lower)
    if not check.valid:
        raise SolveError(f"internal error: the schedule failed verification: {check.reason}")
    partition = None
    if collective == "allreduce":
        partition = partition_bound(topo, "allreduce", strength=False)
    return Solution(
        topo,
        schedule,
        lower,
        bound,
        check,
        fixed_k=k is not None,
        seconds=time.perf_counter() - started,
        partition=partition,
    )
