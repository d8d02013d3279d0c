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

import math
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from math import gcd
from typing import Any

from optcoll.core.topology import Topology
from optcoll.graph.splitting import LogicalGraph

__all__ = [
    "RootSymmetry",
    "root_symmetry",
    "box_rotation",
    "box_rotations",
    "extend_automorphism",
    "coloured_isomorphism",
    "automorphism_group",
    "PermutationGroup",
    "automorphisms",
    "path_rotation",
    "preserves_capacity",
    "is_automorphism",
    "latency_orbit_representatives",
]


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
    """A group ``H = <rho_1> x ... x <rho_d>`` of commuting permutations of the compute
    node indices acting freely (the direct product of cyclic groups).

    Element ``i`` of ``H`` is ``rho_1^i_1 ... rho_d^i_d`` with the mixed-radix digits
    ``i = i_1 + m_1 (i_2 + m_2 (...))`` (``m_j`` the order of ``rho_j``); element 0
    is the identity. One generator is the cyclic group of the module docstring;
    several give e.g. the translations of a torus (``Z_a x Z_b``) or the
    reflections of a mesh (``Z_2 x Z_2``). The proof of the module docstring only
    needs the action to be free, which holds for any group.

    Attributes
    ----------
    order : int
        ``|H| = m_1 ... m_d``: every orbit has ``order`` nodes.
    representatives : tuple of int
        One node per orbit (the first of its orbit in index order).
    orbit : tuple of int
        ``orbit[v]``: the representative of ``v``'s orbit.
    position : tuple of int
        ``position[v] = i`` with ``v`` = element ``i`` applied to ``orbit[v]``.
    members : dict
        ``members[r][i]``: element ``i`` applied to the representative ``r``.
    generators : tuple of tuple of int
        ``rho_1 .. rho_d`` as lists of images.
    orders : tuple of int
        ``m_1 .. m_d``.
    """

    order: int
    representatives: tuple[int, ...]
    orbit: tuple[int, ...]
    position: tuple[int, ...]
    members: Mapping[int, tuple[int, ...]]
    generators: tuple[tuple[int, ...], ...] = ()
    orders: tuple[int, ...] = ()

    @classmethod
    def generated_by(cls, *rhos: Sequence[int]) -> RootSymmetry | None:
        """The group generated by commuting permutations ``rhos`` of ``0 .. n-1``, or
        ``None`` unless it is their direct product, acts freely and is not trivial.

        Freeness and directness together say that the ``m_1 ... m_d`` products of
        powers send every node to distinct nodes, which is what is checked
        (``O(n * d)``); that the permutations commute is the caller's promise
        (:func:`automorphism_group` checks it).

        Examples
        --------
        >>> RootSymmetry.generated_by([1, 0, 3, 2]).members
        {0: (0, 1), 2: (2, 3)}
        >>> RootSymmetry.generated_by([1, 0, 2, 3]) is None  # fixes 2 and 3
        True
        >>> RootSymmetry.generated_by([1, 0, 3, 2], [2, 3, 0, 1]).members  # Z2 x Z2
        {0: (0, 1, 2, 3)}
        """
        n = len(rhos[0]) if rhos else 0
        orders = []
        for rho in rhos:
            lengths = {len(cycle) for cycle in _cycles(rho)}
            if len(lengths) != 1 or lengths == {1}:
                return None
            orders.append(lengths.pop())
        size = math.prod(orders)
        if size < 2 or n % size:
            return None
        orbit, position = [-1] * n, [0] * n
        members: dict[int, tuple[int, ...]] = {}
        for r in range(n):
            if orbit[r] >= 0:
                continue
            images = [r]
            for rho, m in zip(rhos, orders, strict=True):
                layer = images
                for _ in range(m - 1):
                    layer = [rho[v] for v in layer]
                    images += layer
            for i, v in enumerate(images):
                if orbit[v] >= 0:
                    return None  # two elements agree on a node: not free or not direct
                orbit[v], position[v] = r, i
            members[r] = tuple(images)
        return cls(
            size,
            tuple(members),
            tuple(orbit),
            tuple(position),
            members,
            tuple(tuple(rho) for rho in rhos),
            tuple(orders),
        )

    def __post_init__(self) -> None:
        digits = []
        for i in range(self.order):
            row = []
            for m in self.orders:
                row.append(i % m)
                i //= m
            digits.append(tuple(row))
        object.__setattr__(self, "_digits", digits)
        object.__setattr__(self, "_index", {d: i for i, d in enumerate(digits)})

    def compose(self, i: int, j: int) -> int:
        """The element ``i * j`` (digit-wise sum modulo the orders).

        Examples
        --------
        >>> RootSymmetry.generated_by([1, 2, 0]).compose(2, 2)
        1
        """
        if len(self.orders) == 1:
            return (i + j) % self.order
        digits = self._digits  # type: ignore[attr-defined]
        return self._index[  # type: ignore[attr-defined]
            tuple((a + b) % m for a, b, m in zip(digits[i], digits[j], self.orders, strict=True))
        ]

    def inverse(self, i: int) -> int:
        """The element ``i^-1``."""
        if len(self.orders) == 1:
            return -i % self.order
        digits = self._digits[i]  # type: ignore[attr-defined]
        return self._index[tuple(-a % m for a, m in zip(digits, self.orders, strict=True))]  # type: ignore[attr-defined]

    def image(self, i: int, v: int) -> int:
        """Element ``i`` applied to node ``v``."""
        return self.members[self.orbit[v]][self.compose(self.position[v], i)]

    def orbit_of(self, v: int) -> tuple[int, ...]:
        """The nodes of ``v``'s orbit."""
        return self.members[self.orbit[v]]

    def arc_orbit(self, u: int, v: int) -> tuple[int, int, int]:
        """A key shared exactly by the arcs of ``(u, v)``'s orbit: both ends' orbits and
        the element taking ``u``'s position to ``v``'s."""
        position = self.position
        return self.orbit[u], self.orbit[v], self.compose(position[v], self.inverse(position[u]))

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


