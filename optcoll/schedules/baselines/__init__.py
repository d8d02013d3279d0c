"""Baselines: the algorithms the optimal schedules are compared with, one module per family.

A baseline module builds, for a topology, what the runtimes' own algorithms would run, on
the shared routing model of :mod:`~optcoll.schedules.baselines.routing` (each logical hop
on a maximum-bandwidth path, fewest hops breaking ties). It provides, per algorithm:

* a builder returning a :class:`~optcoll.core.schedule.Schedule` (trees or routes) or the
  step program it is (trees with their phases), which :mod:`optcoll.verify` checks and the
  simulator (:mod:`optcoll.sim`) runs; ``None`` where the algorithm does not apply (e.g.
  hierarchical rings without two or more equal boxes);
* where it has one, its exact cost terms (:class:`~optcoll.core.cost.Cost`: bandwidth term
  and latency term), named after the collective (``ring_allgather``);
* exact doctests of its time factor on a built-in topology.

A new family goes in a new module here, exported below; ``optcoll compare``
(:mod:`optcoll.studies.compare`) and ``optcoll plan`` (:mod:`optcoll.sim.size_plan`)
pick the baselines up from this package.

* :mod:`~optcoll.schedules.baselines.ring` - best ring, NCCL-like hierarchical rings;
* :mod:`~optcoll.schedules.baselines.nccl_rings` - NCCL-like rings: several channels, both
  directions;
* :mod:`~optcoll.schedules.baselines.nvls` - NCCL's NVLS and NVLS-tree where switches
  reduce (aggregation trees);
* :mod:`~optcoll.schedules.baselines.trees` - NCCL's double binary tree;
* :mod:`~optcoll.schedules.baselines.alltoall` - direct and hierarchical (rail) all-to-all;
* :mod:`~optcoll.schedules.baselines.logstep` - recursive doubling and halving,
  Rabenseifner, Bruck, as step schedules (:mod:`optcoll.core.step_schedule`), which
  :mod:`optcoll.verify.steps` executes and :mod:`optcoll.sim.steps` routes and simulates;
* :mod:`~optcoll.schedules.baselines.swing` - Swing's pairings on the same butterfly, and
  multiport Swing on tori of any sides;
* :mod:`~optcoll.schedules.baselines.trivance` - Trivance, latency- and bandwidth-optimal,
  in ``log3`` steps;
* :mod:`~optcoll.schedules.baselines.dissemination` - the allgather that sends each partner
  what it lacks over any rounds, and the reduce-scatter as its transpose (multiport Swing
  on sides not powers of two, bandwidth-optimal Trivance);
* :mod:`~optcoll.schedules.baselines.step_catalogue` - the log-step schedules of each
  collective, for ``plan`` and ``compare``.

Examples
--------
>>> from optcoll.topologies import build
>>> ring_schedule(build("ring:4")).stats["method"]
'ring'
"""

from __future__ import annotations

from optcoll.schedules.baselines.alltoall import (
    direct_alltoall,
    direct_alltoall_schedule,
    hierarchical_alltoall,
    hierarchical_alltoall_schedule,
)
from optcoll.schedules.baselines.nccl_rings import nccl_channels, nccl_ring_schedule, nccl_rings
from optcoll.schedules.baselines.nvls import nvls_schedule
from optcoll.schedules.baselines.ring import (
    RingFloor,
    hierarchical_ring_allgather,
    hierarchical_ring_schedule,
    ring_allgather,
    ring_allreduce,
    ring_floor,
    ring_schedule,
)
from optcoll.schedules.baselines.routing import widest_paths
from optcoll.schedules.baselines.trees import double_binary_tree_allreduce, double_binary_trees

__all__ = [
    "widest_paths",
    "ring_schedule",
    "ring_floor",
    "RingFloor",
    "hierarchical_ring_schedule",
    "nccl_rings",
    "nccl_ring_schedule",
    "nccl_channels",
    "nvls_schedule",
    "double_binary_trees",
    "ring_allgather",
    "ring_allreduce",
    "hierarchical_ring_allgather",
    "double_binary_tree_allreduce",
    "direct_alltoall",
    "hierarchical_alltoall",
    "direct_alltoall_schedule",
    "hierarchical_alltoall_schedule",
]
