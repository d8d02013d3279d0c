"""Chakra ET traces: ``export --format chakra`` on the built-in families, judged by the
independent checker (``check-et``), by the protobuf library, by ASTRA-sim's own traces, under
mutations, and simulated against the trees they come from."""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

import pytest

from optcoll.cli import main
from optcoll.export.chakra import _message_classes, chakra_traces
from optcoll.verify.chakra import verify_prefix, verify_traces
from optcoll.verify.chakra.wire import decode_trace

pytest.importorskip("google.protobuf")

DATA = Path(__file__).parents[1] / "data" / "astra" / "custom_ring_allreduce"
FAMILIES = (
    "ring:4",
    "dgx-a100:1",
    "dgx-a100:2",
    "dgx-h100:1",
    "mi250:1",
    "leaf-spine:leaves=2,hosts=2,spines=1",
)
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "alltoall")


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_every_export_passes_check_et(tmp_path, family, collective):
    if family == "dgx-a100:2" and collective == "alltoall":
        pytest.skip("the 16-GPU all-to-all LP takes minutes; dgx-a100:1 and mi250:1 cover it")
    prefix = tmp_path / "trace"
    status, out, err = _run(
        [
            "export",
            family,
            "--collective",
            collective,
            "--format",
            "chakra",
            "--size",
            "1M",
            "-o",
            str(prefix),
            "--json",
        ]  # fmt: skip
    )
    assert status == 0, err
    (entry,) = json.loads(out)["sets"]
    assert len(entry["files"]) == len(entry["ranks"])
    report = verify_prefix(prefix)
    assert report.ok, report.findings
    assert report.executed and report.judged and report.collective == collective
    status, out, _ = _run(["check-et", str(prefix)])
    assert status == 0 and "verdict      correct" in out


def test_groups_get_one_trace_set_each(tmp_path):
    prefix = tmp_path / "g"
    status, out, err = _run(
        [
            "export",
            "dgx-a100:2",
            "--groups",
            "blocks:8",
            "--collective",
            "allreduce",
            "--format",
            "chakra",
            "--size",
            "1M",
            "-o",
            str(prefix),
            "--json",
        ]  # fmt: skip
    )
    assert status == 0, err
    sets = json.loads(out)["sets"]
    assert [s["prefix"] for s in sets] == [f"{prefix}.group0", f"{prefix}.group1"]
    for entry in sets:
        report = verify_prefix(entry["prefix"])
        assert report.ok and report.judged and report.ranks == 8, report.findings


def test_the_protobuf_library_reads_what_the_hand_decoder_reads():
    """Both readers agree, on ASTRA-sim's own traces (written by chakra's generated code)
    and on ours: field numbers and types of the writer's descriptor are chakra's."""
    from optcoll.core.schedule import Schedule, Tree, TreeEdge

    trees = tuple(Tree(r, 1, tuple(TreeEdge(r, v, (r, v)) for v in "abc" if v != r)) for r in "abc")
    ours = chakra_traces(Schedule("allreduce", "t", ("a", "b", "c"), 1, trees), 3000)
    theirs = [p.read_bytes() for p in sorted(DATA.glob("*.et"))]
    classes = _message_classes()
    for data in [*ours, *theirs]:
        meta, nodes = decode_trace(data, "t")
        messages, pos = [], 0
        while pos < len(data):
            size, shift = 0, 0
            while True:
                size |= (data[pos] & 0x7F) << shift
                pos += 1
                if not data[pos - 1] & 0x80:
                    break
                shift += 7
            messages.append(data[pos : pos + size])
            pos += size
        parsed_meta = classes["GlobalMetadata"].FromString(messages[0])
        assert [a.name for a in parsed_meta.attr] == [a.name for a in meta.attrs]
        for raw, node in zip(messages[1:], nodes, strict=True):
            parsed = classes["Node"].FromString(raw)
            assert (parsed.id, parsed.type, tuple(parsed.data_deps)) == (
                node.id,
                node.type,
                node.data_deps,
            )
            for attr in parsed.attr:
                mine = node.get(attr.name)
                assert mine is not None and getattr(attr, attr.WhichOneof("value")) == mine.value


def test_astra_sims_own_traces_pass_without_labels():
    report = verify_prefix(DATA / "custom_allreduce")
    assert report.ok and report.executed and not report.judged
    assert (report.ranks, report.nodes, report.transfers) == (8, 280, 112)
    assert report.bytes_sent == 112 * 131072  # 2 (N - 1) chunks of M / N per rank
    # the data each rank ends with is not judged, so the command does not say 'correct'
    status, out, _ = _run(["check-et", str(DATA / "custom_allreduce")])
    assert status == 1 and "verdict      NOT JUDGED" in out


