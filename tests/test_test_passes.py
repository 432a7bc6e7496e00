"""Every test runs in CI in exactly one of scripts/test.sh's two passes: the fast one
(``-m "not (MARKED)"``) or the marked one (``-m "MARKED"``). A marker left out of MARKED, a
pass whose expression drifts from the other's, or a test file pytest does not collect would
drop tests from CI without a failure; these tests fail instead."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = (ROOT / "scripts" / "test.sh").read_text()


def marked() -> str:
    """The marked pass's expression, as scripts/test.sh sets it."""
    found = re.findall(r'^MARKED="([^"]+)"$', SCRIPT, re.MULTILINE)
    assert len(found) == 1, "scripts/test.sh sets MARKED once"
    return found[0]


def pytest_selections() -> list[str]:
    """The ``-m`` expression of each pytest command scripts/test.sh runs, in order."""
    commands = [line for line in SCRIPT.splitlines() if re.search(r"\bpytest\b", line)
                and not line.lstrip().startswith("#")]
    selections = []
    for command in commands:
        [selection] = re.findall(r'-m "([^"]+)"', command)
        selections.append(selection)
    return selections


def test_the_two_passes_are_one_expression_and_its_negation():
    assert pytest_selections() == ["not ($MARKED)", "$MARKED"]


def test_every_registered_marker_is_one_the_marked_pass_runs():
    """The markers pyproject.toml registers are those that take a test out of the fast pass:
    each is in MARKED, and MARKED names only registered markers."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    registered = {m.split(":")[0].strip() for m in config["ini_options"]["markers"]}
    assert set(marked().split(" or ")) == registered
    assert "--strict-markers" in config["ini_options"]["addopts"].split()


def test_the_guides_fast_command_selects_the_fast_pass():
    text = (ROOT / "docs" / "development.md").read_text()
    assert f'pytest -m "not ({marked()})"' in text


def test_every_file_with_tests_is_one_pytest_collects():
    """pytest collects ``test_*.py`` under tests/: a test function in any other file would
    run in neither pass."""
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name.startswith("test_"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        tests = [node.name for node in tree.body
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                 and node.name.lower().startswith("test")]
        assert not tests, f"{path.relative_to(ROOT)} defines {tests} but is never collected"


def collected(*options: str) -> set[str]:
    """The ids of the tests pytest collects with ``options``."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", *options], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


@pytest.mark.process
def test_each_collected_test_is_in_exactly_one_pass():
    """Collected as scripts/test.sh collects them, the two passes split the whole suite."""
    every = collected()
    fast = collected("-m", f"not ({marked()})")
    second = collected("-m", marked())
    assert fast and second
    assert not fast & second
    assert fast | second == every, sorted(every - fast - second)[:20]