def _cycles(rho: Sequence[int]) -> list[list[int]]:
    """The cycles of the permutation ``rho`` of ``0 .. n-1``."""
    seen = [False] * len(rho)
    cycles = []
    for r in range(len(rho)):
        if not seen[r]:
            cycle = [r]
            seen[r] = True
            while not seen[v := rho[cycle[-1]]]:
                seen[v] = True
                cycle.append(v)
            cycles.append(cycle)
    return cycles


#: Leaves of the individualisation-refinement search looked at per candidate generator.
SEARCH_LEAVES = 8

#: Leaves per candidate generator in :func:`automorphisms` (the all-to-all LP's group):
#: with 8 the search missed the translations of torus:3x3x3 and torus:5x5x5 (it found
#: two reflections, 33 orbits of sources on 5x5x5 and an LP of 24,553 variables instead
#: of 745); with 32 it finds them (order 125) in 0.07 s.
AUTOMORPHISM_LEAVES = 32

#: Refined colourings per candidate generator at most (bounds a fruitless search).
SEARCH_NODES = 64

#: Targets ``v`` tried per step of :func:`automorphism_group` before it gives up.
SEARCH_TARGETS = 4


class _Refiner:
    """Colour refinement (1-WL) on two copies of a capacitated digraph at once.

    Left copy: nodes ``0 .. n-1``; right copy: ``n .. 2n-1``. A colouring is a
    numpy array over both; equal colours on both sides are candidate images.
    Each round gives every node the multiset of ``(direction, capacity class,
    colour of the other end)`` of its arcs, hashed (splitmix64, summed), and new
    colours are the ranks of the hash of ``(old colour, multiset hash)``, so
    colours are canonical: the same on both copies for the same structure. A hash
    collision (odds about ``n^2 / 2^64``) can only make the search miss or
    mistry a map, never make a wrong map pass: every map found is checked
    exactly (:func:`preserves_capacity`).
    """

    def __init__(self, n: int, capacity: Mapping[tuple[int, int], Any]) -> None:
        np = _numpy()
        self.n = n
        kinds = {c: i for i, c in enumerate(sorted(set(capacity.values())))}
        tails = np.array([u for u, _ in capacity], dtype=np.int64)
        heads = np.array([v for _, v in capacity], dtype=np.int64)
        kind = np.array([kinds[c] for c in capacity.values()], dtype=np.uint64)
        tails = np.concatenate((tails, tails + n))
        heads = np.concatenate((heads, heads + n))
        kind = np.concatenate((kind, kind))
        self.tails, self.heads = tails, heads
        self.out_kind = kind * np.uint64(4 << 32)  # the arc's direction and capacity class
        self.in_kind = (kind * np.uint64(4) + np.uint64(1)) << np.uint64(32)
        self.by_tail = _Segments(tails, 2 * n)
        self.by_head = _Segments(heads, 2 * n)

    def refine(self, colour: Any) -> Any:
        """The coarsest stable refinement of ``colour`` (ranks ``0 ..``)."""
        np = _numpy()
        count = len(np.unique(colour))
        while True:
            c = colour.astype(np.uint64)
            signature = self.by_tail.sums(_mix(self.out_kind + c[self.heads]))
            signature += self.by_head.sums(_mix(self.in_kind ^ c[self.tails]))
            key = _mix(_mix(c) ^ signature)  # (old colour, multiset), hashed once more
            _, colour = np.unique(key, return_inverse=True)
            colour = colour.reshape(-1)
            new = int(colour.max()) + 1
            if new == count:
                return colour
            count = new

    def search(
        self,
        colour: Any,
        prefer: Callable[[int, int], bool],
        leaves: int,
        *,
        greedy: bool = False,
    ) -> list[list[int]]:
        """Up to ``leaves`` bijections ``left -> right`` compatible with ``colour``,
        found by individualising one left node and each right candidate in turn
        (candidates with ``prefer(x, y)`` first, then by index), depth first.

        ``greedy``: no backtracking; the least left node of a class with several
        nodes is paired with the least right node of its class only, so at most
        one bijection comes out, after at most ``n`` refinements."""
        np = _numpy()
        n = self.n
        found: list[list[int]] = []
        stack = [colour]  # refined when popped: a branch the search never reaches costs nothing
        budget = n + 1 if greedy else SEARCH_NODES
        while stack and len(found) < leaves and budget > 0:
            colour = self.refine(stack.pop())
            budget -= 1
            left = np.bincount(colour[:n], minlength=int(colour.max()) + 1)
            right = np.bincount(colour[n:], minlength=len(left))
            if (left != right).any():
                continue
            if (left <= 1).all():
                order = np.argsort(colour[n:], kind="stable")
                image = np.empty(n, dtype=np.int64)
                image[np.argsort(colour[:n], kind="stable")] = order
                found.append(image.tolist())
                continue
            if greedy:
                x = int(np.flatnonzero(left[colour[:n]] > 1)[0])
                cell = int(colour[x])
                candidates = [int(np.flatnonzero(colour[n:] == cell)[0])]
            else:
                sizes = np.where(left > 1, left, n + 1)
                cell = int(np.argmin(sizes))
                x = int(np.flatnonzero(colour[:n] == cell)[0])
                candidates = np.flatnonzero(colour[n:] == cell).tolist()
                candidates.sort(key=lambda y: (not prefer(x, y), y))
            fresh = int(colour.max()) + 1
            for y in reversed(candidates):  # the stack pops the first candidate first
                branch = colour.copy()
                branch[x] = branch[n + y] = fresh
                stack.append(branch)
        return found


