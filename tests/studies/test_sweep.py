"""Sweeps: exact values per point, the same on every engine, resumable without loss."""

from __future__ import annotations

import json
from fractions import Fraction

import polars as pl
import pytest

import optcoll.studies.sweep as sweep_module
from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.exceptions import OutputError
from optcoll.studies.sweep import (
    SweepSpecError,
    journal_path,
    load_sweep_spec,
    metadata_path,
    parse_sweep_spec,
    run_sweep,
    sweep_points,
)

TORUS = {
    "base": "torus:{n}x{n}",
    "grid": {"n": [3, 4, 5]},
    "quantities": ["cut_ratio", "algbw", "k"],
}


def _spec(data=None):
    return parse_sweep_spec(data or TORUS)


def test_the_issue_spec_gives_exact_values_of_the_bound():
    rows = run_sweep(_spec(), workers=1)
    assert [row["topology"] for row in rows] == ["torus:3x3", "torus:4x4", "torus:5x5"]
    assert [(row["n"], row["cut_ratio"], row["k"]) for row in rows] == [
        (3, "1/50", 1),
        (4, "3/80", 4),
        (5, "3/50", 1),
    ]
    for row in rows:
        bound = optimal_cut_ratio(load_topology(row["topology"]))
        assert Fraction(row["cut_ratio"]) == bound.ratio
        assert row["algbw"] == round(bound.algbw, 3) and row["k"] == bound.k
        assert row["error"] == ""


def test_small_points_agree_with_brute_force():
    spec = _spec(
        {
            "base": "ring:{n},bw={bw}",
            "grid": {"n": [3, 5], "bw": [10, 12.5]},
            "quantities": ["cut_ratio", "U"],
        }
    )
    rows = run_sweep(spec, workers=1)
    assert [(row["n"], row["bw"]) for row in rows] == [(3, 10), (3, 12.5), (5, 10), (5, 12.5)]
    for row in rows:
        brute = optimal_cut_ratio(load_topology(row["topology"]), "brute-force")
        assert Fraction(row["cut_ratio"]) == brute.ratio and Fraction(row["U"]) == brute.U


def test_fixed_k_and_alltoall_quantities_match_the_documented_values():
    spec = _spec(
        {
            "base": "{t}",
            "grid": {"t": ["mi250:2", "dgx-a100:2"]},
            "quantities": ["cut_ratio", "time_factor_k1", "alltoall"],
        }
    )
    rows = run_sweep(spec, workers=1)
    # the README's Python API (best with k = 1 on mi250:2) and all-to-all table (dgx-a100:2)
    assert (rows[0]["time_factor_k1"], rows[0]["cut_ratio"]) == ("1/10", "15/166")
    assert rows[1]["alltoall"] == "8/25"
    assert Fraction(rows[1]["time_factor_k1"]) >= Fraction(rows[1]["cut_ratio"])


def test_scale_perturbation_matches_the_edited_topology():
    spec = _spec(
        {
            "base": "dgx-a100:2",
            "grid": {"nic": [0.5, 2]},
            "scale": [{"links": "nic", "factor": "{nic}"}],
            "quantities": ["cut_ratio"],
        }
    )
    rows = run_sweep(spec, workers=1)
    for row, factor in zip(rows, (Fraction(1, 2), Fraction(2)), strict=True):
        edited = load_topology("dgx-a100:2").scale_links(
            lambda link: "nic" in link.src or "nic" in link.dst, factor
        )
        assert Fraction(row["cut_ratio"]) == optimal_cut_ratio(edited).ratio
    assert rows[0]["cut_ratio"] != rows[1]["cut_ratio"]


