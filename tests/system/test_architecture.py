"""Imports flow one way: the folders of optcoll are layers, no module imports a higher
layer, no import cycle, and formulations (the model layer) imports nothing of optcoll.

The import graph is read from the source with :mod:`ast`: every ``import`` and
``from ... import``, those inside functions and under ``if TYPE_CHECKING:`` included,
so a lazy or annotation-only import that closes a cycle counts as much as a top-level
one. A function-level import of a project module is allowed only in ``cli/`` (a
command's code on use) or when the imported module loads a heavy stack (PuLP, HiGHS,
SciPy, networkx, matplotlib, ...) at import, so that light commands stay light.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
        for node in ast.walk(tree):
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
    assert "optcoll.bounds.congestion" in graph["optcoll.bounds.cut_ratio"]  # in a function
    assert "optcoll.groups.concurrent" in graph["optcoll.groups.bounds"]  # TYPE_CHECKING
    assert "optcoll.topologies.registry" in graph["optcoll.topologies.dgx"]
    assert "formulations.congestion" in graph["optcoll.bounds.congestion"]
    assert "formulations.multicommodity" in graph["optcoll.groups.concurrent"]


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


#: The layers of optcoll, lowest first, and the lower folders each may import (besides
#: ``optcoll.exceptions`` and ``formulations``, which every folder may use): what each
#: folder imports today, no more, and the "may import" column of docs/architecture.md. A folder not
#: named here is a single module at the top of the package: it may import the folders
#: listed under ``may_import`` of ``ABOVE_ALL``.
LAYERS: dict[str, set[str]] = {
    "core": set(),
    "topologies": {"core"},
    "graph": {"core"},
    "lp": {"core"},
    # independent checkers: they share no code with the builders and writers they judge
    "verify": {"core"},
    "io": {"core", "topologies"},
    "bounds": {"core", "graph", "lp"},
    "schedules": {"core", "io", "graph", "lp", "bounds", "verify"},
    "groups": {"core", "graph", "lp", "bounds", "schedules", "verify"},
    "sim": {"core", "graph", "bounds", "schedules", "verify"},
    # the export workflow verifies what it writes (verify shares no code with the writers)
    "export": {"core", "topologies", "io", "bounds", "schedules", "groups", "sim", "verify"},
    "plot": {"core"},
}
ABOVE_ALL = {"studies", "cli", "__init__", "__main__"}  # may import every layer


def _folder(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "formulations" or parts[1:] == ["exceptions"]:
        return "base"
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_folder_is_a_layer():
    folders = {_folder(m) for m in _modules()} - {"base"}
    assert folders <= set(LAYERS) | ABOVE_ALL, folders - set(LAYERS) - ABOVE_ALL


def test_no_folder_imports_a_higher_layer():
    """Lazy and TYPE_CHECKING imports included: verify/ imports only core (its checks
    are independent of the code that builds schedules and writes programs)."""
    wrong = []
    for name, targets in _import_graph().items():
        folder = _folder(name)
        for target in targets:
            other = _folder(target)
            if other in ("base", folder) or folder in ABOVE_ALL or folder == "base":
                continue
            if other not in LAYERS.get(folder, set()):
                wrong.append(f"{name} -> {target}")
    assert wrong == []


def _heavy_at_import() -> set[str]:
    """The project modules whose top-level imports load a heavy stack, transitively."""
    modules = _modules()
    direct: dict[str, set[str]] = {}
    heavy: set[str] = set()
    for name, path in modules.items():
        direct[name] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
            else:
                continue
            for target in targets:
                if target.split(".")[0] in HEAVY:
                    heavy.add(name)
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    direct[name].add(target)
    grew = True
    while grew:
        grew = False
        for name, targets in direct.items():
            if name not in heavy and targets & heavy:
                heavy.add(name)
                grew = True
    return heavy


def test_function_level_imports_only_for_heavy_modules():
    """Outside cli/, a project module is imported inside a function only to keep a heavy
    stack (PuLP, HiGHS, SciPy, networkx, matplotlib, ...) off the import path."""
    heavy = _heavy_at_import()
    assert "optcoll.bounds.congestion" in heavy and "optcoll.core.topology" not in heavy
    lazy = []
    for name, path in _modules().items():
        if name.startswith("optcoll.cli"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level or id(node) in top:
                continue
            if not node.module or node.module.split(".")[0] not in PACKAGES:
                continue
            if node.module == "optcoll" and [a.name for a in node.names] == ["__version__"]:
                continue
            in_type_block = any(
                isinstance(block, ast.If)
                and ast.unparse(block.test) == "TYPE_CHECKING"
                and node in ast.walk(block)
                for block in tree.body
            )
            if not in_type_block and node.module not in heavy:
                lazy.append(f"{name}:{node.lineno} {node.module}")
    assert lazy == []


def _subpackage(module: str) -> str:
    """``formulations``, ``optcoll`` (its top-level modules) or ``optcoll.<folder>``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "optcoll" and len(parts) > 2 else parts[0]


