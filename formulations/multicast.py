"""The multicast LP: each root's fractional tree capacity.

Every compute root ``r`` owns a capacity vector ``y_r`` on the links; it must
carry a flow of value 1 from ``r`` to every other compute node ``w``
(``f_rw(a) <= y_r(a)``: flows to different destinations share ``y_r``, as
copies of one message do); a switch only forwards, so at a switch ``y_r``
leaves at most what enters; and the roots together fit the links:
``sum_r y_r(a) <= t * c(a)``. Minimise ``t``. This is the allgather instance
of the multi-commodity LP (:mod:`formulations.multicommodity`, one multicast
commodity per root whose sinks are the other compute nodes).

It is the ground truth of the allgather optimum: every schedule of trees
gives such ``y_r`` (a tree's path through a switch enters and leaves it once),
and conversely each ``y_r`` is a fractional packing of spanning
``r``-arborescences through the switches (Bang-Jensen, Frank and Jackson's
splitting at a switch where ``y_r`` is balanced, then Edmonds' branching
theorem). When every switch has at least as much capacity in as out the
optimum is the cut ratio r* = max_S |S ∩ Vc| / B+(S) (ForestColl, arXiv
2402.06787); otherwise it is r* of the best balanced part of the capacity
(see :mod:`optcoll.bounds.cut_ratio`).

Size: ``N (N - 1) |A| + N |A| + 1`` variables, so it is meant for ``N <= 32``.
Capacities are the integer-scaled ones, so the optimum is ``r* * unit``; its
exact value is :func:`optcoll.bounds.multicast.multicast_bound`.

Examples
--------
>>> from optcoll import load_topology
>>> len(root_commodities(load_topology("dgx-a100:1")))
8
"""

from __future__ import annotations

import pulp

from formulations.errors import MethodError
from formulations.multicommodity import Commodity, build_multicommodity
from formulations.network import Network

__all__ = ["build_multicast", "root_commodities", "MAX_FLOW_VARIABLES"]

#: Largest ``N (N - 1) |A|`` (number of flow variables) the multicast LP accepts.
MAX_FLOW_VARIABLES = 400_000


def root_commodities(topology: Network) -> list[Commodity]:
    """One multicast commodity per compute root, to every other compute node."""
    compute = topology.compute_nodes
    arcs = len(topology.integer_capacities()[0])
    size = len(compute) * (len(compute) - 1) * arcs
    if size > MAX_FLOW_VARIABLES:
        raise MethodError(
            f"the multicast LP of {topology.name!r} would have {size} flow variables "
            f"(N={len(compute)}, {arcs} arcs; at most {MAX_FLOW_VARIABLES}); "
            f"use the congestion LP (formulations.congestion) for topologies of this size"
        )
    return [Commodity(root, {w: 1 for w in compute if w != root}, copies=True) for root in compute]


def build_multicast(topology: Network) -> pulp.LpProblem:
    """The multicast LP of ``topology`` (no side effects; nothing is solved).

    The names are those of :func:`formulations.multicommodity.build_multicommodity`
    with commodity ``K`` the compute root number ``K``: ``f_K_A`` is ``y`` of that
    root on arc number ``A`` (arcs in the order of
    ``topology.integer_capacities()``), ``g_K_D_A`` its flow to its sink number
    ``D``; rows ``node_K_D_I``, ``share_K_D_A``, ``relay_K_I`` (a switch forwards
    at most what it receives) and ``cap_A``.

    Raises
    ------
    MethodError
        If the model would have more than :data:`MAX_FLOW_VARIABLES` flow
        variables; use the congestion LP for such topologies.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> model = build_multicast(load_topology("dgx-a100:1"))
    >>> len(model.variables()), len(model.constraints())
    (961, 1368)
    """
    caps, _ = topology.integer_capacities()
    return build_multicommodity(topology.node_ids, dict(caps), root_commodities(topology))
