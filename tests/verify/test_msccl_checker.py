"""The MSCCL program checker: correct programs pass, each kind of broken program is caught
for the reason it is broken, another tool's format is read, and the CLI's exit statuses."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from optcoll.cli import main
from optcoll.core.msccl_runtimes import RUNTIMES
from optcoll.exceptions import FileFormatError
from optcoll.verify.msccl import verify_text

# --- a small writer of test programs (the checker must not share the exporter's) ------------


def step(kind, src=("i", -1), dst=("o", -1), cnt=1, dep=(-1, -1), hasdep=0):
    return {"type": kind, "src": src, "dst": dst, "cnt": cnt, "dep": dep, "hasdep": hasdep}


def tb(send=-1, recv=-1, chan=0, steps=()):
    return {"send": send, "recv": recv, "chan": chan, "steps": list(steps)}


def program(coll, gpus, *, loop, chunks, inplace=0, outofplace=1, nchannels=1, s_chunks=0):
    """MSCCL XML of ``gpus`` (a list, per GPU, of thread blocks), one element per line."""
    i_chunks, o_chunks = chunks
    lines = [
        f'<algo name="test" proto="Simple" nchannels="{nchannels}" nchunksperloop="{loop}" '
        f'ngpus="{len(gpus)}" coll="{coll}" inplace="{inplace}" outofplace="{outofplace}" '
        f'minBytes="0" maxBytes="0">'
    ]
    for g, blocks in enumerate(gpus):
        lines.append(
            f'  <gpu id="{g}" i_chunks="{i_chunks}" o_chunks="{o_chunks}" s_chunks="{s_chunks}">'
        )
        for t, block in enumerate(blocks):
            lines.append(
                f'    <tb id="{t}" send="{block["send"]}" recv="{block["recv"]}" '
                f'chan="{block["chan"]}">'
            )
            for s, st in enumerate(block["steps"]):
                lines.append(
                    f'      <step s="{s}" type="{st["type"]}" srcbuf="{st["src"][0]}" '
                    f'srcoff="{st["src"][1]}" dstbuf="{st["dst"][0]}" dstoff="{st["dst"][1]}" '
                    f'cnt="{st["cnt"]}" depid="{st["dep"][0]}" deps="{st["dep"][1]}" '
                    f'hasdep="{st["hasdep"]}"/>'
                )
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>")
    return "\n".join(lines) + "\n"


def ring_allgather(n=4):
    """Ring allgather: a send thread block forwards each chunk once the receive thread block
    has it (a dependency), a local one copies the rank's own chunk."""
    gpus = []
    for r in range(n):
        nxt, prv = (r + 1) % n, (r - 1) % n
        sends = [step("s", ("i", 0))]
        sends += [step("s", ("o", (r - i) % n), dep=(1, i - 1)) for i in range(1, n - 1)]
        recvs = [step("r", dst=("o", (r - i) % n), hasdep=int(i < n - 1)) for i in range(1, n)]
        gpus.append([tb(nxt, -1, 0, sends), tb(-1, prv, 0, recvs),
                     tb(steps=[step("cpy", ("i", 0), ("o", r))])])  # fmt: skip
    return program("allgather", gpus, loop=n, chunks=(1, n))


def ring_allreduce(n=3):
    """Ring allreduce of n chunks: reduce-scatter around the ring, then allgather; a send and
    a receive thread block per GPU, each send waiting for the receive it forwards."""
    gpus = []
    for r in range(n):
        nxt, prv = (r + 1) % n, (r - 1) % n
        sends = [step("s", ("i", (r - 1) % n))]
        recvs = []
        for i in range(1, n):  # reduce-scatter: add my part of chunk c to what arrives
            c = (r - 1 - i) % n
            recvs.append(step("rrc", ("i", c), ("o", c), hasdep=1))
            sends.append(step("s", ("o", c), dep=(1, i - 1)))
        for i in range(1, n):  # allgather: chunk c arrives complete
            c = (r - i) % n
            last = i == n - 1
            recvs.append(step("r", dst=("o", c), hasdep=int(not last)))
            if not last:
                sends.append(step("s", ("o", c), dep=(1, n - 2 + i)))
        gpus.append([tb(nxt, -1, 0, sends), tb(-1, prv, 0, recvs)])
    return program("allreduce", gpus, loop=n, chunks=(n, n))


