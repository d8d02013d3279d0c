"""The public Python API checks its arguments: a misuse raises an :class:`ArgumentError`
(an :class:`OptCollError`, also a ``TypeError``/``ValueError``) naming the argument, never a
raw error from deep inside.

Each public function is called once per (argument, bad value) with every other argument
valid; the table below is the whole contract.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import optcoll
from optcoll import export, io, plot
from optcoll.bounds import cut_ratio as bound
from optcoll.core import process_groups
from optcoll.exceptions import ArgumentError, OptCollError
from optcoll.groups import bounds as groups
from optcoll.io import process_groups as process_groups_io
from optcoll.schedules import alltoall, collectives, packing
from optcoll.sim import cost_model as simulate
from optcoll.studies import compare, crosscheck, resilience, sweep
from optcoll.verify import msccl as mscclcheck
from optcoll.verify import schedule as verify

TOPO = optcoll.load_topology("ring:4")
SCHEDULE = optcoll.solve(TOPO, "allgather").schedule
GROUPS = process_groups_io.parse_groups(TOPO, "blocks:2")
SPEC = sweep.parse_sweep_spec({"base": "ring:{n}", "grid": {"n": [3]}, "quantities": ["k"]})

#: Wrong for any argument that wants a topology, schedule, name, count or path.
NOT_A_TOPOLOGY = [None, 3, [], {"nodes": []}, SCHEDULE]
NOT_A_SCHEDULE = [None, 3, {}, "s.json", TOPO]
NOT_A_NAME = [None, 3, ["allgather"], b"allgather"]
NOT_A_COUNT = [0, -1, 1.5, "2", True, Fraction(3, 2)]
NOT_A_PATH = [None, 3, ["a.json"]]


def _cases() -> list[tuple[str, Callable[..., Any], dict[str, Any], str, Any]]:
    table: list[tuple[Callable[..., Any], dict[str, Any], dict[str, list[Any]]]] = [
        (
            optcoll.solve,
            {"topology": TOPO, "collective": "allgather"},
            {
                "topology": [None, 3, [], SCHEDULE],
                "collective": [*NOT_A_NAME, "allgatherr"],
                "k": NOT_A_COUNT,
                "root": [3, "nope"],
            },
        ),
        (optcoll.load_topology, {"source": "ring:4"}, {"source": NOT_A_PATH}),
        (
            optcoll.save_topology,
            {"topology": TOPO, "path": "unused.json"},
            {"topology": NOT_A_TOPOLOGY, "path": NOT_A_PATH},
        ),
        (
            bound.optimal_cut_ratio,
            {"topology": TOPO},
            {"topology": NOT_A_TOPOLOGY, "method": [*NOT_A_NAME, "fast"]},
        ),
        (
            packing.pack_arborescences,
            {"topology": TOPO},
            {"topology": NOT_A_TOPOLOGY, "k": NOT_A_COUNT, "bound": [3, "1/2"]},
        ),
        (
            packing.fixed_k_capacity,
            {"topology": TOPO, "k": 2},
            {"topology": NOT_A_TOPOLOGY, "k": [*NOT_A_COUNT, None]},
        ),
        (
            verify.verify_schedule,
            {"topology": TOPO, "schedule": SCHEDULE},
            {"topology": NOT_A_TOPOLOGY, "schedule": NOT_A_SCHEDULE, "optimum": ["x", -1, [1]]},
        ),
        (
            crosscheck.crosscheck,
            {"topology": TOPO},
            {
                "topology": NOT_A_TOPOLOGY,
                "methods": ["lp", 3, ["nope"]],
                "collective": [*NOT_A_NAME, "gather"],
            },
        ),
        (alltoall.alltoall_bound, {"topology": TOPO}, {"topology": NOT_A_TOPOLOGY}),
        (
            alltoall.alltoall_schedule,
            {"topology": TOPO},
            {"topology": NOT_A_TOPOLOGY, "k": NOT_A_COUNT, "bound": [3]},
        ),
        (
            process_groups_io.parse_groups,
            {"topology": TOPO, "text": "blocks:2"},
            {"topology": NOT_A_TOPOLOGY, "text": [None, 3], "relay": [3, "nobody"]},
        ),
        (
            process_groups.make_groups,
            {"topology": TOPO, "groups": [["n0", "n1"], ["n2", "n3"]]},
            {"topology": NOT_A_TOPOLOGY, "groups": [None, 3, "n0"], "relay": [3, "nobody"]},
        ),
        (groups.groups_bound, {"groups": GROUPS}, {"groups": [None, 3, TOPO]}),
        (
            collectives.build_collective,
            {"topology": TOPO, "collective": "allgather"},
            {
                "topology": NOT_A_TOPOLOGY,
                "collective": [*NOT_A_NAME, "gather"],
                "k": NOT_A_COUNT,
                "root": [3, "nope"],
            },
        ),
        (
            collectives.collective_lower_bound,
            {"topology": TOPO, "collective": "allgather"},
            {"topology": NOT_A_TOPOLOGY, "collective": [*NOT_A_NAME, "gather"]},
        ),
        (
            collectives.broadcast,
            {"topology": TOPO, "root": "n0"},
            {"topology": NOT_A_TOPOLOGY, "root": [None, 3, "nope"]},
        ),
        (
            collectives.reduce,
            {"topology": TOPO, "root": "n0"},
            {"topology": NOT_A_TOPOLOGY, "root": [None, 3, "nope"]},
        ),
        (
            collectives.reduce_scatter,
            {"schedule": SCHEDULE, "topology": TOPO},
            {"schedule": NOT_A_SCHEDULE, "topology": NOT_A_TOPOLOGY},
        ),
        (
            collectives.allreduce,
            {"schedule": SCHEDULE, "topology": TOPO},
            {"schedule": NOT_A_SCHEDULE, "topology": NOT_A_TOPOLOGY},
        ),
        (
            simulate.schedule_cost,
            {"topology": TOPO, "schedule": SCHEDULE},
            {
                "topology": NOT_A_TOPOLOGY,
                "schedule": NOT_A_SCHEDULE,
                "default_latency": [None, "x", -1],
            },
        ),
        (
            compare.compare_methods,
            {"topology": TOPO},
            {
                "topology": NOT_A_TOPOLOGY,
                "collective": [*NOT_A_NAME, "gather"],
                "default_latency": [None, "x", -1],
            },
        ),
        (
            export.export_text,
            {"schedule": SCHEDULE, "fmt": "msccl"},
            {"schedule": NOT_A_SCHEDULE, "fmt": [*NOT_A_NAME, "nccl"]},
        ),
        (
            export.msccl_program,
            {"schedule": SCHEDULE},
            {
                "schedule": NOT_A_SCHEDULE,
                "runtime": [None, 3, "nccl"],
                "channels": NOT_A_COUNT,
                "max_bytes": [-1, 1.5, "1MB"],
                "min_bytes": [-1, 1.5, "0"],
                "proto": [None, 3, "Fast"],
            },
        ),
        (
            export.export_schedule,
            {"schedule": SCHEDULE, "fmt": "msccl", "path": "unused.xml"},
            {"schedule": NOT_A_SCHEDULE, "fmt": [3, "nccl"], "path": NOT_A_PATH},
        ),
        (export.runtime_profile, {"name": "rccl"}, {"name": [None, 3, "nccl"]}),
        (io.load_schedule, {"path": "unused.json"}, {"path": NOT_A_PATH}),
        (
            io.save_schedule,
            {"schedule": SCHEDULE, "path": "unused.json"},
            {"schedule": NOT_A_SCHEDULE, "path": NOT_A_PATH},
        ),
        (
            io.import_topology,
            {"path": "unused.json"},
            {"path": NOT_A_PATH, "format": [3, "nope"]},
        ),
        (mscclcheck.verify_text, {"text": "<algo/>"}, {"text": [None, 3, b"<algo/>"]}),
        (mscclcheck.verify_file, {"path": "unused.xml"}, {"path": NOT_A_PATH}),
        (
            plot.plot_topology,
            {"topology": TOPO},
            {"topology": NOT_A_TOPOLOGY, "layout": [3, {"n0": "x"}]},
        ),
        (
            plot.plot_cut,
            {"topology": TOPO, "side": ["n0"]},
            {"topology": NOT_A_TOPOLOGY, "side": [None, 3, ["nope"], [["n0"]], [1, "n0"]]},
        ),
        (
            plot.plot_link_utilisation,
            {"topology": TOPO, "schedule": SCHEDULE},
            {"topology": NOT_A_TOPOLOGY, "schedule": NOT_A_SCHEDULE},
        ),
        (
            resilience.failure_study,
            {"topology": TOPO, "kind": "links", "workers": 1},
            {
                "topology": NOT_A_TOPOLOGY,
                "kind": [*NOT_A_NAME, "cables"],
                "random_failures": NOT_A_COUNT,
                "trials": NOT_A_COUNT,
                "workers": NOT_A_COUNT,
            },
        ),
        (
            sweep.run_sweep,
            {"spec": SPEC, "workers": 1},
            {
                "spec": [None, 3, {"base": "ring:4"}],
                "output": NOT_A_PATH[1:],
                "workers": NOT_A_COUNT,
            },
        ),
    ]
    cases = []
    for function, valid, bad in table:
        for argument, values in bad.items():
            for value in values:
                label = f"{function.__module__}.{function.__name__}-{argument}={value!r:.30}"
                cases.append((label, function, valid, argument, value))
    return cases


CASES = _cases()

#: Arguments whose errors name the concept rather than the parameter.
_NAMED_AS = {"fmt": "format", "name": "runtime", "methods": "method"}


@pytest.mark.parametrize(
    "function, valid, argument, value", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_misuse_raises_an_argument_error_naming_the_argument(
    tmp_path, monkeypatch, function, valid, argument, value
):
    monkeypatch.chdir(tmp_path)  # "unused.*" paths never exist; nothing is written
    with pytest.raises(OptCollError) as caught:
        function(**{**valid, argument: value})
    named = _NAMED_AS.get(argument, argument)
    assert named in str(caught.value), f"{caught.value!r} does not name {named!r}"
    assert not list(Path(tmp_path).iterdir()), "a misuse wrote a file"


def test_argument_errors_are_also_the_builtin_errors_callers_catch():
    with pytest.raises(TypeError):
        optcoll.solve(3)
    with pytest.raises(ValueError):
        optcoll.solve(TOPO, "gather")
    assert issubclass(ArgumentError, OptCollError)


def test_the_valid_calls_of_the_table_work(tmp_path, monkeypatch):
    """Each row's valid arguments are accepted (so the misuse cases test one argument)."""
    monkeypatch.chdir(tmp_path)
    assert optcoll.solve(TOPO, "allgather").verification.valid
    assert bound.optimal_cut_ratio(TOPO).ratio == Fraction(3, 200)  # 3 GPUs, 2 links of 100
    assert verify.verify_schedule(TOPO, SCHEDULE).valid
    assert export.runtime_profile("rccl").name == "rccl"
    # an iterator is read once: the cut it names is the same as the list's
    assert (
        plot.plot_cut(TOPO, iter(["n0", "n1"])).get_title()
        == plot.plot_cut(TOPO, ["n0", "n1"]).get_title()
    )
