"""The repository stands alone: no tracked file reads a path outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Ways code reaches beside the repository: a relative ``..`` path into a sibling folder,
#: or climbing above the repository root from ``__file__`` / the working directory.
OUTSIDE = re.compile(
    r"""\.\./(shared|reference)"""
    r"""|["']shared["']\s*/\s*["']reference["']"""
    r"""|parents\[[2-9]\]\s*/\s*["']"""
    r"""|root\.parent\s*/"""
)


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / line for line in out.splitlines() if line]


def test_no_tracked_file_reads_outside_the_repository():
    offenders = []
    for path in _tracked_files():
        if (
            path.suffix not in {".py", ".ipynb", ".toml", ".cfg", ".yaml", ".yml", ""}
            or not path.is_file()
        ):
            continue
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "reads outside the repository:\n" + "\n".join(offenders)


def test_the_pattern_catches_the_old_reference_path():
    bad = 'REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "x.json"'
    assert OUTSIDE.search(bad)
    assert OUTSIDE.search("see ../shared/reference/reference.json")
    assert not OUTSIDE.search('REFERENCE = Path(__file__).resolve().parent / "reference.json"')
