"""Broadcast and reduce as step schedules: direct, binomial and Bine trees, scatter + allgather.

A *tree* here is steps of ``(parent, child)`` rank pairs that reach every rank from the
root once (:func:`direct_tree`, :func:`binomial_tree`, :func:`bine_tree`,
:func:`torus_tree`). A broadcast sends the whole vector along each pair in its step
(:func:`tree_broadcast`); van de Geijn's broadcast (:func:`scatter_allgather`) cuts it
into one shard per rank, *scatters* the shards down a tree (each child gets the shards of
its subtree) and then runs an allgather (:mod:`optcoll.schedules.baselines.logstep`,
:mod:`optcoll.schedules.baselines.bine`), whose messages are pruned of blocks the receiver
already holds from the scatter (:func:`pruned`: every rank receives every block once).
A reduce is the transpose of a broadcast (:func:`transposed`: every message reversed, the
steps in reverse order, adding), so each broadcast here has its reduce (the scatter +
allgather one is reduce-scatter + gather).

Trees:

* **direct**: the root sends to every rank in one step;
* **binomial** (any ``N``): in step ``t`` of ``ceil(log2 N)``, every rank ``r`` (relative
  to the root) that is a multiple of ``2m``, ``m = 2^(ceil(log2 N) - 1 - t)``, sends to
  ``r + m`` (farthest first, as MPICH's binomial broadcast);
* **Bine** (De Sensi et al., SC 2025): the ranks that hold the data double each step along
  Swing's pairings (:func:`optcoll.schedules.baselines.swing.swing_pairings`: an even
  relative rank sends ``rho_s`` ahead, an odd one behind, ``rho_s`` = 1, -1, 3, -5, ...),
  farthest first (distance halving; libbine's ``get_tree`` offers increasing and decreasing
  distances), so the last and busiest steps cross the fewest hops; ``N`` not a power of two
  runs the tree on the first ``2^floor(log2 N)`` relative ranks and then one step where
  relative rank ``r`` sends to ``r + 2^floor(log2 N)`` (our fold: the paper builds trees of
  any ``N`` directly);
* **torus** (multiport, every side a power of two): the same doubling along multiport
  Swing's per-dimension pairings (:func:`optcoll.schedules.baselines.swing.torus_pairings`)
  from the root's coordinates, dimensions in turn from a start dimension, each
  dimension's steps farthest first; :func:`multiport_bine_broadcast` runs the
  ``2D`` trees (each start dimension, both directions) at once, each on ``1 / 2D`` of the
  vector, so the root sends on all ``2D`` ports from the first step;
* **hierarchical** (equal boxes, or *dimension-wise* the lines of a grid as boxes): the
  direct or the binomial tree over the boxes, through the root's position in each, each
  box's node there sending to the rest of its box in the step after it got the data
  (:func:`hierarchical_broadcast`).

Examples
--------
>>> s = bine_broadcast([f"r{i}" for i in range(8)], "r0")
>>> [[(m.src, m.dst) for m in step] for step in s.steps]  # distances 3, -1 and 1
[[('r0', 'r3')], [('r0', 'r7'), ('r3', 'r4')], [('r0', 'r1'), ('r3', 'r2'), ('r4', 'r5'), ('r7', 'r6')]]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.bine import bine_allgather
from optcoll.schedules.baselines.logstep import (
    Pairing,
    butterfly_allgather,
    concurrent,
    recursive_doubling_allgather,
)
from optcoll.schedules.baselines.swing import swing_pairings, torus_pairings

__all__ = [
    "Tree",
    "direct_tree",
    "binomial_tree",
    "bine_tree",
    "torus_tree",
    "tree_broadcast",
    "scatter_allgather",
    "pruned",
    "transposed",
    "direct_broadcast",
    "binomial_broadcast",
    "bine_broadcast",
    "binomial_scatter_allgather",
    "bine_scatter_allgather",
    "multiport_bine_broadcast",
    "multiport_scatter_allgather",
    "hierarchical_broadcast",
    "ROOTED_BUILDERS",
    "ROOTED_TORUS_BUILDERS",
    "rooted_schedules",
]

#: Steps of ``(parent, child)`` rank pairs.
Tree = list[list[tuple[int, int]]]


def direct_tree(n: int, root: int) -> Tree:
    """One step: the root to every other rank.

    >>> direct_tree(3, 1)
    [[(1, 0), (1, 2)]]
    """
    return [[(root, v) for v in range(n) if v != root]]


def binomial_tree(n: int, root: int) -> Tree:
    """The binomial tree of ``n`` ranks from ``root``, farthest first (module docstring).

    >>> binomial_tree(5, 1)
    [[(1, 0)], [(1, 3)], [(1, 2), (3, 4)]]
    """
    k = (n - 1).bit_length()
    steps: Tree = []
    for t in range(k):
        m = 1 << (k - 1 - t)
        steps.append([((root + r) % n, (root + r + m) % n) for r in range(0, n - m, 2 * m)])
    return steps


def bine_tree(n: int, root: int) -> Tree:
    """The Bine tree of ``n`` ranks from ``root`` (module docstring).

    >>> bine_tree(6, 2)  # relative ranks 0..3 (ranks 2..5), then relative 0, 1 to 4, 5
    [[(2, 5)], [(2, 3), (5, 4)], [(2, 0), (3, 1)]]
    """
    p = 1 << (n.bit_length() - 1)
    steps = _doubling(p, 0, swing_pairings(p)[::-1])
    if p < n:
        steps.append([(r, r + p) for r in range(n - p)])
    return [[((root + u) % n, (root + v) % n) for u, v in step] for step in steps]


def torus_tree(shape: Sequence[int], root: int, start: int, sign: int) -> Tree:
    """The tree along multiport Swing's pairings on a torus of ``shape`` (row-major ranks,
    every side a power of two) from ``root``, starting with dimension ``start``, distances
    times ``sign``, farthest first.

    >>> torus_tree((2, 2), 0, 0, 1)  # dimension 0 first: rank 0 to rank 2
    [[(0, 2)], [(0, 1), (2, 3)]]
    """
    return _doubling(math.prod(shape), root, torus_pairings(shape, start, sign, True))


def _doubling(p: int, root: int, pairings: Sequence[Pairing]) -> Tree:
    """Every rank that holds the data sends it to its partner, step by step from ``root``."""
    held, steps = {root}, []
    for partner in pairings:
        step = [(v, partner(v)) for v in sorted(held)]
        if any(w in held for _, w in step):
            raise ScheduleError("a doubling tree's pairing meets a rank that holds the data")
        held.update(w for _, w in step)
        steps.append(step)
    if len(held) != p:
        raise ScheduleError(f"a doubling tree reaches {len(held)} of {p} ranks")
    return steps


def tree_broadcast(
    nodes: Sequence[str], root: str, tree: Tree, method: str, blocks: int = 1
) -> StepSchedule:
    """The broadcast that sends all ``blocks`` along each pair of ``tree`` in its step."""
    whole = tuple(range(blocks))
    steps = tuple(tuple(Send(nodes[u], nodes[v], whole) for u, v in step) for step in tree)
    return StepSchedule("broadcast", method, tuple(nodes), blocks, steps, root)


def scatter_allgather(
    nodes: Sequence[str], root: str, tree: Tree, allgather: StepSchedule, method: str
) -> StepSchedule:
    """The broadcast that scatters ``allgather``'s blocks down ``tree`` (each child the
    blocks of the ranks of its subtree, block ``b`` being rank ``b mod N``'s) and then
    runs ``allgather`` (:func:`pruned`)."""
    n, blocks = len(nodes), allgather.blocks
    children: dict[int, list[int]] = {}
    for step in tree:
        for u, v in step:
            children.setdefault(u, []).append(v)
    below: dict[int, set[int]] = {}

    def subtree(v: int) -> set[int]:
        if v not in below:
            below[v] = {v}.union(*(subtree(c) for c in children.get(v, ())))
        return below[v]

    scatter = tuple(
        tuple(
            Send(nodes[u], nodes[v], tuple(b for b in range(blocks) if b % n in subtree(v)))
            for u, v in step
        )
        for step in tree
    )
    steps = scatter + allgather.steps
    return pruned(StepSchedule("broadcast", method, tuple(nodes), blocks, steps, root))


def pruned(schedule: StepSchedule) -> StepSchedule:
    """``schedule`` (a broadcast) without the blocks a message brings to a rank that
    already holds them or gets them from an earlier message of the same step, and without
    the messages left empty: every rank receives every block at most once.

    >>> s = StepSchedule("broadcast", "x", ("a", "b"), 1,
    ...                  ((Send("a", "b", (0,)),), (Send("a", "b", (0,)),)), "a")
    >>> pruned(s).steps
    ((Send(src='a', dst='b', blocks=(0,), reduce=False),),)
    """
    held: dict[str, set[int]] = {v: set() for v in schedule.compute_nodes}
    assert schedule.root is not None  # a broadcast
    held[schedule.root] = set(range(schedule.blocks))
    steps = []
    for step in schedule.steps:
        kept = []
        arriving: dict[str, set[int]] = {v: set() for v in schedule.compute_nodes}
        for send in step:
            fresh = tuple(b for b in send.blocks if b not in held[send.dst] | arriving[send.dst])
            arriving[send.dst].update(fresh)
            if fresh:
                kept.append(Send(send.src, send.dst, fresh))
        for v, blocks in arriving.items():
            held[v] |= blocks
        if kept:
            steps.append(tuple(kept))
    return StepSchedule(
        "broadcast", schedule.method, schedule.compute_nodes, schedule.blocks, tuple(steps),
        schedule.root,
    )  # fmt: skip


def transposed(broadcast: StepSchedule) -> StepSchedule:
    """The reduce of ``broadcast`` (every rank receiving every block at most once): every
    message from its receiver to its sender, adding, the steps in reverse order.

    >>> r = transposed(direct_broadcast("abc", "b"))
    >>> r.collective, r.root, [(m.src, m.dst, m.reduce) for m in r.steps[0]]
    ('reduce', 'b', [('a', 'b', True), ('c', 'b', True)])
    """
    steps = tuple(
        tuple(Send(m.dst, m.src, m.blocks, True) for m in step)
        for step in reversed(broadcast.steps)
    )
    return StepSchedule(
        "reduce", broadcast.method, broadcast.compute_nodes, broadcast.blocks, steps,
        broadcast.root,
    )  # fmt: skip


def _rank(nodes: Sequence[str], root: str) -> int:
    if root not in nodes:
        raise ScheduleError(f"the root {root!r} is not one of the {len(nodes)} nodes")
    return list(nodes).index(root)


def direct_broadcast(nodes: Sequence[str], root: str) -> StepSchedule:
    """The root sends the whole vector to every other node in one step."""
    return tree_broadcast(nodes, root, direct_tree(len(nodes), _rank(nodes, root)), "direct")


def binomial_broadcast(nodes: Sequence[str], root: str) -> StepSchedule:
    """The binomial tree broadcast, ``ceil(log2 N)`` steps of the whole vector.

    >>> binomial_broadcast("abcde", "a").num_steps
    3
    """
    tree = binomial_tree(len(nodes), _rank(nodes, root))
    return tree_broadcast(nodes, root, tree, "binomial tree")


def bine_broadcast(nodes: Sequence[str], root: str) -> StepSchedule:
    """The Bine tree broadcast, ``ceil(log2 N)`` steps of the whole vector."""
    return tree_broadcast(nodes, root, bine_tree(len(nodes), _rank(nodes, root)), "Bine tree")


def binomial_scatter_allgather(nodes: Sequence[str], root: str) -> StepSchedule:
    """Van de Geijn's broadcast: a binomial scatter, then recursive doubling's allgather."""
    tree = binomial_tree(len(nodes), _rank(nodes, root))
    allgather = recursive_doubling_allgather(nodes)
    return scatter_allgather(nodes, root, tree, allgather, "scatter + allgather (binomial)")


def bine_scatter_allgather(nodes: Sequence[str], root: str) -> StepSchedule:
    """A Bine scatter, then Bine's allgather (Swing's pairings, farthest first)."""
    tree = bine_tree(len(nodes), _rank(nodes, root))
    return scatter_allgather(nodes, root, tree, bine_allgather(nodes), "scatter + allgather (Bine)")


def _torus_ports(nodes: Sequence[str], shape: Sequence[int]) -> list[tuple[int, int]]:
    """The ``2D`` (start dimension, sign) of multiport Swing on ``shape``, checked."""
    if math.prod(shape) != len(nodes) or any(d < 2 or d & (d - 1) for d in shape):
        raise ScheduleError(
            f"a multiport Bine tree needs a torus of powers of two >= 2 holding the "
            f"{len(nodes)} nodes, not {'x'.join(map(str, shape))}"
        )
    return [(start, sign) for sign in (1, -1) for start in range(len(shape))]


def multiport_bine_broadcast(nodes: Sequence[str], shape: Sequence[int], root: str) -> StepSchedule:
    """The ``2D`` torus trees (:func:`torus_tree`) at once, each on ``1 / 2D`` of the vector:
    ``log2 N`` steps, the root sending on its ``2D`` ports from the first.

    >>> s = multiport_bine_broadcast([f"n{i}" for i in range(16)], (4, 4), "n0")
    >>> s.num_steps, s.blocks, [len(step) for step in s.steps]
    (4, 4, [4, 8, 16, 32])
    """
    r = _rank(nodes, root)
    shares = [
        tree_broadcast(nodes, root, torus_tree(shape, r, start, sign), "Bine tree")
        for start, sign in _torus_ports(nodes, shape)
    ]
    return concurrent(shares, "multiport Bine tree")


def multiport_scatter_allgather(
    nodes: Sequence[str], shape: Sequence[int], root: str
) -> StepSchedule:
    """The ``2D`` scatter + allgather broadcasts along the torus trees and multiport Swing's
    allgathers at once, each on ``1 / 2D`` of the vector (``2 log2 N`` steps)."""
    r = _rank(nodes, root)
    shares = []
    for start, sign in _torus_ports(nodes, shape):
        allgather = butterfly_allgather(nodes, _port(shape, start, sign), "Swing")
        tree = torus_tree(shape, r, start, sign)
        shares.append(scatter_allgather(nodes, root, tree, allgather, "scatter + allgather"))
    return concurrent(shares, "multiport scatter + allgather")


def _port(shape: Sequence[int], start: int, sign: int) -> Callable[[int], Sequence[Pairing]]:
    """Multiport Swing's pairings of one port, as the butterfly builders take them."""

    def pairings(p: int) -> Sequence[Pairing]:
        return torus_pairings(shape, start, sign)

    return pairings


