"""TACCL topology profiles (JSON): reads the custom form with ``links``/``betas`` matrices.

``gpus_per_node``, ``alpha`` and ``links`` / ``betas`` matrices indexed
``[dst][src]``, optionally ``nics_per_node``, ``remote_alpha`` and
``remote_beta``. A beta is the time (µs) one chunk takes on one link, so a
link carries ``chunk_bytes / beta`` (GB/s when ``chunk_bytes`` is given, else
chunks per µs); alphas become link latencies. Writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from optcoll.exceptions import ImportFormatError
from optcoll.io.fields import field, matrix, number
from optcoll.topology import Link, Node, Topology

__all__ = ["from_taccl", "is_taccl"]


def is_taccl(data: Any) -> bool:
    """True for a parsed document that is a TACCL profile (it has ``gpus_per_node``).

    Examples
    --------
    >>> is_taccl({"gpus_per_node": 8}), is_taccl({"nodes": []})
    (True, False)
    """
    return isinstance(data, Mapping) and "gpus_per_node" in data


def from_taccl(
    data: Any, *, name: str | None = None, chunk_bytes: Any = None, boxes: int = 1
) -> Topology:
    """Topology from a TACCL topology profile (its custom form, with matrices).

    ``links[dst][src]`` parallel links of bandwidth ``chunk / betas[dst][src]``
    join GPU ``src`` to ``dst`` within a box, with latency ``alpha`` µs. With
    ``boxes > 1`` the profile needs ``nics_per_node`` and ``remote_beta``: each
    box gets that many NIC switches (GPUs shared among them in order), each
    GPU–NIC and NIC–IB link carrying ``chunk / remote_beta`` with latency
    ``remote_alpha``, and all NICs join one IB switch ``ib``. (TACCL takes the
    inter-box wiring from its sketch file, which this importer does not read.)

    Examples
    --------
    >>> profile = {"name": "pair", "gpus_per_node": 2, "alpha": 0.7,
    ...            "links": [[0, 1], [1, 0]], "betas": [[0, 40], [40, 0]]}
    >>> t = from_taccl(profile, chunk_bytes=10**6)  # 1 MB in 40 us: 25 GB/s
    >>> t.capacity[("b0.gpu0", "b0.gpu1")], t.latency[("b0.gpu0", "b0.gpu1")]
    (Fraction(25, 1), Fraction(7, 10))
    """
    if not isinstance(data, Mapping):
        raise ImportFormatError(f"a TACCL profile must be a JSON object, got {type(data).__name__}")
    what = "the TACCL profile"
    gpus = field(data, "gpus_per_node", what)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 2:
        raise ImportFormatError(f"field 'gpus_per_node' must be an integer >= 2, got {gpus!r}")
    if "links" not in data:
        raise ImportFormatError(
            "the TACCL profile has no 'links' matrix: it is a profile for one of TACCL's "
            "built-in boxes (NDv2, DGX2), whose wiring is not in the file; use optcoll's "
            "built-in topologies for those, or add 'links' and 'betas' (TACCL's custom form)"
        )
    links = matrix(data, "links", gpus, what)
    betas = matrix(data, "betas", gpus, what)
    alpha = number(field(data, "alpha", what), "field 'alpha'")
    if isinstance(boxes, bool) or not isinstance(boxes, int) or boxes < 1:
        raise ImportFormatError(f"boxes must be a positive integer, got {boxes!r}")
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
