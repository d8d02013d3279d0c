"""Schedule files: every malformed field is refused with a message that names it."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from optcoll.core.schedule import Route, RoutePath, Schedule, Tree, TreeEdge
from optcoll.exceptions import ScheduleError

TREES = (
    Tree("a", 1, (TreeEdge("a", "b", ("a", "s", "b")),)),
    Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),)),
)
ALLGATHER = Schedule("allgather", "pair", ("a", "b"), 1, TREES, cut_ratio=Fraction(1, 10))
ALLTOALL = Schedule(
    "alltoall",
    "pair",
    ("a", "b"),
    2,
    (),
    routes=(
        Route("a", "b", (RoutePath(2, ("a", "b")),)),
        Route("b", "a", (RoutePath(2, ("b", "a")),)),
    ),
)


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with the entry at ``path`` replaced (or deleted for ...)."""
    data = copy.deepcopy(data)
    target = data
    for step in path[:-1]:
        target = target[step]
    if value is ...:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


def test_round_trip():
    assert Schedule.from_dict(ALLGATHER.to_dict()) == ALLGATHER
    assert Schedule.from_dict(ALLTOALL.to_dict()) == ALLTOALL
    assert ALLGATHER.to_dict()["cut_ratio"] == "1/10"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("format",), "other", r"field 'format' must be 'optcoll-schedule', got 'other'"),
        (("version",), 99, r"schedule version 99 is not supported"),
        (("colour",), "red", r"schedule has unknown field 'colour'"),
        (("k",), ..., r"missing the required field 'k'"),
        (("k",), 0, r"field 'k' must be a positive integer, got 0"),
        (("k",), True, r"field 'k' must be a positive integer, got True"),
        (("collective",), "gather", r"unknown collective 'gather'"),
        (("compute_nodes",), "a b", r"'compute_nodes' must be a list of node id strings"),
        (("topology_hash",), 7, r"field 'topology_hash' must be a string, got 7"),
        (("trees",), ..., r"allgather schedule is missing the required field 'trees'"),
        (("trees",), {}, r"field 'trees' must be a list"),
        (("routes",), [], r"allgather schedule has 'trees', not 'routes'"),
        (("cut_ratio",), "a/b", r"field 'cut_ratio' must be an exact ratio such as '3/65'"),
        (("trees", 1), "tree", r"trees\[1\] must be a mapping"),
        (("trees", 0, "chunks"), 0, r"trees\[0\].*'chunks' must be a positive integer, got 0"),
        (("trees", 0, "edges"), ..., r"trees\[0\].* is missing the required field 'edges'"),
        (("trees", 0, "edges"), "a-b", r"trees\[0\].*'edges' must be a list"),
        (("trees", 0, "weight"), 1, r"trees\[0\].* has unknown field 'weight'"),
        (("trees", 0, "edges", 0), [], r"edges\[0\] must be a mapping"),
        (("trees", 0, "edges", 0, "dst"), 3, r"edges\[0\]: 'dst' must be a node id string"),
        (("trees", 0, "edges", 0, "path"), "a s b", r"edges\[0\]: 'path' must be a list"),
    ],
)
def test_tree_schedule_errors_name_the_field(path, value, message):
    with pytest.raises(ScheduleError, match=message):
        Schedule.from_dict(_set(ALLGATHER.to_dict(), path, value))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("routes",), ..., r"alltoall schedule is missing the required field 'routes'"),
        (("trees",), [], r"alltoall schedule has 'routes', not 'trees'"),
        (("routes", 0), 5, r"routes\[0\] must be a mapping"),
        (("routes", 0, "src"), None, r"routes\[0\]: 'src' must be a node id string"),
        (("routes", 0, "paths"), {}, r"routes\[0\]: 'paths' must be a list"),
        (("routes", 0, "paths", 0), 2, r"paths\[0\] must be a mapping"),
        (("routes", 0, "paths", 0, "chunks"), -1, r"'chunks' must be a positive integer, got -1"),
        (("routes", 0, "paths", 0, "path"), None, r"paths\[0\]: 'path' must be a list"),
    ],
)
def test_route_schedule_errors_name_the_field(path, value, message):
    with pytest.raises(ScheduleError, match=message):
        Schedule.from_dict(_set(ALLTOALL.to_dict(), path, value))


def test_not_a_mapping():
    with pytest.raises(ScheduleError, match="a schedule must be a mapping, got list"):
        Schedule.from_dict([])