def _numpy() -> Any:
    import numpy

    return numpy


def _mix(x: Any) -> Any:
    """splitmix64 of a uint64 array (wrapping arithmetic), in one new array."""
    np = _numpy()
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
        return x


class _Segments:
    """Sums of per-arc values grouped by one end node, in wrapping uint64 arithmetic
    (``numpy.add.at`` without its per-element cost): the arcs sorted by that end once,
    then one ``add.reduceat`` per call."""

    def __init__(self, ends: Any, nodes: int) -> None:
        np = _numpy()
        self.order = np.argsort(ends, kind="stable")
        sorted_ends = ends[self.order]
        self.starts = np.flatnonzero(np.r_[True, sorted_ends[1:] != sorted_ends[:-1]])
        self.nodes = sorted_ends[self.starts]
        self.size = nodes

    def sums(self, values: Any) -> Any:
        np = _numpy()
        total = np.zeros(self.size, dtype=np.uint64)
        if len(values):
            total[self.nodes] = np.add.reduceat(values[self.order], self.starts)
        return total


def _complement(
    generators: list[list[int]], g: list[int], generate: Callable[..., Any] | None = None
) -> tuple[list[int], Any]:
    """The power ``g^e`` of largest order (smallest ``e``) with ``<H, g^e>`` direct (and
    free, for ``generate`` = :meth:`RootSymmetry.generated_by`, the default).

    A translation by ``(1, 1)`` of torus 3x5 meets ``H = <(1, 0)>`` in ``(3, 0)``; its
    fifth power, of order 3, does not.
    """
    order = math.lcm(*(len(cycle) for cycle in _cycles(g)))
    power = list(range(len(g)))
    for e in range(1, order):
        power = [g[v] for v in power]
        if order % e:
            continue
        candidate = (generate or RootSymmetry.generated_by)(*generators, power)
        if candidate is not None:
            return power, candidate
    return g, None


