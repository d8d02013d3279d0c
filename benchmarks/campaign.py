"""An outside hostile-input campaign against the real ``optcoll`` command line (issue 28).

Run: ``python benchmarks/campaign.py [--only CLASS ...] [--table results.md]``.

It generates several hundred inputs, in every class of issue 28, from files the tool
itself wrote (a topology, an allgather/broadcast/alltoall/allreduce schedule, a
groups schedule, MSCCL XML, an MSCCL++ plan, Chakra traces), runs each as a new user,
an attacker or a careless script would (a subprocess with a time limit and a 4 GB
address-space limit) and classifies the outcome:

``traceback``
    stderr holds a Python traceback, or the exit status is not 0, 1 or 2;
``hang``
    the command did not end within the time limit;
``memory``
    a ``MemoryError`` (the address-space limit was reached);
``wrong-success``
    exit 0 for a lying or invalid input, or a flag that does not apply accepted;
``input-lost``
    a file the command started from changed or disappeared, or a refused or
    interrupted command left a file behind;
``unclear-error``
    a refusal that is not one line on stderr with exit 2;
``orphan``
    a worker process outlived the command after a signal.

The public Python API is called in the same way (each function and method of
``optcoll.__all__`` with wrong-typed arguments): anything but an ``OptCollError`` is a
``traceback`` finding. Every finding is printed as a one-line repro.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Callable
from copy import deepcopy
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

#: Seconds a command may run before it counts as a hang.
TIMEOUT = 20
#: Address-space limit of every command (bytes).
MEMORY = 4 * 2**30
CLASSES = (
    "traceback",
    "hang",
    "memory",
    "wrong-success",
    "input-lost",
    "unclear-error",
    "orphan",
)
REPO = Path(os.environ.get("OPTCOLL_CAMPAIGN_REPO", Path(__file__).resolve().parent.parent))


@dataclass
class Case:
    """One hostile input: files to start from, a command line and what must happen.

    ``expect`` is ``"refuse"`` (exit 1 or 2), ``"error"`` (one line, exit 2) or
    ``"any"`` (no traceback, hang or lost input). ``check`` may inspect the folder
    after the run and return a finding (class, text) or None.
    """

    group: str
    name: str
    argv: list[str]
    files: dict[str, bytes | str] = field(default_factory=dict)
    expect: str = "any"
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path, subprocess.CompletedProcess[str]], tuple[str, str] | None] | None = None
    outputs: tuple[str, ...] = ()


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    os.nice(5)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env.pop("PYTHONWARNINGS", None)
    return env


def optcoll(
    argv: list[str], cwd: Path, timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """Run ``optcoll argv`` in ``cwd`` in its own session; a hang raises TimeoutExpired."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "optcoll", *argv],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        preexec_fn=_limits,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _snapshot(folder: Path) -> dict[str, str]:
    seen = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            target = os.readlink(path)
            regular = path.exists() and path.is_file()
            seen[rel] = "link:" + target + ":" + (_digest(path) if regular else "not-a-file")
        elif path.is_file():
            seen[rel] = _digest(path)
        elif path.is_dir():
            seen[rel] = "dir"
        else:
            seen[rel] = "special"
    return seen


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as error:
        return f"unreadable:{error.errno}"


def repro(case: Case) -> str:
    files = ", ".join(sorted(case.files))
    line = "optcoll " + " ".join(_quote(a) for a in case.argv)
    return f"{line}" + (f"   [files: {files}]" if files else "")


def _quote(arg: str) -> str:
    if arg and all(c.isalnum() or c in "-_./:=,%+" for c in arg):
        return arg
    return json.dumps(arg)


def run_case(case: Case, base: Path, work: Path) -> list[tuple[str, str]]:
    """Findings (class, text) of one case."""
    folder = Path(tempfile.mkdtemp(dir=work))
    for name in BASE_FILES:
        shutil.copy(base / name, folder / name)
    for name, content in case.files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8", errors="surrogatepass")
    if case.setup:
        case.setup(folder)
    before = _snapshot(folder)
    findings = []
    try:
        result = optcoll(case.argv, folder)
    except subprocess.TimeoutExpired:
        shutil.rmtree(folder, ignore_errors=True)
        return [("hang", f"more than {TIMEOUT} s")]
    err = result.stderr
    if "MemoryError" in err:
        findings.append(("memory", _last(err)))
    elif "Traceback" in err or result.returncode not in (0, 1, 2):
        findings.append(("traceback", f"exit {result.returncode}: {_last(err)}"))
    elif case.expect in ("refuse", "error") and result.returncode == 0:
        findings.append(("wrong-success", _first(result.stdout)))
    elif case.expect == "error" and result.returncode == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        if len(lines) != 1 and not err.startswith("usage:"):
            findings.append(("unclear-error", f"{len(lines)} lines: {_first(err)}"))
    after = _snapshot(folder)
    for name, digest in before.items():
        if after.get(name) != digest and name not in case.outputs:
            findings.append(("input-lost", f"{name} changed ({digest} -> {after.get(name)})"))
    if result.returncode != 0:
        new = sorted(set(after) - set(before))
        if new:
            findings.append(("input-lost", f"exit {result.returncode} but wrote {new}"))
    if case.check and not findings:
        extra = case.check(folder, result)
        if extra:
            findings.append(extra)
    shutil.rmtree(folder, ignore_errors=True)
    return findings


