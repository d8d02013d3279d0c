"""NCCL topology XML (``NCCL_TOPO_DUMP_FILE`` / ``NCCL_TOPO_FILE``): reads it. Writes nothing.

A dump describes one server the way NCCL sees it (``src/graph/topo.cc`` and
``topo.h`` in github:NVIDIA/nccl, whose rules and bandwidth tables this reader
follows; values in GB/s per direction):

- ``<gpu>`` (inside a ``<pci>``) is a compute node ``b{box}.gpu{rank}`` (``rank``
  attribute, else ``dev``). The rank order is box by box, by that number within a
  box (whatever order the PCI tree lists the GPUs in); the description names each
  GPU's ``dev`` and PCI ``busid``. Its ``<nvlink count=C tclass=...>`` children give
  ``C`` x the per-link bandwidth of the GPU's generation (``sm``,
  :func:`nvlink_bandwidth`, NCCL's ``ncclTopoNVLinkBw``): to an NVSwitch
  (``tclass`` 0x068000) a link both ways between the GPU and the box's one
  switch ``b{box}.nvswitch`` (NCCL merges every NVSwitch into one node), to a GPU
  (0x0302..) a link to that GPU (its own entry gives the reverse), to a CPU
  (0x068001) a link both ways to the GPU's CPU.
- ``<pci>`` of a bridge class is a PCIe switch ``b{box}.pci{busid}``; every
  ``<pci>`` that holds a GPU, a NIC or a switch is linked both ways to its parent
  at ``link_width`` x the lane rate of ``link_speed`` / 80 (:data:`PCI_LANE_RATE`,
  in units of 100 Mb/s as in NCCL's ``kvDictPciGen``; width 0 reads as 16, an
  unknown speed as 8 GT/s).
- ``<cpu numaid=N>`` is a switch ``b{box}.cpu{N}``; CPUs of a box are linked
  pairwise at NCCL's inter-socket bandwidth (:func:`inter_cpu_bandwidth`).
- ``<nic>`` is a switch ``b{box}.nic{i}`` (numbered in file order) linked to its
  ``<pci>`` parent (or, directly under a ``<cpu>``, to the CPU at ``LOC_BW``
  5000); each ``<net>`` child is a port of ``speed`` Mb/s / 8000 GB/s (10000 Mb/s
  when the speed is missing or not positive, as in NCCL).

A dump is one server; the option ``boxes=B`` builds a cluster of B copies whose
NIC ports are joined by the fabric named by ``fabric``: ``switch`` (one switch
``fabric``), ``rails`` (the default; port j of every box, in the order of the
``<net>`` ``dev`` numbers, on rail switch ``rail{j}``) or ``leaf-spine`` (each box's ports on its leaf ``leaf{b}``, every
leaf linked to ``spines`` spine switches (default 2) with a total uplink of the
box's port bandwidth / ``oversub`` (default 1), split evenly).

Every malformed file raises :class:`~optcoll.exceptions.ImportFormatError`
naming the element and attribute at fault (the registry adds the file name).
NCCL's Intel P2P overhead, C2C links (``<c2c>``) and multi-rank GPU partitions
(``mlopart``) are not modelled.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from fractions import Fraction
from typing import Any

from optcoll.core.limits import MAX_NODES, check_nesting, check_size, count_value
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import number

__all__ = [
    "from_nccl_xml",
    "is_nccl_xml",
    "nvlink_bandwidth",
    "inter_cpu_bandwidth",
    "PCI_LANE_RATE",
    "FABRICS",
]

#: Per-NVLink bandwidth (GB/s) by the GPU's ``sm`` (NCCL ``topo.h``: ``SM60_NVLINK_BW`` ...).
_NVLINK_BW = (
    (100, Fraction("40.1")),  # SM100_NVLINK_BW
    (90, Fraction("20.6")),  # SM90_NVLINK_BW
    (80, Fraction(20)),  # SM80_NVLINK_BW (sm 86 is SM86_NVLINK_BW = 12)
    (70, Fraction(20)),  # SM70_NVLINK_BW
    (60, Fraction(18)),  # SM60_NVLINK_BW
)

#: PCIe lane rate in units of 100 Mb/s by ``link_speed`` prefix (NCCL ``topo.cc``: ``kvDictPciGen``).
PCI_LANE_RATE = (
    ("2.5 GT/s", 15),
    ("5 GT/s", 30),
    ("8 GT/s", 60),
    ("16 GT/s", 120),
    ("32 GT/s", 240),
    ("2.5 GT/s PCIe", 15),
    ("5.0 GT/s PCIe", 30),
    ("8.0 GT/s PCIe", 60),
    ("16.0 GT/s PCIe", 120),
    ("32.0 GT/s PCIe", 240),
    ("64.0 GT/s PCIe", 480),
)
_PCI_DEFAULT_RATE = 60
_LOC_BW = Fraction(5000)
_DEFAULT_NET_MBPS = 10000

#: Fabrics that join the boxes of a cluster built from one dump.
FABRICS = ("rails", "switch", "leaf-spine")

_NVSWITCH_CLASS = "0x068000"
_CPU_CLASS = "0x068001"


def nvlink_bandwidth(sm: int) -> Fraction:
    """Bandwidth of one NVLink (GB/s) for a GPU of compute capability ``sm`` (NCCL's table).

    Examples
    --------
    >>> nvlink_bandwidth(80), nvlink_bandwidth(86), nvlink_bandwidth(90), nvlink_bandwidth(100)
    (Fraction(20, 1), Fraction(12, 1), Fraction(103, 5), Fraction(401, 10))
    """
    if sm == 86:
        return Fraction(12)  # SM86_NVLINK_BW
    return next((bw for least, bw in _NVLINK_BW if sm >= least), Fraction(20))


def inter_cpu_bandwidth(attrs: dict[str, str]) -> Fraction:
    """Bandwidth (GB/s) between two CPUs of a box, from a ``<cpu>``'s attributes (NCCL's table).

    Examples
    --------
    >>> inter_cpu_bandwidth({"arch": "x86_64", "vendor": "AuthenticAMD"})
    Fraction(16, 1)
    >>> inter_cpu_bandwidth({"arch": "x86_64", "vendor": "GenuineIntel", "familyid": "6",
    ...                      "modelid": "143"})  # Sapphire Rapids: SRP_QPI_BW
    Fraction(22, 1)
    """
    arch, vendor = attrs.get("arch", ""), attrs.get("vendor", "")
    if arch.startswith("ppc64"):
        return Fraction(32)  # P9_BW
    if arch.startswith("arm64"):
        return Fraction(6)  # ARM_BW
    if not arch.startswith("x86_64"):
        return _LOC_BW
    if vendor.startswith("GenuineIntel"):
        family, model = _int(attrs, "familyid", "cpu", 0), _int(attrs, "modelid", "cpu", 0)
        if family == 6 and model >= 0xCF:
            return Fraction(40)  # ERP_QPI_BW
        if family == 6 and model >= 0x8F:
            return Fraction(22)  # SRP_QPI_BW
        if family == 6 and model >= 0x55:
            return Fraction(10)  # SKL_QPI_BW
        return Fraction(6)  # BDW_QPI_BW
    if vendor.startswith("AuthenticAMD"):
        return Fraction(16)  # AMD_BW
    if vendor.startswith(("CentaurHauls", "  Shanghai  ")):
        family, model = _int(attrs, "familyid", "cpu", 0), _int(attrs, "modelid", "cpu", 0)
        return Fraction(9) if (family, model) == (7, 0x5B) else Fraction(6)  # ZPI_BW
    return _LOC_BW


def is_nccl_xml(text: str) -> bool:
    """True for text whose root element is NCCL's ``<system``.

    Examples
    --------
    >>> is_nccl_xml('<?xml version="1.0"?>\\n<system version="1"></system>')
    True
    >>> is_nccl_xml('<graphml xmlns="http://graphml.graphdrawing.org/xmlns">')
    False
    """
    body = text.lstrip()
    while body.startswith(("<?", "<!--")):
        end = body.find("?>" if body.startswith("<?") else "-->")
        if end < 0:
            return False
        body = body[end + (2 if body.startswith("<?") else 3) :].lstrip()
    return body.startswith("<system") and body[7:8] in (" ", ">", "\t", "\n", "/")


def _int(attrs: dict[str, str], key: str, where: str, default: int | None = None) -> int:
    if key not in attrs:
        if default is not None:
            return default
        raise ImportFormatError(f"{where} has no {key!r} attribute")
    try:
        return int(attrs[key], 0)
    except ValueError:
        raise ImportFormatError(f"{where}: {key}={attrs[key]!r} is not an integer") from None


class _Box:
    """The nodes and links of one server, built from the dump's element tree."""

    def __init__(self, box: int) -> None:
        self.prefix = f"b{box}."
        self.group = f"box{box}"
        self.nodes: dict[str, Node] = {}
        self.links: dict[tuple[str, str], Fraction] = {}
        self.gpu_by_bus: dict[str, str] = {}
        self.cpu_of: dict[str, str] = {}
        self.nvlinks: list[tuple[str, Any]] = []
        self.ports: list[tuple[str, Fraction]] = []  # (NIC node, port bandwidth) by net dev
        self.cpus: list[tuple[str, dict[str, str]]] = []
        self.nic_count = 0
        self.port_dev: list[int] = []
        self.gpus: list[tuple[int, str, str]] = []  # (rank, node, "dev D at busid B")

    def node(self, name: str, kind: str) -> str:
        full = self.prefix + name
        self.nodes.setdefault(full, Node(full, kind, self.group))
        return full

    def link(self, u: str, v: str, bandwidth: Fraction, both: bool = True) -> None:
        for a, b in ((u, v), (v, u)) if both else ((u, v),):
            self.links[(a, b)] = self.links.get((a, b), Fraction(0)) + bandwidth