def ring_allreduce_in_scratch(n=3):
    """:func:`ring_allreduce` with steps RCCL launches (no ``rrc``): each partial sum is
    received into scratch chunk ``c`` and the rank's own part added there by a ``re`` (which
    adds its source to its destination) that the forwarding send waits for; the finished
    chunk is copied into the output, then gathered around the ring."""
    gpus = []
    for r in range(n):
        nxt, prv = (r + 1) % n, (r - 1) % n
        sends = [step("s", ("i", (r - 1) % n))]
        recvs = []
        for i in range(1, n):
            c = (r - 1 - i) % n
            recvs.append(step("r", dst=("s", c)))
            recvs.append(step("re", ("i", c), ("s", c), hasdep=1))
            sends.append(step("s", ("s", c), dep=(1, 2 * i - 1)))
        recvs.append(step("cpy", ("s", r), ("o", r)))
        for i in range(1, n):
            c = (r - i) % n
            last = i == n - 1
            recvs.append(step("r", dst=("o", c), hasdep=int(not last)))
            if not last:
                sends.append(step("s", ("o", c), dep=(1, 2 * n - 2 + i)))
        gpus.append([tb(nxt, -1, 0, sends), tb(-1, prv, 0, recvs)])
    return program("allreduce", gpus, loop=n, chunks=(n, n), s_chunks=n)


#: A runtime whose kernel runs every step type (RCCL's refuses rcs, rrs, rrc, rrcs).
FULL_OPS = "msccl-executor"


def kinds(report):
    return sorted({f.kind for f in report.findings})


def messages(report, kind):
    return [f.message for f in report.findings if f.kind == kind]


# --- correct programs -----------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5])
def test_ring_allgather_is_correct(n):
    report = verify_text(ring_allgather(n))
    assert report.ok, report.findings
    assert report.executed and report.depths == (1, 2, 8)
    # every rank sends n - 1 of the n chunks to its successor
    assert report.pair_load == {(r, (r + 1) % n): Fraction(n - 1, n) for r in range(n)}


@pytest.mark.parametrize("n", [2, 3, 4])
def test_ring_allreduce_is_correct(n):
    report = verify_text(ring_allreduce(n), runtime=FULL_OPS)
    assert report.ok, report.findings
    assert report.max_pair_load == Fraction(2 * (n - 1), n)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_ring_allreduce_through_scratch_runs_on_rccl(n):
    report = verify_text(ring_allreduce_in_scratch(n), runtime="rccl")
    assert report.ok and report.judged, report.findings
    assert report.max_pair_load == Fraction(2 * (n - 1), n)
    # the first re a copy instead (rank 0's own part overwrites the partial sum it received)
    dropped = ring_allreduce_in_scratch(n).replace('type="re"', 'type="cpy"', 1)
    assert kinds(verify_text(dropped, runtime="rccl")) == ["wrong-data"]
    # a send no longer waiting for the re it forwards reads the scratch chunk it writes
    early = ring_allreduce_in_scratch(3).replace('depid="1" deps="1"', 'depid="-1" deps="-1"')
    assert "race" in kinds(verify_text(early, runtime="rccl"))


def test_rccl_refuses_to_launch_a_receive_that_reduces():
    """ROCm/rccl's parser takes rrc, but mscclSetupKernel refuses the algorithm
    (msccl_setup.cc:430-437): check-xml names the step and the line; msccl-executor's kernel
    runs it."""
    text = ring_allreduce(3)
    report = verify_text(text, runtime="rccl")
    launch = messages(report, "launch")
    assert kinds(report) == ["launch"] and len(launch) == 2 * 3  # two rrc per GPU
    assert launch[0].startswith("GPU 0 tb 1 step at line ")
    assert "type='rrc' is parsed, but rccl refuses to launch a program that uses it" in launch[0]
    assert "src/misc/msccl/msccl_setup.cc:430-437" in launch[0]
    assert verify_text(text, runtime=FULL_OPS).ok


