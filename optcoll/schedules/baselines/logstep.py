"""Log-step collectives as step schedules: recursive doubling and halving, Rabenseifner, Bruck.

Each builder returns a :class:`~optcoll.core.step_schedule.StepSchedule` over the
compute nodes in the order given (rank ``i`` is ``nodes[i]``), as MPI libraries run them
(Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication Operations in
MPICH", IJHPCA 2005; Bruck et al., "Efficient Algorithms for All-to-All Communications in
Multiport Message-Passing Systems", IEEE TPDS 1997):

* recursive doubling allgather: in step ``s`` rank ``x`` exchanges everything it holds with
  ``x XOR 2^s``; ``log2 N`` steps, the ``s``-th moving ``2^s`` blocks;
* recursive halving reduce-scatter: in step ``s`` rank ``x`` sends to ``x XOR N / 2^(s+1)``
  the half of its remaining blocks that the partner's side keeps, which adds them;
* recursive doubling allreduce: every step exchanges (and adds) the whole vector;
* Rabenseifner allreduce: recursive halving reduce-scatter, then recursive doubling
  allgather of the reduced blocks;
* Bruck allgather (any ``N``): in step ``s`` rank ``x`` sends the ``min(2^s, N - 2^s)``
  blocks ``x, x + 1, ...`` (mod ``N``) it holds to rank ``x - 2^s``; ``ceil(log2 N)`` steps.

``N`` not a power of two (all but Bruck): with ``p`` the largest power of two below ``N``
and ``r = N - p``, the ranks ``2i`` (``i < r``) fold into ``2i + 1`` in a first step (an
allgather sends its block, the reductions their whole vector, which the partner adds);
the ``p`` remaining ranks run the power-of-two algorithm on *groups* of blocks (a
partner's group holds its own block and its extra rank's); a last step gives every
folded rank what it must end with (the whole result; a reduce-scatter its own block).

The halving and doubling steps are one *butterfly*: a sequence of pairings ``pi_0 ..
pi_{k-1}`` of the ``p`` ranks, and ``D_t(x)``, the groups rank ``x`` is responsible for
after step ``t - 1`` of the reduce-scatter (``D_k(x) = {x}``, ``D_t(x) = D_{t+1}(x) |
D_{t+1}(pi_t(x))``); in step ``t`` rank ``x`` sends ``pi_t(x)`` the groups
``D_{t+1}(pi_t(x))``; the allgather runs the steps backwards. Any pairing sequence whose
``D_0`` is every group works (Swing's, :mod:`optcoll.schedules.baselines.swing`);
:func:`optcoll.verify.steps.verify_steps` checks each result by executing it.

Examples
--------
>>> s = rabenseifner_allreduce([f"g{i}" for i in range(8)])
>>> s.num_steps, [len(step[0].blocks) for step in s.steps]
(6, [4, 2, 1, 1, 2, 4])
>>> bruck_allgather(["a", "b", "c"]).num_steps
2
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import ScheduleError

__all__ = [
    "Pairing",
    "Fold",
    "xor_pairings",
    "butterfly_allgather",
    "butterfly_reduce_scatter",
    "butterfly_allreduce",
    "exchange_allreduce",
    "recursive_doubling_allgather",
    "recursive_halving_reduce_scatter",
    "recursive_doubling_allreduce",
    "rabenseifner_allreduce",
    "bruck_allgather",
    "concurrent",
]

#: A pairing of the ``p`` ranks of a butterfly step: rank ``x``'s partner.
Pairing = Callable[[int], int]


class Fold:
    """The non-power-of-two handling of ``N`` ranks (see the module docstring).

    Attributes
    ----------
    active : list of int
        The ``p`` ranks that run the power-of-two algorithm, in order.
    extra : dict
        Folded rank -> the active rank it folds into.
    groups : list of tuple of int
        Per active rank (by position), the blocks of its group.

    Examples
    --------
    >>> f = Fold(6)
    >>> f.active, f.extra, f.groups
    ([1, 3, 4, 5], {0: 1, 2: 3}, [(0, 1), (2, 3), (4,), (5,)])
    """

    def __init__(self, n: int) -> None:
        if n < 2:
            raise ScheduleError(f"a log-step collective needs 2 or more compute nodes, not {n}")
        p = 1 << (n.bit_length() - 1)
        r = n - p
        self.active = [2 * i + 1 for i in range(r)] + list(range(2 * r, n))
        self.extra = {2 * i: 2 * i + 1 for i in range(r)}
        self.groups = [(x - 1, x) if x < 2 * r else (x,) for x in self.active]


def xor_pairings(p: int) -> list[Pairing]:
    """Recursive halving's pairings of ``p = 2^k`` ranks: ``x XOR p/2``, ..., ``x XOR 1``.

    >>> [f(0) for f in xor_pairings(8)]
    [4, 2, 1]
    """
    return [_xor(p >> (t + 1)) for t in range(p.bit_length() - 1)]


def _xor(mask: int) -> Pairing:
    def partner(x: int) -> int:
        return x ^ mask

    return partner


def _responsible(pairings: Sequence[Pairing], p: int) -> list[list[frozenset[int]]]:
    """``D_t(x)`` for ``t = 0 .. k`` (the module docstring)."""
    k = len(pairings)
    table = [[frozenset({x}) for x in range(p)]]
    for t in reversed(range(k)):
        later = table[0]
        table.insert(0, [later[x] | later[pairings[t](x)] for x in range(p)])
    return table


def _blocks(groups: Sequence[tuple[int, ...]], members: frozenset[int]) -> tuple[int, ...]:
    return tuple(sorted(b for g in members for b in groups[g]))


def _rs_steps(nodes: Sequence[str], f: Fold, pairings: Sequence[Pairing]) -> list[tuple[Send, ...]]:
    table = _responsible(pairings, len(f.active))
    steps = []
    for t, pair in enumerate(pairings):
        steps.append(
            tuple(
                Send(
                    nodes[f.active[x]],
                    nodes[f.active[pair(x)]],
                    _blocks(f.groups, table[t + 1][pair(x)]),
                    True,
                )
                for x in range(len(f.active))
            )
        )
    return steps


def _ag_steps(nodes: Sequence[str], f: Fold, pairings: Sequence[Pairing]) -> list[tuple[Send, ...]]:
    """The allgather of the groups: the reduce-scatter's steps backwards."""
    table = _responsible(pairings, len(f.active))
    steps = []
    for t in reversed(range(len(pairings))):
        pair = pairings[t]
        steps.append(
            tuple(
                Send(
                    nodes[f.active[x]],
                    nodes[f.active[pair(x)]],
                    _blocks(f.groups, table[t + 1][x]),
                )
                for x in range(len(f.active))
            )
        )
    return steps


