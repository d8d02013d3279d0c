"""``optcoll topologies``: list the built-in topology families and their spec syntax."""

from __future__ import annotations

import argparse

from optcoll.cli._core import print_json

NAME = "topologies"
HELP = "list the built-in topology families and their spec syntax"
#: Shown at the end of ``optcoll topologies --help`` (the test suite parses each line).
EXAMPLES = """\
examples:
  optcoll topologies
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from optcoll.topologies import families

    entries = [
        {"name": f.name, "aliases": list(f.aliases), "usage": f.usage, "summary": f.summary}
        for f in families()
    ]
    if args.json:
        print_json(entries)
        return 0
    width = max(len(e["name"]) for e in entries)
    for e in entries:
        print(f"{e['name']:<{width}}  {e['summary']}")
        print(f"{'':<{width}}  usage: {e['usage']}")
    print("\nTOPO arguments accept any of these specs or a .json/.yaml topology file.")
    return 0
