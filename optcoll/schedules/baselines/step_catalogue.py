"""The log-step schedules that apply to each collective, by name.

One list for ``optcoll plan`` and ``optcoll compare``: every builder of
:mod:`optcoll.schedules.baselines.logstep` and :mod:`optcoll.schedules.baselines.swing`
that runs the collective, over the compute nodes in declaration order (their ranks), and
on two or more equal boxes the hierarchical ones of
:mod:`optcoll.schedules.baselines.hierarchical_steps`.

Examples
--------
>>> [s.method for s in step_schedules("abcdef", "allreduce")]
['recursive doubling', 'Rabenseifner', 'Swing', 'Swing (latency)']
>>> [s.method for s in step_schedules("abcdef", "broadcast")]
[]
>>> [s.method for s in step_schedules("abcd", "allgather", [["a", "b"], ["c", "d"]])][-1]
'hierarchical (recursive doubling + direct)'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import StepSchedule
from optcoll.schedules.baselines.hierarchical_steps import (
    ACROSS,
    hierarchical_allgather,
    hierarchical_allreduce,
    hierarchical_reduce_scatter,
)
from optcoll.schedules.baselines.logstep import (
    bruck_allgather,
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
)
from optcoll.schedules.baselines.swing import (
    swing_allgather,
    swing_allreduce,
    swing_latency_allreduce,
    swing_reduce_scatter,
)

__all__ = ["STEP_BUILDERS", "step_schedules"]

#: Per collective, the builders of its log-step schedules.
STEP_BUILDERS: dict[str, tuple[Callable[[Sequence[str]], StepSchedule], ...]] = {
    "allgather": (recursive_doubling_allgather, bruck_allgather, swing_allgather),
    "reduce_scatter": (recursive_halving_reduce_scatter, swing_reduce_scatter),
    "allreduce": (
        recursive_doubling_allreduce,
        rabenseifner_allreduce,
        swing_allreduce,
        swing_latency_allreduce,
    ),
}


def step_schedules(
    nodes: Sequence[str], collective: str, boxes: Sequence[Sequence[str]] | None = None
) -> list[StepSchedule]:
    """Every log-step schedule of ``collective`` over ``nodes`` (none for a collective
    without one, or fewer than two nodes), and with ``boxes`` (two or more equal boxes of
    the same nodes) the hierarchical ones."""
    if len(nodes) < 2:
        return []
    found = [build(nodes) for build in STEP_BUILDERS.get(collective, ())]
    if boxes is None or collective not in STEP_BUILDERS:
        return found
    if collective == "allgather":
        found.append(hierarchical_allgather(boxes))
    elif collective == "reduce_scatter":
        found.append(hierarchical_reduce_scatter(boxes))
    else:
        found += [hierarchical_allreduce(boxes, across) for across in ACROSS]
    return found
