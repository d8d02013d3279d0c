"""Step schedules: a collective as rounds of messages between compute nodes.

The log-step algorithms (recursive doubling and halving, Rabenseifner, Bruck, Swing, the
binomial and Bine broadcast trees) are not trees of chunks but *rounds*: in each step every
node sends at most a few messages, each carrying some *blocks* of the data, to other compute
nodes, and waits for what it receives before its next step. A :class:`StepSchedule` holds
exactly that, independent of the network: which blocks go from which node to which, step by
step. How a message crosses the network (its path through switches) is the simulator's
business, as for an MSCCL program: every message takes the widest path between its two
nodes.

Semantics (checked by executing them, :mod:`optcoll.verify.steps`):

* the data is cut into ``blocks`` equal blocks of ``M / blocks`` bytes each (``M`` the
  allreduce's vector, the allgather's output, the reduce-scatter's input, the broadcast's or
  the reduce's vector); for an allgather or a reduce-scatter ``blocks`` is a multiple of
  ``N`` and block ``b`` is part of node ``b mod N``'s shard (one block per node,
  ``blocks == N``, unless the shards are cut into shares, as the multiport algorithms do);
* at the start, for an allgather node ``i`` holds the blocks of its own shard; for a
  reduce-scatter, an allreduce or a reduce every node holds its own input of every
  block; for a broadcast the ``root`` holds every block (its input) and the others none;
* in step ``s`` every :class:`Send` carries the sender's value of each of its blocks as
  the sender held it at the *start* of step ``s`` (so two nodes may exchange in one
  step); with ``reduce`` the receiver adds it to its own value, else it stores it;
* at the end, allgather: every node holds every block; reduce-scatter: node ``i`` holds
  the blocks of its shard summed over all inputs; allreduce: every node holds every block
  summed over all inputs; broadcast: every node holds every block (the root's input);
  reduce: the root holds every block summed over all inputs (a reduce is the transpose of
  a broadcast: every message reversed, in reverse order, adding).

A message of ``b`` blocks is one step of its connection (one overhead in the simulator)
and ``b * M / blocks`` bytes.

Examples
--------
>>> s = StepSchedule("allgather", "pair exchange", ("a", "b"), 2,
...                  ((Send("a", "b", (0,)), Send("b", "a", (1,))),))
>>> s.num_steps, s.messages, s.max_blocks
(1, 2, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

from optcoll.exceptions import ScheduleError

__all__ = ["Send", "StepSchedule", "STEP_COLLECTIVES", "ROOTED", "ranks_after"]

#: The collectives a step schedule can hold.
STEP_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")
#: Those of them with a root (:attr:`StepSchedule.root`).
ROOTED = ("broadcast", "reduce")


def ranks_after(rank: int, peer: int, n: int) -> int:
    """How many ranks after ``rank`` (of ``n``, cyclically) ``peer`` is: the order in which a
    rank posts its messages of a step (:meth:`StepSchedule.posted`).

    >>> ranks_after(6, 1, 8), ranks_after(1, 6, 8)
    (3, 5)
    """
    return (peer - rank) % n


@dataclass(frozen=True)
class Send:
    """One message of a step: ``blocks`` from compute node ``src`` to ``dst``, added to the
    receiver's values when ``reduce`` (else stored)."""

    src: str
    dst: str
    blocks: tuple[int, ...]
    reduce: bool = False


