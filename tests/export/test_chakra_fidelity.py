"""Issue #36 for Chakra traces: ``simulate`` of the written traces gives the time plan
gives the written candidate, and where ``optcoll plan``'s own choice is not written the
export says why (docs/chakra.md, "What the file runs")."""

import contextlib
import io
import json
from fractions import Fraction

import pytest

from optcoll.cli import main
from optcoll.export.chakra_steps import step_traces
from optcoll.export.planned import astra_sim_shortest_message, planned_traces
from optcoll.sim.programs import chakra_tasks, chakra_ties, decode_chakra
from optcoll.sim.quotient import tree_representatives
from optcoll.sim.simulator import Network, simulate
from optcoll.sim.size_plan import candidates, plan
from optcoll.sim.steps import step_latency_floor, step_tasks
from optcoll.topologies import build

LATENCY = Fraction(1, 2)


def _file_time(traces, topology, network, overhead, slice_bytes, size):
    decoded = decode_chakra([(f"t.{r}.et", t) for r, t in enumerate(traces)], "t")
    graph = chakra_tasks(decoded, topology, network, slice_bytes=slice_bytes)
    ties = chakra_ties(decoded, graph)
    return simulate(graph, network, size, overhead=overhead, ties=ties).time_us


def test_free_quotient_ties_and_why_plans_choice_is_not_written():
    """mesh:4x4's k = 1 trees are images under a group of order 4 with 4 root orbits: tree
    ``i`` is not the image of representative ``i mod 4``. With that key the traces ran
    13.9322 µs against plan's 12.9322; with the representative's key, plan's time.
    ``optcoll plan`` (cut-through links) chooses the multiport dimension-wise step
    schedule, 10.7259 µs, which runs 13.1920 µs with store-and-forward links."""
    topology = build("mesh:4x4")
    [one] = planned_traces(
        topology, "reduce_scatter", [2**20], overhead=1.0, default_latency=LATENCY,
        store_and_forward=True, shortest_message=astra_sim_shortest_message(topology),
        versus_plan=True,
    )  # fmt: skip
    assert (one.method, one.priority, round(one.time_us, 4)) == ("k=1", "depth", 12.9322)
    reps = tree_representatives(one.schedule.trees)
    assert reps != [i % len(one.schedule.trees.representatives) for i in range(len(reps))]
    network = Network.of(topology, LATENCY, store_and_forward=True)
    took = _file_time(one.traces, topology, network, 1.0, one.slice_bytes, 2**20)
    assert took == pytest.approx(one.time_us, rel=1e-12)
    method = "multiport dimension-wise (direct + direct)"
    assert (one.plan_method, round(one.plan_time_us, 4)) == (method, 10.7259)
    assert one.passed_over == (
        f"{method}: 10.7259 µs in optcoll plan (cut-through links), 13.1920 µs with "
        "store-and-forward links (ASTRA-sim moves every message whole across every hop, "
        "first come first served)",
    )


def test_step_schedule_runs_as_its_traces_with_either_link_model():
    """mesh:3x3 Rabenseifner (ranks folded: partners finish steps apart) at 1 MiB in 128 KiB
    slices: a message leaves once its sender has received what earlier steps send it (as
    ASTRA-sim's sim_send and the traces run it), so plan's run and the traces' agree (to the
    byte rounding of the slices) with store-and-forward and with cut-through links. The
    traces' 131,073-byte slice is not cut again by the reader."""
    topology = build("mesh:3x3")
    [option] = [o for o in candidates(topology, "allreduce") if o.method == "Rabenseifner"]
    size, piece = 2**20, 131072
    traces = step_traces(option.steps.schedule, size, slice_bytes=piece)
    decoded = decode_chakra([(f"t.{r}.et", t) for r, t in enumerate(traces)], "t")
    sends = [n for nodes in decoded.nodes for n in nodes if n.type == 5]
    assert (len(sends), max(n.get("comm_size").value for n in sends)) == (142, 131073)
    runs = {}
    for stored in (True, False):
        network = Network.of(topology, LATENCY, store_and_forward=stored)
        assert len(chakra_tasks(decoded, topology, network, slice_bytes=piece)) == 142
        planned = simulate(step_tasks(option.steps, network, size, slice_bytes=piece), network,
                           size, overhead=1.0).time_us  # fmt: skip
        took = _file_time(traces, topology, network, 1.0, piece, size)
        assert took == pytest.approx(planned, rel=1e-6)
        assert step_latency_floor(option.steps, network, 1.0) <= planned
        runs[stored] = round(planned, 4)
    assert runs == {True: 63.0986, False: 63.2637}


