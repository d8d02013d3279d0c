"""Static checks of an MSCCL program: attributes, spellings and every limit of a runtime profile.

:func:`decode` turns the text of a :class:`~optcoll.verify.msccl.program.Program` into typed
thread blocks and steps, collecting a :class:`Finding` for every attribute that is missing,
misspelt or outside what the runtime's parser accepts (the profile says which, and cites
where). The program can only be executed when every attribute the execution needs was read.

Examples
--------
>>> from optcoll.verify.msccl.program import parse_program
>>> from optcoll.core.msccl_runtimes import RUNTIMES
>>> text = ('<algo name="x" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" '
...         'coll="reduce_scatter" inplace="0" outofplace="1" minBytes="0" maxBytes="0">'
...         '<gpu id="0" i_chunks="2" o_chunks="1" s_chunks="0"/>'
...         '<gpu id="1" i_chunks="2" o_chunks="1" s_chunks="0"/></algo>')
>>> decoded = decode(parse_program(text), RUNTIMES["rccl"])
>>> algo, findings = decoded.algo, decoded.findings
>>> algo.collective, algo.input_chunks, algo.output_chunks
('reduce_scatter', 2, 1)
>>> print(findings[0].message)
<algo>: coll='reduce_scatter' is not a collective rccl accepts; it spells it 'reducescatter' (ROCm/rccl src/misc/msccl/msccl_parser.cc:335-373 (strcmp on coll: 'reducescatter', ...))
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from optcoll.core.limits import MAX_PROGRAM_CELLS
from optcoll.core.msccl_runtimes import RUNTIMES, RuntimeProfile
from optcoll.core.schedule import a_collective
from optcoll.verify.msccl.program import Element, Program
from optcoll.verify.report import Finding

__all__ = ["Step", "ThreadBlock", "Algo", "Decoded", "decode", "COLLECTIVE_NAMES"]

#: Every spelling of ``coll`` any runtime accepts, mapped to the checker's collective name.
COLLECTIVE_NAMES = {
    spelling: name
    for profile in RUNTIMES.values()
    for spelling, name in profile.collectives.items()
}

#: What each step type does: (receives, sends, reads src, writes dst, reads dst).
STEP_SEMANTICS = {
    "s": (False, True, True, False, False),
    "r": (True, False, False, True, False),
    "rcs": (True, True, False, True, False),
    "rrs": (True, True, True, False, False),
    "rrc": (True, False, True, True, False),
    "rrcs": (True, True, True, True, False),
    "cpy": (False, False, True, True, False),
    "re": (False, False, True, True, True),
    "nop": (False, False, False, False, False),
}

_INTEGER = re.compile(r"-?[0-9]+\Z")


@dataclass
class Step:
    """One ``<step>``: ``pos`` is its position in the thread block (what the runtime counts)."""

    gpu: int
    tb: int
    pos: int
    type: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int
    hasdep: bool
    line: int

    def where(self) -> str:
        """``GPU g tb t step s (type, line n)``."""
        return f"GPU {self.gpu} tb {self.tb} step {self.pos} ({self.type}, line {self.line})"


@dataclass
class ThreadBlock:
    """One ``<tb>``: its peers (-1 for none), channel and steps."""

    gpu: int
    id: int
    send: int
    recv: int
    chan: int
    line: int
    steps: list[Step] = field(default_factory=list)


@dataclass
class Algo:
    """A decoded program: the collective, its sizes and every GPU's thread blocks by id.

    ``input_chunks``/``output_chunks`` are the buffer sizes (in chunks) the runtime gives
    each rank, from ``nchunksperloop`` and ``ngpus``; ``scratch`` holds each GPU's
    ``s_chunks``; ``declared`` each GPU's ``(i_chunks, o_chunks, s_chunks)``.
    """

    coll: str
    collective: str | None
    ngpus: int
    nchunksperloop: int
    nchannels: int
    inplace: bool
    outofplace: bool
    input_chunks: int
    output_chunks: int
    declared: dict[int, tuple[int, int, int]]
    gpus: dict[int, dict[int, ThreadBlock]]

    def steps(self) -> list[Step]:
        """Every step, GPU by GPU, thread block by thread block."""
        return [s for tbs in self.gpus.values() for tb in tbs.values() for s in tb.steps]


class _Reader:
    """Reads attributes, recording each problem once."""

    def __init__(self, profile: RuntimeProfile) -> None:
        self.profile = profile
        self.findings: list[Finding] = []
        self.complete = True

    def add(self, kind: str, message: str) -> None:
        self.findings.append(Finding(kind, message))

    def text(self, element: Element, tag: str, name: str, where: str) -> str | None:
        value = element.attrs.get(name)
        if value is None:
            if name in self.profile.required.get(tag, ()):
                self.add(
                    "limit",
                    f"{where}: required attribute {name!r} is missing "
                    f"({self.profile.name}: {self.profile.sources.get('required', '')})",
                )
            return None
        if len(value) > self.profile.max_value_length:
            self.add(
                "limit",
                f"{where}: attribute {name!r} is {len(value)} characters long, above the "
                f"{self.profile.max_value_length} of {self.profile.name}'s reader buffer",
            )
        return value

    def integer(
        self, element: Element, tag: str, name: str, where: str, default: int | None = None
    ) -> int | None:
        value = self.text(element, tag, name, where)
        if value is None:
            if default is None:
                self.complete = False
            return default
        if not _INTEGER.match(value):
            self.add("spelling", f"{where}: {name}={value!r} is not a decimal integer")
            self.complete = False
            return None
        return int(value)


@dataclass(frozen=True)
class Decoded:
    """What :func:`decode` gives: the typed program (``None`` when an attribute its
    execution needs is missing or unreadable) and the findings of the static checks."""

    algo: Algo | None
    findings: list[Finding]


def decode(program: Program, profile: RuntimeProfile) -> Decoded:
    """Typed program and the findings of the static checks; the program is ``None`` when
    an attribute its execution needs is missing or unreadable."""
    r = _Reader(profile)
    for problem in program.lexical:
        r.add("spelling", problem)
    attrs = Element(program.attrs, 1)
    coll = r.text(attrs, "algo", "coll", "<algo>")
    ngpus = r.integer(attrs, "algo", "ngpus", "<algo>")
    loop = r.integer(attrs, "algo", "nchunksperloop", "<algo>")
    nchannels = r.integer(attrs, "algo", "nchannels", "<algo>")
    inplace = r.integer(attrs, "algo", "inplace", "<algo>", default=0)
    outofplace = None
    if profile.has_outofplace:
        outofplace = r.integer(attrs, "algo", "outofplace", "<algo>", default=0)
    min_bytes = r.integer(attrs, "algo", "minBytes", "<algo>", default=0)
    max_bytes = r.integer(attrs, "algo", "maxBytes", "<algo>", default=-1)
    proto = r.text(attrs, "algo", "proto", "<algo>")
    r.text(attrs, "algo", "name", "<algo>")
    if proto is not None and proto not in profile.protocols:
        r.add("spelling", f"<algo>: proto={proto!r}; {profile.name} accepts "
              f"{', '.join(profile.protocols)}")  # fmt: skip
    collective = None
    if coll is not None:
        collective = COLLECTIVE_NAMES.get(coll)
        if coll not in profile.collectives:
            hint = [s for s, n in profile.collectives.items() if n == collective]
            r.add(
                "spelling",
                f"<algo>: coll={coll!r} is not a collective {profile.name} accepts"
                + (f"; it spells it {hint[0]!r}" if hint else "")
                + f" ({profile.sources.get('collectives', '')})",
            )
    _check_selection(r, profile, inplace, outofplace, min_bytes, max_bytes)
    if inplace and collective in profile.never_in_place:
        r.add(
            "limit",
            f"<algo>: inplace={inplace} but {profile.name} refuses every in-place "
            f"{collective} call before it looks for an algorithm, so "
            + ("the in-place flag serves nothing" if outofplace else "never uses this file")
            + f" ({profile.sources.get('never_in_place', '')})",
        )
    if nchannels is not None and not 0 < nchannels <= profile.max_channels:
        r.add(
            "limit",
            f"<algo>: nchannels={nchannels}; {profile.name} has channels "
            f"0..{profile.max_channels - 1}, so 1..{profile.max_channels} of them",
        )
    if ngpus is not None and ngpus > 1024:
        r.add("limit", f"<algo>: ngpus={ngpus} is above the 1024 children an element may have")
    gpus: dict[int, dict[int, ThreadBlock]] = {}
    declared: dict[int, tuple[int, int, int]] = {}
    for gpu_el in program.gpus:
        where = f"<gpu> at line {gpu_el.line}"
        gid = r.integer(gpu_el, "gpu", "id", where)
        sizes = [r.integer(gpu_el, "gpu", f"{b}_chunks", where, default=0) for b in "ios"]
        if gid is None:
            continue
        if gid in gpus:
            r.add("structure", f"{where}: GPU id {gid} appears twice")
            continue
        for b, size in zip("ios", sizes, strict=True):
            if size is not None and size < 0:
                r.add("limit", f"{where}: {b}_chunks={size}; a buffer has no negative size")
            elif size is not None and size > MAX_PROGRAM_CELLS:
                r.add(
                    "limit",
                    f"{where}: {b}_chunks={size}, more than the {MAX_PROGRAM_CELLS} buffer "
                    "chunks any program may declare (optcoll.core.limits)",
                )
        declared[gid] = (sizes[0] or 0, sizes[1] or 0, sizes[2] or 0)
        gpus[gid] = _decode_gpu(r, gid, gpu_el, profile, ngpus)
    if ngpus is not None and (len(gpus) != ngpus or sorted(gpus) != list(range(ngpus))):
        r.add(
            "structure",
            f"<algo>: ngpus={ngpus} but the <gpu> ids are {sorted(gpus)[:8]}"
            f"{' ...' if len(gpus) > 8 else ''}; each rank needs exactly one <gpu> with its id",
        )
        r.complete = False
    if ngpus is not None and loop is not None and ngpus * loop > MAX_PROGRAM_CELLS:
        r.add(
            "limit",
            f"<algo>: ngpus={ngpus} and nchunksperloop={loop} give {ngpus * loop} buffer "
            f"chunks; the checker executes programs of at most {MAX_PROGRAM_CELLS} "
            "(optcoll.core.limits), so this one is not run",
        )
        r.complete = False
    if not r.complete or coll is None or ngpus is None or loop is None or nchannels is None:
        return Decoded(None, r.findings)
    algo = _sizes(r, coll, collective, ngpus, loop, nchannels, inplace, outofplace, declared, gpus)
    if algo is not None:
        _check_threadblocks(r, algo, profile)
        _check_steps(r, algo, profile)
    return Decoded(algo, r.findings)


def _check_selection(
    r: _Reader,
    profile: RuntimeProfile,
    inplace: int | None,
    outofplace: int | None,
    min_bytes: int | None,
    max_bytes: int | None,
) -> None:
    """Attributes that make the runtime never select the file."""
    if profile.has_outofplace and inplace == 0 and outofplace == 0:
        r.add("limit", "<algo>: inplace=0 and outofplace=0: the runtime never selects this file")
    if max_bytes == 0 and profile.unlimited_max_bytes != 0:
        r.add(
            "limit",
            f"<algo>: maxBytes=0: {profile.name} selects only sizes below maxBytes, so never "
            f"this file ({profile.sources.get('unlimited_max_bytes', '')})",
        )
    if min_bytes is not None and min_bytes < 0 or max_bytes is not None and max_bytes < -1:
        r.add("limit", "<algo>: minBytes and maxBytes must not be negative")
    elif (
        min_bytes is not None
        and max_bytes is not None
        and max_bytes not in (-1, 0)
        and min_bytes > max_bytes
    ):
        r.add("limit", f"<algo>: minBytes={min_bytes} above maxBytes={max_bytes}: never selected")


def _decode_gpu(
    r: _Reader, gid: int, gpu_el, profile: RuntimeProfile, ngpus: int | None
) -> dict[int, ThreadBlock]:
    tbs: dict[int, ThreadBlock] = {}
    for tb_el in gpu_el.tbs:
        where = f"GPU {gid} <tb> at line {tb_el.line}"
        values = [r.integer(tb_el, "tb", name, where) for name in ("id", "send", "recv", "chan")]
        if None in values:
            continue
        tid, send, recv, chan = (v for v in values if v is not None)
        if tid in tbs:
            r.add("limit", f"{where}: thread block id {tid} appears twice on GPU {gid}")
            continue
        for role, peer in (("send", send), ("recv", recv)):
            if peer == gid or peer < -1 or (ngpus is not None and peer >= ngpus):
                r.add("limit", f"{where}: {role}={peer} is not another GPU (-1 or 0..ngpus-1)")
                r.complete = False
        tb = ThreadBlock(gid, tid, send, recv, chan, tb_el.line)
        for pos, step_el in enumerate(tb_el.steps):
            swhere = f"GPU {gid} tb {tid} step at line {step_el.line}"
            stype = r.text(step_el, "step", "type", swhere)
            bufs = [r.text(step_el, "step", name, swhere) for name in ("srcbuf", "dstbuf")]
            ints = [
                r.integer(step_el, "step", name, swhere, default=default)
                for name, default in (("s", pos), ("srcoff", -1), ("dstoff", -1), ("cnt", None),
                                      ("depid", -1), ("deps", -1), ("hasdep", 0))
            ]  # fmt: skip
            if stype is None or None in ints:
                r.complete = False
                continue
            s, srcoff, dstoff, cnt, depid, deps, hasdep = (v for v in ints if v is not None)
            if stype not in STEP_SEMANTICS:
                r.add("spelling", f"{swhere}: type={stype!r} is not a step type "
                      f"({', '.join(profile.step_types)})")  # fmt: skip
                r.complete = False
                continue
            if stype not in profile.step_types:
                r.add("spelling", f"{swhere}: {profile.name} has no step type {stype!r}")
            elif stype not in profile.launch_step_types:
                r.add(
                    "launch",
                    f"{swhere}: type={stype!r} is parsed, but {profile.name} refuses to launch "
                    f"a program that uses it; it runs {', '.join(profile.launch_step_types)} "
                    f"({profile.sources['launch_step_types']})",
                )
            receives, sends = STEP_SEMANTICS[stype][:2]
            for role, used, peer, attr in (
                ("sends", sends, send, "send"),
                ("receives", receives, recv, "recv"),
            ):
                if used and peer < 0:
                    r.add(
                        "structure",
                        f"{swhere}: type={stype!r} {role}, but its thread block has "
                        f"{attr}=-1 (no peer)",
                    )
                    r.complete = False
            for name, buf in zip(("srcbuf", "dstbuf"), bufs, strict=True):
                if buf is not None and buf not in ("i", "o", "s"):
                    r.add("spelling", f"{swhere}: {name}={buf!r}; buffers are i, o and s")
                    r.complete = False
            if s != pos:
                r.add(
                    "spelling",
                    f"{swhere}: s={s} but it is step {pos} of its thread block; the runtime "
                    f"numbers steps by position, so dependencies on it would mean another step",
                )
            if hasdep not in (0, 1):
                r.add("limit", f"{swhere}: hasdep={hasdep}; the runtime accepts 0 or 1")
            tb.steps.append(
                Step(
                    gid,
                    tid,
                    pos,
                    stype,
                    bufs[0] or "i",
                    srcoff,
                    bufs[1] or "o",
                    dstoff,
                    cnt,
                    depid,
                    deps,
                    hasdep == 1,
                    step_el.line,
                )  # fmt: skip
            )
        tbs[tid] = tb
    return tbs


def _sizes(
    r: _Reader,
    coll: str,
    collective: str | None,
    ngpus: int,
    loop: int,
    nchannels: int,
    inplace: int | None,
    outofplace: int | None,
    declared: dict[int, tuple[int, int, int]],
    gpus: dict[int, dict[int, ThreadBlock]],
) -> Algo | None:
    """The buffers the runtime hands each rank, in chunks (``nchunksperloop`` chunks make the
    buffer the runtime sizes by ``count * sizeMultiplier``)."""
    if loop <= 0 or ngpus <= 0:
        r.add("limit", f"<algo>: nchunksperloop={loop} and ngpus={ngpus} must be positive")
        return None
    per_rank = collective in ("allgather", "reduce_scatter", "alltoall")
    if per_rank and loop % ngpus:
        part = "piece for each rank" if collective == "alltoall" else "own part"
        r.add(
            "limit",
            f"<algo>: nchunksperloop={loop} is not a multiple of ngpus={ngpus}: {a_collective(str(collective))} "
            f"rank's {part} is not a whole number of chunks",
        )
        return None
    input_chunks = loop // ngpus if collective == "allgather" else loop
    output_chunks = loop // ngpus if collective == "reduce_scatter" else loop
    placement_out = bool(outofplace) if outofplace is not None else not inplace
    return Algo(coll, collective, ngpus, loop, nchannels, bool(inplace), placement_out,
                input_chunks, output_chunks, declared, gpus)  # fmt: skip


def _check_threadblocks(r: _Reader, algo: Algo, profile: RuntimeProfile) -> None:
    for gid, tbs in sorted(algo.gpus.items()):
        if sorted(tbs) != list(range(len(tbs))):
            r.add("limit", f"GPU {gid}: thread block ids {sorted(tbs)[:10]} are not 0..n-1 "
                  "(the runtime refuses a gap)")  # fmt: skip
        if len(tbs) > profile.max_threadblocks:
            r.add(
                "limit",
                f"GPU {gid}: {len(tbs)} thread blocks, above {profile.name}'s "
                f"{profile.max_threadblocks} ({profile.sources.get('max_threadblocks', '')})",
            )
        nodes = 1 + algo.ngpus + len(tbs) + sum(len(tb.steps) for tb in tbs.values())
        if nodes > profile.max_xml_nodes:
            r.add(
                "limit",
                f"GPU {gid}: its rank's parser keeps {nodes} XML elements (algo, gpus, its tbs "
                f"and steps), {profile.name} holds at most {profile.max_xml_nodes} "
                f"({profile.sources.get('max_xml_nodes', '')})",
            )
        send_tbs: dict[int, int] = defaultdict(int)
        recv_tbs: dict[int, int] = defaultdict(int)
        for tid in sorted(tbs):  # the parser visits them in file order; ids are that order here
            tb = tbs[tid]
            if not 0 <= tb.chan < profile.max_channels:
                r.add("limit", f"GPU {gid} tb {tid}: chan={tb.chan}, {profile.name} has channels "
                      f"0..{profile.max_channels - 1}")  # fmt: skip
            elif tb.chan >= algo.nchannels and (tb.send >= 0 or tb.recv >= 0):
                r.add(
                    "limit",
                    f"GPU {gid} tb {tid}: chan={tb.chan} but nchannels={algo.nchannels}: the "
                    f"runtime connects only channels below nchannels (msccl_setup.cc:97)",
                )
            sends = any(STEP_SEMANTICS[s.type][1] for s in tb.steps)
            recvs = any(STEP_SEMANTICS[s.type][0] for s in tb.steps)
            for count, used, direction in ((send_tbs, sends, "send"), (recv_tbs, recvs, "recv")):
                if used and count[tb.chan] >= profile.max_peers_per_channel:
                    r.add(
                        "limit",
                        f"GPU {gid} tb {tid}: more than {profile.max_peers_per_channel} thread "
                        f"blocks with a {direction} peer on channel {tb.chan} "
                        f"({profile.sources.get('max_peers_per_channel', '')})",
                    )
            if tb.send >= 0:
                send_tbs[tb.chan] += 1
            if tb.recv >= 0:
                recv_tbs[tb.chan] += 1


def _check_steps(r: _Reader, algo: Algo, profile: RuntimeProfile) -> None:
    for gid, tbs in sorted(algo.gpus.items()):
        i_decl, o_decl, s_decl = algo.declared[gid]
        sizes = {"i": algo.input_chunks, "o": algo.output_chunks, "s": s_decl}
        declared = {"i": i_decl, "o": o_decl, "s": s_decl}
        for name, buf in (("i_chunks", "i"), ("o_chunks", "o")):
            if declared[buf] > sizes[buf]:
                r.add(
                    "limit",
                    f"GPU {gid}: {name}={declared[buf]} but the runtime's buffer holds "
                    f"{sizes[buf]} chunks (nchunksperloop={algo.nchunksperloop}, ngpus="
                    f"{algo.ngpus}): steps may reach past its end",
                )
            if profile.chunks_match_loop and 0 < declared[buf] != sizes[buf]:
                r.add("limit", f"GPU {gid}: {name}={declared[buf]} must be {sizes[buf]} for "
                      f"{profile.name} ({profile.sources.get('chunks_match_loop', '')})")  # fmt: skip
        for tb in tbs.values():
            if len(tb.steps) > profile.max_steps:
                r.add(
                    "limit",
                    f"GPU {gid} tb {tb.id}: {len(tb.steps)} steps, above {profile.name}'s "
                    f"{profile.max_steps} ({profile.sources.get('max_steps', '')})",
                )
            pending_nop_deps = 0
            for step in tb.steps:
                receives, sends, reads, writes, _ = STEP_SEMANTICS[step.type]
                if step.type == "nop":
                    pending_nop_deps += step.depid >= 0
                else:
                    if pending_nop_deps and step.depid < 0:
                        r.add("limit", f"{step.where()}: follows nop steps with dependencies "
                              "but has none itself; the runtime refuses that")  # fmt: skip
                    pending_nop_deps = 0
                    if not profile.min_count <= step.cnt <= profile.max_count:
                        r.add(
                            "limit",
                            f"{step.where()}: cnt={step.cnt}, {profile.name} accepts "
                            f"{profile.min_count}..{profile.max_count} "
                            f"({profile.sources.get('max_count', '')})",
                        )
                if sends and tb.send < 0 or receives and tb.recv < 0:
                    r.add("limit", f"{step.where()}: its thread block has no "
                          f"{'send' if sends and tb.send < 0 else 'recv'} peer")  # fmt: skip
                if not -1 <= step.depid <= profile.max_depid:
                    r.add("limit", f"{step.where()}: depid={step.depid}, stored in an int8 "
                          f"(-1..{profile.max_depid})")  # fmt: skip
                elif step.depid >= 0:
                    target = tbs.get(step.depid)
                    if target is None or not 0 <= step.deps < len(target.steps):
                        r.add("structure", f"{step.where()}: waits for tb {step.depid} step "
                              f"{step.deps}, which GPU {gid} does not have")  # fmt: skip
                for role, buf, off, used in (("src", step.srcbuf, step.srcoff, reads),
                                             ("dst", step.dstbuf, step.dstoff, writes)):  # fmt: skip
                    if not -1 <= off <= profile.max_offset:
                        r.add("limit", f"{step.where()}: {role}off={off} outside the int16 range")
                    if not used:
                        continue
                    if off >= declared[buf]:
                        r.add("limit", f"{step.where()}: {role}off={off} is not below "
                              f"{buf}_chunks={declared[buf]} (the parser's bound check)")  # fmt: skip
                    if off < 0 or off + step.cnt > sizes[buf]:
                        r.add("bounds", f"{step.where()}: {role} {buf}[{off}:{off + step.cnt}] "
                              f"is outside the {sizes[buf]}-chunk buffer")  # fmt: skip
