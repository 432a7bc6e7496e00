"""Typed run records: what a run stores and what every reporter renders from.

A run is a :class:`RunRecord` (how it was made, its status and its :class:`RunSummary`) and one
:class:`CaseRecord` per (case, repeat): the case as it was given, the agent's execution, every
evaluator's score, the weighted case score and the :class:`Verdict`. The store reads and writes
these records; the terminal, JSONL, JUnit and UiPath reporters (and the HTML report and server)
all render from them, so no two of them can disagree about a result.
"""

from __future__ import annotations

import math
import statistics
import time
from array import array
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from assay.types.case import Case
from assay.types.config import RecordedRunConfig
from assay.types.engine_config import RetryPolicy
from assay.types.execution import Execution
from assay.types.score import Score, ScoreError
from assay.types.usage import Usage
from assay.types.verdict import Verdict


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    WAITING = "waiting"
    """Waiting for batch: its judge calls are in the providers' batch APIs
    (``assay run --batch``), and ``assay run --resume`` collects them."""


class _Record(BaseModel):
    # Built on first use, not at import: a run uses a few of these (see judges.base).
    model_config = ConfigDict(extra="forbid", defer_build=True)


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


class CauseAnalysis(_Record):
    """A judge model's reading of why a case failed (or regressed against a baseline): the
    turn and the agent's behaviour that caused it, and a fix to try. Advice for a person: it
    never changes a verdict or a score. ``turn`` indexes the transcript the judges read
    (``Turn N``); ``error`` says why there is no analysis when the call failed."""

    turn: int | None = Field(default=None, description="the transcript turn that caused it")
    turn_role: str | None = None
    turn_text: str | None = Field(default=None, description="the start of that turn's text")
    behaviour: str = Field(default="", description="what the agent did there")
    cause: str = Field(default="", description="why that failed the case")
    suggested_fix: str = ""
    confidence: Literal["high", "medium", "low"] | None = None
    compared_with: str | None = Field(
        default=None, description="the baseline run, for a regression's analysis")
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float | None = None
    error: ScoreError | None = None


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
    overall_score: float | None = Field(
        default=None, description="the case's score on its scoring policy's own 0-100 scale "
        "(the multi-metric judge's overall_score); None when the policy has none")
    cause_analysis: CauseAnalysis | None = Field(
        default=None, description="why the case failed, when the run asked (--cause-analysis)")

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
        return Usage.total(s.usage for s in self.scores)

    def score_named(self, name: str) -> Score | None:
        return next((s for s in self.scores if s.name == name), None)

    @property
    def failed_or_errored(self) -> bool:
        """Whether the case counts against the run: its verdict is fail or error, or one of
        its evaluators could not score it (an error is never a pass, even beside other
        evaluators that passed it, and the default gate ``max_errors`` counts it). The one
        rule by which ``assay show --failed``, ``--rerun-failed``, the GitHub annotations
        and JUnit's failures and errors pick a run's failures."""
        return (self.verdict in (Verdict.FAIL, Verdict.ERROR)
                or any(s.error is not None for s in self.scores))


class EvaluatorSummary(_Record):
    """One evaluator over a run (or any scores, :func:`aggregate`): how many values, errors,
    skips and measurements, the mean value (0-1), the measurements' own figures (on their
    own scale, never mixed in), and the judge usage behind them."""

    name: str = ""
    count: int = 0
    scored: int = 0
    errors: int = 0
    skipped: int = Field(default=0, description="not applicable (measurements not counted)")
    passed: int = 0
    failed: int = 0
    mean: float | None = None
    measured: int = Field(default=0, description="measurements (values off the 0-1 scale "
                          "from a judge or scorer that measures), labels included")
    measured_mean: float | None = Field(default=None,
                                        description="mean of the numeric measurements")
    measured_min: float | None = None
    measured_max: float | None = None
    usage: Usage = Field(default_factory=Usage)


Aggregate = EvaluatorSummary
"""What :func:`aggregate` returns: the name it had."""