def test_plan_tries_slices_below_a_whole_chunk_with_cut_through_links():
    """ring:8 allreduce 1 MiB, no overhead: 512 KiB and 128 KiB slices both leave the 64 KiB
    chunks whole (the same run, every order tied); the search used to stop there (10.6750
    µs), and to refine only the first of the tied orders (32 KiB in the data's order:
    10.3474 µs). In the depth order 32 KiB slices run 9.675 µs, as the export's traces with
    store-and-forward links (reduce-scatter: 5.5875 then, 5.0875 now)."""
    topology = build("ring:8")
    common = {"overhead": 0.0, "default_latency": LATENCY}
    [row] = plan(topology, "allreduce", [2**20], **common)
    assert (row.method, row.priority, row.slice_bytes, round(row.time_us, 4)) == (
        "optimal (k=2)", "depth", 32768, 9.675)  # fmt: skip
    [row] = plan(topology, "reduce_scatter", [2**20], **common)
    assert (row.priority, row.slice_bytes, round(row.time_us, 4)) == ("depth", 32768, 5.0875)


def test_export_reports_optcoll_plans_figure(tmp_path):
    """mesh:4x4 allreduce 64 KiB, overhead 1: the same step schedule is plan's choice both
    ways, 6.9661 µs with cut-through links, 8.2768 µs as ASTRA-sim runs it (its one-shot
    messages cross up to three hops, each forwarded whole); the traces run the latter."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["export", "mesh:4x4", "--collective", "allreduce", "--size", "64K",
                       "--overhead", "1", "--latency", "0.5", "--format", "chakra",
                       "-o", str(tmp_path / "ar"), "--json"])  # fmt: skip
    assert status == 0, err.getvalue()
    [entry] = json.loads(out.getvalue())["sets"]
    method = "multiport dimension-wise (one-shot + one-shot)"
    assert entry["optcoll_plan"] == {"method": method, "time_us": 6.9661}
    assert (entry["method"], entry["plan_time_us"], entry["file_time_us"]) == (
        method, 8.2768, 8.2768)  # fmt: skip
    assert entry["passed_over"] == []


def test_step_traces_chain_only_the_sends_into_one_link():
    """A rank's ready sends are issued in plan's queue order by order gates (ASTRA-sim
    issues ready nodes in any order), each costing ASTRA-sim 1 ns; given the messages'
    paths, only sends that enter the same link are chained. Ring 8, direct allgather:
    each rank sends its block to 4 peers clockwise and 3 counter-clockwise, so 3 + 2
    gates a rank instead of 6 (one chain of all 7), and the run is the same."""
    from optcoll.schedules.baselines.direct import direct_allgather
    from optcoll.sim.steps import route_steps
    from optcoll.verify.chakra.wire import decode_trace

    topology = build("ring:8")
    schedule = direct_allgather(topology.compute_nodes)
    paths = route_steps(topology, schedule).paths
    size = 2**16
    network = Network.of(topology, LATENCY)

    def gates(traces):
        ranks = [decode_trace(data, f"t.{r}.et")[1] for r, data in enumerate(traces)]
        return {sum(1 for n in rank if n.get("optcoll_gate") is not None) for rank in ranks}

    chained = step_traces(schedule, size)
    per_link = step_traces(schedule, size, paths=paths)
    assert (gates(chained), gates(per_link)) == ({6}, {5})
    times = [_file_time(t, topology, network, 1.0, None, size) for t in (chained, per_link)]
    assert times[0] == times[1]


def test_a_timetables_trees_run_in_a_tree_order_and_their_traces_keep_it():
    """hypercube:4 allgather 1 MiB, no overhead, 1 µs links: the timetable (k=4) in its own
    start times' order sends whole chunks, 5.4746 µs (plan's choice until 2026-12-03); its
    trees in the depth order, in 8 KiB slices, take 4.8192. Plan now tries a timetable's
    trees in every tree order. The Chakra traces of it (planned unsettled: 4.7373 µs, the
    quotient's ties, which the traces carry) run in the time planned."""
    topology = build("hypercube:4")
    [row] = plan(topology, "allgather", [2**20], overhead=0.0)
    assert (row.method, row.priority, row.slice_bytes) == ("timetable (k=4)", "depth", 8192)
    assert round(row.time_us, 4) == 4.8192
    [own] = plan(topology, "allgather", [2**20], overhead=0.0, orders=("timetable",))
    assert (own.method, own.priority, round(own.time_us, 4)) == (
        "timetable (k=4)", "timetable", 5.4746)  # fmt: skip
    [one] = planned_traces(topology, "allgather", [2**20], overhead=0.0,
                           default_latency=Fraction(1))  # fmt: skip
    assert (one.method, one.priority, round(one.time_us, 4)) == ("timetable (k=4)", "depth", 4.7373)
    network = Network.of(topology, Fraction(1))
    took = _file_time(one.traces, topology, network, 0.0, one.slice_bytes, 2**20)
    assert took == pytest.approx(one.time_us, rel=1e-12)
