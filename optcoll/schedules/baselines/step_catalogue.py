"""The log-step schedules that apply to each collective, by name.

One list for ``optcoll plan`` and ``optcoll compare``: every builder of
:mod:`optcoll.schedules.baselines.logstep` and :mod:`optcoll.schedules.baselines.swing`
that runs the collective, over the compute nodes in declaration order (their ranks).

Examples
--------
>>> [s.method for s in step_schedules("abcdef", "allreduce")]
['recursive doubling', 'Rabenseifner', 'Swing', 'Swing (latency)']
>>> [s.method for s in step_schedules("abcdef", "broadcast")]
[]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import StepSchedule
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


def step_schedules(nodes: Sequence[str], collective: str) -> list[StepSchedule]:
    """Every log-step schedule of ``collective`` over ``nodes`` (none for a collective
    without one, or fewer than two nodes)."""
    if len(nodes) < 2:
        return []
    return [build(nodes) for build in STEP_BUILDERS.get(collective, ())]
