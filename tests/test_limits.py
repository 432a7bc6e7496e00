"""Every numeric limit of every suite format, targets file, run config and flag is finite and
in range, or refused where it is read with a message stating the range: no loop and no wait
of a run is unbounded (a conversation of ``max_turns: null`` and ``.inf`` ms ran forever)."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.errors import ConfigError
from assay.run.evaluate import evaluate
from assay.targets.base import Target
from assay.targets.conversation import converse
from assay.types.case import Case, ConversationSettings, ConversationSpec
from assay.types.config import RunConfig
from assay.types.engine_config import RetryPolicy
from assay.types.execution import Execution
from assay.types.messages import Message
from tests.assay_process import run_assay

runner = CliRunner()


def validate(path: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["validate", str(path)])
    return result.exit_code, result.output


def conversation_suite(tmp_path: Path, settings: str, case: str = "") -> Path:
    path = tmp_path / "EVAL.yaml"
    path.write_text(textwrap.dedent(f"""\
        conversation: {{{settings}}}
        execution:
          target: openai:gpt-4o-mini
          evaluators:
            - {{type: contains, search_text: x}}
        evalcases:
          - {{id: chat, first_message: hi{case}}}
        """), encoding="utf-8")
    return path


@pytest.mark.parametrize("timeout", [".inf", "1e400", ".nan", "0", "-5", "1e12"])
def test_a_conversation_timeout_that_is_not_finite_or_absurd_is_refused(tmp_path, timeout):
    path = conversation_suite(tmp_path, f"max_turns: null, timeout_per_test_case_ms: {timeout}")
    code, out = validate(path)
    assert code == 2, out
    assert f"{path}:1:" in out and "conversation.timeout_per_test_case_ms: expected a finite " \
        "number of milliseconds above 0 to 86400000, not " in out, out


@pytest.mark.parametrize(("where", "value"), [("suite", "0"), ("suite", "1e400"),
                                              ("suite", "5000"), ("case", "2.5"),
                                              ("case", ".inf")])
def test_max_turns_is_a_whole_number_in_range(tmp_path, where, value):
    path = conversation_suite(tmp_path, f"max_turns: {value}") if where == "suite" else \
        conversation_suite(tmp_path, "", case=f", max_turns: {value}")
    code, out = validate(path)
    assert code == 2, out
    assert "expected a whole number of agent rounds from 1 to 1000, not" in out, out


class _Echo(Target):
    name = "echo"

    def __init__(self) -> None:
        self.calls = 0

    async def run(self, case: Case) -> Execution:
        self.calls += 1
        return Execution(output="ok")

    async def run_turn(self, case: Case, history: list[Message], turn: int) -> Execution:
        self.calls += 1
        return Execution(output=f"reply {turn}")


MAX_TURNS = 1000
"""The hard cap on a conversation's agent rounds (assay._util.limits.MAX_TURNS)."""


async def test_a_suite_with_no_turn_cap_still_ends_at_the_hard_cap():
    agent = _Echo()
    script = [f"m{i}" for i in range(2 * MAX_TURNS)]
    case = Case(id="long", conversation=ConversationSpec(first_message="hi",
                                                         scripted_messages=script))
    execution = await converse(agent, case, ConversationSettings(max_turns=None))
    assert execution.conversation.stop_reason == "max_turns"
    assert agent.calls == MAX_TURNS == execution.conversation.agent_turns


