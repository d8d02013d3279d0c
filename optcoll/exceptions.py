"""Errors raised by optcoll.

Every error a user can cause is an :class:`OptCollError` subclass whose message
names the node, link, field or file at fault and says what would be valid. The
CLI prints ``str(error)`` on one line and exits with status 2.

:class:`OptCollError` itself, :class:`TopologyError` and the solver errors
(:class:`SolveError`, :class:`MethodError`, :class:`ReconstructionError`, ...)
are defined in :mod:`formulations.errors` and re-exported here. The model layer
raises them and imports nothing of optcoll, and ``except OptCollError`` only
catches real subclasses, so the base class lives at that lowest layer; this
module is where everyone else imports every error from.

Examples
--------
>>> from optcoll.exceptions import OptCollError, BandwidthError
>>> issubclass(BandwidthError, OptCollError)
True
"""

from __future__ import annotations

import reprlib
from typing import Any

from formulations.errors import (
    InfeasibleModelError,
    MethodError,
    OptCollError,
    ReconstructionError,
    SingularSystemError,
    SolveError,
    SolverFailureError,
    SolverLimitError,
    TopologyError,
    UnboundedModelError,
)

__all__ = [
    "shown",
    "OptCollError",
    "OutputExistsError",
    "TopologyError",
    "SolveError",
    "MethodError",
    "InfeasibleModelError",
    "UnboundedModelError",
    "SolverLimitError",
    "SolverFailureError",
    "ReconstructionError",
    "SingularSystemError",
    "DuplicateNodeError",
    "UnknownNodeError",
    "SelfLoopError",
    "BandwidthError",
    "LatencyError",
    "NodeTypeError",
    "UnknownFieldError",
    "MissingFieldError",
    "TooFewComputeNodesError",
    "NotStronglyConnectedError",
    "FileFormatError",
    "TopologySpecError",
    "GroupError",
    "ArgumentError",
    "ScheduleError",
    "TopologyMismatchError",
    "OutputError",
    "ExportError",
    "PlotError",
    "ImportFormatError",
]

# --- topology model -----------------------------------------------------------------


class DuplicateNodeError(TopologyError):
    """Two nodes share an id."""


class UnknownNodeError(TopologyError):
    """A link (or a query) names a node that does not exist."""


class SelfLoopError(TopologyError):
    """A link goes from a node to itself."""


class BandwidthError(TopologyError):
    """A bandwidth is not a positive finite number."""


class LatencyError(TopologyError):
    """A latency is not a non-negative finite number."""


class NodeTypeError(TopologyError):
    """A node type is neither ``compute`` nor ``switch``."""


class UnknownFieldError(TopologyError):
    """A topology (or schedule) entry carries a field the schema does not know."""


class MissingFieldError(TopologyError):
    """A required field is absent or has the wrong type."""


class TooFewComputeNodesError(TopologyError):
    """A topology has fewer than two compute nodes."""


class NotStronglyConnectedError(TopologyError):
    """Some compute node cannot reach, or cannot be reached from, another compute node."""


# --- files and specs ----------------------------------------------------------------


class FileFormatError(OptCollError):
    """A file cannot be parsed (bad JSON/YAML, wrong top-level shape, unknown version)."""


class TopologySpecError(OptCollError):
    """A built-in topology spec such as ``dgx-a100:4`` is unknown or malformed."""


class GroupError(OptCollError):
    """Process groups (``--groups``) that the topology cannot run: bad member, spec or file."""


class ArgumentError(OptCollError, TypeError, ValueError):
    """A public function was called with an argument of the wrong type or value.

    The message names the function's argument and what it accepts. It is also a
    ``TypeError`` and a ``ValueError``, so callers catching either keep working.
    """


# --- schedules ----------------------------------------------------------------------


class ScheduleError(OptCollError):
    """A schedule file or object is malformed."""


class TopologyMismatchError(ScheduleError):
    """A schedule is used with a topology other than the one it was built for."""


# --- export -------------------------------------------------------------------------


class OutputError(OptCollError):
    """An output file cannot or must not be written (exists, is an input, no permission)."""


class OutputExistsError(OutputError):
    """An output file exists (or appeared while writing) and ``force`` was not given.

    The message names Python's ``force=True``; the command line says ``--force``
    (:meth:`advice`).
    """

    def __init__(self, path: object, *, appeared: bool = False) -> None:
        self.path = path
        self.appeared = appeared
        super().__init__(self.advice("force=True"))

    def advice(self, flag: str) -> str:
        """The message with ``flag`` as the way to overwrite."""
        what = "appeared while writing" if self.appeared else "exists"
        return f"{self.path} {what}; pass {flag} to overwrite it"


class ExportError(OptCollError):
    """A schedule cannot be written in the requested format within its limits."""


# --- pictures and imported formats --------------------------------------------------


class PlotError(OptCollError):
    """A picture cannot be drawn from this input (not a cut, no load, mismatched curve)."""


class ImportFormatError(FileFormatError):
    """A file in another tool's format (msccl-tools, TACCL, GraphML, edge list) is malformed."""


# --- showing a bad value in a message --------------------------------------------------

_REPR = reprlib.Repr()
_REPR.maxlevel = 3  # a value nested 100,000 deep is shown, not recursed through
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 60


def shown(value: Any) -> str:
    """A short description of a bad ``value`` for an error message: its repr if short,
    else its type (bounded in depth and length, so no value can make the message fail).

    Examples
    --------
    >>> shown("abc"), shown(None), shown(list(range(100))), shown("x" * 100)
    ("'abc'", 'None', '[0, 1, 2, 3, 4, 5, ...]', 'a str')
    >>> deep = []
    >>> for _ in range(10000):
    ...     deep = [deep]
    >>> shown(deep)
    '[[[[...]]]]'
    """
    try:
        text = _REPR.repr(value)
    except Exception:  # a repr that raises: say what the value is
        return f"a {type(value).__name__}"
    return text if len(text) <= 40 else f"a {type(value).__name__}"