class EvaluatorTally:
    """Folds one evaluator's scores: the one aggregation a run's summary and
    :func:`aggregate` share. Errors, skips and measurements are counted apart, never
    averaged in with the values."""

    __slots__ = ("count", "errors", "failed", "measured", "measured_count", "measured_max",
                 "measured_min", "measured_total", "passed", "scored", "skipped", "total",
                 "usage")

    def __init__(self) -> None:
        self.count = self.scored = self.errors = self.skipped = self.passed = self.failed = 0
        self.measured = self.measured_count = 0
        self.total = self.measured_total = 0.0
        self.measured_min, self.measured_max = math.inf, -math.inf
        self.usage = Usage()

    def add(self, score: Score) -> None:
        self.count += 1
        if score.value is not None:
            self.scored += 1
            self.total += score.value
            if score.passed is True:
                self.passed += 1
            elif score.passed is False:
                self.failed += 1
        elif score.error is not None:
            self.errors += 1
        elif score.measurement:
            self._measure(score.raw)
        else:
            self.skipped += 1
        self.usage.add(score.usage)

    def _measure(self, raw: Any) -> None:
        """Count one measurement; a number (a bool as 1 or 0) also enters the mean, min and
        max, a label only the count."""
        self.measured += 1
        if isinstance(raw, bool):
            raw = int(raw)
        if isinstance(raw, int | float) and math.isfinite(raw):
            self.measured_count += 1
            self.measured_total += raw
            self.measured_min = min(self.measured_min, raw)
            self.measured_max = max(self.measured_max, raw)

    def summary(self, name: str) -> EvaluatorSummary:
        numeric = self.measured_count
        return EvaluatorSummary(
            name=name, count=self.count, scored=self.scored, errors=self.errors,
            skipped=self.skipped, passed=self.passed, failed=self.failed,
            mean=self.total / self.scored if self.scored else None, measured=self.measured,
            measured_mean=self.measured_total / numeric if numeric else None,
            measured_min=self.measured_min if numeric else None,
            measured_max=self.measured_max if numeric else None,
            usage=self.usage.model_copy())


def aggregate(scores: Iterable[Score]) -> EvaluatorSummary:
    """Scores summarised exactly as a run summarises an evaluator's: the mean over the
    scores that have a value; errors, skips and measurements counted, never averaged in."""
    tally = EvaluatorTally()
    name = ""
    for score in scores:
        tally.add(score)
        name = name or score.name
    return tally.summary(name)


def _turn_latency(statistic: str, note: str = "") -> Any:
    """A run's latency figure (None when no execution has a latency), described as every
    surface labels it, apart from :class:`LatencySummary`'s whole-execution time."""
    return Field(default=None, description=f"agent turn latency: {statistic} of each "
                 f"execution's median turn latency (ms)" + (f"; {note}" if note else ""))


class LatencySummary(_Record):
    """Agent latency over a run's executions, each execution's whole time (a conversation's
    from its first turn to its last), in milliseconds (None when none was measured). What a
    run shows as its latency is the ``latency_*_ms`` figures of :class:`RunSummary`, over each
    execution's median turn; the two agree for one-shot cases but for whole milliseconds."""

    count: int = Field(default=0, description="executions with a latency")
    p50_ms: float | None = Field(default=None, description="the median execution's whole time")
    p95_ms: float | None = Field(default=None, description="None under 20 executions")
    mean_ms: float | None = None
    max_ms: float | None = None


class CaseSummary(_Record):
    """One case over its repeats: how often it passed, and whether it is flaky."""

    executions: int = 0
    passed: int = 0
    errors: int = 0
    failed: int = Field(default=0, description="executions with the verdict fail")
    pass_fraction: float = 0.0
    pass_all: bool = False
    flaky: bool = Field(default=False, description="passed in some repeats, not in others")
    mean_overall_score: float | None = None
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
    :mod:`assay.run.policies.databricks`): the aggregates, the pass rule's failures (a "no", a false, a
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


