"""All-to-all: the exact optimum of the max-concurrent-flow LP, with its certificate.

Every ordered pair ``(s, d)`` of distinct compute nodes exchanges one piece
(``M / N`` bytes of an ``M``-byte all-to-all). Data may follow any paths;
compute nodes and switches forward, nothing copies (every piece is wanted by
one node only). The optimal time is ``(M / N) * t*`` where t* is the optimum of

    minimise t  subject to, for every compute source s, a flow f_s with
        out_s(u) - in_s(u) = N - 1  (u = s),  -1  (u another compute node),  0  (switch)
        sum_s f_s(a) <= t * c(a)    for every link a,   f >= 0.

The pairs are aggregated by source (each source's pieces form one flow with
``N - 1`` unit sinks: any such flow splits into one unit path-flow per sink),
so the model has ``N * |links| + 1`` variables, not ``N^2 * |links|``. It is
the unicast case of :mod:`formulations.multicommodity`, on the integer-scaled
capacities ``c = bandwidth / unit``; t* in 1/bandwidth units is the LP's
optimum divided by ``unit``.

The exact optimum with its length-function certificate is
:func:`optcoll.schedules.alltoall.alltoall_optimum`; the optimum is *among* all fractional
routings in which nodes forward without copying or combining data.

Cut bounds are weaker in general: every set S of nodes needs
``t * B+(S) >= |S ∩ Vc| * |Vc \\ S|``, so t* >= the best such ratio, with
strict inequality possible (``ring:4,direction=uni``: t* = 6 per unit
bandwidth, best cut 4).

Examples
--------
>>> from optcoll import load_topology
>>> build_alltoall(load_topology("ring:4,direction=uni,bw=1")).sense == pulp.LpMinimize
True
"""

from __future__ import annotations

from collections.abc import Sequence

import pulp

from formulations.multicommodity import Commodity, build_multicommodity
from formulations.network import Network

__all__ = ["alltoall_commodities", "build_alltoall"]


def alltoall_commodities(compute_nodes: Sequence[str]) -> list[Commodity]:
    """One unicast commodity per compute source, one unit to every other compute node.

    Examples
    --------
    >>> [(k.source, dict(k.demands)) for k in alltoall_commodities(("a", "b"))]
    [('a', {'b': 1}), ('b', {'a': 1})]
    """
    return [Commodity(s, {d: 1 for d in compute_nodes if d != s}) for s in compute_nodes]


def build_alltoall(topology: Network, form: str = "time") -> pulp.LpProblem:
    """The source-aggregated all-to-all LP of ``topology`` (nothing is solved).

    Variables ``t`` (or ``lam`` in the rate form) and ``f_K_A`` (flow of compute
    source number ``K`` on arc number ``A`` of ``topology.integer_capacities()``).

    Examples
    --------
    >>> from optcoll import load_topology
    >>> model = build_alltoall(load_topology("dgx-a100:1"))
    >>> len(model.variables())  # t, and 8 sources x 15 arcs (no flow enters its own source)
    121
    """
    caps, _ = topology.integer_capacities()
    return build_multicommodity(
        topology.node_ids, caps, alltoall_commodities(topology.compute_nodes), form
    )
