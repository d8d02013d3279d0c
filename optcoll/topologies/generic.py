"""Generic topology families: rings, lines, tori, meshes, hypercubes, cliques,
stars, leaf-spine fabrics and seeded random graphs.

These are textbook shapes, not models of a product, so their bandwidths are
parameters (``bw=``, GB/s per link per direction, default 100). Every link is
bidirectional with the same bandwidth both ways unless stated otherwise.

Spec strings (arguments are positional in the order shown, or ``key=value``):

- ``ring:N[,bw=B][,direction=bi|uni]``: N nodes in a cycle;
- ``line:N[,bw=B]``: N nodes in a path;
- ``torus:AxB[xC][,bw=B1/B2[/B3]]``: 2D/3D torus, bandwidth per dimension;
- ``mesh:AxB[xC][,bw=B1/B2[/B3]]``: 2D/3D mesh (no wrap-around);
- ``hypercube:D[,bw=B]``: 2**D nodes;
- ``fully-connected:N[,bw=B]``: every pair linked;
- ``star:N[,bw=B][,sharp=1]`` (alias ``hub-and-spoke``): N hosts around one switch
  (which reduces and multicasts with ``sharp=1``);
- ``leaf-spine:leaves=L,hosts=H,spines=S[,oversub=O][,bw=B][,sharp=1]`` (alias ``fat-tree``;
  ``sharp=1``: every leaf and spine switch reduces and multicasts, as InfiniBand SHARP);
- ``random:n=N[,switches=K][,seed=S][,p=P]``: seeded strongly connected graph.

Examples
--------
>>> from optcoll.topologies import build
>>> t = build("torus:4x4,bw=100/50")
>>> t.num_compute, len(t.capacity)
(16, 64)
>>> t.out_bandwidth("n0_0")
Fraction(300, 1)
"""

from __future__ import annotations

import itertools
import math
import random as _random
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from optcoll.core.rational import count_text, exact_number, parse_fraction
from optcoll.core.topology import Topology, TopologyBuilder
from optcoll.exceptions import TopologySpecError
from optcoll.topologies.registry import (
    Family,
    check_size,
    choice,
    count,
    parse_params,
    positive_number,
    register,
    switch_flag,
)

__all__ = [
    "ring",
    "line",
    "torus",
    "mesh",
    "hypercube",
    "fully_connected",
    "star",
    "leaf_spine",
    "random_topology",
]

#: Default bandwidth (GB/s per link per direction) of the generic families.
DEFAULT_BW = 100

#: Bandwidths (GB/s) the random family draws from: heterogeneous on purpose,
#: including non-integers, so that exact scaling is exercised.
RANDOM_BANDWIDTHS = (10, 12.5, 25, 40, 50, 100)


def _fmt(value: Fraction | int | float) -> str:
    """A number as it appears in a canonical spec (``100``, ``12.5``, ``100/3``)."""
    frac = Fraction(value)
    if frac.denominator == 1:
        return str(frac.numerator)
    as_float = float(frac)
    return repr(as_float) if Fraction(repr(as_float)) == frac else str(frac)


def _cycle_pairs(n: int, bidirectional: bool) -> list[tuple[int, int]]:
    """Links ``i -> i+1 (mod n)``; for ``n == 2`` with both directions, the one pair."""
    if n == 2 and bidirectional:
        return [(0, 1)]
    return [(i, (i + 1) % n) for i in range(n)]


def ring(n: int, bw: Fraction | int = DEFAULT_BW, direction: str = "bi") -> Topology:
    """``n`` compute nodes ``n0..n{n-1}`` in a cycle.

    ``direction="bi"``: link ``i <-> i+1 (mod n)`` at ``bw`` each way (n links,
    2n directed arcs; for ``n == 2`` one link). ``direction="uni"``: arcs
    ``i -> i+1 (mod n)`` only (n arcs).

    Examples
    --------
    >>> len(ring(5).capacity), len(ring(5, direction="uni").capacity)
    (10, 5)
    """
    if direction not in ("bi", "uni"):
        raise TopologySpecError(f"ring: direction must be 'bi' or 'uni', got {direction!r}")
    bidirectional = direction == "bi"
    check_size(f"ring:{n}", n, 2 * n)
    suffix = "" if bw == DEFAULT_BW else f",bw={_fmt(bw)}"
    suffix += "" if bidirectional else ",direction=uni"
    b = TopologyBuilder(
        f"ring:{n}{suffix}",
        f"{'bidirectional' if bidirectional else 'unidirectional'} ring of {n} nodes, "
        f"{_fmt(bw)} GB/s per link",
    )
    for i in range(n):
        b.compute(f"n{i}")
    for i, j in _cycle_pairs(n, bidirectional):
        b.link(f"n{i}", f"n{j}", bw, bidirectional=bidirectional)
    return b.build()


