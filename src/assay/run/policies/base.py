"""What a scoring policy decides, and the rules every policy shares.

A policy answers the questions a run is asked, in one place each:

- **the case**: :meth:`ScoringPolicy.case_outcome` turns a case's scores into its score (0-1),
  its verdict and, when the policy has one, its score on its own scale;
- **the run**: :meth:`ScoringPolicy.fold` folds the records as they complete and, at the end,
  records the policy's aggregates and the gates the run fails;
- **two runs**: :meth:`ScoringPolicy.case_status` says whether a case regressed, improved or
  stayed, and :meth:`ScoringPolicy.regressions` which whole-run changes are regressions;
- **people**: :attr:`ScoringPolicy.scale` names the case score and its scale for display.

The runner holds one policy per run; the comparison engine asks the candidate run's policy;
the CLI, the Python API, the REST API, the UI and the reports render what they decided. A
policy never changes the objects it is given (suites, evaluators, configs): it returns new
ones.
"""

from __future__ import annotations

import math
import statistics
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.types import numbers
from assay.types.records import CaseRecord, RunSummary, Verdict, case_latency, case_overall
from assay.types.score import Score
from assay.types.verdict import exceeds, reaches

if TYPE_CHECKING:
    from assay.judges.base import Evaluator
    from assay.suites.model import Suite
    from assay.types.config import RunConfig

Status = Literal["regression", "improvement", "unchanged", "error"]
"""A matched case's change between two runs."""

LATENCY_FLOOR_MS = 50.0
"""A latency change smaller than this is never a regression, however steady the runs."""
NOISE_SIGMAS = 2.0
"""A latency change must exceed this many standard errors of the paired differences."""


@dataclass(frozen=True)
class CaseOutcome:
    """A case's result under a policy: its 0-1 score (None: no value), its verdict, and its
    score on the policy's own scale when that differs (Connexity's 0-100 overall score)."""

    score: float | None
    verdict: Verdict
    native: float | None = None


@dataclass(frozen=True)
class Scale:
    """How a policy's case score is named and shown: on assay's 0-1 scale (``top`` None:
    ``0.850``), or on the policy's own 0-``top`` scale, labelled with it (``85.0 /100``).
    The digits are :mod:`assay.types.numbers`', as every number's are."""

    name: str = "score"
    top: float | None = None

    def shown(self, value: float | None) -> str:
        """A 0-1 value on this scale (``0.850``, ``85.0 /100``); ``-`` for none."""
        if self.top is None:
            return numbers.score(value)
        return numbers.points(None if value is None else value * self.top, self.top)


class RunFold(ABC):
    """A policy's view of one run, folded record by record as the run goes."""

    def add(self, record: CaseRecord) -> None:
        """See one completed case record (in completion order)."""

    @abstractmethod
    def finish(self, summary: RunSummary, failures: list[str]) -> None:
        """Record the policy's aggregates in ``summary`` and set its gate failures and
        ``passed``; ``failures`` are those found before (the calibration gate, an empty run)."""


class CompareThresholds(BaseModel):
    """When a candidate run regressed against its baseline; every check is a strict ``>``.

    Scores are compared on the 0-100 scale of every policy (5 points is 0.05 of a 0-1 score);
    the pass rate as a 0-1 fraction; latency and cost as a fraction of the baseline's.
    """

    model_config = ConfigDict(extra="forbid")

    max_pass_rate_drop: float = Field(default=0.0, ge=0, le=1, allow_inf_nan=False,
                                      description="a fraction of the 0-1 pass rate")
    max_avg_score_drop: float = Field(default=5.0, ge=0, le=100, allow_inf_nan=False,
                                      description="points of the 0-100 score")
    max_latency_increase_pct: float = Field(
        default=0.2, ge=0, allow_inf_nan=False,
        description="a fraction of the baseline's average latency (0.2 is 20%)")
    latency_floor_ms: float = Field(
        default=LATENCY_FLOOR_MS, ge=0, allow_inf_nan=False,
        description="a latency increase at most this many milliseconds is never a regression")
    max_cost_increase_pct: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="a fraction; None: not checked")

    @field_validator("max_latency_increase_pct", "max_cost_increase_pct", mode="before")
    @classmethod
    def _percent_text(cls, value: Any) -> Any:
        return parse_fraction(value) if isinstance(value, str) else value

    def used(self) -> dict[str, float]:
        used = {"max_pass_rate_drop": self.max_pass_rate_drop,
                "max_avg_score_drop": self.max_avg_score_drop,
                "max_latency_increase_pct": self.max_latency_increase_pct,
                "latency_floor_ms": self.latency_floor_ms}
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


