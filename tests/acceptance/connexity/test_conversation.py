"""Acceptance tests C-24 to C-30: conversations with scripted and simulated users, and how the
judge and the simulated user see them; an end-to-end conversation against the mock server."""

from __future__ import annotations

import json
import re
import textwrap
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.judges.llm.connexity import render_transcript
from assay.targets.base import Target
from assay.targets.callable import CallableTarget, load_function
from assay.targets.conversation import (
    STOP_SIGNAL,
    TOOL_CALLS_ONLY,
    ConversationTarget,
    converse,
    simulator_messages,
)
from assay.types.case import Case, ConversationSettings, ConversationSpec
from assay.types.execution import Execution
from assay.types.messages import Message
from tests.acceptance.connexity.harness import HERE, agent_calls, judge_record, run
from tests.acceptance.stub import Raw

CONVERSATION = HERE / "conversation.yaml"


def _roles(record: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text()) for m in record.execution.messages]


@pytest.fixture
def simulated(stub):
    """The stub also plays the simulated user: after the agent's greeting it asks about its
    order, and once the agent says the order shipped it ends the conversation."""
    stub.table.update({"how can I help": Raw("Where is my order?"),
                       "It shipped.": Raw(STOP_SIGNAL)})
    agent_calls().clear()
    return stub


def test_c24_the_agent_answers_the_last_scripted_message(simulated, store):
    run_id = run(store, CONVERSATION, "--filter", "C24")[2]
    record, score = judge_record(store, run_id, "C24")
    assert _roles(record) == [("user", "hi"), ("assistant", "echo: hi"), ("user", "a"),
                              ("assistant", "echo: a"), ("user", "b"),
                              ("assistant", "echo: b")]
    assert record.execution.conversation.stop_reason == "script_exhausted"
    assert agent_calls()["C24"] == 3
    assert score.value is not None  # judged


def test_c25_max_turns_bounds_a_user_who_never_stops(simulated, store):
    run_id = run(store, CONVERSATION, "--filter", "C25")[2]
    record, _ = judge_record(store, run_id, "C25")
    assert [r for r, _ in _roles(record)] == ["user", "assistant", "user", "assistant"]
    assert _roles(record)[2] == ("user", "more please")
    assert record.execution.conversation.stop_reason == "max_turns"
    assert agent_calls()["C25"] == 2


def test_c26_the_agent_speaks_first(simulated, store):
    run_id = run(store, CONVERSATION, "--filter", "C26*")[2]
    one, _ = judge_record(store, run_id, "C26a")
    assert _roles(one) == [("assistant", "Hello, how can I help?")]
    assert one.execution.conversation.stop_reason == "max_turns"
    assert agent_calls()["C26a"] == 0
    two, _ = judge_record(store, run_id, "C26b")
    assert _roles(two) == [("assistant", "Hello, how can I help?"),
                           ("user", "Where is my order?"),
                           ("assistant", "echo: Where is my order?")]
    assert agent_calls()["C26b"] == 1


def test_c27_a_terminating_tool_ends_the_conversation(simulated, store):
    run_id = run(store, CONVERSATION, "--filter", "C27")[2]
    record, _ = judge_record(store, run_id, "C27")
    assert [r for r, _ in _roles(record)] == ["user", "assistant", "user", "assistant"]
    last = record.execution.messages[-1]
    assert last.tool_calls and last.tool_calls[0].function.name == "end_call"
    assert record.execution.conversation.stop_reason == "terminating_tool"


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _SlowAgent(Target):
    """Takes 200 ms a turn on the injected clock."""

    name = "slow"

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.calls = 0

    async def run(self, case: Case) -> Execution:
        self.calls += 1
        self.clock.now += 0.2
        return Execution(output=f"reply {self.calls}", latency_ms=200.0)


async def test_c28_a_timeout_is_a_stop_reason_not_a_turn():
    clock = _Clock()
    agent = _SlowAgent(clock)
    case = Case(id="C28", conversation=ConversationSpec(
        first_message="start", scripted_messages=[f"m{i}" for i in range(20)]))
    settings = ConversationSettings(timeout_per_test_case_ms=300, max_turns=None)
    execution = await converse(agent, case, settings, clock=clock)
    assert execution.conversation.stop_reason == "timeout"
    assert [m.role for m in execution.messages] == ["user", "assistant", "user", "assistant",
                                                     "user"]
    assert not any(m.text().startswith("[platform:") for m in execution.messages)
    assert agent.calls == 2 and execution.error is None


