"""Automorphisms that map one process group onto another.

Concurrent groups that are images of each other under an automorphism of the
topology have the same LP solution up to that map, so one group per orbit is
solved (:mod:`optcoll.groups.concurrent`).
"""

from __future__ import annotations

from collections.abc import Hashable

from optcoll.core.process_groups import ProcessGroups
from optcoll.graph.symmetry import preserves_capacity

__all__ = ["group_automorphism"]


def group_automorphism(groups: ProcessGroups, source: int, target: int) -> dict[str, str] | None:
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
    >>> from optcoll.io.process_groups import parse_groups
        >>> groups = parse_groups(load_topology("dgx-a100:2"), "strided:2", relay="any")
    >>> sigma = group_automorphism(groups, 0, 3)
    >>> sigma["b0.gpu0"], sigma["b1.nic0"], sigma["ib0"]
    ('b0.gpu3', 'b1.nic3', 'ib1')
    """
    topo = groups.topology
    nodes = topo.node_ids
    where = {v: i for i, group in enumerate(groups.groups) for v in group}
    order = {v: i for i, v in enumerate(nodes)}

    initial: dict[Hashable, int] = {}

    def start(numbered: int) -> dict[str, int]:
        position = {v: i for i, v in enumerate(groups.groups[numbered])}
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
        if {k: len(v) for k, v in classes[0].items()} != {k: len(v) for k, v in classes[1].items()}:
            return None
        crowded = [k for k, members in classes[0].items() if len(members) > 1]
        if not crowded:
            break
        key = min(crowded, key=lambda k: order[classes[0][k][0]])
        fresh += 1
        colours[0] = {**colours[0], classes[0][key][0]: -fresh}
        colours[1] = {**colours[1], classes[1][key][0]: -fresh}
    image = {classes[0][k][0]: classes[1][k][0] for k in classes[0]}
    return image if _is_group_automorphism(groups, image, source, target) else None


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
