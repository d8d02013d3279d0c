"""MSCCL++ plans of the in-network (NVLS) allreduce: switch channels written by the exporter,
executed by check-plan (which shares no code with the writer), simulated on the switches."""

from __future__ import annotations

import copy
import json

import pytest

from optcoll.cli import main
from optcoll.exceptions import ExportError, FileFormatError, ScheduleError
from optcoll.export.mscclpp_nvls import mscclpp_nvls_plan
from optcoll.schedules.baselines import nvls_schedule
from optcoll.sim.programs import mscclpp_tasks
from optcoll.sim.simulator import SimOptions, simulate_aggregation
from optcoll.topologies import build
from optcoll.verify.mscclpp import verify_plan
from optcoll.verify.mscclpp.execute import STRATEGIES, execute
from optcoll.verify.mscclpp.plan import parse_plan

H100 = "dgx-h100:1,nvls=1"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The out-of-place and in-place plans ``export`` writes for the NVLS allreduce."""
    out = tmp_path_factory.mktemp("nvls") / "ar.json"
    args = ["export", H100, "--collective", "allreduce", "--format", "mscclpp"]
    assert main([*args, "--placement", "both", "-o", str(out)]) == 0
    return (
        out,
        json.loads(out.read_text()),
        json.loads(out.with_name("ar.inplace.json").read_text()),
    )


def _glres(document, rank, block):
    (pipeline,) = [
        op
        for op in document["gpus"][rank]["threadblocks"][block]["ops"]
        if op["name"] == "pipeline"
    ]
    (op,) = pipeline["ops"]
    return op


def test_export_writes_switch_channels_as_the_executor_reads_them(exported):
    _, outofplace, inplace = exported
    group = [{"size": 8, "ranks": list(range(8))}]
    for rank, gpu in enumerate(outofplace["gpus"]):
        switches = [c for c in gpu["channels"] if c["channel_type"] == "switch"]
        assert switches == [
            {"channel_type": "switch", "buffer_type": "i", "rank_groups": group},
            {"channel_type": "switch", "buffer_type": "o", "rank_groups": group},
        ]
        assert (gpu["input_chunks"], gpu["output_chunks"], gpu["scratch_chunks"]) == (64, 64, 0)
        assert len(gpu["threadblocks"]) == 8
        for block, tb in enumerate(gpu["threadblocks"]):
            assert {"channel_type": "switch", "channel_ids": [0, 1]} in tb["channels"]
            assert _glres(outofplace, rank, block) == {
                "name": "glres",
                "src_buff": [{"switch_channel_id": 0, "index": 8 * rank + block, "size": 1}],
                "dst_buff": [{"switch_channel_id": 1, "index": 8 * rank + block, "size": 1}],
                "channel_type": "switch",
                "reduce_op": "sum",
            }
    # in place: one switch channel on the input (which is the output), read and written
    gpu = inplace["gpus"][5]
    assert [c for c in gpu["channels"] if c["channel_type"] == "switch"] == [
        {"channel_type": "switch", "buffer_type": "i", "rank_groups": group}
    ]
    op = _glres(inplace, 5, 2)
    assert op["src_buff"] == op["dst_buff"] == [{"switch_channel_id": 0, "index": 42, "size": 1}]


def test_check_plan_executes_the_switch_ops_and_every_gpu_ends_with_the_sum(exported, capsys):
    path, outofplace, inplace = exported
    capsys.readouterr()
    assert main(["check-plan", str(path)]) == 0
    assert "verdict      correct" in capsys.readouterr().out
    for document in (outofplace, inplace):
        report = verify_plan(document)
        assert report.ok and report.judged and len(report.strategies) == len(STRATEGIES)
    # the data the executed program leaves: every part of every output chunk on every rank
    # is the sum of that part of all 8 inputs (in place, the input is the output)
    for document, kind in ((outofplace, "o"), (inplace, "o")):
        plan = parse_plan(document)
        outcome = execute(plan, STRATEGIES[3])
        assert outcome.completed and outcome.findings == []
        parts = plan.parts
        for rank in range(8):
            for x in range(64 * parts):
                assert outcome.values[(rank, kind, x)] == tuple((q, x) for q in range(8))


def test_a_gpu_missing_from_a_switch_channel_is_refused_with_the_field(exported, tmp_path, capsys):
    _, document, _ = exported
    broken = copy.deepcopy(document)
    broken["gpus"][0]["channels"][1]["rank_groups"][0]["ranks"] = list(range(7))
    bad = tmp_path / "missing.json"
    bad.write_text(json.dumps(broken))
    capsys.readouterr()
    assert main(["check-plan", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "gpus[0].channels[1].rank_groups[0].ranks" in err
    assert "rank(s) [7] in one and not the other" in err and "connectNvlsCollective" in err
    # a group that leaves out the GPU declaring it
    broken = copy.deepcopy(document)
    for gpu in broken["gpus"]:
        for channel in gpu["channels"][1:]:
            channel["rank_groups"][0]["ranks"] = list(range(7))
    with pytest.raises(FileFormatError, match=r"gpus\[7\]\.channels\[1\]\.rank_groups\[0\]"):
        parse_plan(broken)
    # a switch channel id the thread block does not have
    broken = copy.deepcopy(document)
    _glres(broken, 3, 0)["dst_buff"][0]["switch_channel_id"] = 2
    with pytest.raises(FileFormatError, match=r"ops\[3\]\.ops\[0\]\.dst_buff\[0\]"):
        parse_plan(broken)


def test_a_wrong_chunk_is_wrong_data_named_by_rank_and_chunk(exported):
    _, document, _ = exported
    broken = copy.deepcopy(document)
    op = _glres(broken, 2, 0)  # GPU 2's block 0 reduces GPU 3's chunk 24, not its 16
    op["src_buff"][0]["index"] = op["dst_buff"][0]["index"] = 24
    report = verify_plan(broken)
    assert not report.ok
    kinds = {kind for kind, _ in report.findings}
    assert "wrong-data" in kinds and "race" in kinds
    messages = [m for _, m in report.findings]
    assert any("rank 0 output chunk 16 (from part 0 of 3) holds nothing" in m for m in messages)
    assert any(
        "writes o[24:25] of rank 0 unordered with the write of rank 2 tb 0 op 4 (glres" in m
        for m in messages
    )


def test_switch_ops_before_or_after_the_barriers_are_races(exported):
    _, document, _ = exported
    early = copy.deepcopy(document)  # no start barrier: a glres may read an input not yet there
    for gpu in early["gpus"]:
        for tb in gpu["threadblocks"]:
            del tb["ops"][:3]
            del tb["ops"][-2:]
    report = verify_plan(early)
    assert {kind for kind, _ in report.findings} == {"sync", "race"}
    assert any(
        "(glres of unit 0) reaches rank" in m and "before hearing from it" in m
        for _, m in report.findings
    )
    assert any("may end the collective before the switch store" in m for _, m in report.findings)
    late = copy.deepcopy(document)  # GPU 4 does not wait for the others' stores
    for tb in late["gpus"][4]["threadblocks"]:
        tb["ops"].pop()
    report = verify_plan(late)
    kinds = {kind for kind, _ in report.findings}
    assert kinds == {"race", "signal"}
    assert any("rank 4 may end the collective" in m for _, m in report.findings)


def test_simulated_switch_traffic_is_n_plus_one_over_n_of_plans_trees():
    """Each GPU's glres on its shard sends its own share up and down once more than plan's
    aggregation tree: every GPU link is busy (N + 1) / N x M / bandwidth, exactly."""
    topo = build(H100)
    plan = parse_plan(mscclpp_nvls_plan(topo).document)
    sim = SimOptions()
    network = sim.network(topo)
    size = 2**30
    run = sim.run(mscclpp_tasks(plan, topo, network, size), network, size)
    expected = size * 9 / 8 / 450e3  # µs at 450 GB/s
    for g in topo.compute_nodes:
        for arc in ((g, "b0.nvswitch"), ("b0.nvswitch", g)):
            assert run.busy_us[arc] == pytest.approx(expected, rel=1e-9)
    # plan's NVLS now carries the same 9/8 (multimem switches): the two agree
    planned = simulate_aggregation(topo, nvls_schedule(topo), size).time_us
    assert abs(run.time_us / planned - 1) < 0.01


def test_export_at_a_size_writes_plans_nvls_choice_with_both_times(tmp_path, capsys):
    out = tmp_path / "nvls.json"
    args = ["export", H100, "--collective", "allreduce", "--format", "mscclpp", "--size", "16M"]
    assert main([*args, "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (entry,) = data["files"]
    assert entry["method"] == entry["planned"] in ("in-network", "NVLS")
    # plan times the switch-channel program the file holds (optcoll.sim.nvls_program)
    assert entry["file_time_us"] == entry["plan_time_us"]
    assert data["switch_cost"].startswith("each GPU issues glres")
    document = json.loads(out.read_text())
    assert any(c["channel_type"] == "switch" for c in document["gpus"][0]["channels"])
    assert main(["check-plan", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", H100, "--collective", "allreduce", "--format", "msccl", "--size",
                 "16M", "-o", str(tmp_path / "x.xml"), "--json"]) == 0  # fmt: skip
    assert f"{entry['method']}: MSCCL XML has no switch (NVLS) channels" in " ".join(
        json.loads(capsys.readouterr().out)["warnings"]
    )


def test_in_network_across_boxes_is_refused_for_the_reason_mscclpp_has(tmp_path, capsys):
    # two NVLS boxes: plan's in-network allreduce loads each box's sum with multimem.ld_reduce
    # and stores the total with multimem.st; MSCCL++'s executor parses only glres (the
    # two fused) and gstore, so the file is plan's next candidate, and the warning says why
    args = ["export", "dgx-h100:2,nvls=1", "--collective", "allreduce", "--format", "mscclpp"]
    assert main([*args, "--size", "64M", "-o", str(tmp_path / "x.json"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (entry,) = data["files"]
    assert entry["planned"] == "in-network" != entry["method"]
    (warning,) = data["warnings"]
    assert warning.startswith("not written (in-network: MSCCL++'s switch channels serve one")
    assert "no group load-reduce without a multicast store" in warning


def test_sharp_star_and_refusals():
    star = build("star:4,sharp=1")
    report = verify_plan(mscclpp_nvls_plan(star, nvls_schedule(star), blocks=3).document)
    assert report.ok and report.judged
    with pytest.raises(ExportError, match="no switch that reduces and multicasts"):
        mscclpp_nvls_plan(build("dgx-h100:2,nvls=1"))
    boxes = build("dgx-h100:2,nvls=1")
    with pytest.raises(ExportError, match="aggregation schedule serves 16 compute nodes"):
        mscclpp_nvls_plan(build("dgx-h100:1,nvls=1"), nvls_schedule(boxes))
    # the simulator's reader needs the switches: a plain star relays only
    plan = parse_plan(mscclpp_nvls_plan(star).document)
    plain = build("star:4")
    sim = SimOptions()
    with pytest.raises(ScheduleError, match="rank 0's glres: no switch of star:4"):
        mscclpp_tasks(plan, plain, sim.network(plain), 2**20)


def test_solves_schedule_file_exports_on_switch_channels(tmp_path, capsys):
    """``solve -o`` writes the in-network allreduce (aggregation trees, apex a GPU) that
    ``export`` turns into a switch-channel plan; a file for another topology is refused."""
    assert main(["solve", H100, "--collective", "allreduce", "-o", str(tmp_path)]) == 0
    (solved,) = tmp_path.glob("*.schedule.json")
    assert json.loads(solved.read_text())["aggregation"][0]["apex"] == "b0.gpu0"
    out = tmp_path / "solved.json"
    args = ["export", str(solved), "--format", "mscclpp", "-o", str(out)]
    capsys.readouterr()
    assert main(args) == 2
    assert "give --collective allreduce" in capsys.readouterr().err
    assert main([*args, "--collective", "allreduce"]) == 0
    document = json.loads(out.read_text())
    assert _glres(document, 6, 7)["src_buff"] == [{"switch_channel_id": 0, "index": 55, "size": 1}]
    assert main(["check-plan", str(out)]) == 0
    other = [*args, "--collective", "allreduce", "--topology", "star:8,sharp=1", "--force"]
    capsys.readouterr()
    assert main(other) == 2
    assert "built for topology" in capsys.readouterr().err


def test_beyond_16_peers_the_barrier_is_a_dissemination_barrier():
    """18 GPUs: a block may hold 16 memory channels, so each barrier is ceil(log2 18) = 5
    rounds (signal r + 2^i, wait for r - 2^i); check-plan follows what each GPU has heard
    through the rounds, and a round missing on one GPU is a sync finding."""
    star = build("star:18,sharp=1")
    document = mscclpp_nvls_plan(star, blocks=1).document
    ops = document["gpus"][3]["threadblocks"][0]["ops"]
    assert [op["name"] for op in ops[:3]] == ["signal", "wait", "nop"]
    # round 1: signal 4, wait for 2 (the peers listed in their order after rank 3)
    assert [op["channel_ids"] for op in ops[:15] if op["name"] != "nop"][:2] == [[0], [7]]
    peers = document["gpus"][3]["channels"][0]["connected_to"]
    assert peers[:8] == [4, 5, 7, 11, 13, 17, 1, 2]  # 3 +- 1, 2, 4, 8, 16 mod 18
    assert len(ops) == 5 * 3 + 2 + 5 * 3 - 1
    report = verify_plan(document)
    assert report.ok and report.judged
    broken = copy.deepcopy(document)  # GPU 0 skips its last start round's wait (for GPU 2):
    del broken["gpus"][0]["threadblocks"][0]["ops"][13]  # it has heard from 16 of the 18
    report = verify_plan(broken)
    messages = {m for kind, m in report.findings if kind == "sync"}
    assert any("rank 0 tb 0 op 15 (glres of unit 0) reaches rank 1 " in m for m in messages)
    assert any("rank 0 tb 0 op 15 (glres of unit 0) reaches rank 2 " in m for m in messages)
    assert not any("reaches rank 3 " in m for m in messages)
