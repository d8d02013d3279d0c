"""The MSCCL runtimes' rules, as data: one profile per runtime, read by the writer and the checker.

Three runtimes load MSCCL algorithm XML, each with its own parser and limits:

* ``rccl``: ROCm/rccl (parser ``src/misc/msccl/msccl_parser.cc``, limits in
  ``src/include/msccl/msccl_struct.h``, selection in ``src/misc/msccl/msccl_lifecycle.cc``);
* ``msccl``: microsoft/msccl, the NCCL 2.12 fork (parser in ``src/graph/topo.cc``, limits in
  ``src/include/msccl.h``, selection in ``src/graph/tuning.cc``);
* ``msccl-executor``: Azure/msccl-executor-nccl (RCCL's parser and selection, limits in
  ``src/include/msccl/msccl_struct.h`` and ``makefiles/common.mk``).

This table holds facts only; the MSCCL writer (:mod:`optcoll.export.runtimes`) and the
independent checker (:mod:`optcoll.verify.msccl`) each read it with code of their own. Every
value names the source file and line it comes from (:attr:`RuntimeProfile.sources`), read at
the commits in :data:`SOURCE_COMMITS`.

**Convention for limits**: every ``max_*`` is inclusive, the largest value (or number of
items) the runtime accepts, and every ``min_*`` the smallest. Where the runtime's own constant
is an exclusive bound (``MSCCL_MAX_COUNT 72``: ``cnt >= 72`` is refused) the profile holds
the largest accepted value (``max_count = 71``); where the constant counts items
(``MSCCL_MAX_NUM_STEPS 64``: ``s >= 64`` is refused, so 64 steps fit) it holds that count.

The default runtime is ``rccl``: MSCCL ships enabled inside every RCCL build
(``RCCL_MSCCL_ENABLE`` defaults to 1), whereas microsoft/msccl is a frozen NCCL 2.12 fork and
msccl-executor an opt-in NCCL plugin; RCCL's limits are also the tightest of the three, so a
file written for it loads in the others once ``coll`` is spelt for them.

Examples
--------
>>> rccl = RUNTIMES["rccl"]
>>> rccl.max_steps, rccl.max_threadblocks, rccl.min_count, rccl.max_count
(64, 64, 0, 71)
>>> rccl.sources["max_count"]
'ROCm/rccl src/include/msccl/msccl_struct.h:19 (MSCCL_MAX_COUNT 72); src/misc/msccl/msccl_parser.cc:577 (count < 0 or count >= MSCCL_MAX_COUNT refused)'
>>> rccl.launch_step_types
('s', 'r', 'cpy', 're', 'nop')
>>> rccl.collectives["reducescatter"], RUNTIMES["msccl"].collectives["reduce_scatter"]
('reduce_scatter', 'reduce_scatter')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

__all__ = ["RuntimeProfile", "RUNTIMES", "DEFAULT_RUNTIME", "SOURCE_COMMITS"]

#: The commits whose sources the profiles cite.
SOURCE_COMMITS: Mapping[str, str] = MappingProxyType(
    {
        "ROCm/rccl": "0cbce2a7571c907554199fad7e905f16ec0a565c",
        "microsoft/msccl": "b23e9cd5dd63f82ee1c5aae7e0a2042079be903a",
        "Azure/msccl-executor-nccl": "c6f6b36d1a4c7ae44916fcc5c8e32c95cce2ae54",
    }
)


@dataclass(frozen=True)
class RuntimeProfile:
    """The rules one MSCCL runtime applies to an algorithm file (limits inclusive).

    Attributes
    ----------
    name : str
        ``rccl``, ``msccl`` or ``msccl-executor``.
    collectives : Mapping
        Every ``coll`` spelling the parser accepts -> the collective it means (optcoll's
        names: ``reduce_scatter``, ``allgather``, ...).
    protocols : tuple of str
        Accepted ``proto`` values.
    step_types : tuple of str
        Accepted step ``type`` spellings.
    launch_step_types : tuple of str
        The step types of ``step_types`` the runtime also runs: a file using another is
        parsed, then refused when it is launched (RCCL) - its parser accepts every type of
        ``step_types``, its kernel and launch setup fewer.
    required : Mapping
        Element (``algo``, ``gpu``, ``tb``, ``step``) -> the attributes the parser reads
        without a default.
    max_steps : int
        Most steps in one thread block (``s`` runs 0..max_steps-1).
    max_threadblocks : int
        Most thread blocks per GPU (``tb id`` runs 0..max_threadblocks-1).
    max_channels : int
        Most channels (``chan`` runs 0..max_channels-1).
    max_peers_per_channel : int
        Most thread blocks with a send peer (and, separately, with a receive peer) on one
        channel of one GPU.
    min_count, max_count : int
        Smallest and largest ``cnt`` of a step that moves data.
    max_depid : int
        Largest thread block id a ``depid`` may name (stored as ``int8_t``).
    max_offset : int
        Largest ``srcoff``/``dstoff``/``deps`` (stored as ``int16_t``).
    max_xml_nodes : int
        Most XML elements the parser keeps for one rank (its ``<algo>``, the ``<gpu>``
        elements, that rank's ``<tb>`` and ``<step>`` elements).
    max_value_length : int
        Longest attribute value the parser's fixed buffer holds.
    max_files : int or None
        Most algorithm files one communicator loads (None: no limit that matters here).
    has_outofplace : bool
        True: ``inplace`` and ``outofplace`` are separate flags (one file may serve both);
        False: only ``inplace`` is read and must equal the call's placement.
    max_bytes_inclusive : bool
        True: a file serves ``minBytes <= nBytes <= maxBytes``; False: ``nBytes < maxBytes``.
    unlimited_max_bytes : int or None
        The ``maxBytes`` value meaning "no upper limit" (None: there is none, and the
        runtime sizes its scratch buffer from ``maxBytes`` when it loads the file).
    chunks_match_loop : bool
        The parser requires ``i_chunks`` and ``o_chunks`` (when non-zero) to equal the
        buffer sizes ``nchunksperloop`` gives the collective.
    never_in_place : tuple of str
        Collectives the runtime refuses to run in place before it looks for an algorithm
        (a file of theirs claiming ``inplace`` is never used).
    environment : tuple of str
        Environment variables that make the runtime load a folder or list of files.
    sources : Mapping
        Field name -> "repository file:line (what it says)".
    """

    name: str
    collectives: Mapping[str, str]
    protocols: tuple[str, ...]
    step_types: tuple[str, ...]
    launch_step_types: tuple[str, ...]
    required: Mapping[str, tuple[str, ...]]
    max_steps: int
    max_threadblocks: int
    max_channels: int
    max_peers_per_channel: int
    min_count: int
    max_count: int
    max_depid: int
    max_offset: int
    max_xml_nodes: int
    max_value_length: int
    max_files: int | None
    has_outofplace: bool
    max_bytes_inclusive: bool
    unlimited_max_bytes: int | None
    chunks_match_loop: bool
    never_in_place: tuple[str, ...]
    environment: tuple[str, ...]
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)


def _frozen(mapping: dict) -> Mapping:
    return MappingProxyType(mapping)


_RCCL = "ROCm/rccl"
_RCCL_STRUCT = f"{_RCCL} src/include/msccl/msccl_struct.h"
_RCCL_PARSER = f"{_RCCL} src/misc/msccl/msccl_parser.cc"
_RCCL_LIFE = f"{_RCCL} src/misc/msccl/msccl_lifecycle.cc"
_MS = "microsoft/msccl"
_MS_HEADER = f"{_MS} src/include/msccl.h"
_MS_PARSER = f"{_MS} src/graph/topo.cc"
_MS_TUNING = f"{_MS} src/graph/tuning.cc"
_EX = "Azure/msccl-executor-nccl"
_EX_STRUCT = f"{_EX} src/include/msccl/msccl_struct.h"
_EX_PARSER = f"{_EX} src/misc/msccl/msccl_parser.cc"
_EX_LIFE = f"{_EX} src/misc/msccl/msccl_lifecycle.cc"

_PROTOCOLS = ("Simple", "LL128", "LL")
_STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
#: What RCCL's kernels run (``fullOps = false``): no step that receives and sends or
#: receives and reduces in one (``nop`` is no transmission: the parser folds its wait into
#: the next step).
_RCCL_LAUNCH_TYPES = ("s", "r", "cpy", "re", "nop")
_GPU_ATTRIBUTES = ("id", "i_chunks", "o_chunks", "s_chunks")
_TB_ATTRIBUTES = ("id", "send", "recv", "chan")
_STEP_ATTRIBUTES = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps",
                    "hasdep")  # fmt: skip

#: RCCL's parser (msccl-executor's too): one spelling per collective.
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
_RCCL_ALGO = ("nchunksperloop", "nchannels", "ngpus", "proto", "coll", "minBytes", "maxBytes",
              "inplace", "outofplace")  # fmt: skip
_RCCL_COUNT = (
    f"{_RCCL_STRUCT}:19 (MSCCL_MAX_COUNT 72); src/misc/msccl/msccl_parser.cc:577 "
    "(count < 0 or count >= MSCCL_MAX_COUNT refused)"
)

_RCCL_PROFILE = RuntimeProfile(
    name="rccl",
    collectives=_frozen(_RCCL_COLLECTIVES),
    protocols=_PROTOCOLS,
    step_types=_STEP_TYPES,
    launch_step_types=_RCCL_LAUNCH_TYPES,
    required=_frozen(
        {"algo": _RCCL_ALGO, "gpu": _GPU_ATTRIBUTES, "tb": _TB_ATTRIBUTES, "step": _STEP_ATTRIBUTES}
    ),
    max_steps=64,
    max_threadblocks=64,
    max_channels=128,
    max_peers_per_channel=32,
    min_count=0,
    max_count=71,
    max_depid=127,
    max_offset=32767,
    max_xml_nodes=4095,
    max_value_length=254,
    max_files=1024,
    has_outofplace=True,
    max_bytes_inclusive=True,
    unlimited_max_bytes=0,
    chunks_match_loop=False,
    never_in_place=(),
    environment=("MSCCL_ALGO_DIR", "RCCL_MSCCL_ENABLE", "RCCL_MSCCL_FORCE_ENABLE"),
    sources=_frozen(
        {
            "collectives": f"{_RCCL_PARSER}:335-373 (strcmp on coll: 'reducescatter', ...)",
            "protocols": f"{_RCCL_PARSER}:290-302",
            "step_types": f"{_RCCL_PARSER}:499-543",
            "launch_step_types": f"{_RCCL} src/misc/msccl/msccl_setup.cc:430-437 "
            "(mscclSetupKernel: an algorithm whose typeMask has rcs, rrs, rrcs or rrc, or any "
            "algorithm once RCCL_MSCCL_FORCE_FULLOPS (:411) is set: 'this version of MSCCL "
            "build doesn't support full Ops', ncclInternalError); "
            "src/device/msccl_kernel_impl.h:296-375 (s, r, re, cpy; fused types only if "
            "fullOps), :432-435 (kernels built with fullOps false only); "
            f"{_RCCL_PARSER}:538-539,568 (nop: no transmission)",
            "required": f"{_RCCL_PARSER}:315-483 (mscclXmlGetAttr* fails if absent)",
            "max_steps": f"{_RCCL_STRUCT}:16 (MSCCL_MAX_NUM_STEPS 64); "
            "src/misc/msccl/msccl_parser.cc:485 (s >= it refused)",
            "max_threadblocks": f"{_RCCL_STRUCT}:18 (MSCCL_MAX_NUM_THREAD_BLOCKS 64); "
            "src/misc/msccl/msccl_parser.cc:421 (tb id >= it refused)",
            "max_channels": f"{_RCCL} src/include/device.h:65 (MAXCHANNELS 128); "
            "src/misc/msccl/msccl_parser.cc:449",
            "max_peers_per_channel": f"{_RCCL_STRUCT}:17 (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL"
            " 32); src/misc/msccl/msccl_parser.cc:589,602 (checked per thread block with a "
            "send/recv peer)",
            "min_count": _RCCL_COUNT,
            "max_count": _RCCL_COUNT,
            "max_depid": f"{_RCCL_STRUCT}:58 (int8_t dependentBid)",
            "max_offset": f"{_RCCL_STRUCT}:44-45,59 (int16_t srcOffset, dstOffset, dependentStep)",
            "max_xml_nodes": f"{_RCCL} src/include/msccl/msccl_parser.h:23 (MAX_NODES 4096); "
            "src/misc/msccl/msccl_parser.cc:169 (refused once the node table is full)",
            "max_value_length": f"{_RCCL} src/include/msccl/msccl_parser.h:20 (MAX_STR_LEN)",
            "max_files": f"{_RCCL_STRUCT}:21 (MSCCL_MAX_NUM_ALGOS 1024)",
            "has_outofplace": f"{_RCCL_PARSER}:383-389, {_RCCL_LIFE}:338",
            "max_bytes_inclusive": f"{_RCCL_LIFE}:333-334 (nBytes >= minBytes && "
            "(maxBytes == 0 || nBytes <= maxBytes))",
            "unlimited_max_bytes": f"{_RCCL_LIFE}:334 (maxBytes == 0)",
            "chunks_match_loop": f"{_RCCL_PARSER} (i_chunks and o_chunks bound the offsets only)",
            "never_in_place": f"{_RCCL_LIFE}:313-326 (in place is tested per collective; "
            "alltoall in place: sendBuff == recvBuff)",
            "environment": f"{_RCCL_LIFE}:29-30,112 (MSCCL_ALGO_DIR; RCCL_PARAM adds 'RCCL_')",
        }
    ),
)

_EX_COUNT = f"{_EX_STRUCT}:19 (MSCCL_MAX_COUNT 72); {_EX_PARSER}:577 (as RCCL)"

_EXECUTOR_PROFILE = replace(
    _RCCL_PROFILE,
    name="msccl-executor",
    max_threadblocks=32 * 32,
    max_channels=32,
    launch_step_types=_STEP_TYPES,
    environment=("MSCCL_ALGO_DIR", "NCCL_MSCCL_ENABLE"),
    sources=_frozen(
        {
            "collectives": f"{_EX_PARSER}:335-373 (as RCCL: 'reducescatter')",
            "protocols": f"{_EX_PARSER}:290-302 (RCCL's file: same checks, same lines)",
            "step_types": f"{_EX_PARSER}:499-543",
            "launch_step_types": f"{_EX} src/device/msccl_kernel.cu:250-311 (send, recv, "
            "reduce, recvCopySend, recvReduceSend, recvReduceCopySend, recvReduceCopy, "
            "localCopy; src/misc/msccl/msccl_setup.cc has no full-ops check)",
            "required": f"{_EX_PARSER}:315-483",
            "max_steps": f"{_EX} makefiles/common.mk:19 (MSCCL_MAX_NUM_STEPS ?= 64)",
            "max_threadblocks": f"{_EX_STRUCT}:17-18 (32 per channel x MAXCHANNELS)",
            "max_channels": f"{_EX} src/include/device.h:65 (MAXCHANNELS 32); "
            "src/misc/msccl/msccl_parser.cc:449",
            "max_peers_per_channel": f"{_EX_STRUCT}:17 (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL 32)",
            "min_count": _EX_COUNT,
            "max_count": _EX_COUNT,
            "max_depid": f"{_EX_STRUCT}:58 (int8_t dependentBid)",
            "max_offset": f"{_EX_STRUCT}:44-45,59 (int16_t srcOffset, dstOffset, dependentStep)",
            "max_xml_nodes": f"{_EX} src/include/msccl/msccl_parser.h:23 (MAX_NODES)",
            "max_value_length": f"{_EX} src/include/msccl/msccl_parser.h:20 (MAX_STR_LEN)",
            "max_files": f"{_EX_STRUCT}:21 (MSCCL_MAX_NUM_ALGOS 1024)",
            "has_outofplace": f"{_EX_LIFE}:339",
            "max_bytes_inclusive": f"{_EX_LIFE}:333-335 (as RCCL)",
            "unlimited_max_bytes": f"{_EX_LIFE}:335 (maxBytes == 0)",
            "chunks_match_loop": f"{_EX_PARSER} (as RCCL)",
            "never_in_place": f"{_EX_LIFE}:319-320 (alltoall in place: sendBuff == recvBuff)",
            "environment": f"{_EX_LIFE}:27,79 (MSCCL_ALGO_DIR; NCCL_PARAM adds 'NCCL_')",
        }
    ),
)

_MS_COUNT = (
    f"{_MS_HEADER}:10 (MSCCL_MAX_COUNT 72); src/graph/topo.cc:1065 (count >= it refused), "
    ":1082 (nchunksForPeer[count-1]: cnt 0 reads before the array)"
)

_MSCCL_PROFILE = RuntimeProfile(
    name="msccl",
    collectives=_frozen(
        {
            "allgather": "allgather",
            "reduce_scatter": "reduce_scatter",
            "allreduce": "allreduce",
            "alltoall": "alltoall",
            "broadcast": "broadcast",
            "reduce": "reduce",
            "custom": "custom",
        }
    ),
    protocols=_PROTOCOLS,
    step_types=_STEP_TYPES,
    launch_step_types=_STEP_TYPES,
    required=_frozen(
        {
            "algo": ("name", "ngpus", "nchunksperloop", "nchannels", "proto", "coll", "inplace"),
            "gpu": _GPU_ATTRIBUTES,
            "tb": _TB_ATTRIBUTES,
            "step": _STEP_ATTRIBUTES,
        }
    ),
    max_steps=256,
    max_threadblocks=216,
    max_channels=32,
    max_peers_per_channel=32,
    min_count=1,
    max_count=71,
    max_depid=127,
    max_offset=32767,
    max_xml_nodes=4095,
    max_value_length=254,
    max_files=4,
    has_outofplace=False,
    max_bytes_inclusive=False,
    unlimited_max_bytes=None,
    chunks_match_loop=True,
    never_in_place=("alltoall",),
    environment=("MSCCL_XML_FILES", "MSCCL_CONFIG"),
    sources=_frozen(
        {
            "collectives": f"{_MS_PARSER}:826-845 (strcmp on coll: 'reduce_scatter', ...)",
            "protocols": f"{_MS_PARSER} (proto: Simple, LL128, LL)",
            "step_types": f"{_MS_PARSER} (strcmp on type: s, r, rcs, rrs, rrc, rrcs, cpy, re, nop)",
            "launch_step_types": f"{_MS} src/collectives/device/msccl_interpreter.h:151-196 "
            "(send, recv, reduce, recvCopySend, recvReduceSend, recvReduceCopySend, "
            "recvReduceCopy, localCopy); src/graph/topo.cc:1025-1026,1056 (nop: no transfer)",
            "required": f"{_MS_PARSER}:771-970 (attributes read without a default)",
            "max_steps": f"{_MS_HEADER}:6 (MSCCL_MAX_NUM_STEPS 256); src/graph/topo.cc:972",
            "max_threadblocks": f"{_MS_HEADER}:8 (MSCCL_MAX_NUM_THREAD_BLOCKS 108*2); "
            "src/graph/topo.cc:903",
            "max_channels": f"{_MS} src/include/devcomm.h:51 (MAXCHANNELS 32); "
            "src/graph/topo.cc:936",
            "max_peers_per_channel": f"{_MS_HEADER}:7 (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL 32)"
            "; src/graph/topo.cc:1076,1090",
            "min_count": _MS_COUNT,
            "max_count": _MS_COUNT,
            "max_depid": f"{_MS_HEADER}:65 (int8_t dependentBid)",
            "max_offset": f"{_MS_HEADER}:46-47,66 (int16_t srcoffset, dstoffset, dependentStep)",
            "max_xml_nodes": f"{_MS} src/graph/xml.h:19 (MAX_NODES)",
            "max_value_length": f"{_MS} src/graph/xml.h (MAX_STR_LEN, as RCCL's reader)",
            "max_files": f"{_MS_HEADER}:9 (MSCCL_MAX_NUM_ALGOS 4); src/graph/topo.cc:1202",
            "has_outofplace": f"{_MS_PARSER}:847-853, {_MS_TUNING}:312-369 (inPlace must equal "
            "the call's)",
            "max_bytes_inclusive": f"{_MS_TUNING}:369 (nBytes >= minBytes && nBytes < maxBytes)",
            "unlimited_max_bytes": f"{_MS_TUNING}:353,369 (nBytes < maxBytes: no value means "
            f"unlimited); {_MS_PARSER}:799-806 (missing maxBytes = 128 MB); "
            f"{_MS} src/init.cc:814 (scratch = maxBytes * s_chunks / nchunksperloop)",
            "chunks_match_loop": f"{_MS_PARSER}:886",
            "never_in_place": f"{_MS} src/collectives/all_to_all.cc:49-51 ('In-place alltoall is "
            "not possible currently': ncclInvalidUsage)",
            "environment": f"{_MS} src/init.cc:783-790 (MSCCL_XML_FILES, ':'-separated; "
            "MSCCL_CONFIG)",
        }
    ),
)

#: Runtime name -> its profile.
RUNTIMES: Mapping[str, RuntimeProfile] = MappingProxyType(
    {"rccl": _RCCL_PROFILE, "msccl": _MSCCL_PROFILE, "msccl-executor": _EXECUTOR_PROFILE}
)

#: The runtime files are written for and checked against unless another is named.
DEFAULT_RUNTIME = "rccl"
