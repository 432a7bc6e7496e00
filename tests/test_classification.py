"""Binary and multiclass classification: per case 1/0, per dataset P/R/F by hand."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from assay.errors import EvaluationError
from assay.judges import EvalContext, build
from assay.judges.deterministic.classification import (
    BinaryClassification,
    Counts,
    MetricType,
    MulticlassClassification,
    binary_metric,
    f_beta,
    multiclass_metric,
    precision,
    recall,
)
from assay.llm import EngineConfig, JudgeEngine
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

# (expected, predicted) with positive class "yes":
# TP: 1, 5   FN: 2   FP: 3, 6   TN: 4   -> TP=2, FP=2, FN=1
BINARY = [("yes", "yes"), ("yes", "no"), ("no", "yes"), ("no", "no"), ("yes", "yes"),
          ("no", "yes")]

# classes cat, dog, bird; "fish" is outside them.
#   cat:  TP 1, FP 1 (bird->cat), FN 1 (cat->dog)        P 1/2  R 1/2  F 1/2
#   dog:  TP 2, FP 1 (cat->dog),  FN 0                   P 2/3  R 1    F 4/5
#   bird: TP 0, FP 0,             FN 2 (->cat, ->fish)   P 0/0=0 R 0   F 0
MULTI = [("cat", "cat"), ("cat", "dog"), ("dog", "dog"), ("dog", "dog"), ("bird", "cat"),
         ("bird", "fish")]
CLASSES = ["cat", "dog", "bird"]


@pytest.fixture
def ctx() -> Iterator[EvalContext]:
    yield EvalContext(JudgeEngine(EngineConfig(cache_mode="off")))


async def scores_for(judge: Any, pairs: list[tuple[str, str]], ctx: EvalContext) -> list[Score]:
    return [await judge.evaluate(Case(id=str(i), expected_output=want),
                                 Execution(output=got), ctx)
            for i, (want, got) in enumerate(pairs)]


# -- formulas ------------------------------------------------------------------------------


def test_formulas_by_hand() -> None:
    counts = Counts(tp=2, fp=2, fn=1)
    assert precision(counts) == 0.5
    assert recall(counts) == pytest.approx(2 / 3)
    assert f_beta(counts, 1.0) == pytest.approx(4 / 7)       # 2PR/(P+R) = (2/3)/(7/6)
    assert f_beta(counts, 2.0) == pytest.approx(5 / 8)       # 5PR/(4P+R) = (5/3)/(8/3)
    assert f_beta(counts, 0.5) == pytest.approx(10 / 19)     # 1.25PR/(.25P+R) = (5/12)/(19/24)


def test_zero_division_is_zero() -> None:
    assert precision(Counts(tp=0, fp=0, fn=3)) == 0.0      # never predicted positive
    assert recall(Counts(tp=0, fp=2, fn=0)) == 0.0         # no positive expected
    assert f_beta(Counts()) == 0.0
    value, counts = binary_metric([("no", "no"), ("no", "no")], "yes", "f-score")
    assert value == 0.0 and counts == Counts()


def test_binary_metric() -> None:
    assert binary_metric(BINARY, "yes", "precision")[0] == 0.5
    assert binary_metric(BINARY, "yes", "recall")[0] == pytest.approx(2 / 3)
    assert binary_metric(BINARY, "yes", "f-score")[0] == pytest.approx(4 / 7)
    # the other class as positive: TP 1 (4), FP 1 (2), FN 2 (3, 6)
    assert binary_metric(BINARY, "no", "precision")[0] == 0.5
    assert binary_metric(BINARY, "no", "recall")[0] == pytest.approx(1 / 3)


def test_multiclass_macro_vs_micro() -> None:
    macro_p, per_class, _ = multiclass_metric(MULTI, CLASSES, "precision", "macro")
    assert per_class == pytest.approx({"cat": 0.5, "dog": 2 / 3, "bird": 0.0})
    assert macro_p == pytest.approx((0.5 + 2 / 3 + 0) / 3)                      # 7/18
    assert multiclass_metric(MULTI, CLASSES, "recall", "macro")[0] == pytest.approx(0.5)
    assert multiclass_metric(MULTI, CLASSES, "f-score", "macro")[0] == pytest.approx(1.3 / 3)
    # micro: TP 3, FP 2, FN 3 ("fish" is no class's false positive)
    micro_p, _, total = multiclass_metric(MULTI, CLASSES, "precision", "micro")
    assert total == Counts(tp=3, fp=2, fn=3) and micro_p == pytest.approx(3 / 5)
    assert multiclass_metric(MULTI, CLASSES, "recall", "micro")[0] == pytest.approx(1 / 2)
    assert multiclass_metric(MULTI, CLASSES, "f-score", "micro")[0] == pytest.approx(6 / 11)


def test_micro_equals_accuracy_when_all_predictions_are_classes() -> None:
    pairs = [("a", "a"), ("a", "b"), ("b", "b"), ("c", "a")]
    kinds: list[MetricType] = ["precision", "recall", "f-score"]
    for kind in kinds:
        assert multiclass_metric(pairs, ["a", "b", "c"], kind, "micro")[0] == 0.5


def test_macro_counts_classes_that_never_occur() -> None:
    pairs = [("a", "a"), ("b", "b")]
    assert multiclass_metric(pairs, ["a", "b", "c"], "f-score", "macro")[0] == pytest.approx(2 / 3)


# -- evaluators ----------------------------------------------------------------------------


async def test_binary_per_case_and_reduce(ctx: EvalContext) -> None:
    judge = BinaryClassification(positive_class="YES")
    scores = await scores_for(judge, [(w.upper(), g) for w, g in BINARY], ctx)
    assert [s.value for s in scores] == [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    assert scores[1].details == {"expected": "yes", "predicted": "no"}
    assert scores[0].raw is True and scores[0].scale == "bool"
    overall = judge.reduce(scores)
    assert overall.value == 0.5 and overall.details is not None
    assert (overall.details["tp"], overall.details["fp"], overall.details["fn"]) == (2, 2, 1)
    recall_judge = build({"type": "binary_classification", "positiveClass": "yes",
                          "metricType": "f-score", "fValue": 2})
    assert recall_judge.reduce(scores).value == pytest.approx(5 / 8)


async def test_reduce_leaves_out_errors_and_fails_on_nothing(ctx: EvalContext) -> None:
    judge = BinaryClassification(positive_class="yes", target_output_key="label")
    good = await judge.evaluate(Case(id="1", expected_output="yes"),
                                Execution(output={"label": "yes"}), ctx)
    bad = await judge.evaluate(Case(id="2", expected_output="yes"),
                               Execution(output={"other": "yes"}), ctx)
    assert bad.error is not None and bad.error.code == "target_output_key_not_found"
    overall = judge.reduce([good, bad])
    assert overall.value == 1.0 and overall.details is not None
    assert overall.details["errors"] == 1 and overall.details["cases"] == 1
    nothing = judge.reduce([bad])
    assert nothing.error is not None and nothing.error.code == "no_scores"


async def test_expected_class_sources(ctx: EvalContext) -> None:
    judge = BinaryClassification(positive_class="spam", expected_class="Spam",
                                 target_output_key="verdict")
    score = await judge.evaluate(Case(id="1"), Execution(output={"verdict": "SPAM"}), ctx)
    assert score.value == 1.0
    keyed = BinaryClassification(positive_class="spam", target_output_key="verdict")
    score = await keyed.evaluate(Case(id="2", expected_output={"verdict": "ham"}),
                                 Execution(output='{"verdict": "ham"}'), ctx)
    assert score.value == 1.0
    missing = await keyed.evaluate(Case(id="3"), Execution(output={"verdict": "ham"}), ctx)
    assert missing.error is not None and missing.error.code == "missing_expected_class"


async def test_numeric_labels_compare_as_written(ctx: EvalContext) -> None:
    judge = BinaryClassification(positive_class="1")
    score = await judge.evaluate(Case(id="1", expected_output="1"), Execution(output=1), ctx)
    assert score.value == 1.0 and score.details == {"expected": "1", "predicted": "1"}


async def test_multiclass_per_case_and_reduce(ctx: EvalContext) -> None:
    judge = MulticlassClassification(classes=["Cat", "Dog", "Bird"])
    assert judge.metric_type == "f-score" and judge.averaging == "macro"
    scores = await scores_for(judge, MULTI, ctx)
    assert [s.value for s in scores] == [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    macro = judge.reduce(scores)
    assert macro.value == pytest.approx(1.3 / 3)
    assert macro.details is not None
    assert macro.details["per_class"] == pytest.approx({"cat": 0.5, "dog": 0.8, "bird": 0.0})
    micro = build({"type": "multiclass_classification", "classes": CLASSES,
                   "averaging": "micro"})
    assert micro.reduce(scores).value == pytest.approx(6 / 11)


async def test_multiclass_unknown_expected_class_is_an_error(ctx: EvalContext) -> None:
    judge = MulticlassClassification(classes=CLASSES)
    score = await judge.evaluate(Case(id="1", expected_output="fish"),
                                 Execution(output="fish"), ctx)
    assert score.error is not None and score.error.code == "unknown_class"


@pytest.mark.parametrize("config", [
    {"type": "binary_classification"},
    {"type": "binary_classification", "positive_class": "  "},
    {"type": "binary_classification", "positive_class": "y", "metric_type": "f1"},
    {"type": "binary_classification", "positive_class": "y", "f_value": 0},
    {"type": "multiclass_classification"},
    {"type": "multiclass_classification", "classes": ["only"]},
    {"type": "multiclass_classification", "classes": ["a", "A"]},
    {"type": "multiclass_classification", "classes": ["a", "b"], "averaging": "weighted"},
    {"type": "multiclass_classification", "classes": ["a", "b"], "expected_class": "c"},
])
def test_configuration_errors_fail_when_built(config: dict[str, Any]) -> None:
    with pytest.raises(EvaluationError) as info:
        build(config)
    assert info.value.code == "invalid_evaluator_config"
