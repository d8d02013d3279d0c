"""MSCCL XML export, checked by an independent structural simulator.

``check_msccl(xml, collective, k, root)`` below re-reads the XML text with no
help from the exporter and checks, step by step:

* the format's attributes and limits (thread block ids contiguous, one send
  and one receive peer per thread block, unique (peer, channel) connections,
  ``cnt < 72``, offsets and counts inside the declared buffers, dependencies
  pointing at existing steps, ``hasdep`` set exactly on depended-upon steps);
* sends and receives of every connection match in order and in size;
* no deadlock even with rendezvous sends (the step graph with every matched
  send/receive one node, a fused ``rcs``/``rrcs`` step joining the node of its receive with
  that of its send, is acyclic);
* no data race: two accesses of one buffer chunk, one of them a write, are
  ordered by happens-before (thread block order, dependencies, send -> receive);
* the data: simulating the steps in a topological order, every GPU ends with
  every chunk exactly once (allgather, broadcast) or with the full reduction
  of every chunk, each contribution exactly once (allreduce, reduce-scatter, reduce).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from optcoll.core.schedule import Schedule, Tree, TreeEdge
from optcoll.exceptions import ArgumentError, ExportError
from optcoll.export import export_text
from optcoll.export.msccl import msccl_program, placements, to_msccl_xml
from optcoll.export.runtimes import runtime_profile

SENDS = {"s", "rcs", "rrs", "rrcs"}
RECVS = {"r", "rcs", "rrs", "rrc", "rrcs"}
READS_SRC = {"s", "rrs", "rrc", "rrcs", "cpy", "re"}
WRITES_DST = {"r", "rcs", "rrc", "rrcs", "cpy", "re"}
REDUCES = {"rrs", "rrc", "rrcs", "re"}


@dataclass(eq=False)
class _S:
    gpu: int
    tb: int
    s: int
    type: str
    src: tuple[str, int]
    dst: tuple[str, int]
    cnt: int
    dep: tuple[int, int]
    hasdep: int
    send: int
    recv: int
    chan: int
    preds: list = field(default_factory=list)


SPELLINGS = {"reduce_scatter": ("reduce_scatter", "reducescatter")}


def _alias(collective: str, k: int, inplace: bool):
    """Where a buffer cell lives when the input is aliased into the output (in place)."""

    def where(gpu, buf, off):
        if not inplace:
            return (gpu, buf, off)
        if collective == "allgather" and buf == "i":
            return (gpu, "o", gpu * k + off)
        if collective == "reduce_scatter" and buf == "o":
            return (gpu, "i", gpu * k + off)
        if collective in ("allreduce", "broadcast", "reduce") and buf == "i":
            return (gpu, "o", off)
        return (gpu, buf, off)

    return where


def check_msccl(
    text: str, collective: str, k: int, root: int | None = None, *, inplace: bool = False
) -> dict:
    """Raise AssertionError on any structural or data fault; return final buffers.

    With ``inplace`` the program runs with the input aliased into the output as the
    runtimes define it, and the file must say ``inplace="1"``."""
    algo = ET.fromstring(text)
    assert algo.tag == "algo"
    for attr in (
        "name",
        "proto",
        "nchannels",
        "nchunksperloop",
        "ngpus",
        "coll",
        "inplace",
        "outofplace",
        "minBytes",
        "maxBytes",
    ):
        assert attr in algo.attrib, f"algo lacks {attr}"
    n = int(algo.get("ngpus"))
    nchannels = int(algo.get("nchannels"))
    assert algo.get("coll") in SPELLINGS.get(collective, (collective,))
    assert algo.get("inplace" if inplace else "outofplace") == "1"
    where = _alias(collective, k, inplace)
    gpus = algo.findall("gpu")
    assert sorted(int(g.get("id")) for g in gpus) == list(range(n))
    sizes, steps, tbs = {}, [], {}
    for g in gpus:
        gid = int(g.get("id"))
        sizes[gid] = {b: int(g.get(f"{b}_chunks")) for b in "ios"}
        assert max(sizes[gid]["i"], sizes[gid]["o"]) == int(algo.get("nchunksperloop"))
        ids = [int(tb.get("id")) for tb in g.findall("tb")]
        assert ids == list(range(len(ids))), "thread block ids must be 0..n-1"
        send_conn, recv_conn = set(), set()
        for tb in g.findall("tb"):
            tid, send, recv, chan = (int(tb.get(a)) for a in ("id", "send", "recv", "chan"))
            assert 0 <= chan < nchannels
            assert -1 <= send < n and send != gid and -1 <= recv < n and recv != gid
            if send >= 0:
                assert (send, chan) not in send_conn, "two thread blocks send on one connection"
                send_conn.add((send, chan))
            if recv >= 0:
                assert (recv, chan) not in recv_conn, "two thread blocks receive on one connection"
                recv_conn.add((recv, chan))
            block = []
            for i, st in enumerate(tb.findall("step")):
                assert int(st.get("s")) == i
                step = _S(
                    gid,
                    tid,
                    i,
                    st.get("type"),
                    (st.get("srcbuf"), int(st.get("srcoff"))),
                    (st.get("dstbuf"), int(st.get("dstoff"))),
                    int(st.get("cnt")),
                    (int(st.get("depid")), int(st.get("deps"))),
                    int(st.get("hasdep")),
                    send,
                    recv,
                    chan,
                )
                assert step.type in SENDS | RECVS | READS_SRC | WRITES_DST | {"nop"}
                assert 1 <= step.cnt < 72
                if step.type in SENDS:
                    assert send >= 0
                if step.type in RECVS:
                    assert recv >= 0
                for used, (buf, off) in (
                    (step.type in READS_SRC, step.src),
                    (step.type in WRITES_DST, step.dst),
                ):
                    if used:
                        assert buf in "ios" and 0 <= off and off + step.cnt <= sizes[gid][buf], (
                            f"gpu {gid} tb {tid} step {i}: {buf}[{off}:+{step.cnt}] out of range"
                        )
                if block:
                    step.preds.append(block[-1])
                block.append(step)
            tbs[(gid, tid)] = block
            steps.extend(block)
    # dependencies and hasdep
    depended = set()
    for st in steps:
        if st.dep[0] >= 0:
            target = tbs.get((st.gpu, st.dep[0]))
            assert target is not None and 0 <= st.dep[1] < len(target), "dangling dependency"
            st.preds.append(target[st.dep[1]])
            depended.add(target[st.dep[1]])
    for st in steps:
        assert st.hasdep == (st in depended), f"hasdep wrong on gpu {st.gpu} tb {st.tb} step {st.s}"
    # match sends with receives per connection, in order
    outgoing, incoming = defaultdict(list), defaultdict(list)
    for st in steps:
        if st.type in SENDS:
            outgoing[(st.gpu, st.send, st.chan)].append(st)
        if st.type in RECVS:
            incoming[(st.recv, st.gpu, st.chan)].append(st)
    assert set(outgoing) == set(incoming)
    partner = {}
    for conn, sends in outgoing.items():
        recvs = incoming[conn]
        assert len(sends) == len(recvs), (
            f"connection {conn}: {len(sends)} sends, {len(recvs)} recvs"
        )
        for a, b in zip(sends, recvs, strict=True):
            assert a.cnt == b.cnt
            partner[b] = a
    order = _deadlock_free_order(steps, partner)
    _check_races(steps, partner, order, where)
    return _simulate(order, partner, sizes, collective, k, n, root, where)


def _groups(steps, partner):
    """Every step's rendezvous group: a send and its matching receive happen together, and
    a fused step (rcs, rrcs: a receive and a send) joins the group of its receive with that
    of its send. Returns step -> its group's steps in data order (each send before its
    receive)."""
    root = {st: st for st in steps}

    def find(x):
        while root[x] is not x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for recv, send in partner.items():
        root[find(send)] = find(recv)
    mate = {send: recv for recv, send in partner.items()}
    members = defaultdict(list)
    for st in steps:
        members[find(st)].append(st)
    group = {}
    for items in members.values():
        heads = [st for st in items if st not in partner]
        assert len(heads) == 1, "a rendezvous group is one chain of sends and receives"
        chain = [heads[0]]
        while chain[-1] in mate:
            chain.append(mate[chain[-1]])
        assert len(chain) == len(items)
        for st in items:
            group[st] = chain
    return group


def _deadlock_free_order(steps, partner):
    """Topological order of the rendezvous graph (every group of :func:`_groups` one
    node), as the groups' steps in data order."""
    group = _groups(steps, partner)
    rep = {st: group[st][0] for st in steps}
    succ, indeg = defaultdict(set), Counter()
    nodes = {rep[st] for st in steps}
    for st in steps:
        for p in st.preds:
            a, b = rep[p], rep[st]
            if a is not b and b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    ready = [v for v in nodes if indeg[v] == 0]
    order = []
    while ready:
        v = ready.pop()
        order.extend(group[v])
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    assert len(order) == len(steps), "deadlock: the step graph has a cycle"
    return order


