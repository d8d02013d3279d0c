"""Switch removal by edge splitting, keeping the physical paths of logical arcs.

Switches relay but never copy, so spanning trees may only branch at compute
nodes. Following ForestColl (Zhao et al., arXiv 2402.06787), who apply the
splitting-off theorem of Bang-Jensen, Frank and Jackson (1995), every switch
``w`` is removed by repeatedly *splitting off* a pair of arcs ``(u, w), (w, t)``:
``gamma`` units of both are replaced by ``gamma`` units of a new arc ``(u, t)``
(a loop ``u = t`` is simply dropped). The splitting must keep the rooted
connectivity condition

    ``maxflow(s, v) >= requirement`` for every compute node ``v``

in the network with a super source ``s`` and arcs ``s -> c`` of capacity
``root_capacity[c]``. Splitting ``gamma`` of a pair lowers the in-capacity
``rho(X)`` of a sink-side set ``X`` by ``gamma`` exactly when ``w`` is in ``X``
and ``u, t`` are not, or ``u, t`` are in ``X`` and ``w`` is not; every other cut
keeps its value. Hence after a trial split of ``g = min(c(u, w), c(w, t))``,
``maxflow(s, v) = min(P_v, Q_v - g)`` for the best unaffected cut ``P_v`` and the
best affected cut ``Q_v``, and the largest admissible amount is
``g - max(0, requirement - min_v maxflow_g(s, v))``: one max-flow per compute
sink and pair.

When a switch has as much capacity in as out, Bang-Jensen, Frank and Jackson
guarantee that its arcs can be split off completely; a switch with more in than
out capacity keeps its out-arcs split off completely and loses the surplus of
in-capacity (which no flow could leave through). A switch with less in than out
capacity is rejected.

A leaf-spine fabric needs no checks at all: :func:`two_level_split` gives its
logical graph in closed form (complete graphs inside the leaves, rails between
them) together with the arborescences that certify it.

Every logical arc remembers the physical paths (with capacities summing to its
capacity) that realise it; splitting composes paths, so a logical arc ``(u, t)``
created at a switch ``w`` whose neighbour ``u`` is itself a switch removed
later ends up with the full path through both switches.

Examples
--------
>>> from optcoll.core.topology import TopologyBuilder
>>> b = TopologyBuilder("star")
>>> for g in ("a", "b", "c"):
...     b.compute(g)
>>> b.switch("sw")
>>> for g in ("a", "b", "c"):
...     b.link(g, "sw", 1, bidirectional=True)
>>> topo = b.build()
>>> caps = {arc: 2 * c for arc, c in topo.integer_capacities()[0].items()}
>>> g = split_switches(topo, caps, {c: 1 for c in topo.compute_nodes}, 3)
>>> sorted(g.capacity.items())
[(('a', 'b'), 1), (('a', 'c'), 1), (('b', 'a'), 1), (('b', 'c'), 1), (('c', 'a'), 1), (('c', 'b'), 1)]
>>> g.paths[("a", "c")]
((('a', 'sw', 'c'), 1),)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from optcoll.core.schedule import Tree, TreeEdge
from optcoll.core.topology import Topology
from optcoll.exceptions import SolveError
from optcoll.graph.maxflow import FlowNetwork

__all__ = [
    "LogicalGraph",
    "split_switches",
    "two_level_split",
    "realise_paths",
    "min_rooted_connectivity",
    "meets_requirement",
]

Arc = tuple[str, str]
PathPool = tuple[tuple[tuple[str, ...], int], ...]


@dataclass(frozen=True)
class LogicalGraph:
    """A switch-free graph on the compute nodes with integer arc capacities.

    Attributes
    ----------
    compute_nodes : tuple of str
        The compute nodes, in the topology's order.
    capacity : Mapping
        ``(u, v) -> int`` capacity of each logical compute-to-compute arc (all positive).
    paths : Mapping
        ``(u, v) -> ((physical path, capacity), ...)``: the physical paths (node ids,
        from ``u`` to ``v`` with only switches in between) realising the arc; their
        capacities sum to ``capacity[(u, v)]``.
    """

    compute_nodes: tuple[str, ...]
    capacity: Mapping[Arc, int]
    paths: Mapping[Arc, PathPool]


def min_rooted_connectivity(
    num_nodes: int,
    arcs: Mapping[tuple[int, int], int],
    root_capacity: Mapping[int, int],
    sinks: Iterable[int],
    extra: Iterable[tuple[int, int, int]] = (),
) -> int:
    """``min over sinks v of maxflow(s, v)`` with a super source ``s = num_nodes``.

    Parameters
    ----------
    num_nodes : int
        Nodes are ``0 .. num_nodes - 1``; the super source gets index ``num_nodes``.
    arcs : Mapping
        ``(tail, head) -> capacity`` (non-negative ints).
    root_capacity : Mapping
        ``node -> capacity`` of the arc ``s -> node``.
    sinks : iterable of int
        The nodes whose connectivity from ``s`` is measured.
    extra : iterable of (tail, head, capacity)
        Further arcs (``tail`` may be ``num_nodes``, the source).

    Examples
    --------
    >>> min_rooted_connectivity(2, {(0, 1): 3, (1, 0): 1}, {0: 2, 1: 2}, [0, 1])
    3
    """
    network = _network(num_nodes, arcs, root_capacity, extra)
    return network.min_rooted_cut(num_nodes, sinks).value


def meets_requirement(
    num_nodes: int,
    arcs: Mapping[tuple[int, int], int],
    root_capacity: Mapping[int, int],
    sinks: Iterable[int],
    requirement: int,
) -> bool:
    """Whether ``maxflow(s, v) >= requirement`` for every sink (stops at a violation).

    Same network as :func:`min_rooted_connectivity`.

    Examples
    --------
    >>> meets_requirement(2, {(0, 1): 3, (1, 0): 1}, {0: 2, 1: 2}, [0, 1], 3)
    True
    >>> meets_requirement(2, {(0, 1): 3, (1, 0): 1}, {0: 2, 1: 2}, [0, 1], 4)
    False
    """
    network = _network(num_nodes, arcs, root_capacity)
    return network.rooted_violation(num_nodes, sinks, requirement) is None


def _network(
    num_nodes: int,
    arcs: Mapping[tuple[int, int], int],
    root_capacity: Mapping[int, int],
    extra: Iterable[tuple[int, int, int]] = (),
) -> FlowNetwork:
    tails: list[int] = []
    heads: list[int] = []
    caps: list[int] = []
    for (a, b), c in arcs.items():
        if c > 0:
            tails.append(a)
            heads.append(b)
            caps.append(c)
    for r, c in root_capacity.items():
        if c > 0:
            tails.append(num_nodes)
            heads.append(r)
            caps.append(c)
    for a, b, c in extra:
        tails.append(a)
        heads.append(b)
        caps.append(c)
    return FlowNetwork(num_nodes + 1, tails, heads, caps)


class _Splitter:
    """Mutable state of the splitting: integer node ids, capacities, path pools."""

    def __init__(
        self,
        topology: Topology,
        link_capacity: Mapping[Arc, int],
        root_capacity: Mapping[str, int],
        requirement: int,
    ) -> None:
        self.names = topology.node_ids
        self.index = {name: i for i, name in enumerate(self.names)}
        self.n = len(self.names)
        self.compute = [self.index[c] for c in topology.compute_nodes]
        self.groups = [topology.node[x].group or "" for x in self.names]
        self.root_capacity = {self.index[c]: r for c, r in root_capacity.items() if r > 0}
        self.requirement = requirement
        self.cap: dict[tuple[int, int], int] = {}
        self.succ: list[set[int]] = [set() for _ in range(self.n)]
        self.pred: list[set[int]] = [set() for _ in range(self.n)]
        self.pool: dict[tuple[int, int], dict[tuple[int, ...], int]] = {}
        for (u, v), c in sorted(link_capacity.items(), key=lambda item: self._key(item[0])):
            if c > 0:
                self._add(self.index[u], self.index[v], c, {(self.index[u], self.index[v]): c})

    def _key(self, arc: Arc) -> tuple[int, int]:
        return self.index[arc[0]], self.index[arc[1]]

    def _add(self, u: int, v: int, c: int, paths: Mapping[tuple[int, ...], int]) -> None:
        self.cap[(u, v)] = self.cap.get((u, v), 0) + c
        self.succ[u].add(v)
        self.pred[v].add(u)
        pool = self.pool.setdefault((u, v), {})
        for p, pc in paths.items():
            pool[p] = pool.get(p, 0) + pc

    def _take(self, u: int, v: int, amount: int) -> list[tuple[tuple[int, ...], int]]:
        """Remove ``amount`` units of arc ``(u, v)`` with their paths (last paths first)."""
        self.cap[(u, v)] -= amount
        pool = self.pool[(u, v)]
        taken = []
        while amount:
            p = next(reversed(pool))
            m = min(amount, pool[p])
            taken.append((p, m))
            amount -= m
            if m == pool[p]:
                del pool[p]
            else:
                pool[p] -= m
        if self.cap[(u, v)] == 0:
            del self.cap[(u, v)]
            del self.pool[(u, v)]
            self.succ[u].discard(v)
            self.pred[v].discard(u)
        return taken

    def split(self, u: int, w: int, t: int, gamma: int) -> None:
        """Split ``gamma`` units of ``(u, w), (w, t)`` into ``(u, t)`` (dropped if ``u == t``)."""
        first = self._take(u, w, gamma)
        second = self._take(w, t, gamma)
        if u == t:
            return
        composed: dict[tuple[int, ...], int] = {}
        i = j = 0
        a_left, b_left = first[0][1], second[0][1]
        while i < len(first):
            m = min(a_left, b_left)
            p = first[i][0] + second[j][0][1:]
            composed[p] = composed.get(p, 0) + m
            a_left -= m
            b_left -= m
            if a_left == 0:
                i += 1
                a_left = first[i][1] if i < len(first) else 0
            if b_left == 0:
                j += 1
                b_left = second[j][1] if j < len(second) else 0
        self._add(u, t, gamma, composed)

    def drop(self, u: int, v: int) -> None:
        self._take(u, v, self.cap[(u, v)])

    def connectivity(self) -> int:
        return min_rooted_connectivity(self.n, self.cap, self.root_capacity, self.compute)

    def holds(self, arcs: Mapping[tuple[int, int], int]) -> bool:
        return meets_requirement(self.n, arcs, self.root_capacity, self.compute, self.requirement)

    def admissible(self, u: int, w: int, t: int) -> int:
        """The largest amount of the pair ``(u, w), (w, t)`` that can be split off."""
        g = min(self.cap[(u, w)], self.cap[(w, t)])
        trial = dict(self.cap)
        trial[(u, w)] -= g
        trial[(w, t)] -= g
        if u != t:
            trial[(u, t)] = trial.get((u, t), 0) + g
        lowest = min_rooted_connectivity(self.n, trial, self.root_capacity, self.compute)
        return max(0, g - max(0, self.requirement - lowest))

    def kind(self, w: int) -> str:
        """How switch ``w`` splits: ``"free"`` (no check), ``"uniform"`` or ``"checked"``."""
        neighbours = self.pred[w] | self.succ[w]
        symmetric = all(self.cap.get((x, w), 0) == self.cap.get((w, x), 0) for x in neighbours)
        if len(neighbours) <= 2 and symmetric:
            return "free"
        if len(self.pred[w]) == 1 and len(self.succ[w]) == 1 and self.pred[w] != self.succ[w]:
            return "free"
        if symmetric and len({self.cap[(x, w)] for x in neighbours}) == 1:
            return "uniform"
        return "checked"

    def save(self) -> tuple:
        return (
            dict(self.cap),
            {arc: dict(pool) for arc, pool in self.pool.items()},
            [set(x) for x in self.succ],
            [set(x) for x in self.pred],
        )

    def restore(self, saved: tuple) -> None:
        cap, pool, succ, pred = saved
        self.cap = dict(cap)
        self.pool = {arc: dict(p) for arc, p in pool.items()}
        self.succ = [set(x) for x in succ]
        self.pred = [set(x) for x in pred]

    def remove(self, w: int, verify: bool = True) -> None:
        """Split off every arc at switch ``w`` (a uniform plan unverified if not ``verify``)."""
        inside = sum(self.cap[(u, w)] for u in self.pred[w])
        outside = sum(self.cap[(w, t)] for t in self.succ[w])
        if inside < outside:
            raise SolveError(
                f"switch {self.names[w]!r} has less capacity in ({inside}) than out ({outside}); "
                "switch removal by edge splitting needs in-capacity >= out-capacity at every switch"
            )
        kind = self.kind(w)
        if kind == "free":
            # Two neighbours a, b with c(a,w) = c(w,a), c(b,w) = c(w,b): the new in-capacity
            # of every set is min(rho(X), rho(X + w)), so the full split is always admissible;
            # likewise for one in- and one other out-neighbour.
            self._split_free(w)
        elif kind == "checked":
            self._split_spread(w)
            self._split_checked(w)  # what the plan left, or all of it when it failed
        elif not self._split_uniform(w, verify):
            self._split_checked(w)
        for u in sorted(self.pred[w]):
            self.drop(u, w)
        if self.succ[w]:
            stuck = ", ".join(self.names[t] for t in sorted(self.succ[w]))
            raise SolveError(
                f"switch {self.names[w]!r}: arcs to {stuck} cannot be split off without "
                "breaking the rooted connectivity condition"
            )

    def _split_free(self, w: int) -> None:
        for t in sorted(self.succ[w]):
            for u in sorted(self.pred[w], key=lambda x: (x == t, x)):
                if (w, t) in self.cap and (u, w) in self.cap:
                    self.split(u, w, t, min(self.cap[(u, w)], self.cap[(w, t)]))

    def _split_uniform(self, w: int, verify: bool = True) -> bool:
        """Try spreading a uniform symmetric switch evenly over all its neighbour pairs.

        When every neighbour ``u`` has ``c(u, w) = c(w, u) = c``, the neighbours are put
        in a cyclic order interleaving the topology's groups (e.g. boxes, ``m`` of them)
        and neighbour ``i`` spreads ``c`` as evenly as possible over the neighbours
        ``i + o`` for the offsets ``o`` that are not multiples of ``m`` (other groups),
        each with its negative (:func:`circulant_offsets`), using only as many offsets
        as keep every new arc at least as large as the largest root capacity (so the
        packing rarely has to split a tree). A circulant plan keeps every in- and
        out-capacity exact. The complete splitting is checked once (one max-flow per compute node) and applied
        only if it keeps the condition; otherwise the caller splits pair by pair.
        """
        neighbours = sorted(self.pred[w] | self.succ[w])
        d = len(neighbours)
        c = self.cap.get((neighbours[0], w), 0)
        if d < 3 or any(
            self.cap.get((x, w), 0) != c or self.cap.get((w, x), 0) != c for x in neighbours
        ):
            return False
        order, offsets = self._circulant(neighbours, c)
        q, r = divmod(c, len(offsets))
        plan = [
            (u, order[(i + offset) % d], q + (j < r))
            for i, u in enumerate(order)
            for j, offset in enumerate(offsets)
            if q + (j < r)
        ]
        if verify:
            trial = dict(self.cap)
            for x in neighbours:
                del trial[(x, w)], trial[(w, x)]
            for u, t, gamma in plan:
                trial[(u, t)] = trial.get((u, t), 0) + gamma
            if not self.holds(trial):
                return False
        for u, t, gamma in plan:
            self.split(u, w, t, gamma)
        return True

    def _circulant(self, neighbours: list[int], smallest: int) -> tuple[list[int], list[int]]:
        """A cyclic order of ``neighbours`` interleaving the groups, and the offsets
        (:func:`circulant_offsets`) over which each neighbour spreads: as many as keep arcs
        of ``smallest`` capacity spread into pieces no smaller than the largest root
        capacity (so the packing rarely has to split a tree)."""
        rank: dict[str, int] = {}
        key = {}
        for x in neighbours:
            group = self.groups[x]
            rank[group] = rank.get(group, 0) + 1
            key[x] = (rank[group], group, x)
        order = sorted(neighbours, key=key.__getitem__)
        most = max(1, smallest // max(self.root_capacity.values(), default=1))
        return order, circulant_offsets(len(order), len(rank), most)

    def _split_spread(self, w: int) -> None:
        """Split most of switch ``w`` by one plan, checked once (kept only if it holds).

        The circulant plan of :meth:`_split_uniform` for unequal capacities: in the
        cyclic order, every neighbour's in- and out-capacity is cut into one part
        per offset, and for offset ``o`` the in-parts, laid end to end, meet the
        out-parts laid end to end from neighbour ``o`` on (so with equal
        capacities neighbour ``i`` meets ``i + o``, as in the uniform plan). Pieces
        that would be loops, and in-capacity beyond the out-capacity, stay at the
        switch for :meth:`_split_checked`.
        """
        neighbours = sorted(self.pred[w] | self.succ[w])
        d = len(neighbours)
        inside = [self.cap.get((x, w), 0) for x in neighbours]
        outside = [self.cap.get((w, x), 0) for x in neighbours]
        positive = [c for c in inside + outside if c]
        if d < 3 or not positive:
            return
        order, offsets = self._circulant(neighbours, min(positive))
        position = {x: i for i, x in enumerate(neighbours)}
        a = [inside[position[x]] for x in order]
        b = [outside[position[x]] for x in order]
        m = len(offsets)
        plan: dict[tuple[int, int], int] = {}
        for j, offset in enumerate(offsets):
            ins = [c // m + (j < c % m) for c in a]
            outs = [c // m + (j < c % m) for c in b]
            i, t = 0, offset % d
            left_in, left_out = ins[0], outs[t]
            while True:  # each step moves on to the next part or uses one up
                if left_in == 0:
                    i += 1
                    if i == d:
                        break
                    left_in = ins[i]
                    continue
                if left_out == 0:
                    t = (t + 1) % d
                    if t == offset % d:
                        break
                    left_out = outs[t]
                    continue
                amount = min(left_in, left_out)
                if order[i] != order[t]:
                    pair = (order[i], order[t])
                    plan[pair] = plan.get(pair, 0) + amount
                left_in -= amount
                left_out -= amount
        self._split_pieces(w, list(plan.items()))

    def _split_pieces(self, w: int, pieces: list[tuple[tuple[int, int], int]]) -> None:
        """Split ``pieces`` (``((u, t), amount)`` at ``w``) in order, as much as the condition
        allows: runs of pieces that keep it are found by bisection (one check each step),
        and a piece that breaks it gets its admissible amount."""
        start = 0
        while start < len(pieces):
            # the longest run of pieces from `start` that keeps the condition (bisection)
            good, bad = start, len(pieces) + 1
            if self._holds_after(w, pieces[start:]):
                good = len(pieces)
            while bad - good > 1 and good < len(pieces):
                middle = (good + bad) // 2
                if self._holds_after(w, pieces[start:middle]):
                    good = middle
                else:
                    bad = middle
            for (u, t), gamma in pieces[start:good]:
                self.split(u, w, t, gamma)
            if good < len(pieces):  # pieces[good] breaks it: split what is admissible of it
                (u, t), gamma = pieces[good]
                amount = min(gamma, self.admissible(u, w, t))
                if amount:
                    self.split(u, w, t, amount)
            start = good + 1

    def _holds_after(self, w: int, pieces: list[tuple[tuple[int, int], int]]) -> bool:
        """Whether splitting ``pieces`` (``((u, t), amount)`` at ``w``) keeps the condition."""
        trial = dict(self.cap)
        for (u, t), gamma in pieces:
            trial[(u, w)] -= gamma
            trial[(w, t)] -= gamma
            trial[(u, t)] = trial.get((u, t), 0) + gamma
        return self.holds(trial)

    def _split_checked(self, w: int) -> None:
        # first the pairs in the order below with whole amounts, checked in runs
        inside = {u: self.cap[(u, w)] for u in self.pred[w]}
        outside = {t: self.cap[(w, t)] for t in self.succ[w]}
        pieces = []
        for t in sorted(outside):
            for u in sorted(inside):
                gamma = min(inside[u], outside[t])
                if u != t and gamma:
                    pieces.append(((u, t), gamma))
                    inside[u] -= gamma
                    outside[t] -= gamma
        self._split_pieces(w, pieces)
        for t in sorted(self.succ[w]):
            # loops (u == t) waste capacity: try them last
            for u in sorted(self.pred[w], key=lambda x: (x == t, x)):
                if (w, t) not in self.cap:
                    break
                gamma = self.admissible(u, w, t)
                if gamma:
                    self.split(u, w, t, gamma)

    def run(self, switches: list[int], progress: bool) -> None:
        """Remove the switches, fewest neighbours first.

        Optimistic first pass: while the next switch is free or uniform, split it
        without checks, then verify the condition once; on failure the pass is
        undone and every switch is split with its own checks.
        """
        remaining = set(switches)
        bar = _progress_bar(len(remaining), "splitting", progress)

        def next_switch() -> int:
            return min(remaining, key=lambda x: (len(self.pred[x] | self.succ[x]), x))

        saved = self.save()
        unchecked = []
        while remaining and self.kind(w := next_switch()) != "checked":
            remaining.discard(w)
            unchecked.append(w)
            self.remove(w, verify=False)
        if unchecked and not self.holds(self.cap):
            self.restore(saved)
            remaining.update(unchecked)
        elif bar is not None:
            bar.update(len(unchecked))
        while remaining:
            w = next_switch()
            remaining.discard(w)
            self.remove(w)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()

    def logical(self) -> LogicalGraph:
        capacity: dict[Arc, int] = {}
        paths: dict[Arc, PathPool] = {}
        for (u, v), c in sorted(self.cap.items()):
            arc = (self.names[u], self.names[v])
            capacity[arc] = c
            paths[arc] = tuple(
                (tuple(self.names[x] for x in p), pc) for p, pc in self.pool[(u, v)].items()
            )
        compute_set = set(self.compute)
        return LogicalGraph(
            tuple(self.names[c] for c in sorted(compute_set)),
            capacity,
            paths,
        )


def circulant_offsets(d: int, groups: int, most: int) -> list[int]:
    """The offsets of a uniform switch's circulant plan: ``1, -1, 2, -2, ...`` (mod ``d``).

    Taking each offset together with its negative makes a neighbour's send peers
    its receive peers as well, which halves the distinct peers a GPU talks to
    through the switch (the runtimes need a thread block per peer) at the same
    capacities. Offsets that are multiples of ``groups`` (same group, e.g. the same
    box) are skipped unless ``groups == 1`` (offset 1 always remains); at most
    ``most`` offsets are taken.

    Examples
    --------
    >>> circulant_offsets(8, 1, 100), circulant_offsets(8, 2, 100), circulant_offsets(8, 2, 3)
    ([1, 7, 2, 6, 3, 5, 4], [1, 7, 3, 5], [1, 7, 3])
    """
    chosen: list[int] = []
    for o in range(1, d // 2 + 1):
        for offset in (o, d - o):
            if (groups == 1 or offset % groups) and offset not in chosen:
                chosen.append(offset)
    return chosen[:most]


def _progress_bar(total: int, what: str, enabled: bool):  # noqa: ANN202 - tqdm type
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=what, leave=False)


def split_switches(
    topology: Topology,
    link_capacity: Mapping[Arc, int],
    root_capacity: Mapping[str, int],
    requirement: int,
    *,
    progress: bool = False,
    proved: bool = False,
) -> LogicalGraph:
    """Remove every switch by edge splitting, keeping the rooted connectivity condition.

    Parameters
    ----------
    topology : Topology
        The network; only its nodes (compute or switch) and link pairs are used.
    link_capacity : Mapping
        ``(u, v) -> int`` capacity of every link (non-negative), e.g. ``U * caps`` for
        an allgather with ``(U, k)``, or ``caps`` for a broadcast.
    root_capacity : Mapping
        ``compute node -> int`` capacity of the super source arc ``s -> node``
        (``k`` for every compute node for an allgather; ``{root: K}`` for a broadcast).
    requirement : int
        Every compute node must be reachable from ``s`` with flow ``requirement``
        (``N * k`` for an allgather; ``K`` for a broadcast).
    progress : bool
        Show a tqdm bar over the switches.
    proved : bool
        The caller has proved the condition (e.g. ForestColl's ``(U, k)`` capacities
        of a certified bound): on a topology without switches the graph is returned
        without checking it again (its ``N`` max-flows dominate a large torus).

    Returns
    -------
    LogicalGraph
        Capacities between compute nodes with ``maxflow(s, v) >= requirement`` for every
        compute node ``v``, and the physical paths realising every logical arc. On every
        physical link the capacities of all paths through it add up to at most
        ``link_capacity``.

    Raises
    ------
    SolveError
        If the condition fails on the input (capacities too small for the requirement),
        or a switch has less in- than out-capacity.

    Notes
    -----
    A two-level Clos (leaf-spine) fabric under an allgather requirement is split at
    once by the closed form of :func:`two_level_split` (no max-flow; ``O(N^2)`` for
    ``N`` hosts, the size of its logical graph). Otherwise, switches
    with at most two neighbours and symmetric capacities, or with one
    in- and one (other) out-neighbour, are split without any check; switches go
    fewest neighbours first. Every other switch is split by a planned list of pairs
    (a circulant spreading each neighbour over many others) whose runs that keep
    the condition are found by bisection, one rooted connectivity check (at most
    one max-flow per compute node) per step; a pair that breaks it gets its
    admissible amount, and what is left is split pair by pair, one check per
    attempt (``O(d^2)`` checks for a switch of degree ``d`` in the worst case).

    Examples
    --------
    A ring of two compute nodes through a relay switch (no checks needed):

    >>> from optcoll.core.topology import TopologyBuilder
    >>> b = TopologyBuilder("relay")
    >>> b.compute("a"); b.compute("b"); b.switch("r")
    >>> b.link("a", "r", 2, bidirectional=True); b.link("r", "b", 2, bidirectional=True)
    >>> g = split_switches(b.build(), {("a", "r"): 1, ("r", "a"): 1, ("r", "b"): 1,
    ...                                ("b", "r"): 1}, {"a": 1, "b": 1}, 2)
    >>> dict(g.capacity), g.paths[("b", "a")]
    ({('a', 'b'): 1, ('b', 'a'): 1}, ((('b', 'r', 'a'), 1),))
    """
    for arc, c in link_capacity.items():
        if arc not in topology.capacity:
            raise SolveError(f"link_capacity names {arc[0]!r} -> {arc[1]!r}, which is not a link")
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise SolveError(
                f"link_capacity of {arc[0]!r} -> {arc[1]!r} must be a non-negative int, got {c!r}"
            )
    for node, c in root_capacity.items():
        if node not in topology.node or not topology.is_compute(node):
            raise SolveError(f"root_capacity names {node!r}, which is not a compute node")
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise SolveError(f"root_capacity of {node!r} must be a non-negative int, got {c!r}")
    clos = two_level_split(topology, link_capacity, root_capacity, requirement)
    if clos is not None:
        return clos
    state = _Splitter(topology, link_capacity, root_capacity, requirement)
    if proved and not topology.switch_nodes:
        return state.logical()
    if not state.holds(state.cap):
        have = state.connectivity()
        raise SolveError(
            f"the capacities give rooted connectivity {have} < requirement {requirement}; "
            "raise the link capacities (U) or lower the requirement"
        )
    state.run([state.index[w] for w in topology.switch_nodes], progress)
    return state.logical()


def two_level_split(
    topology: Topology,
    link_capacity: Mapping[Arc, int],
    root_capacity: Mapping[str, int],
    requirement: int,
) -> LogicalGraph | None:
    """Remove the switches of a two-level Clos (leaf-spine) fabric at once, in closed form.

    Applies to an allgather (every compute node has root capacity ``k``, the
    requirement is ``N * k``) on a fabric where every compute node (*host*) has
    a single neighbour, its *leaf* switch, every leaf has the same number ``H``
    of hosts, and every other switch (*spine*) links both ways to every leaf and
    to nothing else. With ``L`` leaves, the logical graph is

    - inside a leaf, ``a -> b`` of capacity ``k * L`` for every two hosts, on the
      path ``a, leaf, b``;
    - the *rails*: ``(l', j) -> (l, j)`` of capacity ``k`` from the ``j``-th host
      of every leaf to the ``j``-th host of every other leaf, through a spine. The
      ``(L - 1) * H * k`` units leaving a leaf are numbered with the leaf
      distance first (``m = ((d - 1) * H + j) * k + i`` for ``d = l - l' mod L``)
      and unit ``m`` crosses spine ``m mod S``, so every leaf-spine link in either
      direction carries the floor or the ceiling of ``(L - 1) * H * k / S``.

    It holds ``k`` two-level arborescences per root: the root sends to every
    host of its own leaf and along its rails; the rail head ``(l, j)`` forwards
    to the other hosts of leaf ``l``. Host ``(l, j)`` so sends on ``a -> b``
    inside its leaf ``k`` for its own trees and ``k`` for each of the ``L - 1``
    rails entering it: ``k * L`` in all, the arc's capacity. These ``N * k``
    arborescences give every compute node flow ``N * k`` from the super source,
    so the rooted connectivity condition holds without any max-flow. The
    construction is used only when every physical link carries at most its
    capacity: a host link carries ``k * ((H - 1) * L + L - 1) = k * (N - 1)``.

    Returns None when the fabric or the requirement is of another shape, or a
    link is too small; :func:`split_switches` then splits switch by switch.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> t = build("leaf-spine:leaves=2,hosts=2,spines=1")
    >>> caps = {arc: 3 * c for arc, c in t.integer_capacities()[0].items()}
    >>> g = two_level_split(t, caps, dict.fromkeys(t.compute_nodes, 1), 4)
    >>> g.capacity[("l0.h0", "l0.h1")], g.paths[("l0.h0", "l1.h0")]
    (2, ((('l0.h0', 'leaf0', 'spine0', 'leaf1', 'l1.h0'), 1),))
    """
    compute = topology.compute_nodes
    k = root_capacity.get(compute[0], 0)
    if k < 1 or requirement != k * len(compute):
        return None
    if any(root_capacity.get(v, 0) != k for v in compute):
        return None
    neighbours: dict[str, set[str]] = {}
    for (u, v), c in link_capacity.items():
        if c > 0:
            neighbours.setdefault(u, set()).add(v)
            neighbours.setdefault(v, set()).add(u)
    hosts: dict[str, list[str]] = {}  # leaf -> its hosts, in the topology's order
    for v in compute:
        around = neighbours.get(v, set())
        if len(around) != 1:
            return None
        (leaf,) = around
        if topology.is_compute(leaf):
            return None
        hosts.setdefault(leaf, []).append(v)
    leaves = list(hosts)
    spines = [w for w in topology.switch_nodes if w not in hosts and w in neighbours]
    size = len(hosts[leaves[0]])
    if any(len(group) != size for group in hosts.values()):
        return None
    if any(neighbours[w] != set(leaves) for w in spines):
        return None
    if any(neighbours[leaf] != set(hosts[leaf]) | set(spines) for leaf in leaves):
        return None
    if len(leaves) > 1 and not spines:
        return None
    n_leaves = len(leaves)
    capacity: dict[Arc, int] = {}
    paths: dict[Arc, PathPool] = {}
    load: dict[Arc, int] = {}
    for leaf in leaves:
        for a in hosts[leaf]:
            for b in hosts[leaf]:
                if a != b:
                    capacity[(a, b)] = k * n_leaves
                    paths[(a, b)] = (((a, leaf, b), k * n_leaves),)
    width = len(spines)
    for index, leaf in enumerate(leaves):
        for j, a in enumerate(hosts[leaf]):
            for d in range(1, n_leaves):
                other = leaves[(index + d) % n_leaves]
                b = hosts[other][j]
                # units first, first + 1, ..., first + k - 1 cross spines unit mod S
                first = ((d - 1) * size + j) * k
                q, r = divmod(k, width)
                capacity[(a, b)] = k
                paths[(a, b)] = tuple(
                    ((a, leaf, spines[(first + t) % width], other, b), q + (t < r))
                    for t in range(min(k, width))
                )
    for routes in paths.values():
        for route, c in routes:
            for link in pairwise(route):
                load[link] = load.get(link, 0) + c
    if any(c > link_capacity.get(link, 0) for link, c in load.items()):
        return None
    return LogicalGraph(compute, dict(sorted(capacity.items())), paths)


def realise_paths(
    logical: LogicalGraph,
    packing: Iterable[tuple[str, int, Sequence[Arc]]],
    share: Callable[[Arc], Hashable] | None = None,
) -> list[Tree]:
    """Map a packing's logical arcs to physical paths, splitting trees across an arc's paths.

    Arc ``a``'s capacity is the interval ``[0, capacity[a])`` cut into consecutive
    pieces, one per path; the trees using ``a`` take consecutive sub-intervals of
    their multiplicity's length. A tree is cut at every point where one of its
    arcs changes path. ``O(sum of tree sizes * paths per arc)``.

    Parameters
    ----------
    logical : LogicalGraph
        The graph :func:`split_switches` returned.
    packing : iterable of (root, multiplicity, arcs)
        Trees on ``logical`` (as :func:`optcoll.schedules.packing.pack_rooted` returns them);
        together they may use each arc at most its capacity.
    share : callable, optional
        ``arc -> key``: arcs with one key take their sub-intervals from one shared
        count (the orbits of :func:`optcoll.schedules.packing.pack_symmetric`, whose uses of
        an orbit add up to at most each of its arcs' capacity), so the trees'
        images under the symmetry take disjoint sub-intervals of every arc.

    Returns
    -------
    list of Tree
        Physical trees, ``chunks`` summing to each packed tree's multiplicity.

    Raises
    ------
    SolveError
        A multiplicity below 1, an arc that is not in ``logical``, or an arc used
        beyond its capacity (each named).

    Examples
    --------
    >>> g = LogicalGraph(("a", "b"), {("a", "b"): 2},
    ...                  {("a", "b"): ((("a", "s", "b"), 1), (("a", "t", "b"), 1))})
    >>> [(t.chunks, t.edges[0].path) for t in realise_paths(g, [("a", 2, [("a", "b")])])]
    [(1, ('a', 's', 'b')), (1, ('a', 't', 'b'))]
    """
    # per arc: the ends of its paths' intervals and one shared TreeEdge per path
    boundaries: dict[Arc, tuple[list[int], list[TreeEdge]]] = {}
    for arc, pool in logical.paths.items():
        ends, edges, total = [], [], 0
        for path, c in pool:
            total += c
            ends.append(total)
            edges.append(TreeEdge(arc[0], arc[1], path))
        boundaries[arc] = (ends, edges)
    capacity = logical.capacity
    offset: dict[Hashable, int] = {}
    trees: list[Tree] = []
    for index, (root, mu, arcs) in enumerate(packing):
        if isinstance(mu, bool) or not isinstance(mu, int) or mu < 1:
            raise SolveError(
                f"packed tree {index} (root {root!r}): multiplicity {mu!r} is not >= 1"
            )
        used = []
        cuts = {0, mu}
        for arc in arcs:
            entry = boundaries.get(arc)
            if entry is None:
                raise SolveError(
                    f"packed tree {index} (root {root!r}) uses {arc[0]} -> {arc[1]}, "
                    "which is not an arc of the logical graph"
                )
            key = arc if share is None else share(arc)
            start = offset.get(key, 0)
            stop = offset[key] = start + mu
            if stop > capacity[arc]:
                raise SolveError(
                    f"the packed trees use arc {arc[0]} -> {arc[1]} {stop} times, "
                    f"beyond its capacity {capacity[arc]} (at tree {index}, root {root!r})"
                )
            ends = entry[0]
            used.append((ends, entry[1], start))
            if len(ends) > 1:
                for end in ends:
                    if start < end < stop:
                        cuts.add(end - start)
        for lo, hi in pairwise(sorted(cuts)):
            piece = tuple(
                edges[0] if len(ends) == 1 else edges[bisect_right(ends, start + lo)]
                for ends, edges, start in used
            )
            trees.append(Tree(root, hi - lo, piece))
    return trees