def line(n: int, bw: Fraction | int = DEFAULT_BW) -> Topology:
    """``n`` compute nodes in a path, ``i <-> i+1`` at ``bw`` (n-1 links).

    Examples
    --------
    >>> line(4).cut_bandwidth(["n0", "n1"])
    Fraction(100, 1)
    """
    check_size(f"line:{n}", n, 2 * n)
    suffix = "" if bw == DEFAULT_BW else f",bw={_fmt(bw)}"
    b = TopologyBuilder(f"line:{n}{suffix}", f"line of {n} nodes, {_fmt(bw)} GB/s per link")
    for i in range(n):
        b.compute(f"n{i}")
    for i in range(n - 1):
        b.link(f"n{i}", f"n{i + 1}", bw, bidirectional=True)
    return b.build()


def _grid(
    kind: str, dims: Sequence[int], bw: Sequence[Fraction | int] | Fraction | int
) -> Topology:
    """Torus (``kind == "torus"``) or mesh of shape ``dims``; ``bw`` per dimension."""
    dims = tuple(dims)
    bws: tuple[Fraction | int, ...]
    if isinstance(bw, Sequence) and not isinstance(bw, str):
        bws = tuple(bw)
    else:
        bws = (bw,) * len(dims)
    if len(bws) == 1:
        bws *= len(dims)
    if len(bws) != len(dims):
        raise TopologySpecError(
            f"{kind}: {len(bws)} bandwidths given for {len(dims)} dimensions {dims}"
        )
    shape = "x".join(map(str, dims))
    check_size(f"{kind}:{shape}", math.prod(dims), 2 * len(dims) * math.prod(dims))
    suffix = "" if all(x == DEFAULT_BW for x in bws) else ",bw=" + "/".join(map(_fmt, bws))
    b = TopologyBuilder(
        f"{kind}:{shape}{suffix}",
        f"{len(dims)}D {kind} {shape}, GB/s per link by dimension: {'/'.join(map(_fmt, bws))}",
    )

    def name(point: tuple[int, ...]) -> str:
        return "n" + "_".join(map(str, point))

    points = list(itertools.product(*(range(d) for d in dims)))
    for point in points:
        b.compute(name(point))
    for axis, (size, axis_bw) in enumerate(zip(dims, bws, strict=True)):
        if size == 1:
            continue
        steps = (
            _cycle_pairs(size, True) if kind == "torus" else [(i, i + 1) for i in range(size - 1)]
        )
        for point in points:
            for i, j in steps:
                if point[axis] == i:
                    other = point[:axis] + (j,) + point[axis + 1 :]
                    b.link(name(point), name(other), axis_bw, bidirectional=True)
    return b.build()


def torus(
    dims: Sequence[int], bw: Sequence[Fraction | int] | Fraction | int = DEFAULT_BW
) -> Topology:
    """A torus of shape ``dims`` (e.g. ``(4, 4)`` or ``(4, 4, 2)``).

    Node ``n{i}_{j}[_{k}]`` links to its neighbours ``+-1 (mod size)`` along
    each dimension at that dimension's bandwidth (``bw`` is one number or one
    per dimension). A dimension of size 2 has a single link per pair (the
    wrap-around coincides with the direct link); size 1 has none. A
    ``a x b`` torus with all sizes >= 3 has ``2ab`` links (``4ab`` arcs).

    Examples
    --------
    >>> t = torus((3, 3, 2), bw=(100, 50, 25))
    >>> len(t.capacity), t.out_bandwidth("n0_0_0")
    (90, Fraction(325, 1))
    """
    return _grid("torus", dims, bw)


def mesh(
    dims: Sequence[int], bw: Sequence[Fraction | int] | Fraction | int = DEFAULT_BW
) -> Topology:
    """A mesh (a torus without wrap-around) of shape ``dims``.

    An ``a x b`` mesh has ``a(b-1) + b(a-1)`` links, each both ways.

    Examples
    --------
    >>> len(mesh((4, 4)).capacity)
    48
    """
    return _grid("mesh", dims, bw)