def automorphism_group(
    n: int, capacity: Mapping[tuple[int, int], Any], colour: Sequence[int] | None = None
) -> RootSymmetry | None:
    """A direct product of cyclic groups of automorphisms acting freely on ``0 .. n-1``.

    Grows ``H`` one generator at a time: colour refinement (1-WL on the
    capacities, optionally starting from ``colour``) gives candidate orbits; for
    the first node ``r`` of a class and a node ``v`` of the class outside
    ``r``'s ``H``-orbit, an automorphism ``g`` with ``g(r) = v`` that commutes with
    ``H`` must send ``h(r)`` to ``h(v)`` for every ``h`` in ``H``: those pairs are
    individualised on two copies of the graph, refined, and completed by
    individualisation-refinement (:class:`_Refiner`). Every complete map is
    checked exactly (:func:`preserves_capacity`, commuting with ``H``'s generators,
    ``<H, g>`` direct and free, :meth:`RootSymmetry.generated_by`); among the
    leaves a map moving every node along an arc of the capacity of ``(r, v)`` wins,
    the one of least order among those (a translation by one arc, not a screw
    that a translation would commute with less), else the largest ``<H, g>``, then
    the map moving most nodes so. Targets ``v`` adjacent to ``r`` come first.

    Tori and hypercubes get their translations (one orbit), meshes their
    reflections, clusters of identical boxes their box rotations, whatever
    their node names or order.

    Parameters
    ----------
    n : int
        Nodes ``0 .. n-1``.
    capacity : Mapping
        ``(u, v) -> capacity`` of every arc.
    colour : sequence of int, optional
        Initial classes no automorphism may mix.

    Returns
    -------
    RootSymmetry or None
        ``None`` when no free automorphism was found.

    Examples
    --------
    >>> cycle = {(i, (i + 1) % 6): 1 for i in range(6)} | {((i + 1) % 6, i): 1 for i in range(6)}
    >>> automorphism_group(6, cycle).representatives
    (0,)
    >>> line = {(0, 1): 1, (1, 0): 1, (1, 2): 1, (2, 1): 1, (2, 3): 1, (3, 2): 1}
    >>> automorphism_group(4, line).members  # the reflection
    {0: (0, 3), 1: (1, 2)}
    """
    return _grow(n, capacity, colour, RootSymmetry.generated_by)


def _grow(
    n: int,
    capacity: Mapping[tuple[int, int], Any],
    colour: Sequence[int] | None,
    generate: Callable[..., Any],
    leaves: int = SEARCH_LEAVES,
) -> Any:
    """The search of :func:`automorphism_group` and :func:`automorphisms`; ``generate``
    builds the group of a list of generators or says ``None`` (not direct, not free);
    ``leaves`` per candidate generator."""
    np = _numpy()
    if n < 2:
        return None
    refiner = _Refiner(n, capacity)
    start = np.zeros(2 * n, dtype=np.int64)
    if colour is not None:
        start[:n] = start[n:] = np.unique(np.asarray(colour), return_inverse=True)[1].reshape(-1)
    stable = refiner.refine(start)
    classes: dict[int, list[int]] = {}
    for v, c in enumerate(stable[:n].tolist()):
        classes.setdefault(c, []).append(v)
    out: list[set[int]] = [set() for _ in range(n)]
    for u, v in capacity:
        out[u].add(v)
    generators: list[list[int]] = []
    group: RootSymmetry | None = None
    exhausted: set[tuple[int, int]] = set()
    while True:
        best: tuple[tuple[bool, int, int], list[int], Any] | None = None
        for members in sorted(classes.values(), key=lambda m: m[0]):
            if len(members) < 2:
                continue
            r = members[0]
            orbit = {r} if group is None else set(group.orbit_of(r))
            targets = [v for v in members if v not in orbit and (r, v) not in exhausted]
            neighbours = out[r]
            targets.sort(key=lambda v: (v not in neighbours, v))  # translations by an arc first
            for v in targets[:SEARCH_TARGETS]:
                exhausted.add((r, v))
                pairs = (
                    [(r, v)]
                    if group is None
                    else [(group.image(i, r), group.image(i, v)) for i in range(group.order)]
                )
                paired = stable.copy()
                fresh = int(paired.max()) + 1
                for i, (x, y) in enumerate(pairs):
                    paired[x] = paired[n + y] = fresh + i
                wanted = capacity.get((r, v))

                def along(x: int, y: int, wanted: Any = wanted) -> bool:
                    return capacity.get((x, y)) == wanted

                for g in refiner.search(paired, along, leaves):
                    if not preserves_capacity(capacity, dict(enumerate(g))):
                        continue
                    if any(g[h[x]] != h[g[x]] for h in generators for x in range(n)):
                        continue
                    g, candidate = _complement(generators, g, generate)
                    if candidate is None:
                        continue
                    moved = sum(1 for x in range(n) if capacity.get((x, g[x])) == wanted)
                    score = (moved == n, -candidate.order if moved == n else candidate.order, moved)
                    if best is None or score > best[0]:
                        best = (score, g, candidate)
                if best is not None:
                    break
            if best is not None:
                break
        if best is None:
            return group
        generators.append(best[1])
        group = best[2]
        exhausted.clear()