def _check_races(steps, partner, order, where):
    """Happens-before with buffered sends; conflicting accesses must be ordered."""
    preds = {st: list(st.preds) for st in steps}
    for recv, send in partner.items():
        preds[recv].append(send)
    index = {st: i for i, st in enumerate(order)}  # a send precedes its receive
    reach = {}
    for st in order:
        bits = 0
        for p in preds[st]:
            bits |= reach[p] | (1 << index[p])
        reach[st] = bits
    accesses = defaultdict(list)
    for st in steps:
        if st.type in READS_SRC:
            for c in range(st.cnt):
                accesses[where(st.gpu, st.src[0], st.src[1] + c)].append((st, False))
        if st.type in WRITES_DST:
            for c in range(st.cnt):
                accesses[where(st.gpu, st.dst[0], st.dst[1] + c)].append((st, True))
    for cell, acc in accesses.items():
        for i, (a, wa) in enumerate(acc):
            for b, wb in acc[i + 1 :]:
                if a is b or not (wa or wb):
                    continue
                ordered = (reach[b] >> index[a]) & 1 or (reach[a] >> index[b]) & 1
                assert ordered, f"data race on {cell} between {a.type} and {b.type}"


def _simulate(order, partner, sizes, collective, k, n, root, where):
    buf = {}
    writes = Counter()
    for g in range(n):
        for j in range(sizes[g]["i"]):
            buf[where(g, "i", j)] = Counter({(g, j): 1})
    wire = {}
    mate = {send: recv for recv, send in partner.items()}
    for st in order:
        for c in range(st.cnt):
            src = where(st.gpu, st.src[0], st.src[1] + c)
            dst = where(st.gpu, st.dst[0], st.dst[1] + c)
            incoming = wire.pop((id(st), c), None) if st.type in RECVS else None
            if st.type in RECVS:
                assert incoming is not None
            if st.type == "cpy":
                value = buf[src]
            elif st.type == "re":  # adds its source to its destination
                assert src in buf and dst in buf, f"re reads unset {src} or {dst}"
                value = buf[src] + buf[dst]
            elif st.type in REDUCES:
                assert src in buf, f"reduce reads unset {src}"
                value = buf[src] + incoming
            elif st.type in RECVS:
                value = incoming
            else:
                assert src in buf, f"send reads unset {src}"
                value = buf[src]
            if st.type in WRITES_DST:
                buf[dst] = value
                writes[dst] += 1
            if st.type in SENDS:
                wire[(id(mate[st]), c)] = value
    everyone = range(n)
    for g in everyone:
        if collective == "allgather":
            for r in everyone:
                for j in range(k):
                    assert buf.get((g, "o", r * k + j)) == Counter({(r, j): 1})
                    expected = 0 if (where(g, "i", j) == (g, "o", r * k + j)) else 1
                    assert writes[(g, "o", r * k + j)] == expected, "a chunk arrived twice"
        elif collective == "broadcast":
            for j in range(k):
                assert buf.get((g, "o", j)) == Counter({(root, j): 1})
                assert writes[(g, "o", j)] == (0 if g == root and where(g, "i", j)[1] == "o" else 1)
        elif collective == "allreduce":
            for x in range(n * k):
                assert buf.get((g, "o", x)) == Counter({(h, x): 1 for h in everyone})
        elif collective == "reduce_scatter":
            for j in range(k):
                assert buf.get(where(g, "o", j)) == Counter({(h, g * k + j): 1 for h in everyone})
        elif collective == "reduce" and g == root:
            for j in range(k):
                assert buf.get((g, "o", j)) == Counter({(h, j): 1 for h in everyone})
    return buf