class FailedCases(NamedTuple):
    """The cases of a run that failed (:meth:`RunSummary.failed_cases`)."""

    cases: int
    executions: int
    """their executions with the verdict fail"""
    of: int
    """all their executions (their repeats)"""


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
    latency: LatencySummary = Field(
        default_factory=LatencySummary, description="execution time, not the run's latency: "
        "statistics of each execution's whole time (a conversation's turns together); the "
        "run's latency, which every surface shows and a comparison weighs, is "
        "latency_p50_ms, latency_p95_ms, latency_avg_ms and latency_max_ms (agent turn "
        "latency). The two agree for one-shot cases")
    dataset_metrics: dict[str, Score] = Field(default_factory=dict)
    gate_failures: list[str] = Field(default_factory=list)
    passed: bool = False
    measurements: int = Field(default=0, description="measurement scores: counted apart from "
                              "values, errors and skips, and in no verdict")
    notes: list[str] = Field(
        default_factory=list, description="what a reader must know to trust the figures (the "
        "judge is the demo model, the cache failed), shown with every summary")
    scoring: str = "default"
    # Executions (case x repeat) and their outcome. Every execution is exactly one of
    # passed, failed (a fail or borderline verdict), errored or skipped.
    total_executions: int = 0
    unique_test_case_count: int = 0
    passed_count: int = 0
    failed_count: int = 0
    error_count: int = 0
    skipped_count: int = 0
    # The two run dimensions (percent, inclusive) and the error budget; None: not gated.
    weighted_metrics_score_pct: float | None = Field(
        default=None, description="mean case score (0-100) over the executions that have one")
    metrics_pass_threshold: float | None = None
    metrics_passed: bool | None = None
    cases_pass_rate_pct: float | None = Field(
        default=None, description="passed over all executions x 100 (errors not passed)")
    cases_pass_threshold: float | None = None
    cases_passed: bool | None = None
    max_error_rate: float | None = None
    # Agent turn latency over the run: the statistics of each execution's median turn
    # latency (``latency`` above is each execution's whole time).
    latency_p50_ms: float | None = _turn_latency("the median", "the run's latency on every "
                                                 "surface")
    latency_p95_ms: float | None = _turn_latency("the p95", "None under 20 executions")
    latency_avg_ms: float | None = _turn_latency("the mean", "what a comparison's latency "
                                                 "check weighs")
    latency_max_ms: float | None = _turn_latency("the largest")
    # Tokens and cost by who spent them; the judge's are ``usage``.
    agent_usage: Usage = Field(default_factory=Usage)
    simulator_usage: Usage = Field(default_factory=Usage)
    estimated_cost_usd: float | None = Field(
        default=None, description="agent, simulated user and judge costs that are known (a "
        "part that made no call costs a known $0); None only when no part that spent has a "
        "known cost and some part's is unknown (see known_cost)")
    cost_unknown: list[str] = Field(
        default_factory=list, description="the parts (agent, simulated user, judge) that "
        "spent calls whose cost is unknown, in whole or in part: estimated_cost_usd leaves "
        "them out, and every surface names them after it ('$0.0123 + unknown (agent)')")
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    cause_analyses: int = Field(default=0, description="failed cases analysed for their "
                                "cause (--cause-analysis); their calls are in usage too")
    cause_analysis_usage: Usage = Field(default_factory=Usage)
    case_summary: dict[str, CaseSummary] = Field(default_factory=dict)
    assessments: AssessmentSummary | None = Field(
        default=None, description="the agent-judge view of the run, when a naming was chosen")

    @model_validator(mode="after")
    def _named_unknown_costs(self) -> RunSummary:
        """A summary stored before ``cost_unknown`` existed names the parts its usages say
        have an unknown cost (an agent that priced some of its executions only cannot be
        told from them): its total must not read as complete either."""
        if "cost_unknown" not in self.model_fields_set:
            self.cost_unknown = unknown_cost_parts(self.agent_usage, self.simulator_usage,
                                                   self.usage)
        if self.estimated_cost_usd is None and not self.cost_unknown and \
                "estimated_cost_usd" in self.model_fields_set:
            # stored before known_cost's rule: no part spent at an unknown cost and none at a
            # known one, so the run cost a known $0 (a bare RunSummary() stands for a run
            # with no summary, whose cost is not known, and keeps None)
            self.estimated_cost_usd = 0.0
        return self

    def count(self, verdict: Verdict) -> int:
        return self.verdicts.get(verdict.value, 0)

    def failed_cases(self) -> FailedCases:
        """The cases that failed, counted once however many of their repeats failed: a case
        fails when any of its repeats has the verdict ``fail``, as pass^k passes a case only
        when every repeat passed. Without repeats each execution is a case."""
        if not self.case_summary:
            failed = self.count(Verdict.FAIL)
            return FailedCases(cases=failed, executions=failed, of=failed)
        failing = [c for c in self.case_summary.values() if c.failed]
        return FailedCases(cases=len(failing), executions=sum(c.failed for c in failing),
                           of=sum(c.executions for c in failing))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate(self) -> float | None:
        """Passed cases over all cases (errors count as not passed); None for no cases."""
        return self.count(Verdict.PASS) / self.cases if self.cases else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate_incl_errors(self) -> float | None:
        """The pass rate with errors as not passed (the cases dimension's rule)."""
        return self.pass_rate

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate_excl_errors(self) -> float | None:
        """Passed over the executions that produced a result (errors and skips left out)."""
        produced = self.cases - self.count(Verdict.ERROR) - self.count(Verdict.SKIPPED)
        return self.count(Verdict.PASS) / produced if produced > 0 else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def error_rate(self) -> float | None:
        """Errored executions over all executions."""
        return self.count(Verdict.ERROR) / self.cases if self.cases else None

    @property
    def avg_overall_score(self) -> float | None:
        return self.weighted_metrics_score_pct


