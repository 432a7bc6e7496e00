"""Hostile suite files, judge answers and agent modules: each fails fast with a located error."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

from typer.testing import CliRunner

from assay.cli import app

runner = CliRunner()


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def cli(*args: str) -> tuple[int, str]:
    """Run the assay CLI in-process; the exit code and everything it printed."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def run_cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    return cli("run", *args, "--store", f"sqlite:///{tmp_path / 'runs.db'}")


# -- YAML alias bombs ------------------------------------------------------------------------

LOLS = ", ".join(['"lol"'] * 9)
BOMB = "\n".join(
    [f"a: &a [{LOLS}]"]
    + [f"{b}: &{b} [{', '.join(['*' + a] * 9)}]"
       for a, b in zip("abcdefgh", "bcdefghi", strict=True)]
    + ["evalcases: [{id: x, input: *i}]", ""])


def test_alias_bomb_is_refused_fast_by_validate_and_run(tmp_path: Path) -> None:
    suite = tmp_path / "bomb.yaml"
    suite.write_text(BOMB)
    assert len(BOMB) < 600
    for command in (("validate", str(suite)), ("run", str(suite))):
        started = time.perf_counter()
        code, out = (cli(*command) if command[0] == "validate"
                     else run_cli(tmp_path, *command[1:]))
        elapsed = time.perf_counter() - started
        assert elapsed < 1.0, (command, elapsed)
        assert code == 2, out
        assert f"{suite}:" in out and "aliases expand the document" in out, out
        assert "Traceback" not in out


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    suite = write(tmp_path, "loop.yaml", """
        evalcases:
          - id: a
            input: &x [1, *x]
        """)
    code, out = cli("validate", str(suite))
    assert code == 2
    assert f"{suite}:3:19: alias *x refers to a value that contains it" in out, out


def test_aliases_within_the_budget_still_work(tmp_path: Path) -> None:
    suite = write(tmp_path, "shared.yaml", """
        execution:
          evaluators:
            - &exact {name: exact, type: exact_match}
        evalcases:
          - id: a
            input: x
            expected_output: x
            evaluators: [*exact]
          - id: b
            input: y
            expected_output: y
            evaluators: [*exact]
        """)
    code, out = cli("validate", str(suite))
    assert code == 0, out
    assert "ok, 2 cases" in out
