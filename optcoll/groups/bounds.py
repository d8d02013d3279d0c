"""Process groups' bounds: the optimum of one group alone and of concurrent groups.

The model — groups, relaying (``members`` or ``any``) — is
:mod:`optcoll.core.process_groups`; members copy and nothing else does.

**One group.** Its optimum is the cut ratio of the group on that graph,
``r*_g = max |S ∩ g| / B+(S)`` over node sets ``S`` holding some but not all
members: the allgather optimum of :mod:`optcoll.bounds.cut_ratio` with the group as the
compute nodes. That bound is attained when every relay has at least as much
capacity in as out (:mod:`formulations.multicast`); when some relay has less
(for instance a non-member GPU with more bandwidth out than in, retyped as a
switch), the group's optimum is taken from the exact multicast LP instead, and
the cut ratio is a lower bound only.

**Concurrent groups.** The optimal time is the exact optimum of an LP with two
exact forms (:data:`FORMS`, :func:`concurrent_groups_optimum`): the tree-column
form of :mod:`optcoll.groups.tree_columns` (default: faster on every class measured,
``benchmarks/groups.py``) and the edge form of :mod:`optcoll.groups.concurrent`; both
are proved by exact LP duality, and their duals name the binding links and the
groups that share them.

Examples
--------
>>> from optcoll import load_topology
>>> from optcoll.io.process_groups import parse_groups
>>> topo = load_topology("dgx-a100:2")
>>> groups = parse_groups(topo, "strided:2", relay="members")
>>> groups.groups[0]
('b0.gpu0', 'b1.gpu0')
>>> group_optimum(groups, 0).ratio
Fraction(1, 25)
>>> group_optimum(parse_groups(topo, "strided:2", relay="any"), 0).ratio
Fraction(1, 200)
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from optcoll.bounds.cut_ratio import optimal_cut_ratio_core
from optcoll.core.arguments import (
    choice_argument,
    instance_argument,
)
from optcoll.core.process_groups import ProcessGroups
from optcoll.core.rational import fraction_text
from optcoll.core.topology import Topology

if TYPE_CHECKING:
    from optcoll.groups.concurrent import ConcurrentGroups

__all__ = [
    "FORMS",
    "concurrent_groups_optimum",
    "GroupOptimum",
    "group_optimum",
    "GroupsBound",
    "groups_bound",
]


#: The exact forms of the concurrent-groups LP, default first: tree columns
#: (:mod:`optcoll.groups.tree_columns`) and edges (:mod:`optcoll.groups.concurrent`).
FORMS = ("columns", "edge")


@dataclass(frozen=True)
class GroupOptimum:
    """One group's optimum alone: ``ratio`` r*_g (time per unit shard, 1/bandwidth units).

    ``cut`` is a node set with ``cut_members / cut_bandwidth`` = the cut
    ratio; ``exact_by`` is ``"cut"`` when that ratio is the optimum (every
    relay has in >= out) and ``"lp"`` when the optimum came from the exact
    multicast LP (the cut ratio then only bounds it from below).
    """

    members: tuple[str, ...]
    ratio: Fraction
    cut: frozenset[str]
    cut_members: int
    cut_bandwidth: Fraction
    exact_by: str

    def to_dict(self, order: dict[str, int]) -> dict[str, Any]:
        """JSON-ready (exact numbers as ``"p/q"``), the cut in topology order."""
        return {
            "members": list(self.members),
            "optimum": fraction_text(self.ratio),
            "bottleneck_cut": sorted(self.cut, key=order.__getitem__),
            "cut_members": self.cut_members,
            "cut_bandwidth": fraction_text(self.cut_bandwidth),
            "exact_by": self.exact_by,
        }


def _balanced(topology: Topology) -> bool:
    return all(topology.in_bandwidth(v) >= topology.out_bandwidth(v) for v in topology.switch_nodes)


def group_optimum(groups: ProcessGroups, index: int) -> GroupOptimum:
    """Group ``index``'s exact optimum alone, with its bottleneck cut.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> topo = load_topology("dgx-a100:1")
    >>> from optcoll.core.process_groups import make_groups
    >>> alone = group_optimum(make_groups(topo, [list(topo.compute_nodes)]), 0)
    >>> from optcoll.bounds.cut_ratio import optimal_cut_ratio
    >>> alone.ratio == optimal_cut_ratio(topo).ratio, alone.exact_by
    (True, 'cut')
    """
    view = groups.group_topology(index)
    cut = optimal_cut_ratio_core(view)
    ratio, exact_by = cut.ratio, "cut"
    if not _balanced(view):
        from optcoll.groups.concurrent import concurrent_optimum  # heavy: PuLP

        ratio, exact_by = concurrent_optimum(groups, [index]).time_factor, "lp"
    return GroupOptimum(
        groups.groups[index],
        ratio,
        cut.bottleneck_cut,
        cut.cut_compute,
        cut.cut_bandwidth,
        exact_by,
    )


def concurrent_groups_optimum(
    groups: ProcessGroups, indices: Iterable[int], form: str = FORMS[0]
) -> ConcurrentGroups:
    """The exact, proved optimum of the groups numbered ``indices`` running at once.

    ``form`` picks the LP (:data:`FORMS`): ``columns``, the tree-column form
    (:func:`optcoll.groups.tree_columns.tree_column_optimum`), or ``edge``, the edge
    form (:func:`optcoll.groups.concurrent.concurrent_optimum`); both use the
    topology's symmetry and give the same optimum.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.core.process_groups import make_groups
    >>> groups = make_groups(load_topology("ring:4,bw=1"), [["n0", "n2"], ["n1", "n3"]], "any")
    >>> [concurrent_groups_optimum(groups, [0, 1], form).time_factor for form in FORMS]
    [Fraction(1, 1), Fraction(1, 1)]
    """
    choice_argument(form, FORMS, "form")
    if form == "edge":
        from optcoll.groups.concurrent import concurrent_optimum  # heavy: PuLP

        return concurrent_optimum(groups, indices)
    from optcoll.groups.tree_columns import tree_column_optimum  # heavy: PuLP

    return tree_column_optimum(groups, indices)


@dataclass(frozen=True)
class GroupsBound:
    """The concurrent groups' exact optimal time and its certificate.

    ``time_factor`` is t*, the time per unit shard with every group running at
    once (1/bandwidth units); ``alone[i]`` group i's optimum alone, so its
    slowdown from sharing is ``time_factor / alone[i].ratio``.
    ``binding_groups`` is the class of groups sharing links
    (:meth:`ProcessGroups.sharing_components`) that needs t*; ``binding``
    its certificate: for a class of several groups the links whose capacity
    rows have nonzero duals (each, by complementary slackness, full at t*)
    with their dual length and the shares of the groups on them; for a class
    of one group the links leaving its bottleneck cut. ``form`` is the LP form
    classes of several groups were solved by (:data:`FORMS`), ``solved`` those
    classes' solutions (each class's tuple of group numbers ->
    :class:`~optcoll.groups.concurrent.ConcurrentGroups`).
    """

    groups: ProcessGroups = field(repr=False)
    time_factor: Fraction
    alone: tuple[GroupOptimum, ...]
    binding_groups: tuple[int, ...]
    binding: tuple[dict[str, Any], ...]
    method: str
    seconds: float
    form: str = FORMS[0]
    solved: dict[tuple[int, ...], ConcurrentGroups] = field(
        default_factory=dict, repr=False, compare=False
    )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (exact numbers as ``"p/q"`` strings)."""
        topo = self.groups.topology
        order = {v: i for i, v in enumerate(topo.node_ids)}
        return {
            "topology": topo.name,
            "bandwidth_unit": topo.bandwidth_unit,
            "relay": self.groups.relay,
            "num_groups": len(self.groups.groups),
            "time_factor": fraction_text(self.time_factor),
            "groups": [
                {
                    **alone.to_dict(order),
                    "slowdown": fraction_text(self.time_factor / alone.ratio),
                }
                for alone in self.alone
            ],
            "certificate": {
                "kind": "bottleneck cut" if len(self.binding_groups) == 1 else "capacity duals",
                "groups": list(self.binding_groups),
                "binding_links": list(self.binding),
            },
            "method": self.method,
            "form": self.form if self.solved else None,
            "seconds": self.seconds,
        }


