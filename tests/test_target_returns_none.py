"""A Python agent that returns None: a forgotten ``return`` is the case's error, named, on
every surface (the target, ``evaluate()``, ``assay run``, the pytest plugin), never a score
the agent did not earn; a function that declares it may answer nothing is judged as such."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import assay
from assay._util.user_code import load_function
from assay.cli import app as cli_app
from assay.integrations.pytest_plugin import assert_case, suite_cases
from assay.store.runs import RunStore
from assay.targets.callable import CallableTarget
from assay.types.case import Case

AGENT = '''
def forgot(question):
    answer = "Paris"

async def forgot_async(question):
    answer = "Paris"

def nothing(question) -> None:
    pass

def maybe(question) -> str | None:
    return None
'''

SUITE = """
execution:
  evaluators:
    - type: contains
      search_text: Paris
target: agent
evalcases:
  - id: france
    input: capital of France?
"""

FORGOT = ("agent function forgot returned None: did it forget to return its answer? "
          "(declare '-> None' or '-> str | None' when answering nothing is meant)")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A suite whose Python agent forgets to return its answer, in its own folder."""
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "EVAL.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: agent\n    provider: python\n    function: agent:forgot\n",
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _target(project: Path, name: str) -> CallableTarget:
    """The suite's agent file's function ``name`` as a Python target, loaded as a run loads it."""
    return CallableTarget(load_function(f"agent.py:{name}", project))


async def test_a_none_answer_is_the_targets_error_naming_it(project: Path) -> None:
    case = Case(id="c", input="capital of France?")
    for name in ("forgot", "forgot_async"):
        execution = await _target(project, name).run(case)
        assert execution.output is None
        assert execution.error == FORGOT.replace("forgot", name, 1)
        assert execution.latency_ms is not None


async def test_a_function_that_declares_it_may_answer_nothing_is_judged(project: Path) -> None:
    case = Case(id="c", input="capital of France?")
    for name in ("nothing", "maybe"):
        execution = await _target(project, name).run(case)
        assert execution.error is None and execution.output is None


def test_evaluate_records_an_error_not_a_zero(project: Path) -> None:
    store = f"sqlite:///{project / 'runs.db'}"
    result = assay.evaluate("EVAL.yaml", store=store)
    [record] = result.records
    assert record.execution.error == FORGOT
    [score] = record.scores
    assert score.value is None and score.error is not None
    assert score.error.code == "target_failed"
    assert score.error.message == f"the target failed: {FORGOT}"
    assert result.summary.target_errors == 1 and result.summary.scored == 0
    assert result.summary.mean_score is None
    stored = RunStore(store).case_records(result.run_id)
    assert stored[0].execution.error == FORGOT


def test_assay_run_shows_the_forgotten_return(project: Path) -> None:
    out = project / "out.jsonl"
    done = CliRunner().invoke(cli_app, ["run", "EVAL.yaml", "--store",
                                        f"sqlite:///{project / 'runs.db'}",
                                        "--output", str(out)])
    assert done.exit_code != 0, done.output
    assert "Traceback" not in done.output
    [row] = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert FORGOT in json.dumps(row)


def test_assert_case_fails_saying_the_agent_returned_none(project: Path) -> None:
    [item] = suite_cases(project / "EVAL.yaml")
    with pytest.raises(AssertionError) as failed:
        assert_case(item.values[0], store=":memory:")
    assert f"case france: the agent failed [target_failed]: {FORGOT}" in str(failed.value)
