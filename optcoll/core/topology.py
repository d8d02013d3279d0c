"""The topology model: named compute and switch nodes joined by directed links.

A :class:`Topology` is immutable once built. Links are directed and carry a
bandwidth (any positive finite number, in ``bandwidth_unit``, GB/s by default;
another rate unit is converted exactly to GB/s, :mod:`optcoll.core.units`)
and an optional latency in microseconds. A link declared ``bidirectional`` stands
for two directed links of the same bandwidth; parallel links between the same
ordered pair add their bandwidth.

Bandwidths are held exactly as :class:`fractions.Fraction` (a float such as
``12.5`` is read through its shortest decimal representation, so ``0.1`` is
exactly ``1/10``). :meth:`Topology.integer_capacities` scales the aggregated
capacities to integers with gcd 1, which is what every exact algorithm uses.

Examples
--------
>>> from optcoll.core.topology import Topology, Node, Link
>>> topo = Topology(
...     "two-gpus",
...     [Node("g0", "compute"), Node("g1", "compute"), Node("sw", "switch")],
...     [Link("g0", "sw", 100, bidirectional=True), Link("g1", "sw", 100, bidirectional=True)],
... )
>>> topo.compute_nodes
('g0', 'g1')
>>> topo.capacity[("g0", "sw")]
Fraction(100, 1)
>>> caps, unit = topo.integer_capacities()
>>> caps[("sw", "g1")], unit
(1, Fraction(100, 1))
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from optcoll.core.limits import check_size
from optcoll.core.rational import count_text, exact_number, integer_scaling
from optcoll.core.units import REPORT_UNIT, gigabytes_per_second
from optcoll.exceptions import (
    ArgumentError,
    BandwidthError,
    DuplicateNodeError,
    ImportFormatError,
    LatencyError,
    MissingFieldError,
    NodeTypeError,
    NotStronglyConnectedError,
    SelfLoopError,
    TooFewComputeNodesError,
    UnknownFieldError,
    UnknownNodeError,
    shown,
)

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "Node",
    "Link",
    "Topology",
    "TopologyBuilder",
    "plain_number",
    "NODE_TYPES",
    "SWITCH_CAPABILITIES",
]

#: The two node types. Compute nodes hold data; switches relay without copying, unless
#: they declare ``reduce`` (combine what they receive) or ``multicast`` (copy what they send).
NODE_TYPES = ("compute", "switch")

#: The in-network capabilities a switch may declare (booleans, default false). ``multimem``
#: says how a switch that reduces and multicasts does it: through the GPUs' multimem
#: instructions (NVLink SHARP, "NVLS"), not in one pass of its own (InfiniBand SHARP); see
#: :class:`Node`.
SWITCH_CAPABILITIES = ("reduce", "multicast", "multimem")

#: Appended to the name of an edited topology (:meth:`Topology.with_link` and friends).
EDITED_SUFFIX = "~edited"

#: Version of the topology file schema written by :meth:`Topology.to_dict`.
SCHEMA_VERSION = 1

_TOP_FIELDS = {
    "format",
    "version",
    "name",
    "description",
    "bandwidth_unit",
    "nodes",
    "links",
    "rank_order",
}
_NODE_FIELDS = {"id", "type", "group", *SWITCH_CAPABILITIES}
_LINK_FIELDS = {"src", "dst", "bandwidth", "latency", "bidirectional"}


@dataclass(frozen=True)
class Node:
    """A vertex: ``type`` is ``"compute"`` (a GPU) or ``"switch"``.

    ``group`` optionally names the box/server the node belongs to (used for
    explanations and pictures only). A switch may declare in-network capabilities
    (NVSwitch NVLS, InfiniBand SHARP): ``reduce`` (it combines the data it receives
    into one sum before sending it on) and ``multicast`` (it copies what it receives
    to several links). Without them a switch relays: every byte it sends it has
    received, once. Compute nodes always reduce and copy, so they declare neither.

    ``multimem`` (with ``reduce`` and ``multicast``) says the switch does both only at a
    GPU's request, as NVSwitch NVLS does (``multimem.ld_reduce`` and ``multimem.st``):
    a reduction is loaded by one GPU linked to it, from every GPU of the group *the
    loading GPU included*, and the sum goes back to that GPU alone; a multicast is
    stored by one GPU and copied to every GPU of the group, *the storing GPU included*.
    Without ``multimem`` a reducing switch sums and forwards the sum on its own, and a
    multicasting one copies what it receives (InfiniBand SHARP).

    Examples
    --------
    >>> Node("nvs", "switch", reduce=True, multicast=True).in_network
    True
    >>> Node("g0").in_network
    False
    """

    id: str
    type: str = "compute"
    group: str | None = None
    reduce: bool = False
    multicast: bool = False
    multimem: bool = False

    @property
    def in_network(self) -> bool:
        """True for a switch that reduces or multicasts."""
        return self.reduce or self.multicast

    @property
    def is_compute(self) -> bool:
        """True for compute nodes."""
        return self.type == "compute"


@dataclass(frozen=True)
class Link:
    """A directed link ``src -> dst`` (both directions if ``bidirectional``)."""

    src: str
    dst: str
    bandwidth: Any
    latency: Any = None
    bidirectional: bool = False

    def arcs(self) -> list[tuple[str, str]]:
        """The directed (src, dst) pairs this declaration stands for."""
        pairs = [(self.src, self.dst)]
        if self.bidirectional:
            pairs.append((self.dst, self.src))
        return pairs


def _describe(index: int, link: Link) -> str:
    arrow = "<->" if link.bidirectional else "->"
    return f"links[{index}] ({link.src} {arrow} {link.dst})"


def reachable(adjacency: Mapping[str, list[str]], start: str) -> set[str]:
    """Nodes reachable from ``start`` (itself included) along ``adjacency``.

    >>> sorted(reachable({"a": ["b"], "b": [], "c": ["a"]}, "a"))
    ['a', 'b']
    """
    seen = {start}
    stack = [start]
    while stack:
        for v in adjacency[stack.pop()]:
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return seen


@dataclass(frozen=True, eq=False)
class Topology:
    """An immutable, validated network topology.

    Parameters
    ----------
    name : str
        A short name, e.g. ``"dgx-a100:2"``.
    nodes : iterable of Node
        Node ids must be unique non-empty strings.
    links : iterable of Link
        Declared links; see :class:`Link`.
    bandwidth_unit : str
        Unit of every bandwidth (default ``"GB/s"``): a rate unit of
        :data:`optcoll.core.units.BYTES_PER_SECOND` (the links are then converted
        exactly to GB/s, the unit the topology reports in) or a relative unit.
    description : str
        Free text (shown by ``optcoll show``).
    rank_order : iterable of str, optional
        The compute node ids in rank order: rank ``r`` (MSCCL's GPU ``id``, the
        communicator's rank) is the ``r``-th. Default: declaration order. It is
        what :attr:`compute_nodes` returns, so schedules and exports follow it.

    Raises
    ------
    TopologyError
        A subclass naming the culprit when the topology is invalid: duplicate
        node, unknown node in a link, self-loop, invalid bandwidth or latency,
        unknown node type, fewer than two compute nodes, compute nodes that
        are not mutually reachable, or a rank order that is not a permutation of
        the compute nodes.

    Examples
    --------
    >>> t = Topology("pair", [Node("a"), Node("b")], [Link("a", "b", 1, bidirectional=True)],
    ...              rank_order=["b", "a"])
    >>> t.compute_nodes, t.to_dict()["rank_order"]
    (('b', 'a'), ['b', 'a'])
    """

    name: str
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    bandwidth_unit: str = "GB/s"
    description: str = ""
    rank_order: tuple[str, ...] = ()
    _bandwidths: tuple[Fraction, ...] = field(init=False, repr=False)

    def __init__(
        self,
        name: str,
        nodes: Iterable[Node],
        links: Iterable[Link],
        bandwidth_unit: str = "GB/s",
        description: str = "",
        rank_order: Iterable[str] | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "name", _line(name, "topology name", "name"))
        set_(self, "nodes", tuple(_iterable(nodes, "nodes")))
        set_(self, "links", tuple(_iterable(links, "links")))
        set_(self, "bandwidth_unit", _line(bandwidth_unit, "bandwidth_unit", "bandwidth_unit"))
        try:
            scale = gigabytes_per_second(self.bandwidth_unit)
        except ValueError as err:
            raise MissingFieldError(
                f"field 'bandwidth_unit' of topology {self.name!r}: {err}", ("bandwidth_unit",)
            ) from None
        if not isinstance(description, str):
            raise ArgumentError(f"description must be a string, got {type(description).__name__}")
        set_(self, "description", description)
        set_(self, "_bandwidths", self._validate())
        if scale is not None and scale != 1:  # computed and reported in GB/s from here on
            set_(self, "_bandwidths", tuple(bw * scale for bw in self._bandwidths))
            set_(
                self,
                "links",
                tuple(
                    Link(link.src, link.dst, bw, link.latency, link.bidirectional)
                    for link, bw in zip(self.links, self._bandwidths, strict=True)
                ),
            )
            set_(self, "bandwidth_unit", REPORT_UNIT)
        set_(self, "rank_order", self._ranks(rank_order))

    def _ranks(self, rank_order: Iterable[str] | None) -> tuple[str, ...]:
        declared = tuple(n.id for n in self.nodes if n.is_compute)
        if rank_order is None:
            return declared
        if isinstance(rank_order, str | bytes | Mapping) or not isinstance(rank_order, Iterable):
            raise MissingFieldError(
                f"rank_order must be a list of compute node ids, got {rank_order!r}",
                ("rank_order",),
            )
        order = tuple(rank_order)
        for i, v in enumerate(order):
            if not isinstance(v, str) or v not in self.node or not self.node[v].is_compute:
                raise UnknownNodeError(
                    f"rank_order[{i}] = {v!r} is not a compute node of {self.name!r}",
                    ("rank_order", i),
                )
        if len(set(order)) != len(order) or len(order) != len(declared):
            missing = sorted(set(declared) - set(order))
            raise MissingFieldError(
                f"rank_order must list each of the {len(declared)} compute nodes once"
                + (f"; missing: {', '.join(missing[:5])}" if missing else "; a node twice"),
                ("rank_order",),
            )
        return order

    # --- validation ------------------------------------------------------------------

    def _validate(self) -> tuple[Fraction, ...]:
        # an imported file is held to the built-ins' limits before anything is indexed
        arcs = sum(2 if getattr(link, "bidirectional", False) is True else 1 for link in self.links)
        check_size(f"topology {self.name!r}", len(self.nodes), arcs, built=True)
        first_index: dict[str, int] = {}
        for i, node in enumerate(self.nodes):
            where = ("nodes", i)
            if not isinstance(node, Node):
                raise MissingFieldError(f"nodes[{i}] must be a Node, got {shown(node)}", where)
            if not isinstance(node.id, str) or not node.id:
                raise MissingFieldError(
                    f"nodes[{i}]: node id must be a non-empty string, got {node.id!r}", where
                )
            if any(unicodedata.category(ch) == "Cs" for ch in node.id):  # not UTF-8
                raise MissingFieldError(
                    f"nodes[{i}]: node id {node.id!r} contains a lone surrogate, which no UTF-8 "
                    "file or terminal can hold",
                    where,
                )
            control = next((ch for ch in node.id if unicodedata.category(ch) == "Cc"), None)
            if control is not None:  # a newline or tab would break one-line messages, XML
                raise MissingFieldError(
                    f"nodes[{i}]: node id {node.id!r} contains the control character "
                    f"U+{ord(control):04X}; ids are names on one line",
                    where,
                )
            if node.id in first_index:
                raise DuplicateNodeError(
                    f"duplicate node id {node.id!r} (nodes[{first_index[node.id]}] and nodes[{i}])",
                    where,
                )
            if node.type not in NODE_TYPES:
                raise NodeTypeError(
                    f"node {node.id!r} has unknown type {node.type!r}; "
                    f"valid types are 'compute' and 'switch'",
                    where,
                )
            if node.group is not None and not isinstance(node.group, str):
                raise MissingFieldError(
                    f"node {node.id!r}: group must be a string, got {node.group!r}", where
                )
            for flag in SWITCH_CAPABILITIES:
                value = getattr(node, flag)
                if not isinstance(value, bool):
                    raise MissingFieldError(
                        f"node {node.id!r}: {flag} must be true or false, got {value!r}",
                        (*where, flag),
                    )
                if value and node.is_compute:
                    raise NodeTypeError(
                        f"node {node.id!r} is a compute node and declares {flag}; only switches "
                        f"declare reduce or multicast (compute nodes always do both)",
                        (*where, flag),
                    )
            if node.multimem and not (node.reduce and node.multicast):
                raise MissingFieldError(
                    f"node {node.id!r} declares multimem (reduction and multicast at a GPU's "
                    "request, NVLS) but not both reduce and multicast: declare them too",
                    (*where, "multimem"),
                )
            first_index[node.id] = i
        bandwidths = []
        for i, link in enumerate(self.links):
            where = ("links", i)
            if not isinstance(link, Link):
                raise MissingFieldError(f"links[{i}] must be a Link, got {shown(link)}", where)
            for end in (link.src, link.dst):
                if not isinstance(end, str):
                    raise MissingFieldError(
                        f"links[{i}]: src and dst must be node id strings, got {end!r}", where
                    )
                if end not in first_index:
                    raise UnknownNodeError(
                        f"{_describe(i, link)} refers to unknown node {end!r}", where
                    )
            if link.src == link.dst:
                raise SelfLoopError(
                    f"{_describe(i, link)} is a self-loop on node {link.src!r}", where
                )
            try:
                bw = exact_number(link.bandwidth, "bandwidth")
            except ValueError as err:
                raise BandwidthError(f"{_describe(i, link)}: {err}", where) from None
            if bw <= 0:
                raise BandwidthError(
                    f"{_describe(i, link)}: bandwidth must be positive, got {link.bandwidth!r}",
                    where,
                )
            if link.latency is not None:
                try:
                    lat = exact_number(link.latency, "latency")
                except ValueError as err:
                    raise LatencyError(f"{_describe(i, link)}: {err}", where) from None
                if lat < 0:
                    raise LatencyError(
                        f"{_describe(i, link)}: latency must be >= 0, got {link.latency!r}",
                        where,
                    )
            if not isinstance(link.bidirectional, bool):
                raise MissingFieldError(
                    f"{_describe(i, link)}: bidirectional must be true or false, "
                    f"got {link.bidirectional!r}",
                    where,
                )
            bandwidths.append(bw)
        compute = [n.id for n in self.nodes if n.is_compute]
        if len(compute) < 2:
            raise TooFewComputeNodesError(
                f"topology {self.name!r} has {len(compute)} compute node(s); at least 2 are needed"
            )
        self._check_reachability(compute)
        return tuple(bandwidths)

    def _check_reachability(self, compute: list[str]) -> None:
        successors: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        predecessors: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for link in self.links:
            for u, v in link.arcs():
                successors[u].append(v)
                predecessors[v].append(u)
        # Every compute node reaches and is reached from the first one iff all
        # compute nodes are mutually reachable.
        first = compute[0]
        forward = reachable(successors, first)
        backward = reachable(predecessors, first)
        for c in compute[1:]:
            if c not in forward:
                raise NotStronglyConnectedError(
                    f"compute node {c!r} cannot be reached from compute node {first!r} "
                    f"({first!r} cannot reach {c!r}); every compute node must reach every "
                    f"other one"
                )
            if c not in backward:
                raise NotStronglyConnectedError(
                    f"compute node {c!r} cannot reach compute node {first!r}; every compute "
                    f"node must reach every other one"
                )

    # --- views -----------------------------------------------------------------------

    @cached_property
    def node_ids(self) -> tuple[str, ...]:
        """All node ids in declaration order."""
        return tuple(n.id for n in self.nodes)

    @property
    def compute_nodes(self) -> tuple[str, ...]:
        """Compute node ids in rank order (:attr:`rank_order`; default: declaration order)."""
        return self.rank_order

    @cached_property
    def switch_nodes(self) -> tuple[str, ...]:
        """Switch node ids in declaration order."""
        return tuple(n.id for n in self.nodes if not n.is_compute)

    @cached_property
    def reducing_switches(self) -> tuple[str, ...]:
        """Switches that declare ``reduce``, in declaration order."""
        return tuple(n.id for n in self.nodes if n.reduce)

    @cached_property
    def multicast_switches(self) -> tuple[str, ...]:
        """Switches that declare ``multicast``, in declaration order."""
        return tuple(n.id for n in self.nodes if n.multicast)

    @cached_property
    def multimem_switches(self) -> tuple[str, ...]:
        """Switches that declare ``multimem`` (NVLS: reduce and multicast at a GPU's request,
        :class:`Node`), in declaration order."""
        return tuple(n.id for n in self.nodes if n.multimem)

    @property
    def has_in_network(self) -> bool:
        """True when some switch reduces or multicasts (NVLS, SHARP)."""
        return bool(self.reducing_switches or self.multicast_switches)

    def nvls_domain(self, nodes: Iterable[str] | None = None) -> tuple[str, ...]:
        """The switches that reduce and multicast and link both ways to every one of
        ``nodes`` (default: the compute nodes): those a switch (NVLS) channel over them
        sums and copies in; empty if none. In declaration order.

        Examples
        --------
        >>> from optcoll.topologies import build
        >>> build("dgx-h100:1,nvls=1").nvls_domain(), build("dgx-h100:2,nvls=1").nvls_domain()
        (('b0.nvswitch',), ())
        >>> len(build("nvl72:racks=1,nvls=1").nvls_domain())
        9
        """
        members = self.compute_nodes if nodes is None else tuple(nodes)
        return tuple(
            n.id
            for n in self.nodes
            if n.reduce
            and n.multicast
            and all((g, n.id) in self.capacity and (n.id, g) in self.capacity for g in members)
        )

    @property
    def num_compute(self) -> int:
        """N, the number of compute nodes."""
        return len(self.compute_nodes)

    @cached_property
    def node(self) -> Mapping[str, Node]:
        """Node objects by id (a read-only view)."""
        return MappingProxyType({n.id: n for n in self.nodes})

    def is_compute(self, node_id: str) -> bool:
        """True if ``node_id`` is a compute node."""
        try:
            return self.node[node_id].is_compute
        except (KeyError, TypeError):  # TypeError: not even hashable
            raise UnknownNodeError(
                f"unknown node {shown(node_id)} in topology {self.name!r}"
            ) from None

    @cached_property
    def capacity(self) -> Mapping[tuple[str, str], Fraction]:
        """Aggregated exact bandwidth of every ordered pair with at least one link.

        Keys are ``(src, dst)`` in first-declaration order; parallel links add up. The
        mapping is a read-only view (copy it with ``dict(...)`` to edit).
        """
        cap: dict[tuple[str, str], Fraction] = {}
        for link, bw in zip(self.links, self._bandwidths, strict=True):
            for arc in link.arcs():
                cap[arc] = cap.get(arc, Fraction(0)) + bw
        return MappingProxyType(cap)

    @cached_property
    def latency(self) -> Mapping[tuple[str, str], Fraction]:
        """Latency (microseconds) per ordered pair; the largest of parallel links, 0 if unset."""
        lat: dict[tuple[str, str], Fraction] = {}
        for link in self.links:
            value = Fraction(0) if link.latency is None else exact_number(link.latency, "latency")
            for arc in link.arcs():
                lat[arc] = max(lat.get(arc, Fraction(0)), value)
        return MappingProxyType(lat)

    def integer_capacities(self) -> tuple[Mapping[tuple[str, str], int], Fraction]:
        """Capacities scaled exactly to integers with gcd 1.

        Returns
        -------
        caps : Mapping
            ``(src, dst) -> int`` for every pair in :attr:`capacity` (a read-only view).
        unit : Fraction
            The bandwidth one integer unit stands for: ``capacity == caps * unit``.

        Examples
        --------
        >>> t = Topology("t", [Node("a"), Node("b")],
        ...              [Link("a", "b", 12.5), Link("b", "a", 25)])
        >>> caps, unit = t.integer_capacities()
        >>> dict(caps), unit
        ({('a', 'b'): 1, ('b', 'a'): 2}, Fraction(25, 2))
        """
        return self._integer_scaling

    @cached_property
    def _integer_scaling(self) -> tuple[Mapping[tuple[str, str], int], Fraction]:
        if not self.capacity:
            return MappingProxyType({}), Fraction(0)
        caps, unit = integer_scaling(self.capacity)
        return MappingProxyType(caps), unit

    @cached_property
    def _node_bandwidths(self) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
        """(ingress, egress) bandwidth of every node, computed in one pass (summed in
        integer capacity units, then scaled once per node)."""
        caps, unit = self._integer_scaling
        ingress_units = dict.fromkeys(self.node_ids, 0)
        egress_units = dict(ingress_units)
        for (u, v), c in caps.items():
            egress_units[u] += c
            ingress_units[v] += c
        ingress = {n: unit * k for n, k in ingress_units.items()}
        egress = {n: unit * k for n, k in egress_units.items()}
        return ingress, egress

    def out_bandwidth(self, node_id: str) -> Fraction:
        """Total bandwidth leaving ``node_id`` (any node, compute or switch)."""
        self.is_compute(node_id)
        return self._node_bandwidths[1][node_id]

    def in_bandwidth(self, node_id: str) -> Fraction:
        """Total bandwidth entering ``node_id`` (any node, compute or switch)."""
        self.is_compute(node_id)
        return self._node_bandwidths[0][node_id]

    def cut_bandwidth(self, side: Iterable[str]) -> Fraction:
        """B+(S): exact total bandwidth of links leaving the node set ``side``.

        Examples
        --------
        >>> t = Topology("t", [Node("a"), Node("b"), Node("s", "switch")],
        ...              [Link("a", "s", 3, bidirectional=True), Link("b", "s", 5, bidirectional=True)])
        >>> t.cut_bandwidth({"a", "s"})
        Fraction(5, 1)
        """
        if isinstance(side, str):
            raise ArgumentError(f"side must be a set of node ids, not the string {side!r}")
        inside = {_node_id(v, "side") for v in _iterable(side, "side")}
        for v in inside:
            self.is_compute(v)
        return sum(
            (c for (u, v), c in self.capacity.items() if u in inside and v not in inside),
            Fraction(0),
        )

    def short_switches(self) -> list[str]:
        """The switches with less bandwidth in than out, in declaration order.

        What such a switch cannot receive it cannot forward (see :mod:`optcoll.bounds.forwardable`).

        Examples
        --------
        >>> t = Topology("t", [Node("a"), Node("b"), Node("w", "switch")],
        ...              [Link("a", "w", 1), Link("w", "b", 2), Link("b", "a", 1)])
        >>> t.short_switches()
        ['w']
        """
        ingress, egress = self._node_bandwidths
        return [w for w in self.switch_nodes if ingress[w] < egress[w]]

    def with_capacity(self, capacity: Mapping[tuple[str, str], Fraction | int]) -> Topology:
        """This topology's nodes with one link per arc of positive ``capacity`` instead.

        Name, bandwidth unit, description and rank order are kept; latencies are
        not. Used for the part of the capacity a schedule can use
        (:func:`optcoll.bounds.forwardable.forwardable_topology`).

        Examples
        --------
        >>> t = Topology("t", [Node("a"), Node("b"), Node("w", "switch")],
        ...              [Link("a", "w", 1), Link("w", "b", 2), Link("b", "a", 1)])
        >>> usable = t.with_capacity({("a", "w"): 1, ("w", "b"): 1, ("b", "a"): 1})
        >>> usable.capacity[("w", "b")], usable.short_switches()
        (Fraction(1, 1), [])
        """
        if not isinstance(capacity, Mapping):
            raise ArgumentError(
                f"capacity must map (src, dst) pairs to numbers, got {type(capacity).__name__}"
            )
        for arc in capacity:
            if not (isinstance(arc, tuple) and len(arc) == 2):
                raise ArgumentError(f"capacity key {arc!r} is not a (src, dst) pair")
        links = [Link(u, v, c) for (u, v), c in capacity.items() if c > 0]
        return Topology(
            self.name,
            self.nodes,
            links,
            self.bandwidth_unit,
            self.description,
            self.rank_order,
        )

    @cached_property
    def content_hash(self) -> str:
        """A short hash of what a schedule depends on: nodes, types, link capacities, unit.

        The name, description, groups, latencies and the order or splitting of link
        declarations do not enter it, so a renamed or re-saved topology keeps its hash
        and an edited one (a link removed, a bandwidth changed) gets another. A switch's
        ``reduce``, ``multicast`` and ``multimem`` enter it only when set, so topologies without them
        keep the hash they always had. Schedules
        record it (:func:`optcoll.core.schedule.check_schedule_topology`).

        Examples
        --------
        >>> t = Topology("t", [Node("a"), Node("b")], [Link("a", "b", 1, bidirectional=True)])
        >>> t.content_hash == t.with_name("other").content_hash
        True
        >>> t.content_hash == t.scale_links(lambda link: True, 2).content_hash
        False
        >>> t.content_hash
        '80af48731859c57b'
        """

        content = {
            "bandwidth_unit": self.bandwidth_unit,
            "nodes": sorted(
                [n.id, n.type, *(flag for flag in SWITCH_CAPABILITIES if getattr(n, flag))]
                for n in self.nodes
            ),
            "capacity": sorted([u, v, str(c)] for (u, v), c in self.capacity.items()),
        }
        text = json.dumps(content, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    # --- editing: every edit returns a new, validated topology ------------------------

    def with_name(self, name: str, description: str | None = None) -> Topology:
        """The same topology under another name (and description).

        Examples
        --------
        >>> from optcoll.topologies import build
        >>> build("ring:4").with_name("my-ring").name
        'my-ring'
        """
        return Topology(
            name,
            self.nodes,
            self.links,
            self.bandwidth_unit,
            self.description if description is None else description,
            self.rank_order,
        )

    def _edited(self, links: Iterable[Link], change: str, name: str | None) -> Topology:
        base = self.name if self.name.endswith(EDITED_SUFFIX) else self.name + EDITED_SUFFIX
        description = f"{self.description}; {change}" if self.description else change
        return Topology(
            name or base, self.nodes, links, self.bandwidth_unit, description, self.rank_order
        )

    def with_link(
        self,
        src: str,
        dst: str,
        bandwidth: Any,
        *,
        latency: Any = None,
        bidirectional: bool = False,
        name: str | None = None,
    ) -> Topology:
        """A copy with one more link ``src -> dst`` (parallel links add their bandwidth).

        The copy is named ``name`` (default: this name followed by ``~edited``), so an
        edited built-in never passes for the original.

        Examples
        --------
        >>> from optcoll.topologies import build
        >>> t = build("ring:4").with_link("n0", "n2", 50, bidirectional=True)
        >>> t.name, t.capacity[("n2", "n0")]
        ('ring:4~edited', Fraction(50, 1))
        """
        link = Link(_node_id(src, "src"), _node_id(dst, "dst"), bandwidth, latency, bidirectional)
        arrow = "<->" if bidirectional else "->"
        amount = (
            bandwidth if isinstance(bandwidth, str | int | float | Fraction) else shown(bandwidth)
        )
        change = f"added link {src} {arrow} {dst} ({amount} {self.bandwidth_unit})"
        return self._edited([*self.links, link], change, name)

    def without_link(
        self, src: str, dst: str, *, bidirectional: bool = False, name: str | None = None
    ) -> Topology:
        """A copy without any link ``src -> dst`` (and ``dst -> src`` if ``bidirectional``).

        Every declaration of the pair goes; a bidirectional declaration keeps its other
        direction unless that is removed too.

        Raises
        ------
        UnknownNodeError
            There is no link ``src -> dst`` (or ``dst -> src``).
        NotStronglyConnectedError
            The compute nodes would no longer reach each other.

        Examples
        --------
        >>> from optcoll.topologies import build
        >>> t = build("ring:4").without_link("n0", "n1")
        >>> ("n0", "n1") in t.capacity, ("n1", "n0") in t.capacity
        (False, True)
        """
        src, dst = _node_id(src, "src"), _node_id(dst, "dst")
        gone = {(src, dst), (dst, src)} if bidirectional else {(src, dst)}
        for u, v in gone:
            if (u, v) not in self.capacity:
                raise UnknownNodeError(f"topology {self.name!r} has no link {u} -> {v}")
        links = []
        for link in self.links:
            kept = [arc for arc in link.arcs() if arc not in gone]
            if len(kept) == 2:
                links.append(link)
            elif kept:
                links.append(Link(*kept[0], link.bandwidth, link.latency))
        arrow = "<->" if bidirectional else "->"
        return self._edited(links, f"removed link {src} {arrow} {dst}", name)

    def scale_links(
        self, selector: str | Callable[[Link], bool], factor: Any, *, name: str | None = None
    ) -> Topology:
        """A copy whose selected links have their bandwidth multiplied by ``factor``.

        Parameters
        ----------
        selector : str or callable
            A node id (every link that starts or ends there) or a predicate on
            :class:`Link` declarations.
        factor : number
            A positive factor (exact: ``0.5`` is ``1/2``).

        Raises
        ------
        UnknownNodeError
            The selector is a node id that does not exist, or selects no link.
        BandwidthError
            The factor is not a positive finite number.

        Examples
        --------
        >>> from optcoll.topologies import build
        >>> t = build("dgx-a100:2").scale_links(lambda link: "nic" in link.src + link.dst, 0.5)
        >>> t.capacity[("b0.gpu0", "b0.nic0")], t.capacity[("b0.gpu0", "b0.nvswitch")]
        (Fraction(25, 2), Fraction(300, 1))
        """
        try:
            scale = exact_number(factor, "scale factor")
        except ValueError as err:
            raise BandwidthError(str(err)) from None
        if scale <= 0:
            raise BandwidthError(f"scale factor must be positive, got {factor!r}")
        chosen: Callable[[Link], bool]
        if not isinstance(selector, str) and not callable(selector):
            raise ArgumentError(
                f"selector must be a node id or a predicate on links, got {selector!r} "
                f"({type(selector).__name__})"
            )
        if isinstance(selector, str):
            self.is_compute(selector)
            node = selector
            chosen, what = (lambda link: node in (link.src, link.dst)), f"links at {node}"
        else:
            chosen, what = selector, "selected links"
        links, count = [], 0
        for link, bandwidth in zip(self.links, self._bandwidths, strict=True):
            if chosen(link):
                count += 1
                link = Link(link.src, link.dst, bandwidth * scale, link.latency, link.bidirectional)
            links.append(link)
        if not count:
            raise UnknownNodeError(f"the selector matches no link of topology {self.name!r}")
        return self._edited(links, f"{what} scaled by {scale}", name)

    def _repr_html_(self) -> str:
        from html import escape

        return f"<code>{escape(repr(self))}</code>"

    @classmethod
    def from_networkx(
        cls,
        graph: nx.Graph,
        name: str | None = None,
        *,
        bandwidth: str = "bandwidth",
        latency: str | None = None,
    ) -> Topology:
        """A topology from a networkx graph (directed: its arcs; undirected: both ways).

        Every edge carries its bandwidth in the attribute named ``bandwidth`` and
        optionally its latency (µs) in ``latency`` (default: ``latency``, else
        ``delay``, else none); parallel edges of a multigraph add up. Node attributes
        ``type`` (``compute`` or ``switch``, default compute), ``group`` and, on
        switches, the booleans ``reduce`` and ``multicast`` (in-network reduction and
        multicast; ``True``/``False`` or ``"true"``/``"false"``/``1``/``0``) are optional. Node ids become strings: strings are kept, integers written in
        decimal (``3`` -> ``'3'``), tuples joined by commas (``(0, 1, 2)`` ->
        ``'0,1,2'``, as ``nx.grid_graph`` names them), anything else by ``str``.

        Parameters
        ----------
        graph : networkx.Graph or networkx.DiGraph (or their multigraphs)
        name : str, optional
            Default: the graph's ``name`` attribute, else ``"networkx"``.
        bandwidth, latency : str
            Edge attributes holding the bandwidth (GB/s) and latency (µs).

        Raises
        ------
        ImportFormatError
            An edge without the bandwidth attribute, a value that is not a number,
            or two nodes whose ids become the same string.

        Examples
        --------
        >>> import networkx as nx
        >>> g = nx.grid_2d_graph(2, 2)
        >>> nx.set_edge_attributes(g, 50, "bandwidth")
        >>> t = Topology.from_networkx(g, "grid")
        >>> t.compute_nodes, t.capacity[("0,0", "0,1")]
        (('0,0', '0,1', '1,0', '1,1'), Fraction(50, 1))
        >>> d = nx.DiGraph()
        >>> d.add_edge("a", "b", capacity=10, delay=2)
        >>> d.add_edge("b", "a", capacity=5)
        >>> t = Topology.from_networkx(d, "pair", bandwidth="capacity")
        >>> t.capacity[("a", "b")], t.capacity[("b", "a")], t.latency[("a", "b")]
        (Fraction(10, 1), Fraction(5, 1), Fraction(2, 1))
        """
        if not all(callable(getattr(graph, m, None)) for m in ("is_directed", "nodes", "edges")):
            raise ImportFormatError(
                f"expected a networkx graph, got {type(graph).__name__}; build one with "
                "networkx.Graph() or networkx.DiGraph()"
            )
        ids: dict[Any, str] = {}
        for v in graph.nodes:
            ids[v] = _graph_node_id(v)
        seen: dict[str, Any] = {}
        for v, text in ids.items():
            if text in seen:
                raise ImportFormatError(
                    f"nodes {seen[text]!r} and {v!r} of the graph both become node id {text!r}; "
                    "relabel one (networkx.relabel_nodes)"
                )
            seen[text] = v
        nodes = []
        for v, attrs in graph.nodes(data=True):
            group = attrs.get("group")
            kind = str(attrs.get("type", "compute"))
            flags = {
                flag: _graph_flag(attrs.get(flag, False), f"node {ids[v]}: {flag}")
                for flag in SWITCH_CAPABILITIES
            }
            group_id = None if group is None else str(group)
            nodes.append(Node(ids[v], kind, group_id, **flags))
        links = []
        directed = graph.is_directed()
        for u, v, attrs in graph.edges(data=True):
            where = f"edge {ids[u]} {'->' if directed else '--'} {ids[v]}"
            if bandwidth not in attrs:
                known = ", ".join(sorted(map(str, attrs))) or "none"
                raise ImportFormatError(
                    f"{where} has no {bandwidth!r} attribute (it has: {known}); name the "
                    "bandwidth attribute: bandwidth=NAME in Python, the reader option "
                    "bandwidth_attr or --bandwidth-attr NAME on the command line"
                )
            value = _graph_number(attrs[bandwidth], f"{where}: {bandwidth}", positive=True)
            key = latency or next((k for k in ("latency", "delay") if k in attrs), None)
            delay = None
            if key is not None:
                if key not in attrs:
                    raise ImportFormatError(f"{where} has no {key!r} attribute (latency=)")
                delay = _graph_number(attrs[key], f"{where}: {key}")
            links.append(Link(ids[u], ids[v], value, delay, not directed))
        if name is None:
            name = str(graph.graph.get("name") or "networkx")
        return cls(name, nodes, links, description="imported from a networkx graph")

    def to_networkx(self) -> nx.DiGraph:
        """A networkx ``DiGraph``: node attribute ``type`` (and ``group``, ``reduce``, ``multicast``), edge
        attribute ``bandwidth`` (aggregated, exact Fraction)."""
        import networkx as nx

        graph = nx.DiGraph(name=self.name)
        for n in self.nodes:
            attrs: dict[str, str | bool] = {"type": n.type}
            if n.group is not None:
                attrs["group"] = n.group
            attrs.update({flag: True for flag in SWITCH_CAPABILITIES if getattr(n, flag)})
            graph.add_node(n.id, **attrs)
        for (u, v), c in self.capacity.items():
            graph.add_edge(u, v, bandwidth=c)
        return graph

    # --- schema ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The file-format dictionary (lossless: ``Topology.from_dict(t.to_dict()) == t``)."""
        nodes = []
        for n in self.nodes:
            entry: dict[str, Any] = {"id": n.id, "type": n.type}
            if n.group is not None:
                entry["group"] = n.group
            entry.update({flag: True for flag in SWITCH_CAPABILITIES if getattr(n, flag)})
            nodes.append(entry)
        links = []
        for link in self.links:
            entry = {"src": link.src, "dst": link.dst, "bandwidth": plain_number(link.bandwidth)}
            if link.latency is not None:
                entry["latency"] = plain_number(link.latency)
            if link.bidirectional:
                entry["bidirectional"] = True
            links.append(entry)
        data: dict[str, Any] = {
            "format": "optcoll-topology",
            "version": SCHEMA_VERSION,
            "name": self.name,
        }
        if self.description:
            data["description"] = self.description
        data.update({"bandwidth_unit": self.bandwidth_unit, "nodes": nodes, "links": links})
        if self.rank_order != tuple(n.id for n in self.nodes if n.is_compute):
            data["rank_order"] = list(self.rank_order)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, default_name: str = "topology") -> Topology:
        """Build a topology from the file-format dictionary (docs/topology-format.md).

        Unknown fields anywhere are rejected with an :class:`UnknownFieldError`
        naming the field, so that typos are never silently ignored.

        Examples
        --------
        >>> t = Topology.from_dict({"name": "two-gpus", "bandwidth_unit": "GB/s",
        ...   "nodes": [{"id": "g0", "type": "compute"}, {"id": "g1", "type": "compute"},
        ...             {"id": "sw", "type": "switch"}],
        ...   "links": [{"src": "g0", "dst": "sw", "bandwidth": 100, "bidirectional": True},
        ...             {"src": "g1", "dst": "sw", "bandwidth": 100, "bidirectional": True}]})
        >>> t.num_compute, len(t.capacity)
        (2, 4)
        """
        if not isinstance(data, Mapping):
            raise MissingFieldError(
                f"a topology must be a mapping with 'nodes' and 'links', got {type(data).__name__}"
            )
        if "collective" in data or str(data.get("format", "")).startswith("optcoll-schedule"):
            raise UnknownFieldError(
                "this is a schedule file (it has a 'collective'), not a topology: give the "
                "topology first, the schedule second (optcoll verify TOPO SCHEDULE)",
                ("collective",),
            )
        _reject_unknown(data, _TOP_FIELDS, "topology", ())
        fmt = data.get("format", "optcoll-topology")
        if fmt != "optcoll-topology":
            raise MissingFieldError(
                f"field 'format' must be 'optcoll-topology', got {fmt!r}", ("format",)
            )
        version = data.get("version", SCHEMA_VERSION)
        if isinstance(version, bool) or version != SCHEMA_VERSION:
            raise MissingFieldError(
                f"field 'version' is {version!r}; this optcoll reads version {SCHEMA_VERSION}",
                ("version",),
            )
        for key in ("name", "description", "bandwidth_unit"):
            if key in data and not isinstance(data[key], str):
                raise MissingFieldError(
                    f"field {key!r} must be a string, got {data[key]!r}", (key,)
                )
        for key in ("nodes", "links"):
            if key not in data:
                raise MissingFieldError(f"topology is missing the required field {key!r}")
            if not isinstance(data[key], list):
                raise MissingFieldError(
                    f"field {key!r} must be a list, got {type(data[key]).__name__}", (key,)
                )
        nodes = []
        for i, entry in enumerate(data["nodes"]):
            where, location = f"nodes[{i}]", ("nodes", i)
            if not isinstance(entry, Mapping):
                raise MissingFieldError(f"{where} must be a mapping, got {entry!r}", location)
            _reject_unknown(entry, _NODE_FIELDS, where, location)
            if "id" not in entry:
                raise MissingFieldError(f"{where} is missing the required field 'id'", location)
            if not isinstance(entry["id"], str) or not entry["id"]:
                raise MissingFieldError(
                    f"{where}: 'id' must be a non-empty string, got {entry['id']!r}"
                    f"{_quote_hint(entry['id'])}",
                    location,
                )
            group = entry.get("group")
            if group is not None and not isinstance(group, str):
                raise MissingFieldError(
                    f"{where}: 'group' must be a string, got {group!r}", location
                )
            flags = {flag: entry.get(flag, False) for flag in SWITCH_CAPABILITIES}
            for flag, value in flags.items():
                if not isinstance(value, bool):
                    raise MissingFieldError(
                        f"{where}: {flag!r} must be true or false, got {value!r}",
                        (*location, flag),
                    )
            nodes.append(Node(entry["id"], entry.get("type", "compute"), group, **flags))
        links = []
        for i, entry in enumerate(data["links"]):
            where, location = f"links[{i}]", ("links", i)
            if not isinstance(entry, Mapping):
                raise MissingFieldError(f"{where} must be a mapping, got {entry!r}", location)
            _reject_unknown(entry, _LINK_FIELDS, where, location)
            for key in ("src", "dst", "bandwidth"):
                if key not in entry:
                    raise MissingFieldError(
                        f"{where} is missing the required field {key!r}", location
                    )
            for key in ("src", "dst"):
                if not isinstance(entry[key], str):
                    raise MissingFieldError(
                        f"{where}: {key!r} must be a node id string, got {entry[key]!r}"
                        f"{_quote_hint(entry[key])}",
                        location,
                    )
            links.append(
                Link(
                    entry["src"],
                    entry["dst"],
                    entry["bandwidth"],
                    entry.get("latency"),
                    entry.get("bidirectional", False),
                )
            )
        rank_order = data.get("rank_order")
        if rank_order is not None and not isinstance(rank_order, list):
            raise MissingFieldError(
                f"field 'rank_order' must be a list of compute node ids, got {rank_order!r}",
                ("rank_order",),
            )
        return cls(
            data.get("name", default_name),
            nodes,
            links,
            bandwidth_unit=data.get("bandwidth_unit", "GB/s"),
            description=data.get("description", ""),
            rank_order=rank_order,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Topology):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.name, self.nodes, len(self.links)))

    def __repr__(self) -> str:
        return (
            f"Topology({self.name!r}: {self.num_compute} compute, "
            f"{count_text(len(self.switch_nodes), 'switch')}, "
            f"{count_text(len(self.capacity), 'directed link')})"
        )