# --- hand-made schedules ---------------------------------------------------------------


def _profile(base="msccl", **changes):
    """A runtime profile with some limits changed."""
    from dataclasses import replace

    return replace(runtime_profile(base), **changes)


NODES = ("g0", "g1", "g2", "g3")


def _chain(order, chunks=1):
    return Tree(
        order[0],
        chunks,
        tuple(TreeEdge(a, b, (a, b)) for a, b in zip(order, order[1:], strict=False)),
    )


def _star(root, chunks=1):
    return Tree(root, chunks, tuple(TreeEdge(root, v, (root, "sw", v)) for v in NODES if v != root))


def _binary(root, chunks):
    rest = [v for v in NODES if v != root]
    return Tree(
        root,
        chunks,
        (
            TreeEdge(root, rest[0], (root, rest[0])),
            TreeEdge(root, rest[1], (root, rest[1])),
            TreeEdge(rest[0], rest[2], (rest[0], rest[2])),
        ),
    )


def _ring_schedule(collective):
    """4 GPUs on a bidirectional ring: per root a chain each way, 2 chunks of k=3 and 1."""
    trees = []
    for i in range(4):
        cw = [NODES[(i + j) % 4] for j in range(4)]
        ccw = [NODES[(i - j) % 4] for j in range(4)]
        trees += [_chain(cw, 2), _chain(ccw, 1)]
    return Schedule(collective, "ring4", NODES, 3, tuple(trees))


def _mixed_schedule(collective):
    trees = []
    for r in NODES:
        trees += [_star(r, 1), _binary(r, 3)]
    return Schedule(collective, "mixed4", NODES, 4, tuple(trees))


@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce"])
@pytest.mark.parametrize("make", [_ring_schedule, _mixed_schedule])
@pytest.mark.parametrize(("channels", "pair_peers"), [(1, False), (2, False), (2, True)])
def test_exported_xml_passes_checker(collective, make, channels, pair_peers):
    schedule = make(collective)
    text = to_msccl_xml(schedule, channels=channels, pair_peers=pair_peers)
    check_msccl(text, collective, schedule.k)
    for gpu in ET.fromstring(text).iter("gpu"):
        blocks = [(tb.get("send"), tb.get("recv"), tb.get("chan")) for tb in gpu.iter("tb")]
        blocks = [b for b in blocks if b[:2] != ("-1", "-1")]  # local copies
        one_way = {(s, c) for s, r, c in blocks if r == "-1"} & {
            (r, c) for s, r, c in blocks if s == "-1"
        }
        paired = [b for b in blocks if "-1" not in b[:2]]
        # paired: no peer is left with separate send and receive blocks on one channel
        assert (not one_way) if pair_peers else (not paired)


def test_thread_blocks_are_paired_automatically_to_fit_the_cap():
    schedule = _ring_schedule("allreduce")
    # each GPU talks to 2 peers in both directions: 4 one-way blocks or 2 paired ones
    assert to_msccl_xml(schedule) == to_msccl_xml(schedule, pair_peers=False)
    text = to_msccl_xml(schedule, runtime=_profile(max_threadblocks=2))
    assert text == to_msccl_xml(schedule, runtime=_profile(), channels=1, pair_peers=True)
    check_msccl(text, "allreduce", 3)
    with pytest.raises(ExportError, match="thread blocks"):
        to_msccl_xml(schedule, runtime=_profile(max_threadblocks=1))


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_single_root_collectives(collective):
    trees = (_chain(("g2", "g0", "g1", "g3"), 2), _binary("g2", 1), _star("g2", 1))
    schedule = Schedule(collective, "x", NODES, 4, trees, root="g2")
    check_msccl(to_msccl_xml(schedule), collective, 4, root=2)


