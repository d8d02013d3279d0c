"""Imports flow one way: no cycle among the modules of optcoll and formulations, and the
model layer (formulations) uses only the foundation of optcoll.

The import graph is read from the source with :mod:`ast` (every ``import`` and
``from ... import``, those inside functions included), so a lazy import that closes a
cycle counts as much as a top-level one. Imports under ``if TYPE_CHECKING:`` are never
executed and only name types for annotations, so they are left out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("optcoll", "formulations")


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (a package's own submodules excluded
    for the package's ``__init__``, and a submodule's parent packages not counted)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                found = resolve(target)
                if found and found != name and not name.startswith(found + "."):
                    graph[name].add(found)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_lazy_and_package_imports():
    graph = _import_graph()
    assert (
        "optcoll.schedules.packing" in graph["optcoll.schedules.collectives"]
    )  # imported inside a function
    assert "optcoll.topologies.registry" in graph["optcoll.topologies.dgx"]
    assert "optcoll.bounds.congestion" in graph["optcoll.bounds.cut_ratio"]
    assert "formulations.congestion" in graph["optcoll.bounds.congestion"]
    assert "formulations.multicommodity" in graph["optcoll.groups.concurrent"]
    assert (
        "optcoll.groups.bounds" not in graph["optcoll.groups.concurrent"]
    )  # under TYPE_CHECKING only


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_among_modules():
    assert _cycles(_import_graph()) == []


def test_formulations_imports_nothing_of_optcoll():
    """The model layer takes plain data; exact reconstruction, pricing and graph
    checks live in optcoll, which calls it (imports under TYPE_CHECKING included)."""
    above = []
    for name, path in _modules().items():
        if not name.startswith("formulations"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
            else:
                continue
            above += [(name, t) for t in targets if t.split(".")[0] == "optcoll"]
    assert above == []


HEAVY = ("pulp", "highspy", "scipy", "networkx", "matplotlib", "polars", "dask", "pandas")


@pytest.mark.parametrize("command", [["bound", "dgx-a100:2"], ["show", "dgx-a100:2"]])
def test_small_commands_do_not_import_the_heavy_stacks(command):
    code = (
        "import sys, io, contextlib\n"
        "from optcoll.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({command!r}) == 0\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr
