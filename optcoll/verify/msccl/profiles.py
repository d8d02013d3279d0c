"""The runtime the checker judges a program for.

The runtimes' rules (limits, spellings, how a file is selected, each with its source) are
one table, :mod:`optcoll.core.msccl_runtimes`, that the MSCCL writer reads too. The checker
shares that data and no code with the writer: it reads the table with its own parser and
checks (:mod:`~optcoll.verify.msccl.limits`), so it judges another tool's file as it judges
ours.

Examples
--------
>>> runtime_profile("rccl").max_steps, runtime_profile("msccl").max_steps
(64, 256)
"""

from __future__ import annotations

from optcoll.core.msccl_runtimes import RUNTIMES, RuntimeProfile
from optcoll.exceptions import OptCollError

__all__ = ["runtime_profile"]


def runtime_profile(name: str) -> RuntimeProfile:
    """The profile called ``name``; :class:`~optcoll.exceptions.OptCollError` if unknown.

    Examples
    --------
    >>> runtime_profile("msccl").max_threadblocks
    216
    """

    if name not in RUNTIMES:
        raise OptCollError(f"unknown runtime {name!r}; valid: {', '.join(sorted(RUNTIMES))}")
    return RUNTIMES[name]