def _reject_unknown(
    entry: Mapping[str, Any], allowed: set[str], where: str, location: tuple[str | int, ...]
) -> None:
    for key in entry:
        if key not in allowed:
            raise UnknownFieldError(
                f"{where} has unknown field {key!r}; allowed fields are {sorted(allowed)}",
                (*location, key),
            )


def _quote_hint(value: Any) -> str:
    """Advice for ids that YAML/JSON read as a number, boolean or null."""
    if value is None or isinstance(value, bool | int | float):
        return ' (quote it to make it a string, e.g. id: "0" in YAML)'
    return ""


def plain_number(value: Any) -> Any:
    """A JSON/YAML-friendly form of an exact number that reads back to the same value.

    Ints and floats stay as they are; other numbers become an int, a float when
    its shortest repr is exact, or else a ``"p/q"`` string.

    Examples
    --------
    >>> from fractions import Fraction
    >>> plain_number(Fraction(25, 2)), plain_number(Fraction(100, 3)), plain_number(Fraction(4))
    (12.5, '100/3', 4)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return float(value)
    frac = exact_number(value, "number")
    if frac.denominator == 1:
        return int(frac)
    as_float = float(frac)
    if Fraction(repr(as_float)) == frac:
        return as_float
    return str(frac)


def _graph_node_id(v: Any) -> str:
    """A networkx node as a node id: ``'a'``, ``3`` -> ``'3'``, ``(0, 1)`` -> ``'0,1'``."""
    if isinstance(v, tuple):
        return ",".join(_graph_node_id(x) for x in v)
    return str(v)


def _graph_flag(value: Any, where: str) -> bool:
    """A graph's boolean attribute: ``True``/``False`` or ``true``/``false``/``1``/``0``."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ImportFormatError(f"{where} must be true or false, got {value!r}")


