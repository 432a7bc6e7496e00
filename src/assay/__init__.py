"""assay: judge AI agents with LLM judges and deterministic checks."""

from importlib.metadata import PackageNotFoundError, version

from assay.api import score, score_async
from assay.errors import ConfigError, EvaluationError
from assay.judges import Contains, EvalContext, Evaluator, ExactMatch, LLMJudge, SemanticSimilarity
from assay.llm import EngineConfig, JudgeEngine, register_service
from assay.model import Case, Execution, Message, Score, ScoreError, Span, Usage, aggregate

try:
    __version__ = version("assay")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "Case",
    "ConfigError",
    "Contains",
    "EngineConfig",
    "EvalContext",
    "EvaluationError",
    "Evaluator",
    "ExactMatch",
    "Execution",
    "JudgeEngine",
    "LLMJudge",
    "Message",
    "Score",
    "ScoreError",
    "SemanticSimilarity",
    "Span",
    "Usage",
    "__version__",
    "aggregate",
    "register_service",
    "score",
    "score_async",
]
