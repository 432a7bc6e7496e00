"""``uipath.eval.models``, answered by assay (see :mod:`assay.integrations.uipath`)."""

from assay.integrations.uipath.models.models import (
    AgentExecution,
    BooleanEvaluationResult,
    ErrorEvaluationResult,
    EvalItemResult,
    EvaluationResult,
    EvaluationResultDto,
    EvaluatorType,
    LegacyEvaluatorCategory,
    LegacyEvaluatorType,
    LLMResponse,
    NumericEvaluationResult,
    ScoreType,
    ToolCall,
    ToolOutput,
    UiPathEvaluationError,
    UiPathEvaluationErrorCategory,
    UiPathEvaluationErrorContract,
    WorkloadExecution,
)

__all__ = [
    "AgentExecution", "BooleanEvaluationResult", "ErrorEvaluationResult", "EvalItemResult",
    "EvaluationResult", "EvaluationResultDto", "EvaluatorType", "LLMResponse",
    "LegacyEvaluatorCategory", "LegacyEvaluatorType", "NumericEvaluationResult", "ScoreType",
    "ToolCall", "ToolOutput", "UiPathEvaluationError", "UiPathEvaluationErrorCategory",
    "UiPathEvaluationErrorContract", "WorkloadExecution",
]