def test_a_topology_file_base_is_read_beside_the_spec(tmp_path):
    from optcoll.io import save_topology

    (tmp_path / "fabric").mkdir()
    for boxes in (1, 2):
        save_topology(load_topology(f"dgx-a100:{boxes}"), tmp_path / "fabric" / f"a{boxes}.yaml")
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        "base: fabric/a{boxes}.yaml\ngrid: {boxes: [1, 2], nvlink: [1, 0.5]}\n"
        "scale: [{links: nvswitch, factor: '{nvlink}'}]\nquantities: [cut_ratio, num_compute]\n"
    )
    rows = run_sweep(load_sweep_spec(spec_file), workers=1)
    assert [row["topology"] for row in rows] == ["fabric/a1.yaml"] * 2 + ["fabric/a2.yaml"] * 2
    assert [row["num_compute"] for row in rows] == [8, 8, 16, 16]
    for row in rows:
        topology = load_topology(f"dgx-a100:{row['boxes']}").scale_links(
            lambda link: "nvswitch" in link.src + link.dst, Fraction(str(row["nvlink"]))
        )
        assert Fraction(row["cut_ratio"]) == optimal_cut_ratio(topology).ratio


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"grid": {}, "quantities": ["k"]}, "'base' is missing"),
        (
            {"base": "ring:{n}", "grid": {"n": [4]}, "quantities": ["speed"]},
            "unknown quantity 'speed'",
        ),
        ({"base": "ring:{n}", "grid": {"m": [4]}, "quantities": ["k"]}, "no key 'n'"),
        ({"base": "ring:4", "grid": {"n": [4]}, "quantities": ["k"]}, "grid key 'n' is used by no"),
        (
            {"base": "ring:{n}", "grid": {"n": []}, "quantities": ["k"]},
            "grid.n must be a non-empty",
        ),
        ({"base": "ring:{n}", "grid": {"n": [4, 4]}, "quantities": ["k"]}, "repeats a value"),
        ({"base": "ring:{k}", "grid": {"k": [4]}, "quantities": ["k"]}, "also a column name"),
        ({"base": "ring:4", "quantities": ["k"], "output": "x.csv"}, "unknown key 'output'"),
        ({"base": "ring:{n}", "grid": {"n": [True]}, "quantities": ["k"]}, "numbers or strings"),
        (
            {"base": "ring:4", "quantities": ["plan_ratio"]},
            "quantity 'plan_ratio' needs a plan key",
        ),
        (
            {"base": "ring:4", "quantities": ["k"], "plan": {"sizes": [1024]}},
            "plan is used only by the plan_",
        ),
        (
            {"base": "ring:4", "quantities": ["plan_ratio"], "plan": {"sizes": ["1.5M"]}},
            "plan.sizes: size '1.5M' must be a positive integer",
        ),
        (
            {"base": "ring:4", "quantities": ["plan_ratio"], "plan": {"sizes": [1024, "1K"]}},
            "plan.sizes repeats a size",
        ),
        (
            {"base": "ring:4", "quantities": ["plan_ratio"], "plan": {"sizes": [True]}},
            "plan.sizes holds True",
        ),
        (
            {"base": "ring:4", "quantities": ["plan_ratio"], "plan": {"size": [1024]}},
            "plan must be a mapping with sizes",
        ),
        (
            {
                "base": "ring:4",
                "quantities": ["plan_ratio"],
                "plan": {"sizes": [1024], "collective": "gather"},
            },
            "plan.collective: unknown collective 'gather'",
        ),
        (
            {
                "base": "ring:4",
                "quantities": ["plan_ratio"],
                "plan": {"sizes": [1024]},
                "plot": "plan_ratio@1M",
            },
            r"plot must be one of the columns \(plan_ratio@1K\)",
        ),
    ],
)
def test_bad_specs_name_the_key(data, message):
    with pytest.raises(SweepSpecError, match=message):
        parse_sweep_spec(data)


def test_a_bad_point_names_its_grid_values():
    with pytest.raises(Exception, match="sweep point n=1"):
        sweep_points(_spec({"base": "ring:{n}", "grid": {"n": [4, 1]}, "quantities": ["k"]}))


def test_the_local_pool_gives_the_serial_values():
    assert run_sweep(_spec(), workers=2) == run_sweep(_spec(), workers=1)


def test_a_dask_local_cluster_gives_exactly_the_serial_values():
    distributed = pytest.importorskip("distributed")
    serial = run_sweep(_spec(), workers=1)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert run_sweep(_spec(), dask=client) == serial
        # an address is connected to and closed again
        assert run_sweep(_spec(), dask=cluster.scheduler_address) == serial


