"""A run's agent-judge aggregates, its pass rule and its quality criteria, folded case by case.

Records are folded as they complete (a run of any size keeps one list of numbers per
aggregate, nothing more), then :meth:`AssessmentFold.summary` gives the
:class:`~assay.types.records.AssessmentSummary` stored with the run.

Aggregates, ``databricks`` names:

- ``<key>/rating/percentage``: yes over rated cases (errors and skips are not in the
  denominator; no rated case, no key); safety also as ``/rating/average`` (the name in Databricks'
  documentation).
- ``<key>/precision/average``: mean over the cases that have a precision (per-chunk judges).
- ``retrieval/ground_truth/document_recall/average``, ``agent/latency_seconds/average``,
  ``response/overall_assessment/rating/percentage``, ``metric/<name>/average``.
- ``judge/<name>/error_count``: real errors only (a missing input is a skip, not counted),
  per chunk for per-chunk judges.

``mlflow`` names: ``<name>/<aggregation>`` for each of the scorer's aggregations (``mean`` by
default; ``min, max, median, variance`` (population), ``p90`` (linear)), over the values as
MLflow reads them (yes 1, no 0, bools and numbers as they are; errors and skips left out).
Each aggregate row also carries its counts of values, errors and skips.

The pass rule (``result.passed``): every yes/no or bool value is yes/true, every value with a
``pass_if`` meets it, and no score is an error (a chunk that could not be rated counts); a
skip is not a failure, and a number with no ``pass_if`` is not a check (a note says so). With
quality criteria the run passes when they are met and no score is an error: the criteria say
how many "no" answers are acceptable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from assay.judges.feedback import is_measurement
from assay.run.policies.databricks import criteria as qc
from assay.run.policies.databricks.catalog import (
    GROUND_TRUTH,
    METRIC,
    RATED,
    RETRIEVAL,
    Assessment,
    Catalog,
    assessments,
    chunk_error_text,
    chunks,
    message,
    native,
    number,
    precision,
    rating,
    span_precisions,
    spans,
)
from assay.run.policies.databricks.naming import (
    OVERALL,
    databricks_key,
    overall_assessment,
    request_id,
)
from assay.types.config import RunConfig
from assay.types.records import (
    AggregateRow,
    AssessmentSummary,
    CaseRecord,
    EvaluatorSpec,
    RunSummary,
)
from assay.types.score import Score

MAX_LINES = 50
"""Failures listed one by one in a summary (all are counted)."""


def p90(values: list[float]) -> float:
    """The 90th percentile with linear interpolation between ranks (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * 0.9
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


AGGREGATE: dict[str, Callable[[list[float]], float]] = {
    "min": min, "max": max, "mean": statistics.fmean, "median": statistics.median,
    "variance": statistics.pvariance, "p90": p90}


@dataclass
class _Tally:
    """What one assessment accumulates over a run."""

    assessment: Assessment
    values: list[float] = field(default_factory=list)
    precisions: list[float] = field(default_factory=list)
    yes: int = 0
    rated: int = 0
    errors: int = 0
    skipped: int = 0
    scored: int = 0
    aggregations: list[str] = field(default_factory=list)


class AssessmentFold:
    """Folds case records into an :class:`AssessmentSummary` (see the module docstring)."""

    def __init__(self, config: RunConfig, specs: Iterable[EvaluatorSpec]) -> None:
        self.naming = config.naming
        self.chunk_errors = config.chunk_errors
        self.per_span = config.retrieval_per == "span"
        self.criteria_text = config.quality_criteria
        self.conditions = qc.parse(config.quality_criteria) if config.quality_criteria \
            else []
        self.catalog = Catalog(specs)
        self.tallies: dict[str, _Tally] = {}
        self.latencies: list[float] = []
        self.overall_yes = 0
        self.overall_rated = 0
        self.failures: list[str] = []
        self.error_lines: list[str] = []
        self.failed = 0
        self.errors_failed = 0
        self.notes: dict[str, str] = {}

    def add(self, record: CaseRecord) -> None:
        found = assessments(record, self.catalog)
        for a in found:
            tally = self.tallies.get(a.name)
            if tally is None:
                tally = self.tallies[a.name] = _Tally(a, aggregations=self._aggregations(a))
            self._count(tally, a, record)
        if record.execution.latency_ms is not None:
            self.latencies.append(record.execution.latency_ms / 1000)
        overall, _ = overall_assessment(found)
        if overall is not None:
            self.overall_rated += 1
            self.overall_yes += overall == "yes"

    def _aggregations(self, a: Assessment) -> list[str]:
        wanted = list(a.info.aggregations)
        for condition in self.conditions:
            if condition.scorer in (a.name, a.mlflow_name) and condition.aggregation and \
                    condition.aggregation not in wanted:
                wanted.append(condition.aggregation)
        return wanted

    def _count(self, tally: _Tally, a: Assessment, record: CaseRecord) -> None:
        score = a.score
        shown = a.mlflow_name if self.naming == "mlflow" else a.name
        where = f"[{request_id(record)}] {shown}"
        if a.kind == RETRIEVAL:
            entries = chunks(score)
            for entry in entries:
                if entry.get("rating") is not None:
                    tally.values.append(1.0 if entry["rating"] == "yes" else 0.0)
                if entry.get("error"):
                    tally.errors += 1
                    self._fail(f"{where} chunk {entry.get('index')}: "
                               f"{chunk_error_text(entry)}", error=True)
            found = precision(score, self.chunk_errors)
            if found is not None:
                if self.per_span:
                    tally.precisions.extend(span_precisions(score, self.chunk_errors))
                else:
                    tally.precisions.append(found)
                tally.scored += 1
            elif not entries and score.error is not None:
                tally.errors += 1
                self._fail(f"{where}: {message(score)}", error=True)
            elif not any(e.get("error") for e in entries):
                tally.skipped += 1  # not applicable, or every chunk empty
            return
        if self.per_span and spans(score):
            self._count_spans(tally, a, spans(score), where)
            return
        if score.error is not None:
            tally.errors += 1
            self._fail(f"{where}: {message(score)}", error=True)
            return
        if score.skipped is not None and not is_measurement(score):
            tally.skipped += 1
            return
        value = number(score)
        if value is None:
            tally.skipped += 1  # a category: checked below, never averaged
        else:
            tally.scored += 1
            tally.values.append(value)
        word = rating(score)
        if a.kind in RATED and word is not None:
            tally.rated += 1
            tally.yes += word == "yes"
        self._check(a, score, where)

    def _count_spans(self, tally: _Tally, a: Assessment, entries: list[dict[str, Any]],
                     where: str) -> None:
        """A judgement made once per retriever span, counted per span (MLflow 3's
        aggregates: one feedback per span, every one in the mean and the pass rule)."""
        for entry in entries:
            at = f"{where} span {entry.get('span_id')}"
            error = entry.get("error")
            word = entry.get("rating")
            if error:
                tally.errors += 1
                self._fail(f"{at}: {error.get('code')}: {error.get('message')}", error=True)
            elif word not in ("yes", "no"):
                tally.skipped += 1
            else:
                tally.scored += 1
                tally.values.append(1.0 if word == "yes" else 0.0)
                if a.kind in RATED:
                    tally.rated += 1
                    tally.yes += word == "yes"
                if word == "no":
                    self._fail(f"{at}: {entry.get('rationale') or 'no'}")

    def _check(self, a: Assessment, score: Score, where: str) -> None:
        details = score.details or {}
        if "pass_if" in details:
            if not details["pass_if"]:
                self._fail(f"{where}: {score.rationale or repr(native(score))} "
                           "(does not meet pass_if)")
            return
        if score.scale == "label" and score.passed is not None:  # a judge's category
            if not score.passed:
                self._fail(f"{where}: {score.label}: {score.rationale or 'fails'}")
            return
        word = rating(score)
        if word is not None and score.scale in ("yes/no", "bool"):
            if word == "no":
                why = score.rationale if score.rationale else repr(native(score))
                self._fail(f"{where}: {why}")
            return
        if a.kind == METRIC and a.name not in self.notes:
            shown = native(score)
            kind = "category" if isinstance(shown, str) else "number"
            self.notes[a.name] = (f"{a.mlflow_name}: a {kind} value ({shown!r}) is not a "
                                  "check; passing needs a yes/no or bool value, or a pass_if")

    def _fail(self, line: str, error: bool = False) -> None:
        self.failed += 1
        if len(self.failures) < MAX_LINES:
            self.failures.append(line)
        if error:
            self.errors_failed += 1
            if len(self.error_lines) < MAX_LINES:
                self.error_lines.append(line)

    # -- results ------------------------------------------------------------------------

    def rows(self) -> tuple[list[AggregateRow], dict[str, float | int | None]]:
        """The aggregate rows in the run's naming, and every value the quality criteria may
        name (MLflow-style ``<name>/<aggregation>`` under both names, and the naming's keys)."""
        mlflow_rows = self._mlflow_rows()
        lookup: dict[str, float | int | None] = {}
        for row, tally in mlflow_rows:
            lookup[row.key] = row.value
            aggregation = row.key.rsplit("/", 1)[-1]
            head = row.key[:-len(aggregation) - 1]
            if head.endswith("/precision"):
                lookup.setdefault(f"{tally.assessment.name}/precision/{aggregation}",
                                  row.value)
            else:
                lookup.setdefault(f"{tally.assessment.name}/{aggregation}", row.value)
        if self.naming == "databricks":
            rows = self._databricks_rows()
        else:
            rows = [row for row, _ in mlflow_rows]
        for row in rows:
            lookup[row.key] = row.value
        return rows, lookup

    def _mlflow_rows(self) -> list[tuple[AggregateRow, _Tally]]:
        found = []
        for tally in self.tallies.values():
            a = tally.assessment
            series = [(a.mlflow_name, tally.values)]
            if a.kind == RETRIEVAL:
                series.append((f"{a.mlflow_name}/precision", tally.precisions))
            for name, values in series:
                for aggregation in tally.aggregations:
                    value = AGGREGATE[aggregation](values) if values else None
                    found.append((AggregateRow(
                        key=f"{name}/{aggregation}", value=value, assessment=a.mlflow_name,
                        scored=len(values), errors=tally.errors, skipped=tally.skipped),
                        tally))
        return found

    def _databricks_rows(self) -> list[AggregateRow]:
        rows: list[AggregateRow] = []
        for tally in self.tallies.values():
            a = tally.assessment
            key = databricks_key(a)
            counts: dict[str, Any] = {"assessment": a.name, "errors": tally.errors,
                                      "skipped": tally.skipped}
            if a.kind == RETRIEVAL:
                rows.append(AggregateRow(key=f"{key}/precision/average",
                                         value=_mean(tally.precisions),
                                         scored=len(tally.precisions), **counts))
            elif a.kind in RATED:
                value = tally.yes / tally.rated if tally.rated else None
                rows.append(AggregateRow(key=f"{key}/rating/percentage", value=value,
                                         scored=tally.rated, **counts))
                if a.info.type == "safety":
                    rows.append(AggregateRow(key=f"{key}/rating/average", value=value,
                                             scored=tally.rated, **counts))
            else:
                suffix = "/average" if a.kind == GROUND_TRUTH else "/value/average"
                rows.append(AggregateRow(key=f"{key}{suffix}", value=_mean(tally.values),
                                         scored=len(tally.values), **counts))
            rows.append(AggregateRow(key=f"judge/{a.name}/error_count", value=tally.errors,
                                     scored=tally.scored, **counts))
        if self.latencies:
            rows.append(AggregateRow(key="agent/latency_seconds/average",
                                     value=_mean(self.latencies), assessment="agent",
                                     scored=len(self.latencies)))
        if self.overall_rated or any(t.assessment.kind in RATED for t in self.tallies.values()):
            rows.append(AggregateRow(
                key=f"{OVERALL}/rating/percentage",
                value=self.overall_yes / self.overall_rated if self.overall_rated else None,
                assessment="overall_assessment", scored=self.overall_rated))
        return rows

    def summary(self) -> AssessmentSummary:
        rows, lookup = self.rows()
        unmet = qc.unmet(self.conditions, lookup) if self.conditions else []
        return AssessmentSummary(
            naming=self.naming, metrics=rows, assertion_failures=list(self.failures),
            error_failures=list(self.error_lines),
            assertions_failed=self.failed, errors_failed=self.errors_failed,
            criteria=self.criteria_text, criteria_failures=unmet,
            notes=list(self.notes.values()),
            gate="criteria" if self.conditions else "assertions")

    def finish(self, summary: RunSummary) -> None:
        """Store the agent-judge summary in ``summary`` and fold its verdict into the run's
        gates: failed assertions (or, with criteria, unmet criteria and errors) fail it."""
        found = self.summary()
        summary.assessments = found
        failures = list(summary.gate_failures)
        if found.gate == "criteria":
            if found.criteria_failures:
                failures.append("quality criteria not met: " +
                                "; ".join(found.criteria_failures))
            if found.errors_failed:
                failures.append(f"{found.errors_failed} score(s) are errors")
        elif found.assertions_failed:
            failures.append(f"{found.assertions_failed} assertion(s) failed")
        summary.gate_failures = failures
        summary.passed = not failures


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def reason(found: AssessmentSummary, other_failures: list[str]) -> str:
    """Why a run did not pass, MLflow's way: ``"N assertions failed:"`` and one line each,
    then the quality criteria not met and any other gate; ``"passed"`` when it passed."""
    parts: list[str] = []
    if found.gate == "assertions" and found.assertions_failed:
        lines = "\n".join(f"  {line}" for line in found.assertion_failures)
        more = found.assertions_failed - len(found.assertion_failures)
        tail = f"\n  ... and {more} more" if more > 0 else ""
        parts.append(f"{found.assertions_failed} assertions failed:\n{lines}{tail}")
    if found.gate == "criteria":
        if found.criteria_failures:
            parts.append("quality criteria not met:\n" + "\n".join(
                f"  {line}" for line in found.criteria_failures))
        if found.errors_failed:
            parts.append(f"{found.errors_failed} score(s) are errors:\n" + "\n".join(
                f"  {line}" for line in found.error_failures))
    own = {f"{found.assertions_failed} assertion(s) failed", f"{found.errors_failed} score(s) "
           "are errors"}
    rest = [f for f in other_failures if f not in own and
            not f.startswith("quality criteria not met: ")]
    if rest:
        parts.append("gates failed: " + "; ".join(rest))
    if found.notes and parts:
        parts.append("not checked:\n" + "\n".join(f"  {n}" for n in found.notes))
    return "\n".join(parts) if parts else "passed"
