"""The automorphism search refines only the branches it explores.

Refinement is the search's unit of cost. Before the search refined a branch only when it
popped it, it refined every candidate of a cell eagerly: dgx-h100:32 cost 3,935
refinements (dgx-h100:256 trees then ran past 600 CPU seconds); lazily it costs 338.
Counting refinements is exact and independent of the machine's speed, so this test
catches the regression where a timed test could not.
"""

import pytest

from optcoll.graph import symmetry
from optcoll.io import load_topology
from optcoll.schedules.packing import pack_arborescences


@pytest.mark.parametrize(
    ("spec", "most"), [("dgx-h100:8", 150), ("dgx-h100:32", 400), ("torus:8x8", 19)]
)
def test_refinements_stay_few(monkeypatch, spec, most):
    calls = []
    refine = symmetry._Refiner.refine

    def counted(self, colour):
        calls.append(1)
        return refine(self, colour)

    monkeypatch.setattr(symmetry._Refiner, "refine", counted)
    schedule = pack_arborescences(load_topology(spec))
    assert 0 < len(calls) <= most
    assert schedule.time_factor == schedule.cut_ratio


def test_segment_sums_wrap_like_add_at():
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    ends = rng.integers(0, 9, size=200)
    values = rng.integers(0, 2**64, size=200, dtype=np.uint64)
    expected = np.zeros(12, dtype=np.uint64)
    np.add.at(expected, ends, values)
    assert (symmetry._Segments(ends, 12).sums(values) == expected).all()
