"""Clusters composed from server templates placed into a fabric, from one spec line.

A :class:`Server` template is G GPUs joined inside the box (an NVSwitch-like switch,
all pairs linked, or a ring) with one NIC per GPU; :func:`cluster` places a list of
servers (of one template or several: heterogeneous clusters) into a fabric:

- ``leaf-spine``: each leaf switch ``leaf{l}`` takes every NIC of ``per_leaf``
  consecutive servers; every leaf links to each of ``spines`` spines ``spine{p}`` with
  (the leaf's NIC bandwidth) / (``spines`` x ``oversub``) per link;
- ``rails`` (rail-optimised): NIC j of every server is on rail j, whose leaves
  ``rail{j}.leaf{l}`` take NIC j of ``per_leaf`` consecutive servers each; every leaf
  links to every spine as above (the ``rail-fat-tree`` family is this fabric);
- ``star``: every NIC on one switch ``fabric``.

GPU g of server s is ``b{s}.gpu{g}`` (group ``box{s}``), its NIC ``b{s}.nic{g}`` (a switch
node: it relays), the box switch ``b{s}.nvswitch``.

Spec: ``cluster:servers=COUNTxGPUS[+COUNTxGPUS...],box=switch|fc|ring[+...],
box_bw=B[+...],nic_bw=B[+...],fabric=leaf-spine|rails|star[,per_leaf=L][,spines=P]
[,oversub=O][,lat=BOX/NIC/FABRIC]``: ``+`` separates the templates of a heterogeneous
cluster, in the order of ``servers``; a single ``box``/``box_bw``/``nic_bw`` applies to all.

Examples
--------
>>> from optcoll.topologies import build
>>> t = build("cluster:servers=4x4,box=fc,box_bw=100,nic_bw=25,fabric=leaf-spine,per_leaf=2,spines=2,oversub=2")
>>> t.num_compute, t.capacity[("leaf0", "spine0")]
(16, Fraction(50, 1))
>>> build("cluster:servers=1x8+2x4,box=switch+fc,box_bw=450+100,nic_bw=50+25,fabric=star").num_compute
16
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optcoll.core.rational import exact_number
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.exceptions import TopologySpecError
from optcoll.topologies.generic import _bandwidths, _family, _fmt
from optcoll.topologies.registry import check_size, choice, count, positive_number

__all__ = ["Server", "cluster", "BOX_KINDS", "FABRICS"]

#: How the GPUs of a server are joined.
BOX_KINDS = ("switch", "fc", "ring")
#: Fabrics the servers' NICs can be placed into.
FABRICS = ("leaf-spine", "rails", "star")


@dataclass(frozen=True)
class Server:
    """A server template: ``gpus`` GPUs joined by ``box`` at ``box_bw`` GB/s per GPU link
    (per GPU to the switch, per pair for ``fc``, per neighbour for ``ring``), one NIC per
    GPU at ``nic_bw`` GB/s (GPU-NIC and NIC-fabric links).

    Examples
    --------
    >>> Server(8, "switch", 450, 50).gpus
    8
    """

    gpus: int
    box: str = "switch"
    box_bw: Fraction | int = 450
    nic_bw: Fraction | int = 50

    def __post_init__(self) -> None:
        if self.box not in BOX_KINDS:
            raise TopologySpecError(f"cluster: box must be one of {', '.join(BOX_KINDS)}")
        if self.gpus < 1 or (self.box == "ring" and self.gpus < 3 and self.gpus != 1):
            raise TopologySpecError(
                f"cluster: a server needs at least 1 GPU (a ring at least 3), got {self.gpus}"
            )


def cluster(
    servers: Sequence[Server],
    fabric: str = "leaf-spine",
    per_leaf: int = 1,
    spines: int = 1,
    oversub: Fraction | int = 1,
    lat: Sequence[Fraction | None] | Fraction | None = None,
    name: str | None = None,
) -> Topology:
    """Place ``servers`` into ``fabric``; latencies (µs) per link class box/NIC/fabric.

    Examples
    --------
    >>> t = cluster([Server(2, "fc", 100, 25)] * 2, fabric="star")
    >>> t.num_compute, t.capacity[("b0.gpu0", "b0.gpu1")], t.capacity[("b1.nic1", "fabric")]
    (4, Fraction(100, 1), Fraction(25, 1))
    """
    if fabric not in FABRICS:
        raise TopologySpecError(f"cluster: fabric must be one of {', '.join(FABRICS)}")
    if lat is None:
        box_lat = nic_lat = fabric_lat = None
    else:
        lats = tuple(lat) if isinstance(lat, Sequence) else (lat,)
        if len(lats) not in (1, 3):
            raise TopologySpecError("cluster: lat gives 1 value or 3 (box/NIC/fabric)")
        box_lat, nic_lat, fabric_lat = (lats * 3)[:3] if len(lats) == 1 else lats
    oversub = exact_number(oversub, "oversub")
    gpus = sum(s.gpus for s in servers)
    leaves_per = math.ceil(len(servers) / per_leaf)
    rails = max(s.gpus for s in servers)
    check_size(
        name or "cluster",
        3 * gpus + len(servers) + rails * leaves_per + spines + 1,
        2 * sum(s.gpus * (s.gpus + 2) for s in servers) + 2 * rails * leaves_per * spines,
    )
    b = TopologyBuilder(
        name or "cluster",
        f"{len(servers)} servers ({gpus} GPUs), one NIC per GPU, {fabric} fabric"
        + (
            ""
            if fabric == "star"
            else f", {per_leaf} server(s) per leaf, {spines} spine(s), {_fmt(oversub)}:1"
        ),
    )
    for s, server in enumerate(servers):
        for g in range(server.gpus):
            b.compute(f"b{s}.gpu{g}", f"box{s}")
    for s, server in enumerate(servers):
        gpu = [f"b{s}.gpu{g}" for g in range(server.gpus)]
        if server.box == "switch":
            b.switch(f"b{s}.nvswitch", f"box{s}")
            for v in gpu:
                b.link(v, f"b{s}.nvswitch", server.box_bw, bidirectional=True, latency=box_lat)
        elif server.box == "fc":
            for u, v in itertools.combinations(gpu, 2):
                b.link(u, v, server.box_bw, bidirectional=True, latency=box_lat)
        elif server.gpus > 1:
            for i in range(server.gpus):
                b.link(
                    gpu[i],
                    gpu[(i + 1) % server.gpus],
                    server.box_bw,
                    bidirectional=True,
                    latency=box_lat,
                )
        for g, v in enumerate(gpu):
            b.switch(f"b{s}.nic{g}", f"box{s}")
            b.link(v, f"b{s}.nic{g}", server.nic_bw, bidirectional=True, latency=nic_lat)
    uplinks: dict[str, Fraction] = {}  # leaf -> NIC bandwidth it takes
    if fabric == "star":
        b.switch("fabric")
    for s, server in enumerate(servers):
        for g in range(server.gpus):
            if fabric == "star":
                leaf = "fabric"
            elif fabric == "rails":
                leaf = f"rail{g}.leaf{s // per_leaf}"
            else:
                leaf = f"leaf{s // per_leaf}"
            if leaf not in uplinks and leaf != "fabric":
                b.switch(leaf)
                uplinks[leaf] = Fraction(0)
            if leaf != "fabric":
                uplinks[leaf] += exact_number(server.nic_bw, "nic_bw")
            b.link(f"b{s}.nic{g}", leaf, server.nic_bw, bidirectional=True, latency=nic_lat)
    if uplinks:
        for p in range(spines):
            b.switch(f"spine{p}")
        for leaf, total in uplinks.items():
            for p in range(spines):
                b.link(
                    leaf,
                    f"spine{p}",
                    total / (spines * oversub),
                    bidirectional=True,
                    latency=fabric_lat,
                )
    return b.build()


# --- spec parsing ------------------------------------------------------------------------


def _server_counts(text: str) -> tuple[tuple[int, int], ...]:
    groups = []
    for part in text.split("+"):
        number, x, gpus = part.lower().partition("x")
        try:
            groups.append((int(number), int(gpus)))
        except ValueError:
            raise ValueError(
                f"expected COUNTxGPUS[+COUNTxGPUS...] such as 4x8 or 2x8+4x4, got {text!r}"
            ) from None
        if not x or groups[-1][0] < 1 or groups[-1][1] < 1:
            raise ValueError(f"expected COUNTxGPUS with both >= 1, got {part!r}")
    return tuple(groups)


def _plus(convert):  # noqa: ANN001, ANN202
    def split(text: str) -> tuple:
        return tuple(convert(part) for part in text.split("+"))

    return split


def _cluster_spec(
    servers: tuple[tuple[int, int], ...],
    box: tuple[str, ...] = ("switch",),
    box_bw: tuple[Fraction, ...] = (Fraction(450),),
    nic_bw: tuple[Fraction, ...] = (Fraction(50),),
    fabric: str = "leaf-spine",
    per_leaf: int = 1,
    spines: int = 1,
    oversub: Fraction = Fraction(1),
    lat: tuple[Fraction, ...] | None = None,
) -> Topology:
    """Build a ``cluster:`` spec (one template per ``+`` part of ``servers``)."""
    templates = len(servers)
    columns: dict[str, tuple[Any, ...]] = {"box": box, "box_bw": box_bw, "nic_bw": nic_bw}
    for key, values in columns.items():
        if len(values) not in (1, templates):
            raise TopologySpecError(
                f"cluster: {key} gives {len(values)} values for {templates} server templates; "
                "give 1 or one per template"
            )
    expanded: dict[str, tuple[Any, ...]] = {
        k: v * templates if len(v) == 1 else v for k, v in columns.items()
    }
    placed = [
        Server(gpus, expanded["box"][i], expanded["box_bw"][i], expanded["nic_bw"][i])
        for i, (number, gpus) in enumerate(servers)
        for _ in range(number)
    ]

    def joined(values: Sequence) -> str:
        return "+".join(v if isinstance(v, str) else _fmt(v) for v in values)

    name = (
        f"cluster:servers={'+'.join(f'{n}x{g}' for n, g in servers)},box={joined(box)},"
        f"box_bw={joined(box_bw)},nic_bw={joined(nic_bw)},fabric={fabric}"
    )
    if fabric != "star":
        name += f",per_leaf={per_leaf},spines={spines}"
        name += "" if oversub == 1 else f",oversub={_fmt(oversub)}"
    name += "" if lat is None else ",lat=" + "/".join(map(_fmt, lat))
    return cluster(placed, fabric, per_leaf, spines, oversub, lat, name=name)


_family(
    "cluster",
    "servers of G GPUs (switch, fc or ring inside, one NIC per GPU) in a leaf-spine, rails or star",
    "cluster:servers=COUNTxGPUS[+...],box=switch|fc|ring[+...],box_bw=B[+...],nic_bw=B[+...],"
    "fabric=leaf-spine|rails|star[,per_leaf=L][,spines=P][,oversub=O][,lat=BOX/NIC/FABRIC]  e.g. "
    "cluster:servers=4x4,box=fc,box_bw=100,nic_bw=25,fabric=leaf-spine,per_leaf=2,spines=2,oversub=2",
    _cluster_spec,
    {
        "servers": _server_counts,
        "box": _plus(choice(*BOX_KINDS)),
        "box_bw": _plus(positive_number),
        "nic_bw": _plus(positive_number),
        "fabric": choice(*FABRICS),
        "per_leaf": count(1),
        "spines": count(1),
        "oversub": positive_number,
        "lat": _bandwidths,
    },
    required=("servers",),
)
