"""Dataset-level classification reports over per-case (expected, predicted) labels: a
confusion matrix, per-class precision / recall / F-beta, their micro and macro averages.

This is what UiPath's exact-match ``aggregators`` compute (its ``datasetEvaluatorResults``):

- labels are compared lower-cased; ``classes`` keeps the user's spelling;
- the matrix is indexed ``matrix[predicted][expected]`` (rows predicted, columns expected);
- a case whose *expected* label is not a class is skipped (nothing to attribute it to); one
  whose *predicted* label is not a class is a miss (a false negative) of its expected class,
  so recall is not inflated;
- per class: ``fp = row - tp``, ``fn = column - tp + out-of-class misses``,
  ``tn = scored - tp - fp - fn``; precision ``tp / row``, recall ``tp / (tp + fn)``,
  F-beta ``(1 + b^2) P R / (b^2 P + R)``, each 0 when its denominator is 0;
- macro averages the per-class values; micro computes them from the summed counts.

A spec is ``{type: precision | recall | fscore, averaging: macro | micro, fValue}`` or
``{type: confusion_matrix}``; the headline is the spec's metric under its averaging. A
confusion matrix has no headline score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MetricName = Literal["precision", "recall", "fscore", "confusion_matrix"]


class AggregatorSpec(BaseModel):
    """One dataset-level metric of a classification-style evaluator."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: MetricName
    averaging: Literal["macro", "micro"] | None = None
    f_value: float = Field(default=1.0, gt=0, le=1000, alias="fValue")

    @model_validator(mode="after")
    def _averaged(self) -> AggregatorSpec:
        if self.type != "confusion_matrix" and self.averaging is None:
            raise ValueError(f"aggregator {self.type!r} needs 'averaging': macro or micro")
        return self

    def key(self, source: str, duplicate_type: bool) -> str:
        """UiPath's result key: ``{source}::{type}``, extended with ``.{averaging}`` (and
        ``.fb{fValue}`` for fscore) when one source has the same type more than once."""
        key = f"{source}::{self.type}"
        if not duplicate_type or self.averaging is None:
            return key
        if self.type == "fscore":
            return f"{key}.{self.averaging}.fb{self.f_value}"
        return f"{key}.{self.averaging}"


def unique(specs: Sequence[AggregatorSpec]) -> list[AggregatorSpec]:
    """The specs without exact duplicates, in order."""
    seen: set[str] = set()
    kept = []
    for spec in specs:
        text = spec.model_dump_json()
        if text not in seen:
            seen.add(text)
            kept.append(spec)
    return kept


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def f_beta(precision: float, recall: float, beta: float) -> float:
    b2 = beta * beta
    return _ratio((1 + b2) * precision * recall, b2 * precision + recall)


def report(pairs: Iterable[tuple[str, str] | None], classes: Sequence[str],
           spec: AggregatorSpec) -> tuple[float | None, dict[str, Any]]:
    """The headline (None for a confusion matrix) and UiPath's details for ``spec``.

    ``pairs`` holds each case's (expected, predicted) labels, or None for a case that has none
    (an error): it counts in ``nTotal`` and ``nSkipped``.
    """
    index = {c.lower(): i for i, c in enumerate(classes)}
    k = len(classes)
    matrix = [[0] * k for _ in range(k)]
    missed = [0] * k
    total = scored = skipped = 0
    for pair in pairs:
        total += 1
        if pair is None or pair[0].lower() not in index:
            skipped += 1
            continue
        expected, predicted = index[pair[0].lower()], index.get(pair[1].lower())
        scored += 1
        if predicted is None:
            missed[expected] += 1
        else:
            matrix[predicted][expected] += 1
    details: dict[str, Any] = {"metric": spec.type, "classes": list(classes),
                               "confusionMatrix": matrix, "nTotal": total, "nScored": scored,
                               "nSkipped": skipped}
    if spec.type == "confusion_matrix":
        return None, details
    per_class: dict[str, dict[str, Any]] = {}
    sums = [0, 0, 0]
    for c, label in enumerate(classes):
        tp = matrix[c][c]
        row = sum(matrix[c])
        column = sum(matrix[j][c] for j in range(k))
        fp, fn = row - tp, column - tp + missed[c]
        precision, recall = _ratio(tp, row), _ratio(tp, tp + fn)
        per_class[label] = {"tp": tp, "tn": scored - tp - fp - fn, "fp": fp, "fn": fn,
                            "support": tp + fn, "precision": precision, "recall": recall,
                            "fScore": f_beta(precision, recall, spec.f_value)}
        sums = [sums[0] + tp, sums[1] + fp, sums[2] + fn]
    macro = {m: sum(v[m] for v in per_class.values()) / k
             for m in ("precision", "recall", "fScore")}
    micro_p, micro_r = _ratio(sums[0], sums[0] + sums[1]), _ratio(sums[0], sums[0] + sums[2])
    micro = {"precision": micro_p, "recall": micro_r,
             "fScore": f_beta(micro_p, micro_r, spec.f_value)}
    averaged = micro if spec.averaging == "micro" else macro
    headline = averaged[{"precision": "precision", "recall": "recall",
                         "fscore": "fScore"}[spec.type]]
    details.update(averaging=spec.averaging, fValue=spec.f_value, perClass=per_class,
                   macro=macro, micro=micro)
    return headline, details