def hierarchical_broadcast(
    nodes: Sequence[str],
    boxes: Sequence[Sequence[str]],
    root: str,
    across: str = "direct",
    name: str = "hierarchical",
) -> StepSchedule:
    """The root's position in every box (``across``: the direct or the binomial tree over
    the boxes from the root's), each of them sending to the rest of its box in the step
    after it got the data (the root in the first step, alongside its sends across).

    >>> s = hierarchical_broadcast("abcd", [["a", "b"], ["c", "d"]], "b", "binomial tree")
    >>> s.method, [[(m.src, m.dst) for m in step] for step in s.steps]
    ('hierarchical (binomial tree + direct)', [[('b', 'd'), ('b', 'a')], [('d', 'c')]])
    """
    trees = {"direct": direct_tree, "binomial tree": binomial_tree}
    if across not in trees:
        raise ScheduleError(f"across boxes a broadcast runs {' or '.join(trees)}, not {across!r}")
    home = [c for c, box in enumerate(boxes) if root in box]
    if not home or sorted(v for box in boxes for v in box) != sorted(nodes):
        raise ScheduleError(f"the boxes do not hold the {len(nodes)} nodes and the root {root!r}")
    rank = {v: i for i, v in enumerate(nodes)}
    position = list(boxes[home[0]]).index(root)
    leaders = [rank[box[position]] for box in boxes]
    tree = [
        [(leaders[u], leaders[v]) for u, v in step] for step in trees[across](len(boxes), home[0])
    ]
    tree.append([])
    arrival = {rank[root]: 0} | {v: t + 1 for t, step in enumerate(tree) for _, v in step}
    for box in boxes:
        leader = rank[box[position]]
        tree[arrival[leader]] += [(leader, rank[v]) for v in box if v != box[position]]
    tree = [step for step in tree if step]  # one box: no step across
    return tree_broadcast(nodes, root, tree, f"{name} ({across} + direct)")


