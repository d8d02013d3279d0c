"""Failure analysis: the exact optimal cut ratio r* after each single failure, or random ones.

A *failure* removes elements of the topology:

``links``
    a link: every link declared between two nodes, both directions (a cable);
``nodes``
    a node, compute or switch, with all its links (a failed compute node leaves the
    collective: N drops by one);
``nics``
    a switch node whose id contains ``nic`` (as the built-in DGX models name their
    NICs), with all its links.

For each failure the result is r* of what remains with its bottleneck cut, exactly
as :func:`optcoll.bounds.cut_ratio.optimal_cut_ratio` certifies it; a failure after which some
compute node no longer reaches another is *disconnected* (r* is infinite), certified
by a node set that holds compute nodes, misses others and has no link leaving it.

Symmetry saves solves without giving up exactness: when swapping two node groups
(boxes, :attr:`Node.group`) member by member, in declaration order, maps every link
onto a link of the same bandwidth (checked exactly, arc by arc), the swap is an
automorphism, so a failure and its image have the same r* and the image of one's
bottleneck cut certifies the other. Only one failure per class is solved; every other
one gets its value and its cut from the automorphism, and its cut's ratio is
re-checked exactly on the failed topology. On dgx-a100:16 the 384 single-link
failures need 24 solves.

Examples
--------
>>> from optcoll import load_topology
>>> study = failure_study(load_topology("dgx-a100:2"), "links", workers=1)
>>> study.base.ratio, len(study.failures), study.solves
(Fraction(3, 65), 48, 24)
>>> worst = study.ranked()[0]
>>> worst.failed, worst.ratio
((('b0.gpu0', 'b0.nvswitch'),), Fraction(3, 5))
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optcoll.bounds.cut_ratio import CutRatio, optimal_cut_ratio_core
from optcoll.core.arguments import choice_argument, count_argument, topology_argument
from optcoll.core.limits import MAX_TRIALS, check_count
from optcoll.core.rational import fraction_text
from optcoll.core.topology import Link, Topology, reachable
from optcoll.exceptions import OptCollError, SolveError
from optcoll.graph.symmetry import preserves_capacity
from optcoll.studies.engines import TaskError, run_tasks

__all__ = [
    "FAILURE_KINDS",
    "Failure",
    "FailureStudy",
    "failure_elements",
    "failure_study",
    "failed_topology",
    "group_swaps",
]

#: What ``--fail`` may remove.
FAILURE_KINDS = ("links", "nodes", "nics")

#: A failed element: a node id, or a link as the pair of its end nodes.
Element = str | tuple[str, str]
Arc = tuple[str, str]


@dataclass(frozen=True)
class Failure:
    """r* after the elements ``failed`` fail, with the cut that certifies it.

    ``ratio`` is None when the compute nodes are disconnected; ``bottleneck_cut`` then
    holds compute nodes, misses others, and no link leaves it. ``derived`` is True when
    the value came from a solved failure through a group swap (see the module docstring).
    """

    failed: tuple[Element, ...]
    ratio: Fraction | None
    bottleneck_cut: tuple[str, ...]
    num_compute: int
    derived: bool = False

    @property
    def disconnected(self) -> bool:
        """True when some compute node no longer reaches another."""
        return self.ratio is None

    @property
    def algbw(self) -> float:
        """N / r* of what remains (0 when disconnected)."""
        return 0.0 if self.ratio is None else float(self.num_compute / self.ratio)

    def to_dict(self) -> dict[str, Any]:
        """``{"failed", "cut_ratio", "bottleneck_cut", "disconnected", "algbw"}``; a link is
        ``[src, dst]``, ``cut_ratio`` a ``"p/q"`` string or null when disconnected."""
        return {
            "failed": [list(e) if isinstance(e, tuple) else e for e in self.failed],
            "cut_ratio": None if self.ratio is None else fraction_text(self.ratio),
            "bottleneck_cut": list(self.bottleneck_cut),
            "disconnected": self.disconnected,
            "algbw": round(self.algbw, 3),
        }


@dataclass(frozen=True)
class FailureStudy:
    """The base r* and the failures studied (in the order of :func:`failure_elements`, or of
    the draws); ``draws`` records ``{"failures": K, "seed": S, "trials": T}`` of random ones."""

    topology: Topology
    kind: str
    base: CutRatio
    failures: tuple[Failure, ...]
    solves: int
    draws: Mapping[str, int] | None = None

    def ranked(self) -> list[Failure]:
        """The failures, most critical first: disconnections, then by r* (largest first)."""
        order = {f: i for i, f in enumerate(self.failures)}
        return sorted(
            self.failures,
            key=lambda f: (f.ratio is not None, -(f.ratio or 0), order[f]),
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"base_cut_ratio": "p/q", "failures": [...]}``, failures ranked, then ``topology``,
        ``fail``, ``base_algbw``, ``solves`` and, for random failures, ``random``
        (``{"failures": K, "seed": S, "trials": T}``)."""
        return {
            "base_cut_ratio": fraction_text(self.base.ratio),
            "failures": [f.to_dict() for f in self.ranked()],
            "topology": self.topology.name,
            "fail": self.kind,
            "base_algbw": round(self.base.algbw, 3),
            "solves": self.solves,
            **({} if self.draws is None else {"random": dict(self.draws)}),
        }