def _fold_in(nodes: Sequence[str], f: Fold, blocks: Sequence[int] | None) -> list[tuple[Send, ...]]:
    """The first step: each folded rank sends its own block (allgather, ``blocks`` None) or
    the whole vector (added) to its partner; no step for a power of two."""
    if not f.extra:
        return []
    return [
        tuple(
            Send(nodes[e], nodes[q], (e,) if blocks is None else tuple(blocks), blocks is not None)
            for e, q in f.extra.items()
        )
    ]


def _fold_out(nodes: Sequence[str], f: Fold, collective: str) -> list[tuple[Send, ...]]:
    """The last step: each partner gives its folded rank what it must end with."""
    if not f.extra:
        return []
    n = len(nodes)

    def wanted(e: int) -> tuple[int, ...]:
        if collective == "reduce_scatter":
            return (e,)
        return tuple(b for b in range(n) if collective == "allreduce" or b != e)

    return [tuple(Send(nodes[q], nodes[e], wanted(e)) for e, q in f.extra.items())]


def _checked(nodes: Sequence[str]) -> tuple[str, ...]:
    nodes = tuple(nodes)
    if len(set(nodes)) != len(nodes):
        raise ScheduleError("a log-step collective needs distinct compute nodes")
    return nodes


def butterfly_allgather(
    nodes: Sequence[str], pairings: Callable[[int], Sequence[Pairing]], method: str
) -> StepSchedule:
    """An allgather over the butterfly ``pairings(p)`` (run backwards), any ``N``."""
    nodes = _checked(nodes)
    f = Fold(len(nodes))
    steps = [
        *_fold_in(nodes, f, None),
        *_ag_steps(nodes, f, pairings(len(f.active))),
        *_fold_out(nodes, f, "allgather"),
    ]
    return StepSchedule("allgather", method, nodes, len(nodes), tuple(steps))


def butterfly_reduce_scatter(
    nodes: Sequence[str], pairings: Callable[[int], Sequence[Pairing]], method: str
) -> StepSchedule:
    """A reduce-scatter over the butterfly ``pairings(p)``, any ``N``."""
    nodes = _checked(nodes)
    n = len(nodes)
    f = Fold(n)
    steps = [
        *_fold_in(nodes, f, range(n)),
        *_rs_steps(nodes, f, pairings(len(f.active))),
        *_fold_out(nodes, f, "reduce_scatter"),
    ]
    return StepSchedule("reduce_scatter", method, nodes, n, tuple(steps))


def butterfly_allreduce(
    nodes: Sequence[str], pairings: Callable[[int], Sequence[Pairing]], method: str
) -> StepSchedule:
    """Reduce-scatter then allgather over the butterfly ``pairings(p)``, any ``N``."""
    nodes = _checked(nodes)
    n = len(nodes)
    f = Fold(n)
    chosen = pairings(len(f.active))
    steps = [
        *_fold_in(nodes, f, range(n)),
        *_rs_steps(nodes, f, chosen),
        *_ag_steps(nodes, f, chosen),
        *_fold_out(nodes, f, "allreduce"),
    ]
    return StepSchedule("allreduce", method, nodes, n, tuple(steps))