def hypercube(d: int, bw: Fraction | int = DEFAULT_BW) -> Topology:
    """The ``d``-dimensional hypercube: ``2**d`` nodes, ``d * 2**(d-1)`` links.

    Node ``n{i}`` links to ``n{i ^ 2**b}`` for every bit ``b``.

    Examples
    --------
    >>> t = hypercube(3)
    >>> t.num_compute, len(t.capacity)
    (8, 24)
    """
    nodes = 2 ** min(d, 4096)  # refused either way; 2**d of a huge d takes long to compute
    check_size(f"hypercube:{d}", nodes, d * nodes)
    suffix = "" if bw == DEFAULT_BW else f",bw={_fmt(bw)}"
    b = TopologyBuilder(
        f"hypercube:{d}{suffix}", f"{d}-dimensional hypercube, {_fmt(bw)} GB/s per link"
    )
    for i in range(2**d):
        b.compute(f"n{i}")
    for i in range(2**d):
        for bit in range(d):
            j = i ^ (1 << bit)
            if i < j:
                b.link(f"n{i}", f"n{j}", bw, bidirectional=True)
    return b.build()


def fully_connected(n: int, bw: Fraction | int = DEFAULT_BW) -> Topology:
    """``n`` compute nodes, every pair linked at ``bw`` each way (n(n-1)/2 links).

    Examples
    --------
    >>> len(fully_connected(4).capacity)
    12
    """
    check_size(f"fully-connected:{n}", n, n * (n - 1))
    suffix = "" if bw == DEFAULT_BW else f",bw={_fmt(bw)}"
    b = TopologyBuilder(
        f"fully-connected:{n}{suffix}", f"{n} fully connected nodes, {_fmt(bw)} GB/s per link"
    )
    for i in range(n):
        b.compute(f"n{i}")
    for i, j in itertools.combinations(range(n), 2):
        b.link(f"n{i}", f"n{j}", bw, bidirectional=True)
    return b.build()


def star(n: int, bw: Fraction | int = DEFAULT_BW, sharp: bool = False) -> Topology:
    """Hub and spoke: ``n`` compute nodes ``h0..`` each linked to switch ``hub``
    (which reduces and multicasts with ``sharp``).

    Examples
    --------
    >>> t = star(4)
    >>> t.switch_nodes, t.in_bandwidth("hub")
    (('hub',), Fraction(400, 1))
    >>> star(4, sharp=True).name
    'star:4,sharp=1'
    """
    check_size(f"star:{n}", n + 1, 2 * n)
    suffix = "" if bw == DEFAULT_BW else f",bw={_fmt(bw)}"
    suffix += ",sharp=1" if sharp else ""
    b = TopologyBuilder(
        f"star:{n}{suffix}",
        f"{n} hosts around one switch, {_fmt(bw)} GB/s per link"
        + ("; the switch reduces and multicasts" if sharp else ""),
    )
    for i in range(n):
        b.compute(f"h{i}")
    b.switch("hub", reduce=sharp, multicast=sharp)
    for i in range(n):
        b.link(f"h{i}", "hub", bw, bidirectional=True)
    return b.build()


def leaf_spine(
    leaves: int,
    hosts: int,
    spines: int,
    oversub: Fraction | int = 1,
    bw: Fraction | int = DEFAULT_BW,
    sharp: bool = False,
) -> Topology:
    """A two-level fat-tree (leaf-spine) fabric with oversubscription.

    ``leaves`` leaf switches ``leaf{i}``, each with ``hosts`` compute nodes
    ``l{i}.h{j}`` (group ``leaf{i}``) linked at ``bw``; every leaf links once to
    each of ``spines`` spine switches ``spine{s}``.

    ``oversub`` is the oversubscription ratio of a leaf: its total host-facing
    bandwidth divided by its total spine-facing bandwidth, per direction. So
    each leaf-spine link carries ``hosts * bw / (spines * oversub)`` each way;
    ``oversub=1`` is a non-blocking (full-bisection) fabric, ``oversub=2``
    halves the uplinks. It may be any positive number (``1.5``, ``3/2``).
    With ``sharp`` every leaf and spine switch reduces and multicasts (InfiniBand
    SHARP aggregation in the switches).

    Examples
    --------
    >>> t = leaf_spine(4, 4, 2, oversub=2)
    >>> t.capacity[("leaf0", "spine0")], t.cut_bandwidth(["leaf0", "l0.h0", "l0.h1", "l0.h2", "l0.h3"])
    (Fraction(100, 1), Fraction(200, 1))
    >>> leaf_spine(2, 2, 1, sharp=True).reducing_switches
    ('leaf0', 'leaf1', 'spine0')
    """
    if min(leaves, hosts, spines) < 1 or not exact_number(oversub, "oversub") > 0:
        raise TopologySpecError(
            f"leaf-spine: leaves, hosts and spines must be >= 1 and oversub > 0, got "
            f"leaves={leaves}, hosts={hosts}, spines={spines}, oversub={oversub}"
        )
    uplink = Fraction(hosts) * exact_number(bw, "bw") / (spines * exact_number(oversub, "oversub"))
    check_size(
        f"leaf-spine:leaves={leaves},hosts={hosts},spines={spines}",
        leaves * (hosts + 1) + spines,
        2 * leaves * (hosts + spines),
    )
    suffix = "" if oversub == 1 else f",oversub={_fmt(oversub)}"
    suffix += "" if bw == DEFAULT_BW else f",bw={_fmt(bw)}"
    suffix += ",sharp=1" if sharp else ""
    b = TopologyBuilder(
        f"leaf-spine:leaves={leaves},hosts={hosts},spines={spines}{suffix}",
        f"leaf-spine: {leaves} leaves x {hosts} hosts at {_fmt(bw)} GB/s, {spines} spines, "
        f"{_fmt(oversub)}:1 oversubscription ({_fmt(uplink)} GB/s per leaf-spine link)"
        + ("; SHARP: switches reduce and multicast" if sharp else ""),
    )
    for i in range(leaves):
        for j in range(hosts):
            b.compute(f"l{i}.h{j}", f"leaf{i}")
    for i in range(leaves):
        b.switch(f"leaf{i}", f"leaf{i}", reduce=sharp, multicast=sharp)
    for s in range(spines):
        b.switch(f"spine{s}", reduce=sharp, multicast=sharp)
    for i in range(leaves):
        for j in range(hosts):
            b.link(f"l{i}.h{j}", f"leaf{i}", bw, bidirectional=True)
        for s in range(spines):
            b.link(f"leaf{i}", f"spine{s}", uplink, bidirectional=True)
    return b.build()


