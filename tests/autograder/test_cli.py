"""``ch11-grade --help``: the module docstring as argparse prints it, whole and in order."""

from __future__ import annotations

import re

import pytest
from ch11_autograder import cli


def _help(capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        cli.main(["--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_help_lists_each_command_once_then_says_what_each_does(capsys):
    text = _help(capsys)
    description = text[text.index("``ch11-grade``"):text.index("\npositional arguments:")]
    synopsis, _, prose = description.partition("\n\n``")
    commands = sorted(cli._parser()._subparsers._group_actions[0].choices)
    listed = re.findall(r"^    ch11-grade ([a-z-]+)", synopsis, flags=re.M)
    assert sorted(listed) == commands
    # The synopsis is one block: no line of it (a command, or its options' continuation) turns up in the prose.
    assert not re.search(r"^ +(ch11-grade |\[--)", prose, flags=re.M), prose
    described = re.findall(r"(?:^|\n\n)``([a-z-]+)", "``" + prose)
    assert sorted(set(described)) == commands
    # Every paragraph ends a sentence: none is cut off where another text was pasted in.
    assert all(paragraph.rstrip().endswith((".", ")", '"')) for paragraph in ("``" + prose).split("\n\n")
               if paragraph.strip()), prose