class SummaryBuilder:
    """Folds case records into a :class:`RunSummary` one at a time, keeping O(1) state per
    evaluator (plus one latency per case), so a run of a million cases summarises in place."""

    def __init__(self, track_cases: bool = False) -> None:
        """``track_cases``: keep a summary per case id (pass fraction, flakiness across
        repeats); only runs with repeats turn it on. Off, a summary stays a few KB however
        many cases the run has: every list of runs reads it whole."""
        self.cases = 0
        self.scored = 0
        self.score_total = 0.0
        self.verdicts: dict[str, int] = {}
        self.evaluator_errors = 0
        self.evaluator_skips = 0
        self.measurements = 0
        self.target_errors = 0
        self.usage = Usage()
        self.evaluators: dict[str, EvaluatorTally] = {}
        # 8 bytes a case (a list of floats would take 32): a million cases summarise
        # in a few MB
        self.latencies = array("d")
        self.case_p50s = array("d")
        self.overall_total = 0.0
        self.overall_count = 0
        self.agent_usage = Usage()
        self.agent_costs = 0  # executions whose agent reported its cost
        self.simulator_usage = Usage()
        self.stop_reasons: dict[str, int] = {}
        self.analyses = 0
        self.analysis_usage = Usage()
        # case id -> [executions, passed, errors, overall total, overall count, failed]; kept
        # when cases repeat (one entry per case would grow with a million-case run)
        self.per_case: dict[str, list[float]] = {}
        self.track_cases = track_cases

    def add(self, record: CaseRecord) -> None:
        self.cases += 1
        if record.score is not None:
            self.scored += 1
            self.score_total += record.score
        verdict = record.verdict.value
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
        execution = record.execution
        if execution.error is not None:
            self.target_errors += 1
        if execution.latency_ms is not None:
            self.latencies.append(execution.latency_ms)
        p50 = case_latency(execution).p50_ms
        if p50 is not None:
            self.case_p50s.append(p50)
        overall = case_overall(record)
        if overall is not None:
            self.overall_total += overall
            self.overall_count += 1
        if execution.usage is not None:
            self.agent_usage = self.agent_usage + Usage(
                calls=1, prompt_tokens=execution.usage.prompt_tokens,
                completion_tokens=execution.usage.completion_tokens,
                cost=execution.usage.cost or 0.0)  # the costs agents reported, summed
            self.agent_costs += execution.usage.cost is not None
        if execution.conversation is not None:
            self.simulator_usage = self.simulator_usage + execution.conversation.simulator_usage
            reason = execution.conversation.stop_reason
            self.stop_reasons[reason] = self.stop_reasons.get(reason, 0) + 1
        if self.track_cases:
            acc_case = self.per_case.get(record.case_id)
            if acc_case is None:
                acc_case = self.per_case[record.case_id] = [0, 0, 0, 0.0, 0, 0]
            acc_case[0] += 1
            acc_case[1] += record.verdict is Verdict.PASS
            acc_case[2] += record.verdict is Verdict.ERROR
            acc_case[5] += record.verdict is Verdict.FAIL
            if overall is not None:
                acc_case[3] += overall
                acc_case[4] += 1
        if record.cause_analysis is not None:  # a judge call too: its cost is the run's
            self._analysed(record.cause_analysis)
        usage = self.usage  # summed in place: a model built per score showed in profiles
        for s in record.scores:
            usage.add(s.usage)
            tally = self.evaluators.get(s.name)
            if tally is None:
                tally = self.evaluators[s.name] = EvaluatorTally()
            tally.add(s)
            if s.value is None:
                if s.error is not None:
                    self.evaluator_errors += 1
                elif s.measurement:
                    self.measurements += 1
                else:
                    self.evaluator_skips += 1

    def _analysed(self, analysis: CauseAnalysis) -> None:
        """A failed case's cause analysis: counted, and its call added to the judge's usage."""
        self.analyses += 1
        self.analysis_usage = self.analysis_usage + analysis.usage
        self.usage = self.usage + analysis.usage

    def build(self) -> RunSummary:
        evaluators = {name: tally.summary(name) for name, tally in self.evaluators.items()}
        count = self.verdicts.get
        passed = count(Verdict.PASS.value, 0)
        errors = count(Verdict.ERROR.value, 0)
        skipped = count(Verdict.SKIPPED.value, 0)
        agent = self.agent_usage.model_copy()
        if agent.calls and not self.agent_costs:
            agent.cost = None  # no agent reported a cost: unknown, not free
        unknown = unknown_cost_parts(agent, self.simulator_usage, self.usage,
                                     agent_unpriced=agent.calls - self.agent_costs)
        return RunSummary(
            cases=self.cases, scored=self.scored,
            mean_score=self.score_total / self.scored if self.scored else None,
            verdicts=dict(self.verdicts), evaluator_errors=self.evaluator_errors,
            evaluator_skips=self.evaluator_skips, measurements=self.measurements,
            target_errors=self.target_errors,
            usage=self.usage.model_copy(), evaluators=evaluators,
            latency=latency_summary(list(self.latencies)),
            total_executions=self.cases,
            unique_test_case_count=len(self.per_case) if self.track_cases else self.cases,
            passed_count=passed, error_count=errors, skipped_count=skipped,
            failed_count=self.cases - passed - errors - skipped,
            weighted_metrics_score_pct=round(self.overall_total / self.overall_count, 10)
            if self.overall_count else None,
            cases_pass_rate_pct=passed / self.cases * 100 if self.cases else None,
            **run_latency(list(self.case_p50s)).model_dump(),
            agent_usage=agent, simulator_usage=self.simulator_usage,
            estimated_cost_usd=known_cost((self.usage, agent, self.simulator_usage), unknown),
            cost_unknown=unknown,
            stop_reasons=dict(self.stop_reasons), cause_analyses=self.analyses,
            cause_analysis_usage=self.analysis_usage,
            case_summary={case_id: CaseSummary(
                executions=int(a[0]), passed=int(a[1]), errors=int(a[2]), failed=int(a[5]),
                pass_fraction=a[1] / a[0], pass_all=a[1] == a[0], flaky=0 < a[1] < a[0],
                mean_overall_score=a[3] / a[4] if a[4] else None)
                for case_id, a in self.per_case.items()})


