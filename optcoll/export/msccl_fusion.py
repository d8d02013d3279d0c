"""Fused MSCCL instructions: a receive and the send that forwards its chunks, one step.

MSCCL's step types ``rcs`` (receive, copy, send) and ``rrcs`` (receive, reduce, copy,
send) receive a chunk from the thread block's receive peer, store it (``rrcs``: after adding
the local chunk ``srcbuf[srcoff]``) at ``dstbuf[dstoff]``, and send the stored value on to
the thread block's send peer, all in one step (one primitive call, one overhead), as
msccl-tools' compiler fuses them. The consumers, read at the commits of
:data:`optcoll.core.msccl_runtimes.SOURCE_COMMITS`:

* parsers (``msccl_parser.cc`` lines 499-543 of ROCm/rccl and Azure/msccl-executor-nccl,
  ``src/graph/topo.cc`` 986-1027 of microsoft/msccl): ``rcs`` has a send and a receive and
  bounds-checks ``dstoff`` only (``srcbuf`` must still name a buffer); ``rrs`` checks
  ``srcoff``; ``rrcs`` both; a send needs the thread block's ``send`` peer and a receive its
  ``recv`` peer, so a fused step lives in a thread block with ``recv="P" send="Q"``, which
  then owns both connections (P to this GPU, this GPU to Q, on its channel);
* interpreters (``src/device/msccl_kernel.cu`` 300-307 of msccl-executor-nccl,
  ``src/collectives/device/msccl_interpreter.h`` 185-191 of microsoft/msccl):
  ``recvCopySend(dstOffset)``, ``recvReduceSend(srcOffset)``,
  ``recvReduceCopySend(srcOffset, dstOffset)``; ``depid``/``deps`` are waited for before the
  step as for any other type, and ``hasdep`` publishes it after;
* ROCm/rccl ``src/misc/msccl/msccl_setup.cc`` 430-437 refuses at launch any algorithm using
  ``rcs``, ``rrs``, ``rrcs`` (or ``rrc``): its kernels are built without ``fullOps``
  (``src/device/msccl_kernel_impl.h`` 433-435). :func:`fuses` says where fusing is allowed
  (:attr:`~optcoll.core.msccl_runtimes.RuntimeProfile.launch_step_types`).

A receive ``r`` (from ``P``) and a send ``s`` (to ``Q``) of one GPU fuse when ``s`` carries
exactly the chunks ``r`` wrote (``s.forwards is r``, same chunks, same count), ``s`` waits for
``r`` and nothing else, and both are on one channel. Each receive connection ``(P, c)`` takes
one send peer ``Q`` (the one with the most such pairs, each ``(Q, c)`` taken once); the two
thread blocks become one, in key order, a fused step in its receive's place. A pair fuses
only where the send is the first send to ``Q`` after the receive: so each connection still
carries its chunks in the order its other end takes them, and fusing moves a send earlier,
never a receive later. A fused step waits for room on its send
connection while holding its receive: a cycle of such steps can deadlock where the separate
steps could not, so :func:`deadlocked_fusions` runs the program with connections of one
chunk (the least the checker, ``optcoll check-xml``, runs a program with) and the writer
undoes one fusion on every cycle of waits it finds, until the program completes.

Examples
--------
>>> from optcoll.export.msccl_blocks import _Step
>>> r = _Step("r", ("i", 0), ("o", 0), 1, (0, 0, 0), 1, (0, 1), tb=("recv", 0, 0))
>>> s = _Step("s", ("o", 0), ("o", 0), 1, (1, 0, 0), 1, (1, 2), r, tb=("send", 2, 0))
>>> s.forwards = r
>>> steps = {1: [r, s]}
>>> fuse(steps, frozenset(), 64)
1
>>> [(st.type, st.tb) for st in steps[1]]
[('rcs', ('fused', 0, 0))]
"""

from __future__ import annotations

import bisect
from collections import defaultdict, deque

from optcoll.core.msccl_runtimes import RuntimeProfile
from optcoll.export.msccl_blocks import WIDEST_THREADBLOCKS, Block, _Step

__all__ = [
    "fuses",
    "fuse",
    "chain_channels",
    "deadlocked_fusions",
    "longest_chain",
    "FUSED",
]

#: The fused type of a receive that is forwarded: plain receive and receive-reduce-copy.
FUSED = {"r": "rcs", "rrc": "rrcs"}

Numbered = dict[int, list[tuple[Block, list[_Step]]]]


