"""optcoll bound --sizes reports the depth bound, and the lower bound is the largest of the four."""

from __future__ import annotations

import json

from optcoll.cli import main


def test_bound_sizes_reports_the_depth_bound(capsys):
    """torus 4x4 allreduce, o = 1, links 1/2, 64 KiB: the depth bound (3.5 µs) exceeds the
    latency, bandwidth and start-up bounds and is plan's lower bound; a star whose switch
    reduces has none."""
    argv = ["bound", "torus:4x4", "--collective", "allreduce", "--sizes", "64K", "1G",
            "--overhead", "1", "--latency", "0.5", "--json"]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    small, large = data["sizes"]
    others = max(small["latency_bound_us"], small["bandwidth_bound_us"], small["startup_bound_us"])
    assert small["depth_bound_us"] == 3.5 > others
    assert small["lower_bound_us"] == 3.5
    assert large["lower_bound_us"] == max(
        large["latency_bound_us"], large["bandwidth_bound_us"], large["startup_bound_us"]
    )
    assert (
        "depth bound (every link): holds for every allreduce in which only compute nodes"
        in (data["bound_holds_for"])
    )
    argv = ["bound", "star:4,sharp=1", "--collective", "allreduce", "--sizes", "64K", "--json"]
    assert main(argv) == 0
    (row,) = json.loads(capsys.readouterr().out)["sizes"]
    assert row["depth_bound_us"] is None