def _private_imports(sources: dict[str, str]) -> list[str]:
    """Every import, at any depth of the code, that reaches a ``_name`` (a name or a module
    on the path) of another subpackage: ``from m import _f``, ``from p import _m``,
    ``from p._m import f``, ``import p._m``, relative forms resolved. ``sources`` maps a
    module name (``optcoll.a.b``; a package as ``optcoll.a.__init__``) to its source."""

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    found = []
    for module, source in sources.items():
        package = module.split(".")[:-1]
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                pairs = [(alias.name, "") for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package[: len(package) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                pairs = [(base, alias.name) for alias in node.names]
            else:
                continue
            for target, name in pairs:
                if target.split(".")[0] not in PACKAGES:
                    continue
                path = target.split(".") + ([name] if name else [])
                if not any(private(part) for part in path):
                    continue
                if _subpackage(target + ".x") != _subpackage(module):
                    found.append(f"{module}:{node.lineno} {'.'.join(path)}")
    return found


def test_the_private_import_finder_sees_every_form():
    sources = {
        "optcoll.a.m": "from optcoll.b.n import _f, g\n",
        "optcoll.a.p": "def f():\n    import optcoll.b._n\n    from optcoll.b import _n\n",
        "optcoll.a.q": "from optcoll.b._n import g\nfrom optcoll.a.m import _h\n",
        "optcoll.a.__init__": "from ..b.n import _f\nfrom .m import _g\n",
        "optcoll.c": "from optcoll import _v\nfrom optcoll.b.n import __version__\n",
    }
    assert _private_imports(sources) == [
        "optcoll.a.m:1 optcoll.b.n._f",
        "optcoll.a.p:2 optcoll.b._n",
        "optcoll.a.p:3 optcoll.b._n",
        "optcoll.a.q:1 optcoll.b._n.g",
        "optcoll.a.__init__:1 optcoll.b.n._f",
    ]


def test_no_private_name_is_imported_across_subpackages():
    """Shared internals have real names: a checked function's unchecked core is ``*_core``
    (documented "arguments already checked", out of ``__all__``), never a ``_name``."""
    sources = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            sources[name] = path.read_text(encoding="utf-8")
    assert _private_imports(sources) == []


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def test_the_architecture_page_states_the_layers():
    """Its folder table's "may import" column is ``LAYERS`` (``—``: nothing)."""
    stated = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("/`"):
            folder = cells[0].strip("`/")
            stated[folder] = set() if cells[2] == "—" else set(cells[2].split(", "))
    layered = {folder: targets for folder, targets in stated.items() if folder in LAYERS}
    assert layered == LAYERS
    assert {folder for folder, targets in stated.items() if targets == {"everything"}} == (
        ABOVE_ALL - {"__init__", "__main__"}
    )


def test_the_architecture_page_lists_every_module():
    """Every module of optcoll and formulations by its path (optcoll's relative to the
    package); a package's ``__init__.py`` without code by its folder."""
    page = ARCHITECTURE.read_text(encoding="utf-8")
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT / "optcoll" if package == "optcoll" else ROOT)
            if path.name == "__init__.py" and not path.read_text(encoding="utf-8").strip():
                name = f"`{package}/{relative.parent}/`".replace("/./", "/")
            else:
                name = f"`{relative.as_posix()}`"
            if name not in page:
                missing.append(name)
    assert missing == []
