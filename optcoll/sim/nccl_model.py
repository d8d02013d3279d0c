"""NCCL's own published tuning model, as a second opinion beside the simulator.

NCCL chooses an algorithm (ring, tree) and a protocol (LL, LL128, Simple) per call by
predicting ``time = latency + bytes / (1000 * algbw)`` (µs, algbw in GB/s) for every pair
and running the fastest. This module evaluates that prediction with NCCL's published
constants; the bus bandwidth it starts from is the NCCL-like rings' exact large-message
bus bandwidth on the topology (:func:`optcoll.schedules.baselines.nccl_ring_schedule`),
where NCCL uses ``channels x per-channel speed`` of its own topology search.

Source of every constant: NVIDIA/nccl, ``src/graph/tuning.cc`` at commit
``01afd20a77b5804e0ecf1042509dd9d20ebf9e93`` (lines 54-74: ``baseLat``, ``hwLat``,
``ll128MaxBwPerCh``; ``ncclTopoTuneModel`` from line 76: the per-protocol bandwidth
factors, the tree's bandwidth caps and the latency sums; ``ncclTopoGetAlgoTime`` at the
end of the file: ``treeCorrectionFactor`` and the ring's 1.9x "plateau" latency). Only
the numbers and the formula are taken; the code is this project's. Not modelled:
CollNet, the compute-capability 8.0 cap of 235 GB/s, the ``NCCL_PROTO``/``NCCL_ALGO``
environment, and LL128's default enablement (it is always a candidate here); every
link inside a box counts as NVLink (``hwLat``'s NVLink row), every box as one NCCL node
(``Node.group``; no groups: one node).

Examples
--------
>>> from optcoll.topologies import build
>>> est = nccl_model(build("dgx-h100:4"), "allreduce", 2**30)  # bus bandwidth 8 x 50 GB/s
>>> est.algorithm, est.protocol, round(est.time_us, 1)
('ring', 'Simple', 5688.1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optcoll.core.schedule import canonical_collective
from optcoll.core.topology import Topology
from optcoll.exceptions import SolveError
from optcoll.schedules.baselines import nccl_channels, nccl_ring_schedule
from optcoll.schedules.collectives import from_allgather_trees
from optcoll.sim.cost_model import schedule_cost

__all__ = ["NcclEstimate", "nccl_model", "nccl_model_time", "nccl_ring_channels", "PROTOCOLS"]

#: NCCL's protocols, in ``tuning.cc``'s order.
PROTOCOLS = ("LL", "LL128", "Simple")
#: ``baseLat`` (µs) per algorithm, per protocol.
_BASE_LATENCY = {"tree": (4.4, 4.4, 0.0), "ring": (3.6, 10.0, 8.4)}
#: ``hwLat`` (µs) per hardware (NVLink, network), algorithm, protocol.
_HW_LATENCY = {
    "nvlink": {"tree": (0.52, 1.2, 28.0), "ring": (0.47, 1.9, 3.4)},
    "net": {"tree": (5.0, 8.5, 50.0), "ring": (2.7, 4.0, 9.6)},
}
#: ``ll128MaxBwPerCh`` (GB/s per channel) per collective.
_LL128_MAX_PER_CHANNEL = {"allgather": 18.3, "reduce_scatter": 15.2, "allreduce": 16.7}
#: ``treeCorrectionFactor`` per protocol, for ``log2(bytes / 64)`` = 0 .. 21.
_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9),
)  # fmt: skip


@dataclass(frozen=True)
class NcclEstimate:
    """NCCL's predicted time (µs) of its fastest algorithm and protocol."""

    algorithm: str
    protocol: str
    time_us: float