def groups_bound(groups: ProcessGroups, *, form: str = FORMS[0]) -> GroupsBound:
    """The exact optimal time of ``groups`` running at once, each group alone, the certificate.

    The groups fall into classes that share no useful link
    (:meth:`ProcessGroups.sharing_components`); t* is the largest of the
    classes' optima. A class of one group needs no LP (its optimum is
    :func:`group_optimum`); a larger class takes the concurrent LP in the
    given ``form`` (:func:`concurrent_groups_optimum`) on its groups alone. No schedule beats the
    class that needs longest (its groups alone need that much), and each
    class's optimal schedule uses only its own useful links, so running all of
    them at once loads no link beyond t* times its bandwidth. The certificate
    is that class's: its bottleneck cut or its capacity duals.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> from optcoll.io.process_groups import parse_groups
    >>> bound = groups_bound(parse_groups(load_topology("dgx-a100:2"), "strided:2"))
    >>> bound.time_factor, bound.alone[0].ratio, bound.binding_groups
    (Fraction(1, 25), Fraction(1, 25), (0,))
    """
    instance_argument(
        groups, ProcessGroups, "groups", "optcoll.io.process_groups.parse_groups or make_groups"
    )
    choice_argument(form, FORMS, "form")
    start = time.perf_counter()
    alone = tuple(group_optimum(groups, i) for i in range(len(groups.groups)))
    worst: tuple[Fraction, tuple[int, ...]] | None = None
    solved: dict[tuple[int, ...], Any] = {}
    for component in groups.sharing_components():
        if len(component) == 1:
            t = alone[component[0]].ratio
        else:
            solved[component] = concurrent_groups_optimum(groups, component, form)
            t = solved[component].time_factor
        if worst is None or t > worst[0]:
            worst = (t, component)
    assert worst is not None
    t, component = worst
    if component in solved:
        binding, method = _binding_links(solved[component]), "lp"
    else:
        (index,) = component
        cut = alone[index].cut
        binding = tuple(
            {"src": u, "dst": v, "groups": [index]}
            for u, v in groups.group_topology(index).capacity
            if u in cut and v not in cut
        )
        method = "combinatorial" if alone[index].exact_by == "cut" else "lp"
    seconds = time.perf_counter() - start
    return GroupsBound(groups, t, alone, component, binding, method, seconds, form, solved)


def _binding_links(solved: ConcurrentGroups) -> tuple[dict[str, Any], ...]:
    """The links with nonzero duals, each with its dual and the groups' shares of it.

    A group's ``share`` is its load on the link over ``t* bw``; the shares of a
    binding link add up to 1.
    """
    bandwidth = solved.groups.topology.capacity
    rows = []
    for arc, length in solved.lengths.items():
        shares = {
            g: load[arc] / (solved.time_factor * bandwidth[arc])
            for g, load in sorted(solved.loads.items())
            if load.get(arc)
        }
        rows.append(
            {
                "src": arc[0],
                "dst": arc[1],
                "bandwidth": fraction_text(bandwidth[arc]),
                "dual": fraction_text(length),
                "groups": list(shares),
                "shares": [fraction_text(s) for s in shares.values()],
            }
        )
    return tuple(rows)