def test_large_chunk_counts_are_split_below_the_count_cap():
    schedule = Schedule(
        "allgather",
        "ring4",
        NODES,
        150,
        tuple(_chain([NODES[(i + j) % 4] for j in range(4)], 150) for i in range(4)),
    )
    text = to_msccl_xml(schedule)
    counts = {int(s.get("cnt")) for s in ET.fromstring(text).iter("step")}
    assert max(counts) == 71 and sum(1 for _ in range(0, 150, 71)) == 3
    check_msccl(text, "allgather", 150)


def test_checker_catches_a_missing_chunk():
    text = to_msccl_xml(_ring_schedule("allgather"))
    root = ET.fromstring(text)
    gpu = root.find("gpu")
    local = next(
        tb for tb in gpu.findall("tb") if tb.get("send") == "-1" and tb.get("recv") == "-1"
    )
    local.remove(local.findall("step")[-1])
    with pytest.raises(AssertionError):
        check_msccl(ET.tostring(root, encoding="unicode"), "allgather", 3)


def test_checker_catches_a_cyclic_wait():
    root = ET.fromstring(to_msccl_xml(_ring_schedule("allgather")))
    gpu = root.findall("gpu")[1]
    tbs = {tb.get("id"): tb for tb in gpu.findall("tb")}
    # a forwarding send waits for its receive; make that receive wait for the send too
    send_tb, send = next(
        (tb, st) for tb in tbs.values() for st in tb.findall("step") if st.get("depid") != "-1"
    )
    recv = tbs[send.get("depid")].findall("step")[int(send.get("deps"))]
    recv.set("depid", send_tb.get("id"))
    recv.set("deps", send.get("s"))
    send.set("hasdep", "1")
    with pytest.raises(AssertionError, match="deadlock"):
        check_msccl(ET.tostring(root, encoding="unicode"), "allgather", 3)


def test_export_is_deterministic_and_json_roundtrips():
    schedule = _mixed_schedule("allreduce")
    assert to_msccl_xml(schedule, channels=2) == to_msccl_xml(schedule, channels=2)
    import json

    assert Schedule.from_dict(json.loads(export_text(schedule, "json"))) == schedule


def test_thread_block_cap_raises_with_suggestion():
    with pytest.raises(ExportError, match=r"thread blocks.*msccl_struct.h:18.*smaller -k"):
        to_msccl_xml(_mixed_schedule("allgather"), runtime=_profile("rccl", max_threadblocks=3))


def test_step_cap_spreads_a_connection_over_channels_or_raises():
    schedule = _ring_schedule("allreduce")
    wide = msccl_program(schedule, runtime=_profile(max_steps=2))
    assert wide.max_steps <= 2 and wide.nchannels > 1
    check_msccl(wide.text, "allreduce", 3)
    with pytest.raises(ExportError, match=r"more than 2 steps per thread block.*smaller -k"):
        to_msccl_xml(schedule, runtime=_profile(max_steps=2, max_channels=1))


def test_peers_per_channel_cap_and_bad_inputs():
    with pytest.raises(ExportError, match="too many peers: no assignment of the 1 channels"):
        to_msccl_xml(
            _mixed_schedule("allgather"), runtime=_profile(max_peers_per_channel=1, max_channels=1)
        )
    with pytest.raises(ArgumentError, match="channels must be a positive integer"):
        to_msccl_xml(_mixed_schedule("allgather"), channels=0)
    with pytest.raises(ExportError, match="unknown runtime 'nccl'; valid: rccl, msccl"):
        to_msccl_xml(_mixed_schedule("allgather"), runtime="nccl")
    with pytest.raises(ExportError, match="unknown export format"):
        export_text(_mixed_schedule("allgather"), "nccl")


#: The steps that add to an accumulator (rccl: the ``re`` after a receive into scratch).
ADDS = ("rrc", "re")


def test_checker_catches_a_race_when_a_dependency_is_dropped():
    root = ET.fromstring(to_msccl_xml(_mixed_schedule("allreduce")))
    gpu = next(
        g
        for g in root.findall("gpu")
        if any(st.get("type") in ADDS and st.get("depid") != "-1" for st in g.iter("step"))
    )
    chained = next(
        st for st in gpu.iter("step") if st.get("type") in ADDS and st.get("depid") != "-1"
    )
    chained.set("depid", "-1")
    chained.set("deps", "-1")
    targets = {(st.get("depid"), st.get("deps")) for st in gpu.iter("step")}
    for tb in gpu.findall("tb"):
        for st in tb.findall("step"):
            st.set("hasdep", "1" if (tb.get("id"), st.get("s")) in targets else "0")
    with pytest.raises(AssertionError, match="data race"):
        check_msccl(ET.tostring(root, encoding="unicode"), "allreduce", 4)


# --- built-in families and the CLI ------------------------------------------------------

