"""Targets files (discovery, secrets, redaction, problems) and every kind of target, for real."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.llm.engine import JudgeEngine
from assay.llm.providers.http_session import close_session
from assay.targets.base import Target
from assay.targets.callable import CallableTarget
from assay.targets.chat_model import ChatModelTarget
from assay.targets.command import CommandTarget
from assay.targets.config import (
    TargetConfig,
    build_target,
    find_targets_file,
    load_targets,
    load_targets_for,
    read_targets,
    validate_targets,
)
from assay.targets.http import HttpTarget, read_response
from assay.targets.recorded import RecordedTarget, load_recorded
from assay.testing.mock_server import RunningServer
from assay.types.case import Case
from assay.types.messages import Message


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def one_target(tmp_path: Path, body: str) -> TargetConfig:
    path = write(tmp_path, ".assay/targets.yaml", "targets:\n" + textwrap.indent(
        textwrap.dedent(body).lstrip("\n"), "  "))
    targets = load_targets(path)
    return next(iter(targets.targets.values()))


def build(tmp_path: Path, body: str, engine: JudgeEngine | None = None) -> Target:
    return build_target(one_target(tmp_path, body), tmp_path, engine)


# -- targets files --------------------------------------------------------------------------


def test_discovery_walks_up_and_prefers_assay(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    agentv = write(tmp_path, ".agentv/targets.yaml", "targets: []\n")
    assert find_targets_file(deep) == agentv.resolve()
    assay = write(tmp_path, ".assay/targets.yaml", "targets: []\n")
    assert find_targets_file(deep) == assay.resolve()
    nearer = write(tmp_path / "a", ".agentv/targets.yaml", "targets: []\n")
    assert find_targets_file(deep / "EVAL.yaml") == nearer.resolve()
    explicit = write(tmp_path, "elsewhere.yaml", "targets: []\n")
    found = load_targets_for(deep, explicit)
    assert found is not None and found.path == explicit
    with pytest.raises(ConfigError, match="does not exist"):
        load_targets_for(deep, tmp_path / "nope.yaml")


def test_secrets_are_interpolated_and_redacted(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", "s3cret-token-value")
    monkeypatch.setenv("AGENT_HOST", "agent.example.com")
    path = write(tmp_path, ".assay/targets.yaml", """
        targets:
          - name: api
            provider: http
            url: "https://${{ AGENT_HOST }}/chat"
            headers:
              Authorization: "Bearer ${{AGENT_TOKEN}}"
              X-Api-Key: pasted-literal-key
            workers: 3
    """)
    targets = load_targets(path)
    api = targets.require("api")
    assert api.settings["url"] == "https://agent.example.com/chat"
    assert api.settings["headers"]["Authorization"] == "Bearer s3cret-token-value"
    assert api.workers == 3
    assert targets.redacted() == {"targets": [{
        "name": "api", "provider": "http", "workers": 3,
        "url": "https://${{ AGENT_HOST }}/chat",
        "headers": {"Authorization": "Bearer ${{AGENT_TOKEN}}",
                    "X-Api-Key": "<redacted>"}}]}
    assert "s3cret" not in repr(api) and "s3cret" not in repr(targets)
    assert api.scrub("failed: Bearer s3cret-token-value") == \
        "failed: Bearer ${{ AGENT_TOKEN }}"
    built = build_target(api, tmp_path)
    assert isinstance(built, HttpTarget) and built.workers == 3


def test_dotenv_beside_targets_file_fills_gaps(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FROM_DOTENV", raising=False)
    monkeypatch.setenv("BOTH", "environment-wins")
    write(tmp_path, ".assay/.env", "# secrets\nexport FROM_DOTENV='dotenv value'\nBOTH=dotenv\n")
    path = write(tmp_path, ".assay/targets.yaml", """
        targets:
          - {name: t, provider: cli, command: "echo ${{ FROM_DOTENV }} ${{ BOTH }}"}
    """)
    config = load_targets(path).require("t")
    assert config.settings["command"] == "echo dotenv value environment-wins"
    assert config.redacted()["command"] == "echo ${{ FROM_DOTENV }} ${{ BOTH }}"


def test_missing_environment_variable_names_target_field_and_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MISSING_KEY", raising=False)
    path = write(tmp_path, "targets.yaml", """
        targets:
          - name: api
            provider: http
            url: http://127.0.0.1:1/chat
            headers: {Authorization: "Bearer ${{ MISSING_KEY }}"}
    """)
    with pytest.raises(ConfigError) as caught:
        load_targets(path)
    assert caught.value.code == "invalid_targets"
    assert (f"{path}:5:30: target 'api', field 'headers.Authorization': environment "
            "variable MISSING_KEY is not set") in caught.value.message


def test_unknown_provider_lists_the_known_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "targets.yaml", "targets:\n  - {name: x, provider: claude-desk}\n")
    problems = validate_targets(path)
    assert len(problems) == 1
    assert str(problems[0]).startswith(
        f"{path}:2:25: target 'x': unknown provider 'claude-desk'; known: python, callable, "
        "cli, command, http, recorded, transcript, mock, claude-code")
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        build_target({"name": "y", "provider": "nope"}, tmp_path)


def test_targets_file_problems_are_all_located(tmp_path: Path) -> None:
    path = write(tmp_path, "targets.yaml", """
        targets:
          - {name: a, provider: cli, comand: "echo hi"}
          - {name: a, provider: http, url: "http://x"}
          - {name: b, provider: "fake:m", judge_target: nobody, workers: 0}
          - {provider: http, url: "http://x"}
    """)
    rendered = [str(p) for p in validate_targets(path)]
    assert rendered == [
        f"{path}:2:5: target 'a': missing 'command' or 'command_template' (expected: a "
        "command string or a list of arguments)",
        f"{path}:2:30: target 'a': unknown field 'comand' for this provider (expected: one of "
        "name, provider, judge_target, grader_target, workers, resources, command, "
        "command_template, timeout_s, timeout_seconds, cwd, env, keep_temp_files)",
        f"{path}:3:6: duplicate target name 'a' (first at line 2) (expected: each target "
        "name once)",
        f"{path}:4:66: workers 0 is not accepted (expected: a whole number of cases or calls "
        "in flight from 1 to 1024)",
        f"{path}:5:5: target has no name (expected: name: a non-empty string)",
    ]
    lenient = read_targets(path, strict=False)
    assert lenient.names() == ["a"]


def test_judge_target_must_be_a_chat_model_target(tmp_path: Path) -> None:
    path = write(tmp_path, "targets.yaml", """
        targets:
          - {name: agent, provider: "fake:a", judge_target: judge}
          - {name: cmd, provider: cli, command: echo, judge_target: agent}
          - {name: other, provider: cli, command: echo, judge_target: cmd}
    """)
    assert [p.message for p in validate_targets(path)] == [
        "judge_target 'judge' is not a target in this file",
        "judge_target 'cmd' is not a chat model, so it cannot judge"]


# -- python callables -------------------------------------------------------------------------

AGENT = '''
from __future__ import annotations

import asyncio

from assay.types import Case, Execution


def answer(question):
    if question == "boom":
        raise ValueError("agent exploded")
    return f"sync: {question}"


async def answer_async(question):
    await asyncio.sleep(0)
    return {"echo": question}


def whole_case(case: Case) -> Execution:
    return Execution(output=f"{case.id}: {case.question()}", latency_ms=1.5)


def messages(value):
    return [m["role"] for m in value]
'''


async def test_callable_sync_function_from_the_suite_directory(tmp_path: Path) -> None:
    write(tmp_path, "agent.py", AGENT)
    target = build(tmp_path, """
        - {name: py, provider: python, function: "agent:answer"}
    """)
    assert isinstance(target, CallableTarget) and target.name == "py"
    execution = await target.run(Case(id="a", input="hello"))
    assert execution.output == "sync: hello"
    assert execution.input == "hello"
    assert execution.latency_ms is not None and execution.latency_ms >= 0
    assert execution.error is None
    failed = await target.run(Case(id="b", input="boom"))
    assert failed.output is None
    assert failed.error == "agent function raised ValueError: agent exploded"


async def test_callable_async_case_and_messages(tmp_path: Path) -> None:
    write(tmp_path, "agent.py", AGENT)
    run_async = build(tmp_path, "- {name: a, provider: callable, function: agent:answer_async}")
    assert (await run_async.run(Case(id="x", input={"q": 1}))).output == {"echo": {"q": 1}}

    whole = build(tmp_path, "- {name: c, provider: python, function: agent:whole_case}")
    execution = await whole.run(Case(id="c1", input="what?"))
    assert execution.output == "c1: what?"
    assert execution.latency_ms == 1.5  # the function's own measure is kept
    assert execution.input == "what?"

    roles = build(tmp_path, "- {name: m, provider: python, function: agent:messages}")
    case = Case(id="m", input=[Message(role="system", content="s"),
                               Message(role="user", content="u")])
    assert (await roles.run(case)).output == ["system", "user"]


async def test_callable_file_reference_and_import_errors(tmp_path: Path) -> None:
    write(tmp_path, "agents/bot.py", "def run(text):\n    return text.upper()\n")
    target = build(tmp_path, "- {name: f, provider: python, function: agents/bot.py:run}")
    assert (await target.run(Case(id="a", input="hi"))).output == "HI"
    with pytest.raises(ConfigError, match="has no 'missing'"):
        build(tmp_path, "- {name: g, provider: python, function: agents/bot.py:missing}")
    with pytest.raises(ConfigError, match="cannot import agent module 'no_such_module_xyz'"):
        build(tmp_path, "- {name: h, provider: python, function: no_such_module_xyz:run}")


# -- commands ---------------------------------------------------------------------------------


async def test_command_reads_stdin_and_parses_json_stdout(tmp_path: Path) -> None:
    write(tmp_path, "agent.py", """
        import json, sys
        text = sys.stdin.read()
        print(json.dumps({"heard": text, "words": len(text.split())}))
    """)
    target = build(tmp_path, f"""
        - name: cmd
          provider: cli
          command: ["{sys.executable}", "agent.py"]
    """)
    assert isinstance(target, CommandTarget)
    execution = await target.run(Case(id="a", input="two words"))
    assert execution.error is None
    assert execution.output == {"heard": "two words", "words": 2}
    assert execution.latency_ms is not None and execution.latency_ms > 0
    structured = await target.run(Case(id="b", input={"k": "v"}))
    assert structured.output["heard"] == '{"k": "v"}'


async def test_command_substitutes_input_safely(tmp_path: Path) -> None:
    target = build(tmp_path, """
        - {name: sh, provider: command, command: "printf '%s|' {input} {PROMPT}"}
    """)
    hostile = "x'; touch pwned; echo '"
    execution = await target.run(Case(id="a", input=hostile))
    assert execution.output == f"{hostile}|{hostile}|"
    assert not (tmp_path / "pwned").exists()
    argv = build(tmp_path, "- {name: argv, provider: cli, command: [echo, 'q={input}']}")
    assert (await argv.run(Case(id="b", input="a b"))).output == "q=a b"


async def test_command_failures_become_execution_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CMD_SECRET", "hunter2-secret")
    failing = build(tmp_path, """
        - name: f
          provider: cli
          command: "echo partial; echo 'it broke' ${{ CMD_SECRET }} >&2; exit 3"
    """)
    execution = await failing.run(Case(id="a", input="x"))
    assert execution.error == \
        "command exited with status 3; stderr: it broke ${{ CMD_SECRET }}"
    assert execution.output is None

    slow = build(tmp_path, "- {name: s, provider: cli, command: 'sleep 5', timeout_s: 0.2}")
    timed_out = await slow.run(Case(id="b", input="x"))
    assert timed_out.error == "command timed out after 0.2s and was killed"

    missing = build(tmp_path, "- {name: m, provider: cli, command: [/no/such/binary]}")
    with pytest.raises(ConfigError, match="not found"):
        await missing.preflight()
    result = await missing.run(Case(id="c", input="x"))
    assert result.error is not None and "could not start" in result.error


# -- HTTP -------------------------------------------------------------------------------------


async def test_http_target_against_the_mock_server(tmp_path: Path,
                                                   mock_server: RunningServer) -> None:
    target = build(tmp_path, f"""
        - name: api
          provider: http
          url: {mock_server.url}/chat/completions
          model: agent-model
          headers: {{X-Trace: "1"}}
    """)
    try:
        execution = await target.run(Case(id="a", input="What is 2+2?"))
        assert execution.error is None
        assert execution.output == "mock answer: What is 2+2?"
        assert execution.messages == [Message(role="assistant",
                                              content="mock answer: What is 2+2?")]
        assert execution.usage is not None and execution.usage.prompt_tokens > 0
        assert execution.latency_ms is not None and execution.latency_ms > 0
        assert mock_server.stats.models == {"agent-model": 1}
    finally:
        await close_session()


async def test_http_target_failure_is_an_execution_error(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         mock_server: RunningServer) -> None:
    monkeypatch.setenv("TOKEN_FOR_TEST", "tok-123456")
    target = build(tmp_path, f"""
        - name: api
          provider: http
          url: "{mock_server.url}/no-such-route?key=${{{{ TOKEN_FOR_TEST }}}}"
    """)
    try:
        execution = await target.run(Case(id="a", input="x"))
    finally:
        await close_session()
    assert execution.error is not None and "HTTP 404" in execution.error
    assert "tok-123456" not in execution.error  # secrets never reach stored errors


def test_http_reads_plain_output_bodies() -> None:
    case = Case(id="a", input="x")
    execution = read_response(case, {"output": {"answer": 4}, "messages": [
        {"role": "assistant", "content": "4"}], "usage": {"input_tokens": 3}}, 12.0)
    assert execution.output == {"answer": 4}
    assert execution.messages[0].content == "4"
    assert execution.usage is not None and execution.usage.prompt_tokens == 3
    with pytest.raises(ValueError, match="expected choices"):
        read_response(case, {"result": 1}, 1.0)


# -- chat models ------------------------------------------------------------------------------


async def test_chat_model_target_through_the_engine(
        tmp_path: Path, mock_server: RunningServer,
        engine_factory: Callable[..., JudgeEngine]) -> None:
    engine = engine_factory()
    target = build(tmp_path, f"""
        - name: model
          provider: "{mock_server.url}#m"
          system_prompt: Be brief.
          temperature: 0
    """, engine)
    assert isinstance(target, ChatModelTarget)
    try:
        execution = await target.run(Case(id="a", input="Name a colour"))
    finally:
        await engine.aclose()
    assert execution.error is None
    assert execution.output == "mock answer: Name a colour"
    assert execution.messages[0].role == "assistant"
    assert execution.usage is not None and execution.usage.completion_tokens > 0
    assert execution.latency_ms is not None and execution.latency_ms > 0
    assert mock_server.stats.models == {"m": 1}


async def test_chat_model_from_provider_and_model_fields(tmp_path: Path) -> None:
    target = build(tmp_path, "- {name: f, provider: fake, model: agent}")
    assert isinstance(target, ChatModelTarget) and target.model == "fake:agent"
    try:
        execution = await target.run(Case(id="a", input=[Message(role="user", content="hi")]))
    finally:
        await target.aclose()
    assert execution.output == "mock answer: hi"


async def test_chat_model_failure_is_an_execution_error(
        engine_factory: Callable[..., JudgeEngine]) -> None:
    engine = engine_factory()
    target = ChatModelTarget("http://127.0.0.1:9/v1#m", engine)
    engine.config.retry.max_attempts = 1
    try:
        execution = await target.run(Case(id="a", input="x"))
    finally:
        await engine.aclose()
    assert execution.error is not None and execution.error.startswith(
        "model http://127.0.0.1:9/v1#m failed")


# -- recorded outputs -------------------------------------------------------------------------


async def test_recorded_outputs_by_case_id(tmp_path: Path) -> None:
    rows = [{"id": "a", "output": "first"}, {"eval_id": "b", "candidate_answer": "B",
                                             "score": 0.4, "latency_ms": 20},
            {"id": "a", "output": {"final": True}}]
    write(tmp_path, "out/outputs.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    target = build(tmp_path, "- {name: rec, provider: recorded, path: out/outputs.jsonl}")
    assert isinstance(target, RecordedTarget) and target.name == "rec"
    assert (await target.run(Case(id="a"))).output == {"final": True}  # the last row wins
    b = await target.run(Case(id="b"))
    assert (b.output, b.latency_ms) == ("B", 20)
    missing = await target.run(Case(id="zzz"))
    assert missing.error == "no recorded output for case 'zzz'"


def test_recorded_problems_name_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "o.jsonl", '{"id": "a", "output": 1}\n{"output": 2}\n')
    with pytest.raises(ConfigError, match=r"o\.jsonl:2: a row needs an 'id'"):
        load_recorded(path)
    bad = write(tmp_path, "p.jsonl", '{"id": "a", "output": 1}\n{nope\n')
    with pytest.raises(ConfigError, match=r"p\.jsonl:2: invalid JSON"):
        load_recorded(bad)


def test_build_target_from_an_inline_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    target = build_target({"name": "quick", "provider": "fake:x"}, tmp_path)
    assert isinstance(target, ChatModelTarget) and target.name == "quick"
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(ConfigError, match="NOT_SET_ANYWHERE is not set"):
        build_target({"name": "q", "provider": "cli", "command": "${{ NOT_SET_ANYWHERE }}"},
                     tmp_path)
