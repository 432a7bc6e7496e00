"""The Databricks/MLflow policy: per-judge yes/no, the overall assessment, named aggregates.

A run takes this policy when it sets any agent-judge option (``naming``, ``judges``,
``global_guidelines``, ``quality_criteria``) or ``scoring: databricks``.

A case's verdict is what Databricks would say of the row:

- ``fail`` when its overall assessment is "no" (a yes/no judge said no) or another check of
  it failed (a bool scorer returned false, a value does not meet its ``pass_if``);
- else ``error`` when a score of it is an error;
- else ``pass`` when a check of it passed (the overall assessment is "yes");
- a case with no check at all (numbers with no ``pass_if``) is banded as the default policy
  bands it, since a number is not a check.

Its score is the weighted mean of its values, shown beside the verdict. The run passes by the
pass rule or the quality criteria (:mod:`.fold`), with the count gates the options leave on.
Two runs compare case by case on the verdict alone: a row whose overall assessment flipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from assay.registry import scoring_policy
from assay.run.policies.base import CaseOutcome, RunFold, ScoringPolicy, weighted_mean
from assay.run.policies.databricks import options
from assay.run.policies.default import count_gate_failures
from assay.run.policies.dimensions import dimension_failures
from assay.types.records import CaseRecord, RunSummary, Verdict
from assay.types.score import Score

if TYPE_CHECKING:
    from assay.judges.base import Evaluator
    from assay.run.policies.databricks.fold import AssessmentFold
    from assay.suites.model import Suite
    from assay.types.config import RunConfig


@scoring_policy
class DatabricksPolicy(ScoringPolicy):
    """Databricks Agent Evaluation's and MLflow 3's way of judging a run."""

    name: ClassVar[str] = "databricks"
    case_change: ClassVar[float | None] = None
    unanswered_is_missing: ClassVar[bool] = True
    """A row with no ``response`` (and no agent) is unanswered, as ``"response": null`` is:
    Databricks reports its judges' missing input, never a failed target."""

    def prepare(self, suite: Suite) -> tuple[Suite, RunConfig]:
        if not options.active(self.config):
            return suite, self.config
        from assay.run.policies.databricks import setup

        return setup.prepare(suite, self.config)

    def case_outcome(self, evaluators: Sequence[Evaluator],
                     scores: Sequence[Score]) -> CaseOutcome:
        value, valued, errors = weighted_mean(evaluators, scores)
        failed = passed = False
        for score in _judgements(scores):
            check = _check(score)
            if check is False:
                failed = True
            elif check is True:
                passed = True
        if failed:
            return CaseOutcome(value, Verdict.FAIL)
        if errors:
            return CaseOutcome(value, Verdict.ERROR)
        if passed:
            return CaseOutcome(value, Verdict.PASS)
        if value is None:
            return CaseOutcome(None, Verdict.ERROR if valued or not scores else Verdict.SKIPPED)
        return CaseOutcome(value, self.config.thresholds.verdict(value))

    def fold(self, suite: Suite) -> RunFold:
        from assay.run.policies.databricks.setup import assessment_fold

        return PassRule(self.config, assessment_fold(suite, self.config))


def _judgements(scores: Sequence[Score]) -> list[Score]:
    """The scores a verdict reads: each score, or each named part of a score made of them
    (guideline groups, several feedbacks of one scorer)."""
    found: list[Score] = []
    for score in scores:
        if score.parts and (score.details or {}).get("parts_are_assessments"):
            found.extend(score.parts)
        else:
            found.append(score)
    return found


def _check(score: Score) -> bool | None:
    """Whether a score is a check that passed (True), failed (False), or no check (None)."""
    if score.value is None:
        return None
    details = score.details or {}
    if "pass_if" in details:
        return bool(details["pass_if"])
    if score.label in ("yes", "no"):
        return score.label == "yes"
    if score.scale == "label" and score.passed is not None:  # a judge's category
        return score.passed
    if score.scale in ("yes/no", "bool"):
        return score.value == 1.0
    if score.blocking:
        return False
    return None


class PassRule(RunFold):
    """The agent-judge aggregates, the pass rule or quality criteria, and the gates left on."""

    def __init__(self, config: RunConfig, assessments: AssessmentFold | None) -> None:
        self.config = config
        self.assessments = assessments

    def add(self, record: CaseRecord) -> None:
        if self.assessments is not None:
            self.assessments.add(record)

    def finish(self, summary: RunSummary, failures: list[str]) -> None:
        failures = list(failures) + dimension_failures(summary, self.config)
        failures += count_gate_failures(summary, self.config)
        summary.gate_failures = failures
        summary.passed = not failures
        if self.assessments is not None:
            self.assessments.finish(summary)


__all__ = ["DatabricksPolicy", "PassRule"]
