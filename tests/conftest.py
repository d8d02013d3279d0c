"""Test-suite settings shared by every test module."""

from __future__ import annotations

import tempfile

from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps no example database and caches nothing in the work tree: test state
# stays out of the repository.
set_hypothesis_home_dir(tempfile.mkdtemp(prefix="optcoll-hypothesis-"))
settings.register_profile("optcoll", database=None)
settings.load_profile("optcoll")
