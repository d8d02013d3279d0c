"""The solver front door: explicit status mapping, errors that say what to try, export."""

from __future__ import annotations

from pathlib import Path

import highspy
import pulp
import pytest

from formulations.congestion import build_congestion
from formulations.fixed_k import build_fixed_k
from formulations.multicast import build_multicast
from formulations.solve import _HIGHS_STATUS, Status, solve
from optcoll import load_topology
from optcoll.exceptions import (
    FileFormatError,
    InfeasibleModelError,
    SolverLimitError,
    UnboundedModelError,
)
from optcoll.lp.model_file import write_model


def one_variable(name: str, bound: float | None, rhs: float) -> pulp.LpProblem:
    model = pulp.LpProblem(name, pulp.LpMinimize)
    x = model.add_variable("x", lowBound=bound)
    model.setObjective(pulp.LpAffineExpression([(x, 1.0)]))
    model.addConstraint(
        pulp.LpConstraint(pulp.LpAffineExpression([(x, 1.0)]), pulp.LpConstraintLE, rhs=rhs), "c"
    )
    return model


def test_every_highs_status_is_mapped() -> None:
    assert set(highspy.HighsModelStatus.__members__) <= set(_HIGHS_STATUS)


def test_optimal_result_is_typed() -> None:
    result = solve(build_congestion(load_topology("dgx-a100:1")), build_seconds=0.5)
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(7.0)
    assert result.values["t"] == pytest.approx(7.0)
    assert len(result.duals) == result.report.num_constraints == 200
    assert result.report.build_seconds == 0.5 and result.report.solve_seconds > 0
    assert result.report.highs_status == "Optimal" and result.report.mip_gap is None


def test_maximisation_objective_has_the_users_sign() -> None:
    result = solve(build_congestion(load_topology("dgx-a100:1"), form="rate"))
    assert result.objective == pytest.approx(1 / 7)


def test_infeasible_raises_with_advice() -> None:
    with pytest.raises(InfeasibleModelError, match="'neg'.*is infeasible.*optcoll lp export"):
        solve(one_variable("neg", 0.0, -1.0))
    assert solve(one_variable("neg", 0.0, -1.0), require_optimal=False).status in (
        Status.INFEASIBLE,
        Status.INFEASIBLE_OR_UNBOUNDED,
    )


def test_unbounded_raises_with_advice() -> None:
    with pytest.raises((UnboundedModelError, InfeasibleModelError), match="'free'"):
        solve(one_variable("free", None, 1.0))


def test_time_limit_raises_with_advice() -> None:
    model = build_congestion(load_topology("dgx-a100:2"))
    with pytest.raises(SolverLimitError, match="raise time_limit"):
        solve(model, time_limit=1e-6)
    assert solve(model, time_limit=1e-6, require_optimal=False).status is Status.TIME_LIMIT


def test_milp_report() -> None:
    result = solve(build_fixed_k(["a", "b"], {("a", "b"): 1, ("b", "a"): 1}, 2), mip_rel_gap=0)
    assert result.objective == pytest.approx(1.0)
    assert result.duals == {} and result.report.mip_gap is not None


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
@pytest.mark.parametrize(
    "build",
    [
        lambda: build_congestion(load_topology("dgx-a100:1")),
        lambda: build_congestion(load_topology("dgx-a100:1"), form="rate"),
        lambda: build_multicast(load_topology("dgx-a100:1")),
        lambda: build_fixed_k(["a", "b", "c"], {("a", "b"): 1, ("b", "c"): 1, ("c", "a"): 1}, 2),
    ],
)
def test_export_round_trips(tmp_path: Path, suffix: str, build) -> None:  # noqa: ANN001
    model = build()
    expected = solve(model, mip_rel_gap=0).objective
    path = write_model(build(), tmp_path / "sub" / f"model{suffix}")
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    assert highs.readModel(str(path)) == highspy.HighsStatus.kOk
    highs.run()
    assert highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert highs.getInfo().objective_function_value == pytest.approx(expected)
    assert highs.getNumCol() == len(model.variables())


def test_export_mps_reloads_in_pulp(tmp_path: Path) -> None:
    model = build_congestion(load_topology("dgx-a100:1"))
    path = write_model(model, tmp_path / "c.mps")
    _, again = pulp.LpProblem.fromMPS(str(path))
    assert len(again.constraints()) == len(model.constraints())
    assert solve(again).objective == pytest.approx(7.0)


def test_export_rejects_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(FileFormatError, match=r"'\.txt'.*\.mps"):
        write_model(build_congestion(load_topology("dgx-a100:1")), tmp_path / "m.txt")
