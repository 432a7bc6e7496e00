"""Rubric judges against the real mock HTTP server: checklist and score-range formulas,
required gates, validation of the judge's ids with re-asks, and build-time config errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.errors import EvaluationError
from assay.judges import EvalContext, build
from assay.judges.llm.rubric import ChecklistCheck, ChecklistVerdict, Rubric, answer_schema
from assay.types.case import Case
from assay.types.execution import Execution

CASE = Case(id="r", input="Explain the refund policy", expected_outcomes=["Accurate policy"])


def _forced(answer: dict[str, Any]) -> Execution:
    return Execution(output=f"<<mock:{json.dumps(answer)}>>")


def _checks(**satisfied: bool) -> dict[str, Any]:
    return {"checks": [{"id": k, "satisfied": v, "reasoning": f"{k} reason"}
                       for k, v in satisfied.items()], "overall_reasoning": "overall"}


def _scores(**raw: int) -> dict[str, Any]:
    return {"checks": [{"id": k, "score": v, "reasoning": f"{k} reason"}
                       for k, v in raw.items()]}


CHECKLIST = {"type": "rubric", "rubrics": [
    {"id": "accurate", "expected_outcome": "States the 30-day window", "weight": 3},
    {"id": "polite", "description": "Is polite", "weight": 1, "required": False},
]}


async def test_checklist_score_is_satisfied_weight_over_total(engine_factory, mock_server):
    judge = build({**CHECKLIST, "threshold": 0.7})
    score = await judge.evaluate(CASE, _forced(_checks(accurate=True, polite=False)),
                                 EvalContext(engine_factory()))
    assert score.ok, score.error
    assert score.value == pytest.approx(3 / 4)
    assert score.passed is True  # 0.75 >= 0.7 and the required item holds
    assert score.raw == {"accurate": True, "polite": False}
    assert score.scale == "checklist"
    assert score.hits == ["[accurate] States the 30-day window: accurate reason"]
    assert score.misses == ["[polite] Is polite: polite reason"]
    assert score.rationale == "overall"
    assert score.blocking is False
    assert score.usage.calls == 1 and mock_server.stats.requests == 1


async def test_unsatisfied_required_item_fails_whatever_the_score(engine_factory, mock_server):
    judge = build({"type": "rubric", "rubrics": [
        {"id": "a", "expected_outcome": "A", "weight": 1},
        {"id": "b", "expected_outcome": "B", "weight": 4, "required": False},
        {"id": "c", "expected_outcome": "C", "weight": 4, "required": False}]})
    score = await judge.evaluate(CASE, _forced(_checks(a=False, b=True, c=True)),
                                 EvalContext(engine_factory()))
    assert score.value == pytest.approx(8 / 9)  # above the 0.8 threshold...
    assert score.passed is False  # ...but the required item failed
    assert score.blocking is True  # and it fails the case whatever the case's mean


async def test_plain_string_rubrics_are_numbered_and_required(engine_factory, mock_server):
    judge = build({"type": "rubric", "rubrics": ["Must be polite", "Mentions refunds"]})
    assert [r.id for r in judge.rubrics] == ["r1", "r2"]
    assert all(r.required for r in judge.rubrics)
    score = await judge.evaluate(CASE, _forced(_checks(r1=True, r2=True)),
                                 EvalContext(engine_factory()))
    assert score.value == 1.0 and score.passed is True


async def test_unknown_id_is_reasked_then_accepted(engine_factory, mock_server):
    bad = _checks(accurate=True, typo=True)
    good = _checks(accurate=True, polite=True)
    execution = Execution(output=f"<<mock-seq:{json.dumps([bad, good])}>>")
    score = await build(CHECKLIST).evaluate(CASE, execution, EvalContext(engine_factory()))
    assert score.ok and score.value == 1.0
    assert score.usage.calls == 2 and mock_server.stats.requests == 2


async def test_missing_id_after_reasks_is_an_error_never_zero(engine_factory, mock_server):
    execution = _forced(_checks(accurate=True))
    score = await build(CHECKLIST).evaluate(CASE, execution,
                                            EvalContext(engine_factory(reasks=1)))
    assert score.value is None and score.passed is None
    assert score.error is not None and score.error.code == "judge_output_invalid"
    assert "polite" in score.error.message
    assert score.usage.calls == 2


async def test_repeated_id_is_invalid(engine_factory, mock_server):
    answer = {"checks": [{"id": "accurate", "satisfied": True},
                         {"id": "accurate", "satisfied": False},
                         {"id": "polite", "satisfied": True}]}
    score = await build(CHECKLIST).evaluate(CASE, _forced(answer),
                                            EvalContext(engine_factory(reasks=0)))
    assert score.error is not None and "repeated" in score.error.message


RANGES = {"type": "rubric", "rubrics": [
    {"id": "clarity", "expected_outcome": "Clear", "weight": 2,
     "score_ranges": {0: "Bad", 3: "OK", 7: "Good", 10: "Perfect"}},
    {"id": "accuracy", "expected_outcome": "Accurate", "weight": 1, "required_min_score": 5,
     "score_ranges": [
         {"score_range": [0, 4], "expected_outcome": "Wrong"},
         {"score_range": [5, 8], "expected_outcome": "Mostly right"},
         {"score_range": [9, 10], "expected_outcome": "Right"}]},
]}


async def test_score_ranges_weighted_normalised_average(engine_factory, mock_server):
    score = await build(RANGES).evaluate(CASE, _forced(_scores(clarity=8, accuracy=6)),
                                         EvalContext(engine_factory()))
    # (8/10 * 2 + 6/10 * 1) / 3 = 2.2 / 3
    assert score.value == pytest.approx(2.2 / 3)
    assert score.passed is False  # 0.733 < 0.8
    assert score.scale == "0-10" and score.raw == {"clarity": 8, "accuracy": 6}
    assert score.details is not None
    assert score.details.pop("judge_request") and score.details.pop("judge_answer")
    assert score.details == {"raw_scores": {"clarity": 8, "accuracy": 6},
                             "normalization": "score / 10", "aggregation": "weighted_average",
                             "below_required_min": []}
    assert [h.split("]")[0] for h in score.hits] == ["[clarity"]  # 8 >= 7 is a hit
    assert [m.split("]")[0] for m in score.misses] == ["[accuracy"]  # 6 < 7 is a miss


async def test_required_min_score_forces_a_fail(engine_factory, mock_server):
    score = await build(RANGES).evaluate(CASE, _forced(_scores(clarity=10, accuracy=4)),
                                         EvalContext(engine_factory()))
    assert score.value == pytest.approx((2 + 0.4) / 3)  # exactly 0.8: above threshold
    assert score.passed is False
    assert score.details is not None and score.details["below_required_min"] == ["accuracy"]
    assert any("below the required minimum 5" in m for m in score.misses)
    good = await build(RANGES).evaluate(CASE, _forced(_scores(clarity=10, accuracy=9)),
                                        EvalContext(engine_factory()))
    assert good.value == pytest.approx(2.9 / 3) and good.passed is True


async def test_score_above_ten_is_reasked(engine_factory, mock_server):
    answers = [_scores(clarity=11, accuracy=5), _scores(clarity=5, accuracy=5)]
    execution = Execution(output=f"<<mock-seq:{json.dumps(answers)}>>")
    score = await build(RANGES).evaluate(CASE, execution, EvalContext(engine_factory()))
    assert score.value == pytest.approx(0.5) and score.usage.calls == 2


def test_shorthand_map_expands_to_bands_covering_zero_to_ten():
    judge = build(RANGES)
    bands = [(b.score_range, b.expected_outcome) for b in judge.rubrics[0].score_ranges]
    assert bands == [((0, 2), "Bad"), ((3, 6), "OK"), ((7, 9), "Good"), ((10, 10), "Perfect")]
    text = judge._rubric_text()
    assert "- [accuracy] (weight: 1) (minimum score: 5): Accurate" in text
    assert "    3-6: OK" in text


def test_explicit_required_in_range_mode_means_ten():
    judge = build({"type": "rubric", "rubrics": [
        {"id": "a", "expected_outcome": "A", "required": True, "score_ranges": {0: "x"}},
        {"id": "b", "expected_outcome": "B", "score_ranges": {0: "x"}}]})
    assert [r.min_score() for r in judge.rubrics] == [10, None]


def test_answer_schema_shows_the_judge_the_rubric_ids():
    schema = answer_schema(ChecklistVerdict, ChecklistCheck, ("accurate", "polite"))
    json_schema = schema.model_json_schema()
    check = next(iter(json_schema["$defs"].values()))
    assert check["properties"]["id"]["enum"] == ["accurate", "polite"]
    assert schema.model_validate(_checks(polite=False, accurate=True)).ids() == [
        "polite", "accurate"]


def test_checklist_prompt_marks_required_items():
    text = build(CHECKLIST)._rubric_text()
    assert "- [accurate] (REQUIRED) (weight: 3): States the 30-day window" in text
    assert "- [polite] (weight: 1): Is polite" in text


@pytest.mark.parametrize(("rubrics", "message"), [
    ([{"id": "a", "expected_outcome": "A", "score_ranges": [
        {"score_range": [0, 5], "expected_outcome": "x"},
        {"score_range": [5, 10], "expected_outcome": "y"}]}], "overlap at [5]"),
    ([{"id": "a", "expected_outcome": "A", "score_ranges": [
        {"score_range": [0, 3], "expected_outcome": "x"},
        {"score_range": [6, 10], "expected_outcome": "y"}]}], "not covered: 4, 5"),
    ([{"id": "a", "expected_outcome": "A", "score_ranges": {1: "x", 5: "y"}}],
     "not covered: 0"),
    ([{"id": "a", "expected_outcome": "A", "score_ranges": [
        {"score_range": [0, 11], "expected_outcome": "x"}]}], "0 <= min <= max <= 10"),
    ([{"id": "a", "expected_outcome": "A", "score_ranges": [
        {"score_range": [0, 2.5], "expected_outcome": "x"}]}], "score_range"),
    ([{"id": "a", "expected_outcome": "A", "score_ranges": {"low": "x"}}], "not an integer"),
    ([{"id": "a", "expected_outcome": "A", "score_ranges": {0: "x"}},
      {"id": "b", "expected_outcome": "B"}], "every criterion or for none"),
    ([{"id": "a", "expected_outcome": "A"}, {"id": "a", "expected_outcome": "B"}],
     "repeated: a"),
    ([{"id": "a", "expected_outcome": "A", "required_min_score": 5}],
     "required_min_score only applies"),
    ([{"id": "a", "expected_outcome": "A", "weight": 0}], "add up to 0"),
    ([{"id": "a"}], "expected_outcome"),
    ([{"id": "a", "expected_outcome": "A", "wieght": 2}], "wieght"),
    ([], "rubrics"),
])
def test_bad_rubric_config_fails_at_build_naming_the_field(rubrics, message):
    with pytest.raises(EvaluationError) as err:
        build({"type": "rubric", "name": "policy", "rubrics": rubrics})
    assert err.value.code == "invalid_evaluator_config"
    assert "rubrics" in err.value.message
    assert message in err.value.message


def test_criteria_is_accepted_for_rubrics():
    judge = build({"type": "rubric", "criteria": [{"id": "a", "outcome": "A"}]})
    assert isinstance(judge, Rubric) and judge.rubrics[0].expected_outcome == "A"
    assert judge.weight == 1.0 and judge.models() == [None]
