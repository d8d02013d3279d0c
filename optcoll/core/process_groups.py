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

In both cases members copy and nothing else does. This module holds the model
(:class:`ProcessGroups`, checked by :func:`make_groups`); the bounds are in
:mod:`optcoll.groups.bounds`, the schedules in :mod:`optcoll.groups.schedule`,
and GROUPS specs and files are read by :mod:`optcoll.io.process_groups`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from optcoll.core.arguments import choice_argument, topology_argument
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ArgumentError, GroupError

__all__ = ["RELAYS", "ProcessGroups", "make_groups"]

#: The relaying modes, default first.
RELAYS = ("members", "any")


@dataclass(frozen=True)
class ProcessGroups:
    """Disjoint groups of compute nodes of ``topology`` and how their data may be relayed.

    Build it with :func:`make_groups` or :func:`optcoll.io.process_groups.parse_groups`, which check it.
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
        >>> from optcoll.io.process_groups import parse_groups
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
