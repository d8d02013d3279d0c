"""The registry of topology formats and the one front door, :func:`load_topology`.

Each format is a :class:`TopologyFormat`: its name, the suffixes that select
it, a test of a parsed JSON/YAML document's content (for the formats that share
the ``.json``/``.yaml`` suffixes), and its reader. :func:`detect_format` picks
the format from the suffix and then the content; :func:`import_topology` reads
a file in any of them; :func:`load_topology` also builds built-in specs. Every
command reads its TOPO through :func:`load_topology`.

Examples
--------
>>> import json, pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> ring = [[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]]
>>> path = folder / "ring.json"
>>> _ = path.write_text(json.dumps({"msccl_type": "topology", "name": "Ring(n=4)",
...                                 "links": ring, "switches": []}))
>>> topo = import_topology(path, link_bandwidth=25)
>>> detect_format(path), topo.num_compute, topo.capacity[("gpu0", "gpu1")]
('msccl', 4, Fraction(25, 1))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optcoll import topologies
from optcoll.core.arguments import path_argument, text_argument
from optcoll.core.limits import check_size
from optcoll.core.output import exists
from optcoll.core.topology import Topology
from optcoll.exceptions import FileFormatError, ImportFormatError, TopologyError
from optcoll.io.astra_sim import from_astra_network, is_astra_network
from optcoll.io.document import DOCUMENT_SUFFIXES, read_document, read_text
from optcoll.io.edgelist import from_edgelist
from optcoll.io.graphml import from_graphml
from optcoll.io.msccl_tools import from_msccl, is_msccl
from optcoll.io.native import read_native
from optcoll.io.nccl_xml import from_nccl_xml, is_nccl_xml
from optcoll.io.taccl import from_taccl, is_taccl

__all__ = [
    "TopologyFormat",
    "REGISTRY",
    "FORMATS",
    "detect_format",
    "import_topology",
    "load_topology",
    "looks_like_path",
]


@dataclass(frozen=True)
class TopologyFormat:
    """A topology file format: how to recognise it and how to read it.

    ``suffixes`` select the format outright; a format with ``claims`` is a
    JSON/YAML document recognised by that test of its parsed content.
    A format with ``sniff`` is an XML file (suffix ``.xml``) recognised by
    that test of its text. ``read(path, name, options)`` returns the topology;
    ``options`` are the keyword options the reader takes (see
    :func:`import_topology`).
    """

    name: str
    summary: str
    read: Callable[[Path, str | None, dict[str, Any]], Topology]
    suffixes: frozenset[str] = frozenset()
    claims: Callable[[Any], bool] | None = None
    sniff: Callable[[str], bool] | None = None
    options: tuple[str, ...] = ()


def _read_msccl(path: Path, name: str | None, options: dict[str, Any]) -> Topology:
    return from_msccl(read_document(path), name=name, **options)


def _read_taccl(path: Path, name: str | None, options: dict[str, Any]) -> Topology:
    return from_taccl(read_document(path), name=name, **options)


def _read_graphml(path: Path, name: str | None, options: dict[str, Any]) -> Topology:
    return from_graphml(path, name=name, **options)


def _read_edgelist(path: Path, name: str | None, options: dict[str, Any]) -> Topology:
    return from_edgelist(read_text(path), name=name or path.stem, **options)


def _read_astra(path: Path, name: str | None, options: dict[str, Any]) -> Topology:
    return from_astra_network(read_document(path), name=name or path.stem)


def _read_nccl(path: Path, name: str | None, options: dict[str, Any]) -> Topology:
    return from_nccl_xml(read_text(path), name=name or path.stem, **options)


def _is_graphml(text: str) -> bool:
    return "<graphml" in text[:2000]


def _read_native(path: Path, name: str | None, options: dict[str, Any]) -> Topology:
    return read_native(path, name=name)


#: Every topology format, in the order documents are tested (optcoll's own last: the default).
REGISTRY: tuple[TopologyFormat, ...] = (
    TopologyFormat(
        "taccl",
        "TACCL topology profile JSON",
        _read_taccl,
        claims=is_taccl,
        options=("chunk_bytes", "boxes", "box"),
    ),
    TopologyFormat(
        "msccl",
        "msccl-tools serialised topology JSON",
        _read_msccl,
        claims=is_msccl,
        options=("link_bandwidth",),
    ),
    TopologyFormat(
        "astra-sim",
        "ASTRA-sim analytical network config (YAML)",
        _read_astra,
        claims=is_astra_network,
    ),
    TopologyFormat(
        "graphml",
        "GraphML (networkx)",
        _read_graphml,
        suffixes=frozenset({".graphml"}),
        sniff=_is_graphml,
        options=("bandwidth_attr", "latency_attr"),
    ),
    TopologyFormat(
        "nccl",
        "NCCL topology XML (NCCL_TOPO_DUMP_FILE)",
        _read_nccl,
        sniff=is_nccl_xml,
        options=("boxes", "fabric", "spines", "oversub"),
    ),
    TopologyFormat(
        "edgelist",
        "edge list text",
        _read_edgelist,
        suffixes=frozenset({".edgelist", ".edges", ".txt", ".tsv"}),
        options=("directed", "bandwidth_attr", "latency_attr"),
    ),
    TopologyFormat("optcoll", "optcoll topology JSON/YAML", _read_native, claims=lambda _: True),
)

_BY_NAME = {f.name: f for f in REGISTRY}

#: Names of the formats :func:`import_topology` reads.
FORMATS = tuple(_BY_NAME)


def detect_format(path: str | Path) -> str:
    """The format of the file at ``path``: one of :data:`FORMATS`.

    A suffix that belongs to one format selects it (``.graphml``;
    ``.edgelist``, ``.edges``, ``.txt``, ``.tsv``); an XML file (``.xml``, or
    text starting with ``<``) is NCCL's topology when its root is ``<system>``
    and GraphML when it holds ``<graphml``; a JSON/YAML document
    (``.json``, ``.yaml``, ``.yml``, or any other suffix when the text starts
    with ``{``) goes to the first format whose content test accepts it:
    TACCL's when it has ``gpus_per_node``, msccl-tools' when it has
    ``msccl_type`` or a ``links`` matrix, ASTRA-sim's when it has ``topology``
    and ``npus_count`` lists, optcoll's otherwise.

    Raises
    ------
    ImportFormatError
        Neither the suffix nor the content tells the format.
    FileFormatError
        The file is missing or is not valid JSON/YAML.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    for fmt in REGISTRY:
        if suffix in fmt.suffixes:
            return fmt.name
    text = "" if suffix in DOCUMENT_SUFFIXES else read_text(path)
    if suffix == ".xml" or text.lstrip().startswith("<"):
        for fmt in REGISTRY:
            if fmt.sniff is not None and fmt.sniff(text):
                return fmt.name
        raise ImportFormatError(
            f"{path}: an XML file that is neither an NCCL topology (<system>) nor GraphML"
        )
    if suffix not in DOCUMENT_SUFFIXES and not text.lstrip().startswith("{"):
        raise ImportFormatError(
            f"{path}: cannot tell the format from the suffix {suffix or '(none)'!r}; use "
            f".json/.yaml (optcoll, msccl-tools, TACCL), .xml (NCCL), .graphml, or "
            f".edgelist/.edges/.txt, or name the format ({', '.join(FORMATS)})"
        )
    data = read_document(path)
    return next(f.name for f in REGISTRY if f.claims is not None and f.claims(data))


def import_topology(
    path: str | Path,
    format: str | None = None,  # noqa: A002 - the natural name, as in the CLI
    *,
    name: str | None = None,
    **options: Any,
) -> Topology:
    """Read a topology from a file in any of :data:`FORMATS`.

    Parameters
    ----------
    path : str or Path
    format : str, optional
        One of :data:`FORMATS`; detected by :func:`detect_format` when omitted.
    name : str, optional
        Name of the topology (default: the file's, else its stem).
    **options
        The format's own options (:attr:`TopologyFormat.options`; values may
        be strings, as given on the command line): msccl-tools
        ``link_bandwidth`` (the bandwidth of one link, GB/s; without it
        bandwidths stay in unit ``"link"``); TACCL ``chunk_bytes`` (the chunk
        size the betas were measured for; bandwidths are then GB/s, else chunks
        per µs), ``boxes`` (copies of the profiled box joined by one IB switch)
        and ``box`` (which of TACCL's boxes a built-in profile describes);
        GraphML and edge lists ``bandwidth_attr`` and ``latency_attr``; edge
        lists ``directed``. ``None`` values are left out; an option the format
        does not take is an error.

    Raises
    ------
    ImportFormatError, FileFormatError, TopologyError
        With the file name and the field, row or line at fault.
    """
    path = path_argument(path)
    if format is not None:
        text_argument(format, "format")
    path = Path(path)
    if format is not None and format not in _BY_NAME:
        raise ImportFormatError(
            f"unknown format {format!r}; known formats are {', '.join(FORMATS)}"
        )
    if not exists(path):
        raise FileFormatError(f"{path}: file not found")
    if path.is_dir():
        raise FileFormatError(f"{path}: cannot read file (it is a directory)")
    fmt = _BY_NAME[detect_format(path) if format is None else format]
    taken = {k: v for k, v in options.items() if v is not None}
    try:
        for key in taken:
            if key not in fmt.options:
                takes = ", ".join(fmt.options) or "none"
                raise ImportFormatError(
                    f"the {fmt.name} reader takes no option {key!r} (its options: {takes})"
                )
        topology = fmt.read(path, name, taken)
        # a file is held to the file limits (a built topology may be larger)
        check_size(
            f"topology {topology.name!r}",
            len(topology.nodes),
            len(topology.capacity),
            ImportFormatError,
        )
        return topology
    except (ImportFormatError, TopologyError) as err:
        if str(err).startswith(f"{path}:"):
            raise
        raise type(err)(f"{path}: {err}") from None


def looks_like_path(source: str | Path) -> bool:
    """True if ``source`` reads as a file path: it has a suffix or a folder part.

    Examples
    --------
    >>> looks_like_path("topo.json"), looks_like_path("configs/topo"), looks_like_path("ring:4")
    (True, True, False)
    """
    text = str(source)
    return bool(Path(text).suffix) or "/" in text or "\\" in text


def load_topology(source: str | Path, **options: Any) -> Topology:
    """Load a topology from a file in any format, or build it from a built-in spec.

    A path that exists is read by :func:`import_topology` (``options`` go to
    it); otherwise a ``source`` whose family is registered is built as a spec
    (``dgx-a100:2``); otherwise a ``source`` that looks like a path (a suffix
    or a slash) is a missing file; anything else is an unknown built-in.

    Raises
    ------
    FileFormatError
        The file is missing or cannot be parsed.
    ImportFormatError, TopologyError
        The file breaks its format; the message starts with the file name and
        names the line, field or entry.
    TopologySpecError
        Neither a file nor a valid built-in spec.

    Examples
    --------
    >>> load_topology("mi250:1").num_compute
    16
    """
    source = path_argument(source, "source")
    path = Path(source)
    if exists(path):
        return import_topology(path, **options)
    if not topologies.is_spec(str(source)) and looks_like_path(source):
        raise FileFormatError(f"{source}: file not found")
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise ImportFormatError(
            f"{source}: reader options ({', '.join(given)}) apply to topology files, "
            "not to a built-in spec"
        )
    return topologies.build(str(source))
