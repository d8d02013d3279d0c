"""optcoll plan: the fastest candidate per size, a lower bound it never beats, bands."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.core.cost import link_latencies
from optcoll.core.topology import TopologyBuilder
from optcoll.exceptions import ScheduleError
from optcoll.io import load_schedule
from optcoll.schedules.baselines import ring_floor, ring_schedule
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.simulator import simulate_schedule
from optcoll.sim.size_plan import candidates, latency_bound, plan
from optcoll.topologies import build
from optcoll.verify.msccl import verify_file
from optcoll.verify.schedule import verify_schedule

KiB, MiB = 1024, 1024**2


def test_plan_on_dgx_a100_2_beats_the_optimal_k_at_small_sizes():
    topo = build("dgx-a100:2")
    rows = plan(topo, "allgather", [KiB, MiB, 64 * MiB])
    r_star = float(optimal_cut_ratio(topo).ratio)
    for row in rows:
        times = dict(row.candidates)
        assert row.time_us == min(t for t in times.values() if t is not None) == times[row.method]
        bandwidth = row.size / 16 * r_star / 1000
        assert row.lower_bound_us >= max(7.0, bandwidth) * (1 - 1e-12)  # start-up bound adds
        assert row.ratio >= 1
    small = dict(rows[0].candidates)
    # the optimal trees are as low as one tree per root (2 high, layered), but k = 13
    # chunks per root pay 13 per-step overheads on every link where k = 1 pays one
    assert small["optimal (k=13)"] > 3 * small["k=1"]
    # one step straight to every GPU beats even k = 1 (two hops through the switch)
    assert rows[0].method == "direct" and small["direct"] < small["k=1"]
    assert rows[0].ratio < 1.01
    # at 64 MiB the optimal k wins once each link serves the slice with the most tree
    # edges ahead of it first (the plan's order), within 3 % of the bound
    assert (rows[-1].method, rows[-1].slice_bytes, rows[-1].priority) == (
        "optimal (k=13)",
        512 * KiB,
        "depth",
    )
    assert rows[-1].ratio < 1.03


def test_plan_ring_candidate_is_the_ring_closed_form():
    """On a one-way ring the ring candidate takes (N-1)(o + alpha + M/(N B)) unsliced."""
    b = TopologyBuilder("uniring")
    nodes = [f"g{i}" for i in range(5)]
    for v in nodes:
        b.compute(v)
    for u, v in zip(nodes, nodes[1:] + nodes[:1], strict=True):
        b.link(u, v, 10, latency=2)
    topo = b.build()
    size = 5 * MiB
    ring_only = [c for c in candidates(topo) if c.method == "ring"]
    (row,) = plan(topo, "allgather", [size], overhead=0.5, slice_bytes=None, options=ring_only)
    ring = dict(row.candidates)["ring"]
    assert ring == pytest.approx(4 * (0.5 + 2 + size / 5 / 10_000), rel=1e-12)
    assert latency_bound(topo, overhead=0.5) == 0.5 + 4 * 2  # g0 to g4: four hops one way


def test_allreduce_and_alltoall_candidates_never_beat_the_bound():
    topo = build("dgx-a100:1")
    rows = plan(topo, "allreduce", [KiB, 16 * MiB])
    methods = [m for m, _ in rows[0].candidates]
    assert "double binary tree" in methods and "ring" in methods
    assert all(t is None or t >= row.lower_bound_us for row in rows for _, t in row.candidates)
    gather = [c.method for c in candidates(build("ring:4"), "alltoall")]
    assert gather[0].startswith("optimal") and "direct" in gather
    rows = plan(build("ring:4"), "alltoall", [KiB, MiB])
    assert all(t is None or t >= row.lower_bound_us for row in rows for _, t in row.candidates)


def test_cli_plan_json_export_and_plot(tmp_path, capsys):
    out = tmp_path / "bands"
    picture = tmp_path / "plan.png"
    argv = ["plan", "dgx-a100:2", "--sizes", "1K", "1M", "64M", "--json"]
    assert main([*argv, "--export", str(out), "--plot", str(picture)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["collective", "topology", "format", "sizes", "exports"]
    assert data["collective"] == "allgather" and data["topology"] == "dgx-a100:2"  # the default
    assert data["format"] == "msccl"  # --export alone writes MSCCL and plans for it
    # with --export: each planned size's band file, its time and plan's
    assert [e["bytes"] for e in data["exports"]] == [1024, 2**20, 2**26]
    for entry, row in zip(data["exports"], data["sizes"], strict=True):
        assert entry["file_time_us"] >= entry["plan_time_us"]
        assert entry["files_tried"][entry["method"]] == entry["file_time_us"]
        # the row is the file's; plan's own model's fastest is beside it
        assert (row["method"], row["time_us"]) == (entry["method"], entry["file_time_us"])
        assert row["model"] == {"method": entry["planned"], "time_us": entry["plan_time_us"]}
    for row in data["sizes"]:
        assert list(row) == [
            "bytes", "method", "time_us", "algbw", "busbw", "lower_bound_us", "ratio",
            "bound_holds_for", "slice_bytes", "priority", "candidates",
            "nccl_model_us", "nccl_model_choice", "model",
        ]  # fmt: skip
        assert row["ratio"] >= 1  # no file beats the bound
        # nccl-tests' busbw: allgather (N - 1) / N times algbw, N = 16
        assert row["busbw"] == pytest.approx(row["algbw"] * 15 / 16, abs=2e-3)
        assert row["bound_holds_for"].startswith(
            "cut bound r*: holds for every allgather, as the simulator runs them"
        )
        assert row["ratio"] == pytest.approx(row["time_us"] / row["lower_bound_us"], rel=1e-4)
        assert all(set(c) == {"method", "time_us"} for c in row["candidates"])
    files = sorted(out.glob("*.xml"))
    assert files and all(verify_file(f, topology=build("dgx-a100:2")).ok for f in files)
    # beside each band's programs, its schedule with the order the plan chose
    orders = {row["priority"] for row in data["sizes"]}
    # (a tree band's; at 1K the band is the hierarchical step program, which has none)
    trees = [f for f in files if not f.name.split(".")[2].startswith("hierarchical")]
    assert len(trees) < len(files)
    for f in trees:
        band, method = f.name.split(".")[1:3]
        schedule = load_schedule(out / f"allgather.{band}.{method}.json")
        assert verify_schedule(build("dgx-a100:2"), schedule).valid
        assert schedule.stats["priority"] in orders
    assert picture.read_bytes()[:4] == b"\x89PNG"
    # the bands tile the sizes from 0 with no limit at the top
    bands = sorted({f.name.split(".")[1] for f in files}, key=lambda b: int(b.split("-")[0]))
    assert bands[0].startswith("0-") and bands[-1].endswith("-maxB")
    assert main([*argv, "--export", str(out)]) == 2  # existing files need --force
    assert "exists" in capsys.readouterr().err
    assert main(["plan", "ring:4", "--sizes", "1K"]) == 0
    assert "ratio" in capsys.readouterr().out
    assert main(["plan", "ring:4", "--collective", "broadcast", "--root", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_a_candidate_too_large_to_simulate_gets_no_time():
    """Seven-digit bandwidths make the optimal k 62374632: no time, the rest still plan."""
    b = TopologyBuilder("odd")
    for v in "abc":
        b.compute(v)
    bandwidths = {("a", "b"): "101234567/10000000", ("b", "a"): "77654321/10000000",
                  ("b", "c"): "93333337/10000000", ("c", "b"): 12,
                  ("a", "c"): "31415927/10000000", ("c", "a"): 8}  # fmt: skip
    for (u, v), w in bandwidths.items():
        b.link(u, v, w)
    topo = b.build()
    (row,) = plan(topo, "allgather", [KiB])
    times = dict(row.candidates)
    assert times["optimal (k=62374632)"] is None
    assert row.method in ("k=1", "k=2", "ring", "timetable (k=1)") and row.time_us == min(
        t for t in times.values() if t is not None
    )
    assert row.to_dict()["candidates"][0] == {"method": "optimal (k=62374632)", "time_us": None}
    with pytest.raises(ScheduleError, match="above the limit"):
        simulate_schedule(topo, pack_arborescences(topo), KiB)


def test_export_bands_and_plan_export_write_the_same_files(tmp_path, capsys):
    """export --bands plans the bands as plan --export does: the same programs, byte for byte,
    each band's file the fastest of plan's candidates as a file at the sizes in it."""
    sizes = ["--sizes", "64K", "1M", "64M"]
    assert main(["plan", "dgx-a100:2", *sizes, "--json", "--export", str(tmp_path / "plan")]) == 0
    planned_rows = json.loads(capsys.readouterr().out)["sizes"]
    argv = ["export", "dgx-a100:2", "--bands", *sizes, "--placement", "both"]
    argv += ["-o", str(tmp_path / "bands" / "ag.xml")]
    (tmp_path / "bands").mkdir()
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    planned = sorted(p.read_text() for p in (tmp_path / "plan").glob("*.xml"))
    banded = sorted(p.read_text() for p in (tmp_path / "bands").iterdir())
    assert len(planned) >= 2 and planned == banded
    bands = sorted({(f["min_bytes"], f["max_bytes"], f["k"]) for f in report["files"]})
    assert len(bands) >= 2 and bands[0][0] == 0 and bands[-1][1] is None
    # every planned size in one band, plan's choice there reported beside the band's file
    at = {one["bytes"]: one["planned"] for f in report["files"] for one in f["sizes"]}
    assert at == {row["bytes"]: row["model"]["method"] for row in planned_rows}
    # and plan's row is the band's file there
    filed = {one["bytes"]: (f["method"], one["file_time_us"]) for f in report["files"]
             for one in f["sizes"]}  # fmt: skip
    assert filed == {row["bytes"]: (row["method"], row["time_us"]) for row in planned_rows}
    assert main(["export", "dgx-a100:2", *sizes, "-o", str(tmp_path / "x.xml")]) == 2
    assert "--sizes plans the size bands: it needs --bands" in capsys.readouterr().err


def test_alltoall_plan_simulates_the_hierarchical_routes():
    """dgx-a100:2: optimal routes, direct and the rail routes; the simulator runs each, none
    beats the bound, and at 1 MiB the rail routes are the fastest."""
    topo = build("dgx-a100:2")
    options = candidates(topo, "alltoall")
    assert [o.method for o in options] == ["optimal (k=1)", "direct", "hierarchical (rail)"]
    rows = plan(topo, "alltoall", [KiB, MiB], options=options)
    assert all(t is None or t >= row.lower_bound_us for row in rows for _, t in row.candidates)
    assert rows[1].method == "hierarchical (rail)"


@pytest.mark.parametrize("spec", ["ring:4", "ring:7", "torus:4x4", "dgx-a100:1", "mesh:3x3"])
def test_ring_floor_bounds_the_ring_it_saves_searching_for(spec):
    """The ring's floor is below the ring's own time factor, and its latency part below
    the ring's simulated time at a tiny size (no overhead): plan may skip the search."""
    topo = build(spec)
    ring = ring_schedule(topo)
    floor = ring_floor(topo)
    assert floor.time_factor <= ring.time_factor
    run = simulate_schedule(topo, ring, 64, overhead=0.0)
    least = min(link_latencies(topo, Fraction(1)).values())
    assert floor.hops * least <= run.time_us