def test_a_failed_point_is_recorded_and_the_rest_computed(monkeypatch):
    real = sweep_module.evaluate_point

    def flaky(task):
        if task[0]["name"] == "torus:4x4":
            raise RuntimeError("worker lost")
        return real(task)

    monkeypatch.setattr(sweep_module, "evaluate_point", flaky)
    rows = run_sweep(_spec(), workers=1)
    assert [row["error"] for row in rows] == ["", "RuntimeError: worker lost", ""]
    assert rows[1]["cut_ratio"] is None and rows[2]["cut_ratio"] == "3/50"


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_interruption_and_resume_lose_nothing(tmp_path, monkeypatch, suffix):
    out = tmp_path / f"results{suffix}"
    spec = _spec(
        {
            "base": "ring:{n}",
            "grid": {"n": [3, 4, 5, 6, 7]},
            "quantities": ["cut_ratio", "algbw", "k", "cut_description"],
        }
    )
    reference = run_sweep(spec, workers=1)
    real = sweep_module.evaluate_point
    calls = []

    def interrupted(task):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(task[0]["name"])
        return real(task)

    monkeypatch.setattr(sweep_module, "evaluate_point", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, output=out, workers=1)
    assert not out.exists() and journal_path(out).exists()
    with pytest.raises(OutputError, match="--resume to continue it"):
        run_sweep(spec, output=out, workers=1)

    calls.clear()

    def counted(task):
        calls.append(task[0]["name"])
        return real(task)

    monkeypatch.setattr(sweep_module, "evaluate_point", counted)
    assert run_sweep(spec, output=out, resume=True, workers=1) == reference
    assert calls == ["ring:5", "ring:6", "ring:7"]  # only the unfinished points
    assert not journal_path(out).exists()
    table = pl.read_parquet(out) if suffix == ".parquet" else pl.read_csv(out)
    assert table.columns == [
        "n",
        "topology",
        "cut_ratio",
        "algbw",
        "k",
        "cut_description",
        "error",
        "key",
    ]
    assert table["cut_ratio"].to_list() == [row["cut_ratio"] for row in reference]
    calls.clear()
    assert run_sweep(spec, output=out, resume=True, workers=1) == reference
    assert calls == []  # everything reused from the table
    with pytest.raises(OutputError, match="--resume to reuse"):
        run_sweep(spec, output=out, workers=1)
    run_sweep(spec, output=out, force=True, workers=1)
    assert calls == ["ring:3", "ring:4", "ring:5", "ring:6", "ring:7"]


@pytest.mark.slow
def test_a_killed_sweep_process_resumes_without_loss(tmp_path):
    """SIGKILL after the first finished point: the journal holds what finished, the resumed
    table equals an uninterrupted run."""
    import signal
    import subprocess
    import sys
    import time

    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        "base: dgx-a100:{boxes}\ngrid: {boxes: [1, 2, 3, 4]}\nquantities: [cut_ratio, alltoall]\n"
    )
    out = tmp_path / "table.parquet"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "optcoll",
            "sweep",
            str(spec_file),
            "-o",
            str(out),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    journal = journal_path(out)
    deadline = time.monotonic() + 120
    while not (journal.exists() and journal.read_text().count("\n") >= 1):
        assert child.poll() is None and time.monotonic() < deadline, "no point finished"
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    assert not out.exists()
    done = journal.read_text().count("\n")
    assert 1 <= done <= 3
    spec = load_sweep_spec(spec_file)
    resumed = run_sweep(spec, output=out, resume=True, workers=1)
    assert resumed == run_sweep(spec, workers=1)
    # t* of dgx-a100:2 and dgx-a100:4 as the README's all-to-all table gives them
    assert (resumed[1]["alltoall"], resumed[3]["alltoall"]) == ("8/25", "24/25")
    assert not journal.exists()


def test_resume_recomputes_failed_points_and_changed_quantities(tmp_path, monkeypatch):
    out = tmp_path / "results.csv"
    real = sweep_module.evaluate_point
    monkeypatch.setattr(
        sweep_module,
        "evaluate_point",
        lambda task: (
            (_ for _ in ()).throw(RuntimeError("x")) if "4x4" in task[0]["name"] else real(task)
        ),
    )
    run_sweep(_spec(), output=out, workers=1)
    calls = []
    monkeypatch.setattr(
        sweep_module, "evaluate_point", lambda task: calls.append(task[0]["name"]) or real(task)
    )
    rows = run_sweep(_spec(), output=out, resume=True, workers=1)
    assert calls == ["torus:4x4"] and all(row["error"] == "" for row in rows)
    with pytest.raises(OutputError, match="no column 'U'"):
        run_sweep(_spec({**TORUS, "quantities": ["U"]}), output=out, resume=True, workers=1)


