"""MSCCL++ plans: our exports pass the independent checker, MSCCL++'s own plans pass it,
and mutations of both are caught."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from optcoll.cli import main
from optcoll.exceptions import FileFormatError
from optcoll.export.mscclpp import mscclpp_placements, mscclpp_plan
from optcoll.schedules.deploy import deployable_schedule
from optcoll.topologies import build
from optcoll.verify.mscclpp import check_plan
from optcoll.verify.mscclpp.plan import parse_plan

DATA = Path(__file__).parent / "data" / "mscclpp"
SHIPPED = sorted(DATA.glob("*.json"))
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")


def _plans(spec: str, collectives=COLLECTIVES):
    topo = build(spec)
    for coll in collectives:
        best = deployable_schedule(topo, coll)
        for placement in mscclpp_placements(coll if best.allgather is None else "allreduce"):
            yield (
                coll,
                placement,
                mscclpp_plan(
                    best.schedule,
                    placement=placement,
                    allgather=best.allgather,
                    boxes={v: v.split(".")[0] for v in topo.compute_nodes},
                ),
            )


@pytest.mark.parametrize("spec", ["ring:4", "dgx-a100:1"])
def test_exports_pass_check_plan(spec):
    for coll, placement, plan in _plans(spec):
        report = check_plan(json.loads(plan.text))
        assert report.ok, (coll, placement, report.findings[:2])
        assert len(report.strategies) == 5


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_plans_pass(path):
    report = check_plan(json.loads(path.read_text()))
    assert report.ok, report.findings[:2]


def _mutations(document):
    """Single-op mutations: drop an op, swap two neighbours, shift a chunk index."""
    for g, gpu in enumerate(document["gpus"]):
        for t, tb in enumerate(gpu["threadblocks"]):
            for o in range(len(tb["ops"])):
                dropped = copy.deepcopy(document)
                del dropped["gpus"][g]["threadblocks"][t]["ops"][o]
                yield dropped
                if o + 1 < len(tb["ops"]):
                    swapped = copy.deepcopy(document)
                    ops = swapped["gpus"][g]["threadblocks"][t]["ops"]
                    ops[o], ops[o + 1] = ops[o + 1], ops[o]
                    yield swapped
                for side in ("src_buff", "dst_buff"):
                    if tb["ops"][o].get(side):
                        shifted = copy.deepcopy(document)
                        buff = shifted["gpus"][g]["threadblocks"][t]["ops"][o][side][0]
                        buff["index"] = (buff["index"] + 1) % max(1, gpu["output_chunks"])
                        yield shifted


def _caught(document):
    caught = total = 0
    for mutant in _mutations(document):
        total += 1
        try:
            report = check_plan(mutant)
        except FileFormatError:
            caught += 1
            continue
        changed = mutant != document
        caught += (not report.ok) or not changed
    return caught, total


def test_mutations_of_shipped_plans_are_caught():
    caught = total = 0
    for path in SHIPPED:
        c, t = _caught(json.loads(path.read_text()))
        caught, total = caught + c, total + t
    # measured 215 of 374; the rest include harmless ones (a dropped trailing nop, swaps of
    # ops that commute) that no checker should flag
    assert total > 300 and caught >= 215, (caught, total)


def test_mutations_of_our_plan_are_caught():
    (_, _, plan), *_ = _plans("ring:4", ("allreduce",))
    caught, total = _caught(json.loads(plan.text))
    assert total > 400 and caught >= 388, (caught, total)  # measured 388 of 420


def test_parser_refusals_name_the_field():
    doc = json.loads(SHIPPED[0].read_text())
    bad = copy.deepcopy(doc)
    bad["gpus"][0]["threadblocks"][0]["ops"][0]["name"] = "sned"
    with pytest.raises(FileFormatError, match=r"ops\[0\]\.name"):
        parse_plan(bad)
    bad = copy.deepcopy(doc)
    bad["gpus"][1]["id"] = 0
    with pytest.raises(FileFormatError, match=r"gpus\[1\]\.id"):
        parse_plan(bad)
    bad = copy.deepcopy(doc)
    bad["gpus"][0]["threadblocks"][0]["ops"] *= 10
    with pytest.raises(FileFormatError, match="64"):
        parse_plan(bad)


def test_cli_errors_and_no_overwrite(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["export", "ring:4", "--format", "mscclpp", "-o", str(out)]) == 0
    written = tmp_path / "p.outofplace.json"
    assert written.exists()
    assert main(["check-plan", str(written)]) == 0
    before = written.read_text()
    assert main(["export", "ring:4", "--format", "mscclpp", "-o", str(out)]) == 2
    assert written.read_text() == before
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": 1}')
    assert main(["check-plan", str(broken)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("optcoll: error:") and "name" in err[-1]


def test_simulated_time_near_the_trees():
    from optcoll.sim.simulator import Network, mscclpp_tasks, simulate, simulate_schedule
    from optcoll.verify.mscclpp.plan import parse_plan as read

    topo = build("dgx-a100:1")
    best = deployable_schedule(topo, "allreduce")
    plan = mscclpp_plan(best.schedule, boxes={v: "b0" for v in topo.compute_nodes})
    network = Network.of(topo)
    size = 2**30
    ours = simulate(mscclpp_tasks(read(plan.document), topo, network, size), network, size)
    trees = simulate_schedule(topo, best.schedule, size)
    assert ours.time_us <= 1.05 * trees.time_us
