"""Chakra traces of what ``optcoll plan`` chose at each size, as plan simulated it.

At a message size ``M``, :func:`optcoll.sim.size_plan.plan` simulates every candidate schedule
and keeps the fastest with the slice size and the link order it ran fastest with.
:func:`planned_traces` writes exactly that schedule as Chakra traces
(:func:`optcoll.export.chakra.chakra_traces` with ``slice_bytes``): each slice its own
message (so an ASTRA-sim switch forwards slices, not whole chunks), each transfer with its
place in its link's queue and its simulator task number, so that ``optcoll simulate`` of
the files gives plan's time (exactly where every slice has the same whole number of
bytes; otherwise slices differ by under a byte from the simulator's equal shares, which
can reorder slices that reach a link at the same instant). Where plan simulated the
schedule from its quotient (:mod:`optcoll.sim.quotient`), breaking ties alike on every
translate, the transfers carry those tie keys too (``optcoll_tie``).

A candidate that is not one tree schedule (NCCL's double binary tree, in-network
aggregation trees) has no trace form: the fastest candidate that is one is written
instead, and :attr:`PlannedTraces.chosen` says what plan chose.

ASTRA-sim's workload ``comm_size`` (:func:`astra_sim_comm_size`) is the size its native
collectives read: custom traces move the bytes written in them whatever it says, but a
workload that compares them with a native algorithm must give each the same data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from optcoll.core.cost import DEFAULT_LATENCY
from optcoll.core.schedule import Schedule
from optcoll.core.topology import Topology
from optcoll.exceptions import ExportError
from optcoll.export.chakra import chakra_traces
from optcoll.sim.quotient import schedule_quotient
from optcoll.sim.simulator import DEFAULT_OVERHEAD, DEFAULT_SLICE, Network
from optcoll.sim.size_plan import candidates, plan

__all__ = ["PlannedTraces", "planned_traces", "astra_sim_comm_size", "ASTRA_SIM_COMM_SIZE"]

#: What ASTRA-sim's workload ``comm_size`` is for each collective, in terms of optcoll's
#: message size ``M`` over ``N`` NPUs: the data each NPU puts in (astra-sim 518bd51,
#: ``astra-sim/system/astraccl/native_collectives/collective_algorithm/Ring.cc`` lines
#: 70-86 and ``HalvingDoubling.cc``: all-reduce ends with ``data_size``, all-gather with
#: ``data_size * nodes``, reduce-scatter with ``data_size / nodes``, all-to-all with
#: ``data_size``). optcoll's ``M`` is the whole buffer: the all-gather's output, the
#: reduce-scatter's input, the all-to-all's per-NPU buffer.
ASTRA_SIM_COMM_SIZE = {
    "allreduce": "M (each NPU's whole buffer)",
    "allgather": "M / N (each NPU's input; ASTRA-sim gathers N times it)",
    "reduce_scatter": "M (each NPU's whole input; ASTRA-sim leaves M / N)",
    "alltoall": "M (each NPU's whole buffer)",
}


def astra_sim_comm_size(collective: str, size: int, ranks: int) -> int | None:
    """The ``comm_size`` an ASTRA-sim workload node needs for optcoll's ``size``-byte
    ``collective`` over ``ranks`` NPUs (:data:`ASTRA_SIM_COMM_SIZE`), or None when no
    whole number of bytes is it (an all-gather of ``size`` not a multiple of ``ranks``)
    or ASTRA-sim runs no custom traces of the collective.

    Examples
    --------
    >>> astra_sim_comm_size("allgather", 2**20, 8), astra_sim_comm_size("allreduce", 2**20, 8)
    (131072, 1048576)
    >>> astra_sim_comm_size("allgather", 1000, 3) is None, astra_sim_comm_size("broadcast", 8, 2)
    (True, None)
    """
    if collective not in ASTRA_SIM_COMM_SIZE:
        return None
    if collective == "allgather":
        return size // ranks if size % ranks == 0 else None
    return size


@dataclass(frozen=True)
class PlannedTraces:
    """The traces of one size: what plan chose (``chosen``), what is written
    (``method``, ``schedule``, with ``slice_bytes`` and ``priority``), plan's simulated
    time of it (``time_us``) and its lower bound, and each rank's file (``traces``)."""

    size: int
    chosen: str
    method: str
    priority: str
    slice_bytes: int | None
    time_us: float
    lower_bound_us: float
    schedule: Schedule
    traces: tuple[bytes, ...]


def planned_traces(
    topology: Topology,
    collective: str,
    sizes: Sequence[int],
    *,
    root: str | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    default_latency: Fraction = DEFAULT_LATENCY,
    slice_bytes: int | None = DEFAULT_SLICE,
    choose_slice: bool = True,
    store_and_forward: bool = False,
) -> list[PlannedTraces]:
    """Plan ``collective`` on ``topology`` at each of ``sizes`` (the simulator's
    ``overhead``, ``default_latency``, ``slice_bytes``, ``choose_slice`` and
    ``store_and_forward``, as :func:`optcoll.sim.size_plan.plan`) and write the traces of
    each size's choice. ASTRA-sim's analytical backend stores and forwards every message
    at a switch: plan for it with ``store_and_forward=True``.

    Raises
    ------
    ExportError
        No candidate at some size is a tree schedule (all-to-all: plan's routes are
        written by ``export`` without a plan).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> [one] = planned_traces(build("ring:4"), "allgather", [2**20], overhead=0)
    >>> one.method, one.slice_bytes, len(one.traces)
    ('timetable (k=4)', 524288, 4)
    """
    if collective == "alltoall":
        raise ExportError("all-to-all traces follow the optimal routes: export them without a plan")
    rows = plan(
        topology,
        collective,
        sizes,
        root=root,
        overhead=overhead,
        slice_bytes=slice_bytes,
        default_latency=default_latency,
        choose_slice=choose_slice,
        store_and_forward=store_and_forward,
    )
    found = []
    for row in rows:
        method, priority, piece, schedule, time_us = (
            row.method, row.priority, row.slice_bytes, row.schedule, row.time_us,
        )  # fmt: skip
        if schedule is None:  # the fastest with a schedule: plan ran it in these orders
            ran = {m: (p, s) for m, p, s in row.orders}
            times = sorted((t, m) for m, t in row.candidates if t is not None and m in ran)
            schedule = None
            for t, m in times:
                schedule = _schedule_of(topology, collective, m, root)
                if schedule is not None:
                    method, time_us, (priority, piece) = m, t, ran[m]
                    break
            if schedule is None:
                raise ExportError(
                    f"at {row.size} bytes no candidate of plan is a tree schedule to write as "
                    "traces"
                )
        # plan simulates a schedule with a quotient from it, its ties alike on every translate
        network = Network.of(topology, default_latency, store_and_forward=store_and_forward)
        equivariant = schedule_quotient(schedule, topology, network) is not None
        traces = chakra_traces(schedule, row.size, slice_bytes=piece, equivariant=equivariant)
        found.append(
            PlannedTraces(
                row.size,
                row.method,
                method,
                priority,
                piece,
                time_us,
                row.lower_bound_us,
                schedule,
                tuple(traces),
            )  # fmt: skip
        )
    return found


def _schedule_of(
    topology: Topology, collective: str, method: str, root: str | None
) -> Schedule | None:
    """The schedule of plan's candidate ``method`` (None: not one tree schedule)."""
    for option in candidates(topology, collective, root=root):
        if option.method == method and option.schedule is not None:
            return option.schedule
    return None