def _mutants(files: list[bytes], rng: random.Random, count: int) -> list[tuple[str, list[bytes]]]:
    """``count`` single mutations of the traces (each one changes what ASTRA-sim would do)."""
    classes = _message_classes()
    decoded = []
    for data in files:
        messages, pos = [], 0
        while pos < len(data):
            size, shift = 0, 0
            while True:
                size |= (data[pos] & 0x7F) << shift
                pos += 1
                if not data[pos - 1] & 0x80:
                    break
                shift += 7
            messages.append(data[pos : pos + size])
            pos += size
        decoded.append((messages[0], [classes["Node"].FromString(m) for m in messages[1:]]))
    kinds = ("drop", "swap", "size", "tag", "cycle", "undep", "peer", "type", "dup", "chunk")
    result = []
    for n in range(count):
        kind = kinds[n % len(kinds)]
        rank = rng.randrange(len(decoded))
        meta, nodes = decoded[rank]
        nodes = [type(x).FromString(x.SerializeToString()) for x in nodes]
        comm = [x for x in nodes if x.type in (5, 6)]
        victim = rng.choice(comm)
        attrs = {a.name: a for a in victim.attr}
        if kind == "drop":
            nodes.remove(rng.choice(nodes))
        elif kind == "swap":
            src, dst = attrs["comm_src"].int32_val, attrs["comm_dst"].int32_val
            attrs["comm_src"].int32_val, attrs["comm_dst"].int32_val = dst, src
        elif kind == "size":
            attrs["comm_size"].int64_val += 1
        elif kind == "tag":
            attrs["comm_tag"].int32_val += 1000
        elif kind == "cycle":
            later = [x for x in nodes if victim.id in x.data_deps]
            if not later:
                continue
            victim.data_deps.append(rng.choice(later).id)
        elif kind == "undep":
            dependent = [x for x in nodes if x.data_deps]
            if not dependent:
                continue
            del rng.choice(dependent).data_deps[0]
        elif kind == "peer":
            key = "comm_dst" if victim.type == 5 else "comm_src"
            attrs[key].int32_val = (attrs[key].int32_val + 1) % len(decoded)
        elif kind == "type":
            victim.type = 5 if victim.type == 6 else 6
        elif kind == "dup":
            victim.id = rng.choice([x.id for x in nodes if x.id != victim.id])
        else:
            attrs["optcoll_chunk"].uint64_val ^= 1
        out = []
        for m in [meta] + [x.SerializeToString() for x in nodes]:
            size = len(m)
            head = bytearray()
            while size > 0x7F:
                head.append(size & 0x7F | 0x80)
                size >>= 7
            head.append(size)
            out.append(bytes(head) + m)
        mutated = list(files)
        mutated[rank] = b"".join(out)
        result.append((kind, mutated))
    return result


@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce", "alltoall"])
def test_mutations_are_caught(collective):
    from optcoll.schedules.deploy import deployable_schedule
    from optcoll.topologies import build

    best = deployable_schedule(build("ring:4"), collective)
    files = chakra_traces(best.schedule, 4096, allgather=best.allgather)
    assert verify_traces([(f"t.{r}.et", b) for r, b in enumerate(files)]).ok
    mutants = _mutants(files, random.Random(7), 200)
    missed = [
        kind
        for kind, mutated in mutants
        if verify_traces([(f"t.{r}.et", b) for r, b in enumerate(mutated)]).ok
    ]
    # a dropped receive-reduction pair or a removed dependency may leave data still right
    # (e.g. an edge the tree order already implies); everything else must be caught
    assert not [k for k in missed if k not in ("drop", "undep")], missed
    assert len(missed) <= len(mutants) // 10, missed


def test_truncated_and_foreign_bytes_are_format_findings():
    files = chakra_traces(_pair(), 64)
    report = verify_traces([("t.0.et", files[0][:-3]), ("t.1.et", files[1])])
    assert not report.ok and report.findings[0].kind == "format"
    assert "t.0.et" in report.findings[0].message
    report = verify_traces([("t.0.et", b"\xff\xff\xff"), ("t.1.et", files[1])])
    assert [f.kind for f in report.findings] == ["format"]


def test_comm_values_have_the_kinds_chakras_feeder_reads():
    """Chakra's feeder (src/feeder/et_feeder_node.cpp) reads comm_size with int64_val() and
    comm_src/comm_dst/comm_tag with int32_val(): any other kind reads as 0."""
    classes = _message_classes()
    files = chakra_traces(_pair(), 64)
    for data in files:
        _, nodes = decode_trace(data, "t")
        kinds = {(a.name, a.kind) for x in nodes for a in x.attrs if a.name.startswith("comm_")}
        assert kinds == {("comm_size", "int64"), ("comm_src", "int32"), ("comm_dst", "int32"),
                         ("comm_tag", "int32")}  # fmt: skip
    messages = _split(files[0])
    node = classes["Node"].FromString(messages[1])
    size = next(a for a in node.attr if a.name == "comm_size")
    size.uint64_val = size.int64_val  # the same number, another kind
    messages[1] = node.SerializeToString()
    mutated = b"".join(_varint(len(m)) + m for m in messages)
    report = verify_traces([("t.0.et", mutated), ("t.1.et", files[1])])
    assert [f.message for f in report.findings] == [
        "rank 0 node 0 (COMM_SEND_NODE): comm_size is uint64; Chakra's ET feeder reads only "
        "int64 and would see 0"
    ]


