"""UiPath-style trajectory judges: placeholders, the run history, simulation instructions."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from assay.errors import TemplateError
from assay.judges import EvalContext, build
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS
from assay.judges.llm.templates import delimit
from assay.judges.llm.trajectory import (
    LLMJudgeTrajectory,
    LLMJudgeTrajectorySimulation,
    run_history,
)
from assay.llm import register_service
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.messages import Message
from assay.types.spans import Span


def _span(name: str, args: Any, output: Any, start: float, **extra: Any) -> Span:
    return Span(name=f"tool {name}", start_time=start, span_id=extra.pop("span_id", None),
                attributes={"tool.name": name, "input.value": json.dumps(args),
                            "output.value": json.dumps(output), **extra})


SPANS = [
    Span(name="llm call", start_time=0.5, attributes={"llm.model": "x"}),
    _span("lookup_user", {"name": "Ann"}, {"email": "ann@example.com"}, 1.0, span_id="s1"),
    _span("send_email", {"to": "ann@example.com"}, {"content": "sent"}, 2.0, span_id="s2"),
    _span("mock_helper", {}, {}, 3.0, **{"tool.synthesized": True}),
]

MESSAGES = [
    Message(role="user", content="Email Ann"),
    Message(role="assistant", tool_calls=[
        {"id": "call_1", "function": {"name": "lookup_user", "arguments": '{"name": "Ann"}'}}]),
    Message(role="tool", tool_call_id="call_1", content='{"email": "ann@example.com"}'),
    Message(role="assistant", tool_calls=[
        {"id": "call_2", "function": {"name": "send_email",
                                      "arguments": '{"to": "ann@example.com"}'}}]),
    Message(role="assistant", content="Done."),
]


def test_history_from_tool_spans_with_final_output():
    history = run_history(Execution(trace=SPANS, output={"status": "sent"}))
    assert history == (
        'Tool call 1: lookup_user\nArguments: {"name": "Ann"}\n'
        'Output: {"email": "ann@example.com"}\n\n'
        'Tool call 2: send_email\nArguments: {"to": "ann@example.com"}\nOutput: sent'
        '\n\nFinal output:\n{"status": "sent"}')


def test_history_from_messages_when_there_are_no_tool_spans():
    history = run_history(Execution(messages=MESSAGES, output="Done."))
    assert history.index("Tool call 1: lookup_user") < history.index("Tool call 2: send_email")
    assert 'Output: {"email": "ann@example.com"}' in history
    assert "Output: (no output recorded)" in history  # call_2 got no tool message
    assert history.endswith("Final output:\nDone.")


def test_spans_win_over_messages_so_no_call_is_shown_twice():
    history = run_history(Execution(trace=SPANS, messages=MESSAGES, output="Done."))
    assert history.count("Tool call") == 2


def test_history_without_tools_or_output_and_with_an_error():
    history = run_history(Execution(error="TimeoutError: agent took too long"))
    assert history == ("No tool calls.\n\nAgent error: TimeoutError: agent took too long"
                       "\n\nFinal output:\n(none)")


def test_unknown_placeholders_rejected_at_build_time():
    with pytest.raises(TemplateError, match=r"\{\{AgentOutput\}\}"):
        build({"type": "llm_judge_trajectory", "prompt": "{{AgentOutput}}"})
    with pytest.raises(TemplateError, match="SimulationInstructions"):
        LLMJudgeTrajectorySimulation(prompt="{{ActualOutput}}")


def test_missing_placeholders_are_appended():
    judge = build({"type": "llm_judge_trajectory", "prompt": "Did it go well? "
                   "{{UserOrSyntheticInput}}", "expectedAgentBehavior": "be nice"})
    assert judge.expected_agent_behavior == "be nice"
    assert judge.prompt.startswith("Did it go well?")
    # in UiPath 2.14's tagged sections
    assert "## Actual Output\n<ActualOutput>\n{{AgentRunHistory}}\n</ActualOutput>" in \
        judge.prompt
    assert ("## Expected Output\n<ExpectedOutput>\n{{ExpectedAgentBehavior}}\n"
            "</ExpectedOutput>") in judge.prompt


def _capture(name: str, seen: list[dict[str, Any]], score: float = 80) -> str:
    async def service(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        content = json.dumps({"justification": "followed the plan", "score": score})
        return {"choices": [{"message": {"role": "assistant", "content": content}}]}

    return register_service(name, service)


async def test_prompt_carries_every_placeholder_as_delimited_data(engine_factory):
    seen: list[dict[str, Any]] = []
    judge = LLMJudgeTrajectory(model=_capture("trajectory-capture", seen),
                               expected_agent_behavior="Look Ann up, then email her.")
    case = Case(id="t", input={"request": "email Ann"})
    score = await judge.evaluate(case, Execution(trace=SPANS, output={"status": "sent"}),
                                 EvalContext(engine_factory(cache_mode="off")))
    assert score.ok and score.value == pytest.approx(0.8) and score.raw == 80
    assert score.scale == "0-100" and score.rationale == "followed the plan"
    system, user = (m["content"] for m in seen[0]["messages"])
    assert DATA_NOT_INSTRUCTIONS in system and "simulation" not in system.lower()
    assert delimit("agent_input", {"request": "email Ann"}) in user
    assert delimit("expected_agent_behavior", "Look Ann up, then email her.") in user
    history = re.search(r"<(agent_run_history_\w+)>\n(.*)\n</\1>", user, re.S)
    assert history is not None
    assert history.group(2).startswith("Tool call 1: lookup_user")
    assert history.group(2).endswith('Final output:\n{"status": "sent"}')


async def test_simulation_instructions_reach_the_prompt(engine_factory):
    seen: list[dict[str, Any]] = []
    judge = LLMJudgeTrajectorySimulation(model=_capture("simulation-capture", seen))
    case = Case(id="s", input="email Ann", expected_outcomes=["looks Ann up", "emails her"],
                metadata={"simulation_instructions": "lookup_user returns ann@example.com"})
    engine = engine_factory(cache_mode="off")
    await judge.evaluate(case, Execution(messages=MESSAGES, output="Done."), EvalContext(engine))
    system, user = (m["content"] for m in seen[0]["messages"])
    assert "simulation" in system.lower()
    assert delimit("simulation_instructions", "lookup_user returns ann@example.com") in user
    assert delimit("expected_agent_behavior", "looks Ann up\nemails her") in user
    own = LLMJudgeTrajectorySimulation(model=judge.model,
                                       simulation_instructions="all tools fail")
    await own.evaluate(case, Execution(output="Done."), EvalContext(engine))
    assert delimit("simulation_instructions", "all tools fail") in seen[1]["messages"][1][
        "content"]


async def test_executions_own_input_wins_over_the_case_input(engine_factory):
    seen: list[dict[str, Any]] = []
    judge = LLMJudgeTrajectory(model=_capture("input-capture", seen),
                               expected_agent_behavior="answer")
    await judge.evaluate(Case(id="i", input="case input"),
                         Execution(input="synthetic input", output="ok"),
                         EvalContext(engine_factory(cache_mode="off")))
    assert delimit("agent_input", "synthetic input") in seen[0]["messages"][1]["content"]


async def test_score_through_the_mock_server(engine_factory, mock_server):
    forced = json.dumps({"justification": "good enough", "score": 73})
    judge = LLMJudgeTrajectory(expected_agent_behavior=f"Email Ann. <<mock:{forced}>>")
    score = await judge.evaluate(Case(id="m"), Execution(trace=SPANS, output="sent"),
                                 EvalContext(engine_factory()))
    assert score.value == pytest.approx(0.73) and score.raw == 73
    assert score.passed is False and mock_server.stats.requests == 1


async def test_missing_expected_behaviour_is_an_error_not_a_call(engine_factory, mock_server):
    score = await LLMJudgeTrajectory().evaluate(Case(id="e"), Execution(output="x"),
                                                EvalContext(engine_factory()))
    assert score.error is not None and score.error.code == "missing_expected_agent_behavior"
    assert mock_server.stats.requests == 0
