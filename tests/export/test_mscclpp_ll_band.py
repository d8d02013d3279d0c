"""The MSCCL++ allreduce export takes its LL band from sizes its plans accept (issue #38).

On 3 GPUs every size must be a multiple of 1536 B (3 chunks of 512 B), and the LL band
was chosen among powers of four from 1 KiB: ``[0, 1024]`` held no size the plan takes,
and the export refused its own plan ("no message size fits the band [0, 1024]").
"""

from __future__ import annotations

import json
from fractions import Fraction

from optcoll.cli import main
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.io import save_topology
from optcoll.verify.mscclpp import verify_plan_file


def one_way_ring_with_a_switch() -> Topology:
    """One-way links of 7, 5 and 3 GB/s, and a switch at 1/3 GB/s in and 2/7 GB/s out."""
    builder = TopologyBuilder("one-way-3")
    for v in ("g0", "g1", "g2"):
        builder.compute(v)
    builder.switch("w")
    for u, v, bandwidth in (("g0", "g1", 7), ("g1", "g2", 5), ("g2", "g0", 3)):
        builder.link(u, v, bandwidth)
    for v in ("g0", "g1", "g2"):
        builder.link(v, "w", Fraction(1, 3))
        builder.link("w", v, Fraction(2, 7))
    return builder.build()


def test_the_allreduce_plans_are_written_and_checked(tmp_path, capsys):
    topology = tmp_path / "one-way-3.json"
    save_topology(one_way_ring_with_a_switch(), topology)
    out = tmp_path / "plan.json"
    code = main(
        ["export", str(topology), "--format", "mscclpp", "--collective", "allreduce"]
        + ["-o", str(out), "--json"]
    )
    assert code == 0, capsys.readouterr().err
    files = json.loads(capsys.readouterr().out)["files"]
    protocols = {entry["protocol"]: entry for entry in files}
    assert set(protocols) == {"Simple", "LL"}
    packets, simple = protocols["LL"], protocols["Simple"]
    step = packets["size_granule_bytes"]
    assert step == 1536
    assert packets["min_message_size"] == 0 and packets["max_message_size"] >= step
    assert packets["max_message_size"] % step == 0
    assert simple["min_message_size"] == packets["max_message_size"] + 1
    for entry in files:
        assert verify_plan_file(entry["path"]).ok
