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

from collections.abc import Iterable, Sequence

from optcoll.core.schedule import Route
from optcoll.exceptions import ExportError
from optcoll.export.chakra import _encode, _Ranks

__all__ = ["chakra_demand_traces"]


def chakra_demand_traces(compute_nodes: Sequence[str], routes: Iterable[Route]) -> list[bytes]:
    """The Chakra ET file of every rank (rank ``r`` = ``compute_nodes[r]``) for ``routes``.

    Raises
    ------
    ExportError
        A route between nodes that are not two distinct compute nodes, a path that does not
        run from its source to its destination through each compute node once, or a path
        of no byte.
    """
    rank = {v: i for i, v in enumerate(compute_nodes)}
    ranks = _Ranks(len(rank))
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
            have = -1
            for a, b in zip(hops, hops[1:], strict=False):
                _, have = ranks.transfer(a, b, piece, path.chunks, [have], [])
            piece += 1
    return _encode(ranks, "alltoallv", {})
