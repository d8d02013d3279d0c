"""The MSCCL writer's choices for each runtime; the runtimes' rules are in one table.

The facts (limits, spellings, how a file is selected, each with its source) live in
:mod:`optcoll.core.msccl_runtimes`, which the independent checker reads too. This module
holds what the writer decides from them: the profile of a runtime named by the user, the
``coll`` spelling it writes, and the ``maxBytes`` it writes for a band of message sizes.

Examples
--------
>>> rccl = runtime_profile("rccl")
>>> rccl.max_steps, rccl.max_threadblocks, coll_spelling(rccl, "reduce_scatter")
(64, 64, 'reducescatter')
>>> max_bytes_value(runtime_profile("msccl"), 1023)
1024
"""

from __future__ import annotations

from optcoll.core.arguments import text_argument
from optcoll.core.msccl_runtimes import DEFAULT_RUNTIME, RUNTIMES, SOURCE_COMMITS, RuntimeProfile
from optcoll.exceptions import ExportError

__all__ = [
    "RUNTIMES",
    "DEFAULT_RUNTIME",
    "SOURCE_COMMITS",
    "RuntimeProfile",
    "runtime_profile",
    "coll_spelling",
    "max_bytes_value",
]

_INT64_MAX = 2**63 - 1


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


def coll_spelling(profile: RuntimeProfile, collective: str) -> str:
    """The ``coll`` value to write for ``collective`` (an optcoll name) in a file for
    ``profile``: the first spelling the runtime's parser maps to it.

    Raises
    ------
    ExportError
        The runtime's parser has no spelling for ``collective``.

    Examples
    --------
    >>> coll_spelling(runtime_profile("msccl"), "reduce_scatter")
    'reduce_scatter'
    """
    for spelling, meaning in profile.collectives.items():
        if meaning == collective:
            return spelling
    raise ExportError(
        f"runtime {profile.name!r} has no 'coll' for {collective!r} "
        f"({profile.sources['collectives']})"
    )


def max_bytes_value(profile: RuntimeProfile, largest: int | None, *, scratch: bool = False) -> int:
    """The ``maxBytes`` to write for a band whose largest size is ``largest`` bytes
    (None: unbounded) in a file for ``profile`` that uses scratch chunks or not.

    Where the runtime has no "unlimited" value, an unbounded band without scratch
    gets the largest ``int64`` (nothing is allocated from it).

    Raises
    ------
    ExportError
        The band is unbounded, the runtime has no "unlimited" value and sizes
        its scratch buffer from ``maxBytes``.

    Examples
    --------
    >>> max_bytes_value(runtime_profile("rccl"), None), max_bytes_value(runtime_profile("rccl"), 1023)
    (0, 1023)
    >>> max_bytes_value(runtime_profile("msccl"), None)
    9223372036854775807
    """
    if largest is None:
        if profile.unlimited_max_bytes is not None:
            return profile.unlimited_max_bytes
        if scratch:
            raise ExportError(
                f"runtime {profile.name!r} has no unlimited maxBytes and allocates "
                "maxBytes * s_chunks / nchunksperloop bytes of scratch when it loads the "
                f"file ({profile.sources['unlimited_max_bytes']}); give the largest "
                "message with --max-bytes"
            )
        return _INT64_MAX
    return largest if profile.max_bytes_inclusive else largest + 1
