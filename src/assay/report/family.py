"""What a family's run means, as its own tools show it: the viewer's family panels.

A run scored by Databricks' or MLflow's rules (``--naming``) is shown in the seed's column
names, row by row (:func:`assay.run.policies.databricks.named_row`, the rows ``result_df``
and the results file hold), with each row's overall assessment and per-chunk ratings, and the
run's named aggregates. A run judged by Connexity's multi-metric judge is shown with its
metrics (each 0-5, a binary one as pass or fail), the weighted overall score (0-100), the
expected-outcomes checklist, and the run's two dimensions against their thresholds. Numbers
are shown by :mod:`assay.types.numbers`; the values are the policies' own, never computed
again here.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from assay.run.display import TURN_LATENCY
from assay.types import numbers
from assay.types.records import CaseRecord, RunRecord, RunSummary
from assay.types.score import Score
from assay.types.verdict import exceeds

CONNEXITY_SCALE = 5


class NamedColumn(BaseModel):
    """One column of a row in the seed's names, its value as text."""

    key: str
    value: str


class MetricLine(BaseModel):
    """One of a multi-metric judge's metrics on a case."""

    metric: str
    display_name: str
    score: str = Field(description="0-5, or pass / fail for a binary metric")
    fraction: float = Field(description="the score over 5, for a bar")
    is_binary: bool
    passed: bool | None = None
    label: str = ""
    weight: str = ""
    justification: str = ""
    failure_code: str | None = None
    turns: list[int] = Field(default_factory=list)


class OutcomeLine(BaseModel):
    """One expected outcome of a case, checked."""

    index: int
    statement: str
    passed: bool
    justification: str = ""


class ConnexityCase(BaseModel):
    """A multi-metric judge's verdict on a case."""

    evaluator: str
    overall: str = Field(description="the weighted overall score, 0-100")
    passed: bool | None = None
    gate: str = Field(description="what decided the case: expected_outcomes, or the score "
                      "against the pass threshold (score_fallback)")
    pass_threshold: str
    summary: str = ""
    metrics: list[MetricLine] = Field(default_factory=list)
    outcomes: list[OutcomeLine] = Field(default_factory=list)


class CaseFamily(BaseModel):
    """A case as its family's tools show it."""

    naming: str | None = Field(default=None, description="databricks or mlflow")
    named: list[NamedColumn] = Field(default_factory=list)
    overall_assessment: str | None = None
    overall_rationale: str | None = None
    connexity: list[ConnexityCase] = Field(default_factory=list)


class DimensionLine(BaseModel):
    """One of a run's gated figures against its threshold."""

    name: str
    value: str
    threshold: str
    passed: bool | None = None


class AggregateLine(BaseModel):
    """One of a run's named aggregates (Databricks' or MLflow's names)."""

    key: str
    value: str
    assessment: str = ""
    counts: str = ""


class MetricMean(BaseModel):
    """A multi-metric judge's metric over a run's cases."""

    metric: str
    mean: str
    fraction: float
    cases: str


class RunFamily(BaseModel):
    """A run as its family's tools show it."""

    naming: str | None = None
    gate: str | None = None
    aggregates: list[AggregateLine] = Field(default_factory=list)
    assertion_failures: list[str] = Field(default_factory=list)
    criteria: str | None = None
    criteria_failures: list[str] = Field(default_factory=list)
    dimensions: list[DimensionLine] = Field(default_factory=list)
    metric_means: list[MetricMean] = Field(default_factory=list)


