"""Process groups: collectives in which only some compute nodes take part.

A **group** is a set of two or more compute nodes running one collective; several
disjoint groups may run it at the same time (**concurrent groups**), sharing
every link. Each member's shard is one unit of data. **Relaying** says which
other nodes may carry a group's data:

``members`` (default)
    only the group's members and the switches, as an NCCL/MSCCL communicator
    does; for one group this is the topology with the non-member compute nodes
    removed.
``any``
    every node: compute nodes outside the group forward its data without
    copying it, like a switch (PXN-style); for one group this is the topology
    with the non-members retyped as switches.

In both cases members copy and nothing else does.

**One group.** Its optimum is the cut ratio of the group on that graph,
``r*_g = max |S ∩ g| / B+(S)`` over node sets ``S`` holding some but not all
members: the allgather optimum of :mod:`optcoll.bounds.cut_ratio` with the group as the
compute nodes. That bound is attained when every relay has at least as much
capacity in as out (:mod:`formulations.multicast`); when some relay has less
(for instance a non-member GPU with more bandwidth out than in, retyped as a
switch), the group's optimum is taken from the exact multicast LP instead, and
the cut ratio is a lower bound only.

**Concurrent groups.** The optimal time is the exact optimum of an LP with two
exact forms (:data:`FORMS`, :func:`concurrent_groups_optimum`): the tree-column
form of :mod:`optcoll.groups.tree_columns` (default: faster on every class measured,
``benchmarks/groups.py``) and the edge form of :mod:`optcoll.groups.concurrent`; both
are proved by exact LP duality, and their duals name the binding links and the
groups that share them.

GROUPS, on the command line and in :func:`parse_groups`, is a JSON/YAML file
holding a list of groups (each a list of compute-node ids) or an object
``{"groups": [...], "relay": "members" | "any"}``, or a spec over the
**rank order** (the order of the compute nodes in the topology; for built-ins,
box by box): ``blocks:T`` (consecutive groups of ``T`` ranks, tensor-parallel
style) or ``strided:T`` (``N / T`` groups of ``T`` ranks, group ``j`` holding
ranks ``j, j + N/T, j + 2N/T, ...``: data-parallel style).

Examples
--------
>>> from optcoll import load_topology
>>> topo = load_topology("dgx-a100:2")
>>> groups = parse_groups(topo, "strided:2", relay="members")
>>> groups.groups[0]
('b0.gpu0', 'b1.gpu0')
>>> group_optimum(groups, 0).ratio
Fraction(1, 25)
>>> group_optimum(parse_groups(topo, "strided:2", relay="any"), 0).ratio
Fraction(1, 200)
"""

from __future__ import annotations

import re
import time
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.core.arguments import (
    choice_argument,
    instance_argument,
    text_argument,
    topology_argument,
)
from optcoll.core.limits import is_decimal
from optcoll.core.rational import fraction_text
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ArgumentError, GroupError
from optcoll.graph.symmetry import preserves_capacity

if TYPE_CHECKING:
    from optcoll.groups.concurrent import ConcurrentGroups

__all__ = [
    "RELAYS",
    "FORMS",
    "concurrent_groups_optimum",
    "ProcessGroups",
    "parse_groups",
    "make_groups",
    "GroupOptimum",
    "group_optimum",
    "GroupsBound",
    "groups_bound",
]

#: The relaying modes, default first.
RELAYS = ("members", "any")

#: The exact forms of the concurrent-groups LP, default first: tree columns
#: (:mod:`optcoll.groups.tree_columns`) and edges (:mod:`optcoll.groups.concurrent`).
FORMS = ("columns", "edge")

_SPEC = re.compile(r"^(blocks|strided):(.*)$")


