"""Mixture-of-experts traffic: the seeded dispatch and combine demand of one MoE layer.

Every rank holds ``tokens`` tokens of ``hidden`` values of ``dtype_bytes`` bytes. There
are ``experts`` experts, placed on the ranks (:attr:`MoeSpec.placement`, default:
contiguous blocks, expert ``e`` on rank ``e * N // experts``). Each token picks
``top_k`` distinct experts; expert ``e`` is picked with weight ``1 / (p(e) + 1) ** zipf``
where ``p`` is a seeded random permutation of the experts (its popularity rank):
``zipf = 0`` is uniform routing, larger exponents concentrate tokens on a few hot
experts. Sampling ``top_k`` without replacement uses Gumbel top-k (Efraimidis-Spirakis
weighted sampling). **Dispatch** sends each token once to every rank holding one of its
experts (the deduplication DeepEP performs); a token whose expert is on its own rank
stays local (the diagonal). **Combine** returns the results: the dispatch transposed.

Examples
--------
>>> spec = MoeSpec(tokens=64, hidden=4, dtype_bytes=2, experts=8, top_k=2, zipf=1.0, seed=1)
>>> d = moe_demand(spec, ("r0", "r1", "r2", "r3"))
>>> d.bytes[0]
(312, 240, 216, 168)
>>> sum(map(sum, d.bytes)) <= 4 * 64 * 2 * 4 * 2, moe_demand(spec, d.ranks) == d
(True, True)
>>> moe_demand(MoeSpec(phase="combine", tokens=64, hidden=4, dtype_bytes=2, experts=8,
...                    top_k=2, zipf=1.0, seed=1), d.ranks).bytes[1][0]
240
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from optcoll.core.demand import Demand
from optcoll.exceptions import ArgumentError, shown

__all__ = ["MoeSpec", "MOE_PHASES", "parse_moe_spec", "moe_demand"]

#: The two all-to-allv of an MoE layer.
MOE_PHASES = ("dispatch", "combine")


@dataclass(frozen=True)
class MoeSpec:
    """One MoE layer's traffic (see the module docstring).

    ``placement``: the rank number of every expert (``None``: contiguous blocks).
    ``seed`` fixes the experts' popularity; ``step`` the tokens' draw, so that successive
    training steps keep their hot experts and change their routing.
    """

    tokens: int = 4096
    hidden: int = 7168
    dtype_bytes: int = 2
    experts: int = 256
    top_k: int = 8
    zipf: float = 0.0
    seed: int = 0
    step: int = 0
    phase: str = "dispatch"
    placement: tuple[int, ...] | None = None


_INTEGERS = ("tokens", "hidden", "dtype_bytes", "experts", "top_k")


def parse_moe_spec(text: str) -> MoeSpec:
    """A :class:`MoeSpec` from ``key=value,...`` (the CLI's ``--moe``); unknown keys refused.

    ``placement`` is written as rank numbers joined by ``/``.

    Examples
    --------
    >>> parse_moe_spec("tokens=128,experts=16,top_k=2,zipf=1.2,seed=3")
    MoeSpec(tokens=128, hidden=7168, dtype_bytes=2, experts=16, top_k=2, zipf=1.2, seed=3, step=0, phase='dispatch', placement=None)
    >>> parse_moe_spec("topk=2")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ArgumentError: --moe: unknown key 'topk'; valid: tokens, hidden, dtype_bytes, experts, top_k, zipf, seed, step, phase, placement
    """
    names = [f.name for f in fields(MoeSpec)]
    values: dict[str, Any] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = (part.strip() for part in item.partition("="))
        if key not in names:
            raise ArgumentError(f"--moe: unknown key {key!r}; valid: {', '.join(names)}")
        if not sep or not value:
            raise ArgumentError(f"--moe: key {key!r} needs a value ({key}=...)")
        try:
            if key in (*_INTEGERS, "seed", "step"):
                values[key] = int(value)
            elif key == "zipf":
                values[key] = float(value)
            elif key == "placement":
                values[key] = tuple(int(x) for x in value.split("/"))
            else:
                values[key] = value
        except ValueError:
            raise ArgumentError(f"--moe: {key}={value!r} is not a number") from None
    return MoeSpec(**values)


def _check(spec: MoeSpec, n: int) -> tuple[int, ...]:
    """The experts' ranks, after checking every field of ``spec``."""
    for name in _INTEGERS:
        value = getattr(spec, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ArgumentError(f"MoE {name} must be a positive integer, got {shown(value)}")
    if spec.top_k > spec.experts:
        raise ArgumentError(f"MoE top_k = {spec.top_k} exceeds the {spec.experts} experts")
    if not 0 <= spec.zipf <= 100 or spec.zipf != spec.zipf:
        raise ArgumentError(f"MoE zipf exponent must lie in [0, 100], got {spec.zipf!r}")
    if isinstance(spec.step, bool) or not isinstance(spec.step, int) or spec.step < 0:
        raise ArgumentError(f"MoE step must be a non-negative integer, got {shown(spec.step)}")
    if spec.phase not in MOE_PHASES:
        raise ArgumentError(f"MoE phase {spec.phase!r} is unknown; valid: {', '.join(MOE_PHASES)}")
    if spec.placement is None:
        return tuple(e * n // spec.experts for e in range(spec.experts))
    if len(spec.placement) != spec.experts:
        raise ArgumentError(
            f"MoE placement lists {len(spec.placement)} ranks for {spec.experts} experts"
        )
    for e, r in enumerate(spec.placement):
        if not 0 <= r < n:
            raise ArgumentError(f"MoE placement: expert {e} on rank {r}, not in 0..{n - 1}")
    return spec.placement


def moe_demand(spec: MoeSpec, ranks: Sequence[str]) -> Demand:
    """The dispatch (or combine) demand of ``spec`` over ``ranks``; seeded, deterministic.

    Costs ``O(N * tokens * experts)`` time and ``O(tokens * experts)`` memory.

    Raises
    ------
    ArgumentError
        A non-positive size, ``top_k > experts``, a bad exponent, phase or placement.
    """
    import numpy as np

    n = len(ranks)
    home = np.array(_check(spec, n))
    popularity = np.random.default_rng(spec.seed).permutation(spec.experts)
    rng = np.random.default_rng([spec.seed, spec.step])
    log_weight = -spec.zipf * np.log1p(popularity.astype(np.float64))
    per_token = spec.hidden * spec.dtype_bytes
    counts = np.zeros((n, n), dtype=np.int64)
    for source in range(n):
        keys = log_weight + rng.gumbel(size=(spec.tokens, spec.experts))
        chosen = np.argpartition(-keys, spec.top_k - 1, axis=1)[:, : spec.top_k]
        reached = np.zeros((spec.tokens, n), dtype=bool)
        reached[np.arange(spec.tokens)[:, None], home[chosen]] = True
        counts[source] = reached.sum(axis=0)
    rows = tuple(tuple(int(x) * per_token for x in row) for row in counts.tolist())
    origin = (
        f"MoE {spec.phase} (tokens={spec.tokens}, hidden={spec.hidden}, "
        f"experts={spec.experts}, top_k={spec.top_k}, zipf={spec.zipf}, seed={spec.seed}, "
        f"step={spec.step})"
    )
    demand = Demand(tuple(ranks), rows, origin)
    return demand.transposed() if spec.phase == "combine" else demand