def _last(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(no stderr)"


def _first(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0][:200] if lines else "(no output)"


# --------------------------------------------------------------------------- base files

BASE_FILES = (
    "ring4.json",
    "sched.json",
    "bcast.json",
    "a2a.json",
    "allreduce.json",
    "g.json",
    "gs.json",
    "ring4.xml",
    "plan.json",
    "et.0.et",
    "et.1.et",
    "et.2.et",
    "et.3.et",
)


def make_base(base: Path) -> None:
    """The genuine files every mutation starts from, written by optcoll itself."""
    steps = [
        ["convert", "ring:4", "ring4.json"],
        ["trees", "ring4.json", "-o", "sched.json"],
        [
            "export",
            "ring4.json",
            "--format",
            "json",
            "--collective",
            "broadcast",
            "--root",
            "n0",
            "-o",
            "bcast.json",
        ],
        ["export", "ring4.json", "--format", "json", "--collective", "alltoall", "-o", "a2a.json"],
        [
            "export",
            "ring4.json",
            "--format",
            "json",
            "--collective",
            "allreduce",
            "-o",
            "allreduce.json",
        ],
        ["trees", "ring4.json", "--groups", "g.json", "-o", "gs.json"],
        ["export", "ring4.json", "--format", "msccl", "-o", "ring4.xml"],
        ["export", "ring4.json", "--format", "mscclpp", "-o", "plan.json"],
        ["export", "ring4.json", "--format", "chakra", "--size", "1M", "-o", "et"],
    ]
    (base / "g.json").write_text('{"groups": [["n0", "n1"], ["n2", "n3"]]}\n')
    for argv in steps:
        result = optcoll(argv, base, timeout=120)
        if result.returncode != 0:
            raise SystemExit(f"base file failed: optcoll {' '.join(argv)}: {result.stderr}")


# --------------------------------------------------------------------------- lying files


def _leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    if isinstance(value, dict):
        out = [(path, value)]
        for key, item in value.items():
            out += _leaves(item, (*path, key))
        return out
    if isinstance(value, list):
        out = [(path, value)]
        for index, item in enumerate(value):
            out += _leaves(item, (*path, index))
        return out
    return [(path, value)]


def _set(doc: Any, path: tuple, value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    if not path:
        return value
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


_DELETE = object()


def _mutations(value: Any, nodes: list[str]) -> list[tuple[str, Any]]:
    """Lies about one field: each changes what it claims."""
    if isinstance(value, bool):
        return [("not", not value)]
    if isinstance(value, int):
        return [("+1", value + 1), ("-1", value - 1), ("x2", value * 2 + 1)]
    if isinstance(value, float):
        return [("x2", value * 2 + 1), ("-", -value - 1)]
    if isinstance(value, str):
        if "/" in value or value.isdigit():
            from fractions import Fraction

            f = Fraction(value)
            return [
                ("1/100", "1/100" if f != Fraction(1, 100) else "1/99"),
                ("x2", str(f * 2)),
                ("+1/7", str(f + Fraction(1, 7))),
            ]
        if value in nodes:
            other = [n for n in nodes if n != value]
            return [("other-node", other[0])]
        return [("renamed", value + "x")]
    if isinstance(value, list):
        out = []
        if len(value) > 1:
            out.append(
                ("reversed", value[::-1]) if value[::-1] != value else ("dropped", value[1:])
            )
            out.append(("dropped-last", value[:-1]))
        if value:
            out.append(("duplicated", value + value[:1]))
        return out
    if isinstance(value, dict):
        return []
    return []


def _judge_export_json(
    folder: Path, result: subprocess.CompletedProcess[str]
) -> tuple[str, str] | None:
    """After an export of a lying schedule succeeded, the new file must verify."""
    if result.returncode != 0:
        return None
    check = optcoll(["verify", "ring4.json", "out.json"], folder)
    if check.returncode != 0:
        return ("wrong-success", "export wrote a file verify rejects: " + _first(check.stdout))
    return None


def lying_schedules(base: Path, rng: random.Random) -> list[Case]:
    """Every top-level field and stat of each schedule falsified, and a sample of
    the lies about its trees, edges and paths (deeper than two levels)."""
    cases = []
    deep: list[Case] = []
    nodes = ["n0", "n1", "n2", "n3"]
    neutral = {"topology", "format", "version", "algbw-round"}
    for source in ("sched.json", "bcast.json", "a2a.json", "allreduce.json", "gs.json"):
        doc = json.loads((base / source).read_text())
        for path, value in _leaves(doc):
            if path and path[0] in neutral:
                continue
            order_only = path and path[-1] in ("trees", "edges", "routes", "groups")
            label = "/".join(str(p) for p in path)
            for how, new in _mutations(value, nodes):
                if order_only and how == "reversed":
                    continue  # the order of trees, edges and routes states nothing
                lie = _set(doc, path, new)
                if lie == doc:
                    continue
                text = json.dumps(lie, indent=1)
                # Paths on a ring: reversing a 2-node path or swapping a leaf is a new lie
                argv = ["verify", "ring4.json", "lie.json"]
                if source == "gs.json":
                    argv += ["--groups", "g.json"]
                (cases if len(path) <= 2 else deep).append(
                    Case(
                        f"lying-{source}",
                        f"{label} {how}",
                        argv,
                        {"lie.json": text},
                        expect="refuse",
                    )
                )
            if (
                path
                and path[-1] in ("cut_ratio", "time_factor", "compute_nodes", "k")
                and source != "gs.json"
            ):
                for how, new in _mutations(value, nodes)[:1]:
                    lie = json.dumps(_set(doc, path, new))
                    cases.append(
                        Case(
                            f"lying-export-{source}",
                            f"{label} {how}",
                            [
                                "export",
                                "lie.json",
                                "--topology",
                                "ring4.json",
                                "--format",
                                "json",
                                "-o",
                                "out.json",
                            ],
                            {"lie.json": lie},
                            expect="any",
                            check=_judge_export_json,
                        )
                    )
                    cases.append(
                        Case(
                            f"lying-simulate-{source}",
                            f"{label} {how}",
                            ["simulate", "ring4.json", "lie.json"],
                            {"lie.json": lie},
                            expect="refuse",
                        )
                    )
        # deleting keys of the top-level document and adding an unknown one
        for key in doc:
            if key in (
                "format",
                "version",
                "algbw",
                "stats",
                "topology",
                "topology_hash",
                "cut_ratio",
                "time_factor",
                "rotation",
            ):
                continue
            lie = json.dumps(_set(doc, (key,), _DELETE))
            argv = ["verify", "ring4.json", "lie.json"] + (
                ["--groups", "g.json"] if source == "gs.json" else []
            )
            cases.append(
                Case(f"lying-{source}", f"delete {key}", argv, {"lie.json": lie}, expect="refuse")
            )
        cases += rng.sample(deep, min(30, len(deep)))
        deep = []
    return cases


def lying_xml(base: Path) -> list[Case]:
    text = (base / "ring4.xml").read_text()
    root = ElementTree.fromstring(text)
    elements = [root, root[0], root[0][1], root[0][1][0], root[0][5][1], root[1][7][0]]
    cases = []
    for index, element in enumerate(elements):
        for attr, value in list(element.attrib.items()):
            if (
                attr in ("name", "minBytes", "maxBytes", "proto", "deps", "chan", "id", "s")
                and element is not root
            ):
                pass
            variants = []
            if value.lstrip("-").isdigit():
                number = int(value)
                variants = [str(number + 1), str(number - 1), "1000000000", "x"]
            else:
                variants = {
                    "coll": [
                        "scatter",
                        "gather",
                        "reduce_scatter",
                        "allreduce",
                        "alltoall",
                        "broadcast",
                    ],
                    "type": ["r", "s", "rcs", "cpy", "nop", "re"],
                    "srcbuf": ["o", "s", "i"],
                    "dstbuf": ["i", "s", "o"],
                }.get(attr, [value + "x"])
            for new in variants:
                if new == value:
                    continue
                element.set(attr, new)
                lie = ElementTree.tostring(root, encoding="unicode")
                element.set(attr, value)
                cases.append(
                    Case(
                        "lying-xml",
                        f"<{element.tag}#{index}> {attr}={new}",
                        ["check-xml", "lie.xml"],
                        {"lie.xml": lie},
                        expect="any" if _xml_neutral(element, attr, value, new) else "refuse",
                    )
                )
        if element is not root and index >= 3:
            parent = {c: p for p in root.iter() for c in p}[element]
            position = list(parent).index(element)
            parent.remove(element)
            lie = ElementTree.tostring(root, encoding="unicode")
            parent.insert(position, element)
            cases.append(
                Case(
                    "lying-xml",
                    f"drop <{element.tag}#{index}>",
                    ["check-xml", "lie.xml"],
                    {"lie.xml": lie},
                    expect="refuse",
                )
            )
    return cases


def _xml_neutral(element: ElementTree.Element, attr: str, old: str, new: str) -> bool:
    """True for a change that leaves what the runtime computes the same (it may still
    be refused): the program's name and size band, a larger scratch or channel count,
    the fields of a step its type does not use, and an extra ``hasdep`` flag."""
    number = int(new) if new.lstrip("-").isdigit() else None
    if element.tag == "algo":
        if attr == "name":
            return True
        if attr in ("minBytes", "maxBytes", "outofplace") and number is not None and number > 0:
            return True
        if attr == "maxBytes" and number == -1:  # the runtime's "no limit"
            return True
        return attr == "nchannels" and number is not None and int(old) < number <= 32
    if element.tag == "gpu":
        return attr == "s_chunks" and number is not None and number > int(old)
    if element.tag == "step":
        kind = element.get("type")
        if attr in ("srcbuf", "srcoff") and kind == "r":
            return True
        if attr in ("dstbuf", "dstoff") and kind == "s":
            return True
        if attr == "deps" and element.get("depid") == "-1":
            return True
        return attr == "hasdep" and new == "1"
    return False


def _plan_neutral(doc: Any, path: tuple) -> bool:
    """True for a change the MSCCL++ executor does not see: it runs Simple for any
    protocol but LL, an out-of-place allgather computes the same in place, a copy takes
    its size from src_buff and a put from dst_buff (optcoll/verify/mscclpp/execute.py)."""
    if path[-1] in ("protocol", "inplace"):
        return True
    if path[-1] != "size" or len(path) < 4:
        return False
    op = doc
    for key in path[:-3]:
        op = op[key]
    side = path[-3]
    return (
        op.get("name") == "copy"
        and side == "dst_buff"
        or (op.get("name") in ("put", "pws", "pwsf", "rput") and side == "src_buff")
    )


def lying_plans(base: Path, rng: random.Random) -> list[Case]:
    doc = json.loads((base / "plan.json").read_text())
    leaves = [(p, v) for p, v in _leaves(doc) if not isinstance(v, (dict, list))]
    skip = {
        "name",
        "min_message_size",
        "max_message_size",
        "num_threads_per_block",
        "reuse_resources",
        "use_double_scratch_buffer",
        "buffer_alignment",
    }
    leaves = [(p, v) for p, v in leaves if not (p and p[-1] in skip)]
    chosen = leaves[:20] + rng.sample(leaves[20:], min(70, len(leaves) - 20))
    cases = []
    for path, value in chosen:
        label = "/".join(str(p) for p in path)
        if isinstance(value, bool):
            options = [not value]
        elif isinstance(value, int):
            options = [value + 1, value - 1 if value > 0 else 7]
        elif isinstance(value, str):
            options = {"i": ["o", "s"], "o": ["i", "s"], "s": ["o"]}.get(value, [value + "x"])
        else:
            options = [None]
        for new in options:
            lie = json.dumps(_set(doc, path, new))
            cases.append(
                Case(
                    "lying-plan",
                    f"{label}={new!r}",
                    ["check-plan", "lie.json"],
                    {"lie.json": lie},
                    expect="any" if _plan_neutral(doc, path) else "refuse",
                )
            )
    # a whole op removed
    return cases


# protobuf wire format (Chakra ET): varint-delimited messages


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(data: bytes) -> list[list]:
    """[field, wiretype, value] of one message; length-delimited values that parse as
    messages (and are not printable text) are parsed recursively (value a list)."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field 0")
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            value = data[pos : pos + size]
            if len(value) != size:
                raise ValueError("overrun")
            pos += size
            if not (value.isascii() and value.decode().isprintable()):
                try:
                    value = _fields(value)
                except (IndexError, ValueError):
                    pass
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, pos = data[pos : pos + width], pos + width
        else:
            raise ValueError("wire type")
        out.append([number, wire, value])
    if pos != len(data):
        raise ValueError("overrun")
    return out


def _encode(fields: list[list]) -> bytes:
    out = bytearray()
    for number, wire, value in fields:
        out += _varint(number << 3 | wire)
        if wire == 0:
            out += _varint(value)
        elif wire == 2:
            raw = _encode(value) if isinstance(value, list) else value
            out += _varint(len(raw)) + raw
        else:
            out += value
    return bytes(out)


def _messages(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        size, pos = _read_varint(data, pos)
        out.append(data[pos : pos + size])
        pos += size
    return out


def _unpack(raw: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(raw):
        value, pos = _read_varint(raw, pos)
        out.append(value)
    return out


def _varint_paths(fields: list[list], prefix: tuple = ()) -> list[tuple]:
    out = []
    for index, (_number, wire, value) in enumerate(fields):
        if wire == 0:
            out.append((*prefix, index))
        elif isinstance(value, list):
            out += _varint_paths(value, (*prefix, index))
    return out


def lying_traces(base: Path, rng: random.Random) -> list[Case]:
    cases = []
    for rank in (0, 2):
        data = (base / f"et.{rank}.et").read_bytes()
        messages = [_fields(m) for m in _messages(data)]
        spots = [(m, p) for m, fields in enumerate(messages) for p in _varint_paths(fields)]
        chosen = rng.sample(spots, min(45, len(spots)))
        for message, path in chosen:
            copy = deepcopy(messages)
            target = copy[message]
            for index in path[:-1]:
                target = target[index][2]
            old = target[path[-1]][2]
            target[path[-1]][2] = old + 1 if old < 2**40 else old - 1
            raw = b"".join(_varint(len(m)) + m for m in (_encode(f) for f in copy))
            cases.append(
                Case(
                    "lying-et",
                    f"et.{rank} message {message} field {path} {old}+1",
                    ["check-et", "et"],
                    {f"et.{rank}.et": raw},
                    expect="refuse",
                )
            )
        for message, fields in enumerate(messages):
            for index, (number, _wire, value) in enumerate(fields):
                if message == 0 or number not in (4, 5):  # ctrl_deps, data_deps (packed)
                    continue
                for how in ("dropped", "shifted"):
                    copy = deepcopy(messages)
                    if how == "dropped":
                        del copy[message][index]
                    else:
                        deps = _unpack(_encode(value) if isinstance(value, list) else value)
                        copy[message][index][2] = b"".join(_varint(d + 1) for d in deps)
                    raw = b"".join(_varint(len(m)) + m for m in (_encode(f) for f in copy))
                    cases.append(
                        Case(
                            "lying-et",
                            f"et.{rank} message {message} deps {how}",
                            ["check-et", "et"],
                            {f"et.{rank}.et": raw},
                            expect="refuse",
                        )
                    )
    return cases


# --------------------------------------------------------------------------- inputs lost


def _hardlink(src: str, dst: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        (folder / dst).unlink(missing_ok=True)
        os.link(folder / src, folder / dst)

    return setup


def _symlink(src: str, dst: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        (folder / dst).unlink(missing_ok=True)
        os.symlink(src, folder / dst)

    return setup


def inputs_lost() -> list[Case]:
    # (argv with OUT placeholder, the input OUT is aimed at)
    commands = [
        (["convert", "ring4.json", "{OUT}"], "ring4.json"),
        (["convert", "ring4.json", "{OUT}", "--format", "astra-sim"], "ring4.json"),
        (["trees", "ring4.json", "-o", "{OUT}"], "ring4.json"),
        (["trees", "ring4.json", "--groups", "g.json", "-o", "{OUT}"], "g.json"),
        (["export", "ring4.json", "-o", "{OUT}"], "ring4.json"),
        (
            ["export", "sched.json", "--topology", "ring4.json", "--format", "json", "-o", "{OUT}"],
            "sched.json",
        ),
        (
            ["export", "sched.json", "--topology", "ring4.json", "--format", "json", "-o", "{OUT}"],
            "ring4.json",
        ),
        (["export", "ring4.json", "--groups", "g.json", "-o", "{OUT}"], "g.json"),
        (
            [
                "export",
                "sched.json",
                "--topology",
                "ring4.json",
                "--format",
                "mscclpp",
                "-o",
                "{OUT}",
            ],
            "sched.json",
        ),
        (["simulate", "ring4.json", "sched.json", "--sizes", "1M"], None),
        (["plot", "ring4.json", "-o", "{OUT}"], "ring4.json"),
        (["plot", "ring4.json", "--schedule", "sched.json", "-o", "{OUT}"], "sched.json"),
        (["compare", "ring4.json", "--plot", "{OUT}"], "ring4.json"),
        (["plan", "ring4.json", "--plot", "{OUT}"], "ring4.json"),
        (["plan", "ring4.json", "--export", "{OUT}"], "ring4.json"),
        (["resilience", "ring4.json", "--plot", "{OUT}"], "ring4.json"),
        (["solve", "ring4.json", "-o", "{OUT}"], "ring4.json"),
        (["sweep", "spec.json", "-o", "{OUT}"], "spec.json"),
        (["sweep", "spec.json", "--plot", "{OUT}"], "spec.json"),
        (["lp", "export", "ring4.json", "-o", "{OUT}"], "ring4.json"),
    ]
    spec = json.dumps({"base": "ring:{n}", "grid": {"n": [3, 4]}, "quantities": ["cut_ratio"]})
    cases = []
    for argv, target in commands:
        if target is None:
            continue
        for force in ([], ["--force"]):
            for how in ("same", "dot", "abs-ish", "hardlink", "symlink"):
                files = {"spec.json": spec}
                setup = None
                if how == "same":
                    out = target
                elif how == "dot":
                    out = "./" + target
                elif how == "abs-ish":
                    out = "sub/../" + target
                    files["sub/keep"] = ""
                elif how == "hardlink":
                    out = "hl." + target
                    setup = _hardlink(target, out)
                else:
                    out = "sl." + target
                    setup = _symlink(target, out)
                full = [a.replace("{OUT}", out) for a in argv]
                if argv[0] in ("plan",) and "--export" in argv:
                    pass
                if force and argv[0] not in ("check-xml",):
                    full = full + force
                cases.append(
                    Case(
                        "inputs-lost",
                        f"{argv[0]} {how}{' --force' if force else ''}",
                        full,
                        files,
                        expect="error",
                        setup=setup,
                    )
                )
    # sweep --resume with an edited spec, and journal through a symlink
    cases += sweep_resume_cases()
    return cases


def _run_sweep_first(spec: dict, edited: dict) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        (folder / "spec.json").write_text(json.dumps(spec))
        result = optcoll(["sweep", "spec.json", "-o", "out.csv"], folder, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(result.stderr)
        (folder / "spec.json").write_text(json.dumps(edited))

    return setup


def sweep_resume_cases() -> list[Case]:
    spec = {"base": "ring:{n}", "grid": {"n": [3, 4, 5]}, "quantities": ["cut_ratio", "k"]}
    edits = {
        "grid-shrunk": {**spec, "grid": {"n": [3, 4]}},
        "grid-changed": {**spec, "grid": {"n": [3, 6]}},
        "quantity-dropped": {**spec, "quantities": ["cut_ratio"]},
        "quantity-added": {**spec, "quantities": ["cut_ratio", "k", "algbw"]},
        "base-changed": {**spec, "base": "fully-connected:{n}"},
        "grid-renamed": {
            "base": "ring:{m}",
            "grid": {"m": [3, 4, 5]},
            "quantities": spec["quantities"],
        },
        "grid-grown": {**spec, "grid": {"n": [3, 4, 5, 6]}},
    }
    cases = []

    def rows_kept(folder: Path, result: subprocess.CompletedProcess[str]) -> tuple[str, str] | None:
        text = (folder / "out.csv").read_text() if (folder / "out.csv").exists() else ""
        for n in ("3", "4", "5"):
            if f"ring:{n}" not in text:
                return ("input-lost", f"finished row ring:{n} dropped (exit {result.returncode})")
        return None

    for name, edited in edits.items():
        cases.append(
            Case(
                "sweep-resume",
                name,
                ["sweep", "spec.json", "-o", "out.csv", "--resume"],
                {},
                expect="any",
                setup=_run_sweep_first(spec, edited),
                check=rows_kept,
                outputs=("out.csv", "out.csv.meta.json"),
            )
        )

    def journal_link(folder: Path) -> None:
        (folder / "spec.json").write_text(json.dumps(spec))
        (folder / "victim.txt").write_text("precious\n")
        for name in (
            "out.csv.journal",
            "out.csv.partial",
            "out.journal.jsonl",
            "out.csv.journal.jsonl",
        ):
            os.symlink("victim.txt", folder / name)

    cases.append(
        Case(
            "sweep-resume",
            "journal-symlink",
            ["sweep", "spec.json", "-o", "out.csv"],
            {},
            expect="any",
            setup=journal_link,
        )
    )
    cases.append(
        Case(
            "sweep-resume",
            "journal-symlink-resume",
            ["sweep", "spec.json", "-o", "out.csv", "--resume"],
            {},
            expect="any",
            setup=journal_link,
        )
    )
    return cases


# --------------------------------------------------------------------------- resources


def resource_cases() -> list[Case]:
    cases = []

    # valid inputs among the hostile ones: exact numbers near the float range (read
    # exactly; a command whose ratios overflow refuses them), numbers and counts with
    # spaces around them, NCCL ranks that are not 0..n-1 (a dump of a later server),
    # and parallel links (their bandwidths add, docs/topology-format.md)
    valid = (
        "1e+308", "1e308", "1e-308", "1e-05", "boxes=' 2'", "bandwidth=' 1'", "bw-huge",
        "rank='1000000000'", "rank='0x10'", "dup-edge",
    )  # fmt: skip

    def add(name: str, files: dict[str, bytes | str], argv: list[str], setup=None) -> None:
        expect = "any" if any(v in name for v in valid) else "error"
        cases.append(Case("resource", name, argv, files, expect=expect, setup=setup))

    topo_cmds = [["show"], ["bound"], ["convert", "{IN}", "o.json"]]

    def for_topo(name: str, filename: str, content: bytes | str, extra: list[str] = (), setup=None):
        turn = len(cases)
        for cmd in (topo_cmds[turn % 3], topo_cmds[(turn + 1) % 3]):
            argv = [c.replace("{IN}", filename) for c in cmd]
            if "{IN}" not in " ".join(cmd):
                argv = argv + [filename]
            add(
                f"{name} ({cmd[0]})",
                {filename: content} if content is not None else {},
                argv + list(extra),
                setup,
            )

    big = 10**9
    # counts
    for n in (0, -1, big, 10**30, "1e9", 1.5, True, None, "4", 1e308):
        astra = json.dumps(
            {"topology": ["Ring"], "npus_count": [n], "bandwidth": [50], "latency": [500]}
        )
        for_topo(f"astra npus_count={n!r}", "a.json", astra)
    for dims in (60, 1000):
        astra = json.dumps(
            {
                "topology": ["Ring"] * dims,
                "npus_count": [2] * dims,
                "bandwidth": [50] * dims,
                "latency": [1] * dims,
            }
        )
        for_topo(f"astra {dims} dims of 2", "a.json", astra)
    for bw in (0, -5, 1e308, "1e308", float("nan"), "nan", "inf", "1/0", "1/" + "9" * 5000, "x"):
        astra = json.dumps(
            {"topology": ["Ring"], "npus_count": [4], "bandwidth": [bw], "latency": [1]},
            allow_nan=True,
        )
        for_topo(f"astra bandwidth={str(bw)[:20]}", "a.json", astra)
    taccl = Path(REPO / "tests" / "data" / "taccl" / "topo-ndv2-1MB.json").read_text()
    for boxes in ("0", "-1", "100000", "10**9", "²", "", "1e3", " 2", "2.0"):
        for_topo(f"taccl boxes={boxes!r}", "t.json", taccl, ["--option", f"boxes={boxes}"])
    nccl = Path(REPO / "tests" / "data" / "nccl" / "dgx-a100.xml").read_text()
    for option in (
        "boxes=100000",
        "boxes=0",
        "spines=100000",
        "oversub=0",
        "oversub=-1",
        "fabric=nope",
        "boxes=٣",
        "spines=1e9",
        "oversub=1/0",
        "nope=1",
    ):
        for_topo(
            f"nccl {option}",
            "n.xml",
            nccl,
            ["--option", option, "--option", "boxes=2"]
            if not option.startswith("boxes")
            else ["--option", option],
        )
    for depth in (150, 5000, 100000):
        pci = '<pci busid="0" class="0x0604" link_speed="16 GT/s">'
        deep = (
            '<system version="1"><cpu numaid="0">'
            + pci * depth
            + "</pci>" * depth
            + "</cpu></system>"
        )
        for_topo(f"nccl nested {depth}", "n.xml", deep)
    for rank in ("-1", "1000000000", "x", "", "1e9", "0x10"):
        xml = nccl.replace('rank="0"', f'rank="{rank}"', 1)
        if xml != nccl:
            for_topo(f"nccl rank={rank!r}", "n.xml", xml)
    # JSON nesting
    for depth in (200, 5000, 100000):
        for_topo(f"json nested {depth}", "d.json", "[" * depth + "]" * depth)
        for_topo(
            f"json nested nodes {depth}",
            "d.json",
            '{"nodes": ' + "[" * depth + "]" * depth + ', "links": []}',
        )
    # YAML
    for name, text in {
        "alias-recursive": "nodes: &n [*n]\n",
        "alias-billion-laughs": "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
        "nodes: [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]\n",
        "deep-flow": "nodes: " + "[" * 5000 + "]" * 5000 + "\n",
        "deep-block": "".join("  " * i + "- \n" for i in range(3000)),
        "python-tag": "!!python/object/apply:os.system ['echo pwned > pwned.txt']\n",
        "binary": "nodes: !!binary aGVsbG8=\n",
        "set": "nodes: !!set {a, b}\n",
        "timestamp": "nodes: [{id: 2001-12-14}]\nlinks: []\n",
        "merge": "base: &b {bandwidth: 1}\nnodes: [{id: a}, {id: b}]\nlinks: [{<<: *b, src: a, dst: b}]\n",
        "huge-int": "nodes: [{id: a}, {id: b}]\nlinks: [{src: a, dst: b, bandwidth: "
        + "9" * 5000
        + "}]\n",
        "dup-keys": "nodes: [{id: a}, {id: b}]\nnodes: []\nlinks: []\n",
        "not-a-map": "- 1\n- 2\n",
        "scalar": "42\n",
        "multi-doc": "nodes: []\n---\nnodes: []\n",
    }.items():
        for_topo(f"yaml {name}", "y.yaml", text)
    # numbers in optcoll topology files
    for bw in (
        "1e308",
        "1e-308",
        1e308,
        1e-308,
        "1/" + "7" * 1_000_000,
        "7" * 1_000_000,
        "1e999999",
        "NaN",
        "Infinity",
        -1,
        0,
        "0/0",
        True,
        [1],
        {"a": 1},
        "1_000",
        " 1",
        "1\x00",
    ):
        topo = {
            "nodes": [{"id": "a"}, {"id": "b"}],
            "links": [{"src": "a", "dst": "b", "bandwidth": bw, "bidirectional": True}],
        }
        for_topo(f"bandwidth={str(bw)[:24]!r}", "b.json", json.dumps(topo, allow_nan=True))
    for lat in ("1", "100/3", -1, "x", 1e308, "1e400", True):
        topo = {
            "nodes": [{"id": "a"}, {"id": "b"}],
            "links": [
                {"src": "a", "dst": "b", "bandwidth": 1, "latency": lat, "bidirectional": True}
            ],
        }
        cases.append(
            Case(
                "resource",
                f"latency={lat!r} (show)",
                ["show", "b.json"],
                {"b.json": json.dumps(topo)},
                expect="any",
            )
        )
    for name in (
        "a\x00b",
        "\ud800",
        "a\nb",
        "",
        " ",
        "é" * 3,
        "a" * 100000,
        "<script>",
        "../../etc/passwd",
    ):
        topo = {
            "name": name,
            "nodes": [{"id": name or "z"}, {"id": "b"}],
            "links": [{"src": name or "z", "dst": "b", "bandwidth": 1, "bidirectional": True}],
        }
        cases.append(
            Case(
                "resource",
                f"node id {name[:12]!r}",
                ["trees", "u.json", "-o", "s.json"],
                {"u.json": json.dumps(topo)},
                expect="any",
            )
        )
    for unit in (5, None, "", "GB/s\x00", [1]):
        topo = {
            "nodes": [{"id": "a"}, {"id": "b"}],
            "bandwidth_unit": unit,
            "links": [{"src": "a", "dst": "b", "bandwidth": 1, "bidirectional": True}],
        }
        for_topo(f"bandwidth_unit={unit!r}", "b.json", json.dumps(topo))
    # edge lists and GraphML
    for name, text in {
        "list-key": "a b {'bandwidth': [1]}\nb a {'bandwidth': 1}\n",
        "dict-eval": "a b {'bandwidth': __import__('os').getcwd()}\nb a 1\n",
        "dup-edge": "# bidirectional\na b 1\na b 2\n",
        "self-loop": "# bidirectional\na a 1\na b 1\n",
        "huge": "# bidirectional\n" + "".join(f"n{i} n{i + 1} 1\n" for i in range(60000)),
        "nul": "# bidirectional\na\x00 b 1\n",
        "bw-huge": "# bidirectional\na b 1e308\nb c 1e-308\n",
        "bw-bad": "# bidirectional\na b ∞\n",
        "empty": "",
        "comment-only": "# bidirectional\n",
        "bad-kw": "# bidirectional\na b bandwidth=1 colour=red\n",
    }.items():
        for_topo(f"edgelist {name}", "e.edgelist", text)
    graphml_head = (
        '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        '<key id="bw" for="edge" attr.name="bandwidth" attr.type="double"/>'
    )
    for name, body in {
        "nested": '<graph edgedefault="undirected"><node id="a"/><node id="x"><graph id="i">'
        '<node id="c"/></graph></node><edge source="a" target="c"><data key="bw">1</data></edge></graph>',
        "hyperedge": '<graph edgedefault="undirected"><node id="a"/><node id="b"/><hyperedge>'
        '<endpoint node="a"/><endpoint node="b"/></hyperedge></graph>',
        "no-bw": '<graph edgedefault="undirected"><node id="a"/><node id="b"/><edge source="a" target="b"/></graph>',
        "two-graphs": '<graph edgedefault="undirected"><node id="a"/><node id="b"/><edge source="a" target="b">'
        '<data key="bw">1</data></edge></graph><graph edgedefault="undirected"><node id="c"/></graph>',
        "entity": '<!DOCTYPE g [<!ENTITY e "&#x41;">]><graph edgedefault="undirected"><node id="&e;"/></graph>',
        "bw-nan": '<graph edgedefault="undirected"><node id="a"/><node id="b"/><edge source="a" target="b">'
        '<data key="bw">NaN</data></edge></graph>',
        "missing-node": '<graph edgedefault="undirected"><node id="a"/><edge source="a" target="zz">'
        '<data key="bw">1</data></edge></graph>',
    }.items():
        for_topo(f"graphml {name}", "g.graphml", graphml_head + body + "</graphml>")
    billion = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        + "".join(
            f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
            for i in range(1, 10)
        )
        + ']><system version="1"><cpu numaid="&lol9;"/></system>'
    )
    for_topo("xml billion laughs", "n.xml", billion)
    # msccl-tools and TACCL matrices
    for n in (10**5, 3000):
        for_topo(
            f"msccl-tools links {n}x1",
            "m.json",
            json.dumps({"msccl_type": "topology", "name": "x", "links": [[1]] * n, "switches": []}),
        )
    for_topo(
        "taccl gpus_per_node huge",
        "t.json",
        json.dumps(
            {"name": "custom", "gpus_per_node": 10**9, "alpha": 1, "links": [[0]], "betas": [[1]]}
        ),
    )
    # files that are not files
    for name, setup in {
        "directory": lambda f: (f / "d.json").mkdir(),
        "dev-zero": lambda f: os.symlink("/dev/zero", f / "d.json"),
        "dev-urandom": lambda f: os.symlink("/dev/urandom", f / "d.json"),
        "fifo": lambda f: os.mkfifo(f / "d.json"),
        "dangling": lambda f: os.symlink("nowhere", f / "d.json"),
        "unreadable": lambda f: ((f / "d.json").write_text("{}"), os.chmod(f / "d.json", 0)),
        "empty": lambda f: (f / "d.json").write_text(""),
        "bom": lambda f: (f / "d.json").write_bytes(b"\xef\xbb\xbf{}"),
        "latin1": lambda f: (f / "d.json").write_bytes(b'{"nodes": [{"id": "\xe9"}]}'),
        "utf16": lambda f: (f / "d.json").write_text('{"nodes": []}', encoding="utf-16"),
    }.items():
        for_topo(f"{name}", "d.json", None, setup=setup)
        for cmd in (
            ["verify", "ring4.json", "d.json"],
            ["check-xml", "d.json"],
            ["check-plan", "d.json"],
            ["sweep", "d.json"],
            ["trees", "ring4.json", "--groups", "d.json"],
            ["simulate", "ring4.json", "d.json"],
        ):
            add(f"{name} ({cmd[0]} {cmd[-1]})", {}, cmd, setup)
    # MSCCL XML and plans that declare huge sizes
    for ngpus, loop in ((10**9, 1), (2, 10**9), (2, 2**40), (65536, 65536), (-1, 2), (2, 0)):
        xml = (
            f'<algo name="x" proto="Simple" nchannels="1" nchunksperloop="{loop}" ngpus="{ngpus}" '
            'coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">'
            + "".join(
                f'<gpu id="{g}" i_chunks="1" o_chunks="2" s_chunks="0"><tb id="0" send="{1 - g}" '
                f'recv="{1 - g}" chan="0"><step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" '
                'dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/></tb></gpu>'
                for g in range(2)
            )
            + "</algo>"
        )
        add(f"xml ngpus={ngpus} loop={loop} (check-xml)", {"x.xml": xml}, ["check-xml", "x.xml"])
        add(
            f"xml ngpus={ngpus} loop={loop} (simulate)",
            {"x.xml": xml},
            ["simulate", "ring:2", "x.xml"],
        )
    for field_, value in (
        ("i_chunks", 10**9),
        ("o_chunks", 10**9),
        ("s_chunks", 10**9),
        ("cnt", 10**9),
        ("srcoff", 10**9),
        ("depid", 10**9),
        ("nchannels", 10**9),
        ("s", 10**9),
    ):
        text = (REPO / "tests").exists() and None
        add(
            f"xml {field_}={value}",
            {},
            ["check-xml", "big.xml"],
            setup=_xml_field("ring4.xml", "big.xml", field_, value),
        )
    for key, value in (
        ("input_chunks", 10**9),
        ("output_chunks", 10**9),
        ("scratch_chunks", 10**9),
        ("num_chunks", 10**9),
        ("unit_size", 1),
        ("size", 10**9),
        ("index", 10**9),
        ("id", 10**9),
    ):
        add(f"plan {key}={value}", {}, ["check-plan", "big.json"], setup=_plan_field(key, value))
    # counts on the command line
    for argv in (
        ["resilience", "ring4.json", "--random", "1", "--trials", "100000000"],
        ["resilience", "ring4.json", "--random", "100000", "--trials", "2"],
        ["resilience", "ring4.json", "--random", "1", "--trials", "0"],
        ["resilience", "ring4.json", "--random", "-1"],
        ["resilience", "ring4.json", "--top", "-1"],
        ["resilience", "ring4.json", "--workers", "100000"],
        ["resilience", "ring4.json", "--seed", "1" * 5000, "--random", "1"],
        ["trees", "ring4.json", "-k", "1000000000"],
        ["trees", "ring4.json", "-k", "0"],
        ["export", "ring4.json", "-k", "100000000", "-o", "x.xml"],
        ["export", "ring4.json", "--channels", "1000000000", "-o", "x.xml"],
        ["export", "ring4.json", "--max-threadblocks", "1000000000", "-o", "x.xml"],
        ["export", "ring4.json", "--format", "chakra", "--size", "1e300", "-o", "et2"],
        ["export", "ring4.json", "--format", "chakra", "--size", "1000000P", "-o", "et2"],
        [
            "export",
            "ring4.json",
            "--sizes",
            "1",
            "1000000000000000000000000000",
            "--bands",
            "-o",
            "x.xml",
        ],
        ["simulate", "ring4.json", "sched.json", "--sizes", "1e300"],
        ["simulate", "ring4.json", "sched.json", "--slice", "1"],
        ["simulate", "ring4.json", "sched.json", "--sizes", "1G", "--slice", "1"],
        ["simulate", "ring4.json", "sched.json", "--latency", "1e308"],
        ["simulate", "ring4.json", "sched.json", "--overhead", "nan"],
        ["compare", "ring4.json", "--latency", "inf"],
        ["compare", "ring4.json", "--sizes", "0"],
        ["plan", "ring4.json", "--sizes", "1", "1P", "--slice", "1"],
        ["plot", "ring4.json", "-o", "p.png", "--dpi", "100000"],
        ["plot", "ring4.json", "-o", "p.png", "--dpi", "0"],
        ["sweep", "spec.json", "--workers", "100000"],
        ["bound", "ring:3000"],
        ["bound", "ring:20000"],
        ["bound", "torus:150x150"],
        ["bound", "hypercube:15"],
        ["show", "fully-connected:1000"],
        ["bound", "fully-connected:400"],
        ["trees", "ring:2000"],
        ["bound", "dgx-a100:1000000000"],
        ["bound", "ring:" + "9" * 5000],
        ["bound", "ring:1e9"],
        ["bound", "ring:²"],
        ["crosscheck", "ring:200"],
        ["lp", "export", "fully-connected:200", "-o", "x.lp"],
    ):
        cases.append(
            Case(
                "resource",
                " ".join(argv)[:60],
                argv,
                {
                    "spec.json": json.dumps(
                        {"base": "ring:{n}", "grid": {"n": [3]}, "quantities": ["k"]}
                    )
                },
                expect="any",
            )
        )
    # sweep specs
    for name, spec in {
        "grid huge": {
            "base": "ring:{n}",
            "grid": {"n": list(range(3, 200000))},
            "quantities": ["k"],
        },
        "grid product": {
            "base": "torus:{a}x{b}",
            "grid": {"a": list(range(2, 3000)), "b": list(range(2, 3000))},
            "quantities": ["k"],
        },
        "big topology": {"base": "ring:{n}", "grid": {"n": [10**9]}, "quantities": ["k"]},
        "no quantities": {"base": "ring:{n}", "grid": {"n": [3]}, "quantities": []},
        "bad quantity": {"base": "ring:{n}", "grid": {"n": [3]}, "quantities": ["nope"]},
        "format inject": {"base": "ring:{n.__class__}", "grid": {"n": [3]}, "quantities": ["k"]},
        "format attr": {"base": "ring:{n!r}{0}", "grid": {"n": [3]}, "quantities": ["k"]},
        "grid none": {"base": "ring:{n}", "grid": None, "quantities": ["k"]},
        "grid values not list": {"base": "ring:{n}", "grid": {"n": 3}, "quantities": ["k"]},
        "unknown key": {"base": "ring:{n}", "grid": {"n": [3]}, "quantities": ["k"], "bogus": 1},
    }.items():
        add(f"sweep spec {name}", {"s.json": json.dumps(spec)}, ["sweep", "s.json", "-o", "s.csv"])
    add("sweep spec yaml alias", {"s.yaml": "base: &b [*b]\n"}, ["sweep", "s.yaml"])
    add(
        "groups yaml alias",
        {"gg.yaml": "groups: &g [*g]\n"},
        ["bound", "ring4.json", "--groups", "gg.yaml"],
    )
    add("schedule yaml alias", {"s.yaml": "trees: &t [*t]\n"}, ["verify", "ring4.json", "s.yaml"])
    add(
        "groups huge",
        {"gg.json": json.dumps({"groups": [["n0", "n1"]] * 10**6})},
        ["bound", "ring4.json", "--groups", "gg.json"],
    )
    for spec in (
        "blocks:1000000000",
        "blocks:0",
        "blocks:²",
        "blocks:-1",
        "stride:1000000000",
        "nope:1",
    ):
        add(f"groups spec {spec}", {}, ["bound", "ring4.json", "--groups", spec])
    return cases


def _xml_field(src: str, dst: str, attr: str, value: int) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        root = ElementTree.parse(folder / src).getroot()
        for element in root.iter():
            if attr in element.attrib:
                element.set(attr, str(value))
                break
        (folder / dst).write_text(ElementTree.tostring(root, encoding="unicode"))

    return setup


def _plan_field(key: str, value: int) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        doc = json.loads((folder / "plan.json").read_text())
        for path, old in _leaves(doc):
            if path and path[-1] == key and isinstance(old, int):
                doc = _set(doc, path, value)
                break
        (folder / "big.json").write_text(json.dumps(doc))

    return setup


# --------------------------------------------------------------------------- flags


#: Bytes per second of every unit a topology may declare (written out independently).
_UNIT_BYTES = {
    f"{prefix}{kind}/s": Fraction(scale, 8 if kind == "b" else 1)
    for prefix, scale in {
        "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
        "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
    }.items()
    for kind in ("B", "b")
}  # fmt: skip


def _triangle(unit: str, bandwidth: int = 400) -> str:
    links = [
        {"src": a, "dst": b, "bandwidth": bandwidth, "bidirectional": True}
        for a, b in (("a", "b"), ("b", "c"), ("c", "a"))
    ]
    nodes = [{"id": v} for v in "abc"]
    return json.dumps({"bandwidth_unit": unit, "nodes": nodes, "links": links})


def _cut_ratio_is(expected: Fraction) -> Callable[[Path, Any], tuple[str, str] | None]:
    def check(_: Path, result: Any) -> tuple[str, str] | None:
        got = Fraction(json.loads(result.stdout)["cut_ratio"])
        return None if got == expected else ("wrong-success", f"r* {got}, expected {expected}")

    return check


def unit_cases() -> list[Case]:
    """Bandwidth units and message sizes (issue 38): every accepted unit converted exactly
    (r* of a triangle of 400-unit links, 2 GPUs behind 800 units, checked in GB/s),
    anything else refused; a message size in bits refused."""
    cases = [
        Case(
            "units",
            f"accepted {unit}",
            ["bound", "t.json", "--json"],
            {"t.json": _triangle(unit)},
            check=_cut_ratio_is(Fraction(2 * 10**9) / (800 * Fraction(per_second))),
        )
        for unit, per_second in _UNIT_BYTES.items()
    ]
    for unit in ("potatoes", "GBps", "KB/s", "Kb/s", "gb/s", "", "GB", "1/s", "GB/s "):
        cases.append(Case("units", f"refused {unit!r}", ["bound", "t.json"],
                          {"t.json": _triangle(unit)}, expect="error"))  # fmt: skip
    for size in ("1Mb", "8Kb", "1Gb", "64b", "1Mib", "1.5M", "-1K"):
        cases.append(Case("units", f"size {size}", ["simulate", "ring4.json", "sched.json",
                          "--sizes", size], expect="error"))  # fmt: skip
    return cases


def flag_cases() -> list[Case]:
    """Flags that do not apply where they are given: each must be refused (exit 2)."""
    rows = [
        ["export", "ring4.json", "--collective", "allgather", "--root", "n0", "-o", "x.xml"],
        ["export", "ring4.json", "--collective", "alltoall", "--root", "n0", "-o", "x.xml"],
        ["export", "ring4.json", "--topology", "ring4.json", "-o", "x.xml"],
        ["export", "ring4.json", "--tolerance", "5%%", "-o", "x.xml"],
        ["export", "ring4.json", "--tolerance", "-1", "-o", "x.xml"],
        ["export", "ring4.json", "--tolerance", "nan", "-o", "x.xml"],
        ["export", "ring4.json", "--format", "json", "--runtime", "rccl", "-o", "x.json"],
        ["export", "ring4.json", "--format", "json", "--channels", "2", "-o", "x.json"],
        ["export", "ring4.json", "--format", "json", "--max-threadblocks", "4", "-o", "x.json"],
        ["export", "ring4.json", "--format", "json", "--placement", "inplace", "-o", "x.json"],
        ["export", "ring4.json", "--format", "json", "--size", "1M", "-o", "x.json"],
        ["export", "ring4.json", "--format", "json", "--bands", "-o", "x.json"],
        ["export", "ring4.json", "--format", "json", "--exact", "-o", "x.json"],
        [
            "export",
            "ring4.json",
            "--format",
            "chakra",
            "--size",
            "1M",
            "--runtime",
            "rccl",
            "-o",
            "e",
        ],
        [
            "export",
            "ring4.json",
            "--format",
            "chakra",
            "--size",
            "1M",
            "--placement",
            "inplace",
            "-o",
            "e",
        ],
        ["export", "ring4.json", "--format", "mscclpp", "--runtime", "rccl", "-o", "x.json"],
        ["export", "ring4.json", "--format", "msccl", "--size", "1M", "-o", "x.xml"],
        ["export", "ring4.json", "--max-bytes", "1M", "-o", "x.xml"],
        ["export", "ring4.json", "--sizes", "1M", "-o", "x.xml"],
        ["export", "ring4.json", "--unchecked", "-o", "x.xml"],
        ["export", "sched.json", "--topology", "ring4.json", "-k", "3", "-o", "x.xml"],
        [
            "export",
            "sched.json",
            "--topology",
            "ring4.json",
            "--collective",
            "broadcast",
            "-o",
            "x.xml",
        ],
        ["export", "sched.json", "--topology", "ring4.json", "--groups", "g.json", "-o", "x.xml"],
        ["export", "ring4.json", "--relay", "any", "-o", "x.xml"],
        ["export", "ring4.json", "--group-form", "edge", "-o", "x.xml"],
        ["export", "ring4.json", "--exact", "--tolerance", "0.1", "-o", "x.xml"],
        ["trees", "ring4.json", "--relay", "any"],
        ["trees", "ring4.json", "--group-form", "edge"],
        ["trees", "ring4.json", "--groups", "g.json", "-k", "3"],
        ["trees", "ring4.json", "--force"],
        ["trees", "ring4.json", "-o", ""],
        ["trees", "ring4.json", "--collective", "alltoall", "-k", "3"],
        ["solve", "ring4.json", "--root", "n0"],
        ["solve", "ring4.json", "--collective", "alltoall", "--root", "n0"],
        ["solve", "ring4.json", "--relay", "any"],
        ["solve", "ring4.json", "--collective", "broadcast", "--groups", "g.json", "--root", "n0"],
        ["solve", "ring4.json", "-o", ""],
        ["bound", "ring4.json", "--relay", "any"],
        ["bound", "ring4.json", "--group-form", "edge"],
        ["bound", "ring4.json", "--collective", "alltoall", "--groups", "g.json"],
        ["bound", "ring4.json", "--collective", "broadcast"],
        ["bound", "ring4.json", "--method", "nope"],
        ["bound", "ring4.json", "--collective", "alltoall", "--method", "maxflow"],
        ["bound", "ring:4", "--option", "boxes=2"],
        ["bound", "ring:4", "--bandwidth-attr", "bw"],
        ["show", "ring4.json", "--option", "boxes=2"],
        ["show", "ring4.json", "--latency-attr", "lat"],
        ["verify", "ring4.json", "sched.json", "--relay", "any"],
        ["verify", "ring4.json", "sched.json", "--groups", "g.json"],
        ["verify", "ring4.json", "gs.json"],
        ["plot", "ring4.json", "-o", "p.png", "--relay", "any"],
        ["plot", "ring4.json", "-o", "p.png", "--tree", "n0", "--cut"],
        ["plot", "ring4.json", "-o", "p.png", "--schedule", "sched.json", "--cut"],
        ["plot", "ring4.json", "-o", ""],
        ["plot", "ring4.json", "-o", "p.txt"],
        ["crosscheck", "ring4.json", "--relay", "any"],
        ["crosscheck", "ring4.json", "--methods", "nope"],
        ["crosscheck", "ring4.json", "--collective", "alltoall", "--groups", "g.json"],
        ["compare", "ring4.json", "--force"],
        ["compare", "ring4.json", "--relay", "any"],
        ["compare", "ring4.json", "--plot", ""],
        ["simulate", "ring4.json", "ring4.xml", "--slice", "1M"],
        ["plan", "ring4.json", "--force"],
        ["plan", "ring4.json", "--collective", "allgather", "--root", "n0"],
        ["plan", "ring4.json", "--export", ""],
        ["resilience", "ring4.json", "--seed", "3"],
        ["resilience", "ring4.json", "--trials", "3"],
        ["resilience", "ring4.json", "--force"],
        ["resilience", "ring4.json", "--dask", "tcp://127.0.0.1:1", "--workers", "2"],
        ["resilience", "ring4.json", "--fail", "nics"],
        ["sweep", "spec.json", "--force"],
        ["sweep", "spec.json", "--resume"],
        ["sweep", "spec.json", "--plot", "p.png"],
        ["sweep", "spec.json", "--workers", "0"],
        ["convert", "ring4.json", "o.txt"],
        ["convert", "ring4.json", "o.json", "--format", "astra-sim"],
        ["convert", "ring4.json", ""],
        ["check-xml", "ring4.xml", "--topology", "ring:8"],
        ["check-xml", "ring4.xml", "--topology", "ring:4", "--runtime", "rccl"],
        ["lp", "export", "ring4.json", "-o", ""],
    ]
    spec = json.dumps({"base": "ring:{n}", "grid": {"n": [3]}, "quantities": ["k"]})
    return [Case("flags", " ".join(r[1:]), r, {"spec.json": spec}, expect="any") for r in rows]


# --------------------------------------------------------------------------- signals


def signal_cases(rng: random.Random, count: int) -> list[dict[str, Any]]:
    commands = [
        ["trees", "dgx-a100:2", "-o", "s.json"],
        ["export", "dgx-a100:2", "-o", "x.xml"],
        ["solve", "ring:6", "-o", "out"],
        ["sweep", "spec.json", "-o", "t.csv", "--workers", "2"],
        ["resilience", "ring:8", "--workers", "2", "--plot", "r.png"],
        ["plot", "dgx-a100:2", "-o", "p.png"],
        ["convert", "dgx-a100:4", "c.json"],
        ["bound", "dgx-a100:8"],
        ["crosscheck", "dgx-a100:1"],
        ["plan", "ring:6", "--export", "pl", "--plot", "pl.png"],
    ]
    out = []
    for index in range(count):
        argv = commands[index % len(commands)]
        when = rng.choice([rng.uniform(0.0, 0.3), rng.uniform(0.3, 1.2), rng.uniform(1.2, 4.0)])
        sig = rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
        out.append({"argv": argv, "when": when, "signal": sig})
    return out


def run_signal(case: dict[str, Any], work: Path) -> list[tuple[str, str]]:
    folder = Path(tempfile.mkdtemp(dir=work))
    (folder / "spec.json").write_text(
        json.dumps(
            {
                "base": "ring:{n}",
                "grid": {"n": [5, 6, 7, 8, 9, 10, 11, 12]},
                "quantities": ["cut_ratio", "k", "algbw"],
            }
        )
    )
    (folder / "t.csv").write_text("precious\n")
    before = _snapshot(folder)
    proc = subprocess.Popen(
        [sys.executable, "-m", "optcoll", *case["argv"]],
        cwd=folder,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limits,
        start_new_session=True,
    )
    time.sleep(case["when"])
    findings = []
    try:
        proc.send_signal(case["signal"])
    except ProcessLookupError:
        pass
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        findings.append(("hang", f"{signal.Signals(case['signal']).name} did not end it"))
    time.sleep(0.5)
    left = subprocess.run(
        ["ps", "-o", "pid=,args=", "-s", str(proc.pid)], capture_output=True, text=True
    ).stdout
    if left.strip():
        findings.append(("orphan", left.strip().splitlines()[0][:120]))
        os.killpg(proc.pid, signal.SIGKILL)
    if "Traceback" in err:
        findings.append(("traceback", _last(err)))
    after = _snapshot(folder)
    for name, digest in before.items():
        if after.get(name) != digest and not (name == "t.csv" and proc.returncode == 0):
            findings.append(("input-lost", f"{name} changed"))
    if proc.returncode != 0:
        hidden = [
            n
            for n in after
            if n not in before
            and ("tmp" in n.lower() or n.split("/")[-1].startswith(".") or n.endswith(".partial"))
        ]
        if hidden:
            findings.append(("input-lost", f"temporary files left: {hidden[:3]}"))
    shutil.rmtree(folder, ignore_errors=True)
    return findings


# --------------------------------------------------------------------------- API

_API_SCRIPT = r"""
import inspect, json, math, signal, sys
import optcoll
from optcoll.exceptions import OptCollError
BAD = {"None": None, "str": "x", "neg": -1, "nan": float("nan"), "inf": float("inf"),
       "huge": 10**400, "bool": True, "list": [1], "dict": {}, "bytes": b"x", "zero": 0,
       "float": 1.5, "nul": "a\x00b", "deep": None}
deep = []
cur = deep
for _ in range(100000):
    cur.append([]); cur = cur[0]
BAD["deep"] = deep

class Alarm(Exception):
    pass
def on_alarm(*_):
    raise Alarm()
signal.signal(signal.SIGALRM, on_alarm)

topo = optcoll.load_topology("ring:4")
sol = optcoll.solve(topo)
targets = []
for name in optcoll.__all__:
    obj = getattr(optcoll, name)
    if name == "OptCollError":
        continue
    targets.append((name, obj, None))
for cls, inst, label in ((optcoll.Topology, topo, "Topology"), (optcoll.Solution, sol, "Solution")):
    for attr in dir(cls):
        if attr.startswith("_"):
            continue
        member = getattr(inst, attr)
        if callable(member):
            targets.append((label + "." + attr, member, inst))
valid = {"topology": topo, "source": "ring:4", "path": "/tmp/optcoll-campaign-unused.json",
         "collective": "allgather", "name": "x", "graph": None, "id": "a", "src": "a", "dst": "b",
         "bandwidth": 1, "nodes": [], "links": [], "nodes_set": None}
results = []
for name, func, inst in targets:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        continue
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    for p in params:
        for label, bad in BAD.items():
            kwargs = {}
            ok = True
            for q in params:
                if q is p:
                    kwargs[q.name] = bad
                elif q.default is not q.empty:
                    continue
                elif q.name in valid and valid[q.name] is not None:
                    kwargs[q.name] = valid[q.name]
                else:
                    ok = False
            if not ok:
                continue
            signal.alarm(10)
            try:
                func(**kwargs)
                outcome = "accepted"
            except Alarm:
                outcome = "hang"
            except OptCollError:
                outcome = "ok"
            except MemoryError:
                outcome = "memory"
            except BaseException as e:
                outcome = type(e).__name__ + ": " + str(e)[:100]
            finally:
                signal.alarm(0)
            results.append([name, p.name, label, outcome])
print(json.dumps(results))
"""


def api_findings(work: Path) -> tuple[int, list[tuple[str, str, str]]]:
    proc = subprocess.run(
        [sys.executable, "-c", _API_SCRIPT],
        cwd=work,
        env=_env(),
        capture_output=True,
        text=True,
        preexec_fn=_limits,
        timeout=600,
    )
    if proc.returncode != 0:
        return 1, [("traceback", "api driver", _last(proc.stderr))]
    rows = json.loads(proc.stdout)
    findings = []
    for name, param, label, outcome in rows:
        call = f"optcoll.{name}({param}=<{label}>)"
        if outcome in ("ok",):
            continue
        if outcome == "accepted":
            findings.append(("api-accepted", call, "accepted"))
        elif outcome == "hang":
            findings.append(("hang", call, "more than 10 s"))
        elif outcome == "memory":
            findings.append(("memory", call, "MemoryError"))
        else:
            findings.append(("traceback", call, outcome))
    return len(rows), findings


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="case groups to run (prefix match)")
    parser.add_argument("--signals", type=int, default=40, help="signal cases")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    parser.add_argument("--table", help="write the findings as a markdown table here")
    parser.add_argument("--json", help="write counts and findings as JSON here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="optcoll-campaign-"))
    base = work / "base"
    base.mkdir()
    make_base(base)
    cases = (
        lying_schedules(base, rng)
        + lying_xml(base)
        + lying_plans(base, rng)
        + lying_traces(base, rng)
        + inputs_lost()
        + resource_cases()
        + flag_cases()
        + unit_cases()
    )
    if args.only:
        cases = [c for c in cases if any(c.group.startswith(o) for o in args.only)]
    counts: Counter[str] = Counter()
    rows = []
    started = time.time()
    total = 0
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(args.jobs)
    results = pool.map(lambda case: run_case(case, base, work), cases)
    for index, (case, findings) in enumerate(zip(cases, results, strict=True)):
        total += 1
        for kind, text in findings:
            counts[kind] += 1
            rows.append((kind, case.group, case.name, repro(case), text))
            print(f"[{kind}] {case.group}: {case.name}: {repro(case)[:300]} -> {text}", flush=True)
        if index % 50 == 0:
            print(
                f"... {index}/{len(cases)} {time.time() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    if not args.only or "signals" in args.only:
        for case in signal_cases(rng, args.signals):
            total += 1
            name = f"{signal.Signals(case['signal']).name} at {case['when']:.2f} s"
            for kind, text in run_signal(case, work):
                counts[kind] += 1
                line = "optcoll " + " ".join(case["argv"])
                rows.append((kind, "signals", name, line, text))
                print(f"[{kind}] signals: {name}: {line} -> {text}", flush=True)
    if not args.only or "api" in args.only:
        calls, findings = api_findings(work)
        total += calls
        for kind, call, text in findings:
            counts[kind] += 1
            rows.append((kind, "api", call, call, text))
            print(f"[{kind}] api: {call} -> {text}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print(
        f"\n{total} inputs in {time.time() - started:.0f} s: "
        + ", ".join(f"{counts[c]} {c}" for c in (*CLASSES, "api-accepted"))
    )
    if args.table:
        with open(args.table, "w") as handle:
            handle.write("| class | group | case | repro | outcome |\n|---|---|---|---|---|\n")
            for row in rows:
                handle.write("| " + " | ".join(str(x).replace("|", "\\|") for x in row) + " |\n")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"inputs": total, "counts": counts, "findings": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