def test_c28_a_timed_out_case_is_still_judged(simulated, store, tmp_path):
    clock = _Clock()
    suite = tmp_path / "timeout.yaml"
    suite.write_text(textwrap.dedent("""\
        scoring: connexity
        conversation: {timeout_per_test_case_ms: 300, max_turns: null}
        execution:
          evaluators:
            - {type: connexity_judge, model: "custom:stub"}
        evalcases:
          - id: C28
            first_message: start
            scripted_messages: [m1, m2, m3, m4, m5, m6]
            evaluation_criteria_override: "⟦conversation-judge⟧"
        """), encoding="utf-8")
    from assay.run.evaluate import load_data

    loaded = load_data(suite)
    target = ConversationTarget(_SlowAgent(clock), None, loaded.conversation, clock=clock)
    result = assay.evaluate(loaded, target=target, store=store, cache="off")
    record = result.records[0]
    assert record.execution.conversation.stop_reason == "timeout"
    assert record.scores[0].value is not None  # judged on what was said


def test_c29_the_judge_reads_the_transcript_turn_by_turn(stub, store):
    agent = load_function("agents.py:order_desk", HERE.parent)
    case = Case(id="C29", input="Where is order A-17?", evaluation_criteria_override="⟦C29⟧")
    stub.table["⟦C29⟧"] = {"scores": [4] * 8}
    result = assay.evaluate([case], target=agent, store=store, cache="off",
                            evaluators=[{"type": "connexity_judge", "model": "custom:stub"}])
    assert result.records[0].scores[0].error is None
    prompt = stub.requests[-1]["messages"][-1]["content"]
    block = re.search(r"<transcript_[0-9a-f]+>\n(.*?)\n</transcript_", prompt, re.S)
    assert block is not None
    assert block.group(1) == (
        "Turn 0 [user]: Where is order A-17?\n"
        "Turn 1 [assistant]: (no text)\n"
        "  tool_calls:\n"
        '    call: lookup_order({"order_id": "A-17"})\n'
        'Turn 2 [tool → lookup_order]: {"status": "shipped"}\n'
        "Turn 3 [assistant]: It shipped.")


C29_TRANSCRIPT = [
    Message(role="user", content="Where is order A-17?"),
    Message.model_validate({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "lookup_order", "arguments": '{"order_id":"A-17"}'}}]}),
    Message(role="tool", tool_call_id="c1", content='{"status":"shipped"}'),
    Message(role="assistant", content="It shipped."),
]


def test_c29_rendering_of_unknown_tools_and_empty_results():
    lines = render_transcript([
        Message(role="tool", tool_call_id="nope", content=""),
        Message(role="assistant", content="  "),
    ]).splitlines()
    assert lines == ["Turn 0 [tool → unknown]: (empty)", "Turn 1 [assistant]: (no text)"]


def test_c30_the_simulated_user_sees_the_roles_flipped():
    transcript = [Message(role="system", content="You are a shop assistant."), *C29_TRANSCRIPT]
    messages = simulator_messages("SIMULATOR PROMPT", transcript)
    assert messages == [
        {"role": "system", "content": "SIMULATOR PROMPT"},
        {"role": "assistant", "content": "Where is order A-17?"},  # kept: the user's own
        {"role": "user", "content": TOOL_CALLS_ONLY},
        {"role": "user", "content": "It shipped."}]


def test_c30_the_simulator_request_of_a_run(simulated, store):
    run_id = run(store, CONVERSATION, "--filter", "C30")[2]
    record, _ = judge_record(store, run_id, "C30")
    assert record.execution.conversation.stop_reason == "user_ended"
    asked = [r for r in simulated.requests
             if "You are playing the USER" in r["messages"][0]["content"]]
    assert len(asked) == 1
    assert [(m["role"], m["content"]) for m in asked[0]["messages"][1:]] == [
        ("assistant", "Where is order A-17?"), ("user", TOOL_CALLS_ONLY),
        ("user", "It shipped.")]
    system = asked[0]["messages"][0]["content"]
    assert "PERSONA CONTEXT\n(no persona specified)" in system
    assert '"order_id": "A-17"' in system  # the background only the user knows
    tools = record.scores[1]
    assert tools.name == "expected_tool_calls" and tools.value == 1.0


# -- end to end: a simulated user on the mock server and a Python agent ----------------------

SHOP = """
import json


def shop(messages):
    \"\"\"A tiny order desk: looks orders up with a tool and says what it found.\"\"\"
    last = [m for m in messages if m["role"] == "user"][-1]["content"]
    if "order" not in last.lower():
        return "Hello! How can I help you today?"
    call = {"id": "t1", "type": "function",
            "function": {"name": "lookup_order", "arguments": json.dumps({"id": "A-17"})}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "t1", "content": json.dumps({"status": "shipped"})},
            {"role": "assistant", "content": "Your order A-17 has shipped."}]
"""


