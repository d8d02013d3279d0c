"""Allgather by dissemination over any rounds of arcs, and reduce-scatter as its transpose.

A *round* is a set of arcs ``(x, y)`` between ranks: in it ``x`` sends ``y`` every block
``x`` holds and ``y`` does not (each sender gives the blocks only it could give, and a block
several could give ``y`` in one round comes from the one giving ``y`` the fewest blocks so
far, the first listed on ties, so an overlap evens out the messages). Starting from each
rank holding the blocks it owns, the rounds are an allgather when every rank ends holding
every block. Every rank then receives every block it does not own exactly once, so the
blocks a block's owner's value travels along form a tree spanning the ranks (each rank's
parent the rank it received the block from).

The reduce-scatter is the allgather *transposed*: the rounds in reverse order, every
message reversed and added. A rank's message to its parent in a block's tree leaves
after its children's (they received the block from it later in the allgather, so they
send it earlier here), so it carries the sum over its subtree, and the owner ends with
the sum over every rank: each input once.

This serves the butterflies whose partners' reach overlaps (Swing on an even ring that
is not a power of two, where the pairings cover the ring in ``ceil(log2 p)`` steps but
some ranks are reached twice) and steps that are not pairings at all (a rank receiving
from ``x + delta`` while sending to ``x - delta``): the allgather is exact in its bytes
(``N - 1`` blocks received per rank), whatever overlap the rounds have.

Examples
--------
>>> ring = [[(x, (x + 1) % 3) for x in range(3)], [(x, (x + 2) % 3) for x in range(3)]]
>>> gathered = gather_rounds([1 << x for x in range(3)], ring)
>>> [[(x, y, b) for x, y, b in r] for r in gathered]
[[(0, 1, (0,)), (1, 2, (1,)), (2, 0, (2,))], [(0, 2, (0,)), (1, 0, (1,)), (2, 1, (2,))]]
>>> transpose_rounds(gathered)[0]
[(2, 0, (0,)), (0, 1, (1,)), (1, 2, (2,))]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.exceptions import ScheduleError
from optcoll.schedules.baselines.logstep import concurrent

__all__ = [
    "Arc",
    "Message",
    "SideStep",
    "gather_rounds",
    "transpose_rounds",
    "torus_arcs",
    "shared_schedule",
]

#: A sender and a receiver rank.
Arc = tuple[int, int]
#: A sender, a receiver and the blocks the message carries.
Message = tuple[int, int, tuple[int, ...]]
#: One step along one side of a torus: a coordinate -> the coordinates it sends to (any
#: integers, taken mod the side).
SideStep = Callable[[int], Sequence[int]]


def gather_rounds(owned: Sequence[int], rounds: Sequence[Sequence[Arc]]) -> list[list[Message]]:
    """The messages of the allgather over ``rounds`` (module docstring), rank ``x`` starting
    with the blocks of the bit set ``owned[x]``; arcs that would carry nothing are left
    out. Raises :class:`~optcoll.exceptions.ScheduleError` naming a rank that ends without
    every block.

    >>> gather_rounds([1, 2], [[(0, 1), (1, 0)]])
    [[(0, 1, (0,)), (1, 0, (1,))]]
    >>> gather_rounds([1, 2, 4], [[(0, 1), (1, 0)]])
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ScheduleError: the rounds leave rank 0 without blocks (2,)
    """
    held = list(owned)
    everything = 0
    for blocks in held:
        everything |= blocks
    messages: list[list[Message]] = []
    for arcs in rounds:
        unique = list(dict.fromkeys(arcs))  # an arc listed twice is one message
        senders: dict[int, list[int]] = {}
        for x, y in unique:
            senders.setdefault(y, []).append(x)
        carried = {}
        for y, xs in senders.items():
            carried.update(_shares(y, xs, [held[x] & ~held[y] for x in xs]))
        for y in senders:
            held[y] |= sum(carried[(x, y)] for x in senders[y])
        messages.append([(x, y, _members(carried[(x, y)])) for x, y in unique if carried[(x, y)]])
    for x, blocks in enumerate(held):
        if blocks != everything:
            raise ScheduleError(
                f"the rounds leave rank {x} without blocks {_members(everything & ~blocks)}"
            )
    return messages


def _shares(y: int, senders: Sequence[int], offers: Sequence[int]) -> dict[Arc, int]:
    """What each of ``senders`` gives ``y`` of the blocks it offers (bit sets): each gives
    the blocks only it offers, then a block several offer goes to the one that gives ``y``
    the fewest blocks so far (the first listed on ties), so the largest message is as small
    as the offers allow (two senders offering 16 blocks each of their own and 8 both: 20
    each, where taking the blocks in their order could give 16 and 24).

    >>> _shares(9, [0, 1], [0b0111, 0b1110])  # blocks 1 and 2 both: one each
    {(0, 9): 3, (1, 9): 12}
    """
    if sum(o.bit_count() for o in offers) == _union(offers).bit_count():  # no overlap
        return {(x, y): o for x, o in zip(senders, offers, strict=True)}
    given = [o & ~_union([p for j, p in enumerate(offers) if j != i]) for i, o in enumerate(offers)]
    counts = [g.bit_count() for g in given]
    for b in _members(_union(offers) & ~_union(given)):
        bit = 1 << b
        i = min((i for i, o in enumerate(offers) if o & bit), key=lambda i: counts[i])
        given[i] |= bit
        counts[i] += 1
    return {(x, y): g for x, g in zip(senders, given, strict=True)}


def _union(bits: Sequence[int]) -> int:
    total = 0
    for b in bits:
        total |= b
    return total


def transpose_rounds(rounds: Sequence[Sequence[Message]]) -> list[list[Message]]:
    """The reduce-scatter of an allgather's messages: rounds reversed, each message reversed
    (its receiver adds it)."""
    return [[(y, x, blocks) for x, y, blocks in arcs] for arcs in reversed(rounds)]


def torus_arcs(
    shape: Sequence[int], start: int, steps: Sequence[Sequence[SideStep]]
) -> list[list[Arc]]:
    """The allgather rounds of one collective on a torus of ``shape`` (ranks row-major):
    ``steps[i]`` are side ``i``'s steps in reduce-scatter order (nearest first); the
    sides take turns from ``start`` (skipping a side whose steps are done), every line of
    the side at once, and the allgather runs the list backwards (its largest messages to
    the nearest partners).

    >>> torus_arcs((2, 2), 0, [[lambda c: (c + 1,)]] * 2)  # side 0 (stride 2), then side 1
    [[(0, 1), (1, 0), (2, 3), (3, 2)], [(0, 2), (1, 3), (2, 0), (3, 1)]]
    """
    total = sum(len(s) for s in steps)
    done = [0] * len(shape)
    n = math.prod(shape)
    rounds: list[list[Arc]] = []
    axis = start % len(shape)
    while len(rounds) < total:
        if done[axis] < len(steps[axis]):
            step = steps[axis][done[axis]]
            stride = math.prod(shape[axis + 1 :])
            size = shape[axis]
            rounds.append(
                [
                    (x, x + (moved % size - x // stride % size) * stride)
                    for x in range(n)
                    for moved in step(x // stride % size)
                ]
            )
            done[axis] += 1
        axis = (axis + 1) % len(shape)
    return rounds[::-1]


def shared_schedule(
    nodes: Sequence[str], collective: str, shares: Sequence[Sequence[Sequence[Arc]]], method: str
) -> StepSchedule:
    """One collective run on as many shares of the data as ``shares`` has allgather rounds,
    all at once (:func:`~optcoll.schedules.baselines.logstep.concurrent`): each share's
    allgather (every rank owning its block), its transpose as the reduce-scatter, the two
    in turn as the allreduce.

    >>> pair = [[(0, 1), (1, 0)]]
    >>> s = shared_schedule("ab", "allreduce", [pair, pair], "twice")
    >>> s.blocks, [[(m.src, m.dst, m.blocks, m.reduce) for m in step][:2] for step in s.steps]
    (4, [[('b', 'a', (0,), True), ('a', 'b', (1,), True)], [('a', 'b', (0,), False), ('b', 'a', (1,), False)]])
    """
    nodes = tuple(nodes)
    n = len(nodes)
    if n < 2 or len(set(nodes)) != n:
        raise ScheduleError(f"a {method} {collective} needs two or more distinct compute nodes")

    def sends(rounds: Sequence[Sequence[Message]], reduce: bool) -> list[tuple[Send, ...]]:
        return [tuple(Send(nodes[x], nodes[y], b, reduce) for x, y, b in arcs) for arcs in rounds]

    schedules = []
    for arcs in shares:
        gathered = gather_rounds([1 << x for x in range(n)], arcs)
        steps = {
            "allgather": sends(gathered, False),
            "reduce_scatter": sends(transpose_rounds(gathered), True),
        }
        steps["allreduce"] = steps["reduce_scatter"] + steps["allgather"]
        schedules.append(StepSchedule(collective, method, nodes, n, tuple(steps[collective])))
    return concurrent(schedules, method)


def _members(bits: int) -> tuple[int, ...]:
    found = []
    while bits:
        low = bits & -bits
        found.append(low.bit_length() - 1)
        bits ^= low
    return tuple(found)
