"""mkdocs hook: the page ``cli-help.md`` gets the ``--help`` of every command, written by
the argparse parsers themselves at build time, so the reference cannot drift."""

from __future__ import annotations

import argparse
from typing import Any

MARKER = "<!-- optcoll --help of every command -->"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_help_markdown() -> str:
    """Markdown of ``optcoll --help`` and of every ``optcoll COMMAND [ACTION] --help``."""
    from optcoll.cli import build_parser

    parser = build_parser()
    parts = ["## optcoll", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in _subcommands(parser).items():
        parts += [f"## optcoll {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
        for action, nested in _subcommands(sub).items():
            parts += [f"### optcoll {name} {action}", "", "```text"]
            parts += [nested.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_help_markdown())
    return markdown
