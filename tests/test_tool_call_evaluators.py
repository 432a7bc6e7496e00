"""tool_call_order / _count / _args / _output against hand-computed cases."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from assay.errors import EvaluationError
from assay.judges import EvalContext, build
from assay.judges.deterministic.tool_calls import (
    ToolCallArgs,
    ToolCallCount,
    ToolCallOrder,
    ToolCallOutput,
    lcs,
)
from assay.llm import EngineConfig, JudgeEngine
from assay.traces.tools import ToolCallRecord, args_match
from assay.types.case import Case, ToolExpectation
from assay.types.execution import Execution

CASE = Case(id="c")


@pytest.fixture
def ctx() -> Iterator[EvalContext]:
    yield EvalContext(JudgeEngine(EngineConfig(cache_mode="off")))


def span(name: str, args: Any = None, output: Any = None, tool_id: str | None = None,
         ) -> dict[str, Any]:
    attributes: dict[str, Any] = {"tool.name": name}
    if args is not None:
        attributes["input.value"] = json.dumps(args)
    if output is not None:
        attributes["output.value"] = output
    if tool_id is not None:
        attributes["tool.id"] = tool_id
    return {"name": name, "attributes": attributes}


def traced(*spans: dict[str, Any]) -> Execution:
    return Execution(output="done", trace=[{"name": "agent"}, *spans])


async def score(evaluator: Any, execution: Execution, ctx: EvalContext) -> Any:
    result = await evaluator.evaluate(CASE, execution, ctx)
    assert result.error is None, result.error
    return result


SEARCH_FETCH_ANSWER = traced(span("search", {"q": "a"}), span("fetch", {"url": "u"}),
                             span("search", {"q": "b"}), span("answer", {}))


# -- order ---------------------------------------------------------------------------------


def test_lcs_is_longest_in_order() -> None:
    calls = [ToolCallRecord(name=n) for n in ["a", "x", "b", "c", "a"]]
    assert lcs(["a", "b", "a"], calls) == ["a", "b", "a"]
    assert lcs(["c", "b"], calls) in (["c"], ["b"])
    assert lcs(["z"], calls) == []


async def test_order_is_lcs_over_expected(ctx: EvalContext) -> None:
    # actual: search fetch search answer; expected: search search fetch answer.
    # LCS = search fetch answer (or search search answer) = 3 of 4.
    judge = ToolCallOrder(tool_calls_order=["search", "search", "fetch", "answer"])
    result = await score(judge, SEARCH_FETCH_ANSWER, ctx)
    assert result.value == 0.75 and result.passed is False
    assert len(result.details["lcs"]) == 3 and len(result.misses) == 1
    assert result.details["actual"] == ["search", "fetch", "search", "answer"]


async def test_order_extra_calls_do_not_cost(ctx: EvalContext) -> None:
    judge = ToolCallOrder(tool_calls_order=["search", "answer"])
    assert (await score(judge, SEARCH_FETCH_ANSWER, ctx)).value == 1.0


async def test_order_strict_needs_exact_positions(ctx: EvalContext) -> None:
    strict = ToolCallOrder(tool_calls_order=["search", "answer"], strict=True)
    assert (await score(strict, SEARCH_FETCH_ANSWER, ctx)).value == 0.0
    exact = ToolCallOrder(tool_calls_order=["search", "fetch", "search", "answer"], strict=True)
    assert (await score(exact, SEARCH_FETCH_ANSWER, ctx)).value == 1.0


@pytest.mark.parametrize(("expected", "execution", "value"), [
    ([], Execution(), 1.0),
    ([], traced(span("search")), 0.0),
    (["search"], Execution(), 0.0),
])
async def test_order_empty_rules(expected: list[str], execution: Execution, value: float,
                                 ctx: EvalContext) -> None:
    for strict in (False, True):
        judge = ToolCallOrder(tool_calls_order=expected, strict=strict)
        assert (await score(judge, execution, ctx)).value == value


async def test_order_uses_ids_when_calls_have_them(ctx: EvalContext) -> None:
    execution = traced(span("Web Search", tool_id="ws-1"), span("Send Mail"))
    by_id = ToolCallOrder(tool_calls_order=["ws-1", "Send_Mail"])
    assert (await score(by_id, execution, ctx)).value == 1.0
    by_name = ToolCallOrder(tool_calls_order=["Web Search", "Send Mail"])
    assert (await score(by_name, execution, ctx)).value == 0.5


async def test_order_from_messages_without_trace(ctx: EvalContext) -> None:
    execution = Execution(messages=[
        {"role": "assistant", "tool_calls": [
            {"id": "call_9", "function": {"name": "search", "arguments": "{}"}},
            {"id": "call_8", "function": {"name": "answer", "arguments": "{}"}}]}])
    judge = ToolCallOrder(tool_calls_order=["search", "answer"], strict=True)
    assert (await score(judge, execution, ctx)).value == 1.0


# -- count ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("op", "n", "ok"), [
    ("=", 2, True), ("==", 2, True), ("=", 1, False), ("!=", 1, True), ("!=", 2, False),
    (">", 1, True), (">", 2, False), (">=", 2, True), (">=", 3, False),
    ("<", 3, True), ("<", 2, False), ("<=", 2, True), ("<=", 1, False),
])
async def test_count_comparators_at_their_edges(op: str, n: int, ok: bool,
                                                ctx: EvalContext) -> None:
    judge = ToolCallCount.model_validate({"tool_calls_count": {"search": (op, n)}})
    assert (await score(judge, SEARCH_FETCH_ANSWER, ctx)).value == (1.0 if ok else 0.0)


async def test_count_is_fraction_satisfied(ctx: EvalContext) -> None:
    judge = build({"type": "tool_call_count", "toolCallsCount": {
        "search": ["=", 2], "fetch": [">=", 2], "answer": ["<=", 1], "never": ["=", 0]}})
    result = await score(judge, SEARCH_FETCH_ANSWER, ctx)
    assert result.value == 0.75
    explained = {e["tool"]: e for e in result.details["explained_tool_calls_count"]}
    assert explained["fetch"] == {"tool": "fetch", "count": 1, "comparator": ">=",
                                  "expected": 2, "satisfied": False}
    assert explained["never"]["satisfied"] is True
    assert result.misses == ["fetch: 1 >= 2"]


async def test_count_strict_is_zero_on_first_failure(ctx: EvalContext) -> None:
    counts = {"search": ["=", 2], "fetch": [">=", 2], "answer": ["=", 1]}
    strict = build({"type": "tool_call_count", "strict": True, "tool_calls_count": counts})
    result = await score(strict, SEARCH_FETCH_ANSWER, ctx)
    assert result.value == 0.0
    assert [e["tool"] for e in result.details["explained_tool_calls_count"]] == [
        "search", "fetch"]
    counts["fetch"] = ["=", 1]
    strict = build({"type": "tool_call_count", "strict": True, "tool_calls_count": counts})
    assert (await score(strict, SEARCH_FETCH_ANSWER, ctx)).value == 1.0


async def test_count_empty_rules_apply_even_to_zero_counts(ctx: EvalContext) -> None:
    judge = ToolCallCount(tool_calls_count={"search": ("=", 0)})
    assert (await score(judge, Execution(), ctx)).value == 0.0
    assert (await score(ToolCallCount(tool_calls_count={}), Execution(), ctx)).value == 1.0


@pytest.mark.parametrize("bad", [{"search": ["~", 1]}, {"search": ["=", -1]},
                                 {"search": ["="]}, {"search": "=1"}])
def test_count_bad_comparators_fail_when_built(bad: dict[str, Any]) -> None:
    with pytest.raises(EvaluationError) as info:
        build({"type": "tool_call_count", "tool_calls_count": bad})
    assert info.value.code == "invalid_evaluator_config"


# -- args ----------------------------------------------------------------------------------


def test_args_match_rules() -> None:
    assert args_match({"q": "a"}, {"q": "a"}, subset=False)
    assert not args_match({"q": "a"}, {"q": "a", "n": 1}, subset=False)
    assert args_match({"q": "a"}, {"q": "a", "n": 1}, subset=True)
    assert not args_match({"q": "a", "n": 2}, {"q": "a", "n": 1}, subset=True)
    assert not args_match({"missing": None}, {}, subset=True)
    assert args_match({}, {"anything": 1}, subset=True)
    assert args_match({"n": 1}, {"n": 1.0}, subset=False)
    # equal as data: a boolean is not a number, and integers compare exactly
    assert not args_match({"flag": 1}, {"flag": True}, subset=False)
    assert not args_match({"flag": 1}, {"flag": True}, subset=True)
    assert not args_match({"id": 10**16}, {"id": 10**16 + 1}, subset=True)
    assert not args_match({"ids": [1, 0]}, {"ids": [True, False]}, subset=True)


async def test_args_greedy_matching_ignores_order(ctx: EvalContext) -> None:
    judge = ToolCallArgs.model_validate({"tool_calls": [
        {"name": "search", "args": {"q": "b"}},
        {"name": "search", "args": {"q": "a"}},
        {"name": "search", "args": {"q": "a"}},   # only one such call exists
        {"name": "fetch", "args": {"url": "other"}},
    ]})
    result = await score(judge, SEARCH_FETCH_ANSWER, ctx)
    assert result.value == 0.5
    explained = result.details["explained_tool_calls_args"]
    assert [e["actual_index"] for e in explained] == [2, 0, None, None]
    assert explained[3]["reason"].startswith("called, but not with these arguments")
    assert result.hits == ["search", "search"] and result.misses == ["search", "fetch"]


async def test_args_subset_and_strict(ctx: EvalContext) -> None:
    execution = traced(span("search", {"q": "a", "limit": 5}), span("fetch", {"url": "u"}))
    wanted = [{"name": "search", "args": {"q": "a"}}, {"name": "fetch", "args": {"url": "u"}}]
    exact = build({"type": "tool_call_args", "toolCalls": wanted})
    assert (await score(exact, execution, ctx)).value == 0.5
    subset = build({"type": "tool_call_args", "toolCalls": wanted, "subset": True})
    assert (await score(subset, execution, ctx)).value == 1.0
    strict = build({"type": "tool_call_args", "toolCalls": wanted, "strict": True})
    assert (await score(strict, execution, ctx)).value == 0.0
    both = build({"type": "tool_call_args", "toolCalls": wanted, "strict": True, "subset": True})
    assert (await score(both, execution, ctx)).value == 1.0


async def test_args_never_called_and_ids(ctx: EvalContext) -> None:
    execution = traced(span("search", {"q": "a"}, tool_id="s-1"))
    by_name = ToolCallArgs.model_validate({"tool_calls": [{"name": "search", "args": {"q": "a"}}]})
    result = await score(by_name, execution, ctx)
    assert result.value == 0.0
    assert result.details["explained_tool_calls_args"][0]["reason"] == "never called"
    by_id = ToolCallArgs.model_validate({"tool_calls": [{"name": "x", "id": "s-1", "args": {"q": "a"}}]})
    assert (await score(by_id, execution, ctx)).value == 1.0


async def test_args_empty_rules(ctx: EvalContext) -> None:
    assert (await score(ToolCallArgs(tool_calls=[]), Execution(), ctx)).value == 1.0
    assert (await score(ToolCallArgs(tool_calls=[]), SEARCH_FETCH_ANSWER, ctx)).value == 0.0
    one = ToolCallArgs.model_validate({"tool_calls": [{"name": "search"}]})
    assert (await score(one, Execution(), ctx)).value == 0.0


def test_args_config_errors_fail_when_built() -> None:
    with pytest.raises(EvaluationError, match="tool_calls"):
        build({"type": "tool_call_args"})
    with pytest.raises(EvaluationError, match="name"):
        build({"type": "tool_call_args", "tool_calls": [{"args": {}}]})


# -- outputs -------------------------------------------------------------------------------


async def test_outputs_exact_text(ctx: EvalContext) -> None:
    execution = traced(span("search", output='{"content": "Paris"}'),
                       span("search", output="Rome"), span("fetch", output='{"a": 1}'))
    judge = build({"type": "tool_call_output", "toolOutputs": [
        {"name": "search", "output": "Rome"},
        {"name": "search", "output": "Paris"},
        {"name": "fetch", "output": {"a": 1}},
        {"name": "search", "output": "paris"},
    ]})
    result = await score(judge, execution, ctx)
    assert result.value == 0.75
    explained = result.details["explained_tool_calls_outputs"]
    assert [e["actual_index"] for e in explained] == [1, 0, 2, None]
    strict = ToolCallOutput(strict=True, tool_outputs=judge.tool_outputs)
    assert (await score(strict, execution, ctx)).value == 0.0


async def test_outputs_from_messages(ctx: EvalContext) -> None:
    execution = Execution(messages=[
        {"role": "assistant", "tool_calls": [
            {"id": "c1", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])
    judge = ToolCallOutput.model_validate({"tool_outputs": [{"name": "weather", "output": "sunny"}]})
    assert (await score(judge, execution, ctx)).value == 1.0


async def test_outputs_empty_rules(ctx: EvalContext) -> None:
    assert (await score(ToolCallOutput(tool_outputs=[]), Execution(), ctx)).value == 1.0
    one = ToolCallOutput.model_validate({"tool_outputs": [{"name": "a", "output": "x"}]})
    assert (await score(one, Execution(), ctx)).value == 0.0
    assert (await score(ToolCallOutput(tool_outputs=[]), SEARCH_FETCH_ANSWER, ctx)
            ).value == 0.0


def test_required_criteria_and_camel_case_names() -> None:
    for kind, field in [("tool_call_order", "tool_calls_order"),
                        ("tool_call_count", "tool_calls_count"),
                        ("tool_call_output", "tool_outputs")]:
        with pytest.raises(EvaluationError, match=field):
            build({"type": kind})
    judge = build({"type": "tool_call_order", "toolCallsOrder": ["a"], "strict": True})
    assert judge.tool_calls_order == ["a"] and judge.strict


async def test_expected_tool_calls_says_expected_once(ctx: EvalContext) -> None:
    case = Case(id="c", expected_tool_calls=[ToolExpectation(tool="search"),
                                             ToolExpectation(tool="delete")])
    result = await build({"type": "expected_tool_calls"}).evaluate(
        case, SEARCH_FETCH_ANSWER, ctx)
    assert result.rationale == "1 of 2 expected calls were made"