def _pci_bandwidth(attrs: dict[str, str], where: str) -> Fraction:
    if "link_speed" not in attrs:
        raise ImportFormatError(f"{where} has no 'link_speed' attribute")
    width = _int(attrs, "link_width", where, 0) or 16
    speed = attrs["link_speed"]
    rate = next((r for prefix, r in PCI_LANE_RATE if speed.startswith(prefix)), _PCI_DEFAULT_RATE)
    return Fraction(width * rate, 80)


def _walk_cpu(box: _Box, elem: Any) -> None:
    attrs = dict(elem.attrib)
    numa = _int(attrs, "numaid", "<cpu>")
    cpu = box.node(f"cpu{numa}", "switch")
    box.cpus.append((cpu, attrs))
    for child in elem:
        if child.tag == "pci":
            _walk_pci(box, child, cpu, cpu)
        elif child.tag == "nic":
            _add_nic(box, child, cpu, _LOC_BW, f"<nic> under <cpu numaid={numa}>")


def _walk_pci(box: _Box, elem: Any, parent: str, cpu: str) -> None:
    attrs = dict(elem.attrib)
    busid = attrs.get("busid")
    if not busid:
        raise ImportFormatError(f"a <pci> under {parent.removeprefix(box.prefix)} has no 'busid'")
    where = f"<pci busid={busid}>"
    if "class" not in attrs:
        raise ImportFormatError(f"{where} has no 'class' attribute")
    bandwidth = _pci_bandwidth(attrs, where)
    gpus = [g for g in elem if g.tag == "gpu"]
    for gpu in gpus:
        gattrs = dict(gpu.attrib)
        rank = _int(gattrs, "rank", f"<gpu> of {where}", _int(gattrs, "dev", f"<gpu> of {where}"))
        if rank < 0:
            raise ImportFormatError(
                f"<gpu> of {where}: rank {rank} is negative; ranks count from 0"
            )
        name = box.node(f"gpu{rank}", "compute")
        if name in box.cpu_of:
            raise ImportFormatError(f"<gpu> of {where}: rank {rank} appears twice")
        sm = _int(gattrs, "sm", f"<gpu> of {where}")
        box.gpus.append((rank, name, f"dev {gattrs.get('dev', '?')} at {busid}"))
        box.gpu_by_bus[busid.lower()] = name
        box.cpu_of[name] = cpu
        box.link(name, parent, bandwidth)
        box.nvlinks += [(name, (sm, link)) for link in gpu if link.tag == "nvlink"]
    nic = next((n for n in elem if n.tag == "nic"), None)
    if nic is not None:
        _add_nic(box, nic, parent, bandwidth, f"<nic> of {where}")
    elif not gpus and not attrs["class"].startswith(("0x03", "0x02", "0x0680")):
        switch = box.node(f"pci{busid.lower()}", "switch")
        box.link(switch, parent, bandwidth)
        for child in elem:
            if child.tag == "pci":
                _walk_pci(box, child, switch, cpu)


