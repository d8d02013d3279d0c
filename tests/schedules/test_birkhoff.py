"""FLASH's Birkhoff phases (optcoll.schedules.birkhoff) and the "birkhoff" demand schedule."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from optcoll import load_topology
from optcoll.core.demand import demand_matrix, uniform_demand
from optcoll.exceptions import ArgumentError
from optcoll.schedules.alltoallv import demand_schedule, proved_optimum
from optcoll.schedules.birkhoff import birkhoff_phases
from optcoll.sim.demand import simulate_demand_phases, simulate_demand_schedule
from optcoll.verify.demand import verify_demand_routes


@pytest.mark.parametrize("seed", range(4))
def test_phases_are_permutations_that_rebuild_the_demand(seed):
    rng = random.Random(seed)
    n = 7
    matrix = [[rng.choice([0, 0, 1, 9, 1000]) for _ in range(n)] for _ in range(n)]
    phases = birkhoff_phases(matrix)
    line = max(
        max(sum(matrix[i][j] for j in range(n) if j != i) for i in range(n)),
        max(sum(matrix[i][j] for i in range(n) if i != j) for j in range(n)),
    )
    assert sum(p.weight for p in phases) == line
    rebuilt = [[0] * n for _ in range(n)]
    for phase in phases:
        assert sorted(phase.permutation) == list(range(n))
        for (i, j), b in phase.pairs.items():
            assert phase.permutation[i] == j and 0 < b <= phase.weight and i != j
            rebuilt[i][j] += b
    assert rebuilt == [[0 if i == j else matrix[i][j] for j in range(n)] for i in range(n)]


def test_refuses_a_bad_matrix():
    with pytest.raises(ArgumentError, match="square"):
        birkhoff_phases([[0, 1]])
    with pytest.raises(ArgumentError, match=r"entry \(0, 1\)"):
        birkhoff_phases([[0, -1], [0, 0]])


def test_uniform_demand_on_a_star_is_its_optimum():
    """On a star every phase is a permutation through the hub: N - 1 phases of one piece each,
    each taking piece / bandwidth; the sum is the optimum (N - 1) * piece / bandwidth."""
    topo = load_topology("star:4,bw=2")
    demand = uniform_demand(topo.compute_nodes, 10)
    schedule = demand_schedule(topo, demand, "birkhoff")
    assert len(schedule.phases) == 3
    assert schedule.time_factor == 15 == proved_optimum(topo, demand).time_factor


def test_moe_schedule_is_verified_and_slower_than_concurrent():
    topo = load_topology("dgx-h100:2")
    from optcoll.core.moe import MoeSpec, moe_demand

    demand = moe_demand(
        MoeSpec(tokens=32, hidden=16, dtype_bytes=2, experts=16, top_k=2, zipf=1.0),
        topo.compute_nodes,
    )
    optimum = proved_optimum(topo, demand)
    schedule = demand_schedule(topo, demand, "birkhoff", optimum=optimum)
    assert verify_demand_routes(topo, demand, schedule.routes).valid
    phase_sum = Fraction(0)
    for routes in schedule.phases:
        part = [[0] * 16 for _ in range(16)]
        index = {v: i for i, v in enumerate(topo.compute_nodes)}
        for r in routes:
            assert len(r.paths) == 1
            part[index[r.src]][index[r.dst]] = r.paths[0].chunks
        check = verify_demand_routes(topo, demand_matrix(part, topo.compute_nodes), routes)
        phase_sum += check.time_factor
    assert schedule.time_factor == phase_sum
    assert (
        schedule.time_factor
        >= Fraction(schedule.stats["concurrent_time_factor"])
        >= optimum.time_factor
    )
    simulated = simulate_demand_phases(topo, schedule.phases)
    assert simulated >= schedule.time_us
    assert simulated == pytest.approx(
        sum(simulate_demand_schedule(topo, routes).time_us for routes in schedule.phases)
    )


def test_flash_phases_are_box_permutations_with_intra_box_first():
    """FLASH at the level of boxes on two DGX H100: the pairs inside a box in phase 0, then
    box 0 -> box 1 and box 1 -> box 0 together (one permutation of two boxes: the box matrix
    padded to equal line sums has one phase when both directions carry the same bytes,
    two otherwise); every phase verified, their times summed."""
    from optcoll.core.moe import MoeSpec, moe_demand

    topo = load_topology("dgx-h100:2")
    spec = MoeSpec(tokens=32, hidden=16, dtype_bytes=2, experts=16, top_k=2, zipf=1.0)
    demand = moe_demand(spec, topo.compute_nodes)
    optimum = proved_optimum(topo, demand)
    schedule = demand_schedule(topo, demand, "flash", optimum=optimum)
    box = {v: topo.node[v].group for v in topo.compute_nodes}
    first = schedule.phases[0]
    assert all(box[r.src] == box[r.dst] for r in first)
    for routes in schedule.phases[1:]:
        sending = {}
        for r in routes:
            assert box[r.src] != box[r.dst]
            assert sending.setdefault(box[r.src], box[r.dst]) == box[r.dst]  # one target box
    assert verify_demand_routes(topo, demand, schedule.routes).valid
    index = {v: i for i, v in enumerate(topo.compute_nodes)}
    phase_sum = Fraction(0)
    for routes in schedule.phases:
        part = [[0] * 16 for _ in range(16)]
        for r in routes:
            part[index[r.src]][index[r.dst]] = sum(p.chunks for p in r.paths)
        phase_sum += verify_demand_routes(
            topo, demand_matrix(part, topo.compute_nodes), routes
        ).time_factor
    assert schedule.time_factor == phase_sum >= optimum.time_factor
    birkhoff = demand_schedule(topo, demand, "birkhoff", optimum=optimum)
    assert len(schedule.phases) < len(birkhoff.phases)
