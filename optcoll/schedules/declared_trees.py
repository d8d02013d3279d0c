"""Allgather trees of one root per orbit of a family's declared symmetry, on the physical
topology: no logical graph, so the cost grows with the representatives' trees, not with
the number of roots.

The switch splitting of :func:`optcoll.graph.splitting.split_switches` makes a logical
graph with an arc between every two GPUs of a rail (``dgx-h100:4096``: 4,096 GPUs per
rail switch, over 10^8 arcs), and then every root is packed or one per orbit of the
logical graph's group. Here the group is the family's declared one
(:func:`optcoll.graph.family_symmetry.declared_group`: checked automorphisms, commuting,
acting freely on the compute nodes), and the trees of its representative roots are grown
directly on the physical links, every tree edge a path from a compute node through
switches only to another compute node.

**Orbit budgets.** Under a group ``G`` the images of the representatives' trees load
link ``e`` with ``|G| / |O| * L(O)``, where ``L(O)`` is the representatives' load on the
orbit ``O`` of ``e`` (:func:`optcoll.core.loads.orbit_link_loads`). With ForestColl's
capacities ``c(e) = U * caps(e)`` and ``k`` chunks per root (time factor r* exactly when
every load is at most ``c(e)``), the representatives may therefore put at most
``floor(c(O) * |O| / |G|)`` chunks on the links of ``O``: that is the orbit's budget,
and every path a tree takes spends ``mu`` (the tree's chunks) from the budget of each of
its links' orbits. Trees that stay within the budgets are, with their images, an
allgather whose time factor is at most r*, hence exactly r*: optimal among all
schedules (r* is a lower bound for every allgather).

**Growing a tree.** In rounds, one breadth-first search from all the tree's nodes at
once runs through switches over links whose orbit has budget left; at the first level
where it meets compute nodes not yet in the tree, it takes them, each on the path it met
it by while the whole path stays within the budgets, and the next round starts. Each
node's links are tried in order of their orbits' budget left, the fullest first, so a
tree spreads its paths over the orbits (taken in link order, the trees of a dragonfly
with 4 or 32 hosts per router spent some global-link orbits early and the last trees
found no way: the greedy failed there and the slow switch splitting ran). A link
whose orbit's budget falls below ``mu``, a compute node already in the tree and a switch
that leads nowhere new are struck from the search for the rest of the tree, so a round
costs ``O(links)``, and a tree as many rounds as it has levels (3 on ``dgx-h100:4096``).
Each tree may spend at most its fair share of every budget (its chunks' share of the
chunks still to pack), and a path from outside a box the tree has entered does not enter
it again; four passes try each rule on and off.
The trees of the greedy are not always completed (it is a heuristic, not Edmonds'
theorem); then :func:`declared_trees` returns ``None`` and the caller packs otherwise.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.bounds.cut_ratio import optimal_cut_ratio
>>> from optcoll.graph.family_symmetry import declared_group
>>> t = build("dgx-h100:8")
>>> b = optimal_cut_ratio(t)
>>> caps, unit = t.integer_capacities()
>>> U = b.ratio * unit
>>> trees = declared_trees(t, {e: U.numerator * c for e, c in caps.items()}, U.denominator, declared_group(t))
>>> len(trees), trees[0].root, len(trees[0].edges)
(1, 'b0.gpu0', 63)
>>> trees[0].edges[-1].path
('b7.gpu0', 'b7.nvswitch', 'b7.gpu1')
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping

from optcoll.core.schedule import Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.graph.family_symmetry import DeclaredGroup

__all__ = ["declared_trees", "link_orbits", "hop_eccentricity"]

Arc = tuple[str, str]


def link_orbits(
    topology: Topology, generators: tuple[Mapping[str, str], ...]
) -> tuple[list[Arc], list[int], list[int]]:
    """The links of ``topology`` (its capacity order), each link's orbit number under the
    group ``generators`` generate, and each orbit's size; union-find over the arcs
    ``e -> g(e)``, ``O(links * generators)``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> t = build("ring:4")
    >>> links, orbit, size = link_orbits(t, ({"n0": "n1", "n1": "n2", "n2": "n3", "n3": "n0"},))
    >>> len(links), sorted(set(orbit)), size
    (8, [0, 1], [4, 4])
    """
    links = list(topology.capacity)
    index = {arc: i for i, arc in enumerate(links)}
    parent = list(range(len(links)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for g in generators:
        get = g.get
        for i, (u, v) in enumerate(links):
            j = index[(get(u, u), get(v, v))]
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    number: dict[int, int] = {}
    orbit = [number.setdefault(find(i), len(number)) for i in range(len(links))]
    size = [0] * len(number)
    for o in orbit:
        size[o] += 1
    return links, orbit, size


def orbit_budgets(
    topology: Topology, capacity: Mapping[Arc, int], group: DeclaredGroup
) -> tuple[list[Arc], list[int], list[int]]:
    """The links (:func:`link_orbits`), each link's orbit number, and each orbit's budget:
    the chunks its links may carry (``capacity``, constant on orbits) divided among the
    ``group.order`` images of the representatives' trees.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> t = build("ring:4")
    >>> turn = {"n0": "n1", "n1": "n2", "n2": "n3", "n3": "n0"}
    >>> group = DeclaredGroup((turn,), (4,), ("n0",))
    >>> links, orbit, budget = orbit_budgets(t, dict.fromkeys(t.capacity, 3), group)
    >>> budget  # 8 links of 3 chunks in 2 orbits, among 4 images
    [3, 3]
    """
    links, orbit, size = link_orbits(topology, group.generators)
    budget = [0] * len(size)
    for i, link in enumerate(links):
        budget[orbit[i]] = capacity.get(link, 0) * size[orbit[i]] // group.order
    return links, orbit, budget


def declared_trees(
    topology: Topology,
    capacity: Mapping[Arc, int],
    chunks: int,
    group: DeclaredGroup,
) -> list[Tree] | None:
    """``chunks`` chunks of trees for every representative of ``group``, on physical paths,
    within the orbit budgets of ``capacity`` (see the module docstring), or ``None`` when
    the greedy cannot complete them.

    Parameters
    ----------
    topology : Topology
        The network (its links; ``capacity`` gives their capacities in chunks).
    capacity : Mapping
        ``link -> chunks`` it may carry (ForestColl's ``U * caps``); constant on orbits.
    chunks : int
        ``k``: chunks per root.
    group : DeclaredGroup
        The group whose images of the returned trees make the whole schedule.

    Returns
    -------
    list of Tree or None
        The representatives' trees (edges parents first), with their images a schedule
        in which every link carries at most ``capacity`` chunks.
    """
    links, orbit, budget = orbit_budgets(topology, capacity, group)
    ids = topology.node_ids
    index = {v: i for i, v in enumerate(ids)}
    compute = [topology.is_compute(v) for v in ids]
    out: list[list[tuple[int, int]]] = [[] for _ in ids]
    arc: dict[tuple[int, int], int] = {}
    for i, (u, v) in enumerate(links):
        out[index[u]].append((index[v], i))
        arc[(index[u], index[v])] = i
    n_compute = topology.num_compute
    names: dict[str | None, int] = {None: -1}
    box = [names.setdefault(topology.node[v].group, len(names) - 1) for v in ids]
    for once, across in itertools.product((True, False), (False, True)):
        trees = _all_trees(
            group, index, ids, out, arc, compute, box, orbit, list(budget), chunks, n_compute,
            once, across,
        )  # fmt: skip
        if trees is not None:
            return trees
    return None


def _all_trees(
    group: DeclaredGroup,
    index: Mapping[str, int],
    ids: tuple[str, ...],
    out: list[list[tuple[int, int]]],
    arc: Mapping[tuple[int, int], int],
    compute: list[bool],
    box: list[int],
    orbit: list[int],
    budget: list[int],
    chunks: int,
    n_compute: int,
    once: bool,
    across: bool,
) -> list[Tree] | None:
    """Every representative's trees (see :func:`declared_trees`), or ``None``. Each tree
    may spend of an orbit's budget at most its chunks' fair share: among the chunks of
    all representatives still to pack (``across``) or of its own root."""
    trees: list[Tree] = []
    to_pack = chunks * len(group.representatives)  # chunks of all roots not yet packed
    for root in group.representatives:
        left, mu = chunks, chunks
        while left:
            # this tree's fair share of every orbit's budget: ceil(budget / share) per chunk
            share = to_pack if across else left
            allowance = [min(b, mu * -(-b // share)) for b in budget]
            grown = _grow(index[root], mu, out, compute, box, orbit, allowance, n_compute, once)
            if grown is None:
                if mu == 1:
                    return None
                mu = (mu + 1) // 2
                continue
            for p in grown:
                for x, y in zip(p, p[1:], strict=False):
                    budget[orbit[arc[(x, y)]]] -= mu
            trees.append(
                Tree(
                    root,
                    mu,
                    tuple(TreeEdge(ids[p[0]], ids[p[-1]], tuple(ids[x] for x in p)) for p in grown),
                )
            )
            left -= mu
            to_pack -= mu
            mu = min(mu, left)
    return trees


def _grow(
    root: int,
    mu: int,
    out: list[list[tuple[int, int]]],
    compute: list[bool],
    box: list[int],
    orbit: list[int],
    budget: list[int],
    n_compute: int,
    once: bool,
) -> list[list[int]] | None:
    """One tree of ``mu`` chunks from ``root`` within ``budget`` (spent in place): its
    paths (node indices), parents first, or ``None``.

    Rounds of one breadth-first search from every tree node at once, through switches:
    a round takes the nearest compute nodes not in the tree (the first level at which
    any path fits the budgets), so short paths go first whichever tree node has them.
    With ``once``, a path from outside a node group (a box) the tree has entered
    already does not enter it again."""
    live = [list(adj) for adj in out]  # per tree: the out-links still worth a look
    dead = [False] * len(out)
    in_tree = [False] * len(out)
    in_tree[root] = True
    entered = {box[root]}
    members = 1
    paths: list[list[int]] = []
    sources = [root]
    while members < n_compute:
        parent: dict[int, tuple[int, int, int]] = {s: (-1, -1, s) for s in sources}
        level, joined = list(sources), list[int]()
        while level and not joined:
            ahead = []
            for x in level:
                previous, _, origin = parent[x]
                if previous >= 0 and not _prefix_within(x, parent, orbit, budget, mu):
                    continue
                adj = live[x]
                adj.sort(key=lambda a: -budget[orbit[a[1]]])  # the fullest orbits first
                i = 0
                while i < len(adj):
                    y, link = adj[i]
                    if budget[orbit[link]] < mu or (compute[y] and in_tree[y]) or dead[y]:
                        adj[i] = adj[-1]
                        adj.pop()
                        continue
                    if once and box[y] >= 0 and box[y] != box[origin] and box[y] in entered:
                        i += 1
                        continue
                    if not compute[y]:
                        if y not in parent:
                            parent[y] = (x, link, origin)
                            ahead.append(y)
                        i += 1
                        continue
                    path, need = [y, x], {orbit[link]: mu}
                    z = x
                    while z != origin:
                        z, step, _ = parent[z]
                        path.append(z)
                        need[orbit[step]] = need.get(orbit[step], 0) + mu
                    if any(budget[o] < amount for o, amount in need.items()):
                        break  # the way to x is spent (or the path meets an orbit twice)
                    for o, amount in need.items():
                        budget[o] -= amount
                    path.reverse()
                    paths.append(path)
                    in_tree[y] = True
                    entered.add(box[y])
                    members += 1
                    joined.append(y)
                    adj[i] = adj[-1]
                    adj.pop()
                if not adj and not compute[x]:
                    dead[x] = True
            level = ahead
        if not joined:
            return None
        sources = [s for s in sources if live[s]] + joined
    return paths


def _prefix_within(
    x: int, parent: Mapping[int, tuple[int, int, int]], orbit: list[int], budget: list[int], mu: int
) -> bool:
    """Whether every link on the way to ``x`` still has ``mu`` left in its orbit."""
    while True:
        x, link, _ = parent[x]
        if link < 0:
            return True
        if budget[orbit[link]] < mu:
            return False


def hop_eccentricity(topology: Topology, root: str) -> int:
    """The most compute nodes a path from ``root`` must enter to reach any compute node
    (switches relay for free): no spanning tree from ``root`` whose edges are paths
    through switches is lower. A 0-1 breadth-first search, ``O(links)``.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> hop_eccentricity(build("dgx-h100:4"), "b0.gpu0"), hop_eccentricity(build("ring:6"), "n0")
    (2, 3)
    """
    out: dict[str, list[str]] = {}
    for u, v in topology.capacity:
        out.setdefault(u, []).append(v)
    distance = {root: 0}
    ahead = deque([root])
    while ahead:
        x = ahead.popleft()
        for y in out.get(x, ()):
            step = 1 if topology.is_compute(y) else 0
            if y not in distance or distance[x] + step < distance[y]:
                distance[y] = distance[x] + step
                if step:
                    ahead.append(y)
                else:
                    ahead.appendleft(y)
    return max(distance[v] for v in topology.compute_nodes if v in distance)
