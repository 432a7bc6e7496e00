"""Compare two stored runs: one engine, one typed :class:`Comparison`, for every surface.

``assay compare``, :func:`assay.compare`, ``GET /runs/compare``, the web UI's compare page,
``--against-baseline``/``--compare-to-baseline`` and the Markdown and HTML reports all render
the object this module returns, so the same pair of runs gets the same verdict, the same
per-case counts and the same exit code wherever it is asked about.

**Comparability.** Two runs are compared only when they measured the same thing with the
same ruler: both completed, the same cases (by id), the same evaluators (types, weights,
settings), the same judge (and simulated user) models and the same scoring policy. Every
difference is listed with the option that allows it (``allow_incomplete``,
``allow_different_cases``, ``allow_different_evaluators``, ``allow_different_judge``,
``allow_different_scoring``); a difference not allowed refuses the comparison
(:class:`IncomparableRuns`, exit 2). Runs that share no case are never compared.

**The verdict** is the candidate's policy's (:mod:`assay.run.policies`): per case (matched by
id; repeats reduced to pass^k and the mean score, never paired index by index) a status by the
policy's rule, and per run the regressions its rule finds on the runs' figures (pass rate,
average score on the 0-100 scale, latency above the noise and an absolute floor, cost). The
figures are over every execution of each run, or over the matched cases only
(``matched_only``). Beside each reason stands a paired test on the matched cases (McNemar on
pass flags, Wilcoxon on scores and latencies); it changes the verdict only with
``require_significance``, which stops counting a reason whose test is not significant.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay._util.control_chars import quoted
from assay.analysis.diff import ConfigDiff, brief_value, config_diff
from assay.analysis.significance import PairedComparison, paired_compare
from assay.errors import ConfigError, EvaluationError
from assay.run.policies import policy_for
from assay.run.policies.base import (
    CaseSide,
    CompareThresholds,
    LatencyPairs,
    Reason,
    RunFigures,
    ScoringPolicy,
    Status,
    cost_not_comparable,
)
from assay.store.errors import StoreError
from assay.types import numbers
from assay.types.config import RunConfig
from assay.types.records import CaseRecord, CauseAnalysis, RunRecord, RunStatus, SummaryBuilder

DEFAULT_ALPHA = 0.05
EXAMPLES = 5
"""Case ids named in a difference; the rest are counted."""
RULER_SETTINGS = ("run.thresholds", "run.connexity_compat", "run.chunk_errors",
                  "run.request_from_messages", "run.retrieval_per", "run.naming", "run.judges",
                  "run.global_guidelines")
"""Run settings that decide case verdicts: runs that differ in them measure differently."""


# -- refusals -----------------------------------------------------------------------------


class RunNotFound(EvaluationError):
    """A run id that names no run (the endpoint's 404)."""

    status_code = 404

    def __init__(self, role: str, run_id: str) -> None:
        self.detail = f"{role.capitalize()} run not found"
        super().__init__("run_not_found", f"{self.detail}: no run {quoted(run_id)}")
        self.role = role
        self.run_id = run_id


class RunNotCompleted(EvaluationError):
    """A run that did not complete (the endpoint's 400): it has no whole-run aggregates."""

    status_code = 400

    def __init__(self, role: str, run_id: str, status: str,
                 option: str = "--allow-incomplete") -> None:
        self.detail = f"{role.capitalize()} run is not completed (status: {status})"
        super().__init__("run_not_completed",
                         f"{self.detail}: run {run_id}; compare it anyway with {option}")
        self.role = role
        self.run_id = run_id
        self.status = status


class Difference(BaseModel):
    """One way the two runs are not like for like, and the option that allows it."""

    kind: Literal["incomplete", "cases", "evaluators", "judge", "scoring"]
    text: str
    allow: str = Field(description="the option that compares them anyway (the CLI's flag "
                       "is the same name with dashes: --allow-different-cases)")
    allowed: bool = False


class IncomparableRuns(EvaluationError):
    """Two runs measured differently, refused: every difference not allowed is listed."""

    status_code = 400

    def __init__(self, differences: list[Difference], nothing_shared: bool = False,
                 option: Callable[[str], str] | None = None) -> None:
        self.differences = differences
        self.reasons = [d.text for d in differences]
        self.nothing_shared = nothing_shared
        self.detail = self.said(option or (lambda allow: "--" + allow.replace("_", "-")))
        super().__init__("incomparable_runs", self.detail)

    def said(self, option: Callable[[str], str]) -> str:
        """The refusal, naming each option that allows a difference as ``option`` writes it
        (the CLI's ``--allow-different-cases``, the REST API's ``allow_different_cases=true``)."""
        if self.nothing_shared:
            return "the runs share no case, so there is nothing to compare: " + "; ".join(
                self.reasons)
        options = ", ".join(dict.fromkeys(option(d.allow) for d in self.differences))
        return (f"the runs are not comparable: {'; '.join(self.reasons)}. Compare them "
                f"anyway with {options}")


# -- options and results ------------------------------------------------------------------


class CompareOptions(BaseModel):
    """Everything a comparison may be asked to do differently, the same on every surface."""

    model_config = ConfigDict(extra="forbid")

    thresholds: CompareThresholds = Field(default_factory=CompareThresholds)
    matched_only: bool = Field(default=False, description="the runs' figures over the cases "
                               "both hold, not every execution of each")
    require_significance: float | None = Field(
        default=None, gt=0, lt=1, description="a significance level: a reason whose paired "
        "test is not significant at it does not count")
    missing_is_regression: bool = Field(
        default=False, description="baseline cases the candidate lacks are a regression")
    allow_incomplete: bool = False
    allow_different_cases: bool = False
    allow_different_evaluators: bool = False
    allow_different_judge: bool = False
    allow_different_scoring: bool = False

    @classmethod
    def allowing_everything(cls, **options: Any) -> CompareOptions:
        """Options that compare any two runs that share a case (differences still listed)."""
        return cls(**{**{f: True for f in cls.model_fields if f.startswith("allow_")},
                      **options})


class MetricDelta(BaseModel):
    metric: str
    is_binary: bool = False
    baseline_score: float | None = None
    candidate_score: float | None = None
    delta: float | None = None
    status: Status = "unchanged"


class CaseComparison(BaseModel):
    """One case matched in both runs."""

    test_case_id: str
    status: Status
    baseline_passed: bool | None = None
    candidate_passed: bool | None = None
    baseline_score: float | None = Field(default=None, description="0-100")
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
    cause_analysis: CauseAnalysis | None = Field(
        default=None, description="why it regressed, when asked (--cause-analysis)")


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


class ComparisonVerdict(BaseModel):
    regression_detected: bool
    reasons: list[str] = Field(default_factory=list)
    thresholds_used: dict[str, float] = Field(default_factory=dict)
    reason_details: list[Reason] = Field(default_factory=list)
    require_significance: float | None = None


class CandidateGates(BaseModel):
    """The candidate's own gates, as its run recorded them."""

    metrics_passed: bool | None = None
    cases_passed: bool | None = None
    passed: bool | None = None
    gate_failures: list[str] = Field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the candidate failed a gate of its own: any of them (``max_failed``, a
        pass rate, a cost, Connexity's run dimensions), as every surface lists them under
        "the candidate's own gates failed". Reading only the run dimensions here once
        printed that list above an exit 0 and "no regression"."""
        return bool(self.gate_failures) or self.metrics_passed is False \
            or self.cases_passed is False


class Comparison(BaseModel):
    """Everything a comparison of two runs found; :meth:`exit_code` is every surface's."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    baseline_run_id: str
    candidate_run_id: str
    policy: str = Field(default="default", description="the scoring policy that decided")
    matched_only: bool = False
    baseline: RunFigures
    candidate: RunFigures
    aggregate: AggregateDeltas
    verdict: ComparisonVerdict
    test_case_comparisons: list[CaseComparison] = Field(default_factory=list)
    baseline_only_test_cases: list[str] = Field(default_factory=list)
    candidate_only_test_cases: list[str] = Field(default_factory=list)
    significance: dict[str, PairedComparison] = Field(default_factory=dict)
    config_diff: ConfigDiff = Field(default_factory=ConfigDiff)
    comparable: bool = Field(default=True, description="no difference between the runs' "
                             "rulers (every difference was allowed, when false)")
    comparability: list[str] = Field(default_factory=list, description="the differences")
    differences: list[Difference] = Field(default_factory=list)
    candidate_gates: CandidateGates = Field(default_factory=CandidateGates)
    warnings: list[str] = Field(default_factory=list)

    def exit_code(self, fail_on_thresholds: bool = True) -> int:
        """1 on a regression, or (``fail_on_thresholds``) when the candidate failed its own
        gates; else 0. (A refused comparison never gets here: it is exit 2.)"""
        if self.verdict.regression_detected:
            return 1
        return 1 if fail_on_thresholds and self.candidate_gates.failed else 0

    def headline(self, fail_on_thresholds: bool = True) -> str:
        """The verdict in one line, as every surface states it. A regression is the
        policy's verdict on the runs' figures, not any case that got worse; so when cases got
        worse and it found none, the line says why (:meth:`why_not_counted`): a bare "no
        regression" beside "1 case(s) regressed" read as a contradiction."""
        counts = self.aggregate
        cases = (f"{counts.total_regressions} case(s) regressed, {counts.total_improvements} "
                 f"improved, {counts.total_unchanged} unchanged, {counts.total_errors} error(s)")
        if self.verdict.regression_detected:
            return f"regression detected: {'; '.join(self.verdict.reasons)} ({cases})"
        said = "no regression"
        if counts.total_regressions:
            worse = numbers.count_of(counts.total_regressions, "case")
            said += (f" by the {self.policy} policy's rule: {worse} got worse, not enough to "
                     f"count ({self.why_not_counted()});")
        else:
            said += ","
        if self.exit_code(fail_on_thresholds):
            return f"{said} but the candidate failed its own gates ({cases})"
        return f"{said.rstrip(',;')} ({cases})"

    def why_not_counted(self) -> str:
        """Why the runs' figures are no regression by the policy's rule: each reason found
        whose paired test was not significant (with ``require_significance``), else that
        the figures stayed within the thresholds."""
        uncounted = [r.text for r in self.verdict.reason_details if not r.counted]
        if uncounted:
            level = numbers.plain(self.verdict.require_significance)
            return f"not significant at {level}: {'; '.join(uncounted)}"
        return "the runs' figures stayed within the thresholds"


RunComparison = Comparison
"""The name this model had; kept for code that imported it."""


# -- the engine ---------------------------------------------------------------------------


def policy_of(run: RunRecord) -> ScoringPolicy:
    """The scoring policy a stored run was judged by (its recorded config, settled as the
    run settled it); a config that cannot be read is judged by the default policy."""
    from assay.run.policies.databricks.options import active

    try:
        config = run.config.run.runnable(run.id)
        config = config.settled(config.scoring or "default", None, agent_judges=active(config))
    except (ValueError, ConfigError):
        config = RunConfig()
    return policy_for(config)


def figures(records: Sequence[CaseRecord]) -> RunFigures:
    """A run's figures over ``records``: the same rules as its stored summary."""
    builder = SummaryBuilder()
    for record in records:
        builder.add(record)
    summary = builder.build()
    return RunFigures(pass_rate=summary.pass_rate, avg_score=summary.weighted_metrics_score_pct,
                      latency_avg_ms=summary.latency_avg_ms,
                      latency_p95_ms=summary.latency_p95_ms,
                      latency_measured=summary.latency.count,
                      cost_usd=summary.estimated_cost_usd, cost_unknown=summary.cost_unknown,
                      total_executions=summary.total_executions,
                      passed_count=summary.passed_count, error_count=summary.error_count)


def differences(baseline: RunRecord, candidate: RunRecord, base_cases: set[str],
                cand_cases: set[str], diff: ConfigDiff,
                options: CompareOptions) -> list[Difference]:
    """Every way the two runs are not like for like, each marked allowed or not."""
    found: list[Difference] = []

    def add(kind: Any, text: str, allow: str) -> None:
        found.append(Difference(kind=kind, text=text, allow=allow,
                                allowed=bool(getattr(options, allow))))

    for role, run in (("baseline", baseline), ("candidate", candidate)):
        if run.status is not RunStatus.COMPLETED:
            add("incomplete", f"the {role} {run.id} is {run.status.value}, not completed",
                "allow_incomplete")
    if base_cases != cand_cases:
        parts = [f"the baseline has {len(base_cases)} case(s), the candidate "
                 f"{len(cand_cases)} ({len(base_cases & cand_cases)} in both)"]
        if base_cases - cand_cases:
            parts.append(f"only in the baseline: {_named(base_cases - cand_cases)}")
        if cand_cases - base_cases:
            parts.append(f"only in the candidate: {_named(cand_cases - base_cases)}")
        add("cases", "; ".join(parts), "allow_different_cases")
    for change in diff.judge_settings_changed:
        add("evaluators", f"evaluator changed ({change.described()})",
            "allow_different_evaluators")
    for label, model in (("judge model changed", diff.judge_model_changed),
                         ("simulated user's model changed", diff.simulator_model_changed)):
        if model is not None:
            add("judge", f"{label} ({model.described()})", "allow_different_judge")
    for change in diff.run_config_changes:
        if change.field.startswith(RULER_SETTINGS):
            add("scoring", f"verdict settings changed ({change.described()})",
                "allow_different_scoring")
    if diff.scoring_changed is not None:
        change = diff.scoring_changed
        add("scoring", f"scoring changed ({brief_value(change.old_value)} → "
                       f"{brief_value(change.new_value)})", "allow_different_scoring")
    return found


def compare_records(baseline: RunRecord, candidate: RunRecord,
                    before: Sequence[CaseRecord], after: Sequence[CaseRecord],
                    options: CompareOptions | None = None) -> Comparison:
    """Compare two runs from their records (see the module docstring); raises
    :class:`IncomparableRuns` for a difference the options do not allow."""
    options = options or CompareOptions()
    a, b = _by_case(before), _by_case(after)
    matched = sorted(a.keys() & b.keys())
    base_policy, policy = policy_of(baseline), policy_of(candidate)
    diff = config_diff(baseline.config, candidate.config, set(a), set(b))
    if base_policy.name != policy.name and diff.scoring_changed is None:
        from assay.analysis.diff import FieldChange

        diff.scoring_changed = FieldChange(field="scoring", old_value=base_policy.name,
                                           new_value=policy.name)
    found = differences(baseline, candidate, set(a), set(b), diff, options)
    if not matched:
        raise IncomparableRuns(found or [Difference(
            kind="cases", text="no case in either run", allow="allow_different_cases")],
            nothing_shared=True)
    refused = [d for d in found if not d.allowed]
    if refused:
        raise IncomparableRuns(refused)
    base_records = [r for r in before if r.case_id in b] if options.matched_only else before
    cand_records = [r for r in after if r.case_id in a] if options.matched_only else after
    base_figures, cand_figures = figures(base_records), figures(cand_records)
    cases: list[CaseComparison] = []
    pairs: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    metric_rows: tuple[list[MetricValues], list[MetricValues]] = ([], [])
    for case_id in matched:
        x, y = CaseSide.of(a[case_id]), CaseSide.of(b[case_id])
        x.metrics, y.metrics = _mean_metrics(a[case_id]), _mean_metrics(b[case_id])
        status = policy.case_status(x, y)
        cases.append(CaseComparison(
            test_case_id=case_id, status=status, baseline_passed=x.passed,
            candidate_passed=y.passed, baseline_score=x.score, candidate_score=y.score,
            score_delta=_delta(x.score, y.score, 2), baseline_executions=x.executions,
            candidate_executions=y.executions, baseline_pass_fraction=x.pass_fraction,
            candidate_pass_fraction=y.pass_fraction, baseline_latency_ms=x.latency_ms,
            candidate_latency_ms=y.latency_ms,
            latency_delta_ms=_delta(x.latency_ms, y.latency_ms, 2),
            metric_deltas=metric_deltas(x.metrics, y.metrics)))
        _pair(pairs["cases"], float(x.passed), float(y.passed))
        _pair(pairs["score"], x.score, y.score)
        _pair(pairs["latency"], x.latency_ms, y.latency_ms)
        for metric in sorted(x.metrics.keys() & y.metrics.keys()):
            _pair(pairs[f"metric/{metric}"], x.metrics[metric][0], y.metrics[metric][0])
        if status != "error":
            metric_rows[0].extend(metric_values(r) for r in a[case_id])
            metric_rows[1].extend(metric_values(r) for r in b[case_id])
    level = options.require_significance or DEFAULT_ALPHA
    significance = {name: paired_compare(base, cand, kind=_PAIR_KINDS.get(name, "auto"))
                    .at_level(level) for name, (base, cand) in pairs.items()}
    latency = pairs.get("latency", ([], []))
    details = policy.regressions(base_figures, cand_figures,
                                 LatencyPairs(latency[0], latency[1]), options.thresholds)
    only_base, only_cand = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    if options.missing_is_regression and only_base:
        details.append(Reason(check="missing_cases", text=f"{len(only_base)} baseline "
                              "case(s) missing from the candidate"))
    verdict = _weigh(details, significance, options)
    counts = {s: sum(1 for c in cases if c.status == s)
              for s in ("regression", "improvement", "unchanged", "error")}
    deltas = AggregateDeltas(
        pass_rate_delta=_delta(base_figures.pass_rate, cand_figures.pass_rate),
        avg_score_delta=_delta(base_figures.avg_score, cand_figures.avg_score),
        latency_avg_delta_ms=_delta(base_figures.latency_avg_ms, cand_figures.latency_avg_ms),
        latency_p95_delta_ms=_delta(base_figures.latency_p95_ms, cand_figures.latency_p95_ms),
        cost_delta_usd=None if cost_not_comparable(base_figures, cand_figures)
        else _delta(base_figures.cost_usd, cand_figures.cost_usd, 6),
        total_regressions=counts["regression"], total_improvements=counts["improvement"],
        total_unchanged=counts["unchanged"], total_errors=counts["error"],
        per_metric_aggregate_deltas=metric_aggregate_deltas(*metric_rows))
    summary = candidate.summary
    gates = CandidateGates(
        metrics_passed=summary.metrics_passed if summary else None,
        cases_passed=summary.cases_passed if summary else None,
        passed=summary.passed if summary else None,
        gate_failures=list(summary.gate_failures) if summary else [])
    return Comparison(
        baseline_run_id=baseline.id, candidate_run_id=candidate.id, policy=policy.name,
        matched_only=options.matched_only, baseline=base_figures, candidate=cand_figures,
        aggregate=deltas, verdict=verdict, test_case_comparisons=cases,
        baseline_only_test_cases=only_base, candidate_only_test_cases=only_cand,
        significance=significance, config_diff=diff, comparable=not found,
        comparability=[d.text for d in found], differences=found, candidate_gates=gates,
        warnings=_warnings(baseline, candidate, diff, found)
        + _cost_warnings(base_figures, cand_figures, options))


def load_run(store: Any, run_id: str, role: str) -> tuple[RunRecord, list[CaseRecord]]:
    """A stored run and its case records as figures need them (read light: no transcripts,
    traces or outputs), or RunNotFound naming ``role``."""
    try:
        record = store.run_record(run_id)
    except StoreError as exc:
        if exc.message.startswith("no run"):
            raise RunNotFound(role, run_id) from None
        raise
    return record, store.case_records(record.id, light=True)


def compare_stored(store: Any, baseline: str, candidate: str,
                   options: CompareOptions | None = None,
                   candidate_store: Any = None) -> Comparison:
    """Compare two runs of ``store`` by id (a unique prefix will do); the candidate is read
    from ``candidate_store`` when given. An unfinished run is refused first as
    :class:`RunNotCompleted` (the baseline first), unless allowed."""
    options = options or CompareOptions()
    base, before = load_run(store, baseline, "baseline")
    cand, after = load_run(candidate_store or store, candidate, "candidate")
    if not options.allow_incomplete:
        for role, run in (("baseline", base), ("candidate", cand)):
            if run.status is not RunStatus.COMPLETED:
                raise RunNotCompleted(role, run.id, run.status.value)
    return compare_records(base, cand, before, after, options)


def compare(baseline: Any, candidate: Any, *, store: Any = None,
            thresholds: CompareThresholds | dict[str, Any] | None = None,
            **options: Any) -> Comparison:
    """Compare two stored runs, each named by its id (a unique prefix will do) or by the
    result that made it: :func:`assay.compare`.

    ``store`` is a store URL, a SQLite path or a RunStore; None: the results' store, else
    the default store;
    ``options`` are :class:`CompareOptions` fields (``matched_only``,
    ``require_significance``, ``missing_is_regression``, ``allow_incomplete``,
    ``allow_different_cases``, ``allow_different_evaluators``, ``allow_different_judge``,
    ``allow_different_scoring``). Raises :class:`RunNotFound`, :class:`RunNotCompleted`,
    :class:`IncomparableRuns` and ConfigError for bad options.
    """
    try:
        parsed = CompareOptions.model_validate({**options, "thresholds": thresholds or {}})
    except ValueError as exc:
        raise ConfigError(f"comparison options: {exc}") from None
    from assay.store.runs import run_id_of

    before, after = _stores(baseline, candidate, store)
    try:
        return compare_stored(before, run_id_of(baseline), run_id_of(candidate), parsed,
                              after)
    except RunNotCompleted as exc:  # named as this function takes it, not as the CLI's flag
        raise RunNotCompleted(exc.role, exc.run_id, exc.status,
                              _keyword("allow_incomplete")) from None
    except IncomparableRuns as exc:
        raise IncomparableRuns(exc.differences, exc.nothing_shared, _keyword) from None


def _stores(baseline: Any, candidate: Any, store: Any) -> tuple[Any, Any]:
    """Where each run is read: two results (not ids) from their own stores, since two runs
    kept in memory (``store=":memory:"``) are never in one store; else the one store that
    holds both (:func:`~assay.store.runs.store_for`)."""
    from assay.store.runs import store_for

    results = [r for r in (baseline, candidate) if not isinstance(r, str)]
    if store is None and len(results) == 2 and all(r.store is not None for r in results):
        return baseline.store, candidate.store
    runs = store_for([baseline, candidate], store)
    return runs, runs


def _keyword(allow: str) -> str:
    """An option that allows a difference, as :func:`compare` takes it."""
    return f"{allow}=True"


# -- the parts ----------------------------------------------------------------------------


MetricValues = dict[str, tuple[float, bool]]
"""metric -> (value, binary): a 0-5 score, or for a binary metric 5 (passed) or 0."""


def metric_values(record: CaseRecord) -> MetricValues:
    """The multi-metric judge's 0-5 metric scores in a case record (binary as 5 or 0)."""
    for score in record.scores:
        details = score.details or {}
        if score.value is not None and "metric_scores" in details:
            return {m["metric"]: (float(m["score"]), bool(m.get("is_binary")))
                    for m in details["metric_scores"]}
    return {}


def _mean_metrics(records: list[CaseRecord]) -> MetricValues:
    per_metric: dict[str, list[float]] = defaultdict(list)
    binary: dict[str, bool] = {}
    for record in records:
        for metric, (value, is_binary) in metric_values(record).items():
            per_metric[metric].append(value)
            binary[metric] = is_binary
    return {m: (statistics.fmean(v), binary[m]) for m, v in per_metric.items()}


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


def verdict(baseline: RunFigures, candidate: RunFigures,
            thresholds: CompareThresholds | None = None,
            pairs: LatencyPairs | None = None) -> ComparisonVerdict:
    """The regression verdict of the default rules on two runs' figures (see
    :func:`assay.run.policies.base.run_regressions`)."""
    from assay.run.policies.base import run_regressions

    t = thresholds or CompareThresholds()
    details = run_regressions(baseline, candidate, pairs or LatencyPairs([], []), t)
    return ComparisonVerdict(regression_detected=bool(details),
                             reasons=[r.text for r in details], thresholds_used=t.used(),
                             reason_details=details)


def case_status(baseline_passed: bool | None, candidate_passed: bool | None,
                baseline_score: float | None, candidate_score: float | None,
                baseline_error: bool = False, candidate_error: bool = False,
                scoring: str = "connexity") -> tuple[Status, float | None]:
    """A matched case's status under ``scoring``'s rule, and its score delta (2 places);
    scores on the 0-100 scale."""
    policy = policy_for(RunConfig(scoring=scoring))
    before = CaseSide(records=[], errored=baseline_error, passed=bool(baseline_passed),
                      score=baseline_score)
    after = CaseSide(records=[], errored=candidate_error, passed=bool(candidate_passed),
                     score=candidate_score)
    return policy.case_status(before, after), _delta(baseline_score, candidate_score, 2)


def _weigh(details: list[Reason], significance: dict[str, PairedComparison],
           options: CompareOptions) -> ComparisonVerdict:
    """Attach each reason's test; with ``require_significance``, reasons that are not
    significant stop counting."""
    alpha = options.require_significance
    for reason in details:
        test = significance.get(reason.significance or "")
        if test is not None:
            reason.p_value = test.p_value
            reason.significant = test.significant
        if alpha is not None and not reason.significant:
            reason.counted, reason.tag = False, "not_significant"
    counted = [r for r in details if r.counted]
    return ComparisonVerdict(regression_detected=bool(counted),
                             reasons=[r.text for r in counted],
                             thresholds_used=options.thresholds.used(),
                             reason_details=details, require_significance=alpha)


def _warnings(baseline: RunRecord, candidate: RunRecord, diff: ConfigDiff,
              found: list[Difference]) -> list[str]:
    """What a reader of the comparison should know before trusting it: allowed differences,
    suites that changed, and a run compared with itself (a mistyped id, most often), which
    can only ever say "no regression"."""
    warnings = [f"{d.text} (allowed)" for d in found]
    if baseline.id == candidate.id:
        warnings.append(f"the baseline and the candidate are the same run ({baseline.id}): "
                        "nothing can differ")
    eval_set = diff.eval_set
    if not eval_set.same_suite:
        warnings.append(f"the runs are of different suites ({baseline.suite!r} and "
                        f"{candidate.suite!r}): comparison is based on overlapping test case "
                        "IDs only")
    elif eval_set.added or eval_set.removed:
        versions = f"{eval_set.baseline_version or '?'} → {eval_set.candidate_version or '?'}"
        warnings.append(f"Eval config versions differ ({versions}): "
                        f"{len(eval_set.removed)} removed, {len(eval_set.added)} added.")
    elif eval_set.version_changed and not _judged_the_same_outputs(baseline, candidate):
        warnings.append(f"the suite changed between the runs ({eval_set.baseline_version} → "
                        f"{eval_set.candidate_version})")
    if diff.prompt_diff.changed:
        warnings.append(f"the agent's system prompt changed "
                        f"({numbers.percent(diff.prompt_diff.change_ratio)} of its lines)")
    if diff.tools_diff.changed:
        warnings.append("the agent's tools changed")
    return warnings


def _cost_warnings(before: RunFigures, after: RunFigures,
                   options: CompareOptions) -> list[str]:
    """Why the runs' costs are not compared (:func:`cost_not_comparable`), and that a cost
    gate asked for was not checked: a gate that could not be checked must not read as
    passed."""
    why = cost_not_comparable(before, after)
    if why is None:
        return []
    gate = options.thresholds.max_cost_increase_pct
    unchecked = "" if gate is None else \
        f"; the cost gate (a rise over {numbers.percent(gate)}) was not checked"
    return [f"the cost is not compared: {why}{unchecked}"]


def _judged_the_same_outputs(baseline: RunRecord, candidate: RunRecord) -> bool:
    """Whether one run re-judged the other's stored outputs (``assay rescore``), or both
    re-judged one run's: their suites' fingerprints differ only because a rescore's cases
    carry the recorded outputs, so "the suite changed" would be false."""
    def source(run: RunRecord) -> str:
        return str((run.config.model_extra or {}).get("rescored_from") or run.id)

    return source(baseline) == source(candidate)


def _by_case(records: Sequence[CaseRecord]) -> dict[str, list[CaseRecord]]:
    grouped: dict[str, list[CaseRecord]] = defaultdict(list)
    for record in records:
        grouped[record.case_id].append(record)
    return dict(grouped)


_PAIR_KINDS: dict[str, Literal["binary", "numeric"]] = {
    "cases": "binary", "score": "numeric", "latency": "numeric"}
"""The test each paired figure takes whatever its values: a latency of 0 or 1 ms or a score
of 0 or 1 is a number, never a pass/fail (a metric's test still follows its values)."""


def _pair(pair: tuple[list[float], list[float]], x: float | None, y: float | None) -> None:
    if x is not None and y is not None:
        pair[0].append(x)
        pair[1].append(y)


def _delta(before: float | None, after: float | None, places: int = 4) -> float | None:
    if before is None or after is None:
        return None
    value = round(after - before, places)
    return value if math.isfinite(value) else None


def _named(keys: set[str]) -> str:
    """A few case ids, quoted so that control characters in an id show as escapes."""
    shown = ", ".join(repr(key) for key in sorted(keys)[:EXAMPLES])
    more = len(keys) - EXAMPLES
    return shown + (f" and {more} more" if more > 0 else "")


__all__ = ["CaseComparison", "CompareOptions", "CompareThresholds", "Comparison",
           "ComparisonVerdict", "Difference", "IncomparableRuns", "RunComparison",
           "RunFigures", "RunNotCompleted", "RunNotFound", "case_status", "compare",
           "compare_records", "compare_stored", "figures", "load_run",
           "metric_aggregate_deltas", "metric_deltas", "policy_of", "verdict"]
