"""plan's NVLS candidate runs as the MSCCL++ switch-channel plan runs: the file's time is plan's.

The plan file (``optcoll.export.mscclpp_nvls``) is read back by the simulator's own MSCCL++
reader (``optcoll.sim.programs.mscclpp_tasks``), which shares no code with plan's model of
the same program (``optcoll.sim.simulator.aggregation_tasks`` with a barrier).
"""

from __future__ import annotations

import pytest

from optcoll.core.aggregation import barrier_rounds
from optcoll.core.topology import Topology
from optcoll.export.mscclpp_nvls import mscclpp_nvls_plan
from optcoll.schedules.baselines import nvls_schedule
from optcoll.sim.programs import mscclpp_tasks
from optcoll.sim.simulator import SimOptions
from optcoll.sim.size_plan import Candidate, candidates, plan
from optcoll.topologies import build
from optcoll.verify.mscclpp.plan import parse_plan


def _multimem_star(n: int) -> Topology:
    nodes = [{"id": f"g{i}", "type": "compute"} for i in range(n)]
    nodes.append({"id": "w", "type": "switch", "reduce": True, "multicast": True, "multimem": True})
    links = [{"src": f"g{i}", "dst": "w", "bandwidth": 100, "bidirectional": True}
             for i in range(n)]  # fmt: skip
    return Topology.from_dict({"name": f"nvls{n}", "nodes": nodes, "links": links})


def _plan_and_file(
    topology: Topology, sizes: list[int], nvls: Candidate
) -> list[tuple[float, float]]:
    rows = plan(topology, "allreduce", sizes, options=[nvls], choose_slice=False)
    program = parse_plan(mscclpp_nvls_plan(topology).document)
    sim = SimOptions()
    network = sim.network(topology)
    return [
        (row.time_us, sim.run(mscclpp_tasks(program, topology, network, s), network, s).time_us)
        for row, s in zip(rows, sizes, strict=True)
    ]


def test_dgx_h100_plan_time_is_the_files_at_small_and_large_sizes():
    # 64 KiB: the barriers (3 steps before, 1 after the copies) and four hops, both;
    # 256 MiB: 9/8 M on every link, both
    topology = build("dgx-h100:1,nvls=1")
    (nvls,) = [c for c in candidates(topology, "allreduce") if c.method == "NVLS"]
    assert nvls.barrier == barrier_rounds(8) == 1
    (small, large) = _plan_and_file(topology, [2**16, 2**28], nvls)
    assert small[0] == pytest.approx(small[1], rel=0.01)
    assert large[0] == pytest.approx(large[1], rel=0.01)
    assert large[1] > 2**28 * 9 / 8 / 450e3  # the traffic alone: 671.1 µs


def test_dissemination_barrier_is_plans_too():
    # 20 GPUs: 19 peers, more than a thread block's 16 channels: 5 rounds each way
    topology = _multimem_star(20)
    assert barrier_rounds(20) == 5
    ops = mscclpp_nvls_plan(topology).document["gpus"][0]["threadblocks"][0]["ops"]
    before = ops[: [op["name"] for op in ops].index("pipeline")]
    assert [op["name"] for op in before].count("nop") == 5
    nvls = Candidate("NVLS", aggregation=nvls_schedule(topology), barrier=5)
    ((planned, filed),) = _plan_and_file(topology, [2**16], nvls)
    # measured 5.754 against 5.668 µs: the file's rounds overlap its first slices a little
    assert planned == pytest.approx(filed, rel=0.02)


@pytest.mark.slow  # 24 CPU s: 72 GPUs x 9 trays, 576 thread blocks in the file
def test_nvl72_plan_spreads_over_the_nine_trays_as_the_file_does():
    # every glres is split over the 9 trays, and so are plan's (GPU, tray) trees; both run
    # two dissemination barriers of 7 rounds, whose signals and waits issue no transfer
    topology = build("nvl72:racks=1,nvls=1")
    nvls = Candidate("NVLS", aggregation=nvls_schedule(topology), barrier=barrier_rounds(72))
    ((planned, filed),) = _plan_and_file(topology, [2**16], nvls)
    assert planned == pytest.approx(filed, rel=0.01)
