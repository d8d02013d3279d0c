"""Automorphisms that map one process group onto another, or one member onto another.

Concurrent groups that are images of each other under an automorphism of the
topology have the same LP solution up to that map, so one group per orbit is
solved (:mod:`optcoll.groups.concurrent`). Within a group, automorphisms that keep
every group and move the first member to each other member (a box rotation for
data-parallel groups, :func:`root_automorphisms`) leave one root to solve
(:mod:`optcoll.groups.tree_columns`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from optcoll.core.process_groups import ProcessGroups
from optcoll.graph.symmetry import coloured_isomorphism, preserves_capacity

__all__ = ["group_automorphism", "root_automorphisms"]


def group_automorphism(groups: ProcessGroups, source: int, target: int) -> dict[str, str] | None:
    """An automorphism of the topology that maps group ``source`` onto group ``target``.

    It maps nodes to nodes of the same type, every link to a link of the same
    bandwidth, and every group onto a group, member number i of ``source`` to
    member number i of ``target``; ``None`` when none is found.

    Search: :func:`optcoll.graph.symmetry.coloured_isomorphism` (colour refinement
    on two copies of the topology, one with the members of ``source`` numbered,
    the other with those of ``target``; while a colour holds several nodes, the
    first of each copy are given a new colour of their own and the refinement runs
    again). Without backtracking this may miss an automorphism (then ``None``),
    never invents one: the map found is checked link by link and group by group.

    Examples
    --------
    Rail 0 of dgx-a100:2 onto rail 3: GPU 0 of each box to GPU 3, its NIC to
    NIC 3, and IB switch 0 to IB switch 1 (NIC j hangs on IB switch j mod 2):

    >>> from optcoll import load_topology
    >>> from optcoll.io.process_groups import parse_groups
    >>> groups = parse_groups(load_topology("dgx-a100:2"), "strided:2", relay="any")
    >>> sigma = group_automorphism(groups, 0, 3)
    >>> sigma["b0.gpu0"], sigma["b1.nic0"], sigma["ib0"]
    ('b0.gpu3', 'b1.nic3', 'ib1')
    """
    where = {v: i for i, group in enumerate(groups.groups) for v in group}
    labels = []
    for numbered in (source, target):
        position = {v: i for i, v in enumerate(groups.groups[numbered])}
        labels.append({v: (v in where, position.get(v, -1)) for v in groups.topology.node_ids})
    image = _completed_map(groups, labels[0], labels[1])
    if image is None or not _is_group_automorphism(groups, image, source, target):
        return None
    return image


def root_automorphisms(groups: ProcessGroups, index: int) -> dict[str, dict[str, str]] | None:
    """For every member ``r`` of group ``index``, an automorphism of the topology that maps
    every group onto itself and the group's first member to ``r``; None when some is not found.

    Each map found by a search (colour refinement on two copies, the first member
    individualised in one and ``r`` in the other, every group its own colour; as
    :func:`group_automorphism`) is checked exactly: node types, every link's
    bandwidth, every group kept. Maps for further members come first from
    compositions of those found (one search gives all rotations of a cyclic box
    rotation). ``O(members)`` compositions of node maps plus one search per
    generator needed.

    Examples
    --------
    GPU 0 of each of four boxes: the box rotations take box 0's GPU 0 to the others.

    >>> from optcoll import load_topology
    >>> from optcoll.io.process_groups import parse_groups
    >>> groups = parse_groups(load_topology("dgx-a100:4"), "strided:4", relay="any")
    >>> maps = root_automorphisms(groups, 0)
    >>> [maps[r]["b0.gpu0"] for r in groups.groups[0]]
    ['b0.gpu0', 'b1.gpu0', 'b2.gpu0', 'b3.gpu0']
    """
    nodes = groups.topology.node_ids
    where = {v: i for i, group in enumerate(groups.groups) for v in group}
    members = groups.groups[index]
    first = members[0]
    found: dict[str, dict[str, str]] = {first: {v: v for v in nodes}}
    generators: list[dict[str, str]] = []
    for r in members:
        if r in found:
            continue
        labels = [{v: (where.get(v, -1), v == pinned) for v in nodes} for pinned in (first, r)]
        image = _completed_map(groups, labels[0], labels[1])
        if image is None or image[first] != r or not _keeps_groups(groups, image):
            return None
        generators.append(image)
        frontier = list(found.values())
        while frontier:  # close under the generators found so far
            grown = []
            for phi in frontier:
                for tau in generators:
                    composed = {v: tau[phi[v]] for v in nodes}
                    if composed[first] not in found:
                        found[composed[first]] = composed
                        grown.append(composed)
            frontier = grown
    return found


def _completed_map(
    groups: ProcessGroups, source: Mapping[str, Hashable], target: Mapping[str, Hashable]
) -> dict[str, str] | None:
    """The node map of :func:`optcoll.graph.symmetry.coloured_isomorphism` between two
    copies of the topology whose nodes are coloured by (type, label); None when it finds
    none. The map still has to be checked against the groups."""
    topo = groups.topology
    nodes = topo.node_ids
    index = {v: i for i, v in enumerate(nodes)}
    capacity = {(index[u], index[v]): c for (u, v), c in topo.capacity.items()}
    left, right = ([(topo.node[v].type, label[v]) for v in nodes] for label in (source, target))
    image = coloured_isomorphism(len(nodes), capacity, left, right)
    return None if image is None else {v: nodes[image[i]] for i, v in enumerate(nodes)}


def _keeps_groups(groups: ProcessGroups, image: dict[str, str]) -> bool:
    """``image`` is an automorphism of the topology mapping every group onto itself."""
    topo = groups.topology
    if sorted(image.values()) != sorted(image) or len(image) != len(topo.node_ids):
        return False
    if any(topo.node[v].type != topo.node[image[v]].type for v in image):
        return False
    if not preserves_capacity(topo.capacity, image):
        return False
    return all({image[v] for v in group} == set(group) for group in groups.groups)


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
