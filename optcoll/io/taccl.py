"""TACCL topology profiles (JSON): reads both forms. Writes nothing.

The *custom* form (TACCL's ``custom`` topology) gives the box's wiring:
``gpus_per_node``, ``alpha`` and ``links`` / ``betas`` matrices indexed
``[dst][src]``. The *built-in* form (the files in TACCL's ``examples/topo/``)
gives only profiled numbers, ``node_betas_list`` (and ``node_invbws_list``),
for one of TACCL's boxes, whose wiring is in TACCL's code
(``taccl/topologies/generic.py``), restated here:

``NDv2``
    8 V100 in the hybrid cube-mesh: GPU i is linked to 4 others; the pairs
    with beta ``node_betas_list[0]`` are the doubled NVLinks (the matrices of
    :data:`NDV2_LINKS` and :data:`NDV2_BETA_INDEX`).
``DGX2``, ``HubAndSpoke``
    every GPU on one switch (``b{b}.nvswitch``) that takes one chunk per beta
    out of and into each GPU (TACCL's per-node switch constraint,
    ``_make_switch`` in ``taccl/topologies/topology.py``).

Which box a built-in profile describes is TACCL's command-line choice, not
in the file: the option ``box`` names it; without it the profile's ``name``
must start with ``NDv2`` or ``DGX2`` (the example files do).

A beta is the time (µs) one chunk takes on one link, so a link carries
``chunk_bytes / beta`` (GB/s with the option ``chunk_bytes``, else chunks per
µs); alphas become link latencies. ``boxes`` copies the box; copies are joined
through ``nics_per_node`` NIC switches per box on one IB switch ``ib`` at
``chunk / remote_beta`` (TACCL takes the inter-box wiring from its sketch
file, which is not read here). A profile of one GPU per node needs
``boxes >= 2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from optcoll.core.limits import MAX_NODES, check_count, check_size, count_value
from optcoll.core.topology import Link, Node, Topology
from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import field, matrix, number

__all__ = ["from_taccl", "is_taccl", "BOXES", "NDV2_LINKS", "NDV2_BETA_INDEX"]

#: TACCL's built-in boxes a profile without ``links`` may describe.
BOXES = ("NDv2", "DGX2", "HubAndSpoke")

#: NDv2's link matrix, ``[dst][src]`` (TACCL ``taccl/topologies/generic.py``, ``ndv2``).
NDV2_LINKS = (
    (0, 1, 1, 1, 1, 0, 0, 0),
    (1, 0, 1, 1, 0, 1, 0, 0),
    (1, 1, 0, 1, 0, 0, 1, 0),
    (1, 1, 1, 0, 0, 0, 0, 1),
    (1, 0, 0, 0, 0, 1, 1, 1),
    (0, 1, 0, 0, 1, 0, 1, 1),
    (0, 0, 1, 0, 1, 1, 0, 1),
    (0, 0, 0, 1, 1, 1, 1, 0),
)

#: Which of ``node_betas_list`` each NDv2 link takes (same source; -1: no link).
NDV2_BETA_INDEX = (
    (-1, 0, 1, 1, 0, -1, -1, -1),
    (0, -1, 1, 0, -1, 1, -1, -1),
    (1, 1, -1, 0, -1, -1, 0, -1),
    (1, 0, 0, -1, -1, -1, -1, 1),
    (0, -1, -1, -1, -1, 0, 1, 1),
    (-1, 1, -1, -1, 0, -1, 1, 0),
    (-1, -1, 0, -1, 1, 1, -1, 0),
    (-1, -1, -1, 1, 1, 0, 0, -1),
)


def is_taccl(data: Any) -> bool:
    """True for a parsed document that is a TACCL profile (it has ``gpus_per_node``).

    Examples
    --------
    >>> is_taccl({"gpus_per_node": 8}), is_taccl({"nodes": []})
    (True, False)
    """
    return isinstance(data, Mapping) and "gpus_per_node" in data


def from_taccl(
    data: Any,
    *,
    name: str | None = None,
    chunk_bytes: Any = None,
    boxes: Any = 1,
    box: str | None = None,
) -> Topology:
    """Topology from a TACCL topology profile, custom or built-in form.

    ``links[dst][src]`` parallel links of bandwidth ``chunk / betas[dst][src]``
    join GPU ``src`` to ``dst`` within a box, with latency ``alpha`` µs; a
    built-in profile's matrices come from its ``box`` (see the module
    docstring). With ``boxes > 1`` the profile needs ``nics_per_node`` and
    ``remote_beta``: each box gets that many NIC switches (GPUs shared among
    them in order), each GPU-NIC and NIC-IB link carrying ``chunk /
    remote_beta`` with latency ``remote_alpha``, and all NICs join one IB
    switch ``ib``.

    Examples
    --------
    >>> profile = {"name": "pair", "gpus_per_node": 2, "alpha": 0.7,
    ...            "links": [[0, 1], [1, 0]], "betas": [[0, 40], [40, 0]]}
    >>> t = from_taccl(profile, chunk_bytes=10**6)  # 1 MB in 40 us: 25 GB/s
    >>> t.capacity[("b0.gpu0", "b0.gpu1")], t.latency[("b0.gpu0", "b0.gpu1")]
    (Fraction(25, 1), Fraction(7, 10))
    >>> ndv2 = {"name": "NDv2_1MB", "gpus_per_node": 8, "nics_per_node": 1, "alpha": 0.3,
    ...         "node_betas_list": [23, 46], "node_invbws_list": [23, 46],
    ...         "remote_invbw": 107, "remote_alpha": 2.6, "remote_beta": 105}
    >>> t = from_taccl(ndv2, chunk_bytes=10**6, boxes=2)
    >>> t.num_compute, len(t.switch_nodes), t.capacity[("b0.gpu0", "b0.gpu1")]
    (16, 3, Fraction(1000, 23))
    """
    if not isinstance(data, Mapping):
        raise ImportFormatError(f"a TACCL profile must be a JSON object, got {type(data).__name__}")
    what = "the TACCL profile"
    boxes = count_value(boxes, "boxes", MAX_NODES, ImportFormatError)
    gpus = field(data, "gpus_per_node", what)
    least = 1 if boxes > 1 else 2
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < least:
        raise ImportFormatError(
            f"field 'gpus_per_node' must be an integer >= {least}"
            + (" (or 1 with boxes >= 2)" if least == 2 else "")
            + f", got {gpus!r}"
        )
    check_count(gpus, MAX_NODES, "field 'gpus_per_node'", ImportFormatError)
    alpha = number(field(data, "alpha", what), "field 'alpha'")
    links, betas, hub_beta = _box_wiring(data, gpus, box)
    per_box = sum(1 for row in links for count in row if count) + 4 * gpus
    check_size(f"{what} with boxes={boxes}", boxes * (gpus + 1), boxes * per_box, ImportFormatError)
    chunk = (
        Fraction(1)
        if chunk_bytes is None
        else number(chunk_bytes, "chunk_bytes", positive=True) / 1000
    )  # bytes per µs -> GB/s
    nodes: list[Node] = []
    result: list[Link] = []
    for b in range(boxes):
        for g in range(gpus):
            nodes.append(Node(f"b{b}.gpu{g}", "compute", f"box{b}"))
        if hub_beta is not None:
            nodes.append(Node(f"b{b}.nvswitch", "switch", f"box{b}"))
            for g in range(gpus):
                result.append(Link(f"b{b}.gpu{g}", f"b{b}.nvswitch", chunk / hub_beta, alpha, True))
        for d in range(gpus):
            for s in range(gpus):
                if s == d or links[d][s] == 0:
                    continue
                if betas[d][s] == 0:
                    raise ImportFormatError(
                        f"betas[{d}][{s}] is 0 but links[{d}][{s}] is {links[d][s]}: a linked "
                        "pair needs a positive beta"
                    )
                bandwidth = links[d][s] * chunk / betas[d][s]
                result.append(Link(f"b{b}.gpu{s}", f"b{b}.gpu{d}", bandwidth, alpha))
    if boxes > 1:
        nics = field(data, "nics_per_node", f"{what} (needed for boxes > 1)")
        if isinstance(nics, bool) or not isinstance(nics, int) or not 1 <= nics <= gpus:
            raise ImportFormatError(
                f"field 'nics_per_node' must be an integer in 1..{gpus}, got {nics!r}"
            )
        remote = chunk / number(
            field(data, "remote_beta", what), "field 'remote_beta'", positive=True
        )
        remote_alpha = number(data.get("remote_alpha", 0), "field 'remote_alpha'")
        nodes.append(Node("ib", "switch"))
        for b in range(boxes):
            for j in range(nics):
                nodes.append(Node(f"b{b}.nic{j}", "switch", f"box{b}"))
                result.append(Link(f"b{b}.nic{j}", "ib", remote, remote_alpha, True))
            for g in range(gpus):
                nic = f"b{b}.nic{g * nics // gpus}"
                result.append(Link(f"b{b}.gpu{g}", nic, remote, remote_alpha, True))
    title = name or f"taccl-{data.get('name', 'profile')}" + (f":{boxes}" if boxes > 1 else "")
    return Topology(
        title,
        nodes,
        result,
        bandwidth_unit="GB/s" if chunk_bytes is not None else "chunk/us",
        description=f"imported from TACCL profile {data.get('name', '')!r}",
    )


_Matrix = list[list[Fraction]]


def _box_wiring(
    data: Mapping[str, Any], gpus: int, box: str | None
) -> tuple[_Matrix, _Matrix, Fraction | None]:
    """``(links, betas, hub_beta)`` of one box: the custom matrices, or a built-in box's."""
    what = "the TACCL profile"
    if "links" in data:
        if box not in (None, "custom"):
            raise ImportFormatError(
                f"box={box!r} names a built-in box, but the profile has a 'links' matrix "
                "(TACCL's custom form); drop the option"
            )
        return matrix(data, "links", gpus, what), matrix(data, "betas", gpus, what), None
    if "node_betas_list" not in data:
        raise ImportFormatError(
            "the TACCL profile has neither a 'links' matrix (custom form) nor "
            "'node_betas_list' (built-in form)"
        )
    chosen = box or _box_from_name(data)
    by_key = {b.lower(): b for b in BOXES}
    if chosen.lower() not in by_key:
        raise ImportFormatError(f"box={chosen!r} is not one of TACCL's boxes {', '.join(BOXES)}")
    chosen = by_key[chosen.lower()]
    betas_list = data["node_betas_list"]
    needed = 2 if chosen == "NDv2" else 1
    if not isinstance(betas_list, list) or len(betas_list) != needed:
        raise ImportFormatError(
            f"field 'node_betas_list' must hold {needed} number{'s' * (needed > 1)} for "
            f"TACCL's {chosen}, got {betas_list!r}"
        )
    node_betas = [
        number(x, f"node_betas_list[{i}]", positive=True) for i, x in enumerate(betas_list)
    ]
    zero = [[Fraction(0)] * gpus for _ in range(gpus)]
    if chosen != "NDv2":
        return zero, zero, node_betas[0]
    if gpus != 8:
        raise ImportFormatError(f"field 'gpus_per_node' is {gpus}; TACCL's NDv2 has 8 GPUs")
    links = [[Fraction(x) for x in row] for row in NDV2_LINKS]
    betas = [[Fraction(0) if i < 0 else node_betas[i] for i in row] for row in NDV2_BETA_INDEX]
    return links, betas, None


def _box_from_name(data: Mapping[str, Any]) -> str:
    label = str(data.get("name", ""))
    for box in ("NDv2", "DGX2"):
        if label.lower().startswith(box.lower()):
            return box
    raise ImportFormatError(
        f"the TACCL profile {label!r} is in the built-in form (no 'links' matrix) and its name "
        f"does not say which of TACCL's boxes it profiles; pass the option box= one of "
        f"{', '.join(BOXES)}"
    )