COST_PARTS = ("agent", "simulated user", "judge")
"""The parts of a run that spend, in the order a run's cost names them."""


def known_cost(parts: Sequence[Usage], unknown: Sequence[str]) -> float | None:
    """The known costs of a run's parts (agent, simulated user, judge), summed: the one rule
    of a run's total. A part that made no call spent nothing, a known $0, so a run of
    deterministic checks costs $0, not an unknown beside a judge cost of $0; calls answered
    from the cache cost nothing either (a fully cached re-run is free). None only when no
    part has a known cost and some part spent at an unknown one (``unknown``,
    :func:`unknown_cost_parts`): every surface then reads ``unknown (agent)``."""
    costs = [u.cost for u in parts if u.cost is not None and (u.calls or u.cached_calls or u.cost)]
    return None if unknown and not costs else math.fsum(costs)


def unknown_cost_parts(agent: Usage, simulator: Usage, judge: Usage,
                       agent_unpriced: int = 0) -> list[str]:
    """The parts of a run (:data:`COST_PARTS`) that made calls whose cost is unknown: a
    judge model with no known price, a simulated user's likewise, an agent that reported
    its tokens but not its cost (``agent_unpriced``: executions that did, when some others
    priced theirs). A run's estimated cost sums the known costs only, so without these names
    it would read as a complete total. A part that made no call spent nothing to price."""
    unpriced = {"agent": agent_unpriced > 0 or _unpriced(agent),
                "simulated user": _unpriced(simulator), "judge": _unpriced(judge)}
    return [part for part in COST_PARTS if unpriced[part]]


