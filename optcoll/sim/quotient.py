"""Quotient simulation: one task per orbit under a group that acts freely on the nodes.

On a torus or a hypercube the translations form a group ``H`` of automorphisms that acts
*regularly* on the compute nodes: for every pair of nodes exactly one element maps the
first to the second. A schedule packed symmetrically
(:func:`optcoll.schedules.packing.pack_arborescences`) holds the trees of one root and
their images under ``H`` (:class:`~optcoll.core.schedule.ImageTrees`), so every task of
its task graph (:func:`optcoll.sim.simulator.tree_tasks`) is ``g(t)`` for exactly one
task ``t`` of the representative root's trees and one ``g`` in ``H``. A family's
declared group (:func:`optcoll.graph.family_symmetry.declared_group`, e.g. a dragonfly's
group rotations) acts *freely* but not transitively: the schedule holds the trees of one
root per orbit of compute nodes, and every task is ``g(t)`` for exactly one ``g`` and one
task ``t`` of the representative roots' trees (:func:`free_quotient`); the argument below
is the same.

**Why one orbit suffices.** Let every link and every connection (a tree edge's sender
and receiver) serve its waiting slices in their place in the data and then first come
first served, and let things that happen at the same time happen first come first served,
ties broken by a key shared by all translates of a task
(:func:`optcoll.sim.simulator.simulate` with ``ties``). ``g`` preserves every link's
bandwidth and latency (checked exactly, link by link), so if the run is in state ``S``
it is also in state ``g(S)``: the run is *equivariant*, and link ``g(L)`` does at every
moment what link ``L`` does, with the translated tasks. ``H`` acts on the links freely
(checked: every link orbit has ``|H|`` links), so on link ``L`` the translates of the
representative tasks that use a link of ``L``'s orbit appear exactly once each. The
quotient run therefore keeps one link per orbit and one connection per orbit, feeds
each representative task to its links' and connection's orbit representatives, and
gives the same completion time, float for float, as the full run in the same order
(``tests/sim/test_quotient.py`` compares them): ``|H|`` times fewer tasks.

An NVLS allreduce on ``multimem`` switches (aggregation trees,
:func:`aggregation_quotient`) folds the same way under the rotation of the GPUs, its
switches fixed: GPU ``i``'s trees are GPU 0's moved ``i`` places.

:func:`expanded_transfers` maps the quotient run's transfers back to every translate
and :func:`check_transfers` checks the whole timetable on the full topology: no link
sends two slices at once, no slice leaves a node before it has arrived there and every
node receives every piece of every chunk.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.schedules.packing import pack_arborescences
>>> from optcoll.sim.simulator import Network, schedule_tasks, simulate
>>> topo = build("torus:4x4")
>>> schedule = pack_arborescences(topo)
>>> network = Network.of(topo)
>>> quotient = schedule_quotient(schedule, topo, network)
>>> quotient.order, len(quotient.classes)
(16, 4)
>>> run = simulate_quotient(schedule, quotient, network, 2**20, overhead=0.0)
>>> graph = schedule_tasks(schedule, network, 2**20)
>>> full = simulate(graph, network, 2**20, overhead=0.0, ties=translate_ties(schedule, graph))
>>> run.time_us == full.time_us
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from optcoll.core.aggregation import AggregationSchedule, AggregationTree
from optcoll.core.loads import PHASES
from optcoll.core.schedule import ImageTrees, Rotation, Rotations, Schedule, Tree
from optcoll.core.topology import Topology
from optcoll.exceptions import ScheduleError
from optcoll.graph.symmetry import automorphism_group
from optcoll.sim.simulator import (
    DEFAULT_OVERHEAD,
    DEFAULT_SLICE,
    Network,
    Simulation,
    TaskGraph,
    _slices,
    aggregation_tasks,
    data_bytes,
    simulate,
    tree_tasks,
)

__all__ = [
    "Quotient",
    "regular_quotient",
    "free_quotient",
    "schedule_quotient",
    "aggregation_quotient",
    "aggregation_quotient_tasks",
    "quotient_tasks",
    "simulate_quotient",
    "translate_ties",
    "tree_representatives",
    "topology_quotient",
    "check_expanded",
]


@dataclass(frozen=True)
class Quotient:
    """A group acting regularly on a network's compute nodes, as the simulator uses it.

    Attributes
    ----------
    group : Rotation or Rotations
        The group (its elements move the nodes of the network).
    elements : numpy array
        ``(|H|, nodes)``: row ``g`` is element ``g``'s image of every node (indices
        in ``nodes`` order); row 0 is the identity.
    nodes : tuple of str
        The network's nodes (compute nodes first, in the topology's order).
    root : int
        The first representative root.
    arc_class : tuple of int
        Per arc of the network (its index), the index of its orbit's representative
        (the orbit's first arc).
    classes : tuple of int
        The representatives' indices, one per link orbit.
    roots : tuple of int
        The representative roots, ``root`` first: every compute node is
        ``elements[g, r]`` for exactly one ``g`` and one ``r`` of them (one root when
        the group acts regularly on the compute nodes).
    """

    group: Rotation | Rotations
    elements: Any
    nodes: tuple[str, ...]
    root: int
    arc_class: tuple[int, ...]
    classes: tuple[int, ...]
    roots: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.roots:
            object.__setattr__(self, "roots", (self.root,))

    @property
    def order(self) -> int:
        """``|H|``: the number of compute nodes."""
        return int(self.elements.shape[0])

    def network(self, network: Network) -> Network:
        """``network`` with every arc's number replaced by its orbit representative's,
        so that paths run on one link per orbit."""
        arc_class = self.arc_class
        return replace(network, index={a: arc_class[i] for a, i in network.index.items()})

    def carrier(self, node: str) -> int:
        """The element that takes a representative root to compute node ``node``."""
        return self._carriers()[self._numbers()[node]][0]

    def _numbers(self) -> dict[str, int]:
        cached = self.__dict__.get("_number")
        if cached is None:
            cached = {v: i for i, v in enumerate(self.nodes)}
            object.__setattr__(self, "_number", cached)
        return cached

    def _carriers(self) -> dict[int, tuple[int, int]]:
        """``compute node -> (g, r)``: element ``g`` takes representative root ``r`` there."""
        cached = self.__dict__.get("_carrier")
        if cached is None:
            cached = {
                int(v): (g, r)
                for r in self.roots
                for g, v in enumerate(self.elements[:, r].tolist())
            }
            object.__setattr__(self, "_carrier", cached)
        return cached

    def inverse(self) -> Any:
        """``(|H|, nodes)``: row ``g`` is element ``g``'s inverse (images of every node)."""
        cached = self.__dict__.get("_inverse_elements")
        if cached is None:
            cached = self.elements.argsort(axis=1)
            object.__setattr__(self, "_inverse_elements", cached)
        return cached

    def lane_class(self, src: str, dst: str) -> tuple[str, str]:
        """The representative of the connection ``(src, dst)``'s orbit: the pair moved
        so that ``src`` is a representative root."""
        number = self._numbers()
        g, r = self._carriers()[number[src]]
        return self.nodes[r], self.nodes[int(self.inverse()[g, number[dst]])]


def regular_quotient(
    topology: Topology, network: Network, group: Rotation | Rotations
) -> Quotient | None:
    """The :class:`Quotient` of ``group``, or None unless it acts regularly on the compute
    nodes, maps every link to a link of equal bandwidth and latency (exactly, as the
    simulator reads them) and moves every link of the network (no element but the
    identity fixes one): :func:`free_quotient` with the first compute node as the one
    representative root.

    ``O(|H| * links)`` with numpy.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> topo = build("ring:6")
    >>> group = pack_arborescences(topo).trees.group
    >>> quotient = regular_quotient(topo, Network.of(topo), group)
    >>> quotient.order, [network_arc for network_arc in quotient.classes]
    (6, [0, 1])
    """
    return free_quotient(topology, network, group, topology.compute_nodes[:1])


def free_quotient(
    topology: Topology, network: Network, group: Rotation | Rotations, roots: Sequence[str]
) -> Quotient | None:
    """The :class:`Quotient` of ``group`` with representative roots ``roots``, or None
    unless every compute node is the image of exactly one root under exactly one element
    (the group acts freely on the compute nodes, ``roots`` one per orbit), every element
    maps every link to a link of equal bandwidth and latency (exactly, as the simulator
    reads them) and no element but the identity fixes a link (every link orbit has
    ``|H|`` links).

    The argument of the module docstring holds as it is: the tasks of the trees of
    ``g(r)`` are the images under ``g`` of those of ``r``'s trees, one image per
    (element, representative task), so one link per orbit and one connection per orbit
    carry the run, ``|H|`` times fewer tasks. ``O(|H| * links)`` with numpy.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.graph.family_symmetry import declared_group
    >>> topo = build("dragonfly:a=4,p=1,h=1,g=5")
    >>> group = declared_group(topo)  # the 5 group rotations: 4 root orbits
    >>> rotation = Rotation(group.orders[0], group.generators[0])
    >>> quotient = free_quotient(topo, Network.of(topo), rotation, group.representatives)
    >>> quotient.order, len(quotient.roots), len(quotient.classes) * 5 == len(topo.capacity)
    (5, 4, True)
    >>> free_quotient(topo, Network.of(topo), rotation, group.representatives[:3]) is None
    True
    """
    import numpy as np

    compute = list(topology.compute_nodes)
    nodes = compute + sorted(set(topology.node) - set(compute))
    number = {v: i for i, v in enumerate(nodes)}
    generators = group.generators if isinstance(group, Rotations) else (group,)
    if any(v not in number for rotation in generators for v in rotation.images):
        return None
    if not roots or any(r not in number for r in roots):
        return None
    elements = np.asarray(Rotations(tuple(generators)).elements(len(nodes), number))
    n, order = len(compute), elements.shape[0]
    if order * len(roots) != n:
        return None
    root_numbers = [number[r] for r in roots]
    images = elements[:, root_numbers].ravel()
    if np.unique(images).size != n or images.max() >= n:
        return None  # not free on the compute nodes, or the roots not one per orbit
    arcs = network.arcs
    if not arcs:
        return None
    ends = np.array([[number[u], number[v]] for u, v in arcs], dtype=np.int64)
    size = len(nodes)
    code = ends[:, 0] * size + ends[:, 1]
    ordered = np.argsort(code)
    rate = np.asarray(network.rate)
    latency = np.asarray(network.latency)
    least = np.arange(len(arcs))
    for row in elements[1:]:
        image = row[ends[:, 0]] * size + row[ends[:, 1]]
        where = np.searchsorted(code, image, sorter=ordered).clip(0, len(arcs) - 1)
        found = ordered[where]
        if (code[found] != image).any():
            return None  # an arc onto a pair that is no link
        if (rate[found] != rate).any() or (latency[found] != latency).any():
            return None  # not an automorphism of the network as simulated
        if (found == np.arange(len(arcs))).any():
            return None  # fixes a link: not free on the links
        least = np.minimum(least, found)
    classes, counts = np.unique(least, return_counts=True)
    if (counts != order).any():
        return None
    return Quotient(
        group,
        elements,
        tuple(nodes),
        root_numbers[0],
        tuple(least.tolist()),
        tuple(classes.tolist()),
        tuple(root_numbers),
    )


def topology_quotient(topology: Topology, network: Network) -> Quotient | None:
    """The :class:`Quotient` of the translations of a direct-connect topology (every node
    a compute node), found among its automorphisms
    (:func:`optcoll.graph.symmetry.automorphism_group`, which checks every map exactly),
    or None: a topology with switches, or no group acting regularly on its nodes.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("torus:4x4")
    >>> topology_quotient(topo, Network.of(topo)).order
    16
    >>> topology_quotient(build("mesh:3x3"), Network.of(build("mesh:3x3"))) is None
    True
    """
    compute = list(topology.compute_nodes)
    if len(compute) != len(topology.node) or len(compute) < 2:
        return None
    number = {v: i for i, v in enumerate(compute)}
    arcs = {(number[u], number[v]): c for (u, v), c in topology.capacity.items()}
    found = automorphism_group(len(compute), arcs)
    if found is None or found.order != len(compute):
        return None
    generators = tuple(
        Rotation(m, {compute[i]: compute[j] for i, j in enumerate(g) if i != j})
        for m, g in zip(found.orders, found.generators, strict=True)
    )
    return regular_quotient(topology, network, Rotations(generators))


def schedule_quotient(schedule: Schedule, topology: Topology, network: Network) -> Quotient | None:
    """The :class:`Quotient` of a compact tree schedule whose group acts freely on the
    compute nodes with its representative trees' roots one per orbit
    (:func:`free_quotient`; None for any other schedule: it is simulated in full).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> topo = build("mesh:4x4")  # reflections fix no node but are not transitive
    >>> quotient = schedule_quotient(pack_arborescences(topo), topo, Network.of(topo))
    >>> quotient.order, len(quotient.roots)  # 4 reflections, 4 orbits of nodes
    (4, 4)
    >>> topo = build("mesh:3x3")  # the centre is fixed: simulated in full
    >>> schedule_quotient(pack_arborescences(topo), topo, Network.of(topo)) is None
    True
    """
    trees = schedule.trees
    if schedule.collective == "alltoall" or not isinstance(trees, ImageTrees):
        return None
    roots = list(dict.fromkeys(t.root for t in trees.representatives))
    return free_quotient(topology, network, trees.group, roots)


def aggregation_quotient(
    schedule: AggregationSchedule, topology: Topology, network: Network
) -> Quotient | None:
    """The :class:`Quotient` of an NVLS allreduce (aggregation trees through ``multimem``
    switches, :func:`optcoll.schedules.baselines.nvls_schedule`) under the rotation of the
    compute nodes by one place (switches fixed), or None: it is simulated in full.

    The rotation must be an automorphism of the network that moves every link
    (:func:`free_quotient` checks both exactly: a GPU's links to the switches all alike, as
    in ``nvl72`` and ``dgx-h100:1``), every tree's apex a compute node and every edge at a
    ``multimem`` switch (so a tree's only connection is its own issuing lane), and the
    trees of the ``i``-th compute node the images, in order, of those of the first under
    the rotation's ``i``-th power (edges compared as sets). Then every task of
    :func:`optcoll.sim.simulator.aggregation_tasks` is the image of one task of the first
    node's trees under one element, and the module docstring's argument gives the full
    run's time from those trees alone: ``N`` times fewer tasks, so plan can pipeline the
    candidate in slices as fine as the exported program's (``nvl72``: 648 trees, 146
    tasks each per slice; one slice of every chunk was 94,608 tasks).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines import nvls_schedule
    >>> topo = build("nvl72:nvls=1")
    >>> quotient = aggregation_quotient(nvls_schedule(topo), topo, Network.of(topo))
    >>> quotient.order, len(quotient.classes)  # each GPU's 9 tray links, both ways
    (72, 18)
    """
    compute = list(topology.compute_nodes)
    n, multimem = len(compute), network.multimem
    if n < 2 or len(schedule.trees) % n:
        return None
    if any(
        tree.apex not in topology.node or topology.node[tree.apex].type == "switch"
        or any(e.src not in multimem and e.dst not in multimem
               for e in (*tree.reduce_edges, *tree.multicast_edges))
        for tree in schedule.trees
    ):  # fmt: skip
        return None
    rotation = Rotation(n, {v: compute[(i + 1) % n] for i, v in enumerate(compute)})
    quotient = free_quotient(topology, network, rotation, compute[:1])
    if quotient is None:
        return None
    per_node = len(schedule.trees) // n
    of_apex: dict[str, list[AggregationTree]] = {}
    for tree in schedule.trees:
        of_apex.setdefault(tree.apex, []).append(tree)
    reps = of_apex.get(compute[0], [])
    if len(reps) != per_node or any(len(of_apex.get(v, ())) != per_node for v in compute):
        return None
    nodes = quotient.nodes
    for row in quotient.elements.tolist():
        image = {v: nodes[row[i]] for i, v in enumerate(nodes)}
        for rep, tree in zip(reps, of_apex[image[compute[0]]], strict=True):
            if _moved(rep, image) != _moved(tree, {}) or rep.chunks != tree.chunks:
                return None
    return quotient


def _moved(tree: AggregationTree, image: dict[str, str]) -> tuple[frozenset, frozenset]:
    """``tree``'s reduce and multicast edges as sets of paths, moved by ``image``."""
    return tuple(  # type: ignore[return-value]
        frozenset(tuple(image.get(v, v) for v in e.path) for e in edges)
        for edges in (tree.reduce_edges, tree.multicast_edges)
    )


def aggregation_quotient_tasks(
    schedule: AggregationSchedule,
    quotient: Quotient,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
) -> TaskGraph:
    """The task graph of the first compute node's trees of ``schedule`` (accepted by
    :func:`aggregation_quotient`) on one link per orbit: :func:`aggregation_tasks` on
    :meth:`Quotient.network`; its issuing lanes are the trees' own, one per orbit.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.baselines import nvls_schedule
    >>> from optcoll.sim.simulator import simulate
    >>> topo = build("dgx-h100:1,nvls=1")
    >>> network, schedule = Network.of(topo), nvls_schedule(topo)
    >>> quotient = aggregation_quotient(schedule, topo, network)
    >>> graph = aggregation_quotient_tasks(schedule, quotient, network, 2**20)
    >>> full = aggregation_tasks(schedule, network, 2**20)
    >>> len(full), len(graph)  # 8 trees of 19 tasks
    (152, 19)
    >>> round(simulate(graph, network, 2**20, ties=range(len(graph))).time_us, 3)
    10.243

    ``tests/sim/test_quotient.py`` checks it against the full run in the same order.
    """
    root = quotient.nodes[quotient.root]
    reps = tuple(t for t in schedule.trees if t.apex == root)
    return aggregation_tasks(
        replace(schedule, trees=reps), quotient.network(network), size,
        slice_bytes=slice_bytes,
    )  # fmt: skip


def quotient_tasks(
    trees: Sequence[Tree],
    quotient: Quotient,
    network: Network,
    chunk: float,
    phases: Sequence[bool],
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
    priority: str = "progress",
    starts: Sequence[Sequence[float]] | None = None,
) -> TaskGraph:
    """The task graph of the representative ``trees`` (rooted at the quotient's
    representative roots) on one link and one connection per orbit: :func:`tree_tasks` on
    :meth:`Quotient.network`, connections renamed to their orbit's representative."""
    graph = TaskGraph()
    tree_tasks(
        graph, quotient.network(network), trees, chunk, phases, slice_bytes=slice_bytes,
        priority=priority, starts=starts,
    )  # fmt: skip
    renamed: dict[Any, int] = {}
    lane_number = {}
    for key, number in graph.lanes.items():
        lane_number[number] = renamed.setdefault(quotient.lane_class(*key), len(renamed))
    graph.lane = [lane_number[lane] if lane >= 0 else lane for lane in graph.lane]
    graph.lanes = renamed
    return graph


def simulate_quotient(
    schedule: Schedule,
    quotient: Quotient,
    network: Network,
    size: int,
    *,
    overhead: float = DEFAULT_OVERHEAD,
    slice_bytes: int | None = DEFAULT_SLICE,
    priority: str = "progress",
    starts: Sequence[Sequence[float]] | None = None,
    graph: TaskGraph | None = None,
) -> Simulation:
    """The run of ``schedule`` (its representative trees, ``starts`` per representative
    tree for a timetable) from its quotient: the completion time of the full run in the
    equivariant order (``ties``: the task's number among the representative tasks), every
    link's busy time and timeline copied from its orbit's representative, and the full
    run's number of tasks. ``graph``: the quotient task graph if already built."""
    if graph is None:
        graph = schedule_quotient_tasks(
            schedule, quotient, network, size, slice_bytes=slice_bytes, priority=priority,
            starts=starts,
        )  # fmt: skip
    run = simulate(graph, network, size, overhead=overhead, ties=range(len(graph)))
    return expand_simulation(run, quotient, network)


def schedule_quotient_tasks(
    schedule: Schedule,
    quotient: Quotient,
    network: Network,
    size: int,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
    priority: str = "progress",
    starts: Sequence[Sequence[float]] | None = None,
) -> TaskGraph:
    """:func:`quotient_tasks` of a compact schedule for a ``size``-byte collective."""
    trees = schedule.trees
    assert isinstance(trees, ImageTrees)  # schedule_quotient accepted it
    chunk = data_bytes(schedule.collective, size, len(schedule.compute_nodes)) / schedule.k
    return quotient_tasks(
        trees.representatives, quotient, network, chunk, PHASES[schedule.collective],
        slice_bytes=slice_bytes, priority=priority, starts=starts,
    )  # fmt: skip


def expand_simulation(run: Simulation, quotient: Quotient, network: Network) -> Simulation:
    """A quotient run as the full run: every link's busy time and timeline are its
    orbit representative's, and the tasks ``|H|`` times as many."""
    arc_class = quotient.arc_class
    busy, timeline = {}, {}
    for i, arc in enumerate(network.arcs):
        rep = network.arcs[arc_class[i]]
        if rep in run.busy_us:
            busy[arc] = run.busy_us[rep]
            timeline[arc] = list(run.timeline[rep])
    return Simulation(run.size, run.time_us, busy, timeline, run.tasks * quotient.order)


def translate_ties(schedule: Schedule, graph: TaskGraph) -> list[int]:
    """The equivariant keys of the full task graph of a compact schedule
    (:func:`optcoll.sim.simulator.schedule_tasks`), numbered as :func:`quotient_tasks`
    numbers the representative tasks: every tree builds the tasks of its representative
    (:func:`tree_representatives`), in the same order, so its tasks take the keys of its
    representative's."""
    trees = schedule.trees
    assert isinstance(trees, ImageTrees)
    reps = trees.representatives
    units = [t.chunks * len(t.edges) for t in reps]
    per_unit, rest = divmod(len(graph), len(trees) // len(reps) * sum(units))
    if rest:
        raise ScheduleError("the task graph is not one of this schedule's trees")
    first = [0]
    for u in units:
        first.append(first[-1] + u * per_unit)
    keys: list[int] = []
    for rep in tree_representatives(trees):
        keys.extend(range(first[rep], first[rep + 1]))
    return keys


def tree_representatives(trees: ImageTrees) -> list[int]:
    """Per tree of ``trees``, the index of the representative tree it is an image of.

    The trees come root by root (:meth:`~optcoll.core.schedule.Rotations.expand` orders
    them so, stably), root ``g(r)``'s trees the images of those of its orbit's
    representative root ``r``, in the representatives' order. With several representative
    roots (a group acting freely, not transitively) tree ``i`` is not in general the image
    of representative ``i mod`` their number.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> from optcoll.schedules.packing import pack_arborescences
    >>> trees = pack_arborescences(build("mesh:4x4")).trees  # 4 root orbits of 4 nodes
    >>> len(trees.representatives), tree_representatives(trees)[:8]  # not i mod 6
    (6, [0, 1, 2, 3, 0, 2, 3, 4])
    """
    reps = trees.representatives
    of_root: dict[str, list[int]] = {}
    for number, tree in enumerate(reps):
        of_root.setdefault(tree.root, []).append(number)
    generators = trees.group.generators if isinstance(trees.group, Rotations) else (trees.group,)
    orbit_root = {}
    for root in of_root:  # every compute node's representative root: its orbit's search
        orbit_root[root] = root
        ahead = [root]
        for v in ahead:
            for rotation in generators:
                w = rotation.images.get(v, v)
                if w not in orbit_root:
                    orbit_root[w] = root
                    ahead.append(w)
    found: list[int] = []
    seen: dict[str, int] = {}
    for tree in trees:
        found.append(of_root[orbit_root[tree.root]][seen.get(tree.root, 0)])
        seen[tree.root] = seen.get(tree.root, 0) + 1
    return found


def check_expanded(
    schedule: Schedule,
    quotient: Quotient,
    network: Network,
    size: int,
    run: Simulation,
    *,
    slice_bytes: int | None = DEFAULT_SLICE,
    priority: str = "progress",
    starts: Sequence[Sequence[float]] | None = None,
) -> int:
    """Check a recorded quotient run (``simulate(..., record=True)`` of
    :func:`schedule_quotient_tasks`) as the timetable of the whole topology; the number
    of transfers checked.

    Every representative transfer (the representative tasks rebuilt on the real links)
    is sent by every element ``g`` of the group at the same times on link ``g(L)`` of
    the full network, ``L`` its own link, and then: no link sends two slices at once
    (its spans, sorted, do not overlap); every slice leaves a node only after it has
    arrived there (a task's first hop begins no earlier than each task it waits for
    ends, its last byte one link latency after its last hop; each hop begins a latency
    after the one before: the same for every translate, whose times are the
    representative's); and in a forward phase (an allgather) every slice of every tree
    reaches every compute node. Link ``h(L)`` carries transfer ``t`` of translate ``g``
    exactly when ``L`` carries it of translate ``h^-1 g``, at the same times, so the
    spans of every link of an orbit are those of its first link (the least of the
    images of a link under every element, found from the elements' rows): the links are
    checked one per orbit, after checking that no two elements move a link carrying a
    transfer onto the same link (two translates of one slice at once).
    ``O(|H| * links + T log T)`` for ``T`` representative transfers (not ``|H|`` copies
    of every transfer, sorted).

    Raises
    ------
    ScheduleError
        Naming the link, task or tree at fault.
    """
    import numpy as np

    if run.transfers is None:
        raise ScheduleError("the run was not recorded (simulate(..., record=True))")
    trees = schedule.trees
    assert isinstance(trees, ImageTrees)
    chunk = data_bytes(schedule.collective, size, len(schedule.compute_nodes)) / schedule.k
    phases = PHASES[schedule.collective]
    real = TaskGraph()
    tree_tasks(
        real, network, trees.representatives, chunk, phases, slice_bytes=slice_bytes,
        priority=priority, starts=starts,
    )  # fmt: skip
    number = quotient._numbers()
    ends = np.array([[number[u], number[v]] for u, v in network.arcs], dtype=np.int64)
    size_nodes = len(quotient.nodes)
    code = ends[:, 0] * size_nodes + ends[:, 1]
    ordered = np.argsort(code)
    # every element's image of every arc (row g: g's permutation of the arcs)
    images = []
    for row in quotient.elements:
        image = row[ends[:, 0]] * size_nodes + row[ends[:, 1]]
        found = ordered[np.minimum(np.searchsorted(code, image, sorter=ordered), len(code) - 1)]
        if (code[found] != image).any():
            a = network.arcs[int(np.flatnonzero(code[found] != image)[0])]
            raise ScheduleError(f"an element of the group moves link {a[0]}->{a[1]} off the links")
        images.append(found)
    translates = np.sort(np.array(images), axis=0)  # per arc, the links it is moved onto
    task, hop, begin, end = (np.array(column) for column in zip(*run.transfers, strict=True))
    arc = np.array([real.path[t][h] for t, h in zip(task.tolist(), hop.tolist(), strict=True)])
    if len(arc) != sum(len(p) for p in real.path):
        raise ScheduleError("the run did not send every slice on every hop")
    # an arc moved twice onto one link: the translates of each of its transfers coincide
    twice = np.flatnonzero((translates[1:] == translates[:-1]).any(axis=0)[arc] & (begin < end))
    if len(twice):
        a = network.arcs[int(translates[0, arc[twice[0]]])]
        raise ScheduleError(
            f"link {a[0]}->{a[1]} sends two slices at once (at {float(begin[twice[0]])} µs)"
        )
    # every link's spans are its orbit's first link's: (t, g) on h(L) is (t, h^-1 g) on L
    links = translates[0, arc]
    order = np.lexsort((begin, links))
    links, begins, finishes = links[order], begin[order], end[order]
    same = links[1:] == links[:-1]
    clash = np.flatnonzero(same & (begins[1:] < finishes[:-1]))
    if len(clash):
        a = network.arcs[int(links[clash[0]])]
        raise ScheduleError(
            f"link {a[0]}->{a[1]} sends two slices at once (at {float(begins[clash[0] + 1])} µs)"
        )
    # data before it leaves: per task its hops' begins and its completion
    latency = network.latency
    first: dict[tuple[int, int], float] = {}
    last: dict[tuple[int, int], float] = {}
    for t, h, b, e in run.transfers:
        first[(t, h)] = b
        last[(t, h)] = e
    for t, path in enumerate(real.path):
        for h in range(1, len(path)):
            if first[(t, h)] < first[(t, h - 1)] + latency[path[h - 1]]:
                raise ScheduleError(f"task {t} enters hop {h} before its head arrived")
        done = last[(t, len(path) - 1)] + latency[path[-1]] if path else None
        for successor in real.successors[t]:
            if done is not None and real.path[successor]:
                if first[(successor, 0)] < done:
                    raise ScheduleError(
                        f"task {successor} leaves before the data of task {t} arrived"
                    )
    if any(phases):
        return quotient.order * len(links)
    # a forward phase: each slice of each tree reaches every compute node, on every translate
    n = len(schedule.compute_nodes)
    head = np.array([ends[p[-1], 1] if p else -1 for p in real.path])
    position = 0
    for tree in trees.representatives:
        pieces = tree.chunks * _slices(chunk, slice_bytes)[0]
        block = head[position : position + pieces * len(tree.edges)].reshape(pieces, -1)
        position += pieces * len(tree.edges)
        root = number[tree.root]
        for row in quotient.elements:
            reached = np.sort(np.hstack((row[block], np.full((pieces, 1), row[root]))), axis=1)
            if (reached != np.arange(n)).any():
                raise ScheduleError(f"a slice of a tree of {tree.root} misses a node")
    return quotient.order * len(links)
