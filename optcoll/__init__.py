"""optcoll: provably optimal collective-communication schedules for any topology.

The data flows one way: topology -> bound -> packing -> schedule -> export,
and every step can be checked independently (:mod:`optcoll.verify.schedule`).

Examples
--------
>>> import optcoll
>>> topo = optcoll.load_topology("dgx-a100:1")
>>> topo.num_compute
8
>>> optcoll.solve(topo)  # allgather, the default collective of every command
Solution(allgather on dgx-a100:1: algbw 342.857 GB/s, optimal, k = 1, 8 trees, verified)

A networkx graph works as well (bandwidths in the edge attribute ``bandwidth``):

>>> import networkx as nx
>>> ring = nx.cycle_graph(4)
>>> nx.set_edge_attributes(ring, 50, "bandwidth")
>>> optcoll.solve(ring).algbw
133.333...
"""

from __future__ import annotations

from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import OptCollError
from optcoll.io import from_networkx, load_topology, save_topology
from optcoll.schedules.solution import Solution, solve

__version__ = "0.1.0"

__all__ = [
    "OptCollError",
    "Topology",
    "Node",
    "Link",
    "load_topology",
    "save_topology",
    "from_networkx",
    "solve",
    "Solution",
]