def _unpriced(usage: Usage) -> bool:
    return usage.cost is None and bool(usage.calls or usage.cached_calls)


def case_overall(record: CaseRecord) -> float | None:
    """A case's overall score on the 0-100 scale the run dimensions, the progress stream and
    Connexity use: its policy's own (the multi-metric judge's) when it has one, else the case
    score x 100; None for a case with no score."""
    if record.overall_score is not None:
        return record.overall_score
    return None if record.score is None else record.score * 100


class CaseLatency(_Record):
    """An execution's agent latency over its turns (one turn for a one-shot case)."""

    turns: int = 0
    p50_ms: int | None = Field(default=None, description="the median turn, whole ms")
    p95_ms: float | None = Field(default=None, description="the 19th of 20 quantiles; the "
                                 "max under 20 turns")
    max_ms: float | None = None


def turn_latencies(execution: Execution) -> list[float]:
    """The agent's latency per turn: a conversation's turns, else the one execution."""
    if execution.conversation is not None:
        return list(execution.conversation.turn_latencies_ms)
    return [execution.latency_ms] if execution.latency_ms is not None else []


def case_latency(execution: Execution) -> CaseLatency:
    """p50 (the median as whole ms), p95 (the max under 20 turns) and max of the turns."""
    values = sorted(turn_latencies(execution))
    if not values:
        return CaseLatency()
    p95 = statistics.quantiles(values, n=20)[18] if len(values) >= 20 else values[-1]
    return CaseLatency(turns=len(values), p50_ms=int(statistics.median(values)), p95_ms=p95,
                       max_ms=values[-1])


def conversation_columns(record: CaseRecord) -> dict[str, Any]:
    """How a multi-turn case went, as the columns of every row of a case (``assay show
    --json``, the output files, :meth:`assay.EvaluationResult.rows`): what stopped it, its
    agent turns, and the agent's latency over its turns (:func:`case_latency`, the figures
    the run's latency is made of); {} for a one-shot case."""
    conversation = record.execution.conversation
    if conversation is None:
        return {}
    latency = case_latency(record.execution)
    return {"stop_reason": conversation.stop_reason, "agent_turns": conversation.agent_turns,
            "agent_latency_p50_ms": latency.p50_ms, "agent_latency_p95_ms": latency.p95_ms,
            "agent_latency_max_ms": latency.max_ms}


class RunLatency(_Record):
    """A run's agent latency: statistics of its executions' median turn latencies."""

    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    latency_avg_ms: float | None = None
    latency_max_ms: float | None = None


def run_latency(case_p50s: list[float]) -> RunLatency:
    """A run's latency figures over its executions' p50s: median, p95 (None under 20
    values, unlike a case's, which falls back to its max), mean and max."""
    if not case_p50s:
        return RunLatency()
    ordered = sorted(case_p50s)
    return RunLatency(latency_p50_ms=float(statistics.median(ordered)),
                      latency_p95_ms=run_p95(ordered),
                      latency_avg_ms=statistics.fmean(ordered), latency_max_ms=ordered[-1])


def run_p95(ordered: list[float]) -> float | None:
    """A run's p95 over sorted values: the 19th of 20 quantiles, and none under 20 values,
    where a 95th percentile would only be the slowest one renamed. The one rule of every
    p95 a run reports (a case's turns fall back to their max instead: Connexity's rule)."""
    return statistics.quantiles(ordered, n=20)[18] if len(ordered) >= 20 else None


def latency_summary(values: list[float]) -> LatencySummary:
    """p50 (median), p95 (:func:`run_p95`: none under 20 values), mean, max."""
    if not values:
        return LatencySummary()
    ordered = sorted(values)
    return LatencySummary(count=len(ordered), p50_ms=statistics.median(ordered),
                          p95_ms=run_p95(ordered),
                          mean_ms=sum(ordered) / len(ordered), max_ms=ordered[-1])


