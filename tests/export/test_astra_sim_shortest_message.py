"""No message of a Chakra export is shorter than 1 ns on a link ASTRA-sim sends it over.

ASTRA-sim's ``Link`` (astra-network-analytical 599a047, ``congestion_aware/network/Link.cpp``
lines 91-98 and 131-134) frees a link ``static_cast<EventTime>(bytes / bandwidth_Bpns)`` ns
after a message starts on it, ``bandwidth_Bpns = GiB/s * 2**30 / 10**9``
(``common/NetworkFunction.cpp``): a message under 1 ns frees it in 0 ns, and at time 0 that
event stops ASTRA-sim (``common/event-queue/EventQueue.cpp`` line 33). The checker below reads
the trace bytes with its own protobuf reader (no code of the writer or of optcoll's trace
checker), routes every send as ASTRA-sim's ``Switch`` x ``Switch`` network does (dimension 0
first, through the block's switch) and computes that delay as the C++ does, in floating
point.
"""

from __future__ import annotations

import contextlib
import io
import json
from fractions import Fraction

import pytest

from optcoll.cli import main
from optcoll.exceptions import ExportError
from optcoll.export.planned import astra_sim_shortest_message, planned_traces
from optcoll.io.astra_sim import from_astra_network
from optcoll.sim.programs import chakra_tasks, chakra_ties, decode_chakra
from optcoll.sim.simulator import Network, simulate