class RunFigures(BaseModel):
    """A run's figures that a comparison weighs: the pass rate (0-1), the average case score
    on the 0-100 scale, agent latency and cost, and the counts behind them."""

    pass_rate: float | None = None
    avg_score: float | None = None
    latency_avg_ms: float | None = None
    latency_p95_ms: float | None = None
    latency_measured: int = Field(default=0, description="executions with a latency")
    cost_usd: float | None = Field(default=None, description="the costs that are known")
    cost_unknown: list[str] = Field(default_factory=list, description="the parts that spent "
                                    "at an unknown cost, which cost_usd leaves out")
    total_executions: int = 0
    passed_count: int = 0
    error_count: int = 0


class Reason(BaseModel):
    """A regression found on the runs' figures, with the paired test behind it."""

    check: str
    text: str
    counted: bool = True
    tag: Literal["counted", "not_significant"] = "counted"
    significance: str | None = Field(default=None, description="the key of its test in "
                                     "Comparison.significance")
    p_value: float | None = None
    significant: bool | None = None


@dataclass
class CaseSide:
    """One run's executions of one case, reduced: every execution passed (pass^k), the share
    that passed, the mean score on the 0-100 scale, and the mean agent latency."""

    records: list[CaseRecord]
    executions: int = 0
    errored: bool = False
    passed: bool = False
    pass_fraction: float = 0.0
    score: float | None = None
    latency_ms: float | None = None
    metrics: dict[str, tuple[float, bool]] = field(default_factory=dict)

    @classmethod
    def of(cls, records: list[CaseRecord]) -> CaseSide:
        passes = [r.verdict is Verdict.PASS for r in records]
        scores = [v for r in records if (v := case_overall(r)) is not None]
        latencies = [v for r in records if (v := case_latency(r.execution).p50_ms) is not None]
        return cls(records=records, executions=len(records),
                   errored=all(r.verdict is Verdict.ERROR for r in records),
                   passed=all(passes), pass_fraction=sum(passes) / len(passes),
                   score=statistics.fmean(scores) if scores else None,
                   latency_ms=statistics.fmean(latencies) if latencies else None)


@dataclass(frozen=True)
class LatencyPairs:
    """The agent latencies of the cases both runs measured, paired case by case."""

    baseline: Sequence[float]
    candidate: Sequence[float]


class ScoringPolicy(ABC):
    """How one kind of run is judged (see the module docstring). Subclasses are registered
    with :func:`assay.registry.scoring_policy` under :attr:`name`."""

    name: ClassVar[str] = ""
    scale: ClassVar[Scale] = Scale()
    case_change: ClassVar[float | None] = None
    """Points (0-100) a case's score must move, with no verdict change, to be a regression or
    an improvement; None: only a verdict change counts."""
    case_change_inclusive: ClassVar[bool] = False
    """Whether a move of exactly :attr:`case_change` counts (AgentV's ``>=``)."""
    unanswered_is_missing: ClassVar[bool] = False
    """Whether a case with no recorded answer and no agent to run is judged as unanswered
    (its judges' missing input) rather than failing as a target error."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config

    # -- the run ----------------------------------------------------------------------

    def prepare(self, suite: Suite) -> tuple[Suite, RunConfig]:
        """The suite and config this policy runs (new objects, never the given ones
        changed): the Databricks policy adds its judges here. Checked before any call."""
        return suite, self.config

    @abstractmethod
    def case_outcome(self, evaluators: Sequence[Evaluator],
                     scores: Sequence[Score]) -> CaseOutcome:
        """A case's score and verdict from its evaluators' scores (in evaluator order)."""

    @abstractmethod
    def fold(self, suite: Suite) -> RunFold:
        """A new fold for one run of ``suite``."""

    # -- two runs ---------------------------------------------------------------------

    def case_status(self, before: CaseSide, after: CaseSide) -> Status:
        """A matched case's change: ``error`` when either side has no result, a verdict
        flip, else a score move beyond :attr:`case_change` points."""
        if before.errored or after.errored:
            return "error"
        if before.passed and not after.passed:
            return "regression"
        if not before.passed and after.passed:
            return "improvement"
        if self.case_change is None or before.score is None or after.score is None:
            return "unchanged"
        change = after.score - before.score
        moved = reaches if self.case_change_inclusive else exceeds
        if moved(-change, self.case_change):
            return "regression"
        if moved(change, self.case_change):
            return "improvement"
        return "unchanged"

    def regressions(self, before: RunFigures, after: RunFigures, pairs: LatencyPairs,
                    thresholds: CompareThresholds) -> list[Reason]:
        """The whole-run changes that are regressions (see :func:`run_regressions`)."""
        return run_regressions(before, after, pairs, thresholds)


def run_regressions(before: RunFigures, after: RunFigures, pairs: LatencyPairs,
                    t: CompareThresholds) -> list[Reason]:
    """The regressions every policy checks, each a strict ``>`` against its threshold:

    - the pass rate dropped by more than ``max_pass_rate_drop``;
    - the average score (0-100) dropped by more than ``max_avg_score_drop`` points;
    - the agent got slower: see :func:`latency_regressed`;
    - the cost rose by more than ``max_cost_increase_pct`` (when set, and when both runs'
      costs are known in full: :func:`cost_not_comparable`).
    """
    found: list[Reason] = []
    b, c = before.pass_rate, after.pass_rate
    if b is not None and c is not None and exceeds(b - c, t.max_pass_rate_drop):
        found.append(Reason(check="pass_rate", significance="cases",
                            text=f"pass rate dropped {numbers.percent_points(b - c).lstrip('+')} "
                                 f"({numbers.percent(b)} → {numbers.percent(c)})"))
    b, c = before.avg_score, after.avg_score
    if b is not None and c is not None and exceeds(b - c, t.max_avg_score_drop):
        found.append(Reason(check="avg_score", significance="score",
                            text=f"average score dropped {numbers.points_delta(b - c).lstrip('+')} "
                                 f"({numbers.points(b)} → {numbers.points(c)})"))
    slower = latency_regressed(before, after, pairs, t)
    if slower is not None:
        found.append(slower)
    b, c = before.cost_usd, after.cost_usd
    if t.max_cost_increase_pct is not None and b is not None and c is not None and b > 0 and \
            cost_not_comparable(before, after) is None and \
            exceeds((c - b) / b, t.max_cost_increase_pct):
        found.append(Reason(check="cost", text=f"cost rose {numbers.percent((c - b) / b)} "
                                                f"({numbers.usd(b)} → {numbers.usd(c)})"))
    return found


def cost_not_comparable(before: RunFigures, after: RunFigures) -> str | None:
    """Why the two runs' costs cannot be compared, or None when they can: a run whose cost
    leaves out a part (an agent that reported no cost, a judge model with no known price)
    has only a partial sum, and a change of partial sums is no measured change of cost. The
    one rule of the cost's change, its regression and how every surface shows it."""
    unknown = [(role, figures.cost_unknown) for role, figures in
               (("baseline", before), ("candidate", after)) if figures.cost_unknown]
    if not unknown:
        return None
    sides = [f"the {role}'s {' and '.join(parts)} cost{'s' if len(parts) > 1 else ''}"
             for role, parts in unknown]
    plural = len(unknown) > 1 or len(unknown[0][1]) > 1
    return f"{' and '.join(sides)} {'are' if plural else 'is'} unknown"


