"""A score: a value in [0, 1], an error, or not applicable; and the verdict bands."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from assay.types import numbers
from assay.types.base import JSONValue, _Model
from assay.types.usage import Usage
from assay.types.verdict import BORDERLINE_AT, PASS_AT, Verdict, band


class ScoreError(_Model):
    """Why a score has no value. ``code`` is stable and machine-readable."""

    code: str
    message: str


class ScoreState(StrEnum):
    """What a score holds: a value, an error, or nothing because it did not apply."""

    VALUE = "value"
    ERROR = "error"
    SKIPPED = "skipped"


Outcome = Literal["error", "measured", "not applicable", "failed", "passed", "scored"]
"""What became of an evaluator on a case (:attr:`Score.outcome`)."""

NOT_APPLICABLE: Final = "not applicable"
"""What every surface calls a score that is neither a value nor an error (its evaluator did
not apply to the case; ``Score.skipped`` holds why): one score's outcome, and the heading of
every count of them (:func:`assay.run.display.score_counts`). A case's *verdict* ``skipped``
(no evaluator applied to it at all) is another thing, counted in cases or executions."""

MEASUREMENT = "measurement"
"""The ``details`` key that marks a score as a measurement (see :attr:`Score.measurement`)."""


class Score(_Model):
    """One evaluator's judgement of one execution.

    Exactly one of ``value``, ``error`` and ``skipped`` is set. A skipped score is "not
    applicable" (a judge whose inputs the case does not have): neither a failure nor an error,
    and outside every mean and every error count. ``raw`` and ``scale`` keep what the judge
    natively said (``87`` on ``"0-100"``) beside the normalised value (``0.87``). ``parts``
    holds named sub-judgements that make this score up (composite members, named guideline
    groups, several feedbacks of one scorer), each a full score of its own. ``blocking`` is
    the one way any evaluator says "this case fails, whatever the others say"; composites pass
    it on from their members.
    """

    name: str
    value: float | None = None
    raw: JSONValue = None
    scale: str | None = None
    label: str | None = None
    passed: bool | None = None
    blocking: bool = Field(
        default=False, description="this score fails its case whatever the case's mean: a "
        "required check that did not pass (or could not run)")
    rationale: str | None = None
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    details: dict[str, Any] | None = None
    error: ScoreError | None = None
    skipped: str | None = Field(default=None, description="why the evaluator did not apply")
    parts: list[Score] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float | None = None
    judge_model: str | None = None

    @field_validator("value")
    @classmethod
    def _in_unit_range(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"score value must be within [0, 1], got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_state(self) -> Score:
        states = (self.value is not None) + (self.error is not None) + (self.skipped is not None)
        if states == 0:
            raise ValueError("a score needs a value, an error or a skip reason")
        if states > 1:
            raise ValueError("a score holds exactly one of a value, an error and a skip reason")
        if self.value is None:
            self.passed = None
        elif self.blocking:
            self.passed = False  # a score that fails its case does not pass itself
        return self

    @property
    def measurement(self) -> bool:
        """Whether this is a measurement: a value off the 0-1 scale (a length, a 1-5
        rating, a category) from a judge or scorer that declared it measures, kept as
        ``raw`` and aggregated as it is. It is not applicable as a score, so it counts in no
        verdict and no mean of scores, and is counted apart from skips."""
        return bool(self.details and self.details.get(MEASUREMENT))

    @property
    def state(self) -> ScoreState:
        if self.value is not None:
            return ScoreState.VALUE
        return ScoreState.ERROR if self.error is not None else ScoreState.SKIPPED

    @property
    def outcome(self) -> Outcome:
        """What became of the evaluator on its case, as every surface names it: ``error``,
        ``measured`` (a measurement is no skip: it is counted apart), ``not applicable``,
        ``failed``, ``passed`` or ``scored`` (a value no threshold held)."""
        if self.error is not None:
            return "error"
        if self.measurement:
            return "measured"
        if self.value is None:
            return NOT_APPLICABLE
        return "failed" if self.passed is False else "passed" if self.passed else "scored"

    @property
    def shown(self) -> str:
        """The score as every surface shows it: ``0.850``, ``error CODE``, ``measured 12``
        or ``n/a`` (:func:`assay.types.numbers.outcome`)."""
        return numbers.outcome(self.value, None if self.error is None else self.error.code,
                               self.skipped is not None, self.measurement, self.raw)

    @property
    def ok(self) -> bool:
        """True unless the score is an error (a value, failing or not, or a skip)."""
        return self.error is None

    @classmethod
    def failed(
        cls, name: str, code: str, message: str, **extra: Any
    ) -> Score:
        """A score that could not be computed; it never counts as 0."""
        return cls(name=name, error=ScoreError(code=code, message=message), **extra)

    @classmethod
    def not_applicable(cls, name: str, reason: str, **extra: Any) -> Score:
        """A score for an evaluator that did not apply (its inputs are missing): no call was
        made, and it is neither a failure nor an error."""
        return cls(name=name, skipped=reason, **extra)


class CaseScore(Score):
    """An evaluator's score of a case judged on its own (:func:`assay.score`), with what the
    run's scoring policy makes of that case: its ``verdict`` and its ``case_score`` (0-1;
    None when nothing scored it). ``passed`` stays the evaluator's own pass."""

    verdict: Verdict
    case_score: float | None = None

    @classmethod
    def of(cls, score: Score, verdict: Verdict, case_score: float | None) -> CaseScore:
        """``score`` with its case's verdict and score (the score is not validated again)."""
        return cls.model_construct(**dict(score), verdict=verdict, case_score=case_score)


def verdict_band(score: Score, borderline_at: float = BORDERLINE_AT) -> str:
    """One evaluator's verdict as AgentV reports it: ``pass``, ``borderline`` or ``fail``
    (``error`` and ``skipped`` for scores without a value).

    A score that passed its evaluator's threshold (0.8 unless set) is a pass; one that did
    not is borderline from ``borderline_at`` (0.6) up, unless it blocks its case (a required
    check), else a fail. A score with no pass/fail of its own is banded at 0.8 and 0.6.
    """
    if score.error is not None:
        return "error"
    if score.value is None:
        return "skipped"
    if score.passed is True:
        return "pass"
    banded = band(score.value, PASS_AT if score.passed is None else 2.0, borderline_at)
    if score.blocking and banded is Verdict.BORDERLINE:
        return "fail"
    return banded.value
