"""NVIDIA DGX systems.

All bandwidths are GB/s per direction. Every model is a set of ``boxes``
servers; GPU ``g`` of box ``b`` is ``b{b}.gpu{g}`` with group ``box{b}``. The
NVSwitch fabric of a box is modelled as one switch node ``b{b}.nvswitch``
(the physical NVSwitch chips are non-blocking, so one node loses nothing for
bandwidth). NICs are switch nodes (they relay, never copy). With one box the
NICs and IB switches are left out, as in the reference models.

``dgx-a100:n`` follows the model of ``benchmarks/reference.json`` (and
ForestColl, arXiv 2402.06787): per box 8 A100 GPUs on one NVSwitch node at
300 GB/s per direction per GPU (12 NVLink3 links x 25 GB/s); each GPU has its own
NIC node at 25 GB/s per direction (200 Gb/s HDR InfiniBand); with more than one
box, NIC j of every box joins IB rail switch j mod 2 at 25 GB/s per direction.

``dgx-h100:n``: 8 H100 per box on NVSwitch at 450 GB/s per GPU (18 NVLink4
links x 25 GB/s, NVIDIA DGX H100 datasheet); one ConnectX-7 NIC per GPU at
50 GB/s (400 Gb/s NDR InfiniBand); rail-optimised fabric: NIC j of every box
joins rail switch ``rail{j}`` (8 rails) at 50 GB/s. ``dgx-h100:B,nvls=1`` marks
every box's NVSwitch node ``reduce``, ``multicast`` and ``multimem`` (NVLink SHARP, "NVLS": the
third-generation NVSwitch reduces and multicasts in the switch, at a GPU's
``multimem.ld_reduce`` / ``multimem.st``: the sum returns to the loading GPU, the store
is copied to every GPU of the group, itself included), with the same links;
the NICs and rail switches still only relay. The third-generation NVSwitch "incorporates
hardware acceleration for collective operations with multicast and NVIDIA SHARP in-network
reductions" (NVIDIA technical blog, "Upgrading Multi-GPU Interconnectivity with the
Third-Generation NVIDIA NVSwitch", developer.nvidia.com, 2022); no NVLS bandwidth figure
is assumed: the switch sums and copies at the rate of its links.

``dgx-v100:n`` (alias ``ndv2``, the Azure NDv2 / DGX-1V layout): 8 V100 per box
in the hybrid cube-mesh of NVLink2 (25 GB/s per link); each GPU has 6 NVLink2
ports, multiplicities in :data:`V100_NVLINKS`. One 100 Gb/s EDR InfiniBand NIC
per box (12.5 GB/s) reached from every GPU over PCIe 3.0 x16 (16 GB/s); the
NICs of all boxes join one IB switch ``ib``.

``dgx-2:n``: 16 V100 per box on NVSwitch at 150 GB/s per GPU (6 NVLink2 x 25,
NVIDIA DGX-2 datasheet); 8 EDR NICs per box (12.5 GB/s each), NIC j shared by
GPUs 2j and 2j+1 over PCIe 3.0 x16 (16 GB/s); NIC j of every box joins rail
switch ``rail{j}``.

Examples
--------
>>> dgx_h100(2).num_compute, len(dgx_h100(2).switch_nodes)
(16, 26)
>>> dgx_v100(1).out_bandwidth("b0.gpu0")
Fraction(150, 1)
"""

from __future__ import annotations

from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.topologies.registry import (
    Family,
    check_size,
    count,
    parse_params,
    register,
    single_count,
    switch_flag,
)

NVSWITCH_A100 = 300
NIC_A100 = 25
NVSWITCH_H100 = 450
NIC_H100 = 50
NVLINK2 = 25
NVSWITCH_DGX2 = 150
NIC_EDR = 12.5
PCIE_GEN3_X16 = 16

#: NVLink2 links between V100 i and V100 j of a DGX-1V / NDv2 box (symmetric;
#: every row sums to the 6 NVLink ports of a V100). Two fully connected quads
#: (0-3, 4-7) plus GPU i <-> GPU i+4, some pairs doubled, as reported by
#: ``nvidia-smi topo -m`` on these machines.
V100_NVLINKS = (
    (0, 1, 1, 2, 2, 0, 0, 0),
    (1, 0, 2, 1, 0, 2, 0, 0),
    (1, 2, 0, 2, 0, 0, 1, 0),
    (2, 1, 2, 0, 0, 0, 0, 1),
    (2, 0, 0, 0, 0, 1, 1, 2),
    (0, 2, 0, 0, 1, 0, 2, 1),
    (0, 0, 1, 0, 1, 2, 0, 2),
    (0, 0, 0, 1, 2, 1, 2, 0),
)


