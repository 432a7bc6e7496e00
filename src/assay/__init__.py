"""assay: judge AI agents with LLM judges and deterministic checks.

The public names are imported on first use (PEP 562), so ``import assay`` and the ``assay``
command start in a few milliseconds instead of loading the whole engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay import _moved
from assay._util.lazy_exports import lazy_exports
from assay._version import __version__

_moved.install()  # old module paths, for one release

_EXPORTS: dict[str, str] = {
    "score": "assay.run.score",
    "score_async": "assay.run.score",
    "compare": "assay.analysis.compare",
    "evaluate": "assay.run.evaluate",
    "evaluate_async": "assay.run.evaluate",
    "rescore": "assay.run.evaluate",
    "rescore_async": "assay.run.evaluate",
    "rerun_failed": "assay.run.evaluate",
    "rerun_failed_async": "assay.run.evaluate",
    "resume": "assay.run.evaluate",
    "resume_async": "assay.run.evaluate",
    "align": "assay.run.align",
    "align_async": "assay.run.align",
    "calibrate": "assay.run.calibrate",
    "calibrate_async": "assay.run.calibrate",
    "CalibrationReport": "assay.calibration.report",
    "EvaluationResult": "assay.run.result",
    "CaseRecord": "assay.types.records",
    "RunRecord": "assay.types.records",
    "RunSummary": "assay.types.records",
    "Verdict": "assay.types.records",
    "RunConfig": "assay.types.config",
    "Gates": "assay.types.config",
    "CalibrationGate": "assay.types.config",
    "Thresholds": "assay.types.config",
    "ConfigError": "assay.errors",
    "EvaluationError": "assay.errors",
    "Contains": "assay.judges",
    "EvalContext": "assay.judges",
    "Evaluator": "assay.judges",
    "ExactMatch": "assay.judges",
    "LLMJudge": "assay.judges",
    "SemanticSimilarity": "assay.judges",
    "scorer": "assay.judges.code.python_scorer",
    "Feedback": "assay.judges.feedback",
    "make_judge": "assay.integrations.mlflow_scorers",
    "EngineConfig": "assay.llm",
    "JudgeEngine": "assay.llm",
    "register_service": "assay.llm",
    "Case": "assay.types",
    "Execution": "assay.types",
    "Message": "assay.types",
    "Score": "assay.types",
    "ScoreError": "assay.types",
    "ScoreState": "assay.types",
    "Span": "assay.types",
    "Usage": "assay.types",
    "aggregate": "assay.types",
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
    "align",
    "align_async",
    "calibrate",
    "calibrate_async",
    "compare",
    "evaluate",
    "evaluate_async",
    "make_judge",
    "register_service",
    "rerun_failed",
    "rerun_failed_async",
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
    from assay.analysis.compare import compare
    from assay.calibration.report import CalibrationReport
    from assay.errors import ConfigError, EvaluationError
    from assay.integrations.mlflow_scorers import make_judge
    from assay.judges import (
        Contains,
        EvalContext,
        Evaluator,
        ExactMatch,
        LLMJudge,
        SemanticSimilarity,
    )
    from assay.judges.code.python_scorer import scorer
    from assay.judges.feedback import Feedback
    from assay.llm import EngineConfig, JudgeEngine, register_service
    from assay.run.align import align, align_async
    from assay.run.calibrate import calibrate, calibrate_async
    from assay.run.evaluate import (
        evaluate,
        evaluate_async,
        rerun_failed,
        rerun_failed_async,
        rescore,
        rescore_async,
        resume,
        resume_async,
    )
    from assay.run.result import EvaluationResult
    from assay.run.score import score, score_async
    from assay.types.case import Case
    from assay.types.config import CalibrationGate, Gates, RunConfig, Thresholds
    from assay.types.execution import Execution
    from assay.types.messages import Message
    from assay.types.records import CaseRecord, RunRecord, RunSummary, Verdict, aggregate
    from assay.types.score import Score, ScoreError, ScoreState
    from assay.types.spans import Span
    from assay.types.usage import Usage
