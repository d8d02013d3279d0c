"""Root symmetry: one tree family per orbit of roots, mapped by a cyclic group.

Built-in and imported clusters are made of identical boxes, so the roots of an
allgather fall into few classes. Let ``rho`` be a permutation of the compute
nodes that generates a cyclic group ``H = <rho>`` of order ``m`` acting *freely*
(no ``rho^i``, ``0 < i < m``, fixes a node), so every orbit has ``m`` nodes and
every node is ``rho^i(r)`` for exactly one representative ``r`` (one per orbit)
and one ``i``. ``H`` acts on arcs by ``rho(u, v) = (rho(u), rho(v))``, again
freely, so every arc orbit has exactly ``m`` (ordered) node pairs.

**Packing one family per orbit.** Give each arc orbit ``O`` the capacity
``c(O) = min over (u, v) in O of c(u, v)`` (0 when a pair of ``O`` is no logical
arc), pack ``k`` arborescences for every representative root such that the
arcs of orbit ``O`` are used at most ``c(O)`` times *in total* over the
representatives' trees (load ``L0(O)``), and take every tree's images under
``rho^0 .. rho^(m-1)``. Then:

* every compute node ``rho^i(r)`` is the root of exactly the images of ``r``'s
  trees, with the same multiplicities (free action), so it has ``k`` chunks;
* an image ``rho^i(T)`` of a spanning arborescence is one (``rho^i`` is a
  bijection of the nodes), and each of its arcs is a logical arc with positive
  capacity (``c(O) > 0`` for every orbit used);
* the load of arc ``a`` is ``L(a) = sum over i of L0-load of rho^(-i)(a)``; as ``i``
  runs over ``0 .. m-1``, ``rho^(-i)(a)`` runs over the orbit of ``a`` once each
  (free action), so ``L(a) = L0(orbit of a) <= c(orbit of a) <= c(a)``.

Hence the images form a valid packing of the logical graph, and
:func:`optcoll.graph.splitting.realise_paths` maps it to physical trees whose link
loads stay within the link capacities, i.e. time factor ``r*``. Soundness needs
no automorphism at all (``c(O)`` is a minimum); when ``rho`` preserves the
logical capacities (checked exactly, arc by arc, :func:`preserves_capacity`),
``c(O) = c(a)`` for every arc and nothing is lost. The optimality of the result
is re-checked exactly afterwards (its time factor must equal ``r*``, else the
caller packs without symmetry), and :func:`optcoll.verify.schedule.verify_schedule`
checks the expanded schedule independently.

**Physical paths.** Every logical arc ``a`` carries a list of physical paths
with capacities (its pool). When a permutation ``sigma`` of *all* nodes extends
``rho`` and maps the pool of every arc ``a`` position by position onto the pool of
``rho(a)`` (:func:`path_rotation`, checked exactly), the trees can be realised
once, for the representatives: the uses of one arc orbit take consecutive
sub-intervals of ``[0, c(O))`` (:func:`optcoll.graph.splitting.realise_paths` with
``share``), a use of ``a`` on interval ``I`` takes the paths of ``a``'s pool over
``I``, and its image under ``rho^i`` takes ``sigma^i`` of those paths, which are
the paths of ``rho^i(a)``'s pool over the same ``I``. The images' uses of an arc
``b`` are the uses of its orbit, on disjoint intervals, so every path of ``b``'s
pool carries at most its capacity and every link at most what the splitting
allowed: the physical trees are ``sigma^i`` of the representatives' physical
trees (:class:`optcoll.core.schedule.Rotation`), and a schedule file need only hold
those and ``sigma``.

**Finding ``rho``.** The compute nodes' groups (:attr:`Node.group`, the boxes)
in order of first appearance, all of the same size ``g``: ``rho_s`` maps member
``j`` of group ``p`` to member ``j`` of group ``p + 1``, and member ``j`` of the
last group to member ``(j + s) mod g`` of the first. Its order is
``B * g / gcd(s, g)`` for ``B`` groups and it acts freely. Shifts ``s`` are tried
largest order first (``s`` coprime to ``g`` makes ``H`` transitive: one
representative root) and the first ``rho_s`` that preserves the logical
capacities is taken; ``None`` when none does.

Examples
--------
>>> from optcoll.graph.splitting import LogicalGraph
>>> ring = {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1}
>>> sym = root_symmetry(LogicalGraph(("a", "b", "c"), ring, {}), {})
>>> sym.order, sym.representatives, sym.image(0, 2)
(3, (0,), 2)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from math import gcd
from typing import Any

from optcoll.graph.splitting import LogicalGraph

__all__ = ["RootSymmetry", "root_symmetry", "path_rotation", "preserves_capacity"]


def preserves_capacity(capacity: Mapping[tuple[Any, Any], Any], image: Mapping[Any, Any]) -> bool:
    """Whether ``image`` maps every arc of ``capacity`` to an arc of equal capacity.

    Nodes missing from ``image`` stay where they are. With ``image`` a bijection of
    the nodes this is the exact test that ``image`` is an automorphism of the
    capacitated digraph (arc by arc, ``O(arcs)``).

    Examples
    --------
    >>> arcs = {("a", "b"): 2, ("b", "a"): 2, ("b", "c"): 1}
    >>> preserves_capacity(arcs, {"a": "b", "b": "a"}), preserves_capacity(arcs, {})
    (False, True)
    """
    get = image.get
    return all(capacity.get((get(u, u), get(v, v))) == c for (u, v), c in capacity.items())


@dataclass(frozen=True)
class RootSymmetry:
    """A cyclic group ``<rho>`` of order ``order`` acting freely on compute node indices.

    Attributes
    ----------
    order : int
        ``m``: ``rho^m`` is the identity and every orbit has ``m`` nodes.
    representatives : tuple of int
        One node per orbit (the first of its orbit in index order).
    orbit : tuple of int
        ``orbit[v]``: the representative of ``v``'s orbit.
    position : tuple of int
        ``position[v] = i`` with ``v = rho^i(orbit[v])``.
    members : dict
        ``members[r][i] = rho^i(r)`` for every representative ``r``.
    """

    order: int
    representatives: tuple[int, ...]
    orbit: tuple[int, ...]
    position: tuple[int, ...]
    members: Mapping[int, tuple[int, ...]]

    @classmethod
    def generated_by(cls, rho: list[int]) -> RootSymmetry | None:
        """The group generated by the permutation ``rho`` of ``0 .. n-1``, or ``None``
        unless it acts freely (all cycles equally long) and is not trivial.

        Examples
        --------
        >>> RootSymmetry.generated_by([1, 0, 3, 2]).members
        {0: (0, 1), 2: (2, 3)}
        >>> RootSymmetry.generated_by([1, 0, 2, 3]) is None  # fixes 2 and 3
        True
        """
        n = len(rho)
        orbit, position = [-1] * n, [0] * n
        members: dict[int, tuple[int, ...]] = {}
        for r in range(n):
            if orbit[r] >= 0:
                continue
            cycle = [r]
            while (v := rho[cycle[-1]]) != r:
                cycle.append(v)
            for i, v in enumerate(cycle):
                orbit[v], position[v] = r, i
            members[r] = tuple(cycle)
        lengths = {len(cycle) for cycle in members.values()}
        if len(lengths) != 1 or lengths == {1}:
            return None
        return cls(lengths.pop(), tuple(members), tuple(orbit), tuple(position), members)

    def image(self, i: int, v: int) -> int:
        """``rho^i(v)``."""
        return self.members[self.orbit[v]][(self.position[v] + i) % self.order]

    def arc_orbit(self, u: int, v: int) -> tuple[int, int, int]:
        """A key shared exactly by the arcs of ``(u, v)``'s orbit."""
        return self.orbit[u], self.orbit[v], (self.position[v] - self.position[u]) % self.order

    def named_arc_orbit(
        self, compute_nodes: Sequence[str]
    ) -> Callable[[tuple[str, str]], tuple[int, int, int]]:
        """:meth:`arc_orbit` for arcs named by ``compute_nodes[index]``."""
        index = {name: i for i, name in enumerate(compute_nodes)}
        orbit = self.arc_orbit
        return lambda arc: orbit(index[arc[0]], index[arc[1]])

    def orbit_capacity(self, capacity: Mapping[tuple[int, int], int]) -> dict[Hashable, int]:
        """``c(O)``: the least capacity of the arcs of every orbit meeting ``capacity``
        (0 when one of its pairs is no arc).

        Examples
        --------
        >>> sym = RootSymmetry.generated_by([1, 2, 0])
        >>> sym.orbit_capacity({(0, 1): 2, (1, 2): 3, (2, 0): 2, (0, 2): 1})
        {(0, 0, 1): 2, (0, 0, 2): 0}
        """
        least: dict[Hashable, int] = {}
        count: dict[Hashable, int] = {}
        for (u, v), c in capacity.items():
            key = self.arc_orbit(u, v)
            least[key] = min(c, least.get(key, c))
            count[key] = count.get(key, 0) + 1
        return {key: c if count[key] == self.order else 0 for key, c in least.items()}


