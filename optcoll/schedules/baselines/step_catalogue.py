"""The log-step schedules that apply to each collective, by name.

One list for ``optcoll plan`` and ``optcoll compare``: every builder of
:mod:`optcoll.schedules.baselines.logstep`, :mod:`optcoll.schedules.baselines.swing`,
:mod:`optcoll.schedules.baselines.bine`, :mod:`optcoll.schedules.baselines.pat` and :mod:`optcoll.schedules.baselines.trivance` that runs the collective, over the compute nodes in declaration order (their ranks), on
two or more equal boxes the hierarchical ones of
:mod:`optcoll.schedules.baselines.hierarchical_steps`, and on a torus whose dimensions
are powers of two (``shape``, :func:`optcoll.schedules.baselines.routing.torus_shape`)
multiport Swing; on a torus of two or more dimensions of any sides Trivance dimension by
dimension.

Examples
--------
>>> [s.method for s in step_schedules("abcdef", "allreduce")]
['recursive doubling', 'Rabenseifner', 'Swing', 'Swing (latency)', 'Trivance (latency)']
>>> [s.method for s in step_schedules("abcdef", "broadcast")]
[]
>>> [s.method for s in step_schedules("abcd", "allgather", [["a", "b"], ["c", "d"]])][-1]
'hierarchical (recursive doubling + direct)'
>>> [s.method for s in step_schedules("abcd", "reduce_scatter", shape=(2, 2))][-1]
'multiport Swing'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import StepSchedule
from optcoll.schedules.baselines.bine import bine_allgather
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
from optcoll.schedules.baselines.pat import pat_allgather, pat_reduce_scatter
from optcoll.schedules.baselines.swing import (
    multiport_swing_allgather,
    multiport_swing_allreduce,
    multiport_swing_latency_allreduce,
    multiport_swing_reduce_scatter,
    swing_allgather,
    swing_allreduce,
    swing_latency_allreduce,
    swing_reduce_scatter,
)
from optcoll.schedules.baselines.trivance import trivance_allreduce, trivance_torus_allreduce

__all__ = ["STEP_BUILDERS", "TORUS_BUILDERS", "step_schedules"]

#: Per collective, the builders of its log-step schedules.
STEP_BUILDERS: dict[str, tuple[Callable[[Sequence[str]], StepSchedule], ...]] = {
    "allgather": (
        recursive_doubling_allgather,
        bruck_allgather,
        swing_allgather,
        bine_allgather,
        pat_allgather,
    ),
    "reduce_scatter": (recursive_halving_reduce_scatter, swing_reduce_scatter, pat_reduce_scatter),
    "allreduce": (
        recursive_doubling_allreduce,
        rabenseifner_allreduce,
        swing_allreduce,
        swing_latency_allreduce,
    ),
}

#: Per collective, the builders of its schedules on a torus of a given shape.
TORUS_BUILDERS: dict[str, tuple[Callable[[Sequence[str], Sequence[int]], StepSchedule], ...]] = {
    "allgather": (multiport_swing_allgather,),
    "reduce_scatter": (multiport_swing_reduce_scatter,),
    "allreduce": (multiport_swing_allreduce, multiport_swing_latency_allreduce),
}


def step_schedules(
    nodes: Sequence[str],
    collective: str,
    boxes: Sequence[Sequence[str]] | None = None,
    shape: Sequence[int] | None = None,
) -> list[StepSchedule]:
    """Every log-step schedule of ``collective`` over ``nodes`` (none for a collective
    without one, or fewer than two nodes), with ``boxes`` (two or more equal boxes of
    the same nodes) the hierarchical ones, and with ``shape`` (the torus the nodes form,
    row-major) multiport Swing if every dimension is a power of two."""
    if len(nodes) < 2:
        return []
    found = [build(nodes) for build in STEP_BUILDERS.get(collective, ())]
    if (
        shape is not None
        and collective in TORUS_BUILDERS
        and all(d >= 2 and d & (d - 1) == 0 for d in shape)
    ):
        found += [build(nodes, shape) for build in TORUS_BUILDERS[collective]]
    if collective == "allreduce":  # two messages per node and step, on any ring or torus
        found.append(trivance_allreduce(nodes))
        if shape is not None and len(shape) > 1:
            found.append(trivance_torus_allreduce(nodes, shape))
    if boxes is None or collective not in STEP_BUILDERS:
        return found
    if collective == "allgather":
        found.append(hierarchical_allgather(boxes))
    elif collective == "reduce_scatter":
        found.append(hierarchical_reduce_scatter(boxes))
    else:
        found += [hierarchical_allreduce(boxes, across) for across in ACROSS]
    return found
