"""The shallow-tree MILP on a line: the hop limit decides whether the far end hangs
from the middle node or from the root."""

from __future__ import annotations

from fractions import Fraction

import pytest

from formulations.errors import MethodError
from formulations.shallow_trees import solve_shallow_trees

LINE = {("a", "b"): 1, ("b", "c"): 1}
PATHS = {
    ("a", "b"): [("a", "b")],
    ("b", "a"): [("b", "a")],
    ("b", "c"): [("b", "c")],
    ("c", "b"): [("c", "b")],
    ("a", "c"): [("a", "b", "c")],
    ("c", "a"): [("c", "b", "a")],
}
IDENTITY = {v: v for v in "abc"}


@pytest.mark.parametrize(
    ("hop_limit", "tree", "load"),
    [
        (2, (("a", "b", ("a", "b")), ("b", "c", ("b", "c"))), Fraction(1)),  # a chain
        (1, (("a", "b", ("a", "b")), ("a", "c", ("a", "b", "c"))), Fraction(2)),  # a star
    ],
)
def test_hop_limit_decides_the_shape(hop_limit, tree, load):
    solved = solve_shallow_trees("abc", LINE, ["a"], [IDENTITY], PATHS, hop_limit)
    assert solved.trees == (tree,) and solved.load == load


def test_images_add_up_on_the_links():
    """The reflection a <-> c maps the tree rooted at b onto itself: each link twice."""
    mirror = {"a": "c", "b": "b", "c": "a"}
    solved = solve_shallow_trees("abc", LINE, ["b"], [IDENTITY, mirror], PATHS, 2)
    assert solved.load == 2


def test_no_root_is_refused():
    with pytest.raises(MethodError, match="at least one root"):
        solve_shallow_trees("abc", LINE, [], [IDENTITY], PATHS, 2)
