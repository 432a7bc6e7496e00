"""A throw-away project whose target is a Python agent, run through the real ``assay``
command: for tests of what happens around the agent (hangs, exits, what is left behind)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def run_python_agent(tmp_path: Path, agent: str, suite: str, *args: str,
                     target_extra: str = "", python: tuple[str, ...] = (),
                     timeout: float = 120, preexec: Callable[[], None] | None = None,
                     env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``assay run EVAL.yaml --store sqlite:///runs.db ARGS`` in ``tmp_path``, with ``agent``
    (a module's source, ``answer`` its function) as the python target ``agent`` and ``suite``
    as the EVAL.yaml. ``target_extra`` adds to the target's settings (``", timeout_s: 1"``);
    ``python`` are options for the interpreter, before ``-m assay``; ``preexec`` runs in the
    child before it starts (a resource limit); ``env`` replaces the environment."""
    (tmp_path / "agent.py").write_text(agent)
    (tmp_path / ".assay").mkdir(exist_ok=True)
    (tmp_path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: agent:answer"
        f"{target_extra}}}\n")
    (tmp_path / "EVAL.yaml").write_text(suite)
    return subprocess.run([sys.executable, *python, "-m", "assay", "run", "EVAL.yaml",
                           "--store", "sqlite:///runs.db", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=timeout,
                          preexec_fn=preexec, env=env)


def exact_match_suite(*cases: tuple[str, str, str]) -> str:
    """An EVAL.yaml run by the ``agent`` target with one ``exact_match`` evaluator named
    ``same``, with cases given as (id, input, expected output), written as YAML scalars."""
    rows = "".join(f"  - {{id: {case_id}, input: {question}, expected_output: {expected}}}\n"
                   for case_id, question, expected in cases)
    return ("execution:\n  target: agent\n  evaluators: [{name: same, type: exact_match}]\n"
            f"evalcases:\n{rows}")
