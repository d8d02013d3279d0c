"""Every ``optcoll COMMAND --help`` ends with one or two examples, and every example parses."""

from __future__ import annotations

import importlib
import shlex

import pytest

from optcoll.cli import COMMANDS, build_parser


@pytest.mark.parametrize("module_name", COMMANDS)
def test_help_ends_with_examples_that_parse(module_name, capsys):
    command = importlib.import_module(f"optcoll.cli.{module_name}")
    lines = command.EXAMPLES.strip().splitlines()
    assert lines[0] == "examples:" and 1 <= len(lines) - 1 <= 2
    parser = build_parser()
    commands = []
    for line in lines[1:]:
        argv = shlex.split(line)
        assert argv[0] == "optcoll", line
        commands.append(parser.parse_args(argv[1:]).command)  # a usage error exits with 2
    assert command.NAME in commands  # an example of this command (after what makes its input)
    with pytest.raises(SystemExit):
        parser.parse_args([command.NAME, "--help"])
    assert capsys.readouterr().out.rstrip().endswith(lines[-1].strip())
