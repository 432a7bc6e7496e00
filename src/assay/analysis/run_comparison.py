"""Compare two stored runs: a regression verdict on whole-run aggregates, per-case and
per-metric deltas, paired significance, a config diff and a comparability flag.

The verdict is the Connexity platform's: three independent checks on the two runs' aggregates,
each a strict ``>`` against an overridable threshold, echoed as ``thresholds_used``:

- the pass rate (0-1) dropped by more than ``max_pass_rate_drop`` (0.0: any drop);
- the average score (0-100) dropped by more than ``max_avg_score_drop`` (5.0 points);
- the average latency rose by more than ``max_latency_increase_pct`` (0.2, a fraction).

The aggregates are the runs' own, over every execution (cases in one run only included), unless
``matched_only``. Per case (matched by id; repeats reduced to the case's mean score and pass^k,
never paired index by index) the status is, in this order: ``error`` when either side has no
result, ``regression``/``improvement`` when the pass flag flipped, else a score change of more
than 5 points (strict: exactly 5 is ``unchanged``). Per-case statuses are reported; they do not
decide the verdict.

Beside each reason stands a paired test on the matched cases (McNemar on pass flags, Wilcoxon
on scores and latencies, see :mod:`assay.analysis.significance`). It never changes the verdict unless
``require_significance`` is given: then a reason whose test is not significant at that level
is kept, tagged ``not_significant``, and does not count.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.analysis.diff import ConfigDiff, config_diff
from assay.analysis.significance import PairedComparison, paired_compare
from assay.errors import ConfigError, EvaluationError
from assay.store.errors import StoreError
from assay.types.records import (
    CaseRecord,
    RunRecord,
    RunStatus,
    SummaryBuilder,
    Verdict,
    case_latency,
)

CASE_SCORE_THRESHOLD = 5.0
"""Points of 0-100 score beyond which a case with no pass/fail flip changed (strict)."""
DEFAULT_ALPHA = 0.05

Status = Literal["regression", "improvement", "unchanged", "error"]


class RunNotFound(EvaluationError):
    """A run id that names no run (the endpoint's 404)."""

    status_code = 404

    def __init__(self, role: str, run_id: str) -> None:
        self.detail = f"{role.capitalize()} run not found"
        super().__init__("run_not_found", f"{self.detail}: no run {run_id!r}")
        self.role = role
        self.run_id = run_id


class RunNotCompleted(EvaluationError):
    """A run that did not complete (the endpoint's 400): it has no whole-run aggregates."""

    status_code = 400

    def __init__(self, role: str, run_id: str, status: str) -> None:
        self.detail = f"{role.capitalize()} run is not completed (status: {status})"
        super().__init__("run_not_completed",
                         f"{self.detail}: run {run_id}; compare it anyway with "
                         "--allow-incomplete")
        self.role = role
        self.run_id = run_id


class IncomparableRuns(EvaluationError):
    """Two runs measured with different rulers, refused under ``strict_comparability``."""

    status_code = 400

    def __init__(self, reasons: list[str]) -> None:
        self.detail = "the runs are not comparable: " + "; ".join(reasons)
        super().__init__("incomparable_runs", self.detail)
        self.reasons = reasons


class CompareThresholds(BaseModel):
    """When the candidate regressed; every check is a strict ``>``."""

    model_config = ConfigDict(extra="forbid")

    max_pass_rate_drop: float = Field(default=0.0, ge=0, allow_inf_nan=False,
                                      description="a fraction of the 0-1 pass rate")
    max_avg_score_drop: float = Field(default=5.0, ge=0, allow_inf_nan=False,
                                      description="points on the 0-100 score")
    max_latency_increase_pct: float = Field(
        default=0.2, ge=0, allow_inf_nan=False,
        description="a fraction of the baseline's average latency (0.2 is 20%)")
    max_cost_increase_pct: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="a fraction; None: not checked")

    @field_validator("max_latency_increase_pct", "max_cost_increase_pct", mode="before")
    @classmethod
    def _percent_text(cls, value: Any) -> Any:
        return parse_fraction(value) if isinstance(value, str) else value

    def used(self) -> dict[str, float]:
        used = {"max_pass_rate_drop": self.max_pass_rate_drop,
                "max_avg_score_drop": self.max_avg_score_drop,
                "max_latency_increase_pct": self.max_latency_increase_pct}
        if self.max_cost_increase_pct is not None:
            used["max_cost_increase_pct"] = self.max_cost_increase_pct
        return used