def _split(data: bytes) -> list[bytes]:
    """The varint-delimited messages of a trace file."""
    messages, pos = [], 0
    while pos < len(data):
        size, shift = 0, 0
        while True:
            size |= (data[pos] & 0x7F) << shift
            pos += 1
            if not data[pos - 1] & 0x80:
                break
            shift += 7
        messages.append(data[pos : pos + size])
        pos += size
    return messages


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out) + bytes([value])


def _pair():
    from optcoll.core.schedule import Schedule, Tree, TreeEdge

    trees = (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
             Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),)))  # fmt: skip
    return Schedule("allgather", "pair", ("a", "b"), 1, trees)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--format", "chakra"], "--format chakra needs --size"),
        (["--format", "json", "--size", "1M"], "--size writes plan's choice at that size"),
        (["--format", "chakra", "--size", "7", "-k", "2"], "is too small"),
        (["--format", "chakra", "--size", "1M", "--bands"], "drop --bands"),
    ],
)
def test_bad_export_options_are_one_line_errors(tmp_path, args, message):
    status, _, err = _run(["export", "ring:4", "-o", str(tmp_path / "t"), *args])
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


def test_outputs_are_not_overwritten_without_force(tmp_path):
    prefix = str(tmp_path / "t")
    base = ["export", "ring:4", "--format", "chakra", "--size", "1M", "-o", prefix]
    assert _run(base)[0] == 0
    (tmp_path / "t.2.et").write_bytes(b"mine")
    status, _, err = _run(base)
    assert status == 2 and "t.0.et exists; pass --force" in err
    assert (tmp_path / "t.2.et").read_bytes() == b"mine"  # nothing written before the refusal
    assert _run([*base, "--force"])[0] == 0
    assert verify_prefix(prefix).ok


def test_check_et_bad_inputs(tmp_path):
    status, _, err = _run(["check-et", str(tmp_path / "none")])
    assert status == 2 and "no trace" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "x.0.et").write_bytes(b"\x05abc")
    status, out, _ = _run(["check-et", str(tmp_path / "x")])
    assert status == 1 and "WRONG" in out and "format" in out


#: Simulated time of the traces over the trees' own simulated time at 1 GiB stays within this.
FACTOR = 1.01


@pytest.mark.parametrize("family", ["ring:4", "dgx-a100:1", "leaf-spine:leaves=2,hosts=2,spines=1"])
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_simulated_time_matches_the_trees(tmp_path, family, collective):
    from optcoll.schedules.deploy import deployable_schedule
    from optcoll.sim.programs import chakra_tasks, read_chakra
    from optcoll.sim.simulator import Network, schedule_tasks, simulate
    from optcoll.topologies import build

    topology = build(family)
    size = 2**30
    best = deployable_schedule(topology, collective)
    assert best.allgather is None  # symmetric families: one tree set serves both phases
    prefix = tmp_path / "t"
    for rank, data in enumerate(chakra_traces(best.schedule, size)):
        (tmp_path / f"t.{rank}.et").write_bytes(data)
    network = Network.of(topology)
    traced = simulate(chakra_tasks(read_chakra(str(prefix)), topology, network), network, size)
    trees = simulate(schedule_tasks(best.schedule, network, size), network, size)
    ratio = traced.time_us / trees.time_us
    assert 1 / FACTOR <= ratio <= FACTOR, (traced.time_us, trees.time_us)


def test_simulate_cli_reads_traces(tmp_path):
    prefix = str(tmp_path / "t")
    assert _run(["export", "ring:4", "--collective", "allreduce", "--format", "chakra",
                 "--size", "64M", "-o", prefix])[0] == 0  # fmt: skip
    # planned as ASTRA-sim runs them (store-and-forward hops): 505.3165 µs, the bound; with
    # cut-through hops, ties first come first served, 713.79 (511.32 with the tie keys the
    # traces carried until 2026-12-03, which plan no longer times by)
    status, out, err = _run(["simulate", "ring:4", prefix, "--json",
                             "--switch-model", "store-and-forward"])  # fmt: skip
    assert status == 0, err
    (row,) = json.loads(out)["results"]
    assert row["bytes"] == 64 * 2**20 and 1 <= row["ratio"] < 1.1
    status, _, err = _run(["simulate", "ring:4", prefix, "--sizes", "1M"])
    assert status == 2 and "traces are for 67108864 bytes" in err
