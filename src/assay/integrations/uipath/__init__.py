"""UiPath's Python evaluation API (``uipath.eval``) on assay.

Code written for UiPath runs with its imports changed from ``uipath.eval`` to
``assay.integrations.uipath``::

    from assay.integrations.uipath.evaluators import LLMJudgeOutputEvaluator   # uipath.eval.evaluators
    from assay.integrations.uipath.models import AgentExecution               # uipath.eval.models

The built-in evaluators keep UiPath's names, constructors (``id=``, ``config=``), criteria and
results (``.score``, ``.details``), and are scored by assay's evaluators and judge engine (see
:mod:`assay.integrations.uipath.evaluators.builtin`). Custom evaluators subclass
:class:`~assay.integrations.uipath.evaluators.BaseEvaluator` exactly as UiPath's documentation shows,
and UiPath projects that name them (``"evaluatorSchema": "file://x.py:MyEvaluator"``) load them
through assay's registry (:mod:`assay.integrations.uipath.custom`).
"""

from assay.integrations.uipath.evaluators import (
    BaseEvaluationCriteria,
    BaseEvaluator,
    BaseEvaluatorConfig,
    BaseEvaluatorJustification,
    ContainsEvaluator,
    ExactMatchEvaluator,
    JsonSimilarityEvaluator,
    LLMJudgeOutputEvaluator,
    LLMJudgeStrictJSONSimilarityOutputEvaluator,
    LLMJudgeTrajectoryEvaluator,
    LLMJudgeTrajectorySimulationEvaluator,
    ToolCallArgsEvaluator,
    ToolCallCountEvaluator,
    ToolCallOrderEvaluator,
    ToolCallOutputEvaluator,
)
from assay.integrations.uipath.models import (
    AgentExecution,
    BooleanEvaluationResult,
    ErrorEvaluationResult,
    EvaluationResult,
    NumericEvaluationResult,
    UiPathEvaluationError,
    WorkloadExecution,
)

__all__ = [
    "AgentExecution", "BaseEvaluationCriteria", "BaseEvaluator", "BaseEvaluatorConfig",
    "BaseEvaluatorJustification", "BooleanEvaluationResult", "ContainsEvaluator",
    "ErrorEvaluationResult", "EvaluationResult", "ExactMatchEvaluator",
    "JsonSimilarityEvaluator", "LLMJudgeOutputEvaluator",
    "LLMJudgeStrictJSONSimilarityOutputEvaluator", "LLMJudgeTrajectoryEvaluator",
    "LLMJudgeTrajectorySimulationEvaluator", "NumericEvaluationResult", "ToolCallArgsEvaluator",
    "ToolCallCountEvaluator", "ToolCallOrderEvaluator", "ToolCallOutputEvaluator",
    "UiPathEvaluationError", "WorkloadExecution",
]