def failure_elements(topology: Topology, kind: str) -> list[Element]:
    """Every element of ``kind`` that can fail, in declaration order.

    Raises
    ------
    OptCollError
        Unknown kind, or ``nics`` on a topology with no NIC.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> failure_elements(load_topology("ring:3"), "links")
    [('n0', 'n1'), ('n1', 'n2'), ('n2', 'n0')]
    >>> failure_elements(load_topology("dgx-a100:1"), "nics")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.OptCollError: topology 'dgx-a100:1' has no NIC (a switch whose id contains 'nic')
    """
    if kind == "links":
        pairs: dict[tuple[str, str], None] = {}
        for u, v in topology.capacity:
            if (v, u) not in pairs:
                pairs[(u, v)] = None
        return list(pairs)
    if kind == "nodes":
        return list(topology.node_ids)
    if kind == "nics":
        nics: list[Element] = [w for w in topology.switch_nodes if "nic" in w.lower()]
        if not nics:
            raise OptCollError(
                f"topology {topology.name!r} has no NIC (a switch whose id contains 'nic')"
            )
        return nics
    raise OptCollError(f"unknown failure kind {kind!r}; valid kinds are {', '.join(FAILURE_KINDS)}")


def _gone(failed: Sequence[Element]) -> tuple[set[str], set[Arc]]:
    nodes = {e for e in failed if isinstance(e, str)}
    arcs: set[Arc] = set()
    for e in failed:
        if isinstance(e, tuple):
            arcs |= {e, (e[1], e[0])}
    return nodes, arcs


def failed_topology(topology: Topology, failed: Sequence[Element]) -> Topology:
    """``topology`` without the failed nodes and links.

    Raises
    ------
    TopologyError
        The compute nodes no longer reach each other, or fewer than two are left.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> t = failed_topology(load_topology("ring:5"), ["n3"])
    >>> t.name, t.num_compute, len(t.capacity)
    ('ring:5~failed', 4, 6)
    >>> len(failed_topology(load_topology("ring:5"), [("n0", "n1")]).capacity)
    8
    """
    nodes, arcs = _gone(failed)
    links = []
    for link in topology.links:
        kept = [a for a in link.arcs() if a not in arcs and not (set(a) & nodes)]
        if len(kept) == 2:
            links.append(link)
        elif kept:
            links.append(Link(*kept[0], link.bandwidth, link.latency))
    name = topology.name + "~failed"
    described = ", ".join(e if isinstance(e, str) else f"{e[0]} <-> {e[1]}" for e in failed)
    return Topology(
        name,
        [n for n in topology.nodes if n.id not in nodes],
        links,
        topology.bandwidth_unit,
        f"{topology.description}; failed: {described}" if topology.description else described,
        [v for v in topology.compute_nodes if v not in nodes],
    )


def _remaining_capacity(topology: Topology, failed: Sequence[Element]) -> dict[Arc, Fraction]:
    nodes, arcs = _gone(failed)
    return {
        a: c
        for a, c in topology.capacity.items()
        if a not in arcs and a[0] not in nodes and a[1] not in nodes
    }


def _disconnecting_set(
    topology: Topology, failed: Sequence[Element], capacity: Mapping[Arc, Fraction]
) -> tuple[str, ...] | None:
    """A node set holding a compute node, missing another, no arc of ``capacity`` leaving
    it; None when every remaining compute node reaches every other one."""
    nodes, _ = _gone(failed)
    compute = [v for v in topology.compute_nodes if v not in nodes]
    out: dict[str, list[str]] = {v: [] for v in topology.node_ids if v not in nodes}
    into: dict[str, list[str]] = {v: [] for v in out}
    for u, v in capacity:
        out[u].append(v)
        into[v].append(u)

    if len(compute) < 2:
        return None
    forward = reachable(out, compute[0])
    if any(c not in forward for c in compute):
        side = forward
    else:
        backward = reachable(into, compute[0])
        if all(c in backward for c in compute):
            return None
        side = set(out) - backward
    order = {v: i for i, v in enumerate(topology.node_ids)}
    return tuple(sorted(side, key=order.__getitem__))