BUILTIN_CASES = [
    ("dgx-a100:1", "allgather"),
    ("dgx-a100:1", "reduce_scatter"),
    ("dgx-a100:1", "allreduce"),
    ("mi250:1", "allgather"),
    ("mi250:1", "reduce_scatter"),
    ("mi250:1", "allreduce"),
    pytest.param("dgx-a100:2", "allgather", marks=pytest.mark.slow),
    pytest.param("dgx-a100:2", "allreduce", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("spec", "collective"), BUILTIN_CASES)
def test_builtin_schedules_export_to_valid_msccl(spec, collective):
    from optcoll.schedules.collectives import build_collective
    from optcoll.topologies import build

    schedule = build_collective(build(spec), collective)
    check_msccl(to_msccl_xml(schedule, channels=2), collective, schedule.k)


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_builtin_single_root_export(collective):
    from optcoll.schedules.collectives import build_collective
    from optcoll.topologies import build

    schedule = build_collective(build("mi250:1"), collective, root="b0.gcd5")
    check_msccl(to_msccl_xml(schedule), collective, schedule.k, root=5)


def test_cli_export_msccl_and_json(tmp_path, capsys):
    import json

    from optcoll.cli import main
    from optcoll.io import load_schedule

    xml_path, json_path = tmp_path / "ar.xml", tmp_path / "ag.json"
    assert main(["export", "dgx-a100:1", "--collective", "allreduce", "-o", str(xml_path)]) == 0
    check_msccl(xml_path.read_text(), "allreduce", 1)
    assert main(["export", "dgx-a100:1", "--format", "json", "-o", str(json_path)]) == 0
    assert load_schedule(json_path).collective == "allgather"
    # a schedule file (its optional "format" field left out) converts to reduce-scatter
    data = json.loads(json_path.read_text())
    del data["format"]
    json_path.write_text(json.dumps(data))
    rs_path = tmp_path / "rs.xml"
    assert (
        main(["export", str(json_path), "--collective", "reduce_scatter", "-o", str(rs_path)]) == 0
    )
    check_msccl(rs_path.read_text(), "reduce_scatter", 1)
    assert "wrote" in capsys.readouterr().out
    # an allgather schedule cannot become a broadcast; a tiny cap gives a clear one-line error
    assert main(["export", str(json_path), "--collective", "broadcast", "-o", str(rs_path)]) == 2
    assert main(["export", "dgx-a100:1", "--max-threadblocks", "1", "-o", str(rs_path)]) == 2
    err = capsys.readouterr().err
    assert "cannot be exported as broadcast" in err and "try --runtime msccl" in err


@hs.composite
def _random_schedules(draw):
    """Random arborescences (random parents, random chunk splits) on 2-5 GPUs."""
    n = draw(hs.integers(2, 5))
    nodes = tuple(f"g{i}" for i in range(n))
    collective = draw(
        hs.sampled_from(["allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"])
    )
    k = draw(hs.integers(1, 4))
    roots = [nodes[draw(hs.integers(0, n - 1))]] if collective in ("broadcast", "reduce") else nodes
    trees = []
    for root in roots:
        left = k
        while left:
            chunks = draw(hs.integers(1, left))
            left -= chunks
            order = [root] + draw(hs.permutations([v for v in nodes if v != root]))
            edges = []
            for i, v in enumerate(order[1:], start=1):
                parent = order[draw(hs.integers(0, i - 1))]
                edges.append(TreeEdge(parent, v, (parent, v)))
            trees.append(Tree(root, chunks, tuple(edges)))
    root = roots[0] if collective in ("broadcast", "reduce") else None
    return Schedule(collective, "random", nodes, k, tuple(trees), root=root)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    _random_schedules(),
    hs.integers(1, 3),
    hs.booleans(),
    hs.sampled_from(["rccl", "msccl", "msccl-executor"]),
)
def test_random_tree_schedules_export_to_valid_msccl(schedule, channels, pair_peers, runtime):
    root = None if schedule.root is None else schedule.compute_nodes.index(schedule.root)
    for placement in placements(schedule.collective, runtime):
        text = to_msccl_xml(
            schedule,
            channels=channels,
            pair_peers=pair_peers,
            runtime=runtime,
            placement=placement,
            max_bytes=1 << 30,
        )
        if placement in ("outofplace", "both"):
            check_msccl(text, schedule.collective, schedule.k, root)
        if placement in ("inplace", "both"):
            check_msccl(text, schedule.collective, schedule.k, root, inplace=True)


def test_malformed_schedules_are_refused_with_the_tree_named():
    good = _ring_schedule("allgather")
    cyclic = Tree("g0", 2, (TreeEdge("g0", "g1", ("g0", "g1")), TreeEdge("g1", "g0", ("g1", "g0"))))
    bad = Schedule("allgather", "x", NODES, 3, (cyclic, *good.trees[1:]))
    with pytest.raises(ExportError, match=r"tree 0 \(root 'g0'\): node 'g0'"):
        to_msccl_xml(bad)
    short = Tree("g0", 2, (TreeEdge("g0", "g1", ("g0", "g1")),))
    with pytest.raises(ExportError, match="unreached: g2, g3"):
        to_msccl_xml(Schedule("allgather", "x", NODES, 3, (short, *good.trees[1:])))
    with pytest.raises(ExportError, match="root 'g0': the chunks of its trees sum to 1"):
        to_msccl_xml(Schedule("allgather", "x", NODES, 3, good.trees[1:]))


# --- runtime profiles, placements, the CLI's deployable export ---------------------------


