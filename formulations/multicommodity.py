"""Multi-commodity flow on a capacitated network: the layer under all-to-all and process groups.

Plain data in, plain data out: a list of nodes, a capacity for every arc
``(u, v)`` (positive integers: scale them with
:func:`optcoll.core.rational.integer_scaling`), and a list of
:class:`Commodity`. Nothing here knows about topologies or schedules.

A **commodity** is data leaving one ``source`` for several sinks, each sink
``d`` asking for ``demands[d]`` units. The nodes other than the source that may
pass the commodity on are its ``relays`` (``None``: every node). Its flow may use
arc ``(u, v)`` only if ``u`` is the source or a relay and ``v`` is a sink or a
relay. Two kinds:

* **unicast** (``copies=False``; all-to-all): the sinks want different data, so
  the commodity is one flow ``f_k`` that leaves the source with
  ``sum(demands)`` units and drops ``demands[d]`` at each sink
  (conservation ``out_k(u) - in_k(u) = supply_k(u)``). Its load is ``f_k(a)``.
* **multicast** (``copies=True``; process groups, broadcast-like): the sinks
  want the same data and may copy it. The commodity owns a capacity
  ``x_k(a)``; for every sink ``d`` a flow ``f_kd`` of ``demands[d]`` units goes
  from the source to ``d`` inside it (``f_kd(a) <= x_k(a)``); the source and
  the sinks copy, every other relay ``u`` only forwards:
  ``sum_out x_k(u) <= sum_in x_k(u)``. Its load is ``x_k(a)``.

The commodities share the arcs. **Time form** (default): minimise ``t`` with
``sum_k load_k(a) <= t * c(a)`` for every arc; ``t`` is the time, in units of
data over capacity, for every commodity to be delivered at once. **Rate form**:
the same LP after ``lam = 1 / t``: maximise ``lam`` with every demand scaled
by ``lam`` and ``sum_k load_k(a) <= c(a)``.

Names in the model: ``t`` or ``lam``; ``f_K_A`` (unicast flow or multicast
capacity of commodity ``K`` on arc number ``A``), ``g_K_D_A`` (multicast flow to
the commodity's sink number ``D``); rows ``node_K_I`` (conservation of a unicast
commodity at node number ``I``), ``node_K_D_I`` (of a multicast sink flow),
``share_K_D_A``, ``relay_K_I`` and ``cap_A``.

The exact optimum, its certificate and the checks are
:func:`optcoll.bounds.multicommodity.solve_multicommodity`.

Examples
--------
>>> caps = {("a", "b"): 1, ("b", "a"): 1, ("b", "c"): 1, ("c", "b"): 1}
>>> ks = [Commodity("a", {"c": 1}), Commodity("c", {"a": 1, "b": 1})]
>>> model = build_multicommodity(["a", "b", "c"], caps, ks)
>>> len(model.variables()), len(model.constraints())
(7, 10)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulp

from formulations.errors import MethodError
from formulations.network import Arc, check_capacity

__all__ = ["Commodity", "FORMS", "build_multicommodity"]

#: The two equivalent forms of the model.
FORMS = ("time", "rate")


@dataclass(frozen=True)
class Commodity:
    """Data from ``source`` to the sinks in ``demands`` (sink -> positive units).

    ``copies``: the sinks want the same data and copy it (multicast) rather than
    each its own (unicast). ``relays``: the nodes besides the source that may
    send the commodity on (``None``: all of them). ``arcs``: the only arcs it
    may use besides (``None``: every arc the relays allow). ``images``: maps
    of the arcs (symmetries of the network) under which the commodity stands
    for copies of itself: its load on arc ``a`` takes capacity on ``m[a]`` for
    every map ``m`` (the identity counts only if listed; empty: on ``a``).
    """

    source: str
    demands: Mapping[str, int]
    copies: bool = False
    relays: frozenset[str] | None = None
    arcs: frozenset[Arc] | None = None
    images: tuple[Mapping[Arc, Arc], ...] = ()

    def counted_on(self, arc: Arc) -> tuple[Arc, ...]:
        """The arcs whose capacity the commodity's load on ``arc`` takes (with repeats)."""
        return tuple(m[arc] for m in self.images) if self.images else (arc,)

    def usable(self, arc: Arc) -> bool:
        """Whether the commodity may travel on ``arc``."""
        u, v = arc
        if v == self.source or (self.arcs is not None and arc not in self.arcs):
            return False
        if self.relays is None:
            return True
        return (u == self.source or u in self.relays) and (v in self.demands or v in self.relays)


def _check(
    nodes: Sequence[str], capacity: Mapping[Arc, int], commodities: Sequence[Commodity]
) -> None:
    check_capacity(nodes, capacity)
    known = set(nodes)
    if not commodities:
        raise MethodError("no commodities: nothing to route")
    for k, commodity in enumerate(commodities):
        if commodity.source not in known:
            raise MethodError(f"commodity {k}: source {commodity.source!r} is not a node")
        if not commodity.demands:
            raise MethodError(f"commodity {k} (source {commodity.source!r}) has no sinks")
        for sink, amount in commodity.demands.items():
            if sink not in known or sink == commodity.source:
                raise MethodError(
                    f"commodity {k}: sink {sink!r} is not a node other than the source"
                )
            if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
                raise MethodError(f"commodity {k}: demand of {sink!r} must be a positive integer")


