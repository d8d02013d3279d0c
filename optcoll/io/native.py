"""optcoll's own topology files (JSON or YAML, one schema): reads and writes them.

The schema is documented in the README and in
:meth:`optcoll.topology.Topology.from_dict`. Errors name the file and, where
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

from pathlib import Path

from optcoll.exceptions import FileFormatError, TopologyError
from optcoll.io.document import line_of, read_document, write_document
from optcoll.topology import Topology

__all__ = ["read_native", "save_topology", "TOPOLOGY_SUFFIXES"]

#: File suffixes :func:`save_topology` writes (and :func:`read_native` reads).
TOPOLOGY_SUFFIXES = (".json", ".yaml", ".yml")


def read_native(path: str | Path, *, name: str | None = None) -> Topology:
    """Read an optcoll topology file; ``name`` replaces the file's ``name``.

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
    if name is None:
        return topology
    return Topology.from_dict({**topology.to_dict(), "name": name})


def save_topology(topology: Topology, path: str | Path) -> None:
    """Write ``topology`` as JSON or YAML (by suffix); lossless with :func:`read_native`.

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
