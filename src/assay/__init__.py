"""assay: judge AI agents with LLM judges and deterministic checks.

The public names are imported on first use (PEP 562), so ``import assay`` and the ``assay``
command start in a few milliseconds instead of loading the whole engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._version import __version__
from assay.lazy_exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "score": "assay.api",
    "score_async": "assay.api",
    "compare": "assay.compare",
    "evaluate": "assay.evaluation",
    "evaluate_async": "assay.evaluation",
    "rescore": "assay.evaluation",
    "rescore_async": "assay.evaluation",
    "resume": "assay.evaluation",
    "resume_async": "assay.evaluation",
    "calibrate": "assay.calibrating",
    "calibrate_async": "assay.calibrating",
    "CalibrationReport": "assay.calibration.report",
    "EvaluationResult": "assay.results",
    "CaseRecord": "assay.records",
    "RunRecord": "assay.records",
    "RunSummary": "assay.records",
    "Verdict": "assay.records",
    "RunConfig": "assay.run_config",
    "Gates": "assay.run_config",
    "CalibrationGate": "assay.run_config",
    "Thresholds": "assay.run_config",
    "ConfigError": "assay.errors",
    "EvaluationError": "assay.errors",
    "Contains": "assay.judges",
    "EvalContext": "assay.judges",
    "Evaluator": "assay.judges",
    "ExactMatch": "assay.judges",
    "LLMJudge": "assay.judges",
    "SemanticSimilarity": "assay.judges",
    "scorer": "assay.judges.python_scorer",
    "Feedback": "assay.judges.feedback",
    "make_judge": "assay.judges.custom_judges",
    "EngineConfig": "assay.llm",
    "JudgeEngine": "assay.llm",
    "register_service": "assay.llm",
    "Case": "assay.model",
    "Execution": "assay.model",
    "Message": "assay.model",
    "Score": "assay.model",
    "ScoreError": "assay.model",
    "ScoreState": "assay.model",
    "Span": "assay.model",
    "Usage": "assay.model",
    "aggregate": "assay.model",
}

__all__ = [
    "CalibrationGate",
    "CalibrationReport",
    "Case",
    "CaseRecord",
    "ConfigError",
    "Contains",
    "EngineConfig",
    "EvalContext",
    "EvaluationError",
    "EvaluationResult",
    "Evaluator",
    "ExactMatch",
    "Execution",
    "Feedback",
    "Gates",
    "JudgeEngine",
    "LLMJudge",
    "Message",
    "RunConfig",
    "RunRecord",
    "RunSummary",
    "Score",
    "ScoreError",
    "ScoreState",
    "SemanticSimilarity",
    "Span",
    "Thresholds",
    "Usage",
    "Verdict",
    "__version__",
    "aggregate",
    "calibrate",
    "calibrate_async",
    "compare",
    "evaluate",
    "evaluate_async",
    "make_judge",
    "register_service",
    "rescore",
    "rescore_async",
    "resume",
    "resume_async",
    "score",
    "score_async",
    "scorer",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from assay.api import score, score_async
    from assay.calibrating import calibrate, calibrate_async
    from assay.calibration.report import CalibrationReport
    from assay.compare import compare
    from assay.errors import ConfigError, EvaluationError
    from assay.evaluation import (
        evaluate,
        evaluate_async,
        rescore,
        rescore_async,
        resume,
        resume_async,
    )
    from assay.judges import (
        Contains,
        EvalContext,
        Evaluator,
        ExactMatch,
        LLMJudge,
        SemanticSimilarity,
    )
    from assay.judges.custom_judges import make_judge
    from assay.judges.feedback import Feedback
    from assay.judges.python_scorer import scorer
    from assay.llm import EngineConfig, JudgeEngine, register_service
    from assay.model import (
        Case,
        Execution,
        Message,
        Score,
        ScoreError,
        ScoreState,
        Span,
        Usage,
        aggregate,
    )
    from assay.records import CaseRecord, RunRecord, RunSummary, Verdict
    from assay.results import EvaluationResult
    from assay.run_config import CalibrationGate, Gates, RunConfig, Thresholds