def _graph_number(value: Any, where: str, *, positive: bool = False) -> Fraction:
    """An edge attribute as an exact number >= 0 (> 0 if ``positive``), or an error naming it."""
    try:
        result = Fraction(value.strip()) if isinstance(value, str) else exact_number(value, where)
    except (ValueError, ZeroDivisionError):
        raise ImportFormatError(f"{where} must be a number, got {value!r}") from None
    if result < 0 or (positive and result == 0):
        raise ImportFormatError(
            f"{where} must be {'positive' if positive else 'non-negative'}, got {value!r}"
        )
    return result


class TopologyBuilder:
    """Incremental construction of a :class:`Topology` (used by the built-in generators).

    Examples
    --------
    >>> b = TopologyBuilder("pair")
    >>> b.compute("a"); b.compute("b")
    >>> b.link("a", "b", 50, bidirectional=True)
    >>> b.build().num_compute
    2
    """

    def __init__(self, name: str, description: str = "", bandwidth_unit: str = "GB/s") -> None:
        self.name = name
        self.description = description
        self.bandwidth_unit = bandwidth_unit
        self.nodes: list[Node] = []
        self.links: list[Link] = []

    def compute(self, node_id: str, group: str | None = None) -> None:
        """Add a compute node."""
        self.nodes.append(Node(node_id, "compute", group))

    def switch(
        self,
        node_id: str,
        group: str | None = None,
        *,
        reduce: bool = False,
        multicast: bool = False,
        multimem: bool = False,
    ) -> None:
        """Add a switch node (``reduce``/``multicast``/``multimem``: its in-network
        capabilities, :class:`Node`)."""
        self.nodes.append(Node(node_id, "switch", group, reduce, multicast, multimem))

    def link(
        self,
        src: str,
        dst: str,
        bandwidth: Any,
        *,
        bidirectional: bool = False,
        latency: Any = None,
    ) -> None:
        """Add a link (both directions if ``bidirectional``)."""
        self.links.append(Link(src, dst, bandwidth, latency, bidirectional))

    def build(self) -> Topology:
        """Validate and freeze."""
        return Topology(self.name, self.nodes, self.links, self.bandwidth_unit, self.description)


def _line(value: Any, what: str, field: str) -> str:
    """``value`` if it is text on one line: a NUL, newline or lone surrogate could not be
    written in XML, UTF-8 or a one-line message (as for node ids)."""
    text = _text(value, what)
    control = next((ch for ch in text if unicodedata.category(ch) in ("Cc", "Cs")), None)
    if control is not None:
        raise MissingFieldError(
            f"{what} {shown(text)} contains the character U+{ord(control):04X}; "
            "it must be text on one line",
            (field,),
        )
    return text


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ArgumentError(f"{what} must be a string, got {shown(value)} ({type(value).__name__})")
    return value


def _iterable(value: Any, what: str) -> Iterable[Any]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ArgumentError(
            f"{what} must be a collection, got {shown(value)} ({type(value).__name__})"
        )
    return value


def _node_id(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ArgumentError(f"{what} holds {shown(value)}, which is not a node id (a string)")
    return value