def parse_fraction(text: str) -> float:
    """``"20%"`` -> 0.2; ``"0.2"`` -> 0.2. A bare number is a fraction, as the API takes it."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValueError(f"{text!r} is not a fraction (0.2) or a percentage (20%)") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} must be a finite number >= 0")
    return value


class RunAggregate(BaseModel):
    """A run's figures that the verdict compares."""

    pass_rate: float | None = None
    avg_score: float | None = None
    latency_avg_ms: float | None = None
    latency_p95_ms: float | None = None
    cost_usd: float | None = None
    total_executions: int = 0
    passed_count: int = 0
    error_count: int = 0


class Reason(BaseModel):
    """A regression reason with its paired test."""

    check: str
    text: str
    counted: bool = True
    tag: Literal["counted", "not_significant"] = "counted"
    significance: str | None = Field(default=None, description="the key of the test in "
                                     "RunComparison.significance")
    p_value: float | None = None
    significant: bool | None = None


class ComparisonVerdict(BaseModel):
    regression_detected: bool
    reasons: list[str] = Field(default_factory=list)
    thresholds_used: dict[str, float] = Field(default_factory=dict)
    reason_details: list[Reason] = Field(default_factory=list)
    require_significance: float | None = None


class MetricDelta(BaseModel):
    metric: str
    is_binary: bool = False
    baseline_score: float | None = None
    candidate_score: float | None = None
    delta: float | None = None
    status: Status = "unchanged"


class CaseComparison(BaseModel):
    test_case_id: str
    status: Status
    baseline_passed: bool | None = None
    candidate_passed: bool | None = None
    baseline_score: float | None = None
    candidate_score: float | None = None
    score_delta: float | None = None
    baseline_executions: int = 0
    candidate_executions: int = 0
    baseline_pass_fraction: float | None = None
    candidate_pass_fraction: float | None = None
    baseline_latency_ms: float | None = None
    candidate_latency_ms: float | None = None
    latency_delta_ms: float | None = None
    metric_deltas: list[MetricDelta] = Field(default_factory=list)


class MetricAggregateDelta(BaseModel):
    metric: str
    is_binary: bool = False
    baseline: float | None = None
    candidate: float | None = None
    delta: float | None = None


class AggregateDeltas(BaseModel):
    pass_rate_delta: float | None = None
    avg_score_delta: float | None = None
    latency_avg_delta_ms: float | None = None
    latency_p95_delta_ms: float | None = None
    cost_delta_usd: float | None = None
    total_regressions: int = 0
    total_improvements: int = 0
    total_unchanged: int = 0
    total_errors: int = 0
    per_metric_aggregate_deltas: list[MetricAggregateDelta] = Field(default_factory=list)


class CandidateGates(BaseModel):
    """The candidate's own run dimensions, as its run recorded them."""

    metrics_passed: bool | None = None
    cases_passed: bool | None = None
    passed: bool | None = None
    gate_failures: list[str] = Field(default_factory=list)


