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

from optcoll.core.topology import SWITCH_CAPABILITIES, Link, Node, Topology
from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import number

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
        graph = nx.read_graphml(path)
    except (ElementTree.ParseError, nx.NetworkXError, ValueError, KeyError) as err:
        raise ImportFormatError(f"{path}: not a readable GraphML file ({err})") from None
    return from_networkx(
        graph,
        name or graph.graph.get("name") or path.stem,
        bandwidth_attr=bandwidth_attr,
        latency_attr=latency_attr,
    )


def from_networkx(
    graph: Any, name: str, *, bandwidth_attr: str = "bandwidth", latency_attr: str | None = None
) -> Topology:
    """Topology from a networkx graph (directed: the arcs; undirected: both ways).

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.DiGraph()
    >>> g.add_edge("a", "b", capacity=10, delay=2)
    >>> g.add_edge("b", "a", capacity=5)
    >>> t = from_networkx(g, "pair", bandwidth_attr="capacity")
    >>> t.capacity[("a", "b")], t.capacity[("b", "a")], t.latency[("a", "b")]
    (Fraction(10, 1), Fraction(5, 1), Fraction(2, 1))
    >>> g = nx.Graph()
    >>> g.add_node("sw", type="switch", reduce=True, multicast="true")
    >>> g.add_edge("a", "sw", bandwidth=1); g.add_edge("b", "sw", bandwidth=1)
    >>> from_networkx(g, "sharp").multicast_switches
    ('sw',)
    """
    nodes = []
    for v, attrs in graph.nodes(data=True):
        kind = attrs.get("type", "compute")
        group = attrs.get("group")
        flags = {
            flag: _flag(attrs.get(flag, False), f"node {v}: {flag}") for flag in SWITCH_CAPABILITIES
        }
        nodes.append(Node(str(v), str(kind), None if group is None else str(group), **flags))
    links = []
    directed = graph.is_directed()
    for u, v, attrs in graph.edges(data=True):
        where = f"edge {u} -> {v}" if directed else f"edge {u} -- {v}"
        if bandwidth_attr not in attrs:
            known = ", ".join(sorted(map(str, attrs))) or "none"
            raise ImportFormatError(
                f"{where} has no {bandwidth_attr!r} attribute (it has: {known}); name the "
                "bandwidth attribute with the option bandwidth_attr (--bandwidth-attr NAME)"
            )
        bandwidth = number(attrs[bandwidth_attr], f"{where}: {bandwidth_attr}", positive=True)
        key = latency_attr or next((k for k in ("latency", "delay") if k in attrs), None)
        latency = None
        if key is not None:
            if key not in attrs:
                raise ImportFormatError(f"{where} has no {key!r} attribute (--latency-attr)")
            latency = number(attrs[key], f"{where}: {key}")
        links.append(Link(str(u), str(v), bandwidth, latency, not directed))
    return Topology(name, nodes, links, description="imported from a networkx graph")


def _flag(value: Any, where: str) -> bool:
    """A GraphML boolean: ``True``/``False`` or the strings ``true``/``false``/``1``/``0``."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ImportFormatError(f"{where} must be true or false, got {value!r}")