def test_reduce_scatter_alltoall_broadcast_and_reduce_are_judged():
    # reduce-scatter on 2 GPUs: send the other's part, receive mine and add my own part
    rs = [
        [tb(1, 1, 0, [step("s", ("i", 1)), step("rrc", ("i", 0), ("o", 0))])],
        [tb(0, 0, 0, [step("s", ("i", 0)), step("rrc", ("i", 1), ("o", 0))])],
    ]
    assert verify_text(program("reducescatter", rs, loop=2, chunks=(2, 1)), runtime=FULL_OPS).ok
    # alltoall on 2 GPUs: chunk j of rank r goes to rank j's slot r
    a2a = [
        [tb(1, 1, 0, [step("s", ("i", 1)), step("r", dst=("o", 1)),
                      step("cpy", ("i", 0), ("o", 0))])],
        [tb(0, 0, 0, [step("s", ("i", 0)), step("r", dst=("o", 0)),
                      step("cpy", ("i", 1), ("o", 1))])],
    ]  # fmt: skip
    assert verify_text(program("alltoall", a2a, loop=2, chunks=(2, 2))).ok
    # broadcast from rank 1 along the chain 1 -> 0 -> 2
    bc = [
        [tb(2, 1, 0, [step("rcs", dst=("o", 0))])],
        [tb(0, -1, 0, [step("s", ("i", 0))]), tb(steps=[step("cpy", ("i", 0), ("o", 0))])],
        [tb(-1, 0, 0, [step("r", dst=("o", 0))])],
    ]
    report = verify_text(program("broadcast", bc, loop=1, chunks=(1, 1)), runtime=FULL_OPS)
    assert report.ok and report.root == 1
    # reduce to rank 0: rank 1 sends, rank 0 adds
    red = [
        [tb(-1, 1, 0, [step("rrc", ("i", 0), ("o", 0))])],
        [tb(0, -1, 0, [step("s", ("i", 0))])],
    ]
    report = verify_text(program("reduce", red, loop=1, chunks=(1, 1)), runtime=FULL_OPS)
    assert report.ok and report.root == 0


def test_in_place_allgather_is_correct_in_place():
    # in place, rank r's input is output chunk r: no copy is needed
    n = 3
    gpus = []
    for r in range(n):
        nxt, prv = (r + 1) % n, (r - 1) % n
        sends = [step("s", ("o", r)), step("s", ("o", (r - 1) % n), dep=(1, 0))]
        recvs = [step("r", dst=("o", (r - 1) % n), hasdep=1), step("r", dst=("o", (r - 2) % n))]
        gpus.append([tb(nxt, -1, 0, sends), tb(-1, prv, 0, recvs)])
    text = program("allgather", gpus, loop=n, chunks=(1, n), inplace=1, outofplace=0)
    report = verify_text(text)
    assert report.ok and report.placements == ("in place",)
    # out of place the output chunk r is never written
    wrong = verify_text(text.replace('inplace="1" outofplace="0"', 'inplace="0" outofplace="1"'))
    assert kinds(wrong) == ["wrong-data"]
    assert "rank 0 output chunk 0: expected rank 0 input 0, got uninitialised" in " ".join(
        messages(wrong, "wrong-data")
    )


MSCCL_TOOLS_STYLE = """<algo name="allreduce_pairs_2" proto="LL" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="1">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
      <step s="1" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="2" deps="1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="1" chan="0">
      <step s="0" type="r" srcbuf="s" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
      <step s="1" type="r" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="2" send="-1" recv="-1" chan="0">
      <step s="0" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="0" deps="0" hasdep="0"/>
      <step s="1" type="re" srcbuf="s" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="1" deps="0" hasdep="1"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="1">
    <tb id="0" send="0" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
      <step s="1" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="2" deps="1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="0" chan="0">
      <step s="0" type="r" srcbuf="s" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="2" send="-1" recv="-1" chan="0">
      <step s="0" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="0" deps="0" hasdep="0"/>
      <step s="1" type="re" srcbuf="s" srcoff="0" dstbuf="i" dstoff="1" cnt="1" depid="1" deps="0" hasdep="1"/>
    </tb>
  </gpu>
</algo>
"""


def test_a_program_in_msccl_tools_format_passes():
    """msccl-tools' writer (msccl/language/ir.py ir_to_xml): ``s`` numbering, ``nop`` steps
    carrying extra dependencies with offsets -1 and cnt 0, scratch buffers, an in-place
    allreduce whose output buffer is its input (o_chunks 0), as RCCL's bundled files do."""
    report = verify_text(MSCCL_TOOLS_STYLE)
    assert report.ok, report.findings
    assert report.placements == ("in place",)
    assert report.pair_load == {(0, 1): Fraction(1), (1, 0): Fraction(1)}


# --- broken programs: each caught for its reason ---------------------------------------------


