"""ASTRA-sim's bandwidth unit: GiB/s (2**30 bytes/s), read and written exactly."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from optcoll import cli
from optcoll.io import import_topology
from optcoll.io.astra_sim import GB_PER_ASTRA_GB, from_astra_network, to_astra_network
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.simulator import simulate_schedule
from optcoll.topologies import build

DATA = Path(__file__).parents[1] / "data" / "astra"


def test_one_astra_unit_moves_a_gibibyte_per_second():
    topo = import_topology(DATA / "Ring_2npus_1GiBps.yml")  # bandwidth [1], latency [0]
    assert topo.capacity[("npu0", "npu1")] * 10**9 == 2**30  # bytes per second, exactly
    # allgather of 2 GiB on 2 NPUs: each sends its 1 GiB over one link: 1 s in ASTRA-sim
    run = simulate_schedule(topo, pack_arborescences(topo), 2**31, overhead=0)
    assert run.time_us == pytest.approx(1e6, rel=1e-12)


@pytest.mark.parametrize("spec", ["ring:8", "torus:4x4,bw=100/50", "star:4", "fully-connected:4"])
@pytest.mark.parametrize("suffix", [".yml", ".json"])
def test_written_configs_read_back_to_the_same_links(tmp_path, spec, suffix):
    out = tmp_path / f"net{suffix}"
    assert cli.main(["convert", spec, str(out), "--format", "astra-sim"]) == 0
    original, back = build(spec), import_topology(out)
    assert sorted(back.capacity.values()) == sorted(original.capacity.values())  # exact


def test_gib_values_come_back_as_written():
    config = {"topology": ["Ring"], "npus_count": [4], "bandwidth": [50], "latency": [500]}
    topo = from_astra_network(config)
    assert topo.capacity[("npu0", "npu1")] == 50 * GB_PER_ASTRA_GB == Fraction(4194304, 78125)
    assert to_astra_network(topo)["bandwidth"] == [50]
