"""Pairwise judging in both orders: a judge that prefers position 1 comes out 0% position
consistent (every verdict a tie), a judge that reads the answers comes out consistent, ties are
allowed or forbidden, and the calibration figures of both orders are reported."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from assay.errors import TemplateError
from assay.judges import EvalContext, build
from assay.judges.llm.pairwise import PairwiseChoice, PairwiseChoiceOrTie
from assay.llm import register_service
from assay.llm.structured import json_schema_of
from assay.run.calibrate import calibrate_async
from assay.types.case import Case
from assay.types.execution import Execution

FIRST_ALWAYS = ("Which answer is better? <<mock:{\"winner\": \"A\", \"reasoning\": \"first\"}>>"
                "\n{{question}}\nA: {{answer_a}}\nB: {{answer_b}}")


def _frame(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}_([0-9a-f]{{12}})>\n(.*?)\n</{tag}_\1>", text, re.S)
    return found.group(2) if found else ""


async def reads_the_answers(request: dict[str, Any]) -> dict[str, Any]:
    """A judge that reads both answers and picks the one holding GOOD, whatever the order."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    winner = "A" if "GOOD" in _frame(user, "answer_a") else "B"
    content = json.dumps({"winner": winner, "reasoning": "it says GOOD"})
    return {"choices": [{"message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


async def test_a_judge_preferring_position_one_is_zero_percent_consistent(tmp_path, mock_model,
                                                                          mock_server):
    report = await calibrate_async(
        "llmbar-natural", limit=20, judge={"type": "pairwise", "prompt": FIRST_ALWAYS},
        judge_model=mock_model, store=f"sqlite:///{tmp_path}/runs.db", resamples=200)
    pair = report.pairwise
    assert pair is not None and pair.pairs == 20
    assert pair.position_consistency.value == 0.0
    assert pair.favours_first.value == 1.0 and pair.favours_second.value == 0.0
    assert report.confusion is not None and report.confusion.labels == ["1", "2", "tie"]
    assert [row[2] for row in report.confusion.counts[:2]] == [
        sum(report.confusion.counts[0]), sum(report.confusion.counts[1])]  # all ties
    assert pair.agreement_with_ties.value == 0.0  # every verdict is a tie; no label is
    assert pair.agreement_decisive.value is None and "no pair" in str(
        pair.agreement_decisive.undefined)
    # Shown first, answer 1 is picked; shown second, answer 2: each order's accuracy is the
    # share of labels 1 and 2, and their mean is exactly one half.
    ones = sum(1 for row in report.confusion.counts[:1] for _ in range(row[2]))
    assert pair.accuracy_first_order.value == pytest.approx(ones / 20)
    assert pair.accuracy_mean_of_orders.value == pytest.approx(0.5)
    assert mock_server.stats.requests == 40  # 20 pairs in both orders


async def test_a_judge_that_reads_the_answers_is_consistent(tmp_path):
    model = register_service("reads-answers", reads_the_answers)
    good, bad = "GOOD", "bad, and much longer than the good one"
    rows = [{"id": f"r{i}", "input": "Which?", "output_1": good if i % 2 else bad,
             "output_2": bad if i % 2 else good, "label": 1 if i % 2 else 2}
            for i in range(12)]
    report = await calibrate_async(rows, judge={"type": "pairwise"}, judge_model=model,
                                   store=f"sqlite:///{tmp_path}/runs.db", resamples=200)
    pair = report.pairwise
    assert pair is not None
    assert pair.position_consistency.value == 1.0
    assert report.statistics["accuracy"].value == 1.0
    assert report.statistics["kappa"].value == 1.0
    assert pair.judge_picks_longer.value == 0.0
    assert pair.longer_baseline_accuracy.value == 0.0
    assert pair.length_bias.value == pytest.approx(0.0)


async def test_pairwise_scores_both_orders_and_counts_a_flip_as_a_tie(engine_factory):
    judge = build({"type": "pairwise", "prompt": FIRST_ALWAYS})
    ctx = EvalContext(engine_factory())
    score = await judge.evaluate(Case(id="c", input="q", expected_output="two"),
                                 Execution(output="one"), ctx)
    assert score.label == "tie" and score.value == 0.5 and score.passed is False
    assert score.details is not None and score.details["consistent"] is False
    assert [o["picked"] for o in score.details["orders"]] == ["1", "2"]
    assert "flipped" in (score.rationale or "")
    assert score.usage.calls == 2


async def test_pairwise_without_a_second_answer_does_not_apply(engine_factory):
    judge = build({"type": "pairwise"})
    score = await judge.evaluate(Case(id="c", input="q"), Execution(output="one"),
                                 EvalContext(engine_factory()))
    assert score.skipped and "no second answer" in score.skipped
    other = build({"type": "pairwise", "baseline": "metadata.previous"})
    score = await other.evaluate(Case(id="c", input="q", metadata={"previous": "two"}),
                                 Execution(output="one"), EvalContext(engine_factory()))
    assert score.value is not None


def test_ties_allowed_or_forbidden_change_the_answer_schema():
    assert json_schema_of(PairwiseChoice)["properties"]["winner"]["enum"] == ["A", "B"]
    assert json_schema_of(PairwiseChoiceOrTie)["properties"]["winner"]["enum"] == [
        "A", "B", "tie"]
    assert build({"type": "pairwise", "ties": "forbid"}).calibration_scale() == {
        "kind": "pairwise", "ties": False}


def test_a_pairwise_prompt_must_show_both_answers():
    with pytest.raises(TemplateError, match=r"never shows the judge \{\{answer_b\}\}"):
        build({"type": "pairwise", "prompt": "{{question}} {{answer_a}}"})
    with pytest.raises(TemplateError, match="did you mean"):
        build({"type": "pairwise", "prompt": "{{answer_a}} {answer_b}"})
    with pytest.raises(Exception, match="baseline"):
        build({"type": "pairwise", "baseline": "output"})