async def test_each_message_is_made_plain_for_the_agent_once(monkeypatch):
    """A round sends the agent the whole conversation: remaking every earlier message in
    each round made a 1000-round conversation take seconds of bookkeeping alone."""
    from assay.targets import conversation

    made: list[str] = []
    plain = conversation._plain

    def counted(message: Message) -> Message:
        made.append(message.role)
        return plain(message)

    monkeypatch.setattr(conversation, "_plain", counted)
    agent = _Echo()
    case = Case(id="long", conversation=ConversationSpec(
        first_message="hi", scripted_messages=[f"m{i}" for i in range(60)]))
    execution = await converse(agent, case, ConversationSettings(max_turns=50))
    assert agent.calls == 50 == execution.conversation.agent_turns
    assert len(made) == len(execution.messages) == 100


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("repeat", 10**9, "repeat: expected a whole number of runs from 1 to 1000, not"),
    ("concurrency", 10**7, "concurrency: expected a whole number of cases or calls in flight "
                           "from 1 to 1024, not"),
    ("agent_timeout_s", float("inf"), "agent_timeout_s: expected a finite number of seconds "
                                      "above 0 to 86400, not inf"),
    ("agent_retries", 10**6, "agent_retries: expected a whole number of retries from 0 to "
                             "100, not"),
    ("retry", {"call_timeout_s": float("nan")}, "retry.call_timeout_s: expected a finite "
                                                "number of seconds above 0 to 86400, not nan"),
    ("retry", {"total_timeout_s": "1e400"}, "retry.total_timeout_s: expected"),
    ("retry", {"backoff_max_s": float("inf")}, "retry.backoff_max_s: expected"),
])
def test_a_run_configs_limits_are_finite_and_in_range(field, value, expected):
    rows = [{"id": "a", "input": "q", "output": "x"}]
    with pytest.raises(ConfigError) as caught:
        evaluate(rows, evaluators=["exact_match"], **{field: value})
    assert expected in caught.value.message
    assert RunConfig(repeat=1000, concurrency=1024).repeat == 1000
    assert RetryPolicy(max_attempts=100_000).max_attempts == 100_000


def test_a_targets_files_timeouts_and_workers_are_finite_and_in_range(tmp_path):
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(textwrap.dedent("""\
        targets:
          - {name: agent, provider: cli, command: [echo, hi], timeout_s: 10000000.0}
          - {name: api, provider: http, url: "http://127.0.0.1:9/", timeout_s: .inf}
          - {name: many, provider: openai:gpt-4o-mini, workers: 100000}
        """), encoding="utf-8")
    path = tmp_path / "EVAL.yaml"
    path.write_text("execution:\n  target: agent\n  evaluators: [{type: contains, "
                    "search_text: x}]\nevalcases: [{id: a, input: q}]\n", encoding="utf-8")
    code, out = validate(path)
    assert code == 2, out
    lines = out.splitlines()
    expected = "(expected: seconds: a finite number of seconds above 0 to 86400)"
    assert any(":2:" in line and "target 'agent': 10000000.0 is not accepted" in line and
               expected in line for line in lines), out  # 115 days: absurd
    assert any(":3:" in line and "target 'api': " in line and expected in line
               for line in lines), out
    assert any(":4:" in line and "workers 100000 is not accepted" in line for line in lines), out


def test_an_evaluators_timeout_is_finite_and_in_range(tmp_path):
    path = tmp_path / "EVAL.yaml"
    path.write_text("execution:\n  evaluators:\n    - {type: code_judge, script: [true], "
                    "timeout_s: .inf}\nevalcases: [{id: a, input: q, metadata: {output: x}}]\n",
                    encoding="utf-8")
    code, out = validate(path)
    assert code == 2 and "timeout_s" in out and "above 0 to 86400, not inf" in out, out


def test_flags_that_are_not_finite_are_one_clear_error(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"id": "a", "input": "q", "output": "x"}\n')
    (tmp_path / "rows.yaml").write_text("evaluators: [{type: exact_match}]\n")
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    for args in (["run", "rows.jsonl", "--call-timeout", "inf"],
                 ["run", "rows.jsonl", "--repeat", "100000"],
                 ["judge", "-e", "a", "-a", "a", "-t", "exact_match", "--call-timeout", "inf"]):
        done: subprocess.CompletedProcess[str] = run_assay(args, cwd=tmp_path, env=env,
                                                           timeout=60)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and "expected a" in done.stderr, done.stderr


def test_a_suites_agent_timeout_is_finite_and_in_range(tmp_path):
    path = tmp_path / "EVAL.yaml"
    path.write_text("execution:\n  agent_timeout_s: 10000000.0\n  evaluators: [{type: "
                    "contains, search_text: x}]\nevalcases: [{id: a, input: q, metadata: "
                    "{output: x}}]\n", encoding="utf-8")
    code, out = validate(path)
    assert code == 2 and f"{path}:2:" in out and "a finite number of seconds above 0 to " \
        "86400" in out, out
