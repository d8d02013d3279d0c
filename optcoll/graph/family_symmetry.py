"""The symmetries a built-in family knows it has: candidate automorphism generators.

A generic automorphism search (:func:`optcoll.graph.symmetry.automorphism_group`) runs out
of budget on a cluster of thousands of boxes, but the family that built it knows its
rotations: box ``b`` to box ``b+1`` of a DGX cluster, GPU ``j`` (with NIC ``j`` and rail
``j``) to GPU ``j+1``, group ``i`` to group ``i+1`` of a dragonfly, a translation of a
torus or HyperX. :func:`declared_generators` returns them as node renamings, read off the
node ids of ``topology`` (``b3.gpu5``, ``g2.r1.h0``, ``n1_2``) for the family its name
names.

This module reads the node naming the family builders of :mod:`optcoll.topologies`
document (it sits below them, beside the generic search, so that the bounds may use it).
They are **candidates only**: a renamed file or an edited topology may carry a family's
name without its symmetry, so whoever uses one checks it exactly first
(:func:`optcoll.graph.symmetry.is_automorphism`: a bijection of the nodes keeping node
kinds and every arc's capacity); a wrong candidate is dropped.

Examples
--------
>>> from optcoll.topologies import build
>>> [sorted(g.items())[:2] for g in declared_generators(build("dgx-h100:2"))]
[[('b0.gpu0', 'b1.gpu0'), ('b0.gpu1', 'b1.gpu1')], [('b0.gpu0', 'b0.gpu1'), ('b0.gpu1', 'b0.gpu2')]]
>>> declared_generators(build("ring:4"))
()
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from optcoll.core.topology import Topology
from optcoll.graph.symmetry import is_automorphism

__all__ = ["declared_generators", "declared_group", "DeclaredGroup", "FAMILIES_WITH_SYMMETRY"]

#: A node renaming: node id -> node id (ids not listed stay where they are).
Renaming = dict[str, str]

_BOXED = re.compile(r"b(\d+)\.(.+)")
_GPU_PART = re.compile(r"(gpu|nic)(\d+)")
_RAIL = re.compile(r"(rail|ib)(\d+)(\..+)?")
_LEAF = re.compile(r"(rail\d+\.)?leaf(\d+)")
_GROUPED = re.compile(r"g(\d+)\.(.+)")
_HOST = re.compile(r"(.+)\.h(\d+)")
_POINT = re.compile(r"([ns])(\d+(?:_\d+)*)(\..+)?")


def declared_generators(topology: Topology) -> tuple[Renaming, ...]:
    """Candidate automorphisms of ``topology`` from its family (named by ``topology.name``),
    each a renaming of node ids; ``()`` for a family without declared symmetry.

    Unchecked: see the module docstring.
    """
    family = topology.name.partition(":")[0]
    generate = _GENERATORS.get(family)
    if generate is None:
        return ()
    return tuple(g for g in generate(topology.node_ids) if g)


def _renaming(ids: Sequence[str], rename: Callable[[str], str | None]) -> Renaming:
    """``{v: rename(v)}`` over the ids ``rename`` moves (None or ``v`` itself: fixed)."""
    image: Renaming = {}
    for v in ids:
        w = rename(v)
        if w is not None and w != v:
            image[v] = w
    return image


def _count(ids: Sequence[str], pattern: re.Pattern[str], part: int = 1) -> int:
    """One more than the largest index ``pattern`` reads (group ``part``) from the ids."""
    return 1 + max((int(m[part]) for v in ids if (m := pattern.fullmatch(v))), default=-1)


def _box_rotation(ids: Sequence[str]) -> Renaming:
    """``b{i}.X -> b{i+1 mod B}.X``."""
    boxes = _count(ids, _BOXED)

    def rename(v: str) -> str | None:
        m = _BOXED.fullmatch(v)
        return f"b{(int(m[1]) + 1) % boxes}.{m[2]}" if m else None

    return _renaming(ids, rename)


def _gpu_rotation(ids: Sequence[str]) -> Renaming:
    """GPU ``g -> g + G/R`` and NIC ``j -> j + 1`` in every box, rail ``j -> j + 1``
    (``R`` NICs per box of ``G`` GPUs; rails ``rail{j}``, ``ib{j}`` or ``rail{j}.leaf{l}``)."""
    parts = [p for v in ids if (m := _BOXED.fullmatch(v)) and (p := _GPU_PART.fullmatch(m[2]))]
    gpus = 1 + max((int(p[2]) for p in parts if p[1] == "gpu"), default=-1)
    nics = 1 + max((int(p[2]) for p in parts if p[1] == "nic"), default=-1)
    rails = _count(ids, _RAIL, 2)
    if gpus < 2 or (nics and gpus % nics):
        return {}
    step = gpus // nics if nics else 1

    def rename(v: str) -> str | None:
        if m := _BOXED.fullmatch(v):
            if p := _GPU_PART.fullmatch(m[2]):
                size, shift = (gpus, step) if p[1] == "gpu" else (nics, 1)
                return f"b{m[1]}.{p[1]}{(int(p[2]) + shift) % size}"
            return None
        if rails and (r := _RAIL.fullmatch(v)):
            return f"{r[1]}{(int(r[2]) + 1) % rails}{r[3] or ''}"
        return None

    return _renaming(ids, rename)


def _leaf_rotations(ids: Sequence[str]) -> list[Renaming]:
    """For servers on leaves (server ``s`` on leaf ``s // P``): the rotation of the
    servers of each leaf, and leaf ``l -> l+1`` with its servers."""
    boxes, leaves = _count(ids, _BOXED), _count(ids, _LEAF, 2)
    if not leaves or boxes % leaves:
        return []
    per_leaf = boxes // leaves

    def within(v: str) -> str | None:
        m = _BOXED.fullmatch(v)
        if not m:
            return None
        s = int(m[1])
        return f"b{s - s % per_leaf + (s + 1) % per_leaf}.{m[2]}"

    def across(v: str) -> str | None:
        if m := _BOXED.fullmatch(v):
            return f"b{(int(m[1]) + per_leaf) % boxes}.{m[2]}"
        if m := _LEAF.fullmatch(v):
            return f"{m[1] or ''}leaf{(int(m[2]) + 1) % leaves}"
        return None

    return [_renaming(ids, within), _renaming(ids, across)]


def _dgx(ids: Sequence[str]) -> list[Renaming]:
    return [_box_rotation(ids), _gpu_rotation(ids)]


def _rail_fat_tree(ids: Sequence[str]) -> list[Renaming]:
    return [*_leaf_rotations(ids), _gpu_rotation(ids)]


def _host_rotation(ids: Sequence[str]) -> Renaming:
    """Host ``k -> k+1 mod H`` behind each switch (``X.h{k}``)."""
    hosts = 1 + max((int(m[2]) for v in ids if (m := _HOST.fullmatch(v))), default=-1)

    def rename(v: str) -> str | None:
        m = _HOST.fullmatch(v)
        return f"{m[1]}.h{(int(m[2]) + 1) % hosts}" if m else None

    return _renaming(ids, rename)


def _dragonfly(ids: Sequence[str]) -> list[Renaming]:
    """Group ``i -> i+1`` with its routers and hosts; hosts of a router rotated."""
    groups = _count(ids, _GROUPED)

    def rename(v: str) -> str | None:
        m = _GROUPED.fullmatch(v)
        return f"g{(int(m[1]) + 1) % groups}.{m[2]}" if m else None

    return [_renaming(ids, rename), _host_rotation(ids)]


def _translations(ids: Sequence[str]) -> list[Renaming]:
    """Point ``x -> x + e_a`` (mod the size of axis ``a``) for each axis of ids
    ``n{x0}_{x1}...`` or ``s{x0}_{x1}...[.X]``, and the rotation of hosts ``.h{k}``."""
    points = [
        (m[1], tuple(map(int, m[2].split("_"))), m[3] or "")
        for v in ids
        if (m := _POINT.fullmatch(v))
    ]
    if not points or len({len(x) for _, x, _ in points}) != 1:
        return []
    sizes = [1 + max(p[1][a] for p in points) for a in range(len(points[0][1]))]
    moves: list[Renaming] = []
    for axis, size in enumerate(sizes):
        image: Renaming = {}
        for prefix, x, rest in points:
            y = x[:axis] + ((x[axis] + 1) % size,) + x[axis + 1 :]
            if y != x:
                image[f"{prefix}{'_'.join(map(str, x))}{rest}"] = (
                    f"{prefix}{'_'.join(map(str, y))}{rest}"
                )
        moves.append(image)
    return [*moves, _host_rotation(ids)]


_GENERATORS: dict[str, Callable[[Sequence[str]], list[Renaming]]] = {
    "dgx-a100": _dgx,
    "dgx-h100": _dgx,
    "dgx-2": _dgx,
    "dgx-v100": lambda ids: [_box_rotation(ids)],
    "rail-fat-tree": _rail_fat_tree,
    "dragonfly": _dragonfly,
    "torus": _translations,
    "twisted-torus": _translations,
    "hyperx": _translations,
}

#: Families whose topologies :func:`declared_generators` gives candidates for.
FAMILIES_WITH_SYMMETRY = tuple(sorted(_GENERATORS))


@dataclass(frozen=True)
class DeclaredGroup:
    """A family's declared generators that passed every check, as a group acting freely
    on the compute nodes.

    Attributes
    ----------
    generators : tuple of dict
        Node renamings (ids not listed stay), each an automorphism of the topology.
    orders : tuple of int
        Each generator's order (the lcm of its cycle lengths).
    representatives : tuple of str
        The first compute node (declaration order) of every orbit of compute nodes.
    """

    generators: tuple[Renaming, ...]
    orders: tuple[int, ...]
    representatives: tuple[str, ...]

    @property
    def order(self) -> int:
        """``|G|``: the product of the orders (the group is their direct product)."""
        return math.prod(self.orders)


def declared_group(topology: Topology) -> DeclaredGroup | None:
    """The group the family's declared generators generate, or ``None`` unless it is a
    direct product of cyclic groups acting freely on the compute nodes.

    Every generator is checked exactly (:func:`~optcoll.graph.symmetry.is_automorphism`)
    and a failing one is dropped; the others must commute pairwise (``g(h(v)) =
    h(g(v))`` for every node) and every orbit of compute nodes must have
    ``m_1 * ... * m_d`` elements (then ``<g_1> x ... x <g_d>`` maps onto the orbit
    one to one: the action is free). ``O((nodes + links) * generators^2)``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> g = declared_group(build("dgx-h100:4"))
    >>> g.orders, g.representatives
    ((4, 8), ('b0.gpu0',))
    >>> declared_group(build("ring:5")) is None
    True
    """
    declared = declared_generators(topology)
    if not declared:
        return None
    caps = topology.capacity
    kind = {node.id: (node.type, node.reduce, node.multicast) for node in topology.nodes}
    generators = [g for g in declared if is_automorphism(caps, kind, g)]
    if not generators:
        return None
    for i, g in enumerate(generators):
        for h in generators[i + 1 :]:
            moved = g.keys() | h.keys()
            if any(
                g.get(h.get(v, v), h.get(v, v)) != h.get(g.get(v, v), g.get(v, v)) for v in moved
            ):
                return None
    orders = tuple(_order(g) for g in generators)
    size = math.prod(orders)
    seen: set[str] = set()
    representatives = []
    for v in topology.compute_nodes:
        if v in seen:
            continue
        orbit = [v]
        seen.add(v)
        for x in orbit:
            for g in generators:
                y = g.get(x, x)
                if y not in seen:
                    seen.add(y)
                    orbit.append(y)
        if len(orbit) != size:
            return None
        representatives.append(v)
    return DeclaredGroup(tuple(generators), orders, tuple(representatives))


def _order(image: Renaming) -> int:
    """The lcm of the cycle lengths of the permutation ``image``."""
    order = 1
    seen: set[str] = set()
    for start in image:
        if start in seen:
            continue
        length, v = 0, start
        while v not in seen:
            seen.add(v)
            v = image[v]
            length += 1
        order = math.lcm(order, length)
    return order