def _text(value: Any) -> str:
    if value is None:
        return numbers.MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return numbers.score(value) if 0 <= value <= 1 else json.dumps(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def connexity_case(score: Score) -> ConnexityCase | None:
    """A multi-metric judge's verdict, or None for any other score."""
    details = score.details or {}
    if "overall_score" not in details or "metric_scores" not in details:
        return None
    metrics = []
    for entry in details.get("metric_scores") or []:
        value = float(entry.get("score") or 0)
        binary = bool(entry.get("is_binary"))
        metrics.append(MetricLine(
            metric=str(entry.get("metric")), display_name=str(entry.get("display_name") or
                                                               entry.get("metric")),
            score=("pass" if value >= CONNEXITY_SCALE else "fail") if binary
            else numbers.points(value, CONNEXITY_SCALE),
            fraction=value / CONNEXITY_SCALE, is_binary=binary,
            passed=(value >= CONNEXITY_SCALE) if binary else None,
            label=str(entry.get("label") or ""), weight=_text(entry.get("weight")),
            justification=str(entry.get("justification") or ""),
            failure_code=entry.get("failure_code"),
            turns=[t for t in entry.get("turns") or [] if isinstance(t, int)]))
    outcomes = [OutcomeLine(index=int(o.get("index") or i + 1),
                            statement=str(o.get("statement") or ""),
                            passed=bool(o.get("passed")),
                            justification=str(o.get("justification") or ""))
                for i, o in enumerate(details.get("expected_outcome_results") or [])]
    return ConnexityCase(
        evaluator=score.name, overall=numbers.points(details.get("overall_score")),
        passed=details.get("passed"), gate=str(details.get("gate") or ""),
        pass_threshold=numbers.points(details.get("pass_threshold")),
        summary=str(details.get("summary") or ""), metrics=metrics, outcomes=outcomes)


def case_family(record: CaseRecord, run: RunRecord | None) -> CaseFamily | None:
    """The family panels of a case: its row in the run's naming, and each multi-metric
    judge's verdict; None for a case of neither."""
    found = CaseFamily(connexity=[c for s in record.scores if (c := connexity_case(s))])
    naming = run.config.run.naming if run is not None else None
    if naming and run is not None:
        from assay.run.policies.databricks import Catalog, named_row

        row = named_row(record, Catalog(run.config.evaluators), str(naming),
                        str(run.config.run.chunk_errors or "exclude"))
        found.naming = str(naming)
        found.named = [NamedColumn(key=k, value=_text(v)) for k, v in row.items()]
        found.overall_assessment = row.get("response/overall_assessment/rating")
        found.overall_rationale = row.get("response/overall_assessment/rationale")
    return found if found.naming or found.connexity else None


def run_family(run: RunRecord, metric_rows: list[list[dict[str, Any]]] | None = None
               ) -> RunFamily | None:
    """The family panels of a run: its named aggregates and gate (Databricks, MLflow), its
    dimensions against their thresholds, and (given every case's ``metric_scores``) each
    multi-metric judge's metric over the run; None for a run of neither."""
    summary = run.summary
    if summary is None:
        return None
    found = RunFamily(dimensions=dimensions(summary))
    assessed = summary.assessments
    if assessed is not None:
        found.naming, found.gate = assessed.naming, assessed.gate
        found.aggregates = [AggregateLine(
            key=row.key, value=_aggregate(row.key, row.value), assessment=row.assessment,
            counts=f"{numbers.count(row.scored)} scored, {numbers.count(row.errors)} "
                   f"error(s), {numbers.count(row.skipped)} skipped")
            for row in assessed.metrics]
        found.assertion_failures = list(assessed.assertion_failures)
        found.criteria, found.criteria_failures = assessed.criteria, \
            list(assessed.criteria_failures)
    if metric_rows:
        found.metric_means = metric_means(metric_rows)
    if not (found.naming or found.dimensions or found.metric_means):
        return None
    return found


def _aggregate(key: str, value: float | int | None) -> str:
    if isinstance(value, float) and key.endswith("/percentage"):
        return numbers.percent(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return numbers.count(value)
    return _text(value)


def dimensions(summary: RunSummary) -> list[DimensionLine]:
    """The run's gated dimensions (only those it has), and its agent latency as the
    terminal states it (the executions' median turn latency)."""
    lines = []
    if summary.metrics_pass_threshold is not None:
        lines.append(DimensionLine(
            name="metrics: mean case score", value=numbers.points(
                summary.weighted_metrics_score_pct),
            threshold="at least " + numbers.points(summary.metrics_pass_threshold),
            passed=summary.metrics_passed))
    if summary.cases_pass_threshold is not None:
        lines.append(DimensionLine(
            name="cases: passed over all executions",
            value=numbers.percent(None if summary.cases_pass_rate_pct is None
                                  else summary.cases_pass_rate_pct / 100),
            threshold="at least " + numbers.percent(summary.cases_pass_threshold / 100),
            passed=summary.cases_passed))
    if summary.max_error_rate is not None:
        rate = summary.error_rate
        lines.append(DimensionLine(
            name="errors over all executions", value=numbers.percent(rate),
            threshold="at most " + numbers.percent(summary.max_error_rate),
            passed=None if rate is None else not exceeds(rate, summary.max_error_rate)))
    if lines and summary.latency_p50_ms is not None:
        lines.append(DimensionLine(
            name=f"{TURN_LATENCY}, p50 (p95)",
            value=f"{numbers.milliseconds(summary.latency_p50_ms)} "
                  f"({numbers.milliseconds(summary.latency_p95_ms)})", threshold=""))
    return lines


def metric_means(rows: list[list[dict[str, Any]]]) -> list[MetricMean]:
    """Each metric's mean over the cases that scored it (0-5; a binary metric as the share
    that passed), from every case's ``metric_scores``."""
    totals: dict[str, list[float]] = {}
    binary: dict[str, bool] = {}
    for entries in rows:
        for entry in entries or []:
            if not isinstance(entry, dict) or entry.get("score") is None:
                continue
            name = str(entry.get("metric"))
            totals.setdefault(name, []).append(float(entry["score"]))
            binary[name] = bool(entry.get("is_binary"))
    found = []
    for name, values in totals.items():
        mean = sum(values) / len(values)
        found.append(MetricMean(
            metric=name, mean=numbers.percent(mean / CONNEXITY_SCALE) + " passed"
            if binary[name] else numbers.points(mean, CONNEXITY_SCALE),
            fraction=mean / CONNEXITY_SCALE, cases=numbers.count(len(values))))
    return found


__all__ = ["CaseFamily", "ConnexityCase", "RunFamily", "case_family", "connexity_case",
           "dimensions", "metric_means", "run_family"]