def test_swapped_steps_deadlock_with_their_wait_for_cycle():
    # both GPUs receive before they send: each waits for the other
    gpus = [[tb(1, 1, 0, [step("r", dst=("o", 1)), step("s", ("i", 0))])],
            [tb(0, 0, 0, [step("r", dst=("o", 0)), step("s", ("i", 0))])]]  # fmt: skip
    report = verify_text(program("allgather", gpus, loop=2, chunks=(1, 2)))
    deadlocks = messages(report, "deadlock")
    assert deadlocks and "wait-for cycle" in deadlocks[0]
    assert "GPU 0 tb 0 step 0 (r" in deadlocks[0] and "GPU 1 tb 0 step 0 (r" in deadlocks[0]
    assert "waits for a chunk from GPU 1" in deadlocks[0]


def test_swapping_two_steps_of_a_ring_gives_wrong_data():
    lines = ring_allgather(3).splitlines()
    # GPU 0's receive thread block: exchange its two receives
    first = next(i for i, line in enumerate(lines) if 'type="r"' in line)
    lines[first], lines[first + 1] = (
        lines[first + 1].replace('s="1"', 's="0"').replace('hasdep="0"', 'hasdep="1"'),
        lines[first].replace('s="0"', 's="1"').replace('hasdep="1"', 'hasdep="0"'),
    )
    report = verify_text("\n".join(lines))
    wrong = messages(report, "wrong-data")
    assert "out of place: rank 0 output chunk 1: expected rank 1 input 0, got rank 2 input 0" in (
        wrong
    )
    # GPU 0 forwards chunk 2 while its receive thread block may still be writing it
    assert any("GPU 0 o[2]" in m for m in messages(report, "race"))


def test_dropped_receive_is_reported():
    lines = ring_allgather(3).splitlines()
    last = max(i for i, line in enumerate(lines[:20]) if 'type="r"' in line)
    assert 'dstoff="1"' in lines[last]  # GPU 0's receive of chunk 1
    del lines[last]
    report = verify_text("\n".join(lines))
    assert "GPU 2 -> GPU 0 channel 0: 1 chunk(s) sent and never received" in " ".join(
        messages(report, "unmatched")
    )
    assert "rank 0 output chunk 1: expected rank 1 input 0, got uninitialised memory" in " ".join(
        messages(report, "wrong-data")
    )


def test_wrong_offset_names_the_rank_and_chunk():
    text = ring_allgather(4).replace(
        '<step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="2"',
        '<step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="3"',
    )
    report = verify_text(text)
    wrong = messages(report, "wrong-data")
    assert any("rank 2 output chunk 2: expected rank 2 input 0, got uninitialised" in m
               for m in wrong)  # fmt: skip
    # and the copy now collides with the receive of chunk 3: a race on GPU 2 o[3]
    assert any("GPU 2 o[3]" in m for m in messages(report, "race"))


def test_wrong_peer_is_a_deadlock_and_off_the_topology():
    text = ring_allgather(4)
    lines = text.splitlines()
    i = next(i for i, line in enumerate(lines) if '<tb id="0" send="1" recv="-1"' in line)
    lines[i] = lines[i].replace('send="1"', 'send="2"')
    report = verify_text("\n".join(lines))
    deadlock = messages(report, "deadlock")
    assert deadlock and "no thread block can satisfy" in deadlock[0]
    assert "GPU 1 tb 1 step 0 (r, line 24) waits for a chunk from GPU 0 on channel 0" in deadlock[0]
    from optcoll.topologies import build

    ring = build("ring:4,direction=uni")
    on_ring = verify_text("\n".join(lines), topology=ring)
    assert any("GPU 0 (" in m and "sends to GPU 2" in m for m in messages(on_ring, "topology"))
    assert verify_text(text, topology=ring).ok


def test_dependency_cycle_is_a_deadlock():
    gpus = [
        [
            tb(steps=[step("cpy", ("i", 0), ("o", 0), dep=(1, 0), hasdep=1)]),
            tb(steps=[step("cpy", ("i", 0), ("o", 0), dep=(0, 0), hasdep=1)]),
        ],
        [tb(steps=[step("cpy", ("i", 0), ("o", 0))])],
    ]
    report = verify_text(program("allreduce", gpus, loop=1, chunks=(1, 1)))
    deadlock = messages(report, "deadlock")
    assert deadlock and "wait-for cycle" in deadlock[0]
    assert "GPU 0 tb 0 step 0 (cpy, line 4) waits for tb 1 to finish step 0" in deadlock[0]
    assert "GPU 0 tb 1 step 0 (cpy, line 7) waits for tb 0 to finish step 0" in deadlock[0]


