"""All-to-allv routes files read back (optcoll.io.demand.read_demand_routes)."""

from __future__ import annotations

import json

import pytest

from optcoll.exceptions import FileFormatError
from optcoll.io.demand import ROUTES_FORMAT, read_demand_routes


def _doc(**changes):
    doc = {
        "format": ROUTES_FORMAT,
        "topology": "star:2",
        "ranks": ["h0", "h1"],
        "method": "direct",
        "routes": [
            {"src": "h0", "dst": "h1", "paths": [{"bytes": 6, "path": ["h0", "hub", "h1"]}]}
        ],
    }
    return doc | changes


def test_reads_routes(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_doc()))
    found = read_demand_routes(path)
    assert (found.topology, found.ranks, found.method) == ("star:2", ("h0", "h1"), "direct")
    assert found.routes[0].paths[0].chunks == 6


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "x"}, "not an all-to-allv routes file"),
        ({"ranks": "h0"}, "'ranks' must be a list"),
        ({"routes": {}}, "'routes' must be a list"),
        ({"routes": [{"src": 1, "dst": "h1", "paths": []}]}, "route 0: 'src' and 'dst'"),
        (
            {"routes": [{"src": "h0", "dst": "h1", "paths": [{"bytes": 1.5, "path": ["h0"]}]}]},
            "route 0, path 0: 'bytes' must be a positive integer",
        ),
        (
            {"routes": [{"src": "h0", "dst": "h1", "paths": [{"bytes": 2, "path": "h0"}]}]},
            "'path' must be a list of node names",
        ),
    ],
)
def test_bad_files_are_refused_naming_the_field(tmp_path, changes, message):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_doc(**changes)))
    with pytest.raises(FileFormatError, match=message):
        read_demand_routes(path)
