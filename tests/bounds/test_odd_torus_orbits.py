"""The all-to-all LP of an odd 3D torus is solved on one orbit of sources (issue #38).

The automorphism search stopped at two reflections of torus:5x5x5 (33 source orbits,
an orbit LP of 24,553 variables, 43 CPU s); it now finds the 125 translations.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from optcoll import load_topology
from optcoll.bounds.alltoall_orbits import alltoall_symmetry
from optcoll.schedules.alltoall import alltoall_bound


@pytest.mark.parametrize(("spec", "order"), [("torus:3x3x3", 27), ("torus:5x5x5", 125)])
def test_the_translations_are_found(spec, order):
    symmetry = alltoall_symmetry(load_topology(spec))
    assert symmetry is not None
    assert symmetry.group.order == order and list(symmetry.sources.values()) == [order]


def test_torus_5x5x5_bound_with_its_slab_cut():
    bound = alltoall_bound(load_topology("torus:5x5x5"))
    assert bound.time_factor == Fraction(3, 4)
    assert bound.stats["source_orbits"] == 1 and bound.stats["lp_variables"] == 745
    assert bound.cut_bound == Fraction(3, 4)  # the slab of two planes, found again
