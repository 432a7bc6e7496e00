"""The tests' forked ``assay`` command behaves as ``python -m assay`` does: what it prints,
its exit code, and the directory, environment and path it runs with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.assay_process import _server, run_assay


def started(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("args", [
    ["--help"],
    ["runs", "--json"],
    ["show", "no-such-run"],
    ["validate", "EVAL.yaml"],
    ["run", "missing.yaml"],
])
def test_output_and_exit_code_are_those_of_a_started_command(tmp_path, args):
    (tmp_path / "EVAL.yaml").write_text("evalcases:\n  - {id: a, input: q, bogus: 1}\n")
    env = {**os.environ, "ASSAY_STORE_URL": f"sqlite:///{tmp_path}/runs.db", "COLUMNS": "97"}
    forked = run_assay(args, cwd=tmp_path, env=env)
    fresh = started(args, tmp_path, env)
    assert (forked.returncode, forked.stdout, forked.stderr) == \
        (fresh.returncode, fresh.stdout, fresh.stderr)


def test_the_working_directory_comes_first_on_the_path_then_pythonpath(tmp_path):
    """A python target is imported from the directory the command runs in, and what it
    imports from PYTHONPATH, as ``python -m`` arranges."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "helper.py").write_text("def shout(q):\n    return q.upper()\n")
    (tmp_path / "agent.py").write_text("from helper import shout\n\n\n"
                                       "def answer(q):\n    return shout(q)\n")
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: agent:answer}\n")
    (tmp_path / "EVAL.yaml").write_text(
        "execution:\n  target: agent\n  evaluators: [{name: same, type: exact_match}]\n"
        "evalcases:\n  - {id: a, input: q, expected_output: Q}\n")
    env = {**os.environ, "PYTHONPATH": str(lib), "COLUMNS": "200"}
    forked = run_assay(["run", "EVAL.yaml", "--store", "sqlite:///runs.db"], cwd=tmp_path,
                       env=env)
    assert forked.returncode == 0, forked.stdout + forked.stderr
    assert "1 passed, 0 failed" in forked.stdout


def test_a_command_past_its_timeout_is_killed_and_the_next_one_runs(tmp_path):
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_assay(["serve", "--store", f"sqlite:///{tmp_path}/runs.db", "--port", "0"],
                  timeout=1.5)
    assert time.monotonic() - began < 30
    assert run_assay(["--version"]).returncode == 0


def test_a_command_that_ends_before_its_pid_is_read_is_not_waited_for(tmp_path):
    """The pid and the exit status then arrive in one read; the status must not be waited
    for again (it was, until the command's timeout, when read through a buffered line)."""
    server = _server()
    request = {"argv": ["--version"], "cwd": str(tmp_path), "env": dict(os.environ),
               "stdout": str(tmp_path / "out"), "stderr": str(tmp_path / "err")}
    with server.lock:
        assert server.process.stdin is not None
        server.process.stdin.write(json.dumps(request).encode() + b"\n")
        server.process.stdin.flush()
        time.sleep(1.0)  # the command ends and both lines wait in the pipe
        assert "pid" in server._reply(None)
        assert server._reply(5.0)["returncode"] == 0
    assert (tmp_path / "out").read_text().startswith("assay ")
