"""Ratings on a declared scale, and G-Eval-style probability-weighted scores from the
provider's token log-probabilities (the mock server's logprobs mode), falling back to the plain
rating, with the reason, where there are none."""

from __future__ import annotations

import math

import pytest

from assay.judges import EvalContext, build
from assay.judges.llm.rating import weighted_rating
from assay.llm.cache import cache_key
from assay.types.case import Case
from assay.types.execution import Execution

CASE = Case(id="c", input="q")
EXECUTION = Execution(output="an answer")


def rating(answer: int, table: str | None = None, **extra: object) -> dict:
    prompt = f'<<mock:{{"reasoning": "ok", "score": {answer}}}>> {{{{candidate_answer}}}}'
    if table:
        prompt = f"<<mock-logprobs:{table}>> " + prompt
    return {"type": "rating", "prompt": prompt, **extra}


async def test_a_rating_is_kept_raw_and_normalised(engine_factory):
    score = await build(rating(4)).evaluate(CASE, EXECUTION, EvalContext(engine_factory()))
    assert score.raw == 4 and score.scale == "1-5" and score.value == pytest.approx(0.75)
    assert score.rationale == "ok" and set(score.details or {}) == {"judge_request", "judge_answer"}


async def test_logprobs_weight_the_rating(engine_factory, mock_server):
    judge = build(rating(4, '{"4": 0.5, "5": 0.3, "3": 0.2}', logprobs=True))
    score = await judge.evaluate(CASE, EXECUTION, EvalContext(engine_factory()))
    expected = 4 * 0.5 + 5 * 0.3 + 3 * 0.2
    assert score.raw == pytest.approx(expected)
    assert score.value == pytest.approx((expected - 1) / 4)
    assert judged_details(score) == {"weighted": True, "answered": 4, "distribution": {
        "3": pytest.approx(0.2), "4": pytest.approx(0.5), "5": pytest.approx(0.3)}}


async def test_without_logprobs_from_the_server_the_plain_rating_stands(engine_factory,
                                                                         mock_server):
    mock_server.configure(logprobs=False)  # a server that ignores the request's logprobs
    judge = build(rating(2, '{"2": 0.5, "3": 0.5}', logprobs=True))
    score = await judge.evaluate(CASE, EXECUTION, EvalContext(engine_factory()))
    assert score.raw == 2 and score.value == pytest.approx(0.25)
    assert judged_details(score) == {"weighted": False, "answered": 2,
                             "why": "the provider returned no token log-probabilities"}


async def test_a_score_spread_over_several_tokens_is_not_weighted(engine_factory):
    judge = build(rating(10, scale=[1, 10], logprobs=True))  # the mock splits "10" in two
    score = await judge.evaluate(CASE, EXECUTION, EvalContext(engine_factory()))
    assert score.raw == 10 and score.details is not None
    assert score.details["why"] == "the score is split over several tokens"


def test_weighting_reads_the_alternatives_at_the_score_token():
    tokens = [{"token": '{"', "top_logprobs": []}, {"token": "score", "top_logprobs": []},
              {"token": '":', "top_logprobs": []},
              {"token": " 7", "top_logprobs": [
                  {"token": " 7", "logprob": math.log(0.6)},
                  {"token": "8", "logprob": math.log(0.2)},
                  {"token": "11", "logprob": math.log(0.1)},  # off the scale: ignored
                  {"token": "x", "logprob": math.log(0.1)}]},
              {"token": "}", "top_logprobs": []}]
    weighted, distribution = weighted_rating(tokens, 1, 10)  # type: ignore[misc]
    assert weighted == pytest.approx((7 * 0.6 + 8 * 0.2) / 0.8)
    assert distribution == {"7": pytest.approx(0.75), "8": pytest.approx(0.25)}
    assert weighted_rating(None, 1, 5) == "the provider returned no token log-probabilities"
    assert weighted_rating([{"token": "hi"}], 1, 5) == "no score was found in the answer's tokens"


def test_logprob_requests_are_cached_apart_from_plain_ones():
    plain = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    asked = {**plain, "logprobs": True, "top_logprobs": 5}
    at = {"provider": "p", "model": "m"}
    assert cache_key(at, plain) != cache_key(at, asked)  # type: ignore[arg-type]


async def test_an_answer_off_the_scale_is_an_error_not_a_number(engine_factory):
    score = await build(rating(9)).evaluate(CASE, EXECUTION, EvalContext(engine_factory()))
    assert score.value is None and score.error is not None
    assert score.error.code == "judge_output_invalid"


def test_rating_config_is_checked():
    with pytest.raises(Exception, match="low < high"):
        build({"type": "rating", "scale": [5, 1]})
    with pytest.raises(Exception, match="never shows the judge the agent's answer"):
        build({"type": "rating", "prompt": "{{question}}"})
    assert build({"type": "rating", "scale": [0, 10]}).calibration_scale() == {
        "kind": "ordinal", "scale": [0, 10]}


def judged_details(score):
    """A score's details without the judge's request and answer, which every LLM score keeps."""
    return {k: v for k, v in (score.details or {}).items()
            if k not in ("judge_request", "judge_answer")}
