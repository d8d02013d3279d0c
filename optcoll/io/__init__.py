"""Files in and out: one module per format, one registry, one front door.

=====================  ==========================================================
module                 reads / writes
=====================  ==========================================================
``document``           JSON and YAML documents (strict: duplicate keys refused)
``native``             optcoll topology files (JSON/YAML): reads and writes
``schedule_json``      optcoll schedule files (JSON/YAML): reads and writes
``msccl_tools``        msccl-tools serialised topology JSON: reads
``taccl``              TACCL topology profiles: reads
``graphml``            GraphML and networkx graphs (:func:`from_networkx`): reads
``edgelist``           edge lists: reads
``fields``             the field and number checks the foreign readers share
``registry``           :data:`REGISTRY` of topology formats, :func:`detect_format`,
                       :func:`import_topology`, :func:`load_topology`
=====================  ==========================================================

Schedules are written for other tools by :mod:`optcoll.export`.

Examples
--------
>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as folder:
...     path = pathlib.Path(folder) / "ring.yaml"
...     save_topology(load_topology("ring:4"), path)
...     load_topology(path) == load_topology("ring:4")
True
"""

from __future__ import annotations

from optcoll.io.astra_sim import from_astra_network, to_astra_network
from optcoll.io.document import read_document, write_document
from optcoll.io.edgelist import from_edgelist
from optcoll.io.graphml import from_graphml, from_networkx
from optcoll.io.msccl_tools import from_msccl
from optcoll.io.native import TOPOLOGY_SUFFIXES, save_topology
from optcoll.io.nccl_xml import from_nccl_xml
from optcoll.io.registry import (
    FORMATS,
    REGISTRY,
    detect_format,
    import_topology,
    load_topology,
    looks_like_path,
)
from optcoll.io.schedule_json import (
    is_schedule_document,
    is_schedule_file,
    load_schedule,
    save_schedule,
    schedule_text,
)
from optcoll.io.taccl import from_taccl

__all__ = [
    "load_topology",
    "save_topology",
    "import_topology",
    "detect_format",
    "FORMATS",
    "REGISTRY",
    "TOPOLOGY_SUFFIXES",
    "load_schedule",
    "save_schedule",
    "schedule_text",
    "is_schedule_document",
    "is_schedule_file",
    "read_document",
    "write_document",
    "looks_like_path",
    "from_msccl",
    "from_taccl",
    "from_graphml",
    "from_networkx",
    "from_edgelist",
    "from_nccl_xml",
    "from_astra_network",
    "to_astra_network",
]
