"""optcoll's own topology files (JSON or YAML, one schema): reads and writes them.

The schema is documented in docs/topology-format.md and in
:meth:`optcoll.core.topology.Topology.from_dict`. Errors name the file and, where
the parser or the schema check can tell, the line: ``topo.yaml: line 7:
links[2] refers to unknown node 'g9'``.

Examples
--------
>>> import tempfile, pathlib
>>> from optcoll.topologies import build
>>> with tempfile.TemporaryDirectory() as folder:
...     path = pathlib.Path(folder) / "ring.yaml"
...     save_topology(build("ring:4"), path)
...     read_native(path) == build("ring:4")
True
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from optcoll import topologies
from optcoll.core.arguments import path_argument, topology_argument
from optcoll.core.topology import Topology
from optcoll.exceptions import FileFormatError, OptCollError, TopologyError
from optcoll.io.document import line_of, read_document, write_document

__all__ = ["read_native", "save_topology", "TOPOLOGY_SUFFIXES"]

#: File suffixes :func:`save_topology` writes (and :func:`read_native` reads).
TOPOLOGY_SUFFIXES = (".json", ".yaml", ".yml")


def read_native(path: str | Path, *, name: str | None = None) -> Topology:
    """Read an optcoll topology file; ``name`` replaces the file's ``name``.

    Without ``name`` the topology is named by the file's ``name`` field, else by the
    file name without suffix; a file whose ``name`` is a built-in spec but whose
    nodes or links differ from that built-in is named by the file (the description
    says it was edited).

    Raises
    ------
    FileFormatError
        The file is missing or cannot be parsed.
    TopologyError
        The document breaks the schema; the message starts with the file name
        and, when it can be found, the line of the offending entry.
    """
    path = Path(path)
    data = read_document(path)
    try:
        topology = Topology.from_dict(data, default_name=path.stem)
    except TopologyError as err:
        line = line_of(path, err.location)
        where = f" line {line}:" if line else ""
        raise type(err)(f"{path}:{where} {err}", err.location) from None
    if name is not None:
        return topology.with_name(name)
    return _edited_builtin_renamed(topology, path)


def _edited_builtin_renamed(topology: Topology, path: Path) -> Topology:
    """A file that names itself after a built-in but holds other links is named by the file.

    ``optcoll convert dgx-h100:4 my.json`` writes the name ``dgx-h100:4``; once the
    file is edited, keeping that name would make reports, schedules and exports
    pass it off as the built-in.
    """
    if not topologies.is_spec(topology.name):
        return topology
    try:
        original = topologies.build(topology.name)
    except OptCollError:
        return topology
    if original.content_hash == topology.content_hash:
        return topology
    note = f"edited from built-in {topology.name} (file {path.name})"
    description = f"{topology.description}; {note}" if topology.description else note
    return topology.with_name(path.stem, description)


def save_topology(
    topology: Topology, path: str | Path, *, force: bool = False, inputs: Iterable[str | Path] = ()
) -> None:
    """Write ``topology`` as JSON or YAML (by suffix); lossless with :func:`read_native`.

    Written by :func:`~optcoll.io.document.write_document` (``force`` and ``inputs``
    as there).

    Raises
    ------
    FileFormatError
        The suffix is not one of :data:`TOPOLOGY_SUFFIXES`.
    """
    topology_argument(topology)
    path = path_argument(path)
    if Path(path).suffix.lower() not in TOPOLOGY_SUFFIXES:
        raise FileFormatError(
            f"{path}: unknown topology file type {Path(path).suffix!r}; "
            f"use one of {', '.join(TOPOLOGY_SUFFIXES)}"
        )
    write_document(topology.to_dict(), path, force=force, inputs=inputs)
