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

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optcoll.core.topology import Link, Node, Topology
    from optcoll.exceptions import OptCollError
    from optcoll.io import from_networkx, load_topology, save_topology
    from optcoll.schedules.solution import Solution, solve

__version__ = "0.1.0"

# The public names and the module each lives in. They are imported on first use
# (PEP 562), so ``import optcoll.cli`` stays light and a Ctrl-C while the command
# starts reaches its handler instead of interrupting a long package import.
_HOMES = {
    "OptCollError": "optcoll.exceptions",
    "Topology": "optcoll.core.topology",
    "Node": "optcoll.core.topology",
    "Link": "optcoll.core.topology",
    "load_topology": "optcoll.io",
    "save_topology": "optcoll.io",
    "from_networkx": "optcoll.io",
    "solve": "optcoll.schedules.solution",
    "Solution": "optcoll.schedules.solution",
}

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


def __getattr__(name: str) -> object:
    """Import a public name from its module on first use (PEP 562)."""
    import importlib

    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'optcoll' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
