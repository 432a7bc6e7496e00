"""Typed run records: what a run stores and what every reporter renders from.

A run is a :class:`RunRecord` (how it was made, its status and its :class:`RunSummary`) and one
:class:`CaseRecord` per (case, repeat): the case as it was given, the agent's execution, every
evaluator's score, the weighted case score and the :class:`Verdict`. The store reads and writes
these records; the terminal, JSONL, JUnit and UiPath reporters (and the HTML report and server)
all render from them, so no two of them can disagree about a result.
"""

from __future__ import annotations

import statistics
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.model import Case, Execution, Score, Usage


class Verdict(StrEnum):
    """A case's verdict. ``error``: no evaluator produced a value; ``skipped``: none applied."""

    PASS = "pass"
    BORDERLINE = "borderline"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvaluatorSpec(_Record):
    """An evaluator as a run records it: enough to rebuild, re-score and audit it."""

    name: str
    type: str
    weight: float = 1.0
    params: dict[str, Any] = Field(default_factory=dict)


class SourceLocation(_Record):
    """Where a case was defined, when its format knows."""

    file: str
    line: int | None = None


class CaseRecord(_Record):
    """One (case, repeat) of a run: the case, what the agent did, and how it was judged."""

    run_id: str = ""
    case_id: str
    repeat: int = 0
    case: Case
    target: str | None = None
    execution: Execution
    scores: list[Score] = Field(default_factory=list)
    score: float | None = None
    verdict: Verdict
    evaluators: list[EvaluatorSpec] | None = Field(
        default=None, description="this case's own evaluators, when they differ from the run's")
    source: SourceLocation | None = None
    finished_at: float | None = None

    @property
    def input(self) -> Any:
        return self.execution.input if self.execution.input not in ("", None) else \
            self.case.input

    @property
    def expected_output(self) -> Any:
        return self.case.expected_output

    @property
    def output(self) -> Any:
        return self.execution.output

    @property
    def error(self) -> str | None:
        """The target's error, when the agent could not produce an execution."""
        return self.execution.error

    @property
    def usage(self) -> Usage:
        """Judge usage summed over the case's scores."""
        total = Usage()
        for s in self.scores:
            total = total + s.usage
        return total

    def score_named(self, name: str) -> Score | None:
        return next((s for s in self.scores if s.name == name), None)


class EvaluatorSummary(_Record):
    """One evaluator over a run: how many values, errors and skips, and the mean value."""

    name: str
    count: int = 0
    scored: int = 0
    errors: int = 0
    skipped: int = 0
    passed: int = 0
    failed: int = 0
    mean: float | None = None


class LatencySummary(_Record):
    """Agent latency over a run's executions, in milliseconds (None when none was measured)."""

    count: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    mean_ms: float | None = None
    max_ms: float | None = None


class AggregateRow(_Record):
    """One named aggregate of a run reported in a naming mode (``naming``): its key and
    value, and the counts behind it (values, errors and skips are never mixed)."""

    key: str
    value: float | int | None = None
    assessment: str = ""
    scored: int = 0
    errors: int = 0
    skipped: int = 0


class AssessmentSummary(_Record):
    """A run's agent-judge results in Databricks' or MLflow's names (see
    :mod:`assay.agent_eval`): the aggregates, the pass rule's failures (a "no", a false, a
    failed ``pass_if`` or an error; a skip is not one) and the quality criteria not met."""

    naming: str | None = None
    metrics: list[AggregateRow] = Field(default_factory=list)
    assertion_failures: list[str] = Field(
        default_factory=list, description="the first failures, one line each")
    error_failures: list[str] = Field(
        default_factory=list, description="the first errors among them, one line each")
    assertions_failed: int = 0
    errors_failed: int = 0
    criteria: str | None = None
    criteria_failures: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="values that are not "
                             "checks (numbers with no pass_if), and other things to know")
    gate: str = Field(default="assertions", description="what decided the run: assertions "
                      "(every value passes, no error) or criteria (the quality criteria met "
                      "and no error)")


class RunSummary(BaseModel):
    """A run's aggregates. Errors and skips are counted apart and never averaged in."""

    model_config = ConfigDict(extra="ignore")  # summaries stored by older versions still read

    cases: int = 0
    scored: int = 0
    mean_score: float | None = None
    verdicts: dict[str, int] = Field(default_factory=dict)
    evaluator_errors: int = 0
    evaluator_skips: int = 0
    target_errors: int = 0
    usage: Usage = Field(default_factory=Usage)
    evaluators: dict[str, EvaluatorSummary] = Field(default_factory=dict)
    latency: LatencySummary = Field(default_factory=LatencySummary)
    dataset_metrics: dict[str, Score] = Field(default_factory=dict)
    gate_failures: list[str] = Field(default_factory=list)
    passed: bool = False
    notes: list[str] = Field(
        default_factory=list, description="what a reader must know to trust the figures (the "
        "judge is the demo model, the cache failed), shown with every summary")
    assessments: AssessmentSummary | None = Field(
        default=None, description="the agent-judge view of the run, when a naming was chosen")

    def count(self, verdict: Verdict) -> int:
        return self.verdicts.get(verdict.value, 0)

    @property
    def pass_rate(self) -> float | None:
        """Passed cases over all cases (errors count as not passed); None for no cases."""
        return self.count(Verdict.PASS) / self.cases if self.cases else None