def test_cli_sweep_writes_table_metadata_and_plot(tmp_path, capsys):
    spec_file = tmp_path / "torus.yaml"
    spec_file.write_text(
        'base: "torus:{n}x{n}"\ngrid: {n: [3, 4, 5]}\nquantities: [cut_ratio, algbw, k]\n'
    )
    out, picture = tmp_path / "results.csv", tmp_path / "r.png"
    assert (
        main(["sweep", str(spec_file), "-o", str(out), "--plot", str(picture), "--workers", "1"])
        == 0
    )
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == "n,topology,cut_ratio,algbw,k,error"
    assert "4,torus:4x4,3/80,426.667,4," in printed
    assert pl.read_csv(out)["k"].to_list() == [1, 4, 1]
    meta = json.loads(metadata_path(out).read_text())
    assert meta["spec"] == load_sweep_spec(spec_file).source and meta["points"] == 3
    assert picture.read_bytes()[:4] == b"\x89PNG"
    assert main(["sweep", str(spec_file), "-o", str(out), "--workers", "1"]) == 2
    assert "exists; pass --resume" in capsys.readouterr().err
    assert main(["sweep", str(spec_file), "-o", str(out), "--resume", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [row["cut_ratio"] for row in data["rows"]] == ["1/50", "3/80", "3/50"]
    assert main(["sweep", str(spec_file), "-o", str(tmp_path / "r.txt")]) == 2
    assert "written as .csv or .parquet" in capsys.readouterr().err
    assert main(["sweep", str(spec_file), "--dask", "not an address"]) == 2
    assert "no Dask scheduler answers at 'not an address'" in capsys.readouterr().err
    assert main(["sweep", str(spec_file), "--resume"]) == 2
    assert "give -o OUT" in capsys.readouterr().err


PLANNED = {
    "base": "ring:{n}",
    "grid": {"n": [4, 6]},
    "quantities": ["cut_ratio", "plan_method", "plan_time_us", "plan_algbw", "plan_ratio"],
    "plan": {"sizes": ["4K", "1G"], "collective": "allgather"},
    "plot": "plan_algbw@1G",
}


def test_plan_quantities_are_the_plan_at_each_size(tmp_path, monkeypatch):
    from optcoll.sim.size_plan import candidates, plan

    spec = _spec(PLANNED)
    assert spec.columns[1:3] == ("plan_method@4K", "plan_method@1G")
    out = tmp_path / "planned.csv"
    rows = run_sweep(spec, output=out, workers=1)
    for row in rows:
        topology = load_topology(row["topology"])
        planned = {p.size: p for p in plan(topology, "allgather", [4096, 2**30])}
        methods = {c.method for c in candidates(topology)}
        r_star = Fraction(row["cut_ratio"])
        for text, size in (("4K", 4096), ("1G", 2**30)):
            assert row[f"plan_method@{text}"] == planned[size].method
            assert row[f"plan_method@{text}"] in methods
            time_us = row[f"plan_time_us@{text}"]
            assert time_us == round(planned[size].time_us, 4)
            assert row[f"plan_algbw@{text}"] == pytest.approx(size / time_us / 1000, abs=1e-3)
            assert row[f"plan_ratio@{text}"] >= 1
        # at 1 GiB the lower bound is the bandwidth term (M/N) r* plus the start-up windows'
        # (a few µs): the gap is time over it
        width_us = float(Fraction(2**30, topology.num_compute) * r_star) / 1000
        assert row["plan_ratio@1G"] == pytest.approx(
            planned[2**30].time_us / planned[2**30].lower_bound_us, rel=1e-5
        )
        assert width_us <= planned[2**30].lower_bound_us <= width_us + 10
        assert row["plan_ratio@1G"] < 1.05  # the optimal trees at a large size
    table = pl.read_csv(out)
    assert table["plan_method@1G"].to_list() == [row["plan_method@1G"] for row in rows]
    assert table.schema["plan_ratio@4K"] == pl.Float64
    assert sweep_module.plot_values(rows, spec)[1]["plan_algbw@1G"][1] == [
        row["plan_algbw@1G"] for row in rows
    ]
    calls = []
    real = sweep_module.evaluate_point
    monkeypatch.setattr(
        sweep_module, "evaluate_point", lambda task: calls.append(task[0]["name"]) or real(task)
    )
    assert run_sweep(spec, output=out, resume=True, workers=1) == rows
    assert calls == []  # the plan columns are read back in their types
    other = _spec({**PLANNED, "plan": {"sizes": ["4K", "1G"], "collective": "allreduce"}})
    assert [p.key for p in sweep_points(other)] != [row["key"] for row in rows]
