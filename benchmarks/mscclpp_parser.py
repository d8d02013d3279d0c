"""Outside check: MSCCL++'s own plan loader judges the plans ``export --format mscclpp`` writes.

``optcoll check-plan`` reads plans by MSCCL++'s rules, but it is our code. This script
compiles MSCCL++'s own plan loader, ``src/core/executor/execution_plan.cc`` (with
``src/core/errors.cc`` and the headers of ``include/`` and ``src/core/include/``,
unmodified), with g++ and no GPU against the stub headers and the driver in
``benchmarks/mscclpp_driver/`` (ours), and loads every plan through it for every rank, as
the executor does (``ExecutionPlan(path, rank)``, ``loadExecutionPlan(in, out, 0, 0)``),
then repeats the executor's host-side setup that needs no GPU and checks the device plan's
indices and every op's byte ranges (see ``driver.cc``). MSCCL++ is not a dependency and
none of its code is in this repository: pass a checkout (``fetch`` or ``git clone``
microsoft/mscclpp; checked at commit 1f5f065d7b13ab02df32c22568f38785d1eeec01) and a folder
holding ``nlohmann/json.hpp`` (MSCCL++ fetches nlohmann/json v3.12.0 at build time; without
``--json-include`` the script looks in the checkout's ``build/_deps``).

Plans checked: every built-in family (and a leaf-spine), every collective, both placements,
Simple and LL, and process groups (one plan per group), each at message sizes across its
band (the smallest it serves, 1 KiB, 1 MiB, 64 MiB, 1 GiB, 6 GiB, its largest below
2**40, each rounded to its size granule); MSCCL++'s shipped plans (``test/execution-files``,
``test/executor-tests/execution-plans``) as a positive control; and mutations of a few of
ours as a negative control, each also given to ``optcoll check-plan``. Verdicts: ``OK``;
``REJECT`` (their code threw); ``CRASH`` (their code hit an assertion or undefined
behaviour; built with ``_GLIBCXX_ASSERTIONS`` and ``-fsanitize=undefined``); ``BOUNDS``
(it loaded, but the device plan indexes past what the executor set up or an op reaches
past its buffer: rules the driver derives from ``executor.cc`` and ``execution_kernel.hpp``).

Run from the repository root::

    python -m benchmarks.mscclpp_parser --mscclpp PATH [--json-include DIR]
        [--specs ring:4 ...] [--collectives allgather ...] [--build-dir DIR] [--details]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import cpu_seconds, print_table

DRIVER_DIR = Path(__file__).resolve().with_name("mscclpp_driver")
#: MSCCL++ sources compiled unmodified, relative to the checkout.
SOURCES = ("src/core/executor/execution_plan.cc", "src/core/errors.cc")
INCLUDES = ("include", "src/core/include")
FLAGS = (
    "-std=c++20",
    "-O1",
    "-g",
    "-D_GLIBCXX_ASSERTIONS",
    "-fsanitize=undefined",
    "-fno-sanitize-recover=all",
)
SPECS = (
    "ring:4",
    "line:4",
    "star:4",
    "fully-connected:4",
    "hypercube:3",
    "torus:3x3",
    "mesh:3x3",
    "dgx-a100:1",
    "dgx-a100:2",
    "dgx-h100:1",
    "dgx-v100:1",
    "dgx-2:1",
    "mi250:1",
    "leaf-spine:leaves=2,hosts=2,spines=2",
    "random:n=6,seed=1",
)
COLLECTIVES = ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", "alltoall")
#: Process groups exported on top of the plain collectives: (topology, --groups).
GROUPS = (("ring:4", "blocks:2"), ("dgx-a100:2", "strided:2"))
#: Message sizes tried in every plan's band (rounded up to its granule).
SIZES = (1, 2**10, 2**20, 2**26, 2**30, 6 * 2**30)
#: The largest band end still tried as a size of its own.
LARGEST = 2**40
SHIPPED = ("test/execution-files", "test/executor-tests/execution-plans")
#: Plans of ours the mutations start from: (topology, collective, protocol).
MUTATED = (
    ("ring:4", "allreduce", "Simple"),
    ("ring:4", "allreduce", "LL"),
    ("dgx-h100:1,nvls=1", "allreduce", "Simple"),
)


def build_driver(mscclpp: Path, json_include: Path, build_dir: Path) -> Path:
    """Compile the driver with MSCCL++'s sources into ``build_dir``; return its path.

    The stub headers come first on the include path, so they stand in for MSCCL++'s
    ``gpu.hpp``, ``gpu_data_types.hpp``, ``version.hpp`` and the three channel headers.
    """
    if shutil.which("g++") is None:
        raise SystemExit("g++ not found: the outside check compiles MSCCL++'s plan loader")
    includes = [f"-I{DRIVER_DIR / 'stub'}"]
    includes += [f"-I{mscclpp / d}" for d in INCLUDES] + [f"-I{json_include}"]
    objects = []
    for source in [DRIVER_DIR / "driver.cc", *(mscclpp / s for s in SOURCES)]:
        obj = build_dir / f"{source.stem}.o"
        if not obj.exists() or obj.stat().st_mtime < source.stat().st_mtime:
            run = ["nice", "g++", *FLAGS, *includes, "-c", str(source), "-o", str(obj)]
            subprocess.run(run, check=True)
        objects.append(str(obj))
    driver = build_dir / "driver"
    subprocess.run(["g++", "-fsanitize=undefined", *objects, "-o", str(driver)], check=True)
    return driver


def find_json_include(mscclpp: Path, given: Path | None) -> Path:
    """The folder holding ``nlohmann/json.hpp``: ``given``, or the checkout's build tree."""
    candidates = [given] if given else sorted(mscclpp.glob("build*/_deps/json-src/single_include"))
    for folder in candidates:
        if folder is not None and (folder / "nlohmann" / "json.hpp").is_file():
            return folder
    raise SystemExit(
        "nlohmann/json.hpp not found: pass --json-include DIR (e.g. nlohmann/json's "
        "single_include folder)"
    )


