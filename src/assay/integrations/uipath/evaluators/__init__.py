"""``uipath.eval.evaluators``, answered by assay (see :mod:`assay.integrations.uipath`)."""

from assay.integrations.uipath.evaluators.base_evaluator import (
    BaseEvaluationCriteria,
    BaseEvaluator,
    BaseEvaluatorConfig,
    BaseEvaluatorJustification,
)
from assay.integrations.uipath.evaluators.builtin import (
    EVALUATORS_BY_TYPE_ID,
    AssayBackedEvaluator,
    BinaryClassificationEvaluator,
    ContainsEvaluator,
    ExactMatchEvaluator,
    JsonSimilarityEvaluator,
    LLMJudgeOutputEvaluator,
    LLMJudgeStrictJSONSimilarityOutputEvaluator,
    LLMJudgeTrajectoryEvaluator,
    LLMJudgeTrajectorySimulationEvaluator,
    MulticlassClassificationEvaluator,
    ToolCallArgsEvaluator,
    ToolCallCountEvaluator,
    ToolCallOrderEvaluator,
    ToolCallOutputEvaluator,
)

__all__ = [
    "EVALUATORS_BY_TYPE_ID", "AssayBackedEvaluator", "BaseEvaluationCriteria", "BaseEvaluator",
    "BaseEvaluatorConfig", "BaseEvaluatorJustification", "BinaryClassificationEvaluator",
    "ContainsEvaluator", "ExactMatchEvaluator", "JsonSimilarityEvaluator",
    "LLMJudgeOutputEvaluator", "LLMJudgeStrictJSONSimilarityOutputEvaluator",
    "LLMJudgeTrajectoryEvaluator", "LLMJudgeTrajectorySimulationEvaluator",
    "MulticlassClassificationEvaluator", "ToolCallArgsEvaluator", "ToolCallCountEvaluator",
    "ToolCallOrderEvaluator", "ToolCallOutputEvaluator",
]
