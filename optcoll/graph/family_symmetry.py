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


def _cluster(ids: Sequence[str]) -> list[Renaming]:
    """A ``cluster:`` spec: as a rail-fat-tree on leaves, else (one fabric switch) boxes
    rotated as a DGX cluster's."""
    if _count(ids, _LEAF, 2):
        return _rail_fat_tree(ids)
    return _dgx(ids)


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


_LEAF_HOST = re.compile(r"l(\d+)\.h(\d+)")
_SINGLE = re.compile(r"n(\d+)")
_RACKED = re.compile(r"r(\d+)\.(gpu|nic|tray)(\d+)")


def _leaf_spine(ids: Sequence[str]) -> list[Renaming]:
    """Host ``l{l}.h{h} -> l{l}.h{h+1}`` within every leaf, and leaf ``l -> l+1`` with its
    hosts (spines stay)."""
    leaves = _count(ids, _LEAF_HOST)
    hosts = _count(ids, _LEAF_HOST, 2)
    if not leaves or not hosts:  # not the family's ids (a file named leaf-spine, say)
        return []

    def within(v: str) -> str | None:
        m = _LEAF_HOST.fullmatch(v)
        return f"l{m[1]}.h{(int(m[2]) + 1) % hosts}" if m else None

    def across(v: str) -> str | None:
        if m := _LEAF_HOST.fullmatch(v):
            return f"l{(int(m[1]) + 1) % leaves}.h{m[2]}"
        if m := _LEAF.fullmatch(v):
            return f"leaf{(int(m[2]) + 1) % leaves}" if not m[1] else None
        return None

    return [_renaming(ids, within), _renaming(ids, across)]


def _reflections(ids: Sequence[str]) -> list[Renaming]:
    """Point ``x -> size - 1 - x`` along each axis of ids ``n{x0}_{x1}...`` (a mesh: free
    when the axis has even size; an odd axis fixes its middle, and the group check drops
    the family's group)."""
    points = [tuple(map(int, m[2].split("_"))) for v in ids if (m := _POINT.fullmatch(v))]
    if not points or len({len(x) for x in points}) != 1:
        return []
    sizes = [1 + max(p[a] for p in points) for a in range(len(points[0]))]
    moves = []
    for axis, size in enumerate(sizes):
        image: Renaming = {}
        for x in points:
            y = x[:axis] + (size - 1 - x[axis],) + x[axis + 1 :]
            if y != x:
                image["n" + "_".join(map(str, x))] = "n" + "_".join(map(str, y))
        moves.append(image)
    return moves


def _bit_flips(ids: Sequence[str]) -> list[Renaming]:
    """Node ``n{i} -> n{i xor 2^b}`` for every bit ``b`` of a hypercube's indices."""
    indices = [int(m[1]) for v in ids if (m := _SINGLE.fullmatch(v))]
    if not indices:
        return []
    bits = max(indices).bit_length()
    return [{f"n{i}": f"n{i ^ (1 << b)}" for i in indices} for b in range(bits)]


def _nvl72(ids: Sequence[str]) -> list[Renaming]:
    """Rack ``r -> r+1``; GPU and NIC ``g -> g+1`` (mod 72) with rail ``j -> j+1`` (mod 8)
    in every rack; tray ``t -> t+1`` (mod 9) in every rack."""
    racks = _count(ids, _RACKED)
    sizes = {"gpu": 0, "nic": 0, "tray": 0}
    for v in ids:
        if m := _RACKED.fullmatch(v):
            sizes[m[2]] = max(sizes[m[2]], int(m[3]) + 1)
    rails = _count(ids, _RAIL, 2)

    def rack(v: str) -> str | None:
        m = _RACKED.fullmatch(v)
        return f"r{(int(m[1]) + 1) % racks}.{m[2]}{m[3]}" if m else None

    def gpu(v: str) -> str | None:
        if (m := _RACKED.fullmatch(v)) and m[2] != "tray":
            return f"r{m[1]}.{m[2]}{(int(m[3]) + 1) % sizes[m[2]]}"
        if rails and (r := _RAIL.fullmatch(v)):
            return f"{r[1]}{(int(r[2]) + 1) % rails}{r[3] or ''}"
        return None

    def tray(v: str) -> str | None:
        m = _RACKED.fullmatch(v)
        return f"r{m[1]}.tray{(int(m[3]) + 1) % sizes['tray']}" if m and m[2] == "tray" else None

    return [_renaming(ids, rack), _renaming(ids, gpu), _renaming(ids, tray)]


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
    "cluster": _cluster,
    "leaf-spine": _leaf_spine,
    "mesh": _reflections,
    "hypercube": _bit_flips,
    "nvl72": _nvl72,
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
    and a failing one is dropped; the others are kept in turn when they move a compute
    node, commute with those kept (``g(h(v)) = h(g(v))`` for every node) and leave every
    orbit of compute nodes with ``m_1 * ... * m_d`` elements (then ``<g_1> x ... x
    <g_d>`` maps onto the orbit one to one: the action is free); ``None`` when none is
    kept. ``O((nodes + links) * generators^2)``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> g = declared_group(build("dgx-h100:4"))
    >>> g.orders, g.representatives
    ((4, 8), ('b0.gpu0',))
    >>> declared_group(build("ring:5")) is None
    True
    >>> declared_group(build("mesh:3x2")).orders  # the reflection of the odd axis fixes n1_*
    (2,)
    """
    declared = declared_generators(topology)
    if not declared:
        return None
    caps = topology.capacity
    kind = {node.id: (node.type, node.reduce, node.multicast) for node in topology.nodes}
    generators = [g for g in declared if is_automorphism(caps, kind, g)]
    if not generators:
        return None
    kept: list[Renaming] = []
    representatives: tuple[str, ...] | None = None
    for g in generators:  # each kept if the group stays a free direct product with it
        if not any(g.get(v, v) != v for v in topology.compute_nodes):
            continue  # moves no compute node (trays of a rack): no use for roots
        if any(not _commute(g, h) for h in kept):
            continue
        found = _free_representatives(topology.compute_nodes, [*kept, g])
        if found is not None:
            kept.append(g)
            representatives = found
    if representatives is None:
        return None
    return DeclaredGroup(tuple(kept), tuple(_order(g) for g in kept), representatives)


def _commute(g: Renaming, h: Renaming) -> bool:
    """Whether ``g(h(v)) = h(g(v))`` for every node either moves."""
    return all(
        g.get(h.get(v, v), h.get(v, v)) == h.get(g.get(v, v), g.get(v, v))
        for v in g.keys() | h.keys()
    )


def _free_representatives(
    compute: Sequence[str], generators: list[Renaming]
) -> tuple[str, ...] | None:
    """The first node of every orbit of ``compute`` under ``generators``, or ``None`` unless
    every orbit has as many nodes as the product of their orders (a free action)."""
    size = math.prod(_order(g) for g in generators)
    seen: set[str] = set()
    representatives = []
    for v in compute:
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
    return tuple(representatives)


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
