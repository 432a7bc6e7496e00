"""Data never drives the terminal: no escape sequence reaches it raw, no markup in data is
interpreted, no ``:name:`` becomes an emoji. Checked through the real ``assay`` command."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from assay.report.safe_text import for_terminal, plain_for_terminal, printable
from assay.testing.mock_server import RunningServer
from tests.assay_process import run_assay

ESC, BEL, CSI_C1, OSC_C1 = "\x1b", "\x07", "\x9b", "\x9d"
RAW_CONTROLS = (ESC, BEL, CSI_C1, OSC_C1, "\x08", "\r", "\u202e")

SUITE = r"""
name: "[/]x \e]0;set-title\a"
execution:
  evaluators:
    - name: "sim[/]"
      type: semantic_similarity
evalcases:
  - id: "[red]x[/red]"
    input: q
    expected_output: Paris
    metadata:
      output: 'Paris <<mock:{"justification": "\u001b[2J wiped openai:x: [bold]b[/bold] \u009b31m \u001b]0;t\u0007 \u202eevil", "score": 90}>>'
  - id: "a\e[2Jb openai:x:"
    input: q
    expected_output: Paris
    metadata: {output: Paris}
  - id: "\r\bspoof\x9b2J"
    input: q
    expected_output: Paris
    metadata: {output: Paris}