class SummaryBuilder:
    """Folds case records into a :class:`RunSummary` one at a time, keeping O(1) state per
    evaluator (plus one latency per case), so a run of a million cases summarises in place."""

    def __init__(self) -> None:
        self.cases = 0
        self.scored = 0
        self.score_total = 0.0
        self.verdicts: dict[str, int] = {}
        self.evaluator_errors = 0
        self.evaluator_skips = 0
        self.target_errors = 0
        self.usage = Usage()
        self.evaluators: dict[str, list[float]] = {}
        self.latencies: list[float] = []

    def add(self, record: CaseRecord) -> None:
        self.cases += 1
        if record.score is not None:
            self.scored += 1
            self.score_total += record.score
        verdict = record.verdict.value
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
        if record.execution.error is not None:
            self.target_errors += 1
        if record.execution.latency_ms is not None:
            self.latencies.append(record.execution.latency_ms)
        usage = self.usage
        for s in record.scores:
            u = s.usage
            usage.calls += u.calls
            usage.cached_calls += u.cached_calls
            usage.retries += u.retries
            usage.prompt_tokens += u.prompt_tokens
            usage.completion_tokens += u.completion_tokens
            usage.cost = None if usage.cost is None or u.cost is None else usage.cost + u.cost
            # [count, scored, errors, skipped, passed, failed, total]
            acc = self.evaluators.get(s.name)
            if acc is None:
                acc = self.evaluators[s.name] = [0, 0, 0, 0, 0, 0, 0.0]
            acc[0] += 1
            if s.value is not None:
                acc[1] += 1
                acc[6] += s.value
                if s.passed is True:
                    acc[4] += 1
                elif s.passed is False:
                    acc[5] += 1
            elif s.error is not None:
                acc[2] += 1
                self.evaluator_errors += 1
            else:
                acc[3] += 1
                self.evaluator_skips += 1

    def build(self) -> RunSummary:
        evaluators = {
            name: EvaluatorSummary(name=name, count=int(a[0]), scored=int(a[1]),
                                   errors=int(a[2]), skipped=int(a[3]), passed=int(a[4]),
                                   failed=int(a[5]), mean=a[6] / a[1] if a[1] else None)
            for name, a in self.evaluators.items()}
        return RunSummary(
            cases=self.cases, scored=self.scored,
            mean_score=self.score_total / self.scored if self.scored else None,
            verdicts=dict(self.verdicts), evaluator_errors=self.evaluator_errors,
            evaluator_skips=self.evaluator_skips, target_errors=self.target_errors,
            usage=self.usage.model_copy(), evaluators=evaluators,
            latency=latency_summary(self.latencies))


def latency_summary(values: list[float]) -> LatencySummary:
    """p50 (median), p95 (the 19th of 20 quantiles, or the max under 20 values), mean, max."""
    if not values:
        return LatencySummary()
    ordered = sorted(values)
    p95 = statistics.quantiles(ordered, n=20)[18] if len(ordered) >= 20 else ordered[-1]
    return LatencySummary(count=len(ordered), p50_ms=statistics.median(ordered), p95_ms=p95,
                          mean_ms=sum(ordered) / len(ordered), max_ms=ordered[-1])


class RunSnapshot(BaseModel):
    """How a run was made, recorded when it starts (targets redacted: no secrets).

    Older runs stored fewer fields; unknown ones are kept, missing ones default.
    """

    model_config = ConfigDict(extra="allow")

    suite_path: str | None = None
    suite_name: str = ""
    suite_hash: str = ""
    target: str | None = None
    target_override: str | None = None
    targets_file: str | None = None
    targets: dict[str, Any] = Field(default_factory=dict)
    judge_models: list[str] = Field(default_factory=list)
    evaluators: list[EvaluatorSpec] = Field(default_factory=list)
    run: dict[str, Any] = Field(default_factory=dict)
    assay_version: str = ""


class RunRecord(_Record):
    """A stored run: its id, suite, status, how it was made and (once finished) its summary."""

    id: str
    suite: str
    status: RunStatus
    created_at: float
    finished_at: float | None = None
    config: RunSnapshot = Field(default_factory=RunSnapshot)
    summary: RunSummary | None = None
