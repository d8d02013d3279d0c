"""The shallow-tree model: reduce + broadcast trees of logical depth at most 2.

A *logical* tree edge ``u -> v`` is realised by one physical path (its routing); in the
simulator it costs one step's overhead and the latencies of the links it crosses
(intermediate nodes forward without a step). For each base root ``r`` one spanning tree
is chosen: every other node is a *hub* (a child of the root) or a *leaf* (a child of a
hub), and the path of each edge is one of the candidate paths ``paths[(u, v)]``. The
trees that run are the base trees' images under every element of a group of
automorphisms (``images``: each a map of the nodes, the identity among them), each
carrying the same share of the message once up (reduce) and once down (broadcast) each
of its paths.

Variables (binary): ``y{B}_{V}_{D}``, node ``V`` at depth ``D`` of base tree ``B``;
``z{B}_{U}_{V}_{I}_{D}``, ``V`` at depth ``D`` a child of ``U`` over path ``I``. ``L``:
the busiest link's paths (all images) over its capacity, times the largest capacity;
``T``: the most paths of one base tree on one link.

    minimise  L + tie_tree T + tie_hops (links crossed by all base trees' paths) / (base trees)
    subject to  every non-root node at one depth, with one parent one level up;
                a leaf's path and its hub's together cross at most ``hop_limit`` links;
                the paths of every image on each link e: at most L c(e) / c_max;
                the paths of one base tree on each link: at most T.

``L`` is (up to the scaling) the time factor when every tree carries an equal share;
the tie-breaking terms prefer trees that cross each link once and short paths. The
time the simulator gives such trees is sensitive to which of the many optima of ``L``
is found (``docs/bounds_every_size.md``): the weights :data:`TIE_TREE` and
:data:`TIE_HOPS` are measured, not derived.

Examples
--------
>>> line = {("a", "b"): 1, ("b", "c"): 1}
>>> paths = {("b", "a"): [("b", "a")], ("b", "c"): [("b", "c")], ("a", "b"): [("a", "b")],
...          ("c", "b"): [("c", "b")], ("a", "c"): [("a", "b", "c")], ("c", "a"): [("c", "b", "a")]}
>>> identity = {v: v for v in "abc"}
>>> solved = solve_shallow_trees("abc", line, ["b"], [identity], paths, 1)
>>> solved.trees, solved.load  # both ends hang from the middle, each link used once
(((('b', 'a', ('b', 'a')), ('b', 'c', ('b', 'c'))),), Fraction(1, 1))
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import pulp

from formulations.errors import MethodError, SolveError
from formulations.solve import SolverReport, solve

__all__ = [
    "ShallowTrees",
    "build_shallow_trees",
    "solve_shallow_trees",
    "DEPTH",
    "TIE_TREE",
    "TIE_HOPS",
]

#: Most logical edges from a tree's root to any node.
DEPTH = 2

#: Weight of the most paths one base tree puts on one link.
TIE_TREE = 0.3
#: Weight of the physical hops of the base trees (per base tree).
TIE_HOPS = 0.01

Link = tuple[str, str]
Path = tuple[str, ...]


@dataclass(frozen=True)
class ShallowTrees:
    """The model's solution: per base root, its edges ``(parent, child, path)`` parents
    first; ``load`` the busiest link's paths over its capacity (times the largest
    capacity), exact; the solver's report."""

    trees: tuple[tuple[tuple[str, str, Path], ...], ...]
    load: Fraction
    report: SolverReport | None = None


def _key(link: Sequence[str]) -> Link:
    u, v = link
    return (u, v) if u <= v else (v, u)