def _add_nic(box: _Box, elem: Any, parent: str, bandwidth: Fraction, where: str) -> None:
    nic = box.node(f"nic{box.nic_count}", "switch")
    box.nic_count += 1
    box.link(nic, parent, bandwidth)
    nets = [n for n in elem if n.tag == "net"]
    if not nets:
        raise ImportFormatError(f"{where} has no <net> port")
    for net in nets:
        attrs = dict(net.attrib)
        mbps = _int(attrs, "speed", f"<net> of {where}", 0)
        dev = _int(attrs, "dev", f"<net> of {where}", len(box.ports))
        box.ports.append((nic, Fraction(mbps if mbps > 0 else _DEFAULT_NET_MBPS, 8000)))
        box.port_dev.append(dev)


def _add_nvlinks(box: _Box) -> None:
    for gpu, (sm, elem) in box.nvlinks:
        attrs = dict(elem.attrib)
        where = f"<nvlink> of {gpu.removeprefix(box.prefix)}"
        count = _int(attrs, "count", where)
        if count <= 0:
            raise ImportFormatError(f"{where}: count must be positive, got {count}")
        bandwidth = count * nvlink_bandwidth(sm)
        tclass = attrs.get("tclass", "")
        if tclass.startswith(_NVSWITCH_CLASS):
            box.link(gpu, box.node("nvswitch", "switch"), bandwidth)
        elif tclass.startswith(_CPU_CLASS):
            box.link(gpu, box.cpu_of[gpu], bandwidth)
        elif tclass.startswith("0x03"):
            target = attrs.get("target", "").lower()
            if target not in box.gpu_by_bus:
                raise ImportFormatError(f"{where}: target {target!r} is not the busid of a GPU")
            if box.gpu_by_bus[target] == gpu:
                raise ImportFormatError(f"{where}: target {target!r} is the GPU itself")
            box.link(gpu, box.gpu_by_bus[target], bandwidth, both=False)
        else:
            raise ImportFormatError(
                f"{where}: tclass {tclass!r} is none of NVSwitch ({_NVSWITCH_CLASS}), GPU "
                f"(0x0302..) or CPU ({_CPU_CLASS})"
            )


