"""The routing model every baseline shares: each logical hop on a maximum-bandwidth path
(fewest hops breaking ties); intermediate nodes only forward; the loads of all hops on a
link add up.

Examples
--------
>>> from optcoll.topologies import build
>>> Router(build("ring:4")).arcs("n0", "n2")
[('n0', 'n1'), ('n1', 'n2')]
"""

from __future__ import annotations

import copy
import heapq
import itertools
import math
import re
from collections.abc import Iterable
from fractions import Fraction

from optcoll.core.cost import path_latency
from optcoll.core.topology import Topology

__all__ = [
    "widest_paths",
    "spread_paths",
    "Router",
    "max_ratio",
    "equal_boxes",
    "torus_shape",
    "grid_lines",
    "grid_axes",
]

Arc = tuple[str, str]


def widest_paths(
    topology: Topology,
    source: str,
    target: str | None = None,
    out: dict[str, list[tuple[str, int]]] | None = None,
) -> dict[str, tuple[str, ...]]:
    """Maximum-bandwidth paths from ``source`` to every node (fewest hops, then
    lexicographically smallest, breaking ties). Deterministic. With ``target``, the search
    stops once its path is final (the paths found so far are those of the full search).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> widest_paths(build("dgx-a100:2"), "b0.gpu0")["b1.gpu0"]
    ('b0.gpu0', 'b0.nic0', 'ib0', 'b1.nic0', 'b1.gpu0')
    """
    if out is None:
        out = out_arcs(topology)
    best: dict[str, tuple[str, ...]] = {}
    heap: list[tuple[int, int, tuple[str, ...]]] = [(0, 0, (source,))]
    while heap:
        neg_width, hops, path = heapq.heappop(heap)
        node = path[-1]
        if node in best:
            continue
        best[node] = path
        if node == target:
            break
        width = -neg_width if hops else None
        for nxt, c in out.get(node, ()):
            if nxt not in best:
                w = c if width is None else min(width, c)
                heapq.heappush(heap, (-w, hops + 1, path + (nxt,)))
    return best


def spread_paths(
    topology: Topology,
    source: str,
    out: dict[str, list[tuple[str, int]]] | None = None,
) -> dict[str, tuple[str, ...]]:
    """Paths from ``source`` as wide and as short as :func:`widest_paths`'s, spread over
    the links as if ``source`` sent one message to every compute node at once: the
    compute nodes are routed one after another (fewest hops first, then by rank after
    the source's), each on a least-loaded of its widest fewest-hop paths given the paths
    routed before it. Deterministic.

    A link's load is the messages on it over its bandwidth. The path to a target is
    chosen hop by hop from the source: each node on the target's widest fewest-hop paths
    takes, of its predecessors on them (``k`` of them, in name order), the one whose
    chosen path extended by the link between them has the least busiest load (counting
    this message), then the least sum of loads; of tied predecessors the first from the
    ``(i + j) mod k``-th on (cyclically), ``i`` the source's rank and ``j`` the target's
    (their indices among the compute nodes). So a node's messages spread over its own
    links (a direct broadcast from a torus node puts at most ``ceil((N - 1) / 4)`` on
    each of its four, where :func:`widest_paths`'s one lexicographic choice puts half of
    them on one), and where nothing is loaded yet the pair ``(i, j)`` takes the ``(i + j)
    mod k``-th of parallel switches (the spines of a leaf-spine, the switches of one stage
    of a fat-tree), as ECMP hashing spreads flows. One path per pair, whatever the
    schedule: MSCCL XML, MSCCL++ plans and Chakra traces name only the two peers of a
    send, and :mod:`optcoll.sim.programs` routes them so.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("leaf-spine:leaves=2,hosts=2,spines=2")
    >>> [spread_paths(topo, "l0.h0")[t][2] for t in ("l1.h0", "l1.h1")]
    ['spine0', 'spine1']
    >>> spread_paths(topo, "l0.h1")["l1.h0"][2], widest_paths(topo, "l0.h1")["l1.h0"][2]
    ('spine1', 'spine0')
    >>> from collections import Counter
    >>> torus = build("torus:4x4")
    >>> paths = spread_paths(torus, "n1_1")
    >>> sorted(Counter(paths[t][1] for t in torus.compute_nodes if t != "n1_1").values())
    [3, 4, 4, 4]
    >>> sorted(Counter(widest_paths(torus, "n1_1")[t][1] for t in paths if t != "n1_1").values())
    [1, 2, 4, 8]
    """
    if out is None:
        out = out_arcs(topology)
    widest = widest_paths(topology, source, out=out)
    # each node's predecessors on its widest fewest-hop paths, in name order
    width: dict[str, float] = {source: math.inf}
    for node, path in widest.items():
        if len(path) > 1:
            width[node] = min(width[path[-2]], dict(out[path[-2]])[node])
    # each node's predecessors on its widest fewest-hop paths (in name order) and the
    # links from them; a link's load in units of 1 / lcm of the capacities
    ties: dict[str, list[tuple[str, Arc]]] = {}
    weight: dict[Arc, int] = {}  # one message's load
    scale = math.lcm(*(c for arcs in out.values() for _, c in arcs))
    for u in sorted(out):
        if u not in widest:
            continue
        for v, c in out[u]:
            if (
                v in widest
                and len(widest[v]) == len(widest[u]) + 1
                and min(width[u], c) == width[v]
            ):
                ties.setdefault(v, []).append((u, (u, v)))
                weight[(u, v)] = scale // c
    compute = topology.compute_nodes
    rank = {v: r for r, v in enumerate(compute)}
    count = len(compute)
    first = rank.get(source, 0)
    targets = sorted(
        (t for t in compute if t != source and t in widest),
        key=lambda t: (len(widest[t]), (rank[t] - first) % count),
    )
    after = dict(weight)  # each link's load once one more message takes it
    found = dict(widest)
    for target in targets:
        # the nodes on the target's widest fewest-hop paths, by hops from the target
        levels, seen = [[target]], {target}
        while levels[-1][0] != source:
            level = []
            for v in levels[-1]:
                for u, _ in ties[v]:
                    if u not in seen:
                        seen.add(u)
                        level.append(u)
            levels.append(level)
        turn = first + rank[target]
        # (busiest, total) load of the path chosen to each node
        label: dict[str, tuple[float, float]] = {source: (0, 0)}
        before: dict[str, tuple[str, Arc]] = {}
        for level in reversed(levels[:-1]):
            for v in level:
                options = ties[v]
                ways = len(options)
                best = (math.inf, math.inf)
                for k in range(turn, turn + ways):  # from the (turn mod ways)-th on
                    u, arc = options[k % ways]
                    busiest, total = label[u]
                    now = after[arc]
                    extended = (busiest if busiest > now else now, total + now)
                    if extended < best:
                        best, before[v] = extended, options[k % ways]
                label[v] = best
        back, node = [target], target
        while node != source:
            node, arc = before[node]
            after[arc] += weight[arc]
            back.append(node)
        path = tuple(reversed(back))
        found[target] = path
    return found