"""


def assay(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "250"}
    env.pop("ASSAY_JUDGE_MODEL", None)
    return run_assay(args, cwd=cwd, env=env, timeout=120)


def assert_clean(result: subprocess.CompletedProcess[str]) -> str:
    out = result.stdout + result.stderr
    assert "Traceback" not in out and "MarkupError" not in out, out
    raw = [repr(c) for c in RAW_CONTROLS if c in out]
    assert not raw, (raw, out)
    assert "❌" not in out, out
    return out


@pytest.fixture
def stored_run(tmp_path: Path, mock_server: RunningServer) -> tuple[Path, str]:
    (tmp_path / "EVAL.yaml").write_text(SUITE, encoding="utf-8")
    result = assay(tmp_path, "run", "EVAL.yaml", "--judge-model", f"{mock_server.url}#judge",
                   "--store", "sqlite:///runs.db")
    assert result.returncode == 0, result.stdout + result.stderr
    out = assert_clean(result)
    assert r"[/]x \x1b]0;set-title\x07" in out  # the suite name, shown as written
    run_id = next(x for x in result.stdout.splitlines() if x.startswith("run ")).split()[1]
    return tmp_path, run_id


def test_runs_lists_a_store_with_markup_in_a_suite_name(stored_run: tuple[Path, str]) -> None:
    root, run_id = stored_run
    result = assay(root, "runs", "--store", "sqlite:///runs.db")
    assert result.returncode == 0, result.stderr
    out = assert_clean(result)
    assert run_id in out and "[/]x" in out


def test_show_prints_hostile_ids_and_judge_text_as_written(
        stored_run: tuple[Path, str]) -> None:
    root, run_id = stored_run
    result = assay(root, "show", run_id, "--store", "sqlite:///runs.db")
    assert result.returncode == 0, result.stderr
    out = assert_clean(result)
    assert "[red]x[/red]" in out  # shown, not rendered red
    assert r"a\x1b[2Jb openai:x:" in out
    assert r"\x1b[2J wiped openai:x: [bold]b[/bold] \x9b31m \x1b]0;t\x07 \u202eevil" in out
    assert r"\x0d\x08spoof\x9b2J" in out
    as_json = assay(root, "show", run_id, "--json", "--store", "sqlite:///runs.db")
    assert_clean(as_json)
    ids = {json.loads(line)["eval_id"] for line in as_json.stdout.splitlines()}
    assert "a\x1b[2Jb openai:x:" in ids  # the data itself is kept exactly


def test_compare_prints_hostile_ids_as_written(stored_run: tuple[Path, str]) -> None:
    root, run_id = stored_run
    result = assay(root, "compare", run_id, run_id, "--store", "sqlite:///runs.db")
    assert result.returncode == 0, result.stderr
    assert "[red]x[/red]" in assert_clean(result)


def test_judge_prints_hostile_judge_text_as_written(tmp_path: Path,
                                                   mock_server: RunningServer) -> None:
    hostile = ('<<mock:{"justification": "\\u001b[2J\\u001b]0;t\\u0007 [red]r[/red] '
               'openai:x: [/]", "score": 50}>>')
    result = assay(tmp_path, "judge", "-e", "Paris", "-a", hostile,
                   "-m", f"{mock_server.url}#openai:x:")
    assert result.returncode in (0, 1), result.stderr
    out = assert_clean(result)
    assert r"\x1b[2J\x1b]0;t\x07 [red]r[/red] openai:x: [/]" in out
    assert "#openai:x:" in out


def test_errors_with_hostile_text_print_as_one_clean_line(tmp_path: Path) -> None:
    from assay.store.runs import RunStore

    RunStore(f"sqlite:///{tmp_path}/runs.db").close()  # a store without that run
    result = assay(tmp_path, "show", "id\x1b]0;t\x07[/]openai:x:", "--store",
                   "sqlite:///runs.db")
    assert result.returncode == 2
    out = assert_clean(result)
    assert r"id\x1b]0;t\x07[/]openai:x:" in out


@pytest.mark.parametrize("text", [
    "\x1b[2J", "\x1b]0;title\x07", "\x9b31m", "\x9d0;t\x9c", "a\rb", "\x08\x08", "\u202e",
    "[/]", "[red]x[/red]", "[link=http://evil]x[/link]", "x\\", "\\[red]", ":x:",
])
def test_for_terminal_shows_every_payload_as_written(text: str) -> None:
    console = Console(record=True, emoji=False, width=200, force_terminal=False)
    console.print(f"[bold]{for_terminal(text)}[/bold]", highlight=False)  # beside markup
    shown = console.export_text().rstrip("\n")
    assert shown == printable(text)
    assert not any(c in shown for c in RAW_CONTROLS)
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"


@pytest.mark.parametrize("text", [
    "\x1b[2J", "\x9b31m", "a\rb", "\u202e", "[/]", "[red]x[/red]", "runs/[draft] x.yaml",
    "x\\", ":x:",
])
def test_plain_for_terminal_shows_every_payload_as_written_where_markup_is_off(
        text: str) -> None:
    console = Console(record=True, emoji=False, width=200, force_terminal=False)
    console.print(f"resume with: {plain_for_terminal(text)}", highlight=False, markup=False)
    shown = console.export_text().rstrip("\n")
    assert shown == "resume with: " + printable(text)
    assert not any(c in shown for c in RAW_CONTROLS)


def test_no_line_printed_without_markup_escapes_its_data_for_markup() -> None:
    """Markup-escaped text printed with ``markup=False`` shows its backslashes: a resume
    command with ``[draft]`` in a path would no longer run when copied. Such a line takes
    :func:`plain_for_terminal`; every ``print(..., markup=False)`` in assay is checked."""
    import ast

    found = []
    for path in sorted((Path(__file__).resolve().parents[1] / "src" / "assay").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "print"):
                continue
            markup = {k.arg: k.value for k in node.keywords}.get("markup")
            if not (isinstance(markup, ast.Constant) and markup.value is False):
                continue
            if any(isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                   and inner.func.id == "for_terminal"
                   for arg in node.args for inner in ast.walk(arg)):
                found.append(f"{path.name}:{node.lineno}")
    assert not found, found


def test_the_web_ui_makes_the_same_characters_visible_as_the_terminal() -> None:
    """One rule for what hides or reorders text: the web UI's ``CONTROL`` is the class
    :func:`printable` uses, written the same way, and zero-width characters are in it (an id
    with one read as the id without it)."""
    import re

    from assay._util.control_chars import CONTROL_CLASS

    app = (Path(__file__).resolve().parents[1] / "src" / "assay" / "report" / "static" /
           "app.js").read_text(encoding="utf-8")
    found = re.search(r"const CONTROL = /(\[.*?\])/g;", app)
    assert found is not None and found.group(1) == CONTROL_CLASS
    assert printable("a\u200bb\ufeff\u2060x\u202ey\u2028") == \
        "a\\u200bb\\ufeff\\u2060x\\u202ey\\u2028"