@dataclass(frozen=True)
class ProcessGroups:
    """Disjoint groups of compute nodes of ``topology`` and how their data may be relayed.

    Build it with :func:`make_groups` or :func:`parse_groups`, which check it.
    """

    topology: Topology = field(repr=False)
    groups: tuple[tuple[str, ...], ...]
    relay: str

    def relays(self, index: int) -> frozenset[str] | None:
        """The nodes that may forward group ``index``'s data (``None``: every node).

        Examples
        --------
        >>> from optcoll import load_topology
        >>> groups = make_groups(load_topology("ring:4"), [["n0", "n1"]])
        >>> sorted(groups.relays(0))
        ['n0', 'n1']
        """
        if self.relay == "any":
            return None
        return frozenset(self.groups[index]) | frozenset(self.topology.switch_nodes)

    @cached_property
    def useful_arcs(self) -> tuple[frozenset[tuple[str, str]], ...]:
        """For each group, the links its data can use to any purpose: the rest may be dropped.

        Every link on a simple path from a member to a *different* member whose
        inner nodes are non-members that may relay the group's data is kept.
        Dropping the others leaves the group's optimum, alone or among
        concurrent groups, unchanged: the optimum is attained by trees for each
        group (:mod:`optcoll.groups.concurrent`) whose edges are paths from one member
        to another through non-members; cutting the cycles out of such a path
        leaves a simple path of that kind, which loads no link more.

        Two rules, applied until neither drops anything, find links on no such
        path: a link ``(u, v)`` into a non-member ``v`` whose only kept links
        out go back to ``u`` (or out of a non-member ``u`` whose only kept links
        in come from ``v``): a simple path cannot turn back; and a link no walk
        ``a -> ... -> u -> v -> ... -> b`` between members ``a != b`` through
        non-members uses (a box's NVSwitch for a rail group, which could only
        lead back to the GPU that sent). Each relay records at most two members
        reaching it and two it reaches: two suffice to decide ``a != b``.

        Examples
        --------
        A rail group of dgx-a100:2 uses only its own NICs and their IB switch:

        >>> from optcoll import load_topology
        >>> groups = make_groups(load_topology("dgx-a100:2"), [["b0.gpu0", "b1.gpu0"]])
        >>> sorted(groups.useful_arcs[0])  # doctest: +NORMALIZE_WHITESPACE
        [('b0.gpu0', 'b0.nic0'), ('b0.nic0', 'b0.gpu0'), ('b0.nic0', 'ib0'),
         ('b1.gpu0', 'b1.nic0'), ('b1.nic0', 'b1.gpu0'), ('b1.nic0', 'ib0'),
         ('ib0', 'b0.nic0'), ('ib0', 'b1.nic0')]
        """
        return tuple(self._useful(index) for index in range(len(self.groups)))

    def _useful(self, index: int) -> frozenset[tuple[str, str]]:
        members = frozenset(self.groups[index])
        allowed = self.relays(index)
        arcs = {
            (u, v)
            for u, v in self.topology.capacity
            if allowed is None or (u in allowed and v in allowed)
        }
        while True:
            arcs = _without_turning_back(members, arcs)
            reached_from = _two_labels(members, arcs)
            reaching = _two_labels(members, {(v, u) for u, v in arcs})

            def ends(node: str, labels: dict[str, frozenset[str]]) -> frozenset[str]:
                return frozenset({node}) if node in members else labels.get(node, frozenset())

            kept = set()
            for u, v in arcs:
                first, last = ends(u, reached_from), ends(v, reaching)
                if first and last and (len(first) > 1 or len(last) > 1 or first != last):
                    kept.add((u, v))
            if kept == arcs:
                return frozenset(arcs)
            arcs = kept

    def sharing_components(self) -> tuple[tuple[int, ...], ...]:
        """The groups in classes that share useful links (:attr:`useful_arcs`), transitively.

        Groups of different classes never load the same link, so each class
        can be solved on its own.

        Examples
        --------
        Rail groups of dgx-a100:2 use their own NICs only; with ``any`` every
        NIC of the box carries every rail:

        >>> from optcoll import load_topology
        >>> topo = load_topology("dgx-a100:2")
        >>> len(parse_groups(topo, "strided:2").sharing_components())
        8
        >>> parse_groups(topo, "strided:2", relay="any").sharing_components()
        ((0, 1, 2, 3, 4, 5, 6, 7),)
        """
        import networkx as nx

        classes = nx.utils.UnionFind(range(len(self.groups)))
        owner: dict[tuple[str, str], int] = {}
        for index, arcs in enumerate(self.useful_arcs):
            for arc in arcs:
                classes.union(index, owner.setdefault(arc, index))
        return tuple(sorted(tuple(sorted(c)) for c in classes.to_sets()))

    def automorphism(self, source: int, target: int) -> dict[str, str] | None:
        """An automorphism of the topology that maps group ``source`` onto group ``target``.

        It maps nodes to nodes of the same type, every link to a link of the same
        bandwidth, and every group onto a group, member number i of ``source`` to
        member number i of ``target``; ``None`` when none is found.

        Search: colour refinement (each node's colour refined by the colours and
        bandwidths of its links until stable) on two copies of the topology, one
        with the members of ``source`` numbered, the other with those of
        ``target``; while a colour holds several nodes, the first of each copy are
        given a new colour of their own and the refinement runs again. Without
        backtracking this may miss an automorphism (then ``None``), never invents
        one: the map found is checked link by link and group by group.

        Examples
        --------
        Rail 0 of dgx-a100:2 onto rail 3: GPU 0 of each box to GPU 3, its NIC to
        NIC 3, and IB switch 0 to IB switch 1 (NIC j hangs on IB switch j mod 2):

        >>> from optcoll import load_topology
        >>> groups = parse_groups(load_topology("dgx-a100:2"), "strided:2", relay="any")
        >>> sigma = groups.automorphism(0, 3)
        >>> sigma["b0.gpu0"], sigma["b1.nic0"], sigma["ib0"]
        ('b0.gpu3', 'b1.nic3', 'ib1')
        """
        topo = self.topology
        nodes = topo.node_ids
        where = {v: i for i, group in enumerate(self.groups) for v in group}
        order = {v: i for i, v in enumerate(nodes)}

        initial: dict[Hashable, int] = {}

        def start(numbered: int) -> dict[str, int]:
            position = {v: i for i, v in enumerate(self.groups[numbered])}
            return {
                v: initial.setdefault(
                    (topo.node[v].type, v in where, position.get(v, -1)), len(initial)
                )
                for v in nodes
            }

        # Colours are integers (individualised nodes get negative ones) and capacities
        # the integer-scaled ones: signatures hash and sort fast.
        colours = [start(source), start(target)]
        outs: dict[str, list[tuple[str, int]]] = {v: [] for v in nodes}
        ins: dict[str, list[tuple[str, int]]] = {v: [] for v in nodes}
        for (u, v), c in topo.integer_capacities()[0].items():
            outs[u].append((v, c))
            ins[v].append((u, c))
        fresh = 0
        while True:
            while True:  # refine both copies with one shared naming of colours
                names: dict[Hashable, int] = {}
                refined: list[dict[str, int]] = []
                for colour in colours:
                    refined.append(
                        {
                            v: names.setdefault(
                                (
                                    colour[v],
                                    tuple(sorted([(colour[w], c) for w, c in outs[v]])),
                                    tuple(sorted([(colour[w], c) for w, c in ins[v]])),
                                ),
                                len(names),
                            )
                            for v in nodes
                        }
                    )
                if len(names) == len(set(colours[0].values()) | set(colours[1].values())):
                    break
                colours = refined
            classes: list[dict[int, list[str]]] = [{}, {}]
            for side in (0, 1):
                for v in nodes:
                    classes[side].setdefault(colours[side][v], []).append(v)
            if {k: len(v) for k, v in classes[0].items()} != {
                k: len(v) for k, v in classes[1].items()
            }:
                return None
            crowded = [k for k, members in classes[0].items() if len(members) > 1]
            if not crowded:
                break
            key = min(crowded, key=lambda k: order[classes[0][k][0]])
            fresh += 1
            colours[0] = {**colours[0], classes[0][key][0]: -fresh}
            colours[1] = {**colours[1], classes[1][key][0]: -fresh}
        image = {classes[0][k][0]: classes[1][k][0] for k in classes[0]}
        return image if _is_group_automorphism(self, image, source, target) else None

    def group_topology(self, index: int) -> Topology:
        """The topology group ``index`` sees alone: its members are the compute nodes.

        Non-members are retyped as switches (relay ``any``) or, if compute
        nodes, removed with their links (relay ``members``).

        Examples
        --------
        >>> from optcoll import load_topology
        >>> groups = make_groups(load_topology("ring:4"), [["n0", "n2"]], relay="any")
        >>> groups.group_topology(0).switch_nodes
        ('n1', 'n3')
        """
        topo, members = self.topology, set(self.groups[index])
        if self.relay == "any":
            nodes = [
                node
                if node.id in members or not node.is_compute
                else Node(node.id, "switch", node.group)
                for node in topo.nodes
            ]
            links: Iterable[Link] = topo.links
        else:
            gone = {v for v in topo.compute_nodes if v not in members}
            nodes = [node for node in topo.nodes if node.id not in gone]
            links = [link for link in topo.links if link.src not in gone and link.dst not in gone]
        return Topology(
            f"{topo.name} group {index}",
            nodes,
            links,
            topo.bandwidth_unit,
            f"group {index} of {topo.name} (relay {self.relay})",
            [v for v in topo.compute_nodes if v in members],
        )


