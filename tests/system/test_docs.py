"""The README and the docs site: examples run, references are complete, the site builds.

Every ```python block of README.md and of docs/*.md is run as a doctest (each block in
a fresh namespace, like a user pasting it), so the documented API cannot rot. The
command guide (docs/commands.md) is checked against the real argument parser: every
command and every option it defines must be documented. The README's quickstart is
exactly two command lines and the second is the test command of .ci/run. The site
builds with ``mkdocs build --strict`` (every nav page exists, no broken link).
"""

from __future__ import annotations

import argparse
import doctest
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from optcoll.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
COMMANDS_PAGE = ROOT / "docs" / "commands.md"


def _blocks() -> list[tuple[Path, int, str]]:
    found = []
    for path in [README, *PAGES]:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            found.append((path, text[: match.start()].count("\n") + 2, match.group(1)))
    return found


BLOCKS = _blocks()


def test_docs_have_python_examples():
    assert sum(path == README for path, _, _ in BLOCKS) >= 1
    assert len(BLOCKS) >= 8
    assert all(">>> " in block for _, _, block in BLOCKS)


@pytest.mark.parametrize(
    "path,line,block", BLOCKS, ids=[f"{p.name}:{line}" for p, line, _ in BLOCKS]
)
def test_python_block_runs(path, line, block):
    name = f"{path.name}:{line}"
    test = doctest.DocTestParser().get_doctest(block, {}, name, str(path), line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    failed, tried = runner.summarize(verbose=False)
    assert tried > 0
    assert failed == 0, f"{failed} of {tried} examples at {name} failed (see above)"


def test_readme_is_short_and_its_quickstart_is_the_ci_command():
    text = README.read_text(encoding="utf-8")
    assert 80 <= text.count("\n") <= 200
    quickstart = text[text.index("## Quickstart") :]
    block = re.search(r"```bash\n(.*?)```", quickstart, re.S).group(1)
    lines = block.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("python3 -m venv .venv && ") for line in lines)
    assert lines[0].endswith("pip install . && optcoll solve dgx-a100:2")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert lines[1].endswith(ci) and ci == 'pip install -e ".[dev]" && python -m pytest'
    for command in _subcommands(build_parser()):  # the command table names every command
        assert f"| `{command}` |" in text, command


def _subcommands(parser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands() -> list[tuple[str, object]]:
    """(name, parser) of every command and nested action, e.g. ("lp solve", ...)."""
    found = []
    for name, sub in _subcommands(build_parser()).items():
        nested = _subcommands(sub)
        if nested:
            found += [(f"{name} {action}", p) for action, p in nested.items()]
        else:
            found.append((name, sub))
    return found


@pytest.mark.parametrize("name,parser", _commands(), ids=[n for n, _ in _commands()])
def test_command_guide_documents_every_command_and_option(name, parser):
    section = COMMANDS_PAGE.read_text(encoding="utf-8")
    command = name.split()[0]
    assert f"## `optcoll {command}" in section, f"no entry for optcoll {command} in commands.md"
    entry = section[section.index(f"## `optcoll {command}") :]
    entry = entry[: entry.index("\n## ", 1)] if "\n## " in entry[1:] else entry
    for action in parser._actions:
        for flag in action.option_strings:
            if flag in ("-h", "--help"):
                continue
            assert re.search(rf"`[^`]*{re.escape(flag)}\b", entry), (
                f"optcoll {name}: option {flag} is not documented in docs/commands.md"
            )


def _nav_pages(entries) -> list[str]:
    pages = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_nav_page_exists_and_every_relative_link_resolves():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = ROOT / config["docs_dir"]
    nav = _nav_pages(config["nav"])
    assert "index.md" in nav and "architecture.md" in nav
    assert [page for page in nav if not (docs / page).is_file()] == []
    for path in [README, *PAGES]:
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name}: broken link {target}"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mkdocs") is None, reason="the [docs] extra is not installed")
def test_site_builds_strictly(tmp_path):
    """``mkdocs build --strict`` offline: every page, the generated --help and API pages."""
    env_path = f"{ROOT}"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cli = (tmp_path / "site" / "cli-help" / "index.html").read_text(encoding="utf-8")
    assert "optcoll export" in cli and "--placement" in cli  # generated from the parsers
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "from_networkx" in api and "optimal_cut_ratio" in api
