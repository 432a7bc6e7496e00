"""What every evaluator is: a typed config that scores one execution of one case.

An evaluator's ``score`` may raise; :meth:`Evaluator.evaluate` turns anything it raises into an
error score (code and message) so one bad case never stops a run and never reads as a 0. That
includes ``sys.exit()`` in a plugin's evaluator: ``score`` runs as user code
(:func:`assay._util.user_code.user_code`). An
evaluator marked ``required`` (AgentV's ``required: true``) makes its score ``blocking`` when it
does not pass: the case fails whatever its mean.
Configuration problems are caught earlier, when the evaluator is built (see ``registry``).
"""

from __future__ import annotations

import shlex
import time
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from assay._util.user_code import error_text, user_code
from assay._util.user_paths import user_path
from assay.errors import EvaluationError
from assay.llm.engine import JudgeEngine
from assay.llm.models import AT_JUDGE_SERVICE, resolve_at_judge_service
from assay.llm.types import DRY_RUN
from assay.types.case import AgentInfo, Case
from assay.types.execution import Execution
from assay.types.records import EvaluatorSpec
from assay.types.score import Score
from assay.types.verdict import reaches


@dataclass
class EvalContext:
    """What an evaluator may use besides the case: the engine and the default judge model."""

    engine: JudgeEngine
    judge_model: str | None = None
    override_model: str | None = None
    sample: int = 0
    """Which independent draw this is (the repeat of a case): judge calls of different samples
    are made and cached apart, so repeats measure the judge's spread; 0 is the first."""
    agent: AgentInfo | None = None
    """What the suite says of the agent under test (its system prompt and tools), for judges
    that show it."""

    def model(self, own: str | None) -> str | None:
        """The override (``--judge-model``), else the evaluator's own model, else the run's
        judge model, else (None) the engine's default. An own model that is only a name
        (``#gpt-4o``, UiPath's bare model names) is that model at the run's judge service."""
        if self.override_model:
            return self.override_model
        if own is not None and own.startswith(AT_JUDGE_SERVICE):
            return resolve_at_judge_service(own, self.judge_model
                                            or self.engine.config.default_model)
        return own or self.judge_model