@dataclass(frozen=True)
class StepSchedule:
    """A collective as steps of messages (see the module docstring).

    Attributes
    ----------
    collective : str
        One of :data:`STEP_COLLECTIVES`.
    method : str
        Display name, e.g. ``"recursive doubling"``.
    compute_nodes : tuple of str
        The ranks, in order: rank ``i`` is ``compute_nodes[i]``.
    blocks : int
        How many equal blocks the data is cut into.
    steps : tuple of tuple of Send
        The messages of each step.
    root : str or None
        The root of a broadcast or a reduce (one of ``compute_nodes``); None otherwise.
    """

    collective: str
    method: str
    compute_nodes: tuple[str, ...]
    blocks: int
    steps: tuple[tuple[Send, ...], ...]
    root: str | None = None

    def __post_init__(self) -> None:
        if self.collective not in STEP_COLLECTIVES:
            raise ScheduleError(
                f"a step schedule holds {', '.join(STEP_COLLECTIVES)}, not {self.collective!r}"
            )
        if (self.collective in ROOTED) != (self.root is not None):
            raise ScheduleError(
                f"a step schedule has a root exactly when it is a {' or a '.join(ROOTED)}"
            )
        if self.root is not None and self.root not in self.compute_nodes:
            raise ScheduleError(f"the root {self.root!r} is not a compute node of the schedule")

    @property
    def rank_blocks(self) -> int:
        """The blocks of one rank's part of the buffer, ``blocks // N`` (an allgather's
        input shard); a broadcast's or a reduce's buffer is the root's one vector: all
        ``blocks``.

        >>> StepSchedule("allgather", "x", ("a", "b"), 4, ()).rank_blocks
        2
        >>> StepSchedule("broadcast", "x", ("a", "b"), 4, (), root="a").rank_blocks
        4
        """
        return self.blocks if self.root is not None else self.blocks // len(self.compute_nodes)

    @property
    def num_steps(self) -> int:
        """How many steps the schedule takes."""
        return len(self.steps)

    @property
    def messages(self) -> int:
        """How many messages all steps send."""
        return sum(len(step) for step in self.steps)

    @property
    def max_blocks(self) -> int:
        """The most blocks one message carries."""
        return max((len(send.blocks) for step in self.steps for send in step), default=0)

    def posted(self, step: tuple[Send, ...]) -> list[Send]:
        """The messages of ``step`` in the order they are posted: each rank's to the ranks
        after it first (:func:`ranks_after`), and at equal distance by sender's rank. So the
        first message into every rank comes from the rank before it, not every rank's first
        message into rank 0; MSCCL++ plans put in this order (dgx-h100:2 allreduce 1 MiB,
        hierarchical (direct + one-shot): 13.70 µs, in the schedule's order 15.74), and
        plan's simulator and the Chakra step traces post in it.

        >>> ab, ba, bc = Send("a", "b", (0,)), Send("b", "a", (1,)), Send("b", "c", (2,))
        >>> s = StepSchedule("allgather", "x", ("a", "b", "c"), 3, ((ab, ba, bc),))
        >>> [m.src + m.dst for m in s.posted(s.steps[0])]
        ['ab', 'bc', 'ba']
        """
        rank = {v: i for i, v in enumerate(self.compute_nodes)}
        n = len(rank)
        return sorted(step, key=lambda m: (ranks_after(rank[m.src], rank[m.dst], n), rank[m.src]))

    def block_bytes(self, size: float) -> float:
        """Bytes of one block of an ``size``-byte collective.

        >>> StepSchedule("allreduce", "x", ("a", "b", "c"), 6, ()).block_bytes(600)
        100.0
        """
        return size / self.blocks

    def in_pieces(self, pieces: int) -> StepSchedule:
        """The same schedule with every block cut into ``pieces`` and every message into
        ``pieces`` messages, the ``i``-th carrying the ``i``-th piece of each of its blocks
        (block ``b``'s ``i``-th piece is block ``b + i * blocks``, so it stays in node
        ``b mod N``'s shard). It moves the same bytes between the same nodes in the same
        steps; a file in which each piece is a step of its own forwards a message's first
        piece while its others still arrive (:mod:`optcoll.export.msccl_steps`).

        >>> s = StepSchedule("allgather", "x", ("a", "b"), 2,
        ...                  ((Send("a", "b", (0,)), Send("b", "a", (1,))),))
        >>> [(m.src, m.blocks) for m in s.in_pieces(2).steps[0]], s.in_pieces(2).blocks
        ([('a', (0,)), ('a', (2,)), ('b', (1,)), ('b', (3,))], 4)
        """
        if pieces == 1:
            return self
        steps = tuple(
            tuple(
                Send(m.src, m.dst, tuple(b + i * self.blocks for b in m.blocks), m.reduce)
                for m in step
                for i in range(pieces)
            )
            for step in self.steps
        )
        return StepSchedule(
            self.collective, self.method, self.compute_nodes, self.blocks * pieces, steps,
            self.root,
        )  # fmt: skip
