"""ASTRA-sim analytical network configs (YAML): reads them, and writes one where it can.

The format (``NetworkParser.cpp`` of github:astra-sim/astra-network-analytical)
has four lists of one entry per dimension: ``topology`` (``Ring``,
``FullyConnected`` or ``Switch``), ``npus_count`` (> 1), ``bandwidth`` (> 0)
and ``latency`` (ns, >= 0). ASTRA-sim's "GB/s" is GiB/s: ``bw_GBps_to_Bpns`` in
``common/NetworkFunction.cpp`` line 16 of astra-network-analytical (599a047)
returns ``bw_GBps * (1 << 30) / (1'000'000'000)`` bytes per ns, so a
``bandwidth`` of ``b`` is ``b * 2**30`` bytes/s, which optcoll (bandwidths in
GB/s = 10**9 bytes/s) reads exactly as ``b * 2**30 / 10**9`` GB/s
(:data:`GB_PER_ASTRA_GB`). NPU ``k`` has the address ``k mod c0``,
``(k div c0) mod c1``, ... (dimension 0 varies fastest, ``MultiDimTopology``);
the NPUs that differ only in coordinate ``d`` form one block of dimension
``d``:

``Ring``
    a bidirectional ring in address order, one link of ``bandwidth`` each way
    between neighbours (a ring of 2 is one link each way).
``FullyConnected``
    a link of ``bandwidth`` from every NPU of the block to every other.
``Switch``
    a switch ``dim{d}.sw{g}`` with a link of ``bandwidth`` each way to every
    NPU of the block.

Compute nodes are ``npu{k}``; latencies become µs (ns / 1000).
:func:`to_astra_network` writes bandwidths back in ASTRA-sim's unit, exactly
(a decimal of as many digits as it needs), and the config of a topology that has exactly this
shape (checked by rebuilding it), and refuses any other.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from optcoll.core.limits import check_size
from optcoll.core.rational import WrittenNumber, decimal_text
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ImportFormatError, TopologyError
from optcoll.io.fields import number

__all__ = [
    "from_astra_network",
    "to_astra_network",
    "is_astra_network",
    "BLOCKS",
    "GB_PER_ASTRA_GB",
]

#: ASTRA-sim's basic topologies, one per dimension.
BLOCKS = ("Ring", "FullyConnected", "Switch")
_FIELDS = ("topology", "npus_count", "bandwidth", "latency")

#: GB/s (10**9 bytes/s) in one ASTRA-sim bandwidth unit (2**30 bytes/s; ``bw_GBps_to_Bpns``,
#: astra-network-analytical ``common/NetworkFunction.cpp`` line 16): 2**21 / 5**9 = 1.073741824.
GB_PER_ASTRA_GB = Fraction(2**30, 10**9)


def is_astra_network(data: Any) -> bool:
    """True for a parsed document with ASTRA-sim's ``topology`` and ``npus_count`` lists.

    Examples
    --------
    >>> is_astra_network({"topology": ["Ring"], "npus_count": [4]}), is_astra_network({})
    (True, False)
    """
    return isinstance(data, Mapping) and "topology" in data and "npus_count" in data


def from_astra_network(data: Any, *, name: str = "astra-sim") -> Topology:
    """Topology from an ASTRA-sim analytical network config (parsed YAML).

    Examples
    --------
    >>> t = from_astra_network({"topology": ["Switch", "Ring"], "npus_count": [4, 2],
    ...                         "bandwidth": [400, 50], "latency": [936.25, 1000]})
    >>> t.num_compute, t.switch_nodes, t.latency[("npu0", "dim0.sw0")]
    (8, ('dim0.sw0', 'dim0.sw1'), Fraction(749, 800))
    >>> t.capacity[("npu0", "npu4")], float(t.capacity[("npu0", "npu4")])  # 50 GiB/s in GB/s
    (Fraction(4194304, 78125), 53.6870912)
    """
    if not isinstance(data, Mapping):
        raise ImportFormatError(
            f"an ASTRA-sim network config is a mapping, got {type(data).__name__}"
        )
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise ImportFormatError(
            f"unknown field {unknown[0]!r}; an ASTRA-sim network config has {', '.join(_FIELDS)}"
        )
    lists = {}
    for key in _FIELDS:
        if key not in data:
            raise ImportFormatError(f"the ASTRA-sim network config has no {key!r} list")
        value = data[key]
        if not isinstance(value, list) or not value:
            raise ImportFormatError(
                f"field {key!r} must be a non-empty list (one entry per dimension)"
            )
        lists[key] = value
    dims = len(lists["topology"])
    for key in _FIELDS[1:]:
        if len(lists[key]) != dims:
            raise ImportFormatError(
                f"field {key!r} has {len(lists[key])} entries but 'topology' has {dims} dimensions"
            )
    blocks = []
    for d, block in enumerate(lists["topology"]):
        if block not in BLOCKS:
            raise ImportFormatError(f"topology[{d}] is {block!r}, not one of {', '.join(BLOCKS)}")
        blocks.append(block)
    sizes = []
    for d, count in enumerate(lists["npus_count"]):
        if isinstance(count, bool) or not isinstance(count, int) or count < 2:
            raise ImportFormatError(f"npus_count[{d}] must be an integer > 1, got {count!r}")
        sizes.append(count)
    total = math.prod(sizes)
    per_npu = {"Ring": lambda n: 2, "FullyConnected": lambda n: n - 1, "Switch": lambda n: 2}
    check_size(
        f"ASTRA-sim config {name!r} (npus_count {sizes})",
        total + sum(total // n for b, n in zip(blocks, sizes, strict=True) if b == "Switch"),
        sum(total * per_npu[b](n) for b, n in zip(blocks, sizes, strict=True)),
        ImportFormatError,
    )
    bandwidths = [
        number(b, f"bandwidth[{d}]", positive=True) * GB_PER_ASTRA_GB
        for d, b in enumerate(lists["bandwidth"])
    ]
    latencies = [number(x, f"latency[{d}]") / 1000 for d, x in enumerate(lists["latency"])]
    return _build(name, blocks, sizes, bandwidths, latencies)


def _build(
    name: str,
    blocks: Sequence[str],
    sizes: Sequence[int],
    bandwidths: Sequence[Fraction],
    latencies: Sequence[Fraction],
) -> Topology:
    total = 1
    for size in sizes:
        total *= size
    nodes = [Node(f"npu{k}") for k in range(total)]
    arcs: dict[tuple[str, str], tuple[Fraction, Fraction]] = {}
    stride = 1
    for d, (block, size) in enumerate(zip(blocks, sizes, strict=True)):
        bandwidth, latency = bandwidths[d], latencies[d]
        bases = [k for k in range(total) if (k // stride) % size == 0]
        for g, base in enumerate(bases):
            members = [f"npu{base + i * stride}" for i in range(size)]
            if block == "Ring":
                pairs = [(members[i], members[(i + 1) % size]) for i in range(size)]
                pairs += [(v, u) for u, v in pairs]
            elif block == "FullyConnected":
                pairs = [(u, v) for u in members for v in members if u != v]
            else:
                switch = f"dim{d}.sw{g}"
                nodes.append(Node(switch, "switch"))
                pairs = [(u, switch) for u in members] + [(switch, u) for u in members]
            for pair in pairs:
                arcs[pair] = (bandwidth, latency)
        stride *= size
    links = [Link(u, v, bw, lat) for (u, v), (bw, lat) in arcs.items()]
    return Topology(name, nodes, links, description="imported from an ASTRA-sim network config")


def to_astra_network(topology: Topology, *, max_dims: int = 3) -> dict[str, list[Any]]:
    """The ASTRA-sim analytical network config of ``topology``, if it has that shape.

    Compute node ``k`` (in ``topology.compute_nodes`` order) is NPU ``k``. Every
    ordered factorisation of the node count into at most ``max_dims``
    dimensions and every choice of blocks is tried; a candidate is accepted only
    if rebuilding it gives exactly the topology's links, bandwidths and
    latencies (switches matched by the NPUs they serve).

    Raises
    ------
    TopologyError
        The topology has no such shape, its unit is not GB/s, or a bandwidth or
        latency has no exact decimal form.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> net = to_astra_network(build("torus:2x3,bw=10/20"))
    >>> net["topology"], net["npus_count"], net["latency"]
    (['Ring', 'Ring'], [3, 2], [0, 0])
    >>> [b.text for b in net["bandwidth"]]  # 20 and 10 GB/s in GiB/s, every digit
    ['18.6264514923095703125', '9.31322574615478515625']
    """
    if topology.bandwidth_unit != "GB/s":
        raise TopologyError(
            f"{topology.name}: ASTRA-sim bandwidths are GB/s; this topology is in "
            f"{topology.bandwidth_unit}"
        )
    computes = topology.compute_nodes
    index = {v: f"npu{k}" for k, v in enumerate(computes)}
    target = _canonical(topology, index)
    successors = _successors(topology)
    for sizes in _factorisations(len(computes), max_dims):
        for blocks in itertools.product(BLOCKS, repeat=len(sizes)):
            if _degree(blocks, sizes) != len(successors[computes[0]]):
                continue
            guess = _link_values(topology, successors, blocks, sizes)
            if guess is None:
                continue
            bandwidths, latencies = guess
            candidate = _build("candidate", blocks, sizes, bandwidths, latencies)
            if (
                _canonical(candidate, {f"npu{k}": f"npu{k}" for k in range(len(computes))})
                == target
            ):
                return {
                    "topology": list(blocks),
                    "npus_count": list(sizes),
                    "bandwidth": [
                        _decimal(b / GB_PER_ASTRA_GB, topology, "bandwidth") for b in bandwidths
                    ],
                    "latency": [_decimal(x * 1000, topology, "latency") for x in latencies],
                }
    raise TopologyError(
        f"{topology.name}: not expressible as an ASTRA-sim analytical network (a product of up "
        f"to {max_dims} Ring / FullyConnected / Switch dimensions with one bandwidth and "
        "latency per dimension)"
    )


def _factorisations(n: int, max_dims: int) -> list[tuple[int, ...]]:
    if n < 2 or max_dims == 0:
        return []
    found: list[tuple[int, ...]] = [(n,)]
    for first in range(2, n):
        if n % first == 0:
            found += [(first, *rest) for rest in _factorisations(n // first, max_dims - 1)]
    return found


def _degree(blocks: Sequence[str], sizes: Sequence[int]) -> int:
    """Out-degree of an NPU: 2 per ring (1 if of size 2), size-1 per clique, 1 per switch."""
    ring = {True: 1, False: 2}
    return sum(
        ring[s == 2] if b == "Ring" else s - 1 if b == "FullyConnected" else 1
        for b, s in zip(blocks, sizes, strict=True)
    )


def _successors(topology: Topology) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {v: [] for v in topology.node_ids}
    for u, v in topology.capacity:
        found[u].append(v)
    return found


def _link_values(
    topology: Topology,
    successors: Mapping[str, list[str]],
    blocks: Sequence[str],
    sizes: Sequence[int],
) -> tuple[list[Fraction], list[Fraction]] | None:
    """Each dimension's bandwidth and latency, read off NPU 0's link in that dimension."""
    computes = topology.compute_nodes
    bandwidths, latencies = [], []
    stride = 1
    for block, size in zip(blocks, sizes, strict=True):
        u = computes[0]
        if block == "Switch":
            switches = [w for w in successors[u] if not topology.is_compute(w)]
            if not switches:
                return None
            arc = (u, switches[0])
        else:
            arc = (u, computes[stride])
        if arc not in topology.capacity:
            return None
        bandwidths.append(topology.capacity[arc])
        latencies.append(topology.latency.get(arc, Fraction(0)))
        stride *= size
    return bandwidths, latencies


def _canonical(topology: Topology, names: Mapping[str, str]) -> list[str]:
    """The links (as a sorted list, so parallel switches count) with compute nodes renamed by
    ``names`` and each switch named by the NPUs it reaches."""
    successors = _successors(topology)

    def label(v: str) -> str:
        if v in names:
            return names[v]
        return "switch" + repr(sorted(names[w] for w in successors[v] if w in names))

    return sorted(
        repr((label(u), label(v), bw, topology.latency.get((u, v), Fraction(0))))
        for (u, v), bw in topology.capacity.items()
    )


def _decimal(value: Fraction, topology: Topology, what: str) -> int | WrittenNumber:
    """``value`` as a YAML number that is exactly it (an int, or a decimal of every digit)."""
    if value.denominator == 1:
        return int(value)
    digits = decimal_text(value)
    if digits is None:
        raise TopologyError(
            f"{topology.name}: the {what} {value} has no exact decimal form for ASTRA-sim"
        )
    return WrittenNumber(digits)