def fuses(profile: RuntimeProfile) -> bool:
    """Whether files for ``profile`` may fuse receives with sends (its kernels run ``rcs``
    and ``rrcs``).

    >>> from optcoll.core.msccl_runtimes import RUNTIMES
    >>> [fuses(p) for p in RUNTIMES.values()]
    [False, True, True]
    """
    return all(kind in profile.launch_step_types for kind in FUSED.values())


def fuse(
    steps: dict[int, list[_Step]],
    excluded: frozenset[tuple[int, tuple[int, ...]]],
    limit: int,
) -> int:
    """Fuse, in place, every receive of ``steps`` (per GPU, thread blocks assigned) with the
    send that forwards it where allowed (see the module docstring), except receives
    ``(gpu, key)`` in ``excluded`` and where the merged thread block would hold more than
    ``limit`` steps; returns how many were fused.

    A fused receive becomes ``rcs``/``rrcs`` (its ``fused`` the send it absorbed, which
    leaves the GPU's list); the two thread blocks become ``("fused", P, channel)``.
    """
    count = 0
    for gpu, gpu_steps in steps.items():
        candidates: dict[tuple[int, int, int], list[tuple[_Step, _Step]]] = defaultdict(list)
        for s in gpu_steps:
            r = s.forwards
            if s.type != "s" or r is None or s.dep is not r or r.type not in FUSED:
                continue
            if r.tb[0] != "recv" or s.tb[0] != "send" or r.tb[2] != s.tb[2]:
                continue
            if (gpu, r.key) in excluded or r.cnt != s.cnt or r.dst != s.src:
                continue
            candidates[(r.tb[1], s.tb[1], r.tb[2])].append((r, s))
        taken: set[tuple[str, int, int]] = set()
        absorbed: set[int] = set()
        for (p, q, chan), pairs in sorted(candidates.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if ("recv", p, chan) in taken or ("send", q, chan) in taken:
                continue
            fused = _merge(gpu_steps, ("recv", p, chan), ("send", q, chan), pairs, limit)
            if not fused:
                continue
            taken |= {("recv", p, chan), ("send", q, chan)}
            absorbed |= {id(s) for s in fused}
            count += len(fused)
        if absorbed:
            steps[gpu] = [st for st in gpu_steps if id(st) not in absorbed]
    return count


def _merge(
    gpu_steps: list[_Step],
    recv_tb: Block,
    send_tb: Block,
    pairs: list[tuple[_Step, _Step]],
    limit: int,
) -> list[_Step]:
    """Merge one GPU's thread blocks ``recv_tb`` and ``send_tb`` into one, fusing the pairs
    (receive, send) whose send is the first after the receive; returns the sends absorbed
    (none, and nothing changed, if the merged block would exceed ``limit`` steps)."""
    receives = sorted((st for st in gpu_steps if st.tb == recv_tb), key=lambda st: st.key)
    sends = sorted((st for st in gpu_steps if st.tb == send_tb), key=lambda st: st.key)
    keys = [s.key for s in sends]
    partner: dict[int, _Step] = {}
    for r, s in pairs:  # s the first send after r: the fused step takes r's place
        first = bisect.bisect_right(keys, r.key)
        if first < len(sends) and sends[first] is s:
            partner[id(r)] = s
    absorbed = {id(s) for s in partner.values()}
    if not partner or len(receives) + len(sends) - len(absorbed) > limit:
        return []
    block: Block = ("fused", recv_tb[1], recv_tb[2])
    for st in receives + sends:
        st.tb = block
        absorbed_send = partner.get(id(st))
        if absorbed_send is not None:
            st.type, st.fused = FUSED[st.type], absorbed_send
    return list(partner.values())


def chain_channels(steps: dict[int, list[_Step]], profile: RuntimeProfile) -> bool:
    """Give the messages of every forwarding chain one channel, so that a receive and the
    send forwarding it meet in one thread block (its receive connection and its send
    connection on one channel). A message and the message forwarding its chunks on are one
    chain; the chains, first key first, take the lowest channel on which none of their
    connections (sender, receiver) carries a message yet (else the one where the fewest
    do), within the runtime's channels: a connection then carries one message per channel
    where it can, and no fused step waits for room behind another. False (nothing changed)
    where that needs more than ``min(profile.max_threadblocks, WIDEST_THREADBLOCKS)`` thread
    blocks on a GPU, ``profile.max_steps`` steps in a thread block or more than the peers
    per channel. A ``re`` (a reduction RCCL's kernels run after its receive) goes to its
    receive's thread block."""
    message: dict[int, tuple] = {}  # step id -> its message (key, link)
    for gpu_steps in steps.values():
        for step in gpu_steps:
            if step.link is not None:
                message[id(step)] = (step.key, step.link)
    parent = {m: m for m in message.values()}

    def root(m: tuple) -> tuple:
        while parent[m] != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    for gpu_steps in steps.values():
        for step in gpu_steps:
            if step.forwards is not None and id(step.forwards) in message:  # not a ``re``
                parent[root(message[id(step)])] = root(message[id(step.forwards)])
    chains: dict[tuple, list[tuple]] = defaultdict(list)
    for m in sorted(parent):
        chains[root(m)].append(m)
    used: dict[tuple[int, int, int], int] = defaultdict(int)  # (sender, receiver, channel)
    channel: dict[tuple, int] = {}
    for head in sorted(chains):
        links = [m[1] for m in chains[head]]
        clash = [sum(used[(a, b, c)] for a, b in links) for c in range(profile.max_channels)]
        chan = clash.index(min(clash))
        for m in chains[head]:
            channel[m] = chan
            used[(m[1][0], m[1][1], chan)] += 1
    blocks: dict[tuple[int, Block], int] = defaultdict(int)
    for gpu, gpu_steps in steps.items():
        for step in gpu_steps:
            if step.link is not None:
                sender = step.link[0] == gpu
                peer = step.link[1] if sender else step.link[0]
                blocks[(gpu, ("send" if sender else "recv", peer, channel[message[id(step)]]))] += 1
            elif step.joins is not None:  # a ``re``, in its receive's thread block
                joined = step.joins
                assert joined.link is not None
                block = ("recv", joined.link[0], channel[message[id(joined)]])
                blocks[(gpu, block)] += 1
    per_gpu: dict[int, int] = defaultdict(lambda: 1)  # and one for local copies
    peers: dict[tuple[int, str, int], int] = defaultdict(int)
    for gpu, (kind, _, chan) in blocks:
        per_gpu[gpu] += 1
        peers[(gpu, kind, chan)] += 1
    if (
        max(per_gpu.values(), default=0) > min(profile.max_threadblocks, WIDEST_THREADBLOCKS)
        or max(blocks.values(), default=0) > profile.max_steps
        or max(peers.values(), default=0) > profile.max_peers_per_channel
    ):
        return False
    for gpu, gpu_steps in steps.items():
        for step in gpu_steps:
            if step.link is not None:
                sender = step.link[0] == gpu
                peer = step.link[1] if sender else step.link[0]
                step.tb = ("send" if sender else "recv", peer, channel[message[id(step)]])
    for gpu_steps in steps.values():  # a ``re`` runs in its receive's thread block
        for step in gpu_steps:
            if step.joins is not None:
                step.tb = step.joins.tb
    return True


def longest_chain(tbs: dict[int, list[tuple[Block, list[_Step]]]]) -> int:
    """The most steps in a chain of steps each waiting for the one before: the step
    before it in its thread block, its ``dep``, or (a receive) the step that sent what it
    takes (the ``i``-th receive on a connection takes the ``i``-th send). Every wait points
    to an earlier step (the program cannot deadlock), so the steps, taken as their waits are
    met, all get a length."""
    waits: dict[int, list[_Step]] = defaultdict(list)
    sent: dict[tuple[int, int, int], list[_Step]] = defaultdict(list)
    taken: dict[tuple[int, int, int], list[_Step]] = defaultdict(list)
    steps = []
    for gpu, blocks in tbs.items():
        for tb, block in blocks:
            for i, step in enumerate(block):
                steps.append(step)
                waits[id(step)] += [w for w in (block[i - 1] if i else None, step.dep) if w]
                link = step.fused.link if step.fused is not None else step.link
                if link is not None and link[0] == gpu:
                    sent[(link[0], link[1], tb[2])].append(step)
                if step.link is not None and step.link[1] == gpu:
                    taken[(step.link[0], step.link[1], tb[2])].append(step)
    for conn, receives in taken.items():
        for sender, receive in zip(sent[conn], receives, strict=False):
            waits[id(receive)].append(sender)
    waiting = {id(step): len(waits[id(step)]) for step in steps}
    followers: dict[int, list[_Step]] = defaultdict(list)
    for step in steps:
        for w in waits[id(step)]:
            followers[id(w)].append(step)
    length: dict[int, int] = {}
    ready = [step for step in steps if not waiting[id(step)]]
    while ready:  # every step once all it waits for has its length
        step = ready.pop()
        length[id(step)] = 1 + max((length[id(w)] for w in waits[id(step)]), default=0)
        for follower in followers[id(step)]:
            waiting[id(follower)] -= 1
            if not waiting[id(follower)]:
                ready.append(follower)
    if len(length) < len(steps):
        raise AssertionError("the steps wait for one another in a cycle")
    return max(length.values(), default=0)


def _connections(gpu: int, tb: Block, step: _Step) -> tuple[tuple | None, tuple | None]:
    """(the connection ``step`` receives from, the one it sends to), each (sender,
    receiver, channel) or None."""
    link = step.link
    if link is None:
        return None, None
    out = step.fused.link if step.fused is not None else (link if link[0] == gpu else None)
    into = link if link[1] == gpu else None
    return (
        (into[0], into[1], tb[2]) if into is not None else None,
        (out[0], out[1], tb[2]) if out is not None else None,
    )


def deadlocked_fusions(tbs: Numbered) -> list[_Step]:
    """The fused steps to write unfused so that the program may complete with connections of
    one chunk (none: it completes as it is).

    The program runs as the runtimes run it: every thread block takes its steps in order, a
    step first waits for its ``dep``, then moves its chunks one at a time, each needing a
    chunk to receive and room to send. If thread blocks are left stuck, each waits for one
    other (the sender of the chunk it lacks, the receiver that would make room, the thread
    block of its ``dep``), and every cycle of those waits gives one fused step: the first
    (by GPU and key) of the cycle's steps under way, else of the steps its thread blocks have
    still to run.

    >>> from optcoll.export.msccl_blocks import _Step
    >>> a = _Step("s", ("i", 0), ("o", 0), 1, (0,), 0, (0, 1), tb=("send", 1, 0))
    >>> b = _Step("r", ("i", 0), ("o", 0), 1, (0,), 1, (0, 1), tb=("recv", 0, 0))
    >>> deadlocked_fusions({0: [(a.tb, [a])], 1: [(b.tb, [b])]})
    []
    """
    blocks = [(gpu, tb, block) for gpu, numbered in tbs.items() for tb, block in numbered]
    plans = [[_connections(gpu, tb, st) for st in block] for gpu, tb, block in blocks]
    senders: dict[tuple, int] = {}
    receivers: dict[tuple, int] = {}
    owner: dict[int, int] = {}  # step id -> its block
    for b, (_, _, block) in enumerate(blocks):
        for st, (into, out) in zip(block, plans[b], strict=True):
            owner[id(st)] = b
            if into is not None:
                receivers[into] = b
            if out is not None:
                senders[out] = b
    on_gpu: dict[int, list[int]] = defaultdict(list)
    for b, (gpu, _, _) in enumerate(blocks):
        on_gpu[gpu].append(b)
    held: dict[tuple, int] = defaultdict(int)  # chunks on each connection
    done: set[int] = set()
    pc = [0] * len(blocks)
    unit = [0] * len(blocks)
    waits: dict[int, int | None] = {}  # stuck block -> the block it waits for
    ready = deque(range(len(blocks)))
    queued = [True] * len(blocks)
    while ready:
        b = ready.popleft()
        queued[b] = False
        gpu, _, block = blocks[b]
        woken: list[int] = []
        waits.pop(b, None)
        while pc[b] < len(block):
            step = block[pc[b]]
            if step.dep is not None and id(step.dep) not in done:
                waits[b] = owner.get(id(step.dep))
                break
            into, out = plans[b][pc[b]]
            while unit[b] < step.cnt:
                if into is not None and not held[into]:
                    waits[b] = senders.get(into)
                    break
                if out is not None and held[out]:
                    waits[b] = receivers.get(out)
                    break
                for conn, change, other in ((into, -1, senders), (out, 1, receivers)):
                    if conn is not None:
                        held[conn] += change
                        woken.append(other.get(conn, b))
                unit[b] += 1
            if unit[b] < step.cnt:
                break
            done.add(id(step))
            woken += on_gpu[gpu]
            pc[b], unit[b] = pc[b] + 1, 0
        for w in woken:
            if not queued[w] and w != b:
                queued[w] = True
                ready.append(w)
    undo: dict[int, _Step] = {}
    seen: set[int] = set()
    for start in sorted(waits):
        path: list[int] = []
        at: int | None = start
        while at is not None and at in waits and at not in seen:
            seen.add(at)
            path.append(at)
            at = waits[at]
        if at is None or at not in path:
            continue  # ends in a cycle found before, or at a block that is not stuck
        cycle = path[path.index(at) :]
        # the cycle's fused steps under way, else those its thread blocks have still to run
        fused = [blocks[c][2][pc[c]] for c in cycle if blocks[c][2][pc[c]].fused is not None]
        fused = fused or [st for c in cycle for st in blocks[c][2][pc[c] :] if st.fused]
        if fused:
            first = min(fused, key=lambda st: (st.gpu, st.key))
            undo[id(first)] = first
    return list(undo.values())