def _without_turning_back(
    members: frozenset[str], arcs: set[tuple[str, str]]
) -> set[tuple[str, str]]:
    """``arcs`` without those no simple path through non-members can use, to a fixed point.

    ``(u, v)`` goes when ``v`` is a non-member whose only arcs out lead to
    ``u``, or ``u`` a non-member whose only arcs in come from ``v``.
    """
    outs: dict[str, set[str]] = {}
    ins: dict[str, set[str]] = {}
    for u, v in arcs:
        outs.setdefault(u, set()).add(v)
        ins.setdefault(v, set()).add(u)

    def dead(u: str, v: str) -> bool:
        return (v not in members and outs.get(v, set()) <= {u}) or (
            u not in members and ins.get(u, set()) <= {v}
        )

    queue = [arc for arc in arcs if dead(*arc)]
    kept = set(arcs)
    while queue:
        u, v = queue.pop()
        if (u, v) not in kept or not dead(u, v):
            continue
        kept.discard((u, v))
        outs[u].discard(v)
        ins[v].discard(u)
        queue.extend((x, u) for x in ins.get(u, ()))
        queue.extend((v, y) for y in outs.get(v, ()))
    return kept


def _two_labels(
    members: frozenset[str], arcs: Iterable[tuple[str, str]]
) -> dict[str, frozenset[str]]:
    """For every non-member, up to two members from which it is reached through non-members.

    Along ``arcs``; a member passes its own name to its successors, a
    non-member passes on what it holds. Each node's set grows at most twice,
    so the search is linear in the arcs.
    """
    successors: dict[str, list[str]] = {}
    for u, v in arcs:
        if v not in members:
            successors.setdefault(u, []).append(v)
    labels: dict[str, frozenset[str]] = {}
    queue: list[str] = []
    for member in sorted(members):
        for v in successors.get(member, ()):
            held = labels.get(v, frozenset())
            if member not in held and len(held) < 2:
                labels[v] = held | {member}
                queue.append(v)
    while queue:
        u = queue.pop()
        for v in successors.get(u, ()):
            held = labels.get(v, frozenset())
            grown = held | set(sorted(labels[u] - held)[: 2 - len(held)])
            if len(grown) > len(held):
                labels[v] = grown
                queue.append(v)
    return labels