def dgx_a100(boxes: int = 1) -> Topology:
    """``boxes`` DGX A100 servers joined by two IB rail switches.

    Examples
    --------
    >>> t = dgx_a100(2)
    >>> t.num_compute, len(t.switch_nodes)
    (16, 20)
    """
    check_size(f"dgx-a100:{boxes}", 17 * boxes + 2, 48 * boxes)
    b = TopologyBuilder(
        f"dgx-a100:{boxes}",
        f"{boxes} DGX A100 box(es): 8 GPUs on NVSwitch (300 GB/s), one 25 GB/s NIC per GPU, "
        "NIC j on IB rail switch j mod 2",
    )
    for box in range(boxes):
        group = f"box{box}"
        for g in range(8):
            b.compute(f"b{box}.gpu{g}", group)
        b.switch(f"b{box}.nvswitch", group)
        if boxes > 1:
            for g in range(8):
                b.switch(f"b{box}.nic{g}", group)
    if boxes > 1:
        b.switch("ib0")
        b.switch("ib1")
    for box in range(boxes):
        for g in range(8):
            gpu = f"b{box}.gpu{g}"
            b.link(gpu, f"b{box}.nvswitch", NVSWITCH_A100, bidirectional=True)
            if boxes > 1:
                nic = f"b{box}.nic{g}"
                b.link(gpu, nic, NIC_A100, bidirectional=True)
                b.link(nic, f"ib{g % 2}", NIC_A100, bidirectional=True)
    return b.build()


def _nvswitch_boxes(
    b: TopologyBuilder, boxes: int, gpus: int, bandwidth: int, *, nvls: bool = False
) -> None:
    """Add ``boxes`` boxes of ``gpus`` GPUs, each GPU <-> its box's NVSwitch node
    (which reduces and multicasts when ``nvls``)."""
    for box in range(boxes):
        group = f"box{box}"
        for g in range(gpus):
            b.compute(f"b{box}.gpu{g}", group)
        b.switch(f"b{box}.nvswitch", group, reduce=nvls, multicast=nvls, multimem=nvls)
        for g in range(gpus):
            b.link(f"b{box}.gpu{g}", f"b{box}.nvswitch", bandwidth, bidirectional=True)


def _rail_nics(
    b: TopologyBuilder,
    boxes: int,
    gpus_of_nic: dict[int, tuple[int, ...]],
    gpu_nic_bandwidth: int | float,
    nic_rail_bandwidth: int | float,
) -> None:
    """Rail-optimised fabric: NIC j of every box (a switch node, serving the GPUs
    ``gpus_of_nic[j]``) joins rail switch ``rail{j}``; all links bidirectional."""
    for j in gpus_of_nic:
        b.switch(f"rail{j}")
    for box in range(boxes):
        for j, gpus in gpus_of_nic.items():
            nic = f"b{box}.nic{j}"
            b.switch(nic, f"box{box}")
            for g in gpus:
                b.link(f"b{box}.gpu{g}", nic, gpu_nic_bandwidth, bidirectional=True)
            b.link(nic, f"rail{j}", nic_rail_bandwidth, bidirectional=True)


def dgx_h100(boxes: int = 1, nvls: bool = False) -> Topology:
    """``boxes`` DGX H100 servers on a rail-optimised InfiniBand fabric.

    Per box: 8 GPUs <-> NVSwitch at 450 GB/s; GPU j <-> NIC j at 50 GB/s;
    NIC j <-> rail switch j at 50 GB/s (only when ``boxes > 1``). With ``nvls``
    the NVSwitch nodes reduce and multicast (spec ``dgx-h100:B,nvls=1``).

    Examples
    --------
    >>> t = dgx_h100(1)
    >>> t.num_compute, t.switch_nodes
    (8, ('b0.nvswitch',))
    >>> t = dgx_h100(2, nvls=True)
    >>> t.name, t.reducing_switches, t.multicast_switches == t.reducing_switches
    ('dgx-h100:2,nvls=1', ('b0.nvswitch', 'b1.nvswitch'), True)
    """
    spec = f"dgx-h100:{boxes}" + (",nvls=1" if nvls else "")
    check_size(spec, 17 * boxes + 8, 48 * boxes)
    b = TopologyBuilder(
        spec,
        f"{boxes} DGX H100 box(es): 8 GPUs on NVSwitch (450 GB/s"
        + (", NVLS: reduces and multicasts" if nvls else "")
        + "), one 50 GB/s NIC per GPU, NIC j on IB rail switch j",
    )
    _nvswitch_boxes(b, boxes, 8, NVSWITCH_H100, nvls=nvls)
    if boxes > 1:
        _rail_nics(b, boxes, {j: (j,) for j in range(8)}, NIC_H100, NIC_H100)
    return b.build()