def _solve_failure(task: tuple[dict[str, Any], tuple[Element, ...]]) -> dict[str, Any]:
    """r* and bottleneck cut after one failure (runs on a worker)."""
    data, failed = task
    topology = Topology.from_dict(data)
    capacity = _remaining_capacity(topology, failed)
    side = _disconnecting_set(topology, failed, capacity)
    if side is not None:
        return {"ratio": None, "cut": side, "usable": None}
    bound = optimal_cut_ratio_core(failed_topology(topology, failed))
    order = {v: i for i, v in enumerate(topology.node_ids)}
    usable = None
    if bound.usable is not bound.topology:
        usable = {f"{u}\0{v}": str(c) for (u, v), c in bound.usable.capacity.items()}
    return {
        "ratio": str(bound.ratio),
        "cut": tuple(sorted(bound.bottleneck_cut, key=order.__getitem__)),
        "usable": usable,
    }


def group_swaps(topology: Topology) -> dict[str, dict[str, str]]:
    """Verified automorphisms swapping a representative group with each group like it.

    Groups (:attr:`Node.group`) are taken in declaration order; a group whose members'
    types match, position by position, those of an earlier representative, and whose
    member-by-member swap with it maps every arc to an arc of equal capacity, gets that
    swap (a node mapping, identity elsewhere), keyed by the group's name.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> swaps = group_swaps(load_topology("dgx-a100:4"))
    >>> sorted(swaps), swaps["box2"]["b0.gpu3"], swaps["box2"]["b2.nic1"]
    (['box1', 'box2', 'box3'], 'b2.gpu3', 'b0.nic1')
    """
    members: dict[str, list[str]] = {}
    for node in topology.nodes:
        if node.group is not None:
            members.setdefault(node.group, []).append(node.id)
    capacity = topology.capacity
    representatives: list[str] = []
    swaps: dict[str, dict[str, str]] = {}
    for group, ids in members.items():
        for rep in representatives:
            rep_ids = members[rep]
            if len(rep_ids) != len(ids) or any(
                topology.node[a].type != topology.node[b].type
                for a, b in zip(rep_ids, ids, strict=True)
            ):
                continue
            swap = dict(zip(rep_ids, ids, strict=True)) | dict(zip(ids, rep_ids, strict=True))
            if preserves_capacity(capacity, swap):
                swaps[group] = swap
                break
        else:
            representatives.append(group)
    return swaps


def _image(element: Element, swap: Mapping[str, str]) -> Element:
    if isinstance(element, str):
        return swap.get(element, element)
    u, v = swap.get(element[0], element[0]), swap.get(element[1], element[1])
    return (u, v)


def _canonical(
    topology: Topology, element: Element, swaps: Mapping[str, Mapping[str, str]]
) -> tuple[Element, Mapping[str, str]]:
    """The element a swap maps ``element`` to (one touching a representative group), and
    that swap (empty: ``element`` is its own representative)."""
    ends = (element,) if isinstance(element, str) else element
    for end in ends:
        group = topology.node[end].group
        if group is not None and group in swaps:
            swap = swaps[group]
            return _image(element, swap), swap
    return element, {}


def _same_link(element: Element, pairs: set[Element]) -> Element:
    """``element`` as :func:`failure_elements` orders it (a link may appear reversed)."""
    if isinstance(element, tuple) and element not in pairs:
        return (element[1], element[0])
    return element