@dataclass(frozen=True)
class PermutationGroup:
    """A direct product ``<g_1> x ... x <g_d>`` of cyclic groups of commuting
    permutations of ``0 .. n-1``; unlike :class:`RootSymmetry` the action may fix nodes
    (a mesh's reflections fix its middle, a box rotation the switches shared by all boxes).

    Element ``i`` is ``g_1^i_1 ... g_d^i_d`` with the mixed-radix digits
    ``i = i_1 + m_1 (i_2 + m_2 (...))`` (``m_j`` the order of ``g_j``), as in
    :class:`RootSymmetry`; element 0 is the identity.

    Attributes
    ----------
    generators : tuple of tuple of int
        ``g_1 .. g_d`` as lists of images.
    orders : tuple of int
        ``m_1 .. m_d``.

    Examples
    --------
    >>> group = PermutationGroup.generated_by([2, 1, 0])  # a reflection of a 3-node line
    >>> group.order, group.orbits()
    (2, [[0, 2], [1]])
    """

    generators: tuple[tuple[int, ...], ...]
    orders: tuple[int, ...]

    @classmethod
    def generated_by(cls, *gs: Sequence[int]) -> PermutationGroup | None:
        """The group of commuting permutations ``gs``, or ``None`` unless it is their
        direct product (its ``m_1 ... m_d`` elements are distinct) and not trivial.

        That the permutations commute is the caller's promise
        (:func:`automorphisms` checks it). ``O(|G| n log |G|)``.

        Examples
        --------
        >>> PermutationGroup.generated_by([1, 0, 2], [1, 0, 2]) is None  # <g> x <g> is not direct
        True
        >>> PermutationGroup.generated_by([1, 2, 0], [0, 1, 2]) is None  # the identity
        True
        """
        np = _numpy()
        orders = tuple(math.lcm(*(len(cycle) for cycle in _cycles(g))) for g in gs)
        if not gs or min(orders) < 2:
            return None
        group = cls(tuple(tuple(g) for g in gs), orders)
        if len(np.unique(group.elements(), axis=0)) != group.order:
            return None
        return group

    @property
    def order(self) -> int:
        """``|G| = m_1 ... m_d``."""
        return math.prod(self.orders)

    def elements(self) -> Any:
        """All elements as a ``(|G|, n)`` integer array: row ``i`` is element ``i``'s images."""
        cached = self.__dict__.get("_elements")
        if cached is None:
            np = _numpy()
            cached = np.arange(len(self.generators[0]), dtype=np.int64)[None, :]
            for g, m in zip(self.generators, self.orders, strict=True):
                step = np.asarray(g, dtype=np.int64)
                layers = [cached]
                for _ in range(m - 1):
                    layers.append(step[layers[-1]])
                cached = np.concatenate(layers)
            object.__setattr__(self, "_elements", cached)
        return cached

    def image(self, i: int, v: int) -> int:
        """Element ``i`` applied to node ``v``."""
        return int(self.elements()[i, v])

    def orbits(self) -> list[list[int]]:
        """The orbits of the nodes, each sorted, in the order of their least node."""
        parent = list(range(len(self.generators[0])))

        def root(v: int) -> int:
            while parent[v] != v:
                parent[v] = parent[parent[v]]
                v = parent[v]
            return v

        for g in self.generators:
            for v, w in enumerate(g):
                a, b = root(v), root(w)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        found: dict[int, list[int]] = {}
        for v in range(len(parent)):
            found.setdefault(root(v), []).append(v)
        return list(found.values())

    def orbit_of(self, v: int) -> tuple[int, ...]:
        """The nodes of ``v``'s orbit."""
        cached = self.__dict__.get("_orbit_of")
        if cached is None:
            cached = {}
            for orbit in self.orbits():
                for w in orbit:
                    cached[w] = tuple(orbit)
            object.__setattr__(self, "_orbit_of", cached)
        return cached[v]