class RunComparison(BaseModel):
    """Everything a comparison of two runs found; ``exit_code`` decides the CLI's."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    baseline_run_id: str
    candidate_run_id: str
    policy: str = "connexity"
    matched_only: bool = False
    baseline: RunAggregate
    candidate: RunAggregate
    aggregate: AggregateDeltas
    verdict: ComparisonVerdict
    test_case_comparisons: list[CaseComparison] = Field(default_factory=list)
    baseline_only_test_cases: list[str] = Field(default_factory=list)
    candidate_only_test_cases: list[str] = Field(default_factory=list)
    significance: dict[str, PairedComparison] = Field(default_factory=dict)
    config_diff: ConfigDiff = Field(default_factory=ConfigDiff)
    comparable: bool = True
    comparability: list[str] = Field(default_factory=list)
    candidate_gates: CandidateGates = Field(default_factory=CandidateGates)
    warnings: list[str] = Field(default_factory=list)

    def exit_code(self, fail_on_thresholds: bool = True) -> int:
        """1 on a regression, or (``fail_on_thresholds``) when the candidate failed one of
        its own dimensions; else 0. A dimension with no value never fails."""
        if self.verdict.regression_detected:
            return 1
        gates = self.candidate_gates
        if fail_on_thresholds and (gates.metrics_passed is False or gates.cases_passed is False):
            return 1
        return 0


# -- the pure rules -----------------------------------------------------------------------


def _delta(before: float | None, after: float | None, places: int = 4) -> float | None:
    return None if before is None or after is None else round(after - before, places)


def verdict(baseline: RunAggregate, candidate: RunAggregate,
            thresholds: CompareThresholds | None = None) -> ComparisonVerdict:
    """The regression verdict on two runs' aggregates (every check a strict ``>``)."""
    t = thresholds or CompareThresholds()
    details: list[Reason] = []
    b, c = baseline.pass_rate, candidate.pass_rate
    rate_delta = _delta(b, c)
    if b is not None and c is not None and rate_delta is not None and \
            -rate_delta > t.max_pass_rate_drop:
        details.append(Reason(check="pass_rate", significance="cases",
                              text=f"pass_rate dropped {b - c:.0%} ({b:.2f} → {c:.2f})"))
    b, c = baseline.avg_score, candidate.avg_score
    score_delta = _delta(b, c)
    if b is not None and c is not None and score_delta is not None and score_delta < 0 and \
            -score_delta > t.max_avg_score_drop:
        details.append(Reason(check="avg_score", significance="overall_score",
                              text=f"avg_score dropped {-score_delta:.1f}pt ({b:.1f} → "
                                   f"{c:.1f})"))
    b, c = baseline.latency_avg_ms, candidate.latency_avg_ms
    if b is not None and c is not None and b > 0 and (c - b) / b > t.max_latency_increase_pct:
        details.append(Reason(check="avg_latency", significance="latency",
                              text=f"avg_latency increased {(c - b) / b:.0%} ({b:.0f}ms → "
                                   f"{c:.0f}ms)"))
    b, c = baseline.cost_usd, candidate.cost_usd
    if t.max_cost_increase_pct is not None and b is not None and c is not None and b > 0 and \
            (c - b) / b > t.max_cost_increase_pct:
        details.append(Reason(check="cost", text=f"cost increased {(c - b) / b:.0%} "
                                                 f"(${b:.4f} → ${c:.4f})"))
    return ComparisonVerdict(regression_detected=bool(details),
                             reasons=[r.text for r in details], thresholds_used=t.used(),
                             reason_details=details)


def case_status(baseline_passed: bool | None, candidate_passed: bool | None,
                baseline_score: float | None, candidate_score: float | None,
                baseline_error: bool = False, candidate_error: bool = False
                ) -> tuple[Status, float | None]:
    """A matched case's status and its score delta (rounded to 2 places)."""
    delta = _delta(baseline_score, candidate_score, 2)
    if baseline_error or candidate_error:
        return "error", delta
    if baseline_passed is True and candidate_passed is False:
        return "regression", delta
    if baseline_passed is False and candidate_passed is True:
        return "improvement", delta
    if baseline_score is not None and candidate_score is not None:
        change = candidate_score - baseline_score
        if change < -CASE_SCORE_THRESHOLD:
            return "regression", delta
        if change > CASE_SCORE_THRESHOLD:
            return "improvement", delta
    return "unchanged", delta


MetricValues = dict[str, tuple[float, bool]]
"""metric -> (value, binary): a 0-5 score, or for a binary metric the fraction passed."""


def metric_deltas(baseline: MetricValues, candidate: MetricValues) -> list[MetricDelta]:
    """Per-metric changes of one case: a binary metric regresses when it stops passing, a
    scored one on any decrease (no tolerance); a metric on one side only is unchanged."""
    found = []
    for metric in sorted(set(baseline) | set(candidate)):
        b, c = baseline.get(metric), candidate.get(metric)
        binary = (b or c or (0.0, False))[1]
        entry = MetricDelta(metric=metric, is_binary=binary,
                            baseline_score=b[0] if b else None,
                            candidate_score=c[0] if c else None)
        if b is not None and c is not None:
            if not binary:
                entry.delta = round(c[0] - b[0], 4)
            if c[0] < b[0]:
                entry.status = "regression"
            elif c[0] > b[0]:
                entry.status = "improvement"
        found.append(entry)
    return found


