"""``optcoll check-xml`` on what ``optcoll export`` writes: every built-in family at a small
size, every collective (all-to-all included), the default channels (as many as fit) and one.

Every file an export writes (in place and out of place where they differ) must run correctly
(no deadlock at depths 1, 2 and 8, every output chunk right, no race, no unmatched transfer)
and be accepted by the parser of the runtime it was written for (attributes, spellings,
limits).
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from optcoll.cli import main
from optcoll.verify.msccl import verify_file

FAMILIES = (
    "ring:4",
    "line:3",
    "fully-connected:4",
    "star:4",
    "hypercube:3",
    "torus:3x3",
    "mesh:2x3",
    "leaf-spine:leaves=2,hosts=2,spines=1",
    "random:n=5,seed=1",
    "dgx-a100:1",
    "dgx-h100:1",
    "dgx-v100:1",
    "dgx-2:1",
    "mi250:1",
)
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "alltoall")

CASES = [(f, c, ch) for f in FAMILIES for c in COLLECTIVES for ch in (None, 1)]


@pytest.mark.parametrize("family,collective,channels", CASES)
def test_every_export_passes_check_xml(tmp_path, family, collective, channels):
    program = tmp_path / "program.xml"
    args = ["export", family, "--collective", collective, "--placement", "both", "-o", str(program)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if channels is not None:
            args += ["--channels", str(channels)]
        status = main([*args, "--runtime", "rccl", "--json"])
    assert status == 0, err.getvalue()
    files = json.loads(out.getvalue())["files"]
    placements = set()
    for written in files:
        report = verify_file(written["path"], runtime="rccl")
        assert report.ok, report.findings
        assert report.executed and report.depths == (1, 2, 8)
        assert report.pair_load and all(load > 0 for load in report.pair_load.values())
        placements.update(report.placements)
    # --placement both serves both placements, in FILE or in FILE and STEM.inplace.xml
    assert placements == {"in place", "out of place"}
    assert files[0]["path"] == str(program)
    assert [f["path"] for f in files[1:]] in ([], [str(tmp_path / "program.inplace.xml")])