def test_a_conversation_end_to_end_against_the_mock_server(tmp_path, mock_server, mock_model):
    (tmp_path / "shop.py").write_text(SHOP, encoding="utf-8")
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: shop\n    provider: python\n    function: shop:shop\n",
        encoding="utf-8")
    # The mock answers the simulated user from this directive: an opening, then the stop.
    persona = json.dumps("A customer checking on an order. <<mock-seq:"
                         + json.dumps(["Hi, where is my order A-17?", STOP_SIGNAL]) + ">>")
    (tmp_path / "EVAL.yaml").write_text(textwrap.dedent(f"""\
        name: shop
        scoring: connexity
        thresholds: {{metrics_pass_threshold: 0, cases_pass_threshold: 0}}
        conversation:
          max_turns: 4
          simulator: {{model: "{mock_model}"}}
        agent:
          system_prompt: You are the order desk of a shop.
          tools: [{{type: function, function: {{name: lookup_order}}}}]
        execution:
          target: shop
          evaluators:
            - {{type: connexity_judge, model: "{mock_model}"}}
            - {{type: expected_tool_calls}}
        evalcases:
          - id: where-is-my-order
            persona: {persona}
            user_context: {{order_id: A-17}}
            expected_outcomes: [The agent tells the user that order A-17 has shipped]
            expected_tool_calls: [{{tool: lookup_order, expected_params: {{id: A-17}}}}]
        """), encoding="utf-8")
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    result = assay.evaluate(tmp_path / "EVAL.yaml", store=store)
    record = result.records[0]
    conversation = record.execution.conversation
    assert conversation.stop_reason == "user_ended"
    assert [m.role for m in record.execution.messages] == ["user", "assistant", "tool",
                                                            "assistant"]
    assert record.execution.messages[0].text() == "Hi, where is my order A-17?"
    assert conversation.simulator_usage.calls == 2
    judge, tools = record.scores
    assert judge.error is None and judge.details["expected_outcome_results"][0]["index"] == 1
    assert len(judge.details["metric_scores"]) == 8
    assert tools.value == 1.0
    assert result.summary.simulator_usage.calls == 2
    assert result.summary.stop_reasons == {"user_ended": 1}
    assert mock_server.stats.requests == 3  # two user turns, one judgement
    # The same user is met again: with the cache, a second run asks the model nothing new.
    again = assay.evaluate(tmp_path / "EVAL.yaml", store=store)
    assert again.records[0].execution.messages[0].text() == "Hi, where is my order A-17?"
    assert again.records[0].execution.conversation.stop_reason == "user_ended"
    assert mock_server.stats.requests == 3


def test_callable_agents_hold_a_conversation_through_run_turn():
    async def agent(messages: list[dict[str, Any]]) -> str:
        return f"{len(messages)} message(s) so far"

    target = CallableTarget(agent)
    case = Case(id="x", conversation=ConversationSpec(first_message="a",
                                                      scripted_messages=["b"]))

    async def go() -> Execution:
        return await converse(target, case, ConversationSettings())

    import asyncio

    execution = asyncio.run(go())
    assert [m.text() for m in execution.messages] == [
        "a", "1 message(s) so far", "b", "3 message(s) so far"]


def test_a_conversation_without_an_agent_is_a_clear_error(tmp_path: Path) -> None:
    """A conversation suite without a target is a clear error, not a run of nothing."""
    suite = tmp_path / "s.yaml"
    suite.write_text('evalcases:\n  - {id: a, first_message: hi, scripted_messages: [x]}\n',
                     encoding="utf-8")
    with pytest.raises(assay.ConfigError, match="conversations, which need an agent"):
        assay.evaluate(suite, evaluators=["exact_match"])