@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce"])
def test_runtime_spelling_placement_flags_and_size_limits(collective):
    schedule = _mixed_schedule(collective)
    rccl = ET.fromstring(to_msccl_xml(schedule, runtime="rccl"))
    msccl = ET.fromstring(to_msccl_xml(schedule, runtime="msccl", max_bytes=1 << 20))
    spelt = {"reduce_scatter": ("reducescatter", "reduce_scatter")}
    assert (rccl.get("coll"), msccl.get("coll")) == spelt.get(collective, (collective,) * 2)
    # RCCL: 0 = no upper limit, inclusive; microsoft/msccl: nBytes < maxBytes
    assert (rccl.get("minBytes"), rccl.get("maxBytes")) == ("0", "0")
    assert msccl.get("maxBytes") == str((1 << 20) + 1)
    both = collective != "allgather"
    assert (rccl.get("inplace"), rccl.get("outofplace")) == (("1" if both else "0"), "1")
    assert msccl.get("inplace") == "0"


@pytest.mark.parametrize(
    "collective", ["allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"]
)
def test_inplace_programs_are_correct_with_the_input_aliased(collective):
    if collective in ("broadcast", "reduce"):
        trees = (_chain(("g2", "g0", "g1", "g3"), 2), _binary("g2", 1), _star("g2", 1))
        schedule, root = Schedule(collective, "x", NODES, 4, trees, root="g2"), 2
    else:
        schedule, root = _mixed_schedule(collective), None
    for runtime in ("rccl", "msccl"):
        names = placements(collective, runtime)
        assert names == (
            ("both",)
            if runtime == "rccl" and collective not in ("allgather", "broadcast")
            else ("outofplace", "inplace")
        )
        inplace = to_msccl_xml(schedule, runtime=runtime, placement=names[-1], max_bytes=4096)
        check_msccl(inplace, collective, schedule.k, root, inplace=True)
    if collective in ("allgather", "broadcast"):
        # the out-of-place program copies the input: under aliasing that copy races the sends
        outofplace = to_msccl_xml(schedule, placement="outofplace")
        with pytest.raises(AssertionError):
            check_msccl(
                outofplace.replace('inplace="0"', 'inplace="1"'),
                collective,
                schedule.k,
                root,
                inplace=True,
            )
        with pytest.raises(ExportError, match="not correct both in place and out of place"):
            to_msccl_xml(schedule, placement="both")


def test_msccl_reduce_scatter_needs_a_finite_max_bytes():
    with pytest.raises(ExportError, match="allocates.*--max-bytes"):
        to_msccl_xml(_mixed_schedule("reduce_scatter"), runtime="msccl")
    text = to_msccl_xml(_mixed_schedule("allgather"), runtime="msccl")
    assert ET.fromstring(text).get("maxBytes") == str(2**63 - 1)


def test_many_peers_are_spread_over_channels_to_meet_the_per_channel_limit():
    """40 GPUs, every one a star root: 39 send and 39 receive peers per GPU, above the
    32 per channel of every runtime; channels are chosen per GPU pair, so it fits."""
    nodes = tuple(f"g{i}" for i in range(40))
    trees = tuple(
        Tree(r, 1, tuple(TreeEdge(r, v, (r, "sw", v)) for v in nodes if v != r)) for r in nodes
    )
    schedule = Schedule("allgather", "star40", nodes, 1, trees)
    program = msccl_program(schedule, runtime="rccl")
    assert program.nchannels == 2 and program.max_peers == 39
    assert program.max_threadblocks <= 64 and program.max_steps <= 64
    algo = ET.fromstring(program.text)
    for gpu in algo.iter("gpu"):
        for chan in ("0", "1"):
            tbs = [tb for tb in gpu.iter("tb") if tb.get("chan") == chan]
            assert sum(tb.get("send") != "-1" for tb in tbs) <= 32
            assert sum(tb.get("recv") != "-1" for tb in tbs) <= 32
    check_msccl(program.text, "allgather", 1)


def _cli(tmp_path, *argv):
    from optcoll.cli import main

    return main(["export", *argv])


