"""GraphML (as written by networkx): reads a graph whose edges carry ``bandwidth``.

Node attributes ``type`` (``compute`` | ``switch``, default compute) and
``group`` are optional, edge attribute ``latency`` too. An undirected graph
stands for links in both directions. Writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import number
from optcoll.topology import Link, Node, Topology

__all__ = ["from_graphml"]


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
        bandwidth = number(attrs["bandwidth"], f"{where}: bandwidth", positive=True)
        latency = attrs.get("latency")
        if latency is not None:
            latency = number(latency, f"{where}: latency")
        links.append(Link(str(u), str(v), bandwidth, latency, not directed))
    return Topology(name, nodes, links, description="imported from a networkx graph")
