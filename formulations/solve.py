"""One front door for solving a PuLP model with HiGHS, and for writing it out.

:func:`solve` runs HiGHS (through PuLP's ``HiGHS`` adapter, which drives
``highspy`` in-process) and returns a typed :class:`LpResult`: a
:class:`Status` mapped explicitly from HiGHS's model status (PuLP's own
mapping reports a time limit as "optimal", so it is not used), the objective,
primal values and duals by name, and a :class:`SolverReport` with sizes,
seconds and iteration counts. Anything but a proven optimum raises a
:class:`~formulations.errors.SolveError` subclass that says what to try.

:func:`model_text` gives any model as ``.mps`` or ``.lp`` text so that it can be
inspected or solved elsewhere (:func:`optcoll.core.output.write_model` writes it).

Examples
--------
>>> import pulp
>>> from formulations.solve import solve, Status
>>> model = pulp.LpProblem("tiny", pulp.LpMinimize)
>>> x = model.add_variable("x", lowBound=0)
>>> model.setObjective(pulp.LpAffineExpression([(x, 2.0)]))
>>> model.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression([(x, 1.0)]),
...                                       pulp.LpConstraintGE, rhs=3.0), "demand")
>>> result = solve(model)
>>> result.status is Status.OPTIMAL, result.objective, result.values["x"], result.duals["demand"]
(True, 6.0, 3.0, 2.0)
"""

from __future__ import annotations

import enum
import functools
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import highspy
import pulp

from formulations.errors import (
    InfeasibleModelError,
    MethodError,
    SolverFailureError,
    SolverLimitError,
    UnboundedModelError,
)

__all__ = [
    "Status",
    "SolverReport",
    "LpResult",
    "solve",
    "model_text",
    "MODEL_SUFFIXES",
    "SimplexBasis",
    "simplex_basis",
]

#: HiGHS threads when :func:`solve` is given none (None: HiGHS decides; the test suite
#: sets 1 so that solve times stay steady on a shared machine).
DEFAULT_THREADS: int | None = None

#: File suffixes :func:`model_text` understands.
MODEL_SUFFIXES = (".mps", ".lp")


class Status(enum.Enum):
    """Outcome of a solve, independent of the solver's own codes."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible or unbounded"
    TIME_LIMIT = "time limit reached"
    ITERATION_LIMIT = "iteration limit reached"
    OTHER_LIMIT = "stopped at a limit or by an interrupt"
    ERROR = "solver error"


_HIGHS_STATUS: dict[str, Status] = {
    "kOptimal": Status.OPTIMAL,
    "kInfeasible": Status.INFEASIBLE,
    "kUnbounded": Status.UNBOUNDED,
    "kUnboundedOrInfeasible": Status.INFEASIBLE_OR_UNBOUNDED,
    "kTimeLimit": Status.TIME_LIMIT,
    "kIterationLimit": Status.ITERATION_LIMIT,
    "kObjectiveBound": Status.OTHER_LIMIT,
    "kObjectiveTarget": Status.OTHER_LIMIT,
    "kSolutionLimit": Status.OTHER_LIMIT,
    "kInterrupt": Status.OTHER_LIMIT,
    "kHighsInterrupt": Status.OTHER_LIMIT,
    "kMemoryLimit": Status.ERROR,
    "kNotset": Status.ERROR,
    "kLoadError": Status.ERROR,
    "kModelError": Status.ERROR,
    "kPresolveError": Status.ERROR,
    "kSolveError": Status.ERROR,
    "kPostsolveError": Status.ERROR,
    "kModelEmpty": Status.ERROR,
    "kUnknown": Status.ERROR,
}


def _map_status(model_status: highspy.HighsModelStatus) -> Status:
    """Translate a HiGHS model status; an unknown code counts as a solver error."""
    return _HIGHS_STATUS.get(model_status.name, Status.ERROR)


@dataclass(frozen=True)
class SolverReport:
    """What the solver did: model size, time and work.

    ``build_seconds`` is the caller's model-building time (``None`` if not
    given); ``solve_seconds`` is the wall time of handing the model to HiGHS
    and solving it; ``highs_seconds`` is HiGHS's own run time.
    """

    solver: str
    highs_status: str
    num_variables: int
    num_constraints: int
    num_nonzeros: int
    build_seconds: float | None
    solve_seconds: float
    highs_seconds: float
    simplex_iterations: int
    ipm_iterations: int
    mip_nodes: int
    mip_gap: float | None

    def to_dict(self) -> dict[str, object]:
        """A JSON-friendly dictionary."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class LpResult:
    """A solved model: status, objective, primal values and duals by name."""

    status: Status
    objective: float
    values: Mapping[str, float]
    duals: Mapping[str, float]
    report: SolverReport


