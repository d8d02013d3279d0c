"""Chakra traces of plan's reduce + broadcast tree candidates of an allreduce
(:mod:`optcoll.export.chakra_reduce_broadcast`): checked by ``check-et``, simulated at
plan's time, and run under ASTRA-sim's rules (the independent model of
``test_astra_sim_rules.py``) in that time whatever order ready nodes are issued in."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

import pytest
from test_astra_sim_rules import astra_switch_time

from optcoll.core.schedule import TreeEdge
from optcoll.exceptions import ExportError
from optcoll.export.chakra_reduce_broadcast import reduce_broadcast_traces, smallest_piece_message
from optcoll.export.planned import Ranked, _traces_time, _written, planned_choices
from optcoll.io.astra_sim import from_astra_network
from optcoll.schedules.spanning_tree_allreduce import spanning_tree_schedule
from optcoll.sim.simulator import Network
from optcoll.topologies import build
from optcoll.verify.chakra import verify_traces
from optcoll.verify.chakra.wire import decode_trace

LATENCY = Fraction(1, 2)


def _checked(traces):
    report = verify_traces([(f"t.{r}.et", t) for r, t in enumerate(traces)])
    assert report.ok, [f.message for f in report.findings]
    assert not report.notes  # the data each rank ends with was judged
    return report


def _candidate(topology, size, overhead, method):
    [choice] = planned_choices(topology, "allreduce", [size], overhead=overhead,
                               default_latency=LATENCY, store_and_forward=True,
                               file_tasks=True, every_candidate=True)  # fmt: skip
    return next(r for r in choice.reduce_broadcast if r.method == method)


@pytest.mark.parametrize(
    ("spec", "size", "overhead", "method"),
    [
        ("ring:8", 2**20, 1.0, "double binary tree"),
        ("mesh:4x4", 2**22, 0.0, "spanning trees (reduce+broadcast)"),
    ],
)
def test_traces_simulate_to_plans_time_exactly(spec, size, overhead, method):
    """Every piece has the same whole number of bytes: ``simulate`` of the traces (plain
    and as the export writes them, chained in the order plan served the sends) gives plan's
    store-and-forward time of the candidate, to the last digit."""
    topology = build(spec)
    best = _candidate(topology, size, overhead, method)
    network = Network.of(topology, LATENCY, store_and_forward=True)
    plain = reduce_broadcast_traces(best.schedule, size, slice_bytes=best.slice_bytes,
                                    priority=best.priority)  # fmt: skip
    written = _written(best, size, topology, network, overhead, True)
    for traces in (plain, written):
        _checked(traces)
        time_us = _traces_time(traces, topology, network, overhead, best.slice_bytes, size)
        assert time_us == pytest.approx(best.time_us, rel=1e-12)


def test_pieces_that_cut_blocks_carry_chunk_lists():
    """Whole chunks of the double binary tree (k = 2) over 8 ranks: the checker's 8 blocks
    of one chunk each, four to a piece, listed; check-et judges every rank's sums."""
    topology = build("ring:8")
    best = _candidate(topology, 2**20, 1.0, "double binary tree")
    traces = reduce_broadcast_traces(best.schedule, 10**6)  # whole chunks, 500,000 bytes
    _checked(traces)
    meta, nodes = decode_trace(traces[0], "t.0.et")
    assert meta.get("optcoll_chunks").value == 1
    sends = [n for n in nodes if n.type_name == "COMM_SEND_NODE"]
    assert {json.dumps(json.loads(n.get("optcoll_chunk_list").value)) for n in sends} <= {
        "[0, 1, 2, 3]", "[4, 5, 6, 7]"}  # fmt: skip
    assert {n.get("comm_size").value for n in sends} == {500_000}
    assert smallest_piece_message(best.schedule, 10**6, None) == 500_000


