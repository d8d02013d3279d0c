"""Test-suite settings shared by every test module."""

from __future__ import annotations

from hypothesis import settings

# Hypothesis keeps no example database: test state stays out of the work tree.
settings.register_profile("optcoll", database=None)
settings.load_profile("optcoll")