#: The broadcasts over any nodes from a root (the reduces are their transposes).
ROOTED_BUILDERS = (
    direct_broadcast,
    binomial_broadcast,
    bine_broadcast,
    binomial_scatter_allgather,
    bine_scatter_allgather,
)
#: The broadcasts on a torus of a given shape (every side a power of two).
ROOTED_TORUS_BUILDERS = (multiport_bine_broadcast, multiport_scatter_allgather)


def rooted_schedules(
    nodes: Sequence[str],
    collective: str,
    root: str,
    shape: Sequence[int] | None = None,
    boxes: Sequence[Sequence[str]] | None = None,
    lines: Sequence[Sequence[str]] | None = None,
) -> list[StepSchedule]:
    """Every broadcast of :data:`ROOTED_BUILDERS` (with ``shape``, a torus whose sides are
    all powers of two, also :data:`ROOTED_TORUS_BUILDERS`; with ``boxes``, two or more equal
    boxes, :func:`hierarchical_broadcast` across them by the direct and (on three or more)
    the binomial tree; with ``lines``, the lines of a grid, the same named
    ``dimension-wise``) from ``root``, or for ``collective == "reduce"`` their transposes.

    >>> [s.method for s in rooted_schedules("abcd", "reduce", "c", (2, 2))][-3:]
    ['scatter + allgather (Bine)', 'multiport Bine tree', 'multiport scatter + allgather']
    """
    found = [build(nodes, root) for build in ROOTED_BUILDERS]
    if shape is not None and all(d >= 2 and d & (d - 1) == 0 for d in shape):
        found += [build(nodes, shape, root) for build in ROOTED_TORUS_BUILDERS]
    for groups, name in ((boxes, "hierarchical"), (lines, "dimension-wise")):
        if groups is not None and len(groups) > 1:
            found += [
                hierarchical_broadcast(nodes, groups, root, across, name)
                for across in ("direct", "binomial tree")[: 1 + (len(groups) > 2)]
            ]  # on two boxes the two trees across are one
    return found if collective == "broadcast" else [transposed(s) for s in found]