def _read_box(root: Any, b: int) -> _Box:
    box = _Box(b)
    for elem in root:
        if elem.tag == "cpu":
            _walk_cpu(box, elem)
    if not any(n.is_compute for n in box.nodes.values()):
        raise ImportFormatError("the dump holds no <gpu> (NCCL fills those in at run time)")
    _add_nvlinks(box)
    box.ports = [port for _, port in sorted(zip(box.port_dev, box.ports, strict=True))]
    for i, (cpu, attrs) in enumerate(box.cpus):
        for other, _ in box.cpus[i + 1 :]:
            box.link(cpu, other, inter_cpu_bandwidth(attrs))
    return box


def from_nccl_xml(
    text: str,
    *,
    name: str = "nccl-topology",
    boxes: Any = 1,
    fabric: str | None = None,
    spines: Any = None,
    oversub: Any = None,
) -> Topology:
    """Topology from an NCCL topology XML dump (one server), or a cluster of ``boxes`` copies.

    Examples
    --------
    >>> dump = '''<system version="1">
    ...   <cpu numaid="0" arch="x86_64" vendor="AuthenticAMD">
    ...     <pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
    ...       <gpu dev="0" sm="80" rank="0"><nvlink target="0000:02:00.0" count="12"
    ...            tclass="0x030200"/></gpu></pci>
    ...     <pci busid="0000:02:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
    ...       <gpu dev="1" sm="80" rank="1"><nvlink target="0000:01:00.0" count="12"
    ...            tclass="0x030200"/></gpu></pci>
    ...     <pci busid="0000:03:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="16">
    ...       <nic><net name="mlx5_0" dev="0" speed="200000"/></nic></pci>
    ...   </cpu>
    ... </system>'''
    >>> t = from_nccl_xml(dump)
    >>> t.capacity[("b0.gpu0", "b0.gpu1")], t.capacity[("b0.gpu0", "b0.cpu0")]
    (Fraction(240, 1), Fraction(24, 1))
    >>> c = from_nccl_xml(dump, boxes=2)
    >>> c.num_compute, c.capacity[("b0.nic0", "rail0")]
    (4, Fraction(25, 1))
    """
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as err:
        raise ImportFormatError(f"not well-formed XML ({err})") from None
    if root.tag != "system":
        raise ImportFormatError(f"the root element is <{root.tag}>, not NCCL's <system>")
    check_nesting(root, "the NCCL topology dump", ImportFormatError)
    count = count_value(boxes, "boxes", MAX_NODES, ImportFormatError)
    if fabric is not None and fabric not in FABRICS:
        raise ImportFormatError(f"fabric={fabric!r} is not one of {', '.join(FABRICS)}")
    # an option that does not apply is refused, never ignored
    given = [
        k
        for k, v in (("fabric", fabric), ("spines", spines), ("oversub", oversub))
        if v is not None
    ]
    if count == 1 and given:
        raise ImportFormatError(f"the option {given[0]} joins boxes: it needs boxes >= 2")
    if fabric != "leaf-spine" and (spines is not None or oversub is not None):
        option = "spines" if spines is not None else "oversub"
        raise ImportFormatError(
            f"the option {option} shapes fabric=leaf-spine, not fabric={fabric or 'rails'}"
        )
    first = _read_box(root, 0)
    check_size(
        f"the NCCL dump with boxes={count}",
        count * len(first.nodes),
        count * len(first.links),
        ImportFormatError,
    )
    built = [first, *(_read_box(root, b) for b in range(1, count))]
    nodes = [n for box in built for n in box.nodes.values()]
    links = [Link(u, v, bw) for box in built for (u, v), bw in box.links.items()]
    if count > 1:
        fabric_nodes, fabric_links = _fabric(
            built,
            fabric or "rails",
            2 if spines is None else spines,
            1 if oversub is None else oversub,
        )
        nodes += fabric_nodes
        links += fabric_links
    title = name if count == 1 else f"{name}:{count}"
    order = [node for box in built for _, node, _ in sorted(box.gpus)]
    devices = ", ".join(
        f"{node.removeprefix(built[0].prefix)} = {device}"
        for _, node, device in sorted(built[0].gpus)
    )
    description = f"imported from an NCCL topology dump; GPUs by rank: {devices}"
    return Topology(title, nodes, links, description=description, rank_order=order)


