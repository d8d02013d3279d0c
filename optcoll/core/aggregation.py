"""Aggregation schedules: allreduce through switches that reduce and multicast (NVLS, SHARP).

An **aggregation schedule** cuts every compute node's ``M``-byte message into ``k``
equal chunks (the same cut on every node, so chunk ``i`` of all nodes is summed
into chunk ``i`` of the result). Each :class:`AggregationTree` carries ``chunks``
of them (summing to ``k`` over the trees):

- its ``reduce_edges`` form an in-tree toward the ``apex``: edge ``src -> dst``
  sends ``src``'s partial sum (its own input plus what its children sent) to its
  parent ``dst`` along ``path``. Every compute node is a vertex; a switch vertex
  must declare ``reduce`` (it sums what its children send);
- its ``multicast_edges`` form an out-tree from the ``apex``: edge ``src -> dst``
  sends the finished sum to ``dst`` along ``path``. Every compute node is a
  vertex; a switch vertex must declare ``multicast`` (it copies to its children);
- the apex is a compute node or a switch that declares both;
- a path's inner nodes are switches that only relay (any switch may relay).

A switch that declares ``multimem`` (NVLS, :class:`~optcoll.core.topology.Node`) reduces
and multicasts only at a GPU's request: it is never the apex; in the in-tree its children
are GPUs on direct links and its parent edge a direct link to the GPU ``g`` that loads the
sum (``multimem.ld_reduce``), whose own data goes up to be summed too; in the out-tree its
parent edge is a direct link from the GPU ``g`` that stores the sum (``multimem.st``), and
the switch copies it back down to ``g`` as well as to its children. So such an edge also
loads the reverse link, once per chunk (:func:`multimem_arcs`).

Every arc of a path carries the tree's ``chunks`` (both trees' paths count, and the
arcs :func:`multimem_arcs` adds), so
``load(link) = sum over trees of chunks * uses of the link``. Reduction up and
multicast down of successive chunks run at the same time (a pipeline), so the
schedule takes ``M * time_factor`` for an ``M``-byte allreduce with

    time_factor = max over links of load / (k * bandwidth)

(bandwidth term only), and its algbw is ``1 / time_factor``. A reduce-scatter +
allgather schedule is the special case of compute apexes, one tree per shard; its
:class:`~optcoll.core.schedule.Schedule` states time ``(M / N) * time_factor``
instead, so the two compare as ``N * time_factor`` here against the time factor there.

This module only holds and (de)serialises them; :mod:`optcoll.verify.aggregation`
checks them, sharing no code with the builder (:mod:`optcoll.schedules.aggregation`).

Examples
--------
>>> from optcoll.core.schedule import TreeEdge
>>> up = (TreeEdge("a", "sw", ("a", "sw")), TreeEdge("b", "sw", ("b", "sw")))
>>> down = (TreeEdge("sw", "a", ("sw", "a")), TreeEdge("sw", "b", ("sw", "b")))
>>> s = AggregationSchedule("star", ("a", "b"), 1, (AggregationTree("sw", 1, up, down),),
...                         time_factor=Fraction(1, 100))
>>> AggregationSchedule.from_dict(s.to_dict()) == s, s.algbw
(True, 100.0)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from optcoll.core.rational import fraction_text, parse_fraction
from optcoll.core.schedule import SCHEDULE_VERSION, TreeEdge, parse_tree_edge
from optcoll.exceptions import ScheduleError

__all__ = [
    "barrier_rounds",
    "barrier_peers",
    "MULTIMEM_BARRIER_PEERS",
    "multimem_arcs",
    "tree_arc_uses",
    "AggregationTree",
    "AggregationSchedule",
    "is_aggregation_document",
    "AGGREGATION_CLAIMS",
    "OPTIMAL_AMONG",
]

#: What an aggregation schedule's optimum is optimal among (``stats.optimal_among``).
OPTIMAL_AMONG = "aggregation-tree schedules"

#: The ``stats`` of an aggregation schedule file that are claims a checker judges:
#: ``optimal_among`` (:data:`OPTIMAL_AMONG`), ``proved`` (the time factor is the
#: optimum among those schedules) and ``gap_to_cut_bound`` (time factor over the cut
#: bound). The builder's other records (``columns``, ...) are reported, never trusted.
AGGREGATION_CLAIMS = frozenset({"optimal_among", "proved", "gap_to_cut_bound"})

_TOP_FIELDS = {
    "format",
    "version",
    "collective",
    "topology",
    "topology_hash",
    "compute_nodes",
    "k",
    "lower_bound",
    "time_factor",
    "algbw",
    "aggregation",
    "stats",
}
_TREE_FIELDS = {"apex", "chunks", "reduce", "multicast"}


def is_aggregation_document(data: Any) -> bool:
    """True for a parsed schedule document holding aggregation trees (field ``aggregation``).

    Examples
    --------
    >>> is_aggregation_document({"format": "optcoll-schedule", "aggregation": []})
    True
    >>> is_aggregation_document({"format": "optcoll-schedule", "trees": []})
    False
    """
    return isinstance(data, Mapping) and "aggregation" in data


@dataclass(frozen=True)
class AggregationTree:
    """``chunks`` of the ``k`` chunks, reduced into ``apex`` and multicast from it.

    ``reduce_edges`` run child -> parent (toward the apex), ``multicast_edges``
    parent -> child; each edge's ``path`` runs in its direction.
    """

    apex: str
    chunks: int
    reduce_edges: tuple[TreeEdge, ...]
    multicast_edges: tuple[TreeEdge, ...]


#: Most peers a barrier reaches in one round (a thread block's memory channels:
#: ``MAX_CHANNEL = 16``, MSCCL++ 1f5f065d ``src/core/include/execution_common.hpp``).
MULTIMEM_BARRIER_PEERS = 16


def barrier_rounds(n: int) -> int:
    """Rounds of the barrier an NVLS (switch-channel) allreduce of ``n`` GPUs runs before
    its first ``multimem`` op and after its last (every GPU's loads read every other GPU's
    input, its stores write every other GPU's output): one round (signal and wait for every
    peer) up to :data:`MULTIMEM_BARRIER_PEERS` peers, else a dissemination barrier of
    ``ceil(log2 n)`` rounds (Hensgen, Finkel and Manber 1988), as
    :func:`optcoll.export.mscclpp_nvls.mscclpp_nvls_plan` writes it.

    Examples
    --------
    >>> barrier_rounds(8), barrier_rounds(17), barrier_rounds(18), barrier_rounds(72)
    (1, 1, 5, 7)
    """
    return 1 if n - 1 <= MULTIMEM_BARRIER_PEERS else (n - 1).bit_length()


def barrier_peers(rank: int, n: int) -> list[tuple[list[int], list[int]]]:
    """The rounds of :func:`barrier_rounds`'s barrier for ``rank`` of ``n``: per round the
    peers it signals and the peers it waits for, rotated with ``rank`` (every rank's
    barrier is rank 0's moved ``rank`` places): one round of every other rank, in order
    after ``rank``, up to :data:`MULTIMEM_BARRIER_PEERS` peers; else in round ``i`` a
    signal to ``rank + 2^i`` and a wait for ``rank - 2^i`` (mod ``n``).

    Examples
    --------
    >>> barrier_peers(1, 4)
    [([2, 3, 0], [2, 3, 0])]
    >>> barrier_peers(0, 20)[:2]
    [([1], [19]), ([2], [18])]
    """
    peers = [(rank + d) % n for d in range(1, n)]
    if len(peers) <= MULTIMEM_BARRIER_PEERS:
        return [(peers, peers)]
    rounds, step = [], 1
    while step < n:
        rounds.append(([(rank + step) % n], [(rank - step) % n]))
        step *= 2
    return rounds


def multimem_arcs(tree: AggregationTree, multimem: Collection[str]) -> list[tuple[str, str]]:
    """The arcs a ``multimem`` (NVLS) switch adds to ``tree``'s paths, each once per chunk:
    for a reduce edge from such a switch to the GPU that loads the sum, that GPU's own data
    going up (``(gpu, switch)``); for a multicast edge from the GPU that stores the sum into
    such a switch, the copy back down to it (``(switch, gpu)``).

    Examples
    --------
    >>> from optcoll.core.schedule import TreeEdge
    >>> up = (TreeEdge("b", "sw", ("b", "sw")), TreeEdge("sw", "a", ("sw", "a")))
    >>> down = (TreeEdge("a", "sw", ("a", "sw")), TreeEdge("sw", "b", ("sw", "b")))
    >>> multimem_arcs(AggregationTree("a", 1, up, down), {"sw"})
    [('a', 'sw'), ('sw', 'a')]
    """
    found = [(e.dst, e.src) for e in tree.reduce_edges if e.src in multimem]
    return found + [(e.dst, e.src) for e in tree.multicast_edges if e.dst in multimem]


def tree_arc_uses(tree: AggregationTree, multimem: Collection[str]) -> dict[tuple[str, str], int]:
    """How many times one chunk of ``tree`` crosses each arc: every arc of its edges' paths
    and the :func:`multimem_arcs` of its ``multimem`` switches.

    Examples
    --------
    >>> from optcoll.core.schedule import TreeEdge
    >>> up = (TreeEdge("b", "sw", ("b", "sw")), TreeEdge("sw", "a", ("sw", "a")))
    >>> down = (TreeEdge("a", "sw", ("a", "sw")), TreeEdge("sw", "b", ("sw", "b")))
    >>> tree_arc_uses(AggregationTree("a", 1, up, down), {"sw"})[("a", "sw")]  # st and own copy
    2
    """
    uses: dict[tuple[str, str], int] = {}
    for edge in (*tree.reduce_edges, *tree.multicast_edges):
        for arc in zip(edge.path, edge.path[1:], strict=False):
            uses[arc] = uses.get(arc, 0) + 1
    for arc in multimem_arcs(tree, multimem):
        uses[arc] = uses.get(arc, 0) + 1
    return uses


@dataclass(frozen=True)
class AggregationSchedule:
    """An allreduce by aggregation trees (module docstring).

    Parameters
    ----------
    topology : str
        The topology's name.
    compute_nodes : tuple of str
        The compute nodes it serves.
    k : int
        Chunks per message.
    trees : tuple of AggregationTree
    lower_bound : Fraction, optional
        A lower bound on the time factor of every allreduce on the topology (the
        cut bound ``1 / lambda``, :mod:`optcoll.bounds.in_network`).
    time_factor : Fraction, optional
        The schedule's time factor (time ``M * time_factor``).
    topology_hash : str, optional
        :attr:`Topology.content_hash` of the topology it was built for.
    stats : dict
        Numbers about the construction; the claims among them (:data:`AGGREGATION_CLAIMS`)
        are judged by :func:`optcoll.verify.aggregation.verify_aggregation_schedule`.
    stated_algbw : float, optional
        The ``algbw`` a schedule file states (read back only so that the checker can
        judge it; files are written with the one :attr:`algbw` computes).
    """

    topology: str
    compute_nodes: tuple[str, ...]
    k: int
    trees: tuple[AggregationTree, ...]
    lower_bound: Fraction | None = None
    time_factor: Fraction | None = None
    topology_hash: str | None = field(default=None, compare=False)
    stats: Mapping[str, Any] = field(default_factory=dict, compare=False)
    stated_algbw: float | None = field(default=None, compare=False, repr=False)

    #: What it computes (the schedule files' ``collective``).
    collective = "allreduce"

    def __repr__(self) -> str:
        factor = "" if self.time_factor is None else f", time factor {self.time_factor}"
        return (
            f"AggregationSchedule(allreduce on {self.topology!r}: k = {self.k}, "
            f"{len(self.trees)} aggregation trees{factor})"
        )

    @property
    def algbw(self) -> float | None:
        """``M / time``: ``1 / time_factor`` in bandwidth units; None when unknown."""
        return None if self.time_factor is None else float(1 / self.time_factor)

    def to_dict(self) -> dict[str, Any]:
        """The schedule-file dictionary (exact ratios as ``"p/q"`` strings)."""
        data: dict[str, Any] = {
            "format": "optcoll-schedule",
            "version": SCHEDULE_VERSION,
            "collective": "allreduce",
            "topology": self.topology,
            **({} if self.topology_hash is None else {"topology_hash": self.topology_hash}),
            "compute_nodes": list(self.compute_nodes),
            "k": self.k,
        }
        if self.lower_bound is not None:
            data["lower_bound"] = fraction_text(self.lower_bound)
        if self.time_factor is not None:
            data["time_factor"] = fraction_text(self.time_factor)
            data["algbw"] = round(float(1 / self.time_factor), 3)
        if self.stats:
            data["stats"] = dict(self.stats)
        data["aggregation"] = [
            {
                "apex": t.apex,
                "chunks": t.chunks,
                "reduce": [_edge_dict(e) for e in t.reduce_edges],
                "multicast": [_edge_dict(e) for e in t.multicast_edges],
            }
            for t in self.trees
        ]
        return data

    @classmethod
    def from_dict(cls, data: Any) -> AggregationSchedule:
        """Parse a schedule-file dictionary with ``aggregation`` trees (shape only).

        Raises
        ------
        ScheduleError
            A missing or unknown field or a value of the wrong type, named.
        """
        if not isinstance(data, Mapping):
            raise ScheduleError(f"a schedule must be a mapping, got {type(data).__name__}")
        _reject_unknown(data, _TOP_FIELDS, "schedule")
        if data.get("format", "optcoll-schedule") != "optcoll-schedule":
            raise ScheduleError(
                f"field 'format' must be 'optcoll-schedule', got {data['format']!r}"
            )
        if data.get("version", SCHEDULE_VERSION) != SCHEDULE_VERSION:
            raise ScheduleError(
                f"schedule version {data['version']!r} is not supported "
                f"(expected {SCHEDULE_VERSION})"
            )
        for key in ("topology", "compute_nodes", "k", "aggregation"):
            if key not in data:
                raise ScheduleError(f"schedule is missing the required field {key!r}")
        if data.get("collective", "allreduce") != "allreduce":
            raise ScheduleError(
                f"aggregation trees compute an allreduce; field 'collective' is "
                f"{data['collective']!r}"
            )
        k = data["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ScheduleError(f"field 'k' must be a positive integer, got {k!r}")
        nodes = data["compute_nodes"]
        if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
            raise ScheduleError("field 'compute_nodes' must be a list of node id strings")
        topology_hash = data.get("topology_hash")
        if topology_hash is not None and not isinstance(topology_hash, str):
            raise ScheduleError(f"field 'topology_hash' must be a string, got {topology_hash!r}")
        if not isinstance(data.get("stats", {}), Mapping):
            raise ScheduleError(f"field 'stats' must be a mapping, got {data['stats']!r}")
        if not isinstance(data["aggregation"], list):
            raise ScheduleError("field 'aggregation' must be a list")
        algbw = data.get("algbw")
        if algbw is not None and (
            isinstance(algbw, bool) or not isinstance(algbw, int | float) or not algbw >= 0
        ):
            raise ScheduleError(f"field 'algbw' must be a number >= 0, got {algbw!r}")
        return cls(
            topology=str(data["topology"]),
            compute_nodes=tuple(nodes),
            k=k,
            trees=tuple(_parse_tree(i, t) for i, t in enumerate(data["aggregation"])),
            lower_bound=_parse_ratio(data.get("lower_bound"), "lower_bound"),
            time_factor=_parse_ratio(data.get("time_factor"), "time_factor"),
            topology_hash=topology_hash,
            stats=dict(data.get("stats", {})),
            stated_algbw=algbw,
        )


def _edge_dict(edge: TreeEdge) -> dict[str, Any]:
    return {"src": edge.src, "dst": edge.dst, "path": list(edge.path)}


def _parse_tree(index: int, entry: Any) -> AggregationTree:
    where = f"aggregation[{index}]"
    if not isinstance(entry, Mapping):
        raise ScheduleError(f"{where} must be a mapping")
    _reject_unknown(entry, _TREE_FIELDS, where)
    for key in sorted(_TREE_FIELDS):
        if key not in entry:
            raise ScheduleError(f"{where} is missing the required field {key!r}")
    if not isinstance(entry["apex"], str):
        raise ScheduleError(f"{where}: 'apex' must be a node id string, got {entry['apex']!r}")
    chunks = entry["chunks"]
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise ScheduleError(f"{where}: 'chunks' must be a positive integer, got {chunks!r}")
    edges = {}
    for part in ("reduce", "multicast"):
        if not isinstance(entry[part], list):
            raise ScheduleError(f"{where}: {part!r} must be a list of edges")
        edges[part] = tuple(
            parse_tree_edge(e, f"{where}.{part}[{j}]") for j, e in enumerate(entry[part])
        )
    return AggregationTree(entry["apex"], chunks, edges["reduce"], edges["multicast"])


def _reject_unknown(entry: Mapping[str, Any], allowed: set[str], where: str) -> None:
    for key in entry:
        if key not in allowed:
            raise ScheduleError(f"{where} has unknown field {key!r}; allowed: {sorted(allowed)}")


def _parse_ratio(text: Any, what: str) -> Fraction | None:
    if text is None:
        return None
    try:
        return parse_fraction(str(text))
    except ValueError:
        raise ScheduleError(
            f"field {what!r} must be an exact ratio such as '1/450', got {text!r}"
        ) from None
