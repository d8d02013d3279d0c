"""Topology files (JSON and YAML, one schema) and built-in specs.

``load_topology(x)`` accepts a file path (``.json``, ``.yaml``/``.yml``) or a
built-in spec such as ``dgx-a100:2``; ``save_topology`` writes either format,
chosen by the file suffix. The schema is documented in the README and in
:meth:`optcoll.topology.Topology.from_dict`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from optcoll import topologies
from optcoll.exceptions import FileFormatError, ScheduleError, TopologyError
from optcoll.schedule import Schedule
from optcoll.topology import Topology

__all__ = ["load_topology", "save_topology", "read_document", "write_document"]

_YAML_SUFFIXES = {".yaml", ".yml"}


def read_document(path: str | Path) -> Any:
    """Parse a JSON or YAML file, raising :class:`FileFormatError` with file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise FileFormatError(f"{path}: cannot read file ({err.strerror})") from None
    except UnicodeDecodeError:
        raise FileFormatError(f"{path}: not a UTF-8 text file") from None
    if path.suffix.lower() in _YAML_SUFFIXES:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise FileFormatError(f"{path}:{where}: invalid YAML: {problem}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise FileFormatError(
            f"{path}: line {err.lineno}, column {err.colno}: invalid JSON: {err.msg}"
        ) from None


def write_document(data: Any, path: str | Path) -> None:
    """Write ``data`` as JSON or YAML (by suffix), creating parent folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in _YAML_SUFFIXES:
        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    else:
        text = json.dumps(data, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")


def load_topology(source: str | Path) -> Topology:
    """Load a topology from a file path or build it from a built-in spec.

    A path that exists is read as a file; otherwise ``source`` is taken as a
    spec (``dgx-a100:2``). Errors name the file (and line, for parse errors).

    Examples
    --------
    >>> load_topology("mi250:1").num_compute
    16
    """
    path = Path(source)
    if not path.exists() and topologies.is_spec(str(source)):
        return topologies.build(str(source))
    if not path.exists():
        return topologies.build(str(source))  # raises a TopologySpecError listing built-ins
    data = read_document(path)
    try:
        return Topology.from_dict(data, default_name=path.stem)
    except TopologyError as err:
        raise type(err)(f"{path}: {err}") from None


def save_topology(topology: Topology, path: str | Path) -> None:
    """Write ``topology`` as JSON or YAML (by suffix); lossless with :func:`load_topology`."""
    write_document(topology.to_dict(), path)


# --- schedule files -------------------------------------------------------------------

__all__ += ["load_schedule", "save_schedule"]


def load_schedule(path: str | Path) -> Schedule:
    """Read a schedule file (JSON or YAML, the README's "Schedule file format").

    Parse errors raise :class:`FileFormatError` (file, line, column); a
    malformed schedule raises :class:`ScheduleError` prefixed by the file name.
    Whether the schedule is valid for a topology is
    :func:`optcoll.verify.verify_schedule`'s job.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from optcoll.schedule import Schedule, Tree, TreeEdge
    >>> s = Schedule("allgather", "pair", ("a", "b"), 1,
    ...              (Tree("a", 1, (TreeEdge("a", "b", ("a", "b")),)),
    ...               Tree("b", 1, (TreeEdge("b", "a", ("b", "a")),))))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     save_schedule(s, pathlib.Path(d) / "s.json")
    ...     load_schedule(pathlib.Path(d) / "s.json") == s
    True
    """
    path = Path(path)
    data = read_document(path)
    try:
        return Schedule.from_dict(data)
    except ScheduleError as err:
        raise ScheduleError(f"{path}: {err}") from None


def save_schedule(schedule: Schedule, path: str | Path) -> None:
    """Write ``schedule`` as JSON or YAML (by suffix); lossless with :func:`load_schedule`."""
    write_document(schedule.to_dict(), path)
