"""Providers in a targets file as AgentV spells them: ``azure`` with ``endpoint``, ``api_key``
and ``model``; ``mock``; ``gemini`` and others through LiteLLM (tested in
tests/test_litellm_provider.py, which imports LiteLLM once); and the coding agents
(claude-code, codex, copilot, pi) as commands with their usual command lines, run for real
(as stand-in executables on PATH that record how they were called)."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.llm import EngineConfig, JudgeEngine
from assay.llm.providers.inline import InlineProvider
from assay.targets.config import read_targets


def targets(tmp_path: Path, text: str, env: str = "") -> Path:
    directory = tmp_path / ".agentv"
    directory.mkdir(exist_ok=True)
    (directory / "targets.yaml").write_text(textwrap.dedent(text))
    if env:
        (tmp_path / ".env").write_text(env)
    return directory / "targets.yaml"


def suite(tmp_path: Path, target: str, evaluators: str = "[contains]") -> Path:
    path = tmp_path / "EVAL.yaml"
    path.write_text(textwrap.dedent(f"""
        execution:
          target: {target}
          evaluators: {evaluators}
        evalcases:
          - id: answer
            expected_outcome: Answers 42
            input: What is six times seven?
        """))
    return path


# -- chat models with their own endpoint and key -----------------------------------------


def test_azure_with_endpoint_key_and_model(tmp_path, mock_server):
    host = mock_server.url.removesuffix("/v1")
    file = targets(tmp_path, f"""
        targets:
          - name: azure_base
            provider: azure
            endpoint: {host}
            api_key: ${{{{ AZURE_SECRET_KEY }}}}
            model: gpt-4o-deployment
            version: "2024-10-21"
        """, env="AZURE_SECRET_KEY=sk-azure-secret-123\n")
    config = read_targets(file).require("azure_base")
    model = config.model_string()
    assert model is not None and model.startswith("target:azure_base.")
    assert "sk-azure" not in model  # the key is never part of the name
    result = assay.evaluate(suite(tmp_path, "azure_base"), evaluators=[
        {"type": "contains", "search_text": "mock"}])
    record = result.records[0]
    assert record.execution.error is None, record.execution.error
    assert record.scores[0].value == 1.0  # the mock server answered "mock answer: ..."
    assert mock_server.stats.models == {"gpt-4o-deployment": 1}
    request = record.execution.provider_request or {}
    assert request["kind"] == "lm" and request["messages"][-1]["content"] == \
        "What is six times seven?"
    stored = json.dumps(result.run.config.model_dump(mode="json"))
    assert "sk-azure-secret-123" not in stored and "AZURE_SECRET_KEY" in stored


async def test_an_azure_judge_target_resolves_with_its_own_key(tmp_path, mock_server):
    host = mock_server.url.removesuffix("/v1")
    file = targets(tmp_path, f"""
        targets:
          - {{name: judge, provider: azure, endpoint: {host}, api_key: k-1-judge-secret, model: judge-dep}}
        """)
    model = read_targets(file).require("judge").model_string()
    engine = JudgeEngine(EngineConfig(cache_path=tmp_path / "c.db"))
    provider = engine.resolve(model)
    assert isinstance(provider, InlineProvider)
    assert provider.inner.url.endswith(  # type: ignore[attr-defined]
        "/openai/deployments/judge-dep/chat/completions?api-version=2024-12-01-preview")
    assert "k-1-judge-secret" not in engine.scrub("key k-1-judge-secret leaked")
    await engine.aclose()


def test_mock_provider(tmp_path):
    targets(tmp_path, """
        targets:
          - {name: dry, provider: mock, response: "The answer is 42.", delay_ms: 5}
          - {name: default, provider: mock}
        """)
    result = assay.evaluate(suite(tmp_path, "dry"), evaluators=[
        {"type": "contains", "search_text": "42"}])
    assert result.records[0].execution.output == "The answer is 42."
    assert result.records[0].scores[0].value == 1.0
    default = assay.evaluate(suite(tmp_path, "default"), evaluators=[
        {"type": "contains", "search_text": "Mock provider response"}])
    assert default.records[0].scores[0].value == 1.0


# -- coding agents as commands ---------------------------------------------------------------


STAND_INS = {
    "claude": r'''
print(json.dumps({"type": "system", "subtype": "init"}))
print(json.dumps({"type": "assistant", "message": {"content": [
    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "calc.py"}}]}}))
print(json.dumps({"type": "user", "message": {"content": [
    {"type": "tool_result", "tool_use_id": "t1", "content": "6 * 7"}]}}))
print(json.dumps({"type": "assistant", "message": {"content": [
    {"type": "text", "text": "The answer is 42."}]}}))
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "result": "The answer is 42.", "total_cost_usd": 0.012,
                  "usage": {"input_tokens": 100, "output_tokens": 20}}))
''',
    "codex": r'''
print(json.dumps({"type": "thread.started"}))
print(json.dumps({"type": "item.completed", "item": {"id": "i1", "type": "command_execution",
                  "command": "python calc.py", "aggregated_output": "42\n", "exit_code": 0}}))
print(json.dumps({"type": "item.completed", "item": {"id": "i2", "type": "agent_message",
                  "text": "It is 42."}}))
print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 50, "output_tokens": 5}}))
''',
    "copilot": r'''
print("42, since six times seven is 42.")
''',
    "pi": r'''
print(json.dumps({"type": "agent_start"}))
print(json.dumps({"type": "agent_end", "messages": [
    {"role": "user", "content": [{"type": "text", "text": "q"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "pi says 42"}]}]}))
''',
}


@pytest.fixture
def agents_on_path(tmp_path, monkeypatch) -> Path:
    """Stand-in agent executables that record their argv and stdin, then print a stream."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STAND_INS.items():
        script = bin_dir / name
        script.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                          f"record = {{'argv': sys.argv[1:], 'stdin': sys.stdin.read()}}\n"
                          f"open(os.path.join({str(bin_dir)!r}, {name + '.json'!r}), 'w')"
                          f".write(json.dumps(record))\n{body}")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def recorded(bin_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((bin_dir / f"{name}.json").read_text())


def test_claude_code_with_its_usual_command_line(tmp_path, agents_on_path):
    targets(tmp_path, """
        targets:
          - {name: claude, provider: claude-code, model: sonnet, args: [--max-turns, "3"]}
        """)
    result = assay.evaluate(suite(tmp_path, "claude"), evaluators=[
        {"type": "contains", "search_text": "42"},
        {"type": "tool_call_order", "tool_calls_order": ["Read"]}])
    record = result.records[0]
    assert record.execution.error is None, record.execution.error
    assert recorded(agents_on_path, "claude")["argv"] == [
        "--output-format", "stream-json", "--verbose", "-p", "--model", "sonnet",
        "--max-turns", "3", "What is six times seven?"]
    assert record.execution.output == "The answer is 42."
    assert [s.value for s in record.scores] == [1.0, 1.0]  # tool_use blocks are tool calls
    assert record.execution.usage is not None and record.execution.usage.cost == 0.012
    request = record.execution.provider_request or {}
    assert request["kind"] == "agent" and request["argv"][-1] == "<prompt>"


def test_codex_reads_the_prompt_on_stdin(tmp_path, agents_on_path):
    targets(tmp_path, "targets:\n  - {name: codex, provider: codex-cli}\n")
    result = assay.evaluate(suite(tmp_path, "codex"), evaluators=[
        {"type": "contains", "search_text": "42"},
        {"type": "tool_call_args", "tool_calls": [
            {"name": "shell", "args": {"command": "python calc.py"}}]}])
    call = recorded(agents_on_path, "codex")
    assert call["argv"] == ["--ask-for-approval", "never", "exec", "--json", "--color",
                            "never", "--skip-git-repo-check", "-"]
    assert call["stdin"] == "What is six times seven?"
    record = result.records[0]
    assert record.execution.output == "It is 42."
    assert [s.value for s in record.scores] == [1.0, 1.0]


@pytest.mark.parametrize("provider, program, argv, answer", [
    ("copilot-cli", "copilot", ["-s", "--allow-all-tools", "--no-color", "-p",
                                "What is six times seven?"], "42, since six times seven is 42."),
    ("pi-coding-agent", "pi", ["--mode", "json", "--print", "--no-session",
                               "What is six times seven?"], "pi says 42"),
])
def test_copilot_and_pi(tmp_path, agents_on_path, provider, program, argv, answer):
    targets(tmp_path, f"targets:\n  - {{name: agent, provider: {provider}}}\n")
    result = assay.evaluate(suite(tmp_path, "agent"), evaluators=[
        {"type": "contains", "search_text": "42"}])
    assert recorded(agents_on_path, program)["argv"] == argv
    assert result.records[0].execution.output == answer


def test_a_prompt_is_one_argument_whatever_it_holds(tmp_path, agents_on_path):
    targets(tmp_path, "targets:\n  - {name: claude, provider: claude}\n")
    path = tmp_path / "EVAL.yaml"
    path.write_text('evalcases:\n  - {id: x, expected_outcome: y, input: "$(touch pwned); '
                    'echo `id`"}\nexecution:\n  target: claude\n  evaluators: [contains]\n')
    assay.evaluate(path, evaluators=[{"type": "contains", "search_text": "42"}])
    assert recorded(agents_on_path, "claude")["argv"][-1] == "$(touch pwned); echo `id`"
    assert not (tmp_path / "pwned").exists()


def test_a_missing_agent_is_refused_before_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    targets(tmp_path, "targets:\n  - {name: claude, provider: claude-code}\n")
    with pytest.raises(assay.ConfigError, match="'claude' is not installed"):
        assay.evaluate(suite(tmp_path, "claude"), evaluators=["contains"])
