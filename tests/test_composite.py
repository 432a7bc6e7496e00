"""Composite evaluators: members built recursively with their own prompts, run concurrently
against the real mock server, every aggregator hand-computed, errored members kept out of the
numbers, and config errors at build time."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.errors import EvaluationError
from assay.judges import EvalContext, build
from assay.judges.combinators.composite import Composite
from assay.types.case import Case
from assay.types.execution import Execution

DATA = Path(__file__).parent / "data" / "code_judges"
CASE = Case(id="c", input="What is the capital of France?", expected_output="Paris")
PARIS = Execution(output="Paris")


def _judge(name: str, score: float, **extra: Any) -> dict[str, Any]:
    """An llm_judge whose own prompt forces the mock's answer: proof the prompt was used."""
    answer = {"score": score, "hits": [f"{name} hit"], "misses": [],
              "reasoning": f"{name} says {score}"}
    forced = f"<<mock:{json.dumps(answer)}>>"
    return {"type": "llm_judge", "name": name,
            "prompt": f"Judge {{{{candidate_answer}}}} {forced}", **extra}


CONTAINS = {"type": "contains", "name": "has_paris", "search_text": "Paris"}
EXACT = {"type": "exact_match", "name": "exact"}
NO_LATENCY = {"type": "latency", "name": "fast", "threshold_ms": 1000}


async def _run(config: dict[str, Any], engine_factory, execution: Execution = PARIS):  # type: ignore[no-untyped-def]
    return await build({"type": "composite", **config}).evaluate(
        CASE, execution, EvalContext(engine_factory()))


async def test_weighted_average_uses_member_weights_and_own_prompts(engine_factory,
                                                                    mock_server):
    score = await _run({"evaluators": [CONTAINS, _judge("a", 0.9, weight=2),
                                       _judge("b", 0.3)]}, engine_factory)
    assert score.ok, score.error
    # (1.0 * 1 + 0.9 * 2 + 0.3 * 1) / 4
    assert score.value == pytest.approx(3.1 / 4)
    assert score.passed is False  # 0.775 < 0.8
    members = score.details["members"]  # type: ignore[index]
    assert {k: v["value"] for k, v in members.items()} == {"has_paris": 1.0, "a": 0.9,
                                                           "b": 0.3}
    assert members["a"]["weight"] == 2 and members["a"]["type"] == "llm_judge"
    assert "[a] a hit" in score.hits and "[b] b hit" in score.hits
    assert score.rationale is not None and "a: a says 0.9" in score.rationale
    assert score.usage.calls == 2 and mock_server.stats.requests == 2


async def test_aggregator_weights_override_member_weights(engine_factory, mock_server):
    score = await _run({"evaluators": [CONTAINS, _judge("a", 0.9, weight=2),
                                       _judge("b", 0.9)],
                        "aggregator": {"type": "weighted_average",
                                       "weights": {"a": 1, "b": 3}}}, engine_factory)
    # has_paris keeps its own weight 1: (1.0 * 1 + 0.9 * 1 + 0.9 * 3) / 5
    assert score.value == pytest.approx(4.6 / 5)


async def test_members_run_concurrently(engine_factory, mock_server):
    mock_server.configure(latency_ms=300)
    score = await _run({"evaluators": [_judge("a", 1.0), _judge("b", 1.0),
                                       _judge("c", 1.0)]}, engine_factory)
    assert score.value == 1.0
    assert mock_server.stats.max_in_flight == 3


async def test_errored_member_is_reported_and_left_out_of_the_average(engine_factory):
    score = await _run({"evaluators": [CONTAINS, EXACT, NO_LATENCY]}, engine_factory,
                       Execution(output="Paris, France"))
    # fast errored (no latency recorded); (1.0 + 0.0) / 2, not (1 + 0 + 0) / 3
    assert score.value == pytest.approx(0.5)
    assert score.details["errored"] == ["fast"]  # type: ignore[index]
    assert score.details["members"]["fast"]["error"]["code"] == "missing_latency"  # type: ignore[index]
    assert any(m.startswith("[fast] error missing_latency") for m in score.misses)


async def test_every_member_errored_is_an_error(engine_factory):
    score = await _run({"evaluators": [NO_LATENCY, {**NO_LATENCY, "name": "fast2"}]},
                       engine_factory)
    assert score.value is None and score.error is not None
    assert score.error.code == "all_members_failed"
    assert "fast: missing_latency" in score.error.message
    assert score.details is not None and score.details["errored"] == ["fast", "fast2"]


async def test_all_pass(engine_factory):
    config = {"evaluators": [CONTAINS, EXACT], "aggregator": "all_pass"}
    both = await _run(config, engine_factory)
    assert both.value == 1.0 and both.passed is True
    one = await _run(config, engine_factory, Execution(output="Paris, France"))
    assert one.value == 0.0 and one.passed is False
    unknown = await _run({**config, "evaluators": [CONTAINS, NO_LATENCY]}, engine_factory)
    assert unknown.error is not None and unknown.error.code == "member_errors"
    failed_anyway = await _run({**config, "evaluators": [CONTAINS, EXACT, NO_LATENCY]},
                               engine_factory, Execution(output="Paris, France"))
    assert failed_anyway.value == 0.0 and failed_anyway.passed is False