def metric_aggregate_deltas(baseline: Sequence[MetricValues],
                            candidate: Sequence[MetricValues]) -> list[MetricAggregateDelta]:
    """Per metric over the matched executions: binary -> the fraction passed, scored -> the
    mean 0-5 score; each side rounded to 4 places, then the delta."""
    def means(rows: Sequence[MetricValues]) -> dict[str, tuple[float, bool]]:
        values: dict[str, list[float]] = defaultdict(list)
        binary: dict[str, bool] = {}
        for row in rows:
            for metric, (value, is_binary) in row.items():
                values[metric].append(value / 5 if is_binary else value)
                binary[metric] = is_binary
        return {m: (round(statistics.fmean(v), 4), binary[m]) for m, v in values.items()}

    b, c = means(baseline), means(candidate)
    found = []
    for metric in sorted(set(b) | set(c)):
        bv, cv = b.get(metric), c.get(metric)
        found.append(MetricAggregateDelta(
            metric=metric, is_binary=(bv or cv or (0.0, False))[1],
            baseline=bv[0] if bv else None, candidate=cv[0] if cv else None,
            delta=round(cv[0] - bv[0], 4) if bv and cv else None))
    return found


# -- runs -----------------------------------------------------------------------------------


def metric_values(record: CaseRecord) -> MetricValues:
    """The multi-metric judge's 0-5 metric scores in a case record (binary as 5 or 0)."""
    for score in record.scores:
        details = score.details or {}
        if score.value is not None and "metric_scores" in details:
            return {m["metric"]: (float(m["score"]), bool(m.get("is_binary")))
                    for m in details["metric_scores"]}
    return {}


def overall(record: CaseRecord) -> float | None:
    """The case's 0-100 score: the policy's own, else the case score x 100."""
    if record.overall_score is not None:
        return record.overall_score
    return record.score * 100 if record.score is not None else None


def total_latency_ms(record: CaseRecord) -> float | None:
    """Wall time of a case: the agent's, plus its judges' (which run side by side)."""
    agent = record.execution.latency_ms
    judges = [s.latency_ms for s in record.scores if s.latency_ms is not None]
    if agent is None and not judges:
        return None
    return (agent or 0.0) + (max(judges) if judges else 0.0)


def aggregate(records: Sequence[CaseRecord]) -> RunAggregate:
    """A run's verdict figures over ``records`` (the same rules as its stored summary)."""
    builder = SummaryBuilder()
    for record in records:
        builder.add(record)
    summary = builder.build()
    return RunAggregate(pass_rate=summary.pass_rate,
                        avg_score=summary.weighted_metrics_score_pct,
                        latency_avg_ms=summary.latency_avg_ms,
                        latency_p95_ms=summary.latency_p95_ms,
                        cost_usd=summary.estimated_cost_usd,
                        total_executions=summary.total_executions,
                        passed_count=summary.passed_count, error_count=summary.error_count)


class _Side:
    """One run's executions of one case, reduced: pass^k, mean score, mean metrics."""

    def __init__(self, records: list[CaseRecord]) -> None:
        self.records = records
        self.executions = len(records)
        self.errored = all(r.verdict is Verdict.ERROR for r in records)
        passes = [r.verdict is Verdict.PASS for r in records]
        self.passed = all(passes)
        self.pass_fraction = sum(passes) / len(passes)
        scores = [v for r in records if (v := overall(r)) is not None]
        self.score = statistics.fmean(scores) if scores else None
        p50s = [v for r in records if (v := case_latency(r.execution).p50_ms) is not None]
        self.p50 = statistics.fmean(p50s) if p50s else None
        totals = [v for r in records if (v := total_latency_ms(r)) is not None]
        self.total_latency = statistics.fmean(totals) if totals else None
        per_metric: dict[str, list[float]] = defaultdict(list)
        binary: dict[str, bool] = {}
        for record in records:
            for metric, (value, is_binary) in metric_values(record).items():
                per_metric[metric].append(value)
                binary[metric] = is_binary
        self.metrics: MetricValues = {m: (statistics.fmean(v), binary[m])
                                      for m, v in per_metric.items()}


def _by_case(records: Sequence[CaseRecord]) -> dict[str, list[CaseRecord]]:
    grouped: dict[str, list[CaseRecord]] = defaultdict(list)
    for record in records:
        grouped[record.case_id].append(record)
    return dict(grouped)


