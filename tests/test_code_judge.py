"""Code judges with real scripts: the stdin payload, the result contract, and every way a
script can fail (exit status, bad JSON, bad score, timeout) ending as an error score that
carries the script's stderr."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest

from assay.errors import EvaluationError
from assay.judges import EvalContext, build
from assay.judges.code.script import STDERR_TAIL, CodeJudge
from assay.types.case import Case
from assay.types.execution import Execution, TokenUsage
from assay.types.messages import FunctionCall, Message, ToolCall
from assay.types.spans import Span

DATA = Path(__file__).parent / "data" / "code_judges"
PY = shlex.quote(sys.executable)

CASE = Case(id="geo", input="What is the capital of France?", expected_output="Paris",
            expected_outcomes=["Names Paris"], guidelines=["Be brief"],
            metadata={"expected_messages": [{"role": "assistant", "content": "Paris"}]})


def _ctx(engine_factory) -> EvalContext:  # type: ignore[no-untyped-def]
    return EvalContext(engine_factory())


def _inline(code: str, **extra: object) -> CodeJudge:
    return build({"type": "code_judge", "script": f"{PY} -c {shlex.quote(code)}", **extra})


async def test_script_scores_from_the_payload(engine_factory):
    judge = build({"type": "code_judge", "name": "kw",
                   "script": [sys.executable, "keyword_judge.py"], "cwd": str(DATA),
                   "config": {"keywords": ["Paris", "France", "Seine"]}})
    execution = Execution(output="Paris is the capital of France.", latency_ms=1234.0,
                          usage=TokenUsage(prompt_tokens=10, completion_tokens=5, cost=0.01),
                          messages=[Message(role="assistant", content=None, tool_calls=[
                              ToolCall(id="c1", function=FunctionCall(name="search")),
                              ToolCall(id="c2", function=FunctionCall(name="search"))])])
    score = await judge.evaluate(CASE, execution, _ctx(engine_factory))
    assert score.ok, score.error
    assert score.value == pytest.approx(2 / 3)
    assert score.passed is False  # 0.667 < 0.8
    assert score.hits == ["Paris", "France"] and score.misses == ["Seine"]
    assert score.rationale == "2 of 3 keywords"
    received = score.details["received"]  # type: ignore[index]
    assert received["question"] == "What is the capital of France?"
    assert received["expected_outcome"] == "Names Paris"
    assert received["reference_answer"] == "Paris"
    assert received["candidate_answer"] == "Paris is the capital of France."
    assert received["input_messages"] == [{"role": "user",
                                           "content": "What is the capital of France?"}]
    assert received["expected_messages"] == [{"role": "assistant", "content": "Paris"}]
    assert received["output_messages"][0]["tool_calls"][0]["function"]["name"] == "search"
    assert received["guidelines"] == ["Be brief"]
    assert received["config"] == {"keywords": ["Paris", "France", "Seine"]}
    assert received["trace_summary"] == {
        "event_count": 1, "tool_names": ["search"], "tool_calls_by_name": {"search": 2},
        "error_count": 0, "token_usage": {"input": 10, "output": 5, "total": 15},
        "cost_usd": 0.01, "duration_ms": 1234.0}


async def test_trace_summary_counts_spans_and_errors(engine_factory):
    judge = _inline("import json,sys; p=json.load(sys.stdin); "
                    "print(json.dumps({'score': 1, 'details': p['trace_summary']}))")
    execution = Execution(output="x", error="agent crashed", trace=[
        Span(name="a", attributes={"tool.name": "lookup"}, status="error"),
        Span(name="b", attributes={"tool.name": "lookup"}), Span(name="llm")])
    score = await judge.evaluate(CASE, execution, _ctx(engine_factory))
    assert score.details == {"event_count": 3, "tool_names": ["lookup"],
                             "tool_calls_by_name": {"lookup": 2}, "error_count": 2,
                             "token_usage": None, "cost_usd": None, "duration_ms": None}
    assert score.value == 1.0 and score.passed is True


async def test_script_may_set_passed_itself(engine_factory):
    judge = _inline("print('{\"score\": 0.95, \"passed\": false}')")
    score = await judge.evaluate(CASE, Execution(output="x"), _ctx(engine_factory))
    assert score.value == 0.95 and score.passed is False


async def test_default_cwd_and_shell_string(engine_factory, tmp_path):
    (tmp_path / "judge.sh").write_text("cat > /dev/null; echo '{\"score\": 0.5}'\n")
    judge = build({"type": "code_judge", "script": "sh judge.sh", "cwd": str(tmp_path)})
    score = await judge.evaluate(CASE, Execution(output="x"), _ctx(engine_factory))
    assert score.value == 0.5


async def test_crash_is_an_error_with_the_stderr_tail(engine_factory):
    judge = build({"type": "code_judge", "script": f"{PY} crash.py", "cwd": str(DATA)})
    score = await judge.evaluate(CASE, Execution(output="x"), _ctx(engine_factory))
    assert score.value is None and score.passed is None
    assert score.error is not None and score.error.code == "code_judge_exit"
    assert "exited with status 1" in score.error.message
    assert "RuntimeError: judge exploded at the end" in score.error.message
    tail = score.error.message.split("stderr: ", 1)[1]
    assert len(tail) == STDERR_TAIL  # the head of the 5,000 x's was cut


@pytest.mark.parametrize(("code", "expect"), [
    ("import sys; print('not json'); sys.stderr.write('warned')", "did not print a JSON"),
    ("print('[1, 2]')", "did not print a JSON object"),
    ("import sys; print('{\"score\": 1.5}'); sys.stderr.write('warned')", "within [0, 1]"),
    ("print('{\"score\": -0.1}')", "within [0, 1]"),
    ("print('{\"score\": \"0.5\"}')", "must be a number"),
    ("print('{\"hits\": []}')", "score: Field required"),
    ("print('{\"score\": 0.5, \"hits\": \"one\"}')", "hits"),
    ("pass", "got '<nothing>'"),
    ("print('{\"score\": 1, \"score\": 0}')", "ambiguous JSON object: duplicate key 'score'"),
])
async def test_bad_output_is_an_error_never_zero(engine_factory, code, expect):
    score = await _inline(code).evaluate(CASE, Execution(output="x"), _ctx(engine_factory))
    assert score.value is None
    assert score.error is not None and score.error.code == "code_judge_bad_output"
    assert expect in score.error.message
    if "warned" in code:
        assert score.error.message.endswith("stderr: warned")


async def test_timeout_kills_the_script_and_its_children(engine_factory, tmp_path):
    marker = tmp_path / "survived"
    # sh starts a child that would write the marker after 1.5 s unless it is killed.
    script = (f"echo starting >&2; ( sleep 1.5; touch {shlex.quote(str(marker))} ) & "
              "sleep 30")
    judge = build({"type": "code_judge", "script": script, "timeout_s": 0.5})
    started = time.monotonic()
    score = await judge.evaluate(CASE, Execution(output="x"), _ctx(engine_factory))
    assert time.monotonic() - started < 5
    assert score.error is not None and score.error.code == "code_judge_timeout"
    assert "timed out after 0.5s" in score.error.message
    assert "stderr: starting" in score.error.message
    import asyncio

    await asyncio.sleep(1.5)
    assert not marker.exists()


async def test_missing_program_and_cwd_are_errors(engine_factory, tmp_path):
    missing = build({"type": "code_judge", "script": ["/nonexistent/judge"]})
    score = await missing.evaluate(CASE, Execution(output="x"), _ctx(engine_factory))
    assert score.error is not None and score.error.code == "code_judge_failed"
    assert "/nonexistent/judge" in score.error.message
    nowhere = build({"type": "code_judge", "script": "true", "cwd": str(tmp_path / "no")})
    score = await nowhere.evaluate(CASE, Execution(output="x"), _ctx(engine_factory))
    assert score.error is not None and "is not a directory" in score.error.message


@pytest.mark.parametrize(("config", "field"), [
    ({}, "script"),
    ({"script": "  "}, "script"),
    ({"script": []}, "script"),
    ({"script": "true", "timeout_s": 0}, "timeout_s"),
    ({"script": "true", "confg": {}}, "confg"),
])
def test_bad_config_fails_at_build(config, field):
    with pytest.raises(EvaluationError) as err:
        build({"type": "code_judge", **config})
    assert field in err.value.message
