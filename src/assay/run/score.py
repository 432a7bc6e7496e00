"""The Python entry points: an async core and one thin synchronous wrapper over it."""

from __future__ import annotations

from typing import Any

from assay.judges.base import EvalContext, Evaluator
from assay.llm.engine import JudgeEngine
from assay.run.sync import run_sync
from assay.types.case import Case
from assay.types.engine_config import EngineConfig
from assay.types.execution import Execution
from assay.types.score import Score


async def score_async(evaluator: Evaluator, case: Case, execution: Execution, *,
                      engine: JudgeEngine | None = None,
                      judge_model: str | None = None) -> Score:
    """Score one execution with one evaluator, checking its models before any call."""
    own_engine = engine is None
    engine = engine or JudgeEngine(EngineConfig())
    try:
        ctx = EvalContext(engine, judge_model)
        if evaluator.models():
            await engine.preflight(*[ctx.model(m) for m in evaluator.models()])
        return await evaluator.evaluate(case, execution, ctx)
    finally:
        if own_engine:
            await engine.aclose()


def score(evaluator: Evaluator, case: Case, execution: Execution, **kwargs: Any) -> Score:
    """Synchronous :func:`score_async`; works in scripts and inside notebooks alike."""
    return run_sync(score_async(evaluator, case, execution, **kwargs))
