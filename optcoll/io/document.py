"""JSON and YAML documents: strict parsing (duplicate keys refused, errors with line and column).

Reads and writes plain data; the format modules give it meaning.

Examples
--------
>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as folder:
...     path = pathlib.Path(folder) / "x.yaml"
...     write_document({"a": [1, 2]}, path)
...     read_document(path)
{'a': [1, 2]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from optcoll.exceptions import FileFormatError

__all__ = [
    "read_document",
    "write_document",
    "read_text",
    "line_of",
    "YAML_SUFFIXES",
    "DOCUMENT_SUFFIXES",
]

#: Suffixes read and written as YAML (anything else is JSON).
YAML_SUFFIXES = frozenset({".yaml", ".yml"})

#: Suffixes of JSON/YAML documents.
DOCUMENT_SUFFIXES = YAML_SUFFIXES | {".json"}

# libyaml's parser and emitter when PyYAML was built with them (about 10x faster,
# same documents and same output), else the pure-Python ones.
if TYPE_CHECKING:  # the C classes offer the same interface
    _SafeLoader = yaml.SafeLoader
    _SafeDumper = yaml.SafeDumper
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    _SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


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
    text = read_text(path)
    if not text.strip():
        raise FileFormatError(f"{path}: the file is empty")
    if path.suffix.lower() in YAML_SUFFIXES:
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


def read_text(path: Path) -> str:
    """The file's text (UTF-8), or a :class:`FileFormatError` naming the file."""
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
    if path.suffix.lower() in YAML_SUFFIXES:
        text = yaml.dump(
            data, Dumper=_SafeDumper, sort_keys=False, default_flow_style=None, width=100
        )
    else:
        text = json.dumps(data, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")


def line_of(path: Path, location: tuple[str | int, ...]) -> int | None:
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