async def test_an_http_agent_holds_a_conversation_turn_by_turn():
    """The HTTP contract: the conversation so far and the turn's metadata in, the turn's
    assistant and tool messages out."""
    from aiohttp import web

    from assay.targets.http import HttpTarget

    seen: list[dict[str, Any]] = []

    async def respond(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        last = body["messages"][-1]["content"]
        return web.json_response({"messages": [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"t{len(seen)}", "type": "function",
                 "function": {"name": "lookup", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"t{len(seen)}", "content": "found"},
            {"role": "assistant", "content": f"you said {last}"}]})

    app = web.Application()
    app.router.add_post("/agent/respond", respond)
    server = web.AppRunner(app)
    await server.setup()
    site = web.TCPSite(server, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        target = HttpTarget(f"http://127.0.0.1:{port}/agent/respond")
        case = Case(id="web", conversation=ConversationSpec(first_message="hello",
                                                            scripted_messages=["bye"]))
        execution = await converse(target, case, ConversationSettings())
    finally:
        await server.cleanup()
    assert [b["metadata"] for b in seen] == [{"test_case_id": "web", "turn_index": 0},
                                             {"test_case_id": "web", "turn_index": 1}]
    assert [m["role"] for m in seen[1]["messages"]] == ["user", "assistant", "tool",
                                                         "assistant", "user"]
    assert not any("latency_ms" in m for m in seen[1]["messages"])  # chat fields only
    assert [m.role for m in execution.messages] == ["user", "assistant", "tool", "assistant"] * 2
    assert execution.output == "you said bye"
    assert execution.conversation.stop_reason == "script_exhausted"
    assert len(execution.conversation.turn_latencies_ms) == 2


# -- an HTTP agent under assay run -------------------------------------------------------


class _Agent(BaseHTTPRequestHandler):
    """POST /agent/respond: Connexity's custom-endpoint contract, recording each body."""

    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        last = body["messages"][-1]["content"]
        reply = json.dumps({"messages": [{"role": "assistant", "content": f"you said {last}"}],
                            "usage": {"prompt_tokens": 12, "completion_tokens": 3,
                                      "total_tokens": 15}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_suite(tmp_path: Path) -> Any:
    """A conversation suite whose agent is an HTTP endpoint named in its targets file."""
    _Agent.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(textwrap.dedent(f"""\
        targets:
          - name: web
            provider: http
            url: http://127.0.0.1:{server.server_address[1]}/agent/respond
        """), encoding="utf-8")
    suite = tmp_path / "web.yaml"
    suite.write_text(textwrap.dedent("""\
        scoring: connexity
        execution:
          target: web
          evaluators:
            - {type: connexity_judge, model: "custom:stub"}
        evalcases:
          - id: web-case
            first_message: hello
            scripted_messages: [bye]
            evaluation_criteria_override: "⟦conversation-judge⟧"
        """), encoding="utf-8")
    yield suite
    server.shutdown()
    server.server_close()


def test_an_http_agent_gets_the_turn_metadata_under_assay_run(stub, store, http_suite):
    code, out, run_id = run(store, http_suite)
    assert code == 0, out
    # every turn's request carries the case and the agent's round, through every wrapper
    assert [b["metadata"] for b in _Agent.seen] == [
        {"test_case_id": "web-case", "turn_index": 0},
        {"test_case_id": "web-case", "turn_index": 1}]
    record, score = judge_record(store, run_id, "web-case")
    assert [m.text() for m in record.execution.messages] == [
        "hello", "you said hello", "bye", "you said bye"]
    assert score.value is not None


def test_each_turn_records_its_tokens_and_when_it_was_said(stub, store, http_suite):
    before = datetime.now(UTC)
    code, out, run_id = run(store, http_suite)
    assert code == 0, out
    record, _ = judge_record(store, run_id, "web-case")
    turns = [m.model_extra or {} for m in record.execution.messages]
    stamps = [datetime.fromisoformat(t["timestamp"]) for t in turns]
    assert before <= stamps[0] <= stamps[1] <= stamps[2] <= stamps[3] <= datetime.now(UTC)
    assert [t.get("token_count") for t in turns] == [None, 15, None, 15]  # the agent's usage
    assert [("latency_ms" in t) for t in turns] == [False, True, False, True]
    assert not any(k in m for b in _Agent.seen for m in b["messages"]
                   for k in ("timestamp", "token_count", "latency_ms"))  # never sent on


def test_a_simulated_users_turn_records_its_tokens_and_latency(simulated, store):
    run_id = run(store, CONVERSATION, "--filter", "C26b")[2]
    record, _ = judge_record(store, run_id, "C26b")
    user = record.execution.messages[1].model_extra or {}
    assert record.execution.messages[1].role == "user"
    assert user["token_count"] > 0 and user["latency_ms"] >= 0 and "timestamp" in user


async def test_a_turn_running_at_the_time_limit_is_cut_and_said_so():
    """The conversation's limit holds: the agent's second turn, still running at 300 ms, is
    stopped there (not let finish), and the record says which turn was cut."""
    import asyncio
    import time

    async def slow_second(messages: list[dict[str, Any]]) -> str:
        if len(messages) > 1:
            await asyncio.sleep(5)
        return "first answer"

    case = Case(id="cut", conversation=ConversationSpec(first_message="one",
                                                        scripted_messages=["two", "three"]))
    settings = ConversationSettings(timeout_per_test_case_ms=300, max_turns=None)
    started = time.perf_counter()
    execution = await converse(CallableTarget(slow_second), case, settings)
    assert time.perf_counter() - started < 2  # stopped at the limit, not after 5 s
    info = execution.conversation
    assert info.stop_reason == "timeout" and info.cut_turn == 2
    assert info.detail == ("the agent's turn 2 was still running at the conversation's time "
                           "limit (300 ms) and was stopped; its answer is not in the transcript")
    assert [m.text() for m in execution.messages] == ["one", "first answer", "two"]
    assert execution.error is None  # what was said is judged
