"""AMD Instinct systems.

``mi250:n`` follows the model of ``benchmarks/reference.json``: per box
16 MI250 GCDs joined by an xGMI mesh where GCD i -> GCD j carries
``XGMI_LINKS[i][j] * 50`` GB/s; with more than one box every GCD joins one shared
IB switch at 16 GB/s per direction.
"""

from __future__ import annotations

from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.topologies.registry import Family, check_size, register, single_count

XGMI_LINK_GBPS = 50
IB_MI250 = 16

#: Number of xGMI links between GCD i and GCD j of one MI250 box (symmetric).
XGMI_LINKS = (
    (0, 4, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0),
    (4, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0),
    (0, 0, 0, 4, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0),
    (0, 0, 4, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0),
    (2, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    (0, 1, 0, 0, 4, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
    (0, 0, 1, 0, 1, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0),
    (0, 0, 0, 2, 0, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    (1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 2, 0, 0, 0),
    (0, 1, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0),
    (0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 1, 0),
    (0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 2),
    (0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 4, 1, 0),
    (0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 4, 0, 1, 1),
    (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 4),
    (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 4, 0),
)


def mi250(boxes: int = 1) -> Topology:
    """``boxes`` MI250 servers (16 GCDs each) on one shared IB switch.

    Examples
    --------
    >>> t = mi250(2)
    >>> t.num_compute, t.switch_nodes
    (32, ('ib',))
    """
    check_size(f"mi250:{boxes}", 16 * boxes + 1, 88 * boxes)
    b = TopologyBuilder(
        f"mi250:{boxes}",
        f"{boxes} MI250 box(es): 16 GCDs on an xGMI mesh (50 GB/s per link), "
        "every GCD on one shared 16 GB/s IB switch",
    )
    for box in range(boxes):
        for g in range(16):
            b.compute(f"b{box}.gcd{g}", f"box{box}")
    if boxes > 1:
        b.switch("ib")
    for box in range(boxes):
        for i in range(16):
            for j in range(16):
                if XGMI_LINKS[i][j]:
                    b.link(f"b{box}.gcd{i}", f"b{box}.gcd{j}", XGMI_LINKS[i][j] * XGMI_LINK_GBPS)
            if boxes > 1:
                b.link(f"b{box}.gcd{i}", "ib", IB_MI250, bidirectional=True)
    return b.build()


register(
    Family(
        "mi250",
        "AMD MI250 boxes: 16 GCDs on an xGMI mesh, every GCD on one shared 16 GB/s IB switch",
        "mi250[:BOXES]",
        single_count("mi250", "boxes"),
        mi250,
    )
)