def buffer_sizes(plan: dict[str, Any], message: int) -> tuple[int, int]:
    """Input and output bytes of each rank for a message of ``message`` bytes: the message
    is the output of an allgather (each rank gives ``1/n`` of it) and the input of every
    other collective (a reduce-scatter's output is ``1/n`` of it), as MSCCL++'s
    ``checkMessageSize`` reads it.

    Examples
    --------
    >>> plan = {"collective": "allgather", "gpus": [{}, {}, {}, {}]}
    >>> buffer_sizes(plan, 4096), buffer_sizes({**plan, "collective": "allreduce"}, 4096)
    ((1024, 4096), (4096, 4096))
    """
    n = max(1, len(plan.get("gpus", ())))
    if plan["collective"] == "allgather":
        return message // n, message
    if plan["collective"] == "reducescatter":
        return message, message // n
    return message, message


def granule(plan: dict[str, Any]) -> int:
    """A message size every rank's buffers divide as MSCCL++ requires: ``buffer_alignment``
    times every chunk count, times the rank count (the share of an allgather's input).

    Examples
    --------
    >>> granule({"buffer_alignment": 16, "gpus": [{"input_chunks": 2, "output_chunks": 8}] * 4})
    512
    """
    n = max(1, len(plan.get("gpus", ())))
    step = plan.get("buffer_alignment", 16) * n
    for gpu in plan.get("gpus", ()):
        for key in ("input_chunks", "output_chunks"):
            if gpu.get(key):
                step = math.lcm(step, plan.get("buffer_alignment", 16) * gpu[key] * n)
    return step


