"""MSCCL steps before numbering, and the thread blocks they are grouped in.

The writers (:mod:`optcoll.export.msccl` for trees, :mod:`optcoll.export.msccl_steps` for
step schedules) first make every GPU's steps as :class:`_Step` objects, each with a key
that orders it in its thread block and the thread block (:data:`Block`) it goes to;
:mod:`optcoll.export.msccl_fusion` fuses some of them; the writers then number and render
them.

Examples
--------
>>> step = _Step("s", ("i", 0), ("o", 0), 1, (0,), 0, (0, 1), tb=("send", 1, 0))
>>> step.tb, step.fused is None
(('send', 1, 0), True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Location", "Block", "WIDEST_THREADBLOCKS"]

#: A buffer (``i``, ``o``, ``s``) and a chunk offset in it.
Location = tuple[str, int]
#: A thread block before numbering: (kind, peer rank, channel); kind ``send``, ``recv``,
#: ``pair`` (both with one peer), ``fused`` (receives from the peer, sends to its fused
#: steps' receiver) or ``local``.
Block = tuple[str, int, int]

#: Most thread blocks per GPU the default channel count fills (where the runtime allows
#: that many): a thread block occupies a streaming multiprocessor while the collective
#: runs, and 64 is half of an A100's 108 or an H100's 132, and RCCL's cap.
WIDEST_THREADBLOCKS = 64


@dataclass(eq=False)
class _Step:
    """One step before numbering; ``link`` is (sender, receiver) for transfers. On a send,
    ``forwards`` is the receive whose chunks it carries unchanged (if any); a fused receive's
    ``fused`` is the send it absorbed (:mod:`optcoll.export.msccl_fusion`); a local step's
    ``joins`` is the receive whose thread block runs it, right after that receive (the
    ``re`` that adds what a receive brought, where the runtime runs no ``rrc``)."""

    type: str
    src: Location
    dst: Location
    cnt: int
    key: tuple[int, ...]
    gpu: int
    link: tuple[int, int] | None
    dep: _Step | None = None
    tb: Block = ("local", -1, 0)
    index: int = -1
    tb_id: int = -1
    has_dependent: bool = field(default=False)
    forwards: _Step | None = None
    fused: _Step | None = None
    joins: _Step | None = None
