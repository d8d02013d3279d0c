"""GROUPS on the command line and in :func:`parse_groups`: a spec over the rank order or a file.

A JSON/YAML file holds a list of groups (each a list of compute-node ids) or an
object ``{"groups": [...], "relay": "members" | "any"}``. A spec is over the
**rank order** (the order of the compute nodes in the topology; for built-ins,
box by box): ``blocks:T`` (consecutive groups of ``T`` ranks, tensor-parallel
style) or ``strided:T`` (``N / T`` groups of ``T`` ranks, group ``j`` holding
ranks ``j, j + N/T, j + 2N/T, ...``: data-parallel style).
"""

from __future__ import annotations

import re
from pathlib import Path

from optcoll.core.arguments import choice_argument, text_argument, topology_argument
from optcoll.core.limits import is_decimal
from optcoll.core.process_groups import RELAYS, ProcessGroups, make_groups
from optcoll.core.topology import Topology
from optcoll.exceptions import GroupError
from optcoll.io.document import read_document

__all__ = ["parse_groups"]

_SPEC = re.compile(r"^(blocks|strided):(.*)$")


def parse_groups(topology: Topology, text: str, relay: str | None = None) -> ProcessGroups:
    """ProcessGroups from GROUPS: ``blocks:T``, ``strided:T`` or a JSON/YAML file.

    ``relay`` (``None``: the file's ``"relay"``, else ``members``) must agree
    with a ``"relay"`` the file states.

    Raises
    ------
    GroupError
        A spec whose ``T`` is not an integer >= 2 dividing N, a file that does
        not exist or holds something other than groups, or a relay that
        contradicts the file's; and every error of :func:`make_groups`.
    FileFormatError
        A file that is not valid JSON/YAML.

    Examples
    --------
    >>> from optcoll import load_topology
    >>> [len(g) for g in parse_groups(load_topology("dgx-a100:2"), "blocks:8").groups]
    [8, 8]
    >>> parse_groups(load_topology("dgx-a100:2"), "blocks:3")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.GroupError: blocks:3: 3 does not divide the 16 compute nodes of dgx-a100:2
    """
    topology_argument(topology)
    text_argument(text, "text")
    if relay is not None:
        choice_argument(relay, RELAYS, "relay")
    match = _SPEC.match(text)
    if match is not None:
        return make_groups(
            topology, _spec_groups(topology, text, *match.groups()), relay or "members"
        )
    path = Path(text)
    if not path.is_file():
        raise GroupError(
            f"GROUPS {text!r} is neither blocks:T, strided:T nor an existing JSON/YAML file"
        )
    data = read_document(path)
    stated = None
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"groups", "relay"})
        if unknown or "groups" not in data:
            raise GroupError(
                f"{path}: a groups object has the fields 'groups' and optionally 'relay'"
                + (f", not {', '.join(map(repr, unknown))}" if unknown else "")
            )
        stated = data.get("relay")
        data = data["groups"]
    if stated is not None and relay is not None and stated != relay:
        raise GroupError(f"{path} says relay {stated!r} but --relay {relay} was given")
    if not isinstance(data, list):
        raise GroupError(f"{path}: expected a list of groups (lists of compute-node ids)")
    try:
        return make_groups(topology, data, relay or stated or "members")
    except GroupError as err:
        raise GroupError(f"{path}: {err}") from None


def _spec_groups(topology: Topology, text: str, kind: str, size_text: str) -> list[list[str]]:
    ranks = topology.compute_nodes
    n = len(ranks)
    if not is_decimal(size_text) or int(size_text) < 2:
        raise GroupError(f"{text}: the group size must be an integer >= 2, got {size_text!r}")
    size = int(size_text)
    if n % size:
        raise GroupError(f"{text}: {size} does not divide the {n} compute nodes of {topology.name}")
    if kind == "blocks":
        return [list(ranks[i : i + size]) for i in range(0, n, size)]
    stride = n // size
    return [list(ranks[j::stride]) for j in range(stride)]