def exchange_allreduce(
    nodes: Sequence[str], pairings: Callable[[int], Sequence[Pairing]], method: str
) -> StepSchedule:
    """Every step exchanges and adds the whole vector with the partner of ``pairings(p)``
    run backwards (recursive doubling's order), any ``N``: the latency-optimal allreduce."""
    nodes = _checked(nodes)
    n = len(nodes)
    f = Fold(n)
    whole = tuple(range(n))
    exchanges = [
        tuple(
            Send(nodes[f.active[x]], nodes[f.active[pair(x)]], whole, True)
            for x in range(len(f.active))
        )
        for pair in reversed(pairings(len(f.active)))
    ]
    steps = [*_fold_in(nodes, f, whole), *exchanges, *_fold_out(nodes, f, "allreduce")]
    return StepSchedule("allreduce", method, nodes, n, tuple(steps))


def recursive_doubling_allgather(nodes: Sequence[str]) -> StepSchedule:
    """Recursive doubling allgather (``floor(log2 N)`` steps, two more unless ``N`` is a
    power of two).

    >>> s = recursive_doubling_allgather("abcd")
    >>> [(m.src, m.dst, m.blocks) for m in s.steps[1]][:2]
    [('a', 'c', (0, 1)), ('b', 'd', (0, 1))]
    """
    return butterfly_allgather(nodes, xor_pairings, "recursive doubling")


def recursive_halving_reduce_scatter(nodes: Sequence[str]) -> StepSchedule:
    """Recursive halving reduce-scatter.

    >>> [len(step[0].blocks) for step in recursive_halving_reduce_scatter("abcdefgh").steps]
    [4, 2, 1]
    """
    return butterfly_reduce_scatter(nodes, xor_pairings, "recursive halving")


def recursive_doubling_allreduce(nodes: Sequence[str]) -> StepSchedule:
    """Recursive doubling allreduce: ``log2 N`` exchanges of the whole vector.

    >>> recursive_doubling_allreduce("abcde").num_steps  # fold, 2 exchanges, unfold
    4
    """
    return exchange_allreduce(nodes, xor_pairings, "recursive doubling")


def rabenseifner_allreduce(nodes: Sequence[str]) -> StepSchedule:
    """Rabenseifner's allreduce: recursive halving reduce-scatter, recursive doubling
    allgather (``2 log2 N`` steps, two more unless ``N`` is a power of two)."""
    return butterfly_allreduce(nodes, xor_pairings, "Rabenseifner")


def bruck_allgather(nodes: Sequence[str]) -> StepSchedule:
    """Bruck's allgather, ``ceil(log2 N)`` steps for any ``N``.

    >>> [[len(m.blocks) for m in step][:1] for step in bruck_allgather("abcdef").steps]
    [[1], [2], [2]]
    """
    nodes = _checked(nodes)
    n = len(nodes)
    Fold(n)  # N >= 2
    steps = []
    distance = 1
    while distance < n:
        count = min(distance, n - distance)
        steps.append(
            tuple(
                Send(nodes[x], nodes[(x - distance) % n], tuple((x + j) % n for j in range(count)))
                for x in range(n)
            )
        )
        distance *= 2
    return StepSchedule("allgather", "Bruck", nodes, n, tuple(steps))


def concurrent(schedules: Sequence[StepSchedule], method: str) -> StepSchedule:
    """The ``schedules`` (one collective over the same nodes, as many steps each) run at
    once, each on its own share of the data: step ``s`` holds every schedule's step ``s``,
    the blocks of schedule ``j`` shifted past those of the schedules before it (so block
    ``b`` of an allgather or reduce-scatter stays node ``b mod N``'s).

    >>> two = concurrent([recursive_doubling_allgather("abcd")] * 2, "twice")
    >>> two.blocks, two.num_steps, two.steps[0][4].blocks
    (8, 2, (4,))
    """
    first = schedules[0]
    if any(
        (s.collective, s.compute_nodes, s.num_steps, s.root)
        != (first.collective, first.compute_nodes, first.num_steps, first.root)
        for s in schedules
    ):
        raise ScheduleError("concurrent schedules need one collective, nodes, root and step count")
    offsets = [sum(s.blocks for s in schedules[:j]) for j in range(len(schedules))]
    steps = tuple(
        tuple(
            Send(m.src, m.dst, tuple(b + offset for b in m.blocks), m.reduce)
            for schedule, offset in zip(schedules, offsets, strict=True)
            for m in schedule.steps[t]
        )
        for t in range(first.num_steps)
    )
    return StepSchedule(
        first.collective,
        method,
        first.compute_nodes,
        sum(s.blocks for s in schedules),
        steps,
        first.root,
    )