#: Two HGX-H100 boxes (400 GiB/s NVSwitch) joined by rail switches (50 GiB/s), as
#: ``benchmarks/astra_sim.py``'s DGX-2box.
DGX2 = {"topology": ["Switch", "Switch"], "npus_count": [8, 2], "bandwidth": [400, 50],
        "latency": [936.25, 2000]}  # fmt: skip


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _fields(data: bytes) -> list[tuple[int, object]]:
    """(field number, value) of one protobuf message: varints as ints, the rest as bytes."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            out.append((number, data[pos : pos + length]))
            pos += length
        else:  # fixed 64 / 32 bits: not written by Chakra's int and string attributes
            width = 8 if wire == 1 else 4
            out.append((number, data[pos : pos + width]))
            pos += width
    return out


def _messages(trace: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(trace):
        length, pos = _varint(trace, pos)
        out.append(trace[pos : pos + length])
        pos += length
    return out


def _attributes(message: bytes, field: int) -> dict[str, object]:
    """The attributes (field 10 of a ``Node``, 2 of ``GlobalMetadata``): name -> value."""
    attrs = {}
    for number, raw in _fields(message):
        if number == field and isinstance(raw, bytes):
            parts = dict(_fields(raw))
            name = parts.get(1)
            if isinstance(name, bytes):
                value = next((parts[n] for n in (7, 9, 13, 29) if n in parts), None)
                attrs[name.decode()] = value.decode() if isinstance(value, bytes) else value
    return attrs


def sends(traces: list[bytes]) -> list[tuple[str, str, int]]:
    """(sender, receiver, bytes) of every ``COMM_SEND_NODE`` (type 5) of the traces."""
    found = []
    for trace in traces:
        metadata, *nodes = _messages(trace)
        members = json.loads(str(_attributes(metadata, 2)["optcoll_members"]))
        for node in nodes:
            if dict(_fields(node)).get(3) == 5:
                attrs = _attributes(node, 10)
                found.append((members[int(attrs["comm_src"])], members[int(attrs["comm_dst"])],
                              int(attrs["comm_size"])))  # fmt: skip
    return found


def route_bandwidths(config: dict, src: str, dst: str) -> list[float]:
    """GiB/s of every link of ASTRA-sim's route between NPUs ``npu<i>`` of a network of
    ``Switch`` blocks: dimension 0 first, two links (to the block's switch and out) per
    dimension whose coordinate differs."""
    a, b = int(src.removeprefix("npu")), int(dst.removeprefix("npu"))
    found, stride = [], 1
    for size, bandwidth in zip(config["npus_count"], config["bandwidth"], strict=True):
        if (a // stride) % size != (b // stride) % size:
            found += [bandwidth, bandwidth]
            a += ((b // stride) % size - (a // stride) % size) * stride
        stride *= size
    return found


def astra_delay_ns(size: int, gib_per_s: float) -> int:
    """``Link::serialization_delay``: ``size / (GiB/s * 2**30 / 1e9)`` truncated, in doubles."""
    return int(float(size) / (gib_per_s * (1 << 30) / 1_000_000_000))


def test_the_rule_is_astra_sims_truncation():
    hgx = {"topology": ["Switch"], "npus_count": [8], "bandwidth": [400], "latency": [936.25]}
    shortest = astra_sim_shortest_message(from_astra_network(hgx))
    assert shortest == 430
    assert astra_delay_ns(shortest, 400) == 1 and astra_delay_ns(shortest - 1, 400) == 0
    assert astra_sim_shortest_message(from_astra_network(DGX2)) == 430  # its NVSwitch
    ring = {"topology": ["Ring"], "npus_count": [4], "bandwidth": [50], "latency": [500]}
    assert astra_sim_shortest_message(from_astra_network(ring)) == 54
    assert astra_delay_ns(54, 50) == 1 and astra_delay_ns(53, 50) == 0


def test_dgx_export_keeps_every_message_a_nanosecond_long():
    """At 32 KiB plan chooses k = 8 (256-byte pieces, 0.6 ns on the 400 GiB/s NVSwitch
    links); the written candidate is the fastest whose every message takes >= 1 ns on every
    link of its route, and the time given for it is our simulator's time of the files."""
    topology = from_astra_network(DGX2, name="DGX-2box")
    latency = Fraction(93625, 100_000)
    common = {"overhead": 0, "default_latency": latency, "store_and_forward": True}
    [free] = planned_traces(topology, "allgather", [2**15], **common)
    too_short = [m for m in sends(list(free.traces))
                 if min(astra_delay_ns(m[2], bw) for bw in route_bandwidths(DGX2, *m[:2])) < 1]  # fmt: skip
    assert free.method == free.chosen and too_short  # plan's own choice breaks the rule
    [one] = planned_traces(topology, "allgather", [2**15], **common,
                           shortest_message=astra_sim_shortest_message(topology))  # fmt: skip
    assert one.chosen == free.chosen and one.method != one.chosen
    assert one.passed_over and one.passed_over[0] == (
        f"{free.method}: 256 B < 430 B, a message under 1 ns on the fastest link (ASTRA-sim's "
        "least)"
    )
    messages = sends(list(one.traces))
    assert len(messages) > 16
    for src, dst, size in messages:
        for bandwidth in route_bandwidths(DGX2, src, dst):
            assert astra_delay_ns(size, bandwidth) >= 1, (src, dst, size, bandwidth)
    network = Network.of(topology, latency, store_and_forward=True)
    decoded = decode_chakra([(f"t.{r}.et", t) for r, t in enumerate(one.traces)], "t")
    graph = chakra_tasks(decoded, topology, network, slice_bytes=one.slice_bytes)
    took = simulate(graph, network, 2**15, overhead=0, ties=chakra_ties(decoded, graph)).time_us
    assert took == pytest.approx(one.time_us, rel=1e-9)
    assert one.time_us >= free.time_us  # the rule costs time, never gains it


def test_no_candidate_long_enough_is_refused():
    topology = from_astra_network(DGX2, name="DGX-2box")
    with pytest.raises(ExportError, match="fewer than 430 bytes"):
        planned_traces(topology, "allgather", [2**12], overhead=0, store_and_forward=True,
                       shortest_message=astra_sim_shortest_message(topology))  # fmt: skip


def test_export_says_what_it_passed_over(tmp_path):
    network = tmp_path / "dgx2.yml"
    network.write_text("".join(f"{key}: {json.dumps(value)}\n" for key, value in DGX2.items()))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["export", str(network), "-o", str(tmp_path / "ag"), "--format", "chakra",
                       "--size", "32K", "--collective", "allgather", "--overhead", "0"])  # fmt: skip
    assert status == 0, err.getvalue()
    assert "(plan chose k=8)" in out.getvalue()
    assert "passed over: k=8: 256 B < 430 B, a message under 1 ns" in out.getvalue()
    traces = [(tmp_path / f"ag.{rank}.et").read_bytes() for rank in range(16)]
    assert min(size for _, _, size in sends(traces)) >= 430