def _is_group_automorphism(
    groups: ProcessGroups, image: dict[str, str], source: int, target: int
) -> bool:
    topo = groups.topology
    if sorted(image.values()) != sorted(image) or len(image) != len(topo.node_ids):
        return False
    if any(topo.node[v].type != topo.node[image[v]].type for v in image):
        return False
    capacity = topo.capacity
    if not preserves_capacity(capacity, image):
        return False
    sets = {frozenset(group) for group in groups.groups}
    if any(frozenset(image[v] for v in group) not in sets for group in groups.groups):
        return False
    return [image[v] for v in groups.groups[source]] == list(groups.groups[target])


def make_groups(
    topology: Topology, groups: Sequence[Sequence[Any]], relay: str = "members"
) -> ProcessGroups:
    """Check ``groups`` (lists of compute-node ids) against ``topology`` and ``relay``.

    Raises
    ------
    GroupError
        An unknown relay mode, no groups, a group that is not a list, a member
        that is not a node or not a compute node, a node named twice, a group
        of fewer than two members, or members that cannot reach each other
        through the nodes the relay mode allows.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> make_groups(load_topology("ring:4"), [["n0", "n0"]])
    Traceback (most recent call last):
    ...
    optcoll.exceptions.GroupError: group 0 names node 'n0' twice
    """
    topology_argument(topology)
    choice_argument(relay, RELAYS, "relay")
    if isinstance(groups, str | bytes) or not isinstance(groups, Sequence):
        raise ArgumentError(
            f"groups must be a list of groups (lists of compute-node ids), got {groups!r}"
        )
    if relay not in RELAYS:
        raise GroupError(f"unknown relay mode {relay!r}; valid modes are {', '.join(RELAYS)}")
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or not groups:
        raise GroupError("groups must be a non-empty list of groups (lists of compute-node ids)")
    seen: dict[str, int] = {}
    checked = []
    for index, group in enumerate(groups):
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence):
            raise GroupError(f"group {index} must be a list of compute-node ids, got {group!r}")
        for member in group:
            if not isinstance(member, str) or member not in topology.node:
                raise GroupError(
                    f"group {index}: {member!r} is not a node of topology {topology.name!r}"
                )
            if not topology.is_compute(member):
                raise GroupError(
                    f"group {index}: {member!r} is a switch, not a compute node of "
                    f"topology {topology.name!r}"
                )
            if member in seen:
                where = "twice" if seen[member] == index else f"and group {seen[member]} too"
                raise GroupError(f"group {index} names node {member!r} {where}")
            seen[member] = index
        if len(group) < 2:
            raise GroupError(
                f"group {index} has {len(group)} member{'s' * (len(group) != 1)}; "
                f"a group needs at least two compute nodes"
            )
        checked.append(tuple(group))
    result = ProcessGroups(topology, tuple(checked), relay)
    for index in range(len(result.groups)):
        _check_reachable(result, index)
    return result


