"""Chakra execution traces of an all-to-allv schedule: one message per path and hop, any size.

Chakra's ``COMM_SEND_NODE`` / ``COMM_RECV_NODE`` carry their own ``comm_size``, so unlike
MSCCL XML and MSCCL++ plans (one chunk size per buffer) the format expresses uneven sizes
directly. Each path of a route (``chunks`` = bytes, as in
:mod:`optcoll.schedules.alltoallv`) becomes one transfer per hop between the compute nodes
on it (switches are the network's business), each hop's send waiting for the previous
hop's receive; tags number the transfers of each (sender, receiver) pair from 0, as in
:mod:`optcoll.export.chakra`. The metadata names the collective ``alltoallv`` and carries
no optcoll chunk labels, so :func:`optcoll.verify.chakra.verify_traces` checks the traces'
structure, matching and freedom from deadlock, not the data each rank ends with.

Examples
--------
>>> from optcoll.core.schedule import Route, RoutePath
>>> routes = [Route("a", "c", (RoutePath(100, ("a", "b", "c")), RoutePath(20, ("a", "c"))))]
>>> files = chakra_demand_traces(("a", "b", "c"), routes)
>>> [f.count(b"comm_tag") for f in files]  # a: 2 sends; b: 1 receive, 1 send; c: 2 receives
[2, 2, 2]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from optcoll.core.schedule import Route
from optcoll.exceptions import ExportError
from optcoll.export.chakra import _COMP, _encode, _Ranks

__all__ = ["chakra_demand_traces"]


def chakra_demand_traces(
    compute_nodes: Sequence[str], routes: Iterable[Route], *, slice_bytes: int | None = None
) -> list[bytes]:
    """The Chakra ET file of every rank (rank ``r`` = ``compute_nodes[r]``) for ``routes``.

    ``slice_bytes``: send each path's bytes in ``ceil(bytes / slice_bytes)`` messages of
    (nearly) equal size, each carried hop by hop on its own, so that a switch that stores
    and forwards every message (ASTRA-sim's analytical backend) holds back one slice, not
    the whole path. A rank's first-hop messages then start in rounds: slice ``i`` of every
    path before slice ``i + 1``, within a round destination ``r + 1, r + 2, ...`` (mod
    ``N``) from rank ``r``, the order kept by order gates (``COMP_NODE`` labelled
    ``optcoll_gate``, :mod:`optcoll.export.chakra`) since ASTRA-sim issues nodes that are
    ready together in any order. None (default): one message per path and hop.

    Raises
    ------
    ExportError
        A route between nodes that are not two distinct compute nodes, a path that does not
        run from its source to its destination through each compute node once, or a path
        of no byte.
    """
    rank = {v: i for i, v in enumerate(compute_nodes)}
    n = len(rank)
    ranks = _Ranks(n)
    first: dict[tuple[int, str], list[tuple[tuple[int, int, int], int]]] = defaultdict(list)
    piece = 0
    for index, route in enumerate(routes):
        if route.src not in rank or route.dst not in rank or route.src == route.dst:
            raise ExportError(
                f"route {index}: {route.src} -> {route.dst} is not a pair of compute nodes"
            )
        for path in route.paths:
            hops = [rank[v] for v in path.path if v in rank]
            if hops[:1] != [rank[route.src]] or hops[-1:] != [rank[route.dst]]:
                raise ExportError(f"route {index}: a path must run from {route.src} to {route.dst}")
            if len(set(hops)) != len(hops) or path.chunks < 1:
                raise ExportError(
                    f"route {index}: a path visits a compute node twice or carries no byte"
                )
            count = 1 if slice_bytes is None else -(-path.chunks // slice_bytes)
            for part in range(count):
                size = path.chunks * (part + 1) // count - path.chunks * part // count
                have = -1
                for a, b in zip(hops, hops[1:], strict=False):
                    send, have = ranks.transfer(a, b, piece, size, [have], [])
                    if a == hops[0] and slice_bytes is not None:
                        turn = (part, (b - a) % n, len(first[(a, path.path[1])]))
                        first[(a, path.path[1])].append((turn, send))
            piece += 1
    for (source, _), sends in first.items():
        sends.sort()
        gate = -1
        for j, (_, send) in enumerate(sends[1:]):
            gate = ranks.add(source, _COMP, f"gate {j + 1}", [gate], optcoll_gate=1)
            ranks.nodes[source][send].deps = [gate]
    return _encode(ranks, "alltoallv", {})