def _fabric(
    built: list[_Box], fabric: str, spines: Any, oversub: Any
) -> tuple[list[Node], list[Link]]:
    """The switches and links that join the boxes' NIC ports."""
    ports = built[0].ports
    if not ports:
        raise ImportFormatError("the dump has no NIC, so its copies cannot be joined (boxes > 1)")
    nodes: list[Node] = []
    links: list[Link] = []
    if fabric == "switch":
        nodes.append(Node("fabric", "switch"))
        links += [Link(nic, "fabric", bw, None, True) for box in built for nic, bw in box.ports]
    elif fabric == "rails":
        nodes += [Node(f"rail{j}", "switch") for j in range(len(ports))]
        links += [
            Link(nic, f"rail{j}", bw, None, True)
            for box in built
            for j, (nic, bw) in enumerate(box.ports)
        ]
    else:
        count = count_value(spines, "spines", MAX_NODES, ImportFormatError)
        ratio = number(oversub, "oversub", positive=True)
        nodes += [Node(f"spine{s}", "switch") for s in range(count)]
        for b, box in enumerate(built):
            leaf = f"leaf{b}"
            nodes.append(Node(leaf, "switch"))
            links += [Link(nic, leaf, bw, None, True) for nic, bw in box.ports]
            uplink = sum((bw for _, bw in box.ports), Fraction(0)) / ratio / count
            links += [Link(leaf, f"spine{s}", uplink, None, True) for s in range(count)]
    return nodes, links
