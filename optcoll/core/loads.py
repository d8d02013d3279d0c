"""Link loads and time factors of tree schedules (bandwidth model, exact).

A tree carrying ``chunks`` of its root's ``k`` chunks puts ``chunks`` on every link
of every edge's path (walked backwards when the phase aggregates toward the root);
an all-to-all route puts each path's ``chunks`` on the path's links. A phase takes
``max over links of load / (k * bandwidth)`` per unit of data: its *time factor*.
Allreduce has two phases, every other collective one (:data:`PHASES`). This is the one computation every builder, report and picture
uses; :mod:`optcoll.verify.schedule` keeps an independent copy on purpose.

Examples
--------
>>> from optcoll.core.schedule import Tree, TreeEdge
>>> from optcoll.core.topology import Link, Node, Topology
>>> topo = Topology("t", [Node("a"), Node("b")], [Link("a", "b", 4, bidirectional=True)])
>>> tree = Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),))
>>> link_loads([tree]), phase_time_factor(topo, [tree], 2)
({('a', 'b'): 1}, Fraction(1, 8))
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from optcoll.core.schedule import Rotation, Rotations, Route, Tree
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError

__all__ = [
    "PHASES",
    "link_loads",
    "orbit_link_loads",
    "phase_time_factor",
    "route_loads",
    "routes_time_factor",
]

Arc = tuple[str, str]

#: Per collective, its phases in order: ``True`` where the trees run in reverse
#: (aggregation toward the root).
PHASES: dict[str, tuple[bool, ...]] = {
    "allgather": (False,),
    "broadcast": (False,),
    "reduce_scatter": (True,),
    "reduce": (True,),
    "allreduce": (True, False),
}


def link_loads(trees: Iterable[Tree], *, reverse: bool = False) -> dict[Arc, int]:
    """Chunks carried by every link: ``sum over trees of chunks * uses of the link``.

    With ``reverse=True`` the paths are walked backwards (aggregation toward the
    root, as in reduce-scatter and reduce). Links no tree uses are absent.

    Examples
    --------
    >>> from optcoll.core.schedule import TreeEdge
    >>> t = Tree("a", 2, (TreeEdge("a", "b", ("a", "s", "b")), TreeEdge("b", "c", ("b", "s", "c"))))
    >>> link_loads([t])[("s", "b")], link_loads([t], reverse=True)[("s", "a")]
    (2, 2)
    """
    per_path: dict[tuple[str, ...], int] = {}  # trees share paths: walk each one once
    for tree in trees:
        chunks = tree.chunks
        for edge in tree.edges:
            per_path[edge.path] = per_path.get(edge.path, 0) + chunks
    loads: dict[Arc, int] = {}
    for path, chunks in per_path.items():
        if reverse:
            path = path[::-1]
        for arc in zip(path, path[1:], strict=False):
            loads[arc] = loads.get(arc, 0) + chunks
    return loads


def phase_time_factor(
    topology: Topology,
    trees: Iterable[Tree],
    k: int,
    *,
    reverse: bool = False,
    rotation: Rotation | Rotations | None = None,
) -> Fraction:
    """Exact ``max over links of load / (k * bandwidth)`` for one phase (0 without edges).

    With ``rotation``, ``trees`` are the representatives' and the phase is made of
    their images under every element of the group (:func:`orbit_link_loads`).

    Raises
    ------
    ScheduleError
        A path uses a link the topology does not have (named).

    Examples
    --------
    >>> from optcoll.core.schedule import TreeEdge
    >>> from optcoll.core.topology import Link, Node
    >>> topo = Topology("t", [Node("a"), Node("b")], [Link("a", "b", 4, bidirectional=True)])
    >>> phase_time_factor(topo, [Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),))], 2)
    Fraction(1, 8)
    """
    what = "a reversed tree path" if reverse else "a tree path"
    hint = "; build the trees on reversed_topology(topology) for an asymmetric topology"
    loads = link_loads(trees, reverse=reverse)
    if rotation is not None:
        loads = orbit_link_loads(loads, rotation)
    return _time_factor(topology, loads, k, what, hint if reverse else "")


def orbit_link_loads(loads: dict[Arc, int], rotation: Rotation | Rotations) -> dict[Arc, int]:
    """The loads of all images of trees whose own loads are ``loads``, under ``rotation``'s group.

    The image of a tree under ``g`` puts the load of link ``b`` on ``g(b)``, so link
    ``b`` receives ``sum over g of loads[g^-1(b)]``. As ``g`` runs over the group
    ``G``, ``g^-1(b)`` runs over the orbit of ``b``, each link ``|G| / |orbit|``
    times: ``L(b) = |G| / |orbit(b)| * (sum of loads over the orbit)``. Cost
    ``O(links in the orbits * generators)``, whatever the number of images.

    Examples
    --------
    >>> from optcoll.core.schedule import Rotation
    >>> orbit_link_loads({("a", "b"): 2}, Rotation(2, {"a": "b", "b": "a"}))
    {('a', 'b'): 2, ('b', 'a'): 2}
    """
    generators = (rotation,) if isinstance(rotation, Rotation) else rotation.generators
    order = rotation.order
    result: dict[Arc, int] = {}
    for link in loads:
        if link in result:
            continue
        orbit = [link]
        seen = {link}
        for u, v in orbit:
            for g in generators:
                image = (g.images.get(u, u), g.images.get(v, v))
                if image not in seen:
                    seen.add(image)
                    orbit.append(image)
        total = sum(loads.get(b, 0) for b in orbit)
        share, left = divmod(order * total, len(orbit))
        assert left == 0, "an orbit's length divides the group's order"
        for b in orbit:
            result[b] = share
    return result


def route_loads(routes: Iterable[Route]) -> dict[Arc, int]:
    """Chunks carried by every link: ``sum over route paths of chunks * uses of the link``.

    Examples
    --------
    >>> from optcoll.core.schedule import RoutePath
    >>> route_loads([Route("a", "b", (RoutePath(2, ("a", "s", "b")),))])
    {('a', 's'): 2, ('s', 'b'): 2}
    """
    loads: dict[Arc, int] = {}
    for route in routes:
        for step in route.paths:
            for arc in zip(step.path, step.path[1:], strict=False):
                loads[arc] = loads.get(arc, 0) + step.chunks
    return loads


def routes_time_factor(topology: Topology, routes: Iterable[Route], k: int) -> Fraction:
    """Exact ``max over links of load / (k * bandwidth)`` of all-to-all routes.

    Raises
    ------
    ScheduleError
        A path uses a link the topology does not have (named).

    Examples
    --------
    >>> from optcoll.core.schedule import RoutePath
    >>> from optcoll.core.topology import Link, Node
    >>> topo = Topology("t", [Node("a"), Node("b")], [Link("a", "b", 4, bidirectional=True)])
    >>> routes_time_factor(topo, [Route("a", "b", (RoutePath(3, ("a", "b")),))], 2)
    Fraction(3, 8)
    """
    return _time_factor(topology, route_loads(routes), k, "a route path", "")


def _time_factor(
    topology: Topology, loads: dict[Arc, int], k: int, what: str, hint: str
) -> Fraction:
    capacity = topology.capacity
    worst = Fraction(0)
    for arc, load in loads.items():
        if arc not in capacity:
            raise ScheduleError(
                f"{what} uses link {arc[0]} -> {arc[1]}, which topology "
                f"{topology.name!r} does not have{hint}"
            )
        worst = max(worst, Fraction(load) / (k * capacity[arc]))
    return worst