class GitState(_Record):
    """The git working tree a run was made from: its commit, branch and whether it held
    uncommitted changes (``dirty``)."""

    commit: str
    branch: str | None = None
    dirty: bool = False


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
    run: RecordedRunConfig = Field(
        default_factory=RecordedRunConfig, description="the run's config as it was settled "
        "when the run started (its judge URL's password hidden)")
    assay_version: str = ""
    description: str = Field(default="", description="the suite's description")
    git: GitState | None = Field(default=None, description="the git working tree the run was "
                                 "made from (the suite's, else the current directory's)")
    agent_version: str | None = Field(default=None, description="the version of the agent "
                                      "under test, as the run or its suite gave it")

    def suite_version(self) -> str:
        """The fingerprint a comparison checks for "the suite changed": a rescore's own
        fingerprint covers the recorded outputs its cases carry, so one that kept its run's
        evaluators records its source suite's (``source_suite_hash``), and is then compared
        like with like with any run of that suite; one judged by other evaluators keeps its
        own, so that change still shows."""
        source = (self.model_extra or {}).get("source_suite_hash")
        return source if isinstance(source, str) and source else self.suite_hash

    @property
    def target_name(self) -> str | None:
        """The target the run ran, as every surface names it: its override, else the
        suite's, else the Python function it was given (by its name, ``python_target``: a
        function cannot be recorded, its name can)."""
        function = (self.model_extra or {}).get("python_target")
        return self.target_override or self.target or (
            function if isinstance(function, str) and function else None)

    def resumed(self, retry: RetryPolicy) -> RunSnapshot:
        """This snapshot with one more resume recorded (``resumes``: when, and the retry
        policy it judged the rest of the run with, which is that invocation's own, as
        ``--call-timeout`` beside ``--resume`` gives it), so that a run finished under
        other timeouts than it started with says so where its options are shown."""
        resumes = (self.model_extra or {}).get("resumes")
        entry = {"at": time.time(), "retry": retry.model_dump(mode="json")}
        return self.model_copy(update={
            "resumes": [*(resumes if isinstance(resumes, list) else []), entry]})


class RunRecord(_Record):
    """A stored run: its id, suite, status, how it was made and (once finished) its summary,
    and what people call it and wrote of it (its name, tags and notes, which may change)."""

    id: str
    suite: str
    status: RunStatus
    created_at: float | None = Field(description=(
        "when the run started (epoch seconds); null only when the stored value cannot be "
        "read, which ``unreadable`` names"))
    finished_at: float | None = None
    name: str | None = None
    tags: list[str] = Field(default_factory=list)
    notes: str | None = None
    config: RunSnapshot = Field(default_factory=RunSnapshot)
    summary: RunSummary | None = None
    unreadable: str | None = Field(
        default=None, description="why the stored row cannot be read (which field, and "
        "what is wrong with it); the other fields hold what could be read")
    abandoned: bool = Field(
        default=False, description="stored as running, but the process running it stopped "
        "renewing its lease (killed, or its machine gone): read as interrupted, so it can be "
        "resumed or deleted")


def status_text(status: RunStatus) -> str:
    """A run's status as people read it: ``waiting for batch`` for a waiting run."""
    return "waiting for batch" if status is RunStatus.WAITING else status.value


def resume_command(run: RunRecord, store: str | None = None) -> str | None:
    """What finishes ``run`` when it stopped before completing (interrupted, its process gone,
    failed, or waiting for its batches): ``assay run --resume``, with ``--store`` when
    ``store`` (a URL safe to show) is given; from Python when the run's target was a function, which only Python can give
    again. None for a run that completed, is running, or cannot be read."""
    if run.unreadable or run.status not in (RunStatus.INTERRUPTED, RunStatus.FAILED,
                                            RunStatus.WAITING):
        return None
    function = (run.config.model_extra or {}).get("python_target")
    if function:
        where = f", store={store!r}" if store else ""
        return f"assay.resume({run.id!r}, target={function}{where})"
    return cli_resume_command(run.id, store)


def cli_resume_command(run_id: str, store: str | None = None) -> str:
    """``assay run --resume RUN_ID`` (with ``--store`` when ``store`` is given), each part
    quoted for the shell: the one way a printed resume command is written."""
    import shlex

    where = f" --store {shlex.quote(store)}" if store else ""
    return f"assay run --resume {shlex.quote(run_id)}{where}"
