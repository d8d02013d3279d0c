"""Only `optcoll bound` and `optcoll trees` take built topologies beyond the file limits
(their costs follow the orbits); the other commands refuse them at once instead of running
for hours."""

import subprocess
import sys

import pytest

from optcoll.core import limits
from optcoll.exceptions import ArgumentError


def test_commands_other_than_bound_refuse_a_100k_gpu_spec_at_once():
    done = subprocess.run(
        [sys.executable, "-m", "optcoll", "solve", "dgx-h100:12500"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "optcoll bound, optcoll trees and the Python API take up to 250000 nodes" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_large_built_switch():
    limits.check_size("big", 100_000, 300_000, built=True)  # the Python API's default
    token = limits.LARGE_BUILT.set(False)
    try:
        with pytest.raises(ArgumentError, match="every topology of this command"):
            limits.check_size("big", 100_000, 300_000, built=True)
    finally:
        limits.LARGE_BUILT.reset(token)
    with pytest.raises(ArgumentError, match="every topology file"):
        limits.check_size("big", 100_000, 300_000)
