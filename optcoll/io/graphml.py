"""GraphML (as written by networkx, Topology Zoo, ...): reads it. Writes nothing.

Every edge carries its bandwidth in the attribute ``bandwidth`` (or the one
named by the option ``bandwidth_attr``, e.g. ``capacity`` or Topology Zoo's
``LinkSpeedRaw``); its latency (µs) is the attribute ``latency_attr`` if given,
else ``latency``, else ``delay``, else none. Node attributes ``type``
(``compute`` | ``switch``, default compute), ``group`` and, on switches, the
booleans ``reduce`` and ``multicast`` (in-network reduction and multicast, e.g.
NVLS or SHARP; default false) are optional. The
file says whether it is directed (``edgedefault``): an undirected graph stands
for links in both directions, a directed one for exactly the links listed
(parallel edges add their bandwidths).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optcoll.core.limits import check_nesting
from optcoll.core.topology import Topology
from optcoll.exceptions import ImportFormatError
from optcoll.io.document import read_text

__all__ = ["from_graphml", "from_networkx"]


def from_graphml(
    path: str | Path,
    *,
    name: str | None = None,
    bandwidth_attr: str = "bandwidth",
    latency_attr: str | None = None,
) -> Topology:
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
    >>> t.compute_nodes, t.capacity[("sw", "b")], t.reducing_switches
    (('a', 'b'), Fraction(25, 2), ())
    """
    import xml.etree.ElementTree as ElementTree

    import networkx as nx

    path = Path(path)
    try:
        root = ElementTree.fromstring(read_text(path))
        check_nesting(root, str(path), ImportFormatError)
        nested = root.find(".//{*}node/{*}graph")
        if nested is not None:
            raise ImportFormatError(
                f"{path}: a <node> holds a nested <graph> (id {nested.get('id')!r}); nested "
                "graphs are not read (their nodes would be lost): flatten the graph"
            )
        graphs = root.findall("{*}graph")
        if len(graphs) > 1:
            raise ImportFormatError(
                f"{path}: {len(graphs)} top-level <graph> elements; only the first would be "
                "read (the others' nodes would be lost): put the topology in one graph"
            )
        if root.find(".//{*}hyperedge") is not None:
            raise ImportFormatError(f"{path}: a <hyperedge> is no link between two nodes")
        declared = {node.get("id") for node in root.iter() if _local(node.tag) == "node"}
        for edge in root.iter():
            if _local(edge.tag) != "edge":
                continue
            for end in ("source", "target"):
                if edge.get(end) not in declared:
                    raise ImportFormatError(
                        f"{path}: <edge> {end}={edge.get(end)!r} is not a declared <node>"
                    )
        graph = nx.read_graphml(path)
    except (ElementTree.ParseError, nx.NetworkXError, ValueError, KeyError, TypeError) as err:
        raise ImportFormatError(f"{path}: not a readable GraphML file ({err})") from None
    return from_networkx(
        graph,
        name or graph.graph.get("name") or path.stem,
        bandwidth=bandwidth_attr,
        latency=latency_attr,
    )


def _local(tag: str) -> str:
    """An element's tag without its namespace."""
    return tag.rsplit("}", 1)[-1]


def from_networkx(
    graph: Any,
    name: str | None = None,
    *,
    bandwidth: str = "bandwidth",
    latency: str | None = None,
) -> Topology:
    """A topology from a networkx graph: :meth:`Topology.from_networkx
    <optcoll.core.topology.Topology.from_networkx>` (its rules for attributes and node ids).

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.cycle_graph(4)
    >>> nx.set_edge_attributes(g, 25, "bandwidth")
    >>> from_networkx(g, "ring").compute_nodes
    ('0', '1', '2', '3')
    >>> g = nx.Graph()
    >>> g.add_node("sw", type="switch", reduce=True, multicast="true")
    >>> g.add_edge("a", "sw", bandwidth=1); g.add_edge("b", "sw", bandwidth=1)
    >>> from_networkx(g, "sharp").multicast_switches
    ('sw',)
    """
    return Topology.from_networkx(graph, name, bandwidth=bandwidth, latency=latency)
