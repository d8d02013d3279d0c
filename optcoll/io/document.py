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
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from optcoll.core.limits import MAX_NESTING, read_file
from optcoll.core.output import write_output
from optcoll.core.rational import MAX_NUMBER_DIGITS, WrittenNumber
from optcoll.exceptions import FileFormatError

__all__ = [
    "read_document",
    "write_document",
    "document_text",
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


_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"

#: Plain decimal integers only: YAML 1.1 also reads ``1:30`` as 90 (base 60),
#: ``010`` as 8 (octal), ``0x10``, ``0b10`` and ``1_000``, none of which is the
#: number a reader sees; such scalars stay strings (and are refused as numbers).
_DECIMAL_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$")

#: Decimal fractions (``12.5``, ``.5``, ``1.5e+2``), infinity and NaN: YAML 1.1's floats
#: without base 60 and ``_`` (the dumper quotes every string these match).
_DECIMAL_FLOAT = re.compile(
    r"^(?:[-+]?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?|\.[0-9]+(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


#: Most entries (lists, mappings and scalars, shared ones counted each time they are
#: reached) a YAML document may expand to through its aliases.
MAX_DOCUMENT_ENTRIES = 10_000_000
#: Deepest nesting of lists and mappings a YAML document may have. PyYAML builds
#: nodes recursively (in C with libyaml), so a deeper file could overflow the C
#: stack and kill the process instead of raising; the depth is checked first on
#: the parser's flat event stream. That parses the text twice: libyaml's composer
#: reads only its own parser, and composing the checked events with PyYAML's Python
#: composer instead was measured slower than the second C parse (``docs/measured.md``).
MAX_YAML_DEPTH = MAX_NESTING


class _StrictLoader(_SafeLoader):
    """PyYAML's safe loader, refusing duplicate keys instead of keeping the last.

    Numbers are read as written: integers only in plain decimal, and decimal
    fractions as :class:`~optcoll.core.rational.WrittenNumber` (a float that keeps
    its text, so :func:`~optcoll.core.rational.exact_number` gets every digit).
    """

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT_TAG, _FLOAT_TAG)]
        for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        text = str(self.construct_scalar(node))
        if text.lstrip("+-").lower() in (".inf", ".nan"):
            return super().construct_yaml_float(node)
        return WrittenNumber(text)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        if len(text) > MAX_NUMBER_DIGITS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"an integer of {len(text)} digits, more than {MAX_NUMBER_DIGITS}",
                node.start_mark,
            )
        return super().construct_yaml_int(node)

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


