"""``optcoll plan --format msccl|mscclpp``: plan's rows in the times of the format's files.

Plan's own model (:mod:`optcoll.sim.size_plan`) times a schedule as its messages; an MSCCL
or MSCCL++ file runs it as thread blocks of steps, which cost differently: an MSCCL
receive is a step of its own with its overhead, a message crossing GPUs is relayed by a
receive and a send, and an MSCCL++ thread block costs its overhead once per op that
issues a transfer. So at each size the time printed for a format is the time its file
gets: :func:`~optcoll.export.planned_programs.file_choice` writes (in memory), simulates
and checks the files of plan's fastest candidates the format holds, and :func:`file_row`
makes the row from them: the fastest file's method, time, slice and order, each written
candidate's file time, and the candidates not written as files unsimulated.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.export.planned import ranked_choices
>>> from optcoll.export.planned_programs import CARRIED_ORDERS, file_choice, request_sim
>>> from optcoll.export.request import ExportRequest
>>> from optcoll.sim.size_plan import candidates, plan
>>> topology, request = build("hypercube:3"), ExportRequest("hypercube:3", "ag.xml", overhead=1)
>>> options = candidates(topology, "allgather")
>>> [row] = plan(topology, "allgather", [2**10], overhead=1, options=options,
...              every_candidate=True, orders=CARRIED_ORDERS["msccl"])
>>> [choice] = ranked_choices([row], options, topology)
>>> one = file_choice(request, topology, choice, request_sim(request))
>>> row.method, round(row.time_us, 3)  # plan's model: messages cross GPUs for free
('direct', 4.004)
>>> shown = file_row(row, one)
>>> shown.method, round(shown.time_us, 3)  # the MSCCL file: a receive is a step
('recursive doubling', 9.002)
>>> shown.ratio > 1
True
>>> from optcoll.export.planned_programs import file_bound
>>> own = file_bound(request, topology, request_sim(request))  # 3 hops of a send and a receive
>>> one = file_choice(request, topology, choice, request_sim(request), own=own)
>>> own[0], round(file_row(row, one).ratio, 4)
(Fraction(9, 1), 1.0002)
"""

from __future__ import annotations

from dataclasses import replace

from optcoll.core.schedule import Schedule
from optcoll.export.planned_programs import FileChoice
from optcoll.sim.size_plan import SizePlan

__all__ = ["file_row"]


def file_row(row: SizePlan, one: FileChoice) -> SizePlan:
    """``row`` (plan's at one size) in its format's file times: its fastest file ``one``'s
    method, time (the first placement's file), slice and link order, and every candidate's
    file time where :func:`~optcoll.export.planned_programs.file_choice` wrote one (the
    fastest of them where a candidate was written in two forms, e.g. as reduce +
    broadcast trees), None (not simulated as a file) for the others. The lower bound
    stays plan's (the files are run by the same simulator's rules, which it bounds),
    raised to the format's own where that is larger (``one.own_bound``, exact, e.g.
    :func:`optcoll.bounds.msccl_steps.msccl_step_bound`; ``one.own_holds`` is appended to
    ``holds_for``)."""
    filed: dict[str, float] = {}
    for ranked, time_us in one.compared:
        filed[ranked.method] = min(time_us, filed.get(ranked.method, time_us))
    ranked = one.ranked
    bound, floor, holds = row.bound, one.own_bound, one.own_holds
    if floor is not None and (bound is None or floor > bound):
        bound = floor
    return replace(
        row,
        method=ranked.method,
        time_us=one.times[0],
        candidates=tuple((method, filed.get(method)) for method, _ in row.candidates),
        slice_bytes=ranked.slice_bytes,
        priority=ranked.priority,
        schedule=ranked.schedule if isinstance(ranked.schedule, Schedule) else None,
        bound=bound,
        lower_bound_us=row.lower_bound_us if bound is None else float(bound),
        holds_for=row.holds_for + (f"; {holds}" if holds and floor is not None else ""),
    )