def automorphisms(
    n: int, capacity: Mapping[tuple[int, int], Any], colour: Sequence[int] | None = None
) -> PermutationGroup | None:
    """A direct product of cyclic groups of automorphisms of ``0 .. n-1``, fixed points allowed.

    The search of :func:`automorphism_group` (colour refinement, then
    individualisation-refinement for a generator commuting with those found, every
    map checked exactly by :func:`preserves_capacity`), accepting any group that is
    the direct product of its generators (:meth:`PermutationGroup.generated_by`)
    instead of only free ones: a mesh keeps its reflections though they fix its
    middle, a cluster its box rotations though they fix the switches that join the
    boxes. For the LPs whose optimum is invariant under every automorphism (the
    all-to-all LP, :mod:`optcoll.bounds.alltoall_orbits`).

    Returns
    -------
    PermutationGroup or None
        ``None`` when no automorphism other than the identity was found.

    Examples
    --------
    >>> grid = {}
    >>> for x in range(3):
    ...     for y in range(3):
    ...         for dx, dy in ((1, 0), (0, 1)):
    ...             if x + dx < 3 and y + dy < 3:
    ...                 u, v = 3 * x + y, 3 * (x + dx) + y + dy
    ...                 grid[(u, v)] = grid[(v, u)] = 1
    >>> group = automorphisms(9, grid)  # mesh 3x3: corners, edge middles, centre
    >>> group.order, group.orbits()  # the two reflections
    (4, [[0, 2, 6, 8], [1, 7], [3, 5], [4]])
    """
    if n < 2:
        return None
    return _grow(n, capacity, colour, PermutationGroup.generated_by, AUTOMORPHISM_LEAVES)


def extend_automorphism(
    n: int,
    capacity: Mapping[tuple[int, int], Any],
    partial: Mapping[int, int],
    colour: Sequence[int] | None = None,
) -> list[int] | None:
    """An automorphism of ``0 .. n-1`` that agrees with ``partial`` (e.g. a rotation of
    the compute nodes, extended to the switches), or ``None`` when none is found.

    The pairs of ``partial`` are individualised on the two copies of
    :func:`automorphism_group`'s search and the rest completed by
    individualisation-refinement (:class:`_Refiner`); the map is checked exactly
    (:func:`preserves_capacity`). It may miss an extension, never invents one.

    Examples
    --------
    >>> star = {(0, 3): 1, (3, 0): 1, (1, 3): 1, (3, 1): 1, (2, 3): 1, (3, 2): 1}
    >>> extend_automorphism(4, star, {0: 1, 1: 2, 2: 0})
    [1, 2, 0, 3]
    """
    np = _numpy()
    refiner = _Refiner(n, capacity)
    start = np.zeros(2 * n, dtype=np.int64)
    if colour is not None:
        start[:n] = start[n:] = np.unique(np.asarray(colour), return_inverse=True)[1].reshape(-1)
    stable = refiner.refine(start)
    fresh = int(stable.max()) + 1
    for i, (x, y) in enumerate(sorted(partial.items())):
        stable[x] = stable[n + y] = fresh + i
    for g in refiner.search(stable, lambda x, y: x == y, SEARCH_LEAVES):
        if all(g[x] == y for x, y in partial.items()) and preserves_capacity(
            capacity, dict(enumerate(g))
        ):
            return g
    return None