def out_arcs(topology: Topology) -> dict[str, list[tuple[str, int]]]:
    """``node -> [(head, integer capacity), ...]``: the integers order as the capacities."""
    out: dict[str, list[tuple[str, int]]] = {}
    for (u, v), c in topology.integer_capacities()[0].items():
        out.setdefault(u, []).append((v, c))
    return out


class _Paths(dict[str, dict[str, tuple[str, ...]]]):
    """``source -> widest_paths(topology, source)``, each made when first looked up (a
    ring on 1,024 hosts needs few sources' paths, not every one's)."""

    def __init__(
        self,
        topology: Topology,
        made: dict[str, dict[str, tuple[str, ...]]],
        out: dict[str, list[tuple[str, int]]],
    ) -> None:
        super().__init__(made)
        self.topology = topology
        self.out = out

    def __missing__(self, source: str) -> dict[str, tuple[str, ...]]:
        if not self.topology.is_compute(source):
            raise KeyError(source)
        paths = self[source] = widest_paths(self.topology, source, out=self.out)
        return paths


class Router:
    """Widest paths between compute nodes, computed once per source (when first used)."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._out = out_arcs(topology)
        self.paths: dict[str, dict[str, tuple[str, ...]]] = _Paths(topology, {}, self._out)
        self._arcs: dict[tuple[str, str], list[Arc]] = {}
        self._pairs: dict[tuple[str, str], tuple[str, ...]] = {}

    def path(self, a: str, b: str) -> tuple[str, ...]:
        """``paths[a][b]``, searched from ``a`` only as far as ``b`` when ``a``'s paths
        are not made yet."""
        if a in self.paths:
            return self.paths[a][b]
        if (a, b) not in self._pairs:
            self._pairs[(a, b)] = widest_paths(self.topology, a, b, self._out)[b]
        return self._pairs[(a, b)]

    def arcs(self, a: str, b: str) -> list[Arc]:
        key = (a, b)
        if key not in self._arcs:
            path = self.paths[a][b]
            self._arcs[key] = list(zip(path, path[1:], strict=False))
        return self._arcs[key]

    def direct(self, hops: Iterable[tuple[str, str]]) -> Router:
        """A copy that routes every hop ``(a, b)`` of ``hops`` on its own link ``a -> b``
        (e.g. a ring's hops between neighbours), every other hop as before."""
        routed = copy.copy(self)
        made = {c: dict(p) for c, p in self.paths.items()}
        routed.paths = _Paths(self.topology, made, self._out)
        routed._arcs, routed._pairs = {}, {}
        for a, b in hops:
            routed.paths[a][b] = (a, b)
        return routed

    def latency(self, a: str, b: str, latency: dict[Arc, Fraction]) -> Fraction:
        return path_latency(self.paths[a][b], latency)


def max_ratio(loads: dict[Arc, Fraction], topology: Topology) -> Fraction:
    """The largest load over bandwidth of any link in ``loads``."""
    capacity = topology.capacity
    return max(load / capacity[arc] for arc, load in loads.items())


def equal_boxes(topology: Topology) -> list[list[str]] | None:
    """The compute nodes grouped in boxes by ``Node.group``; None unless there are two or
    more boxes, all of the same size, and every compute node is in one."""
    groups: dict[str | None, list[str]] = {}
    for c in topology.compute_nodes:
        groups.setdefault(topology.node[c].group, []).append(c)
    boxes = list(groups.values())
    if None in groups or len(boxes) < 2 or len({len(b) for b in boxes}) != 1:
        return None
    return boxes


_COORDINATES = re.compile(r"n(\d+(?:_\d+)*)")


def grid_lines(topology: Topology) -> list[list[str]] | None:
    """The lines of the grid of two or more dimensions the compute nodes form by name
    (``n{i}_{j}[_{k}]``, row-major, as the built-in ``torus`` and ``mesh`` name them): the
    nodes grouped by every coordinate but the last, each line in order; None for other
    names or a grid with a dimension of 1. The dimension-wise step schedules run inside
    these lines, then across them (:mod:`optcoll.schedules.baselines.hierarchical_steps`);
    the links are not checked here: a step schedule is valid on any grouping, and the
    simulator prices it on the links there are.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> grid_lines(build("mesh:2x3"))
    [['n0_0', 'n0_1', 'n0_2'], ['n1_0', 'n1_1', 'n1_2']]
    >>> grid_lines(build("ring:4")), grid_lines(build("dgx-a100:2"))
    (None, None)
    """
    shape = _row_major_shape(topology)
    if shape is None or len(shape) < 2 or min(shape) < 2:
        return None
    names = list(topology.compute_nodes)
    width = shape[-1]
    return [names[i : i + width] for i in range(0, len(names), width)]


def grid_axes(topology: Topology) -> list[list[list[str]]] | None:
    """Per dimension of the grid the compute nodes form by name (as :func:`grid_lines`
    reads it), the lines along that dimension: the nodes grouped by every other
    coordinate, each line in order of its own coordinate, the lines in row-major order of
    the others (so the ``j``-th nodes of the lines of one dimension are the hyperplane
    where its coordinate is ``j``). The last dimension's lines are :func:`grid_lines`.
    None where :func:`grid_lines` is None.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> grid_axes(build("mesh:2x3"))
    [[['n0_0', 'n1_0'], ['n0_1', 'n1_1'], ['n0_2', 'n1_2']], [['n0_0', 'n0_1', 'n0_2'], ['n1_0', 'n1_1', 'n1_2']]]
    """
    shape = _row_major_shape(topology)
    if shape is None or len(shape) < 2 or min(shape) < 2:
        return None
    nodes = dict(
        zip(itertools.product(*(range(d) for d in shape)), topology.compute_nodes, strict=True)
    )
    axes = []
    for axis, size in enumerate(shape):
        others = itertools.product(*(range(d) for i, d in enumerate(shape) if i != axis))
        axes.append(
            [[nodes[rest[:axis] + (j,) + rest[axis:]] for j in range(size)] for rest in others]
        )
    return axes


def _row_major_shape(topology: Topology) -> tuple[int, ...] | None:
    """The grid shape whose points, in row-major order, the compute nodes' names
    ``n{i}[_{j}[_{k}]]`` list in declaration order; None if they do not."""
    points = []
    for node in topology.compute_nodes:
        match = _COORDINATES.fullmatch(node)
        if match is None:
            return None
        points.append(tuple(int(c) for c in match.group(1).split("_")))
    if len({len(p) for p in points}) != 1:
        return None
    shape = tuple(max(c) + 1 for c in zip(*points, strict=False))
    return shape if points == list(itertools.product(*(range(d) for d in shape))) else None


def torus_shape(topology: Topology) -> tuple[int, ...] | None:
    """The shape of the torus (or ring) the compute nodes form in declaration order, else None.

    The compute nodes must be named ``n{i}[_{j}[_{k}]]`` in row-major order of a grid (as
    the built-in ``ring`` and ``torus`` name them) and every node must link to its
    neighbours ``+-1 (mod size)`` along every dimension: the links the log-step schedules
    of a torus (multiport Swing) are laid out on. A mesh (no wrap-around) is not a torus.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> torus_shape(build("torus:4x2x2")), torus_shape(build("ring:6"))
    ((4, 2, 2), (6,))
    >>> torus_shape(build("mesh:4x4")), torus_shape(build("hypercube:3"))
    (None, None)
    """
    shape = _row_major_shape(topology)
    if shape is None or topology.num_compute < 2:
        return None
    points = itertools.product(*(range(d) for d in shape))
    nodes = dict(zip(points, topology.compute_nodes, strict=True))
    capacity = topology.capacity
    for point, node in nodes.items():
        for axis, size in enumerate(shape):
            for step in (1, -1) if size > 1 else ():
                moved = point[:axis] + ((point[axis] + step) % size,) + point[axis + 1 :]
                if (node, nodes[moved]) not in capacity:
                    return None
    return shape
