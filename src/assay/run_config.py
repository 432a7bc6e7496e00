"""The one typed object that configures a run, passed whole from the CLI or Python to the runner.

Everything that decides a run's results is here and is snapshotted into the run when it starts
(so ``--resume`` and ``assay rescore`` repeat it exactly); where results go (``store``) and how
the judge engine retries are here too but are not part of what a result means.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.llm.config import CacheMode, RetryPolicy
from assay.records import Verdict


class Thresholds(BaseModel):
    """Case verdict bands on the 0-1 case score: pass, borderline, else fail."""

    model_config = ConfigDict(extra="forbid")

    pass_at: float = Field(default=0.8, ge=0, le=1)
    borderline_at: float = Field(default=0.6, ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if self.borderline_at > self.pass_at:
            raise ValueError("borderline_at must not be above pass_at")
        return self

    def verdict(self, score: float | None) -> Verdict:
        if score is None:
            return Verdict.ERROR
        if score >= self.pass_at:
            return Verdict.PASS
        if score >= self.borderline_at:
            return Verdict.BORDERLINE
        return Verdict.FAIL


class CalibrationGate(BaseModel):
    """What a run requires of its judges' calibrations against human labels (see
    ``assay calibrate``). Each judge checked must have a current calibration: one stored with
    the key of the judge as this run uses it (its model, prompt and answer schema); a judge
    never calibrated, or changed since, fails the gate with the command that calibrates it."""

    model_config = ConfigDict(extra="forbid")

    min_kappa: float | None = Field(
        default=None, ge=-1, le=1, description="Cohen's kappa (quadratic-weighted for "
        "ordinal labels) at least this")
    min_accuracy: float | None = Field(default=None, ge=0, le=1,
                                       description="agreement with the humans at least this")
    set: str | None = Field(default=None, description="the labelled set the calibration "
                            "must be on; None: any")
    evaluators: list[str] | None = Field(
        default=None, description="the evaluators to check, by name; None: every evaluator "
        "that asks a judge model")


class Gates(BaseModel):
    """What a whole run must meet to pass (``assay run`` exits 0 only then).

    A run with no case, or with no case that could be scored, never passes.
    """

    model_config = ConfigDict(extra="forbid")

    min_mean_score: float | None = Field(default=None, ge=0, le=1)
    max_failed: int | None = Field(default=0, ge=0,
                                   description="cases with verdict fail; None: no limit")
    max_errors: int | None = Field(
        default=0, ge=0, description="evaluator scores that could not be computed; an error "
        "is never a pass, even when a case's other evaluators scored it")
    calibration: CalibrationGate | None = Field(
        default=None, description="judges must be calibrated against human labels")


class RunConfig(BaseModel):
    """How to run a suite: target, judge, concurrency, repeats, selection, verdicts, gates."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(default=8, ge=1, description="cases in flight at once")
    judge_model: str | None = Field(
        default=None, description="the judge model for every LLM evaluator (overrides theirs)")
    target: str | None = Field(
        default=None, description="a target name or model string replacing the suite's")
    targets_file: str | None = Field(default=None, description="a targets.yaml to use")
    repeat: int = Field(default=1, ge=1, description="independent runs of every case")
    filter: str | None = Field(default=None, description="a glob over case ids")
    thresholds: Thresholds = Field(default_factory=Thresholds)
    gates: Gates = Field(default_factory=Gates)
    dry_run: bool = False
    cache: CacheMode = Field(default="use", description="judge response cache mode")
    retry: RetryPolicy = Field(default_factory=RetryPolicy)

    @model_validator(mode="after")
    def _judge_model_not_blank(self) -> RunConfig:
        if self.judge_model is not None and not self.judge_model.strip():
            raise ValueError("judge_model is empty; give a model such as openai:gpt-4o-mini "
                             "or leave it unset for the default")
        return self