def coloured_isomorphism(
    n: int,
    capacity: Mapping[tuple[int, int], Any],
    left: Sequence[Hashable],
    right: Sequence[Hashable],
    accept: Callable[[list[int]], bool] | None = None,
) -> list[int] | None:
    """An automorphism of ``0 .. n-1`` that maps every node of colour ``left[v]`` to a node
    of the same colour in ``right`` (fixed colour classes), or ``None`` when none is found.

    The search of :func:`automorphism_group` on two copies of the graph, the left one
    coloured by ``left``, the right one by ``right``, in its greedy form: refine,
    then pair the least node of a class with several nodes with the least node of
    its class on the right, and refine again, without backtracking (at most ``n``
    refinements). The map is checked exactly (:func:`preserves_capacity`, the
    colours) and by ``accept`` when given (e.g. that it keeps process groups,
    :mod:`optcoll.groups.symmetry`). It may miss an automorphism, never invents one.

    Examples
    --------
    >>> ring = {(i, (i + 1) % 4): 1 for i in range(4)} | {((i + 1) % 4, i): 1 for i in range(4)}
    >>> coloured_isomorphism(4, ring, [1, 0, 0, 0], [0, 0, 1, 0])  # node 0 onto node 2
    [2, 1, 0, 3]
    >>> coloured_isomorphism(4, ring, [1, 0, 0, 0], [0, 0, 1, 0], lambda g: g[1] == 3)
    >>> coloured_isomorphism(4, ring, [1, 1, 0, 0], [1, 0, 1, 0]) is None  # an arc onto a non-arc
    True
    """
    np = _numpy()
    names: dict[Hashable, int] = {}
    start = np.array([names.setdefault(c, len(names)) for c in (*left, *right)], dtype=np.int64)
    for g in _Refiner(n, capacity).search(start, lambda x, y: True, 1, greedy=True):
        if (
            all(left[v] == right[w] for v, w in enumerate(g))
            and preserves_capacity(capacity, dict(enumerate(g)))
            and (accept is None or accept(g))
        ):
            return g
    return None


def root_symmetry(logical: LogicalGraph, groups: Mapping[str, str | None]) -> RootSymmetry | None:
    """The larger of :func:`box_rotation` and :func:`automorphism_group` of ``logical``.

    Both preserve the logical capacities exactly; the one with fewer orbits
    (representatives) wins, the box rotation on a tie. ``None`` when neither
    finds a free automorphism.

    Examples
    --------
    >>> from optcoll.graph.splitting import LogicalGraph
    >>> ring = {(i, (i + 1) % 8): 1 for i in range(8)} | {((i + 1) % 8, i): 1 for i in range(8)}
    >>> names = tuple(f"n{i}" for i in (0, 3, 6, 1, 4, 7, 2, 5))  # a ring declared out of order
    >>> arcs = {(f"n{u}", f"n{v}"): c for (u, v), c in ring.items()}
    >>> root_symmetry(LogicalGraph(names, arcs, {}), {}).representatives
    (0,)
    """
    box = box_rotation(logical, groups)
    index = {v: i for i, v in enumerate(logical.compute_nodes)}
    arcs = {(index[a], index[b]): c for (a, b), c in logical.capacity.items()}
    found = automorphism_group(len(index), arcs)
    if found is None or (box is not None and box.order >= found.order):
        return box
    return found


