"""Errors raised by optcoll.

Every error a user can cause is an :class:`OptCollError` subclass whose message
names the node, link, field or file at fault and says what would be valid. The
CLI prints ``str(error)`` on one line and exits with status 2.

Examples
--------
>>> from optcoll.exceptions import OptCollError, BandwidthError
>>> issubclass(BandwidthError, OptCollError)
True
"""

from __future__ import annotations


class OptCollError(Exception):
    """Base class of every error optcoll raises on bad input or unsolvable problems."""


# --- topology model -----------------------------------------------------------------


class TopologyError(OptCollError):
    """A topology violates the model (see :mod:`optcoll.topology`).

    ``location`` is the path of the offending entry in the file-format
    dictionary, e.g. ``("links", 3)`` (empty when unknown); :mod:`optcoll.io`
    turns it into a line number.
    """

    location: tuple[str | int, ...] = ()

    def __init__(self, message: str, location: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.location = tuple(location)


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


# --- algorithms ---------------------------------------------------------------------


class SolveError(OptCollError):
    """A computation cannot be carried out on this input (the message says what to try)."""


class MethodError(OptCollError):
    """An unknown method name, or a method that does not fit the input's size."""


class ScheduleError(OptCollError):
    """A schedule file or object is malformed."""


class TopologyMismatchError(ScheduleError):
    """A schedule is used with a topology other than the one it was built for."""


# --- LP/MILP solving (formulations/) ------------------------------------------------


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


# --- export -------------------------------------------------------------------------


class OutputError(OptCollError):
    """An output file cannot or must not be written (exists, is an input, no permission)."""


class ExportError(OptCollError):
    """A schedule cannot be written in the requested format within its limits."""


# --- pictures and imported formats --------------------------------------------------


class PlotError(OptCollError):
    """A picture cannot be drawn from this input (not a cut, no load, mismatched curve)."""


class ImportFormatError(FileFormatError):
    """A file in another tool's format (msccl-tools, TACCL, GraphML, edge list) is malformed."""


# --- exact linear algebra -----------------------------------------------------------


class SingularSystemError(ReconstructionError):
    """An exact linear system (e.g. an LP basis system) is inconsistent or singular."""