def test_duplicate_send_is_unmatched():
    text = ring_allgather(3)
    lines = text.splitlines()
    i = next(i for i, line in enumerate(lines) if 'type="s"' in line)
    lines.insert(i + 1, lines[i])
    report = verify_text("\n".join(lines))
    assert any("GPU 0 -> GPU 1 channel 0" in m for m in messages(report, "unmatched"))
    assert "spelling" in kinds(report)  # the inserted step repeats s="1": numbering is off
    assert "wrong-data" in kinds(report)


def test_count_mismatch_is_reported():
    gpus = [
        [tb(1, -1, 0, [step("s", ("i", 0), cnt=2)]), tb(steps=[step("cpy", ("i", 0), ("o", 0),
                                                                    cnt=2)])],
        [tb(-1, 0, 0, [step("r", dst=("o", 0)), step("r", dst=("o", 1))]),
         tb(steps=[step("cpy", ("i", 0), ("o", 2), cnt=2)])],
    ]  # fmt: skip
    report = verify_text(program("allgather", gpus, loop=4, chunks=(2, 4)))
    mismatch = messages(report, "count-mismatch")
    assert len(mismatch) == 1  # found at every depth, reported once
    assert "GPU 1 tb 0 step 0 (r, line 12) receives chunk 0 of 1" in mismatch[0]
    assert "delivers chunk 0 of 2 from GPU 0 tb 0 step 0 (s, line 4)" in mismatch[0]


def test_limits_of_each_runtime():
    n = 2
    long_tb = [step("cpy", ("i", 0), ("o", 0))] * 65
    gpus = [[tb(steps=long_tb)], [tb(steps=[step("cpy", ("i", 0), ("o", 0))])]]
    text = program("allreduce", gpus, loop=1, chunks=(1, 1))
    rccl = verify_text(text, runtime="rccl")
    assert any("GPU 0 tb 0: 65 steps, above rccl's 64" in m for m in messages(rccl, "limit"))
    msccl = verify_text(text, runtime="msccl")
    assert messages(msccl, "limit") == [
        "<algo>: maxBytes=0: msccl selects only sizes below maxBytes, so never this file "
        f"({RUNTIMES['msccl'].sources['unlimited_max_bytes']})"
    ]
    # spellings: rccl reads reducescatter, msccl reduce_scatter
    rs = program("reduce_scatter", [[tb()] for _ in range(n)], loop=2, chunks=(2, 1))
    assert "it spells it 'reducescatter'" in messages(verify_text(rs), "spelling")[0]
    # depid is an int8, cnt below 72, thread block ids without gaps
    big = ring_allgather(2).replace('depid="-1" deps="-1" hasdep="0"/>', 'depid="200" deps="0" '
                                    'hasdep="0"/>', 1).replace('cnt="1"', 'cnt="80"', 1)  # fmt: skip
    found = " ".join(messages(verify_text(big), "limit"))
    assert "depid=200, stored in an int8" in found and "cnt=80, rccl accepts 0..71" in found
    gap = ring_allgather(2).replace('<tb id="2"', '<tb id="3"', 1)
    assert "are not 0..n-1" in messages(verify_text(gap), "limit")[0]


def test_missing_attribute_and_xml_declaration_are_reported():
    text = ring_allgather(2).replace(' hasdep="0"/>', "/>", 1)
    assert "required attribute 'hasdep' is missing" in messages(verify_text(text), "limit")[0]
    declared = '<?xml version="1.0"?>\n' + ring_allgather(2)
    assert "declaration" in messages(verify_text(declared), "spelling")[0]


def test_in_place_aliasing_error():
    # correct out of place; in place, receiving into the output overwrites the input it adds
    gpus = [[tb(1 - g, 1 - g, 0, [step("s", ("i", 0)), step("r", dst=("o", 0)),
                                  step("re", ("i", 0), ("o", 0))])] for g in range(2)]  # fmt: skip
    text = program("allreduce", gpus, loop=1, chunks=(1, 1), inplace=1, outofplace=1)
    report = verify_text(text)
    assert report.placements == ("in place", "out of place")
    wrong = messages(report, "wrong-data")
    assert wrong and all(m.startswith("in place: ") for m in wrong)
    assert (
        "in place: rank 0 output chunk 0: expected the sum of rank 0 input 0, rank 1 input 0, "
        "got a sum that counts some input twice"
    ) in wrong


