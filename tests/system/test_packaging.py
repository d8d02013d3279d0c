"""The package installs and checks right: types, and the oldest allowed dependencies.

``python -m mypy optcoll formulations`` (configured in ``pyproject.toml``) must report
nothing. ``.ci/oldest-constraints.txt`` pins every dependency to its lower bound in
``pyproject.toml``; a fresh virtualenv built with it runs the same suite (see the
docs/development.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / ".ci" / "oldest-constraints.txt"


def _lower_bounds() -> dict[str, Version]:
    """Every dependency in pyproject.toml (dev extras included) and its ``>=`` bound."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"] + [
        text for extra in project["optional-dependencies"].values() for text in extra
    ]
    bounds: dict[str, Version] = {}
    for text in declared:
        requirement = Requirement(text)
        lower = [s.version for s in requirement.specifier if s.operator == ">="]
        assert len(lower) == 1, f"dependency {text!r} needs exactly one lower bound (>=)"
        bounds[canonicalize_name(requirement.name)] = Version(lower[0])
    return bounds


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


@pytest.mark.slow
def test_mypy_reports_no_errors(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), "optcoll", "formulations"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout


def test_oldest_constraints_pin_every_lower_bound():
    bounds, pins = _lower_bounds(), _pins()
    assert "pulp" in bounds and "mypy" in bounds  # the runtime and the dev requirements
    assert pins == bounds


def test_test_files_have_unique_names():
    """pytest imports test files by their base name (the test folders are not packages), so
    two test files of one name stop the whole run at collection."""
    from collections import Counter

    names = Counter(path.name for path in (ROOT / "tests").rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
