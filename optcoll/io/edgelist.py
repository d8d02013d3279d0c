"""Edge lists (text): reads one link per line. Writes nothing.

``SRC DST BANDWIDTH [LATENCY]``, or ``SRC DST bandwidth=B latency=L``, or
networkx's ``SRC DST {'bandwidth': B}`` (``nx.write_edgelist``); ``#`` starts a
comment and ``# switches: A B ...`` marks switch nodes. The options
``bandwidth_attr`` and ``latency_attr`` rename the two attributes.

Each line is one directed link, SRC to DST, unless the file says
``# bidirectional`` (or ``# undirected``) or the option ``directed=false`` is
given: then each line is a link both ways. A file that says neither is read
as directed when some pair is listed both ways (what ``nx.write_edgelist``
writes for a directed graph; reading it both ways would double every
bandwidth), and refused as ambiguous when no pair is.
"""

from __future__ import annotations

import ast
from fractions import Fraction

from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import number

__all__ = ["from_edgelist"]


def from_edgelist(
    text: str,
    *,
    name: str = "edgelist",
    directed: bool | str | None = None,
    bandwidth_attr: str = "bandwidth",
    latency_attr: str = "latency",
) -> Topology:
    """Topology from an edge list (one ``SRC DST BANDWIDTH`` link per line).

    Examples
    --------
    >>> t = from_edgelist('''# bidirectional
    ... # switches: sw
    ... a sw 25
    ... b sw bandwidth=12.5 latency=1
    ... ''')
    >>> t.switch_nodes, t.capacity[("sw", "b")], t.latency[("b", "sw")]
    (('sw',), Fraction(25, 2), Fraction(1, 1))
    """
    said: dict[str, bool] = {}
    switches: list[str] = []
    rows: list[tuple[int, str, str, Fraction, Fraction | None]] = []
    for line_number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            directive = line[1:].strip()
            if directive.lower() in _DIRECTIVES:
                said[directive.lower()] = _DIRECTIVES[directive.lower()]
            elif directive.lower().startswith("switches:"):
                switches.extend(directive.split(":", 1)[1].split())
            continue
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        rows.append((line_number, *_edge_line(line_number, line, bandwidth_attr, latency_attr)))
    if not rows:
        raise ImportFormatError("the edge list holds no links")
    seen: dict[str, None] = {}
    for _, u, v, _, _ in rows:
        seen.setdefault(u)
        seen.setdefault(v)
    for s in switches:
        if s not in seen:
            raise ImportFormatError(f"'# switches:' names {s!r}, which no link uses")
    is_directed = _direction(said, _flag(directed), {(u, v) for _, u, v, _, _ in rows})
    marked = set(switches)
    nodes = [Node(v, "switch" if v in marked else "compute") for v in seen]
    links = [Link(u, v, bw, lat, not is_directed) for _, u, v, bw, lat in rows]
    return Topology(name, nodes, links, description="imported from an edge list")


_DIRECTIVES = {"directed": True, "bidirectional": False, "undirected": False}


def _flag(value: bool | str | None) -> bool | None:
    """The option ``directed`` as a boolean (``true``/``false`` from the command line)."""
    if value is None or isinstance(value, bool):
        return value
    words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    if str(value).lower() not in words:
        raise ImportFormatError(f"option directed must be true or false, got {value!r}")
    return words[str(value).lower()]


def _direction(said: dict[str, bool], option: bool | None, pairs: set[tuple[str, str]]) -> bool:
    """Whether the lines are directed links: what the file or the option says, else the pairs."""
    if len(set(said.values())) > 1:
        raise ImportFormatError(f"the edge list says both '# {' and # '.join(said)}'")
    stated = next(iter(said.values()), None)
    if option is not None and stated is not None and option != stated:
        raise ImportFormatError(
            f"the edge list says '# {next(iter(said))}' but the option directed is {option}"
        )
    if option is not None or stated is not None:
        return option if option is not None else bool(stated)
    if any((v, u) in pairs for u, v in pairs):
        return True
    raise ImportFormatError(
        "the edge list does not say whether its links are directed and lists no pair both "
        "ways; add a line '# directed' or '# bidirectional' (or the option directed=true|false)"
    )


def _edge_line(
    line_number: int, line: str, bandwidth_attr: str, latency_attr: str
) -> tuple[str, str, Fraction, Fraction | None]:
    where = f"line {line_number}"
    if "{" in line:
        head, _, literal = line.partition("{")
        tokens = head.split()
        attrs = _attribute_dict(where, "{" + literal)
    else:
        tokens = line.replace(",", " ").split()
        attrs = {}
        rest = tokens[2:]
        tokens = tokens[:2]
        positional = []
        for token in rest:
            if "=" in token:
                key, _, value = token.partition("=")
                if key in attrs:
                    raise ImportFormatError(f"{where}: {key} is given twice")
                attrs[key] = value
            else:
                positional.append(token)
        if len(positional) > 2:
            raise ImportFormatError(
                f"{where}: expected SRC DST BANDWIDTH [LATENCY], got {len(positional) + 2} fields"
            )
        for key, value in zip((bandwidth_attr, latency_attr), positional, strict=False):
            if key in attrs:
                raise ImportFormatError(f"{where}: {key} is given twice")
            attrs[key] = value
    if len(tokens) != 2:
        raise ImportFormatError(f"{where}: expected SRC DST before the attributes, got {tokens!r}")
    unknown = sorted(set(attrs) - {bandwidth_attr, latency_attr})
    if unknown:
        raise ImportFormatError(
            f"{where}: unknown attribute {unknown[0]!r}; allowed are {bandwidth_attr!r} and "
            f"{latency_attr!r} (rename them with --bandwidth-attr / --latency-attr)"
        )
    if bandwidth_attr not in attrs:
        raise ImportFormatError(f"{where}: link {tokens[0]} {tokens[1]} has no {bandwidth_attr!r}")
    bandwidth = number(attrs[bandwidth_attr], f"{where}: {bandwidth_attr}", positive=True)
    latency = attrs.get(latency_attr)
    return (
        tokens[0],
        tokens[1],
        bandwidth,
        None if latency is None else number(latency, f"{where}: {latency_attr}"),
    )


def _attribute_dict(where: str, text: str) -> dict[str, object]:
    """networkx's attribute dictionary ``{'bandwidth': 10, ...}``: string keys, each once."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
        if not isinstance(node, ast.Dict) or any(key is None for key in node.keys):
            raise ImportFormatError(f"{where}: the attributes must be a dictionary")
        keys = [ast.literal_eval(key) for key in node.keys if key is not None]
        values = [ast.literal_eval(value) for value in node.values]
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        raise ImportFormatError(f"{where}: cannot read the attribute dictionary") from None
    attrs: dict[str, object] = {}
    for key, value in zip(keys, values, strict=True):
        if not isinstance(key, str):
            raise ImportFormatError(f"{where}: attribute name {key!r} is not a string")
        if key in attrs:
            raise ImportFormatError(f"{where}: {key} is given twice")
        attrs[key] = value
    return attrs
