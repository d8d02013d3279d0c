"""Topologies from other tools' files: msccl-tools, TACCL, GraphML, edge lists.

:func:`import_topology` reads a file in any supported format (detected from
the suffix and content, or named with ``format=``) and returns a validated
:class:`~optcoll.topology.Topology`. The formats:

``msccl``
    msccl-tools' serialised topology (``{"msccl_type": "topology", "name",
    "links", "switches"}``). ``links[dst][src]`` is the number of links from
    rank ``src`` to rank ``dst``; each becomes a link of ``link_bandwidth``
    (default 1, in the unit "link"). A ``switches`` entry ``[srcs, dsts, bw,
    name]`` caps the total traffic from ``srcs`` to ``dsts`` at ``bw`` links;
    entries with one source (an egress cap) or one destination (an ingress
    cap) become switch nodes, exactly (see :func:`from_msccl`).
``taccl``
    A TACCL topology profile in its custom form: ``gpus_per_node``, ``alpha``
    and ``links`` / ``betas`` matrices indexed ``[dst][src]``, optionally
    ``nics_per_node``, ``remote_alpha`` and ``remote_beta``. A beta is the
    time (µs) one chunk takes on one link, so a link carries ``chunk_bytes /
    beta`` (GB/s when ``chunk_bytes`` is given, else chunks per µs); alphas
    become link latencies.
``graphml``
    GraphML (as written by networkx): every edge needs a ``bandwidth``
    attribute; node attributes ``type`` (``compute`` | ``switch``, default
    compute) and ``group`` are optional, edge attribute ``latency`` too. An
    undirected graph stands for links in both directions.
``edgelist``
    Text, one link per line: ``SRC DST BANDWIDTH [LATENCY]``, or
    ``SRC DST bandwidth=B latency=L``, or networkx's ``SRC DST {'bandwidth': B}``;
    ``#`` starts a comment. Links go both ways unless a line ``# directed``
    appears; ``# switches: A B ...`` marks switch nodes.
``optcoll``
    optcoll's own JSON/YAML topology file.

Every malformed file raises :class:`~optcoll.exceptions.ImportFormatError`
(or a :class:`~optcoll.exceptions.TopologyError` from validation) whose
message starts with the file name and names the field, row or line at fault.

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

import ast
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from optcoll.exceptions import FileFormatError, ImportFormatError, TopologyError
from optcoll.topology import Link, Node, Topology, exact_number

__all__ = [
    "FORMATS",
    "detect_format",
    "is_foreign",
    "import_topology",
    "from_msccl",
    "from_taccl",
    "from_graphml",
    "from_edgelist",
]

#: Formats :func:`import_topology` reads.
FORMATS = ("optcoll", "msccl", "taccl", "graphml", "edgelist")

_GRAPHML_SUFFIXES = {".graphml"}
_EDGELIST_SUFFIXES = {".edgelist", ".edges", ".txt", ".tsv"}
_DOCUMENT_SUFFIXES = {".json", ".yaml", ".yml"}


def detect_format(path: str | Path) -> str:
    """The format of the file at ``path``: one of :data:`FORMATS`.

    GraphML and edge lists are recognised by suffix (``.graphml``;
    ``.edgelist``, ``.edges``, ``.txt``, ``.tsv``); a JSON/YAML document is
    msccl-tools' when it has ``msccl_type`` or a ``links`` matrix, TACCL's when
    it has ``gpus_per_node``, and optcoll's otherwise.

    Raises
    ------
    ImportFormatError
        The suffix is none of the above.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _GRAPHML_SUFFIXES:
        return "graphml"
    if suffix in _EDGELIST_SUFFIXES:
        return "edgelist"
    if suffix not in _DOCUMENT_SUFFIXES:
        raise ImportFormatError(
            f"{path}: cannot tell the format from the suffix {suffix or '(none)'!r}; use "
            f".json/.yaml (optcoll, msccl-tools, TACCL), .graphml, or .edgelist/.edges/.txt, "
            f"or name the format ({', '.join(FORMATS)})"
        )
    return _document_format(_read(path))