def message_sizes(plan: dict[str, Any]) -> list[int]:
    """The sizes a plan is tried at: :data:`SIZES` and its band's ends, rounded to its
    :func:`granule` and kept within its band.

    Examples
    --------
    >>> plan = {"buffer_alignment": 16, "min_message_size": 0, "max_message_size": 2**20,
    ...         "gpus": [{"input_chunks": 1, "output_chunks": 1}] * 2}
    >>> message_sizes(plan)
    [32, 1024, 1048576]
    """
    step = granule(plan)
    low = plan.get("min_message_size", 0)
    high = plan.get("max_message_size", 2**64 - 1)
    wanted = [max(low, 1), *SIZES] + ([high] if high < LARGEST else [])
    sizes = set()
    for size in wanted:
        up = -(-size // step) * step
        down = size // step * step
        for s in (up, down):
            if low <= s <= high and s > 0:
                sizes.add(s)
                break
    return sorted(sizes)


def export_plans(spec: str, collective: str, groups: str | None, folder: Path) -> list[Path]:
    """The plan files ``optcoll export SPEC --format mscclpp --placement both`` writes (in
    process, as a user runs it), or the error it stops with."""
    from optcoll.cli import main as optcoll_main

    stem = f"{spec}.{collective}.{groups or 'all'}".replace(":", "_").replace(",", "_")
    args = ["export", spec, "--collective", collective, "--format", "mscclpp", "--json", "--force"]
    args += ["--placement", "both", "-o", str(folder / f"{stem}.json")]
    if groups:
        args += ["--groups", groups]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = optcoll_main(args)
        except SystemExit as exit_:  # argparse refusing the arguments
            status = exit_.code
    if status != 0:
        raise RuntimeError(err.getvalue().strip() or f"export exited {status}")
    return [Path(entry["path"]) for entry in json.loads(out.getvalue())["files"]]


def mutations(plan: dict[str, Any]) -> list[tuple[str, dict[str, Any], int | None]]:
    """Mutations of a plan that MSCCL++'s loader or executor must refuse, each with the
    message size to try it at (None: the plan's smallest size).

    Examples
    --------
    >>> [name for name, _, _ in mutations({"name": "p", "collective": "allreduce",
    ...     "protocol": "Simple", "inplace": False, "buffer_alignment": 16,
    ...     "gpus": [{"id": 0, "input_chunks": 1, "output_chunks": 1, "scratch_chunks": 0,
    ...               "threadblocks": [{"id": 0, "ops": [], "channels": []}],
    ...               "channels": [], "remote_buffers": []}]})][:3]
    ['no "protocol"', 'no "inplace"', 'no "gpus"']
    """
    found: list[tuple[str, dict[str, Any], int | None]] = []

    def add(name: str, change: Any, size: int | None = None) -> None:
        doc = copy.deepcopy(plan)
        change(doc)
        found.append((name, doc, size))

    for key in ("protocol", "inplace", "gpus"):
        add(f'no "{key}"', lambda d, k=key: d.pop(k))
    add("gpu ids swapped", lambda d: d["gpus"].reverse() if len(d["gpus"]) > 1 else None)
    add("gpu 0 has no input_chunks", lambda d: d["gpus"][0].pop("input_chunks"))
    add("gpu 0 has no threadblocks", lambda d: d["gpus"][0].pop("threadblocks"))
    add("input_chunks 3", lambda d: [g.update(input_chunks=3) for g in d["gpus"]])
    add("output_chunks 0", lambda d: [g.update(output_chunks=0) for g in d["gpus"]])
    add("band below the sizes", lambda d: d.update(min_message_size=0, max_message_size=0))
    add("size not aligned", lambda d: None, 24)
    ops = [
        (g, tb, op)
        for g in plan["gpus"]
        for tb in g["threadblocks"]
        for op in tb["ops"]
        for op in [op, *op.get("ops", ())]
    ]
    data = [(g, tb, op) for g, tb, op in ops if "channel_ids" in op and "dst_buff" in op]
    if data:
        g0, tb0, op0 = data[0]
        where = (g0["id"], tb0["id"], tb0["ops"].index(op0) if op0 in tb0["ops"] else None)

        def find(d: dict[str, Any]) -> dict[str, Any]:
            gpu = d["gpus"][where[0]]
            block = next(t for t in gpu["threadblocks"] if t["id"] == where[1])
            for op in block["ops"]:
                for o in [op, *op.get("ops", ())]:
                    if o.get("channel_ids") == op0["channel_ids"] and o["name"] == op0["name"]:
                        return o
            raise AssertionError("op not found")

        add("unknown op name", lambda d: find(d).update(name="sendrecv"))
        add("unknown buffer type", lambda d: find(d)["dst_buff"][0].update(type="x"))
        add("channel id past the block's", lambda d: find(d).update(channel_ids=[15]))
        add("buffer id past the block's", lambda d: find(d)["dst_buff"][0].update(buffer_id=9))
        add("9 channels in one op", lambda d: find(d).update(channel_ids=[0] * 9))
        add("chunk index past the buffer", lambda d: find(d)["dst_buff"][0].update(index=10**6))
        add("unknown channel type", lambda d: find(d).update(channel_type="nvlink"))
    pipelined = [
        (g["id"], t["id"], i)
        for g in plan["gpus"]
        for t in g["threadblocks"]
        for i, op in enumerate(t["ops"])
        if op["name"] == "pipeline"
    ]
    if pipelined:
        r, b, i = pipelined[0]

        def pipe(d: dict[str, Any]) -> dict[str, Any]:
            block = next(t for t in d["gpus"][r]["threadblocks"] if t["id"] == b)
            return block["ops"][i]["iter_context"]

        # at 64 MiB, where a pipeline runs many units (at the smallest size it runs one)
        add(
            "pipeline num_chunks doubled",
            lambda d: pipe(d).update(num_chunks=2 * pipe(d)["num_chunks"]),
            -(-(2**26) // granule(plan)) * granule(plan),
        )
        add("pipeline unit_size 0", lambda d: pipe(d).update(unit_size=0))
    switched = [
        (g["id"], t["id"], i)
        for g in plan["gpus"]
        for t in g["threadblocks"]
        for i, op in enumerate(t["ops"])
        if op["name"] == "pipeline" and op["ops"][0]["name"] == "glres"
    ]
    if switched:  # switch (NVLS) channels
        r, b, i = switched[0]

        def glres(d: dict[str, Any]) -> dict[str, Any]:
            block = next(t for t in d["gpus"][r]["threadblocks"] if t["id"] == b)
            return block["ops"][i]["ops"][0]

        def switch_channels(d: dict[str, Any]) -> dict[str, Any]:
            block = next(t for t in d["gpus"][r]["threadblocks"] if t["id"] == b)
            return next(c for c in block["channels"] if c["channel_type"] == "switch")

        def leave_out_last(d: dict[str, Any]) -> None:
            group = d["gpus"][0]["channels"][-1]["rank_groups"][0]
            group.update(ranks=group["ranks"][:-1], size=group["size"] - 1)

        add("switch_channel_id past the block's", lambda d: glres(d)["src_buff"][0].update(
            switch_channel_id=5))  # fmt: skip
        add("switch channel past the rank's", lambda d: switch_channels(d).update(
            channel_ids=[0, 7]))  # fmt: skip
        add("glres chunk past the buffer", lambda d: glres(d)["dst_buff"][0].update(index=10**6))
        add("a rank left out of rank 0's switch channel", leave_out_last)
    add("thread block id past the count", lambda d: d["gpus"][0]["threadblocks"][-1].update(id=99))
    refs = [t for t in plan["gpus"][0]["threadblocks"] if t.get("remote_buffer_refs")]
    if refs:
        block_id = refs[0]["id"]

        def first_ref(d: dict[str, Any]) -> dict[str, Any]:
            block = next(t for t in d["gpus"][0]["threadblocks"] if t["id"] == block_id)
            return block["remote_buffer_refs"][0]

        add(
            "remote buffer id past the rank's",
            lambda d: first_ref(d).update(remote_buffer_ids=[99]),
        )
    add(
        "65 ops in a thread block",
        lambda d: d["gpus"][0]["threadblocks"][0]["ops"].extend([{"name": "nop"}] * 65),
    )
    add(
        "17 memory channels in a thread block",
        lambda d: d["gpus"][0]["threadblocks"][0]["channels"].append(
            {"channel_type": "memory", "channel_ids": list(range(17))}
        ),
    )
    add(
        "semaphore never declared",
        lambda d: d["gpus"][0]["threadblocks"][0]["ops"].insert(
            0, {"name": "sem_acquire", "semaphore_ids": [40]}
        ),
    )
    return found


def run_driver(driver: Path, jobs: list[tuple[Path, int, int]]) -> list[str]:
    """The driver's verdict line for each job ``(plan, input bytes, output bytes)``."""
    text = "".join(f"{path} {i} {o}\n" for path, i, o in jobs)
    result = subprocess.run([str(driver)], input=text, capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    if len(lines) != len(jobs):
        raise RuntimeError(f"driver answered {len(lines)} of {len(jobs)} jobs")
    return lines


def _check_plan(document: dict[str, Any]) -> str:
    """``optcoll check-plan``'s verdict on a plan: ``correct``, or its first finding."""
    from optcoll.exceptions import OptCollError
    from optcoll.verify.mscclpp import verify_plan

    try:
        report = verify_plan(document)
    except OptCollError as err:
        return f"refused: {err}"
    if report.ok:
        return "correct" if report.judged else "not judged"
    kind, message = report.findings[0]
    return f"{kind}: {message}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mscclpp", type=Path, required=True, help="microsoft/mscclpp checkout")
    parser.add_argument("--json-include", type=Path, help="folder holding nlohmann/json.hpp")
    parser.add_argument("--specs", nargs="+", default=SPECS, help="topologies to export")
    parser.add_argument("--collectives", nargs="+", default=COLLECTIVES)
    parser.add_argument("--build-dir", type=Path, help="keep the build here (reused)")
    parser.add_argument("--details", action="store_true", help="print every non-OK verdict")
    args = parser.parse_args(argv)

    mscclpp = args.mscclpp.resolve()
    json_include = find_json_include(mscclpp, args.json_include)
    with tempfile.TemporaryDirectory() as tmp:
        build_dir = args.build_dir or Path(tmp) / "build"
        build_dir.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        driver = build_driver(mscclpp, json_include, build_dir)
        print(f"built {driver} in {time.perf_counter() - start:.1f} s")

        folder = Path(tmp) / "plans"
        folder.mkdir()
        cases: list[tuple[str, str, Path]] = []  # (family or label, collective, plan file)
        failures: list[tuple[str, str, str]] = []
        cpu = cpu_seconds()
        exports = [(s, c, None) for s in args.specs for c in args.collectives]
        exports += [(s, c, g) for s, g in GROUPS for c in args.collectives]
        for spec, collective, groups in exports:
            label = spec.split(":")[0] + (f" groups {groups}" if groups else "")
            try:
                for path in export_plans(spec, collective, groups, folder):
                    cases.append((label, collective, path))
            except Exception as err:  # noqa: BLE001 - reported, the run goes on
                failures.append((label, collective, str(err).splitlines()[0]))
        print(f"exported {len(cases)} plans in {cpu_seconds() - cpu:.1f} CPU s")
        for label, collective, message in failures:
            print(f"  export failed: {label} {collective}: {message}")
        for sub in SHIPPED:
            for path in sorted((mscclpp / sub).glob("*.json")):
                cases.append(("MSCCL++ shipped", path.stem, path))

        jobs, keys = [], []
        for label, collective, path in cases:
            plan = json.loads(path.read_text())
            for size in message_sizes(plan):
                jobs.append((path, *buffer_sizes(plan, size)))
                keys.append((label, collective, path, size))
        cpu = cpu_seconds()
        verdicts = run_driver(driver, jobs)
        print(
            f"MSCCL++'s loader judged {len(jobs)} (plan, size) jobs of {len(cases)} plans "
            f"in {cpu_seconds() - cpu:.1f} CPU s (children included)"
        )
        table: dict[tuple[str, str], Counter] = defaultdict(Counter)
        plans: dict[tuple[str, str], set] = defaultdict(set)
        bad = []
        for (label, collective, path, size), verdict in zip(keys, verdicts, strict=True):
            kind = verdict.split()[0]
            table[(label, collective)][kind] += 1
            plans[(label, collective)].add(path)
            if kind != "OK":
                bad.append((path.name, size, verdict))
        kinds = ("OK", "REJECT", "CRASH", "BOUNDS")
        rows = [
            [label, coll, len(plans[(label, coll)]), *(table[(label, coll)][k] for k in kinds)]
            for label, coll in table
        ]
        print_table(["family", "collective", "plans", "jobs OK", *kinds[1:]], rows)
        total = Counter()
        for counts in table.values():
            total.update(counts)
        print("total: " + ", ".join(f"{k} {total[k]}" for k in kinds))
        shown = bad if args.details else bad[:20]
        for name, size, verdict in shown:
            print(f"  {name} at {size} B: {verdict}")
        if len(shown) < len(bad):
            print(f"  ... {len(bad) - len(shown)} more (--details)")

        print("\nnegative control: mutations of our plans")
        rows = []
        for spec, collective, protocol in MUTATED:
            origin = next(
                (
                    p
                    for lab, c, p in cases
                    if lab == spec.split(":")[0]
                    and c == collective
                    and json.loads(p.read_text())["protocol"] == protocol
                    and not json.loads(p.read_text())["inplace"]
                ),
                None,
            )
            if origin is None:
                continue
            base = json.loads(origin.read_text())
            for name, doc, size in mutations(base):
                path = folder / f"mutant{len(rows)}.json"
                path.write_text(json.dumps(doc))
                message = size or message_sizes(base)[0]
                try:
                    io_sizes = buffer_sizes(doc, message)
                except KeyError:
                    io_sizes = (message, message)
                theirs = run_driver(driver, [(path, *io_sizes)])[0]
                ours = _check_plan(doc)
                rows.append([f"{spec} {collective} {protocol}", name, theirs[:70], ours[:60]])
        print_table(["plan", "mutation", "MSCCL++ loader", "optcoll check-plan"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