@pytest.mark.parametrize(
    ("spec", "sizes"),
    [("torus:4x4", ["256M", "1G"]), ("mesh:3x3", ["64M", "1G"]), ("dgx-a100:1", ["1M", "64M"])],
)
def test_simulate_gives_the_time_plan_printed_for_its_exported_schedules(
    spec, sizes, tmp_path, capsys
):
    """One timing model: every schedule plan --export writes simulates, with no option
    given, at the time plan's own model gives it at each size it won (its recorded order
    and slices; on the torus every translate tied alike, as plan's quotient run). mesh:3x3 at
    1M and 64M writes no schedule: its band's file there is the relayed multiport
    dimension-wise (direct + direct) step program (14.913 and 304.262 µs as files, where
    plan's k=1 tree and timetable run 17.825 and 307.262). On the torus the multiport Swing
    step program, each message in pieces on a channel per transfer, is the file at 1M, 16M
    and 64M, so the torus runs at 256M (the timetable (k=4) band) and 1G."""
    assert main(["plan", spec, "--sizes", *sizes, "--json", "--export", str(tmp_path)]) == 0
    gaps = json.loads(capsys.readouterr().out)["exports"]
    checked = 0
    for path in sorted(tmp_path.glob("*.json")):
        assert main(["simulate", spec, str(path), "--sizes", *sizes, "--json"]) == 0
        runs = json.loads(capsys.readouterr().out)["results"]
        for gap, run in zip(gaps, runs, strict=True):
            if f"{gap['band']}.{_stem(gap['method'])}.json" in path.name:
                # the band's candidate (the fastest MSCCL file): its time in plan's model
                assert run["time_us"] == pytest.approx(gap["method_plan_time_us"], abs=1e-4)
                checked += 1
    # a band whose fastest file is a log-step program writes no schedule JSON (none is
    # simulated here), even where a tree schedule won plan's row
    assert checked >= 1


