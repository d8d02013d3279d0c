"""Exact maximum flow on integer capacities: the one max-flow backend of optcoll.

Every graph algorithm in optcoll (the optimal cut ratio, switch splitting, tree
packing, broadcast) calls :class:`FlowNetwork` / :func:`max_flow`. Capacities are
Python ints of any size; the answer is exact and comes with its certificate, a
minimum cut (the nodes reachable from the source in the residual graph).

Two engines compute the same thing:

``"scipy"``
    :func:`scipy.sparse.csgraph.maximum_flow` with Dinic's algorithm (compiled,
    ``O(V^2 E)``). It works on int32 capacities, so it is used only when every
    residual capacity and the flow value are known to fit in int32. The CSR
    matrix is built once per :class:`FlowNetwork` and reused for every
    ``(source, sink)`` pair.
``"python"``
    Dinic's algorithm (Dinitz 1970) in pure Python on Python ints, ``O(V^2 E)``,
    exact for capacities of any size; the fallback when int32 does not suffice.

``engine="auto"`` (the default) picks scipy whenever it is exact, except on
networks of at most :data:`SMALL_NETWORK_PAIRS` arcs, where the pure-Python run
costs less than scipy's fixed per-call overhead (and small commands such as
``optcoll bound dgx-a100:2`` never import scipy). Parallel arcs
are allowed (their capacities add up and the flow is split among them in input
order); self-loops and zero-capacity arcs are allowed and carry no flow.
:meth:`FlowNetwork.with_capacities` gives the same arcs new capacities without
redoing the structural work, for algorithms that solve many related flows, and
:meth:`FlowNetwork.min_rooted_cut` / :meth:`FlowNetwork.rooted_violation`
answer "min over sinks of maxflow(s, v)" and "is every maxflow(s, v) >= k"
with far fewer and shorter max-flows than one per sink.

scipy's compiled Dinic has a fixed per-call overhead, so small networks go to
the pure-Python Dinic (:data:`SMALL_NETWORK_PAIRS`); the measured costs of both
engines and of networkx are in ``docs/measured.md`` (``benchmarks/bound.py``).

Examples
--------
>>> from optcoll.graph.maxflow import max_flow
>>> result = max_flow(4, [0, 0, 1, 2, 1], [1, 2, 3, 3, 2], [4, 4, 2, 3, 5], 0, 3)
>>> result.value
5
>>> [int(i) for i in result.source_side.nonzero()[0]]
[0, 1, 2]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from optcoll.exceptions import SolveError

if TYPE_CHECKING:
    from scipy.sparse import csr_array

__all__ = ["FlowNetwork", "MaxFlow", "RootedCut", "RootedSearch", "max_flow", "ENGINES"]

#: Engine names accepted by :class:`FlowNetwork`.
ENGINES = ("auto", "scipy", "python")

#: Under ``engine="auto"``, networks with at most this many (tail, head) pairs use the
#: pure-Python engine: below it the pure-Python max-flow was measured faster than
#: scipy's per call (figures in ``docs/measured.md``).
SMALL_NETWORK_PAIRS = 128

#: Node indices or capacities: a sequence of Python ints or a numpy integer array.
IntVector: TypeAlias = "Sequence[int] | np.ndarray"

_INT32_MAX = 2**31 - 1
_INT64_LIMIT = 2**63

#: Out-degree above which an ordered rooted pass does not queue a node's out-neighbours
#: for the local check when one of its in-neighbours is merged.
_HUB_DEGREE = 64


@dataclass(frozen=True)
class MaxFlow:
    """A maximum flow and the minimum cut that certifies it.

    ``flow`` and ``source_side`` are computed on first access (most callers only
    need ``value``).

    Attributes
    ----------
    value : int
        The exact maximum flow value (= capacity of the minimum cut).
    engine : str
        ``"scipy"`` or ``"python"``, the engine that computed it.
    flow : numpy.ndarray or tuple of int
        Flow on every input arc, in input order: an int64 array when the
        capacities fit in int64, else a tuple of Python ints.
    source_side : numpy.ndarray
        Boolean array of length ``num_nodes``: the nodes reachable from the
        source in the residual graph. It holds the source and not the sink, and
        every arc leaving it is saturated, so its out-capacity equals ``value``.
    """

    value: int
    engine: str
    _network: FlowNetwork = field(repr=False, compare=False)
    _source: int = field(repr=False, compare=False)
    _raw: Any = field(repr=False, compare=False)

    @cached_property
    def _pair_flow(self) -> np.ndarray | list[int]:
        return self._network._pair_flow(self._raw)

    @cached_property
    def flow(self) -> np.ndarray | tuple[int, ...]:
        """Flow on every input arc, in input order."""
        return self._network._arc_flows(self._pair_flow)

    @cached_property
    def source_side(self) -> np.ndarray:
        """Nodes reachable from the source in the residual graph (a minimum cut)."""
        return self._network._residual_reach(self._source, self._pair_flow)


@dataclass(frozen=True)
class RootedCut:
    """A cut separating a source from one of several sinks.

    Attributes
    ----------
    value : int
        Capacity of the cut (in the original network).
    sink : int
        A sink on the far side of the cut.
    source_side : numpy.ndarray
        Boolean array over the nodes: the side holding the source (computed on
        first access).
    """

    value: int
    sink: int
    _flow: MaxFlow = field(repr=False, compare=False)

    @property
    def source_side(self) -> np.ndarray:
        """Boolean array over the nodes: the side holding the source."""
        return self._flow.source_side


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise SolveError(f"{what} must be an integer, got {value!r} ({type(value).__name__})")
    return int(value)


class _Arcs:
    """The capacity-independent structure of a flow network (built with numpy)."""

    def __init__(self, n: int, tails: IntVector, heads: IntVector) -> None:
        t = _node_array(tails, "tail", n)
        h = _node_array(heads, "head", n)
        if len(t) != len(h):
            raise SolveError(f"tails and heads must have equal lengths, got {len(t)} and {len(h)}")
        outside = np.flatnonzero((t < 0) | (t >= n) | (h < 0) | (h >= n))
        if len(outside):
            i = int(outside[0])
            raise SolveError(f"arc {i} ({t[i]} -> {h[i]}) has a node outside 0..{n - 1}")
        # pairs (tail, head) without self-loops, numbered by first appearance
        proper = t != h
        sorted_keys, first, inverse = np.unique(
            (t * n + h)[proper], return_index=True, return_inverse=True
        )
        by_appearance = np.argsort(first, kind="stable")
        pair_of_sorted = np.empty(len(sorted_keys), dtype=np.int64)
        pair_of_sorted[by_appearance] = np.arange(len(sorted_keys))
        self.n = n
        self.num_arcs = len(t)
        self.arc_pair = np.full(len(t), -1, dtype=np.int64)
        self.arc_pair[proper] = pair_of_sorted[inverse.reshape(-1)]
        self.keys = sorted_keys[by_appearance]
        self.num_pairs = len(self.keys)
        self.rows = self.keys // n
        self.cols = self.keys % n
        #: arcs map one-to-one onto pairs (no parallel arcs, no self-loops)
        self.simple = self.num_pairs == self.num_arcs
        # the pair (head, tail) of every pair, or -1
        self.reverse = np.full(self.num_pairs, -1, dtype=np.int64)
        if self.num_pairs:
            reverse_keys = self.cols * n + self.rows
            pos = np.minimum(np.searchsorted(sorted_keys, reverse_keys), self.num_pairs - 1)
            found = sorted_keys[pos] == reverse_keys
            self.reverse[found] = pair_of_sorted[pos[found]]
        # CSR layout: pairs sorted by (tail, head), i.e. by key
        self.csr_order = pair_of_sorted
        self.indptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.bincount(self.rows, minlength=n), out=self.indptr[1:])
        self.indices = self.cols[self.csr_order].astype(np.int32)

    @cached_property
    def pairs(self) -> list[tuple[int, int]]:
        """(tail, head) of every pair, in pair order."""
        return list(zip(self.rows.tolist(), self.cols.tolist(), strict=True))


def _node_array(values: IntVector, what: str, n: int) -> np.ndarray:
    """Arc end points as an int64 array; a non-integer entry is named by its arc."""
    listed: IntVector
    if isinstance(values, np.ndarray):
        array = listed = values
    else:
        listed = list(values)
        # numpy would read True as 1: let the per-entry check reject booleans
        plain = not any(isinstance(v, bool) for v in listed)
        array = np.asarray(listed) if plain else np.asarray(listed, dtype=object)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim == 1 and array.dtype.kind in "iu":
        if array.dtype.kind == "u" and array.max() >= n:  # would wrap in int64
            i = int(np.argmax(array >= n))
            raise SolveError(f"arc {i} has {what} {int(array[i])} outside 0..{n - 1}")
        return array.astype(np.int64)
    checked = [_as_int(v, f"{what} of arc {i}") for i, v in enumerate(listed)]
    for i, v in enumerate(checked):
        if not 0 <= v < n:
            raise SolveError(f"arc {i} has {what} {v} outside 0..{n - 1}")
    return np.asarray(checked, dtype=np.int64)


class FlowNetwork:
    """Directed graph on nodes ``0..n-1`` with integer arc capacities.

    Parameters
    ----------
    num_nodes : int
        Number of nodes ``n``.
    tails, heads : sequence of int
        Arc ``i`` goes from ``tails[i]`` to ``heads[i]``.
    capacities : sequence of int
        Non-negative Python integers of any size (or a numpy integer array).
    engine : {"auto", "scipy", "python"}
        Which max-flow engine to use (see the module docstring). ``"scipy"``
        raises :class:`~optcoll.exceptions.SolveError` when the capacities do
        not fit in int32.

    Raises
    ------
    SolveError
        Mismatched lengths, a node out of range, a negative or non-integer
        capacity, or an unknown engine; the message names the arc at fault.

    Examples
    --------
    >>> net = FlowNetwork(3, [0, 1, 0], [1, 2, 2], [4, 4, 1])
    >>> net.max_flow(0, 2).value, net.max_flow(2, 0).value
    (5, 0)
    >>> net.with_capacities([1, 9, 9]).max_flow(0, 2).value
    10
    """

    def __init__(
        self,
        num_nodes: int,
        tails: IntVector,
        heads: IntVector,
        capacities: IntVector,
        *,
        engine: str = "auto",
    ) -> None:
        n = _as_int(num_nodes, "num_nodes")
        if n < 1:
            raise SolveError(f"a flow network needs at least one node, got num_nodes={n}")
        self._init(_Arcs(n, tails, heads), capacities, engine)

    def _init(self, arcs: _Arcs, capacities: IntVector, engine: str) -> None:
        if engine not in ENGINES:
            raise SolveError(f"unknown max-flow engine {engine!r}; valid engines are {ENGINES}")
        self.num_nodes = arcs.n
        self.engine = engine
        self._arcs = arcs
        self._arc_cap = _capacity_vector(capacities, arcs)
        if isinstance(self._arc_cap, np.ndarray):
            valid = arcs.arc_pair >= 0
            pair_cap: np.ndarray | list[int]
            if arcs.simple:
                pair_cap = np.empty(arcs.num_pairs, dtype=np.int64)
                pair_cap[arcs.arc_pair] = self._arc_cap
            else:
                pair_cap = np.zeros(arcs.num_pairs, dtype=np.int64)
                np.add.at(pair_cap, arcs.arc_pair[valid], self._arc_cap[valid])
            self._total_cap = int(pair_cap.sum())
            both = pair_cap + np.where(arcs.reverse >= 0, pair_cap[arcs.reverse], 0)
            self._int32_ok = bool(both.max(initial=0) <= _INT32_MAX)
        else:
            pair_cap = [0] * arcs.num_pairs  # Python ints: sums may exceed int64
            for j, c in zip(arcs.arc_pair.tolist(), self._arc_cap, strict=True):
                if j >= 0:
                    pair_cap[j] += c
            self._total_cap = sum(pair_cap)
            self._int32_ok = False
        self._pair_cap = pair_cap
        if engine == "scipy" and not self._int32_ok:
            raise SolveError(
                "engine 'scipy' needs capacities that fit in int32; use engine 'auto' or 'python'"
            )
        self._csr: csr_array | None = None
        self._python_graph: _DinicGraph | None = None

    @property
    def num_arcs(self) -> int:
        """Number of input arcs (parallel arcs and self-loops included)."""
        return self._arcs.num_arcs

    def min_rooted_cut(self, source: int, sinks: Iterable[int]) -> RootedCut:
        """``min over sinks v of maxflow(source, v)``, with a cut attaining it.

        Hao and Orlin's reduction: the sinks are taken in the given order and
        each one, once measured, is merged into the source (an arc from the
        source of capacity larger than the next sink's in-capacity). The
        minimum over these contracted flows equals the minimum over the sinks,
        and the contracted flows are short. A sink is skipped when the paths
        ``x -> t`` and ``x -> w -> t`` from the merged set already certify a
        flow no smaller than the best value found.

        Examples
        --------
        >>> net = FlowNetwork(4, [0, 0, 1, 2, 3], [1, 2, 3, 3, 1], [5, 1, 4, 2, 9])
        >>> cut = net.min_rooted_cut(0, [1, 2, 3])
        >>> cut.value, cut.sink
        (1, 2)
        >>> min(net.max_flow(0, v).value for v in (1, 2, 3))
        1
        """
        search = RootedSearch(self, source, sinks)
        best: RootedCut | None = None
        for t in search.sinks:
            if best is None or search.local_flow(t) < best.value:
                found = search.max_flow(t)
                if best is None or found.value < best.value:
                    best = found
            search.merge(t)
        assert best is not None, "the first sink is always measured"
        return best

    def rooted_violation(
        self, source: int, sinks: Iterable[int], requirement: int
    ) -> RootedCut | None:
        """A cut of capacity ``< requirement`` separating ``source`` from a sink, or None.

        None certifies ``maxflow(source, v) >= requirement`` for every sink ``v``.
        Uses the same merging and local certificates as :meth:`min_rooted_cut`,
        and stops at the first violation.

        Examples
        --------
        >>> net = FlowNetwork(4, [0, 0, 1, 2, 3], [1, 2, 3, 3, 1], [5, 1, 4, 2, 9])
        >>> net.rooted_violation(0, [1, 3], 5) is None
        True
        >>> net.rooted_violation(0, [1, 2, 3], 2).sink
        2
        """
        search = RootedSearch(self, source, sinks)
        for t in search.sinks:
            if search.local_flow(t) < requirement:
                found = search.max_flow(t)
                if found.value < requirement:
                    return found
            search.merge(t)
        return None

    def with_capacities(self, capacities: IntVector) -> FlowNetwork:
        """The same arcs with new capacities (same engine), sharing the structure.

        Cheap when ``capacities`` is a numpy integer array: no Python loop over arcs.
        """
        other = object.__new__(FlowNetwork)
        other._init(self._arcs, capacities, self.engine)
        return other

    def max_flow(self, source: int, sink: int) -> MaxFlow:
        """Maximum ``source -> sink`` flow with a minimum cut.

        Complexity ``O(V^2 E)`` (Dinic) for either engine.

        Examples
        --------
        >>> net = FlowNetwork(3, [0, 0, 1], [1, 1, 2], [2, 3, 9])
        >>> r = net.max_flow(0, 2)
        >>> r.value, [int(f) for f in r.flow]
        (5, [2, 3, 5])
        """
        n = self.num_nodes
        s, t = _as_int(source, "source"), _as_int(sink, "sink")
        for name, x in (("source", s), ("sink", t)):
            if not 0 <= x < n:
                raise SolveError(f"{name} {x} is outside 0..{n - 1}")
        if s == t:
            raise SolveError(f"source and sink must differ, both are {s}")
        bound = self._flow_bound(s, t)
        if self.engine == "scipy" and bound > _INT32_MAX:
            raise SolveError(
                f"engine 'scipy': flow bound {bound} from {s} to {t} exceeds int32; "
                "use engine 'auto' or 'python'"
            )
        small = self.engine == "auto" and self._arcs.num_pairs <= SMALL_NETWORK_PAIRS
        if self.engine != "python" and not small and self._int32_ok and bound <= _INT32_MAX:
            from scipy.sparse import csr_array
            from scipy.sparse.csgraph import maximum_flow

            if self._csr is None:
                arcs = self._arcs
                data = np.asarray(self._pair_cap, dtype=np.int32)[arcs.csr_order]
                self._csr = csr_array((data, arcs.indices, arcs.indptr), shape=(n, n))
            result = maximum_flow(self._csr, s, t, method="dinic")
            return MaxFlow(int(result.flow_value), "scipy", self, s, result.flow)
        if self._python_graph is None:
            self._python_graph = _DinicGraph(n, self._arcs.pairs, list(map(int, self._pair_cap)))
        value, pair_flow = self._python_graph.run(s, t)
        return MaxFlow(value, "python", self, s, pair_flow)

    def _flow_bound(self, s: int, t: int) -> int:
        """An upper bound on the s-t flow value: the total capacity if that fits in
        int32, else min(out-capacity of s, in-capacity of t)."""
        if self._total_cap <= _INT32_MAX:
            return self._total_cap
        out_cap, in_cap = self._node_capacities
        return min(out_cap[s], in_cap[t])

    @cached_property
    def _node_capacities(self) -> tuple[list[int], list[int]]:
        """Total capacity leaving and entering every node (Python ints)."""
        out_cap, in_cap = [0] * self.num_nodes, [0] * self.num_nodes
        for (u, v), c in zip(self._arcs.pairs, self._pair_cap, strict=True):
            out_cap[u] += int(c)
            in_cap[v] += int(c)
        return out_cap, in_cap

    # --- certificate and per-arc flows (on demand) -----------------------------------

    def _pair_flow(self, raw: Any) -> np.ndarray | list[int]:
        """Flow per (tail, head) pair from an engine's raw result."""
        if isinstance(raw, list):
            return raw
        raw.sort_indices()
        n = self.num_nodes
        keys = np.repeat(np.arange(n, dtype=np.int64), np.diff(raw.indptr)) * n + raw.indices
        pos = np.searchsorted(keys, self._arcs.keys)
        return np.maximum(raw.data[pos].astype(np.int64), 0)

    def _arc_flows(self, pair_flow: np.ndarray | list[int]) -> np.ndarray | tuple[int, ...]:
        """Split each pair's flow among its parallel arcs, earlier arcs first."""
        arcs = self._arcs
        if isinstance(self._arc_cap, np.ndarray):
            flow = np.asarray(pair_flow, dtype=np.int64)
            if arcs.simple:
                return flow[arcs.arc_pair]
            out = np.zeros(arcs.num_arcs, dtype=np.int64)
            remaining = flow.copy()
            for i, j in enumerate(arcs.arc_pair.tolist()):
                if j >= 0:
                    out[i] = min(int(self._arc_cap[i]), int(remaining[j]))
                    remaining[j] -= out[i]
            return out
        left = [int(f) for f in pair_flow]
        flows = []
        for c, j in zip(self._arc_cap, arcs.arc_pair.tolist(), strict=True):
            f = 0 if j < 0 else min(c, left[j])
            if j >= 0:
                left[j] -= f
            flows.append(f)
        return tuple(flows)

    def _residual_reach(self, s: int, pair_flow: np.ndarray | list[int]) -> np.ndarray:
        arcs, n = self._arcs, self.num_nodes
        side = np.zeros(n, dtype=bool)
        if isinstance(pair_flow, list):  # the pure-Python engine's flow: search in Python
            residual: list[list[int]] = [[] for _ in range(n)]
            for (u, v), f, c in zip(arcs.pairs, pair_flow, self._pair_cap, strict=True):
                if f < c:
                    residual[u].append(v)
                if f > 0:
                    residual[v].append(u)
            side[s] = True
            stack = [s]
            while stack:
                for v in residual[stack.pop()]:
                    if not side[v]:
                        side[v] = True
                        stack.append(v)
            return side
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import breadth_first_order

        if isinstance(pair_flow, np.ndarray) and isinstance(self._pair_cap, np.ndarray):
            forward = pair_flow < self._pair_cap
            backward = pair_flow > 0
        else:
            forward = np.array([f < c for f, c in zip(pair_flow, self._pair_cap, strict=True)])
            backward = np.array([f > 0 for f in pair_flow])
        forward = forward.astype(bool).reshape(-1)
        backward = backward.astype(bool).reshape(-1)
        # int32 indices, as for the flow graph: scipy 1.11's traversal reads int64 ones as
        # nothing at all (an ignored exception) and would report an empty source side
        rows = np.concatenate([arcs.rows[forward], arcs.cols[backward]]).astype(np.int32)
        cols = np.concatenate([arcs.cols[forward], arcs.rows[backward]]).astype(np.int32)
        residual = csr_array(
            (np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n), dtype=np.int8
        )
        order = breadth_first_order(residual, s, directed=True, return_predecessors=False)
        side[order] = True
        return side


def _capacity_vector(capacities: IntVector, arcs: _Arcs) -> np.ndarray | list[int]:
    """Validated capacities: int64 array when all sums fit in int64, else Python ints."""
    if not isinstance(capacities, np.ndarray):
        listed = list(capacities)
        converted = np.asarray(listed) if listed else np.zeros(0, dtype=np.int64)
        plain = not any(isinstance(c, bool) for c in listed)
        capacities = converted if plain and converted.dtype.kind in "iu" else listed
    if isinstance(capacities, np.ndarray) and capacities.dtype.kind in "iu":
        if capacities.shape != (arcs.num_arcs,):
            raise SolveError(
                f"capacities must have one entry per arc ({arcs.num_arcs}), "
                f"got shape {capacities.shape}"
            )
        if capacities.size and capacities.min() < 0:
            i = int(np.argmin(capacities))
            raise SolveError(f"arc {i} has negative capacity {int(capacities[i])}")
        values: IntVector = capacities
        top = int(capacities.max(initial=0))
    else:
        values = [_as_int(c, f"capacity of arc {i}") for i, c in enumerate(capacities)]
        if len(values) != arcs.num_arcs:
            raise SolveError(
                f"capacities must have one entry per arc ({arcs.num_arcs}), got {len(values)}"
            )
        for i, c in enumerate(values):
            if c < 0:
                raise SolveError(f"arc {i} has negative capacity {c}")
        top = max(values, default=0)
    if top * max(arcs.num_arcs, 1) < _INT64_LIMIT:
        return np.asarray(values, dtype=np.int64)
    return [int(c) for c in values]


class _DinicGraph:
    """Residual graph for the pure-Python Dinic engine (Python ints throughout)."""

    def __init__(self, n: int, pairs: list[tuple[int, int]], caps: list[int]) -> None:
        self.n = n
        self.adj: list[list[int]] = [[] for _ in range(n)]
        self.head: list[int] = []
        self.cap0: list[int] = []
        for (u, v), c in zip(pairs, caps, strict=True):
            # edge 2j is pair j itself, edge 2j+1 its reverse residual arc
            self.adj[u].append(len(self.head))
            self.head.append(v)
            self.cap0.append(c)
            self.adj[v].append(len(self.head))
            self.head.append(u)
            self.cap0.append(0)

    def run(self, s: int, t: int) -> tuple[int, list[int]]:
        adj, head = self.adj, self.head
        cap = list(self.cap0)
        total = 0
        while True:
            level = [-1] * self.n
            level[s] = 0
            queue = [s]
            for u in queue:
                for e in adj[u]:
                    if cap[e] > 0 and level[head[e]] < 0:
                        level[head[e]] = level[u] + 1
                        queue.append(head[e])
            if level[t] < 0:
                break
            pointer = [0] * self.n
            while pushed := self._augment(s, t, level, pointer, cap):
                total += pushed
        return total, [cap[2 * j + 1] for j in range(len(cap) // 2)]

    def _augment(self, s: int, t: int, level: list[int], pointer: list[int], cap: list[int]) -> int:
        """One augmenting path in the level graph (iterative DFS, dead ends pruned)."""
        adj, head = self.adj, self.head
        path: list[int] = []
        u = s
        while True:
            if u == t:
                pushed = min(cap[e] for e in path)
                for e in path:
                    cap[e] -= pushed
                    cap[e ^ 1] += pushed
                return pushed
            edges = adj[u]
            while pointer[u] < len(edges):
                e = edges[pointer[u]]
                if cap[e] > 0 and level[head[e]] == level[u] + 1:
                    path.append(e)
                    u = head[e]
                    break
                pointer[u] += 1
            else:
                if not path:
                    return 0
                level[u] = -1  # dead end: not entered again in this phase
                e = path.pop()
                u = head[e ^ 1]
                pointer[u] += 1


class RootedSearch:
    """Hao and Orlin's pass over the sinks of ``source``, with capacities that may change.

    The state of a pass: the *merged* set (the source and the sinks already
    measured, all kept on the source side of every cut considered), the capacity
    entering each node from it, and max-flows from it to one sink at a time. A
    sink is certified without a max-flow when the paths ``x -> t`` and
    ``x -> w -> t`` from the merged set carry at least a requirement
    (:meth:`local_flow`). :meth:`FlowNetwork.min_rooted_cut` and
    :meth:`FlowNetwork.rooted_violation` run it over fixed capacities; a
    parametric search (the optimal cut ratio, :mod:`optcoll.bounds.cut_ratio`) changes the
    capacities with its candidate (:meth:`reweigh`) and keeps the merged set, which
    is valid whenever a sink certified stays certified (a requirement met under the
    old capacities is met under the new ones).

    With ``ordered``, :meth:`next_sink` chooses the order: first every sink the
    local paths certify, then for a max-flow a sink no merged node has an arc into
    (its neighbours are then likely to pass locally), else the next in ``sinks``.

    Examples
    --------
    >>> net = FlowNetwork(4, [0, 0, 1, 2, 3], [1, 2, 3, 3, 1], [5, 1, 4, 2, 9])
    >>> search = RootedSearch(net, 0, [1, 2, 3], ordered=True)
    >>> sink = search.next_sink(2)
    >>> sink, search.max_flow(sink).value
    (2, 1)
    >>> search.reweigh([10, 2, 8, 4, 18])
    >>> search.max_flow(sink).value, search.local_flow(sink)
    (2, 2)
    """

    def __init__(
        self, network: FlowNetwork, source: int, sinks: Iterable[int], *, ordered: bool = False
    ) -> None:
        n = network.num_nodes
        s = _as_int(source, "source")
        if not 0 <= s < n:
            raise SolveError(f"source {s} is outside 0..{n - 1}")
        self.sinks = list(dict.fromkeys(_as_int(v, "sink") for v in sinks))
        if not self.sinks:
            raise SolveError("at least one sink is needed")
        for v in self.sinks:
            if not 0 <= v < n:
                raise SolveError(f"sink {v} is outside 0..{n - 1}")
            if v == s:
                raise SolveError(f"sink {v} is the source")
        arcs = network._arcs
        self._rows, self._cols = arcs.rows.tolist(), arcs.cols.tolist()
        self.n, self.source, self.ordered = n, s, ordered
        self._base = network
        self.merged = [False] * n
        self.merged[s] = True
        self._set_arc_capacities(network._pair_cap)
        # merging sink v raises the arc source -> v: the pair's, or one added for it
        # (the network stays free of parallel arcs)
        from_source = np.flatnonzero(arcs.rows == s).tolist()
        pair_to = {self._cols[j]: j for j in from_source}
        added = [v for v in self.sinks if v not in pair_to]
        for j, v in enumerate(added):
            pair_to[v] = len(self._rows) + j
        self._added = len(added)
        self.merge_arcs = np.array([pair_to[v] for v in self.sinks], dtype=np.int64)
        if arcs.simple and not added:  # its arcs are the pairs, in order: use it as it is
            self.network = network
        else:
            self.network = FlowNetwork(
                n,
                self._rows + [s] * len(added),
                self._cols + added,
                self._extended(network._pair_cap),
                engine=network.engine,
            )
        self.max_flows = self.passed_locally = 0
        # the ordered pass: sinks whose local paths gained capacity, and which sinks
        # some arc enters from a merged node other than the source
        self.is_sink = [False] * n
        for v in self.sinks:
            self.is_sink[v] = True
        self.dirty: deque[int] = deque()
        self.in_dirty = [False] * n
        self.adjacent = [False] * n
        self.fresh = self.rest = 0  # scan positions in `sinks` for the two kinds of sink

    def _set_arc_capacities(self, pair_cap: np.ndarray | list[int]) -> None:
        """Arc lists and the capacity from the merged set, for ``pair_cap``."""
        n = self.n
        self.in_arcs: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.out_arcs: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.merged_in = [0] * n  # capacity entering each node from merged nodes
        merged = self.merged
        caps = pair_cap.tolist() if isinstance(pair_cap, np.ndarray) else pair_cap
        self._top = max(caps, default=0)
        for u, v, c in zip(self._rows, self._cols, caps, strict=True):
            if c:
                self.in_arcs[v].append((u, c))
                self.out_arcs[u].append((v, c))
                if merged[u]:
                    self.merged_in[v] += c

    def _extended(self, pair_cap: np.ndarray | list[int]) -> Any:
        """``pair_cap`` followed by a zero for every source -> sink arc added."""
        if isinstance(pair_cap, np.ndarray):
            return np.concatenate([pair_cap, np.zeros(self._added, dtype=np.int64)])
        return [int(c) for c in pair_cap] + [0] * self._added

    def reweigh(self, capacities: IntVector) -> None:
        """New capacities for the same arcs (one per arc of the network the search
        was made from); the merged set is kept."""
        self._base = self._base.with_capacities(capacities)
        self._set_arc_capacities(self._base._pair_cap)
        self.network = self.network.with_capacities(self._extended(self._base._pair_cap))

    def merge(self, x: int) -> None:
        """Put sink ``x`` on the source side of every later cut."""
        self.merged[x] = True
        merged_in = self.merged_in
        for w, c in self.out_arcs[x]:
            merged_in[w] += c
        if not self.ordered:
            return
        out_arcs, adjacent, mark = self.out_arcs, self.adjacent, self._mark_dirty
        for w, _ in out_arcs[x]:
            adjacent[w] = True
            mark(w)
            # a hub's many out-neighbours are not queued (that would cost O(N^2) on
            # a star); they get the local check when picked as sinks
            if len(out_arcs[w]) <= _HUB_DEGREE:
                for v, _ in out_arcs[w]:
                    mark(v)

    def _mark_dirty(self, v: int) -> None:
        if self.is_sink[v] and not self.merged[v] and not self.in_dirty[v]:
            self.in_dirty[v] = True
            self.dirty.append(v)

    def local_flow(self, t: int) -> int:
        """Capacity every cut holding the merged set and not ``t`` must pay."""
        return sum(c if self.merged[w] else min(c, self.merged_in[w]) for w, c in self.in_arcs[t])

    def next_sink(self, requirement: int) -> int | None:
        """Merge every sink whose local paths carry ``requirement``; the next sink that
        needs a max-flow, or None when every sink is merged (``ordered`` passes only)."""
        sinks, count = self.sinks, len(self.sinks)
        while True:
            while self.dirty:
                v = self.dirty.popleft()
                self.in_dirty[v] = False
                if not self.merged[v] and self.local_flow(v) >= requirement:
                    self.passed_locally += 1
                    self.merge(v)
            merged, adjacent = self.merged, self.adjacent
            while self.fresh < count and (merged[sinks[self.fresh]] or adjacent[sinks[self.fresh]]):
                self.fresh += 1
            while self.rest < count and merged[sinks[self.rest]]:
                self.rest += 1
            if self.rest == count:
                return None
            sink = sinks[self.fresh] if self.fresh < count else sinks[self.rest]
            if self.local_flow(sink) < requirement:
                return sink
            self.passed_locally += 1
            self.merge(sink)

    def max_flow(self, t: int) -> RootedCut:
        """The maximum flow from the merged set to ``t``, as a cut of the original network."""
        big = sum(c for _, c in self.in_arcs[t]) + 1  # more than the cut around t
        merged = [self.merged[v] for v in self.sinks]
        base = self.network._arc_cap
        if isinstance(base, np.ndarray) and (self._top + big) * len(base) < _INT64_LIMIT:
            capacities: Any = base.copy()
            capacities[self.merge_arcs] += np.where(merged, big, 0)
        else:
            capacities = [int(c) for c in base]
            for a, m in zip(self.merge_arcs.tolist(), merged, strict=True):
                capacities[a] += big if m else 0
        result = self.network.with_capacities(capacities).max_flow(self.source, t)
        self.max_flows += 1
        return RootedCut(result.value, t, result)


def max_flow(
    num_nodes: int,
    tails: IntVector,
    heads: IntVector,
    capacities: IntVector,
    source: int,
    sink: int,
    *,
    engine: str = "auto",
) -> MaxFlow:
    """Maximum flow of a one-off network; see :class:`FlowNetwork`.

    Examples
    --------
    >>> max_flow(2, [0, 0], [1, 1], [2**70, 1], 0, 1).value == 2**70 + 1
    True
    """
    return FlowNetwork(num_nodes, tails, heads, capacities, engine=engine).max_flow(source, sink)