def is_foreign(path: str | Path) -> bool:
    """True if ``path`` is an existing file in another tool's format (msccl-tools,
    TACCL, GraphML, edge list), i.e. one :func:`optcoll.io.load_topology` should
    hand to :func:`import_topology`. Never raises: anything else is False.

    Examples
    --------
    >>> is_foreign("dgx-a100:2"), is_foreign("no-such-file.graphml")
    (False, False)
    """
    path = Path(path)
    if not path.is_file():
        return False
    suffix = path.suffix.lower()
    if suffix in _GRAPHML_SUFFIXES | _EDGELIST_SUFFIXES:
        return True
    if suffix not in _DOCUMENT_SUFFIXES:
        return False
    try:
        return _document_format(_read(path)) != "optcoll"
    except FileFormatError:
        return False


def _document_format(data: Any) -> str:
    if isinstance(data, Mapping):
        if "msccl_type" in data:
            return "msccl"
        if "gpus_per_node" in data:
            return "taccl"
        links = data.get("links")
        if isinstance(links, list) and links and all(isinstance(row, list) for row in links):
            return "msccl"
    return "optcoll"


def _read(path: Path) -> Any:
    from optcoll.io import read_document

    return read_document(path)


def import_topology(
    path: str | Path,
    format: str | None = None,  # noqa: A002 - the natural name, as in the CLI
    *,
    link_bandwidth: Any = None,
    chunk_bytes: Any = None,
    boxes: int = 1,
    name: str | None = None,
) -> Topology:
    """Read a topology from a file in any of :data:`FORMATS`.

    Parameters
    ----------
    path : str or Path
    format : str, optional
        One of :data:`FORMATS`; detected by :func:`detect_format` when omitted.
    link_bandwidth : number, optional
        msccl-tools only: the bandwidth of one link (GB/s). Without it
        bandwidths stay in links (unit ``"link"``).
    chunk_bytes : number, optional
        TACCL only: the chunk size the profile's betas were measured for;
        bandwidths are then in GB/s, else in chunks per µs.
    boxes : int
        TACCL only: number of copies of the profiled box (joined by one IB switch).
    name : str, optional
        Name of the topology (default: the file's, else its stem).

    Raises
    ------
    ImportFormatError, FileFormatError, TopologyError
        With the file name and the field, row or line at fault.
    """
    path = Path(path)
    if format is not None and format not in FORMATS:
        raise ImportFormatError(
            f"unknown format {format!r}; known formats are {', '.join(FORMATS)}"
        )
    if not path.is_file():
        raise FileFormatError(f"{path}: file not found")
    fmt = detect_format(path) if format is None else format
    try:
        if fmt == "graphml":
            return from_graphml(path, name=name)
        if fmt == "edgelist":
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise ImportFormatError("not a UTF-8 text file") from None
            return from_edgelist(text, name=name or path.stem)
        if fmt == "optcoll":
            return _native(path, name)
        data = _read(path)
        if fmt == "msccl":
            return from_msccl(data, name=name, link_bandwidth=link_bandwidth)
        return from_taccl(data, name=name, chunk_bytes=chunk_bytes, boxes=boxes)
    except (ImportFormatError, TopologyError) as err:
        if str(err).startswith(f"{path}:"):
            raise
        raise type(err)(f"{path}: {err}") from None


def _native(path: Path, name: str | None) -> Topology:
    """An optcoll file through :func:`optcoll.io.load_topology` (errors with line numbers)."""
    from optcoll.io import load_topology

    topology = load_topology(path)
    if name is None:
        return topology
    return Topology.from_dict({**topology.to_dict(), "name": name})


# --- shared checks --------------------------------------------------------------------


