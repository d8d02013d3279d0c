"""Failure analysis: exact r* after failures, certified by cuts, the same with and without symmetry."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.cli import main
from optcoll.exceptions import OptCollError
from optcoll.studies.resilience import failed_topology, failure_elements, failure_study, group_swaps


def _check_certificate(topology, failure):
    """The failure's cut, checked on the failed topology built independently of the study."""
    remaining = {v for v in topology.node_ids if v not in failure.failed}
    cut = set(failure.bottleneck_cut)
    assert cut <= remaining
    arcs = {}
    gone = {frozenset(e) for e in failure.failed if isinstance(e, tuple)}
    for (u, v), c in topology.capacity.items():
        if u in remaining and v in remaining and frozenset((u, v)) not in gone:
            arcs[(u, v)] = c
    leaving = sum(c for (u, v), c in arcs.items() if u in cut and v not in cut)
    inside = sum(1 for v in cut if topology.is_compute(v))
    compute = sum(1 for v in topology.compute_nodes if v in remaining)
    assert 0 < inside < compute
    if failure.disconnected:
        assert leaving == 0
    else:
        assert Fraction(inside) / leaving == failure.ratio


@pytest.mark.parametrize(
    ("spec", "kind"),
    [("ring:5", "links"), ("dgx-a100:1", "nodes"), ("star:5", "links"), ("mesh:2x3", "nodes")],
)
def test_every_failure_matches_brute_force_on_the_failed_topology(spec, kind):
    topology = load_topology(spec)
    study = failure_study(topology, kind, workers=1)
    assert [f.failed for f in study.failures] == [(e,) for e in failure_elements(topology, kind)]
    for failure in study.failures:
        _check_certificate(topology, failure)
        if not failure.disconnected:
            brute = optimal_cut_ratio(failed_topology(topology, failure.failed), "brute-force")
            assert failure.ratio == brute.ratio


def test_star_link_failures_disconnect_and_node_failures_do_not():
    study = failure_study(load_topology("star:4"), "links", workers=1)
    assert all(f.disconnected and f.algbw == 0 for f in study.failures)
    nodes = failure_study(load_topology("star:4"), "nodes", workers=1)
    hub = [f for f in nodes.failures if f.failed == ("hub",)]
    assert hub[0].disconnected
    assert [str(f.ratio) for f in nodes.failures if f.failed != ("hub",)] == ["1/50"] * 4


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("dgx-a100:2", "links"),
        ("dgx-a100:3", "nics"),
        ("leaf-spine:leaves=3,hosts=2,spines=2,oversub=2", "links"),
        ("dgx-h100:2", "nodes"),
    ],
)
def test_symmetry_gives_exactly_the_values_of_solving_every_failure(spec, kind):
    topology = load_topology(spec)
    fast = failure_study(topology, kind, workers=1)
    full = failure_study(topology, kind, workers=1, symmetry=False)
    assert fast.solves < full.solves == len(full.failures)
    assert any(f.derived for f in fast.failures)
    assert [(f.failed, f.ratio) for f in fast.failures] == [
        (f.failed, f.ratio) for f in full.failures
    ]
    for failure in fast.failures:
        _check_certificate(topology, failure)


def test_a_swap_that_is_not_an_automorphism_is_refused():
    topology = load_topology("dgx-a100:3")
    assert sorted(group_swaps(topology)) == ["box1", "box2"]
    uneven = topology.scale_links("b1.gpu0", 2)
    assert sorted(group_swaps(uneven)) == ["box2"]  # box1 differs; box2 still swaps with box0
    study = failure_study(uneven, "links", workers=1)
    full = failure_study(uneven, "links", workers=1, symmetry=False)
    assert [f.ratio for f in study.failures] == [f.ratio for f in full.failures]


def test_random_failures_are_reproducible_and_exact():
    topology = load_topology("dgx-a100:2")
    one = failure_study(topology, "links", random_failures=3, seed=5, trials=4, workers=1)
    again = failure_study(topology, "links", random_failures=3, seed=5, trials=4, workers=1)
    other = failure_study(topology, "links", random_failures=3, seed=6, trials=4, workers=1)
    assert [f.failed for f in one.failures] == [f.failed for f in again.failures]
    assert [f.failed for f in one.failures] != [f.failed for f in other.failures]
    assert all(len(set(f.failed)) == 3 for f in one.failures) and len(one.failures) == 4
    for failure in one.failures:
        _check_certificate(topology, failure)
        assert failure.ratio == optimal_cut_ratio(failed_topology(topology, failure.failed)).ratio
    assert one.to_dict()["random"] == {"failures": 3, "seed": 5, "trials": 4}
    assert "random" not in failure_study(load_topology("ring:3"), workers=1).to_dict()
    with pytest.raises(OptCollError, match="choose 1 to 48"):
        failure_study(topology, "links", random_failures=49)


def test_dask_local_cluster_gives_the_serial_study():
    distributed = pytest.importorskip("distributed")
    topology = load_topology("dgx-a100:2")
    serial = failure_study(topology, "links", workers=1)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert failure_study(topology, "links", dask=client).to_dict() == serial.to_dict()


def test_cli_json_has_the_issue_fields(capsys):
    assert main(["resilience", "line:3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["base_cut_ratio"] == "1/50"
    assert [f["failed"] for f in data["failures"]] == [[["n0", "n1"]], [["n1", "n2"]]]
    for failure in data["failures"]:
        assert failure["cut_ratio"] is None and failure["disconnected"] is True
        assert set(failure) >= {"failed", "cut_ratio", "bottleneck_cut"}
    assert main(["resilience", "dgx-a100:2", "--fail", "nics", "--json", "--workers", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["base_cut_ratio"] == "3/65" and len(data["failures"]) == 16
    assert {f["cut_ratio"] for f in data["failures"]} == {"1/20"}


def test_cli_report_plot_and_errors(tmp_path, capsys):
    picture = tmp_path / "drops.png"
    assert (
        main(["resilience", "dgx-a100:2", "--top", "2", "--plot", str(picture), "--workers", "1"])
        == 0
    )
    out = capsys.readouterr().out
    assert "48 single link failures; 24 solved, the rest by symmetry; 0 disconnect" in out
    assert "1. b0.gpu0 <-> b0.nvswitch: r* 3/5, algbw 26.667 (92.3% lost)" in out
    assert "3." not in out
    assert picture.read_bytes()[:4] == b"\x89PNG"
    assert main(["resilience", "dgx-a100:2", "--plot", str(picture)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["resilience", "ring:4", "--fail", "nics"]) == 2
    assert "has no NIC" in capsys.readouterr().err
    assert main(["resilience", "ring:4", "--seed", "3"]) == 2
    assert "give --random K too" in capsys.readouterr().err