class _InterruptibleHiGHS(pulp.HiGHS):
    """PuLP's HiGHS adapter, with HiGHS run on a worker thread that the caller's thread
    waits for in short steps: a signal handler that raises (Ctrl-C, SIGTERM in the
    ``optcoll`` command) runs within :data:`WAIT_STEP` seconds, cancels the solve
    (HiGHS's interrupt callbacks stop it at its next check) and propagates. Run on the
    calling thread, HiGHS would hold it until the end of the solve."""

    def callSolver(self, lp: pulp.LpProblem) -> None:
        highs = lp.solverModel
        highs.HandleUserInterrupt = True
        highs.startSolve()
        try:
            while not highs.wait(WAIT_STEP)[0]:
                pass
        except BaseException:
            highs.cancelSolve()
            highs.wait()  # HiGHS stops at its next interrupt check
            raise


#: Seconds between the caller's checks for a signal while HiGHS runs.
WAIT_STEP = 0.05


@functools.cache
def silence_banner() -> None:
    """Create the process's first HiGHS instance with standard output closed.

    HiGHS prints its copyright banner on standard output once per process, at the
    first instance, whatever the options; that would corrupt ``--json`` output.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def solve(
    problem: pulp.LpProblem,
    *,
    time_limit: float | None = None,
    threads: int | None = None,
    mip_rel_gap: float | None = None,
    mip_abs_gap: float | None = None,
    tolerance: float | None = None,
    build_seconds: float | None = None,
    require_optimal: bool = True,
    verbose: bool = False,
) -> LpResult:
    """Solve ``problem`` with HiGHS and return a typed result.

    Parameters
    ----------
    problem : pulp.LpProblem
        Any PuLP model (LP or MILP). Its variables receive their values, as
        PuLP always does; nothing else about it changes.
    time_limit : float, optional
        Seconds before HiGHS stops.
    threads : int, optional
        Upper bound on HiGHS's threads (default :data:`DEFAULT_THREADS`).
    mip_rel_gap, mip_abs_gap : float, optional
        MILP stopping gaps (HiGHS's defaults otherwise; its relative default is
        1e-4, so pass 0 when the exact optimum matters).
    tolerance : float, optional
        HiGHS's primal and dual feasibility tolerance (default 1e-7; at least
        1e-10). A tighter one makes the final basis optimal for badly scaled
        data, e.g. bandwidths with many significant digits.
    build_seconds : float, optional
        The caller's model-building time, copied into the report.
    require_optimal : bool
        If true (default) anything but a proven optimum raises.
    verbose : bool
        Show HiGHS's log.

    Returns
    -------
    LpResult
        ``duals`` is empty for a MILP.

    Raises
    ------
    InfeasibleModelError, UnboundedModelError, SolverLimitError, SolverFailureError
        When ``require_optimal`` and the status is not :attr:`Status.OPTIMAL`.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from formulations.congestion import build_congestion
    >>> result = solve(build_congestion(load_topology("dgx-a100:1")))
    >>> result.status.value, round(result.objective, 9), result.report.num_constraints
    ('optimal', 7.0, 200)
    """
    silence_banner()
    variables = problem.variables()
    is_mip = any(v.cat == pulp.LpInteger for v in variables)
    options: dict[str, object] = {}
    if mip_rel_gap is not None:
        options["mip_rel_gap"] = float(mip_rel_gap)
    if mip_abs_gap is not None:
        options["mip_abs_gap"] = float(mip_abs_gap)
    if tolerance is not None:
        options["primal_feasibility_tolerance"] = float(tolerance)
        options["dual_feasibility_tolerance"] = float(tolerance)
    if threads is None:
        threads = DEFAULT_THREADS
    solver = _InterruptibleHiGHS(msg=verbose, timeLimit=time_limit, threads=threads, **options)
    start = time.perf_counter()
    try:
        problem.solve(solver)
    except pulp.PulpError as err:
        raise SolverFailureError(
            f"model {problem.name!r}: PuLP could not hand the model to HiGHS ({err}); write it "
            f"out with `optcoll lp export` to inspect it"
        ) from None
    seconds = time.perf_counter() - start
    highs = problem.solverModel
    model_status = highs.getModelStatus()
    status = _map_status(model_status)
    info = highs.getInfo()
    constraints = problem.constraints()
    report = SolverReport(
        solver=f"HiGHS {highs.version()} via PuLP {pulp.__version__}",
        highs_status=highs.modelStatusToString(model_status),
        num_variables=len(variables),
        num_constraints=len(constraints),
        num_nonzeros=sum(len(c) for c in constraints),
        build_seconds=build_seconds,
        solve_seconds=seconds,
        highs_seconds=highs.getRunTime(),
        simplex_iterations=max(info.simplex_iteration_count, 0),
        ipm_iterations=max(info.ipm_iteration_count, 0),
        mip_nodes=max(info.mip_node_count, 0) if is_mip else 0,
        mip_gap=info.mip_gap if is_mip else None,
    )
    if require_optimal and status is not Status.OPTIMAL:
        _raise_for(status, problem.name, report, time_limit)
    has_solution = info.primal_solution_status > 0
    values = {v.name: v.varValue for v in variables} if has_solution else {}
    duals = {} if is_mip or not has_solution else {c.name: c.pi for c in constraints}
    # PuLP hands HiGHS the negated objective of a maximisation.
    sign = -1.0 if problem.sense == pulp.LpMaximize else 1.0
    objective = sign * info.objective_function_value if has_solution else float("nan")
    return LpResult(status, objective, values, duals, report)


def _raise_for(status: Status, name: str, report: SolverReport, time_limit: float | None) -> None:
    where = (
        f"model {name!r} ({report.num_variables} variables, {report.num_constraints} constraints)"
    )
    if status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
        raise InfeasibleModelError(
            f"{where} is {status.value}: check that every compute node can reach every other "
            f"one and that capacities are positive; write the model out with "
            f"`optcoll lp export` to inspect it"
        )
    if status is Status.UNBOUNDED:
        raise UnboundedModelError(
            f"{where} is unbounded: a variable is missing a bound; write the model out with "
            f"`optcoll lp export` to inspect it"
        )
    if status in (Status.TIME_LIMIT, Status.ITERATION_LIMIT, Status.OTHER_LIMIT):
        limit = f" of {time_limit} s" if status is Status.TIME_LIMIT and time_limit else ""
        raise SolverLimitError(
            f"{where}: HiGHS stopped ({report.highs_status}{limit}) after "
            f"{report.solve_seconds:.1f} s without proving optimality; raise time_limit, or use "
            f"the combinatorial method (method='combinatorial') for large topologies"
        )
    raise SolverFailureError(
        f"{where}: HiGHS failed ({report.highs_status}); write the model out with "
        f"`optcoll lp export` and try another solver, or use the combinatorial method"
    )


def model_text(problem: pulp.LpProblem, suffix: str) -> bytes:
    """``problem`` as the text of an MPS (``".mps"``) or CPLEX-LP (``".lp"``) file.

    A maximisation stays one in MPS (``OBJSENSE`` is written). Writing the file
    safely is the caller's part (:func:`optcoll.core.output.write_model`).

    Raises
    ------
    MethodError
        If ``suffix`` is not one of :data:`MODEL_SUFFIXES`.

    Examples
    --------
    >>> model = pulp.LpProblem("tiny", pulp.LpMinimize)
    >>> x = model.add_variable("x", lowBound=1)
    >>> model.setObjective(pulp.LpAffineExpression([(x, 1.0)]))
    >>> model_text(model, ".lp").decode().splitlines()[1:3]
    ['Minimize', 'OBJ: x']
    """
    if suffix not in MODEL_SUFFIXES:
        raise MethodError(
            f"unknown model file suffix {suffix!r}; use one of {list(MODEL_SUFFIXES)}"
        )
    with tempfile.TemporaryDirectory() as folder:  # PuLP writes only to a named file
        draft = Path(folder) / f"model{suffix}"
        if suffix == ".mps":
            problem.writeMPS(str(draft), with_objsense=True)
        else:
            problem.writeLP(str(draft))
        return draft.read_bytes()


@dataclass(frozen=True)
class SimplexBasis:
    """The final simplex basis of a solved LP, by variable and constraint name.

    ``basic_variables`` are the columns in the basis; every other variable sits
    at a bound (``at_upper`` names those at their upper bound, the rest are at
    their lower bound). ``basic_constraints`` are the rows whose slack is basic
    (free to be slack); every other row holds with equality at one of its bounds.
    """

    basic_variables: frozenset[str]
    basic_constraints: frozenset[str]
    at_upper: frozenset[str]


def simplex_basis(problem: pulp.LpProblem) -> SimplexBasis | None:
    """The basis HiGHS ended with on ``problem``, just solved by :func:`solve`.

    Returns ``None`` if HiGHS holds no valid basis (an interior-point solve
    without crossover, or a MILP). With the basis the vertex can be recovered
    exactly: nonbasic variables at their bounds, nonbasic rows at theirs, and
    the basic variables from the square system those equalities leave
    (:func:`optcoll.lp.linear_system.solve_linear_system`).

    Examples
    --------
    >>> model = pulp.LpProblem("tiny", pulp.LpMinimize)
    >>> x = model.add_variable("x", lowBound=0)
    >>> y = model.add_variable("y", lowBound=0)
    >>> model.setObjective(pulp.LpAffineExpression([(x, 1.0), (y, 2.0)]))
    >>> model.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression([(x, 1.0), (y, 1.0)]),
    ...                                       pulp.LpConstraintGE, rhs=3.0), "demand")
    >>> result = solve(model)
    >>> basis = simplex_basis(model)
    >>> sorted(basis.basic_variables), sorted(basis.basic_constraints)
    (['x'], [])
    """
    highs = problem.solverModel
    basis = highs.getBasis()
    if not basis.valid:
        return None
    col_status = list(basis.col_status)
    row_status = list(basis.row_status)
    basic, upper = set(), set()
    for variable in problem.variables():  # PuLP numbers the columns it hands HiGHS
        status = col_status[variable.index]
        if status == highspy.HighsBasisStatus.kBasic:
            basic.add(variable.name)
        elif status == highspy.HighsBasisStatus.kUpper:
            upper.add(variable.name)
    rows = {
        constraint.name
        for constraint in problem.constraints()
        if row_status[constraint.index] == highspy.HighsBasisStatus.kBasic
    }
    return SimplexBasis(frozenset(basic), frozenset(rows), frozenset(upper))