def nccl_model_time(
    collective: str,
    size: int,
    ranks: int,
    nodes: int,
    bus_bw: float,
    channels: int,
    algorithm: str,
    protocol: str,
) -> float | None:
    """NCCL's predicted time (µs) of one algorithm and protocol: ``latency + size / (1000 *
    algbw)``, ``algbw`` the bus bandwidth ``bus_bw`` (GB/s, all ``channels``) times the
    protocol's efficiency and the algorithm's ratio; None where NCCL has no such pair
    (the tree only runs allreduce).

    Examples
    --------
    >>> # 8.4 + 14 * 3.4 µs, then 1 MiB at 100 GB/s * 8 / 14
    >>> round(nccl_model_time("allreduce", 2**20, 8, 1, 100.0, 4, "ring", "Simple"), 3)
    74.35
    """
    if algorithm == "tree" and collective != "allreduce":
        return None
    p = PROTOCOLS.index(protocol)
    steps = 2 * (ranks - 1) if collective == "allreduce" else ranks - 1
    inter_steps = 2 * (nodes - 1) if collective == "allreduce" else nodes - 1
    bw = bus_bw
    if algorithm == "ring":
        if protocol == "LL":
            bw *= 1 / 4 if nodes > 1 or collective == "allreduce" else 1 / 3
        elif protocol == "LL128":
            per_rank = ranks / nodes
            cap = _LL128_MAX_PER_CHANNEL[collective] * channels
            bw = min(bw * (0.7 if per_rank < 2 else 0.92), cap)
        algbw = bw * ranks / steps
    else:
        bw = min(bw * 0.9, 80.0 if nodes > 2 else 110.0)
        if protocol == "LL":
            bw /= 3.8
        elif protocol == "LL128":
            cap = _LL128_MAX_PER_CHANNEL[collective] * channels * 7 / 9
            bw = min(bw * (7 / 9 if nodes == 1 else 0.915), cap)
        algbw = bw * 0.5
    intra = _HW_LATENCY["nvlink"][algorithm][p] * (1.8 if nodes > 1 and protocol == "LL" else 1)
    inter = _HW_LATENCY["net"][algorithm][p]
    latency = _BASE_LATENCY[algorithm][p]
    if algorithm == "ring":
        latency += (steps - inter_steps) * intra + inter_steps * inter
    else:
        latency += 2 * ((ranks // nodes - 1) * intra + int(math.log2(nodes)) * inter)
    log_size = int(math.log2(size >> 6)) if size >= 64 else 0
    if algorithm == "tree" and log_size < len(_TREE_CORRECTION[p]):
        algbw *= _TREE_CORRECTION[p][log_size]
    plateau = ranks / 16 * 65536
    if (
        algorithm == "ring"
        and protocol == "Simple"
        and nodes > 1
        and collective == "allreduce"
        and size >= plateau
    ):
        latency *= 1.9
    return latency + size / (1000 * algbw)


def _ring_terms(topology: Topology, collective: str) -> tuple[int, int, int, float]:
    """``(ranks, nodes, channels, bus bandwidth)`` of the NCCL-like rings (full channels)."""
    schedule = from_allgather_trees(topology, collective, nccl_ring_schedule)
    channels = schedule.k
    ranks = topology.num_compute
    steps = 2 * (ranks - 1) if collective == "allreduce" else ranks - 1
    bus_bw = schedule_cost(topology, schedule).asymptotic_algbw * steps / ranks
    nodes = len({topology.node[c].group for c in topology.compute_nodes})
    return ranks, nodes, channels, bus_bw


def nccl_ring_channels(topology: Topology, collective: str, sizes: list[int]) -> dict[int, int]:
    """Per size, how many channels NCCL's ring uses (:func:`nccl_channels`) with the
    protocol NCCL's model finds fastest for the ring at that size.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> nccl_ring_channels(build("dgx-h100:4"), "allreduce", [2**10, 2**20, 2**30])
    {1024: 1, 1048576: 8, 1073741824: 16}
    """
    collective = canonical_collective(collective)
    ranks, nodes, channels, bus_bw = _ring_terms(topology, collective)
    counts = {}
    for size in sizes:
        times = {
            p: nccl_model_time(collective, size, ranks, nodes, bus_bw, channels, "ring", p)
            for p in PROTOCOLS
        }
        protocol = min(PROTOCOLS, key=lambda p: times[p] or math.inf)
        counts[size] = nccl_channels(channels, size, ranks, protocol)
    return counts


def nccl_model(topology: Topology, collective: str, size: int) -> NcclEstimate:
    """NCCL's prediction for a ``size``-byte ``collective`` (allgather, reduce_scatter,
    allreduce) on ``topology``: the fastest of ring and tree (allreduce only) with each of
    LL, LL128 and Simple (:func:`nccl_model_time`), from the bus bandwidth and channels of
    the NCCL-like rings.

    Raises
    ------
    SolveError
        For another collective.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> est = nccl_model(build("ring:8"), "allreduce", 1024)
    >>> est.algorithm, est.protocol, round(est.time_us, 2)
    ('ring', 'LL', 10.22)
    """
    collective = canonical_collective(collective)
    if collective not in _LL128_MAX_PER_CHANNEL:
        raise SolveError(
            f"NCCL's model here covers allgather, reduce_scatter and allreduce, got {collective!r}"
        )
    ranks, nodes, channels, bus_bw = _ring_terms(topology, collective)
    best: NcclEstimate | None = None
    for algorithm in ("ring", "tree"):
        for protocol in PROTOCOLS:
            time_us = nccl_model_time(
                collective, size, ranks, nodes, bus_bw, channels, algorithm, protocol
            )
            if time_us is not None and (best is None or time_us < best.time_us):
                best = NcclEstimate(algorithm, protocol, time_us)
    assert best is not None
    return best