def _field(data: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in data:
        raise ImportFormatError(f"{what} is missing the required field {key!r}")
    return data[key]


def _number(value: Any, where: str, *, positive: bool = False) -> Fraction:
    try:
        if isinstance(value, str):
            number = Fraction(value.strip())
        else:
            number = exact_number(value, where)
    except (ValueError, ZeroDivisionError):
        raise ImportFormatError(f"{where} must be a number, got {value!r}") from None
    if number < 0 or (positive and number == 0):
        raise ImportFormatError(
            f"{where} must be {'positive' if positive else 'non-negative'}, got {value!r}"
        )
    return number


def _matrix(data: Mapping[str, Any], key: str, size: int | None, what: str) -> list[list[Fraction]]:
    rows = _field(data, key, what)
    if not isinstance(rows, list) or not rows:
        raise ImportFormatError(f"field {key!r} must be a non-empty list of rows")
    size = len(rows) if size is None else size
    if len(rows) != size:
        raise ImportFormatError(f"field {key!r} has {len(rows)} rows; expected {size}")
    matrix = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != size:
            got = len(row) if isinstance(row, list) else type(row).__name__
            raise ImportFormatError(f"{key}[{i}] must be a list of {size} numbers, got {got}")
        matrix.append([_number(x, f"{key}[{i}][{j}]") for j, x in enumerate(row)])
    return matrix


# --- msccl-tools ------------------------------------------------------------------


def from_msccl(data: Any, *, name: str | None = None, link_bandwidth: Any = None) -> Topology:
    """Topology from msccl-tools' serialised topology dictionary.

    Compute nodes are ``gpu0 .. gpu{n-1}`` (the ranks). Without switches,
    ``links[dst][src]`` links of ``link_bandwidth`` each join ``src`` to
    ``dst``. The ``switches`` entries are grouped: entries that cap a common
    (src, dst) pair form one switch node ``W``; a source with an egress cap
    ``b`` gets the link ``src -> W`` of bandwidth ``b`` (without one, the sum of
    its direct links into the group), likewise ``W -> dst``, and the group's
    direct links are replaced by ``W``. This is exact when every pair of
    the group is linked and no direct link is narrower than what ``W`` lets
    through; otherwise (and for entries with several sources *and* several
    destinations) an :class:`ImportFormatError` says which entry cannot be
    expressed.

    Examples
    --------
    >>> n = 3  # msccl-tools' HubAndSpoke(3): all linked, 1 link out and in per rank
    >>> links = [[0 if i == j else 1 for j in range(n)] for i in range(n)]
    >>> others = lambda r: [o for o in range(n) if o != r]
    >>> switches = [e for r in range(n) for e in ([[r], others(r), 1, f"node_{r}_out"],
    ...                                            [others(r), [r], 1, f"node_{r}_in"])]
    >>> t = from_msccl({"msccl_type": "topology", "name": "HubAndSpoke(n=3)",
    ...                 "links": links, "switches": switches})
    >>> t.switch_nodes, t.capacity[("gpu0", "switch0")], ("gpu0", "gpu1") in t.capacity
    (('switch0',), Fraction(1, 1), False)
    """
    if not isinstance(data, Mapping):
        raise ImportFormatError(
            f"an msccl-tools topology must be a JSON object, got {type(data).__name__}"
        )
    if data.get("msccl_type", "topology") != "topology":
        raise ImportFormatError(
            f"field 'msccl_type' is {data['msccl_type']!r}; only 'topology' objects hold a topology"
        )
    links = _matrix(data, "links", None, "the msccl-tools topology")
    n = len(links)
    unit_bandwidth = (
        Fraction(1)
        if link_bandwidth is None
        else _number(link_bandwidth, "link_bandwidth", positive=True)
    )
    ranks = [f"gpu{i}" for i in range(n)]
    direct = {
        (s, d): links[d][s] * unit_bandwidth
        for d in range(n)
        for s in range(n)
        if s != d and links[d][s] > 0
    }
    for i in range(n):
        if links[i][i] != 0:
            raise ImportFormatError(f"links[{i}][{i}] links rank {i} to itself; it must be 0")
    switches = data.get("switches", [])
    if not isinstance(switches, list):
        raise ImportFormatError("field 'switches' must be a list of [srcs, dsts, bw, name] entries")
    entries = [_msccl_switch(i, e, n, unit_bandwidth) for i, e in enumerate(switches)]
    nodes = [Node(r) for r in ranks]
    arcs: dict[tuple[str, str], Fraction] = {}
    covered: set[tuple[int, int]] = set()
    for index, group in enumerate(_switch_groups(entries, direct)):
        label = group[0][3] if len(group) == 1 else f"switch{index}"
        ingress, egress, pairs = _switch_caps(group, direct)
        covered |= pairs
        switch = label if label not in ranks else f"switch{index}"
        nodes.append(Node(switch, "switch"))
        for s, cap in ingress.items():
            arcs[(ranks[s], switch)] = cap
        for d, cap in egress.items():
            arcs[(switch, ranks[d])] = cap
    for (s, d), bw in direct.items():
        if (s, d) not in covered:
            arcs[(ranks[s], ranks[d])] = bw
    title = name or str(data.get("name", "msccl-topology"))
    return Topology(
        title,
        nodes,
        [Link(u, v, bw) for (u, v), bw in arcs.items()],
        bandwidth_unit="link" if link_bandwidth is None else "GB/s",
        description=f"imported from msccl-tools topology {data.get('name', '')!r}".strip(),
    )


_Entry = tuple[tuple[int, ...], tuple[int, ...], Fraction, str]


def _msccl_switch(index: int, entry: Any, n: int, unit_bandwidth: Fraction) -> _Entry:
    where = f"switches[{index}]"
    if not isinstance(entry, list | tuple) or len(entry) != 4:
        raise ImportFormatError(f"{where} must be [srcs, dsts, bandwidth, name], got {entry!r}")
    srcs, dsts, bw, label = entry
    for key, ranks in (("srcs", srcs), ("dsts", dsts)):
        if not isinstance(ranks, list) or not ranks:
            raise ImportFormatError(f"{where}: {key} must be a non-empty list of ranks")
        for r in ranks:
            if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < n:
                raise ImportFormatError(f"{where}: {key} holds {r!r}, not a rank in 0..{n - 1}")
    if len(srcs) > 1 and len(dsts) > 1:
        raise ImportFormatError(
            f"{where} ({label!r}) caps {len(srcs)} sources and {len(dsts)} destinations "
            "together; optcoll imports per-rank caps only (one source or one destination "
            "per entry)"
        )
    return (
        tuple(srcs),
        tuple(dsts),
        _number(bw, f"{where} bandwidth", positive=True) * (unit_bandwidth),
        str(label),
    )


def _switch_groups(
    entries: list[_Entry], direct: Mapping[tuple[int, int], Fraction]
) -> list[list[_Entry]]:
    """Entries joined when they cap a common linked (src, dst) pair (union-find)."""
    parent = list(range(len(entries)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[int, int], int] = {}
    for i, (srcs, dsts, _, _) in enumerate(entries):
        for s in srcs:
            for d in dsts:
                if s != d and (s, d) in direct:
                    if (s, d) in owner:
                        parent[root(i)] = root(owner[(s, d)])
                    else:
                        owner[(s, d)] = i
    groups: dict[int, list[_Entry]] = {}
    for i, entry in enumerate(entries):
        groups.setdefault(root(i), []).append(entry)
    return list(groups.values())


def _switch_caps(
    group: list[_Entry], direct: Mapping[tuple[int, int], Fraction]
) -> tuple[dict[int, Fraction], dict[int, Fraction], set[tuple[int, int]]]:
    names = ", ".join(repr(e[3]) for e in group[:3]) + (" ..." if len(group) > 3 else "")
    pairs = {(s, d) for srcs, dsts, _, _ in group for s in srcs for d in dsts if s != d}
    for s, d in sorted(pairs):
        if (s, d) not in direct:
            raise ImportFormatError(
                f"switch entries {names} cap rank {s} -> rank {d}, which has no link; "
                "optcoll cannot add a route that msccl-tools does not have"
            )
    sources = sorted({s for s, _ in pairs})
    targets = sorted({d for _, d in pairs})
    for s in sources:
        for d in targets:
            if s != d and (s, d) not in pairs:
                raise ImportFormatError(
                    f"switch entries {names} cap some pairs from rank {s} and some into rank "
                    f"{d} but not rank {s} -> rank {d}; one switch node cannot express that"
                )
    out_cap: dict[int, Fraction] = {}
    in_cap: dict[int, Fraction] = {}
    for srcs, dsts, bw, label in group:
        side, key = (out_cap, srcs[0]) if len(srcs) == 1 else (in_cap, dsts[0])
        if key in side:
            raise ImportFormatError(
                f"rank {key} has two {'egress' if side is out_cap else 'ingress'} caps in "
                f"switch entries {names} (one is {label!r}); merge them into one entry"
            )
        side[key] = bw
    ingress = {
        s: out_cap.get(s, sum((direct[p] for p in pairs if p[0] == s), Fraction(0)))
        for s in sources
    }
    egress = {
        d: in_cap.get(d, sum((direct[p] for p in pairs if p[1] == d), Fraction(0))) for d in targets
    }
    for s, d in sorted(pairs):
        if direct[(s, d)] < min(ingress[s], egress[d]):
            raise ImportFormatError(
                f"the link rank {s} -> rank {d} ({direct[(s, d)]} link units) is narrower than "
                f"what switch entries {names} let through ({min(ingress[s], egress[d])}); "
                "optcoll cannot express both caps"
            )
    return ingress, egress, pairs


# --- TACCL ------------------------------------------------------------------------


def from_taccl(
    data: Any, *, name: str | None = None, chunk_bytes: Any = None, boxes: int = 1
) -> Topology:
    """Topology from a TACCL topology profile (its custom form, with matrices).

    ``links[dst][src]`` parallel links of bandwidth ``chunk / betas[dst][src]``
    join GPU ``src`` to ``dst`` within a box, with latency ``alpha`` µs. With
    ``boxes > 1`` the profile needs ``nics_per_node`` and ``remote_beta``: each
    box gets that many NIC switches (GPUs shared among them in order), each
    GPU–NIC and NIC–IB link carrying ``chunk / remote_beta`` with latency
    ``remote_alpha``, and all NICs join one IB switch ``ib``. (TACCL takes the
    inter-box wiring from its sketch file, which this importer does not read.)

    Examples
    --------
    >>> profile = {"name": "pair", "gpus_per_node": 2, "alpha": 0.7,
    ...            "links": [[0, 1], [1, 0]], "betas": [[0, 40], [40, 0]]}
    >>> t = from_taccl(profile, chunk_bytes=10**6)  # 1 MB in 40 us: 25 GB/s
    >>> t.capacity[("b0.gpu0", "b0.gpu1")], t.latency[("b0.gpu0", "b0.gpu1")]
    (Fraction(25, 1), Fraction(7, 10))
    """
    if not isinstance(data, Mapping):
        raise ImportFormatError(f"a TACCL profile must be a JSON object, got {type(data).__name__}")
    what = "the TACCL profile"
    gpus = _field(data, "gpus_per_node", what)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 2:
        raise ImportFormatError(f"field 'gpus_per_node' must be an integer >= 2, got {gpus!r}")
    if "links" not in data:
        raise ImportFormatError(
            "the TACCL profile has no 'links' matrix: it is a profile for one of TACCL's "
            "built-in boxes (NDv2, DGX2), whose wiring is not in the file; use optcoll's "
            "built-in topologies for those, or add 'links' and 'betas' (TACCL's custom form)"
        )
    links = _matrix(data, "links", gpus, what)
    betas = _matrix(data, "betas", gpus, what)
    alpha = _number(_field(data, "alpha", what), "field 'alpha'")
    if isinstance(boxes, bool) or not isinstance(boxes, int) or boxes < 1:
        raise ImportFormatError(f"boxes must be a positive integer, got {boxes!r}")
    chunk = (
        Fraction(1)
        if chunk_bytes is None
        else _number(chunk_bytes, "chunk_bytes", positive=True) / 1000
    )  # bytes per µs -> GB/s
    nodes: list[Node] = []
    result: list[Link] = []
    for b in range(boxes):
        for g in range(gpus):
            nodes.append(Node(f"b{b}.gpu{g}", "compute", f"box{b}"))
        for d in range(gpus):
            for s in range(gpus):
                if s == d or links[d][s] == 0:
                    continue
                if betas[d][s] == 0:
                    raise ImportFormatError(
                        f"betas[{d}][{s}] is 0 but links[{d}][{s}] is {links[d][s]}: a linked "
                        "pair needs a positive beta"
                    )
                bandwidth = links[d][s] * chunk / betas[d][s]
                result.append(Link(f"b{b}.gpu{s}", f"b{b}.gpu{d}", bandwidth, alpha))
    if boxes > 1:
        nics = _field(data, "nics_per_node", f"{what} (needed for boxes > 1)")
        if isinstance(nics, bool) or not isinstance(nics, int) or not 1 <= nics <= gpus:
            raise ImportFormatError(
                f"field 'nics_per_node' must be an integer in 1..{gpus}, got {nics!r}"
            )
        remote = chunk / _number(
            _field(data, "remote_beta", what), "field 'remote_beta'", positive=True
        )
        remote_alpha = _number(data.get("remote_alpha", 0), "field 'remote_alpha'")
        nodes.append(Node("ib", "switch"))
        for b in range(boxes):
            for j in range(nics):
                nodes.append(Node(f"b{b}.nic{j}", "switch", f"box{b}"))
                result.append(Link(f"b{b}.nic{j}", "ib", remote, remote_alpha, True))
            for g in range(gpus):
                nic = f"b{b}.nic{g * nics // gpus}"
                result.append(Link(f"b{b}.gpu{g}", nic, remote, remote_alpha, True))
    title = name or f"taccl-{data.get('name', 'profile')}" + (f":{boxes}" if boxes > 1 else "")
    return Topology(
        title,
        nodes,
        result,
        bandwidth_unit="GB/s" if chunk_bytes is not None else "chunk/us",
        description=f"imported from TACCL profile {data.get('name', '')!r}",
    )


# --- networkx GraphML and edge lists ------------------------------------------------------


def from_graphml(path: str | Path, *, name: str | None = None) -> Topology:
    """Topology from a GraphML file whose edges carry a ``bandwidth`` attribute.

    Examples
    --------
    >>> import networkx as nx, pathlib, tempfile
    >>> g = nx.Graph()
    >>> g.add_node("sw", type="switch")
    >>> g.add_edge("a", "sw", bandwidth=25.0)
    >>> g.add_edge("b", "sw", bandwidth=12.5)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "star.graphml"
    >>> nx.write_graphml(g, path)
    >>> t = from_graphml(path)
    >>> t.compute_nodes, t.capacity[("sw", "b")]
    (('a', 'b'), Fraction(25, 2))
    """
    import xml.etree.ElementTree as ElementTree

    import networkx as nx

    path = Path(path)
    try:
        graph = nx.read_graphml(path)
    except (ElementTree.ParseError, nx.NetworkXError, ValueError, KeyError) as err:
        raise ImportFormatError(f"{path}: not a readable GraphML file ({err})") from None
    return _from_networkx(graph, name or graph.graph.get("name") or path.stem)


def _from_networkx(graph: Any, name: str) -> Topology:
    nodes = []
    for v, attrs in graph.nodes(data=True):
        kind = attrs.get("type", "compute")
        group = attrs.get("group")
        nodes.append(Node(str(v), str(kind), None if group is None else str(group)))
    links = []
    directed = graph.is_directed()
    for u, v, attrs in graph.edges(data=True):
        where = f"edge {u} -> {v}" if directed else f"edge {u} -- {v}"
        if "bandwidth" not in attrs:
            raise ImportFormatError(f"{where} has no 'bandwidth' attribute")
        bandwidth = _number(attrs["bandwidth"], f"{where}: bandwidth", positive=True)
        latency = attrs.get("latency")
        if latency is not None:
            latency = _number(latency, f"{where}: latency")
        links.append(Link(str(u), str(v), bandwidth, latency, not directed))
    return Topology(name, nodes, links, description="imported from a networkx graph")


def from_edgelist(text: str, *, name: str = "edgelist") -> Topology:
    """Topology from an edge list (one ``SRC DST BANDWIDTH`` link per line).

    Examples
    --------
    >>> t = from_edgelist('''# switches: sw
    ... a sw 25
    ... b sw bandwidth=12.5 latency=1
    ... ''')
    >>> t.switch_nodes, t.capacity[("sw", "b")], t.latency[("b", "sw")]
    (('sw',), Fraction(25, 2), Fraction(1, 1))
    """
    directed = False
    switches: list[str] = []
    rows: list[tuple[int, str, str, Fraction, Fraction | None]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            directive = line[1:].strip()
            if directive.lower() == "directed":
                directed = True
            elif directive.lower().startswith("switches:"):
                switches.extend(directive.split(":", 1)[1].split())
            continue
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        rows.append((number, *_edge_line(number, line)))
    if not rows:
        raise ImportFormatError("the edge list holds no links")
    seen: dict[str, None] = {}
    for _, u, v, _, _ in rows:
        seen.setdefault(u)
        seen.setdefault(v)
    for s in switches:
        if s not in seen:
            raise ImportFormatError(f"'# switches:' names {s!r}, which no link uses")
    marked = set(switches)
    nodes = [Node(v, "switch" if v in marked else "compute") for v in seen]
    links = [Link(u, v, bw, lat, not directed) for _, u, v, bw, lat in rows]
    return Topology(name, nodes, links, description="imported from an edge list")


def _edge_line(number: int, line: str) -> tuple[str, str, Fraction, Fraction | None]:
    where = f"line {number}"
    if "{" in line:
        head, _, literal = line.partition("{")
        tokens = head.split()
        try:
            attrs = ast.literal_eval("{" + literal)
        except (ValueError, SyntaxError):
            raise ImportFormatError(f"{where}: cannot read the attribute dictionary") from None
        if not isinstance(attrs, dict):
            raise ImportFormatError(f"{where}: the attributes must be a dictionary")
    else:
        tokens = line.replace(",", " ").split()
        attrs = {}
        rest = tokens[2:]
        tokens = tokens[:2]
        positional = []
        for token in rest:
            if "=" in token:
                key, _, value = token.partition("=")
                attrs[key] = value
            else:
                positional.append(token)
        if len(positional) > 2:
            raise ImportFormatError(
                f"{where}: expected SRC DST BANDWIDTH [LATENCY], got {len(positional) + 2} fields"
            )
        for key, value in zip(("bandwidth", "latency"), positional, strict=False):
            if key in attrs:
                raise ImportFormatError(f"{where}: {key} is given twice")
            attrs[key] = value
    if len(tokens) != 2:
        raise ImportFormatError(f"{where}: expected SRC DST before the attributes, got {tokens!r}")
    unknown = sorted(set(attrs) - {"bandwidth", "latency"})
    if unknown:
        raise ImportFormatError(
            f"{where}: unknown attribute {unknown[0]!r}; allowed are 'bandwidth' and 'latency'"
        )
    if "bandwidth" not in attrs:
        raise ImportFormatError(f"{where}: link {tokens[0]} {tokens[1]} has no bandwidth")
    bandwidth = _number(attrs["bandwidth"], f"{where}: bandwidth", positive=True)
    latency = attrs.get("latency")
    return (
        tokens[0],
        tokens[1],
        bandwidth,
        None if latency is None else _number(latency, f"{where}: latency"),
    )