async def test_min(engine_factory, mock_server):
    score = await _run({"evaluators": [CONTAINS, _judge("a", 0.85), _judge("b", 0.6),
                                       NO_LATENCY],
                        "aggregator": {"type": "min"}}, engine_factory)
    assert score.value == pytest.approx(0.6) and score.passed is False
    assert score.details["errored"] == ["fast"]  # type: ignore[index]


async def test_code_aggregator_gets_member_results(engine_factory, mock_server):
    config = {"evaluators": [{**CONTAINS, "name": "safety"}, _judge("quality", 0.7),
                             NO_LATENCY],
              "aggregator": {"type": "code", "script": [sys.executable, "aggregate_judge.py"],
                             "cwd": str(DATA)}}
    score = await _run(config, engine_factory)
    assert score.ok, score.error
    assert score.value == pytest.approx(0.7)
    assert score.passed is False  # below the 0.8 threshold
    assert score.hits == ["saw fast", "saw quality", "saw safety"]
    assert score.rationale == "safety gates quality"
    results = score.details["script"]["results"]  # type: ignore[index]
    assert results["safety"] == {"score": 1.0, "verdict": "pass", "passed": True, "hits": [],
                                 "misses": [], "reasoning": "'Paris' found"}
    assert results["quality"]["score"] == 0.7 and results["quality"]["hits"] == ["quality hit"]
    assert results["quality"]["verdict"] == "borderline"  # AgentV's band: 0.6 <= 0.7 < 0.8
    assert results["fast"]["verdict"] == "error"
    assert results["fast"]["score"] is None
    assert results["fast"]["error"]["code"] == "missing_latency"
    assert score.usage.calls == 1  # the member's judge call is accounted
    gated = await _run(config, engine_factory, Execution(output="Rome"))
    assert gated.value == 0.0


async def test_code_aggregator_failure_is_an_error_keeping_usage(engine_factory, mock_server):
    crash = f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(\"no results for you\")'"
    score = await _run({"evaluators": [_judge("a", 0.5)],
                        "aggregator": {"type": "code_judge", "path": crash}}, engine_factory)
    assert score.value is None and score.error is not None
    assert score.error.code == "code_judge_exit"
    assert "no results for you" in score.error.message
    assert score.usage.calls == 1
    assert score.details is not None and score.details["members"]["a"]["value"] == 0.5


async def test_composites_nest(engine_factory, mock_server):
    inner = {"type": "composite", "name": "inner", "weight": 3,
             "evaluators": [CONTAINS, EXACT], "aggregator": "min"}
    score = await _run({"evaluators": [inner, _judge("a", 0.8)]}, engine_factory,
                       Execution(output="Paris, France"))
    # inner = min(1, 0) = 0 with weight 3; a = 0.8 with weight 1
    assert score.value == pytest.approx(0.8 / 4)
    inner_details = score.details["members"]["inner"]["details"]  # type: ignore[index]
    assert inner_details["aggregator"] == "min"
    assert {k: v["value"] for k, v in inner_details["members"].items()} == {
        "has_paris": 1.0, "exact": 0.0}


def test_dump_rebuilds_and_lists_member_models():
    composite = build({"type": "composite", "evaluators": [
        CONTAINS, _judge("a", 1, model="judge-a"), _judge("b", 1)]})
    assert isinstance(composite, Composite)
    assert composite.models() == ["judge-a", None]
    dumped = composite.model_dump(mode="json")
    assert [m["type"] for m in dumped["evaluators"]] == ["contains", "llm_judge", "llm_judge"]
    again = build({"type": "composite", **dumped})
    assert again.model_dump_json() == composite.model_dump_json()


@pytest.mark.parametrize(("config", "message"), [
    ({}, "evaluators"),
    ({"evaluators": []}, "at least one member"),
    ({"evaluators": [CONTAINS, {"type": "nope"}]},
     "composite evaluators[1]: unknown evaluator type 'nope'"),
    ({"evaluators": [CONTAINS, {"type": "latency"}]}, "composite evaluators[1] (latency)"),
    ({"evaluators": [{"type": "contains", "search_text": "a"},
                     {"type": "contains", "search_text": "b"}]},
     "give each of these a 'name': contains"),
    ({"evaluators": [CONTAINS], "aggregator": {"weights": {"other": 1}}},
     "unknown member(s) other"),
    ({"evaluators": [CONTAINS], "aggregator": {"type": "median"}}, "aggregator"),
    ({"evaluators": [CONTAINS], "aggregator": {"type": "code"}}, "needs 'script'"),
    ({"evaluators": [CONTAINS], "aggregator": {"type": "min", "script": "x"}},
     "takes no 'script'"),
    ({"evaluators": [CONTAINS], "aggregator": {"type": "min", "weights": {"has_paris": 1}}},
     "only apply to weighted_average"),
    ({"evaluators": [{**CONTAINS, "weight": 0}]}, "every member has weight 0"),
    ({"evaluators": ["contains"]}, "must be an evaluator config"),
])
def test_bad_config_fails_at_build(config, message):
    with pytest.raises(EvaluationError) as err:
        build({"type": "composite", **config})
    assert message in err.value.message
