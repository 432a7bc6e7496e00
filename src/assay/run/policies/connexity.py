"""Case verdicts and run dimensions under ``scoring: connexity``.

A case's verdict is boolean: it passes iff the multi-metric judge passed it (every expected
outcome passed, or without outcomes ``overall_score >= pass_threshold``) and every other
evaluator that produced a value passed too (a deterministic tool-call check, say); it is an
error when any evaluator could not score it. The case's score is the judge's
``overall_score`` (0-100, and /100 on assay's 0-1 scale); a failed judge call leaves it with
none, so it never enters the mean as a 0. ``connexity_compat`` reproduces the platform's own
numbers instead: a judge failure counts as a failed case scored 0.

A run has two independent dimensions, each a percentage checked inclusively against its
threshold: the mean case score of the executions that have one (metrics), and the passed
executions over all executions, errors counting as not passed (cases). Either can fail the run
alone; a dimension with no value (no case scored) never fails it by itself. An optional error
budget (``max_error_rate``) is a third, separate gate.
"""

from __future__ import annotations

from assay.judges.base import Evaluator
from assay.types.config import RunConfig
from assay.types.records import RunSummary, Verdict
from assay.types.score import Score

JUDGE_TYPE = "connexity_judge"
TARGET_CODES = frozenset({"target_failed", "invalid_output"})
"""Error codes that mean the agent produced nothing to judge: errors in every mode."""


def is_connexity(config: RunConfig) -> bool:
    return config.scoring == "connexity"


def case_outcome(evaluators: list[Evaluator], scores: list[Score], config: RunConfig
                 ) -> tuple[float | None, Verdict, float | None]:
    """(score 0-1, verdict, overall_score 0-100) of a case under the Connexity policy."""
    overall: float | None = None
    judged = False
    errors = 0
    failed = False
    values: list[tuple[float, float]] = []
    for evaluator, score in zip(evaluators, scores, strict=True):
        primary = evaluator.type == JUDGE_TYPE and not judged
        if score.error is not None:
            if primary and config.connexity_compat and score.error.code not in TARGET_CODES:
                judged, overall, failed = True, 0.0, True  # the platform's 0, as a failure
                continue
            errors += 1
            continue
        if score.value is None:  # not applicable
            continue
        if primary:
            judged = True
            overall = float(score.raw) if isinstance(score.raw, int | float) and \
                not isinstance(score.raw, bool) else score.value * 100
        values.append((score.value, evaluator.weight))
        passes = score.passed if score.passed is not None else evaluator.verdict(score.value)
        if score.blocking or not passes:
            failed = True
    if errors:
        return None, Verdict.ERROR, None
    if overall is not None:
        value: float | None = overall / 100
    else:
        total = sum(weight for _, weight in values)
        value = sum(v * w for v, w in values) / total if total > 0 else None
    if value is None and not judged:
        return None, (Verdict.SKIPPED if scores else Verdict.ERROR), None
    return value, (Verdict.FAIL if failed else Verdict.PASS), overall


def apply_run_thresholds(summary: RunSummary, config: RunConfig) -> list[str]:
    """Record the run's dimensions in ``summary`` and return the gates they fail."""
    thresholds = config.run_thresholds
    summary.scoring = config.scoring or "default"
    summary.metrics_pass_threshold = thresholds.metrics_pass_threshold
    summary.cases_pass_threshold = thresholds.cases_pass_threshold
    summary.max_error_rate = thresholds.max_error_rate
    failures: list[str] = []
    metrics = summary.weighted_metrics_score_pct
    if thresholds.metrics_pass_threshold is not None and metrics is not None:
        summary.metrics_passed = metrics >= thresholds.metrics_pass_threshold
        if not summary.metrics_passed:
            failures.append(f"metrics dimension: mean score {metrics:.2f} is below the "
                            f"threshold {thresholds.metrics_pass_threshold:g}")
    cases = summary.cases_pass_rate_pct
    if thresholds.cases_pass_threshold is not None and cases is not None:
        summary.cases_passed = cases >= thresholds.cases_pass_threshold
        if not summary.cases_passed:
            failures.append(
                f"cases dimension: {cases:.2f}% of {summary.total_executions} execution(s) "
                f"passed ({summary.error_count} errored), below the threshold "
                f"{thresholds.cases_pass_threshold:g}%")
    rate = summary.error_rate
    if thresholds.max_error_rate is not None and rate is not None and \
            rate > thresholds.max_error_rate:
        failures.append(f"error rate {rate:.2%} is above the budget "
                        f"{thresholds.max_error_rate:.2%}")
    return failures


__all__ = ["apply_run_thresholds", "case_outcome", "is_connexity"]
