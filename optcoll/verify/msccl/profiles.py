"""What each MSCCL runtime's XML parser accepts: the checker's own copy of the rules, as data.

Three runtimes load MSCCL algorithm XML; each value below names the source file (and line)
it was read from, at the commit given in :data:`SOURCES`. The checker keeps its own copy of
these facts so that it never trusts the exporter's.

Examples
--------
>>> PROFILES["rccl"].max_steps, PROFILES["msccl"].max_steps
(64, 256)
>>> PROFILES["rccl"].collectives["reducescatter"], "reduce_scatter" in PROFILES["rccl"].collectives
('reduce_scatter', False)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from optcoll.exceptions import OptCollError

__all__ = ["RuntimeProfile", "PROFILES", "SOURCES", "DEFAULT_RUNTIME", "runtime_profile"]

#: Repository and commit each profile was read from.
SOURCES = {
    "rccl": "ROCm/rccl @ 0cbce2a7571c907554199fad7e905f16ec0a565c",
    "msccl": "microsoft/msccl @ b23e9cd5dd63f82ee1c5aae7e0a2042079be903a",
    "msccl-executor": "Azure/msccl-executor-nccl @ c6f6b36d1a4c7ae44916fcc5c8e32c95cce2ae54",
}

DEFAULT_RUNTIME = "rccl"

_STEP_ATTRIBUTES = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps",
                    "hasdep")  # fmt: skip
_TB_ATTRIBUTES = ("id", "send", "recv", "chan")
_STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
_PROTOCOLS = ("Simple", "LL128", "LL")
_GPU_ATTRIBUTES = ("id", "i_chunks", "o_chunks", "s_chunks")
# RCCL's and msccl-executor's parser: one spelling per collective (the checker's name on the right)
_RCCL_COLLECTIVES = {
    "allgather": "allgather",
    "reducescatter": "reduce_scatter",
    "allreduce": "allreduce",
    "alltoall": "alltoall",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoallv": "alltoallv",
    "gather": "gather",
    "scatter": "scatter",
    "send": "send",
    "recv": "recv",
}


@dataclass(frozen=True)
class RuntimeProfile:
    """The limits and spellings one runtime's MSCCL parser and interpreter impose.

    Attributes
    ----------
    name : str
        ``rccl``, ``msccl`` or ``msccl-executor``.
    collectives : dict
        Accepted ``coll`` spellings, each mapped to the checker's collective name.
    max_steps : int
        Steps per thread block (``s`` must be below it).
    max_threadblocks : int
        Thread blocks per GPU (``tb id`` must be below it).
    max_channel : int
        Channel ids must be below it (the channel table has this many entries).
    max_peers_per_channel : int
        Thread blocks with a send (or receive) peer on one channel.
    max_count : int
        ``cnt`` must be below it; ``min_count`` is the least accepted ``cnt`` of a transfer.
    max_depid : int
        ``depid`` is stored in an int8.
    max_offset : int
        Offsets and ``deps`` are stored in an int16.
    max_xml_nodes : int
        Elements the parser keeps for one rank (algo, gpus, that rank's tbs and steps).
    max_value_length : int
        Longest attribute value the parser's fixed buffer holds.
    step_types : tuple
        Accepted step ``type`` spellings.
    protocols : tuple
        Accepted ``proto`` values.
    required : dict
        Required attributes per element.
    has_outofplace : bool
        The ``outofplace`` attribute exists (otherwise ``inplace`` alone picks the placement).
    max_bytes_zero_unbounded : bool
        ``maxBytes="0"`` means no upper bound (otherwise the file is never selected).
    chunks_match_loop : bool
        The parser requires ``i_chunks`` and ``o_chunks`` (when non-zero) to match
        ``nchunksperloop`` for the collective.
    never_in_place : tuple
        Collectives (checker names) the runtime refuses to run in place, before it
        looks for an algorithm: a file of theirs claiming ``inplace`` is never used.
    sources : dict
        Field name -> source file and line the value comes from.
    """

    name: str
    collectives: dict[str, str]
    max_steps: int
    max_threadblocks: int
    max_channel: int
    max_peers_per_channel: int
    max_count: int
    min_count: int
    max_depid: int
    max_offset: int
    max_xml_nodes: int
    max_value_length: int
    step_types: tuple[str, ...]
    protocols: tuple[str, ...]
    required: dict[str, tuple[str, ...]]
    has_outofplace: bool
    max_bytes_zero_unbounded: bool
    chunks_match_loop: bool
    never_in_place: tuple[str, ...] = ()
    sources: dict[str, str] = field(default_factory=dict)


_RCCL_SOURCES = {
    "collectives": "src/misc/msccl/msccl_parser.cc:335-373",
    "max_steps": "src/include/msccl/msccl_struct.h:16 (MSCCL_MAX_NUM_STEPS), parser.cc:485",
    "max_threadblocks": "src/include/msccl/msccl_struct.h:18, msccl_parser.cc:421",
    "max_channel": "src/include/device.h:65 (MAXCHANNELS 128), msccl_parser.cc:449",
    "max_peers_per_channel": "src/include/msccl/msccl_struct.h:17, msccl_parser.cc:589,602",
    "max_count": "src/include/msccl/msccl_struct.h:19 (MSCCL_MAX_COUNT), msccl_parser.cc:577",
    "max_depid": "src/include/msccl/msccl_struct.h:58 (int8_t dependentBid)",
    "max_offset": "src/include/msccl/msccl_struct.h:44-45,59 (int16_t offsets, dependentStep)",
    "max_xml_nodes": "src/include/msccl/msccl_parser.h:23 (MAX_NODES), msccl_parser.cc:169",
    "max_value_length": "src/include/msccl/msccl_parser.h:20 (MAX_STR_LEN)",
    "step_types": "src/misc/msccl/msccl_parser.cc:499-543",
    "protocols": "src/misc/msccl/msccl_parser.cc:290-302",
    "required": "src/misc/msccl/msccl_parser.cc:315-483 (mscclXmlGetAttr* fails if absent)",
    "max_bytes_zero_unbounded": "src/misc/msccl/msccl_lifecycle.cc:334",
    "selection": "src/misc/msccl/msccl_lifecycle.cc:313-338 (in-place test per collective)",
}

_RCCL = RuntimeProfile(
    name="rccl",
    collectives=_RCCL_COLLECTIVES,
    max_steps=64,
    max_threadblocks=64,
    max_channel=128,
    max_peers_per_channel=32,
    max_count=72,
    min_count=0,
    max_depid=127,
    max_offset=32767,
    max_xml_nodes=4096,
    max_value_length=254,
    step_types=_STEP_TYPES,
    protocols=_PROTOCOLS,
    required={
        "algo": (
            "nchunksperloop",
            "nchannels",
            "ngpus",
            "proto",
            "coll",
            "minBytes",
            "maxBytes",
            "inplace",
            "outofplace",
        ),
        "gpu": _GPU_ATTRIBUTES,
        "tb": _TB_ATTRIBUTES,
        "step": _STEP_ATTRIBUTES,
    },
    has_outofplace=True,
    max_bytes_zero_unbounded=True,
    chunks_match_loop=False,
    sources=_RCCL_SOURCES,
)

PROFILES: dict[str, RuntimeProfile] = {
    "rccl": _RCCL,
    "msccl-executor": replace(
        _RCCL,
        name="msccl-executor",
        max_threadblocks=32 * 32,
        max_channel=32,
        sources={
            "max_steps": "makefiles/common.mk:19 (MSCCL_MAX_NUM_STEPS ?= 64)",
            "max_threadblocks": "src/include/msccl/msccl_struct.h:17-18 (32 per channel x "
            "MAXCHANNELS)",
            "max_channel": "src/include/device.h:65 (MAXCHANNELS 32), msccl_parser.cc:449",
            "max_count": "src/include/msccl/msccl_struct.h:19",
            "max_xml_nodes": "src/include/msccl/msccl_parser.h:23",
            "collectives": "src/misc/msccl/msccl_parser.cc:335-373",
            "max_bytes_zero_unbounded": "src/misc/msccl/msccl_lifecycle.cc:335",
            "other": "msccl_parser.cc is RCCL's file (same checks, same lines)",
        },
    ),
    "msccl": RuntimeProfile(
        name="msccl",
        collectives={
            "allgather": "allgather",
            "reduce_scatter": "reduce_scatter",
            "allreduce": "allreduce",
            "alltoall": "alltoall",
            "broadcast": "broadcast",
            "reduce": "reduce",
            "custom": "custom",
        },
        max_steps=256,
        max_threadblocks=216,
        max_channel=32,
        max_peers_per_channel=32,
        max_count=72,
        min_count=1,
        max_depid=127,
        max_offset=32767,
        max_xml_nodes=4096,
        max_value_length=254,
        step_types=_STEP_TYPES,
        protocols=_PROTOCOLS,
        required={
            "algo": ("name", "ngpus", "nchunksperloop", "nchannels", "proto", "coll", "inplace"),
            "gpu": _GPU_ATTRIBUTES,
            "tb": _TB_ATTRIBUTES,
            "step": _STEP_ATTRIBUTES,
        },
        has_outofplace=False,
        max_bytes_zero_unbounded=False,
        chunks_match_loop=True,
        never_in_place=("alltoall",),
        sources={
            "collectives": "src/graph/topo.cc:826-845",
            "max_steps": "src/include/msccl.h:6, src/graph/topo.cc:972",
            "max_threadblocks": "src/include/msccl.h:8 (108*2), src/graph/topo.cc:903",
            "max_channel": "src/include/devcomm.h:51 (MAXCHANNELS 32), src/graph/topo.cc:936",
            "max_peers_per_channel": "src/include/msccl.h:7, src/graph/topo.cc:1076,1090",
            "max_count": "src/include/msccl.h:10, src/graph/topo.cc:1065",
            "min_count": "src/graph/topo.cc:1082 (nchunksForPeer[count-1])",
            "max_depid": "src/include/msccl.h:65 (int8_t dependentBid)",
            "max_offset": "src/include/msccl.h:46-47,66 (int16_t)",
            "max_xml_nodes": "src/graph/xml.h:19 (MAX_NODES)",
            "required": "src/graph/topo.cc:771-970",
            "max_bytes_zero_unbounded": "src/graph/tuning.cc:353,369 (nBytes < maxBytes; "
            "absent maxBytes = 128 MB, topo.cc:805)",
            "chunks_match_loop": "src/graph/topo.cc:886",
            "never_in_place": "src/collectives/all_to_all.cc:49-51 (in-place alltoall: "
            "ncclInvalidUsage)",
            "selection": "src/graph/tuning.cc:312-369 (inPlace must equal the file's)",
        },
    ),
}


def runtime_profile(name: str) -> RuntimeProfile:
    """The profile called ``name``; :class:`~optcoll.exceptions.OptCollError` if unknown.

    Examples
    --------
    >>> runtime_profile("msccl").max_threadblocks
    216
    """

    if name not in PROFILES:
        raise OptCollError(f"unknown runtime {name!r}; valid: {', '.join(sorted(PROFILES))}")
    return PROFILES[name]
