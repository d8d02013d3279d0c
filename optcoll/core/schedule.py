"""Schedules: spanning trees with chunk multiplicities and physical paths.

Semantics (docs/schedule-format.md): every compute node's shard is split
into ``k`` equal chunks; a :class:`Tree` carries ``chunks`` of its root's chunks;
per root the chunks sum to ``k``; a tree's edges form an arborescence rooted at
``root`` spanning all compute nodes; each edge's ``path`` runs along existing
links from ``src`` to ``dst`` with only switches in between. The load of a link
is the sum over trees of ``chunks`` times the number of the tree's paths that use
it; the time factor is the max over links of ``load / (k * bandwidth)``.

An **all-to-all** schedule has no trees but ``routes``: one :class:`Route` per
ordered pair ``(src, dst)`` of distinct compute nodes, whose piece (``M / N``
bytes) is cut into ``k`` chunks sent along the route's paths (``chunks`` each,
summing to ``k``); every node on a path may forward. The load of a link is the
sum of ``chunks`` over the paths that use it, and the time factor is again the
max over links of ``load / (k * bandwidth)``.

A schedule whose trees are the images of a few *representative* trees under the
powers of one node permutation (:class:`Rotation`, from
:func:`optcoll.schedules.packing.pack_arborescences` on clusters of identical boxes) is
written compactly: the representatives and the permutation. On reading, the trees
are an :class:`ImageTrees`, expanded only when a caller walks them: the verifier checks
the compact form itself (:mod:`optcoll.verify.symmetric`).

This module only holds and (de)serialises schedules. Checking them is the job
of :mod:`optcoll.verify.schedule`, which shares no code with the builders.

Examples
--------
>>> from fractions import Fraction
>>> t = Tree("a", 1, (TreeEdge("a", "b", ("a", "sw", "b")),))
>>> s = Schedule("allgather", "two", ("a", "b"), 1, (t, Tree("b", 1, (TreeEdge("b", "a", ("b", "sw", "a")),))),
...              cut_ratio=Fraction(1, 100), time_factor=Fraction(1, 100))
>>> Schedule.from_dict(s.to_dict()) == s
True
>>> s.algbw
200.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from optcoll.core.rational import fraction_text, parse_fraction
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError, TopologyMismatchError

__all__ = [
    "a_collective",
    "TreeEdge",
    "Tree",
    "Rotation",
    "Rotations",
    "ImageTrees",
    "RoutePath",
    "Route",
    "Schedule",
    "COLLECTIVES",
    "DEFAULT_COLLECTIVE",
    "SCHEDULE_VERSION",
    "FILE_STATS",
    "ORDER_STATS",
    "PRIORITIES",
    "order_stats_error",
    "canonical_collective",
    "check_schedule_topology",
]

SCHEDULE_VERSION = 1
#: The collectives, in their canonical spelling (``reduce-scatter`` is accepted as well).
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "alltoall")
#: The collective of every command and function that is not told one (``solve``, ``plan``,
#: ``export``, ``compare``, ``trees``, ``bound``, ``crosscheck`` and :func:`optcoll.solve`).
DEFAULT_COLLECTIVE = "allgather"


def a_collective(name: str) -> str:
    """``name`` with its indefinite article: ``an allreduce``, ``a broadcast``.

    Examples
    --------
    >>> a_collective("allreduce"), a_collective("reduce_scatter")
    ('an allreduce', 'a reduce_scatter')
    """
    return f"{'an' if str(name)[:1].lower() in 'aeiou' else 'a'} {name}"


def canonical_collective(name: str) -> str:
    """The canonical spelling of a collective's name: ``reduce-scatter`` -> ``reduce_scatter``.

    Case, hyphens and underscores do not matter (``Reduce-Scatter``, ``reduce_scatter``,
    ``all-reduce``, ``all_gather``, ``all-to-all``).

    Raises
    ------
    ScheduleError
        An unknown collective (the valid names are listed).

    Examples
    --------
    >>> canonical_collective("reduce-scatter"), canonical_collective("All-Reduce")
    ('reduce_scatter', 'allreduce')
    """
    spelled = str(name).strip().lower().replace("-", "").replace("_", "")
    key = {c.replace("_", ""): c for c in COLLECTIVES}.get(spelled)
    if key is None:
        raise ScheduleError(
            f"unknown collective {name!r}; valid: allgather, reduce-scatter, allreduce, "
            "broadcast, reduce, alltoall (hyphens, underscores and case do not matter)"
        )
    return key


_TOP_FIELDS = {
    "rotation",
    "rotations",
    "format",
    "version",
    "collective",
    "topology",
    "compute_nodes",
    "k",
    "cut_ratio",
    "time_factor",
    "algbw",
    "root",
    "topology_hash",
    "trees",
    "routes",
    "stats",
}
#: The ``stats`` a schedule file states: each is a claim
#: :func:`optcoll.verify.schedule.verify_schedule` recomputes from the topology and the
#: trees or routes. The builder's other records (``logical_arcs``, ``packed_roots``,
#: ``max_eccentricity``, ``height_excess``, ``exact_k``, ``rounding_bound``, ``cut_bound``,
#: ...) describe how it built the schedule, which no reader can check, so they stay in
#: :attr:`Schedule.stats` and are not written.
FILE_STATS = frozenset(
    {
        "U_scaled",
        "trees",
        "max_height",
        "mean_height",
        "total_sends",
        "routes",
        "paths",
        "ratio_to_optimum",
        "min_cut_bandwidth",
    }
)

#: The link orders a schedule can be run in: the order in which a busy link serves its
#: waiting slices (:func:`optcoll.sim.simulator.tree_tasks`).
PRIORITIES = ("progress", "depth", "progress-depth")

#: The ``stats`` that say how to run a schedule, not what it achieves: the order its
#: links serve their slices in (``priority``: one of :data:`PRIORITIES` or
#: ``timetable``, whose ``starts`` give a time per tree edge) and the slice size
#: (``slice_bytes``; null: whole chunks), as ``optcoll plan`` chose them. A file holds
#: them beside :data:`FILE_STATS`; readers check their form (:func:`order_stats_error`)
#: and the simulator runs by them.
ORDER_STATS = frozenset({"priority", "slice_bytes", "starts"})


def order_stats_error(schedule: Schedule) -> str | None:
    """What is wrong with ``schedule``'s :data:`ORDER_STATS` (naming the field), or None.

    Examples
    --------
    >>> from dataclasses import replace
    >>> tree = Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),))
    >>> one = Schedule("allgather", "t", ("a", "b"), 1, (tree,), stats={"priority": "depth"})
    >>> order_stats_error(one) is None
    True
    >>> order_stats_error(replace(one, stats={"priority": "timetable", "starts": [[0, 1]]}))
    'field stats.starts[0]: tree 0 (root a) needs 1 finite start time, one per edge (microseconds, at most 1e300 in size)'
    """
    stats = schedule.stats
    priority = stats.get("priority", "progress")
    if priority not in (*PRIORITIES, "timetable"):
        return f"field stats.priority: {priority!r} is no link order ({', '.join(PRIORITIES)} or timetable)"
    recorded = stats.get("slice_bytes")
    if recorded is not None and (
        not isinstance(recorded, int) or isinstance(recorded, bool) or recorded <= 0
    ):
        return f"field stats.slice_bytes: {recorded!r} is no slice size (bytes > 0, or null)"
    if "starts" in stats and priority != "timetable":
        return "field stats.starts: start times belong to a timetable (stats.priority timetable)"
    if priority != "timetable" or schedule.collective == "alltoall":
        return None
    starts, trees = stats.get("starts"), schedule.trees
    if not isinstance(starts, list) or len(starts) != len(trees):
        return (
            f"field stats.starts: a timetable needs a list of start times per tree ({len(trees)})"
        )
    for number, (times, tree) in enumerate(zip(starts, trees, strict=True)):
        if (
            not isinstance(times, list)
            or len(times) != len(tree.edges)
            or not all(_start_time(t) for t in times)
        ):
            edges = len(tree.edges)
            return (
                f"field stats.starts[{number}]: tree {number} (root {tree.root}) needs "
                f"{edges} finite start time{'s' if edges != 1 else ''}, one per edge"
                " (microseconds, at most 1e300 in size)"
            )
    return None


def _start_time(value: Any) -> bool:
    """True for a start time a simulation can use: a number, finite, at most 1e300 in size
    (a 900-digit integer is finite but no float holds it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return abs(value) <= 1e300 if isinstance(value, float) else abs(value) <= 10**300


_TREE_FIELDS = {"root", "chunks", "edges"}
_EDGE_FIELDS = {"src", "dst", "path"}
_ROUTE_FIELDS = {"src", "dst", "paths"}
_ROUTE_PATH_FIELDS = {"chunks", "path"}


@dataclass(frozen=True)
class TreeEdge:
    """A logical tree edge ``src -> dst`` realised by the physical ``path`` (node ids)."""

    src: str
    dst: str
    path: tuple[str, ...]


@dataclass(frozen=True)
class Tree:
    """An arborescence rooted at ``root`` carrying ``chunks`` of the root's k chunks."""

    root: str
    chunks: int
    edges: tuple[TreeEdge, ...]


@dataclass(frozen=True)
class Rotation:
    """A permutation of node ids and its order: trees are representatives' images.

    Attributes
    ----------
    order : int
        ``m``: the permutation's ``m``-th power is the identity, and it has a cycle of
        length ``m``.
    images : Mapping
        ``node -> image`` for the nodes it moves (every other node stays).

    Examples
    --------
    >>> r = Rotation(2, {"a": "b", "b": "a", "s": "t", "t": "s"})
    >>> r.expand([Tree("a", 1, (TreeEdge("a", "b", ("a", "s", "b")),))], ("a", "b"))[1]
    Tree(root='b', chunks=1, edges=(TreeEdge(src='b', dst='a', path=('b', 't', 'a')),))
    """

    order: int
    images: Mapping[str, str]

    @classmethod
    def checked(cls, order: Any, images: Any) -> Rotation:
        """A rotation from untrusted values: a permutation whose order is ``order``.

        Raises
        ------
        ScheduleError
            Naming what is wrong (a non-bijection, a cycle whose length does not
            divide ``order``, no cycle of length ``order``).
        """
        if not isinstance(images, Mapping) or not all(
            isinstance(a, str) and isinstance(b, str) for a, b in images.items()
        ):
            raise ScheduleError("rotation 'images' must map node id strings to node id strings")
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise ScheduleError(f"rotation 'order' must be a positive integer, got {order!r}")
        if set(images.values()) != set(images) or len(set(images.values())) != len(images):
            raise ScheduleError("rotation 'images' is not a permutation of the nodes it names")
        lengths = set()
        seen: set[str] = set()
        for start in images:
            if start not in seen:
                cycle = cls._cycle(images, start)
                seen.update(cycle)
                lengths.add(len(cycle))
        if any(order % length for length in lengths) or order != max(lengths, default=1):
            raise ScheduleError(
                f"rotation 'order' {order} is not the permutation's order (cycle lengths "
                f"{sorted(lengths)})"
            )
        return cls(order, dict(images))

    @staticmethod
    def _cycle(images: Mapping[str, str], start: str) -> list[str]:
        cycle = [start]
        while (node := images[cycle[-1]]) != start:
            cycle.append(node)
        return cycle

    def representatives(self, compute_nodes: tuple[str, ...]) -> frozenset[str]:
        """The compute nodes that come first (in ``compute_nodes``) among their orbit."""
        seen: set[str] = set()
        first = set()
        for v in compute_nodes:
            if v not in seen:
                first.add(v)
                seen.update(self._cycle(self.images, v) if v in self.images else (v,))
        return frozenset(first)

    def expand(self, trees: Sequence[Tree], compute_nodes: Sequence[str]) -> tuple[Tree, ...]:
        """``trees`` under the powers ``0 .. order - 1``, ordered by root (stably).

        Image edges with equal ends and path are one shared object.
        """
        images = self.images
        shared: dict[tuple[str, str, tuple[str, ...]], TreeEdge] = {}
        power = {v: v for v in images}
        result = []
        for _ in range(self.order):
            get = power.get
            for tree in trees:
                edges = []
                for edge in tree.edges:
                    path = tuple(get(x, x) for x in edge.path)
                    key = (get(edge.src, edge.src), get(edge.dst, edge.dst), path)
                    image = shared.get(key)
                    if image is None:
                        image = shared[key] = TreeEdge(*key)
                    edges.append(image)
                result.append(Tree(get(tree.root, tree.root), tree.chunks, tuple(edges)))
            power = {v: images[w] for v, w in power.items()}
        position = {v: i for i, v in enumerate(compute_nodes)}
        result.sort(key=lambda t: position.get(t.root, -1))
        return tuple(result)


@dataclass(frozen=True)
class Rotations:
    """Commuting rotations whose products map the representatives' trees to all trees.

    The group is the direct product ``<rho_1> x ... x <rho_d>`` (each generator a
    :class:`Rotation`), acting freely on the compute nodes: a torus's
    translations, a mesh's reflections. One generator behaves as that
    :class:`Rotation`.

    Examples
    --------
    >>> flip = Rotations((Rotation(2, {"a": "b", "b": "a", "c": "d", "d": "c"}),
    ...                   Rotation(2, {"a": "c", "c": "a", "b": "d", "d": "b"})))
    >>> tree = Tree("a", 1, (TreeEdge("a", "b", ("a", "b")), TreeEdge("a", "c", ("a", "c")),
    ...                      TreeEdge("c", "d", ("c", "d"))))
    >>> [t.root for t in flip.expand([tree], tuple("abcd"))], flip.order
    (['a', 'b', 'c', 'd'], 4)
    >>> flip.expand([tree], tuple("abcd"))[3].edges[0]
    TreeEdge(src='d', dst='c', path=('d', 'c'))
    """

    generators: tuple[Rotation, ...]

    @property
    def order(self) -> int:
        """The number of elements, the product of the generators' orders."""
        result = 1
        for rotation in self.generators:
            result *= rotation.order
        return result

    def representatives(self, compute_nodes: tuple[str, ...]) -> frozenset[str]:
        """The compute nodes that come first (in ``compute_nodes``) among their orbit."""
        seen: set[str] = set()
        first = set()
        for v in compute_nodes:
            if v in seen:
                continue
            first.add(v)
            orbit = [v]
            seen.add(v)
            for node in orbit:
                for rotation in self.generators:
                    w = rotation.images.get(node, node)
                    if w not in seen:
                        seen.add(w)
                        orbit.append(w)
        return frozenset(first)

    def elements(self, size: int, index: Mapping[str, int]) -> Any:
        """Every element as an array of node indices (``size`` nodes), mixed radix with
        the first generator's power fastest; element 0 is the identity."""
        import numpy as np

        identity = np.arange(size, dtype=np.int64)
        result = [identity]
        for rotation in self.generators:
            step = identity.copy()
            for a, b in rotation.images.items():
                step[index[a]] = index[b]
            layer, grown = result, list(result)
            for _ in range(rotation.order - 1):
                layer = [step[p] for p in layer]
                grown += layer
            result = grown
        return result

    def expand(self, trees: Sequence[Tree], compute_nodes: Sequence[str]) -> tuple[Tree, ...]:
        """``trees`` under every element, ordered by root (stably).

        Image edges with equal ends and path are one shared object. Vectorised:
        every element maps all representatives' edges at once (node indices), and
        an edge's image is looked up among the distinct edges made so far by its
        path's index code, so the cost per tree edge is a few array operations.
        """
        import numpy as np

        names: dict[str, int] = {}
        for v in compute_nodes:
            names.setdefault(v, len(names))
        for rotation in self.generators:
            for v in rotation.images:
                names.setdefault(v, len(names))
        flat = [edge for tree in trees for edge in tree.edges]
        for edge in flat:
            for v in edge.path:
                names.setdefault(v, len(names))
        for tree in trees:
            names.setdefault(tree.root, len(names))
        ids = list(names)
        size = len(ids)
        longest = max((len(e.path) for e in flat), default=2)
        if (size + 1) ** longest >= 2**62:  # codes would overflow: map edge by edge
            return self._expand_slowly(trees, compute_nodes)
        paths = np.full((len(flat), longest), size, dtype=np.int64)  # size pads short paths
        for i, edge in enumerate(flat):
            paths[i, : len(edge.path)] = [names[v] for v in edge.path]
        ends = np.array([[names[e.src], names[e.dst]] for e in flat], dtype=np.int64).reshape(-1, 2)
        roots = np.array([names[t.root] for t in trees], dtype=np.int64)
        bounds = np.cumsum([0] + [len(t.edges) for t in trees]).tolist()
        scale = (size + 1) ** np.arange(longest + 2, dtype=np.int64)
        known = np.empty(0, dtype=np.int64)
        made = np.empty(0, dtype=object)
        result = []
        for element in self.elements(size, names):
            padded = np.append(element, size)
            image = padded[paths]
            mapped = element[ends]
            code = image @ scale[:longest] + mapped[:, 0] * scale[longest]
            code = code * (size + 1) + mapped[:, 1]
            where = np.searchsorted(known, code).clip(0, max(len(known) - 1, 0))
            missing = known[where] != code if len(known) else np.ones(len(code), dtype=bool)
            if missing.any():
                fresh, first = np.unique(code[missing], return_index=True)
                rows = np.flatnonzero(missing)[first]
                edges = np.empty(len(fresh), dtype=object)
                edges[:] = [
                    TreeEdge(
                        ids[mapped[i, 0]],
                        ids[mapped[i, 1]],
                        tuple(ids[x] for x in image[i] if x < size),
                    )
                    for i in rows.tolist()
                ]
                known = np.concatenate((known, fresh))
                order = np.argsort(known, kind="stable")
                known, made = known[order], np.concatenate((made, edges))[order]
                where = np.searchsorted(known, code)
            edges = made[where].tolist()
            for t, tree in enumerate(trees):
                result.append(
                    Tree(
                        ids[element[roots[t]]], tree.chunks, tuple(edges[bounds[t] : bounds[t + 1]])
                    )
                )
        position = {v: i for i, v in enumerate(compute_nodes)}
        result.sort(key=lambda t: position.get(t.root, -1))
        return tuple(result)

    def _expand_slowly(
        self, trees: Sequence[Tree], compute_nodes: Sequence[str]
    ) -> tuple[Tree, ...]:
        result = tuple(trees)
        for rotation in self.generators:
            result = rotation.expand(result, compute_nodes)
        return result


class ImageTrees(Sequence[Tree]):
    """The trees of a compact schedule: representatives' trees and all their images.

    A sequence equal to ``group.expand(representatives, compute_nodes)``, which is
    computed only when a tree is first looked at (its length is known without it:
    every element of the group maps every representative tree). Writers and the
    verifier read :attr:`representatives` and :attr:`group` instead of expanding.

    Examples
    --------
    >>> swap = Rotation(2, {"a": "b", "b": "a"})
    >>> trees = ImageTrees((Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),), swap, ("a", "b"))
    >>> len(trees), trees.expanded
    (2, False)
    >>> trees[1].root, trees.expanded
    ('b', True)
    >>> trees == swap.expand(trees.representatives, ("a", "b"))
    True
    """

    __slots__ = ("representatives", "group", "compute_nodes", "_trees")

    def __init__(
        self,
        representatives: Sequence[Tree],
        group: Rotation | Rotations,
        compute_nodes: Sequence[str],
    ) -> None:
        self.representatives = tuple(representatives)
        self.group = group
        self.compute_nodes = tuple(compute_nodes)
        self._trees: tuple[Tree, ...] | None = None

    @property
    def expanded(self) -> bool:
        """Whether the images have been made (by a caller that walked the trees)."""
        return self._trees is not None

    def _all(self) -> tuple[Tree, ...]:
        if self._trees is None:
            self._trees = self.group.expand(self.representatives, self.compute_nodes)
        return self._trees

    def __len__(self) -> int:
        return len(self.representatives) * self.group.order

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __iter__(self) -> Any:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ImageTrees) and (
            other.representatives == self.representatives
            and other.group == self.group
            and other.compute_nodes == self.compute_nodes
        ):
            return True
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return self._all() == tuple(other)

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return (
            f"ImageTrees({len(self.representatives)} representative trees x "
            f"{self.group.order} elements)"
        )

    def __reduce__(self) -> Any:  # pickled compact, whether expanded or not
        return (ImageTrees, (self.representatives, self.group, self.compute_nodes))


