"""The Connexity policy (``scoring: connexity``): expected outcomes decide each case.

A case's verdict is boolean: it passes iff the multi-metric judge passed it (every expected
outcome passed, or without outcomes ``overall_score >= pass_threshold``) and every other
evaluator that produced a value passed too (a deterministic tool-call check, say); it is an
error when any evaluator could not score it. The case's score is the judge's
``overall_score`` (0-100, and /100 on assay's 0-1 scale); a failed judge call leaves it with
none, so it never enters the mean as a 0. ``connexity_compat`` reproduces the platform's own
numbers instead: a judge failure counts as a failed case scored 0.

A run is gated on its two dimensions (:mod:`assay.run.policies.dimensions`), 80 and 100 by
default, which replace the count gates. Two runs compare case by case on the 0-100 score: a
pass flip, else a move of more than 5 points (exactly 5 is unchanged).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from assay.registry import scoring_policy
from assay.run.policies.base import CaseOutcome, RunFold, Scale, ScoringPolicy
from assay.run.policies.dimensions import dimension_failures
from assay.types.records import RunSummary, Verdict
from assay.types.score import Score

if TYPE_CHECKING:
    from assay.judges.base import Evaluator
    from assay.suites.model import Suite
    from assay.types.config import RunConfig

JUDGE_TYPE = "connexity_judge"
TARGET_CODES = frozenset({"target_failed", "invalid_output"})
"""Error codes that mean the agent produced nothing to judge: errors in every mode."""


@scoring_policy
class ConnexityPolicy(ScoringPolicy):
    """Expected outcomes as the case gate, 0-100 scores, two run dimensions."""

    name: ClassVar[str] = "connexity"
    scale: ClassVar[Scale] = Scale(name="overall score", top=100)
    case_change: ClassVar[float | None] = 5.0

    def case_outcome(self, evaluators: Sequence[Evaluator],
                     scores: Sequence[Score]) -> CaseOutcome:
        return case_outcome(evaluators, scores, self.config.connexity_compat)

    def fold(self, suite: Suite) -> RunFold:
        return DimensionGates(self.config)


class DimensionGates(RunFold):
    """The two dimensions (and the error budget) replace the count gates."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config

    def finish(self, summary: RunSummary, failures: list[str]) -> None:
        summary.gate_failures = list(failures) + dimension_failures(summary, self.config)
        summary.passed = not summary.gate_failures


def case_outcome(evaluators: Sequence[Evaluator], scores: Sequence[Score],
                 compat: bool = False) -> CaseOutcome:
    """A case's 0-1 score, verdict and 0-100 overall score (see the module docstring);
    ``compat``: a failed judge call is the platform's 0 and a failed case."""
    overall: float | None = None
    judged = False
    errors = 0
    failed = False
    values: list[tuple[float, float]] = []
    for evaluator, score in zip(evaluators, scores, strict=True):
        primary = evaluator.type == JUDGE_TYPE and not judged
        if score.error is not None:
            if primary and compat and score.error.code not in TARGET_CODES:
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
        return CaseOutcome(None, Verdict.ERROR)
    if overall is not None:
        value: float | None = overall / 100
    else:
        total = sum(weight for _, weight in values)
        value = sum(v * w for v, w in values) / total if total > 0 else None
    if value is None and not judged:
        return CaseOutcome(None, Verdict.SKIPPED if scores else Verdict.ERROR)
    return CaseOutcome(value, Verdict.FAIL if failed else Verdict.PASS, overall)


__all__ = ["JUDGE_TYPE", "ConnexityPolicy", "DimensionGates", "case_outcome"]
