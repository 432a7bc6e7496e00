"""Classification evaluators: per case right or wrong, over a dataset precision/recall/F.

A single case can only say whether the predicted class is the expected one (1.0 or 0.0).
Precision and recall exist only over many cases, so each evaluator also has
:meth:`reduce`, which folds the per-case scores (whose details keep ``expected`` and
``predicted``) into one dataset-level score.

Formulas, with TP/FP/FN counted per class ``c`` (a case is a TP for ``c`` when expected and
predicted are both ``c``, an FP when only predicted is ``c``, an FN when only expected is)::

    precision = TP / (TP + FP)        recall = TP / (TP + FN)
    F-beta    = (1 + b^2) * P * R / (b^2 * P + R)

Any 0/0 counts as 0.0 (a class never predicted has precision 0, not an error), as
scikit-learn does with ``zero_division=0``. Binary classification counts only the positive
class. Multiclass ``macro`` averages the per-class metric over all configured classes (a class
that never occurs scores 0 and still counts); ``micro`` sums TP, FP and FN over classes first,
which for one label per case makes precision = recall = F = accuracy over in-class
predictions. Classes are compared lower-cased, as UiPath does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

from assay.errors import EvaluationError
from assay.judges.base import EvalContext
from assay.judges.output_path import TargetedEvaluator
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

MetricType = Literal["precision", "recall", "f-score"]
Averaging = Literal["micro", "macro"]


@dataclass(frozen=True)
class Counts:
    """True positives, false positives and false negatives for one class (or summed)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def precision(counts: Counts) -> float:
    return _ratio(counts.tp, counts.tp + counts.fp)


def recall(counts: Counts) -> float:
    return _ratio(counts.tp, counts.tp + counts.fn)


def f_beta(counts: Counts, beta: float = 1.0) -> float:
    """The weighted harmonic mean of precision and recall; ``beta > 1`` favours recall."""
    p, r = precision(counts), recall(counts)
    b2 = beta * beta
    return _ratio((1 + b2) * p * r, b2 * p + r)


def metric(counts: Counts, kind: MetricType, beta: float = 1.0) -> float:
    if kind == "precision":
        return precision(counts)
    if kind == "recall":
        return recall(counts)
    return f_beta(counts, beta)


def count(pairs: Iterable[tuple[str, str]], label: str) -> Counts:
    """TP/FP/FN of ``label`` over ``(expected, predicted)`` pairs."""
    tp = fp = fn = 0
    for expected, predicted in pairs:
        tp += expected == label and predicted == label
        fp += expected != label and predicted == label
        fn += expected == label and predicted != label
    return Counts(tp, fp, fn)


def binary_metric(pairs: list[tuple[str, str]], positive: str, kind: MetricType,
                  beta: float = 1.0) -> tuple[float, Counts]:
    """The metric of the positive class, and its counts."""
    counts = count(pairs, positive)
    return metric(counts, kind, beta), counts


def multiclass_metric(pairs: list[tuple[str, str]], classes: list[str], kind: MetricType,
                      averaging: Averaging, beta: float = 1.0
                      ) -> tuple[float, dict[str, float], Counts]:
    """The micro or macro metric, each class's own metric, and the summed counts."""
    per_class = {c: count(pairs, c) for c in classes}
    scores = {c: metric(k, kind, beta) for c, k in per_class.items()}
    total = sum(per_class.values(), Counts())
    if averaging == "micro":
        return metric(total, kind, beta), scores, total
    return sum(scores.values()) / len(scores), scores, total


