"""NVIDIA DGX systems.

``dgx-a100:n`` follows the model of ``../shared/reference/reference.json`` (and
ForestColl, arXiv 2402.06787): per box 8 A100 GPUs on one NVSwitch node at
300 GB/s per direction per GPU (12 NVLink3 links x 25 GB/s); each GPU has its own
NIC node at 25 GB/s per direction (200 Gb/s HDR InfiniBand); with more than one
box, NIC j of every box joins IB rail switch j mod 2 at 25 GB/s per direction.
"""

from __future__ import annotations

from optcoll.topologies import Family, register, single_count
from optcoll.topology import Topology, TopologyBuilder

NVSWITCH_A100 = 300
NIC_A100 = 25


def dgx_a100(boxes: int = 1) -> Topology:
    """``boxes`` DGX A100 servers joined by two IB rail switches.

    Examples
    --------
    >>> t = dgx_a100(2)
    >>> t.num_compute, len(t.switch_nodes)
    (16, 20)
    """
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


register(
    Family(
        "dgx-a100",
        "DGX A100 boxes: NVSwitch 300 GB/s per GPU, 25 GB/s NIC per GPU on 2 IB rail switches",
        "dgx-a100[:BOXES]",
        single_count("dgx-a100", "boxes"),
        dgx_a100,
    )
)
