"""``verify`` judges every claim an aggregation (in-network allreduce) schedule file states.

A file's ``lower_bound``, ``algbw`` and ``stats`` (``gap_to_cut_bound``, ``proved``,
``optimal_among``) are claims: the checker recomputes the cut bound and the optimum among
aggregation-tree schedules exactly and refuses a false or ill-typed one (issue #38).
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from optcoll.cli import main
from optcoll.core.aggregation import AggregationSchedule
from optcoll.topologies import build
from optcoll.verify.aggregation import verify_aggregation_schedule

STAR = "star:4,sharp=1"


def _slow_file() -> dict:
    """A valid star:4,sharp=1 allreduce 3x slower than the cut bound 1/100: the in-tree
    relays h1..h3 through the hub to h0 (link hub -> h0 carries 3 chunks), the hub
    multicasts the sum back."""

    def edge(src: str, dst: str, *via: str) -> dict:
        return {"src": src, "dst": dst, "path": [src, *via, dst]}

    others = ("h1", "h2", "h3")
    return {
        "format": "optcoll-schedule",
        "version": 1,
        "collective": "allreduce",
        "topology": STAR,
        "compute_nodes": ["h0", *others],
        "k": 1,
        "lower_bound": "3/100",
        "time_factor": "3/100",
        "algbw": 33.333,
        "stats": {
            "optimal_among": "aggregation-tree schedules",
            "proved": True,
            "gap_to_cut_bound": "1",
            "columns": 1,
        },
        "aggregation": [
            {
                "apex": "h0",
                "chunks": 1,
                "reduce": [edge(h, "h0", "hub") for h in others],
                "multicast": [edge("h0", "hub"), *(edge("hub", h) for h in others)],
            }
        ],
    }


def _honest_file() -> dict:
    """The slow schedule with true claims: the cut bound, gap 3, not proved optimal."""
    document = _slow_file()
    document["lower_bound"] = "1/100"
    document["stats"].update(proved=False, gap_to_cut_bound="3")
    return document


def _verify(tmp_path, document: dict, capsys, topology: str = STAR) -> tuple[int, dict]:
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(document))
    code = main(["verify", topology, str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_slow_schedule_is_valid_without_false_claims(tmp_path, capsys):
    code, report = _verify(tmp_path, _honest_file(), capsys)
    assert code == 0, report["reason"]
    assert report["time_factor"] == "3/100" and report["cut_bound"] == "1/100"
    assert report["unchecked"] == ["stats.columns"]


def test_false_lower_bound_gap_and_proved_are_refused(tmp_path, capsys):
    code, report = _verify(tmp_path, _slow_file(), capsys)
    assert code == 1 and not report["valid"]
    reason = report["reason"]
    assert "field 'lower_bound' states 3/100, but the exact cut bound" in reason
    assert "is 1/100" in reason
    assert "field 'stats.gap_to_cut_bound' states 1, but the time factor 3/100 is 3 times" in reason
    assert (
        "field 'stats.proved' states true, but the time factor 3/100 is not the optimum 1/100"
        in reason
    )


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("proved", "banana", "field 'stats.proved' must be true or false, got 'banana'"),
        ("proved", 1, "field 'stats.proved' must be true or false, got 1"),
        ("gap_to_cut_bound", [1], "field 'stats.gap_to_cut_bound' must be an exact ratio"),
        ("gap_to_cut_bound", "x/0", "field 'stats.gap_to_cut_bound' must be an exact ratio"),
        ("optimal_among", "all schedules", "field 'stats.optimal_among' states 'all schedules'"),
    ],
)
def test_ill_typed_claims_are_refused(tmp_path, capsys, field, value, words):
    document = _honest_file()
    document["stats"][field] = value
    code, report = _verify(tmp_path, document, capsys)
    assert code == 1 and words in report["reason"]


def test_a_false_algbw_is_refused(tmp_path, capsys):
    document = _honest_file()
    document["algbw"] = 100.0
    code, report = _verify(tmp_path, document, capsys)
    assert code == 1
    assert report["reason"] == (
        "field 'algbw' states 100.0, but the time factor 3/100 gives 33.333 (bandwidth units)"
    )


def test_the_solved_file_verifies_with_every_claim_checked(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["solve", STAR, "--collective", "allreduce", "-o", str(out)]) == 0
    capsys.readouterr()
    (path,) = out.glob("*.schedule.json")
    assert main(["verify", STAR, str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] and report["time_factor"] == "1/100" and report["at_cut_bound"]
    assert "stats.proved" not in report["unchecked"]
    assert "stats.gap_to_cut_bound" not in report["unchecked"]


def test_a_claim_of_optimality_nobody_can_check_is_refused(tmp_path, capsys):
    """On a star whose hub only relays there is no aggregation LP to compute the optimum
    with: a stated ``proved: true`` is refused, not trusted."""
    document = _honest_file()
    document["topology"] = "star:4"
    document["stats"]["proved"] = True
    document["aggregation"][0]["multicast"] = [
        {"src": "h0", "dst": h, "path": ["h0", "hub", h]} for h in ("h1", "h2", "h3")
    ]
    code, report = _verify(tmp_path, document, capsys, "star:4")
    assert code == 1 and report["time_factor"] == "3/100"
    assert report["reason"].startswith("field 'stats.proved' states true, but the optimum among")


def test_the_api_lists_the_claims_it_was_given_no_bound_for():
    topology = build(STAR)
    schedule = AggregationSchedule.from_dict(_slow_file())
    verdict = verify_aggregation_schedule(topology, schedule)
    assert verdict.valid and set(verdict.unchecked) == {"proved", "gap_to_cut_bound", "columns"}
    verdict = verify_aggregation_schedule(
        topology, schedule, optimum=Fraction(1, 100), cut_bound=Fraction(1, 100)
    )
    assert not verdict.valid and verdict.unchecked == ("columns",)
