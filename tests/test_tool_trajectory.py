"""Tool trajectory: calls read from messages and from trace spans, the three modes, partial
argument matching, latency assertions, and config errors at build time."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.errors import EvaluationError
from assay.judges import EvalContext, build
from assay.traces.tools import ToolCallRecord, args_match
from assay.traces.tools import tool_calls as extract_tool_calls
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.messages import FunctionCall, Message, ToolCall
from assay.types.spans import Span

CASE = Case(id="t", input="book a flight")


def _messages(*calls: tuple[str, dict[str, Any]]) -> Execution:
    """One assistant message per call, with a tool reply after each, as agents produce."""
    messages: list[Message] = [Message(role="user", content="book a flight")]
    for i, (name, args) in enumerate(calls):
        messages.append(Message(role="assistant", tool_calls=[ToolCall(
            id=f"c{i}", function=FunctionCall(name=name, arguments=json.dumps(args)))]))
        messages.append(Message(role="tool", tool_call_id=f"c{i}", content="ok"))
    return Execution(output="done", messages=messages)


def _spans(*calls: tuple[str, dict[str, Any], float]) -> Execution:
    """Tool spans listed out of order (as exporters emit them); durations in ms."""
    spans, start = [], 100.0
    for name, args, ms in calls:
        spans.append(Span(name=f"tool {name}", start_time=start, end_time=start + ms / 1000,
                          attributes={"tool.name": name, "input.value": json.dumps(args)}))
        start += 1.0
    return Execution(output="done", trace=[Span(name="llm"), *reversed(spans)])


async def _score(config: dict[str, Any], execution: Execution, engine_factory):  # type: ignore[no-untyped-def]
    return await build({"type": "tool_trajectory", **config}).evaluate(
        CASE, execution, EvalContext(engine_factory()))


def test_extracts_calls_from_messages_and_prefers_timed_spans():
    from_messages = extract_tool_calls(_messages(("search", {"q": "x"}), ("book", {})))
    assert [(c.name, c.args) for c in from_messages] == [("search", {"q": "x"}), ("book", {})]
    from_spans = extract_tool_calls(_spans(("search", {"q": "x"}, 250), ("book", {}, 40)))
    assert [c.name for c in from_spans] == ["search", "book"]  # sorted by start time
    assert from_spans[0].args == {"q": "x"}
    assert from_spans[0].duration_ms == pytest.approx(250)
    untimed = Execution(trace=[Span(name="b", attributes={"tool.name": "b"}),
                               Span(name="a", start_time=1.0, attributes={"tool.name": "a"})])
    assert [c.name for c in extract_tool_calls(untimed)] == ["b", "a"]  # trace order kept
    both = _messages(("other", {}))
    both.trace = _spans(("search", {}, 1)).trace
    assert [c.name for c in extract_tool_calls(both)] == ["search"]
    bad_json = Execution(messages=[Message(role="assistant", tool_calls=[ToolCall(
        function=FunctionCall(name="x", arguments="{not json"))])])
    assert extract_tool_calls(bad_json) == [ToolCallRecord(name="x", args={})]  # not a dict


def test_partial_args_matching():
    actual = {"city": "Paris", "filters": {"stars": 4, "pool": True}, "ids": [1, 2]}
    assert args_match("any", actual) and args_match(None, actual)
    assert args_match({"city": "Paris"}, actual)
    assert args_match({"filters": {"stars": 4}}, actual)  # nested dicts match partially
    assert not args_match({"filters": {"stars": 5}}, actual)
    assert not args_match({"ids": [1]}, actual)  # lists match exactly
    assert not args_match({"ok": 1}, {"ok": True})  # a boolean is not a number
    assert not args_match({"id": 10**16}, {"id": 10**16 + 1})  # integers exactly
    assert args_match({"n": 2}, {"n": 2.0})
    assert not args_match({"country": "FR"}, actual)
    assert not args_match({"city": "Paris"}, "city=Paris")


async def test_any_order_scores_the_fraction_of_minimums_met(engine_factory):
    execution = _messages(("search", {}), ("search", {}), ("book", {}))
    score = await _score({"mode": "any_order",
                          "minimums": {"search": 2, "book": 2, "pay": 1}}, execution,
                         engine_factory)
    assert score.value == pytest.approx(1 / 3)
    assert score.passed is False
    assert score.raw == {"search": 2, "book": 1, "pay": 0}
    assert score.hits == ["search: called 2 time(s), minimum 2"]
    assert len(score.misses) == 2
    full = await _score({"mode": "any_order", "minimums": {"search": 1}}, execution,
                        engine_factory)
    assert full.value == 1.0 and full.passed is True


async def test_in_order_is_a_subsequence_with_other_calls_between(engine_factory):
    execution = _messages(("search", {"q": "paris"}), ("log", {}), ("price", {"id": 7}),
                          ("book", {"id": 7, "seat": "12A"}))
    expected = [{"tool": "search"}, {"tool": "book", "args": {"id": 7}}]
    score = await _score({"mode": "in_order", "expected": expected}, execution,
                         engine_factory)
    assert score.value == 1.0 and score.passed is True
    assert score.hits == ['#1 search(): matched', '#2 book({"id": 7}): matched']


async def test_in_order_misses_out_of_order_and_keeps_searching(engine_factory):
    execution = _messages(("book", {}), ("search", {}), ("pay", {}))
    expected = [{"tool": "search"}, {"tool": "book"}, {"tool": "pay"}]
    score = await _score({"mode": "in_order", "expected": expected}, execution,
                         engine_factory)
    # search matches at 1; book is not found after it (a miss); pay still matches at 2.
    assert score.value == pytest.approx(2 / 3)
    assert score.misses == ["#2 book(): not found"]
    wrong_args = await _score({"mode": "in_order", "expected": [
        {"tool": "search", "args": {"q": "rome"}}]}, _messages(("search", {"q": "paris"})),
        engine_factory)
    assert wrong_args.value == 0.0 and wrong_args.passed is False


async def test_exact_compares_positions_and_length(engine_factory):
    expected = [{"tool": "search"}, {"tool": "book"}, {"tool": "pay"}]
    same = await _score({"mode": "exact", "expected": expected},
                        _messages(("search", {}), ("book", {}), ("pay", {})), engine_factory)
    assert same.value == 1.0 and same.passed is True
    swapped = await _score({"mode": "exact", "expected": expected},
                           _messages(("search", {}), ("pay", {}), ("book", {})),
                           engine_factory)
    assert swapped.value == pytest.approx(1 / 3) and swapped.passed is False
    longer = await _score({"mode": "exact", "expected": expected},
                          _messages(("search", {}), ("book", {}), ("pay", {}), ("pay", {})),
                          engine_factory)
    assert longer.value == 1.0  # every expected position matches, as in AgentV...
    assert longer.passed is True  # ...so the verdict follows the score
    assert longer.misses == ["expected exactly 3 tool calls, got 4"]  # the extra call shows
    shorter = await _score({"mode": "exact", "expected": expected},
                           _messages(("search", {}), ("book", {})), engine_factory)
    assert shorter.value == pytest.approx(2 / 3) and shorter.passed is False


async def test_latency_assertions_count_only_when_there_is_data(engine_factory):
    expected = [{"tool": "search", "max_duration_ms": 500},
                {"tool": "book", "maxDurationMs": 100},
                {"tool": "pay", "max_duration_ms": 100}]
    execution = _spans(("search", {}, 200), ("book", {}, 300))
    score = await _score({"mode": "in_order", "expected": expected}, execution,
                         engine_factory)
    # sequence: search, book hit; pay missing (its latency check has no data, not counted).
    # latency: search 200 <= 500 hit, book 300 > 100 miss. (2 + 1) / (3 + 2) = 0.6
    assert score.value == pytest.approx(0.6)
    assert score.raw == {"sequence_hits": 2, "latency_hits": 1, "expected": 3,
                         "latency_checked": 2}
    assert "#2 book: 300 ms (max 100)" in score.misses
    no_timing = await _score({"mode": "in_order", "expected": expected[:2]},
                             _messages(("search", {}), ("book", {})), engine_factory)
    assert no_timing.value == 1.0  # messages carry no durations: checks are skipped


async def test_no_calls_at_all_scores_zero_not_error(engine_factory):
    score = await _score({"mode": "exact", "expected": [{"tool": "search"}]},
                         Execution(output="I did nothing"), engine_factory)
    assert score.ok and score.value == 0.0 and score.passed is False


@pytest.mark.parametrize(("config", "message"), [
    ({"mode": "sideways", "expected": [{"tool": "a"}]}, "mode"),
    ({"minimums": {"a": 1}}, "mode"),
    ({"mode": "any_order"}, "any_order needs a non-empty 'minimums'"),
    ({"mode": "any_order", "minimums": {}}, "minimums"),
    ({"mode": "any_order", "minimums": {"a": -1}}, "minimums for a must be >= 0"),
    ({"mode": "in_order"}, "in_order needs a non-empty 'expected'"),
    ({"mode": "exact", "expected": []}, "exact needs a non-empty 'expected'"),
    ({"mode": "exact", "expected": [{"tool": "a"}], "minimums": {"a": 1}},
     "'minimums' is for any_order"),
    ({"mode": "any_order", "minimums": {"a": 1}, "expected": [{"tool": "a"}]},
     "'expected' is for in_order and exact"),
    ({"mode": "exact", "expected": [{"tool": "a", "args": "some"}]}, "expected.0.args"),
    ({"mode": "exact", "expected": [{"name": "a"}]}, "expected.0.tool"),
    ({"mode": "exact", "expected": [{"tool": "a", "max_duration_ms": -5}]},
     "max_duration_ms"),
])
def test_bad_config_fails_at_build(config, message):
    with pytest.raises(EvaluationError) as err:
        build({"type": "tool_trajectory", **config})
    assert message in err.value.message
