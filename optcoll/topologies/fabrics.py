"""Fabric families of large clusters: dragonfly, HyperX, twisted tori, rail-optimised
fat-trees and the GB200 NVL72 rack.

Bandwidths are GB/s per link per direction, latencies µs per link (``lat=``, optional:
without it links carry no latency and ``--latency`` applies). Switches relay only.

Spec strings (``key=value``; ``optcoll topologies`` shows an example of each):

- ``dragonfly:a=A,p=P,h=H[,g=G][,bw=HOST/LOCAL/GLOBAL][,lat=HOST/LOCAL/GLOBAL]``: G groups
  (default ``a*h + 1``, the balanced maximum) of A routers ``g{i}.r{j}``, routers of a group
  all linked (local links), each router with P hosts ``g{i}.r{j}.h{k}`` (group ``g{i}``) and
  H global ports. Global port ``t`` of group ``i`` (router ``t // h``) joins group
  ``i + (t mod (g-1)) + 1``: every pair of groups has ``(a*h) // (g-1)`` global links
  (Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable Dragonfly Topology",
  ISCA 2008; the "consecutive" global arrangement of Camarero, Vallejo, Beivide,
  ACM TACO 2014). Slingshot-like systems are dragonflies of this kind.
- ``hyperx:S1xS2[xS3],t=T[,bw=HOST/SWITCH][,lat=...]``: switches at the points of an
  S1 x S2 (x S3) lattice, every two switches that differ in exactly one coordinate linked,
  T hosts per switch (Ahn, Binkert, Davis, McLaren, Schreiber, "HyperX: Topology,
  Routing, and Packaging of Efficient Large-Scale Networks", SC 2009). ``t=1`` over a
  ``k x k`` lattice is the flattened butterfly (Kim, Dally, Abts, ISCA 2007).
- ``twisted-torus:AxBxC[,bw=B][,lat=L]`` (or ``AxB``): a torus whose wrap-around links in
  every dimension shorter than the longest one are shifted by half the longest dimension
  (Cámara et al., "Twisted Torus Topologies for Enhanced Interconnection Networks",
  IEEE TPDS 2010); the TPU v4 slices of 4x4x8, 4x8x8 ... chips are twisted so
  (Jouppi et al., "TPU v4", ISCA 2023, section 2).
- ``rail-fat-tree:servers=S,gpus=G,per_leaf=L,spines=P[,oversub=O][,bw=GPU/NIC][,lat=...]``:
  S servers of G GPUs on one NVSwitch node (GPU bandwidth ``GPU``), one NIC per GPU at
  ``NIC``; NIC j of every server is on rail j: rail j has ``S / per_leaf`` leaf switches,
  each serving ``per_leaf`` servers' NIC j; every leaf links to each of P spines (shared
  by all rails) with ``per_leaf * NIC / (P * oversub)`` per link (two tiers,
  rail-optimised as in NVIDIA's DGX SuperPOD reference architecture).
- ``nvl72[:racks=R][,nvls=1]``: the GB200 NVL72 rack: 72 GPUs ``r{r}.gpu{g}`` (group
  ``rack{r}``) each linked to 9 NVLink switch trays ``r{r}.tray{t}`` at 100 GB/s per tray
  (18 NVLink5 links of 50 GB/s per GPU over the 18 NVSwitch chips of 9 trays: 900 GB/s per
  direction, "1.8 TB/s" bidirectional; NVIDIA GB200 NVL72 product page). ``nvls=1``
  marks the trays ``reduce``, ``multicast`` and ``multimem`` (NVLink SHARP, at a GPU's
  multimem loads and stores). With ``racks > 1`` every GPU
  has a 50 GB/s NIC (400 Gb/s) on rail ``g mod 8`` (rail switches ``rail{j}``), an
  assumption of this model, stated here.

Examples
--------
>>> from optcoll.topologies import build
>>> t = build("dragonfly:a=4,p=2,h=2")
>>> t.num_compute, len(t.switch_nodes)
(72, 36)
>>> build("hyperx:3x3,t=2").num_compute
18
>>> build("twisted-torus:2x2x4").capacity[("n1_0_0", "n0_0_2")]
Fraction(100, 1)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from optcoll.core.rational import exact_number
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.exceptions import TopologySpecError
from optcoll.topologies.cluster import Server, cluster
from optcoll.topologies.generic import _BW, _bandwidths, _dims, _family, _fmt
from optcoll.topologies.registry import check_size, count, positive_number, switch_flag

#: One number for every link class, or one per class.
Rates = Sequence[Fraction | int] | Fraction | int

__all__ = ["dragonfly", "hyperx", "twisted_torus", "rail_fat_tree", "nvl72"]

#: GB/s per direction of one NVLink5 link (NVIDIA Blackwell: 18 links, 1.8 TB/s per GPU).
NVLINK5 = 50
#: NVLink switch trays of a GB200 NVL72 rack, two NVSwitch chips each.
NVL72_TRAYS = 9
#: GB/s per direction of a 400 Gb/s NIC.
NIC_400G = 50


def _per_class(values: Rates | None, classes: int, what: str, family: str) -> tuple[Any, ...]:
    """One value per link class: a single value for all, or exactly ``classes`` values."""
    if values is None:
        return (None,) * classes
    given = tuple(values) if isinstance(values, Sequence) else (values,)
    exact = tuple(exact_number(v, what) for v in given)
    if len(exact) == 1:
        return exact * classes
    if len(exact) != classes:
        raise TopologySpecError(
            f"{family}: {what} gives {len(exact)} values; give 1 or {classes} (one per link class)"
        )
    return exact


def _suffix(key: str, values: Sequence[Any], default: Sequence[Any]) -> str:
    if tuple(values) == tuple(default) or values[0] is None:
        return ""
    if len(set(values)) == 1:
        return f",{key}={_fmt(values[0])}"
    return f",{key}=" + "/".join(_fmt(v) for v in values)


def dragonfly(
    a: int,
    p: int,
    h: int,
    g: int | None = None,
    bw: Rates = (100, 100, 50),
    lat: Rates | None = None,
) -> Topology:
    """A dragonfly of ``g`` groups of ``a`` routers, ``p`` hosts and ``h`` global ports each.

    Bandwidths and latencies per link class: host-router, local (router-router in a
    group), global (between groups).

    Examples
    --------
    >>> t = dragonfly(2, 1, 1)
    >>> t.num_compute, t.capacity[("g0.r0", "g1.r1")]
    (6, Fraction(50, 1))
    """
    groups = a * h + 1 if g is None else g
    if groups < 2 or groups > a * h + 1:
        raise TopologySpecError(
            f"dragonfly: g must be between 2 and a*h + 1 = {a * h + 1} (each group has a*h "
            f"global ports), got g={groups}"
        )
    host_bw, local_bw, global_bw = _per_class(bw, 3, "bw", "dragonfly")
    host_lat, local_lat, global_lat = _per_class(lat, 3, "lat", "dragonfly")
    routers = groups * a
    per_pair = (a * h) // (groups - 1)
    spec = f"dragonfly:a={a},p={p},h={h}" + ("" if g is None else f",g={groups}")
    spec += _suffix("bw", (host_bw, local_bw, global_bw), (100, 100, 50))
    spec += _suffix("lat", (host_lat, local_lat, global_lat), (None, None, None))
    check_size(
        spec,
        routers * (p + 1),
        2 * routers * p + routers * (a - 1) + 2 * groups * (groups - 1) * per_pair,
    )
    b = TopologyBuilder(
        spec,
        f"dragonfly: {groups} groups x {a} routers x {p} hosts, {h} global ports per router, "
        f"{per_pair} global link(s) per pair of groups; GB/s host/local/global "
        f"{_fmt(host_bw)}/{_fmt(local_bw)}/{_fmt(global_bw)}",
    )
    for i in range(groups):
        for j in range(a):
            for k in range(p):
                b.compute(f"g{i}.r{j}.h{k}", f"g{i}")
    for i in range(groups):
        for j in range(a):
            b.switch(f"g{i}.r{j}", f"g{i}")
    for i in range(groups):
        for j in range(a):
            for k in range(p):
                b.link(
                    f"g{i}.r{j}.h{k}", f"g{i}.r{j}", host_bw, bidirectional=True, latency=host_lat
                )
        for j, jj in itertools.combinations(range(a), 2):
            b.link(f"g{i}.r{j}", f"g{i}.r{jj}", local_bw, bidirectional=True, latency=local_lat)
    for i in range(groups):
        for d in range(groups - 1):
            k = (i + d + 1) % groups
            if k < i:
                continue  # the pair was joined from group k's side
            back = groups - 2 - d  # group k's offset to group i
            for t in range(per_pair):
                router_i = (d + (groups - 1) * t) // h
                router_k = (back + (groups - 1) * t) // h
                b.link(
                    f"g{i}.r{router_i}",
                    f"g{k}.r{router_k}",
                    global_bw,
                    bidirectional=True,
                    latency=global_lat,
                )
    return b.build()


def hyperx(
    shape: Sequence[int],
    t: int,
    bw: Rates = 100,
    lat: Rates | None = None,
) -> Topology:
    """A HyperX: switches on a lattice, fully connected along every dimension,
    ``t`` hosts per switch. Bandwidth and latency per class: host-switch, switch-switch.

    Examples
    --------
    >>> t = hyperx((3, 3), 1)
    >>> t.num_compute, t.out_bandwidth("s0_0")
    (9, Fraction(500, 1))
    """
    dims = tuple(shape)
    host_bw, switch_bw = _per_class(bw, 2, "bw", "hyperx")
    host_lat, switch_lat = _per_class(lat, 2, "lat", "hyperx")
    shape_text = "x".join(map(str, dims))
    points = list(itertools.product(*(range(s) for s in dims)))
    spec = f"hyperx:{shape_text},t={t}" + _suffix("bw", (host_bw, switch_bw), (100, 100))
    spec += _suffix("lat", (host_lat, switch_lat), (None, None))
    check_size(spec, len(points) * (t + 1), len(points) * (2 * t + sum(s - 1 for s in dims)))
    b = TopologyBuilder(
        spec,
        f"HyperX {shape_text}, {t} host(s) per switch; GB/s host/switch "
        f"{_fmt(host_bw)}/{_fmt(switch_bw)}",
    )

    def name(point: tuple[int, ...]) -> str:
        return "s" + "_".join(map(str, point))

    for point in points:
        for k in range(t):
            b.compute(f"{name(point)}.h{k}", name(point))
    for point in points:
        b.switch(name(point), name(point))
    for point in points:
        for k in range(t):
            b.link(
                f"{name(point)}.h{k}", name(point), host_bw, bidirectional=True, latency=host_lat
            )
        for axis, size in enumerate(dims):
            for other in range(point[axis] + 1, size):
                peer = point[:axis] + (other,) + point[axis + 1 :]
                b.link(name(point), name(peer), switch_bw, bidirectional=True, latency=switch_lat)
    return b.build()


def twisted_torus(
    shape: Sequence[int], bw: Fraction | int = 100, lat: Fraction | None = None
) -> Topology:
    """A torus whose shorter dimensions' wrap-around links shift by half the longest one.

    The longest dimension must be even and come last; every other dimension is twisted
    when it is shorter than the longest: the link from ``x = size - 1`` goes to ``x = 0``
    and ``+ longest / 2`` (mod longest) in the last dimension.

    Examples
    --------
    >>> t = twisted_torus((4, 4, 8))
    >>> t.num_compute, len(t.capacity)
    (128, 768)
    """
    dims = tuple(shape)
    longest = dims[-1]
    if longest != max(dims) or longest % 2 or len(dims) < 2 or min(dims) < 2:
        raise TopologySpecError(
            f"twisted-torus: the last dimension must be the longest and even, and every "
            f"dimension >= 2 (e.g. 4x4x8), got {'x'.join(map(str, dims))}"
        )
    if all(s == longest for s in dims):
        raise TopologySpecError(
            f"twisted-torus: {'x'.join(map(str, dims))} has no shorter dimension to twist; "
            "use torus"
        )
    shape_text = "x".join(map(str, dims))
    nodes = math.prod(dims)
    spec = f"twisted-torus:{shape_text}" + ("" if bw == 100 else f",bw={_fmt(bw)}")
    spec += "" if lat is None else f",lat={_fmt(lat)}"
    check_size(spec, nodes, 2 * len(dims) * nodes)
    b = TopologyBuilder(
        spec,
        f"twisted {len(dims)}D torus {shape_text} (wrap-around links of the shorter dimensions "
        f"shifted by {longest // 2} in the last), {_fmt(bw)} GB/s per link",
    )

    def name(point: tuple[int, ...]) -> str:
        return "n" + "_".join(map(str, point))

    points = list(itertools.product(*(range(s) for s in dims)))
    for point in points:
        b.compute(name(point))
    twist = longest // 2
    for point in points:
        for axis, size in enumerate(dims):
            step = list(point)
            step[axis] = (point[axis] + 1) % size
            if point[axis] == size - 1 and size < longest:
                step[-1] = (point[-1] + twist) % longest
            b.link(name(point), name(tuple(step)), bw, bidirectional=True, latency=lat)
    return b.build()


def rail_fat_tree(
    servers: int,
    gpus: int,
    per_leaf: int,
    spines: int,
    oversub: Fraction | int = 1,
    bw: Rates = (450, 50),
    lat: Rates | None = None,
) -> Topology:
    """Servers of ``gpus`` GPUs on NVSwitch, NIC j of each on rail j's leaf switches,
    every leaf linked to every spine. Bandwidth and latency per class: GPU-NVSwitch,
    NIC (GPU-NIC and NIC-leaf); leaf-spine links carry ``per_leaf * NIC / (spines *
    oversub)``.

    Examples
    --------
    >>> t = rail_fat_tree(4, 2, 2, 2)
    >>> t.num_compute, t.capacity[("rail0.leaf0", "spine0")]
    (8, Fraction(50, 1))
    """
    if servers % per_leaf:
        raise TopologySpecError(
            f"rail-fat-tree: servers ({servers}) must be a multiple of per_leaf ({per_leaf})"
        )
    gpu_bw, nic_bw = _per_class(bw, 2, "bw", "rail-fat-tree")
    gpu_lat, nic_lat = _per_class(lat, 2, "lat", "rail-fat-tree")
    oversub = exact_number(oversub, "oversub")
    spec = f"rail-fat-tree:servers={servers},gpus={gpus},per_leaf={per_leaf},spines={spines}"
    spec += "" if oversub == 1 else f",oversub={_fmt(oversub)}"
    spec += _suffix("bw", (gpu_bw, nic_bw), (450, 50))
    spec += _suffix("lat", (gpu_lat, nic_lat), (None, None))
    lats = None if gpu_lat is None else (gpu_lat, nic_lat, nic_lat)
    template = Server(gpus, "switch", gpu_bw, nic_bw)
    return cluster([template] * servers, "rails", per_leaf, spines, oversub, lats, name=spec)


def nvl72(racks: int = 1, nvls: bool = False) -> Topology:
    """GB200 NVL72 racks: 72 GPUs on 9 NVLink switch trays (100 GB/s per GPU per tray).

    Examples
    --------
    >>> t = nvl72()
    >>> t.num_compute, t.out_bandwidth("r0.gpu0")
    (72, Fraction(900, 1))
    """
    spec = f"nvl72:racks={racks}" + (",nvls=1" if nvls else "")
    check_size(spec, racks * (72 + NVL72_TRAYS + 72) + 8, racks * 72 * (2 * NVL72_TRAYS + 4))
    b = TopologyBuilder(
        spec,
        f"{racks} GB200 NVL72 rack(s): 72 GPUs on {NVL72_TRAYS} NVLink switch trays "
        f"({2 * NVLINK5} GB/s per GPU per tray, 900 GB/s per GPU"
        + (", NVLS: trays reduce and multicast" if nvls else "")
        + ")"
        + (f", one {NIC_400G} GB/s NIC per GPU on rail g mod 8" if racks > 1 else ""),
    )
    for r in range(racks):
        for g in range(72):
            b.compute(f"r{r}.gpu{g}", f"rack{r}")
        for t in range(NVL72_TRAYS):
            b.switch(f"r{r}.tray{t}", f"rack{r}", reduce=nvls, multicast=nvls, multimem=nvls)
        for g in range(72):
            for t in range(NVL72_TRAYS):
                b.link(f"r{r}.gpu{g}", f"r{r}.tray{t}", 2 * NVLINK5, bidirectional=True)
    if racks > 1:
        for j in range(8):
            b.switch(f"rail{j}")
        for r in range(racks):
            for g in range(72):
                nic = f"r{r}.nic{g}"
                b.switch(nic, f"rack{r}")
                b.link(f"r{r}.gpu{g}", nic, NIC_400G, bidirectional=True)
                b.link(nic, f"rail{g % 8}", NIC_400G, bidirectional=True)
    return b.build()


# --- spec parsing ------------------------------------------------------------------------


def _shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"expected a shape such as 4x4 or 4x4x8, got {text!r}") from None
    if not 1 <= len(dims) <= 3 or min(dims) < 2:
        raise ValueError(f"expected 1 to 3 dimensions, each >= 2, got {text!r}")
    return dims


_LAT = {"lat": _bandwidths}  # one number, or one per link class (µs)

_family(
    "dragonfly",
    "dragonfly: G groups of A routers (all-to-all in a group), P hosts and H global ports each",
    "dragonfly:a=A,p=P,h=H[,g=G][,bw=HOST/LOCAL/GLOBAL][,lat=HOST/LOCAL/GLOBAL]  e.g. "
    "dragonfly:a=4,p=2,h=2",
    dragonfly,
    {
        "a": count(1),
        "p": count(1),
        "h": count(1),
        "g": count(2),
        "bw": _bandwidths,
        **_LAT,
    },
    required=("a", "p", "h"),
)
_family(
    "hyperx",
    "HyperX / flattened butterfly: switches on a lattice, all-to-all along each dimension",
    "hyperx:S1xS2[xS3],t=T[,bw=HOST/SWITCH][,lat=HOST/SWITCH]  e.g. hyperx:4x4,t=2",
    hyperx,
    {"shape": _shape, "t": count(1), "bw": _bandwidths, **_LAT},
    ("shape",),
    ("shape", "t"),
)
_family(
    "twisted-torus",
    "twisted torus (TPU v4 slices): shorter dimensions' wrap-around shifted by half the longest",
    "twisted-torus:AxBxC[,bw=GBPS][,lat=US]  e.g. twisted-torus:4x4x8",
    twisted_torus,
    {"shape": _dims, **_BW, "lat": positive_number},
    ("shape",),
    ("shape",),
)
_family(
    "rail-fat-tree",
    "rail-optimised 2-tier fat-tree of NVSwitch servers (NIC j of every server on rail j)",
    "rail-fat-tree:servers=S,gpus=G,per_leaf=L,spines=P[,oversub=O][,bw=GPU/NIC][,lat=GPU/NIC]"
    "  e.g. rail-fat-tree:servers=4,gpus=4,per_leaf=2,spines=2",
    rail_fat_tree,
    {
        "servers": count(1),
        "gpus": count(1),
        "per_leaf": count(1),
        "spines": count(1),
        "oversub": positive_number,
        "bw": _bandwidths,
        **_LAT,
    },
    required=("servers", "gpus", "per_leaf", "spines"),
)
_family(
    "nvl72",
    "GB200 NVL72 racks: 72 GPUs on 9 NVLink switch trays (900 GB/s per GPU), NVLS optional",
    "nvl72[:racks=R][,nvls=0|1]  e.g. nvl72:racks=2",
    nvl72,
    {"racks": count(1), "nvls": switch_flag},
    ("racks",),
)
