"""At large sizes multiport Swing's allreduce on torus 4x4 attains the partition bound
exactly (its busiest links carry 2 (N-1)/N of the vector over the 4 ports): optimal among
every allreduce in which only compute nodes reduce; the 1-D Swing is 88/15 (5.9x) slower
there (6.4x when its messages took the widest paths' lexicographic first, not the least
loaded)."""

from __future__ import annotations

from fractions import Fraction

from optcoll.bounds.partition import partition_bound
from optcoll.sim.steps import step_costs
from optcoll.topologies import build


def test_multiport_swing_attains_the_partition_bound_on_torus_4x4():
    topo = build("torus:4x4")
    bound = partition_bound(topo, "allreduce")
    assert bound.exact and bound.time_factor == Fraction(3, 640)
    costs = {c.method: c for c in step_costs(topo, "allreduce")}
    per_byte = {m: c.time_factor / topo.num_compute for m, c in costs.items()}
    assert per_byte["multiport Swing"] == bound.time_factor
    assert per_byte["Swing"] / bound.time_factor == Fraction(88, 15)