class Evaluator(BaseModel):
    """Base of all evaluators. Subclasses set ``type`` and implement :meth:`score`."""

    # Every evaluator type is imported with assay.judges and a run uses a few: each builds its
    # validator when first used, not at import (a tenth of a second of every start).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    type: ClassVar[str] = ""
    OMITTED_AT_DEFAULT: ClassVar[frozenset[str]] = frozenset()
    """Settings left out of the recorded spec and the calibration key while they keep their
    default: ones added after runs and calibrations were stored, so that an older run, and a
    judge calibrated before, read the same as they did."""
    name: str = ""
    weight: float = Field(default=1.0, ge=0, description="this evaluator's share of the case "
                          "score; 0 reports the score without counting it")
    threshold: float = Field(default=0.8, ge=0, le=1,
                             description="a value at or above this passes")
    required: bool = Field(default=False,
                           description="when this evaluator does not pass, or cannot score, "
                           "its case fails whatever its mean")

    def model_post_init(self, context: Any) -> None:
        if not self.name:
            self.name = self.type

    @abstractmethod
    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        """Judge one execution. May raise; :meth:`evaluate` turns that into an error score."""

    def spec(self) -> EvaluatorSpec:
        """This evaluator's type and parameters, as a run records them (enough to rebuild,
        re-score and audit it)."""
        params = self.model_dump(mode="json", exclude={"name", "weight", *self.at_default()},
                                 fallback=lambda v: getattr(v, "__qualname__", repr(v)))
        return EvaluatorSpec(name=self.name, type=self.type, weight=self.weight, params=params)

    def at_default(self) -> set[str]:
        """The settings of :attr:`OMITTED_AT_DEFAULT` that keep their default value."""
        fields = type(self).model_fields
        return {name for name in self.OMITTED_AT_DEFAULT if name in fields and
                getattr(self, name) == fields[name].get_default(call_default_factory=True)}

    def models(self) -> list[str | None]:
        """The judge models this evaluator will call (None: the run's default); [] for none."""
        return []

    def input_files(self) -> dict[Path, str]:
        """The files this evaluator runs or imports (a script, a Python module), each with
        what it is: no output of the run may be one of them. Those of its ``members`` (a
        composite's, a jury's); none for most."""
        found: dict[Path, str] = {}
        for member in getattr(self, "members", ()):
            found.update(member.input_files())
        return found

    def needs_function(self) -> bool:
        """True when this evaluator runs a Python function it does not hold: one rebuilt
        from a run's record, which keeps the function's name but cannot keep the function,
        so the function must be given again."""
        return False

    async def evaluate(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        """Score, never raising: failures become error scores with the time they took. A
        judge a dry run did not call is not applicable (skipped): a placeholder, not an error,
        so no count of errors (a progress bar's, a summary's, a gate's) includes it."""
        started = time.perf_counter()
        try:
            with user_code():
                result = await self.score(case, execution, ctx)
        except EvaluationError as exc:
            result = Score.failed(self.name, exc.code, exc.message)
        except Exception as exc:
            result = Score.failed(self.name, "evaluator_failed", error_text(exc))
        if result.error is not None and result.error.code == DRY_RUN:
            result = Score.not_applicable(self.name, result.error.message, usage=result.usage,
                                          latency_ms=result.latency_ms)
        if result.latency_ms is None:
            result.latency_ms = (time.perf_counter() - started) * 1000
        if self.required and not result.blocking and not self._passes(result):
            result.blocking = True
            if result.value is not None:
                result.passed = False
        return result

    def _passes(self, score: Score) -> bool:
        if score.value is None:
            return False  # a required check that did not run has not passed
        return score.passed if score.passed is not None else self.verdict(score.value)

    def verdict(self, value: float) -> bool:
        """Whether ``value`` passes: at or above :attr:`threshold`, as every threshold is held
        (:func:`assay.types.verdict.reaches`)."""
        return reaches(value, self.threshold)


def script_files(script: str | list[str] | None, cwd: str | None, what: str
                 ) -> dict[Path, str]:
    """The files a script's command line names (``python check.py``: the interpreter and
    ``check.py``), found from ``cwd`` as the script would, each as ``what``."""
    if not script:
        return {}
    if isinstance(script, str):
        try:
            argv = shlex.split(script)
        except ValueError:  # unbalanced quotes: the shell will say so when it runs
            argv = script.split()
    else:
        argv = list(script)
    base = user_path(cwd) if cwd else Path.cwd()
    found = (base / user_path(arg) for arg in argv if arg)
    return {path: what for path in found if path.is_file()}
@runtime_checkable
class DatasetMetric(Protocol):
    """An evaluator that also says something of the whole run (classification precision,
    recall and F over every case's score): the runner gives :meth:`reduce` every score of it
    once the run is done, when :attr:`reduces` says the run asked for one."""

    name: str

    @property
    def reduces(self) -> bool:
        """Whether this run asked for the dataset-level result."""
        ...

    def reduce(self, scores: list[Score]) -> Score | None:
        """The dataset-level result over every case's score of this evaluator."""
        ...


_METRIC_CLASSES: dict[type, bool] = {}


def dataset_metric(evaluator: object) -> DatasetMetric | None:
    """``evaluator`` as a :class:`DatasetMetric` when its class is one, else None.

    Asked for every evaluator of every case: a runtime protocol check walks the protocol's
    members each time (some 20 us), so the answer is kept per class."""
    kind = type(evaluator)
    found = _METRIC_CLASSES.get(kind)
    if found is None:
        found = _METRIC_CLASSES[kind] = isinstance(evaluator, DatasetMetric)
    return evaluator if found else None  # type: ignore[return-value]
