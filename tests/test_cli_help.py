"""Every command's ``--help``, as a user reads it in an 80-column terminal."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from assay.cli import app


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under ``group`` (Typer's click, which it may carry as its own copy)."""
    yield path, group
    if hasattr(group, "commands"):
        for name, command in group.commands.items():
            yield from _commands(command, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) or "assay"
                                                        for p, _ in COMMANDS])
def test_help_shows_every_option_whole_and_every_bracket_of_its_text(path, command):
    """Options named in full (a name cut to ``--allow-incomple…`` cannot be typed) and help
    text as written: ``[default: 8]`` in a help string is text, not markup to swallow."""
    shown = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"},
                               terminal_width=80)
    assert shown.exit_code == 0, shown.output
    assert "…" not in shown.output
    flat = " ".join(shown.output.split())
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        for name in [*param.opts, *param.secondary_opts]:
            if name.startswith("-"):
                assert re.search(rf"(^|[\s,/]){re.escape(name)}([\s,=]|$)", shown.output), \
                    f"{' '.join(path)} --help does not show {name} whole"
        for default in re.findall(r"\[default: [^\]]+\]", getattr(param, "help", None) or ""):
            assert " ".join(default.split()) in flat, \
                f"{' '.join(path)} --help lost {default!r} from {param.name}'s help"


def test_the_command_list_gives_each_command_one_line():
    """A command's summary is not broken where its docstring's source line ended."""
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}, terminal_width=200)
    listed = shown.output.split("Commands:", 1)[1].splitlines()[1:]
    names = {path[0] for path, _ in COMMANDS if len(path) == 1}
    for line in listed:
        if line.strip():
            assert line.split()[0] in names, f"a summary ran onto a line of its own: {line!r}"
