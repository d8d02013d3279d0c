"""msccl-tools' serialised topology (JSON): reads ``{"msccl_type": "topology", ...}``.

``links[dst][src]`` is the number of links from rank ``src`` to rank ``dst``;
each becomes a link of ``link_bandwidth`` (default 1, in the unit "link"). A
``switches`` entry ``[srcs, dsts, bw, name]`` caps the total traffic from
``srcs`` to ``dsts`` at ``bw`` links; entries with one source (an egress cap)
or one destination (an ingress cap) become switch nodes, exactly (see
:func:`from_msccl`). Writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import matrix, number
from optcoll.topology import Link, Node, Topology

__all__ = ["from_msccl", "is_msccl"]


def is_msccl(data: Any) -> bool:
    """True for a parsed document in msccl-tools' form (``msccl_type`` or a ``links`` matrix).

    Examples
    --------
    >>> is_msccl({"links": [[0, 1], [1, 0]]}), is_msccl({"links": [{"src": "a"}]})
    (True, False)
    """
    if not isinstance(data, Mapping):
        return False
    if "msccl_type" in data:
        return True
    links = data.get("links")
    return isinstance(links, list) and bool(links) and all(isinstance(r, list) for r in links)


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
    links = matrix(data, "links", None, "the msccl-tools topology")
    n = len(links)
    unit_bandwidth = (
        Fraction(1)
        if link_bandwidth is None
        else number(link_bandwidth, "link_bandwidth", positive=True)
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
        number(bw, f"{where} bandwidth", positive=True) * (unit_bandwidth),
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