def compare_records(baseline: RunRecord, candidate: RunRecord,
                    before: Sequence[CaseRecord], after: Sequence[CaseRecord], *,
                    thresholds: CompareThresholds | None = None, matched_only: bool = False,
                    require_significance: float | None = None,
                    missing_is_regression: bool = False,
                    strict_comparability: bool = False) -> RunComparison:
    """Compare two runs from their records (see the module's docstring)."""
    if require_significance is not None and not 0 < require_significance < 1:
        raise ConfigError(f"require_significance {require_significance!r} must be between 0 "
                          "and 1 (a significance level such as 0.05)")
    a, b = _by_case(before), _by_case(after)
    matched = sorted(a.keys() & b.keys())
    diff = config_diff(baseline.config, candidate.config, set(a), set(b))
    reasons = diff.incomparability()
    if strict_comparability and reasons:
        raise IncomparableRuns(reasons)
    base_records = [r for r in before if r.case_id in b] if matched_only else list(before)
    cand_records = [r for r in after if r.case_id in a] if matched_only else list(after)
    base_agg, cand_agg = aggregate(base_records), aggregate(cand_records)
    result = verdict(base_agg, cand_agg, thresholds)
    cases: list[CaseComparison] = []
    pairs: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    metric_rows: tuple[list[MetricValues], list[MetricValues]] = ([], [])
    for case_id in matched:
        x, y = _Side(a[case_id]), _Side(b[case_id])
        status, delta = case_status(x.passed, y.passed, x.score, y.score, x.errored, y.errored)
        cases.append(CaseComparison(
            test_case_id=case_id, status=status, baseline_passed=x.passed,
            candidate_passed=y.passed, baseline_score=x.score, candidate_score=y.score,
            score_delta=delta, baseline_executions=x.executions,
            candidate_executions=y.executions, baseline_pass_fraction=x.pass_fraction,
            candidate_pass_fraction=y.pass_fraction, baseline_latency_ms=x.total_latency,
            candidate_latency_ms=y.total_latency,
            latency_delta_ms=_delta(x.total_latency, y.total_latency, 2),
            metric_deltas=metric_deltas(x.metrics, y.metrics)))
        _pair(pairs["cases"], float(x.passed), float(y.passed))
        _pair(pairs["overall_score"], x.score, y.score)
        _pair(pairs["latency"], x.p50, y.p50)
        for metric in sorted(x.metrics.keys() & y.metrics.keys()):
            _pair(pairs[f"metric/{metric}"], x.metrics[metric][0], y.metrics[metric][0])
        if status != "error":
            metric_rows[0].extend(metric_values(r) for r in a[case_id])
            metric_rows[1].extend(metric_values(r) for r in b[case_id])
    level = require_significance if require_significance is not None else DEFAULT_ALPHA
    significance = {name: paired_compare(base, cand).at_level(level)
                    for name, (base, cand) in pairs.items()}
    only_base, only_cand = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    if missing_is_regression and only_base:
        result.reason_details.append(Reason(
            check="missing_cases",
            text=f"{len(only_base)} baseline case(s) missing from the candidate"))
        result.reasons.append(result.reason_details[-1].text)
    _weigh(result, significance, require_significance)
    counts = defaultdict(int, {s: sum(1 for c in cases if c.status == s)
                               for s in ("regression", "improvement", "unchanged", "error")})
    deltas = AggregateDeltas(
        pass_rate_delta=_delta(base_agg.pass_rate, cand_agg.pass_rate),
        avg_score_delta=_delta(base_agg.avg_score, cand_agg.avg_score),
        latency_avg_delta_ms=_delta(base_agg.latency_avg_ms, cand_agg.latency_avg_ms),
        latency_p95_delta_ms=_delta(base_agg.latency_p95_ms, cand_agg.latency_p95_ms),
        cost_delta_usd=_delta(base_agg.cost_usd, cand_agg.cost_usd),
        total_regressions=counts["regression"], total_improvements=counts["improvement"],
        total_unchanged=counts["unchanged"], total_errors=counts["error"],
        per_metric_aggregate_deltas=metric_aggregate_deltas(*metric_rows))
    summary = candidate.summary
    gates = CandidateGates(
        metrics_passed=summary.metrics_passed if summary else None,
        cases_passed=summary.cases_passed if summary else None,
        passed=summary.passed if summary else None,
        gate_failures=list(summary.gate_failures) if summary else [])
    return RunComparison(
        baseline_run_id=baseline.id, candidate_run_id=candidate.id, matched_only=matched_only,
        baseline=base_agg, candidate=cand_agg, aggregate=deltas, verdict=result,
        test_case_comparisons=cases, baseline_only_test_cases=only_base,
        candidate_only_test_cases=only_cand, significance=significance, config_diff=diff,
        comparable=not reasons, comparability=reasons, candidate_gates=gates,
        warnings=_warnings(baseline, candidate, diff, reasons))