def test_a_broken_reduction_is_caught():
    """The checker judges the data, not only the structure: a rank whose reduction drops a
    child's receive sends a partial sum up (the receive still matched, so nothing hangs)."""
    schedule = spanning_tree_schedule(build("ring:4"))
    traces = reduce_broadcast_traces(schedule, 4096)
    _checked(traces)
    from optcoll.export import chakra

    real = chakra._Ranks.add

    def dropping(self, rank, kind, name, deps, **attrs):  # a reduction of one receive only
        if kind == chakra._COMP and len(deps) > 1:
            deps = deps[:1]
        return real(self, rank, kind, name, deps, **attrs)

    chakra._Ranks.add = dropping
    try:
        broken = reduce_broadcast_traces(schedule, 4096)
    finally:
        chakra._Ranks.add = real
    report = verify_traces([(f"t.{r}.et", t) for r, t in enumerate(broken)])
    assert not report.ok
    assert {f.kind for f in report.findings} & {"result", "race"}


def test_bad_trees_and_sizes_are_refused():
    schedule = spanning_tree_schedule(build("ring:4"))
    with pytest.raises(ExportError, match="too small"):
        reduce_broadcast_traces(schedule, 3)  # 4 chunks
    tree = schedule.trees[0]
    # a multicast edge that no longer reaches every rank
    cut = replace(tree, multicast_edges=(TreeEdge(tree.apex, tree.apex, (tree.apex,)),))
    with pytest.raises(ExportError):
        reduce_broadcast_traces(replace(schedule, trees=(cut, *schedule.trees[1:])), 4096)


def test_astra_sims_rules_run_the_traces_in_plans_time():
    """On an ASTRA-sim Switch block of 16 NPUs (50 GiB/s, 500 ns), the double binary tree
    at 4 MiB as the export writes it: the model of ASTRA-sim's rules (store and forward,
    first come first served, ready nodes issued in any order, every hop in whole ns, each
    reduction 1 ns) runs it in plan's time within 0.1 %, the same in every issue order."""
    config = {"topology": ["Switch"], "npus_count": [16], "bandwidth": [50], "latency": [500]}
    topology = from_astra_network(config, name="switch")
    latency = Fraction(500, 1000)
    size = 2**22
    [choice] = planned_choices(topology, "allreduce", [size], overhead=0,
                               default_latency=latency, store_and_forward=True,
                               file_tasks=True, every_candidate=True)  # fmt: skip
    best: Ranked = next(r for r in choice.reduce_broadcast if r.method == "double binary tree")
    network = Network.of(topology, latency, store_and_forward=True)
    traces = _written(best, size, topology, network, 0.0, True)
    _checked(traces)
    assert _traces_time(traces, topology, network, 0.0, best.slice_bytes, size) == pytest.approx(
        best.time_us, rel=1e-12
    )
    model = {astra_switch_time(traces, 50, 500, seed) for seed in range(4)}
    assert max(model) - min(model) <= 2
    assert all(abs(ns / 1000 / best.time_us - 1) < 0.001 for ns in model), (model, best.time_us)


def test_msccl_form_for_rccl_is_checked():
    """The MSCCL XML form of plan's reduce + broadcast candidate (the tree allreduce of the
    same trees, each chunk's apex chosen freely): RCCL's step types only, accepted and
    executed by the checker with the topology, every rank's sums judged."""
    import re

    from optcoll.export.planned_programs import program_texts
    from optcoll.export.request import ExportRequest
    from optcoll.verify.msccl import verify_text

    topology = build("mesh:4x4")
    best = _candidate(topology, 2**22, 0.0, "spanning trees (reduce+broadcast)")
    request = ExportRequest("mesh:4x4", "t.xml", collective="allreduce", runtime="rccl")
    [(_, text, placement)] = program_texts(request, topology, best)
    assert placement == "both"
    assert set(re.findall(r'type="([a-z]+)"', text)) <= {"s", "r", "re", "cpy", "nop"}
    report = verify_text(text, runtime="rccl", topology=topology)
    assert report.ok and report.executed, [f.message for f in report.findings]
