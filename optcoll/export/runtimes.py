"""What each MSCCL runtime accepts: one profile per runtime, as data.

Three runtimes load MSCCL algorithm XML, each with its own parser and limits:

* ``rccl``: ROCm/rccl (``src/misc/msccl/msccl_parser.cc``, limits in
  ``src/include/msccl/msccl_struct.h``, selection in ``src/misc/msccl/msccl_lifecycle.cc``);
* ``msccl``: microsoft/msccl, the NCCL 2.12 fork (parser in ``src/graph/topo.cc``, limits in
  ``src/include/msccl.h``, selection in ``src/graph/tuning.cc``);
* ``msccl-executor``: Azure/msccl-executor-nccl (RCCL's parser and selection, limits in
  ``src/include/msccl/msccl_struct.h`` and ``makefiles/common.mk``).

Every value of a profile names the file and line it comes from (:attr:`RuntimeProfile.sources`,
read at the commits in :data:`SOURCE_COMMITS`). The default runtime is ``rccl``: MSCCL ships
enabled inside every RCCL build (``RCCL_MSCCL_ENABLE`` defaults to 1), whereas microsoft/msccl
is a frozen NCCL 2.12 fork and msccl-executor an opt-in NCCL plugin; RCCL's limits are also the
tightest of the three, so a file written for it loads in the others once ``coll`` is spelt for
them.

Examples
--------
>>> rccl = runtime_profile("rccl")
>>> rccl.max_steps, rccl.max_threadblocks, rccl.collective_names["reduce_scatter"]
(64, 64, 'reducescatter')
>>> rccl.sources["max_steps"]
'ROCm/rccl src/include/msccl/msccl_struct.h:16 (MSCCL_MAX_NUM_STEPS 64)'
>>> runtime_profile("msccl").serves(100, 0, 100)
False
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optcoll.core.arguments import text_argument
from optcoll.exceptions import ExportError

__all__ = ["RUNTIMES", "DEFAULT_RUNTIME", "SOURCE_COMMITS", "RuntimeProfile", "runtime_profile"]

#: The commits whose sources the profiles cite.
SOURCE_COMMITS = {
    "ROCm/rccl": "0cbce2a7571c907554199fad7e905f16ec0a565c",
    "microsoft/msccl": "b23e9cd5dd63f82ee1c5aae7e0a2042079be903a",
    "Azure/msccl-executor-nccl": "c6f6b36d1a4c7ae44916fcc5c8e32c95cce2ae54",
}


@dataclass(frozen=True)
class RuntimeProfile:
    """The rules one MSCCL runtime applies to an algorithm file.

    Attributes
    ----------
    name : str
        ``rccl``, ``msccl`` or ``msccl-executor``.
    collective_names : dict
        optcoll collective -> the ``coll`` spelling the parser accepts.
    max_steps : int
        Steps per thread block (``s`` < max_steps).
    max_threadblocks : int
        Thread blocks per GPU (``tb id`` < max_threadblocks).
    max_channels : int
        Channel ids must be below this (``chan`` < max_channels).
    max_peers_per_channel : int
        Thread blocks with a send peer (and, separately, with a receive peer) on one channel.
    max_count : int
        Largest ``cnt`` of one step (the parsers refuse ``cnt >= 72``).
    max_depid : int
        Largest thread block id a ``depid`` may name (stored as ``int8_t``).
    max_offset : int
        Largest ``srcoff``/``dstoff`` (stored as ``int16_t``).
    max_files : int or None
        Algorithm files one communicator loads (None: no limit that matters here).
    max_bytes_inclusive : bool
        True: a file serves ``minBytes <= nBytes <= maxBytes``; False: ``nBytes < maxBytes``.
    unlimited_max_bytes : int or None
        The ``maxBytes`` value meaning "no upper limit" (None: there is none, and the
        runtime sizes its scratch buffer from ``maxBytes`` when it loads the file).
    placement_flags : bool
        True: ``inplace`` and ``outofplace`` are separate flags (one file may serve both);
        False: only ``inplace`` is read and must equal the call's placement.
    inplace_alltoall : bool
        False when the runtime refuses an in-place all-to-all call before it looks for
        an algorithm (no in-place all-to-all file is ever used).
    required_attributes : tuple of str
        ``<algo>`` attributes the parser reads without a default.
    environment : tuple of str
        Environment variables that make the runtime load a folder or list of files.
    sources : dict
        Field name -> "repository file:line (what it says)".
    """

    name: str
    collective_names: dict[str, str]
    max_steps: int
    max_threadblocks: int
    max_channels: int
    max_peers_per_channel: int
    max_count: int
    max_depid: int
    max_offset: int
    max_files: int | None
    max_bytes_inclusive: bool
    unlimited_max_bytes: int | None
    placement_flags: bool
    inplace_alltoall: bool
    required_attributes: tuple[str, ...]
    environment: tuple[str, ...]
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def serves(self, size: int, min_bytes: int, max_bytes: int) -> bool:
        """True when a file with ``minBytes``/``maxBytes`` is chosen for ``size`` bytes
        (the divisibility by ``nchunksperloop`` aside).

        Examples
        --------
        >>> runtime_profile("rccl").serves(1 << 40, 0, 0)
        True
        """
        if size < min_bytes:
            return False
        if self.unlimited_max_bytes is not None and max_bytes == self.unlimited_max_bytes:
            return True
        return size <= max_bytes if self.max_bytes_inclusive else size < max_bytes

    def max_bytes_value(self, largest: int | None, *, scratch: bool = False) -> int:
        """The ``maxBytes`` to write for a band whose largest size is ``largest`` bytes
        (None: unbounded) in a file that uses scratch chunks or not.

        Where the runtime has no "unlimited" value, an unbounded band without scratch
        gets the largest ``int64`` (nothing is allocated from it).

        Raises
        ------
        ExportError
            The band is unbounded, the runtime has no "unlimited" value and sizes
            its scratch buffer from ``maxBytes``.

        Examples
        --------
        >>> runtime_profile("rccl").max_bytes_value(None), runtime_profile("msccl").max_bytes_value(1023)
        (0, 1024)
        >>> runtime_profile("msccl").max_bytes_value(None)
        9223372036854775807
        """
        if largest is None:
            if self.unlimited_max_bytes is not None:
                return self.unlimited_max_bytes
            if scratch:
                raise ExportError(
                    f"runtime {self.name!r} has no unlimited maxBytes and allocates "
                    "maxBytes * s_chunks / nchunksperloop bytes of scratch when it loads the "
                    f"file ({self.sources['unlimited_max_bytes']}); give the largest "
                    "message with --max-bytes"
                )
            return _INT64_MAX
        return largest if self.max_bytes_inclusive else largest + 1


_INT64_MAX = 2**63 - 1
_RCCL_STRUCT = "ROCm/rccl src/include/msccl/msccl_struct.h"
_RCCL_PARSER = "ROCm/rccl src/misc/msccl/msccl_parser.cc"
_RCCL_LIFE = "ROCm/rccl src/misc/msccl/msccl_lifecycle.cc"
_MS_HEADER = "microsoft/msccl src/include/msccl.h"
_MS_PARSER = "microsoft/msccl src/graph/topo.cc"
_MS_TUNING = "microsoft/msccl src/graph/tuning.cc"
_EX_STRUCT = "Azure/msccl-executor-nccl src/include/msccl/msccl_struct.h"
_EX_PARSER = "Azure/msccl-executor-nccl src/misc/msccl/msccl_parser.cc"
_EX_LIFE = "Azure/msccl-executor-nccl src/misc/msccl/msccl_lifecycle.cc"

_RCCL_SPELLING = {
    "allgather": "allgather",
    "reduce_scatter": "reducescatter",
    "allreduce": "allreduce",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "alltoall",
}
_RCCL_REQUIRED = (
    "nchunksperloop",
    "nchannels",
    "ngpus",
    "proto",
    "coll",
    "minBytes",
    "maxBytes",
    "inplace",
    "outofplace",
)

RUNTIMES: dict[str, RuntimeProfile] = {
    "rccl": RuntimeProfile(
        name="rccl",
        collective_names=_RCCL_SPELLING,
        max_steps=64,
        max_threadblocks=64,
        max_channels=128,
        max_peers_per_channel=32,
        max_count=71,
        max_depid=127,
        max_offset=32767,
        max_files=1024,
        max_bytes_inclusive=True,
        unlimited_max_bytes=0,
        placement_flags=True,
        inplace_alltoall=True,
        required_attributes=_RCCL_REQUIRED,
        environment=("MSCCL_ALGO_DIR", "RCCL_MSCCL_ENABLE", "RCCL_MSCCL_FORCE_ENABLE"),
        sources={
            "collective_names": f"{_RCCL_PARSER}:335-373 (strcmp on coll: 'reducescatter', ...)",
            "max_steps": f"{_RCCL_STRUCT}:16 (MSCCL_MAX_NUM_STEPS 64)",
            "max_threadblocks": f"{_RCCL_STRUCT}:18 (MSCCL_MAX_NUM_THREAD_BLOCKS 64)",
            "max_channels": "ROCm/rccl src/include/device.h:65 (MAXCHANNELS 128)",
            "max_peers_per_channel": f"{_RCCL_STRUCT}:17 (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL 32)"
            f"; {_RCCL_PARSER}:589,602 (checked per thread block with a send/recv peer)",
            "max_count": f"{_RCCL_PARSER}:577 (count >= MSCCL_MAX_COUNT 72 refused)",
            "max_depid": f"{_RCCL_STRUCT}:58 (int8_t dependentBid)",
            "max_offset": f"{_RCCL_STRUCT}:44-45 (int16_t srcOffset, dstOffset)",
            "max_files": f"{_RCCL_STRUCT}:21 (MSCCL_MAX_NUM_ALGOS 1024)",
            "max_bytes_inclusive": f"{_RCCL_LIFE}:333-334 (nBytes >= minBytes && "
            "(maxBytes == 0 || nBytes <= maxBytes))",
            "unlimited_max_bytes": f"{_RCCL_LIFE}:334 (maxBytes == 0)",
            "placement_flags": f"{_RCCL_PARSER}:383-389, {_RCCL_LIFE}:338",
            "inplace_alltoall": f"{_RCCL_LIFE}:317-319 (alltoall in place: sendBuff == recvBuff)",
            "required_attributes": f"{_RCCL_PARSER}:314-389 (mscclXmlGetAttr* without default)",
            "environment": f"{_RCCL_LIFE}:29-30,112 (MSCCL_ALGO_DIR; RCCL_PARAM adds 'RCCL_')",
        },
    ),
    "msccl": RuntimeProfile(
        name="msccl",
        collective_names={**_RCCL_SPELLING, "reduce_scatter": "reduce_scatter"},
        max_steps=256,
        max_threadblocks=216,
        max_channels=32,
        max_peers_per_channel=32,
        max_count=71,
        max_depid=127,
        max_offset=32767,
        max_files=4,
        max_bytes_inclusive=False,
        unlimited_max_bytes=None,
        placement_flags=False,
        inplace_alltoall=False,
        required_attributes=("name", "ngpus", "nchunksperloop", "nchannels", "proto", "coll"),
        environment=("MSCCL_XML_FILES", "MSCCL_CONFIG"),
        sources={
            "collective_names": f"{_MS_PARSER}:826-845 (strcmp on coll: 'reduce_scatter', ...)",
            "max_steps": f"{_MS_HEADER}:6 (MSCCL_MAX_NUM_STEPS 256)",
            "max_threadblocks": f"{_MS_HEADER}:8 (MSCCL_MAX_NUM_THREAD_BLOCKS 108*2)",
            "max_channels": "microsoft/msccl src/include/devcomm.h:51 (MAXCHANNELS 32)",
            "max_peers_per_channel": f"{_MS_HEADER}:7 (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL 32)"
            f"; {_MS_PARSER}:1076,1090",
            "max_count": f"{_MS_PARSER}:1065 (count >= MSCCL_MAX_COUNT 72 refused)",
            "max_depid": f"{_MS_HEADER}:65 (int8_t dependentBid)",
            "max_offset": f"{_MS_HEADER}:46-47 (int16_t srcoffset, dstoffset)",
            "max_files": f"{_MS_HEADER}:9 (MSCCL_MAX_NUM_ALGOS 4); {_MS_PARSER}:1202",
            "max_bytes_inclusive": f"{_MS_TUNING}:369 (nBytes >= minBytes && nBytes < maxBytes)",
            "unlimited_max_bytes": f"{_MS_PARSER}:799-806 (missing maxBytes = 128 MB); "
            "microsoft/msccl src/init.cc:814 (scratch = maxBytes * s_chunks / nchunksperloop)",
            "placement_flags": f"{_MS_PARSER}:847-853, {_MS_TUNING}:356,368 (inPlace == call's)",
            "inplace_alltoall": "microsoft/msccl src/collectives/all_to_all.cc:49-51 ('In-place "
            "alltoall is not possible currently': ncclInvalidUsage)",
            "required_attributes": f"{_MS_PARSER}:770-788,823,848",
            "environment": "microsoft/msccl src/init.cc:783-790 (MSCCL_XML_FILES, ':'-separated;"
            " MSCCL_CONFIG)",
        },
    ),
    "msccl-executor": RuntimeProfile(
        name="msccl-executor",
        collective_names=_RCCL_SPELLING,
        max_steps=64,
        max_threadblocks=1024,
        max_channels=32,
        max_peers_per_channel=32,
        max_count=71,
        max_depid=127,
        max_offset=32767,
        max_files=1024,
        max_bytes_inclusive=True,
        unlimited_max_bytes=0,
        placement_flags=True,
        inplace_alltoall=True,
        required_attributes=_RCCL_REQUIRED,
        environment=("MSCCL_ALGO_DIR", "NCCL_MSCCL_ENABLE"),
        sources={
            "collective_names": f"{_EX_PARSER}:335-373 (as RCCL: 'reducescatter')",
            "max_steps": "Azure/msccl-executor-nccl makefiles/common.mk:19 "
            "(MSCCL_MAX_NUM_STEPS ?= 64)",
            "max_threadblocks": f"{_EX_STRUCT}:18 (32 * MAXCHANNELS)",
            "max_channels": "Azure/msccl-executor-nccl src/include/device.h:65 (MAXCHANNELS 32)",
            "max_peers_per_channel": f"{_EX_STRUCT}:17 (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL 32)",
            "max_count": f"{_EX_PARSER}:577 (count >= MSCCL_MAX_COUNT 72 refused)",
            "max_depid": f"{_EX_STRUCT}:58 (int8_t dependentBid)",
            "max_offset": f"{_EX_STRUCT}:44-45 (int16_t srcOffset, dstOffset)",
            "max_files": f"{_EX_STRUCT}:21 (MSCCL_MAX_NUM_ALGOS 1024)",
            "max_bytes_inclusive": f"{_EX_LIFE}:333-335 (as RCCL)",
            "unlimited_max_bytes": f"{_EX_LIFE}:335 (maxBytes == 0)",
            "placement_flags": f"{_EX_LIFE}:339",
            "inplace_alltoall": f"{_EX_LIFE}:319-320 (alltoall in place: sendBuff == recvBuff)",
            "required_attributes": f"{_EX_PARSER}:314-389",
            "environment": f"{_EX_LIFE}:27,79 (MSCCL_ALGO_DIR; NCCL_PARAM adds 'NCCL_')",
        },
    ),
}

DEFAULT_RUNTIME = "rccl"


def runtime_profile(name: str) -> RuntimeProfile:
    """The profile of runtime ``name``.

    Raises
    ------
    ExportError
        Unknown runtime (the valid names listed).

    Examples
    --------
    >>> runtime_profile("msccl-executor").max_threadblocks
    1024
    """
    text_argument(name, "name (a runtime)")
    try:
        return RUNTIMES[name]
    except KeyError:
        raise ExportError(f"unknown runtime {name!r}; valid: {', '.join(RUNTIMES)}") from None