def _pair(pair: tuple[list[float], list[float]], x: float | None, y: float | None) -> None:
    if x is not None and y is not None:
        pair[0].append(x)
        pair[1].append(y)


def _weigh(result: ComparisonVerdict, significance: dict[str, PairedComparison],
           alpha: float | None) -> None:
    """Attach each reason's test; with ``alpha``, reasons not significant stop counting."""
    for reason in result.reason_details:
        test = significance.get(reason.significance or "")
        if test is not None:
            reason.p_value = test.p_value
            reason.significant = test.significant
        if alpha is not None and not reason.significant:
            reason.counted, reason.tag = False, "not_significant"
    result.require_significance = alpha
    result.regression_detected = any(r.counted for r in result.reason_details)


def _warnings(baseline: RunRecord, candidate: RunRecord, diff: ConfigDiff,
              incomparable: list[str]) -> list[str]:
    warnings = list(incomparable)
    eval_set = diff.eval_set
    if not eval_set.same_suite:
        warnings.append(f"the runs are of different suites ({baseline.suite!r} and "
                        f"{candidate.suite!r}): comparison is based on overlapping test case "
                        "IDs only")
    elif eval_set.added or eval_set.removed:
        versions = f"{eval_set.baseline_version or '?'} → {eval_set.candidate_version or '?'}"
        warnings.append(f"Eval config versions differ ({versions}): "
                        f"{len(eval_set.removed)} removed, {len(eval_set.added)} added.")
    elif eval_set.version_changed:
        warnings.append(f"the suite changed between the runs ({eval_set.baseline_version} → "
                        f"{eval_set.candidate_version})")
    if diff.prompt_diff.changed:
        warnings.append(f"the agent's system prompt changed ({diff.prompt_diff.change_ratio:.0%}"
                        " of its lines)")
    if diff.tools_diff.changed:
        warnings.append("the agent's tools changed")
    return warnings


def load_run(store: Any, run_id: str, role: str, allow_incomplete: bool = False
             ) -> tuple[RunRecord, list[CaseRecord]]:
    """A stored run and its case records, or RunNotFound / RunNotCompleted naming ``role``
    (``baseline`` or ``candidate``)."""
    try:
        record = store.run_record(run_id)
    except StoreError as exc:
        if exc.message.startswith("no run"):
            raise RunNotFound(role, run_id) from None
        raise
    if record.status is not RunStatus.COMPLETED and not allow_incomplete:
        raise RunNotCompleted(role, record.id, record.status.value)
    return record, store.case_records(record.id)


def compare(baseline: Any, candidate: Any, *, store: Any = None,
            thresholds: CompareThresholds | dict[str, Any] | None = None,
            matched_only: bool = False, allow_incomplete: bool = False,
            require_significance: float | None = None, missing_is_regression: bool = False,
            strict_comparability: bool = False) -> RunComparison:
    """Compare two stored runs, each named by its id (a unique prefix will do) or by the
    result that made it.

    ``store`` is a store URL, a SQLite path or a RunStore; None: the results' store, else
    the default store. Raises :class:`RunNotFound` (404), :class:`RunNotCompleted` (400,
    unless ``allow_incomplete``), :class:`IncomparableRuns` (under ``strict_comparability``)
    and ConfigError for bad thresholds.
    """
    from assay.store.runs import run_id_of, store_for

    runs = store_for([baseline, candidate], store)
    baseline, candidate = run_id_of(baseline), run_id_of(candidate)
    if not isinstance(thresholds, CompareThresholds):
        try:
            thresholds = CompareThresholds.model_validate(thresholds or {})
        except ValueError as exc:
            raise ConfigError(f"comparison thresholds: {exc}") from None
    base, before = load_run(runs, baseline, "baseline", allow_incomplete)
    cand, after = load_run(runs, candidate, "candidate", allow_incomplete)
    return compare_records(base, cand, before, after, thresholds=thresholds,
                           matched_only=matched_only,
                           require_significance=require_significance,
                           missing_is_regression=missing_is_regression,
                           strict_comparability=strict_comparability)


__all__ = ["CompareThresholds", "IncomparableRuns", "RunAggregate", "RunComparison",
           "RunNotCompleted", "RunNotFound", "case_status", "compare", "compare_records", "load_run",
           "metric_aggregate_deltas", "metric_deltas", "parse_fraction", "verdict"]
