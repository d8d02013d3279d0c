"""optcoll: provably optimal collective-communication schedules for any topology.

The data flows one way: topology -> bound -> packing -> schedule -> export,
and every step can be checked independently (:mod:`optcoll.verify.schedule`).

Examples
--------
>>> import optcoll
>>> topo = optcoll.load_topology("dgx-a100:1")
>>> topo.num_compute
8
>>> optcoll.solve(topo, collective="allgather")
Solution(allgather on dgx-a100:1: algbw 342.857 GB/s, optimal, k = 1, 8 trees, verified)
"""

from __future__ import annotations

from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import OptCollError
from optcoll.io import load_topology, save_topology
from optcoll.schedules.solution import Solution, solve

__version__ = "0.1.0"

__all__ = [
    "OptCollError",
    "Topology",
    "Node",
    "Link",
    "load_topology",
    "save_topology",
    "solve",
    "Solution",
]