def random_topology(
    n: int, switches: int = 0, seed: int = 0, p: Fraction | float = Fraction(3, 10)
) -> Topology:
    """A seeded random strongly connected heterogeneous topology.

    ``n`` compute nodes ``c0..`` and ``switches`` switches ``s0..``. A random
    Hamiltonian cycle through all nodes makes every node reach every other one
    (so the result is always valid); then every further ordered pair gets an
    arc with probability ``p``. Bandwidths are drawn from
    :data:`RANDOM_BANDWIDTHS` independently per direction, so compute-compute
    links are asymmetric. Links touching a switch are bidirectional with one
    bandwidth, so every switch has equal in and out bandwidth (the condition
    under which switches can be removed by edge splitting, arXiv 2402.06787).
    The same arguments always give the same topology.

    Examples
    --------
    >>> t = random_topology(6, switches=2, seed=1)
    >>> t.num_compute, t.switch_nodes
    (6, ('s0', 's1'))
    >>> t == random_topology(6, switches=2, seed=1)
    True
    """
    p = exact_number(p, "p")
    nodes = n + switches
    check_size(f"random:n={n},switches={switches}", nodes, nodes + math.ceil(p * nodes * nodes))
    threshold = float(p)  # comparing floats keeps this O(n^2) loop fast
    rng = _random.Random(seed)
    compute = [f"c{i}" for i in range(n)]
    switch = [f"s{i}" for i in range(switches)]
    b = TopologyBuilder(
        f"random:n={n},switches={switches},seed={seed}"
        + ("" if p == Fraction(3, 10) else f",p={_fmt(p)}"),
        f"random strongly connected graph: {n} compute nodes, "
        f"{count_text(switches, 'switch')}, seed {seed}",
    )
    for c in compute:
        b.compute(c)
    for s in switch:
        b.switch(s)
    order = compute + switch
    rng.shuffle(order)
    arcs = [(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]
    chosen = set(arcs)
    for u, v in itertools.permutations(compute + switch, 2):
        if (u, v) not in chosen and rng.random() < threshold:
            arcs.append((u, v))
            chosen.add((u, v))
    is_switch = set(switch)
    declared: set[frozenset[str]] = set()
    for u, v in arcs:
        if u in is_switch or v in is_switch:
            pair = frozenset((u, v))
            if pair not in declared:
                declared.add(pair)
                b.link(u, v, rng.choice(RANDOM_BANDWIDTHS), bidirectional=True)
        else:
            b.link(u, v, rng.choice(RANDOM_BANDWIDTHS))
    return b.build()


# --- spec parsing ------------------------------------------------------------------------


def _dims(text: str) -> tuple[int, ...]:
    parts = text.lower().split("x")
    try:
        dims = tuple(int(part) for part in parts)
    except ValueError:
        raise ValueError(f"expected a shape such as 4x4 or 4x4x2, got {text!r}") from None
    if not 2 <= len(dims) <= 3 or min(dims) < 1:
        raise ValueError(
            f"expected 2 or 3 dimensions, each >= 1, such as 4x4 or 4x4x2, got {text!r}"
        )
    if math.prod(dims) < 2:
        raise ValueError(f"the shape {text!r} has fewer than 2 nodes")
    return dims


def _bandwidths(text: str) -> tuple[Fraction, ...]:
    return tuple(positive_number(part) for part in text.split("/"))


def _probability(text: str) -> Fraction:
    try:
        value = parse_fraction(text)
    except ValueError:
        raise ValueError(f"expected a probability between 0 and 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise ValueError(f"expected a probability between 0 and 1, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected an integer seed, got {text!r}") from None


def _family(
    name: str,
    summary: str,
    usage: str,
    generate: Callable[..., Topology],
    converters: dict[str, Callable[[str], Any]],
    positional: Sequence[str] = (),
    required: Sequence[str] = (),
    aliases: tuple[str, ...] = (),
) -> None:
    """Register a family whose spec is parsed by :func:`parse_params`."""

    def parse(args: str) -> dict[str, Any]:
        kwargs = parse_params(name, usage, args, converters, positional)
        for key in required:
            if key not in kwargs:
                spec = f"{name}:{args}" if args else name
                raise TopologySpecError(f"{spec}: missing parameter {key!r}; usage: {usage}")
        if "dims" in kwargs and len(kwargs.get("bw", (1,))) not in (1, len(kwargs["dims"])):
            raise TopologySpecError(
                f"{name}:{args}: bw gives {len(kwargs['bw'])} bandwidths for "
                f"{len(kwargs['dims'])} dimensions; usage: {usage}"
            )
        return kwargs

    register(Family(name, summary, usage, parse, generate, aliases))


_BW = {"bw": positive_number}
_GRID: dict[str, Callable[[str], Any]] = {"dims": _dims, "bw": _bandwidths}

_family(
    "ring",
    "ring of N nodes, bidirectional (default) or unidirectional",
    "ring:N[,bw=GBPS][,direction=bi|uni]",
    ring,
    {"n": count(2), **_BW, "direction": choice("bi", "uni")},
    ("n",),
    ("n",),
)
_family(
    "line",
    "line (path) of N nodes",
    "line:N[,bw=GBPS]",
    line,
    {"n": count(2), **_BW},
    ("n",),
    ("n",),
)
_family(
    "torus",
    "2D/3D torus with per-dimension bandwidth",
    "torus:AxB[xC][,bw=GBPS or B1/B2[/B3] per dimension]",
    torus,
    _GRID,
    ("dims",),
    ("dims",),
)
_family(
    "mesh",
    "2D/3D mesh (torus without wrap-around) with per-dimension bandwidth",
    "mesh:AxB[xC][,bw=GBPS or B1/B2[/B3] per dimension]",
    mesh,
    _GRID,
    ("dims",),
    ("dims",),
)
_family(
    "hypercube",
    "D-dimensional hypercube (2^D nodes)",
    "hypercube:D[,bw=GBPS]",
    hypercube,
    {"d": count(1), **_BW},
    ("d",),
    ("d",),
)
_family(
    "fully-connected",
    "N nodes with a link between every pair",
    "fully-connected:N[,bw=GBPS]",
    fully_connected,
    {"n": count(2), **_BW},
    ("n",),
    ("n",),
)
_family(
    "star",
    "hub and spoke: N compute nodes around one switch",
    "star:N[,bw=GBPS][,sharp=0|1]  (alias hub-and-spoke:N)",
    star,
    {"n": count(2), **_BW, "sharp": switch_flag},
    ("n",),
    ("n",),
    aliases=("hub-and-spoke",),
)
_family(
    "leaf-spine",
    "two-level fat-tree: L leaves of H hosts, S spines, leaf oversubscription O:1",
    "leaf-spine:leaves=L,hosts=H,spines=S[,oversub=O][,bw=GBPS][,sharp=0|1]  (alias fat-tree)",
    leaf_spine,
    {
        "leaves": count(1),
        "hosts": count(1),
        "spines": count(1),
        "oversub": positive_number,
        **_BW,
        "sharp": switch_flag,
    },
    required=("leaves", "hosts", "spines"),
    aliases=("fat-tree",),
)
_family(
    "random",
    "seeded random strongly connected graph, asymmetric bandwidths, optional switches",
    "random:n=N[,switches=K][,seed=S][,p=P]",
    random_topology,
    {"n": count(2), "switches": count(0), "seed": _seed, "p": _probability},
    ("n",),
    ("n",),
)