def latency_regressed(before: RunFigures, after: RunFigures, pairs: LatencyPairs,
                      t: CompareThresholds) -> Reason | None:
    """A latency regression only when the agent is slower by more than all of: the relative
    threshold of the baseline's mean, the absolute floor, and the noise measured within the
    runs (``NOISE_SIGMAS`` standard errors of the case-by-case differences). Runs whose
    latencies were not measured (recorded outputs) have no latency to regress."""
    b, c = before.latency_avg_ms, after.latency_avg_ms
    if b is None or c is None or b <= 0:
        return None
    increase = c - b
    if not exceeds(increase / b, t.max_latency_increase_pct) or \
            not exceeds(increase, t.latency_floor_ms):
        return None
    diffs = [y - x for x, y in zip(pairs.baseline, pairs.candidate, strict=True)]
    noise = None
    if len(diffs) >= 2:
        noise = NOISE_SIGMAS * statistics.stdev(diffs) / math.sqrt(len(diffs))
        if statistics.fmean(diffs) <= noise:
            return None
    detail = f", noise ±{numbers.milliseconds(noise)}" if noise is not None and noise >= 1 \
        else ""
    return Reason(check="avg_latency", significance="latency",
                  text=f"average latency rose {numbers.percent(increase / b)} "
                       f"({numbers.milliseconds(b)} → {numbers.milliseconds(c)}{detail})")


def weighted_mean(evaluators: Sequence[Evaluator],
                  scores: Sequence[Score]) -> tuple[float | None, int, int]:
    """The weighted mean of the scores that have a value (errors and skips left out, never
    counted as 0; weight 0 reports without counting), with the counts of values and errors."""
    total_weight = weighted = 0.0
    valued = errors = 0
    for evaluator, score in zip(evaluators, scores, strict=True):
        if score.value is not None:
            valued += 1
            weighted += score.value * evaluator.weight
            total_weight += evaluator.weight
        elif score.error is not None:
            errors += 1
    if not valued or total_weight == 0:
        return None, valued, errors
    return weighted / total_weight, valued, errors


points = case_overall
"""The name a case's 0-100 score had here; the rule is :func:`assay.types.records.case_overall`."""

__all__ = ["LATENCY_FLOOR_MS", "CaseOutcome", "CaseSide", "CompareThresholds", "LatencyPairs",
           "Reason", "RunFigures", "RunFold", "Scale", "ScoringPolicy", "Status",
           "cost_not_comparable", "latency_regressed", "parse_fraction", "points", "run_regressions",
           "weighted_mean"]
