"""The store-and-forward switch model (ASTRA-sim's analytical backend) on sliced traces."""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll.export.chakra import chakra_traces
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.programs import chakra_tasks, read_chakra
from optcoll.sim.simulator import Network, simulate
from optcoll.topologies import build


def _time(tmp_path, topology, files, store_and_forward):
    for rank, data in enumerate(files):
        (tmp_path / f"t.{rank}.et").write_bytes(data)
    network = Network.of(topology, Fraction(1, 2), store_and_forward=store_and_forward)
    graph = chakra_tasks(read_chakra(str(tmp_path / "t")), topology, network, slice_bytes=None)
    return simulate(graph, network, 2**26, overhead=0).time_us


def test_a_switch_holding_whole_chunks_costs_a_chunk_per_hop_and_slices_do_not(tmp_path):
    topology = build("star:8,bw=50")
    schedule = pack_arborescences(topology)  # every GPU's 8 MiB to the 7 others via the hub
    whole = chakra_traces(schedule, 2**26)
    sliced = chakra_traces(schedule, 2**26, slice_bytes=2**19)
    cut = _time(tmp_path, topology, whole, False)
    # whole 8 MiB chunks: the hub forwards each only once all of it is in, one more chunk time
    assert _time(tmp_path, topology, whole, True) - cut == pytest.approx(2**23 / 50e3, rel=1e-3)
    # 512 KiB slices: the hub holds one slice, the delay is one slice time
    delay = _time(tmp_path, topology, sliced, True) - _time(tmp_path, topology, sliced, False)
    assert 0 < delay <= 2**19 / 50e3 * 1.001
