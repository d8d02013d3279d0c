"""Adversarial inputs for every command: a clean answer or one line of error, never worse.

Every command runs on every class of bad or unusual input (the corpus below: deep
nesting, alias bombs, huge integers and exponents, lone surrogates, control
characters in ids, FIFOs, devices, oversized specs, 7-decimal bandwidths, malformed
schedules) and must end within its time bound with

* exit 0 and a result that checks out (a written schedule verifies exactly), or
* exit 1 for a negative answer (``verify``: invalid schedule; ``crosscheck``:
  disagreement), or
* exit 2 and exactly one line on stderr,

and never a traceback, a hang, a partially written file or an overwritten input.
Commands run in-process through :func:`optcoll.cli.main` under an alarm; inputs
that could take the whole process down (``/dev/zero``, interrupted writes, two
concurrent runs) run in subprocesses with a memory limit. Hypothesis generates
topologies of random structure on top.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optcoll.cli import main
from optcoll.exceptions import OutputError
from optcoll.io import load_schedule, load_topology
from optcoll.verify.schedule import verify_schedule

#: CPU seconds one in-process command may use before it counts as a hang (CPU time,
#: not wall time: a loaded machine slows a command down without making it loop).
RUN_SECONDS = 60

#: Wall seconds before a command that uses no CPU (blocked, e.g. on a FIFO) counts as hung.
BLOCKED_SECONDS = 600


def _topology(links, name="t", switches=()):
    ids = sorted({a for a, _, _ in links} | {b for _, b, _ in links})
    return {
        "name": name,
        "nodes": [{"id": i, "type": "switch" if i in switches else "compute"} for i in ids],
        "links": [{"src": a, "dst": b, "bandwidth": bw} for a, b, bw in links],
    }


_TRIANGLE = [
    ("a", "b", 1),
    ("b", "a", 1),
    ("b", "c", 2),
    ("c", "b", 2),
    ("a", "c", 1),
    ("c", "a", 1),
]
_SEVEN_DECIMALS = [
    (f"g{i}", f"g{j}", float(f"{10 + 7 * i + 3 * j}.{(1234567 * (i + 1) * (j + 2)) % 10**7:07d}"))
    for i in range(4)
    for j in range(4)
    if i != j
]
_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)

#: name -> file text (written under that name) of each input class.
FILE_CLASSES: dict[str, str] = {
    "ok.json": json.dumps(_topology(_TRIANGLE)),
    "ok.yaml": "name: t\nnodes: [{id: a}, {id: b}]\n"
    "links: [{src: a, dst: b, bandwidth: 1.5}, {src: b, dst: a, bandwidth: 3/2}]\n",
    "seven-decimals.json": json.dumps(_topology(_SEVEN_DECIMALS, "seven")),
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "deep.yaml": "[" * 100_000 + "]" * 100_000,
    "deep-map.yaml": "a:\n" + "".join(" " * i + "a:\n" for i in range(1, 3000)),
    "bomb.yaml": _BOMB,
    "big-integer.json": json.dumps(_topology([("a", "b", 1), ("b", "a", 1)])).replace(
        '"bandwidth": 1}, {"src": "b"', '"bandwidth": ' + "9" * 5000 + '}, {"src": "b"'
    ),
    "surrogate.json": json.dumps(_topology(_TRIANGLE)).replace('"a"', '"a\\ud800"'),
    "newline-id.json": json.dumps(_topology(_TRIANGLE)).replace('"a"', '"a\\nb"'),
    "tiny.json": json.dumps(_topology([("a", "b", 1e-320), ("b", "a", 1)])),
    "huge-exponent.json": json.dumps(_topology([("a", "b", "1e-99999999"), ("b", "a", 1)])),
    "huge-exponent.yaml": "name: t\nnodes: [{id: a}, {id: b}]\n"
    "links: [{src: a, dst: b, bandwidth: 1e-99999999}, {src: b, dst: a, bandwidth: 1.0e+99999999}]\n",
    "empty.json": "",
    "not-utf8.json": "\udcff\udcfe",  # written with surrogateescape: bytes ff fe
    "list.json": "[1, 2, 3]",
    "no-links.json": json.dumps({"name": "t", "nodes": [{"id": "a"}, {"id": "b"}], "links": []}),
}

#: Built-in specs and names that are not readable files.
SPEC_CLASSES = [
    "torus:100000x100000",
    "hypercube:40",
    "dgx-a100:1000000",
    "random:n=10000",
    "ring:" + "9" * 5000,
    "x" * 300,
    "folder",
    "missing.json",
    "fifo.json",
]


def _corpus(folder: Path) -> None:
    for name, text in FILE_CLASSES.items():
        (folder / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    (folder / "folder").mkdir()
    os.mkfifo(folder / "fifo.json")
    assert main(["trees", str(folder / "ok.json"), "-o", str(folder / "schedule.json")]) == 0
    good = json.loads((folder / "schedule.json").read_text())
    bad = {
        "stats-list": dict(good, stats=[1, 2]),
        "root-list": dict(good, collective="broadcast", root=["a"]),
        "k-text": dict(good, k="x"),
        "edges-text": dict(good, trees=[{"root": "a", "chunks": 1, "edges": "zz"}]),
        "huge-exponent": dict(good, time_factor="1e-99999999"),
        "huge-k": dict(good, k=10**30),
    }
    for name, data in bad.items():
        (folder / f"schedule-{name}.json").write_text(json.dumps(data))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    _corpus(folder)
    return folder


def _commands(topo: str, out: Path, schedule: str) -> dict[str, list[str]]:
    return {
        "show": ["show", topo],
        "bound": ["bound", topo],
        "trees": ["trees", topo, "-o", str(out / "s.json")],
        "trees-k1": ["trees", topo, "-k", "1"],
        "crosscheck": ["crosscheck", topo],
        "compare": ["compare", topo, "--sizes", "1K", "1M"],
        "export": ["export", topo, "-o", str(out / "e.xml")],
        "plot": ["plot", topo, "-o", str(out / "p.svg")],
        "lp-solve": ["lp", "solve", topo],
        "lp-export": ["lp", "export", topo, "-o", str(out / "m.lp")],
        "solve": ["solve", topo, "-o", str(out / "solve")],
        "convert": ["convert", topo, str(out / "c.yaml")],
        "verify": ["verify", topo, schedule],
        "sweep": ["sweep", topo, "-o", str(out / "t.csv"), "--workers", "1"],
        "resilience": ["resilience", topo, "--random", "1", "--workers", "1"],
        "simulate": ["simulate", topo, schedule, "--sizes", "1K", "1M"],
        "plan": ["plan", topo, "--sizes", "1K", "1M"],
    }


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(
        f"used {RUN_SECONDS} CPU s"
        if signum == signal.SIGPROF
        else f"ran {BLOCKED_SECONDS} s (wall clock)"
    )


def run(argv: list[str], capsys) -> tuple[int, str, str, float]:
    """``optcoll argv`` in-process under two alarms, :data:`RUN_SECONDS` of the process's
    CPU time (``ITIMER_PROF``) and :data:`BLOCKED_SECONDS` of wall time: (status, stdout,
    stderr, seconds)."""
    capsys.readouterr()
    previous = {sig: signal.signal(sig, _alarm) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, RUN_SECONDS)
    signal.alarm(BLOCKED_SECONDS)
    started = time.perf_counter()
    try:
        try:
            status = main(argv)
        except SystemExit as exit_:  # argparse
            status = exit_.code if isinstance(exit_.code, int) else 2
        except _Hang as hang:
            pytest.fail(f"optcoll {' '.join(argv)[:200]} {hang}: a hang")
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.alarm(0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    out, err = capsys.readouterr()
    return status, out, err, time.perf_counter() - started


def test_run_fails_a_command_that_spins_or_blocks(capsys, monkeypatch):
    module = sys.modules[__name__]

    def spin(argv):
        while True:
            pass

    monkeypatch.setattr(module, "RUN_SECONDS", 0.2)
    monkeypatch.setattr(module, "main", spin)
    with pytest.raises(pytest.fail.Exception, match="used 0.2 CPU s: a hang"):
        run(["spin"], capsys)
    monkeypatch.setattr(module, "BLOCKED_SECONDS", 1)
    monkeypatch.setattr(module, "main", lambda argv: time.sleep(30))
    with pytest.raises(pytest.fail.Exception, match=r"ran 1 s \(wall clock\): a hang"):
        run(["sleep"], capsys)


def check_outcome(argv, status, out, err, out_dir: Path) -> None:
    """The contract: 0 with checked output, 1 negative, or 2 with one error line."""
    shown = " ".join(argv)[:200]
    assert "Traceback" not in err, f"optcoll {shown}: {err[-500:]}"
    assert status in (0, 1, 2), f"optcoll {shown}: exit {status}"
    if status == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"optcoll {shown}: {len(lines)} error lines: {err[:500]!r}"
        assert "error" in lines[0]
    if status == 1:
        assert argv[0] in ("verify", "crosscheck"), f"optcoll {shown}: exit 1"
    leftovers = [p.name for p in out_dir.rglob(".*.tmp")]
    assert not leftovers, f"optcoll {shown} left temporary files {leftovers}"
    schedule = out_dir / "s.json"
    if status == 0 and schedule.exists():  # a written schedule must verify exactly
        topology = load_topology(argv[1])
        result = verify_schedule(topology, load_schedule(schedule))
        assert result.valid, f"optcoll {shown}: written schedule invalid: {result.reason}"


_TOPOS = [*FILE_CLASSES, *SPEC_CLASSES]
_COMMANDS = list(_commands("T", Path("o"), "S"))


@pytest.mark.filterwarnings("error::RuntimeWarning")  # a warning is a line the user sees
@pytest.mark.parametrize("command", _COMMANDS)
@pytest.mark.parametrize("topo", _TOPOS)
def test_every_command_on_every_input_class(corpus, tmp_path, capsys, topo, command):
    in_corpus = topo in FILE_CLASSES or topo in ("folder", "missing.json", "fifo.json")
    source = str(corpus / topo) if in_corpus else topo
    before = {p: p.read_bytes() for p in corpus.iterdir() if p.is_file() and p.suffix != ""}
    argv = _commands(source, tmp_path, str(corpus / "schedule.json"))[command]
    status, out, err, _ = run(argv, capsys)
    check_outcome(argv, status, out, err, tmp_path)
    after = {p: p.read_bytes() for p in before}
    assert after == before, "an input file changed"


@pytest.mark.parametrize(
    "schedule", ["stats-list", "root-list", "k-text", "edges-text", "huge-exponent", "huge-k"]
)
@pytest.mark.parametrize("command", ["verify", "plot", "export"])
def test_malformed_schedules(corpus, tmp_path, capsys, schedule, command):
    path = str(corpus / f"schedule-{schedule}.json")
    topo = str(corpus / "ok.json")
    argv = {
        "verify": ["verify", topo, path],
        "plot": ["plot", topo, "--schedule", path, "-o", str(tmp_path / "p.png")],
        "export": ["export", path, "--topology", topo, "-o", str(tmp_path / "e.xml")],
    }[command]
    status, out, err, _ = run(argv, capsys)
    check_outcome(argv, status, out, err, tmp_path)


@pytest.mark.parametrize(
    "argv",
    [
        ["plot", "ring:4", "-o", "p.bmp"],
        ["plot", "ring:4", "-o", "p.png", "--dpi", "0"],
        ["plot", "ring:4", "-o", "p.png", "--dpi", "100000"],
        ["lp", "solve", "ring:4", "--time-limit", "-1"],
        ["lp", "solve", "ring:4", "--time-limit", "nan"],
        ["compare", "ring:4", "--latency", "nan"],
        ["compare", "ring:4", "--latency", "1e-99999999"],
        ["crosscheck", "dgx-a100:4", "--methods", "brute-force"],
        ["trees", "ring:4", "-k", "0"],
        ["trees", "ring:4", "-k", "-3"],
        ["export", "ring:4", "-k", "100000000", "-o", "big.xml"],
        ["torus:4x4"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_bad_arguments(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    status, out, err, seconds = run(argv, capsys)
    check_outcome(argv, status, out, err, tmp_path)
    assert status == 2, f"optcoll {' '.join(argv)} accepted: {out[:300]}"
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".bmp", ".png", ".xml")]


_WRITERS = {
    "trees": (["trees", "TOPO", "-o", "OUT"], ".json"),
    "plot": (["plot", "TOPO", "-o", "OUT"], ".svg"),
    "lp-export": (["lp", "export", "TOPO", "-o", "OUT"], ".lp"),
    "export": (["export", "TOPO", "--format", "json", "-o", "OUT"], ".json"),
    "convert": (["convert", "TOPO", "OUT"], ".json"),
    "compare": (["compare", "TOPO", "--plot", "OUT"], ".svg"),
}


@pytest.mark.parametrize("command", list(_WRITERS))
def test_no_writer_overwrites_its_input_or_an_existing_file(tmp_path, capsys, command):
    template, suffix = _WRITERS[command]
    topo = tmp_path / "topo.json"
    topo.write_text(FILE_CLASSES["ok.json"])
    original = topo.read_bytes()
    for out, extra in ((topo, []), (topo, ["--force"])):  # the input itself: never
        argv = [str(topo) if a == "TOPO" else str(out) if a == "OUT" else a for a in template]
        status, _, err, _ = run(argv + extra, capsys)
        check_outcome(argv, status, "", err, tmp_path)
        assert status == 2 and ("input" in err or "written as" in err), err
        assert topo.read_bytes() == original
    existing = tmp_path / f"existing{suffix}"
    existing.write_text("keep me")
    argv = [str(topo) if a == "TOPO" else str(existing) if a == "OUT" else a for a in template]
    status, _, err, _ = run(argv, capsys)  # an existing file: only with --force
    assert status == 2 and "--force" in err, err
    assert existing.read_text() == "keep me"
    status, _, err, _ = run(argv + ["--force"], capsys)
    assert status == 0, err
    assert existing.read_text() != "keep me"


@pytest.mark.slow
def test_crosscheck_of_200_random_nodes_ends_with_an_answer(capsys):
    argv = ["crosscheck", "random:n=200"]
    status, out, err, seconds = run(argv, capsys)
    check_outcome(argv, status, out, err, Path("."))
    assert status == 0 and "all methods agree" in out


def test_unwritable_places_are_one_line(tmp_path, capsys):
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file, not a folder")
    for argv in (
        ["trees", "ring:4", "-o", str(blocker / "s.json")],
        ["plot", "ring:4", "-o", str(blocker / "p.svg")],
        ["lp", "export", "ring:4", "-o", str(blocker / "m.lp")],
    ):
        status, out, err, _ = run(argv, capsys)
        check_outcome(argv, status, out, err, tmp_path)
        assert status == 2 and "cannot write" in err, err


def test_read_only_folder_is_one_line(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        for argv in (
            ["trees", "ring:4", "-o", str(folder / "s.json")],
            ["plot", "ring:4", "-o", str(folder / "p.svg")],
            ["solve", "ring:4", "-o", str(folder / "out")],
        ):
            status, out, err, _ = run(argv, capsys)
            check_outcome(argv, status, out, err, tmp_path)
            assert status == 2 and "cannot write" in err, err
    finally:
        folder.chmod(0o755)


def test_svg_pdf_png_are_deterministic_bytes(tmp_path, capsys):
    for suffix in ("svg", "pdf", "png"):
        outputs = [tmp_path / f"{i}.{suffix}" for i in range(2)]
        for path in outputs:
            assert run(["plot", "dgx-a100:2", "--cut", "-o", str(path)], capsys)[0] == 0
        assert outputs[0].read_bytes() == outputs[1].read_bytes(), suffix


# --- subprocesses: inputs that could take the process down --------------------------


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def optcoll(*argv: str, timeout: float = 120, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "optcoll", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limit_memory,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("command", ["show", "verify"])
def test_device_files_are_refused(tmp_path, command):
    argv = ["show", "/dev/zero"] if command == "show" else ["verify", "ring:4", "/dev/zero"]
    done = optcoll(*argv, timeout=60)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.slow
def test_interrupted_writes_leave_the_old_file_or_the_new_one(tmp_path):
    target = tmp_path / "s.json"
    assert optcoll("trees", "dgx-a100:4", "-o", str(target)).returncode == 0
    old = target.read_bytes()
    for delay in (0.5, 1.0, 1.5, 2.0, 3.0):
        process = subprocess.Popen(
            [sys.executable, "-m", "optcoll", "trees", "dgx-a100:4", "-k", "2", "-o", str(target)]
            + ["--force"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        process.kill()
        process.wait()
        now = target.read_bytes()
        assert now == old or json.loads(now)["k"] == 2, "a truncated schedule"
        json.loads(now)
        if sys.platform == "linux":  # the bytes had no name until complete
            assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


@pytest.mark.parametrize("anonymous", [True, False])
def test_write_output_with_and_without_anonymous_files(tmp_path, monkeypatch, anonymous):
    from optcoll.core import output

    if not anonymous:
        monkeypatch.delattr(output.os, "O_TMPFILE", raising=False)
    elif not hasattr(output.os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE on this system")
    target = tmp_path / "deep" / "out.json"
    output.write_output(target, "one\n")
    with pytest.raises(OutputError, match="exists; pass force=True"):
        output.write_output(target, "two\n")
    output.write_output(target, b"two\n", force=True)
    assert target.read_bytes() == b"two\n" and target.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]
    if anonymous and sys.platform == "linux":
        assert output._write_anonymous(tmp_path / "x", b"x", force=False)  # the path used


@pytest.mark.slow
def test_concurrent_solves_into_one_folder_do_not_replace_each_other(tmp_path):
    argv = [sys.executable, "-m", "optcoll", "solve", "mi250:2", "-o", str(tmp_path / "out")]
    runs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in runs]
    statuses = sorted(status for status, _ in results)
    assert statuses == [0, 2], results
    failed = next(err for status, err in results if status == 2)
    assert len(failed.strip().splitlines()) == 1 and ("exists" in failed or "appeared" in failed)
    schedule = next((tmp_path / "out").glob("*.schedule.json"))
    assert verify_schedule(load_topology("mi250:2"), load_schedule(schedule)).valid


# --- hypothesis: topologies of random structure --------------------------------------

_IDS = st.sampled_from(["a", "b", "c", "d", "e", "s"])
_BANDWIDTHS = st.one_of(
    st.integers(-2, 10**6),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.decimals(allow_nan=False, places=7, min_value=0, max_value=1000).map(str),
    st.sampled_from(["3/2", "0/1", "1/0", "x", "", None, [], {}]),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    links=st.lists(st.tuples(_IDS, _IDS, _BANDWIDTHS), min_size=0, max_size=12),
    switch=st.booleans(),
    command=st.sampled_from(["show", "bound", "trees", "trees-k1", "verify", "lp-solve"]),
)
def test_random_structures(tmp_path_factory, capsys, links, switch, command):
    folder = tmp_path_factory.mktemp("structure")
    data = _topology(links, switches={"s"} if switch else ())
    topo = folder / "t.json"
    topo.write_text(json.dumps(data))
    with contextlib.suppress(Exception):
        main(["trees", str(topo), "-o", str(folder / "schedule.json")])
    capsys.readouterr()
    schedule = folder / "schedule.json"
    if not schedule.exists():
        schedule.write_text(FILE_CLASSES["list.json"])
    argv = _commands(str(topo), folder, str(schedule))[command]
    status, out, err, _ = run(argv, capsys)
    check_outcome(argv, status, out, err, folder)
