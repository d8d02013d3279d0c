"""Files written for RCCL launch there: ROCm/rccl's ``mscclSetupKernel``
(``src/misc/msccl/msccl_setup.cc`` 430-437) refuses any algorithm using ``rcs``, ``rrs``,
``rrc`` or ``rrcs``, so a reducing receive is written as a receive into scratch and a ``re``
(the runtime table's ``launch_step_types``). Every reducing file for ``--runtime rccl`` is
judged by the independent checker under RCCL's rules, on the topology, both placements."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from optcoll.core.msccl_runtimes import RUNTIMES
from optcoll.export.msccl import msccl_program
from optcoll.export.msccl_steps import msccl_step_program
from optcoll.schedules.baselines.logstep import (
    rabenseifner_allreduce,
    recursive_halving_reduce_scatter,
)
from optcoll.schedules.deploy import deployable_schedule
from optcoll.topologies import build
from optcoll.verify.msccl import verify_text

REDUCING = ("reduce_scatter", "allreduce", "reduce")


def _types(text: str) -> Counter:
    return Counter(re.findall(r'type="([a-z]+)"', text))


def _launches_on_rccl(text: str, topology) -> Counter:
    """The file's step types, after the checker found it correct for rccl (and for
    msccl-executor, whose kernel runs the same steps) on ``topology``."""
    types = _types(text)
    assert set(types) <= set(RUNTIMES["rccl"].launch_step_types), types
    for runtime in ("rccl", "msccl-executor"):
        report = verify_text(text, runtime=runtime, topology=topology)
        assert report.ok and report.judged, (runtime, report.findings[:3])
    return types


@pytest.mark.parametrize("spec", ["torus:4x4", "ring:8", "dgx-h100:2", "star:8"])
@pytest.mark.parametrize("collective", REDUCING)
def test_reducing_tree_files_for_rccl_receive_into_scratch_and_add_with_re(spec, collective):
    topology = build(spec)
    schedule = deployable_schedule(topology, collective).schedule
    rccl = msccl_program(schedule, runtime="rccl")
    types = _launches_on_rccl(rccl.text, topology)
    # every reducing receive is an r and a re: the tree edges into non-leaves each reduce
    executor = _types(msccl_program(schedule, runtime="msccl-executor").text)
    assert "rrc" in executor and types["re"] == executor["rrc"] + executor.get("rrcs", 0)
    assert 's_chunks="0"' not in rccl.text


@pytest.mark.parametrize(
    ("make", "collective"),
    [(rabenseifner_allreduce, "allreduce"), (recursive_halving_reduce_scatter, "reduce_scatter")],
)
def test_reducing_step_files_for_rccl_receive_then_add_with_re(make, collective):
    topology = build("star:8")
    schedule = make(topology.compute_nodes)
    assert schedule.collective == collective
    types = _launches_on_rccl(msccl_step_program(schedule, runtime="rccl").text, topology)
    executor = _types(msccl_step_program(schedule, runtime="msccl-executor").text)
    assert types["re"] == executor["rrc"] + executor.get("rrcs", 0) > 0