def _check_reachable(groups: ProcessGroups, index: int) -> None:
    import networkx as nx

    topo, members = groups.topology, groups.groups[index]
    allowed = groups.relays(index)
    graph = nx.DiGraph()
    graph.add_nodes_from(members)
    graph.add_edges_from(
        arc for arc in topo.capacity if allowed is None or (arc[0] in allowed and arc[1] in allowed)
    )
    first = members[0]
    forward, backward = nx.descendants(graph, first), nx.ancestors(graph, first)
    for member in members[1:]:
        if member not in forward or member not in backward:
            a, b = (first, member) if member not in forward else (member, first)
            raise GroupError(
                f"group {index}: {a!r} cannot reach {b!r} through "
                + (
                    "members and switches (try --relay any)"
                    if groups.relay == "members"
                    else "the network"
                )
            )


def parse_groups(topology: Topology, text: str, relay: str | None = None) -> ProcessGroups:
    """ProcessGroups from GROUPS: ``blocks:T``, ``strided:T`` or a JSON/YAML file.

    ``relay`` (``None``: the file's ``"relay"``, else ``members``) must agree
    with a ``"relay"`` the file states.

    Raises
    ------
    GroupError
        A spec whose ``T`` is not an integer >= 2 dividing N, a file that does
        not exist or holds something other than groups, or a relay that
        contradicts the file's; and every error of :func:`make_groups`.
    FileFormatError
        A file that is not valid JSON/YAML.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> [len(g) for g in parse_groups(load_topology("dgx-a100:2"), "blocks:8").groups]
    [8, 8]
    >>> parse_groups(load_topology("dgx-a100:2"), "blocks:3")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.GroupError: blocks:3: 3 does not divide the 16 compute nodes of dgx-a100:2
    """
    topology_argument(topology)
    text_argument(text, "text")
    if relay is not None:
        choice_argument(relay, RELAYS, "relay")
    match = _SPEC.match(text)
    if match is not None:
        return make_groups(
            topology, _spec_groups(topology, text, *match.groups()), relay or "members"
        )
    from optcoll.io.document import read_document

    path = Path(text)
    if not path.is_file():
        raise GroupError(
            f"GROUPS {text!r} is neither blocks:T, strided:T nor an existing JSON/YAML file"
        )
    data = read_document(path)
    stated = None
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"groups", "relay"})
        if unknown or "groups" not in data:
            raise GroupError(
                f"{path}: a groups object has the fields 'groups' and optionally 'relay'"
                + (f", not {', '.join(map(repr, unknown))}" if unknown else "")
            )
        stated = data.get("relay")
        data = data["groups"]
    if stated is not None and relay is not None and stated != relay:
        raise GroupError(f"{path} says relay {stated!r} but --relay {relay} was given")
    if not isinstance(data, list):
        raise GroupError(f"{path}: expected a list of groups (lists of compute-node ids)")
    try:
        return make_groups(topology, data, relay or stated or "members")
    except GroupError as err:
        raise GroupError(f"{path}: {err}") from None


