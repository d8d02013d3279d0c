"""An MSCCL++ plan simulated from its quotient (rank 0's program, links folded by the rotation
of the ranks): the full run's time in the same order, checked on the file, not assumed; and
the NVLS file ``export --size`` writes, simulated so at plan's slice, near plan's time."""

from __future__ import annotations

import copy
import json

import pytest

from optcoll.cli import main
from optcoll.core.topology import Topology
from optcoll.export.mscclpp_nvls import mscclpp_nvls_plan
from optcoll.sim.programs import mscclpp_quotient, mscclpp_tasks, simulate_mscclpp
from optcoll.sim.simulator import Network, simulate
from optcoll.topologies import build
from optcoll.verify.mscclpp.plan import parse_plan, read_plan

MiB = 2**20
H100 = "dgx-h100:1,nvls=1"


@pytest.mark.parametrize(
    ("spec", "blocks", "unit"),
    [(H100, 8, None), (H100, 3, 16384), ("star:18,sharp=1", 2, 4096)],
)
def test_quotient_run_equals_the_full_run_in_the_same_order(spec, blocks, unit):
    """Rank ``r``'s tasks are built as rank 0's moved ``r`` places, so the full graph's task
    ``r T + t`` is the image of the quotient's task ``t``: with that key the full run is
    equivariant and takes exactly the quotient's time (star:18: a dissemination barrier)."""
    topo = build(spec)
    network = Network.of(topo)
    plan = parse_plan(mscclpp_nvls_plan(topo, blocks=blocks, unit_size=unit).document)
    quotient = mscclpp_quotient(plan, topo, network)
    assert quotient is not None and quotient.order == topo.num_compute
    for size, slice_bytes, overhead in [(MiB, 8192, 1.0), (16 * MiB, 65536, 0.0),
                                        (3 * MiB + 4096, None, 1.0)]:  # fmt: skip
        full = mscclpp_tasks(plan, topo, network, size, slice_bytes=slice_bytes)
        folded = mscclpp_tasks(plan, topo, network, size, slice_bytes=slice_bytes,
                               quotient=quotient)  # fmt: skip
        each = len(folded)
        assert len(full) == each * topo.num_compute
        ties = [i % each for i in range(len(full))]
        whole = simulate(full, network, size, overhead=overhead, ties=ties)
        quick = simulate(folded, network, size, overhead=overhead, ties=range(each))
        assert quick.time_us == whole.time_us
        run = simulate_mscclpp(plan, topo, network, size, overhead=overhead,
                               slice_bytes=slice_bytes)  # fmt: skip
        assert run.time_us == whole.time_us and run.tasks == len(full)
        assert run.busy_us == pytest.approx(whole.busy_us, rel=1e-12)


def test_no_quotient_unless_every_rank_runs_rank_0s_program_rotated(tmp_path):
    topo = build(H100)
    network = Network.of(topo)
    document = mscclpp_nvls_plan(topo, blocks=2).document
    assert mscclpp_quotient(parse_plan(document), topo, network) is not None
    # GPU 5's block 1 reduces GPU 6's chunk: not rank 0's program moved 5 places
    moved = copy.deepcopy(document)
    glres = moved["gpus"][5]["threadblocks"][1]["ops"][3]["ops"][0]
    glres["src_buff"][0]["index"] = glres["dst_buff"][0]["index"] = 12
    assert mscclpp_quotient(parse_plan(moved), topo, network) is None
    # GPU 2 signals its peers in another order: its tasks are not rank 0's rotated
    turned = copy.deepcopy(document)
    ops = turned["gpus"][2]["threadblocks"][0]["ops"]
    ops[0]["channel_ids"] = ops[0]["channel_ids"][::-1]
    assert mscclpp_quotient(parse_plan(turned), topo, network) is None
    # one GPU's link twice as wide: the rotation is no automorphism of the network
    data = topo.to_dict()
    for link in data["links"]:
        if "b0.gpu3" in (link["src"], link["dst"]):
            link["bandwidth"] = 2 * link["bandwidth"]
    wide = Topology.from_dict(data)
    assert mscclpp_quotient(parse_plan(document), wide, Network.of(wide)) is None
    # a tree schedule's plan on a ring: its ranks' chunks do not move with them
    out = tmp_path / "ring.json"
    assert main(["export", "ring:4", "--collective", "allreduce", "--format", "mscclpp",
                 "-o", str(out)]) == 0  # fmt: skip
    ring = build("ring:4")
    assert mscclpp_quotient(read_plan(out), ring, Network.of(ring)) is None


@pytest.mark.parametrize("size", ["256M", "1G"])
def test_exported_nvls_file_runs_plans_time(tmp_path, capsys, size):
    """dgx-h100:1,nvls=1: the file ``export --size`` writes, simulated at plan's slice from its quotient, takes plan's time to the ns (plan times
    the switch-channel program itself, optcoll.sim.nvls_program: 683.5161 µs at 256 MiB,
    2,696.7820 at 1 GiB; as trees it said 687.49 and 2,701.88); ``simulate --slice`` of the
    written file says the same."""
    out = tmp_path / "nvls.json"
    args = ["export", H100, "--collective", "allreduce", "--format", "mscclpp", "--size", size]
    assert main([*args, "-o", str(out), "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert entry["method"] == "in-network"
    assert entry["file_time_us"] == entry["plan_time_us"]
    piece = str(entry["slice_bytes"])
    assert main(["simulate", H100, str(out), "--sizes", size, "--slice", piece, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert row["time_us"] == pytest.approx(entry["file_time_us"], abs=1e-4)
