"""The README works as written: its files are the ones in examples/, its Python runs, and its
commands run from the directory it names (against the mock server as the OpenAI endpoint)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
BLOCKS = [(m.group(1), m.group(2), README[:m.start()]) for m in BLOCK.finditer(README)]


def blocks(language: str) -> list[tuple[str, str]]:
    return [(code, before) for lang, code, before in BLOCKS if lang == language]


def env_for(mock_url: str) -> dict[str, str]:
    return {**os.environ, "OPENAI_BASE_URL": mock_url, "OPENAI_API_KEY": "dummy",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def test_the_files_shown_are_the_files_in_examples():
    shown = 0
    for code, before in BLOCKS_WITH_FILES():
        name = re.findall(r"`(examples/[^`]+)`:?\s*$", before.rstrip())[-1]
        assert (ROOT / name).read_text() == code, f"README block differs from {name}"
        shown += 1
    assert shown >= 3


def BLOCKS_WITH_FILES() -> list[tuple[str, str]]:
    found = []
    for _, code, before in BLOCKS:
        named = re.findall(r"`(examples/[^`]+)`:?\s*$", before.rstrip())
        if named and (ROOT / named[-1]).is_file():
            found.append((code, before))
    return found


def test_the_first_two_commands_are_the_setup_and_the_ci_command():
    assert blocks("bash")[0][0].strip() == (
        "bash scripts/setup.sh && cd examples/quickstart && ../../.venv/bin/assay run EVAL.yaml")
    assert blocks("bash")[1][0].strip() == "bash scripts/test.sh"
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


# The pytest example runs in test_the_pytest_example_passes, under pytest.
PYTHON_BLOCKS = [(code, before) for code, before in blocks("python")
                 if "from assay.integrations.pytest_plugin" not in code]


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
@pytest.mark.process
def test_python_blocks_run(index, tmp_path, mock_server):
    code, before = PYTHON_BLOCKS[index]
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    named = re.findall(r"From `examples/([^`]+)`", before[-400:])
    work = tmp_path / "examples" / (named[-1] if named else "suite")
    done = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True,
                          text=True, env=env_for(mock_server.url), timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.process
@pytest.mark.parametrize(("where", "argument"), [("examples/pytest", "test_agent.py"),
                                                  (".", "examples/pytest")])
def test_the_pytest_example_passes(tmp_path, where, argument):
    """From its own folder and from the root above examples/ alike."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           argument], cwd=tmp_path / where,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "assay judgements" in done.stdout and "6 passed" in done.stdout


@pytest.mark.process
def test_the_suite_commands_run_from_examples_suite(tmp_path, mock_server):
    code = next(c for c, before in blocks("bash") if "From `examples/suite`" in before[-200:])
    work = tmp_path / "suite"
    shutil.copytree(ROOT / "examples" / "suite", work)
    env = env_for(mock_server.url)
    run_ids: list[str] = []
    for line in code.splitlines():
        command = line.split("#")[0].strip()
        if not command:
            continue
        if "RUN" in command:
            from assay.store.runs import RunStore

            runs = [r.id for r in RunStore(f"sqlite:///{work}/.assay/runs.db").run_records()]
            run_ids = runs
            command = (command.replace("RUN_ID", runs[0]).replace("RUN_A", runs[-1])
                       .replace("RUN_B", runs[0]))
        done = subprocess.run(command, shell=True, cwd=work, capture_output=True, text=True,
                              env=env, timeout=180)
        assert done.returncode in (0, 1), (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, command
    assert run_ids and (work / "results.jsonl").exists() and (work / "report.xml").exists()