def _spec_groups(topology: Topology, text: str, kind: str, size_text: str) -> list[list[str]]:
    ranks = topology.compute_nodes
    n = len(ranks)
    if not is_decimal(size_text) or int(size_text) < 2:
        raise GroupError(f"{text}: the group size must be an integer >= 2, got {size_text!r}")
    size = int(size_text)
    if n % size:
        raise GroupError(f"{text}: {size} does not divide the {n} compute nodes of {topology.name}")
    if kind == "blocks":
        return [list(ranks[i : i + size]) for i in range(0, n, size)]
    stride = n // size
    return [list(ranks[j::stride]) for j in range(stride)]


@dataclass(frozen=True)
class GroupOptimum:
    """One group's optimum alone: ``ratio`` r*_g (time per unit shard, 1/bandwidth units).

    ``cut`` is a node set with ``cut_members / cut_bandwidth`` = the cut
    ratio; ``exact_by`` is ``"cut"`` when that ratio is the optimum (every
    relay has in >= out) and ``"lp"`` when the optimum came from the exact
    multicast LP (the cut ratio then only bounds it from below).
    """

    members: tuple[str, ...]
    ratio: Fraction
    cut: frozenset[str]
    cut_members: int
    cut_bandwidth: Fraction
    exact_by: str

    def to_dict(self, order: dict[str, int]) -> dict[str, Any]:
        """JSON-ready (exact numbers as ``"p/q"``), the cut in topology order."""
        return {
            "members": list(self.members),
            "optimum": fraction_text(self.ratio),
            "bottleneck_cut": sorted(self.cut, key=order.__getitem__),
            "cut_members": self.cut_members,
            "cut_bandwidth": fraction_text(self.cut_bandwidth),
            "exact_by": self.exact_by,
        }