_StrictLoader.add_implicit_resolver(_INT_TAG, _DECIMAL_INT, list("-+0123456789"))
_StrictLoader.add_implicit_resolver(_FLOAT_TAG, _DECIMAL_FLOAT, list("-+0123456789."))
_StrictLoader.add_constructor(_FLOAT_TAG, _StrictLoader.construct_yaml_float)
_StrictLoader.add_constructor(_INT_TAG, _StrictLoader.construct_yaml_int)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _integer(text: str) -> int:
    if len(text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits, more than {MAX_NUMBER_DIGITS}")
    return int(text)


def read_document(path: str | Path) -> Any:
    """Parse a JSON or YAML file (YAML for ``.yaml``/``.yml``, else JSON).

    Numbers with a fraction or an exponent come back as
    :class:`~optcoll.core.rational.WrittenNumber` (floats that keep the digits as
    written); YAML integers are plain decimal only (``1:30``, ``010``, ``0x10``
    stay strings rather than becoming 90, 8 and 16).

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
            _check_yaml_depth(text, path)
            data = yaml.load(text, Loader=_StrictLoader)  # a safe loader subclass
        except RecursionError:
            raise FileFormatError(f"{path}: invalid YAML: nested too deeply") from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise FileFormatError(f"{path}:{where} invalid YAML: {problem}") from None
        _check_expansion(data, path)
        return data
    try:
        return json.loads(
            text, object_pairs_hook=_unique_keys, parse_float=WrittenNumber, parse_int=_integer
        )
    except RecursionError:
        raise FileFormatError(f"{path}: invalid JSON: nested too deeply") from None
    except json.JSONDecodeError as err:
        raise FileFormatError(
            f"{path}: line {err.lineno}, column {err.colno}: invalid JSON: {err.msg}"
        ) from None
    except ValueError as err:  # a duplicate key, a number too long
        raise FileFormatError(f"{path}: invalid JSON: {err}") from None


def _check_yaml_depth(text: str, path: Path) -> None:
    """Refuse YAML nested deeper than :data:`MAX_YAML_DEPTH`, without recursing.

    Raises
    ------
    FileFormatError
        Naming the file and the line where the limit is passed.
    yaml.YAMLError
        The text is not YAML (the caller reports it).
    """
    depth = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise FileFormatError(
                    f"{path}: line {line}: invalid YAML: nested more than "
                    f"{MAX_YAML_DEPTH} lists/mappings deep"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def read_text(path: Path) -> str:
    """The file's text (UTF-8), or a :class:`FileFormatError` naming the file.

    Only regular files of at most :data:`MAX_FILE_BYTES` are read
    (:func:`optcoll.core.limits.read_file`): a FIFO would block forever and
    ``/dev/zero`` never ends.
    """
    data = read_file(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileFormatError(f"{path}: not a UTF-8 text file") from None


def _check_expansion(data: Any, path: Path) -> None:
    """Refuse a document whose aliases expand it beyond :data:`MAX_DOCUMENT_ENTRIES`.

    YAML aliases share one object, so a few hundred bytes can stand for billions of
    entries that any later walk would visit; count them (each shared object once)
    before anything walks the document.
    """
    size: dict[int, int] = {}
    open_: set[int] = set()  # entered, not yet counted: met again inside itself = a cycle
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        item, done = stack.pop()
        if not isinstance(item, list | dict) or (id(item) in size and not done):
            continue
        children = list(item.values()) if isinstance(item, dict) else item
        if not done:
            if id(item) in open_:
                raise FileFormatError(
                    f"{path}: a YAML alias refers to a list or mapping that contains it (a "
                    "recursive alias, which never ends); write the entries out"
                )
            open_.add(id(item))
            stack.append((item, True))
            stack.extend((child, False) for child in children)
            continue
        open_.discard(id(item))
        size[id(item)] = 1 + sum(
            size.get(id(child), 1) if isinstance(child, list | dict) else 1 for child in children
        )
        if size[id(item)] > MAX_DOCUMENT_ENTRIES:
            raise FileFormatError(
                f"{path}: its YAML aliases expand to more than {MAX_DOCUMENT_ENTRIES} entries; "
                "write the entries out"
            )


def write_document(
    data: Any, path: str | Path, *, force: bool = False, inputs: Iterable[str | Path] = ()
) -> None:
    """Write ``data`` as JSON or YAML (by suffix) with :func:`optcoll.core.output.write_output`.

    Never over an existing file without ``force``, never over one of ``inputs``,
    never half-written; parent folders are created.
    """
    path = Path(path)
    write_output(path, document_text(data, path.suffix), force=force, inputs=inputs)


def document_text(data: Any, suffix: str = ".json") -> str:
    """The text :func:`write_document` writes for ``data`` into a file with ``suffix``.

    Examples
    --------
    >>> print(document_text({"a": [1, 2]}), end="")
    {
      "a": [
        1,
        2
      ]
    }
    >>> print(document_text({"a": [1, 2]}, ".yaml"), end="")
    a: [1, 2]

    A :class:`~optcoll.core.rational.WrittenNumber` is written as its text, every digit kept:

    >>> print(document_text({"a": [WrittenNumber("0.1000000000000000000001")]}), end="")
    {
      "a": [
        0.1000000000000000000001
      ]
    }
    """
    if suffix.lower() in YAML_SUFFIXES:
        return yaml.dump(
            data, Dumper=_WrittenDumper, sort_keys=False, default_flow_style=None, width=100
        )
    written: list[str] = []
    text = json.dumps(_marked(data, written), indent=2) + "\n"
    for i, number in enumerate(written):
        text = text.replace(json.dumps(f"{_MARK}{i}{_MARK}"), number, 1)
    return text


#: Brackets a placeholder for a written number in JSON (a character JSON escapes in strings).
_MARK = "\x01"


def _marked(data: Any, written: list[str]) -> Any:
    """``data`` with each WrittenNumber replaced by a placeholder string, its text in ``written``."""
    if isinstance(data, WrittenNumber):
        written.append(data.text)
        return f"{_MARK}{len(written) - 1}{_MARK}"
    if isinstance(data, dict):
        return {key: _marked(value, written) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_marked(value, written) for value in data]
    return data


class _WrittenDumper(_SafeDumper):
    """The safe dumper, writing a WrittenNumber as its text."""


_WrittenDumper.add_representer(
    WrittenNumber,
    lambda dumper, number: dumper.represent_scalar(_FLOAT_TAG, number.text),
)


def line_of(path: Path, location: tuple[str | int, ...]) -> int | None:
    """1-based line of the entry at ``location`` in the file, if it can be found.

    JSON is (nearly always) valid YAML, so both are located through PyYAML's
    node tree; anything that cannot be followed gives ``None``.
    """
    if not location:
        return None
    try:
        text = path.read_text(encoding="utf-8")
        _check_yaml_depth(text, path)
        node = yaml.compose(text, Loader=_SafeLoader)
    except (yaml.YAMLError, OSError, UnicodeDecodeError, FileFormatError):
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