def failure_study(
    topology: Topology,
    kind: str = "links",
    *,
    random_failures: int | None = None,
    seed: int = 0,
    trials: int = 1,
    symmetry: bool = True,
    workers: int | None = None,
    dask: Any = None,
    progress: bool = False,
) -> FailureStudy:
    """r* after every single failure of ``kind`` (or random ones), exactly, with certificates.

    Parameters
    ----------
    topology : Topology
    kind : {"links", "nodes", "nics"}
        What fails (see the module docstring).
    random_failures : int, optional
        Instead of every single failure: ``trials`` failures of ``random_failures``
        distinct elements each, drawn with ``random.Random(seed)``.
    symmetry : bool
        Solve one single failure per class of group swaps (see the module docstring);
        False solves every failure (the reference the benchmark compares with).
    workers, dask, progress
        The engine (:func:`optcoll.studies.engines.run_tasks`).

    Raises
    ------
    ArgumentError
        An argument of the wrong type or value (the message names it).
    OptCollError
        No element of that kind, more random failures than elements.
    SolveError
        A failure's solve failed on a worker (the message says which).
    """
    topology = topology_argument(topology)
    kind = choice_argument(kind, FAILURE_KINDS, "kind")
    if random_failures is not None:
        random_failures = count_argument(random_failures, "random_failures")
    trials = check_count(count_argument(trials, "trials"), MAX_TRIALS, "trials")
    if workers is not None:
        workers = count_argument(workers, "workers")
    elements = failure_elements(topology, kind)
    if random_failures is not None:
        if random_failures > len(elements):
            raise OptCollError(
                f"--random {random_failures}: topology {topology.name!r} has "
                f"{len(elements)} {kind}; choose 1 to {len(elements)}"
            )
        generator = random.Random(seed)
        scenarios = [tuple(generator.sample(elements, random_failures)) for _ in range(trials)]
        plan: list[tuple[tuple[Element, ...], tuple[Element, ...], Mapping[str, str]]] = [
            (s, s, {}) for s in scenarios
        ]
    else:
        swaps = group_swaps(topology) if symmetry else {}
        pairs = set(elements)
        plan = []
        for element in elements:
            image, swap = _canonical(topology, element, swaps)
            plan.append(((element,), (_same_link(image, pairs),), swap))
    base = optimal_cut_ratio_core(topology)
    unique = list(dict.fromkeys(solved for _, solved, _ in plan))
    data = topology.to_dict()
    outcomes: dict[tuple[Element, ...], dict[str, Any]] = {}
    for index, outcome in run_tasks(
        _solve_failure,
        [(data, failed) for failed in unique],
        workers=workers,
        dask=dask,
        progress=progress,
        description="failures",
    ):
        if isinstance(outcome, TaskError):
            raise SolveError(f"failure of {list(unique[index])}: {outcome.message}")
        outcomes[unique[index]] = outcome
    failures = [
        _certified(topology, failed, solved, swap, outcomes[solved])
        for failed, solved, swap in plan
    ]
    draws = None
    if random_failures is not None:
        draws = {"failures": random_failures, "seed": seed, "trials": trials}
    return FailureStudy(topology, kind, base, tuple(failures), len(unique), draws)


def _certified(
    topology: Topology,
    failed: tuple[Element, ...],
    solved: tuple[Element, ...],
    swap: Mapping[str, str],
    outcome: Mapping[str, Any],
) -> Failure:
    """The failure ``failed`` from the solve of ``solved`` (its image under ``swap``), its
    cut mapped back and re-checked exactly on what remains after ``failed``."""
    order = {v: i for i, v in enumerate(topology.node_ids)}
    cut = tuple(sorted((swap.get(v, v) for v in outcome["cut"]), key=order.__getitem__))
    nodes, _ = _gone(failed)
    num_compute = sum(1 for v in topology.compute_nodes if v not in nodes)
    capacity = _remaining_capacity(topology, failed)
    if outcome["usable"] is not None:  # a forwardable part of the remaining capacity
        remaining, capacity = capacity, {}
        for arc, text in outcome["usable"].items():
            u, v = arc.split("\0")
            capacity[(swap.get(u, u), swap.get(v, v))] = Fraction(text)
        if any(c > remaining.get(arc, 0) for arc, c in capacity.items()):
            raise SolveError(
                f"internal error: usable capacity above the links after {list(failed)}"
            )
    inside = set(cut)
    leaving = sum(
        (c for (u, v), c in capacity.items() if u in inside and v not in inside), Fraction(0)
    )
    cut_compute = sum(1 for v in cut if topology.node[v].is_compute)
    ratio = None if outcome["ratio"] is None else Fraction(outcome["ratio"])
    if ratio is None:
        valid = leaving == 0 and 0 < cut_compute < num_compute
    else:
        valid = leaving > 0 and Fraction(cut_compute) / leaving == ratio
    if not valid:
        raise SolveError(
            f"internal error: the cut certifying the failure of {list(failed)} does not "
            f"attain its value"
        )
    return Failure(failed, ratio, cut, num_compute, derived=failed != solved)
