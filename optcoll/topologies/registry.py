"""The registry of topology families: :class:`Family`, :func:`register` and spec parsing.

The family modules (:mod:`optcoll.topologies.dgx`, ``amd``, ``generic``) register
themselves here; :mod:`optcoll.topologies` imports them and offers :func:`build`.

Examples
--------
>>> parse_params("ring", "ring:N[,bw=GBPS]", "4,bw=100", {"n": count(2), "bw": positive_number}, ("n",))
{'n': 4, 'bw': Fraction(100, 1)}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optcoll.core import limits
from optcoll.core.limits import MAX_LINKS, MAX_NODES
from optcoll.core.rational import parse_fraction
from optcoll.core.topology import Topology
from optcoll.exceptions import TopologySpecError

__all__ = [
    "Family",
    "FAMILIES",
    "register",
    "build",
    "is_spec",
    "families",
    "parse_params",
    "check_size",
    "MAX_NODES",
    "MAX_LINKS",
]


@dataclass(frozen=True)
class Family:
    """A parameterised topology generator.

    ``parse`` turns the text after the colon (possibly empty) into keyword
    arguments for ``generate``; it raises :class:`TopologySpecError` on bad text.
    ``aliases`` are further names the family answers to (``ndv2`` for ``dgx-v100``).
    """

    name: str
    summary: str
    usage: str
    parse: Callable[[str], dict]
    generate: Callable[..., Topology]
    aliases: tuple[str, ...] = ()


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family`` (under its name and its aliases) to the library.

    Called by each family module at import. A name registered twice is a
    programming error.
    """
    for name in (family.name, *family.aliases):
        assert name not in FAMILIES, f"topology family {name!r} registered twice"
        FAMILIES[name] = family
    return family


def families() -> list[Family]:
    """Every registered family once, sorted by name (aliases not repeated)."""
    unique = {family.name: family for family in FAMILIES.values()}
    return [unique[name] for name in sorted(unique)]


def is_spec(text: str) -> bool:
    """True if ``text`` names a registered family (``name`` or ``name:args``)."""
    return text.split(":", 1)[0] in FAMILIES


def build(spec: str) -> Topology:
    """Build the topology a spec string names.

    The topology's name is the canonical spec of what was built (defaults filled
    in, aliases resolved), e.g. ``build("ndv2").name == "dgx-v100:1"``.

    Raises
    ------
    TopologySpecError
        Unknown family (the message lists the known ones) or malformed arguments.
    """
    family_name, _, args = spec.partition(":")
    family = FAMILIES.get(family_name)
    if family is None:
        raise TopologySpecError(
            f"unknown topology {spec!r}: not a file and not a built-in family; "
            f"built-ins are {', '.join(sorted(FAMILIES))} (see `optcoll topologies`)"
        )
    try:
        kwargs = family.parse(args.strip())
    except TopologySpecError as err:
        if family_name == family.name:
            raise
        raise TopologySpecError(f"{err} ({family_name} is an alias of {family.name})") from None
    return family.generate(**kwargs)


def check_size(spec: str, nodes: int, links: int) -> None:
    """Refuse a built-in topology beyond the limits of built topologies
    (:func:`optcoll.core.limits.check_size`, ``built=True``: 250,000 nodes and 1,000,000
    directed links); :class:`TopologySpecError` names ``spec``.

    Generators call it with their node and directed-link counts (or upper bounds)
    before building anything, so an oversized spec fails at once.

    Examples
    --------
    >>> check_size("ring:8", 8, 16)
    """
    limits.check_size(spec, nodes, links, TopologySpecError, built=True)


def parse_params(
    family: str,
    usage: str,
    args: str,
    converters: Mapping[str, Callable[[str], Any]],
    positional: Sequence[str] = (),
) -> dict[str, Any]:
    """Split spec arguments ``"v1,v2,key=value,..."`` into keyword arguments.

    Leading bare values fill the ``positional`` parameter names in order; the
    rest must be ``key=value`` with ``key`` in ``converters``. Each converter
    turns the text into a value or raises :class:`ValueError` with a reason.
    Missing parameters are left out, so the generator's defaults apply.

    Raises
    ------
    TopologySpecError
        Naming the spec, the offending argument and the family's usage.

    Examples
    --------
    >>> parse_params("ring", "ring:N", "8,bw=50", {"n": int, "bw": Fraction}, ("n",))
    {'n': 8, 'bw': Fraction(50, 1)}
    """
    spec = f"{family}:{args}" if args else family
    result: dict[str, Any] = {}
    if not args:
        return result
    keyword_seen = False
    for index, item in enumerate(args.split(",")):
        item = item.strip()
        key, eq, text = item.partition("=")
        key, text = key.strip(), text.strip()
        keyword_seen = keyword_seen or bool(eq)
        if not eq:
            if keyword_seen or index >= len(positional):
                raise TopologySpecError(f"{spec}: unexpected argument {item!r}; usage: {usage}")
            key, text = positional[index], item
        if key not in converters:
            raise TopologySpecError(
                f"{spec}: unknown parameter {key!r}; valid parameters are "
                f"{', '.join(converters)}; usage: {usage}"
            )
        if key in result:
            raise TopologySpecError(f"{spec}: parameter {key!r} given twice; usage: {usage}")
        try:
            result[key] = converters[key](text)
        except ValueError as err:
            raise TopologySpecError(f"{spec}: {key}: {err}; usage: {usage}") from None
    return result


def single_count(name: str, what: str, default: int = 1) -> Callable[[str], dict]:
    """A parser for specs of the form ``name``, ``name:COUNT`` or ``name:what=COUNT``.

    Examples
    --------
    >>> single_count("dgx-a100", "boxes")("4")
    {'boxes': 4}
    """
    usage = f"{name}[:{what.upper()}]"

    def parse(args: str) -> dict:
        return {what: default, **parse_params(name, usage, args, {what: count(1)}, (what,))}

    return parse


def count(minimum: int = 1) -> Callable[[str], int]:
    """A converter for integer parameters that are at least ``minimum``."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"expected an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise ValueError(f"expected an integer >= {minimum}, got {value}")
        return value

    return convert


def positive_number(text: str) -> Fraction:
    """A converter for positive exact numbers: ``100``, ``12.5``, ``3/2``.

    Examples
    --------
    >>> positive_number("12.5")
    Fraction(25, 2)
    """
    try:
        value = parse_fraction(text)
    except ValueError:
        raise ValueError(
            f"expected a positive number such as 100, 12.5 or 3/2, got {text!r}"
        ) from None
    if value <= 0:
        raise ValueError(f"expected a positive number, got {text!r}")
    return value


def switch_flag(text: str) -> bool:
    """A converter for on/off parameters: ``1`` or ``0`` (``true``/``false``, ``yes``/``no``).

    Examples
    --------
    >>> switch_flag("1"), switch_flag("no")
    (True, False)
    """
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected 1 or 0, got {text!r}")


def choice(*options: str) -> Callable[[str], str]:
    """A converter accepting one of ``options``."""

    def convert(text: str) -> str:
        if text not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {text!r}")
        return text

    return convert