def _balanced(topology: Topology) -> bool:
    return all(topology.in_bandwidth(v) >= topology.out_bandwidth(v) for v in topology.switch_nodes)


def group_optimum(groups: ProcessGroups, index: int) -> GroupOptimum:
    """Group ``index``'s exact optimum alone, with its bottleneck cut.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topo = load_topology("dgx-a100:1")
    >>> alone = group_optimum(make_groups(topo, [list(topo.compute_nodes)]), 0)
    >>> alone.ratio == optimal_cut_ratio(topo).ratio, alone.exact_by
    (True, 'cut')
    """
    view = groups.group_topology(index)
    cut = optimal_cut_ratio(view)
    ratio, exact_by = cut.ratio, "cut"
    if not _balanced(view):
        from optcoll.groups.concurrent import concurrent_optimum

        ratio, exact_by = concurrent_optimum(groups, [index]).time_factor, "lp"
    return GroupOptimum(
        groups.groups[index],
        ratio,
        cut.bottleneck_cut,
        cut.cut_compute,
        cut.cut_bandwidth,
        exact_by,
    )


def concurrent_groups_optimum(
    groups: ProcessGroups, indices: Iterable[int], form: str = FORMS[0]
) -> ConcurrentGroups:
    """The exact, proved optimum of the groups numbered ``indices`` running at once.

    ``form`` picks the LP (:data:`FORMS`): ``columns``, the tree-column form
    (:func:`optcoll.groups.tree_columns.tree_column_optimum`), or ``edge``, the edge
    form (:func:`optcoll.groups.concurrent.concurrent_optimum`); both use the
    topology's symmetry and give the same optimum.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> groups = make_groups(load_topology("ring:4,bw=1"), [["n0", "n2"], ["n1", "n3"]], "any")
    >>> [concurrent_groups_optimum(groups, [0, 1], form).time_factor for form in FORMS]
    [Fraction(1, 1), Fraction(1, 1)]
    """
    choice_argument(form, FORMS, "form")
    if form == "edge":
        from optcoll.groups.concurrent import concurrent_optimum

        return concurrent_optimum(groups, indices)
    from optcoll.groups.tree_columns import tree_column_optimum

    return tree_column_optimum(groups, indices)