def root_symmetry(logical: LogicalGraph, groups: Mapping[str, str | None]) -> RootSymmetry | None:
    """A group rotation ``rho_s`` (module docstring) that preserves the logical capacities.

    Parameters
    ----------
    logical : LogicalGraph
        The switch-free graph (node indices follow ``logical.compute_nodes``).
    groups : Mapping
        ``compute node -> group`` (``Node.group``); a node missing from it (or with
        ``None``) counts as its own group, so a graph without groups is tried as
        one rotation of all its nodes.

    Returns
    -------
    RootSymmetry or None
        The group of the first ``rho_s`` (largest order first) that maps every
        logical arc to one of equal capacity; ``None`` when no ``rho_s`` does or
        the groups differ in size. ``O(g * arcs)`` at worst for groups of ``g``.

    Examples
    --------
    >>> from optcoll.graph.splitting import LogicalGraph
    >>> arcs = {(a, b): 1 for a in "abcd" for b in "abcd" if a != b}
    >>> sym = root_symmetry(LogicalGraph(tuple("abcd"), arcs, {}), dict.fromkeys("abcd", "x"))
    >>> sym.order, sym.representatives
    (4, (0,))
    """
    names = logical.compute_nodes
    boxes: dict[Any, list[int]] = {}
    for i, v in enumerate(names):
        group = groups.get(v)
        boxes.setdefault(("group", group) if group is not None else ("node", v), []).append(i)
    first = list(boxes.values())
    size = len(first[0]) if first else 0
    if len(names) < 2 or any(len(box) != size for box in first):
        return None
    by_name = [boxes[key] for key in sorted(boxes, key=str)]
    index = {v: i for i, v in enumerate(names)}
    arcs = {(index[a], index[b]): c for (a, b), c in logical.capacity.items()}
    shifts = sorted(range(size), key=lambda s: (-(size // gcd(s, size)), s))
    for s, members in [(s, members) for s in shifts for members in (first, by_name)]:
        rho = [0] * len(names)
        for p, box in enumerate(members):
            following = members[(p + 1) % len(members)]
            wrap = s if p == len(members) - 1 else 0
            for j, node in enumerate(box):
                rho[node] = following[(j + wrap) % size]
        symmetry = RootSymmetry.generated_by(rho)
        if symmetry is not None and preserves_capacity(arcs, dict(enumerate(rho))):
            return symmetry
    return None


def path_rotation(logical: LogicalGraph, symmetry: RootSymmetry) -> dict[str, str] | None:
    """``sigma``: the permutation of all nodes that extends ``rho`` and maps every arc's
    pool of paths, position by position, onto its image's pool (module docstring).

    Returns the nodes ``sigma`` moves with their images, or ``None`` when no such
    permutation exists (pools that differ in length, capacity or path length, a
    node sent to two images, or two nodes to one). ``O(total path length)``.

    Examples
    --------
    >>> paths = {("a", "b"): ((("a", "s", "b"), 1),), ("b", "a"): ((("b", "t", "a"), 1),)}
    >>> g = LogicalGraph(("a", "b"), {("a", "b"): 1, ("b", "a"): 1}, paths)
    >>> path_rotation(g, RootSymmetry.generated_by([1, 0]))
    {'a': 'b', 'b': 'a', 's': 't', 't': 's'}
    """
    names = logical.compute_nodes
    images = {names[v]: names[symmetry.image(1, v)] for v in range(len(names))}
    for (u, v), pool in logical.paths.items():
        other = logical.paths.get((images[u], images[v]))
        if other is None or len(other) != len(pool):
            return None
        for (path, c), (target, d) in zip(pool, other, strict=True):
            if c != d or len(path) != len(target):
                return None
            for x, y in zip(path, target, strict=True):
                if images.setdefault(x, y) != y:
                    return None
    if len(set(images.values())) != len(images) or set(images.values()) != set(images):
        return None
    return {x: y for x, y in images.items() if x != y}
