"""Writing a formulation's model to a file (MPS or CPLEX-LP), safely."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from formulations.solve import MODEL_SUFFIXES, model_text
from optcoll.core.output import check_output, write_output
from optcoll.exceptions import FileFormatError

if TYPE_CHECKING:
    import pulp

__all__ = ["write_model"]


def write_model(
    problem: pulp.LpProblem,
    path: str | Path,
    *,
    force: bool = False,
    inputs: Iterable[str | Path] = (),
) -> Path:
    """Write an LP/MILP model as MPS or CPLEX-LP, chosen by the suffix of ``path``.

    The text is :func:`formulations.solve.model_text`'s, written by
    :func:`write_output`: never over an existing file without ``force``, never
    over one of ``inputs``, never half-written; parent folders are created.
    Returns the path written.

    Raises
    ------
    FileFormatError
        If the suffix is neither ``.mps`` nor ``.lp``.

    Examples
    --------
    >>> import pulp, tempfile, pathlib
    >>> model = pulp.LpProblem("tiny", pulp.LpMinimize)
    >>> x = model.add_variable("x", lowBound=1)
    >>> model.setObjective(pulp.LpAffineExpression([(x, 1.0)]))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_model(model, pathlib.Path(tmp) / "tiny.mps")
    ...     out.stat().st_size > 0
    True
    """

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in MODEL_SUFFIXES:
        raise FileFormatError(
            f"{path}: unknown model file suffix {path.suffix!r}; use one of {list(MODEL_SUFFIXES)}"
        )
    check_output(path, force=force, inputs=inputs)
    return write_output(path, model_text(problem, suffix), force=force, inputs=inputs)
