"""AgentV 4's targets: ``grader_target``, a chat-model target as its own judge, and a ``cli``
command with ``{PROMPT}``, ``{PROMPT_FILE}``, ``{EVAL_ID}``, ``{FILES}`` and ``{OUTPUT_FILE}``,
run for real (never through a shell with the case's data in it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import assay
from assay.targets.config import read_targets, validate_targets
from assay.targets.resolve import case_judge
from tests.test_agentv4 import write

MOCK = '<<mock:{"score": 0.6, "hits": [], "misses": [], "reasoning": "r"}>>'


def grader_suite(path: Path, target: str) -> Path:
    return write(path, f"""
        target: {target}
        tests:
          - id: t
            criteria: Names Paris
            input: Capital of France?
            assertions:
              - type: llm-grader
                prompt: |
                  Judge {{{{output}}}}
                  {MOCK}
        """)


def test_grader_target_names_the_judge_as_judge_target_does(tmp_path, mock_server):
    write(tmp_path / ".agentv" / "targets.yaml", f"""
        targets:
          - {{name: agent, provider: openai, endpoint: "{mock_server.url}", api_key: k,
              model: agent-model, grader_target: grader}}
          - {{name: grader, provider: openai, endpoint: "{mock_server.url}", api_key: k,
              model: grader-model}}
        """)
    record = assay.evaluate(grader_suite(tmp_path / "EVAL.yaml", "agent")).records[0]
    assert record.scores[0].value == 0.6
    assert mock_server.stats.models == {"agent-model": 1, "grader-model": 1}
    targets = read_targets(tmp_path / ".agentv" / "targets.yaml")
    assert targets.targets["agent"].judge_target == "grader"
    assert targets.targets["agent"].redacted()["judge_target"] == "grader"


def test_a_chat_model_target_without_a_judge_is_its_own_judge(tmp_path, mock_server):
    """AgentV's rule: with no grader_target, the target judges its own cases."""
    write(tmp_path / ".agentv" / "targets.yaml", f"""
        targets:
          - {{name: agent, provider: openai, endpoint: "{mock_server.url}", api_key: k,
              model: self-judging}}
        """)
    result = assay.evaluate(grader_suite(tmp_path / "EVAL.yaml", "agent"))
    assert result.records[0].scores[0].value == 0.6
    assert mock_server.stats.models == {"self-judging": 2}  # answered, then judged
    targets = read_targets(tmp_path / ".agentv" / "targets.yaml")
    assert case_judge(targets, "agent", "agent", None) == \
        targets.targets["agent"].model_string()


def test_an_agent_target_without_a_judge_keeps_the_default_judge(tmp_path):
    """A command cannot judge: its cases get the run's judge (AgentV 4.42.4 would send the
    grader's prompt to the command itself)."""
    write(tmp_path / ".agentv" / "targets.yaml", """
        targets:
          - {name: agent, provider: cli, command: "echo hi"}
        """)
    targets = read_targets(tmp_path / ".agentv" / "targets.yaml")
    assert case_judge(targets, "agent", "agent", None) is None


def test_judge_target_and_grader_target_disagreeing_is_a_located_problem(tmp_path):
    path = write(tmp_path / "targets.yaml", """
        targets:
          - {name: a, provider: "fake:x", judge_target: j1, grader_target: j2}
          - {name: j1, provider: "fake:y"}
          - {name: j2, provider: "fake:z"}
          - {name: b, provider: "fake:x", grader_target: nobody}
        """)
    assert [str(p).removeprefix(f"{path}:") for p in validate_targets(path)] == [
        "2:68: both judge_target and grader_target name the judge, differently (expected: "
        "one of them (grader_target is AgentV 4's name for judge_target))",
        "5:50: grader_target 'nobody' is not a target in this file (expected: one of j1, j2, "
        "b)"]


# -- cli commands ---------------------------------------------------------------------------


def cli_target(tmp_path: Path, command: str | list[str], *, case: str = "",
               files: list[str] | None = None) -> tuple[Path, Path]:
    """A suite with one test judged by a contains check, run by ``command``."""
    (tmp_path / ".agentv").mkdir(parents=True, exist_ok=True)
    (tmp_path / ".agentv" / "targets.yaml").write_text(json.dumps({"targets": [
        {"name": "agent", "provider": "cli", "command": command}]}))
    test: dict[str, object] = {"id": "case-1", "input": case or "What is the capital?",
                               "assertions": [{"type": "contains", "value": "Paris"}]}
    if files is not None:
        test["input_files"] = files
    suite = tmp_path / "EVAL.yaml"
    suite.write_text(json.dumps({"target": "agent", "tests": [test]}))
    return suite, tmp_path / "seen.json"


AGENT = """
import json, os, sys
args = sys.argv[1:]
out = args[-1]
seen = {"args": args, "cwd": os.getcwd()}
if len(args) > 1 and os.path.isfile(args[0]):
    seen["prompt_file"] = open(args[0], encoding="utf-8").read()
json.dump(seen, open("seen.json", "w"))
with open(out, "w", encoding="utf-8") as f:
    f.write(os.environ.get("ANSWER", "Paris"))
"""


