"""Compact verification: a schedule made of a group's images, checked from its generators.

A compact schedule (:class:`~optcoll.core.schedule.ImageTrees`: ``"rotations"`` in the
file) holds representative trees ``R`` and commuting node permutations ``p_1 .. p_d``
with stated orders ``m_1 .. m_d``; its trees are ``g(T)`` for every ``T`` in ``R`` and
every ``g`` in ``E = {p_1^a_1 ... p_d^a_d : 0 <= a_j < m_j}`` (``|E| = m_1 ... m_d``
terms). The full check walks all ``|E| * |R|`` trees. This module checks the
generators instead, so that checking ``R`` alone is enough:

(a) every ``p_j`` is a bijection of the topology's nodes that keeps every node's type
    (compute or switch) and maps every link ``(u, v)`` to a link ``(p_j(u), p_j(v))`` of
    exactly the same capacity (:func:`automorphism_action`); ``p_j^(m_j)`` is the identity;
(b) the generators commute, and ``(g, r) -> g(r)`` is a bijection from ``E`` times the
    representatives' roots onto the compute nodes (:func:`check_free`): the group acts
    freely on the compute nodes and the roots of ``R`` meet every orbit exactly once.

**Why checking ``R`` then suffices (equivalence with the full walk).** Let every tree
of ``R`` pass the full walk's per-tree checks, with the chunks of each representative
root summing to ``k``. Take any ``g`` in ``E``. By (a), ``g`` (a product of the
``p_j``) is a bijection of the nodes that keeps types and maps links to links of equal
capacity, so it maps links' reverses to links too. Hence ``g(T)`` is an arborescence
rooted at ``g(r)`` spanning ``g(compute nodes) = compute nodes``; each path ``g(P)``
starts and ends at the images of the edge's ends, relays only at switches and runs
along links (reversed links for reduce phases) exactly when ``P`` does. Conversely,
if a tree of ``R`` fails a check, the full walk fails on it as well (``R`` are among
the trees, ``g = identity``). By (b) every compute node ``v`` is ``g(r)`` for exactly
one pair, so the trees rooted at ``v`` are exactly the images under ``g`` of ``r``'s
trees, with the same chunks: their chunks sum to ``k`` and no other tree is rooted at
``v``; if (b) fails the expansion has a compute node with a wrong sum or the group
is not the one stated. So, given (a) and (b), the full walk's structural verdict equals
that of ``R``.

Loads: the tree ``g(T)`` puts on link ``g(a)`` what ``T`` puts on ``a``, so the load of
link ``b`` is ``L(b) = sum over g in E of L_R(g^-1(b))``, where ``L_R`` are the
representatives' loads. Because the generators commute, ``E`` does not depend on the
order of the factors and the sum factorises, generator by generator:
``L = S_d ... S_1 L_R`` with ``(S_j L)(b) = sum over 0 <= a < m_j of L(p_j^-a(b))``
(:func:`orbit_sums`, vectorised over the links). These are the exact integer loads
of the expanded schedule, so the time factor ``max L(b) / (k c(b))``, the bottleneck
links and every claim checked from them are those of the full walk.

Cost: ``O(d * (m_1 + ... + m_d) * links + |E| * |R| + d^2 * nodes)`` array operations
plus the representatives' own check, instead of a walk over ``|E|`` times as many tree
edges (torus 64x64: 4,096 trees of 4,095 edges each against one tree).

Examples
--------
>>> from optcoll.core.schedule import Rotation
>>> from optcoll.core.topology import TopologyBuilder
>>> b = TopologyBuilder("ring3")
>>> for g in "abc": b.compute(g)
>>> for u, v in ("ab", "bc", "ca"): b.link(u, v, 10)
>>> ring = b.build()
>>> action = automorphism_action(ring, Rotation(3, {"a": "b", "b": "c", "c": "a"}))
>>> check_free(action, ring, ["a"])
>>> orbit_sums(action, {("a", "b"): 1, ("b", "c"): 1})
{('a', 'b'): 2, ('b', 'c'): 2, ('c', 'a'): 2}
>>> automorphism_action(ring, Rotation(2, {"a": "b", "b": "a"}))
Traceback (most recent call last):
...
optcoll.verify.symmetric.GroupRejected: generator 0 maps link 'a' -> 'b' to 'b' -> 'a', which is not a link
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from optcoll.core.schedule import Rotation, Rotations
from optcoll.core.topology import Topology

__all__ = ["GroupRejected", "Action", "automorphism_action", "check_free", "orbit_sums"]

Arc = tuple[str, str]


class GroupRejected(Exception):
    """The generators are not a free group of automorphisms; the message says why."""


@dataclass(frozen=True)
class Action:
    """How checked generators act on a topology's nodes and links (index arrays).

    Attributes
    ----------
    nodes : tuple of str
        The topology's nodes; node ``i`` goes to ``node_maps[j][i]`` under generator ``j``.
    arcs : tuple of (u, v)
        The topology's links; link ``i`` goes to ``arc_maps[j][i]``.
    orders : tuple of int
        The generators' stated orders ``m_j``.
    """

    nodes: tuple[str, ...]
    arcs: tuple[Arc, ...]
    orders: tuple[int, ...]
    node_maps: tuple[Any, ...]
    arc_maps: tuple[Any, ...]

    @property
    def size(self) -> int:
        """``|E|``: the product of the orders."""
        result = 1
        for m in self.orders:
            result *= m
        return result


def automorphism_action(topology: Topology, group: Rotation | Rotations) -> Action:
    """Check (a) and that the generators commute; return their action on nodes and links.

    Raises
    ------
    GroupRejected
        Naming the generator and the node or link at fault.
    """
    generators = (group,) if isinstance(group, Rotation) else tuple(group.generators)
    nodes = tuple(topology.node_ids)
    index = {v: i for i, v in enumerate(nodes)}
    n = len(nodes)
    identity = np.arange(n, dtype=np.int64)
    compute = np.array([topology.is_compute(v) for v in nodes], dtype=bool)
    arcs = tuple(topology.capacity)
    tails = np.array([index[u] for u, _ in arcs], dtype=np.int64)
    heads = np.array([index[v] for _, v in arcs], dtype=np.int64)
    codes = tails * n + heads
    by_code = np.argsort(codes, kind="stable")
    sorted_codes = codes[by_code]
    classes: dict[Fraction, int] = {}
    capacity = np.array(
        [classes.setdefault(c, len(classes)) for c in topology.capacity.values()], dtype=np.int64
    )
    node_maps, arc_maps, orders = [], [], []
    for j, rotation in enumerate(generators):
        order = rotation.order
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise GroupRejected(
                f"generator {j}: its order must be a positive integer, got {order!r}"
            )
        p = identity.copy()
        for a, b in rotation.images.items():
            for end in (a, b):
                if end not in index:
                    raise GroupRejected(f"generator {j} names {end!r}, not a node of the topology")
            p[index[a]] = index[b]
        hits = np.bincount(p, minlength=n)
        if (hits != 1).any():
            twice = nodes[int(np.flatnonzero(hits > 1)[0])]
            raise GroupRejected(f"generator {j} is not a bijection: two nodes go to {twice!r}")
        moved = np.flatnonzero(compute[p] != compute)
        if moved.size:
            v = nodes[int(moved[0])]
            raise GroupRejected(
                f"generator {j} maps {v!r} to {nodes[int(p[moved[0]])]!r}, a node of another type"
            )
        power = p.copy()
        for _ in range(order - 1):
            power = p[power]
        if (power != identity).any():
            raise GroupRejected(f"generator {j}: its power {order} (its stated order) moves nodes")
        mapped = p[tails] * n + p[heads]
        where = np.searchsorted(sorted_codes, mapped).clip(0, len(arcs) - 1)
        missing = np.flatnonzero(sorted_codes[where] != mapped) if arcs else np.empty(0, int)
        if missing.size:
            i = int(missing[0])
            (u, v), image = arcs[i], (nodes[int(p[tails[i]])], nodes[int(p[heads[i]])])
            raise GroupRejected(
                f"generator {j} maps link {u!r} -> {v!r} to {image[0]!r} -> {image[1]!r}, "
                "which is not a link"
            )
        arc_map = by_code[where]
        changed = np.flatnonzero(capacity[arc_map] != capacity)
        if changed.size:
            i = int(changed[0])
            (u, v), (x, y) = arcs[i], arcs[int(arc_map[i])]
            raise GroupRejected(
                f"generator {j} maps link {u!r} -> {v!r} (capacity {topology.capacity[(u, v)]}) "
                f"to {x!r} -> {y!r} (capacity {topology.capacity[(x, y)]})"
            )
        node_maps.append(p)
        arc_maps.append(arc_map)
        orders.append(order)
    for i in range(len(node_maps)):
        for j in range(i):
            if (node_maps[i][node_maps[j]] != node_maps[j][node_maps[i]]).any():
                raise GroupRejected(f"generators {j} and {i} do not commute")
    return Action(nodes, arcs, tuple(orders), tuple(node_maps), tuple(arc_maps))


def check_free(action: Action, topology: Topology, roots: Iterable[str]) -> None:
    """Check (b): ``(g, r) -> g(r)`` maps ``E`` times ``roots`` onto the compute nodes, one to one.

    ``roots`` are the representatives' distinct roots, all compute nodes (checked
    before). ``O(|E| * |roots|)``.

    Raises
    ------
    GroupRejected
        Naming a compute node that is reached twice, or the counts that differ.
    """
    index = {v: i for i, v in enumerate(action.nodes)}
    distinct = list(dict.fromkeys(roots))
    compute = topology.num_compute
    if action.size * len(distinct) != compute:
        raise GroupRejected(
            f"the group's {action.size} elements times the {len(distinct)} representative "
            f"roots make {action.size * len(distinct)} roots, not the {compute} compute nodes"
        )
    images = np.array([index[r] for r in distinct], dtype=np.int64)
    for p, order in zip(action.node_maps, action.orders, strict=True):
        parts = [images]
        for _ in range(order - 1):
            parts.append(p[parts[-1]])
        images = np.concatenate(parts)
    hits = np.bincount(images, minlength=len(action.nodes))
    if (hits > 1).any():
        twice = action.nodes[int(np.flatnonzero(hits > 1)[0])]
        raise GroupRejected(
            f"compute node {twice!r} is the image of a representative root under two elements "
            "(the group does not act freely, or two representatives share an orbit)"
        )


def orbit_sums(action: Action, loads: Mapping[Arc, int]) -> dict[Arc, int]:
    """(d): ``L(b) = sum over g in E of loads[g^-1(b)]``, every link with a positive load.

    ``loads`` are the representatives' loads on links of the topology; the result is
    in the topology's link order. ``O(links * (m_1 + ... + m_d))``.
    """
    position = {arc: i for i, arc in enumerate(action.arcs)}
    elements = math.prod(action.orders)
    # exact beyond 64 bits too (a k of many digits): Python integers, more slowly
    wide = max(loads.values(), default=0) * elements * len(loads) >= 2**62
    total = np.zeros(len(action.arcs), dtype=object if wide else np.int64)
    for arc, load in loads.items():
        total[position[arc]] += load
    for arc_map, order in zip(action.arc_maps, action.orders, strict=True):
        summed = total.copy()
        image = total
        for _ in range(order - 1):
            pushed = np.empty_like(image)
            pushed[arc_map] = image  # what lies on link a now lies on its image
            image = pushed
            summed += image
        total = summed
    used = np.flatnonzero(total)
    return {action.arcs[i]: int(total[i]) for i in used.tolist()}
