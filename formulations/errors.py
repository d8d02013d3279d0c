"""The errors the models raise, and :class:`OptCollError`, the base of every optcoll error.

The model layer imports nothing of :mod:`optcoll` (data flows one way: optcoll
calls the models), yet every error a model raises must be an
:class:`OptCollError` so that ``except OptCollError`` catches it and the CLI
prints it on one line. Python's ``except`` matches by real subclassing, so the
base class has to live at the lowest layer that raises it: here.
:mod:`optcoll.exceptions` imports these classes and re-exports them, so
``from optcoll.exceptions import SolveError`` names the very same class, and
defines the rest of the hierarchy (file, schedule and export errors, the
particular topology errors) on top. That module stays the errors' public home:
each class here gives it as its ``__module__``, so tracebacks and pickles name
``optcoll.exceptions.SolveError`` as before.

Examples
--------
>>> from formulations.errors import OptCollError, SolverLimitError
>>> issubclass(SolverLimitError, OptCollError)
True
>>> import optcoll.exceptions
>>> optcoll.exceptions.SolverLimitError is SolverLimitError
True
>>> SolverLimitError.__module__
'optcoll.exceptions'
"""

from __future__ import annotations

#: Longest run of characters without a space an error message keeps whole (a path fits).
MAX_WORD = 200


def bounded_message(message: str) -> str:
    r"""``message`` on one line with every word longer than :data:`MAX_WORD` shortened
    (its start, its end and its length), so no value can make an error unreadable.

    Examples
    --------
    >>> text = bounded_message("time_factor must be exact, got '" + "7" * 100000 + "/3'")
    >>> text
    "time_factor must be exact, got '777777777777777777777777777777777777777...777777777/3' (100004 characters)"
    >>> bounded_message("two\nlines")
    'two lines'
    """
    words = message.replace("\r", " ").replace("\n", " ").split(" ")
    return " ".join(
        word if len(word) <= MAX_WORD else f"{word[:40]}...{word[-12:]} ({len(word)} characters)"
        for word in words
    )


class OptCollError(Exception):
    """Base class of every error optcoll raises on bad input or unsolvable problems.

    Its message is :func:`bounded_message`: one line, long values shortened.
    """

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (bounded_message(args[0]), *args[1:])
        super().__init__(*args)


class TopologyError(OptCollError):
    """A network (a topology, or a model's node list and capacity map) violates the model.

    ``location`` is the path of the offending entry in the file-format
    dictionary, e.g. ``("links", 3)`` (empty when unknown); :mod:`optcoll.io`
    turns it into a line number.
    """

    location: tuple[str | int, ...] = ()

    def __init__(self, message: str, location: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.location = tuple(location)


class SolveError(OptCollError):
    """A computation cannot be carried out on this input (the message says what to try)."""


class MethodError(OptCollError):
    """An unknown method name, or a method that does not fit the input's size."""


class InfeasibleModelError(SolveError):
    """The solver proved an LP/MILP model infeasible (or infeasible-or-unbounded)."""


class UnboundedModelError(SolveError):
    """The solver proved an LP/MILP model unbounded."""


class SolverLimitError(SolveError):
    """The solver stopped at a time, iteration or other limit before proving optimality."""


class SolverFailureError(SolveError):
    """The solver reported an internal error (load, presolve, solve or postsolve)."""


class ReconstructionError(SolveError):
    """A floating-point optimum could not be reconciled with an exact rational value."""


class SingularSystemError(ReconstructionError):
    """An exact linear system (e.g. an LP basis system) is inconsistent or singular."""


for _error in (
    OptCollError,
    TopologyError,
    SolveError,
    MethodError,
    InfeasibleModelError,
    UnboundedModelError,
    SolverLimitError,
    SolverFailureError,
    ReconstructionError,
    SingularSystemError,
):
    _error.__module__ = "optcoll.exceptions"
