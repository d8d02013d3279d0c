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
>>> build("torus:4x4,bw=100/50").num_compute
16
>>> FAMILIES["ndv2"].name
'dgx-v100'
"""

# The family modules register themselves on import.
from optcoll.topologies import amd, cluster, dgx, fabrics, generic  # noqa: F401
from optcoll.topologies.registry import (
    FAMILIES,
    MAX_LINKS,
    MAX_NODES,
    Family,
    build,
    check_size,
    families,
    is_spec,
    parse_params,
    register,
)

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
