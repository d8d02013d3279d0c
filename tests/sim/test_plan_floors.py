"""plan's latency floors, by which it skips candidates that cannot win, are lower bounds:
no candidate's simulated time lies below its floor, at any size or slice, and on a star a
step schedule's floor is its closed form's latency part exactly."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.core.loads import PHASES
from optcoll.core.schedule import ImageTrees
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.direct import one_shot_allreduce, two_shot_allreduce
from optcoll.schedules.baselines.logstep import rabenseifner_allreduce
from optcoll.sim.simulator import Network, SimOptions
from optcoll.sim.size_plan import candidates, tree_latency_floor
from optcoll.sim.steps import route_steps, step_latency_floor
from optcoll.topologies import build


def _floor(option, network, overhead):
    """The latency floor plan gives the candidate (0 for those it gives none)."""
    if option.steps is not None:
        return step_latency_floor(option.steps, network, overhead)
    if option.trees:
        return tree_latency_floor(option.trees, option.phases, network, overhead)
    if option.schedule is not None and option.schedule.collective != "alltoall":
        trees = option.schedule.trees
        if isinstance(trees, ImageTrees):
            trees = trees.representatives
        return tree_latency_floor(trees, PHASES[option.schedule.collective], network, overhead)
    return 0.0


@pytest.mark.parametrize(
    ("spec", "collective"),
    [
        ("torus:4x4", "allreduce"),
        ("dgx-h100:2", "allreduce"),
        ("mesh:3x3", "allgather"),
        ("random:n=6,switches=2,seed=3", "reduce_scatter"),  # links without their reverse
    ],
)
def test_floors_lie_below_every_simulated_time(spec, collective):
    topo = build(spec)
    sim = SimOptions(1.0, 2**19, Fraction(1, 2))
    network = sim.network(topo)
    checked = 0
    for option in candidates(topo, collective):
        if option.deferred is not None or option.chunks_per_node:
            continue
        floor = _floor(option, network, sim.overhead)
        assert floor > 0 or option.aggregation is not None, option.method
        for size in (1024, 2**20):
            for slice_bytes in (None, 2**16):
                try:
                    graph = option.tasks(network, size, slice_bytes)
                except ScheduleError:  # too many tasks: nothing to compare
                    continue
                time_us = sim.run(graph, network, size).time_us
                assert floor <= time_us * (1 + 1e-12), (option.method, size, slice_bytes)
                checked += 1
    assert checked >= 20


@pytest.mark.parametrize("n", [2, 4, 8])
def test_step_floor_on_a_star(n):
    """Every node takes part in every step over 2 links of 1 µs: steps x (o + 2 µs)."""
    topo = build(f"star:{n}")
    network = Network.of(topo)
    for build_schedule in (one_shot_allreduce, two_shot_allreduce, rabenseifner_allreduce):
        routed = route_steps(topo, build_schedule(topo.compute_nodes))
        floor = step_latency_floor(routed, network, 1.0)
        assert floor == routed.schedule.num_steps * 3.0
