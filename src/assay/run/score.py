"""One judgement from Python: an async core and one thin synchronous wrapper over it.

:func:`score` is a session of one case of the trunk every run goes through
(:func:`assay.run.evaluate.judge_case_async`): the output is normalised as a run's is, the
judge models are checked before any call, the engine is built from the same options, the
errors are a run's, and the case gets its verdict from the run's scoring policy. Nothing is
stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from assay._util.validation import field_problems
from assay.errors import ConfigError
from assay.judges.base import Evaluator
from assay.llm.engine import JudgeEngine
from assay.run.evaluate import judge_case_async
from assay.run.sync import run_sync
from assay.types.case import Case
from assay.types.config import RunConfig
from assay.types.execution import Execution
from assay.types.records import CaseRecord
from assay.types.score import CaseScore


async def score_async(evaluator: Evaluator, case: Case, execution: Execution, *,
                      engine: JudgeEngine | None = None,
                      judge_model: str | None = None,
                      config: RunConfig | None = None) -> CaseScore:
    """Score one execution with one evaluator, as a run of that one case scores it.

    Returns the evaluator's :class:`~assay.types.score.Score` as a :class:`CaseScore` (a
    Score), which adds the case's ``verdict`` and ``case_score`` by ``config``'s scoring
    policy (None: the default one).
    ``judge_model`` judges an evaluator that names no model; ``engine`` is one to share
    (else one is built from ``config`` and closed)."""
    record = await score_record_async(evaluator, case, execution, engine=engine,
                                      judge_model=judge_model, config=config)
    return CaseScore.of(record.scores[0], record.verdict, record.score)


async def score_record_async(evaluator: Evaluator, case: Case, execution: Execution, *,
                             engine: JudgeEngine | None = None,
                             judge_model: str | None = None,
                             config: RunConfig | None = None) -> CaseRecord:
    """:func:`score_async`'s judgement as the case's whole record: the execution as the run
    read it too, for a caller that must tell an agent's failure (``execution.error``) from
    a judge's (the pytest plugin)."""
    case = _given(Case, case, "case", "a Case (assay.Case(id=..., expected_output=...))")
    execution = _given(Execution, execution, "execution",
                       "an Execution (assay.Execution(output=...))")
    return await judge_case_async([evaluator], case, execution, config=config,
                                  engine=engine, judge_model=judge_model)


Model = TypeVar("Model", bound=BaseModel)


def _given(model: type[Model], value: Any, name: str, expected: str) -> Model:
    """``value`` as ``model``: one already, or a dict of its fields; anything else (an
    answer given where its Execution goes, None) is a ConfigError naming the argument and
    what it takes, instead of an error deep in the run or a verdict of a missing output."""
    if isinstance(value, model):
        return value
    if isinstance(value, Mapping):
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            raise ConfigError(f"{name}: {field_problems(exc, name, 3)}",
                              code="invalid_argument") from None
    raise ConfigError(f"{name}: a {type(value).__name__} is not {expected} or a dict of its "
                      "fields", code="invalid_argument")


def score(evaluator: Evaluator, case: Case, execution: Execution, **kwargs: Any) -> CaseScore:
    """Synchronous :func:`score_async`; works in scripts and inside notebooks alike."""
    return run_sync(score_async(evaluator, case, execution, **kwargs))
