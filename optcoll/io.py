"""Topology files (JSON and YAML, one schema) and built-in specs.

``load_topology(x)`` accepts a file path (``.json``, ``.yaml``/``.yml``) or a
built-in spec such as ``dgx-a100:2``; ``save_topology`` writes either format,
chosen by the file suffix. The schema is documented in the README and in
:meth:`optcoll.topology.Topology.from_dict`.

Errors name the file and, where the parser or the schema check can tell, the
line: ``topo.yaml: line 7: links[2] refers to unknown node 'g9'``. Duplicate
keys in a mapping are rejected rather than silently overwritten.

Examples
--------
>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as folder:
...     path = pathlib.Path(folder) / "ring.yaml"
...     save_topology(load_topology("ring:4"), path)
...     load_topology(path) == load_topology("ring:4")
True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from optcoll import topologies
from optcoll.exceptions import FileFormatError, ScheduleError, TopologyError
from optcoll.schedule import Schedule
from optcoll.topology import Topology

__all__ = [
    "load_topology",
    "save_topology",
    "read_document",
    "write_document",
    "looks_like_path",
    "TOPOLOGY_SUFFIXES",
]

_YAML_SUFFIXES = {".yaml", ".yml"}

# libyaml's parser and emitter when PyYAML was built with them (about 10x faster,
# same documents and same output), else the pure-Python ones.
if TYPE_CHECKING:  # the C classes offer the same interface
    _SafeLoader = yaml.SafeLoader
    _SafeDumper = yaml.SafeDumper
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    _SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

#: File suffixes :func:`save_topology` writes (and :func:`load_topology` reads).
TOPOLOGY_SUFFIXES = (".json", ".yaml", ".yml")


class _StrictLoader(_SafeLoader):
    """PyYAML's safe loader, refusing duplicate keys instead of keeping the last."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key = self.construct_object(key_node)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def read_document(path: str | Path) -> Any:
    """Parse a JSON or YAML file (YAML for ``.yaml``/``.yml``, else JSON).

    Raises
    ------
    FileFormatError
        The file is missing, unreadable, empty, not UTF-8, or not valid
        JSON/YAML (with line and column), or repeats a key in a mapping.
    """
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise FileFormatError(f"{path}: the file is empty")
    if path.suffix.lower() in _YAML_SUFFIXES:
        try:
            return yaml.load(text, Loader=_StrictLoader)  # a safe loader subclass
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise FileFormatError(f"{path}:{where} invalid YAML: {problem}") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise FileFormatError(
            f"{path}: line {err.lineno}, column {err.colno}: invalid JSON: {err.msg}"
        ) from None
    except ValueError as err:  # a duplicate key
        raise FileFormatError(f"{path}: invalid JSON: {err}") from None


def _read_text(path: Path) -> str:
    if not path.exists():
        raise FileFormatError(f"{path}: file not found")
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise FileFormatError(f"{path}: cannot read file ({err.strerror})") from None
    except UnicodeDecodeError:
        raise FileFormatError(f"{path}: not a UTF-8 text file") from None


def write_document(data: Any, path: str | Path) -> None:
    """Write ``data`` as JSON or YAML (by suffix), creating parent folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in _YAML_SUFFIXES:
        text = yaml.dump(
            data, Dumper=_SafeDumper, sort_keys=False, default_flow_style=None, width=100
        )
    else:
        text = json.dumps(data, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")


def looks_like_path(source: str | Path) -> bool:
    """True if ``source`` reads as a file path: it has a suffix or a folder part.

    Examples
    --------
    >>> looks_like_path("topo.json"), looks_like_path("configs/topo"), looks_like_path("ring:4")
    (True, True, False)
    """
    text = str(source)
    return bool(Path(text).suffix) or "/" in text or "\\" in text


def load_topology(source: str | Path) -> Topology:
    """Load a topology from a file path or build it from a built-in spec.

    A path that exists is read as a file; otherwise a ``source`` whose family
    is registered is built as a spec (``dgx-a100:2``); otherwise a ``source``
    that looks like a path (a suffix or a slash) is a missing file; anything
    else is an unknown built-in.

    Raises
    ------
    FileFormatError
        The file is missing or cannot be parsed.
    TopologyError
        The document breaks the schema; the message starts with the file name
        and, when it can be found, the line of the offending entry.
    TopologySpecError
        Neither a file nor a valid built-in spec.

    Examples
    --------
    >>> load_topology("mi250:1").num_compute
    16
    """
    path = Path(source)
    if not path.exists():
        if not topologies.is_spec(str(source)) and looks_like_path(source):
            raise FileFormatError(f"{source}: file not found")
        return topologies.build(str(source))
    from optcoll.importers import import_topology, is_foreign

    if is_foreign(path):  # msccl-tools, TACCL, GraphML, edge list
        return import_topology(path)
    data = read_document(path)
    try:
        return Topology.from_dict(data, default_name=path.stem)
    except TopologyError as err:
        line = _line_of(path, err.location)
        where = f" line {line}:" if line else ""
        raise type(err)(f"{path}:{where} {err}", err.location) from None


def _line_of(path: Path, location: tuple[str | int, ...]) -> int | None:
    """1-based line of the entry at ``location`` in the file, if it can be found.

    JSON is (nearly always) valid YAML, so both are located through PyYAML's
    node tree; anything that cannot be followed gives ``None``.
    """
    if not location:
        return None
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=_SafeLoader)
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return None
    if node is None:  # an empty document
        return None
    last = len(location) - 1
    for depth, step in enumerate(location):
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            matches = [(k, v) for k, v in node.value if getattr(k, "value", None) == step]
            if not matches:
                return None
            key_node, value_node = matches[0]
            node = key_node if depth == last else value_node
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            if not 0 <= step < len(node.value):
                return None
            node = node.value[step]
        else:
            return None
    return node.start_mark.line + 1


def save_topology(topology: Topology, path: str | Path) -> None:
    """Write ``topology`` as JSON or YAML (by suffix); lossless with :func:`load_topology`.

    Raises
    ------
    FileFormatError
        The suffix is not one of :data:`TOPOLOGY_SUFFIXES`.
    """
    if Path(path).suffix.lower() not in TOPOLOGY_SUFFIXES:
        raise FileFormatError(
            f"{path}: unknown topology file type {Path(path).suffix!r}; "
            f"use one of {', '.join(TOPOLOGY_SUFFIXES)}"
        )
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