def test_data_race_between_unordered_thread_blocks():
    # GPU 1 forwards output chunk 0 to GPU 2 from another thread block, without waiting
    gpus = [
        [tb(1, -1, 0, [step("s", ("i", 0))]), tb(steps=[step("cpy", ("i", 0), ("o", 0))])],
        [tb(-1, 0, 0, [step("r", dst=("o", 0))]), tb(2, -1, 0, [step("s", ("o", 0))])],
        [tb(-1, 1, 0, [step("r", dst=("o", 0))])],
    ]
    report = verify_text(program("broadcast", gpus, loop=1, chunks=(1, 1)))
    assert any(m.startswith("out of place: GPU 1 o[0]:") for m in messages(report, "race"))
    # with the dependency it is ordered, and correct
    gpus[1][0]["steps"][0]["hasdep"] = 1
    gpus[1][1]["steps"][0]["dep"] = (0, 0)
    assert verify_text(program("broadcast", gpus, loop=1, chunks=(1, 1))).ok


def test_unknown_collective_runs_but_its_output_is_not_judged():
    text = ring_allgather(2).replace('coll="allgather"', 'coll="gather"')
    report = verify_text(text)
    assert report.ok and report.executed
    assert report.notes == [
        "coll='gather': the checker does not know its result; output not judged"
    ]


def test_deadlock_only_at_depth_one():
    # both GPUs send two chunks before receiving: needs two chunks of buffering
    gpus = [
        [tb(1, 1, 0, [step("s", ("i", 0)), step("s", ("i", 1)), step("r", dst=("o", 2)),
                      step("r", dst=("o", 3)), step("cpy", ("i", 0), ("o", 0), cnt=2)])],
        [tb(0, 0, 0, [step("s", ("i", 0)), step("s", ("i", 1)), step("r", dst=("o", 0)),
                      step("r", dst=("o", 1)), step("cpy", ("i", 0), ("o", 2), cnt=2)])],
    ]  # fmt: skip
    text = program("allgather", gpus, loop=4, chunks=(2, 4))
    report = verify_text(text)
    deadlocks = messages(report, "deadlock")
    assert len(deadlocks) == 1 and "deadlock at depth 1: wait-for cycle" in deadlocks[0]
    assert "waits for room on the connection to GPU 1 channel 0" in deadlocks[0]
    assert verify_text(text, depths=(2, 8)).ok


def chain_allreduce(last="rrcs", middle="rcs"):
    """Allreduce of one chunk on the chain 0 - 1 - 2 with fused steps: GPU 1 receives
    GPU 0's input, adds its own, stores and sends the sum on (rrcs); GPU 2 adds its own and
    sends the total back (``last``); GPU 1 stores it and forwards it to GPU 0 (``middle``)."""
    gpus = [
        [tb(1, 1, 0, [step("s", ("i", 0)), step("r", dst=("o", 0))])],
        [tb(2, 0, 0, [step("rrcs", ("i", 0), ("o", 0))]),
         tb(0, 2, 0, [step(middle, ("i", 0), ("o", 0))])],
        [tb(1, 1, 0, [step(last, ("i", 0), ("o", 0))])],
    ]  # fmt: skip
    return program("allreduce", gpus, loop=1, chunks=(1, 1))


def test_fused_steps_receive_reduce_store_and_send_in_one_step():
    report = verify_text(chain_allreduce(), runtime=FULL_OPS)
    assert report.ok, report.findings
    assert report.depths == (1, 2, 8) and report.pair_load[(1, 2)] == 1
    # GPU 2 forwards what it received without adding its own input: rank 2 is missing
    dropped = verify_text(chain_allreduce(last="rcs"), runtime=FULL_OPS)
    assert kinds(dropped) == ["wrong-data"]
    assert any(
        "rank 0 output chunk 0: expected the sum of rank 0 input 0, rank 1 input 0, rank 2 "
        "input 0, got the sum of rank 0 input 0, rank 1 input 0" in m
        for m in messages(dropped, "wrong-data")
    ), messages(dropped, "wrong-data")
    # GPU 1 adds its input a second time on the way back
    doubled = verify_text(chain_allreduce(middle="rrcs"), runtime=FULL_OPS)
    assert any("a sum that counts some input twice" in m for m in messages(doubled, "wrong-data"))
    # a fused send needs the thread block's send peer
    no_peer = chain_allreduce().replace(
        '<tb id="0" send="2" recv="0"', '<tb id="0" send="-1" recv="0"'
    )
    assert "structure" in kinds(verify_text(no_peer, runtime=FULL_OPS))


