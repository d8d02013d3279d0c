"""The README is the manual: its examples must run and its CLI reference must be complete.

Every ```python block of README.md is run as a doctest (each block in a fresh
namespace, like a user pasting it), so the documented API cannot rot. The CLI
reference is checked against the real argument parser: every command and every
option it defines must be documented.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

from optcoll.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```python\n(.*?)^```", TEXT, re.S | re.M)


def _line_of(block: str) -> int:
    return TEXT[: TEXT.index(block)].count("\n") + 1


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 5
    assert all(">>> " in block for block in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"line{_line_of(b)}" for b in BLOCKS])
def test_readme_python_block_runs(block):
    line = _line_of(block)
    test = doctest.DocTestParser().get_doctest(block, {}, f"README.md:{line}", str(README), line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    failed, tried = runner.summarize(verbose=False)
    assert tried > 0
    assert failed == 0, f"{failed} of {tried} README examples at line {line} failed (see above)"


def _subcommands(parser) -> dict:
    import argparse

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
def test_cli_reference_documents_every_command_and_option(name, parser):
    section = TEXT[TEXT.index("## CLI reference") : TEXT.index("## Topologies")]
    command = name.split()[0]
    assert f"### `optcoll {command}" in section, f"no CLI reference entry for optcoll {command}"
    entry = section[section.index(f"### `optcoll {command}") :]
    entry = entry[: entry.index("\n### ", 1)] if "\n### " in entry[1:] else entry
    for action in parser._actions:
        for flag in action.option_strings:
            if flag in ("-h", "--help"):
                continue
            assert re.search(rf"`[^`]*{re.escape(flag)}\b", entry), (
                f"optcoll {name}: option {flag} is not documented in the README"
            )
