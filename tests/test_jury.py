"""Juries and repeated samples: two deterministic judges that disagree, combined by majority,
mean and median with the spread as the uncertainty; independent draws of one judge through
the engine's sample numbers; confirm-on-fail; errors left out of the vote."""

from __future__ import annotations

import pytest

from assay.judges import EvalContext, build
from assay.types.case import Case
from assay.types.execution import Execution

CASE = Case(id="c", input="Capital of France?", expected_output="Paris")
EXECUTION = Execution(output="Paris, France")


def disagreeing(combine: str) -> dict:
    # exact_match fails the answer (0.0), contains passes it (1.0): a split jury.
    return {"type": "jury", "combine": combine, "judges": [
        {"type": "exact_match"}, {"type": "contains", "search_text": "Paris"}]}


async def test_a_jury_of_two_judges_that_disagree(engine_factory):
    ctx = EvalContext(engine_factory())
    majority = await build(disagreeing("majority")).evaluate(CASE, EXECUTION, ctx)
    assert majority.passed is False  # a split jury does not pass
    assert majority.value == 0.0  # the mean of the side that won: the failing one
    assert majority.details is not None and majority.details["split"] is True
    spread = majority.details["spread"]
    assert spread == {"stdev": 0.5, "min": 0.0, "max": 1.0, "agreement": 0.5, "votes": 2}
    assert majority.details["uncertainty"] == 0.5
    assert [v["value"] for v in majority.details["votes"]] == [0.0, 1.0]
    mean = await build(disagreeing("mean")).evaluate(CASE, EXECUTION, ctx)
    assert mean.value == 0.5 and mean.passed is False
    median = await build({**disagreeing("median"), "threshold": 0.5}).evaluate(
        CASE, EXECUTION, ctx)
    assert median.value == 0.5 and median.passed is True
    three = await build({"type": "jury", "judges": [
        {"type": "exact_match"}, {"type": "contains", "name": "a", "search_text": "Paris"},
        {"type": "contains", "name": "b", "search_text": "France"}]}).evaluate(
        CASE, EXECUTION, ctx)
    assert three.passed is True and three.value == 1.0
    assert three.details is not None and three.details["spread"]["agreement"] == \
        pytest.approx(2 / 3)


async def test_samples_are_independent_draws_called_and_cached_apart(engine_factory,
                                                                     mock_server):
    jury = build({"type": "jury", "samples": 3, "judges": [
        {"type": "llm_judge", "prompt": "{{candidate_answer}}"}]})
    ctx = EvalContext(engine_factory())
    score = await jury.evaluate(CASE, EXECUTION, ctx)
    assert score.value is not None
    assert mock_server.stats.requests == 3  # three draws, none served from the cache
    assert [v["draw"] for v in score.details["votes"]] == [0, 1, 2]
    again = await jury.evaluate(CASE, EXECUTION, EvalContext(engine_factory()))
    assert again.value == score.value
    assert mock_server.stats.requests == 3  # each draw's answer was cached on its own
    repeat = await jury.evaluate(CASE, EXECUTION, EvalContext(engine_factory(), sample=1))
    assert repeat.value is not None
    assert mock_server.stats.requests == 6  # a repeat's draws are new draws


def _scored(score: float) -> dict:
    return {"type": "llm_judge", "name": f"gives-{score}",
            "prompt": f'<<mock:{{"score": {score}, "reasoning": "r"}}>> {{{{candidate_answer}}}}'}


async def test_confirm_on_fail_asks_the_rest_only_when_the_first_verdict_fails(
        engine_factory, mock_server):
    passing = build({"type": "jury", "confirm_on_fail": True,
                     "judges": [_scored(0.9), _scored(0.1), _scored(0.2)]})
    score = await passing.evaluate(CASE, EXECUTION, EvalContext(engine_factory(cache_mode="off")))
    assert score.passed is True and score.details["confirmed"] is False
    assert mock_server.stats.requests == 1
    failing = build({"type": "jury", "confirm_on_fail": True,
                     "judges": [_scored(0.1), _scored(0.9), _scored(0.95)]})
    score = await failing.evaluate(CASE, EXECUTION, EvalContext(engine_factory(cache_mode="off")))
    assert score.details["confirmed"] is True and len(score.details["votes"]) == 3
    assert score.passed is True  # confirmed: the other two overrule the first
    assert mock_server.stats.requests == 4


async def test_errored_votes_are_left_out_and_all_errors_is_an_error(engine_factory):
    ctx = EvalContext(engine_factory())
    broken = {"type": "llm_judge", "name": "broken", "prompt": "<<mock-raw:no json>> "
              "{{candidate_answer}}"}
    mixed = build({"type": "jury", "judges": [broken, {"type": "contains",
                                                       "search_text": "Paris"}]})
    score = await mixed.evaluate(CASE, EXECUTION, ctx)
    assert score.value == 1.0 and score.details["errored"] == ["broken#0"]
    only = build({"type": "jury", "judges": [broken]})
    score = await only.evaluate(CASE, EXECUTION, ctx)
    assert score.error is not None and score.error.code == "all_votes_failed"


async def test_a_pairwise_jury_votes_on_labels(engine_factory):
    first = ("<<mock:{\"winner\": \"A\"}>> {{answer_a}} {{answer_b}}")
    jury = build({"type": "jury", "judges": [
        {"type": "pairwise", "name": "p1", "prompt": first},
        {"type": "pairwise", "name": "p2", "prompt": first}]})
    assert jury.calibration_scale() == {"kind": "pairwise", "ties": True}
    score = await jury.evaluate(Case(id="c", input="q", expected_output="two"),
                                Execution(output="one"), EvalContext(engine_factory()))
    assert score.label == "tie" and score.value == 0.5


def test_jury_config_errors():
    with pytest.raises(Exception, match="at least one judge"):
        build({"type": "jury", "judges": []})
    with pytest.raises(Exception, match="unique"):
        build({"type": "jury", "judges": [{"type": "exact_match"}, {"type": "exact_match"}]})
    with pytest.raises(Exception, match="samples"):
        build({"type": "jury", "samples": 0, "judges": [{"type": "exact_match"}]})