class ClassificationEvaluator(TargetedEvaluator):
    """Per case: 1.0 when the predicted class (the selected output) is the expected class."""

    expected_class: str | None = Field(
        default=None, validation_alias=AliasChoices("expected_class", "expectedClass"))
    metric_type: MetricType = Field(
        default="precision", validation_alias=AliasChoices("metric_type", "metricType"))
    f_value: float = Field(default=1.0, gt=0,
                           validation_alias=AliasChoices("f_value", "fValue"))

    @property
    def reduces(self) -> bool:
        """A classification run always gets its dataset-level metric."""
        return True

    def _expected(self, case: Case) -> str:
        if self.expected_class is not None:
            return self.expected_class.lower()
        if case.expected_output is None:
            raise EvaluationError(
                "missing_expected_class",
                f"{self.name}: case {case.id!r} has no expected_output and the evaluator sets "
                "no expected_class")
        value = case.expected_output
        if not isinstance(value, str):
            value = self.expected_value(value)
        return _label(value)

    def _check(self, expected: str) -> None:
        """Raise when the expected class is not one the evaluator knows (multiclass)."""

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        expected = self._expected(case)
        self._check(expected)
        predicted = _label(self.actual_value(execution))
        hit = expected == predicted
        return Score(name=self.name, value=1.0 if hit else 0.0, raw=hit, scale="bool",
                     passed=self.verdict(1.0 if hit else 0.0),
                     rationale=f"predicted {predicted!r}, expected {expected!r}",
                     details={"expected": expected, "predicted": predicted})

    def _pairs(self, scores: list[Score]) -> tuple[list[tuple[str, str]], int]:
        pairs: list[tuple[str, str]] = []
        errors = 0
        for s in scores:
            details = s.details or {}
            if s.error is not None or "expected" not in details or "predicted" not in details:
                errors += 1
                continue
            pairs.append((str(details["expected"]).lower(), str(details["predicted"]).lower()))
        if not pairs:
            raise EvaluationError("no_scores",
                                  f"{self.name}: none of {len(scores)} score(s) has a value "
                                  "to aggregate")
        return pairs, errors

    def _reduced(self, value: float, counts: Counts, n: int, errors: int,
                 extra: dict[str, Any]) -> Score:
        details = {"metric_type": self.metric_type, "f_value": self.f_value, "cases": n,
                   "errors": errors, "tp": counts.tp, "fp": counts.fp, "fn": counts.fn, **extra}
        return Score(name=self.name, value=value, raw=value, scale="0-1",
                     passed=self.verdict(value),
                     rationale=f"{self.metric_type} {value:.3f} over {n} case(s)"
                     + (f"; {errors} error(s) left out" if errors else ""),
                     details=details)


def _label(value: Any) -> str:
    """A class label for comparison: text, lower-cased; whole floats read as integers."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return ("" if value is None else str(value)).lower()


@register
class BinaryClassification(ClassificationEvaluator):
    """Right or wrong per case; :meth:`reduce` gives the positive class's precision/recall/F."""

    type = "binary_classification"
    positive_class: str = Field(
        validation_alias=AliasChoices("positive_class", "positiveClass"))

    @field_validator("positive_class")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("positive_class cannot be empty")
        return value

    def reduce(self, scores: list[Score]) -> Score:
        """The dataset-level metric of the positive class over the per-case scores."""
        try:
            pairs, errors = self._pairs(scores)
        except EvaluationError as exc:
            return Score.failed(self.name, exc.code, exc.message)
        value, counts = binary_metric(pairs, self.positive_class.lower(), self.metric_type,
                                      self.f_value)
        return self._reduced(value, counts, len(pairs), errors,
                             {"positive_class": self.positive_class})


@register
class MulticlassClassification(ClassificationEvaluator):
    """Right or wrong per case; :meth:`reduce` gives the micro or macro precision/recall/F."""

    type = "multiclass_classification"
    classes: list[str]
    metric_type: MetricType = Field(
        default="f-score", validation_alias=AliasChoices("metric_type", "metricType"))
    averaging: Averaging = "macro"

    @model_validator(mode="after")
    def _classes_usable(self) -> MulticlassClassification:
        lowered = [c.lower() for c in self.classes]
        if len(lowered) < 2:
            raise ValueError("classes needs at least two classes")
        if len(set(lowered)) != len(lowered):
            raise ValueError("classes repeats a class (classes are compared lower-cased)")
        if self.expected_class is not None and self.expected_class.lower() not in lowered:
            raise ValueError(f"expected_class {self.expected_class!r} is not one of "
                             f"{self.classes}")
        return self

    def _check(self, expected: str) -> None:
        if expected not in [c.lower() for c in self.classes]:
            raise EvaluationError(
                "unknown_class",
                f"{self.name}: expected class {expected!r} is not one of {self.classes}")

    def reduce(self, scores: list[Score]) -> Score:
        """The dataset-level micro or macro metric over the per-case scores."""
        try:
            pairs, errors = self._pairs(scores)
        except EvaluationError as exc:
            return Score.failed(self.name, exc.code, exc.message)
        classes = [c.lower() for c in self.classes]
        value, per_class, counts = multiclass_metric(pairs, classes, self.metric_type,
                                                     self.averaging, self.f_value)
        return self._reduced(value, counts, len(pairs), errors,
                             {"averaging": self.averaging, "per_class": per_class})