def build_multicommodity(
    nodes: Sequence[str],
    capacity: Mapping[Arc, int],
    commodities: Sequence[Commodity],
    form: str = "time",
) -> pulp.LpProblem:
    """The multi-commodity LP (no side effects; nothing is solved).

    Arcs are numbered in the order of ``capacity``, nodes in the order of
    ``nodes``, commodities and their sinks in the order given.

    Raises
    ------
    MethodError
        For an unknown ``form``, an arc or commodity naming an unknown node, a
        non-integer capacity or demand, or a commodity without sinks.

    Examples
    --------
    >>> caps = {("a", "b"): 2, ("b", "a"): 2}
    >>> model = build_multicommodity(["a", "b"], caps, [Commodity("a", {"b": 1})])
    >>> sorted(v.name for v in model.variables()), sorted(c.name for c in model.constraints())
    (['f_0_0', 't'], ['cap_0', 'node_0_0', 'node_0_1'])
    """
    if form not in FORMS:
        raise MethodError(
            f"unknown multi-commodity LP form {form!r}; valid forms are {list(FORMS)}"
        )
    _check(nodes, capacity, commodities)
    timed = form == "time"
    problem = pulp.LpProblem(
        f"multicommodity_{form}", pulp.LpMinimize if timed else pulp.LpMaximize
    )
    scale = problem.add_variable("t" if timed else "lam", lowBound=0)
    problem.setObjective(pulp.LpAffineExpression([(scale, 1.0)]))
    arcs = list(capacity)
    index = {u: i for i, u in enumerate(nodes)}
    arc_index = {arc: a for a, arc in enumerate(arcs)}
    load: list[dict[pulp.LpVariable, float]] = [{} for _ in arcs]

    def conserve(name: str, flows: dict[int, pulp.LpVariable], supply: Mapping[str, int]) -> None:
        terms: dict[str, list[tuple[pulp.LpVariable, float]]] = {}
        for a, f in flows.items():
            u, v = arcs[a]
            terms.setdefault(u, []).append((f, 1.0))
            terms.setdefault(v, []).append((f, -1.0))
        for u in nodes:
            row = terms.get(u, [])
            b = supply.get(u, 0)
            if not row and not b:
                continue
            if not timed and b:
                row = [*row, (scale, -float(b))]
            problem.addConstraint(
                pulp.LpConstraint(
                    pulp.LpAffineExpression(row),
                    pulp.LpConstraintEQ,
                    rhs=float(b) if timed else 0.0,
                ),
                f"{name}_{index[u]}",
            )

    for k, commodity in enumerate(commodities):
        usable = [a for a, arc in enumerate(arcs) if commodity.usable(arc)]
        own = {a: problem.add_variable(f"f_{k}_{a}", lowBound=0) for a in usable}
        for a, f in own.items():
            for image in commodity.counted_on(arcs[a]):
                taken = load[arc_index[image]]
                taken[f] = taken.get(f, 0.0) + 1.0
        if not commodity.copies:
            supply = {sink: -d for sink, d in commodity.demands.items()}
            supply[commodity.source] = sum(commodity.demands.values())
            conserve(f"node_{k}", own, supply)
            continue
        for d, (sink, amount) in enumerate(commodity.demands.items()):
            flows = {a: problem.add_variable(f"g_{k}_{d}_{a}", lowBound=0) for a in usable}
            conserve(f"node_{k}_{d}", flows, {commodity.source: amount, sink: -amount})
            for a, f in flows.items():
                problem.addConstraint(
                    pulp.LpConstraint(
                        pulp.LpAffineExpression([(f, 1.0), (own[a], -1.0)]),
                        pulp.LpConstraintLE,
                        rhs=0.0,
                    ),
                    f"share_{k}_{d}_{a}",
                )
        members = {commodity.source, *commodity.demands}
        balance: dict[str, list[tuple[pulp.LpVariable, float]]] = {}
        for a, x in own.items():
            u, v = arcs[a]
            if u not in members:
                balance.setdefault(u, []).append((x, 1.0))
            if v not in members:
                balance.setdefault(v, []).append((x, -1.0))
        for u in nodes:
            if u in balance:
                problem.addConstraint(
                    pulp.LpConstraint(
                        pulp.LpAffineExpression(balance[u]), pulp.LpConstraintLE, rhs=0.0
                    ),
                    f"relay_{k}_{index[u]}",
                )
    for a, arc in enumerate(arcs):
        if not load[a]:
            continue
        row = list(load[a].items())
        if timed:
            row.append((scale, -float(capacity[arc])))
        problem.addConstraint(
            pulp.LpConstraint(
                pulp.LpAffineExpression(row),
                pulp.LpConstraintLE,
                rhs=0.0 if timed else float(capacity[arc]),
            ),
            f"cap_{a}",
        )
    return problem
