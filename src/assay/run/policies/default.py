"""The default policy (AgentV's and UiPath's way): a weighted mean in verdict bands.

A case's score is the weighted mean of its evaluators' values (errors and skips left out,
never counted as 0; weight 0 reports without counting); its verdict is the band of that mean
(``pass`` from 0.8, ``borderline`` from 0.6, else ``fail``, or the run's ``thresholds``),
except that a ``blocking`` score (a required check that did not pass) fails it whatever the
mean. No value: ``error`` when any evaluator errored (or there were none), ``skipped`` when
none applied.

A run passes its count gates (``max_failed``, ``max_errors``, ``min_mean_score``) and the
run dimensions when it sets them. Two runs compare case by case as AgentV does: a verdict
change, or a score move of at least 0.1 (10 points).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from assay.registry import scoring_policy
from assay.run.policies.base import CaseOutcome, RunFold, ScoringPolicy, weighted_mean
from assay.run.policies.dimensions import dimension_failures
from assay.types import numbers
from assay.types.records import FailedCases, RunSummary, Verdict
from assay.types.score import Score
from assay.types.verdict import reaches

if TYPE_CHECKING:
    from assay.judges.base import Evaluator
    from assay.suites.model import Suite
    from assay.types.config import RunConfig


@scoring_policy
class DefaultPolicy(ScoringPolicy):
    """Weighted mean, verdict bands, required checks; count gates."""

    name: ClassVar[str] = "default"
    case_change: ClassVar[float | None] = 10.0
    case_change_inclusive: ClassVar[bool] = True

    def case_outcome(self, evaluators: Sequence[Evaluator],
                     scores: Sequence[Score]) -> CaseOutcome:
        value, valued, errors = weighted_mean(evaluators, scores)
        if value is None:
            if valued:  # every value weighed 0: nothing to band
                return CaseOutcome(None, Verdict.ERROR)
            return CaseOutcome(None, Verdict.ERROR if errors or not scores else Verdict.SKIPPED)
        verdict = self.config.thresholds.verdict(value)
        if any(s.blocking for s in scores):
            verdict = Verdict.FAIL
        return CaseOutcome(value, verdict)

    def fold(self, suite: Suite) -> RunFold:
        return CountGates(self.config)


class CountGates(RunFold):
    """The default run gates: failed cases, evaluator errors and the mean score, beside the
    run dimensions when the run sets them."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config

    def finish(self, summary: RunSummary, failures: list[str]) -> None:
        failures = list(failures) + dimension_failures(summary, self.config)
        failures += count_gate_failures(summary, self.config)
        summary.gate_failures = failures
        summary.passed = not failures


def count_gate_failures(summary: RunSummary, config: RunConfig) -> list[str]:
    """The gates of ``config.gates`` that ``summary`` fails. ``max_failed`` counts cases,
    not executions: with repeats a case fails when any of its repeats failed, and counts
    once (:meth:`RunSummary.failed_cases`), so ``--repeat 3`` does not turn one failing case
    into three."""
    gates = config.gates
    failures: list[str] = []
    failed = summary.failed_cases()
    if gates.max_failed is not None and failed.cases > gates.max_failed:
        failures.append(_failed_text(summary, failed, gates.max_failed))
    if gates.max_errors is not None and summary.evaluator_errors > gates.max_errors:
        unscored = summary.count(Verdict.ERROR)
        what = "execution(s)" if summary.case_summary else "case(s)"  # repeats: executions
        failures.append(
            f"{summary.evaluator_errors} evaluator score(s) could not be computed, "
            f"{unscored} {what} left with no score (allowed {gates.max_errors} errors)")
    if gates.min_mean_score is not None and (
            summary.mean_score is None or not reaches(summary.mean_score, gates.min_mean_score)):
        failures.append(f"mean score {numbers.score(summary.mean_score)} is below the gate "
                        f"{numbers.score(gates.min_mean_score)}")
    return failures


def _failed_text(summary: RunSummary, failed: FailedCases, allowed: int) -> str:
    """``1 case failed (allowed 0)``; with repeats, how many of those cases' repeats failed:
    ``1 case failed (3 of 3 repeats; allowed 0)``."""
    cases = f"{numbers.count_of(failed.cases, 'case')} failed"
    if not summary.case_summary:
        return f"{cases} (allowed {numbers.count(allowed)})"
    return (f"{cases} ({numbers.count(failed.executions)} of {numbers.count(failed.of)} "
            f"repeats; allowed {numbers.count(allowed)})")


__all__ = ["CountGates", "DefaultPolicy", "count_gate_failures"]
