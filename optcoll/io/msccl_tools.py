"""msccl-tools' serialised topology (JSON): reads ``{"msccl_type": "topology", ...}`` and
the topology inside an algorithm file of ``msccl solve`` (``{"msccl_type": "algorithm",
..., "topology": {...}}``, ``msccl/serialization.py``).

``links[dst][src]`` is the number of links from rank ``src`` to rank ``dst``;
each becomes a link of ``link_bandwidth`` (default 1, in the unit "link"). A
``switches`` entry ``[srcs, dsts, bw, name]`` caps the total traffic from
``srcs`` to ``dsts`` at ``bw`` links; entries with one source (an egress cap)
or one destination (an ingress cap) become switch nodes, and so do the per-copy
caps of ``DistributedHubAndSpoke`` (a block of ranks to every other rank, and
back), exactly (see :func:`from_msccl`). Writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import matrix, number

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
    """Topology from msccl-tools' serialised topology dictionary (or an algorithm's).

    Compute nodes are ``gpu0 .. gpu{n-1}`` (the ranks). Without switches,
    ``links[dst][src]`` links of ``link_bandwidth`` each join ``src`` to
    ``dst``. The ``switches`` entries are grouped: entries that cap a common
    (src, dst) pair form one switch node ``W``; a source with an egress cap
    ``b`` gets the link ``src -> W`` of bandwidth ``b`` (without one, the sum of
    its direct links into the group), likewise ``W -> dst``, and the group's
    direct links are replaced by ``W``. This is exact when every pair of
    the group is linked and no direct link is narrower than what ``W`` lets
    through; otherwise an :class:`ImportFormatError` says which entry cannot be
    expressed.

    Entries with several sources *and* several destinations are read when they
    cap whole blocks, as ``DistributedHubAndSpoke`` writes them: the ranks they
    name fall into blocks (ranks named by the same entries), and each entry
    caps one block to all other blocks (``O_a``) or all other blocks to one
    (``I_b``). Block ``a`` then gets switches ``block{a}.out -> block{a}.up``
    (one link: ``O_a``) and ``block{a}.down -> block{a}.in`` (``I_a``); its ranks
    link to ``block{a}.out`` and from ``block{a}.in``, and ``block{a}.up ->
    block{b}.down`` carries ``min(O_a, I_b)``, replacing the direct links
    between the blocks. That is exact when every such pair of ranks is linked
    at least that wide (the caps then imply the per-link limits); a missing cap
    reads as the sum of the links it would cover.

    An algorithm object (``msccl_type`` ``algorithm``) is read through its
    ``topology`` field, named after the algorithm.

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
    kind = data.get("msccl_type", "topology")
    if kind == "algorithm":
        inner = data.get("topology")
        if not isinstance(inner, Mapping) or inner.get("msccl_type", "topology") != "topology":
            raise ImportFormatError(
                "field 'topology' of the msccl-tools algorithm must be a topology object "
                '({"msccl_type": "topology", "links": ...})'
            )
        algorithm = str(data.get("name", "msccl-algorithm"))
        topology = from_msccl(inner, name=name or algorithm, link_bandwidth=link_bandwidth)
        description = (
            f"imported from the topology {inner.get('name', '')!r} of msccl-tools algorithm "
            f"{algorithm!r}"
        )
        return topology.with_name(topology.name, description)
    if kind != "topology":
        raise ImportFormatError(
            f"field 'msccl_type' is {kind!r}; only 'topology' and 'algorithm' objects hold a "
            "topology"
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
    multi = [(i, e) for i, e in enumerate(entries) if len(e[0]) > 1 and len(e[1]) > 1]
    single = [e for e in entries if len(e[0]) == 1 or len(e[1]) == 1]
    nodes = [Node(r) for r in ranks]
    block_nodes, arcs, covered = _block_caps(multi, direct, ranks)
    nodes += block_nodes
    for index, group in enumerate(_switch_groups(single, direct)):
        label = group[0][3] if len(group) == 1 else f"switch{index}"
        ingress, egress, pairs = _switch_caps(group, direct)
        if pairs & covered:
            s, d = min(pairs & covered)
            raise ImportFormatError(
                f"switch entry {group[0][3]!r} caps rank {s} -> rank {d}, which a block cap "
                "covers too; optcoll cannot express both"
            )
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
    return (
        tuple(srcs),
        tuple(dsts),
        number(bw, f"{where} bandwidth", positive=True) * (unit_bandwidth),
        str(label),
    )


def _block_caps(
    multi: list[tuple[int, _Entry]], direct: Mapping[tuple[int, int], Fraction], ranks: list[str]
) -> tuple[list[Node], dict[tuple[str, str], Fraction], set[tuple[int, int]]]:
    """Switches and links of the block caps (see :func:`from_msccl`) and the rank pairs
    they cover; ImportFormatError naming the entry that is not a block cap."""
    if not multi:
        return [], {}, set()
    universe = frozenset(r for _, (srcs, dsts, _, _) in multi for r in srcs + dsts)
    signature = {
        r: tuple((r in srcs, r in dsts) for _, (srcs, dsts, _, _) in multi) for r in universe
    }
    atoms: dict[tuple[tuple[bool, bool], ...], list[int]] = {}
    for r in sorted(universe):
        atoms.setdefault(signature[r], []).append(r)
    blocks = [frozenset(members) for members in atoms.values()]
    block_of = {r: b for b, members in enumerate(blocks) for r in members}
    out_cap: dict[int, Fraction] = {}
    in_cap: dict[int, Fraction] = {}
    for index, (srcs, dsts, bw, label) in multi:
        sources, targets = frozenset(srcs), frozenset(dsts)
        if sources == blocks[block_of[srcs[0]]] and targets == universe - sources:
            out_cap[block_of[srcs[0]]] = min(bw, out_cap.get(block_of[srcs[0]], bw))
        elif targets == blocks[block_of[dsts[0]]] and sources == universe - targets:
            in_cap[block_of[dsts[0]]] = min(bw, in_cap.get(block_of[dsts[0]], bw))
        else:
            raise ImportFormatError(
                f"switches[{index}] ({label!r}) caps {len(srcs)} sources and {len(dsts)} "
                "destinations together; optcoll imports per-rank caps and a block's caps to "
                "and from all other blocks (DistributedHubAndSpoke's), not this one"
            )
    bound: dict[tuple[int, int], Fraction] = {}
    for a in range(len(blocks)):
        for b in range(len(blocks)):
            caps = [c for c in (out_cap.get(a), in_cap.get(b)) if c is not None]
            if a != b and caps:
                bound[(a, b)] = min(caps)
    covered = set()
    for (a, b), cap in bound.items():
        for s in sorted(blocks[a]):
            for d in sorted(blocks[b]):
                width = direct.get((s, d))
                if width is None:
                    raise ImportFormatError(
                        f"a block cap covers rank {s} -> rank {d}, which has no link; optcoll "
                        "cannot add a route that msccl-tools does not have"
                    )
                if width < cap:
                    raise ImportFormatError(
                        f"the link rank {s} -> rank {d} ({width} link units) is narrower than "
                        f"the block caps let through ({cap}); optcoll cannot express both"
                    )
                covered.add((s, d))

    def total(pairs: set[tuple[int, int]]) -> Fraction:
        return sum((direct[p] for p in pairs), Fraction(0))

    nodes: list[Node] = []
    arcs: dict[tuple[str, str], Fraction] = {}
    for a, members in enumerate(blocks):
        for egress in (True, False):  # ranks -> out -> up, and down -> in -> ranks
            pairs = {(s, d) for s, d in covered if (s if egress else d) in members}
            if not pairs:
                continue
            near, far = (
                (f"block{a}.out", f"block{a}.up") if egress else (f"block{a}.in", f"block{a}.down")
            )
            nodes += [Node(near, "switch"), Node(far, "switch")]
            cap = (out_cap if egress else in_cap).get(a, total(pairs))
            arcs[(near, far) if egress else (far, near)] = cap
            for r in sorted({s if egress else d for s, d in pairs}):
                arcs[(ranks[r], near) if egress else (near, ranks[r])] = cap
    for (a, b), cap in bound.items():
        arcs[(f"block{a}.up", f"block{b}.down")] = cap
    return nodes, arcs, covered


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