def test_cli_deployable_k_report_and_refusal_to_overwrite(tmp_path, capsys):
    import json

    out = tmp_path / "ag.xml"
    assert _cli(tmp_path, "dgx-a100:2", "-o", str(out), "--placement", "both", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    files = report["files"]
    assert [f["placement"] for f in files] == ["outofplace", "inplace"]
    assert [f["path"] for f in files] == [str(out), str(tmp_path / "ag.inplace.xml")]
    first = files[0]
    assert first["k"] == 8 and first["ratio_to_optimum"] == "481/480"
    assert first["nchunksperloop"] == 128 and first["powers_of_two_from"] == 512
    assert first["steps_per_threadblock"] <= 64 and first["threadblocks_per_gpu"] <= 64
    assert report["k_tried"] == [[1, "91/90"], [2, "91/90"], [4, "91/90"], [8, "481/480"]]
    for entry in files:
        check_msccl(
            Path(entry["path"]).read_text(), "allgather", 8, inplace=entry["placement"] == "inplace"
        )
    assert _cli(tmp_path, "dgx-a100:2", "-o", str(out)) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    # only the in-place sibling exists: still refused, and nothing is written
    out.unlink()
    assert _cli(tmp_path, "dgx-a100:2", "-o", str(out), "--placement", "both") == 2
    assert "ag.inplace.xml exists; pass --force" in capsys.readouterr().err and not out.exists()
    assert _cli(tmp_path, "dgx-a100:2", "-o", str(out), "--force", "-k", "1") == 0
    assert "k = 1, time factor 7/150 (optimum 3/65, ratio 91/90" in capsys.readouterr().out


def test_cli_exact_k_warns_which_sizes_it_serves(tmp_path, capsys):
    out = tmp_path / "rs.xml"
    assert (
        _cli(tmp_path, "dgx-a100:2", "--collective", "reduce_scatter", "--exact", "-o", str(out))
        == 0
    )
    captured = capsys.readouterr()
    assert "k = 13" in captured.out and "ratio 1 " in captured.out
    assert "multiples of 208: no power-of-two size" in captured.err
    check_msccl(out.read_text(), "reduce_scatter", 13)


def test_cli_size_warning_is_true_when_n_is_not_a_power_of_two(tmp_path, capsys):
    # N = 6: nchunksperloop = 6 k, so no total element count is a power of two, but a
    # per-rank count (the allgather's count) that is a power of two from k is served.
    assert _cli(tmp_path, "ring:6", "-o", str(tmp_path / "ag.xml")) == 0
    err = capsys.readouterr().err
    assert "multiples of 12 (count * N with N = 6, not a power of two)" in err
    assert "per-rank counts that are powers of two from 2 elements are served" in err
    assert (
        _cli(tmp_path, "ring:6", "--collective", "allreduce", "-o", str(tmp_path / "ar.xml")) == 0
    )
    err = capsys.readouterr().err
    assert "multiples of 12: no power-of-two size" in err and "per-rank" not in err


def test_cli_broadcast_names_its_root_and_warns(tmp_path, capsys):
    out = tmp_path / "bc.xml"
    assert (
        _cli(tmp_path, "mi250:1", "--collective", "broadcast", "--root", "b0.gcd5", "-o", str(out))
        == 0
    )
    captured = capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bc.xml"]  # -o FILE writes FILE
    assert "does not check the root" in captured.err and "root b0.gcd5 (rank 5)" in captured.err
    check_msccl(out.read_text(), "broadcast", 256, root=5, inplace=False)
    argv = ["mi250:1", "--collective", "broadcast", "--root", "b0.gcd5", "--placement", "inplace"]
    assert _cli(tmp_path, *argv, "-o", str(tmp_path / "bc-in.xml")) == 0
    check_msccl((tmp_path / "bc-in.xml").read_text(), "broadcast", 256, root=5, inplace=True)


def test_cli_verifies_before_writing(tmp_path, capsys):
    import json

    from optcoll.schedules.collectives import build_collective
    from optcoll.topologies import build

    schedule = build_collective(build("dgx-a100:1"), "allgather", k=1)
    data = schedule.to_dict()
    data["time_factor"] = "1/1000"  # a false claim
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    out = tmp_path / "bad.xml"
    assert _cli(tmp_path, str(bad), "-o", str(out)) == 2
    assert "the claimed time factor 1/1000" in capsys.readouterr().err and not out.exists()
    data["topology"] = "dgx-a100:2"  # a schedule of another topology
    bad.write_text(json.dumps(data))
    assert _cli(tmp_path, str(bad), "-o", str(out)) == 2
    assert "content hash" in capsys.readouterr().err and not out.exists()
    del data["topology_hash"]  # without the hash, the verifier finds it out
    bad.write_text(json.dumps(data))
    assert _cli(tmp_path, str(bad), "-o", str(out)) == 2
    assert "fails verification" in capsys.readouterr().err and not out.exists()
    assert _cli(tmp_path, str(bad), "-o", str(out), "--unchecked") == 0
    captured = capsys.readouterr()
    assert "unverified" in captured.out and "1/1000" not in captured.out


def test_cli_bands_tile_the_sizes(tmp_path, capsys):
    import json

    out = tmp_path / "ar.xml"
    assert (
        _cli(
            tmp_path,
            "torus:4x4",
            "--collective",
            "allreduce",
            "--bands",
            "-o",
            str(out),
            "--sizes",
            "1K",
            "1M",
            "64M",
            "--json",
        )  # fmt: skip
        == 0
    )
    files = json.loads(capsys.readouterr().out)["files"]
    edges = [(f["min_bytes"], f["max_bytes"]) for f in files]
    assert edges[0][0] == 0 and edges[-1][1] is None
    for (_, high), (low, _) in zip(edges, edges[1:], strict=False):
        assert low == high + 1
    for entry in files:
        text = Path(entry["path"]).read_text()
        algo = ET.fromstring(text)
        assert algo.get("minBytes") == str(entry["min_bytes"])
        assert algo.get("maxBytes") == str(entry["max_bytes"] or 0)
        # a tree band has k chunks per GPU; a step schedule's band (k None) says its own
        chunks = entry["k"] or int(algo.get("nchunksperloop")) // int(algo.get("ngpus"))
        check_msccl(text, "allreduce", chunks)


DEPLOYED = [
    ("torus:4x4", 4, 4),
    ("dgx-h100:2", 2, 8),
    pytest.param("mi250:1", 32, 256, marks=pytest.mark.slow),
    pytest.param("dgx-a100:2", 8, 8, marks=pytest.mark.slow),
    pytest.param("mi250:2", 16, 128, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("spec", "k", "rooted_k"), DEPLOYED)
def test_default_rccl_exports_of_the_builtin_families_run_correctly(spec, k, rooted_k):
    """Every collective's default export: a power-of-two k within 1 % of the optimum,
    RCCL's limits met, every placement correct under the structural simulator."""
    from optcoll.schedules.deploy import deployable_schedule
    from optcoll.topologies import build

    topology = build(spec)
    for collective in ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"):
        chosen = deployable_schedule(topology, collective)
        schedule = chosen.schedule
        assert chosen.ratio <= Fraction(101, 100)
        assert schedule.k == (rooted_k if schedule.root else k)
        root = None if schedule.root is None else schedule.compute_nodes.index(schedule.root)
        for placement in placements(collective, "rccl"):
            program = msccl_program(schedule, placement=placement)
            assert program.max_steps <= 64 and program.max_threadblocks <= 64
            if placement != "inplace":
                check_msccl(program.text, collective, schedule.k, root)
            if placement != "outofplace":
                check_msccl(program.text, collective, schedule.k, root, inplace=True)


@pytest.mark.parametrize("spec", ["ring:5,direction=uni", "random:n=6,seed=3"])
def test_allreduce_on_asymmetric_topologies_composes_reduce_scatter_and_allgather(spec):
    """A link without its reverse, or unequal directions: the reduce-scatter trees come
    from the reversed topology, the allgather trees from the topology itself."""
    from optcoll.schedules.collectives import collective_lower_bound
    from optcoll.schedules.deploy import deployable_schedule
    from optcoll.topologies import build

    topology = build(spec)
    for exact in (False, True):
        chosen = deployable_schedule(topology, "allreduce", exact=exact)
        assert chosen.schedule.collective == "reduce_scatter" and chosen.allgather is not None
        assert chosen.time_factor == chosen.schedule.time_factor + chosen.allgather.time_factor
        assert chosen.optimum == collective_lower_bound(topology, "allreduce")
        assert chosen.ratio == 1 if exact else chosen.ratio <= Fraction(101, 100)
        program = msccl_program(chosen.schedule, allgather=chosen.allgather)
        check_msccl(program.text, "allreduce", chosen.schedule.k)
        check_msccl(program.text, "allreduce", chosen.schedule.k, inplace=True)
    with pytest.raises(ExportError, match="composed of a reduce_scatter schedule"):
        msccl_program(chosen.allgather, allgather=chosen.schedule)


def test_cli_exports_a_composed_allreduce_but_not_as_one_schedule_file(tmp_path, capsys):
    out = tmp_path / "ar.xml"
    assert _cli(tmp_path, "ring:5,direction=uni", "--collective", "allreduce", "-o", str(out)) == 0
    assert "reduce-scatter trees, then allgather trees" in capsys.readouterr().out
    check_msccl(out.read_text(), "allreduce", 1)
    json_out = tmp_path / "ar.json"
    args = ("ring:5,direction=uni", "--collective", "allreduce", "--format", "json")
    assert _cli(tmp_path, *args, "-o", str(json_out)) == 2
    assert "one schedule file cannot hold" in capsys.readouterr().err and not json_out.exists()


def test_too_many_peers_for_rccl_names_the_runtimes_that_fit_and_they_do():
    """70 star roots: 69 peers per GPU need 69 paired thread blocks, above RCCL's 64;
    k = 1 so a smaller k is not offered; the runtimes named instead really fit."""
    nodes = tuple(f"g{i}" for i in range(70))
    trees = tuple(
        Tree(r, 1, tuple(TreeEdge(r, v, (r, "sw", v)) for v in nodes if v != r)) for r in nodes
    )
    schedule = Schedule("allgather", "star70", nodes, 1, trees)
    with pytest.raises(ExportError, match="needs 69 thread blocks") as refused:
        msccl_program(schedule, runtime="rccl", placement="inplace")
    message = str(refused.value)
    assert "smaller -k" not in message
    assert "try --runtime msccl or --runtime msccl-executor" in message
    for runtime in ("msccl", "msccl-executor"):
        program = msccl_program(schedule, runtime=runtime, placement="inplace")
        assert 69 <= program.max_threadblocks <= runtime_profile(runtime).max_threadblocks
    check_msccl(program.text, "allgather", 1, inplace=True)


def test_cli_and_python_export_write_the_same_files(tmp_path, capsys):
    """``export -o FILE`` writes FILE (out of place); ``--placement both`` adds
    STEM.inplace.xml; :func:`optcoll.export.export_schedule` writes the same files."""
    import optcoll
    from optcoll.export import export_schedule
    from optcoll.io import save_schedule

    schedule = optcoll.solve("ring:4").schedule
    save_schedule(schedule, tmp_path / "s.json")
    (tmp_path / "cli").mkdir()
    argv = [str(tmp_path / "s.json"), "--placement", "both", "-o", str(tmp_path / "cli/a.xml")]
    assert _cli(tmp_path, *argv) == 0
    capsys.readouterr()
    written = export_schedule(schedule, "msccl", tmp_path / "py/a.xml", placement="both")
    assert [p.name for p in written] == ["a.xml", "a.inplace.xml"]
    assert sorted(p.name for p in (tmp_path / "cli").iterdir()) == ["a.inplace.xml", "a.xml"]
    for path in written:
        assert path.read_text() == (tmp_path / "cli" / path.name).read_text()
    check_msccl((tmp_path / "py/a.xml").read_text(), "allgather", schedule.k, inplace=False)
    check_msccl((tmp_path / "py/a.inplace.xml").read_text(), "allgather", schedule.k, inplace=True)