def test_the_answer_is_read_from_output_file(tmp_path, monkeypatch):
    (tmp_path / "agent.py").write_text(AGENT)
    suite, seen = cli_target(tmp_path, f"{sys.executable} agent.py {{PROMPT_FILE}} "
                             "{EVAL_ID} {OUTPUT_FILE}")
    answer = {"output": [{"role": "tool", "content": "lookup"},
                         {"role": "assistant", "content": "It is Paris."}],
              "token_usage": {"input": 12, "output": 5}, "cost_usd": 0.002,
              "duration_ms": 1234}
    monkeypatch.setenv("ANSWER", json.dumps(answer))
    record = assay.evaluate(suite).records[0]
    execution = record.execution
    assert execution.error is None, execution.error
    assert execution.output == "It is Paris." and record.scores[0].value == 1.0
    assert [m.role for m in execution.messages] == ["tool", "assistant"]
    assert execution.usage is not None
    assert (execution.usage.prompt_tokens, execution.usage.completion_tokens,
            execution.usage.cost) == (12, 5, 0.002)
    assert execution.latency_ms == 1234
    called = json.loads(seen.read_text())
    assert called["prompt_file"] == "What is the capital?"
    assert called["args"][1] == "case-1"
    temp = Path(called["args"][-1]).parent
    assert not temp.exists()  # the call's files are removed after it


@pytest.mark.parametrize("written, expected", [
    ("Paris, of course", "Paris, of course"),
    ('{"text": "Paris"}', "Paris"),
    ('{"answer": "Paris"}', '{"answer": "Paris"}'),  # AgentV: not its shape, so plain text
])
def test_output_file_text_and_shapes_as_agentv_reads_them(tmp_path, monkeypatch, written,
                                                           expected):
    (tmp_path / "agent.py").write_text(AGENT)
    suite, _ = cli_target(tmp_path, [sys.executable, "agent.py", "{OUTPUT_FILE}"])
    monkeypatch.setenv("ANSWER", written)
    record = assay.evaluate(suite).records[0]
    assert record.execution.output == expected


def test_a_command_that_writes_no_output_file_is_that_cases_error(tmp_path):
    suite, _ = cli_target(tmp_path, f"{sys.executable} -c pass {{OUTPUT_FILE}}")
    record = assay.evaluate(suite).records[0]
    assert record.execution.error is not None
    assert "its answer file {OUTPUT_FILE} could not be read: it was not written" in \
        record.execution.error
    assert record.scores[0].error is not None  # an error, never a 0


def test_hostile_input_in_a_shell_command_stays_data(tmp_path):
    """AgentV 4 pastes {PROMPT} into the shell string (shell-quoted); assay never pastes it:
    the shell expands a variable holding it, as one word."""
    (tmp_path / "agent.py").write_text(AGENT)
    hostile = "'; touch PWNED; echo '$(touch PWNED2)`touch PWNED3`"
    suite, seen = cli_target(tmp_path, f"{sys.executable} agent.py {{PROMPT}} "
                             "{OUTPUT_FILE}", case=hostile)
    record = assay.evaluate(suite).records[0]
    assert record.execution.error is None, record.execution.error
    assert json.loads(seen.read_text())["args"][0] == hostile
    assert not list(tmp_path.glob("PWNED*"))


def test_files_are_one_argument_each(tmp_path):
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "a b.md").write_text("first")
    (tmp_path / "c.md").write_text("second")
    for command in (f"{sys.executable} agent.py {{FILES}} {{OUTPUT_FILE}}",
                    [sys.executable, "agent.py", "{FILES}", "{OUTPUT_FILE}"]):
        suite, seen = cli_target(tmp_path, command, files=["a b.md", "c.md"])
        record = assay.evaluate(suite).records[0]
        assert record.execution.error is None, record.execution.error
        args = json.loads(seen.read_text())["args"]
        assert [Path(a).name for a in args[:-1]] == ["a b.md", "c.md"]


def test_files_inside_an_argument_is_refused_naming_the_target(tmp_path):
    suite, _ = cli_target(tmp_path, [sys.executable, "agent.py", "--files={FILES}"])
    with pytest.raises(assay.ConfigError, match="puts \\{FILES\\} inside an argument"):
        assay.evaluate(suite)


def test_a_model_with_its_own_endpoint_is_priced_by_the_model_behind_it(tmp_path,
                                                                         mock_server):
    """A targets-file model with its own endpoint and key is called by the target's name;
    its calls cost what the model that answers costs (before: unknown, always)."""
    write(tmp_path / ".agentv" / "targets.yaml", f"""
        targets:
          - {{name: agent, provider: openai, endpoint: "{mock_server.url}", api_key: k,
              model: gpt-4o-mini}}
        """)
    record = assay.evaluate(grader_suite(tmp_path / "EVAL.yaml", "agent")).records[0]
    usage = record.scores[0].usage
    assert usage.calls == 1 and usage.cost is not None and usage.cost > 0
    assert record.execution.usage is not None and record.execution.usage.cost is not None
