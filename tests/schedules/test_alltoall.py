"""All-to-all schedules: exact paths per pair, chunked schedules that attain t*, the
independent verifier, the schedule file's all-to-all form, baselines and the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import FAMILIES, random_topologies
from hypothesis import HealthCheck, given, settings

from optcoll import load_topology
from optcoll.bounds.path_flow import path_concurrent_flow
from optcoll.cli import main
from optcoll.core.schedule import Route, RoutePath, Schedule
from optcoll.core.topology import Topology
from optcoll.exceptions import ArgumentError, ScheduleError
from optcoll.schedules.alltoall import (
    alltoall_bound,
    alltoall_optimum,
    alltoall_schedule,
    path_decomposition,
)
from optcoll.schedules.baselines import (
    direct_alltoall,
    direct_alltoall_schedule,
    hierarchical_alltoall,
    hierarchical_alltoall_schedule,
)
from optcoll.studies.compare import compare_methods
from optcoll.studies.crosscheck import ALLTOALL_METHODS, crosscheck
from optcoll.verify.schedule import verify_schedule


def exact_schedule_checks(topology: Topology) -> None:
    bound = alltoall_bound(topology)
    paths = path_decomposition(topology, bound.routing)
    n = topology.num_compute
    assert len(paths) == n * (n - 1)
    load: dict = {}
    for (s, d), pieces in paths.items():
        assert sum(w for _, w in pieces) == 1
        for path, w in pieces:
            assert path[0] == s and path[-1] == d and w > 0
            for arc in zip(path, path[1:], strict=False):
                load[arc] = load.get(arc, 0) + w
    routed: dict = {}
    for flow in bound.routing.values():
        for arc, x in flow.items():
            routed[arc] = routed.get(arc, 0) + x
    assert all(load[arc] <= routed[arc] for arc in load)
    schedule = alltoall_schedule(topology, bound=bound)
    assert schedule.k == schedule.stats["exact_k"]
    check = verify_schedule(topology, schedule, optimum=bound.time_factor, require_optimal=True)
    assert check.valid, check.reason
    assert check.time_factor == bound.time_factor == schedule.time_factor
    for k in (1, 3):
        rounded = alltoall_schedule(topology, k, bound=bound)
        check = verify_schedule(topology, rounded, optimum=bound.time_factor)
        assert check.valid, check.reason
        assert bound.time_factor <= check.time_factor <= Fraction(rounded.stats["rounding_bound"])


@settings(
    max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(random_topologies(bandwidths=(1, 2, 3, Fraction(5, 2), 25, Fraction(1, 3))))
def test_random_schedules_attain_the_optimum(topology: Topology) -> None:
    exact_schedule_checks(topology)


@pytest.mark.parametrize(
    "spec", ["dgx-a100:2", "mi250:1", "dgx-v100:1", "torus:3x3", "ring:5,direction=uni"]
)
def test_builtin_schedules_attain_the_optimum(spec: str) -> None:
    exact_schedule_checks(load_topology(spec))


def test_fixed_k_rounding_is_stated_exactly() -> None:
    topology = load_topology("mi250:1")
    bound = alltoall_bound(topology)
    exact = alltoall_schedule(topology, bound=bound)
    assert exact.k == 3 and exact.time_factor == bound.time_factor == Fraction(16, 75)
    two = alltoall_schedule(topology, 2, bound=bound)
    assert two.time_factor == Fraction(11, 50)
    assert two.stats["ratio_to_optimum"] == "33/32"
    with pytest.raises(ArgumentError, match="k must be a positive integer"):
        alltoall_schedule(topology, 0, bound=bound)


def test_schedule_file_round_trip_and_shape_errors() -> None:
    topology = load_topology("ring:3,direction=uni,bw=1")
    schedule = alltoall_schedule(topology)
    data = schedule.to_dict()
    assert "trees" not in data and len(data["routes"]) == 6
    assert data["routes"][0] == {
        "src": "n0",
        "dst": "n1",
        "paths": [{"chunks": 1, "path": ["n0", "n1"]}],
    }
    assert Schedule.from_dict(data) == schedule
    with pytest.raises(ScheduleError, match="missing the required field 'routes'"):
        Schedule.from_dict({k: v for k, v in data.items() if k != "routes"})
    with pytest.raises(ScheduleError, match="has 'routes', not 'trees'"):
        Schedule.from_dict({**data, "trees": []})
    bad = json.loads(json.dumps(data))
    bad["routes"][0]["paths"][0]["chunks"] = 0
    with pytest.raises(ScheduleError, match=r"routes\[0\]\.paths\[0\]: 'chunks'"):
        Schedule.from_dict(bad)


def broken(schedule: Schedule, index: int, route: Route | None) -> Schedule:
    routes = list(schedule.routes)
    if route is None:
        del routes[index]
    else:
        routes[index] = route
    return replace(schedule, routes=tuple(routes), time_factor=None)


def test_verifier_names_what_is_wrong() -> None:
    topology = load_topology("ring:3,bw=1")
    schedule = alltoall_schedule(topology, 2)
    assert verify_schedule(topology, schedule).valid
    first = schedule.routes[0]
    cases = [
        (broken(schedule, 0, None), "no route delivers the piece from 'n0' to 'n1'"),
        (broken(schedule, 1, first), "the pair already has route 0"),
        (
            broken(schedule, 0, Route("n0", "n1", (RoutePath(1, ("n0", "n1")),))),
            "sum to 1, expected k = 2",
        ),
        (
            broken(schedule, 0, Route("n0", "n1", (RoutePath(2, ("n0", "n2")),))),
            "it must run from 'n0' to 'n1'",
        ),
        (
            broken(schedule, 0, Route("n0", "n1", (RoutePath(2, ("n0", "n2", "n0", "n1")),))),
            "visits a node twice",
        ),
        (broken(schedule, 0, Route("n0", "n0", ())), "two distinct compute nodes"),
    ]
    for bad, reason in cases:
        result = verify_schedule(topology, bad)
        assert not result.valid and reason in result.reason
    line = load_topology("line:3,bw=1")
    result = verify_schedule(
        line,
        broken(alltoall_schedule(line, 1), 1, Route("n0", "n2", (RoutePath(1, ("n0", "n2")),))),
    )
    assert "there is no link 'n0' -> 'n2'" in result.reason
    lying = replace(schedule, time_factor=schedule.time_factor / 2)
    reason = verify_schedule(topology, lying).reason
    assert "is overloaded" in reason and "claimed time factor" in reason
    too_good = verify_schedule(topology, schedule, optimum=schedule.time_factor * 2)
    assert "below the optimum" in too_good.reason


def test_baselines_never_beat_the_optimum() -> None:
    topology = load_topology("dgx-a100:2")
    t = alltoall_bound(topology).time_factor
    direct, rail = direct_alltoall(topology), hierarchical_alltoall(topology)
    assert rail is not None
    assert (t, direct.time_factor, rail.time_factor) == (
        Fraction(8, 25),
        Fraction(4, 5),
        Fraction(11, 30),
    )
    assert hierarchical_alltoall(load_topology("ring:4")) is None
    costs = compare_methods(topology, "alltoall")
    assert [c.method for c in costs] == ["optimal (k=1)", "direct", "hierarchical (rail)"]
    assert costs[0].time_factor == t


def test_cli_solve_verify_export_plot_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["solve", "mi250:1", "--collective", "alltoall", "-o", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["optimum"] == summary["time_factor"] == "16/75" and summary["k"] == 3
    path = Path(summary["schedule"])
    assert Path(summary["picture"]).stat().st_size > 0
    assert main(["verify", "mi250:1", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] and data["optimum"] == "16/75" and data["routes"] == 240
    assert main(["solve", "mi250:1", "--collective", "alltoall", "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    exported = tmp_path / "a2a.json"
    assert (
        main(
            [
                "export",
                "dgx-a100:1",
                "--collective",
                "alltoall",
                "--format",
                "json",
                "-o",
                str(exported),
            ]
        )
        == 0
    )
    assert "alltoall, k = 1, time factor 7/300 (optimum 7/300" in capsys.readouterr().out
    document = json.loads(exported.read_text())
    document["routes"] = document["routes"][1:]
    exported.write_text(json.dumps(document))
    assert main(["verify", "dgx-a100:1", str(exported)]) == 1
    assert "no route delivers" in capsys.readouterr().out
    picture = tmp_path / "loads.png"
    assert main(["plot", "mi250:1", "-o", str(picture), "--schedule", str(path)]) == 0
    assert picture.stat().st_size > 0
    capsys.readouterr()
    assert main(["compare", "dgx-a100:2", "--collective", "alltoall", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["methods"]
    assert [(r["method"], r["time_factor"]) for r in rows] == [
        ("optimal (k=1)", "8/25"),
        ("direct", "4/5"),
        ("hierarchical (rail)", "8/25"),  # the relayed rail routes the simulator runs
    ]


@pytest.mark.parametrize("spec", FAMILIES)
def test_two_lps_and_the_routes_agree_on_every_family(spec: str) -> None:
    topology = load_topology(spec)
    check = crosscheck(topology, collective="alltoall")
    ran = [r.method for r in check.results]
    assert sorted(ran + list(check.skipped)) == sorted(ALLTOALL_METHODS)
    assert set(check.skipped) <= {"orbit LP (automorphisms)"}
    assert check.agree, check.disagreement
    assert check.reference == alltoall_bound(topology).time_factor
    assert check.cut_bound is not None and check.cut_bound <= check.reference


@settings(
    max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(random_topologies(bandwidths=(1, 2, 3, Fraction(5, 2), 25, Fraction(1, 3))))
def test_path_lp_equals_edge_lp_on_random_topologies(topology: Topology) -> None:
    caps, unit = topology.integer_capacities()
    compute = topology.compute_nodes
    pairs = {(s, d): 1 for s in compute for d in compute if s != d}
    paths = path_concurrent_flow(topology.node_ids, caps, pairs)
    assert paths.time / unit == alltoall_optimum(topology).time_factor
    for pair, pieces in paths.paths.items():
        assert sum(w for _, w in pieces) == 1
        assert all(p[0] == pair[0] and p[-1] == pair[1] for p, _ in pieces)


def test_cli_crosscheck_alltoall(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["crosscheck", "ring:4,direction=uni,bw=1", "--collective", "alltoall", "--json"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert (data["reference"], data["cut_bound"], data["flow_cut_gap"]) == ("6", "4", "3/2")
    assert data["agree"] and data["cut_exhaustive"]
    assert main(["crosscheck", "dgx-a100:1", "--collective", "alltoall"]) == 0
    out = capsys.readouterr().out
    assert "path LP (column generation)  7/300" in out and "all methods agree" in out
    code = main(
        ["crosscheck", "dgx-a100:1", "--collective", "alltoall", "--methods", "brute-force"]
    )
    assert code == 2
    assert "unknown cross-check method 'brute-force' for alltoall" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "rail_factor"),
    [
        ("dgx-a100:2", Fraction(8, 25)),
        ("dgx-h100:4", Fraction(12, 25)),
        ("mi250:2", Fraction(29, 25)),
    ],
)
def test_hierarchical_routes_verify_and_stay_within_the_phases_sum(
    spec: str, rail_factor: Fraction
) -> None:
    """The rail routes (relayed at the GPU on the destination's rail) are a valid schedule:
    the verifier recomputes the stated factor, never below t*, at most the two phases' sum;
    on dgx-a100:2 and dgx-h100:4 they attain t* exactly (require_optimal)."""
    topology = load_topology(spec)
    t = alltoall_bound(topology).time_factor
    rail = hierarchical_alltoall_schedule(topology)
    phases = hierarchical_alltoall(topology)
    assert rail is not None and phases is not None
    verdict = verify_schedule(topology, rail, optimum=t, require_optimal=rail_factor == t)
    assert verdict.valid, verdict.reason
    assert verdict.time_factor == rail.time_factor == rail_factor
    assert t <= rail_factor <= phases.time_factor
    boxes: dict[str | None, list[str]] = {}
    for node in topology.compute_nodes:
        boxes.setdefault(topology.node[node].group, []).append(node)
    position = {n: (g, box.index(n)) for g, box in boxes.items() for n in box}
    for route in rail.routes:  # across boxes: through the source box's GPU on the rail
        (box_a, _), (box_b, j) = position[route.src], position[route.dst]
        (path,) = route.paths
        if box_a != box_b and position[route.src][1] != j:
            assert boxes[box_a][j] in path.path[1:-1]
    assert hierarchical_alltoall_schedule(load_topology("ring:4")) is None
    direct = direct_alltoall_schedule(topology)
    assert verify_schedule(topology, direct).time_factor == direct_alltoall(topology).time_factor