@dataclass(frozen=True)
class RoutePath:
    """``chunks`` of a pair's ``k`` chunks sent along ``path`` (node ids, source first)."""

    chunks: int
    path: tuple[str, ...]


@dataclass(frozen=True)
class Route:
    """How the all-to-all piece from ``src`` to ``dst`` travels: its ``k`` chunks on ``paths``."""

    src: str
    dst: str
    paths: tuple[RoutePath, ...]


@dataclass(frozen=True)
class Schedule:
    """A collective schedule over a topology.

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`. For reduce-scatter and reduce the trees are
        stored in broadcast direction and run in reverse (aggregation toward the root).
    topology : str
        The topology's name (a built-in spec or the file's name).
    compute_nodes : tuple of str
        The compute nodes the schedule serves.
    k : int
        Chunks per shard.
    trees : tuple of Tree
        Or an :class:`ImageTrees` (a compact schedule: representatives' trees and
        their images under ``rotation``, made only when walked).
    cut_ratio : Fraction, optional
        The optimal cut ratio r* of the topology (the lower bound).
    time_factor : Fraction, optional
        The schedule's achieved time factor (equals ``cut_ratio`` when optimal).
    root : str, optional
        The root of a broadcast or reduce.
    topology_hash : str, optional
        :attr:`Topology.content_hash` of the topology the schedule was built for;
        :func:`check_schedule_topology` refuses another topology.
    stats : dict
        Free-form numbers about the construction (tree count, heights, seconds); a
        file holds only those in :data:`FILE_STATS` (the ones a reader can check) and
        :data:`ORDER_STATS` (how to run it).
    routes : tuple of Route
        The routes of an all-to-all (which has no trees); empty otherwise.
    rotation : Rotation, optional
        When the trees are the images of the representatives' (the trees rooted at
        :meth:`Rotation.representatives`) under the rotation's powers: the file
        holds only those and the rotation (written so only if it checks out).
    stated_algbw : float, optional
        The ``algbw`` a schedule file states (read back only so that
        :func:`~optcoll.verify.schedule.verify_schedule` can judge it; files are
        written with the one :attr:`algbw` computes).
    """

    collective: str
    topology: str
    compute_nodes: tuple[str, ...]
    k: int
    trees: tuple[Tree, ...] | ImageTrees
    cut_ratio: Fraction | None = None
    time_factor: Fraction | None = None
    root: str | None = None
    topology_hash: str | None = field(default=None, compare=False)
    stats: Mapping[str, Any] = field(default_factory=dict, compare=False)
    routes: tuple[Route, ...] = ()
    rotation: Rotation | Rotations | None = field(default=None, compare=False, repr=False)
    stated_algbw: float | None = field(default=None, compare=False, repr=False)

    def __repr__(self) -> str:
        factor = "" if self.time_factor is None else f", time factor {self.time_factor}"
        root = "" if self.root is None else f" from {self.root}"
        parts = f"{len(self.routes)} routes" if self.routes else f"{len(self.trees)} trees"
        return (
            f"Schedule({self.collective}{root} on {self.topology!r}: k = {self.k}, {parts}{factor})"
        )

    def _repr_html_(self) -> str:
        from html import escape

        return f"<code>{escape(repr(self))}</code>"

    @property
    def algbw(self) -> float | None:
        """Message size over time, in bandwidth units; None when the time factor is unknown.

        For allgather, reduce-scatter and allreduce the time for a message of M is
        ``(M / N) * time_factor`` (each node's shard is M/N), so algbw = N / time_factor.
        For broadcast and reduce the root's whole message M travels, the time is
        ``M * time_factor``, and algbw = 1 / time_factor.
        """
        if self.time_factor is None:
            return None
        if self.collective in ("broadcast", "reduce"):
            return float(1 / self.time_factor)
        return float(len(self.compute_nodes) / self.time_factor)

    def to_dict(self) -> dict[str, Any]:
        """The schedule-file dictionary (JSON-ready, exact ratios as
        :func:`~optcoll.core.rational.fraction_text` strings: ``"p/q"``, an integer as ``"p"``)."""
        data: dict[str, Any] = {
            "format": "optcoll-schedule",
            "version": SCHEDULE_VERSION,
            "collective": self.collective,
            "topology": self.topology,
            **({} if self.topology_hash is None else {"topology_hash": self.topology_hash}),
            "compute_nodes": list(self.compute_nodes),
            "k": self.k,
        }
        if self.root is not None:
            data["root"] = self.root
        if self.cut_ratio is not None:
            data["cut_ratio"] = fraction_text(self.cut_ratio)
        if self.time_factor is not None:
            data["time_factor"] = fraction_text(self.time_factor)
        algbw = self.algbw
        if algbw is not None:
            data["algbw"] = round(algbw, 3)
        written = FILE_STATS | ORDER_STATS
        stats = {name: value for name, value in self.stats.items() if name in written}
        if stats:
            data["stats"] = stats
        if self.collective == "alltoall":
            data["routes"] = [
                {
                    "src": r.src,
                    "dst": r.dst,
                    "paths": [{"chunks": p.chunks, "path": list(p.path)} for p in r.paths],
                }
                for r in self.routes
            ]
            return data
        trees: Sequence[Tree] = self.trees
        if isinstance(trees, ImageTrees):  # compact by construction: never expanded here
            data.update(_group_field(trees.group))
            trees = trees.representatives
        elif self.rotation is not None:
            first = self.rotation.representatives(self.compute_nodes)
            representatives = [t for t in trees if t.root in first]
            if self.rotation.expand(representatives, self.compute_nodes) == trees:
                data.update(_group_field(self.rotation))
                trees = tuple(representatives)
        data["trees"] = [
            {
                "root": t.root,
                "chunks": t.chunks,
                "edges": [{"src": e.src, "dst": e.dst, "path": list(e.path)} for e in t.edges],
            }
            for t in trees
        ]
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Schedule:
        """Parse a schedule-file dictionary; structural problems raise :class:`ScheduleError`.

        Only the shape is checked here (fields, types); whether the trees are
        valid for a topology is :func:`optcoll.verify.schedule.verify_schedule`'s job.
        """
        if not isinstance(data, Mapping):
            raise ScheduleError(f"a schedule must be a mapping, got {type(data).__name__}")
        if "nodes" in data and "links" in data:
            raise ScheduleError(
                "this is a topology file (it has 'nodes' and 'links'), not a schedule: give the "
                "topology first, the schedule second (optcoll verify TOPO SCHEDULE)"
            )
        _reject_unknown(data, _TOP_FIELDS, "schedule")
        if data.get("format", "optcoll-schedule") != "optcoll-schedule":
            raise ScheduleError(
                f"field 'format' must be 'optcoll-schedule', got {data['format']!r}"
            )
        if data.get("version", SCHEDULE_VERSION) != SCHEDULE_VERSION:
            raise ScheduleError(
                f"schedule version {data['version']!r} is not supported (expected {SCHEDULE_VERSION})"
            )
        for key in ("collective", "topology", "compute_nodes", "k"):
            if key not in data:
                raise ScheduleError(f"schedule is missing the required field {key!r}")
        collective = canonical_collective(data["collective"])
        topology_hash = data.get("topology_hash")
        if topology_hash is not None and not isinstance(topology_hash, str):
            raise ScheduleError(f"field 'topology_hash' must be a string, got {topology_hash!r}")
        body, other = ("routes", "trees") if collective == "alltoall" else ("trees", "routes")
        if body not in data:
            raise ScheduleError(
                f"{a_collective(collective)} schedule is missing the required field {body!r}"
            )
        if other in data:
            raise ScheduleError(f"{a_collective(collective)} schedule has {body!r}, not {other!r}")
        k = data["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ScheduleError(f"field 'k' must be a positive integer, got {k!r}")
        nodes = data["compute_nodes"]
        if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
            raise ScheduleError("field 'compute_nodes' must be a list of node id strings")
        if not isinstance(data[body], list):
            raise ScheduleError(f"field {body!r} must be a list")
        if not isinstance(data.get("stats", {}), Mapping):
            raise ScheduleError(f"field 'stats' must be a mapping, got {data['stats']!r}")
        if data.get("root") is not None and not isinstance(data["root"], str):
            raise ScheduleError(f"field 'root' must be a node id string, got {data['root']!r}")
        trees: tuple[Tree, ...] | ImageTrees
        trees = tuple(_parse_tree(i, t) for i, t in enumerate(data.get("trees", [])))
        rotation: Rotation | Rotations | None = None
        if "rotation" in data and "rotations" in data:
            raise ScheduleError("a schedule has 'rotation' or 'rotations', not both")
        if "rotations" in data:
            rotation = _parse_rotations(data["rotations"], len(nodes))
            trees = ImageTrees(trees, rotation, nodes)
        if "rotation" in data:
            entry = data["rotation"]
            if not isinstance(entry, Mapping):
                raise ScheduleError("field 'rotation' must be a mapping with 'order' and 'images'")
            _reject_unknown(entry, {"order", "images"}, "rotation")
            rotation = Rotation.checked(entry.get("order"), entry.get("images"))
            if rotation.order > len(nodes):  # a free action on the compute nodes is no longer
                raise ScheduleError(
                    f"rotation 'order' {rotation.order} exceeds the {len(nodes)} compute nodes"
                )
            trees = ImageTrees(trees, rotation, nodes)
        routes = tuple(_parse_route(i, r) for i, r in enumerate(data.get("routes", [])))
        algbw = data.get("algbw")
        if algbw is not None and (
            isinstance(algbw, bool) or not isinstance(algbw, int | float) or not algbw >= 0
        ):
            raise ScheduleError(f"field 'algbw' must be a number >= 0, got {algbw!r}")
        return cls(
            collective=collective,
            topology=str(data["topology"]),
            compute_nodes=tuple(nodes),
            k=k,
            trees=trees,
            cut_ratio=_parse_ratio(data.get("cut_ratio"), "cut_ratio"),
            time_factor=_parse_ratio(data.get("time_factor"), "time_factor"),
            root=data.get("root"),
            topology_hash=topology_hash,
            stats=dict(data.get("stats", {})),
            routes=routes,
            rotation=rotation,
            stated_algbw=algbw,
        )


class Stamped(Protocol):
    """What :func:`check_schedule_topology` reads: a schedule's topology name and hash."""

    @property
    def topology(self) -> str: ...

    @property
    def topology_hash(self) -> str | None: ...


def check_schedule_topology(schedule: Stamped, topology: Topology, source: str = "") -> None:
    """Refuse ``topology`` if ``schedule`` records another topology's content hash.

    A schedule written by optcoll records :attr:`Topology.content_hash` of the
    topology it was built for; a schedule without it (written by hand or by an
    older optcoll) is accepted.

    Raises
    ------
    TopologyMismatchError
        The hashes differ; the message names both topologies and ``source``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> s = Schedule("allgather", "ring:4", (), 1, (), topology_hash=build("ring:4").content_hash)
    >>> check_schedule_topology(s, build("ring:4"))
    >>> check_schedule_topology(s, build("ring:5"))
    Traceback (most recent call last):
    ...
    optcoll.exceptions.TopologyMismatchError: the schedule was built for topology 'ring:4' ...
    """
    if schedule.topology_hash is None or schedule.topology_hash == topology.content_hash:
        return
    what = f"schedule {source}" if source else "the schedule"
    raise TopologyMismatchError(
        f"{what} was built for topology {schedule.topology!r} (content hash "
        f"{schedule.topology_hash}), but topology {topology.name!r} has content hash "
        f"{topology.content_hash}: its nodes or link bandwidths differ; give the topology "
        "the schedule was built for"
    )


def _group_field(group: Rotation | Rotations) -> dict[str, Any]:
    """The schedule file's ``rotation`` (one generator) or ``rotations`` field."""
    if isinstance(group, Rotation):
        return {"rotation": {"order": group.order, "images": dict(group.images)}}
    return {"rotations": [{"order": r.order, "images": dict(r.images)} for r in group.generators]}


def _parse_tree(index: int, entry: Any) -> Tree:
    where = f"trees[{index}]"
    if not isinstance(entry, Mapping):
        raise ScheduleError(f"{where} must be a mapping")
    _reject_unknown(entry, _TREE_FIELDS, where)
    for key in ("root", "chunks", "edges"):
        if key not in entry:
            raise ScheduleError(f"{where} is missing the required field {key!r}")
    chunks = entry["chunks"]
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise ScheduleError(f"{where}: 'chunks' must be a positive integer, got {chunks!r}")
    if not isinstance(entry["edges"], list):
        raise ScheduleError(f"{where}: 'edges' must be a list")
    edges = [parse_tree_edge(e, f"{where}.edges[{j}]") for j, e in enumerate(entry["edges"])]
    return Tree(str(entry["root"]), chunks, tuple(edges))


def parse_tree_edge(entry: Any, where: str) -> TreeEdge:
    """A tree edge from its file form ``{"src", "dst", "path"}`` (``path`` defaults to
    the direct link); ``where`` names it in the error.

    Raises
    ------
    ScheduleError
        Not a mapping, an unknown field, a ``src``/``dst`` that is not a string, or a
        ``path`` that is not a list of strings.

    Examples
    --------
    >>> parse_tree_edge({"src": "a", "dst": "b"}, "edge")
    TreeEdge(src='a', dst='b', path=('a', 'b'))
    """
    if not isinstance(entry, Mapping):
        raise ScheduleError(f"{where} must be a mapping")
    _reject_unknown(entry, _EDGE_FIELDS, where)
    for key in ("src", "dst"):
        if not isinstance(entry.get(key), str):
            raise ScheduleError(f"{where}: {key!r} must be a node id string")
    path = entry.get("path", [entry["src"], entry["dst"]])
    if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
        raise ScheduleError(f"{where}: 'path' must be a list of node id strings")
    return TreeEdge(entry["src"], entry["dst"], tuple(path))


def _parse_rotations(entries: Any, compute: int) -> Rotations:
    """The ``rotations`` field: a non-empty list of ``{"order", "images"}`` generators
    whose orders multiply to at most the number of compute nodes."""
    if not isinstance(entries, list) or not entries:
        raise ScheduleError("field 'rotations' must be a non-empty list of rotations")
    generators = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ScheduleError(f"rotations[{i}] must be a mapping with 'order' and 'images'")
        _reject_unknown(entry, {"order", "images"}, f"rotations[{i}]")
        generators.append(Rotation.checked(entry.get("order"), entry.get("images")))
    rotations = Rotations(tuple(generators))
    if rotations.order > compute:  # a free action on the compute nodes is no larger
        raise ScheduleError(
            f"the rotations' orders multiply to {rotations.order}, more than the {compute} "
            "compute nodes"
        )
    return rotations


def _parse_route(index: int, entry: Any) -> Route:
    where = f"routes[{index}]"
    if not isinstance(entry, Mapping):
        raise ScheduleError(f"{where} must be a mapping")
    _reject_unknown(entry, _ROUTE_FIELDS, where)
    for key in ("src", "dst"):
        if not isinstance(entry.get(key), str):
            raise ScheduleError(f"{where}: {key!r} must be a node id string")
    if not isinstance(entry.get("paths"), list):
        raise ScheduleError(f"{where}: 'paths' must be a list")
    paths = []
    for j, p in enumerate(entry["paths"]):
        pwhere = f"{where}.paths[{j}]"
        if not isinstance(p, Mapping):
            raise ScheduleError(f"{pwhere} must be a mapping")
        _reject_unknown(p, _ROUTE_PATH_FIELDS, pwhere)
        chunks = p.get("chunks")
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
            raise ScheduleError(f"{pwhere}: 'chunks' must be a positive integer, got {chunks!r}")
        path = p.get("path")
        if not isinstance(path, list) or not all(isinstance(v, str) for v in path):
            raise ScheduleError(f"{pwhere}: 'path' must be a list of node id strings")
        paths.append(RoutePath(chunks, tuple(path)))
    return Route(entry["src"], entry["dst"], tuple(paths))


def _reject_unknown(entry: Mapping[str, Any], allowed: set[str], where: str) -> None:
    for key in entry:
        if key not in allowed:
            raise ScheduleError(f"{where} has unknown field {key!r}; allowed: {sorted(allowed)}")


def _parse_ratio(text: Any, what: str) -> Fraction | None:
    if text is None:
        return None
    try:
        value = parse_fraction(str(text))
    except ValueError:
        raise ScheduleError(
            f"field {what!r} must be an exact ratio such as '3/65', got {text!r}"
        ) from None
    return value