@dataclass(frozen=True)
class GroupsBound:
    """The concurrent groups' exact optimal time and its certificate.

    ``time_factor`` is t*, the time per unit shard with every group running at
    once (1/bandwidth units); ``alone[i]`` group i's optimum alone, so its
    slowdown from sharing is ``time_factor / alone[i].ratio``.
    ``binding_groups`` is the class of groups sharing links
    (:meth:`ProcessGroups.sharing_components`) that needs t*; ``binding``
    its certificate: for a class of several groups the links whose capacity
    rows have nonzero duals (each, by complementary slackness, full at t*)
    with their dual length and the shares of the groups on them; for a class
    of one group the links leaving its bottleneck cut. ``form`` is the LP form
    classes of several groups were solved by (:data:`FORMS`), ``solved`` those
    classes' solutions (each class's tuple of group numbers ->
    :class:`~optcoll.groups.concurrent.ConcurrentGroups`).
    """

    groups: ProcessGroups = field(repr=False)
    time_factor: Fraction
    alone: tuple[GroupOptimum, ...]
    binding_groups: tuple[int, ...]
    binding: tuple[dict[str, Any], ...]
    method: str
    seconds: float
    form: str = FORMS[0]
    solved: dict[tuple[int, ...], ConcurrentGroups] = field(
        default_factory=dict, repr=False, compare=False
    )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (exact numbers as ``"p/q"`` strings)."""
        topo = self.groups.topology
        order = {v: i for i, v in enumerate(topo.node_ids)}
        return {
            "topology": topo.name,
            "bandwidth_unit": topo.bandwidth_unit,
            "relay": self.groups.relay,
            "num_groups": len(self.groups.groups),
            "time_factor": fraction_text(self.time_factor),
            "groups": [
                {
                    **alone.to_dict(order),
                    "slowdown": fraction_text(self.time_factor / alone.ratio),
                }
                for alone in self.alone
            ],
            "certificate": {
                "kind": "bottleneck cut" if len(self.binding_groups) == 1 else "capacity duals",
                "groups": list(self.binding_groups),
                "binding_links": list(self.binding),
            },
            "method": self.method,
            "form": self.form if self.solved else None,
            "seconds": self.seconds,
        }


def groups_bound(groups: ProcessGroups, *, form: str = FORMS[0]) -> GroupsBound:
    """The exact optimal time of ``groups`` running at once, each group alone, the certificate.

    The groups fall into classes that share no useful link
    (:meth:`ProcessGroups.sharing_components`); t* is the largest of the
    classes' optima. A class of one group needs no LP (its optimum is
    :func:`group_optimum`); a larger class takes the concurrent LP in the
    given ``form`` (:func:`concurrent_groups_optimum`) on its groups alone. No schedule beats the
    class that needs longest (its groups alone need that much), and each
    class's optimal schedule uses only its own useful links, so running all of
    them at once loads no link beyond t* times its bandwidth. The certificate
    is that class's: its bottleneck cut or its capacity duals.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> bound = groups_bound(parse_groups(load_topology("dgx-a100:2"), "strided:2"))
    >>> bound.time_factor, bound.alone[0].ratio, bound.binding_groups
    (Fraction(1, 25), Fraction(1, 25), (0,))
    """
    instance_argument(
        groups, ProcessGroups, "groups", "optcoll.groups.bounds.parse_groups or make_groups"
    )
    choice_argument(form, FORMS, "form")
    start = time.perf_counter()
    alone = tuple(group_optimum(groups, i) for i in range(len(groups.groups)))
    worst: tuple[Fraction, tuple[int, ...]] | None = None
    solved: dict[tuple[int, ...], Any] = {}
    for component in groups.sharing_components():
        if len(component) == 1:
            t = alone[component[0]].ratio
        else:
            solved[component] = concurrent_groups_optimum(groups, component, form)
            t = solved[component].time_factor
        if worst is None or t > worst[0]:
            worst = (t, component)
    assert worst is not None
    t, component = worst
    if component in solved:
        binding, method = _binding_links(solved[component]), "lp"
    else:
        (index,) = component
        cut = alone[index].cut
        binding = tuple(
            {"src": u, "dst": v, "groups": [index]}
            for u, v in groups.group_topology(index).capacity
            if u in cut and v not in cut
        )
        method = "combinatorial" if alone[index].exact_by == "cut" else "lp"
    seconds = time.perf_counter() - start
    return GroupsBound(groups, t, alone, component, binding, method, seconds, form, solved)


def _binding_links(solved: ConcurrentGroups) -> tuple[dict[str, Any], ...]:
    """The links with nonzero duals, each with its dual and the groups' shares of it.

    A group's ``share`` is its load on the link over ``t* bw``; the shares of a
    binding link add up to 1.
    """
    bandwidth = solved.groups.topology.capacity
    rows = []
    for arc, length in solved.lengths.items():
        shares = {
            g: load[arc] / (solved.time_factor * bandwidth[arc])
            for g, load in sorted(solved.loads.items())
            if load.get(arc)
        }
        rows.append(
            {
                "src": arc[0],
                "dst": arc[1],
                "bandwidth": fraction_text(bandwidth[arc]),
                "dual": fraction_text(length),
                "groups": list(shares),
                "shares": [fraction_text(s) for s in shares.values()],
            }
        )
    return tuple(rows)
