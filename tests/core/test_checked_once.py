"""Public functions check their arguments once and call private cores: one ``optcoll.solve``
runs each argument check at most as often as it has arguments of that kind."""

from __future__ import annotations

import sys
from collections import Counter

import pytest

import optcoll
import optcoll.core.arguments as arguments


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count every call of an ``*_argument`` check, wherever it was imported to."""
    counted: Counter[str] = Counter()
    checkers = {
        name: getattr(arguments, name) for name in dir(arguments) if name.endswith("_argument")
    }

    def counting(name: str):  # type: ignore[no-untyped-def]
        check = checkers[name]

        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            counted[name] += 1
            return check(*args, **kwargs)

        return wrapper

    wrappers = {name: counting(name) for name in checkers}
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("optcoll"):
            for name, wrapper in wrappers.items():
                if getattr(module, name, None) is checkers[name]:
                    monkeypatch.setattr(module, name, wrapper)
    return counted


@pytest.mark.parametrize("collective", ["allgather", "allreduce", "reduce-scatter", "broadcast"])
def test_solve_checks_each_argument_once(checks: Counter[str], collective: str) -> None:
    topology = optcoll.load_topology("dgx-a100:2")
    checks.clear()
    solution = optcoll.solve(topology, collective, k=None if collective == "broadcast" else 2)
    assert solution.verification.valid
    assert checks["topology_argument"] <= 1
    assert checks["collective_argument"] == 1
    assert checks["schedule_argument"] == 0  # the schedule is built, never re-checked
    assert checks["count_argument"] <= 1


def test_a_public_function_still_refuses_bad_arguments() -> None:
    from optcoll.exceptions import ArgumentError
    from optcoll.schedules.packing import pack_arborescences

    with pytest.raises(ArgumentError, match="topology"):
        pack_arborescences("dgx-a100:2")  # type: ignore[arg-type]