def test_the_simulator_charges_a_fused_step_one_overhead(tmp_path):
    """The chain allreduce fused (s, rrcs, rrcs, rcs, r: five steps one after another) and
    unfused (each fused step a receive, then a send waiting for it: eight): the same
    transfers, three overheads apart (1 KiB: the program runs once)."""
    from optcoll.sim.programs import simulate_msccl
    from optcoll.topologies import build

    unfused = [
        [tb(1, -1, 0, [step("s", ("i", 0))]), tb(-1, 1, 0, [step("r", dst=("o", 0))])],
        [tb(-1, 0, 0, [step("rrc", ("i", 0), ("o", 0), hasdep=1)]),
         tb(2, -1, 0, [step("s", ("o", 0), dep=(0, 0))]),
         tb(-1, 2, 0, [step("r", dst=("o", 0), hasdep=1)]),
         tb(0, -1, 0, [step("s", ("o", 0), dep=(2, 0))])],
        [tb(-1, 1, 0, [step("rrc", ("i", 0), ("o", 0), hasdep=1)]),
         tb(1, -1, 0, [step("s", ("o", 0), dep=(0, 0))])],
    ]  # fmt: skip
    times = []
    for name, text in (
        ("fused", chain_allreduce()),
        ("unfused", program("allreduce", unfused, loop=1, chunks=(1, 1))),
    ):
        assert verify_text(text, runtime=FULL_OPS).ok, name
        path = tmp_path / f"{name}.xml"
        path.write_text(text)
        times.append(simulate_msccl(str(path), build("ring:3"), 1 << 10, overhead=1).time_us)
    assert times[1] - times[0] == pytest.approx(3.0)


def test_fused_ring_needs_two_chunks_of_buffering():
    """A ring allgather whose middle receives forward in one step (rcs): with connections of
    one chunk every GPU holds a chunk it cannot send on; with two it completes."""
    n = 3
    gpus = []
    for r in range(n):
        steps = [step("s", ("i", 0)), step("rcs", dst=("o", (r - 1) % n)),
                 step("r", dst=("o", (r - 2) % n)), step("cpy", ("i", 0), ("o", r))]  # fmt: skip
        gpus.append([tb((r + 1) % n, (r - 1) % n, 0, steps)])
    text = program("allgather", gpus, loop=n, chunks=(1, n))
    deadlocks = messages(verify_text(text), "deadlock")
    assert len(deadlocks) == 1 and "deadlock at depth 1: wait-for cycle" in deadlocks[0]
    assert verify_text(text, depths=(2, 8), runtime=FULL_OPS).ok


# --- the command line ------------------------------------------------------------------------


def test_cli_exit_statuses_and_json(tmp_path, capsys):
    good = tmp_path / "ring.xml"
    good.write_text(ring_allgather(3))
    assert main(["check-xml", str(good)]) == 0
    assert "verdict      correct" in capsys.readouterr().out
    bad = tmp_path / "bad.xml"
    bad.write_text(ring_allgather(3).replace('cnt="1"', 'cnt="2"', 1))
    assert main(["check-xml", str(bad), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["runtime"] == "rccl" and data["notes"] == []
    assert {"src": 0, "dst": 1, "load": "1"} in data["pair_load"]  # 3 chunks of 3
    assert main(["check-xml", str(good), "--runtime", "msccl"]) == 1
    capsys.readouterr()
    assert main(["check-xml", str(good), "--topology", "ring:4"]) == 1
    assert "ngpus=3 but topology" in capsys.readouterr().out
    broken = tmp_path / "broken.xml"
    broken.write_text("<algo><gpu></algo>")
    assert main(["check-xml", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not well-formed XML" in err
    assert main(["check-xml", str(tmp_path / "missing.xml")]) == 2
    with pytest.raises(FileFormatError, match="expected <algo>"):
        verify_text("<program/>")
