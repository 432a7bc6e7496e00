"""The one typed object that configures a run, passed whole from the CLI to the runner."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


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

    def verdict(self, score: float | None) -> str:
        if score is None:
            return "error"
        if score >= self.pass_at:
            return "pass"
        if score >= self.borderline_at:
            return "borderline"
        return "fail"


class Gates(BaseModel):
    """What a whole run must meet for ``assay run`` to exit 0."""

    model_config = ConfigDict(extra="forbid")

    min_mean_score: float | None = Field(default=None, ge=0, le=1)
    max_failed: int | None = Field(default=0, ge=0,
                                   description="cases with verdict fail; None: no limit")
    max_errors: int | None = Field(
        default=0, ge=0, description="evaluator scores that could not be computed; an error "
        "is never a pass, even when a case's other evaluators scored it")


class RunConfig(BaseModel):
    """How to run a suite: concurrency, judge, repeats, selection, verdicts and gates."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(default=8, ge=1, description="cases in flight at once")
    judge_model: str | None = None
    repeat: int = Field(default=1, ge=1)
    filter: str | None = Field(default=None, description="a glob over case ids")
    thresholds: Thresholds = Field(default_factory=Thresholds)
    gates: Gates = Field(default_factory=Gates)
    dry_run: bool = False
