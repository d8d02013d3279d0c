"""Demand files: JSON, CSV, .npy and split sizes (optcoll.io.demand)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from optcoll.exceptions import FileFormatError
from optcoll.io.demand import read_demand

RANKS = ("a", "b", "c")
ROWS = [[0, 5, 1], [2, 0, 0], [7, 3, 4]]


def test_the_three_formats_read_the_same_matrix(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps({"bytes": ROWS}))
    (tmp_path / "d.csv").write_text("\n".join(",".join(map(str, r)) for r in ROWS) + "\n")
    np.save(tmp_path / "d.npy", np.array(ROWS, dtype=np.int64))
    found = [read_demand(tmp_path / f"d.{ext}", RANKS).bytes for ext in ("json", "csv", "npy")]
    assert found == [tuple(map(tuple, ROWS))] * 3


def test_split_sizes_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"input_split_sizes": ROWS, "element_bytes": 4}))
    assert read_demand(path, RANKS).bytes[2] == (28, 12, 16)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("d.json", json.dumps({"bytes": [[0, 1, 2], [1, 0, 1]]}), "2 rows"),
        ("d.json", json.dumps({"bytes": ROWS, "extra": 1}), "unknown field(s) ['extra']"),
        ("d.json", json.dumps([[0, 1]]), 'expected an object {"bytes"'),
        ("d.json", json.dumps({"input_split_sizes": ROWS}), "needs 'element_bytes'"),
        ("d.json", json.dumps({"matrix": ROWS}), "no field 'bytes'"),
        ("d.json", "{", "invalid JSON"),
        ("d.csv", "0,1,2\n3,0,x\n1,1,0\n", "line 2, column 2: expected a non-negative integer"),
        (
            "d.csv",
            "0,1,2\n3,0,-1\n1,1,0\n",
            "row 1 (rank b), column 2 (rank c): bytes must be non-negative",
        ),
        ("d.csv", "0,1,2\n3,0\n1,1,0\n", "row 1 (rank b) has 2 entries"),
        ("d.txt", "0", "unknown demand file suffix '.txt'"),
    ],
)
def test_bad_files_name_the_file_and_the_fault(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FileFormatError) as info:
        read_demand(path, RANKS)
    assert str(path) in str(info.value) and message in str(info.value)


def test_bad_npy(tmp_path):
    np.save(tmp_path / "v.npy", np.arange(3))
    with pytest.raises(FileFormatError, match="expected a 2-D array"):
        read_demand(tmp_path / "v.npy", RANKS)
    np.save(tmp_path / "f.npy", np.array(ROWS) + 0.5)
    with pytest.raises(FileFormatError, match="column 0 \\(rank a\\): expected a non-negative"):
        read_demand(tmp_path / "f.npy", RANKS)
    np.save(tmp_path / "o.npy", np.array([[{}]], dtype=object), allow_pickle=True)
    with pytest.raises(FileFormatError, match="without pickles"):
        read_demand(tmp_path / "o.npy", RANKS)
    with pytest.raises(FileFormatError):
        read_demand(tmp_path / "missing.npy", RANKS)
