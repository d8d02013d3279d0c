"""Compact verification agrees with the full walk on every compact file (issue #38).

When the rotations do not act freely on the representatives' roots (two representatives
in one orbit), the representatives' chunk sums say nothing about the trees': ``verify``
must then walk every tree, as ``verify --full`` does, not judge the representatives.
"""

from __future__ import annotations

import itertools
import json

import pytest

from optcoll.cli import main
from optcoll.core.schedule import Schedule
from optcoll.schedules.solution import solve
from optcoll.topologies import build
from optcoll.verify.schedule import verify_schedule

RING = build("ring:4")
SHIFT = {"n0": "n1", "n1": "n2", "n2": "n3", "n3": "n0"}


@pytest.fixture(scope="module")
def ring_file() -> dict:
    """The solved ring:4 allgather as written: two trees rooted at n0, rotation of order 4."""
    data = solve(RING).schedule.to_dict()
    assert data["rotation"]["order"] == 4 and [t["root"] for t in data["trees"]] == ["n0", "n0"]
    return data


def _moved(tree: dict, steps: int) -> dict:
    """``tree`` under the ring's rotation to the power ``steps``."""

    def image(v: str) -> str:
        for _ in range(steps):
            v = SHIFT[v]
        return v

    return {
        "root": image(tree["root"]),
        "chunks": tree["chunks"],
        "edges": [
            {"src": image(e["src"]), "dst": image(e["dst"]), "path": [image(x) for x in e["path"]]}
            for e in tree["edges"]
        ],
    }


def test_a_representative_rooted_at_an_image_of_another(ring_file, tmp_path, capsys):
    data = json.loads(json.dumps(ring_file))
    data["trees"][1] = _moved(data["trees"][1], 2)  # rooted at n2, the image of n0
    path = tmp_path / "image.json"
    path.write_text(json.dumps(data))
    assert main(["verify", "ring:4", str(path), "--json"]) == 0
    auto = json.loads(capsys.readouterr().out)
    assert main(["verify", "ring:4", str(path), "--json", "--full"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert auto["valid"] and auto["method"] == "full" and auto["time_factor"] == "3/200"
    assert full["valid"] and full["time_factor"] == auto["time_factor"]


@pytest.mark.parametrize("order", [4, 2])
def test_auto_agrees_with_the_full_walk(ring_file, order):
    """Every placement of the two representatives (roots n0..n3), chunks 1 or 2 each, k 1
    to 3, under the rotation of order 4 or its square: the same verdict and time factor."""
    rotation = (
        ring_file["rotation"]
        if order == 4
        else {"order": 2, "images": {"n0": "n2", "n2": "n0", "n1": "n3", "n3": "n1"}}
    )
    verdicts = set()
    cases = itertools.product(range(4), range(4), (1, 2), (1, 2), (1, 2, 3))
    for first, second, chunks_first, chunks, k in cases:
        data = json.loads(json.dumps(ring_file))
        data.pop("stats")
        data.pop("time_factor")
        data.pop("algbw")
        data.update(k=k, rotation=rotation)
        data["trees"] = [
            {**_moved(ring_file["trees"][0], first), "chunks": chunks_first},
            {**_moved(ring_file["trees"][1], second), "chunks": chunks},
        ]
        schedule = Schedule.from_dict(data)
        auto = verify_schedule(RING, schedule)
        full = verify_schedule(RING, schedule, method="full")
        assert (auto.valid, auto.time_factor) == (full.valid, full.time_factor), (
            first,
            second,
            chunks_first,
            chunks,
            k,
            auto.reason,
            full.reason,
        )
        verdicts.add(auto.valid)
    assert verdicts == {True, False}  # both kinds of file were met
