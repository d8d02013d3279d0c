"""Built-in topology library, addressed by spec strings such as ``dgx-a100:4``.

A spec is ``family`` or ``family:args`` where ``args`` is either positional
(``dgx-a100:4``, ``torus:4x4``) or ``key=value`` pairs separated by commas
(``leaf-spine:leaves=4,hosts=4,spines=2,oversub=2``). Each family lives in its
own module and registers a :class:`Family` here.

Examples
--------
>>> from optcoll.topologies import build
>>> build("dgx-a100:2").num_compute
16
>>> sorted(FAMILIES)[:2]
['dgx-a100', 'mi250']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from optcoll.exceptions import TopologySpecError
from optcoll.topology import Topology

__all__ = ["Family", "FAMILIES", "register", "build", "is_spec"]


@dataclass(frozen=True)
class Family:
    """A parameterised topology generator.

    ``parse`` turns the text after the colon (possibly empty) into keyword
    arguments for ``generate``; it raises :class:`TopologySpecError` on bad text.
    """

    name: str
    summary: str
    usage: str
    parse: Callable[[str], dict]
    generate: Callable[..., Topology]


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family`` to the library (called by each family module at import)."""
    FAMILIES[family.name] = family
    return family


def is_spec(text: str) -> bool:
    """True if ``text`` names a registered family (``name`` or ``name:args``)."""
    return text.split(":", 1)[0] in FAMILIES


def build(spec: str) -> Topology:
    """Build the topology a spec string names; its name is the spec itself.

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
    kwargs = family.parse(args.strip())
    topo = family.generate(**kwargs)
    return topo


def positive_int(text: str, what: str, spec: str) -> int:
    """Parse a positive integer argument of a spec, or raise a clear error."""
    try:
        value = int(text)
    except ValueError:
        raise TopologySpecError(
            f"{spec}: {what} must be a positive integer, got {text!r}"
        ) from None
    if value < 1:
        raise TopologySpecError(f"{spec}: {what} must be a positive integer, got {value}")
    return value


def single_count(name: str, what: str, default: int = 1) -> Callable[[str], dict]:
    """A parser for specs of the form ``name`` or ``name:COUNT``."""

    def parse(args: str) -> dict:
        if not args:
            return {what: default}
        return {what: positive_int(args, what, f"{name}:{args}")}

    return parse


# Family modules register themselves on import.
from optcoll.topologies import amd, dgx  # noqa: E402,F401