def dgx_v100(boxes: int = 1) -> Topology:
    """``boxes`` DGX-1V / Azure NDv2 servers, one NIC each, on one IB switch.

    Per box: the hybrid cube-mesh of :data:`V100_NVLINKS` (25 GB/s per link,
    150 GB/s per GPU); when ``boxes > 1`` every GPU <-> the box NIC at 16 GB/s
    (PCIe) and NIC <-> IB switch at 12.5 GB/s.

    Examples
    --------
    >>> t = dgx_v100(2)
    >>> t.cut_bandwidth([f"b0.gpu{g}" for g in range(8)] + ["b0.nic"])
    Fraction(25, 2)
    """
    check_size(f"dgx-v100:{boxes}", 9 * boxes + 1, 50 * boxes)
    b = TopologyBuilder(
        f"dgx-v100:{boxes}",
        f"{boxes} DGX-1V/NDv2 box(es): 8 V100 in a hybrid cube-mesh (NVLink2 25 GB/s per link), "
        "one 12.5 GB/s NIC per box on one IB switch",
    )
    for box in range(boxes):
        for g in range(8):
            b.compute(f"b{box}.gpu{g}", f"box{box}")
    for box in range(boxes):
        for i in range(8):
            for j in range(8):
                if V100_NVLINKS[i][j]:
                    b.link(f"b{box}.gpu{i}", f"b{box}.gpu{j}", V100_NVLINKS[i][j] * NVLINK2)
    if boxes > 1:
        b.switch("ib")
        for box in range(boxes):
            nic = f"b{box}.nic"
            b.switch(nic, f"box{box}")
            for g in range(8):
                b.link(f"b{box}.gpu{g}", nic, PCIE_GEN3_X16, bidirectional=True)
            b.link(nic, "ib", NIC_EDR, bidirectional=True)
    return b.build()


def dgx_2(boxes: int = 1) -> Topology:
    """``boxes`` DGX-2 servers (16 V100 on NVSwitch) on 8 IB rail switches.

    Per box: 16 GPUs <-> NVSwitch at 150 GB/s; when ``boxes > 1`` GPUs 2j and
    2j+1 <-> NIC j at 16 GB/s (PCIe) and NIC j <-> rail switch j at 12.5 GB/s.

    Examples
    --------
    >>> t = dgx_2(1)
    >>> t.num_compute, t.in_bandwidth("b0.nvswitch")
    (16, Fraction(2400, 1))
    """
    check_size(f"dgx-2:{boxes}", 25 * boxes + 8, 80 * boxes)
    b = TopologyBuilder(
        f"dgx-2:{boxes}",
        f"{boxes} DGX-2 box(es): 16 V100 on NVSwitch (150 GB/s), 8 EDR NICs (12.5 GB/s) "
        "per box, NIC j on IB rail switch j",
    )
    _nvswitch_boxes(b, boxes, 16, NVSWITCH_DGX2)
    if boxes > 1:
        _rail_nics(b, boxes, {j: (2 * j, 2 * j + 1) for j in range(8)}, PCIE_GEN3_X16, NIC_EDR)
    return b.build()


register(
    Family(
        "dgx-a100",
        "DGX A100 boxes: NVSwitch 300 GB/s per GPU, 25 GB/s NIC per GPU on 2 IB rail switches",
        "dgx-a100[:BOXES]",
        single_count("dgx-a100", "boxes"),
        dgx_a100,
    )
)


register(
    Family(
        "dgx-h100",
        "DGX H100 boxes: NVSwitch 450 GB/s per GPU, 50 GB/s NIC per GPU on 8 IB rail switches",
        "dgx-h100[:BOXES][,nvls=0|1]",
        lambda args: {
            "boxes": 1,
            **parse_params(
                "dgx-h100",
                "dgx-h100[:BOXES][,nvls=0|1]",
                args,
                {"boxes": count(1), "nvls": switch_flag},
                ("boxes",),
            ),
        },
        dgx_h100,
    )
)

register(
    Family(
        "dgx-v100",
        "DGX-1V / Azure NDv2 boxes: 8 V100 hybrid cube-mesh (NVLink2), one 12.5 GB/s NIC per box",
        "dgx-v100[:BOXES]  (alias ndv2[:BOXES])",
        single_count("dgx-v100", "boxes"),
        dgx_v100,
        aliases=("ndv2",),
    )
)

register(
    Family(
        "dgx-2",
        "DGX-2 boxes: 16 V100 on NVSwitch 150 GB/s per GPU, 8 x 12.5 GB/s NICs on 8 IB rails",
        "dgx-2[:BOXES]",
        single_count("dgx-2", "boxes"),
        dgx_2,
    )
)
