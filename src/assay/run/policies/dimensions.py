"""The run dimensions (Connexity's): two independent percentages, each checked inclusively
against its threshold, and an error budget.

The metrics dimension is the mean case score (0-100) of the executions that have one; the
cases dimension is passed executions over all executions (an error is not a pass). Either can
fail the run alone; a dimension with no value (no case scored) never fails it by itself. The
error budget (``max_error_rate``) is a third, separate gate. Any policy may gate on them: the
Connexity policy turns both on (80 and 100) by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.types import numbers
from assay.types.records import RunSummary
from assay.types.verdict import exceeds, reaches

if TYPE_CHECKING:
    from assay.types.config import RunConfig


def dimension_failures(summary: RunSummary, config: RunConfig) -> list[str]:
    """Record the run's dimensions in ``summary`` and return the gates they fail."""
    thresholds = config.run_thresholds
    summary.scoring = config.scoring or "default"
    summary.metrics_pass_threshold = thresholds.metrics_pass_threshold
    summary.cases_pass_threshold = thresholds.cases_pass_threshold
    summary.max_error_rate = thresholds.max_error_rate
    failures: list[str] = []
    metrics = summary.weighted_metrics_score_pct
    if thresholds.metrics_pass_threshold is not None and metrics is not None:
        summary.metrics_passed = reaches(metrics, thresholds.metrics_pass_threshold)
        if not summary.metrics_passed:
            failures.append(f"metrics dimension: mean score {numbers.points(metrics)} is below "
                            f"the threshold {numbers.points(thresholds.metrics_pass_threshold)}")
    cases = summary.cases_pass_rate_pct
    if thresholds.cases_pass_threshold is not None and cases is not None:
        summary.cases_passed = reaches(cases, thresholds.cases_pass_threshold)
        if not summary.cases_passed:
            failures.append(
                f"cases dimension: {numbers.percent(cases / 100)} of "
                f"{summary.total_executions} execution(s) passed ({summary.error_count} "
                f"errored), below the threshold "
                f"{numbers.percent(thresholds.cases_pass_threshold / 100)}")
    rate = summary.error_rate
    if thresholds.max_error_rate is not None and rate is not None and \
            exceeds(rate, thresholds.max_error_rate):
        failures.append(f"error rate {numbers.percent(rate)} is above the budget "
                        f"{numbers.percent(thresholds.max_error_rate)}")
    return failures


__all__ = ["dimension_failures"]
