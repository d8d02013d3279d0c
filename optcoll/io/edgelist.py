"""Edge lists (text): reads one link per line.

``SRC DST BANDWIDTH [LATENCY]``, or ``SRC DST bandwidth=B latency=L``, or
networkx's ``SRC DST {'bandwidth': B}``; ``#`` starts a comment. Links go both
ways unless a line ``# directed`` appears; ``# switches: A B ...`` marks
switch nodes. Writes nothing.
"""

from __future__ import annotations

import ast
from fractions import Fraction

from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import number
from optcoll.topology import Link, Node, Topology

__all__ = ["from_edgelist"]


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
    for line_number, raw in enumerate(text.splitlines(), start=1):
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
        rows.append((line_number, *_edge_line(line_number, line)))
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


def _edge_line(line_number: int, line: str) -> tuple[str, str, Fraction, Fraction | None]:
    where = f"line {line_number}"
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
    bandwidth = number(attrs["bandwidth"], f"{where}: bandwidth", positive=True)
    latency = attrs.get("latency")
    return (
        tokens[0],
        tokens[1],
        bandwidth,
        None if latency is None else number(latency, f"{where}: latency"),
    )