def build_shallow_trees(
    nodes: Sequence[str],
    links: Mapping[Link, int | Fraction],
    roots: Sequence[str],
    images: Sequence[Mapping[str, str]],
    paths: Mapping[tuple[str, str], Sequence[Path]],
    hop_limit: int,
    *,
    tie_tree: float = TIE_TREE,
    tie_hops: float = TIE_HOPS,
) -> tuple[pulp.LpProblem, dict[str, tuple[int, str, str, Path]]]:
    """The model of the module docstring and, per ``z`` variable's name, its base tree,
    parent, child and path (no side effects). ``links``: undirected links (either
    order) with capacities."""
    capacity = {_key(e): c for e, c in links.items()}
    top = max(capacity.values())
    problem = pulp.LpProblem("shallow_trees", pulp.LpMinimize)
    worst = problem.add_variable("L")
    crowd = problem.add_variable("T")
    chosen: dict[str, tuple[int, str, str, Path]] = {}
    uses: dict[Link, list[tuple[pulp.LpVariable, float]]] = {e: [] for e in capacity}
    hops: list[tuple[pulp.LpVariable, float]] = []

    def add(expression: list[tuple[pulp.LpVariable, float]], sense: int, rhs: float) -> None:
        problem.addConstraint(
            pulp.LpConstraint(pulp.LpAffineExpression(expression), sense, rhs=rhs)
        )

    for b, root in enumerate(roots):
        level = {
            (v, d): problem.add_variable(f"y{b}_{v}_{d}", cat=pulp.LpBinary)
            for v in nodes
            for d in range(DEPTH + 1)
            if (v == root) == (d == 0)
        }
        z: dict[tuple[str, str, int, int], pulp.LpVariable] = {}
        for v in nodes:
            for u in nodes:
                if v == root or u == v:
                    continue
                for d in range(1, DEPTH + 1):
                    if (u, d - 1) in level:
                        for i, path in enumerate(paths[(u, v)]):
                            name = f"z{b}_{u}_{v}_{i}_{d}"
                            z[(u, v, i, d)] = problem.add_variable(name, cat=pulp.LpBinary)
                            chosen[name] = (b, u, v, tuple(path))
        add([(level[(root, 0)], 1.0)], pulp.LpConstraintEQ, 1.0)
        for v in nodes:
            if v == root:
                continue
            add([(level[(v, d)], 1.0) for d in range(1, DEPTH + 1)], pulp.LpConstraintEQ, 1.0)
            for d in range(1, DEPTH + 1):
                terms = [(var, 1.0) for key, var in z.items() if key[1] == v and key[3] == d]
                add([*terms, (level[(v, d)], -1.0)], pulp.LpConstraintEQ, 0.0)
        for (u, _, _, d), var in z.items():
            add([(var, 1.0), (level[(u, d - 1)], -1.0)], pulp.LpConstraintLE, 0.0)
        # a leaf under a hub no farther than hop_limit from the root along the tree
        for (u, v, i, d), var in z.items():
            if d == 2:
                for (_, hub, j, above), first in z.items():
                    if above == 1 and hub == u:
                        if len(paths[(u, v)][i]) + len(paths[(root, u)][j]) - 2 > hop_limit:
                            add([(var, 1.0), (first, 1.0)], pulp.LpConstraintLE, 1.0)
        own: dict[Link, list[tuple[pulp.LpVariable, float]]] = {}
        for (u, v, i, _), var in z.items():
            path = paths[(u, v)][i]
            hops.append((var, float(len(path) - 1)))
            for link in zip(path, path[1:], strict=False):
                own.setdefault(_key(link), []).append((var, 1.0))
                for image in images:
                    seen = _key((image[link[0]], image[link[1]]))
                    uses[seen].append((var, float(top / capacity[seen])))
        for terms in own.values():
            add([*terms, (crowd, -1.0)], pulp.LpConstraintLE, 0.0)
    for terms in uses.values():
        if terms:
            add([*terms, (worst, -1.0)], pulp.LpConstraintLE, 0.0)
    share = tie_hops / len(roots)
    problem.setObjective(
        pulp.LpAffineExpression(
            [(worst, 1.0), (crowd, tie_tree), *((z, h * share) for z, h in hops)]
        )
    )
    return problem, chosen


def solve_shallow_trees(
    nodes: Sequence[str],
    links: Mapping[Link, int | Fraction],
    roots: Sequence[str],
    images: Sequence[Mapping[str, str]],
    paths: Mapping[tuple[str, str], Sequence[Path]],
    hop_limit: int,
    *,
    time_limit: float | None = None,
) -> ShallowTrees:
    """Solve the model of :func:`build_shallow_trees` to optimality (zero gap).

    Raises
    ------
    MethodError
        ``depth`` below 1 or no root.
    SolveError
        HiGHS fails or hits ``time_limit`` (the model is always feasible: every node
        may hang from the root on a path of its own).
    """
    if not roots:
        raise MethodError("shallow trees need at least one root")
    start = time.perf_counter()
    problem, chosen = build_shallow_trees(nodes, links, roots, images, paths, hop_limit)
    built = time.perf_counter() - start
    result = solve(problem, time_limit=time_limit, mip_rel_gap=0.0, build_seconds=built)
    edges: list[list[tuple[int, str, str, Path]]] = [[] for _ in roots]
    for name, (b, u, v, path) in chosen.items():
        value = result.values.get(name, 0.0)
        if value > 0.5:
            if abs(value - 1) > 1e-6:
                raise SolveError(f"shallow-tree model returned a fractional z = {value}")
            edges[b].append((0, u, v, path))
    capacity = {_key(e): Fraction(c) for e, c in links.items()}
    top = max(capacity.values())
    load: dict[Link, Fraction] = {}
    trees = []
    for b, root in enumerate(roots):
        parent = {v: u for _, u, v, _ in edges[b]}
        hubs = {v for v, u in parent.items() if u == root}
        if any(u not in hubs for v, u in parent.items() if u != root):
            raise SolveError("shallow-tree model returned a tree deeper than its depth")
        # parents first: by depth, then parent, child and path
        ordered = [
            (u, v, path)
            for _, u, v, path in sorted((u != root, u, v, p) for _, u, v, p in edges[b])
        ]
        trees.append(tuple(ordered))
        for _, _, path in ordered:
            for link in zip(path, path[1:], strict=False):
                for image in images:
                    e = _key((image[link[0]], image[link[1]]))
                    load[e] = load.get(e, Fraction(0)) + top / capacity[e]
    return ShallowTrees(tuple(trees), max(load.values(), default=Fraction(0)), result.report)