def _stem(method: str) -> str:
    """A method's part of a plan --export file name."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in method.replace("=", ""))


def test_a_schedule_whose_recorded_order_is_broken_is_refused(tmp_path, capsys):
    topo = build("ring:4")
    schedule = pack_arborescences(topo)
    path = tmp_path / "s.json"
    assert main(["trees", "ring:4", "-o", str(path)]) == 0
    data = json.loads(path.read_text())
    data["stats"].update({"priority": "timetable", "starts": [[0.0]] * len(schedule.trees)})
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["simulate", "ring:4", str(path), "--sizes", "1M"]) == 2
    err = capsys.readouterr().err
    assert "stats.starts[0]" in err and err.count("\n") == 1
    data["stats"].update({"priority": "fastest"})
    path.write_text(json.dumps(data))
    assert main(["simulate", "ring:4", str(path), "--sizes", "1M"]) == 2
    assert "stats.priority" in capsys.readouterr().err


def test_plan_in_the_orders_a_target_carries():
    """mesh:4x4 reduce-scatter at 1 MiB, no overhead: plan's fastest runs optimal (k=2) in
    its depth order, 7.2118 µs in 8 KiB slices; in the data's order alone (what MSCCL and
    MSCCL++ links do) the same trees take 9.6045 µs, and plan, told so, prints that."""
    topo = build("mesh:4x4")
    [own] = plan(topo, "reduce_scatter", [MiB], overhead=0.0)
    [carried] = plan(topo, "reduce_scatter", [MiB], overhead=0.0, orders=("progress",))
    assert (own.method, own.priority, own.slice_bytes) == ("optimal (k=2)", "depth", 8 * KiB)
    assert own.time_us == pytest.approx(7.2118, abs=1e-4)
    assert (carried.method, carried.priority) == ("optimal (k=2)", "progress")
    assert carried.time_us == pytest.approx(9.6045, abs=1e-4)
    assert all(p == "progress" for _, p, _ in carried.orders)
    # the same schedule in that order and slice, simulated on its own
    run = simulate_schedule(topo, carried.schedule, MiB, overhead=0.0,
                            slice_bytes=carried.slice_bytes)  # fmt: skip
    assert run.time_us == pytest.approx(carried.time_us, abs=1e-9)


def test_a_timetable_without_its_start_times_runs_its_trees_sliced():
    """hypercube:4 allgather at 1 MiB, no overhead: the timetable (k=4) in its start times'
    order sends whole chunks, 5.4746 µs; where only the data's order is carried its trees
    run in it, and sliced (8 KiB) they take 5.3107 µs - the schedule plan then records has
    that order and no start times."""
    topo = build("hypercube:4")
    [own] = plan(topo, "allgather", [MiB], overhead=0.0, orders=("timetable",))
    [carried] = plan(topo, "allgather", [MiB], overhead=0.0, orders=("progress",))
    assert (own.method, own.priority) == ("timetable (k=4)", "timetable")
    assert own.time_us == pytest.approx(5.4746, abs=1e-4)
    assert (carried.method, carried.priority, carried.slice_bytes) == (
        "timetable (k=4)", "progress", 8 * KiB,
    )  # fmt: skip
    assert carried.time_us == pytest.approx(5.3107, abs=1e-4)
    assert carried.schedule.stats["priority"] == "progress"
    assert "starts" not in carried.schedule.stats
    run = simulate_schedule(topo, carried.schedule, MiB, overhead=0.0, slice_bytes=8 * KiB)
    assert run.time_us == pytest.approx(carried.time_us, abs=1e-9)


def test_plan_format_times_what_the_files_run(tmp_path, capsys):
    """plan --format mscclpp --export: every band's MSCCL++ plan, run by the simulator's
    reader of the file, takes the time plan printed (mesh:4x4 reduce-scatter, no overhead:
    6.2867 µs at 64 KiB, 9.6045 at 1 MiB); the schedule each band holds is written beside
    it (.schedule.json). Without --format plan prints its own model's 7.2118 at 1 MiB."""
    argv = ["plan", "mesh:4x4", "--collective", "reduce-scatter", "--sizes", "64K", "1M",
            "--overhead", "0"]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    own = json.loads(capsys.readouterr().out)
    assert own["format"] is None and own["sizes"][1]["time_us"] == 7.2118
    folder = tmp_path / "bands"
    assert main([*argv, "--format", "mscclpp", "--export", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "mscclpp"
    assert [r["time_us"] for r in report["sizes"]] == [6.2867, 9.6045]
    assert [(g["plan_time_us"], g["file_time_us"]) for g in report["exports"]] == [
        (6.2867, 6.2867), (9.6045, 9.6045),
    ]  # fmt: skip
    plans = sorted(folder.glob("*.outofplace.json"))
    assert len(plans) == 2 and len(sorted(folder.glob("*.schedule.json"))) == 2
    for path, row in zip(plans, report["sizes"], strict=True):
        size = f"{row['bytes'] // KiB}K"
        slices = ["--slice", f"{row['slice_bytes'] // KiB}K"]
        assert main(["simulate", "mesh:4x4", str(path), "--sizes", size, "--overhead", "0",
                     *slices, "--json"]) == 0  # fmt: skip
        [run] = json.loads(capsys.readouterr().out)["results"]
        assert run["time_us"] == pytest.approx(row["time_us"], abs=1e-4)
    assert main([*argv, "--format", "mscclpp"]) == 0
    out = capsys.readouterr().out
    assert "simulated time (µs) of every candidate: its MSCCL++ file's, as the file runs" in out


def test_plan_format_msccl_prints_the_file_not_plans_model(tmp_path, capsys):
    """hypercube:4 allgather, 1 µs overhead and links: plan's own model lets the direct
    allgather's messages cross GPUs for free (5.0038 µs at 1 KiB); its rccl file relays
    them, a receive and a send each (13.0032), so plan --format msccl prints recursive
    doubling's file, 12.0016, whose partners are neighbours: the time export --size
    writes, run by the checker too, and never below the lower bound (at 1 KiB and 1 MiB
    the MSCCL step bound, 12: ratio 1.0001 where plan's bound gave 2.40)."""
    argv = ["plan", "hypercube:4", "--sizes", "1K", "1M", "--format", "msccl", "--json"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["sizes"]
    first = rows[0]
    assert first["model"] == {"method": "direct", "time_us": 5.0038}
    assert (first["method"], first["time_us"]) == ("recursive doubling", 12.0016)
    files = {c["method"]: c["time_us"] for c in first["candidates"]}
    assert files["direct"] == 13.0032 and min(t for t in files.values() if t) == 12.0016
    assert all(row["time_us"] >= row["lower_bound_us"] for row in rows)
    for row in rows:
        out = tmp_path / f"{row['bytes']}.xml"
        argv = ["export", "hypercube:4", "--size", str(row["bytes"]), "-o", str(out), "--json"]
        assert main(argv) == 0
        entry = json.loads(capsys.readouterr().out)["files"][0]
        assert (entry["method"], entry["file_time_us"]) == (row["method"], row["time_us"])
        # both divide by the MSCCL step bound: 4 hops of a send, a receive and a link
        assert entry["lower_bound_us"] == row["lower_bound_us"] == 12.0
        assert verify_file(Path(entry["path"]), topology=build("hypercube:4")).ok


def test_plan_format_mscclpp_export_and_export_bands_write_the_same_plans(tmp_path, capsys):
    """plan --format mscclpp --export and export --bands --format mscclpp plan alike (in the
    orders MSCCL++ carries) and write the same execution plans, byte for byte (dgx-a100:2
    allgather: direct to 1 MiB, hierarchical (direct + direct) to 64 MiB, then k=2)."""
    sizes = ["--sizes", "64K", "1M", "64M"]
    folder = tmp_path / "plan"
    assert main(["plan", "dgx-a100:2", *sizes, "--format", "mscclpp", "--export", str(folder)]) == 0
    capsys.readouterr()
    (tmp_path / "bands").mkdir()
    argv = ["export", "dgx-a100:2", "--bands", *sizes, "--format", "mscclpp"]
    assert main([*argv, "-o", str(tmp_path / "bands" / "ag.json")]) == 0
    planned = sorted(p.read_text() for p in folder.glob("*.outofplace.json"))
    banded = sorted(p.read_text() for p in (tmp_path / "bands").iterdir())
    assert len(planned) == 3 and planned == banded
    methods = sorted(p.name.split(".")[2] for p in folder.glob("*.outofplace.json"))
    assert methods == ["direct", "hierarchical__direct___direct_", "k2"]
    assert len(list(folder.glob("*.schedule.json"))) == 1  # the one tree band's schedule


def test_plan_format_choices_are_the_formats_whose_orders_are_known():
    """plan --format lists its choices without importing the export package (start-up);
    they must be the formats CARRIED_ORDERS knows."""
    from optcoll.cli.plan import FORMATS
    from optcoll.export.planned_programs import CARRIED_ORDERS

    assert FORMATS == tuple(CARRIED_ORDERS)