def box_rotation(logical: LogicalGraph, groups: Mapping[str, str | None]) -> RootSymmetry | None:
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
    >>> sym = box_rotation(LogicalGraph(tuple("abcd"), arcs, {}), dict.fromkeys("abcd", "x"))
    >>> sym.order, sym.representatives
    (4, (0,))
    """
    names = logical.compute_nodes
    index = {v: i for i, v in enumerate(names)}
    arcs = {(index[a], index[b]): c for (a, b), c in logical.capacity.items()}
    for rho in box_rotations(names, groups):
        symmetry = RootSymmetry.generated_by(rho)
        if symmetry is not None and preserves_capacity(arcs, dict(enumerate(rho))):
            return symmetry
    return None


def box_rotations(names: Sequence[str], groups: Mapping[str, str | None]) -> Iterator[list[int]]:
    """The group rotations ``rho_s`` of the module docstring, largest order first.

    ``names`` are the nodes to rotate (``rho`` maps indices into ``names``), ``groups``
    as for :func:`box_rotation`; each shift ``s`` is tried with the groups in order of
    first appearance and in order of their names. Nothing when the groups differ in
    size or there are fewer than two nodes.

    Examples
    --------
    >>> next(box_rotations(("a0", "a1", "b0", "b1"), {"a0": "a", "a1": "a", "b0": "b", "b1": "b"}))
    [2, 3, 1, 0]
    """
    boxes: dict[Any, list[int]] = {}
    for i, v in enumerate(names):
        group = groups.get(v)
        boxes.setdefault(("group", group) if group is not None else ("node", v), []).append(i)
    first = list(boxes.values())
    size = len(first[0]) if first else 0
    if len(names) < 2 or any(len(box) != size for box in first):
        return
    by_name = [boxes[key] for key in sorted(boxes, key=str)]
    shifts = sorted(range(size), key=lambda s: (-(size // gcd(s, size)), s))
    for s, members in [(s, members) for s in shifts for members in (first, by_name)]:
        rho = [0] * len(names)
        for p, box in enumerate(members):
            following = members[(p + 1) % len(members)]
            wrap = s if p == len(members) - 1 else 0
            for j, node in enumerate(box):
                rho[node] = following[(j + wrap) % size]
        yield rho


def path_rotation(logical: LogicalGraph, symmetry: RootSymmetry) -> list[dict[str, str]] | None:
    """``sigma_j`` for every generator ``rho_j``: the permutation of all nodes that extends
    ``rho_j`` and maps every arc's pool of paths, position by position, onto its
    image's pool (module docstring).

    Returns, per generator, the nodes ``sigma_j`` moves with their images, or
    ``None`` when some ``sigma_j`` does not exist (pools that differ in length,
    capacity or path length, a node sent to two images, or two nodes to one).
    ``O(total path length)`` per generator.

    Examples
    --------
    >>> paths = {("a", "b"): ((("a", "s", "b"), 1),), ("b", "a"): ((("b", "t", "a"), 1),)}
    >>> g = LogicalGraph(("a", "b"), {("a", "b"): 1, ("b", "a"): 1}, paths)
    >>> path_rotation(g, RootSymmetry.generated_by([1, 0]))
    [{'a': 'b', 'b': 'a', 's': 't', 't': 's'}]
    """
    result = []
    for rho in symmetry.generators:
        sigma = _path_image(logical, rho)
        if sigma is None:
            return None
        result.append(sigma)
    return result


def _path_image(logical: LogicalGraph, rho: Sequence[int]) -> dict[str, str] | None:
    names = logical.compute_nodes
    images = {names[v]: names[rho[v]] for v in range(len(names))}
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


def is_automorphism(
    capacity: Mapping[tuple[Any, Any], Any],
    kind: Mapping[Any, Hashable],
    image: Mapping[Any, Any],
) -> bool:
    """Whether ``image`` (nodes not listed stay) is an automorphism of the capacitated
    digraph whose nodes are the keys of ``kind``: a bijection of the nodes that keeps
    each node's ``kind`` (e.g. compute or switch) and maps every arc to an arc of equal
    capacity. Exact, ``O(nodes + arcs)``.

    A bijection maps distinct arcs to distinct arcs, so keeping every arc's capacity
    also maps the arc set onto itself.

    Examples
    --------
    >>> arcs = {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1}
    >>> kinds = {"a": 0, "b": 0, "c": 0}
    >>> is_automorphism(arcs, kinds, {"a": "b", "b": "c", "c": "a"})
    True
    >>> is_automorphism(arcs, kinds, {"a": "b", "b": "a"}), is_automorphism(arcs, kinds, {"a": "b"})
    (False, False)
    """
    moved = set(image)
    if not moved <= kind.keys() or set(image.values()) != moved:
        return False
    if any(kind[w] != kind[v] for v, w in image.items()):
        return False
    return preserves_capacity(capacity, image)


def latency_orbit_representatives(
    topology: Topology, latency: Mapping[tuple[str, str], Any]
) -> list[str]:
    """One compute node per orbit of a group of automorphisms that keep every link's
    capacity and ``latency`` and keep compute nodes apart (:func:`automorphisms`, every
    map checked exactly); every compute node when no group is found. Whatever holds of a
    node's distances (latency sums, cuts from it) holds of every node of its orbit.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> ring = build("ring:6")
    >>> latency_orbit_representatives(ring, dict.fromkeys(ring.capacity, 1))
    ['n0']
    """
    compute = list(topology.compute_nodes)
    names = list(topology.node)
    number = {v: i for i, v in enumerate(names)}
    arcs = {(number[u], number[v]): (c, latency[(u, v)]) for (u, v), c in topology.capacity.items()}
    kind = set(compute)
    group = automorphisms(len(names), arcs, [int(v in kind) for v in names])
    if group is None:
        return compute
    return [names[orbit[0]] for orbit in group.orbits() if names[orbit[0]] in kind]
