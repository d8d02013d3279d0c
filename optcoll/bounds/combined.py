"""The combined bound: dependency steps and link time in one time-expanded LP.

The depth bound (:mod:`optcoll.bounds.depth`) joins its two halves by a maximum: either
some element's chain of transfers is deep (``T >= q (L + 1)``), or every element's chains
fit ``L`` layers and cost ``M h_w(L)`` of weighted link time, which the links' windows
must allow by ``T``. Here the link time is counted per layer: a transfer that arrives by
``(t + 1) q`` crossed its links before then, inside their windows (``docs/
bounds_every_size.md``, Lemmas 1 and 2 with ``T`` replaced by the arrival), so the
transfers arriving by layer ``t`` carry at most ``Cap_w((t + 1) q)`` of weighted bytes,

    Cap_w(tau) = sum over links e of w_e B_e (tau - c_e)^+,   c_e = o + a_e + lat(e) + b_e.

Averaged over the elements, the element's transfer arcs ``X`` (depth.py's time-expanded
graph, an arc ``(s, a) -> (s + k_ab, b)`` per transfer, placed at its arrival layer) hold a
chain for every needed pair and

    share M sum over arcs arriving by layer t of c_w X <= Cap_w((t + 1) q)   (t < L)
    share M sum over all arcs of c_w X               <= Cap_w(T).

So a schedule with ``T < q (L + 1)`` has ``T >= window_w(share M V_L)``, ``V_L`` the least
``c_w X`` under the cuts and the first rows (:func:`timed_cost`): cheap chain structures
need many steps, whose early transfers must arrive while the links have carried little.
The bound is ``max over L of min(q (L + 1), window_w(share M V_L))``; the LP depends on
``M`` through the rows' right sides.

:func:`timed_cost` certifies ``V_L`` exactly by the LP dual: multipliers ``lambda_C >= 0``
on the cuts and ``mu_t >= 0`` on the rows with ``sum over C of lambda_C |C cap O| <= c(O)
|O| (1 + sum over t >= arrival layer of O of mu_t)`` on every arc orbit ``O`` give
``V_L >= sum lambda - sum mu_t Cap_t``; :func:`check_timed_cost` re-checks it in
Fractions from the cuts alone. Proof and class of schedules: ``docs/bounds_every_size.md``.

Examples
--------
>>> two = [[0, 1], [1, 0]]  # two nodes, one link each way
>>> found = timed_cost(two, "allreduce", 4, [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(1)])
>>> found.value  # both transfers cost 1 however late they arrive
Fraction(2, 1)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from optcoll.bounds.depth import (
    COLLECTIVES,
    MOST_VARIABLES,
    DepthFamily,
    _chain,
    _Expanded,
    _Orbits,
    _orbits,
    _signature,
    cost_generators,
    cut_loads,
    depth_bound,
    reachable,
    violated_cuts,
)
from optcoll.bounds.startup import window_time
from optcoll.core.cost import DEFAULT_LATENCY
from optcoll.core.topology import Topology
from optcoll.exceptions import SolveError

__all__ = [
    "HOLDS_FOR",
    "MOST_LAYERS",
    "PLAN_ROUNDS",
    "TimedCost",
    "CombinedBound",
    "timed_cost",
    "check_timed_cost",
    "combined_bound",
]

#: The class of schedules the bound holds for (the depth bound's).
HOLDS_FOR = {
    "allreduce": "every allreduce in which only compute nodes reduce",
    "reduce_scatter": "every reduce-scatter in which only compute nodes reduce",
    "allgather": "every allgather in which only compute nodes copy",
}
#: The most layers solved; beyond them the bound claims nothing (plan's CPU: there the
#: bandwidth terms dominate; torus 8x8's allgather took 82 CPU s at 16 MiB and 28 layers
#: of 1.5 µs, 3.5 s at 4 MiB and 15 layers of 0.75 µs, each for nothing).
MOST_LAYERS = 14
#: Layers per least step ``o + lam`` (2: a transfer between neighbours spans two layers; 1
#: loses a third of the cross-box latency on dgx-h100:4, whose bound at 1 MiB is then 8.0
#: µs instead of 10.0).
STEPS = 2
#: Cut-generation rounds per LP of plan's bound.
PLAN_ROUNDS = 8
#: The LP's price of a unit over a row's capacity (its dual ``mu_t`` stays below it; a
#: dual solution of the priced LP is one of the LP itself).
_PRICE = 1e4
#: Dual values are rounded to multiples of ``1 / _DUAL_SCALE``.
_DUAL_SCALE = 2**30


def _numpy() -> Any:
    import numpy as np

    return np


@dataclass(frozen=True)
class TimedCost:
    """A certified lower bound ``value`` on ``V_L`` (module docstring) with its certificate.

    Attributes
    ----------
    kind : str
    layers : int
        ``L``.
    capacities : tuple of Fraction
        ``Cap_t`` per layer ``t < L``: the most cost of the arcs arriving by layer ``t``.
    value : Fraction
        ``sum lambda - sum mu_t Cap_t``.
    cuts : tuple of (int, frozenset of int)
        Per cut, the family and the source side (time-expanded nodes ``i * n + a``).
    multipliers : tuple of Fraction
        ``lambda_C``.
    paces : tuple of Fraction
        ``mu_t`` per layer ``t < L``.
    generators : tuple of tuple of int
        The permutations of the compute nodes the certificate is spread over.
    optimal : bool
        Whether cut generation converged.
    """

    kind: str
    layers: int
    capacities: tuple[Fraction, ...]
    value: Fraction
    cuts: tuple[tuple[int, frozenset[int]], ...]
    multipliers: tuple[Fraction, ...]
    paces: tuple[Fraction, ...]
    generators: tuple[tuple[int, ...], ...]
    optimal: bool


def timed_cost(
    costs: Sequence[Sequence[int]],
    kind: str,
    layers: int,
    capacities: Sequence[Fraction],
    generators: Sequence[Sequence[int]] = (),
    spans: Sequence[Sequence[int]] | None = None,
    rounds: int = 60,
) -> TimedCost:
    """A certified lower bound on ``V_L`` (module docstring): the least ``c X`` of a
    fractional set of transfer arcs within ``layers`` layers that holds a chain for every
    pair ``kind`` needs, when the arcs arriving by layer ``t`` cost at most
    ``capacities[t]`` (``t < layers``).

    ``costs``, ``generators``, ``spans``, ``rounds`` as for
    :func:`optcoll.bounds.depth.shallow_cost`.

    Raises
    ------
    SolveError
        An unknown ``kind``, a capacity per layer missing, or no chain of transfers fits
        ``layers`` layers for a needed pair.

    Examples
    --------
    >>> line = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]  # a path of three nodes
    >>> timed_cost(line, "allreduce", 2, [Fraction(10)] * 2).value  # to the middle and back
    Fraction(4, 1)
    >>> timed_cost(line, "allreduce", 3, [0, 0, 10]).value  # the star, late
    Fraction(4, 1)
    >>> timed_cost(line, "allreduce", 3, [0, 0, 0]).value  # all in the last layer: directly
    Fraction(8, 1)
    """
    if kind not in COLLECTIVES:
        raise SolveError(f"the combined bound covers {', '.join(COLLECTIVES)}, not {kind}")
    if len(capacities) != layers or any(c < 0 for c in capacities):
        raise SolveError(f"the combined bound needs {layers} capacities >= 0, one per layer")
    n = len(costs)
    spans = spans if spans is not None else [[1] * n for _ in range(n)]
    if not reachable(spans, kind, layers):
        raise SolveError(f"no chain of transfers fits {layers} layers for every pair")
    kept = cost_generators(_signature(costs, spans), generators)
    orbits = _orbits(costs, kind, kept, spans)
    key = tuple(tuple(g) for g in kept)
    return _solve(orbits, kind, layers, tuple(capacities), key, [], rounds=rounds)


def _arrival(orbits: _Orbits, layers: int) -> Any:
    """Per LP variable (start layer times orbits + orbit), the layer its arcs arrive in."""
    np = _numpy()
    count = len(orbits.size)
    return np.repeat(np.arange(layers), count) + np.tile(np.asarray(orbits.span), layers)


def _solve(
    orbits: _Orbits, kind: str, layers: int, capacities: tuple[Fraction, ...],
    kept: tuple[tuple[int, ...], ...], pool: list[tuple[int, frozenset[int]]],
    enough: float = math.inf, rounds: int = 60,
) -> TimedCost:  # fmt: skip
    """Cut generation from the cuts of ``pool`` (found cuts are appended to it) until no
    cut is violated, the LP's value reaches ``enough``, or ``rounds`` rounds; the
    certificate of the last LP."""
    np = _numpy()
    import highspy

    from formulations.solve import silence_banner

    silence_banner()
    expanded = _Expanded(orbits, layers)
    n, count = orbits.n, expanded.count
    weight = np.asarray(orbits.cost, dtype=np.float64) * orbits.size
    objective = np.tile(weight, layers)
    arrival = _arrival(orbits, layers)
    variables = layers * count
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    highs.addCols(
        variables, objective, np.zeros(variables), np.full(variables, inf), 0,
        np.array([], np.int32), np.array([], np.int32), np.array([]),
    )  # fmt: skip
    rows_of_layer = [t for t in range(layers) if (arrival <= t).any()]
    for t in rows_of_layer:  # cost of the arcs arriving by t, minus a priced excess
        index = np.nonzero((arrival <= t) & (objective > 0))[0]
        highs.addCol(_PRICE, 0.0, inf, 0, np.array([], np.int32), np.array([]))
        index = np.append(index, highs.getNumCol() - 1).astype(np.int32)
        values = np.append(objective[index[:-1]], -1.0)
        highs.addRow(-inf, float(capacities[t]), len(index), index, values)
    cuts: list[tuple[int, frozenset[int]]] = []
    rows: list[Any] = []
    nodes = (layers + 1) * n

    def add(k: int, side: Any) -> None:
        found = np.bincount(expanded.cut_row(k, side), minlength=variables)
        index = np.nonzero(found)[0].astype(np.int32)
        highs.addRow(1.0, inf, len(index), index, found[index].astype(np.float64))
        cuts.append((k, frozenset(np.nonzero(side)[0].tolist())))
        rows.append((index, found[index]))

    for k, u, v in orbits.demands:  # the sender's out-arcs and the receiver's in-arcs
        out = np.zeros(nodes, dtype=bool)
        out[u::n] = True
        add(k, out)
        add(k, ~np.roll(out, v - u))
    for k, side in pool:
        inside = np.zeros(nodes, dtype=bool)
        inside[list(side)] = True
        add(k, inside)
    core = np.zeros(variables)  # the fastest chains: every cut holds
    for k, u, v in orbits.demands:
        for start, a, b in _chain(orbits.spans, u, v):
            core[start * count + int(orbits.label[k, a, b])] = 1
    optimal = False
    for _ in range(rounds):
        highs.run()
        if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise SolveError("the combined bound's LP did not solve")  # pragma: no cover
        solution = highs.getSolution()
        y = np.asarray(solution.col_value)[:variables]
        if highs.getInfo().objective_function_value >= enough:
            break
        found = violated_cuts(expanded, 0.5 * y + 0.5 * core)
        if not found:
            found = violated_cuts(expanded, y)
            if not found:
                optimal = True
                break
        for k, side in found:
            add(k, side)
            pool.append(cuts[-1])
    duals = np.asarray(highs.getSolution().row_dual)
    paces = dict(zip(rows_of_layer, duals[: len(rows_of_layer)].tolist(), strict=True))
    return _certify(
        orbits, kind, layers, capacities, kept, cuts, rows, duals[len(rows_of_layer) :],
        paces, optimal,
    )  # fmt: skip


def _certify(
    orbits: _Orbits, kind: str, layers: int, capacities: tuple[Fraction, ...],
    kept: tuple[tuple[int, ...], ...], cuts: list[tuple[int, frozenset[int]]],
    rows: list[Any], duals: Any, paces: dict[int, float], optimal: bool,
) -> TimedCost:  # fmt: skip
    """Round the row duals up to ``mu_t`` and the cut duals down to ``lambda_C`` (multiples
    of ``1 / _DUAL_SCALE``), then scale the ``lambda`` until dual feasible exactly."""
    count = len(orbits.size)
    mu = tuple(
        Fraction(max(0, math.ceil(-paces.get(t, 0.0) * _DUAL_SCALE)), _DUAL_SCALE)
        for t in range(layers)
    )
    scaled = [max(0, math.floor(float(d) * _DUAL_SCALE)) for d in duals]
    arrival = _arrival(orbits, layers).tolist()
    allowed = _allowed(orbits, layers, mu, arrival)
    for i, (index, _) in enumerate(rows):  # a zero-cost arc admits no multiplier on its cuts
        if scaled[i] and any(not allowed[j] for j in index.tolist()):
            scaled[i] = 0
    load = [0] * (layers * count)
    for m, (index, values) in zip(scaled, rows, strict=True):
        if m:
            for j, c in zip(index.tolist(), values.tolist(), strict=True):
                load[j] += m * c
    factor = min(
        (allowed[j] * _DUAL_SCALE / used for j, used in enumerate(load) if used),
        default=Fraction(1),
    )
    factor = min(factor, Fraction(1))
    multipliers = tuple(Fraction(m, _DUAL_SCALE) * factor for m in scaled)
    value = sum(multipliers, Fraction(0)) - sum(
        (m * c for m, c in zip(mu, capacities, strict=True)), Fraction(0)
    )
    return TimedCost(kind, layers, capacities, value, tuple(cuts), multipliers, mu, kept, optimal)


def _allowed(
    orbits: _Orbits, layers: int, mu: Sequence[Fraction], arrival: Sequence[int]
) -> list[Fraction]:
    """Per LP variable, ``c(O) |O| (1 + sum of mu_t over t >= its arrival layer)``."""
    count = len(orbits.size)
    later = [Fraction(0)] * (layers + 1)
    for t in range(layers - 1, -1, -1):
        later[t] = later[t + 1] + mu[t]
    return [
        orbits.cost[j % count] * int(orbits.size[j % count]) * (1 + later[min(arrival[j], layers)])
        for j in range(layers * count)
    ]


def check_timed_cost(
    costs: Sequence[Sequence[int]], certificate: TimedCost,
    spans: Sequence[Sequence[int]] | None = None,
) -> Fraction:  # fmt: skip
    """Re-check ``certificate`` exactly from its cuts alone and return the bound it proves.

    The cuts are checked as the depth bound's (:func:`optcoll.bounds.depth.cut_loads`:
    generators, idle arcs, needed pairs); then every ``mu_t >= 0`` and, on every arc orbit
    ``O`` and start layer, ``sum over cuts C of lambda_C |C cap O| <= c(O) |O| (1 + sum
    of mu_t over the layers t >= the arcs' arrival)``. The value is recomputed.

    Raises
    ------
    SolveError
        The certificate fails one of the checks (named).
    """
    layers = certificate.layers
    if len(certificate.paces) != layers or len(certificate.capacities) != layers:
        raise SolveError("the combined certificate needs one pace and capacity per layer")
    if any(m < 0 for m in certificate.paces):
        raise SolveError("a negative pace in the combined certificate")
    orbits, load = cut_loads(
        costs, certificate.kind, layers, certificate.cuts, certificate.multipliers,
        certificate.generators, spans,
    )  # fmt: skip
    arrival = _arrival(orbits, layers).tolist()
    allowed = _allowed(orbits, layers, certificate.paces, arrival)
    count = len(orbits.size)
    for j, used in load.items():
        if used > allowed[j]:
            raise SolveError(
                f"the combined certificate overloads arc orbit {j % count} from layer {j // count}"
            )
    value = sum(certificate.multipliers, Fraction(0)) - sum(
        (m * c for m, c in zip(certificate.paces, certificate.capacities, strict=True)),
        Fraction(0),
    )
    if value != certificate.value:
        raise SolveError("the combined certificate's value is not its multipliers'")
    return value


@dataclass
class _Family:
    """One weighting of the combined bound: the depth family's costs, spans, symmetry and
    windows, with the cuts found so far per number of layers (reused by every size), the
    certified values per layers and size, and how often it decided a ceiling."""

    depth: DepthFamily
    pool: dict[int, list[tuple[int, frozenset[int]]]] = field(default_factory=dict)
    values: dict[tuple[int, Fraction], TimedCost] = field(default_factory=dict)
    orbits: _Orbits | None = None
    wins: int = 0

    def time_us(self, size: Fraction, layers: int, quantum: Fraction) -> Fraction:
        """``window_w(share M V_L)`` (µs) at ``size`` bytes (the LP stops once it reaches
        the layers' ceiling ``q (L + 1)``); 0 beyond
        :data:`optcoll.bounds.depth.MOST_VARIABLES` variables."""
        family = self.depth
        scale = family.share * size
        key = (layers, scale)
        if self.orbits is None:
            self.orbits = _orbits(family.costs, family.kind, family.generators, family.spans)
        orbits = self.orbits
        if layers * len(orbits.size) > MOST_VARIABLES:
            return Fraction(0)
        if key not in self.values:
            capacities = tuple(family.demand(quantum * (t + 1)) / scale for t in range(layers))
            ceiling = family.demand(quantum * (layers + 1)) / scale
            kept = tuple(tuple(g) for g in family.generators)
            pool = self.pool.setdefault(layers, [])
            self.values[key] = _solve(
                orbits, family.kind, layers, capacities, kept, pool,
                float(ceiling) * (1 + 1e-6), PLAN_ROUNDS,
            )  # fmt: skip
        value = self.values[key].value
        return window_time(scale * value, family.windows) if value > 0 else Fraction(0)


@dataclass(frozen=True)
class CombinedBound:
    """``T >= max over L of min(q (L + 1), max over families of window_w(share M V_L))``
    (module docstring).

    Attributes
    ----------
    collective : str
    quantum : Fraction
        ``q`` (µs).
    spans : list of list of int
        The layers a transfer between two compute nodes spans.
    families : tuple
        One per weighting (the depth bound's).
    """

    collective: str
    quantum: Fraction
    spans: list[list[int]]
    families: tuple[_Family, ...]
    #: The most layers searched.
    most_layers: int = MOST_LAYERS
    #: The same bound on the depth bound's finer layers, searched from where this one
    #: stops (None: no finer layers).
    finer: CombinedBound | None = None

    def at_layers(self, size: int | Fraction, layers: int) -> Fraction:
        """``min(q (L + 1), max over families of window_w(share M V_L))`` (µs)."""
        ceiling = self.quantum * (layers + 1)
        if not reachable(self.spans, self.collective, layers):
            return ceiling
        size = Fraction(size)
        links = Fraction(0)
        # the largest, once one reaches the ceiling (the same value in any order: first
        # the family that reached it most often)
        for family in sorted(self.families, key=lambda f: -f.wins):
            links = max(links, family.time_us(size, layers, self.quantum))
            if links >= ceiling:
                family.wins += 1
                break
        return min(ceiling, links)

    def time_us(self, size: int | Fraction, other: Fraction = Fraction(0)) -> Fraction:
        """The bound (µs) at ``size`` bytes where it can exceed ``other`` (0 elsewhere).

        Only ``L`` with ``q (L + 1) > other`` can give more. From the first such ``L`` up,
        while its ceiling holds (some transfer arrives at ``q (L + 1)`` or later); the first
        ``L`` whose ceiling does not hold is the last that can give more (``V_L`` only
        falls with ``L``: a solution's arcs shifted one layer later keep the rows); none
        beyond :attr:`most_layers`. Where that exceeds ``other``, then the :attr:`finer`
        bound, from the first of its ``L`` whose ceiling exceeds it.
        """
        if self.quantum <= 0 or not self.families or size <= 0:
            return Fraction(0)
        first = max(1, math.floor(Fraction(other) / self.quantum))
        best = Fraction(0)
        for layers in range(first, self.most_layers + 1):
            found = self.at_layers(size, layers)
            best = max(best, found)
            if found < self.quantum * (layers + 1):
                break
        if self.finer is not None and best > other:  # where this bound is the one that holds
            best = max(best, self.finer.time_us(size, best))
        return best if best > other else Fraction(0)

    def describe(self) -> str:
        """For reports."""
        return f"combined bound ({', '.join(f.depth.name for f in self.families)})"


def combined_bound(
    topology: Topology,
    collective: str,
    *,
    overhead: Fraction | float = Fraction(1),
    default_latency: Fraction = DEFAULT_LATENCY,
    parts: Sequence[Iterable[str]] = (),
) -> CombinedBound | None:
    """The combined bound of ``collective`` on ``topology``: the depth bound's weightings
    (every link, the ``parts``' links, the links between boxes), with layers of a
    :data:`STEPS`-th of the least step ``o + lam``, and where the depth bound's layers are
    finer the same bound on those (:attr:`CombinedBound.finer`, as many µs of layers);
    None where the depth bound does not apply.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> bound = combined_bound(build("ring:4"), "allreduce", default_latency=Fraction(1, 2))
    >>> bound.quantum, bound.spans[0], bound.finer.quantum, bound.finer.spans[0]
    (Fraction(3, 4), [0, 2, 2, 2], Fraction(1, 2), [0, 3, 4, 3])
    >>> round(float(bound.time_us(2**20)), 4)  # 100 GB/s links: 1 MiB
    8.2405
    """
    depth = depth_bound(
        topology, collective, overhead=overhead, default_latency=default_latency,
        parts=parts, finest=STEPS,
    )  # fmt: skip
    if depth is None:
        return None
    finer = None
    fine = depth_bound(
        topology, collective, overhead=overhead, default_latency=default_latency, parts=parts
    )
    if fine is not None and fine.quantum < depth.quantum:
        most = math.floor(MOST_LAYERS * depth.quantum / fine.quantum)
        families = tuple(_Family(f) for f in fine.families)
        finer = CombinedBound(fine.collective, fine.quantum, fine.spans, families, most)
    families = tuple(_Family(f) for f in depth.families)
    return CombinedBound(depth.collective, depth.quantum, depth.spans, families, finer=finer)
